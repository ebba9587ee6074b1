/* SPDX-License-Identifier: GPL-2.0 */
/* Bans: a packet whose address a manual list holds, or whose key a rule
 * banned, is dropped before any bucket is looked up (tb_banned); a rule
 * that bans counts its refusals of a key, and bans it after enough
 * (tb_ban_refused). */
#ifndef TB_BAN_H
#define TB_BAN_H

#include "stages/account.h"
#include "stages/rule.h"
#include "logic/ban.h"

/* The end of the manual ban of an address at its longest prefix in one
 * trie of the list (0: none): a global function a trie, so that the
 * verifier checks each lookup once and no lookup is reached by two maps
 * (clang merges lookups of one shape into one call, which the verifier
 * then cannot make a direct call of the map's own). Called only where the
 * list in force holds a prefix of the family, and this CPU's cache has no
 * answer. An IPv4 address is w[3], the upper half of k1. */
#define TB_BAN_END_V4(name, trie)                                                                  \
	__attribute__((noinline)) __u64 name(__u64 k1)                                             \
	{                                                                                          \
		struct tb_lpm_v4 k = { .prefixlen = 32, .addr = k1 >> 32 };                        \
		struct tb_ban *b = bpf_map_lookup_elem(&trie, &k);                                 \
                                                                                                   \
		return b ? READ_ONCE(b->until_ns) : 0;                                             \
	}
#define TB_BAN_END_V6(name, trie)                                                                  \
	__attribute__((noinline)) __u64 name(__u64 k0, __u64 k1)                                   \
	{                                                                                          \
		struct tb_lpm_v6 k = { .prefixlen = 128 };                                         \
		struct tb_ban *b;                                                                  \
                                                                                                   \
		__builtin_memcpy(&k.addr[0], &k0, 8);                                              \
		__builtin_memcpy(&k.addr[2], &k1, 8);                                              \
		b = bpf_map_lookup_elem(&trie, &k);                                                \
		return b ? READ_ONCE(b->until_ns) : 0;                                             \
	}
TB_BAN_END_V4(tb_ban_end0_v4, bans0_v4)
TB_BAN_END_V4(tb_ban_end1_v4, bans1_v4)
TB_BAN_END_V6(tb_ban_end0_v6, bans0_v6)
TB_BAN_END_V6(tb_ban_end1_v6, bans1_v6)

/* The end of the manual ban of address k0:k1 (of class cls) in the list
 * side names. */
static __always_inline __u64 tb_ban_list_end(__u8 side, __u64 k0, __u64 k1, int cls)
{
	if (cls == TB_CLASS_IPV4)
		return side ? tb_ban_end1_v4(k1) : tb_ban_end0_v4(k1);
	return side ? tb_ban_end1_v6(k0, k1) : tb_ban_end0_v6(k0, k1);
}

/* Whether address a (of class cls) is banned by hand at now: this CPU's
 * cached answer for it, or the list's, cached. The generation is read
 * first, with acquire order; tbctl bumps it in a write after the one that
 * flips the list (user/lib/order.c), so an answer cached under it is the
 * list's in force then or later. The entry is invalidated first and made
 * valid last: a program that runs on this CPU in between (a test run may
 * be preempted) looks the list up itself; the cache is this CPU's only, so
 * barrier() orders it. */
static __always_inline int tb_banned_by_hand(const struct tb_config *cfg, const struct tb_addr *a, int cls,
					     __u64 now)
{
	__u32 slot = tb_dropcache_slot(a, cfg->slot_seed), gen = tb_load_acquire(&cfg->ban_gen) + 1;
	struct tb_banslot *c = bpf_map_lookup_elem(&bancache, &slot);
	const __u64 *k = (const __u64 *)a;
	__u64 until;

	if (!c)
		return 0;
	if (c->hand_gen == gen && tb_key_is(&c->addr, a))
		return tb_ban_holds(c->hand_until, now);
	until = tb_ban_list_end(READ_ONCE(cfg->ban_side), k[0], k[1], cls);
	WRITE_ONCE(c->hand_gen, 0);
	barrier();
	c->addr = *a;
	c->hand_until = until;
	barrier();
	WRITE_ONCE(c->hand_gen, gen);
	return tb_ban_holds(until, now);
}

/* The rule (rules[] slot + 1) whose ban of key k0:k1 holds at now, kept
 * in this CPU's cache slot ci for the packets after it; 0: none. Global,
 * for the verifier, as above. */
__attribute__((noinline)) __u32 tb_banned_auto(__u64 k0, __u64 k1, __u64 now, __u32 ci)
{
	__u32 zero = 0, gen;
	struct tb_config *cfg = bpf_map_lookup_elem(&config, &zero);
	struct tb_banslot *c = bpf_map_lookup_elem(&bancache, &ci);
	struct tb_autoban *a;
	struct tb_addr key;
	__u64 until;
	__u32 rule;

	if (!cfg || !c)
		return 0;
	gen = tb_load_acquire(&cfg->ban_gen) + 1;
	((__u64 *)&key)[0] = k0;
	((__u64 *)&key)[1] = k1;
	a = bpf_map_lookup_elem(&autobans, &key);
	if (!a)
		return 0;
	until = READ_ONCE(a->until_ns);
	rule = READ_ONCE(a->rule);
	if (!tb_ban_holds(until, now))
		return 0;
	WRITE_ONCE(c->rule_gen, 0);
	barrier();
	c->key = key;
	c->rule_until = until;
	c->rule = rule;
	barrier();
	WRITE_ONCE(c->rule_gen, gen);
	return rule;
}

/* Whether banfilter's word at slot shows a ban not ended at now. */
static __always_inline int tb_ban_filtered(__u32 slot, __u64 now)
{
	__u64 *w = bpf_map_lookup_elem(&banfilter, &slot);

	return w && tb_ban_holds(READ_ONCE(*w), now);
}

/* A packet of pkts segments and len bytes, dropped by a ban (by rule id,
 * -1: by hand), counted as banned and dropped. */
static __always_inline int tb_ban_drop(struct tb_stats *st, int id, __u64 len, __u32 pkts)
{
	st->banned_packets += pkts;
	st->banned_bytes += len;
	return tb_count(st, TB_OVER, TB_ACTION_DROP, len, pkts, TB_CTX(TB_WHY_BAN, id));
}

/* Whether key, which a packet is charged as (its address, group's or
 * class's key, or tb_ban_shared_key's), of cache slot ci, is banned by its
 * rule at now: the rule's slot + 1, or 0. Inline: where no rule's ban
 * holds, as the filter's last word says, the check costs a load and a
 * compare; a banned key found in this CPU's cache, a compare more; where
 * a ban holds elsewhere, a hash and a load more, and the lookup only
 * where key's filter slot has a ban. A ban lifted bumps the generation;
 * one that the LRU map evicted early stays cached here until its end. */
static __always_inline __u32 tb_banned(const struct tb_config *cfg, const struct tb_addr *key, __u32 ci, __u64 now)
{
	const __u64 *k = (const __u64 *)key;
	struct tb_banslot *c;

	if (!tb_ban_filtered(TB_BANFILTER_ALL, now))
		return 0;
	c = bpf_map_lookup_elem(&bancache, &ci);
	if (c && c->rule_gen == READ_ONCE(cfg->ban_gen) + 1 && tb_key_is(&c->key, key) &&
	    tb_ban_holds(c->rule_until, now))
		return c->rule;
	if (!tb_ban_filtered(tb_ban_slot(key, cfg->slot_seed), now))
		return 0;
	return tb_banned_auto(k[0], k[1], now, ci);
}

/* Raise *w to until, unless it is later already; a lost race reads the
 * word again, a few times at most. The compare-and-swap is a fetching
 * atomic, fully ordered on every JIT: the ban's end, claimed by one
 * before (logic/ban.h), is visible to a CPU that reads this word. A CPU
 * that reads the word without acquire order (arm64) and then the entry's
 * older end only takes the packet to its bucket, which refuses it. */
static __always_inline void tb_ban_raise(__u64 *w, __u64 until)
{
	for (int i = 0; i < 3; i++) {
		__u64 old = READ_ONCE(*w);

		if (old >= until || __sync_val_compare_and_swap(w, old, until) == old)
			return;
	}
}

/* One more refusal of key k0:k1 by rule id at now, where the rule bans:
 * its key's entry counts it, and once enough refusals come within a
 * second, bans the key (shared scope: the rule's shared bucket). Returns
 * whether it did. Global, with scalars only, as tb_event. */
__attribute__((noinline)) int tb_ban_refused(__u64 k0, __u64 k1, __u32 id, __u64 now)
{
	__u32 zero = 0, slot;
	struct tb_config *cfg = bpf_map_lookup_elem(&config, &zero);
	struct tb_stats *st = bpf_map_lookup_elem(&stats, &zero);
	struct tb_rule *rule = bpf_map_lookup_elem(&rules, &id);
	struct tb_autoban fresh = {}, *a;
	struct tb_addr key;
	__u64 until, *w;

	if (!cfg || !st || !rule || !rule->ban_ms)
		return 0;
	((__u64 *)&key)[0] = k0;
	((__u64 *)&key)[1] = k1;
	if (rule->scope == TB_SCOPE_SHARED)
		tb_ban_shared_key(&key, rule->shared);
	a = bpf_map_lookup_elem(&autobans, &key);
	if (!a) {
		bpf_map_update_elem(&autobans, &key, &fresh, BPF_NOEXIST);
		a = bpf_map_lookup_elem(&autobans, &key);
		if (!a)
			return 0;
	}
	if (!tb_ban_refusal(a, now, rule->ban_after, rule->ban_ms))
		return 0;
	WRITE_ONCE(a->rule, id + 1);
	until = READ_ONCE(a->until_ns);
	st->bans_made++;
	slot = tb_ban_slot(&key, cfg->slot_seed);
	w = bpf_map_lookup_elem(&banfilter, &slot);
	if (w)
		tb_ban_raise(w, until);
	slot = TB_BANFILTER_ALL;
	w = bpf_map_lookup_elem(&banfilter, &slot);
	if (w)
		tb_ban_raise(w, until);
	return 1;
}

#endif
