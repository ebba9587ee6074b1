/* SPDX-License-Identifier: GPL-2.0 */
/* The maps read and cleared as the datapath keeps them: the global
 * counters, the per-address table, owed[], and a bucket's level. */
#ifndef TB_TABLES_H
#define TB_TABLES_H

#include "lib/state.h"

/* The global counters, summed over the CPUs. */
int stats_sum(const struct tb_maps *m, struct tb_stats *out);
/* What bucket b holds at now under rule, in the rule's units, its unspent
 * credit included, as the next locked charge finds it: the burst when the
 * level is kept in the rule's other unit (the next charge refills it). */
__u64 bucket_units(const struct tb_bucket *b, const struct tb_rule *rule, __u64 now);
/* What the peak bucket of b (a rule with a peak rate, rule) holds at now,
 * in the rule's units. */
__u64 bucket_peak_units(const struct tb_bucket *b, const struct tb_rule *rule, __u64 now);
/* Whether bucket b, at now, has learnt a long round trip, and so sends
 * no early signal (bpf/logic/hold.h). */
bool bucket_long_rtt(const struct tb_bucket *b, __u64 now);
/* owed[] has 2^state_owed_shift slots: one per tracked address, rounded
 * up to a power of two, and at least one per lock stripe (tb_abi.h). */
__u8 state_owed_shift(__u32 max_addrs);
/* Forget what evicted buckets owed (reset buckets). */
int owed_zero(const struct tb_maps *m);
/* Address a's bucket as the table holds it, found as the datapath finds
 * it under cfg: 0, -ENOENT when it holds none, or -errno. */
int bucket_get(const struct tb_maps *m, const struct tb_config *cfg, const struct tb_addr *a,
	       struct tb_bucket *b);
/* Call fn for every per-address bucket (batched reads); stops when fn
 * returns non-zero. Returns 0, or -errno: the reads' or fn's. A way that
 * changes hands while its set is copied may pair the next address's key
 * with the bucket it had, or the reverse: the kernel copies a set with
 * no lock, and the counts of an address evicted then go with it anyway. */
int buckets_foreach(const struct tb_maps *m,
		    int (*fn)(const struct tb_addr *, const struct tb_bucket *, void *), void *ctx);
/* Empty the table (reset buckets), from user space: a charge made while
 * its set is rewritten may survive it, half or whole. */
int buckets_clear(const struct tb_maps *m);

#endif
