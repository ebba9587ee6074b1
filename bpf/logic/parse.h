/* SPDX-License-Identifier: GPL-2.0 */
/* Packet classification: Ethernet, up to two VLAN tags (802.1Q, 802.1ad),
 * IPv4 or IPv6, to the address a packet is charged to. Pure bounds-checked
 * reads between data and data_end, so it runs in the datapath (where the
 * verifier proves every read) and in host unit tests alike. */
#ifndef TB_PARSE_H
#define TB_PARSE_H

#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include "logic/match.h"
#include "logic/hold.h"

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

enum tb_class {
	TB_CLASS_IPV4,
	TB_CLASS_IPV6,
	TB_CLASS_NONIP,      /* ARP, LLDP, ...: not ours to police */
	TB_CLASS_ND,         /* IPv6 neighbour discovery: IPv6's ARP, likewise */
	TB_CLASS_MALFORMED,  /* truncated or inconsistent IP header */
};

struct vlan_tag {
	__be16 tci;
	__be16 proto;
};

enum tb_frag {
	TB_FRAG_NONE,
	TB_FRAG_FIRST,  /* offset 0, more to come: it carries the transport header */
	TB_FRAG_LATER,  /* any other offset: no transport header */
};

/* What the policy needs of a packet besides its class. */
struct tb_pkt {
	struct tb_addr key;
	__u16 l3;       /* offset of the IP header */
	__u16 l4;       /* offset past the IP header (IPv6: its fixed header) */
	__u8 proto;     /* IPv4 protocol, IPv6 next header */
	__u8 ecn;       /* the ECN field: TOS or traffic class & 3 */
	/* enum tb_frag, and what every fragment of one datagram repeats
	 * besides its addresses: the protocol (IPv6: the fragment header's
	 * next header) and the identification, as on the wire. IPv4's are
	 * set by tb_parse, IPv6's by tb_l4, which walks to the fragment
	 * header. */
	__u8 frag;
	__u8 frag_proto;
	__u32 frag_id;
};

/* Largest offsets the parser produces: Ethernet and two tags, then an IPv4
 * header with options. Checked again before use as packet offsets, so the
 * verifier knows their bounds. */
#define TB_L3_MAX (14 + 2 * 4)
#define TB_L4_MAX (TB_L3_MAX + 60)

/* ECN codepoints (RFC 3168). */
#define TB_ECN_NOT_ECT 0
#define TB_ECN_CE 3

/* IPv4-mapped prefix ::ffff:0:0/96, third word. */
#define TB_V4MAPPED_W2 tb_htonl(0x0000ffff)

/* The frame's network header, past the Ethernet header and up to two
 * VLAN tags; 0 when the frame ends first. Its ethertype is the 16 bits
 * right before it (tb_ethertype). */
static __always_inline void *tb_ip_header(void *data, const void *data_end)
{
	struct ethhdr *eth = data;
	void *cur = eth + 1;
	__u16 proto;

	if (cur > data_end)
		return 0;
	proto = eth->h_proto;
	for (int i = 0; i < 2; i++) {
		struct vlan_tag *vt = cur;

		if (proto != tb_htons(ETH_P_8021Q) && proto != tb_htons(ETH_P_8021AD))
			break;
		if ((void *)(vt + 1) > data_end)
			return 0;
		proto = vt->proto;
		cur = vt + 1;
	}
	return cur;
}

static __always_inline __u16 tb_ethertype(const void *l3)
{
	return ((const __u16 *)l3)[-1];
}

/* What an IPv4 header says of its datagram's fragments: more to come,
 * or an offset, make a fragment. */
static __always_inline void tb_ipv4_fragment(const struct iphdr *ip, struct tb_pkt *pkt)
{
	pkt->frag = !(ip->frag_off & tb_htons(0x3fff)) ? TB_FRAG_NONE :
		    ip->frag_off & tb_htons(0x1fff) ? TB_FRAG_LATER : TB_FRAG_FIRST;
	pkt->frag_proto = ip->protocol;
	pkt->frag_id = ip->id;
}

static __always_inline int tb_parse(const void *data, const void *data_end,
				    int use_dst, struct tb_pkt *pkt)
{
	struct tb_addr *key = &pkt->key;
	const void *cur = tb_ip_header((void *)data, data_end);
	__u16 proto;

	if (!cur)
		return TB_CLASS_MALFORMED;
	proto = tb_ethertype(cur);

	if (proto == tb_htons(ETH_P_IP)) {
		const struct iphdr *ip = cur;
		__u32 hlen;

		if ((const void *)(ip + 1) > data_end)
			return TB_CLASS_MALFORMED;
		hlen = ip->ihl * 4;
		if (ip->version != 4 || hlen < sizeof(*ip) ||
		    tb_htons(ip->tot_len) < hlen)
			return TB_CLASS_MALFORMED;
		if ((const char *)cur + hlen > (const char *)data_end)
			return TB_CLASS_MALFORMED;
		pkt->l3 = (const char *)cur - (const char *)data;
		pkt->l4 = pkt->l3 + hlen;
		pkt->proto = ip->protocol;
		pkt->ecn = ip->tos & 3;
		tb_ipv4_fragment(ip, pkt);
		key->w[0] = 0;
		key->w[1] = 0;
		key->w[2] = TB_V4MAPPED_W2;
		key->w[3] = use_dst ? ip->daddr : ip->saddr;
		return TB_CLASS_IPV4;
	}
	if (proto == tb_htons(ETH_P_IPV6)) {
		const struct ipv6hdr *ip6 = cur;
		const struct in6_addr *a;

		if ((const void *)(ip6 + 1) > data_end)
			return TB_CLASS_MALFORMED;
		if (ip6->version != 6)
			return TB_CLASS_MALFORMED;
		pkt->l3 = (const char *)cur - (const char *)data;
		pkt->l4 = pkt->l3 + sizeof(*ip6);
		pkt->proto = ip6->nexthdr;
		pkt->ecn = (ip6->flow_lbl[0] >> 4) & 3;
		a = use_dst ? &ip6->daddr : &ip6->saddr;
		key->w[0] = a->in6_u.u6_addr32[0];
		key->w[1] = a->in6_u.u6_addr32[1];
		key->w[2] = a->in6_u.u6_addr32[2];
		key->w[3] = a->in6_u.u6_addr32[3];
		/* An IPv4-mapped address never appears on the wire (RFC 4291);
		 * accepting it would let IPv6 packets spend IPv4 buckets. */
		if (key->w[0] == 0 && key->w[1] == 0 && key->w[2] == TB_V4MAPPED_W2)
			return TB_CLASS_MALFORMED;
		/* Router/neighbour solicitations and adverts (ICMPv6 133-137)
		 * pass like ARP does: dropping them for a host over its limit
		 * would break its address resolution, and costs far more than
		 * its excess. Hop limit 255 proves they were not forwarded
		 * (RFC 4861), so only on-link hosts can send them. */
		if (ip6->nexthdr == TB_PROTO_ICMPV6 && ip6->hop_limit == 255) {
			const __u8 *type = (const __u8 *)(ip6 + 1);

			if ((const void *)(type + 1) <= data_end && *type >= 133 && *type <= 137)
				return TB_CLASS_ND;
		}
		/* ::/32 is nobody's to charge: the unspecified address ::,
		 * a source only before a host has an address (RFC 4291,
		 * 2.5.2), as its duplicate-address probe, which passes above;
		 * the loopback, never on a wire; the rest reserved. Key 0
		 * marks a free way of the table, and the rest of ::/32 keys
		 * per-/LEN buckets (group.h). */
		if (!key->w[0])
			return TB_CLASS_MALFORMED;
		return TB_CLASS_IPV6;
	}
	return TB_CLASS_NONIP;
}

/* tb_l4's answer for a whole frame that ends inside a header it reads. */
#define TB_L4_MALFORMED (~0ULL)

/* The walk to IPv6's transport header stops past TB_L4_WALK_MAX bytes
 * as it does past TB_EXT_MAX extension headers (tb_abi.h); the tc hook
 * pulls in as much as that walk may read (TB_CHAIN_DEPTH). */
#define TB_L4_WALK_MAX 512
#define TB_CHAIN_DEPTH (TB_L4_WALK_MAX + 8)

#define TB_EXT_HOP 0
#define TB_EXT_ROUTING 43
#define TB_EXT_FRAGMENT 44
#define TB_EXT_AH 51
#define TB_EXT_DSTOPTS 60

static __always_inline int tb_ext_header(__u8 proto)
{
	return proto == TB_EXT_HOP || proto == TB_EXT_ROUTING || proto == TB_EXT_FRAGMENT || proto == TB_EXT_AH ||
	       proto == TB_EXT_DSTOPTS;
}

/* Whether the frame is IPv6 with an extension header after the fixed
 * one: its transport header may lie further in than a short pull. */
static __always_inline int tb_chain_follows(void *data, const void *data_end)
{
	const struct ipv6hdr *ip6 = tb_ip_header(data, data_end);

	return ip6 && tb_ethertype(ip6) == tb_htons(ETH_P_IPV6) && (const void *)(ip6 + 1) <= data_end &&
	       tb_ext_header(ip6->nexthdr);
}

/* How far the walk along an IPv6 header chain got (tb_l4). */
enum tb_walk {
	TB_WALK_ON,
	TB_WALK_FAR,    /* past TB_L4_WALK_MAX bytes, or past what the hook sees */
	TB_WALK_CUT,    /* the frame ends inside a header */
	TB_WALK_LATER,  /* at a later fragment's header: what follows is no header */
};

/* One step along pkt's IPv6 chain from the header of type *proto at
 * offset *off: its fragment header read into pkt. */
static __always_inline int tb_ext_step(const void *data, const void *data_end, struct tb_pkt *pkt,
				       __u32 *off, __u8 *proto)
{
	const __u8 *p = (const __u8 *)data + *off;

	if (*off > TB_L4_WALK_MAX)
		return TB_WALK_FAR;
	if ((const void *)(p + 8) > data_end)
		return TB_WALK_CUT;
	if (*proto == TB_EXT_FRAGMENT) {
		__u16 fo = p[2] << 8 | p[3];

		pkt->frag_proto = p[0];
		pkt->frag_id = *(const __u32 *)(p + 4);
		/* Offset 0 without more to come is an atomic fragment, a
		 * whole datagram (RFC 6946). */
		pkt->frag = fo & 0xfff8 ? TB_FRAG_LATER : fo & 1 ? TB_FRAG_FIRST : TB_FRAG_NONE;
		*off += 8;
		*proto = p[0];
		return pkt->frag == TB_FRAG_LATER ? TB_WALK_LATER : TB_WALK_ON;
	}
	*off += *proto == TB_EXT_AH ? (p[1] + 2) * 4 : (p[1] + 1) * 8;
	*proto = p[0];
	return TB_WALK_ON;
}

/* The transport of a packet that tb_parse classified cls (IPv4 or IPv6),
 * whole where the hook sees all of the frame. What cannot be read is
 * said to be unknown (match.h, TB_L4_UNKNOWN), never left out, so that
 * no sender can choose to hide it from a rule: the ports of a fragment
 * after the first (the caller may know them from its first, fragment.h),
 * the protocol past an IPv6 chain longer than the walk, and what lies
 * past the frame where it is not whole. A whole frame that ends inside a
 * header the walk reads is malformed. */
static __always_inline __u64 tb_l4(const void *data, const void *data_end, struct tb_pkt *pkt, int cls,
				   int whole)
{
	__u32 off = pkt->l4;
	__u8 proto = pkt->proto;
	const __u8 *p;
	__u64 l4;

	if (cls == TB_CLASS_IPV6) {
		/* Unrolled, and so with no exit but its end: clang lays a
		 * loop out with its back edge as a fall-through, which Debian
		 * 6.1's verifier refuses. */
		int walk = TB_WALK_ON;

#ifdef __clang__
#pragma unroll
#endif
		for (int i = 0; i < TB_EXT_MAX; i++) {
			if (walk == TB_WALK_ON && tb_ext_header(proto))
				walk = tb_ext_step(data, data_end, pkt, &off, &proto);
		}
		if (walk == TB_WALK_CUT)
			return whole ? TB_L4_MALFORMED : tb_l4_unknown(0);
		if (walk == TB_WALK_FAR || tb_ext_header(proto))
			return tb_l4_unknown(0);
	}
	if (!TB_MATCH_PORT_PROTO(proto) && !TB_MATCH_TYPE_PROTO(proto))
		return tb_l4_word(proto, 0, 0, 0);
	if (pkt->frag == TB_FRAG_LATER || off > TB_L4_WALK_MAX)
		return tb_l4_unknown(proto);
	p = (const __u8 *)data + off;
	/* ICMP's type and code are its first two bytes, which match.h reads
	 * as ports; TCP's flags its 14th. */
	if (TB_MATCH_TYPE_PROTO(proto)) {
		if ((const void *)(p + 2) > data_end)
			return whole ? TB_L4_MALFORMED : tb_l4_unknown(proto);
		return tb_l4_word(proto, 1, p[0], p[1]);
	}
	if ((const void *)(p + 4) > data_end)
		return whole ? TB_L4_MALFORMED : tb_l4_unknown(proto);
	/* Both ports in one load: source then destination, big-endian, so
	 * that in host order they sit where tb_l4_word puts them, 16 bits
	 * up. Unaligned, which the verifier allows for packet reads on x86. */
	l4 = proto | TB_L4_PORTS | (__u64)tb_htonl(*(const __u32 *)p) << 16;
	if (proto != TB_PROTO_TCP)
		return l4;
	if ((const void *)(p + 14) > data_end)
		return whole ? TB_L4_MALFORMED : tb_l4_unknown(proto);
	return l4 | (__u64)p[13] << TB_L4_FLAGS_SHIFT;
}

/* Length of every header a segment of this packet carries (link, IP,
 * TCP or UDP): what GSO repeats in front of each segment. 0 when the
 * transport header is not one of those, or not in [data, data_end). */
static __always_inline __u32 tb_headers_len(const void *data, const void *data_end,
					    const struct tb_pkt *pkt)
{
	const __u8 *l4;

	if (pkt->l4 > TB_L4_MAX)
		return 0;
	l4 = (const __u8 *)data + pkt->l4;
	if (pkt->proto == TB_PROTO_UDP)
		return (const void *)(l4 + 8) <= data_end ? pkt->l4 + 8u : 0;
	if (pkt->proto != TB_PROTO_TCP || (const void *)(l4 + 13) > data_end)
		return 0;
	/* TCP data offset: the high nibble of byte 12, in 32-bit words. */
	return pkt->l4 + (l4[12] >> 4) * 4u;
}

/* What the early signal's memory (hold.h) reads of a TCP segment: its
 * sequence number into *seq, and TB_TCP_* flags; 0 for anything else. A
 * segment behind IPv6 extension headers, or in a later fragment, counts
 * as not TCP: the round trip is learnt from the segments that are. */
static __always_inline __u8 tb_tcp_segment(const void *data, const void *data_end,
					   const struct tb_pkt *pkt, __u32 *seq)
{
	const __u8 *th;

	if (pkt->proto != TB_PROTO_TCP || pkt->frag == TB_FRAG_LATER || pkt->l4 > TB_L4_MAX)
		return 0;
	th = (const __u8 *)data + pkt->l4;
	if ((const void *)(th + 14) > data_end)
		return 0;
	*seq = *(const __u32 *)(th + 4);
	/* CWR: the top bit of the flags byte (RFC 3168, 6.1.2). */
	return TB_TCP_SEGMENT | (th[13] & 0x80 ? TB_TCP_CWR : 0);
}

/* Segments of an aggregate seen as one frame of len bytes with no count
 * (generic XDP runs after GRO, and a veth hands on the sender's TSO
 * packet whole): the payload past the hdrs bytes of headers that each
 * segment repeats, cut at what the device's L3 mtu leaves for it. Exact
 * when the sender's segments filled that MTU, as TCP's do; fewer when
 * they were smaller. 1 for an IP packet the MTU allows (l3: its offset),
 * or with no known transport header. */
static __always_inline __u32 tb_gso_segs(__u64 len, __u32 l3, __u32 hdrs, __u32 mtu)
{
	__u64 mss;

	if (!hdrs || len <= (__u64)l3 + mtu || (__u64)l3 + mtu <= hdrs)
		return 1;
	mss = (__u64)l3 + mtu - hdrs;
	return (len - hdrs + mss - 1) / mss;
}

#endif
