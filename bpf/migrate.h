/* SPDX-License-Identifier: GPL-2.0 */
/* Upgrades that move buckets: the LRU buckets of layouts up to 11 into
 * the table, and shared buckets that grew. Each bucket is moved out of
 * the older layout's map into this one's exactly once. A moved bucket stays
 * behind empty, its counters zero and its refill clock at TB_MOVED_NS, so
 * the older program, which may still run until the swap has settled,
 * takes nothing more from it: both programs charge an address under the
 * same stripe lock, so a bucket moves whole, level and counters. The
 * caller holds that lock for everything here but tb_prev_claim. */
#ifndef TB_MIGRATE_H
#define TB_MIGRATE_H

#include "maps.h"

/* What stands for an address that had no bucket in the older map once
 * this program has made it one: moved and empty, in the unit the rule
 * charges (the older program refills a bucket kept in another unit), so
 * an older program still running cannot make one with a fresh burst. As
 * large as any older bucket, since the map copies its whole value. */
static const struct {
	struct tb_bucket b;
	__u8 rest[TB_BUCKET_PREV_MAX - sizeof(struct tb_bucket)];
} tb_moved_marks[2] = {
	[TB_COST_BYTES] = { .b = { .lvl = { .last_ns = TB_MOVED_NS }, .cost = TB_COST_BYTES } },
	[TB_COST_PACKETS] = { .b = { .lvl = { .last_ns = TB_MOVED_NS }, .cost = TB_COST_PACKETS } },
};

/* Set by tbctl before load: the credit the older layout's buckets hold
 * (enum tb_prev_credit), which its program spends without the lock. */
const volatile __u8 tb_prev_credit = TB_PREV_CREDIT_NONE;

/* The older layout's buckets while an upgrade moves them; 0 otherwise. */
static __always_inline void *tb_prev_buckets(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&buckets_prev, &zero);
}

static __always_inline int tb_moved(const struct tb_bucket *ob)
{
	return ob->lvl.last_ns >= TB_MOVED_NS;
}

/* The older bucket of an address this program has none for: 0 when there
 * is none, after putting a moved mark in its place. */
static __always_inline struct tb_bucket *tb_prev_claim(void *prev, const struct tb_addr *key,
						       __u8 unit)
{
	struct tb_bucket *ob = bpf_map_lookup_elem(prev, key);

	if (ob)
		return ob;
	if (!bpf_map_update_elem(prev, key, unit == TB_COST_PACKETS ? &tb_moved_marks[1] :
				 &tb_moved_marks[0], BPF_NOEXIST))
		return 0;
	/* The older program made one meanwhile. */
	return bpf_map_lookup_elem(prev, key);
}

/* Take older bucket ob over: into nb go its level, its cached rule, its
 * counters and its credit, untagged (fields later layouts added stay as
 * nb has them), and ob is left moved. A bucket already moved gives only
 * the counters the older program added since, with a moved level. */
static __always_inline void tb_take(struct tb_bucket *nb, struct tb_bucket *ob)
{
	__u8 tag = nb->tag;

	__builtin_memcpy(nb, ob, TB_BUCKET_COMMON);
	nb->tag = tag;
	if (tb_prev_credit == TB_PREV_CREDIT_GRANTED) {
		/* Layout 4 also adds what its credit admits to the passed
		 * counters without the lock: they are taken by exchange too.
		 * What the credit admitted was counted already, so only its
		 * unspent part carries. */
		__u64 old = __sync_lock_test_and_set(&ob->credit, 0);

		nb->c.passed_packets = __sync_lock_test_and_set(&ob->c.passed_packets, 0);
		nb->c.passed_bytes = __sync_lock_test_and_set(&ob->c.passed_bytes, 0);
		nb->credit = tb_credit_unspent(old);
		nb->credit_granted = old >> 32;
		nb->credit_from = nb->credit;
	} else if (tb_prev_credit == TB_PREV_CREDIT_COUNTED) {
		/* Granted and counted from under the lock held here, with a
		 * 32-bit count and no tag: what it admitted goes into the
		 * counters, and its unspent part carries, counted from. */
		__u64 old = __sync_lock_test_and_set(&ob->credit, 0), unspent = tb_credit_unspent(old);
		__u64 units = ob->credit_granted && ob->credit_from > unspent ? ob->credit_from - unspent : 0;

		nb->c.passed_packets += nb->cost == TB_COST_PACKETS ? units : old >> 32;
		nb->c.passed_bytes += nb->cost == TB_COST_PACKETS ? old >> 32 : units;
		nb->credit = ob->credit_granted ? unspent : 0;
		nb->credit_granted = ob->credit_granted;
		nb->credit_from = unspent;
		ob->credit_granted = ob->credit_from = 0;
	}
	ob->lvl.tokens = 0;
	ob->lvl.last_ns = TB_MOVED_NS;
	ob->lvl.peak = 0;
	ob->empty_ns = 0;
	__builtin_memset(&ob->c, 0, sizeof(ob->c));
}

/* Into a bucket of this layout that stood in for one not yet moved (a
 * shared bucket is made so before the swap): the level and cached rule of
 * the bucket taken over, from. Its counters are added by the caller. */
static __always_inline void tb_settle_level(struct tb_bucket *b, const struct tb_bucket *from)
{
	b->lvl = from->lvl;
	b->empty_ns = from->empty_ns;
	b->gen = from->gen;
	b->rule = from->rule;
	b->cost = from->cost;
}

#endif
