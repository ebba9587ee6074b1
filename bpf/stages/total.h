/* SPDX-License-Identifier: GPL-2.0 */
/* A rule's total: one more bucket, the rule's shared[] slot, that all of
 * its addresses (or groups) are charged as well. A program holds one spin
 * lock at a time, so the two charges are made one after the other: the
 * address's under its stripe's lock (policy.h), then the total's under
 * its own. A packet the total refuses is refunded to the address
 * (bucket.h, tb_refund), whose counters then count it as refused. In
 * between, the address's level is lower than it will be: another of its
 * packets may be refused that the refund would have let pass, never the
 * reverse, so neither b + r*T per address nor B + R*T for the rule is
 * exceeded. Credit, which admits without the lock, and so without the
 * total, is never granted under a total (rule.h, tb_terms_of). */
#ifndef TB_TOTAL_H
#define TB_TOTAL_H

#include "stages/account.h"
#include "stages/place.h"
#include "stages/rule.h"
#include "logic/counters.h"

/* Undo the charge of a packet to bucket b under rule; the caller holds
 * its lock. Its tokens return and its count moves from passed to
 * refused. The bound a tail drop may have left in the bucket meanwhile
 * was computed from the lower level, so it goes. */
static __always_inline void tb_refund_bucket(struct tb_bucket *b, const struct tb_rule *rule,
					     const struct tb_terms *t, __u64 now, __u64 len, __u32 pkts)
{
	if (b->cost == t->unit) {
		tb_refund(&b->lvl, now, t->cost, &rule->r);
		WRITE_ONCE(b->empty_ns, 0);
	}
	/* A reset since may have zeroed the count. */
	if (b->c.passed_packets >= pkts && b->c.passed_bytes >= len) {
		b->c.passed_packets -= pkts;
		b->c.passed_bytes -= len;
		tb_counters_count(&b->c, 0, tb_passes_over(t->action), len, pkts);
	}
}

/* The same for key's bucket, placed h. A bucket evicted since took the
 * charge along; the owed[] record it left is then later than need be,
 * never earlier. */
static __always_inline void tb_refund_address(const struct tb_config *cfg, const struct tb_addr *key, __u32 h,
					      const struct tb_rule *rule, const struct tb_terms *t,
					      __u64 now, __u64 len, __u32 pkts)
{
	struct tb_set *s = tb_set_at(cfg, h);
	__u32 stripe = tb_stripe(h);
	struct tb_lock *lk = bpf_map_lookup_elem(&locks, &stripe);
	int w;

	if (!s || !lk)
		return;
	bpf_spin_lock(&lk->lock);
	w = tb_way_find(s, key, cfg->ways);
	if (w >= 0)
		tb_refund_bucket(&s->b[w & (TB_WAYS - 1)], rule, t, now, len, pkts);
	bpf_spin_unlock(&lk->lock);
}

/* A packet's segments, what its hook offers, its address's outcome and
 * the placement hash of its bucket, in one argument: a global function
 * takes five. */
static __always_inline __u64 tb_total_packet(__u32 pkts, __u8 ect, __u8 can_delay, int out, __u32 h)
{
	return (pkts & 0xffff) | (__u64)ect << 16 | (__u64)can_delay << 17 | (__u64)(out & 0xff) << 24 |
	       (__u64)h << 32;
}

/* Charge a packet of len bytes (and what tb_total_packet packed) that
 * the bucket of address k0:k1 has just passed under rule slot id to the
 * rule's total; on a refusal, refund the address's bucket. Counts the
 * outcome and returns the hook's verdict; a later departure the total
 * sets is left in this CPU's totalscratch. Global, so the verifier checks
 * it once, and given scalars only: a pointer into the caller's stack
 * keeps what it points at live in every state before the call, which
 * then stay apart (tb_xdp passed the 1M-instruction limit). Its stack
 * and its callers' stay within 512 bytes: what it works on is in
 * totalscratch. Fails open on the impossible lookups, as the policy
 * does. */
__attribute__((noinline)) int tb_charge_total(__u64 k0, __u64 k1, __u32 id, __u64 len, __u64 packet)
{
	__u32 zero = 0, slot, pkts = packet & 0xffff;
	struct tb_total_scratch *x = bpf_map_lookup_elem(&totalscratch, &zero);
	struct tb_rule *rule = bpf_map_lookup_elem(&rules, &id);
	struct tb_config *cfg;
	struct tb_shared *sh;
	struct tb_stats *st;
	struct tb_terms *t;
	__u64 now;
	int out;

	if (!x || !rule || !pkts)
		return TB_PASS;
	((__u64 *)&x->key)[0] = k0;
	((__u64 *)&x->key)[1] = k1;
	x->depart = 0;
	slot = rule->shared;
	sh = bpf_map_lookup_elem(&shared, &slot);
	if (!sh)
		return TB_PASS;
	t = &x->t;
	tb_terms_of(rule, len, pkts, t);
	t->ect = packet >> 16 & 1;
	t->can_delay = packet >> 17 & 1;
	t->segs = pkts > 1 ? pkts : 0;
	t->r = rule->total;
	t->peak.rate = 0;
	t->credit = 0;
	/* The packet comes in five words, BPF's most for a call, with no
	 * room for its segment: a total learns no round trip (hold.h). */
	t->tcp = 0;
	tb_draw(t);
	now = bpf_ktime_get_ns();
	bpf_spin_lock(&sh->lock);
	out = tb_account(&sh->b, t, now, len, pkts, &x->depart);
	bpf_spin_unlock(&sh->lock);
	if (out > TB_DELAYED) {
		cfg = bpf_map_lookup_elem(&config, &zero);
		t->r = rule->r;
		if (cfg)
			tb_refund_address(cfg, &x->key, packet >> 32, rule, t, now, len, pkts);
	}
	st = bpf_map_lookup_elem(&stats, &zero);
	if (!st)
		return TB_PASS;
	/* Mark and delay are never both: the worse outcome is the packet's. */
	if (out < (int)(packet >> 24 & 0xff))
		out = packet >> 24 & 0xff;
	return tb_count(st, out, rule->action, len, pkts, TB_CTX(TB_WHY_TOTAL, id));
}

/* A later departure tb_charge_total set, where it is later than *depart. */
static __always_inline void tb_total_departure(__u64 *depart)
{
	__u32 zero = 0;
	struct tb_total_scratch *x = bpf_map_lookup_elem(&totalscratch, &zero);

	if (x && x->depart > *depart)
		*depart = x->depart;
}

#endif
