/* SPDX-License-Identifier: GPL-2.0 */
/* Entry points: one policing core (policy.h) behind XDP and tc. */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include "ecn.h"
#include "policy.h"

/* Deepest header the policy reads: Ethernet, two VLAN tags, IPv4 with
 * options, TCP with options (for the headers GSO segments repeat). */
#define TB_PARSE_DEPTH (TB_L4_MAX + 60)

/* Cost is the frame as XDP sees it: Ethernet header and payload, no FCS. */
SEC("xdp")
int tb_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct tb_pkt pkt = {};
	__u64 depart = 0;
	__u16 delta;
	int cls, v;

	v = tb_police(data, data_end, data_end - data, 1, 0, &pkt, &cls, &depart);
	if (v == TB_MARK)
		tb_ecn_set_ce(data, data_end, &pkt, cls, &delta);
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
	v = tb_police(data, data_end, skb->len, skb->gso_segs, tb_egress, &pkt, &cls, &depart);
	if (v == TB_DROP)
		return TC_ACT_SHOT;
	if (v == TB_MARK && tb_ecn_set_ce(data, data_end, &pkt, cls, &delta) && delta)
		bpf_csum_update(skb, delta);
	if (depart > skb->tstamp)
		skb->tstamp = depart;
	/* Anything but TC_ACT_SHOT lets other classifiers on the hook run. */
	return TC_ACT_UNSPEC;
}

struct bpf_map;

static long zero_counters(struct bpf_map *map, const struct tb_addr *key, struct tb_bucket *b,
			  void *ctx)
{
	__u32 stripe = tb_lock_index(key);
	struct tb_lock *lk = bpf_map_lookup_elem(&locks, &stripe);

	if (lk) {
		bpf_spin_lock(&lk->lock);
		__builtin_memset(&b->c, 0, sizeof(b->c));
		bpf_spin_unlock(&lk->lock);
	}
	return 0;
}

/* Not a hook: tbctl runs it through BPF_PROG_TEST_RUN for "reset counters".
 * It zeroes every bucket's counters in place under the lock the datapath
 * takes, so neither a charge in flight nor a bucket's level is lost, as
 * they would be if user space rewrote the elements. */
SEC("xdp")
int tb_reset_counters(struct xdp_md *ctx)
{
	bpf_for_each_map_elem(&buckets, zero_counters, 0, 0);
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
