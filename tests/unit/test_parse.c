// SPDX-License-Identifier: GPL-2.0
/* parse.h on crafted frames, on the host. */
#include "logic/parse.h"
#include "../packets.h"
#include "../check.h"

static int classify(const struct frame *f, size_t len, int dst, struct tb_addr *a)
{
	struct tb_pkt pkt = {};
	int cls = tb_parse(f->b, f->b + len, dst, &pkt);

	*a = pkt.key;
	return cls;
}

static void ipv4_keys_source_and_destination(void)
{
	struct frame_opts o = { .payload = 100 };
	struct frame f;
	struct tb_addr a = {};
	__u32 want;

	frame_ipv4(&f, "198.18.1.2", "198.19.3.4", &o);
	CHECK_EQ(classify(&f, f.len, 0, &a), TB_CLASS_IPV4, "class");
	inet_pton(AF_INET, "198.18.1.2", &want);
	CHECK(a.w[0] == 0 && a.w[1] == 0 && a.w[2] == htonl(0xffff) && a.w[3] == want,
	      "source key is ::ffff:198.18.1.2");
	classify(&f, f.len, 1, &a);
	inet_pton(AF_INET, "198.19.3.4", &want);
	CHECK(a.w[3] == want, "destination key is 198.19.3.4");
}

static void ipv6_keys_all_128_bits(void)
{
	struct frame_opts o = { .payload = 10 };
	struct frame f;
	struct tb_addr a = {}, want;

	frame_ipv6(&f, "2001:db8:1:2:3:4:5:6", "2001:db8::9", &o);
	CHECK_EQ(classify(&f, f.len, 0, &a), TB_CLASS_IPV6, "class");
	inet_pton(AF_INET6, "2001:db8:1:2:3:4:5:6", want.w);
	CHECK(!memcmp(&a, &want, sizeof(a)), "source key is the full address");
	frame_ipv6(&f, "::ffff:198.18.0.1", "2001:db8::9", &o);
	CHECK_EQ(classify(&f, f.len, 0, &a), TB_CLASS_MALFORMED,
		 "IPv4-mapped IPv6 source cannot alias an IPv4 bucket");
	/* :: is nobody's address, and key 0 marks a free way of the table. */
	frame_ipv6(&f, "::", "2001:db8::9", &o);
	CHECK_EQ(classify(&f, f.len, 0, &a), TB_CLASS_MALFORMED, "source :: is charged to no bucket");
	frame_ipv6(&f, "2001:db8::9", "::", &o);
	CHECK_EQ(classify(&f, f.len, 1, &a), TB_CLASS_MALFORMED, "nor destination :: (key dst)");
	CHECK_EQ(classify(&f, f.len, 0, &a), TB_CLASS_IPV6, "its source is charged");
	frame_icmp6(&f, "::", 135, 255);
	CHECK_EQ(classify(&f, f.len, 0, &a), TB_CLASS_ND, "a duplicate-address probe from :: passes as ND");
	/* The rest of ::/32 is no host's either, and keys per-/LEN groups. */
	frame_ipv6(&f, "::1", "2001:db8::9", &o);
	CHECK_EQ(classify(&f, f.len, 0, &a), TB_CLASS_MALFORMED, "source ::1");
	frame_ipv6(&f, "0:0:6040:0:0:0:c612:507", "2001:db8::9", &o);
	CHECK_EQ(classify(&f, f.len, 0, &a), TB_CLASS_MALFORMED, "source 0:0:6040::c612:507, a group's key");
	frame_ipv6(&f, "0:1::1", "2001:db8::9", &o);
	CHECK_EQ(classify(&f, f.len, 0, &a), TB_CLASS_IPV6, "0:1::1, outside ::/32, is charged");
}

static void vlan_tags_and_truncations(void)
{
	for (int vlans = 0; vlans <= 2; vlans++) {
		for (int fam = 4; fam <= 6; fam += 2) {
			struct frame_opts o = { .vlans = vlans, .payload = 8 };
			struct frame f;
			struct tb_addr a = {};
			int want = fam == 4 ? TB_CLASS_IPV4 : TB_CLASS_IPV6;

			if (fam == 4)
				frame_ipv4(&f, "198.18.0.1", "198.19.0.1", &o);
			else
				frame_ipv6(&f, "2001:db8::1", "2001:db8::2", &o);
			CHECK(classify(&f, f.len, 0, &a) == want, "%d tags, IPv%d: classified", vlans, fam);
			CHECK(classify(&f, f.hdr_len, 0, &a) == want,
			      "%d tags, IPv%d: headers only", vlans, fam);
			for (size_t cut = 0; cut < f.hdr_len; cut++)
				CHECK(classify(&f, cut, 0, &a) == TB_CLASS_MALFORMED,
				      "%d tags, IPv%d cut at %zu: expected malformed", vlans, fam, cut);
		}
	}
}

static void ipv4_options_fragments_and_bad_headers(void)
{
	struct frame_opts o = { .ip_option_words = 10, .payload = 20 };
	struct frame f;
	struct tb_addr a = {};

	frame_ipv4(&f, "198.18.0.7", "198.19.0.1", &o);
	CHECK_EQ(classify(&f, f.len, 0, &a), TB_CLASS_IPV4, "60-byte IPv4 header");
	CHECK_EQ(classify(&f, f.hdr_len - 1, 0, &a), TB_CLASS_MALFORMED, "options cut short");
	o = (struct frame_opts){ .fragment = 1, .payload = 20 };
	frame_ipv4(&f, "198.18.0.7", "198.19.0.1", &o);
	CHECK_EQ(classify(&f, f.len, 0, &a), TB_CLASS_IPV4, "a fragment is charged like any packet");
	f.b[14] = 0x44;   /* IHL 4 */
	CHECK_EQ(classify(&f, f.len, 0, &a), TB_CLASS_MALFORMED, "IHL below 5");
	f.b[14] = 0x65;   /* version 6 in an IPv4 ethertype */
	CHECK_EQ(classify(&f, f.len, 0, &a), TB_CLASS_MALFORMED, "wrong IP version");
	frame_ipv4(&f, "198.18.0.7", "198.19.0.1", &o);
	f.b[16] = 0;
	f.b[17] = 10;     /* total length shorter than the header */
	CHECK_EQ(classify(&f, f.len, 0, &a), TB_CLASS_MALFORMED, "total length < header length");
}

static void non_ip_passes(void)
{
	struct frame f;
	struct tb_addr a = {};

	frame_arp(&f);
	CHECK_EQ(classify(&f, f.len, 0, &a), TB_CLASS_NONIP, "ARP");
	frame_l2(f.b, 0, 0x88cc);
	CHECK_EQ(classify(&f, 60, 0, &a), TB_CLASS_NONIP, "LLDP");
}

static void neighbour_discovery_is_exempt(void)
{
	struct frame f;
	struct tb_addr a = {};

	for (int type = 133; type <= 137; type++) {
		frame_icmp6(&f, "2001:db8::5", type, 255);
		CHECK(classify(&f, f.len, 0, &a) == TB_CLASS_ND, "ICMPv6 type %d, hop limit 255", type);
	}
	frame_icmp6(&f, "2001:db8::5", 135, 64);
	CHECK_EQ(classify(&f, f.len, 0, &a), TB_CLASS_IPV6, "a forwarded (hop limit 64) solicitation is charged");
	frame_icmp6(&f, "2001:db8::5", 128, 255);
	CHECK_EQ(classify(&f, f.len, 0, &a), TB_CLASS_IPV6, "echo request is charged");
	frame_icmp6(&f, "2001:db8::5", 135, 255);
	CHECK_EQ(classify(&f, 14 + 40, 0, &a), TB_CLASS_IPV6, "ICMPv6 without its type byte is charged");
}

/* An aggregate counted from the MTU: a TCP segment with timestamps has 66
 * bytes of headers on an untagged frame, leaving 1448 of a 1500 MTU. */
static void aggregates_are_counted_from_the_mtu(void)
{
	struct frame_opts o = { .payload = 32 };
	struct tb_pkt pkt = {};
	struct frame f;

	CHECK_EQ(tb_gso_segs(66 + 1448, 14, 66, 1500), 1, "a full frame is one segment");
	CHECK_EQ(tb_gso_segs(66 + 1449, 14, 66, 1500), 2, "one byte more: two");
	CHECK_EQ(tb_gso_segs(66 + 44 * 1448, 14, 66, 1500), 44, "a 64 KB TSO train of full segments");
	CHECK_EQ(tb_gso_segs(66 + 43 * 1448 + 1, 14, 66, 1500), 44, "its last segment short");
	CHECK_EQ(tb_gso_segs(70 + 3 * 1448, 18, 70, 1500), 3, "one VLAN tag: the same MSS");
	CHECK_EQ(tb_gso_segs(86 + 5 * 1428, 14, 86, 1500), 5, "IPv6: 1428 bytes a segment");
	CHECK_EQ(tb_gso_segs(42 + 3 * 1472, 14, 42, 1500), 3, "UDP: 8 bytes of header");
	CHECK_EQ(tb_gso_segs(9014, 14, 66, 9000), 1, "a jumbo frame its MTU allows");
	CHECK_EQ(tb_gso_segs(66 + 2 * 8948, 14, 66, 9000), 2, "a jumbo aggregate");
	CHECK_EQ(tb_gso_segs(20000, 14, 0, 1500), 1, "no transport header: one");
	CHECK_EQ(tb_gso_segs(20000, 14, 66, 40), 1, "an MTU that leaves no payload: one");

	frame_ipv4(&f, "198.18.1.2", "198.19.3.4", &o);
	frame_tcp(&f, 14, 0);
	f.b[14 + 20 + 12] = 8 << 4;
	CHECK_EQ(tb_parse(f.b, f.b + f.len, 0, &pkt), TB_CLASS_IPV4, "class");
	CHECK_EQ(tb_headers_len(f.b, f.b + f.len, &pkt), 66, "headers: Ethernet, IPv4, TCP with 12 bytes of options");
}

static __u64 transport(const struct frame *f, size_t len, int whole)
{
	struct tb_pkt pkt = {};
	int cls = tb_parse(f->b, f->b + len, 0, &pkt);

	if (!CHECK(cls == TB_CLASS_IPV4 || cls == TB_CLASS_IPV6, "an IP frame, class %d", cls))
		return 0;
	return tb_l4(f->b, f->b + len, &pkt, cls, whole);
}

static void ipv4_transport_ports_and_fragments(void)
{
	struct frame_opts o = { .payload = 100 }, frag = { .fragment = 1, .payload = 100 };
	struct frame f;

	frame_ipv4(&f, "198.18.0.1", "198.19.0.1", &o);
	frame_ports(&f, f.hdr_len, 40000, 53);
	CHECK_EQ(transport(&f, f.len, 1), tb_l4_word(TB_PROTO_UDP, 1, 53, 40000), "UDP: its ports");
	f.b[14 + 9] = TB_PROTO_TCP;
	f.b[f.hdr_len + 13] = TB_TCPF_SYN | TB_TCPF_ECE | TB_TCPF_CWR;
	CHECK_EQ(transport(&f, f.len, 1),
		 tb_l4_word(TB_PROTO_TCP, 1, 53, 40000) | (__u64)(TB_TCPF_SYN | TB_TCPF_ECE | TB_TCPF_CWR) << TB_L4_FLAGS_SHIFT,
		 "TCP: its ports and flags");
	CHECK_EQ(transport(&f, f.hdr_len + 13, 1), TB_L4_MALFORMED, "TCP cut before its flags, whole: malformed");
	CHECK_EQ(transport(&f, f.hdr_len + 13, 0), tb_l4_unknown(TB_PROTO_TCP),
		 "past what the hook sees: its ports and flags unknown");
	f.b[14 + 9] = TB_PROTO_ICMP;
	f.b[f.hdr_len] = 8;
	f.b[f.hdr_len + 1] = 0;
	CHECK_EQ(transport(&f, f.len, 1), tb_l4_word(TB_PROTO_ICMP, 1, 8, 0), "ICMP: its type and code, as ports");
	CHECK_EQ(transport(&f, f.hdr_len + 1, 1), TB_L4_MALFORMED, "ICMP cut before its code, whole: malformed");
	CHECK_EQ(transport(&f, f.hdr_len + 1, 0), tb_l4_unknown(TB_PROTO_ICMP), "past what the hook sees: unknown");
	f.b[14 + 9] = 47;
	CHECK_EQ(transport(&f, f.len, 1), tb_l4_word(47, 0, 0, 0), "GRE: no ports");
	f.b[14 + 9] = TB_PROTO_SCTP;
	CHECK_EQ(transport(&f, f.hdr_len + 3, 1), TB_L4_MALFORMED, "SCTP cut before its ports, whole: malformed");
	CHECK_EQ(transport(&f, f.hdr_len + 3, 0), tb_l4_unknown(TB_PROTO_SCTP), "past what the hook sees: ports unknown");
	frame_ipv4(&f, "198.18.0.1", "198.19.0.1", &frag);
	frame_ports(&f, f.hdr_len, 40000, 53);
	CHECK_EQ(transport(&f, f.len, 1), tb_l4_unknown(TB_PROTO_UDP), "a later fragment: its ports unknown");
	f.b[14 + 6] = 0x20;
	f.b[14 + 7] = 0;
	CHECK_EQ(transport(&f, f.len, 1), tb_l4_word(TB_PROTO_UDP, 1, 53, 40000), "the first fragment: its ports");
	CHECK_EQ(transport(&f, f.hdr_len, 1), TB_L4_MALFORMED, "the first fragment, cut before its ports");
	frame_ipv4(&f, "198.18.0.1", "198.19.0.1", &frag);
	f.b[14 + 9] = TB_PROTO_ICMP;
	CHECK_EQ(transport(&f, f.len, 1), tb_l4_unknown(TB_PROTO_ICMP), "a later ICMP fragment: its type unknown");
}

/* What tb_parse and tb_l4 say of a fragment's datagram. */
static struct tb_pkt fragment_of(const struct frame *f)
{
	struct tb_pkt pkt = {};
	int cls = tb_parse(f->b, f->b + f->len, 0, &pkt);

	tb_l4(f->b, f->b + f->len, &pkt, cls, 1);
	return pkt;
}

static void fragments_name_their_datagram(void)
{
	struct frame_opts o = { .payload = 100 };
	struct tb_pkt pkt;
	struct frame f;
	size_t l4;

	frame_ipv4(&f, "198.18.0.1", "198.19.0.1", &o);
	CHECK_EQ(fragment_of(&f).frag, TB_FRAG_NONE, "IPv4, whole: no fragment");
	frame_ipv4_fragment(&f, 1, 0x1234, 40000, 53);
	pkt = fragment_of(&f);
	CHECK_EQ(pkt.frag, TB_FRAG_FIRST, "IPv4, offset 0 and more to come: the first");
	CHECK_EQ(pkt.frag_id, htons(0x1234), "its identification, as on the wire");
	CHECK_EQ(pkt.frag_proto, TB_PROTO_UDP, "its protocol");
	frame_ipv4_fragment(&f, 0, 0x1234, 0, 0);
	pkt = fragment_of(&f);
	CHECK_EQ(pkt.frag, TB_FRAG_LATER, "IPv4, the last: a later one");
	CHECK_EQ(pkt.frag_id, htons(0x1234), "of the same datagram");
	l4 = frame_ipv6_chain(&f, "2001:db8::1", 1, 0, TB_PROTO_UDP, 40000, 53, 100);
	frame_ipv6_frag_id(&f, l4, 0xdeadbeef);
	pkt = fragment_of(&f);
	CHECK_EQ(pkt.frag, TB_FRAG_FIRST, "IPv6, a fragment header at offset 0 with more to come: the first");
	CHECK_EQ(pkt.frag_id, htonl(0xdeadbeef), "its identification");
	CHECK_EQ(pkt.frag_proto, TB_PROTO_UDP, "its next header");
	l4 = frame_ipv6_chain(&f, "2001:db8::1", 0, 185, TB_PROTO_UDP, 40000, 53, 100);
	frame_ipv6_frag_id(&f, l4, 0xdeadbeef);
	pkt = fragment_of(&f);
	CHECK_EQ(pkt.frag, TB_FRAG_LATER, "IPv6, at offset 185: a later one");
	CHECK_EQ(pkt.frag_id, htonl(0xdeadbeef), "of the same datagram");
	l4 = frame_ipv6_chain(&f, "2001:db8::1", 0, 0, TB_PROTO_UDP, 40000, 53, 100);
	f.b[l4 - 5] &= ~1;
	CHECK_EQ(fragment_of(&f).frag, TB_FRAG_NONE, "offset 0 and no more: an atomic fragment, whole (RFC 6946)");
}

static void ipv6_transport_past_extension_headers(void)
{
	struct frame f;
	size_t l4;

	l4 = frame_ipv6_chain(&f, "2001:db8::1", 0, -1, TB_PROTO_UDP, 40000, 53, 100);
	CHECK_EQ(transport(&f, f.len, 1), tb_l4_word(TB_PROTO_UDP, 1, 53, 40000), "UDP: its ports");
	l4 = frame_ipv6_chain(&f, "2001:db8::1", 2, 0, TB_PROTO_TCP, 40000, 443, 100);
	CHECK_EQ(transport(&f, f.len, 1),
		 tb_l4_word(TB_PROTO_TCP, 1, 443, 40000) | (__u64)f.b[l4 + 13] << TB_L4_FLAGS_SHIFT,
		 "past two options headers and a first fragment's: its ports and flags");
	CHECK_EQ(transport(&f, l4 + 3, 1), TB_L4_MALFORMED, "cut before them: malformed");
	l4 = frame_ipv6_chain(&f, "2001:db8::1", 1, 185, TB_PROTO_UDP, 40000, 53, 100);
	CHECK_EQ(transport(&f, f.len, 1), tb_l4_unknown(TB_PROTO_UDP), "a later fragment: its ports unknown");
	f.b[l4 - 8] = TB_EXT_DSTOPTS;
	CHECK_EQ(transport(&f, f.len, 1), tb_l4_unknown(0),
		 "a later fragment whose part begins with a header: its protocol unknown, the rest is no header");
	frame_ipv6_chain(&f, "2001:db8::1", 1, -1, TB_PROTO_ICMPV6, 0x8000, 0, 100);
	CHECK_EQ(transport(&f, f.len, 1), tb_l4_word(TB_PROTO_ICMPV6, 1, 128, 0),
		 "ICMPv6 past an options header: its type (echo request) and code");
	frame_ipv6_chain(&f, "2001:db8::1", TB_EXT_MAX, -1, TB_PROTO_UDP, 40000, 53, 100);
	CHECK_EQ(transport(&f, f.len, 1), tb_l4_word(TB_PROTO_UDP, 1, 53, 40000),
		 "past %d extension headers: its ports", TB_EXT_MAX);
	frame_ipv6_chain(&f, "2001:db8::1", TB_EXT_MAX + 1, -1, TB_PROTO_UDP, 40000, 53, 100);
	CHECK_EQ(transport(&f, f.len, 1), tb_l4_unknown(0), "past %d: protocol unknown", TB_EXT_MAX + 1);
	frame_ipv6_chain(&f, "2001:db8::1", 2, -1, TB_PROTO_UDP, 40000, 53, 100);
	CHECK_EQ(transport(&f, 14 + 40 + 12, 1), TB_L4_MALFORMED, "an extension header cut short: malformed");
	CHECK_EQ(transport(&f, 14 + 40 + 12, 0), tb_l4_unknown(0), "past what the hook sees: protocol unknown");
	f.b[14 + 40 + 8 + 1] = (TB_L4_WALK_MAX / 8) & 0xff;
	CHECK_EQ(transport(&f, f.len, 1), tb_l4_unknown(TB_PROTO_UDP),
		 "a header that reaches past %d bytes: the ports unknown", TB_L4_WALK_MAX);
}

/* 0 to 32 extension headers of each kind: the transport found past as
 * many as the walk takes, never read past them. */
static void ipv6_chains_of_every_kind(void)
{
	static const __u8 kinds[] = { TB_EXT_HOP, TB_EXT_ROUTING, TB_EXT_DSTOPTS, TB_EXT_AH, TB_EXT_FRAGMENT };
	__u8 chain[32];
	struct frame f;

	for (size_t k = 0; k < sizeof(kinds); k++) {
		int wrong = 0;

		for (int n = 0; n <= 32; n++) {
			__u64 want = n <= TB_EXT_MAX ? tb_l4_word(TB_PROTO_UDP, 1, 53, 40000) : tb_l4_unknown(0);
			size_t l4;

			memset(chain, kinds[k], sizeof(chain));
			l4 = frame_ipv6_exts(&f, "2001:db8::1", chain, n, TB_PROTO_UDP, 40000, 53, 100);
			wrong += transport(&f, f.len, 1) != want;
			wrong += transport(&f, l4 + 3, 1) != (n <= TB_EXT_MAX ? TB_L4_MALFORMED : want);
		}
		CHECK_EQ(wrong, 0, "headers of type %d, 0 to 32 of them: ports past %d, unknown past more, "
			 "malformed where cut before them", kinds[k], TB_EXT_MAX);
	}
}

/* tb_tcp_segment over frame f cut to len: its flags, and *seq. */
static __u8 segment(const struct frame *f, size_t len, __u32 *seq)
{
	struct tb_pkt pkt = {};

	*seq = 0;
	tb_parse(f->b, f->b + len, 0, &pkt);
	return tb_tcp_segment(f->b, f->b + len, &pkt, seq);
}

/* The early signal learns the round trip from TCP segments (hold.h): their
 * sequence number, as sent, and CWR; from no other packet. */
static void tcp_segments_give_their_sequence_and_cwr(void)
{
	struct frame_opts o = { .payload = 100 }, frag = { .fragment = 1, .payload = 100 };
	struct frame f;
	__u32 seq, want = htonl(0x12345678);

	frame_ipv4(&f, "198.18.0.1", "198.19.0.1", &o);
	frame_tcp(&f, 14, 0);
	frame_tcp_seq(&f, 14 + 20, 0x12345678, 0x10);
	CHECK_EQ(segment(&f, f.len, &seq), TB_TCP_SEGMENT, "IPv4 TCP");
	CHECK_EQ(seq, want, "its sequence number");
	frame_tcp_seq(&f, 14 + 20, 0x12345678, 0x80 | 0x10);
	CHECK_EQ(segment(&f, f.len, &seq), TB_TCP_SEGMENT | TB_TCP_CWR, "with CWR");
	CHECK_EQ(segment(&f, 14 + 20 + 13, &seq), 0, "cut before its flags: none");
	f.b[14 + 9] = TB_PROTO_UDP;
	CHECK_EQ(segment(&f, f.len, &seq), 0, "UDP: none");
	frame_ipv4(&f, "198.18.0.1", "198.19.0.1", &frag);
	f.b[14 + 9] = TB_PROTO_TCP;
	CHECK_EQ(segment(&f, f.len, &seq), 0, "a later fragment: none");
	frame_ipv6_len(&f, "2001:db8::1", 200);
	frame_tcp(&f, 14, 1);
	frame_tcp_seq(&f, 14 + 40, 0x12345678, 0x80);
	CHECK_EQ(segment(&f, f.len, &seq), TB_TCP_SEGMENT | TB_TCP_CWR, "IPv6 TCP with CWR");
	CHECK_EQ(seq, want, "its sequence number");
	frame_ipv6_chain(&f, "2001:db8::1", 1, -1, TB_PROTO_TCP, 40000, 443, 100);
	CHECK_EQ(segment(&f, f.len, &seq), 0, "IPv6 TCP past an extension header: none");
}

TEST_LIST(
	T(neighbour_discovery_is_exempt),
	T(ipv4_keys_source_and_destination),
	T(ipv6_keys_all_128_bits),
	T(vlan_tags_and_truncations),
	T(ipv4_options_fragments_and_bad_headers),
	T(non_ip_passes),
	T(aggregates_are_counted_from_the_mtu),
	T(ipv4_transport_ports_and_fragments),
	T(ipv6_transport_past_extension_headers),
	T(fragments_name_their_datagram),
	T(ipv6_chains_of_every_kind),
	T(tcp_segments_give_their_sequence_and_cwr),
);

int main(int argc, char **argv)
{
	return RUN("parse");
}
