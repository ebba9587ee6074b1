/* SPDX-License-Identifier: GPL-2.0 */
#ifndef TB_RULESET_H
#define TB_RULESET_H

#include "tb_abi.h"
#include "prefix.h"

/* File descriptors of the datapath's maps, from a skeleton or from pins. */
struct tb_maps {
	int buckets;
	int rules;
	int prefixes_v4;
	int prefixes_v6;
	int shared;
	int locks;
	int config;
	int stats;
	int dropcache;
};

/* The rules table as the kernel holds it, read once so that lookups and
 * slot allocation cost no syscalls (a batch of 10,000 rules stays fast). */
struct ruleset {
	struct tb_maps m;
	struct tb_config cfg;
	struct tb_rule rules[TB_MAX_RULES];
};

/* What an operator sets; ruleset_set derives the rest. */
struct rule_spec {
	__u64 rate;     /* units/s */
	__u64 burst;    /* units */
	__u64 horizon_ns; /* action shape */
	__u8 cost;
	__u8 action;
	__u8 scope;
	__u8 early;     /* the early congestion signal (drop, mark) */
};

void rule_prefix(const struct tb_rule *r, struct tb_prefix *p);
int ruleset_load(struct ruleset *rs, const struct tb_maps *m);
/* The live slot of p's rule, or -1. */
int ruleset_find(struct ruleset *rs, const struct tb_prefix *p);
/* Create or change a rule: written to a fresh slot, then published in one
 * step, then the old slot retired. A changed rate or burst keeps every
 * bucket's level; a new prefix, or a new cost unit, starts its shared
 * bucket full. Returns the rule's slot or -errno. */
int ruleset_set(struct ruleset *rs, const struct tb_prefix *p, const struct rule_spec *s);
int ruleset_del(struct ruleset *rs, const struct tb_prefix *p);
/* The default rule's slot, or -1. */
int ruleset_default(const struct ruleset *rs);

#endif
