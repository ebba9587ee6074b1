/* SPDX-License-Identifier: GPL-2.0 */
/* A device's per-address buckets as the datapath counts them, for show,
 * top and the metrics: each with what its CPUs' caches hold for it added
 * and the rule it is charged under, read in the one order that counts
 * nothing twice (the rules, the caches, then the table). */
#ifndef SNAPSHOT_H
#define SNAPSHOT_H

#include "lib/ruleset.h"
#include "lib/state.h"
#include "lib/pending.h"

struct snapshot {
	const struct tb_maps *m;
	struct ruleset *rs;
	struct tb_config cfg;
	struct tb_pending pending;
};

/* Read m's config, its rules into rs, and where the caches hold counts.
 * snapshot_end frees what it read, begun or not. */
int snapshot_begin(struct snapshot *sn, const struct tb_maps *m, struct ruleset *rs);
/* fn for every per-address bucket, its pending counts added, with the
 * rules[] slot it is charged under (-1: none); stops when fn returns
 * non-zero. 0, or -errno: the reads' or fn's. */
int snapshot_foreach(struct snapshot *sn,
		     int (*fn)(const struct tb_addr *a, const struct tb_bucket *b, int rule, void *ctx), void *ctx);
/* Address a's bucket (under key: a, or its group's) as snapshot_foreach
 * gives it, and its rule: 0,
 * -ENOENT when the table holds none, or -errno. */
int snapshot_get(struct snapshot *sn, const struct tb_addr *a, struct tb_addr *key, struct tb_bucket *b,
		 int *rule);
/* fn for each bucket address a has under a rule with a match (match.h),
 * as snapshot_foreach gives it. 0, or -errno. */
int snapshot_matched(struct snapshot *sn, const struct tb_addr *a,
		     int (*fn)(const struct tb_addr *key, const struct tb_bucket *b, int rule, void *ctx), void *ctx);
void snapshot_end(struct snapshot *sn);
/* What the fleet key of a fleet rule's bucket holds on this host at now
 * (addr, or NULL for a shared rule's one key): credit under a lease that
 * still runs, and what it refused for want of share and credit; 0 and 0
 * for a key fleet[] lacks. */
void snapshot_fleet_key(const struct tb_maps *m, const struct tb_rule *rule, const struct tb_addr *addr, __u64 now,
			__u64 *credit, __u64 *refused);

#endif
