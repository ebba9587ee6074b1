/* SPDX-License-Identifier: GPL-2.0 */
/* The charge of one bucket under its lock: credit taken back, the level
 * charged, the outcome counted in the bucket. */
#ifndef TB_ACCOUNT_H
#define TB_ACCOUNT_H

#include "logic/credit.h"
#include "logic/counters.h"

enum tb_verdict {
	TB_PASS,
	TB_DROP,
	TB_MARK,        /* pass with ECN CE set */
	TB_REMARK,      /* pass with the DSCP of the terms' rule set (action remark) */
};

/* tb_count's answer is the verdict, and for one that is not a plain pass
 * why and the rule's slot + 1 above it, for its event (event.h). */
#define TB_VERDICT_MASK 0xff
#define TB_WHY_SHIFT 8
#define TB_RULE_SHIFT 16

/* What tb_count is told of a decision: why it was not a pass where the
 * outcome does not say (enum tb_event_why), and the rule's slot id (-1:
 * not known). */
#define TB_CTX(why, id) ((__u32)(why) | ((__u32)(id) + 1) << TB_WHY_SHIFT)

/* The early signal's draw, for a packet about to take the lock: no
 * helper may run under it, and a packet dropped without it needs none. */
static __always_inline void tb_draw(struct tb_terms *t)
{
	if (t->r.early)
		t->rnd = bpf_get_prandom_u32();
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
	tb_counters_count(&b->c, out <= TB_DELAYED, out == TB_OVER && tb_passes_over(t->action), len, pkts);
	return out;
}

/* Count the outcome globally and turn it into the hook's verdict, with
 * ctx (TB_CTX) above it where it is not a plain pass. */
static __always_inline int tb_count(struct tb_stats *st, int out, int action, __u64 len,
				    __u32 pkts, __u32 ctx)
{
	int v, why;

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
	tb_counters_count(&st->c, out <= TB_DELAYED, out == TB_OVER && tb_passes_over(action), len, pkts);
	if (out <= TB_DELAYED)
		v = out == TB_MARKED ? TB_MARK : TB_PASS;
	else if (out == TB_OVER && action == TB_ACTION_REMARK)
		v = TB_REMARK;
	else
		v = out == TB_OVER && action == TB_ACTION_MONITOR ? TB_PASS : TB_DROP;
	if (v == TB_PASS)
		return v;
	why = out == TB_EARLY || out == TB_MARKED ? TB_WHY_EARLY : out == TB_OVER_PEAK ? TB_WHY_PEAK : ctx & 0xff;
	return v | why << TB_WHY_SHIFT | (ctx >> TB_WHY_SHIFT) << TB_RULE_SHIFT;
}

#endif
