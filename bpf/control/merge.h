/* SPDX-License-Identifier: GPL-2.0 */
/* An upgrade's merge, run in the kernel: the older layout's shared
 * buckets, table and counters moved into this layout's maps. */
#ifndef TB_CONTROL_MERGE_H
#define TB_CONTROL_MERGE_H

#include "stages/migrate.h"
#include "logic/counters.h"

struct bpf_map;

/* A shared bucket of this layout was made moved before the swap, with
 * no counters: it takes the older one's level and counters. Each under
 * its own lock, one at a time; a rerun finds the older one moved and
 * adds only what it counted since. */
static long merge_shared(struct bpf_map *map, const __u32 *slot, struct tb_shared *value, void *ctx)
{
	/* Looked up again: 6.1's verifier tracks no lock taken in a
	 * callback's own value. */
	struct tb_shared *sh = bpf_map_lookup_elem(&shared, slot), *old = bpf_map_lookup_elem(&shared_prev, slot);
	struct tb_bucket ob = {};
	int moved;

	if (!sh || !old)
		return 0;
	bpf_spin_lock(&old->lock);
	moved = tb_moved(&old->b);
	tb_take(&ob, &old->b);
	bpf_spin_unlock(&old->lock);
	bpf_spin_lock(&sh->lock);
	if (!moved && tb_moved(&sh->b))
		tb_settle_level(&sh->b, &ob);
	tb_counters_add(&sh->b.c, &ob.c);
	bpf_spin_unlock(&sh->lock);
	return 0;
}

/* One CPU's older counters into this CPU's: atomic adds, since this CPU's
 * datapath may interrupt the run between a load and a store. The older
 * program is gone, so its counters are read and zeroed without a race. */
struct stats_to {
	__u64 *to;
};

static long merge_stats(__u64 cpu, struct stats_to *c)
{
	__u32 zero = 0;
	__u64 *old = bpf_map_lookup_percpu_elem(&stats_prev, &zero, cpu), *to = c->to;

	if (!old || !to)
		return 1;
	for (int i = 0; i < TB_STATS_COMMON / 8; i++) {
		__sync_fetch_and_add(&to[i], old[i]);
		old[i] = 0;
	}
	return 0;
}

/* Every address of an older set. A key read as it changes hands names
 * an address the lock then finds in no way, or one moved already. */
static long move_set(struct bpf_map *map, const __u32 *si, struct tb_set *s, void *ctx)
{
	for (int i = 0; i < TB_WAYS; i++) {
		struct tb_addr k = s->key[i];

		if (k.w[0] | k.w[1] | k.w[2] | k.w[3])
			tb_move_bucket(&k, 0, 0, 0, TB_MOVING_MIGRATE);
	}
	return 0;
}

static long owed_max(struct bpf_map *map, const __u32 *i, __u64 *o, __u64 *max)
{
	if (*o > *max)
		*max = *o;
	return 0;
}

/* Once an upgrade's swap has settled (no CPU runs the older program any
 * more), what the older layout's maps still hold, moved (tbctl runs
 * tb_migrate with req as the packet). Run again after a kill, it adds
 * nothing twice: everything it takes, it leaves moved or zero. */
static __always_inline int tb_migrate_run(struct tb_migrate_req *req)
{
	struct stats_to c;
	__u32 zero = 0, cpus;

	if (req->shared)
		bpf_for_each_map_elem(&shared_prev, merge_shared, 0, 0);
	if (req->table) {
		void *prev = tb_prev_table();
		__u64 max = 0;

		if (!prev)
			return XDP_ABORTED;
		bpf_for_each_map_elem(prev, move_set, 0, 0);
		bpf_for_each_map_elem(&owed, owed_max, &max, 0);
		req->owed_max = max;
	}
	cpus = req->stats_cpus;
	c.to = bpf_map_lookup_elem(&stats, &zero);
	if (cpus)
		bpf_loop(cpus, merge_stats, &c, 0);
	return XDP_PASS;
}

#endif
