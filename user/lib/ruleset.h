/* SPDX-License-Identifier: GPL-2.0 */
#ifndef TB_RULESET_H
#define TB_RULESET_H

#include <stddef.h>
#include "abi/tb_abi.h"
#include "lib/prefix.h"
#include "lib/state.h"

#define TB_RULE_HASH 16384      /* prefix index buckets, power of two */

/* The rules table as the kernel holds it, read once and then kept in step
 * by every change this process makes, with indexes so that finding a
 * prefix and allocating slots cost the same at 10 rules as at 10,000. */
struct ruleset {
	struct tb_maps m;
	struct tb_config cfg;
	__u32 rules_map_id;     /* the rules map the copy came from (0: none) */
	struct tb_rule rules[TB_MAX_RULES];
	int head[TB_RULE_HASH]; /* prefix hash: first in-use slot + 1 */
	int next[TB_MAX_RULES]; /* next slot + 1 on the same chain */
	int free_rules[TB_MAX_RULES], nfree_rules;              /* stack, lowest on top */
	__u16 shared_refs[TB_MAX_RULES];                        /* in-use rules per shared[] slot */
	int free_shared[TB_MAX_RULES], nfree_shared;
	int ngrouped;           /* in-use per-/LEN rules */
	int nbanning;           /* in-use rules with a ban */
	/* In-use rules with a match, and of them those with ports. */
	int nmatched, ndport, nsport, nflags;
	int class_rule[TB_MAX_RULES];   /* shared[] slot: its in-use rule with a match + 1 */
	/* nodes[] as published (tb_abi.h, struct tb_node): a slot is live
	 * while its prefix's match trie entry (or the default) points at it. */
	struct tb_node nodes[TB_MAX_NODES];
	bool node_live[TB_MAX_NODES];
	int node_cursor;        /* where the search for a free slot starts */
};

/* What an operator sets; ruleset_set derives the rest. */
struct rule_spec {
	__u64 rate;     /* units/s */
	__u64 burst;    /* units */
	__u64 horizon_ns; /* action shape */
	__u8 cost;
	__u8 action;
	__u8 scope;
	__u8 group_len; /* scope per-/LEN */
	__u8 early;     /* the early congestion signal (drop, mark) */
	__u64 total_rate;  /* total: units/s over all of the rule's addresses; 0: none */
	__u64 total_burst; /* units */
	__u8 fleet;        /* charged to a fleet-wide key too (fleet on) */
	__u64 share_rate;  /* fleet: units/s a host admits of a key on its own; 0: none */
	__u64 share_burst; /* units */
	__u8 dscp;         /* action remark: what a packet over the limit is given */
	__u64 peak_rate;   /* action remark: units/s over which a packet is dropped; 0: none */
	__u64 peak_burst;  /* units */
	__u32 ban_ms;      /* ban: how long a refused key is banned; 0: never */
	__u16 ban_after;   /* refusals within a second that ban it */
};

void rule_prefix(const struct tb_rule *r, struct tb_prefix *p);
/* Whether r charges the bucket at its shared[] slot: scope shared, or a
 * total. */
bool rule_charges_shared(const struct tb_rule *r);
/* The rate and burst of that bucket (a total's, for a total), in r's
 * form, for what reads the bucket's level. */
void rule_of_shared(const struct tb_rule *r, struct tb_rule *out);
/* The rule's prefix as text ("default" for the default rule). */
void rule_format(const struct tb_rule *r, char *buf, size_t len);
/* Read the rules from the maps m, unless rs already holds them: the same
 * rules map at the same generation (every change bumps it). For a writer,
 * holding the device's lock: a prefix left in two slots by an
 * interrupted change keeps its published slot and the other is retired. */
int ruleset_load(struct ruleset *rs, const struct tb_maps *m);
/* The same for a reader, which does not hold the lock and writes nothing:
 * of a prefix in two slots (a change in progress) it keeps the published. */
int ruleset_read(struct ruleset *rs, const struct tb_maps *m);
/* The live slot of p's rule, or -1. */
int ruleset_find(const struct ruleset *rs, const struct tb_prefix *p);
/* Create or change a rule: written to a fresh slot, then published in one
 * step, then the old slot retired. A changed rate or burst keeps every
 * bucket's level; a new prefix, or a new cost unit, starts its shared
 * bucket full. Returns the rule's slot or -errno. */
int ruleset_set(struct ruleset *rs, const struct tb_prefix *p, const struct rule_spec *s);
int ruleset_del(struct ruleset *rs, const struct tb_prefix *p);
/* The spec a slot was made from. */
void rule_spec_of(const struct tb_rule *r, struct rule_spec *s);
/* Whether a rule of spec s has the early congestion signal: drop and
 * mark only; the others never drop early. */
bool rule_spec_signals(const struct rule_spec *s);
/* Make the rules exactly the n prefixes p with specs s: delete the rest,
 * set what differs; a rule already as asked keeps its slot, so its
 * buckets keep their state. 0 or -errno. */
int ruleset_apply(struct ruleset *rs, const struct tb_prefix *p, const struct rule_spec *s, int n);
/* Bump the generation, with no rule changed: every bucket's cached slot
 * and every CPU's copy of a bucket's bound (tb_abi.h, denycache) go
 * stale. For levels refilled behind the datapath's back (reset buckets).
 * 0 or -errno. */
int ruleset_invalidate(struct ruleset *rs);
/* The default rule's slot, or -1. */
int ruleset_default(const struct ruleset *rs);
/* Whether any rule is action shape (fq must then pace the egress). */
bool ruleset_shapes(const struct ruleset *rs);
/* The slot of the rule address a is charged to now (-1: none): b's cached
 * slot while the rule set is still at generation gen, else what the
 * datapath would find, the longest matching prefix in m's tries, or the
 * default. */
int ruleset_rule_of(const struct ruleset *rs, const struct tb_maps *m, const struct tb_addr *a,
		    const struct tb_bucket *b, __u32 gen);
/* The key of address a's bucket, as the datapath finds it now: a, or
 * its group's under a per-/LEN rule. Returns a's rule's slot, or -1. */
int ruleset_key_of(const struct ruleset *rs, const struct tb_maps *m, const struct tb_addr *a,
		   struct tb_addr *key);
/* Key as the address (or group key) it was made from under rule (-1:
 * none), without a match rule's class. */
void ruleset_key_address(const struct ruleset *rs, const struct tb_addr *key, int rule, struct tb_addr *a);
/* A bucket's key as an operator reads it: its address (or group), with
 * the class of a rule with a match (match.h) taken off. */
void ruleset_addr_format(const struct ruleset *rs, const struct tb_addr *key, int rule, char *buf, size_t len);

#endif
