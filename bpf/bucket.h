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

#include "tb_abi.h"

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
 * above. Decided from that one word, so it needs no lock; a bound that is
 * stale (older) only sends the packet to the locked path, and so does a
 * clock behind the bound. Denying changes nothing, as if the packet had
 * never come, so the bound b + r*T holds whatever this decides. */
static __always_inline int tb_short(__u64 empty_ns, __u64 now, __u64 cost, const struct tb_rate *r)
{
	__u64 elapsed;

	if (!empty_ns || now < empty_ns)
		return 0;
	elapsed = now - empty_ns;
	return elapsed < r->fill_ns && elapsed * r->rate < cost;
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

/* The hold after a signal: the next may come only once the level has
 * fallen a step below its highest point since, that is once the sender,
 * having had a round trip to react, still sends above the rate. */
static __always_inline int tb_early_armed(__u64 tokens, __u64 peak, const struct tb_rate *r)
{
	return tokens + (r->cap >> TB_EARLY_HOLD_SHIFT) <= peak;
}

/* The precomputed form of "rate units/s, burst units". Control plane only:
 * the division here is what keeps the packet path free of one. */
static inline struct tb_rate tb_rate_make(__u64 rate, __u64 burst)
{
	struct tb_rate r = {};

	r.rate = rate;
	r.cap = burst * TB_NANO;
	r.fill_ns = (r.cap + rate - 1) / rate;
	r.early = r.cap / TB_EARLY_DIV;
	while (r.early >> r.early_shift >= (1ULL << 32))
		r.early_shift++;
	return r;
}

/* A full bucket, as every new address starts. */
static __always_inline void tb_fill(struct tb_level *l, __u64 now,
				    const struct tb_rate *r)
{
	l->tokens = r->cap;
	l->last_ns = now;
	l->peak = r->cap;
}

#endif
