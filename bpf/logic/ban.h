/* SPDX-License-Identifier: GPL-2.0 */
/* Bans, pure (host tests drive them with a virtual clock): when a ban
 * holds, how a rule's refusals of a key make one, and where a key's
 * automatic ban is noted in the filter that spares the lookup. */
#ifndef TB_BAN_LOGIC_H
#define TB_BAN_LOGIC_H

#include "abi/tb_abi.h"
#include "logic/hash.h"

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
#include "logic/order.h"

/* A shared bucket's key, for its rule's ban (scope shared: one bucket,
 * so one ban, for all of the rule's addresses). w[1] tells it from any
 * address's or group's (group.h, match.h: theirs stay below 2^31). */
#define TB_BAN_SHARED 0x80000000u

static __always_inline void tb_ban_shared_key(struct tb_addr *key, __u16 shared)
{
	key->w[0] = key->w[2] = key->w[3] = 0;
	key->w[1] = tb_htonl(TB_BAN_SHARED | shared);
}

/* Whether a ban until until_ns holds at now: it ends exactly then. */
static __always_inline int tb_ban_holds(__u64 until_ns, __u64 now)
{
	return now < until_ns;
}

/* The banfilter slot of key (TB_BANFILTER_SHIFT bits of its mix). */
static __always_inline __u32 tb_ban_slot(const struct tb_addr *key, __u32 seed)
{
	return tb_addr_mix(key, (__u64)seed << 32 ^ 0x13198A2E03707344ULL) >> (64 - TB_BANFILTER_SHIFT);
}

/* Whether a drop of why (enum tb_event_why) is a refusal that a ban
 * counts: over the rule's rate, its total or the fleet's; not the early
 * signal's, dropped before the bucket is empty, nor a ban's own. */
static __always_inline int tb_refusal_bans(int why)
{
	return why == TB_WHY_RATE || why == TB_WHY_TOTAL || why == TB_WHY_FLEET;
}

/* One more refusal of a's key at now under a rule that bans for ms after
 * after refusals within a second, the second counted from its first
 * refusal. Returns 1 when this refusal bans the key (until_ns is then
 * set). No lock: LRU maps take none, so every word is claimed by a
 * fetching atomic, fully ordered on every JIT, and of CPUs that refuse
 * the key at once one starts the second and one bans. A refusal counted
 * into a second another CPU is starting may be lost: the ban then comes
 * one refusal later. A clock read behind window_ns counts in the window. */
static __always_inline int tb_ban_refusal(struct tb_autoban *a, __u64 now, __u16 after, __u32 ms)
{
	__u64 w = READ_ONCE(a->window_ns), until, n;

	if (now >= w + TB_NANO && __sync_val_compare_and_swap(&a->window_ns, w, now) == w)
		WRITE_ONCE(a->refusals, 0);
	/* Compare-and-swap, not a fetching add, which the BPF target takes
	 * only from -mcpu=v3 on; a count that loses three races is lost. */
	for (int i = 0; i < 3; i++) {
		n = READ_ONCE(a->refusals) + 1;
		if (__sync_val_compare_and_swap(&a->refusals, n - 1, n) == n - 1)
			break;
		n = 0;
	}
	until = READ_ONCE(a->until_ns);
	if (!n || n < after || tb_ban_holds(until, now) ||
	    __sync_val_compare_and_swap(&a->until_ns, until, now + (__u64)ms * 1000000) != until)
		return 0;
	WRITE_ONCE(a->refusals, 0);
	return 1;
}

#endif
