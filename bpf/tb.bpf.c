/* SPDX-License-Identifier: GPL-2.0 */
/* Entry points: one policing core (stages/policy.h) behind XDP and tc,
 * and the control programs tbctl runs through BPF_PROG_TEST_RUN, each
 * with its request as the packet (control/). */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include "logic/tos.h"
#include "stages/policy.h"
#include "control/fleet_apply.h"
#include "control/merge.h"
#include "control/reset.h"

/* Deepest header the policy reads: Ethernet, two VLAN tags, IPv4 with
 * options, TCP with options (for the headers GSO segments repeat). */
#define TB_PARSE_DEPTH (TB_L4_MAX + 60)

/* Longest frame of a 1500-byte MTU (two VLAN tags): only a longer one
 * asks for the device's MTU, so the common frame calls no helper. */
#define TB_STD_FRAME (14 + 2 * 4 + 1500)

/* Set by tbctl where the kernel has multi-buffer XDP (5.18): the program
 * is then loaded with BPF_F_XDP_HAS_FRAGS (user/lib/hook.c), so that it attaches to
 * a device whose MTU takes frames of more than one buffer (a jumbo MTU
 * on most drivers), and a frame is charged all its buffers, not the first
 * one that the parser reads. Elsewhere the helper's branch is dead code,
 * which the verifier never looks at. */
const volatile __u8 tb_xdp_frags = 0;

/* The class rewrite a verdict asks for (tos.h): CE on TB_MARK, the DSCP
 * on TB_REMARK. Global, so that the verifier checks it once rather than
 * after every path of the policy, each of which reaches the hook's end in
 * a state of its own. */
__attribute__((noinline)) int tb_rewrite_xdp(struct xdp_md *ctx, int v, int dscp)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u16 delta;

	if (v == TB_MARK)
		return tb_ecn_set_ce(data, data_end, &delta);
	return tb_dscp_set(data, data_end, dscp, &delta);
}

/* The same on tc, where an IPv6 receive checksum follows the change. */
__attribute__((noinline)) int tb_rewrite_tc(struct __sk_buff *skb, int v, int dscp)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	__u16 delta;
	int changed = v == TB_MARK ? tb_ecn_set_ce(data, data_end, &delta) : tb_dscp_set(data, data_end, dscp, &delta);

	if (changed && delta)
		bpf_csum_update(skb, delta);
	return changed;
}

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
	__u8 dscp;
	int cls, v;

	if (len > TB_STD_FRAME)
		bpf_check_mtu(ctx, 0, &mtu, 0, 0);
	v = tb_police(data, data_end, len, 0, mtu, 0, &pkt, &cls, &depart, &dscp);
	if (v == TB_MARK || v == TB_REMARK)
		tb_rewrite_xdp(ctx, v, dscp);
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
	__u8 dscp;

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
	v = tb_police(data, data_end, skb->len, skb->gso_segs, 0, tb_egress, &pkt, &cls, &depart, &dscp);
	if (v == TB_DROP)
		return TC_ACT_SHOT;
	if (v == TB_MARK || v == TB_REMARK)
		tb_rewrite_tc(skb, v, dscp);
	if (depart > skb->tstamp)
		skb->tstamp = depart;
	/* Anything but TC_ACT_SHOT lets other classifiers on the hook run. */
	return TC_ACT_UNSPEC;
}

/* The request a control program was run with, or NULL when the packet
 * is too short to hold one. */
#define TB_REQUEST(ctx, type)                                                                      \
	({                                                                                         \
		type *r_ = (void *)(long)(ctx)->data;                                              \
		(void *)(r_ + 1) > (void *)(long)(ctx)->data_end ? NULL : r_;                      \
	})

SEC("xdp")
int tb_reset_counters(struct xdp_md *ctx)
{
	struct tb_reset_req *req = TB_REQUEST(ctx, struct tb_reset_req);

	return req ? tb_reset_run(req) : XDP_ABORTED;
}

SEC("xdp")
int tb_migrate(struct xdp_md *ctx)
{
	struct tb_migrate_req *req = TB_REQUEST(ctx, struct tb_migrate_req);

	return req ? tb_migrate_run(req) : XDP_ABORTED;
}

SEC("xdp")
int tb_fleet_apply(struct xdp_md *ctx)
{
	struct tb_fleet_req *req = TB_REQUEST(ctx, struct tb_fleet_req);

	return req ? tb_fleet_apply_run(req) : XDP_ABORTED;
}

char LICENSE[] SEC("license") = "GPL";
