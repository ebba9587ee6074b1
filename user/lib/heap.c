// SPDX-License-Identifier: GPL-2.0
/* The top N of show and of the metrics' per-address series (heap.h). */
#include <string.h>
#include "lib/heap.h"

static void swap(char *a, char *b, size_t size)
{
	for (size_t i = 0; i < size; i++) {
		char t = a[i];

		a[i] = b[i];
		b[i] = t;
	}
}

static void *at(void *base, size_t i, size_t size)
{
	return (char *)base + i * size;
}

void heap_offer(void *base, size_t *n, size_t cap, size_t size, const void *e, heap_cmp cmp)
{
	size_t i;

	if (*n < cap) {
		/* Up from the new leaf while it is listed after its parent. */
		memcpy(at(base, *n, size), e, size);
		for (i = (*n)++; i && cmp(at(base, i, size), at(base, (i - 1) / 2, size)) > 0; i = (i - 1) / 2)
			swap(at(base, i, size), at(base, (i - 1) / 2, size), size);
		return;
	}
	if (!cap || cmp(e, base) >= 0)
		return;
	/* Replace the root, then down while a child is listed after it. */
	memcpy(base, e, size);
	for (i = 0;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < *n && cmp(at(base, l, size), at(base, m, size)) > 0)
			m = l;
		if (r < *n && cmp(at(base, r, size), at(base, m, size)) > 0)
			m = r;
		if (m == i)
			return;
		swap(at(base, i, size), at(base, m, size), size);
		i = m;
	}
}
