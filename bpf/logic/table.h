/* SPDX-License-Identifier: GPL-2.0 */
/* The per-address table (struct tb_set): which set an address has, the
 * way that holds it, and the way a new address is given. Pure, so the
 * host tests drive it and tbctl finds buckets as the datapath does.
 *
 * Ways are found without the lock and changed only under it. A way
 * changes hands in three steps, in program order: its key is cleared,
 * its bucket written (a bumped tag, and a credit word carrying it), its
 * key set. A reader that reads the tag first, then the bucket, then
 * finds the address's key and the same tag has read that address's
 * bucket: a clearing that reached it would have come with a new tag by
 * the time the key is the address's again. The writer orders each step's
 * stores after the step before (tb_wmb), the reader each read after the
 * one before (tb_load_acquire, tb_rmb): logic/order.h. */
#ifndef TB_TABLE_H
#define TB_TABLE_H

#include "logic/bucket.h"
#include "logic/counters.h"

#include "logic/order.h"

/* The set of the address placed h (tb_stripe_hash): the top shift bits,
 * of which the top TB_LOCK_SHIFT pick the stripe, so every way of a set
 * is written under one lock. */
static __always_inline __u32 tb_set_index(__u32 h, __u8 shift)
{
	return h >> (32 - shift);
}

static __always_inline int tb_key_is(const struct tb_addr *at, const struct tb_addr *k)
{
	const volatile __u64 *a = (const volatile __u64 *)at;
	const __u64 *kk = (const __u64 *)k;

	return a[0] == kk[0] && a[1] == kk[1];
}

/* 1 when way i is among the first ways, else 0, by arithmetic. */
static __always_inline __u64 tb_way_in(__u32 ways, int i)
{
	return 1 - (((__u64)ways - 1 - i) >> 63);
}

/* The way of s holding k among its first ways, or -1 (always for key 0,
 * which marks free ways). No two ways hold one address (they are given
 * under the lock, after a scan). */
static __always_inline int tb_way_find(const struct tb_set *s, const struct tb_addr *k, __u32 ways)
{
	const __u64 *kk = (const __u64 *)k;
	__u64 found = 0, at = 0, real = tb_nonzero(kk[0] | kk[1]);

	for (int i = 0; i < TB_WAYS; i++) {
		const volatile __u64 *a = (const volatile __u64 *)&s->key[i];
		__u64 hit = 1 - tb_nonzero((a[0] ^ kk[0]) | (a[1] ^ kk[1]));

		hit &= tb_way_in(ways, i) & real;
		found |= hit;
		at |= hit * i;
	}
	return found ? (int)(at & (TB_WAYS - 1)) : -1;
}

/* The tag of way w's bucket, read before the rest of it without the lock. */
static __always_inline __u8 tb_way_tag(const struct tb_set *s, int w)
{
	return tb_load_acquire(&s->b[w & (TB_WAYS - 1)].tag);
}

/* After reading way w's bucket without the lock, its tag first: whether
 * all of it was k's. The key alone could be k's again after the way went
 * to another address and back (K, K', K) between the reads, which the
 * tag, bumped at each hand-over, shows. */
static __always_inline int tb_way_holds(const struct tb_set *s, int w, const struct tb_addr *k, __u8 tag)
{
	tb_rmb();
	if (!tb_key_is(&s->key[w & (TB_WAYS - 1)], k))
		return 0;
	tb_rmb();
	return READ_ONCE(s->b[w & (TB_WAYS - 1)].tag) == tag;
}

static __always_inline int tb_way_free(const struct tb_set *s, int i)
{
	const __u64 *a = (const __u64 *)&s->key[i];

	return !a[0] && !a[1];
}

/* The way to give a new address, under the lock: a free one, else one
 * whose bucket has seen a single packet, else the one charged longest
 * ago, the first of equals. So a flood of one-packet sources takes the
 * ways of its own kind and leaves a set's live addresses be, as long as
 * it holds any such. A bucket has seen a second packet when one was
 * charged or counted under the lock (TB_SEEN_AGAIN), or when it spent from
 * the grant its first charge made; neither is undone by a reset, which
 * zeroes the counters. By arithmetic, as tb_way_find: each way scores 0
 * free, then by kind and age, and the least score wins. */
static __always_inline int tb_way_victim(const struct tb_set *s, __u32 ways)
{
	__u64 best = ~0ULL >> 1, at = 0;

	for (int i = 0; i < TB_WAYS; i++) {
		const __u64 *a = (const __u64 *)&s->key[i];
		const struct tb_bucket *b = &s->b[i];
		__u64 used = tb_nonzero(a[0] | a[1]);
		__u64 many = tb_nonzero(b->rule & TB_SEEN_AGAIN) |
			     tb_nonzero(b->credit_granted - tb_credit_unspent(b->credit));
		__u64 score = used * (1 + (b->lvl.last_ns >> 2) + (many << 61));
		/* Scores stay below 2^62, so the difference's sign bit is
		 * whether score < best. */
		__u64 less = (score - best) >> 63 & tb_way_in(ways, i);

		best += (score - best) * less;
		at += (i - at) * less;
	}
	return (int)(at & (TB_WAYS - 1));
}

/* The tag a bucket given way w next carries. */
static __always_inline __u8 tb_way_next_tag(const struct tb_set *s, int w)
{
	return s->b[w & (TB_WAYS - 1)].tag + 1;
}

/* Take way w away from its address, under the lock: its credit first,
 * so no spend begun on it lands; then its key, so readers stop finding
 * it before its bucket changes. What its bucket counted goes with it, as
 * an evicted bucket's always has; what it owes is in owed[] already. */
static __always_inline void tb_way_clear(struct tb_set *s, int w)
{
	__u64 *a = (__u64 *)&s->key[w & (TB_WAYS - 1)];

	__sync_lock_test_and_set(&s->b[w & (TB_WAYS - 1)].credit, 0);
	WRITE_ONCE(a[0], 0);
	WRITE_ONCE(a[1], 0);
	tb_wmb();
}

/* Give cleared way w, its bucket written, to k, under the lock. */
static __always_inline void tb_way_give_key(struct tb_set *s, int w, const struct tb_addr *k)
{
	__u64 *a = (__u64 *)&s->key[w & (TB_WAYS - 1)];
	const __u64 *kk = (const __u64 *)k;

	tb_wmb();
	WRITE_ONCE(a[1], kk[1]);
	WRITE_ONCE(a[0], kk[0]);
}

/* Give cleared way w to k with bucket nb, under the lock: the bucket,
 * then the key. nb carries tb_way_next_tag's tag and any credit already
 * tagged with it. */
static __always_inline void tb_way_give(struct tb_set *s, int w, const struct tb_addr *k,
					const struct tb_bucket *nb)
{
	s->b[w & (TB_WAYS - 1)] = *nb;
	tb_way_give_key(s, w, k);
}

#endif
