/* SPDX-License-Identifier: GPL-2.0 */
/* What the early signal remembers of a bucket, in one word of its level
 * (struct tb_level, hold): the hold's peak, and the round trip learnt from
 * the sender's answer to a signal.
 *
 * The round trip decides whether the early signal helps. Near zero a
 * window of two segments outruns any cap, and a signal while tokens remain
 * spares the sender a timeout. At 30 ms and more a sender that cuts its
 * window takes many round trips to grow it back, and the signal, coming
 * before the bucket is empty, costs more goodput than the tail drops it
 * spares (docs/tcp.md). The policer sees no ACKs, but it sees the answer:
 * the retransmission of a segment it dropped, or the CWR of the first
 * segment sent after a mark (RFC 3168, 6.1.2), one round trip and a
 * little later. An answer that comes in [TB_RTT_LONG_MIN_NS,
 * TB_RTT_LONG_MAX_NS) turns the signal off for TB_RTT_LONG_HOLD_NS; one
 * later than that is a retransmission timeout, not a round trip, and is
 * not awaited.
 *
 * The word, from bit 0:
 *   24 bits  the peak, >> (early_shift + TB_HOLD_PEAK_SHIFT), rounded up:
 *            at most 2^24 - 1, since cap < 2^(33 + early_shift) (bucket.h,
 *            tb_rate_make)
 *    8 bits  when the awaited signal was sent, in ticks of 2^22 ns
 *    8 bits  until when the round trip counts as long, in ticks of 2^27 ns
 *   21 bits  a hash of the signalled segment's sequence number
 *    1 bit   the awaited answer is a CWR (a mark), not a retransmission
 *    1 bit   a signal awaits its answer
 *    1 bit   the round trip is long
 * Both times wrap (at 1.07 s and 34 s); tb_hold_age forgets each well
 * before. It runs first in every charge under the lock, and forgets
 * outright after a gap between charges long enough for a time to wrap
 * unseen. Pure, for the host tests, and by arithmetic alone
 * (branchless.h): it runs under the lock for every kind of packet. */
#ifndef TB_HOLD_H
#define TB_HOLD_H

#include "abi/tb_abi.h"
#include "logic/branchless.h"
#include "logic/tuning.h"

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

#define TB_RTT_LONG_MIN_NS 30000000ULL
#define TB_RTT_LONG_MAX_NS 200000000ULL
#define TB_RTT_LONG_HOLD_NS 10000000000ULL

#define TB_HOLD_PEAK_SHIFT 9
#define TB_HOLD_PEAK_MAX 0xffffffULL
#define TB_HOLD_SENT_SHIFT 24
#define TB_HOLD_SENT_TICK 22
#define TB_HOLD_UNTIL_SHIFT 32
#define TB_HOLD_UNTIL_TICK 27
#define TB_HOLD_HASH_SHIFT 40
#define TB_HOLD_HASH_MASK 0x1fffffULL
#define TB_HOLD_CWR_BIT 61
#define TB_HOLD_AWAITS_BIT 62
#define TB_HOLD_LONG_BIT 63
#define TB_HOLD_CWR (1ULL << TB_HOLD_CWR_BIT)
#define TB_HOLD_AWAITS (1ULL << TB_HOLD_AWAITS_BIT)
#define TB_HOLD_LONG (1ULL << TB_HOLD_LONG_BIT)
#define TB_HOLD_RTT (~TB_HOLD_PEAK_MAX)

/* Gaps between charges, as powers of two ns (537 ms and 8.6 s), after
 * which tb_hold_age forgets outright: each below the time its field wraps
 * less the time it is kept. */
#define TB_HOLD_IDLE_SIGNAL_SHIFT 29
#define TB_HOLD_IDLE_LONG_SHIFT 33

/* What tb_police knows of a TCP segment (struct tb_terms, tcp). */
#define TB_TCP_SEGMENT 1        /* seq is the segment's sequence number */
#define TB_TCP_CWR 2            /* the segment has CWR set */

/* The peak held in word h, in nano-units. */
static __always_inline __u64 tb_hold_peak(__u64 h, const struct tb_rate *r)
{
	return (h & TB_HOLD_PEAK_MAX) << (r->early_shift + TB_HOLD_PEAK_SHIFT);
}

/* Word h with its peak set to level tokens, rounded up: the hold ends
 * no later than its step, and sooner by at most 2^(early_shift + 9)
 * nano-units, under a millionth of the early range for a burst of two
 * units or more. Rounding up reaches 2^24 at most, taken back to 2^24 - 1. */
static __always_inline __u64 tb_hold_at(__u64 h, __u64 tokens, const struct tb_rate *r)
{
	__u8 s = r->early_shift + TB_HOLD_PEAK_SHIFT;
	__u64 q = (tokens >> s) + tb_nonzero(tokens & ((1ULL << s) - 1));

	return (h & TB_HOLD_RTT) | ((q - (q >> 24)) & TB_HOLD_PEAK_MAX);
}

/* The hold after a signal: the next may come only once the level has
 * fallen a step below its highest point since, that is once the sender,
 * having had a round trip to react, still sends above the rate. Never
 * while the round trip is long: the peak then counts as 0. */
static __always_inline int tb_early_armed(__u64 tokens, __u64 h, const struct tb_rate *r)
{
	return tokens + (r->cap >> TB_EARLY_HOLD_SHIFT) <= (tb_hold_peak(h, r) & ((h >> TB_HOLD_LONG_BIT) - 1));
}

/* 21 bits of a sequence number, mixed (Fibonacci hashing), so that the
 * segments of one flow, a few hundred bytes apart, differ in them. */
static __always_inline __u64 tb_seq_hash(__u32 seq)
{
	return (__u64)(__u32)(seq * 0x9e3779b1u) >> (32 - 21);
}

/* How long before now word h's signal was sent, in ticks of
 * 2^TB_HOLD_SENT_TICK ns, modulo 256. */
static __always_inline __u64 tb_hold_age_ticks(__u64 h, __u64 now)
{
	return ((now >> TB_HOLD_SENT_TICK) - (h >> TB_HOLD_SENT_SHIFT)) & 0xff;
}

/* Forget what is too old to mean anything, or about to wrap: the awaited
 * signal once no answer within TB_RTT_LONG_MAX_NS could still come, and a
 * long round trip TB_RTT_LONG_HOLD_NS after it was learnt. last_ns: the
 * level's refill clock before this charge moves it; one ahead of now (a
 * debt) counts as a long gap. */
static __always_inline void tb_hold_age(__u64 *h, __u64 last_ns, __u64 now)
{
	__u64 w = *h, idle = now - last_ns;
	__u64 left = ((w >> TB_HOLD_UNTIL_SHIFT) - (now >> TB_HOLD_UNTIL_TICK)) & 0xff;
	__u64 quiet = tb_nonzero(idle >> TB_HOLD_IDLE_SIGNAL_SHIFT) |
		      (1 - tb_below(tb_hold_age_ticks(w, now), TB_RTT_LONG_MAX_NS >> TB_HOLD_SENT_TICK));
	__u64 over = tb_nonzero(idle >> TB_HOLD_IDLE_LONG_SHIFT) | tb_below(left, 1) |
		     tb_below((TB_RTT_LONG_HOLD_NS >> TB_HOLD_UNTIL_TICK) + 1, left);

	*h = w & ~(-quiet & TB_HOLD_AWAITS) & ~(-over & TB_HOLD_LONG);
}

/* A segment that answers the awaited signal (tcp, seq: struct tb_terms)
 * tells the round trip: long or not from now until the next answer, or
 * TB_RTT_LONG_HOLD_NS. Matched before the bucket decides, so that an
 * answer the bucket cannot pay still counts. */
static __always_inline void tb_hold_answer(__u64 *h, __u8 tcp, __u32 seq, __u64 now)
{
	__u64 w = *h, age = tb_hold_age_ticks(w, now);
	__u64 cwr = w >> TB_HOLD_CWR_BIT & 1;
	__u64 same = 1 - tb_nonzero((w >> TB_HOLD_HASH_SHIFT & TB_HOLD_HASH_MASK) ^ tb_seq_hash(seq));
	__u64 answers = (w >> TB_HOLD_AWAITS_BIT & 1) & (tcp & TB_TCP_SEGMENT) &
			((cwr & tcp >> 1) | ((cwr ^ 1) & same));
	__u64 is_long = (1 - tb_below(age, TB_RTT_LONG_MIN_NS >> TB_HOLD_SENT_TICK)) &
			tb_below(age, TB_RTT_LONG_MAX_NS >> TB_HOLD_SENT_TICK);
	__u64 until = ((now + TB_RTT_LONG_HOLD_NS) >> TB_HOLD_UNTIL_TICK) & 0xff;
	__u64 next = (w & ~(TB_HOLD_AWAITS | TB_HOLD_LONG | 0xffULL << TB_HOLD_UNTIL_SHIFT)) |
		     (-is_long & (TB_HOLD_LONG | until << TB_HOLD_UNTIL_SHIFT));

	*h = w ^ ((w ^ next) & -answers);
}

/* A signal sent to TCP segment seq (dropped, or marked when cwr) at now
 * is awaited, unless one already is. */
static __always_inline void tb_hold_ask(__u64 *h, __u8 tcp, __u32 seq, __u64 cwr, __u64 now)
{
	__u64 w = *h;
	__u64 asks = (tcp & TB_TCP_SEGMENT) & ((w >> TB_HOLD_AWAITS_BIT & 1) ^ 1);
	__u64 next = (w & ~(TB_HOLD_CWR | TB_HOLD_HASH_MASK << TB_HOLD_HASH_SHIFT | 0xffULL << TB_HOLD_SENT_SHIFT)) |
		     TB_HOLD_AWAITS | (cwr ? TB_HOLD_CWR : tb_seq_hash(seq) << TB_HOLD_HASH_SHIFT) |
		     ((now >> TB_HOLD_SENT_TICK) & 0xff) << TB_HOLD_SENT_SHIFT;

	*h = w ^ ((w ^ next) & -asks);
}

#endif
