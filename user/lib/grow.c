// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include "lib/grow.h"

int grow_to_hold(void **v, size_t n, size_t *cap, size_t size, size_t min)
{
	size_t want = *cap ? 2 * *cap : min;
	void *p;

	if (n < *cap)
		return 0;
	p = realloc(*v, want * size);
	if (!p)
		return -ENOMEM;
	*v = p;
	*cap = want;
	return 0;
}
