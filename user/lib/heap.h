/* SPDX-License-Identifier: GPL-2.0 */
/* Keeping the first N of a stream in listing order, in O(N) memory: a
 * binary heap whose root is the element listed last of those kept. */
#ifndef TB_HEAP_H
#define TB_HEAP_H

#include <stddef.h>

/* cmp(a, b) > 0: a is listed after b. */
typedef int (*heap_cmp)(const void *a, const void *b);

/* Offer e to the heap of *n elements of size bytes at base, which holds
 * cap at most: kept if there is room or if it is listed before the root,
 * which it then replaces. */
void heap_offer(void *base, size_t *n, size_t cap, size_t size, const void *e, heap_cmp cmp);

#endif
