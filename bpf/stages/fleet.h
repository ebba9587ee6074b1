/* SPDX-License-Identifier: GPL-2.0 */
/* A fleet rule's second charge: after a packet's own bucket (or its shared
 * bucket) has passed it, its fleet key (struct tb_fleet_key) must pay as
 * well, from this host's static share of the key or from the credit the
 * store granted (fleet_credit.h). A packet neither pays is refused and
 * refunded to its bucket, as a total's refusal is (total.h). The store is
 * never waited on: the agent (tbctl fleet run) tops credit up ahead of
 * need. Credit, which admits without the lock and so without this
 * charge, is never granted under a fleet rule (rule.h, tb_terms_of). */
#ifndef TB_FLEET_H
#define TB_FLEET_H

#include "logic/fleet_credit.h"
#include "stages/total.h"

/* Undo the charge of a packet to shared bucket slot (tb_refund_bucket). */
static __always_inline void tb_refund_shared(__u32 slot, const struct tb_rule *rule, const struct tb_terms *t,
					     __u64 now, __u64 len, __u32 pkts)
{
	struct tb_shared *sh = bpf_map_lookup_elem(&shared, &slot);

	if (!sh)
		return;
	bpf_spin_lock(&sh->lock);
	tb_refund_bucket(&sh->b, rule, t, now, len, pkts);
	bpf_spin_unlock(&sh->lock);
}

/* Pay units (cost nano-units) of fleet key entry e at now: the share
 * first, so that a key within it never costs a store call, then the
 * credit while its lease holds. */
static __always_inline int tb_fleet_pays(struct tb_fleet_entry *e, const struct tb_rule *rule, int share_on,
					 __u64 units, __u64 cost, __u64 now)
{
	int paid = 0;

	if (share_on && rule->share.rate) {
		bpf_spin_lock(&e->lock);
		paid = tb_share_pay(&e->share, now, cost, &rule->share);
		bpf_spin_unlock(&e->lock);
		if (paid) {
			__sync_fetch_and_add(&e->share_spent, units);
			return 1;
		}
	}
	if (now < READ_ONCE(e->expires_ns) && tb_credit_pay(&e->credit, units)) {
		__sync_fetch_and_add(&e->spent, units);
		return 1;
	}
	__sync_fetch_and_add(&e->refused, units);
	return 0;
}

/* Charge a packet of len bytes that the bucket of key k0:k1 (zero for a
 * shared bucket) has just passed under rule slot id to the rule's fleet
 * key; packet as tb_total_packet packs it. Counts the outcome and returns
 * the hook's verdict. Global, given scalars only, and working in
 * fleetscratch, for the reasons tb_charge_total gives. Fails open on the
 * impossible lookups; a key fleet[] has no room for is refused. */
__attribute__((noinline)) int tb_charge_fleet(__u64 k0, __u64 k1, __u32 id, __u64 len, __u64 packet)
{
	__u32 zero = 0, pkts = packet & 0xffff;
	struct tb_fleet_scratch *x = bpf_map_lookup_elem(&fleetscratch, &zero);
	struct tb_rule *rule = bpf_map_lookup_elem(&rules, &id);
	struct tb_fleet_state *fs = bpf_map_lookup_elem(&fleetstate, &zero);
	struct tb_fleet_entry *e, *fresh;
	struct tb_config *cfg;
	struct tb_stats *st;
	int out = packet >> 24 & 0xff, paid = 0;
	__u64 now, units;

	st = bpf_map_lookup_elem(&stats, &zero);
	if (!x || !rule || !st || !pkts)
		return TB_PASS;
	((__u64 *)&x->k.key)[0] = k0;
	((__u64 *)&x->k.key)[1] = k1;
	x->k.rule = rule->shared;
	x->k.pad = 0;
	units = tb_units_of(rule, len, pkts);
	now = bpf_ktime_get_ns();
	e = bpf_map_lookup_elem(&fleet, &x->k);
	if (!e) {
		fresh = (struct tb_fleet_entry *)x->e;
		__builtin_memset(fresh, 0, sizeof(*fresh));
		tb_share_start(&fresh->share, now, &rule->share);
		bpf_map_update_elem(&fleet, &x->k, fresh, BPF_NOEXIST);
		e = bpf_map_lookup_elem(&fleet, &x->k);
		if (!e)
			st->fleet_full_packets += pkts;
	}
	if (e) {
		WRITE_ONCE(e->last_ns, now);
		paid = tb_fleet_pays(e, rule, !fs || !fs->share_off, units, units * TB_NANO, now);
	}
	if (!paid) {
		st->fleet_refused_packets += pkts;
		tb_terms_of(rule, len, pkts, &x->t);
		if (rule->scope == TB_SCOPE_SHARED) {
			tb_refund_shared(rule->shared, rule, &x->t, now, len, pkts);
		} else {
			cfg = bpf_map_lookup_elem(&config, &zero);
			x->key = x->k.key;
			if (cfg)
				tb_refund_address(cfg, &x->key, packet >> 32, rule, &x->t, now, len, pkts);
		}
		out = TB_OVER;
	}
	return tb_count(st, out, rule->action, len, pkts, TB_CTX(TB_WHY_FLEET, id));
}

#endif
