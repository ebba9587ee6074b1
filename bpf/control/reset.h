/* SPDX-License-Identifier: GPL-2.0 */
/* reset counters, run in the kernel: every counter zeroed under the lock
 * the datapath takes. */
#ifndef TB_CONTROL_RESET_H
#define TB_CONTROL_RESET_H

#include "stages/maps.h"
#include "logic/counters.h"

struct bpf_map;

static long zero_counters(struct bpf_map *map, const __u32 *si, struct tb_set *s, void *ctx)
{
	__u32 zero = 0, stripe;
	struct tb_config *cfg = bpf_map_lookup_elem(&config, &zero);
	struct tb_lock *lk;

	if (!cfg || cfg->table_shift < TB_TABLE_MIN_SHIFT || cfg->table_shift > 31)
		return 1;
	stripe = *si >> (cfg->table_shift - TB_LOCK_SHIFT);
	lk = bpf_map_lookup_elem(&locks, &stripe);
	if (!lk)
		return 0;
	bpf_spin_lock(&lk->lock);
	for (int i = 0; i < TB_WAYS; i++) {
		struct tb_bucket *b = &s->b[i];

		__builtin_memset(&b->c, 0, sizeof(b->c));
		if (b->credit_granted) {
			/* What the credit admitted is counted from now on
			 * only. Emptied meanwhile, it admits nothing without
			 * the lock held here. */
			__u64 w = __sync_lock_test_and_set(&b->credit, 0);

			b->credit_from = tb_credit_unspent(w);
			WRITE_ONCE(b->credit, (w >> TB_CREDIT_TAG_SHIFT << TB_CREDIT_TAG_SHIFT) | tb_credit_unspent(w));
		}
	}
	bpf_spin_unlock(&lk->lock);
	return 0;
}

/* A shared bucket's counters, zeroed in place under its lock, like a
 * per-address bucket's: rewriting the value from user space would undo
 * the charges made between the read and the write, tokens included. */
static long zero_shared_counters(struct bpf_map *map, const __u32 *slot, struct tb_shared *value,
				 void *ctx)
{
	/* Looked up again: 6.1's verifier tracks no lock taken in a
	 * callback's own value. */
	struct tb_shared *sh = bpf_map_lookup_elem(&shared, slot);

	if (sh) {
		bpf_spin_lock(&sh->lock);
		__builtin_memset(&sh->b.c, 0, sizeof(sh->b.c));
		bpf_spin_unlock(&sh->lock);
	}
	return 0;
}

/* A fleet key's refusals, which show as its bucket's: a plain store,
 * since a refusal counted just before it is one the reset may take or
 * leave. The agent reads a count lower than last round's as a reset. */
static long zero_fleet_refusals(struct bpf_map *map, const struct tb_fleet_key *k, struct tb_fleet_entry *e,
				void *ctx)
{
	WRITE_ONCE(e->refused, 0);
	return 0;
}

/* One CPU's global counters, as they are now, into sum. */
static long add_cpu_stats(__u64 cpu, struct tb_stats *sum)
{
	__u32 zero = 0;
	__u64 *v = bpf_map_lookup_percpu_elem(&stats, &zero, cpu), *to = (__u64 *)sum;

	if (!v)
		return 1;
	for (int i = 0; i < sizeof(*sum) / 8; i++)
		to[i] += READ_ONCE(v[i]);
	return 0;
}

/* The global counters restarted from zero: every CPU's read, and their
 * sum taken from this CPU's with atomic adds (tb_reset_req), into taken. */
static void restart_stats(__u32 cpus, struct tb_stats *taken)
{
	struct tb_stats sum = {};
	__u64 *mine, *s = (__u64 *)&sum, *t = (__u64 *)taken;
	__u32 zero = 0;

	mine = bpf_map_lookup_elem(&stats, &zero);
	if (!mine || !cpus)
		return;
	bpf_loop(cpus, add_cpu_stats, &sum, 0);
	for (int i = 0; i < sizeof(sum) / 8; i++) {
		__sync_fetch_and_add(&mine[i], -s[i]);
		t[i] = s[i];
	}
}

/* reset counters (tbctl runs tb_reset_counters with req as the packet):
 * it restarts the global counters (tb_abi.h), then moves the reset epoch
 * on and zeroes every bucket's counters, per address and shared, in
 * place under the lock the datapath takes, so neither a charge in flight
 * nor a bucket's level is lost, as they would be if user space rewrote
 * the elements. The global counters go first: what is charged meanwhile
 * is counted in both, where the other order would leave it in a bucket
 * and take it from the global counters, which never count less than the
 * buckets they cover. The epoch goes before the buckets: a flush that
 * finds it moved on comes after the bucket was zeroed. The fleet keys'
 * refusals, shown as their buckets', go last. */
static __always_inline int tb_reset_run(struct tb_reset_req *req)
{
	__u32 zero = 0;
	struct tb_config *cfg = bpf_map_lookup_elem(&config, &zero);

	if (!cfg)
		return XDP_ABORTED;
	restart_stats(req->stats_cpus, &req->taken);
	WRITE_ONCE(cfg->reset_epoch, req->reset_epoch);
	bpf_for_each_map_elem(&buckets, zero_counters, 0, 0);
	bpf_for_each_map_elem(&shared, zero_shared_counters, 0, 0);
	bpf_for_each_map_elem(&fleet, zero_fleet_refusals, 0, 0);
	return XDP_PASS;
}

#endif
