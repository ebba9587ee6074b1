/* SPDX-License-Identifier: GPL-2.0 */
/* The policy for one packet: its address's rule and bucket, and the four
 * paths by which it is decided, cheapest first (tb_police_addr): this
 * CPU's copy of the bound denies it, credit admits it, the bucket's bound
 * read without the lock denies it, or the charge under the lock. */
#ifndef TB_POLICY_H
#define TB_POLICY_H

#include "stages/caches.h"
#include "stages/migrate.h"
#include "stages/fleet.h"
#include "stages/fragment.h"
#include "stages/event.h"
#include "stages/ban.h"
#include "logic/counters.h"

/* Set by tbctl before load: charge the destination address (egress caps
 * per client) instead of the source. */
const volatile __u8 tb_key_dst = 0;
/* Set by tbctl for mode tc-egress, where fq honours skb->tstamp: only
 * there can action shape delay a packet. */
const volatile __u8 tb_egress = 0;

/* A shared bucket's charge: rule (slot id) is its, of scope shared. */
static __always_inline int tb_shared_charge(struct tb_stats *st, const struct tb_config *cfg,
					    const struct tb_rule *rule, __u32 id, struct tb_terms *t, __u64 now,
					    __u64 len, __u32 pkts, __u64 *depart)
{
	__u32 slot = rule->shared, ban;
	struct tb_shared *sh = bpf_map_lookup_elem(&shared, &slot);
	struct tb_addr bk;
	int out;

	if (!sh)
		return TB_PASS;
	if (rule->ban_ms) {
		tb_ban_shared_key(&bk, rule->shared);
		ban = tb_banned(cfg, &bk, tb_dropcache_slot(&bk, cfg->slot_seed), now);
		if (ban)
			return tb_ban_drop(st, ban - 1, len, pkts);
	}
	tb_draw(t);
	bpf_spin_lock(&sh->lock);
	out = tb_account(&sh->b, t, now, len, pkts, depart);
	bpf_spin_unlock(&sh->lock);
	if (out <= TB_DELAYED && rule->fleet)
		return tb_charge_fleet(0, 0, id, len, tb_total_packet(pkts, t->ect, t->can_delay, out, 0));
	return tb_count(st, out, t->action, len, pkts, TB_CTX(TB_WHY_RATE, id));
}

/* What tb_police_addr has learned of a packet's address when a path
 * leaves the decision to the next: where its bucket is, the bucket and
 * the rule it cached if read without the lock, and its caches' slot. */
struct tb_seen {
	struct tb_place_of p;
	struct tb_bucket *b;    /* key's, read without the lock; 0: none found */
	struct tb_rule *rule;   /* the rule b cached, or the one resolved */
	struct tb_denyslot *d;  /* this CPU's copy of the bound, slot ci */
	__u32 id;               /* rule's rules[] slot */
	__u32 gen;              /* the rule-set generation the packet is decided under */
	__u32 ci;               /* key's dropcache and denycache slot */
	int w;                  /* b's way */
	__u8 tag;               /* its tag when first read: the reads hold while it does */
	__u8 placed;            /* p.h is key's placement hash, from the groupcache */
};

#define TB_UNDECIDED -1

/* Path 1, a copy of the bound (s->d, key's): certainly over the limit by
 * what this CPU already knows. The bucket is not even looked up, so a
 * flood from one address writes only this CPU's memory (and its bucket's
 * counters once a batch). */
static __always_inline int tb_denied_by_copy(struct tb_stats *st, const struct tb_config *cfg,
					     const struct tb_addr *key, const struct tb_seen *s, __u64 now,
					     __u64 len, __u32 pkts)
{
	if (!tb_deny_cached(s->d, now, len, pkts))
		return TB_UNDECIDED;
	tb_dropcache_count(cfg, s->d, key, s->ci, 0, tb_passes_over(s->d->action), len, pkts);
	return tb_count(st, TB_OVER, s->d->action, len, pkts, TB_CTX(TB_WHY_RATE, -1));
}

/* Path 2, credit: admitted with no lock, no rule read, and no write to
 * the bucket but the credit, which counts it too. The credit is kept in
 * the bucket's unit, which is its rule's while the generation holds, and
 * a pass counts alike under every action. Credit outstanding is never
 * more than the bound allows, so trying it first changes no outcome.
 * On the way, key's bucket is found, and the rule it cached read. */
static __always_inline int tb_admitted_by_credit(struct tb_stats *st, const struct tb_config *cfg,
						 const struct tb_addr *key, struct tb_seen *s, __u64 len,
						 __u32 pkts)
{
	struct tb_bucket *b;
	__u32 bgen, id;
	__u8 cost;

	s->w = tb_way_lookup(s->p.s, key, cfg->ways);
	if (s->w < 0)
		return TB_UNDECIDED;
	b = &s->p.s->b[s->w & (TB_WAYS - 1)];
	s->tag = tb_way_tag(s->p.s, s->w);
	bgen = READ_ONCE(b->gen);
	s->id = READ_ONCE(b->rule) & TB_RULE_INDEX;
	cost = READ_ONCE(b->cost);
	/* Read without the lock: key's only if the way still holds key,
	 * under the same tag, or a rule cached for another address would be
	 * taken. */
	if (!tb_way_holds(s->p.s, s->w, key, s->tag))
		return TB_UNDECIDED;
	s->b = b;
	if (bgen != s->gen)
		return TB_UNDECIDED;
	if (tb_spend_credit(s->p.s, s->w, key, tb_units(cost, len, pkts), cost == TB_COST_PACKETS ? len : pkts))
		return tb_count(st, TB_FIT, TB_ACTION_DROP, len, pkts, 0);
	/* Helpers take keys by address: from locals, so that the compiler
	 * keeps s in registers (on the stack whole, 6.1's 512 bytes would
	 * not hold it). */
	id = s->id;
	s->rule = bpf_map_lookup_elem(&rules, &id);
	if (s->rule && !s->rule->in_use)
		s->rule = 0;
	return TB_UNDECIDED;
}

/* Path 3, the bound without the lock: certainly over the limit by the
 * bucket's own bound, under the rule it cached. Decided without writing
 * the bucket, and counted in this CPU's cache, so a flood from one
 * address over every CPU shares no cache line it writes; counted in the
 * bucket only where the slot is another address's (tb_dropcache_count).
 * The bound is read after the rule it was computed under, and is key's if
 * the way still holds key, under the tag read first, after it. */
static __always_inline int tb_denied_by_bound(struct tb_stats *st, const struct tb_config *cfg,
					      const struct tb_addr *key, const struct tb_seen *s, int can_delay,
					      __u64 now, __u64 len, __u32 pkts)
{
	const struct tb_rule *rule = s->rule;
	__u64 e;
	__u8 cost;

	tb_rmb();
	e = READ_ONCE(s->b->empty_ns);
	cost = READ_ONCE(s->b->cost);
	if (!tb_tail_drops(rule, can_delay) || cost != rule->cost ||
	    !tb_short(e, now, tb_units_of(rule, len, pkts) * TB_NANO, rule->r.rate, rule->r.fill_ns) ||
	    !tb_way_holds(s->p.s, s->w, key, s->tag))
		return TB_UNDECIDED;
	tb_deny_keep(s->d, cfg, key, s->gen, e, rule);
	tb_dropcache_count(cfg, s->d, key, s->ci, 1, tb_passes_over(rule->action), len, pkts);
	return tb_count(st, TB_OVER, rule->action, len, pkts, TB_CTX(TB_WHY_RATE, s->id));
}

/* Path 4, the charge under the lock: the way is found again (it may have
 * changed hands), or a new bucket is made, charged and given a way.
 * During a take-over, a bucket still in the older table is moved first.
 * A packet that passes under a rule with a total is charged there too,
 * which counts it, and so is one under a fleet rule to its fleet key. */
static __always_inline int tb_charged(struct tb_stats *st, const struct tb_config *cfg,
				      const struct tb_addr *key, struct tb_seen *s, struct tb_terms *t,
				      __u64 now, __u64 len, __u32 pkts, __u64 *depart)
{
	struct tb_bucket *nb, *b;
	int out, w, created = 0, racy = cfg->take_over != TB_TAKE_NONE;
	__u32 zero = 0;

	if (!s->b && cfg->take_over >= TB_TAKE_MARK &&
	    tb_move_bucket(key, s->gen, s->id, t->unit, TB_MOVING_PACKET) == TB_TAKEN_DENY)
		return tb_count(st, TB_OVER, t->action, len, pkts, TB_CTX(TB_WHY_RATE, s->id));
	if (!s->b && now < cfg->prev_owed_until)
		tb_owed_carry(key);
	/* A new bucket is made in this CPU's scratch: the stack has no room. */
	nb = bpf_map_lookup_elem(&newbucket, &zero);
	if (!nb)
		return TB_PASS;
	tb_draw(t);
	bpf_spin_lock(&s->p.lk->lock);
	w = tb_way_find(s->p.s, key, cfg->ways);
	if (w < 0) {
		/* A new bucket, charged before it is given a way. It starts
		 * from what an evicted one of its owed[] slot still owes. */
		w = tb_way_victim(s->p.s, cfg->ways);
		__builtin_memset(nb, 0, sizeof(*nb));
		nb->gen = s->gen;
		nb->rule = s->id;
		nb->cost = t->unit;
		tb_restore(&nb->lvl, s->p.owed ? *s->p.owed : 0, now, &t->r, &t->peak);
		out = tb_account(nb, t, now, len, pkts, depart);
		tb_grant(nb, t, out);
		tb_owe(s->p.owed, out, &nb->lvl, &t->r, &t->peak, racy);
		tb_insert(s->p.s, key, nb, w);
		created = 1;
	} else {
		b = &s->p.s->b[w & (TB_WAYS - 1)];
		b->rule |= TB_SEEN_AGAIN;
		if (b->gen != s->gen || tb_cached_rule(b) != s->id) {
			/* A bound from another rule means nothing under this
			 * one: cleared before the rule is, for readers that
			 * check the rule first. */
			b->empty_ns = 0;
			tb_wmb();
			b->gen = s->gen;
			b->rule = s->id | TB_SEEN_AGAIN;
		}
		out = tb_account(b, t, now, len, pkts, depart);
		tb_grant(b, t, out);
		tb_owe(s->p.owed, out, &b->lvl, &t->r, &t->peak, racy);
	}
	bpf_spin_unlock(&s->p.lk->lock);
	if (created)
		st->buckets_created++;
	if (out <= TB_DELAYED && s->rule->total.rate) {
		const __u64 *k = (const __u64 *)key;

		out = tb_charge_total(k[0], k[1], s->id, len,
				      tb_total_packet(pkts, t->ect, t->can_delay, out, s->p.h));
		if (t->can_delay)
			tb_total_departure(depart);
		return out;
	}
	if (out <= TB_DELAYED && s->rule->fleet) {
		const __u64 *k = (const __u64 *)key;

		return tb_charge_fleet(k[0], k[1], s->id, len,
				       tb_total_packet(pkts, t->ect, t->can_delay, out, s->p.h));
	}
	return tb_count(st, out, t->action, len, pkts, TB_CTX(TB_WHY_RATE, s->id));
}

/* tb_police_addr's answer for a packet whose rule could not be known:
 * tb_police counts why, and drops it. */
#define TB_UNSURE -2

/* Charge one IP packet, pkts segments weighing len bytes on the wire (see
 * tb_police), to the bucket of address key (or of its group, which key
 * becomes): by the first of the four paths that decides it, and then to
 * its rule's total, if it has one. Failing open (pass) on the impossible
 * lookups keeps a broken map from blackholing a link; a packet that hides
 * what its rule depends on does not (TB_UNSURE). */
static __always_inline int tb_police_addr(struct tb_stats *st, const struct tb_config *cfg,
					  struct tb_addr *key, int cls, __u64 l4, __u64 len,
					  __u32 pkts, struct tb_terms *t, __u64 now, __u64 *depart)
{
	struct tb_seen s = { .gen = tb_load_acquire(&cfg->gen) };
	__u64 r;
	__u32 id, ci;
	int v;

	/* A manual ban is of the address, whatever its rule. */
	if ((cls == TB_CLASS_IPV4 ? cfg->bans_v4 : cfg->bans_v6) && tb_banned_by_hand(cfg, key, cls, now))
		return tb_ban_drop(st, -1, len, pkts);
	/* The caches' slot is the key's, which tb_regroup may have made
	 * a group's, or a match rule's. */
	r = tb_regroup_cached(cfg, key, cls, l4, s.gen, &s.p.h, &s.placed);
	id = (__u32)r;
	ci = r >> 32 & (TB_DROPCACHE_SLOTS - 1);
	if (id == TB_RULE_UNSURE)
		return TB_UNSURE;
	/* A rule's ban is of the key it charges. */
	v = tb_banned(cfg, key, ci, now);
	if (v)
		return tb_ban_drop(st, v - 1, len, pkts);
	s.ci = ci;
	s.d = bpf_map_lookup_elem(&denycache, &ci);
	if (tb_deny_copied(s.d, key, s.gen)) {
		v = tb_denied_by_copy(st, cfg, key, &s, now, len, pkts);
		if (v != TB_UNDECIDED)
			return v;
	}
	/* The set alone: the stripe's lock and the owed[] slot only for the
	 * charge, which the paths before it spare two lookups. */
	/* Placed as the groupcache had it, but while an older program may
	 * run (tb_set_of). */
	if (s.placed && cfg->take_over != TB_TAKE_SHARE)
		s.p.s = tb_set_at(cfg, s.p.h);
	else
		s.p.s = tb_set_of(cfg, key, ci, &s.p.h);
	if (!s.p.s)
		return TB_PASS;
	v = tb_admitted_by_credit(st, cfg, key, &s, len, pkts);
	if (v != TB_UNDECIDED)
		return v;
	if (s.rule) {
		t->dscp = s.rule->dscp;
		v = tb_denied_by_bound(st, cfg, key, &s, t->can_delay, now, len, pkts);
		if (v != TB_UNDECIDED)
			return v;
		tb_terms_of(s.rule, len, pkts, t);
	} else {
		s.rule = tb_resolve(cfg, key, cls, &id);
		s.id = id;
		if (!s.rule) {
			st->unmatched_packets += pkts;
			st->unmatched_bytes += len;
			return TB_PASS;
		}
		if (s.rule->action == TB_ACTION_PASS) {
			st->allowed_packets += pkts;
			st->allowed_bytes += len;
			return tb_count(st, TB_FIT, TB_ACTION_PASS, len, pkts, 0);
		}
		tb_terms_of(s.rule, len, pkts, t);
		if (s.rule->scope == TB_SCOPE_SHARED)
			return tb_shared_charge(st, cfg, s.rule, id, t, now, len, pkts, depart);
	}
	if (!tb_place_lock(cfg, &s.p))
		return TB_PASS;
	return tb_charged(st, cfg, key, &s, t, now, len, pkts, depart);
}

/* The whole policy for one frame of len bytes. A GSO/GRO packet of segs
 * segments is charged and counted as its segments on the wire: each
 * repeats the headers. Where the hook has no count (segs 0) but knows the
 * device's L3 mtu, an IP packet longer than the MTU is such a packet,
 * counted from the MTU (parse.h, tb_gso_segs). On TB_MARK the hook sets
 * CE, on TB_REMARK the DSCP *dscp (tos.h); on a later departure *depart
 * is set. */
static __always_inline int tb_police(const void *data, const void *data_end, __u64 len,
				     __u32 segs, __u32 mtu, int can_delay, struct tb_pkt *pkt,
				     int *cls, __u64 *depart, __u8 *dscp)
{
	__u32 hdrs = 0;
	__u64 l4 = 0, now;
	struct tb_terms *t;
	struct tb_stats *st;
	struct tb_config *cfg;
	__u32 zero = 0;
	int v;

	st = bpf_map_lookup_elem(&stats, &zero);
	cfg = bpf_map_lookup_elem(&config, &zero);
	t = bpf_map_lookup_elem(&termscratch, &zero);
	if (!st || !cfg || !t)
		return TB_PASS;
	__builtin_memset(t, 0, sizeof(*t));

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
		t->segs = segs;
		len += (__u64)(segs - 1) * hdrs;
	} else {
		segs = 1;
	}
	if (cfg->match_reads) {
		l4 = tb_l4(data, data_end, pkt, *cls, (__u64)(data_end - data) >= len);
		if (l4 == TB_L4_MALFORMED) {
			st->malformed_packets++;
			return TB_PASS;
		}
		if (pkt->frag && (cfg->match_reads & (TB_READS_DPORT | TB_READS_SPORT | TB_READS_FLAGS)))
			l4 = tb_fragment_l4(data, data_end, pkt, *cls, l4);
		l4 &= cfg->l4_mask | TB_L4_UNKNOWN;
	}
	t->ect = pkt->ecn != TB_ECN_NOT_ECT;
	t->tcp = tb_tcp_segment(data, data_end, pkt, &t->seq);
	t->can_delay = can_delay;
	/* The clock is read here, before the policy's work rather than
	 * where the paths need it: the drop path is then cheaper, though
	 * credit, which needs no clock, pays for it (docs/design.md). */
	now = bpf_ktime_get_ns();
	v = tb_police_addr(st, cfg, &pkt->key, *cls, l4, len, segs, t, now, depart);
	*dscp = t->dscp;
	if (v == TB_UNSURE) {
		if (pkt->frag == TB_FRAG_LATER)
			st->fragments_unknown_packets += segs;
		else
			st->headers_unknown_packets += segs;
		v = tb_count(st, TB_OVER, TB_ACTION_DROP, len, segs, TB_CTX(TB_WHY_UNKNOWN, -1));
	}
	/* A refusal by a rule that bans counts towards its key's ban: over
	 * its rate, its total or the fleet's, not the early signal's drop,
	 * which comes before the bucket is empty. */
	if ((v & TB_VERDICT_MASK) == TB_DROP && cfg->ban_rules && v >> TB_RULE_SHIFT &&
	    tb_refusal_bans(v >> TB_WHY_SHIFT & 0xff))
		tb_ban_refused(((__u64 *)&pkt->key)[0], ((__u64 *)&pkt->key)[1], (v >> TB_RULE_SHIFT) - 1, now);
	if (v > TB_VERDICT_MASK && cfg->event_rate && tb_event_due(cfg, &pkt->key, now))
		tb_event(((__u64 *)&pkt->key)[0], ((__u64 *)&pkt->key)[1], v, len | (__u64)segs << 32, now);
	return v & TB_VERDICT_MASK;
}

#endif
