/* SPDX-License-Identifier: GPL-2.0 */
/* What one host may spend of a fleet-wide key: its static share, a token
 * bucket of its own, and the credit the store granted it, spent by atomic
 * subtraction. Pure, so the host unit tests drive it with a virtual clock;
 * the datapath calls it from fleet.h, the agent's program from tb.bpf.c.
 * Nothing is spent that was not granted: a spend that does not fit is
 * undone, and while it is, the credit reads lower than it is, so another
 * CPU may be refused what it would have had, never given more. */
#ifndef TB_FLEET_CREDIT_H
#define TB_FLEET_CREDIT_H

#include "logic/bucket.h"

#include "logic/order.h"

/* A new key's share starts full: a share is what a host may admit of a
 * key with no word from the store, as a bucket that long idle would be. */
static __always_inline void tb_share_start(struct tb_level *l, __u64 now, const struct tb_rate *share)
{
	l->tokens = share->cap;
	l->last_ns = now;
	l->hold = 0;
}

/* Pay cost nano-units from share level l at now; 0 when it cannot, the
 * level then refilled to now as a refusal leaves any bucket. The caller
 * holds the entry's lock. */
static __always_inline int tb_share_pay(struct tb_level *l, __u64 now, __u64 cost, const struct tb_rate *share)
{
	__u64 tokens = tb_refill(l, now, share);

	if (now > l->last_ns)
		l->last_ns = now;
	if (tokens < cost) {
		l->tokens = tokens;
		return 0;
	}
	l->tokens = tokens - cost;
	return 1;
}

/* Spend units of credit with no lock: 1 if the credit covered them. */
static __always_inline int tb_credit_pay(__s64 *credit, __u64 units)
{
	__s64 before = __sync_fetch_and_add(credit, -(__s64)units);

	if (before >= (__s64)units)
		return 1;
	__sync_fetch_and_add(credit, (__s64)units);
	return 0;
}

/* Take back all of the unspent credit; what was taken. A credit below zero
 * is a spend being undone: nothing is taken this time. */
static __always_inline __s64 tb_credit_take(__s64 *credit)
{
	__s64 c = READ_ONCE(*credit), seen;

	for (int i = 0; i < 4 && c > 0; i++) {
		seen = __sync_val_compare_and_swap(credit, c, 0);
		if (seen == c)
			return c;
		c = seen;
	}
	return 0;
}

#endif
