/* SPDX-License-Identifier: GPL-2.0 */
/* Where an address's bucket lives: its set of the table, its lock stripe
 * and its owed[] slot, all placed by one keyed hash; and what is done to
 * it there under the stripe's lock (a way given, counts added). */
#ifndef TB_PLACE_H
#define TB_PLACE_H

#include "logic/charge.h"
#include "stages/maps.h"
#include "logic/table.h"
#include "logic/counters.h"
#include "logic/hash.h"

#define TB_LOCK_SHIFT 10
_Static_assert((1 << TB_LOCK_SHIFT) == TB_LOCK_STRIPES, "stripe count");
_Static_assert(TB_OWED_MIN_SHIFT >= TB_LOCK_SHIFT, "an owed slot within one stripe");
_Static_assert(TB_TABLE_MIN_SHIFT >= TB_LOCK_SHIFT, "a set within one stripe");

/* The hash that places address a, whose cache slot is ci: its set, lock
 * stripe and owed[] slot. SipHash runs once per address and CPU while
 * the address keeps its slot: a busy address pays a compare, not a hash. */
static __always_inline __u32 tb_place(const struct tb_config *cfg, const struct tb_addr *a, __u32 ci)
{
	const __u64 *k = (const __u64 *)a;
	struct tb_placeslot *c;
	__u64 *at;

	if (cfg->place != TB_PLACE_SIPHASH)
		return tb_place_hash(cfg, a);
	c = bpf_map_lookup_elem(&placecache, &ci);
	if (!c)
		return tb_place_hash(cfg, a);
	/* This CPU's own slot: plain loads, no other CPU writes it. */
	at = (__u64 *)&c->addr;
	if ((at[0] ^ k[0]) | (at[1] ^ k[1])) {
		c->h = tb_place_hash(cfg, a);
		c->addr = *a;
	}
	return c->h;
}

/* The stripe whose lock serialises the bucket of the address placed h. */
static __always_inline __u32 tb_stripe(__u32 h)
{
	return h >> (32 - TB_LOCK_SHIFT);
}

/* Whether owed[] is in use: not in a test's bare object (shift 0). */
static __always_inline int tb_owes(const struct tb_config *cfg)
{
	return cfg->owed_shift >= TB_OWED_MIN_SHIFT && cfg->owed_shift <= 31;
}

/* The owed[] slot of the address placed h: the top owed_shift bits of
 * the hash whose top TB_LOCK_SHIFT bits pick its stripe, so every address
 * of a slot writes it under one lock. 0 when there is none. */
static __always_inline __u64 *tb_owed_slot(const struct tb_config *cfg, __u32 h)
{
	__u32 i;

	if (!tb_owes(cfg))
		return 0;
	i = h >> (32 - cfg->owed_shift);
	return bpf_map_lookup_elem(&owed, &i);
}

/* Keep the latest full-again instant of the slot's buckets after a
 * charge that took tokens (the only kind that moves it later: under a
 * peak rate, a remarked packet's too, which took the peak's); the caller
 * holds the slot's stripe lock. racy during a take-over, when the two
 * tables' placements write one slot under different stripes: then by
 * compare-and-swap, so no later instant is lost. */
static __always_inline void tb_owe(__u64 *slot, int out, const struct tb_level *l,
				   const struct tb_rate *r, const struct tb_rate *peak, int racy)
{
	__u64 f, seen;

	if (!slot || (out > TB_DELAYED && !(out == TB_OVER && peak->rate)))
		return;
	f = tb_full_at_both(l, r, peak);
	if (!racy) {
		if (f > *slot)
			*slot = f;
		return;
	}
	for (int i = 0; i < 4; i++) {
		seen = READ_ONCE(*slot);
		if (f <= seen || __sync_val_compare_and_swap(slot, seen, f) == seen)
			return;
	}
}

/* The older table while an upgrade moves the table; 0 otherwise. */
static __always_inline void *tb_prev_table(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&table_prev, &zero);
}

/* Set si of the older table. The barrier keeps the compiler from
 * merging this lookup with one of the table's into one call: the
 * verifier inlines a lookup only where a single map reaches the call, and
 * merged, the table's lookup would be a helper call on every packet. */
static __always_inline struct tb_set *tb_prev_set(__u32 si)
{
	void *prev = tb_prev_table();
	struct tb_set *s = prev ? bpf_map_lookup_elem(prev, &si) : 0;

	barrier();
	return s;
}

/* The set that placement hash h picks, in the table tb_set_of picks:
 * for what is done again to a bucket already placed. */
static __always_inline struct tb_set *tb_set_at(const struct tb_config *cfg, __u32 h)
{
	__u32 si = tb_set_index(h, cfg->table_shift);

	if (cfg->take_over == TB_TAKE_SHARE)
		return tb_prev_set(si);
	return bpf_map_lookup_elem(&buckets, &si);
}

/* Address key's set, placed h (tb_place); 0 when the config has no
 * table, which cannot be. While an older program may still run during an
 * upgrade that moves the table, the older table's, placed as it was, so
 * both programs charge one bucket under one lock. */
static __always_inline struct tb_set *tb_set_of(const struct tb_config *cfg, const struct tb_addr *key,
						__u32 ci, __u32 *h)
{
	__u32 si;

	if (cfg->table_shift < TB_TABLE_MIN_SHIFT || cfg->table_shift > 31 || !cfg->ways ||
	    cfg->ways > TB_WAYS)
		return 0;
	if (cfg->take_over == TB_TAKE_SHARE) {
		*h = tb_place_hash_as(cfg, cfg->prev_place, key);
		return tb_prev_set(tb_set_index(*h, cfg->table_shift));
	}
	*h = tb_place(cfg, key, ci);
	si = tb_set_index(*h, cfg->table_shift);
	return bpf_map_lookup_elem(&buckets, &si);
}

/* Address key's set, its stripe's lock and its owed[] slot. 0 when the
 * set or the lock is missing, which cannot be. */
struct tb_place_of {
	struct tb_set *s;
	struct tb_lock *lk;
	__u64 *owed;
	__u32 h;
};

static __always_inline int tb_place_lock(const struct tb_config *cfg, struct tb_place_of *p)
{
	__u32 stripe = tb_stripe(p->h);

	p->lk = bpf_map_lookup_elem(&locks, &stripe);
	p->owed = tb_owed_slot(cfg, p->h);
	return p->lk != 0;
}

static __always_inline int tb_place_of(const struct tb_config *cfg, const struct tb_addr *key, __u32 ci,
				       struct tb_place_of *p)
{
	p->s = tb_set_of(cfg, key, ci, &p->h);
	return p->s && tb_place_lock(cfg, p);
}

/* The way of s holding k among its first ways, or -1, without the lock:
 * a scan that stops at the first match, so a busy address, which took
 * its set's first free way, reads only its own key's line; table.h's scan
 * reads every key, and a key line that shares its bytes with a charged
 * bucket moves between CPUs. Global, so the verifier checks it once and
 * its callers go on with one result, whichever way it found. */
__attribute__((noinline)) int tb_way_lookup(const struct tb_set *s, const struct tb_addr *k, __u32 ways)
{
	if (!s || !k)
		return -1;
	for (int i = 0; i < TB_WAYS; i++) {
		if ((__u32)i >= ways)
			break;
		if (tb_key_is(&s->key[i], k))
			return i;
	}
	return -1;
}

/* Give key way w of its set with bucket nb, whose tag, and its credit's,
 * are set here; the caller holds the set's stripe lock and found no way
 * holding key. */
static __always_inline void tb_insert(struct tb_set *s, const struct tb_addr *key, struct tb_bucket *nb,
				      int w)
{
	nb->tag = tb_way_next_tag(s, w);
	if (nb->credit)
		nb->credit = (__u64)nb->tag << TB_CREDIT_TAG_SHIFT | tb_credit_unspent(nb->credit);
	tb_way_clear(s, w);
	tb_way_give(s, w, key, nb);
}

/* Add c to the counters of key's bucket under its stripe's lock, if the
 * table holds one and, where epoch is given (>= 0), a reset has not moved
 * the epoch on since the counts were made. Returns whether there was a bucket: one evicted
 * meanwhile took its counters with it, as does, during a take-over, one
 * not yet moved from the older table. */
static __always_inline int tb_add_counts(const struct tb_config *cfg, const struct tb_addr *key,
					 const struct tb_counters *c, int epoch)
{
	struct tb_place_of p;
	int w;

	if (!tb_place_of(cfg, key, tb_dropcache_slot(key, cfg->slot_seed), &p))
		return 0;
	bpf_spin_lock(&p.lk->lock);
	w = tb_way_find(p.s, key, cfg->ways);
	if (w >= 0 && (epoch < 0 || epoch == READ_ONCE(cfg->reset_epoch))) {
		tb_counters_add(&p.s->b[w & (TB_WAYS - 1)].c, c);
		p.s->b[w & (TB_WAYS - 1)].rule |= TB_SEEN_AGAIN;
	}
	bpf_spin_unlock(&p.lk->lock);
	return w >= 0;
}

#endif
