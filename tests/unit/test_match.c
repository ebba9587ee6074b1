// SPDX-License-Identifier: GPL-2.0
/* match.h: which rule with a match a packet takes, and the keys of its
 * buckets, on the host. */
#include "logic/match.h"
#include "../addrs.h"
#include "../check.h"

static const __u64 secret[2] = { 0x0123456789abcdefULL, 0xfedcba9876543210ULL };

static struct tb_node_entry entry(__u8 proto, int dlo, int dhi, int plen1, __u16 rule)
{
	struct tb_node_entry e = { .m = { .proto = proto }, .rule = rule, .plen1 = plen1 };

	if (dlo >= 0) {
		e.m.ports = TB_MATCH_DPORT;
		e.m.dport[0] = dlo;
		e.m.dport[1] = dhi;
	}
	return e;
}

static int pick(const struct tb_node *n, __u64 l4, int plen1)
{
	int i = tb_node_pick(n, &l4, plen1);

	return i < 0 ? -1 : n->e[i].rule;
}

/* A /24's node, as tbctl orders it: the /24's port rule, its UDP rule,
 * then the /16's narrower and wider port ranges, then the default's. */
static void first_match_wins_unless_a_plain_prefix_is_longer(void)
{
	struct tb_node n = { .n = 5 };
	__u64 udp53 = tb_l4_word(TB_PROTO_UDP, 1, 53, 40000), udp80 = tb_l4_word(TB_PROTO_UDP, 1, 80, 40000);
	__u64 udp_frag = tb_l4_unknown(TB_PROTO_UDP), tcp80 = tb_l4_word(TB_PROTO_TCP, 1, 80, 40000);
	__u64 tcp443 = tb_l4_word(TB_PROTO_TCP, 1, 443, 40000);

	n.e[0] = entry(TB_PROTO_UDP, 53, 53, 25, 1);
	n.e[1] = entry(TB_PROTO_UDP, -1, 0, 25, 2);
	n.e[2] = entry(TB_PROTO_TCP, 80, 80, 17, 3);
	n.e[3] = entry(TB_PROTO_TCP, 1, 1024, 17, 4);
	n.e[4] = entry(TB_PROTO_TCP, -1, 0, 0, 5);
	CHECK_EQ(pick(&n, udp53, -1), 1, "UDP to 53: the /24's port rule");
	CHECK_EQ(pick(&n, udp80, -1), 2, "UDP to 80: the /24's UDP rule");
	CHECK_EQ(tb_node_pick(&n, &udp_frag, -1), TB_PICK_UNSURE,
		 "UDP, its ports unknown: the port rule may take it, so its rule is unknown");
	CHECK_EQ(pick(&n, tb_l4_unknown(TB_PROTO_TCP), 18), -1, "TCP, its ports unknown, under a plain /17: none");
	CHECK_EQ(tb_node_pick(&n, &(__u64){ tb_l4_unknown(TB_PROTO_TCP) }, -1), TB_PICK_UNSURE,
		 "TCP, its ports unknown, where the /16's ranges apply: unknown");
	CHECK_EQ(tb_node_pick(&n, &(__u64){ tb_l4_unknown(0) }, -1), TB_PICK_UNSURE,
		 "its protocol unknown: unknown");
	CHECK_EQ(pick(&n, tb_l4_unknown(0), 26), -1, "its protocol unknown, under a longer plain prefix: none");
	n.e[0] = entry(TB_PROTO_UDP, -1, 0, 25, 2);
	CHECK_EQ(pick(&n, udp_frag, -1), 2, "UDP, its ports unknown, where a protocol rule comes first: that rule");
	n.e[0] = entry(TB_PROTO_UDP, 53, 53, 25, 1);
	CHECK_EQ(pick(&n, tcp80, -1), 3, "TCP to 80: the narrower range");
	CHECK_EQ(pick(&n, tcp443, -1), 4, "TCP to 443: the wider range");
	CHECK_EQ(pick(&n, tcp443, 18), -1, "a plain /17 beats the /16's ranges");
	CHECK_EQ(pick(&n, tb_l4_word(TB_PROTO_TCP, 1, 2000, 1), -1), 5, "TCP to 2000: the default's");
	CHECK_EQ(pick(&n, tb_l4_word(TB_PROTO_TCP, 1, 2000, 1), 0), 5, "over the plain default rule");
	CHECK_EQ(pick(&n, tb_l4_word(TB_PROTO_TCP, 1, 2000, 1), 1), -1, "not over a plain 0.0.0.0/0");
	CHECK_EQ(pick(&n, udp53, 25), 1, "on one prefix a match beats the plain rule");
	CHECK_EQ(pick(&n, udp53, 26), -1, "a longer plain prefix beats it");
	CHECK_EQ(pick(&n, tb_l4_word(1, 0, 0, 0), -1), -1, "ICMP matches none of these");
	n.n = 0;
	CHECK_EQ(pick(&n, udp53, -1), -1, "an empty node picks nothing");
}

static void ports_and_ranges_at_their_edges(void)
{
	struct tb_match m = { .proto = TB_PROTO_UDP, .ports = TB_MATCH_DPORT | TB_MATCH_SPORT,
			      .dport = { 1000, 2000 }, .sport = { 53, 53 } };

	CHECK(tb_match_takes(&m, tb_l4_word(TB_PROTO_UDP, 1, 1000, 53)), "low edge");
	CHECK(tb_match_takes(&m, tb_l4_word(TB_PROTO_UDP, 1, 2000, 53)), "high edge");
	CHECK(!tb_match_takes(&m, tb_l4_word(TB_PROTO_UDP, 1, 999, 53)), "below");
	CHECK(!tb_match_takes(&m, tb_l4_word(TB_PROTO_UDP, 1, 2001, 53)), "above");
	CHECK(!tb_match_takes(&m, tb_l4_word(TB_PROTO_UDP, 1, 1500, 54)), "another source port");
	CHECK(!tb_match_takes(&m, tb_l4_word(TB_PROTO_TCP, 1, 1500, 53)), "another protocol");
	CHECK(!tb_match_takes(&m, tb_l4_word(TB_PROTO_UDP, 0, 0, 0)), "no ports");
	CHECK_EQ(tb_match_takes(&m, tb_l4_unknown(TB_PROTO_UDP)), TB_TAKES_MAYBE, "ports unknown: maybe");
	CHECK_EQ(tb_match_takes(&m, tb_l4_unknown(TB_PROTO_TCP)), TB_TAKES_NOT, "another protocol, ports unknown");
	CHECK_EQ(tb_match_takes(&m, tb_l4_unknown(0)), TB_TAKES_MAYBE, "protocol unknown: maybe");
	m.ports = 0;
	CHECK_EQ(tb_match_takes(&m, tb_l4_unknown(TB_PROTO_UDP)), TB_TAKES,
		 "a protocol rule takes a later fragment, its ports unknown");
	CHECK_EQ(tb_l4_word(TB_PROTO_UDP, 1, 1, 2) & tb_l4_mask(TB_READS_PROTO), TB_PROTO_UDP,
		 "read for the protocol alone, a packet's word keeps the protocol");
	CHECK_EQ(tb_l4_word(TB_PROTO_UDP, 1, 1, 2) & tb_l4_mask(TB_READS_PROTO | TB_READS_DPORT),
		 tb_l4_word(TB_PROTO_UDP, 1, 1, 0), "and for destination ports, drops the source port");
	CHECK_EQ(tb_l4_word(TB_PROTO_UDP, 1, 1, 2) & tb_l4_mask(TB_READS_PROTO | TB_READS_SPORT),
		 tb_l4_word(TB_PROTO_UDP, 1, 1, 2), "and for source ports, keeps both");
}

/* TCP flags: those of the mask as the match sets them, the rest free;
 * ICMP types where ports would be. */
static void tcp_flags_and_icmp_types(void)
{
	struct tb_match syn = { .proto = TB_PROTO_TCP, .ports = TB_MATCH_FLAGS, .flags = TB_TCPF_SYN,
				.flags_mask = TB_TCPF_SYN | TB_TCPF_ACK };
	struct tb_match echo = { .proto = TB_PROTO_ICMP, .ports = TB_MATCH_TYPE, .dport = { 8, 8 } };
	struct tb_match icmp = { .proto = TB_PROTO_ICMP };
	__u64 tcp = tb_l4_word(TB_PROTO_TCP, 1, 80, 40000);

#define WITH(f) (tcp | (__u64)(f) << TB_L4_FLAGS_SHIFT)
	CHECK_EQ(tb_match_takes(&syn, WITH(TB_TCPF_SYN)), TB_TAKES, "a SYN");
	CHECK_EQ(tb_match_takes(&syn, WITH(TB_TCPF_SYN | TB_TCPF_ECE | TB_TCPF_CWR)), TB_TAKES,
		 "a SYN asking for ECN: flags outside the mask are free");
	CHECK_EQ(tb_match_takes(&syn, WITH(TB_TCPF_SYN | TB_TCPF_ACK)), TB_TAKES_NOT, "a SYN-ACK");
	CHECK_EQ(tb_match_takes(&syn, WITH(TB_TCPF_ACK | TB_TCPF_PSH)), TB_TAKES_NOT, "a segment of data");
	CHECK_EQ(tb_match_takes(&syn, tb_l4_unknown(TB_PROTO_TCP)), TB_TAKES_MAYBE, "flags unknown: maybe");
	CHECK_EQ(tb_match_takes(&syn, tb_l4_word(TB_PROTO_UDP, 1, 80, 40000)), TB_TAKES_NOT, "UDP");
	syn.ports |= TB_MATCH_DPORT;
	syn.dport[0] = syn.dport[1] = 443;
	CHECK_EQ(tb_match_takes(&syn, WITH(TB_TCPF_SYN)), TB_TAKES_NOT, "a SYN to 80 under dport 443");
	CHECK_EQ(WITH(TB_TCPF_SYN) & tb_l4_mask(TB_READS_PROTO | TB_READS_FLAGS), WITH(TB_TCPF_SYN),
		 "read for flags, a packet's word keeps them");
	CHECK_EQ(WITH(TB_TCPF_SYN) & tb_l4_mask(TB_READS_PROTO | TB_READS_DPORT), tb_l4_word(TB_PROTO_TCP, 1, 80, 0),
		 "read for ports alone, not");
#undef WITH
	CHECK_EQ(tb_match_takes(&echo, tb_l4_word(TB_PROTO_ICMP, 1, 8, 0)), TB_TAKES, "an echo request");
	CHECK_EQ(tb_match_takes(&echo, tb_l4_word(TB_PROTO_ICMP, 1, 0, 0)), TB_TAKES_NOT, "an echo reply");
	CHECK_EQ(tb_match_takes(&echo, tb_l4_word(TB_PROTO_ICMPV6, 1, 8, 0)), TB_TAKES_NOT, "ICMPv6 type 8");
	CHECK_EQ(tb_match_takes(&echo, tb_l4_unknown(TB_PROTO_ICMP)), TB_TAKES_MAYBE, "a later fragment: maybe");
	CHECK_EQ(tb_match_takes(&icmp, tb_l4_word(TB_PROTO_ICMP, 1, 3, 1)), TB_TAKES, "proto icmp takes any type");
	CHECK_EQ(tb_match_takes(&icmp, tb_l4_unknown(TB_PROTO_ICMP)), TB_TAKES, "and a later fragment");
}

/* A class makes a key no address and no other class has, and comes off
 * again: IPv4, IPv6 and group keys. */
static void class_keys_differ_and_come_off(void)
{
	struct tb_addr keys[3] = { v4("198.51.100.7"), v6("2001:db8::7"), v4("198.51.100.0") }, seen[3][4];
	__u32 len;
	int fam;

	tb_group_key(&keys[2], 0, 24);
	for (int k = 0; k < 3; k++)
		for (__u32 c = 0; c < 4; c++) {
			struct tb_addr a = keys[k];

			tb_class_key(&a, c ? c * 4000 : 0, secret);
			seen[k][c] = a;
			for (__u32 d = 0; d < c; d++)
				CHECK(memcmp(&seen[k][d], &a, sizeof(a)), "key %d: classes %u and %u differ", k, d, c);
			if (k != 1)
				CHECK_EQ(tb_key_class(&a), c * 4000, "key %d: class %u read back", k, c);
			if (k == 2)
				CHECK(tb_group_of(&a, &fam, &len) && len == 24 && !fam, "class %u: still a /24 group", c);
			if (k == 0)
				CHECK(!tb_group_of(&a, &fam, &len), "class %u: an IPv4 key is no group", c);
			if (k == 1)
				CHECK(a.w[0] == keys[1].w[0] && a.w[1] == keys[1].w[1], "class %u: the /64 stays", c);
			tb_class_unkey(&a, c * 4000, secret);
			CHECK(!memcmp(&a, &keys[k], sizeof(a)), "key %d: class %u comes off", k, c);
		}
}

TEST_LIST(
	T(first_match_wins_unless_a_plain_prefix_is_longer),
	T(ports_and_ranges_at_their_edges),
	T(tcp_flags_and_icmp_types),
	T(class_keys_differ_and_come_off),
);

int main(int argc, char **argv)
{
	return RUN("match");
}
