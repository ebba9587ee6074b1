/* SPDX-License-Identifier: GPL-2.0 */
/* Arrays that grow as they fill. */
#ifndef TB_GROW_H
#define TB_GROW_H

#include <stddef.h>

/* Room for element n of the array *v of *cap elements of size bytes,
 * doubled (first to min elements) when full: 0, or -ENOMEM with the
 * array as it was. */
int grow_to_hold(void **v, size_t n, size_t *cap, size_t size, size_t min);
#define GROW(v, n, cap, min) grow_to_hold((void **)&(v), (n), &(cap), sizeof(*(v)), (min))

#endif
