/* SPDX-License-Identifier: GPL-2.0 */
/* The per-address table's size for a number of addresses. */
#ifndef TB_SIZING_H
#define TB_SIZING_H

#include "abi/tb_abi.h"

/* The table for max_addrs addresses: 2^shift sets (at least one a lock
 * stripe) of ways ways, together at least max_addrs. */
static inline __u8 tb_table_shift(__u32 max_addrs)
{
	__u8 shift = TB_TABLE_MIN_SHIFT;

	while (((__u64)TB_WAYS << shift) < max_addrs)
		shift++;
	return shift;
}

static inline __u8 tb_table_ways(__u32 max_addrs)
{
	__u8 ways = 1;

	while (ways < TB_WAYS && ((__u64)ways << TB_TABLE_MIN_SHIFT) < max_addrs)
		ways <<= 1;
	return ways;
}

#endif
