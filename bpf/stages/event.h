/* SPDX-License-Identifier: GPL-2.0 */
/* tbctl events: a record of a decision that was not a plain pass, in the
 * events ring buffer, as the sampling (logic/event_gate.h) allows. */
#ifndef TB_EVENT_H
#define TB_EVENT_H

#include "stages/account.h"
#include "stages/maps.h"
#include "logic/event_gate.h"
#include "logic/hash.h"

/* Claim word *p from w to next; the compare-and-swap is a fetching
 * atomic, fully ordered on every JIT, and it alone decides: no other load
 * or store is ordered by it. */
static __always_inline int tb_claim(__u64 *p, __u64 w, __u64 next)
{
	return next && __sync_val_compare_and_swap(p, w, next) == w;
}

/* Whether this second's gate lets one more record through; a lost race
 * reads the word again, a few times at most. */
static __always_inline int tb_event_gated(__u64 *gate, __u64 now, __u32 rate)
{
	for (int i = 0; i < 3; i++) {
		__u64 w = READ_ONCE(*gate), next = tb_event_gate_next(w, now / TB_NANO, rate);

		if (!next)
			return 0;
		if (tb_claim(gate, w, next))
			return 1;
	}
	return 0;
}

/* Whether key's sampling slot lets a record through at now, claimed
 * for it if so: inline, so that a decision sampled out, the flood's
 * usual one, costs a hash, a load and a compare, and no call. */
static __always_inline int tb_event_due(const struct tb_config *cfg, const struct tb_addr *key, __u64 now)
{
	__u64 h = tb_addr_mix(key, cfg->slot_seed), *sw, w;
	__u32 slot = h >> (64 - TB_EVENT_SLOTS_SHIFT);

	sw = bpf_map_lookup_elem(&eventslots, &slot);
	if (!sw)
		return 0;
	w = READ_ONCE(*sw);
	return tb_claim(sw, w, tb_event_slot_next(w, h >> 32, now, cfg->event_interval_ms));
}

/* Write the record of verdict v (tb_count's: the verdict, why and rule)
 * about key k0:k1, a packet of len_pkts (bytes, and segments << 32), at
 * now, which its slot let through (tb_event_due), if this second's cap
 * lets it. Global, so the verifier checks it once, with scalars only
 * (total.h says why). */
__attribute__((noinline)) int tb_event(__u64 k0, __u64 k1, __u64 v, __u64 len_pkts, __u64 now)
{
	__u32 zero = 0;
	struct tb_config *cfg = bpf_map_lookup_elem(&config, &zero);
	struct tb_stats *st = bpf_map_lookup_elem(&stats, &zero);
	__u64 *gate = bpf_map_lookup_elem(&eventgate, &zero);
	struct tb_event *e;

	if (!cfg || !st || !gate)
		return 0;
	if (!tb_event_gated(gate, now, cfg->event_rate)) {
		st->events_capped++;
		return 0;
	}
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		st->events_lost++;
		return 0;
	}
	e->ns = now;
	((__u64 *)&e->key)[0] = k0;
	((__u64 *)&e->key)[1] = k1;
	e->bytes = len_pkts;
	e->packets = len_pkts >> 32;
	e->rule = v >> TB_RULE_SHIFT;
	e->verdict = (v & TB_VERDICT_MASK) == TB_DROP ? TB_EVENT_DROP :
		     (v & TB_VERDICT_MASK) == TB_MARK ? TB_EVENT_MARK : TB_EVENT_REMARK;
	e->why = v >> TB_WHY_SHIFT;
	__builtin_memset(e->pad, 0, sizeof(e->pad));
	bpf_ringbuf_submit(e, 0);
	return 1;
}

#endif
