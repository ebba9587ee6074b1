/* SPDX-License-Identifier: GPL-2.0 */
/* Comparisons by arithmetic alone, for code the verifier walks once per
 * path: a branch per case doubles the states it walks for everything
 * after it, past its limit under a lock. The asm hides the arithmetic's
 * meaning from the compiler, which would otherwise turn it back into a
 * comparison, a branch. */
#ifndef TB_BRANCHLESS_H
#define TB_BRANCHLESS_H

#include <linux/types.h>

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/* 1 when x is not 0, else 0. */
static __always_inline __u64 tb_nonzero(__u64 x)
{
	__u64 neg = 0 - x;

	asm volatile("" : "+r"(neg));
	return (x | neg) >> 63;
}

/* 1 when a < b, else 0, for a and b below 2^63. */
static __always_inline __u64 tb_below(__u64 a, __u64 b)
{
	__u64 d = a - b;

	asm volatile("" : "+r"(d));
	return d >> 63;
}

#endif
