/* SPDX-License-Identifier: GPL-2.0 */
/* Crafted frames for the parser and program tests: Ethernet, 0-2 VLAN tags,
 * IPv4 (with options, fragments), IPv6, ARP. */
#ifndef TB_TEST_PACKETS_H
#define TB_TEST_PACKETS_H

#include <arpa/inet.h>
#include <string.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>

/* A jumbo frame: a 9,000-byte MTU, two VLAN tags (more than one buffer). */
#define FRAME_MAX (14 + 2 * 4 + 9000)

struct frame {
	unsigned char b[FRAME_MAX];
	size_t len;
	size_t hdr_len;   /* Ethernet + tags + IP header: every shorter cut is malformed */
};

struct frame_opts {
	int vlans;            /* 0, 1 or 2 tags (outer 802.1ad when 2) */
	int ip_option_words;  /* IPv4: 32-bit option words, 0-10 */
	int fragment;         /* IPv4: set MF and an offset */
	size_t payload;
};

static inline size_t frame_l2(unsigned char *b, int vlans, __u16 proto)
{
	size_t off = 12;

	memset(b, 0, 12);
	b[0] = 0x02; b[5] = 0x02; b[6] = 0x02; b[11] = 0x01;
	for (int i = 0; i < vlans; i++) {
		__u16 tpid = htons(vlans == 2 && i == 0 ? ETH_P_8021AD : ETH_P_8021Q);
		__u16 tci = htons(100 + i);

		memcpy(b + off, &tpid, 2);
		memcpy(b + off + 2, &tci, 2);
		off += 4;
	}
	proto = htons(proto);
	memcpy(b + off, &proto, 2);
	return off + 2;
}

/* Fill in an IPv4 header's checksum; a valid header then sums to 0xffff. */
static inline __u16 ipv4_header_sum(const unsigned char *h)
{
	__u32 sum = 0;

	for (int i = 0; i < (h[0] & 0xf) * 4; i += 2)
		sum += h[i] << 8 | h[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum;
}

static inline void frame_ipv4_checksum(unsigned char *h)
{
	__u16 sum;

	h[10] = h[11] = 0;
	sum = ~ipv4_header_sum(h);
	h[10] = sum >> 8;
	h[11] = sum & 0xff;
}

static inline void frame_ipv4(struct frame *f, const char *src, const char *dst,
			      const struct frame_opts *o)
{
	size_t l3 = frame_l2(f->b, o->vlans, ETH_P_IP);
	struct iphdr *ip = (struct iphdr *)(f->b + l3);
	size_t hlen = 20 + 4 * o->ip_option_words;

	memset(ip, 0, hlen);
	ip->version = 4;
	ip->ihl = hlen / 4;
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	ip->tot_len = htons(hlen + o->payload);
	if (o->fragment)
		ip->frag_off = htons(0x2000 | 185);
	for (int i = 0; i < o->ip_option_words; i++)
		f->b[l3 + 20 + 4 * i] = 1;   /* NOP */
	inet_pton(AF_INET, src, &ip->saddr);
	inet_pton(AF_INET, dst, &ip->daddr);
	memset(f->b + l3 + hlen, 0xab, o->payload);
	f->hdr_len = l3 + hlen;
	f->len = l3 + hlen + o->payload;
}

static inline void frame_ipv6(struct frame *f, const char *src, const char *dst,
			      const struct frame_opts *o)
{
	size_t l3 = frame_l2(f->b, o->vlans, ETH_P_IPV6);
	struct ipv6hdr *ip6 = (struct ipv6hdr *)(f->b + l3);

	memset(ip6, 0, sizeof(*ip6));
	ip6->version = 6;
	ip6->nexthdr = IPPROTO_UDP;
	ip6->hop_limit = 64;
	ip6->payload_len = htons(o->payload);
	inet_pton(AF_INET6, src, &ip6->saddr);
	inet_pton(AF_INET6, dst, &ip6->daddr);
	memset(f->b + l3 + sizeof(*ip6), 0xab, o->payload);
	f->hdr_len = l3 + sizeof(*ip6);
	f->len = f->hdr_len + o->payload;
}

/* An ICMPv6 message of the given type and hop limit (133-137: ND). */
static inline void frame_icmp6(struct frame *f, const char *src, int type, int hop_limit)
{
	struct frame_opts o = { .payload = 24 };
	struct ipv6hdr *ip6 = (struct ipv6hdr *)(f->b + 14);

	frame_ipv6(f, src, "ff02::1", &o);
	ip6->nexthdr = IPPROTO_ICMPV6;
	ip6->hop_limit = hop_limit;
	f->b[14 + 40] = type;
}

static inline void frame_arp(struct frame *f)
{
	size_t l2 = frame_l2(f->b, 0, ETH_P_ARP);

	memset(f->b + l2, 0, 28);
	f->hdr_len = l2;
	f->len = l2 + 28;
}

/* Turn an IPv4 or IPv6 frame's payload into TCP: a 20-byte header. */
static inline void frame_tcp(struct frame *f, size_t l3, int ipv6)
{
	size_t l4 = l3 + (ipv6 ? 40 : 20);

	f->b[l3 + (ipv6 ? 6 : 9)] = IPPROTO_TCP;
	memset(f->b + l4, 0, 20);
	f->b[l4 + 12] = 5 << 4;
}

/* Write a TCP header's sequence number (big-endian, as sent) and its
 * flags byte at offset l4. */
static inline void frame_tcp_seq(struct frame *f, size_t l4, __u32 seq, __u8 flags)
{
	f->b[l4 + 4] = seq >> 24;
	f->b[l4 + 5] = seq >> 16;
	f->b[l4 + 6] = seq >> 8;
	f->b[l4 + 7] = seq;
	f->b[l4 + 13] = flags;
}

/* Write a transport header's ports at offset l4. */
static inline void frame_ports(struct frame *f, size_t l4, __u16 sport, __u16 dport)
{
	f->b[l4] = sport >> 8;
	f->b[l4 + 1] = sport & 0xff;
	f->b[l4 + 2] = dport >> 8;
	f->b[l4 + 3] = dport & 0xff;
}

/* An untagged IPv6 frame from src whose payload is n extension headers of
 * 8 bytes (hop-by-hop, then destination options), a fragment header where
 * frag >= 0 (its offset, in 8-byte units, with more fragments to come),
 * then proto's header, ports sport and dport first, and payload bytes
 * in all. Returns the transport header's offset. */
static inline size_t frame_ipv6_chain(struct frame *f, const char *src, int n, int frag, __u8 proto,
				      __u16 sport, __u16 dport, size_t payload)
{
	struct frame_opts o = { .payload = n * 8 + (frag >= 0 ? 8 : 0) + payload };
	size_t nh = 14 + 6, off = 14 + 40;

	frame_ipv6(f, src, "2001:db8::2", &o);
	for (int i = 0; i < n; i++) {
		f->b[nh] = i ? 60 : 0;
		memset(f->b + off, 0, 8);
		nh = off;
		off += 8;
	}
	if (frag >= 0) {
		f->b[nh] = 44;
		memset(f->b + off, 0, 8);
		f->b[off + 2] = (frag * 8) >> 8;
		f->b[off + 3] = ((frag * 8) & 0xf8) | 1;
		nh = off;
		off += 8;
	}
	f->b[nh] = proto;
	frame_ports(f, off, sport, dport);
	return off;
}

/* Make an untagged IPv4 frame a fragment of datagram id: the first (its
 * transport header, ports sport and dport, at offset 0, more to come) or
 * a later one (offset 1480, the last). */
static inline void frame_ipv4_fragment(struct frame *f, int first, __u16 id, __u16 sport, __u16 dport)
{
	unsigned char *ip = f->b + 14;

	ip[4] = id >> 8;
	ip[5] = id & 0xff;
	ip[6] = first ? 0x20 : 1480 / 8 >> 8;
	ip[7] = first ? 0 : 1480 / 8 & 0xff;
	if (first)
		frame_ports(f, f->hdr_len, sport, dport);
	else
		memset(f->b + f->hdr_len, 0xab, 4);
	frame_ipv4_checksum(ip);
}

/* Set the identification of the fragment header that frame_ipv6_chain
 * put right before the transport header at offset l4. */
static inline void frame_ipv6_frag_id(struct frame *f, size_t l4, __u32 id)
{
	id = htonl(id);
	memcpy(f->b + l4 - 4, &id, 4);
}

/* An untagged IPv6 frame from src whose payload is n extension headers,
 * of the types in kinds[] (hop-by-hop, routing and destination options of
 * 8 bytes, AH of 16, a fragment header that makes it the first fragment
 * of datagram 7), then proto's header, ports sport and dport first, and
 * payload bytes in all. Returns the transport header's offset. */
static inline size_t frame_ipv6_exts(struct frame *f, const char *src, const __u8 *kinds, int n, __u8 proto,
				     __u16 sport, __u16 dport, size_t payload)
{
	struct frame_opts o = { .payload = payload };
	size_t nh = 14 + 6, off = 14 + 40;

	for (int i = 0; i < n; i++)
		o.payload += kinds[i] == 51 ? 16 : 8;
	frame_ipv6(f, src, "2001:db8::2", &o);
	for (int i = 0; i < n; i++) {
		size_t len = kinds[i] == 51 ? 16 : 8;

		f->b[nh] = kinds[i];
		memset(f->b + off, 0, len);
		if (kinds[i] == 51)
			f->b[off + 1] = 2;
		if (kinds[i] == 44) {
			f->b[off + 3] = 1;
			f->b[off + 7] = 7;
		}
		nh = off;
		off += len;
	}
	f->b[nh] = proto;
	frame_ports(f, off, sport, dport);
	return off;
}

/* Set the ECN field (TOS or traffic class, low two bits) of an untagged
 * frame, with a valid IPv4 header checksum. */
static inline void frame_ecn(struct frame *f, int ipv6, int ecn)
{
	unsigned char *h = f->b + 14;

	if (ipv6) {
		h[1] = (h[1] & 0xcf) | ecn << 4;
		return;
	}
	h[1] = (h[1] & 0xfc) | ecn;
	frame_ipv4_checksum(h);
}

/* A frame whose IPv4 payload makes the whole frame exactly len bytes. */
static inline void frame_ipv4_len(struct frame *f, const char *src, size_t len)
{
	struct frame_opts o = { .payload = len - 14 - 20 };

	frame_ipv4(f, src, "198.19.0.1", &o);
}

static inline void frame_ipv6_len(struct frame *f, const char *src, size_t len)
{
	struct frame_opts o = { .payload = len - 14 - 40 };

	frame_ipv6(f, src, "2001:db8:ffff::1", &o);
}

#endif
