/* SPDX-License-Identifier: GPL-2.0 */
/* Which rule and which bucket a packet is charged to, and the charge
 * itself under the bucket's lock. */
#ifndef TB_POLICY_H
#define TB_POLICY_H

#include "maps.h"
#include "bucket.h"
#include "parse.h"

enum tb_verdict {
	TB_PASS,
	TB_DROP,
};

/* Set by tbctl before load: charge the destination address (egress caps
 * per client) instead of the source. */
const volatile __u8 tb_key_dst = 0;

#define TB_LOCK_SHIFT 10
_Static_assert((1 << TB_LOCK_SHIFT) == TB_LOCK_STRIPES, "stripe count");

static __always_inline __u32 tb_lock_index(const struct tb_addr *a)
{
	__u32 h = a->w[0] ^ a->w[1] ^ a->w[2] ^ a->w[3];

	return (h * 0x9E3779B1u) >> (32 - TB_LOCK_SHIFT);
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

/* What the charge needs of a rule and a packet, worked out before the
 * lock is taken so the locked section is arithmetic only. */
struct tb_terms {
	struct tb_rate r;
	__u64 cost;     /* nano-units this packet takes */
	__u8 unit;
	__u8 monitor;
};

static __always_inline void tb_terms_of(const struct tb_rule *rule, __u64 len,
					struct tb_terms *t)
{
	t->r = rule->r;
	t->unit = rule->cost;
	t->cost = rule->cost == TB_COST_PACKETS ? TB_NANO : len * TB_NANO;
	t->monitor = rule->action == TB_ACTION_MONITOR;
}

/* Charge and count; the caller holds the bucket's lock. Returns 1 when the
 * packet fitted, 0 when it did not. */
static __always_inline int tb_account(struct tb_bucket *b, const struct tb_terms *t,
				      __u64 now, __u64 len)
{
	if (b->cost != t->unit) {
		/* The level is in the other unit; nothing carries over. */
		tb_fill(&b->lvl, now, &t->r);
		b->cost = t->unit;
	}
	if (tb_charge(&b->lvl, now, t->cost, &t->r)) {
		b->c.passed_packets++;
		b->c.passed_bytes += len;
		return 1;
	}
	if (t->monitor) {
		b->c.monitored_packets++;
		b->c.monitored_bytes += len;
	} else {
		b->c.dropped_packets++;
		b->c.dropped_bytes += len;
	}
	return 0;
}

static __always_inline void tb_count(struct tb_stats *st, int fit,
				     const struct tb_terms *t, __u64 len)
{
	if (fit) {
		st->c.passed_packets++;
		st->c.passed_bytes += len;
	} else if (t->monitor) {
		st->c.monitored_packets++;
		st->c.monitored_bytes += len;
	} else {
		st->c.dropped_packets++;
		st->c.dropped_bytes += len;
	}
}

static __always_inline int tb_shared_charge(struct tb_stats *st, __u32 id,
					    const struct tb_terms *t, __u64 now, __u64 len)
{
	struct tb_shared *sh = bpf_map_lookup_elem(&shared, &id);
	int fit;

	if (!sh)
		return TB_PASS;
	bpf_spin_lock(&sh->lock);
	fit = tb_account(&sh->b, t, now, len);
	bpf_spin_unlock(&sh->lock);
	tb_count(st, fit, t, len);
	return fit || t->monitor ? TB_PASS : TB_DROP;
}

/* Charge one IP packet of len bytes to the bucket of address key. Failing
 * open (pass) on the impossible lookups keeps a broken map from
 * blackholing a link. */
static __always_inline int tb_police_addr(struct tb_stats *st, const struct tb_config *cfg,
					  const struct tb_addr *key, int cls, __u64 len, __u64 now)
{
	struct tb_terms t;
	struct tb_bucket *b;
	struct tb_rule *rule = 0;
	struct tb_lock *lk;
	__u32 id, gen = cfg->gen, stripe;
	int fit;

	b = bpf_map_lookup_elem(&buckets, key);
	if (b && b->gen == gen) {
		id = b->rule;
		rule = bpf_map_lookup_elem(&rules, &id);
		if (rule && !rule->in_use)
			rule = 0;
	}
	if (!rule) {
		rule = tb_resolve(cfg, key, cls, &id);
		if (!rule) {
			st->unmatched_packets++;
			st->unmatched_bytes += len;
			return TB_PASS;
		}
		tb_terms_of(rule, len, &t);
		if (rule->scope == TB_SCOPE_SHARED)
			return tb_shared_charge(st, rule->shared, &t, now, len);
		if (!b) {
			struct tb_bucket nb = { .gen = gen, .rule = id, .cost = t.unit };

			tb_fill(&nb.lvl, now, &t.r);
			if (!bpf_map_update_elem(&buckets, key, &nb, BPF_NOEXIST))
				st->buckets_created++;
			b = bpf_map_lookup_elem(&buckets, key);
			if (!b)
				return TB_PASS;
		}
	} else {
		tb_terms_of(rule, len, &t);
	}

	stripe = tb_lock_index(key);
	lk = bpf_map_lookup_elem(&locks, &stripe);
	if (!lk)
		return TB_PASS;
	bpf_spin_lock(&lk->lock);
	b->gen = gen;
	b->rule = id;
	fit = tb_account(b, &t, now, len);
	bpf_spin_unlock(&lk->lock);
	tb_count(st, fit, &t, len);
	return fit || t.monitor ? TB_PASS : TB_DROP;
}

/* The whole policy for one frame of len bytes. */
static __always_inline int tb_police(const void *data, const void *data_end, __u64 len)
{
	struct tb_addr key = {};
	struct tb_stats *st;
	struct tb_config *cfg;
	__u32 zero = 0;
	int cls;

	st = bpf_map_lookup_elem(&stats, &zero);
	cfg = bpf_map_lookup_elem(&config, &zero);
	if (!st || !cfg)
		return TB_PASS;

	cls = tb_parse(data, data_end, tb_key_dst, &key);
	if (cls == TB_CLASS_NONIP) {
		st->nonip_packets++;
		return TB_PASS;
	}
	if (cls == TB_CLASS_ND) {
		st->nd_packets++;
		return TB_PASS;
	}
	if (cls == TB_CLASS_MALFORMED) {
		st->malformed_packets++;
		return TB_PASS;
	}
	return tb_police_addr(st, cfg, &key, cls, len, bpf_ktime_get_ns());
}

#endif
