/* SPDX-License-Identifier: GPL-2.0 */
/* The events' sampling, pure (host tests drive it with a virtual clock):
 * at most one record a key every interval, and at most rate records a
 * second over all keys. A slot word, shared by the keys that hash to it,
 * holds a tag of the key that had the latest record and its time; a gate
 * word the second and the records it has had. Each is claimed by
 * compare-and-swap on the word read (stages/event.h), so of two CPUs
 * that read one word only one writes what it allows. */
#ifndef TB_EVENT_GATE_H
#define TB_EVENT_GATE_H

#include "abi/tb_abi.h"

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

#define TB_EVENT_TAG_SHIFT 48
#define TB_EVENT_TIME_MASK ((1ULL << TB_EVENT_TAG_SHIFT) - 1)
/* Slot times are in ticks of 2^20 ns (about 1.05 ms), so that a drop
 * that is sampled out costs a shift, not a division. */
#define TB_EVENT_TICK_SHIFT 20

/* An interval of ms milliseconds in ticks, rounded up, and one more:
 * a record's time is its tick's start, so no two records of a key are
 * ever closer than the interval. */
static __always_inline __u64 tb_event_ticks(__u32 ms)
{
	return (((__u64)ms * 1000000 + (1ULL << TB_EVENT_TICK_SHIFT) - 1) >> TB_EVENT_TICK_SHIFT) + !!ms;
}
#define TB_EVENT_COUNT_BITS 24
#define TB_EVENT_RATE_MAX ((1U << TB_EVENT_COUNT_BITS) - 1)

/* The slot word after a record about the key of tag at now (ns), or 0
 * when the slot's word w says that key had one within interval_ms.
 * Another key's record in the slot lets this one's through: keys that
 * share a slot are sampled no more finely than each on its own. A CPU
 * whose clock reads a little behind the word's is within the interval. */
static __always_inline __u64 tb_event_slot_next(__u64 w, __u16 tag, __u64 now, __u32 interval_ms)
{
	__u64 tick = now >> TB_EVENT_TICK_SHIFT;

	if (w && w >> TB_EVENT_TAG_SHIFT == tag && tick < (w & TB_EVENT_TIME_MASK) + tb_event_ticks(interval_ms))
		return 0;
	return (__u64)tag << TB_EVENT_TAG_SHIFT | (tick & TB_EVENT_TIME_MASK);
}

/* The gate word after one more record at now_s, or 0 when that second
 * has had rate records. A clock behind the word's second counts in it. */
static __always_inline __u64 tb_event_gate_next(__u64 w, __u64 now_s, __u32 rate)
{
	if (now_s > w >> TB_EVENT_COUNT_BITS)
		w = now_s << TB_EVENT_COUNT_BITS;
	if ((w & TB_EVENT_RATE_MAX) >= rate)
		return 0;
	return w + 1;
}

#endif
