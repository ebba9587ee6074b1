/* SPDX-License-Identifier: GPL-2.0 */
/* Which rule a packet is charged under, and the terms it sets. */
#ifndef TB_RULE_H
#define TB_RULE_H

#include "stages/maps.h"
#include "logic/charge.h"
#include "logic/group.h"
#include "logic/match.h"
#include "logic/parse.h"
#include "stages/place.h"
#include "logic/table.h"
#include "logic/tuning.h"
#include "logic/hash.h"

/* A rules[] slot not resolved yet (tb_resolve). */
#define TB_UNRESOLVED 0xffffffffu
/* No slot: the rule depends on what could not be read of the packet
 * (match.h, TB_PICK_UNSURE). */
#define TB_RULE_UNSURE 0xfffffffeu

/* The value of the longest prefix holding address a (of class cls) in
 * the trie of its family, v4 or v6; 0: none. */
static __always_inline void *tb_lpm_lookup(void *v4, void *v6, const struct tb_addr *a, int cls)
{
	if (cls == TB_CLASS_IPV4) {
		struct tb_lpm_v4 k = { .prefixlen = 32, .addr = a->w[3] };

		return bpf_map_lookup_elem(v4, &k);
	} else {
		struct tb_lpm_v6 k = { .prefixlen = 128 };

		__builtin_memcpy(k.addr, a->w, sizeof(k.addr));
		return bpf_map_lookup_elem(v6, &k);
	}
}

/* The rule at slot *id, or, while *id is TB_UNRESOLVED, at the longest
 * matching prefix's, falling back to the default rule. */
static __always_inline struct tb_rule *tb_resolve(const struct tb_config *cfg,
						  const struct tb_addr *a, int cls, __u32 *id)
{
	struct tb_rule *rule;
	__u32 *hit;

	if (*id != TB_UNRESOLVED)
		goto found;
	hit = tb_lpm_lookup(&prefixes_v4, &prefixes_v6, a, cls);
	if (hit)
		*id = *hit;
	else if (cfg->default_rule)
		*id = cfg->default_rule - 1;
	else
		return 0;
found:
	rule = bpf_map_lookup_elem(&rules, id);
	if (!rule || !rule->in_use)
		return 0;
	return rule;
}

/* The slot of the rule with a match that a packet of *l4 from a is
 * charged under, where its rule without a match has prefix length plen1
 * - 1 (match.h, tb_node_pick); TB_UNRESOLVED where there is none, and
 * TB_RULE_UNSURE where it is not known. */
static __always_inline __u32 tb_resolve_match(const struct tb_config *cfg, const struct tb_addr *a, int cls,
					      const __u64 *l4, int plen1)
{
	__u32 *hit = tb_lpm_lookup(&matches_v4, &matches_v6, a, cls), slot;
	struct tb_node *n;
	int i;

	if (hit)
		slot = *hit;
	else if (cfg->default_node)
		slot = cfg->default_node - 1;
	else
		return TB_UNRESOLVED;
	n = bpf_map_lookup_elem(&nodes, &slot);
	if (!n)
		return TB_UNRESOLVED;
	i = tb_node_pick(n, l4, plen1);
	if (i == TB_PICK_UNSURE)
		return TB_RULE_UNSURE;
	return i < 0 ? TB_UNRESOLVED : n->e[i & (TB_NODE_ENTRIES - 1)].rule;
}

/* Where some rule is per-/LEN or has a match (tb_config.resolve_first),
 * a packet's rule (from its address and transport, l4) says which key
 * its bucket has, so it is resolved first, and kept in this CPU's
 * groupcache at slot, the address's cache slot (tb_dropcache_slot): key
 * becomes its group's, and a match rule's (match.h). Returns the rule's
 * slot (TB_MAX_RULES: none; TB_RULE_UNSURE: not known; TB_UNRESOLVED
 * where no rule needs resolving first: a bucket's cached rule spares the
 * lookup there), and above it
 * the cache slot of the key. Global, so the verifier checks it once and
 * goes on with one unknown result: with a constant on one side, 6.1's
 * verifier walked tb_tc 629K instructions, 494K without (and the program
 * was slower). */
__attribute__((noinline)) __u64 tb_regroup(struct tb_addr *key, int cls, __u64 l4, __u32 slot)
{
	__u32 zero = 0, id = TB_UNRESOLVED;
	struct tb_config *cfg = bpf_map_lookup_elem(&config, &zero);
	struct tb_groupslot *c;
	struct tb_rule *rule;

	if (!key || !cfg)
		return TB_MAX_RULES;
	if (!cfg->resolve_first)
		return (__u64)slot << 32 | TB_UNRESOLVED;
	c = bpf_map_lookup_elem(&groupcache, &slot);
	if (!c)
		return TB_MAX_RULES;
	/* gen is read before the prefixes: a change published meanwhile
	 * has bumped the generation past the one stored. Stored first, so
	 * that the lookups keep fewer values live (the stack is tight). */
	c->gen = tb_load_acquire(&cfg->gen);
	c->addr = *key;
	c->l4 = l4;
	rule = tb_resolve(cfg, key, cls, &id);
	if (cfg->match_reads) {
		__u32 m = tb_resolve_match(cfg, key, cls, &c->l4,
					   !rule ? -1 : rule->family ? rule->prefixlen + 1 : 0);

		if (m != TB_UNRESOLVED) {
			id = m;
			rule = bpf_map_lookup_elem(&rules, &id);
			if (rule && !rule->in_use)
				rule = 0;
		}
	}
	if (rule) {
		tb_rule_key(key, rule, cls == TB_CLASS_IPV6, cfg->place_key);
		slot = tb_dropcache_slot(key, cfg->slot_seed);
	} else if (id != TB_RULE_UNSURE) {
		id = TB_MAX_RULES;
	}
	c->key = *key;
	c->id = id;
	c->ci = slot;
	/* Through this CPU's placecache, which the caller then finds the
	 * key in: a new key's SipHash is computed once. */
	c->h = tb_place(cfg, key, slot);
	return (__u64)slot << 32 | id;
}

/* tb_regroup without a call where this CPU's groupcache holds the answer
 * for rule-set generation gen, with the key's placement hash too (*h,
 * and *placed set): a repeat address (or address and port) under a
 * per-/LEN rule or a rule with a match costs a compare. Anything else,
 * and every packet where no rule needs resolving first, goes through the
 * global function, so that the verifier sees unknown values on both
 * sides. */
static __always_inline __u64 tb_regroup_cached(const struct tb_config *cfg, struct tb_addr *key, int cls,
					       __u64 l4, __u32 gen, __u32 *h, __u8 *placed)
{
	__u32 slot = tb_dropcache_slot(key, cfg->slot_seed);
	struct tb_groupslot *c;

	if (!cfg->resolve_first)
		return tb_regroup(key, cls, l4, slot);
	c = bpf_map_lookup_elem(&groupcache, &slot);
	if (!c || c->gen != gen || c->l4 != l4 || !tb_key_is(&c->addr, key))
		return tb_regroup(key, cls, l4, slot);
	*key = c->key;
	*h = c->h;
	*placed = 1;
	return (__u64)c->ci << 32 | c->id;
}

/* Units a packet of pkts segments and len bytes takes in unit cost. */
static __always_inline __u64 tb_units(__u8 cost, __u64 len, __u32 pkts)
{
	return cost == TB_COST_PACKETS ? pkts : len;
}

static __always_inline __u64 tb_units_of(const struct tb_rule *rule, __u64 len, __u32 pkts)
{
	return tb_units(rule->cost, len, pkts);
}

static __always_inline void tb_terms_of(const struct tb_rule *rule, __u64 len, __u32 pkts,
					struct tb_terms *t)
{
	t->r = rule->r;
	t->unit = rule->cost;
	t->cost = tb_units_of(rule, len, pkts) * TB_NANO;
	t->action = rule->action;
	t->dscp = rule->dscp;
	/* The peak's terms only where there is one: its rate alone says. */
	if (rule->peak.rate)
		t->peak = rule->peak;
	else
		t->peak.rate = 0;
	t->horizon_ns = rule->horizon_ns;
	/* Credit admits without the lock, and so without a total's, a
	 * fleet key's or a peak bucket's charge. */
	t->credit = !rule->total.rate && !rule->fleet && !rule->peak.rate &&
				    rule->burst >> TB_CREDIT_SHIFT <= TB_CREDIT_UNSPENT_MAX ?
			    rule->burst >> TB_CREDIT_SHIFT : 0;
}

/* Whether an empty bucket drops (or, monitor, counts; remark, remarks)
 * the packet: all but shape where departures can wait, whose schedule
 * writes the bucket whatever it decides, and a rule with a peak rate,
 * whose peak bucket says which. */
static __always_inline int tb_tail_drops(const struct tb_rule *rule, int can_delay)
{
	return (rule->action != TB_ACTION_SHAPE || !can_delay) && !rule->peak.rate;
}

#endif
