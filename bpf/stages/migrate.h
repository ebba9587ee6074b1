/* SPDX-License-Identifier: GPL-2.0 */
/* Upgrades that move buckets: shared buckets that grew, and the
 * per-address table when it is laid out or placed anew (enum
 * tb_take_over). Each older bucket is moved into this layout's map
 * exactly once. A moved bucket stays behind empty, its counters zero and
 * its refill clock at TB_MOVED_NS, so a program that still charges it
 * takes nothing more from it, and a rerun after a kill takes only what
 * was counted since. */
#ifndef TB_MIGRATE_H
#define TB_MIGRATE_H

#include "stages/place.h"
#include "logic/counters.h"
#include "logic/hash.h"

static __always_inline int tb_moved(const struct tb_bucket *ob)
{
	return ob->lvl.last_ns >= TB_MOVED_NS;
}

/* Take older bucket ob over: into nb go its level, its cached rule, its
 * counters and its credit (what the credit admitted counted, the unspent
 * part still granted, to be tagged anew), and ob is left moved. A bucket
 * already moved gives only the counters counted since, with a moved
 * level. The caller holds ob's lock. */
static __always_inline void tb_take(struct tb_bucket *nb, struct tb_bucket *ob)
{
	__u64 w = __sync_lock_test_and_set(&ob->credit, 0);

	__builtin_memcpy(nb, ob, TB_BUCKET_COMMON);
	tb_credit_counted(ob, w, &nb->c);
	nb->credit = tb_credit_unspent(w);
	nb->credit_granted = ob->credit_granted;
	nb->credit_from = nb->credit;
	ob->credit_granted = ob->credit_from = 0;
	ob->lvl.tokens = 0;
	ob->lvl.last_ns = TB_MOVED_NS;
	ob->lvl.hold = 0;
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

/* Give free way w of s to key as a moved mark, empty, in the unit of rule
 * id, so that the older program neither refills it nor makes key a
 * bucket; the caller holds the set's lock. Written in place: the stack
 * has no room for another bucket. */
static __always_inline void tb_mark(struct tb_set *s, int w, const struct tb_addr *key, __u32 gen, __u32 id,
				    __u8 unit)
{
	struct tb_bucket *b = &s->b[w & (TB_WAYS - 1)];
	__u8 tag = tb_way_next_tag(s, w);

	tb_way_clear(s, w);
	__builtin_memset(b, 0, sizeof(*b));
	b->lvl.last_ns = TB_MOVED_NS;
	b->gen = gen;
	b->rule = id | TB_SEEN_AGAIN;
	b->cost = unit;
	b->tag = tag;
	tb_way_give_key(s, w, key);
}

enum tb_taken {
	TB_TAKEN_NONE,          /* no older bucket: a new one is made */
	TB_TAKEN,               /* the older bucket is in nb */
	TB_TAKEN_DENY,          /* none to be had now: the packet is denied */
};

/* The first half of tb_move_bucket: key's older bucket taken into this
 * CPU's moving[slot] under the older table's lock, or a mark put in its place
 * (mark, with gen, id and unit). Returns 1 when one was taken, moved
 * already or not (moving[]'s level says), else 0, or TB_TAKEN_DENY when no
 * way was free for the mark. */
__attribute__((noinline)) int tb_take_prev(const struct tb_addr *key, __u32 gen, __u32 id, __u32 unit,
					   __u32 slot)
{
	__u32 k = 0, h;
	struct tb_config *cfg = bpf_map_lookup_elem(&config, &k);
	struct tb_bucket *nb = bpf_map_lookup_elem(&moving, &slot);
	void *prev = tb_prev_table();
	struct tb_lock *lk;
	struct tb_set *os;
	int w, r = 0;

	if (!cfg || !nb || !prev || !key || cfg->table_shift < TB_TABLE_MIN_SHIFT || cfg->table_shift > 31)
		return 0;
	/* Kept where the calls cannot clobber them. */
	__builtin_memset(nb, 0, sizeof(*nb));
	nb->gen = gen;
	nb->rule = id | TB_SEEN_AGAIN;
	nb->cost = unit;
	h = tb_place_hash_as(cfg, cfg->prev_place, key);
	k = tb_stripe(h);
	lk = bpf_map_lookup_elem(&locks, &k);
	k = tb_set_index(h, cfg->table_shift);
	os = bpf_map_lookup_elem(prev, &k);
	if (!lk || !os)
		return 0;
	bpf_spin_lock(&lk->lock);
	w = tb_way_find(os, key, cfg->ways);
	if (w >= 0) {
		tb_take(nb, &os->b[w & (TB_WAYS - 1)]);
		r = 1;
	} else if (cfg->take_over == TB_TAKE_MARK) {
		w = tb_way_victim(os, cfg->ways);
		if (tb_way_free(os, w & (TB_WAYS - 1)))
			tb_mark(os, w, key, nb->gen, nb->rule, nb->cost);
		else
			r = TB_TAKEN_DENY;
	}
	bpf_spin_unlock(&lk->lock);
	return r;
}

/* The second half: the bucket in moving[slot] into the new table under its
 * lock, if not moved before (then only its counts join the bucket the new
 * table holds, if it still does). Returns whether the new table holds
 * key's bucket now. */
__attribute__((noinline)) int tb_put_moved(const struct tb_addr *key, __u32 slot)
{
	__u32 k = 0, h;
	struct tb_config *cfg = bpf_map_lookup_elem(&config, &k);
	struct tb_bucket *nb = bpf_map_lookup_elem(&moving, &slot);
	struct tb_lock *lk;
	struct tb_rule *r;
	struct tb_set *s;
	__u64 *owed;
	int w;

	if (!cfg || !nb || !key || cfg->table_shift < TB_TABLE_MIN_SHIFT || cfg->table_shift > 31)
		return 0;
	h = tb_place_hash(cfg, key);
	k = tb_set_index(h, cfg->table_shift);
	s = bpf_map_lookup_elem(&buckets, &k);
	k = tb_stripe(h);
	lk = bpf_map_lookup_elem(&locks, &k);
	owed = tb_owed_slot(cfg, h);
	k = tb_cached_rule(nb);
	r = bpf_map_lookup_elem(&rules, &k);
	if (!s || !lk)
		return 0;
	bpf_spin_lock(&lk->lock);
	w = tb_way_find(s, key, cfg->ways);
	if (w >= 0) {
		tb_counters_add(&s->b[w & (TB_WAYS - 1)].c, &nb->c);
	} else if (!tb_moved(nb)) {
		if (r)
			tb_owe(owed, TB_FIT, &nb->lvl, &r->r, &r->peak, 1);
		w = tb_way_victim(s, cfg->ways);
		tb_insert(s, key, nb, w);
	}
	bpf_spin_unlock(&lk->lock);
	return w >= 0;
}

/* Move key's older bucket into the new table, under the older table's
 * lock and then the new one's, one at a time: its level and counters
 * when it was not moved yet, only the counts made since when it was (to
 * the bucket the new table holds, if it still does). Under TB_TAKE_MARK,
 * an address the older table lacks is given a moved mark there, in the
 * unit of rule id, so that a packet still charging the older table cannot
 * make it a second bucket. Returns TB_TAKEN when the new table holds
 * key's bucket now; TB_TAKEN_DENY when it was moved and the new table no
 * longer holds it (evicted since, or about to be put there by another
 * CPU), or no way was free for its mark: denied until tbctl has moved the
 * rest and dropped the older table, which takes milliseconds;
 * TB_TAKEN_NONE when there is no older bucket to take. slot is the
 * moving[] entry it carries the bucket in: a packet's program may run
 * within tbctl's tb_migrate on the same CPU, but not within another
 * packet's. In two global functions, so the verifier checks them once
 * and each needs little of the stack the packet's program leaves. */
static __always_inline int tb_move_bucket(const struct tb_addr *key, __u32 gen, __u32 id, __u32 unit,
					  __u32 slot)
{
	int r = tb_take_prev(key, gen, id, unit, slot);

	if (r != 1)
		return r ? TB_TAKEN_DENY : TB_TAKEN_NONE;
	return tb_put_moved(key, slot) ? TB_TAKEN : TB_TAKEN_DENY;
}

/* While the older table's evicted buckets may still owe in owed[] as
 * the older placement slots them (the caller checks
 * tb_config.prev_owed_until, so that no other packet pays the call),
 * raise key's slot to what its older slot owes, before a new bucket of
 * key starts from it. That holds the slot's other addresses back as long, as
 * sharing a slot does. Under the slot's stripe lock, by compare-and-swap:
 * during a take-over the older placement writes the slot under another
 * stripe. A global function, so the verifier checks it once, not on
 * every path that makes a bucket. */
__attribute__((noinline)) int tb_owed_carry(const struct tb_addr *key)
{
	__u32 k = 0, h;
	struct tb_config *cfg = bpf_map_lookup_elem(&config, &k);
	struct tb_lock *lk;
	__u64 *from, *to, v, seen;

	if (!cfg || !key || cfg->take_over == TB_TAKE_SHARE)
		return 0;
	from = tb_owed_slot(cfg, tb_place_hash_as(cfg, cfg->prev_place, key));
	h = tb_place_hash(cfg, key);
	to = tb_owed_slot(cfg, h);
	k = tb_stripe(h);
	lk = bpf_map_lookup_elem(&locks, &k);
	if (!from || !to || !lk)
		return 0;
	v = READ_ONCE(*from);
	bpf_spin_lock(&lk->lock);
	for (int i = 0; i < 4; i++) {
		seen = READ_ONCE(*to);
		if (v <= seen || __sync_val_compare_and_swap(to, seen, v) == seen)
			break;
	}
	bpf_spin_unlock(&lk->lock);
	return 0;
}

#endif
