// SPDX-License-Identifier: GPL-2.0
/* Another tool's program on a tc hook, as Cilium's are, for the tests of
 * tbctl among others on a tcx hook: it counts the IPv4 UDP packets it
 * sees, and gives every packet one verdict, TCX_NEXT (the programs after
 * it run) or TCX_PASS (the hook ends with it). */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

const volatile int verdict = TC_ACT_UNSPEC;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} seen SEC(".maps");

SEC("tc")
int peer(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	__u32 zero = 0;
	__u64 *n;

	if ((void *)(ip + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP) || ip->protocol != IPPROTO_UDP)
		return verdict;
	n = bpf_map_lookup_elem(&seen, &zero);
	if (n)
		__sync_fetch_and_add(n, 1);
	return verdict;
}

char LICENSE[] SEC("license") = "GPL";
