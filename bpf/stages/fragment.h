/* SPDX-License-Identifier: GPL-2.0 */
/* Fragments charged to the rule of their datagram: a first fragment's
 * transport (its ports) is kept in fragments[], keyed by what every
 * fragment of the datagram repeats, and a later fragment, which carries
 * no ports, takes it from there. One whose first was not seen keeps its
 * ports unknown: where a rule with ports could take it, the policy drops
 * it (policy.h), as a receiver could never reassemble its datagram
 * anyway. Only where some rule reads ports. */
#ifndef TB_FRAGMENT_H
#define TB_FRAGMENT_H

#include "stages/maps.h"
#include "logic/parse.h"

/* The datagram of pkt, a fragment, into k: its addresses, from the IP
 * header tb_parse found. 0 where that header is not in [data, data_end),
 * which tb_parse has already made sure it is. */
static __always_inline int tb_fragment_key(const void *data, const void *data_end, const struct tb_pkt *pkt,
					   int cls, struct tb_frag_key *k)
{
	const __u8 *ip;

	if (pkt->l3 > TB_L3_MAX)
		return 0;
	ip = (const __u8 *)data + pkt->l3;
	if (cls == TB_CLASS_IPV4) {
		if ((const void *)(ip + sizeof(struct iphdr)) > data_end)
			return 0;
		k->src.w[2] = TB_V4MAPPED_W2;
		k->src.w[3] = ((const struct iphdr *)ip)->saddr;
		k->dst.w[2] = TB_V4MAPPED_W2;
		k->dst.w[3] = ((const struct iphdr *)ip)->daddr;
	} else {
		if ((const void *)(ip + sizeof(struct ipv6hdr)) > data_end)
			return 0;
		__builtin_memcpy(&k->src, &((const struct ipv6hdr *)ip)->saddr, sizeof(k->src));
		__builtin_memcpy(&k->dst, &((const struct ipv6hdr *)ip)->daddr, sizeof(k->dst));
	}
	k->id = pkt->frag_id;
	k->proto = pkt->frag_proto;
	return 1;
}

/* The transport a fragment is charged by, where tb_l4 read l4 of it: a
 * first fragment's own, kept for the later ones; a later fragment's
 * first's, where it was seen. The map publishes an element whole (an
 * update links a new element after filling it), so another CPU reads a
 * first's word whole or not at all. */
static __always_inline __u64 tb_fragment_l4(const void *data, const void *data_end, const struct tb_pkt *pkt,
					    int cls, __u64 l4)
{
	struct tb_frag_key k = {};
	__u64 *first;

	if (!tb_fragment_key(data, data_end, pkt, cls, &k))
		return l4;
	if (pkt->frag == TB_FRAG_FIRST) {
		if (l4 & TB_L4_PORTS)
			bpf_map_update_elem(&fragments, &k, &l4, BPF_ANY);
		return l4;
	}
	first = bpf_map_lookup_elem(&fragments, &k);
	return first ? *first : l4;
}

#endif
