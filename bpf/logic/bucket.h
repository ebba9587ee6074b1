/* SPDX-License-Identifier: GPL-2.0 */
/* Token-bucket arithmetic: pure integer functions of a level, a rate and
 * the time, shared by the datapath and the host unit tests (which drive it
 * with a virtual clock).
 *
 * Exactness: levels are nano-units and rate R units/s adds exactly R
 * nano-units per ns, so a refill is elapsed * R with no rounding; over any
 * window of length T at most cap + R*T nano-units are ever handed out, at
 * every rate, for any uptime. */
#ifndef TB_BUCKET_H
#define TB_BUCKET_H

#include "logic/hold.h"
#include "logic/tuning.h"
#include "logic/counters.h"

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/* Level after refilling from l->last_ns to now, capped at r->cap. A clock
 * that went backwards refills nothing; a level above a lowered cap is cut
 * to it. No overflow: elapsed < fill_ns implies elapsed * rate < cap + rate. */
static __always_inline __u64 tb_refill(const struct tb_level *l, __u64 now,
				       const struct tb_rate *r)
{
	__u64 elapsed, deficit, add;

	if (l->tokens >= r->cap)
		return r->cap;
	elapsed = now > l->last_ns ? now - l->last_ns : 0;
	if (elapsed >= r->fill_ns)
		return r->cap;
	deficit = r->cap - l->tokens;
	add = elapsed * r->rate;
	return add >= deficit ? r->cap : l->tokens + add;
}

/* Take cost nano-units that are not all there yet: the bucket goes into
 * debt by moving its refill clock ahead, to the instant the missing tokens
 * will have arrived, and returns that instant. Until then refills credit
 * nothing (elapsed is clamped at zero), so over any window the bucket
 * still hands out no more than its rate beyond what it held. The division
 * is on the delay path only (action shape, oversized aggregates). */
static __always_inline __u64 tb_defer(struct tb_level *l, __u64 now, __u64 cost,
				      const struct tb_rate *r)
{
	__u64 base = now > l->last_ns ? now : l->last_ns;
	__u64 tokens = tb_refill(l, base, r), wait;

	if (tokens >= cost) {
		l->tokens = tokens - cost;
		l->last_ns = base;
		return base;
	}
	wait = (cost - tokens + r->rate - 1) / r->rate;
	/* tokens + wait * rate - cost < rate: what the rounding up left over. */
	l->tokens = tokens + wait * r->rate - cost;
	l->last_ns = base + wait;
	return l->last_ns;
}

/* Give back cost nano-units taken at or before now by a charge that is
 * undone (a rule's total refused the packet, total.h). A level in debt
 * (refill clock ahead of now, tb_defer) moves its clock back by what
 * cost pays for; otherwise the tokens return, up to the cap. From then
 * on the level is at most what it would be had the charge never been
 * made, so the bound b + r*T holds as if it never was. The division is
 * on the refund path only. */
static __always_inline void tb_refund(struct tb_level *l, __u64 now, __u64 cost,
				      const struct tb_rate *r)
{
	__u64 tokens, back;

	if (l->last_ns > now) {
		tokens = l->tokens + cost;
		back = tokens / r->rate;
		if (back > l->last_ns - now)
			back = l->last_ns - now;
		l->last_ns -= back;
		tokens -= back * r->rate;
	} else {
		tokens = tb_refill(l, now, r) + cost;
		l->last_ns = now;
	}
	l->tokens = tokens < r->cap ? tokens : r->cap;
}

/* At most the instant l was last empty: l->last_ns less the time the
 * rate takes to earn l->tokens, rounded up, so that from then on the
 * level is never above (now - empty) * rate. 0 when it would precede the
 * clock's origin. Division: only on a tail drop under the lock. */
static __always_inline __u64 tb_empty_since(const struct tb_level *l, const struct tb_rate *r)
{
	__u64 back = l->tokens / r->rate + 1;

	return l->last_ns > back ? l->last_ns - back : 0;
}

/* A packet of cost certainly cannot be paid at now by a bucket last empty
 * no later than empty_ns: (now - empty_ns) * rate bounds its level from
 * above. Decided from that one word, so it needs no lock. Any earlier
 * instant bounds the level too, so a bound that is stale (older), or a
 * copy kept since, only sends more packets to the locked path, and so
 * does a clock behind the bound. Denying changes nothing, as if the packet had
 * never come, so the bound b + r*T holds whatever this decides. */
static __always_inline int tb_short(__u64 empty_ns, __u64 now, __u64 cost, __u64 rate, __u64 fill_ns)
{
	__u64 elapsed;

	if (!empty_ns || now < empty_ns)
		return 0;
	elapsed = now - empty_ns;
	return elapsed < fill_ns && elapsed * rate < cost;
}

/* The early congestion signal for a packet that finds the bucket at level
 * tokens: 1 with probability pmax/2^32 * (early - tokens)/early below
 * r->early, given rnd uniform on 32 bits and pmax < 2^32. Signalling a few packets
 * while tokens remain lets TCP back off by fast retransmit, with tokens
 * left for the retransmission, instead of losing a whole train to an empty
 * bucket and waiting out a timeout. Both products stay below 2^64:
 * early >> early_shift < 2^32. */
static __always_inline int tb_early(__u64 tokens, const struct tb_rate *r, __u32 rnd, __u64 pmax)
{
	__u64 span, depth;

	if (tokens >= r->early)
		return 0;
	span = r->early >> r->early_shift;
	depth = (r->early - tokens) >> r->early_shift;
	return (__u64)rnd * span < depth * pmax;
}

/* Level l of a bucket that was granted credit (units; struct tb_bucket)
 * of which unspent is left, refilled to now as if none of the credit had
 * been spent, to the burst less what was granted, plus the credit
 * unspent: what the bucket holds once its credit returns to the level.
 * Spent credit frees room that refills only from now, whenever it was
 * spent, so level and credit together never exceed the burst nor grow
 * faster than the rate. */
static __always_inline __u64 tb_unspend(const struct tb_level *l, __u64 now,
					const struct tb_rate *r, __u64 granted, __u64 unspent)
{
	struct tb_rate under = *r;

	granted *= TB_NANO;
	under.cap = granted < r->cap ? r->cap - granted : 0;
	return tb_refill(l, now, &under) + unspent * TB_NANO;
}

/* Credit word w (struct tb_bucket) once it has admitted a packet of
 * units that counts other in the other measure (1 packet, or its bytes),
 * or 0 when it cannot pay for the packet or count it: the packet then
 * takes the lock. Never 0 otherwise: other is at least 1. The tag stays. */
static __always_inline __u64 tb_credit_spend(__u64 w, __u64 units, __u64 other)
{
	if (tb_credit_unspent(w) < units || (w >> 32 & TB_CREDIT_COUNT_MAX) + other > TB_CREDIT_COUNT_MAX)
		return 0;
	return w - units + (other << 32);
}

/* Whether a credit of units (1/2^TB_CREDIT_SHIFT of the burst: tbctl's
 * rule holds the burst in units, so no division) may be set aside from
 * level l after a charge: only if the level stays above the early range
 * after it, where every packet must meet the early signal under the lock.
 * Packets the credit admits skip the signal, so it is kept to that small
 * part of the burst. */
static __always_inline int tb_credit_fits(const struct tb_level *l, const struct tb_rate *r,
					  __u32 units)
{
	return units && l->tokens >= r->early + (__u64)units * TB_NANO;
}

/* A full bucket, as every new address starts unless it owes. Without
 * an early signal the hold word is a peak bucket's lack, or unused: 0,
 * full. */
static __always_inline void tb_fill(struct tb_level *l, __u64 now,
				    const struct tb_rate *r)
{
	l->tokens = r->cap;
	l->last_ns = now;
	l->hold = r->early ? tb_hold_at(0, r->cap, r) : 0;
}

/* What the peak bucket p of level l (its hold word) lacks of its cap
 * at now, refilled from l->last_ns at p's rate: the same arithmetic as
 * tb_refill, counted down. A word above the cap (left by another kind of
 * rule) counts as an empty bucket. */
static __always_inline __u64 tb_peak_lack(const struct tb_level *l, __u64 now, const struct tb_rate *p)
{
	__u64 lack = l->hold < p->cap ? l->hold : p->cap;
	__u64 elapsed = now > l->last_ns ? now - l->last_ns : 0, add;

	if (elapsed >= p->fill_ns)
		return 0;
	add = elapsed * p->rate;
	return add >= lack ? 0 : lack - add;
}

/* floor(2^k / d) for d > 0, or 2^32 when that is 2^32 or more: long
 * division, since 2^k may not fit 64 bits. Control plane only. */
static inline __u64 tb_pow2_div(unsigned int k, __u64 d)
{
	__u64 q = 0, rem = 0;

	for (int bit = k; bit >= 0; bit--) {
		rem = rem * 2 + (bit == (int)k);
		q *= 2;
		if (rem >= d) {
			rem -= d;
			q++;
		}
		if (q >= (1ULL << 32))
			return 1ULL << 32;
	}
	return q;
}

/* The precomputed form of "rate units/s, burst units". Control plane only:
 * the divisions here are what keep the packet path free of one. */
static inline struct tb_rate tb_rate_make(__u64 rate, __u64 burst)
{
	struct tb_rate r = {};
	unsigned int k;
	__u64 mul;

	r.rate = rate;
	r.cap = burst * TB_NANO;
	r.fill_ns = (r.cap + rate - 1) / rate;
	r.early = r.cap / TB_EARLY_DIV;
	while (r.early >> r.early_shift >= (1ULL << 32))
		r.early_shift++;
	/* tb_origin's reciprocal: the level cut to 32 bits times the 32-bit
	 * multiplier mul = floor(2^k / rate) in [2^31, 2^32), with
	 * k = pre + post - left. */
	while (r.cap >> r.owed_pre >= (1ULL << 32))
		r.owed_pre++;
	k = 95 - __builtin_clzll(rate);
	mul = tb_pow2_div(k, rate);
	if (mul >= (1ULL << 32))
		mul = tb_pow2_div(--k, rate);
	if (k >= r.owed_pre + 64u) {
		/* Fast rates with small bursts: quotients of a few ns at
		 * most, and shifts stay below 64. */
		mul >>= k - r.owed_pre - 63u;
		k = r.owed_pre + 63u;
	}
	r.owed_mul = mul;
	if (k >= r.owed_pre)
		r.owed_post = k - r.owed_pre;
	else
		r.owed_left = r.owed_pre - k;
	return r;
}

/* At most the ns the rate takes to earn tokens (floor(tokens / rate)),
 * without a division; a few ns per second of fill_ns short (tests/unit).
 * Levels above the cap count as the cap. */
static __always_inline __u64 tb_earn_ns(__u64 tokens, const struct tb_rate *r)
{
	__u64 t = tokens < r->cap ? tokens : r->cap;

	return ((t >> r->owed_pre) * r->owed_mul) >> r->owed_post << r->owed_left;
}

/* The origin of level l: the latest instant from which an empty bucket,
 * refilling at the rate, is never above l's level (for whole-ns times;
 * debt included, as until l->last_ns that level is l->tokens). 1 when it
 * would precede the clock's origin; never 0, which means "nothing owed". */
static __always_inline __u64 tb_origin(const struct tb_level *l, const struct tb_rate *r)
{
	__u64 back = tb_earn_ns(l->tokens, r);

	return l->last_ns > back ? l->last_ns - back : 1;
}

/* The latest instant by which l is full again: its origin plus the time
 * an empty bucket takes to fill. Kept per hash slot (owed[]) as the
 * largest of its addresses', it serves every address of the slot under
 * its own rule: a slot mate that took one packet is full again within
 * that packet's time, so it costs a re-created bucket next to nothing.
 * Saturates at ~0 (a burst of centuries). */
static __always_inline __u64 tb_full_at(const struct tb_level *l, const struct tb_rate *r)
{
	__u64 o = tb_origin(l, r);

	return o + r->fill_ns >= o ? o + r->fill_ns : ~0ULL;
}

/* The same for a level with a peak bucket (peak: rate 0 for none, its
 * other fields then unread): the later of the two. */
static __always_inline __u64 tb_full_at_both(const struct tb_level *l, const struct tb_rate *r,
					     const struct tb_rate *peak)
{
	__u64 f = tb_full_at(l, r), p;
	struct tb_level pl;

	if (!peak->rate || !l->hold)
		return f;
	pl.tokens = l->hold < peak->cap ? peak->cap - l->hold : 0;
	pl.last_ns = l->last_ns;
	p = tb_full_at(&pl, peak);
	return p > f ? p : f;
}

/* A bucket re-created after eviction, from full_at (the largest
 * tb_full_at of its slot; 0: none): empty at full_at less fill_ns, which
 * for the bucket's own record is its origin or later, or full once
 * full_at has passed. So it never holds more than the evicted one would
 * have by now, and eviction adds nothing to b + r*T. */
static __always_inline void tb_restore(struct tb_level *l, __u64 full_at, __u64 now,
				       const struct tb_rate *r, const struct tb_rate *peak)
{
	__u64 fill = r->fill_ns;

	if (full_at <= now) {
		tb_fill(l, now, r);
		return;
	}
	/* A peak bucket starts empty too, from the same clock: the later
	 * of the two instants at which each would be empty, so neither
	 * holds more than its evicted one would. */
	l->tokens = 0;
	l->hold = peak->rate ? peak->cap : 0;
	if (peak->rate && peak->fill_ns < fill)
		fill = peak->fill_ns;
	if (full_at == ~0ULL)
		l->last_ns = now;
	else
		l->last_ns = full_at > fill ? full_at - fill : 1;
}

#endif
