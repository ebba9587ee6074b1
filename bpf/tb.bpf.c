/* SPDX-License-Identifier: GPL-2.0 */
/* Entry points: one policing core (policy.h) behind XDP and tc. */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include "ecn.h"
#include "migrate.h"
#include "policy.h"

/* Deepest header the policy reads: Ethernet, two VLAN tags, IPv4 with
 * options, TCP with options (for the headers GSO segments repeat). */
#define TB_PARSE_DEPTH (TB_L4_MAX + 60)

/* Longest frame of a 1500-byte MTU (two VLAN tags): only a longer one
 * asks for the device's MTU, so the common frame calls no helper. */
#define TB_STD_FRAME (14 + 2 * 4 + 1500)

/* Set by tbctl where the kernel has multi-buffer XDP (5.18): the program
 * is then loaded with BPF_F_XDP_HAS_FRAGS (hook.c), so that it attaches to
 * a device whose MTU takes frames of more than one buffer (a jumbo MTU
 * on most drivers), and a frame is charged all its buffers, not the first
 * one that the parser reads. Elsewhere the helper's branch is dead code,
 * which the verifier never looks at. */
const volatile __u8 tb_xdp_frags = 0;

/* Cost is the frame as XDP sees it: Ethernet header and payload, no FCS.
 * Generic XDP also sees GRO and TSO aggregates whole, with no segment
 * count: one longer than the device's MTU allows is charged as the
 * segments it was or will be on the wire, as tc charges it. */
SEC("xdp")
int tb_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u64 len = tb_xdp_frags ? bpf_xdp_get_buff_len(ctx) : data_end - data;
	struct tb_pkt pkt = {};
	__u64 depart = 0;
	__u32 mtu = 0;
	__u16 delta;
	int cls, v;

	if (len > TB_STD_FRAME)
		bpf_check_mtu(ctx, 0, &mtu, 0, 0);
	v = tb_police(data, data_end, len, 0, mtu, 0, &pkt, &cls, &depart);
	if (v == TB_MARK)
		tb_ecn_set_ce(data, data_end, &delta);
	return v == TB_DROP ? XDP_DROP : XDP_PASS;
}

/* Cost is skb->len, the same Ethernet frame at clsact ingress and egress;
 * a GSO/GRO packet adds the headers each further segment repeats. Headers
 * outside the linear area are pulled in so the parser can see them. Only
 * on egress is a departure time honoured: fq reads skb->tstamp there. */
SEC("tc")
int tb_tc(struct __sk_buff *skb)
{
	void *data, *data_end;
	struct tb_pkt pkt = {};
	int cls, v;
	__u64 depart = 0;
	__u16 delta;

	if (skb->data_end - skb->data < TB_PARSE_DEPTH && skb->len > skb->data_end - skb->data)
		bpf_skb_pull_data(skb, skb->len < TB_PARSE_DEPTH ? skb->len : TB_PARSE_DEPTH);
	data = (void *)(long)skb->data;
	data_end = (void *)(long)skb->data_end;
	/* An IPv6 header chain may reach past that: as far as the walk to
	 * the transport header reads. */
	if (data_end - data < TB_CHAIN_DEPTH && skb->len > data_end - data && tb_chain_follows(data, data_end)) {
		bpf_skb_pull_data(skb, skb->len < TB_CHAIN_DEPTH ? skb->len : TB_CHAIN_DEPTH);
		data = (void *)(long)skb->data;
		data_end = (void *)(long)skb->data_end;
	}
	v = tb_police(data, data_end, skb->len, skb->gso_segs, 0, tb_egress, &pkt, &cls, &depart);
	if (v == TB_DROP)
		return TC_ACT_SHOT;
	if (v == TB_MARK && tb_ecn_set_ce(data, data_end, &delta) && delta)
		bpf_csum_update(skb, delta);
	if (depart > skb->tstamp)
		skb->tstamp = depart;
	/* Anything but TC_ACT_SHOT lets other classifiers on the hook run. */
	return TC_ACT_UNSPEC;
}

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

/* Not a hook: tbctl runs it through BPF_PROG_TEST_RUN for "reset counters",
 * with a struct tb_reset_req as the packet. It restarts the global
 * counters (tb_abi.h), then moves the reset epoch on and zeroes every
 * bucket's counters, per address and shared, in place under the lock the
 * datapath takes, so neither a charge in flight nor a bucket's level is
 * lost, as they would be if user space rewrote the elements. The global
 * counters go first: what is charged meanwhile is counted in both, where
 * the other order would leave it in a bucket and take it from the global
 * counters, which never count less than the buckets they cover. The epoch
 * goes before the buckets: a flush that finds it moved on comes after the
 * bucket was zeroed. */
SEC("xdp")
int tb_reset_counters(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *data_end = (void *)(long)ctx->data_end;
	struct tb_reset_req *req = data;
	__u32 zero = 0;
	struct tb_config *cfg = bpf_map_lookup_elem(&config, &zero);

	if ((void *)(req + 1) > data_end || !cfg)
		return XDP_ABORTED;
	restart_stats(req->stats_cpus, &req->taken);
	WRITE_ONCE(cfg->reset_epoch, req->reset_epoch);
	bpf_for_each_map_elem(&buckets, zero_counters, 0, 0);
	bpf_for_each_map_elem(&shared, zero_shared_counters, 0, 0);
	return XDP_PASS;
}

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

/* Not a hook: tbctl runs it through BPF_PROG_TEST_RUN once an upgrade's
 * swap has settled (no CPU runs the older program any more), to move what
 * the older layout's maps still hold. Run again after a kill, it adds
 * nothing twice: everything it takes, it leaves moved or zero. */
SEC("xdp")
int tb_migrate(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *data_end = (void *)(long)ctx->data_end;
	struct tb_migrate_req *req = data;
	struct stats_to c;
	__u32 zero = 0, cpus;

	if ((void *)(req + 1) > data_end)
		return XDP_ABORTED;
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

/* One of the agent's operations on a key's credit (struct tb_fleet_opslot).
 * A grant over a lease that ran out first takes the old credit away: the
 * store has counted it as spent once the lease ended, and it must never
 * be spendable again. The credit is added before the lease is written, so
 * no packet spends new credit under an old lease, or old under a new. */
static long fleet_op(__u32 i, void *ctx)
{
	struct tb_fleet_opslot *o = bpf_map_lookup_elem(&fleetops, &i);
	struct tb_fleet_entry *e;

	if (!o)
		return 1;
	e = bpf_map_lookup_elem(&fleet, &o->k);
	o->done = e != 0;
	if (!e)
		return 0;
	if (o->op == TB_FLEET_TAKE) {
		o->amount = tb_credit_take(&e->credit);
	} else if (o->op == TB_FLEET_GRANT) {
		if (bpf_ktime_get_ns() >= READ_ONCE(e->expires_ns))
			tb_credit_take(&e->credit);
		__sync_fetch_and_add(&e->credit, o->amount);
		WRITE_ONCE(e->expires_ns, o->expires_ns);
	}
	return 0;
}

/* Not a hook: the fleet agent (user/agent.c) runs it through
 * BPF_PROG_TEST_RUN to grant credit and take it back, which must be atomic
 * against the datapath's spending. */
SEC("xdp")
int tb_fleet_apply(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *data_end = (void *)(long)ctx->data_end;
	struct tb_fleet_req *req = data;

	if ((void *)(req + 1) > data_end || req->n > TB_FLEET_OPS)
		return XDP_ABORTED;
	bpf_loop(req->n, fleet_op, 0, 0);
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
