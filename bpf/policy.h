/* SPDX-License-Identifier: GPL-2.0 */
/* Which rule and which bucket a packet is charged to, and the charge
 * itself under the bucket's lock. */
#ifndef TB_POLICY_H
#define TB_POLICY_H

#include "maps.h"
#include "charge.h"
#include "migrate.h"
#include "parse.h"
#include "table.h"

enum tb_verdict {
	TB_PASS,
	TB_DROP,
	TB_MARK,        /* pass with ECN CE set */
};

/* Set by tbctl before load: charge the destination address (egress caps
 * per client) instead of the source. */
const volatile __u8 tb_key_dst = 0;
/* Set by tbctl for mode tc-egress, where fq honours skb->tstamp: only
 * there can action shape delay a packet. */
const volatile __u8 tb_egress = 0;

#define TB_LOCK_SHIFT 10
_Static_assert((1 << TB_LOCK_SHIFT) == TB_LOCK_STRIPES, "stripe count");
_Static_assert(TB_OWED_MIN_SHIFT >= TB_LOCK_SHIFT, "an owed slot within one stripe");
_Static_assert(TB_TABLE_MIN_SHIFT >= TB_LOCK_SHIFT, "a set within one stripe");

/* The hash that places address a's lock stripe and owed[] slot, as the
 * pins place them (tb_config.stripes). */
static __always_inline __u32 tb_place(const struct tb_config *cfg, const struct tb_addr *a)
{
	return tb_stripe_hash(a, cfg->stripes, cfg->slot_seed);
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
 * charge that took tokens (the only kind that moves it later); the caller
 * holds the slot's stripe lock. */
static __always_inline void tb_owe(__u64 *slot, int out, const struct tb_level *l,
				   const struct tb_rate *r)
{
	__u64 f;

	if (!slot || out > TB_DELAYED)
		return;
	f = tb_full_at(l, r);
	if (f > *slot)
		*slot = f;
}

/* Longest-prefix match, falling back to the default rule. */
static __always_inline struct tb_rule *tb_resolve(const struct tb_config *cfg,
						  const struct tb_addr *a, int cls, __u32 *id)
{
	struct tb_rule *rule;
	__u32 *hit;

	if (cls == TB_CLASS_IPV4) {
		struct tb_lpm_v4 k = { .prefixlen = 32, .addr = a->w[3] };

		hit = bpf_map_lookup_elem(&prefixes_v4, &k);
	} else {
		struct tb_lpm_v6 k = { .prefixlen = 128 };

		__builtin_memcpy(k.addr, a->w, sizeof(k.addr));
		hit = bpf_map_lookup_elem(&prefixes_v6, &k);
	}
	if (hit)
		*id = *hit;
	else if (cfg->default_rule)
		*id = cfg->default_rule - 1;
	else
		return 0;
	rule = bpf_map_lookup_elem(&rules, id);
	if (!rule || !rule->in_use)
		return 0;
	return rule;
}

/* Units a packet of pkts segments and len bytes takes in unit cost. */
static __always_inline __u64 tb_units(__u8 cost, __u64 len, __u32 pkts)
{
	return cost == TB_COST_PACKETS ? pkts : len;
}

static __always_inline __u64 tb_units_of(const struct tb_rule *rule, __u64 len, __u32 pkts)
{
	return tb_units(rule->cost, len, pkts);
}

static __always_inline void tb_terms_of(const struct tb_rule *rule, __u64 len, __u32 pkts,
					struct tb_terms *t)
{
	t->r = rule->r;
	t->unit = rule->cost;
	t->cost = tb_units_of(rule, len, pkts) * TB_NANO;
	t->action = rule->action;
	t->horizon_ns = rule->horizon_ns;
	t->credit = rule->burst >> TB_CREDIT_SHIFT <= 0xffffffffULL ? rule->burst >> TB_CREDIT_SHIFT : 0;
}

/* The early signal's draw, for a packet about to take the lock: no
 * helper may run under it, and a packet dropped without it needs none. */
static __always_inline void tb_draw(struct tb_terms *t)
{
	if (t->r.early)
		t->rnd = bpf_get_prandom_u32();
}

/* Whether an empty bucket drops (or, monitor, counts) the packet: all
 * but shape where departures can wait, whose schedule writes the bucket
 * whatever it decides. */
static __always_inline int tb_tail_drops(int action, int can_delay)
{
	return action != TB_ACTION_SHAPE || !can_delay;
}

/* Take the bucket's credit back, counting what it admitted; the caller
 * holds the lock. The unspent part returns to the level (bucket.h,
 * tb_unspend) unless the level is kept in another unit from now on. */
static __always_inline void tb_take_credit(struct tb_bucket *b, const struct tb_terms *t, __u64 now)
{
	__u64 w = __sync_lock_test_and_set(&b->credit, 0);

	tb_credit_counted(b, w, &b->c);
	if (b->cost == t->unit) {
		b->lvl.tokens = tb_unspend(&b->lvl, now, &t->r, b->credit_granted, w & 0xffffffffULL);
		if (now > b->lvl.last_ns)
			b->lvl.last_ns = now;
	}
	b->credit_granted = b->credit_from = 0;
}

/* Charge and count in the bucket; the caller holds its lock. Credit
 * returns to the level first, so the charge sees all the bucket holds;
 * tb_grant sets some aside again after it. */
static __always_inline int tb_account(struct tb_bucket *b, const struct tb_terms *t,
				      __u64 now, __u64 len, __u32 pkts, __u64 *depart)
{
	int out;

	if (b->credit_granted)
		tb_take_credit(b, t, now);
	if (b->cost != t->unit) {
		/* The level is in the other unit: nothing carries over. */
		tb_fill(&b->lvl, now, &t->r);
		b->cost = t->unit;
	}
	out = tb_decide(&b->lvl, t, now, depart);
	/* After a tail drop, until the bucket can pay again, packets are
	 * dropped without the lock (tb_police_addr). */
	WRITE_ONCE(b->empty_ns, tb_bound_after(out, &b->lvl, &t->r, b->empty_ns));
	if (out <= TB_DELAYED) {
		b->c.passed_packets += pkts;
		b->c.passed_bytes += len;
	} else if (t->action == TB_ACTION_MONITOR) {
		b->c.monitored_packets += pkts;
		b->c.monitored_bytes += len;
	} else {
		b->c.dropped_packets += pkts;
		b->c.dropped_bytes += len;
	}
	return out;
}

/* After a charge that passed, set credit aside from the level of a
 * per-address bucket (tb_account took any older credit back). The caller
 * holds the lock. */
static __always_inline void tb_grant(struct tb_bucket *b, const struct tb_terms *t, int out)
{
	if (out != TB_FIT || !tb_credit_fits(&b->lvl, &t->r, t->credit))
		return;
	b->lvl.tokens -= (__u64)t->credit * TB_NANO;
	b->credit_granted = b->credit_from = t->credit;
	WRITE_ONCE(b->credit, (__u64)b->tag << TB_CREDIT_TAG_SHIFT | t->credit);
}

/* Admit a packet of key, of units that counts other in the other
 * measure, from the credit of the bucket of way w of s, without the lock:
 * a compare-and-swap, retried a few times against other CPUs doing the
 * same. The word read is key's if the way still holds key after it, and
 * its tag fails the swap once the way has changed hands. 0 when the
 * credit cannot pay: the packet takes the lock. */
static __always_inline int tb_spend_credit(struct tb_set *s, int w, const struct tb_addr *key,
					   __u64 units, __u64 other)
{
	struct tb_bucket *b = &s->b[w & (TB_WAYS - 1)];
	__u64 c = READ_ONCE(b->credit), seen, next;

	if (!tb_way_holds(s, w, key))
		return 0;
	for (int i = 0; i < 4 && (next = tb_credit_spend(c, units, other)); i++) {
		seen = __sync_val_compare_and_swap(&b->credit, c, next);
		if (seen == c)
			return 1;
		c = seen;
	}
	return 0;
}

/* Count the outcome globally and turn it into the hook's verdict. */
static __always_inline int tb_count(struct tb_stats *st, int out, int action, __u64 len,
				    __u32 pkts)
{
	switch (out) {
	case TB_MARKED:
		st->marked_packets += pkts;
		break;
	case TB_DELAYED:
		st->delayed_packets += pkts;
		break;
	case TB_EARLY:
		st->early_dropped_packets += pkts;
		break;
	}
	if (out <= TB_DELAYED) {
		st->c.passed_packets += pkts;
		st->c.passed_bytes += len;
		return out == TB_MARKED ? TB_MARK : TB_PASS;
	}
	if (action == TB_ACTION_MONITOR) {
		st->c.monitored_packets += pkts;
		st->c.monitored_bytes += len;
		return TB_PASS;
	}
	st->c.dropped_packets += pkts;
	st->c.dropped_bytes += len;
	return TB_DROP;
}

static __always_inline int tb_shared_charge(struct tb_stats *st, __u32 id, struct tb_terms *t,
					    __u64 now, __u64 len, __u32 pkts, __u64 *depart)
{
	struct tb_shared *sh = bpf_map_lookup_elem(&shared, &id);
	int out;

	if (!sh)
		return TB_PASS;
	tb_draw(t);
	bpf_spin_lock(&sh->lock);
	out = tb_account(&sh->b, t, now, len, pkts, depart);
	bpf_spin_unlock(&sh->lock);
	return tb_count(st, out, t->action, len, pkts);
}

/* Address key's set, placed h (tb_place); 0 when the config has no
 * table, which cannot be. */
static __always_inline struct tb_set *tb_set_of(const struct tb_config *cfg, const struct tb_addr *key,
						__u32 *h)
{
	__u32 si;

	if (cfg->table_shift < TB_TABLE_MIN_SHIFT || cfg->table_shift > 31 || !cfg->ways ||
	    cfg->ways > TB_WAYS)
		return 0;
	*h = tb_place(cfg, key);
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

static __always_inline int tb_place_of(const struct tb_config *cfg, const struct tb_addr *key,
				       struct tb_place_of *p)
{
	p->s = tb_set_of(cfg, key, &p->h);
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
		nb->credit = (__u64)nb->tag << TB_CREDIT_TAG_SHIFT | (nb->credit & 0xffffffffULL);
	tb_way_clear(s, w);
	tb_way_give(s, w, key, nb);
}

/* During an upgrade, move the older bucket ob of key into the table: its
 * counters always, and its level too when the table holds no bucket for
 * key yet (one it holds was made from a moved mark, or from owed[], under
 * the same lock). For tbctl's sweep after the swap, and for counts the
 * drop cache holds for an address not seen since. */
static __always_inline void tb_move(const struct tb_config *cfg, const struct tb_addr *key,
				    struct tb_bucket *ob)
{
	struct tb_bucket nb = {};
	struct tb_place_of p;
	int w;

	if (!tb_place_of(cfg, key, &p))
		return;
	bpf_spin_lock(&p.lk->lock);
	w = tb_way_find(p.s, key, cfg->ways);
	if (w >= 0) {
		tb_take(&nb, ob);
		tb_counters_add(&p.s->b[w & (TB_WAYS - 1)].c, &nb.c);
	} else if (!tb_moved(ob)) {
		w = tb_way_victim(p.s, cfg->ways);
		tb_take(&nb, ob);
		tb_insert(p.s, key, &nb, w);
	} else {
		/* Counts left on a moved bucket whose successor was evicted
		 * since went with it, as an evicted bucket's do. */
		tb_take(&nb, ob);
	}
	bpf_spin_unlock(&p.lk->lock);
}

/* Add c to the counters of key's bucket under its stripe's lock, if the
 * table holds one (during an upgrade, an older bucket not moved yet is
 * moved first) and, where epoch is given (>= 0), a reset has not moved
 * the epoch on since the counts were made. Returns whether there was a
 * bucket: one evicted meanwhile took its counters with it. */
static __always_inline int tb_add_counts(const struct tb_config *cfg, const struct tb_addr *key,
					 const struct tb_counters *c, int epoch)
{
	struct tb_place_of p;
	void *prev;
	int w;

	if (!tb_place_of(cfg, key, &p))
		return 0;
	if (tb_way_find(p.s, key, cfg->ways) < 0 && (prev = tb_prev_buckets())) {
		struct tb_bucket *ob = bpf_map_lookup_elem(prev, key);

		if (ob)
			tb_move(cfg, key, ob);
	}
	bpf_spin_lock(&p.lk->lock);
	w = tb_way_find(p.s, key, cfg->ways);
	if (w >= 0 && (epoch < 0 || epoch == READ_ONCE(cfg->reset_epoch)))
		tb_counters_add(&p.s->b[w & (TB_WAYS - 1)].c, c);
	bpf_spin_unlock(&p.lk->lock);
	return w >= 0;
}

/* Add a slot's pending counts, made under reset epoch epoch, to its
 * address's bucket, under the lock the locked path counts under, and
 * empty it. A reset bumps the epoch before it zeroes the buckets under
 * their locks, so a flush that finds the epoch moved on comes after the
 * bucket was zeroed, and its counts were taken by the reset. The slot's
 * flush sequence (slot i) is odd from before the add until after the
 * emptying: plain stores, which x86 makes visible in program order. */
static __always_inline void tb_dropcache_flush(const struct tb_config *cfg, struct tb_dropslot *s,
					       __u32 i, __u16 epoch)
{
	struct tb_flushseq *q = bpf_map_lookup_elem(&flushseq, &i);
	struct tb_counters c = {
		.dropped_packets = s->dropped_packets,
		.dropped_bytes = s->dropped_bytes,
		.monitored_packets = s->monitored_packets,
		.monitored_bytes = s->monitored_bytes,
	};

	if (q)
		WRITE_ONCE(q->seq, q->seq + 1);
	barrier();
	tb_add_counts(cfg, &s->addr, &c, epoch);
	s->dropped_packets = s->dropped_bytes = 0;
	s->monitored_packets = s->monitored_bytes = 0;
	barrier();
	if (q)
		WRITE_ONCE(q->seq, q->seq + 1);
}

static __always_inline void tb_passcache_flush(const struct tb_config *cfg, struct tb_passslot *s)
{
	struct tb_counters c = {
		.passed_packets = s->passed_packets,
		.passed_bytes = s->passed_bytes,
	};

	tb_add_counts(cfg, &s->addr, &c, -1);
	s->passed_packets = s->passed_bytes = 0;
}

/* Whether a cache slot whose address is *at is key's. */
static __always_inline int tb_slot_holds(const struct tb_addr *at, const struct tb_addr *key)
{
	const __u64 *a = (const __u64 *)at, *k = (const __u64 *)key;

	return a[0] == k[0] && a[1] == k[1];
}

/* Count an over-limit packet of key, whose cache slot is i, in this CPU's
 * dropcache, whose reset epoch d (the denycache slot i) keeps: the
 * bucket's counters are written only once a batch (or a collision)
 * flushes them. Counts of an earlier epoch are a reset's: emptied before
 * the epoch is written, so tbctl never reads them as this one's.
 *
 * on_bucket says the drop was decided on key's bucket (not on this CPU's
 * copy of the bound). Such a drop, whose slot holds another address's
 * counts, is counted in the bucket instead: taking the slot would look up and
 * write a second bucket, and in a spoofed flood, whose addresses are each
 * too rare to keep a copy or a slot, every drop would. The slot stays its
 * holder's, so an address that floods keeps its batch. Not where no CPU
 * keeps copies of bounds (no owed[]): every drop is then decided on its
 * bucket, and only the slot keeps a flood's drops off it. */
static __always_inline void tb_dropcache_count(const struct tb_config *cfg, struct tb_denyslot *d,
					       const struct tb_addr *key, __u32 i, int on_bucket,
					       int monitor, __u64 len, __u32 pkts)
{
	struct tb_dropslot *s = bpf_map_lookup_elem(&dropcache, &i);
	__u16 epoch = READ_ONCE(cfg->reset_epoch);
	__u64 n;

	if (!s || !d)
		return;
	if (d->drop_epoch != epoch) {
		s->dropped_packets = s->dropped_bytes = 0;
		s->monitored_packets = s->monitored_bytes = 0;
		barrier();
		WRITE_ONCE(d->drop_epoch, epoch);
	}
	if (!tb_slot_holds(&s->addr, key)) {
		if (s->dropped_packets || s->monitored_packets) {
			struct tb_counters c = {
				.dropped_packets = monitor ? 0 : pkts,
				.dropped_bytes = monitor ? 0 : len,
				.monitored_packets = monitor ? pkts : 0,
				.monitored_bytes = monitor ? len : 0,
			};

			if (on_bucket && tb_owes(cfg) && tb_add_counts(cfg, key, &c, -1))
				return;
			tb_dropcache_flush(cfg, s, i, epoch);
		}
		s->addr = *key;
	}
	if (monitor) {
		n = s->monitored_packets += pkts;
		s->monitored_bytes += len;
	} else {
		n = s->dropped_packets += pkts;
		s->dropped_bytes += len;
	}
	if (n >= TB_DROPCACHE_BATCH)
		tb_dropcache_flush(cfg, s, i, epoch);
}

/* Whether this CPU's copy d of key's bound shows that a packet of len
 * bytes and pkts segments certainly cannot be paid under generation gen. */
static __always_inline int tb_deny_cached(const struct tb_denyslot *d, const struct tb_addr *key,
					  __u32 gen, __u64 now, __u64 len, __u32 pkts)
{
	return d && d->gen == gen && tb_slot_holds(&d->addr, key) &&
	       tb_short(READ_ONCE(d->empty_ns), now, tb_units(d->cost, len, pkts) * TB_NANO, d->rate,
			d->fill_ns);
}

/* Keep bound e of key's bucket, under rule, in this CPU's copy d. Only
 * where re-created buckets start from what evicted ones owed (owed[]):
 * without that, eviction would refill a bucket behind the copy's back.
 * Shape never: a hook that delays departures does not tail drop. The
 * bound is cleared first and written last, so a program that runs on
 * this CPU while this one is preempted mid-write (a test run may be)
 * finds a copy that denies nothing, never one that mixes two. */
static __always_inline void tb_deny_keep(struct tb_denyslot *d, const struct tb_config *cfg,
					 const struct tb_addr *key, __u32 gen, __u64 e,
					 const struct tb_rule *rule)
{
	if (!d || rule->action == TB_ACTION_SHAPE || !tb_owes(cfg))
		return;
	WRITE_ONCE(d->empty_ns, 0);
	barrier();
	d->addr = *key;
	d->rate = rule->r.rate;
	d->fill_ns = rule->r.fill_ns;
	d->gen = gen;
	d->cost = rule->cost;
	d->action = rule->action;
	barrier();
	WRITE_ONCE(d->empty_ns, e);
}

/* Charge one IP packet, pkts segments weighing len bytes on the wire (see
 * tb_police), to the bucket of address key. Failing open (pass) on the
 * impossible lookups keeps a broken map from blackholing a link. */
static __always_inline int tb_police_addr(struct tb_stats *st, const struct tb_config *cfg,
					  const struct tb_addr *key, int cls, __u64 len,
					  __u32 pkts, struct tb_terms *t, __u64 now, __u64 *depart)
{
	struct tb_bucket *b = 0, nb = {};
	struct tb_bucket *ob = 0;
	struct tb_rule *rule = 0;
	struct tb_place_of p;
	__u32 id, bgen, gen = cfg->gen, ci = tb_dropcache_slot(key, cfg->slot_seed);
	struct tb_denyslot *d = bpf_map_lookup_elem(&denycache, &ci);
	int out, w, created = 0;
	__u64 e;
	__u8 cost;

	/* Certainly over the limit by what this CPU already knows: the
	 * bucket is not even looked up, so a flood from one address writes
	 * only this CPU's memory (and its bucket's counters once a batch). */
	if (tb_deny_cached(d, key, gen, now, len, pkts)) {
		tb_dropcache_count(cfg, d, key, ci, 0, d->action == TB_ACTION_MONITOR, len, pkts);
		return tb_count(st, TB_OVER, d->action, len, pkts);
	}
	if (!tb_place_of(cfg, key, &p))
		return TB_PASS;
	w = tb_way_lookup(p.s, key, cfg->ways);
	if (w >= 0) {
		b = &p.s->b[w & (TB_WAYS - 1)];
		bgen = READ_ONCE(b->gen);
		id = READ_ONCE(b->rule);
		cost = READ_ONCE(b->cost);
		/* Read without the lock: key's only if the way still holds
		 * key, or a rule cached for another address would be taken. */
		if (!tb_way_holds(p.s, w, key))
			b = 0;
	}
	if (b && bgen == gen) {
		/* Admitted from credit: no lock, no rule read, and no write to
		 * the bucket but the credit, which counts it too. The credit
		 * is kept in the bucket's unit, which is its rule's while the
		 * generation holds, and a pass counts alike under every
		 * action. Credit outstanding is never more than the bound
		 * below allows, so trying it first changes no outcome. */
		if (tb_spend_credit(p.s, w, key, tb_units(cost, len, pkts), cost == TB_COST_PACKETS ? len : pkts))
			return tb_count(st, TB_FIT, TB_ACTION_DROP, len, pkts);
		rule = bpf_map_lookup_elem(&rules, &id);
		if (rule && !rule->in_use)
			rule = 0;
	}
	if (!rule) {
		rule = tb_resolve(cfg, key, cls, &id);
		if (!rule) {
			st->unmatched_packets += pkts;
			st->unmatched_bytes += len;
			return TB_PASS;
		}
		tb_terms_of(rule, len, pkts, t);
		if (rule->scope == TB_SCOPE_SHARED)
			return tb_shared_charge(st, rule->shared, t, now, len, pkts, depart);
		if (!b) {
			/* During an upgrade, the older layout's bucket is
			 * taken over. */
			void *prev = tb_prev_buckets();

			ob = prev ? tb_prev_claim(prev, key, t->unit) : 0;
		}
	} else {
		/* Certainly over the limit: decided without the lock and
		 * without writing the bucket, and counted in this CPU's cache,
		 * so a flood from one address over every CPU shares no cache
		 * line it writes; counted in the bucket only where the slot is
		 * another address's (tb_dropcache_count). The bound is read after
		 * the rule it was computed under, and is key's if the way
		 * still holds key after it. */
		barrier();
		e = READ_ONCE(b->empty_ns);
		cost = READ_ONCE(b->cost);
		if (tb_tail_drops(rule->action, t->can_delay) && cost == rule->cost &&
		    tb_short(e, now, tb_units_of(rule, len, pkts) * TB_NANO, rule->r.rate, rule->r.fill_ns) &&
		    tb_way_holds(p.s, w, key)) {
			tb_deny_keep(d, cfg, key, gen, e, rule);
			tb_dropcache_count(cfg, d, key, ci, 1, rule->action == TB_ACTION_MONITOR, len, pkts);
			return tb_count(st, TB_OVER, rule->action, len, pkts);
		}
		tb_terms_of(rule, len, pkts, t);
	}

	tb_draw(t);
	bpf_spin_lock(&p.lk->lock);
	/* Found again under the lock: the way may have changed hands. */
	w = tb_way_find(p.s, key, cfg->ways);
	if (w < 0) {
		/* A new bucket, charged before it is given a way. It starts
		 * from what an evicted one of its owed[] slot still owes, or
		 * from the older layout's bucket. */
		w = tb_way_victim(p.s, cfg->ways);
		nb.gen = gen;
		nb.rule = id;
		nb.cost = t->unit;
		if (ob && !tb_moved(ob)) {
			tb_take(&nb, ob);
			if (nb.gen != gen || nb.rule != id)
				nb.empty_ns = 0;
			nb.gen = gen;
			nb.rule = id;
		} else {
			tb_restore(&nb.lvl, p.owed ? *p.owed : 0, now, &t->r);
		}
		out = tb_account(&nb, t, now, len, pkts, depart);
		tb_grant(&nb, t, out);
		tb_owe(p.owed, out, &nb.lvl, &t->r);
		tb_insert(p.s, key, &nb, w);
		created = 1;
	} else {
		b = &p.s->b[w & (TB_WAYS - 1)];
		if (ob) {
			/* Another CPU gave key a way meanwhile: the counters
			 * of the older bucket claimed here join it. */
			tb_take(&nb, ob);
			tb_counters_add(&b->c, &nb.c);
		}
		if (b->gen != gen || b->rule != id) {
			/* A bound from another rule means nothing under this
			 * one: cleared before the rule is, for readers that
			 * check the rule first. */
			b->empty_ns = 0;
			barrier();
			b->gen = gen;
			b->rule = id;
		}
		out = tb_account(b, t, now, len, pkts, depart);
		tb_grant(b, t, out);
		tb_owe(p.owed, out, &b->lvl, &t->r);
	}
	bpf_spin_unlock(&p.lk->lock);
	if (created)
		st->buckets_created++;
	return tb_count(st, out, t->action, len, pkts);
}

/* The whole policy for one frame of len bytes. A GSO/GRO packet of segs
 * segments is charged and counted as its segments on the wire: each
 * repeats the headers. Where the hook has no count (segs 0) but knows the
 * device's L3 mtu, an IP packet longer than the MTU is such a packet,
 * counted from the MTU (parse.h, tb_gso_segs). On TB_MARK the hook sets
 * CE (ecn.h); on a later departure *depart is set. */
static __always_inline int tb_police(const void *data, const void *data_end, __u64 len,
				     __u32 segs, __u32 mtu, int can_delay, struct tb_pkt *pkt,
				     int *cls, __u64 *depart)
{
	__u32 hdrs = 0;
	struct tb_terms t = {};
	struct tb_stats *st;
	struct tb_config *cfg;
	__u32 zero = 0;

	st = bpf_map_lookup_elem(&stats, &zero);
	cfg = bpf_map_lookup_elem(&config, &zero);
	if (!st || !cfg)
		return TB_PASS;

	*cls = tb_parse(data, data_end, tb_key_dst, pkt);
	if (*cls == TB_CLASS_NONIP) {
		st->nonip_packets++;
		return TB_PASS;
	}
	if (*cls == TB_CLASS_ND) {
		st->nd_packets++;
		return TB_PASS;
	}
	if (*cls == TB_CLASS_MALFORMED) {
		st->malformed_packets++;
		return TB_PASS;
	}
	if (segs > 1 || mtu) {
		hdrs = tb_headers_len(data, data_end, pkt);
		if (!segs)
			segs = tb_gso_segs(len, pkt->l3, hdrs, mtu);
	}
	if (segs > 1) {
		t.segs = segs;
		len += (__u64)(segs - 1) * hdrs;
	} else {
		segs = 1;
	}
	t.ect = pkt->ecn != TB_ECN_NOT_ECT;
	t.can_delay = can_delay;
	return tb_police_addr(st, cfg, &pkt->key, *cls, len, segs, &t, bpf_ktime_get_ns(), depart);
}

#endif
