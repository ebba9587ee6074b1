/* SPDX-License-Identifier: GPL-2.0 */
/* What charging one packet decides, for every action: pass, mark, delay,
 * early drop or tail drop. Pure, so the host tests drive it with a virtual
 * clock and chosen random draws; the datapath calls it under the bucket's
 * lock. */
#ifndef TB_CHARGE_H
#define TB_CHARGE_H

#include "logic/bucket.h"
#include "logic/tuning.h"

enum tb_outcome {
	TB_FIT,         /* passed; tokens taken */
	TB_MARKED,      /* passed with CE set by the early signal; tokens taken */
	TB_DELAYED,     /* passed with a later departure (action shape); tokens taken */
	TB_EARLY,       /* dropped by the early signal; no tokens taken */
	TB_OVER,        /* dropped: the bucket cannot pay, or not within the horizon;
			 * passed under monitor, remarked under remark */
	TB_OVER_PEAK,   /* over a remark rule's peak rate: dropped; no tokens taken */
};

/* What the charge needs of a rule and a packet, worked out before the
 * lock is taken so the locked section is arithmetic only. */
struct tb_terms {
	struct tb_rate r;
	__u64 cost;             /* nano-units this packet takes */
	__u64 horizon_ns;       /* action shape: the longest delay */
	__u32 rnd;              /* uniform draw for the early signal */
	__u8 unit;              /* enum tb_cost */
	__u8 action;            /* enum tb_action */
	__u8 ect;               /* the packet is ECN-capable */
	__u8 can_delay;         /* the hook honours a departure time (tc egress) */
	__u32 credit;           /* units a charge that passes sets aside (bucket.h) */
	__u32 segs;             /* a GSO/GRO aggregate's segments; 0 for a plain packet */
	__u32 seq;              /* with tcp: the segment's sequence number, as sent */
	__u8 tcp;               /* TB_TCP_* (hold.h); 0: not a TCP segment */
	__u8 dscp;              /* action remark: the DSCP a packet over the limit gets */
	struct tb_rate peak;    /* action remark: its peak rate; rate 0: none (the rest then unset) */
};

/* Shape: the departure the bucket can pay for, if it is within the
 * horizon. A packet beyond it is dropped and changes the level only as a
 * denial does (refilled to now, timestamp never backwards). */
static __always_inline int tb_schedule(struct tb_level *l, const struct tb_terms *t, __u64 now,
				       __u64 *depart)
{
	struct tb_level next = *l;
	__u64 d = tb_defer(&next, now, t->cost, &t->r);

	if (d - now > t->horizon_ns) {
		l->tokens = tb_refill(l, now, &t->r);
		if (now > l->last_ns)
			l->last_ns = now;
		return TB_OVER;
	}
	*l = next;
	if (d == now)
		return TB_FIT;
	*depart = d;
	return TB_DELAYED;
}

/* Whether marking has failed to slow the sender: the level is in the
 * lower part of the early range, below 1/2^TB_MARK_DROP_SHIFT of its top.
 * There action mark drops ECN-capable packets too, as RFC 3168 (section 7)
 * and PIE (RFC 8033, 5.1) do under persistent overload: at a round trip
 * near zero a window of two segments still outruns any cap, and marks
 * alone left the bucket to empty into tail-drop trains (docs/tcp.md). */
static __always_inline int tb_mark_spent(__u64 tokens, const struct tb_rate *r)
{
	return tokens < r->early >> TB_MARK_DROP_SHIFT;
}

/* Drop's early signal for a packet of t->segs segments: the chance that
 * it meets the signal is about segs times a segment's, up to 1, as if the
 * segments drew one by one. Drawing once, a TSO train that tc sees as one
 * packet met the signal so late that the bucket drained into tail drops
 * (docs/tcp.md). */
static __always_inline __u32 tb_drop_draw(const struct tb_terms *t)
{
	return t->segs > 1 ? t->rnd / t->segs : t->rnd;
}

/* RFC 2698's two-rate three-colour marker, colour-blind: l is the
 * committed bucket (the rule's rate and burst) and its hold word the
 * peak one's lack (bucket.h, tb_peak_lack), both refilled from l's
 * clock. Red, over the peak: TB_OVER_PEAK, nothing taken. Yellow, within
 * the peak but over the committed rate: TB_OVER, taken from the peak
 * only. Green: TB_FIT, taken from both. So what passes keeps the peak's
 * bound, and what passes unmarked the committed one's. An aggregate is
 * charged whole: the peak burst must hold the largest (tbctl's default
 * does). */
static __always_inline int tb_decide_two_rate(struct tb_level *l, const struct tb_terms *t, __u64 now)
{
	__u64 tokens = tb_refill(l, now, &t->r);
	__u64 lack = tb_peak_lack(l, now, &t->peak);

	l->tokens = tokens;
	l->hold = lack;
	if (now > l->last_ns)
		l->last_ns = now;
	if (t->peak.cap - lack < t->cost)
		return TB_OVER_PEAK;
	l->hold = lack + t->cost;
	if (tokens < t->cost)
		return TB_OVER;
	l->tokens = tokens - t->cost;
	return TB_FIT;
}

/* Charge one packet to level l at time now. On TB_DELAYED (action shape)
 * *depart is set to the earliest time the packet may leave. */
static __always_inline int tb_decide(struct tb_level *l, const struct tb_terms *t, __u64 now,
				     __u64 *depart)
{
	__u64 tokens;

	if (t->action == TB_ACTION_SHAPE && t->can_delay)
		return tb_schedule(l, t, now, depart);
	if (t->peak.rate)
		return tb_decide_two_rate(l, t, now);
	/* The level refilled to now, timestamp written whatever follows. */
	tb_hold_age(&l->hold, l->last_ns, now);
	tokens = tb_refill(l, now, &t->r);
	l->tokens = tokens;
	if (now > l->last_ns)
		l->last_ns = now;
	if (tokens > tb_hold_peak(l->hold, &t->r))
		l->hold = tb_hold_at(l->hold, tokens, &t->r);
	tb_hold_answer(&l->hold, t->tcp, t->seq, now);
	if (tokens < t->cost) {
		/* An aggregate larger than the whole burst could never fit:
		 * it passes from a full bucket, which then owes the rest. */
		if (t->segs > 1 && tokens >= t->r.cap) {
			tb_defer(l, now, t->cost, &t->r);
			return TB_FIT;
		}
		l->hold = tb_hold_at(l->hold, tokens, &t->r);
		return TB_OVER;
	}
	if (tb_early_armed(tokens, l->hold, &t->r) &&
	    (t->action == TB_ACTION_MARK ? tb_early(tokens, &t->r, t->rnd, TB_EARLY_PMAX_MARK) :
					   tb_early(tokens, &t->r, tb_drop_draw(t), TB_EARLY_PMAX_DROP))) {
		l->hold = tb_hold_at(l->hold, tokens, &t->r);
		if (t->action != TB_ACTION_MARK || !t->ect || tb_mark_spent(tokens, &t->r)) {
			tb_hold_ask(&l->hold, t->tcp, t->seq, 0, now);
			return TB_EARLY;
		}
		tb_hold_ask(&l->hold, t->tcp, t->seq, 1, now);
		l->tokens = tokens - t->cost;
		return TB_MARKED;
	}
	l->tokens = tokens - t->cost;
	return TB_FIT;
}

/* The empty bound (bucket.h, tb_empty_since) a charge with outcome out
 * leaves in its bucket, given the bound it had: a tail drop sets it, an
 * early drop keeps it, a charge that takes tokens clears it. A denial
 * without the lock must leave the bucket as a denial under it would,
 * and a tail drop also sets the hold's peak to the level: the same as
 * leaving the peak alone while it is no higher than the level, which
 * holds after a tail or an early drop until tokens are next taken. What
 * the denied packet would have answered (hold.h) goes unseen: it only
 * leaves the round trip as it was. */
static __always_inline __u64 tb_bound_after(int out, const struct tb_level *l,
					    const struct tb_rate *r, __u64 bound)
{
	if (out == TB_OVER)
		return tb_empty_since(l, r);
	return out == TB_EARLY ? bound : 0;
}

#endif
