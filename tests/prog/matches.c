// SPDX-License-Identifier: GPL-2.0
/* Protocol and port matches: the most specific rule, nodes that follow rule
 * changes, ICMP and malformed transport headers. */
#define _GNU_SOURCE
#include "prog.h"

/* A UDP (or, with proto set, another protocol's) frame from src to dport. */
static void frame_to_port(struct frame *f, const char *src, __u8 proto, __u16 dport)
{
	struct frame_opts o = { .payload = 100 };

	if (strchr(src, ':')) {
		frame_ipv6_chain(f, src, 0, -1, proto, 40000, dport, 100);
		return;
	}
	frame_ipv4(f, src, "198.19.0.1", &o);
	f->b[14 + 9] = proto;
	frame_ports(f, f->hdr_len, 40000, dport);
}

/* The rule for a packet: the longest prefix with a rule that matches it,
 * and on one prefix a port rule before a protocol rule before a plain
 * one. A rule with a match charges buckets of its own, per address or
 * per group, in both families. */
static void port_beats_protocol_beats_plain(void)
{
	int d, u, u53, g, u6;
	struct frame f;

	setup();
	d = set_rule("default", 1000, 100000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	u = set_match("198.18.0.0/16", "udp", NULL, 100000, TB_SCOPE_PER_ADDRESS, 0);
	u53 = set_match("198.18.0.0/16", "udp", "53", 100000, TB_SCOPE_PER_ADDRESS, 0);
	set_rule("198.18.5.0/24", 1000, 100000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	g = set_match("198.18.6.0/24", "tcp", "80-89", 100000, TB_SCOPE_GROUP, 28);
	u6 = set_match("2001:db8::/32", "udp", NULL, 100000, TB_SCOPE_PER_ADDRESS, 0);
	if (d < 0 || u < 0 || u53 < 0 || g < 0 || u6 < 0)
		goto out;
	CHECK(rs->cfg.resolve_first && rs->cfg.match_reads == (TB_READS_PROTO | TB_READS_DPORT),
	      "the config says a rule reads protocols and destination ports: %u %u", rs->cfg.resolve_first,
	      rs->cfg.match_reads);
	frame_to_port(&f, "198.18.1.1", TB_PROTO_UDP, 53);
	run(xdp_fd, &f);
	frame_to_port(&f, "198.18.1.1", TB_PROTO_UDP, 54);
	run(xdp_fd, &f);
	run(tc_fd, &f);
	frame_to_port(&f, "198.18.1.1", TB_PROTO_TCP, 53);
	run(xdp_fd, &f);
	CHECK_EQ(passed_under("198.18.1.1", u53), 1, "UDP to 53: the port rule's bucket");
	CHECK_EQ(passed_under("198.18.1.1", u), 2, "UDP to 54, xdp and tc: the protocol rule's");
	CHECK_EQ(bucket_of("198.18.1.1").c.passed_packets, 1, "TCP: the address's own, the default's");
	frame_to_port(&f, "198.18.5.1", TB_PROTO_UDP, 53);
	run(xdp_fd, &f);
	CHECK_EQ(bucket_of("198.18.5.1").c.passed_packets, 1, "UDP to 53 inside a longer plain prefix: its rule");
	CHECK_EQ(passed_under("198.18.5.1", u53), 0, "not the shorter prefix's port rule");
	frame_to_port(&f, "198.18.6.1", TB_PROTO_TCP, 85);
	run(xdp_fd, &f);
	frame_to_port(&f, "198.18.6.2", TB_PROTO_TCP, 89);
	run(xdp_fd, &f);
	frame_to_port(&f, "198.18.6.3", TB_PROTO_TCP, 90);
	run(xdp_fd, &f);
	CHECK_EQ(passed_under("198.18.6.1", g), 2, "TCP to 85 and 89 from one /28: its group's bucket");
	CHECK_EQ(bucket_of("198.18.6.3").c.passed_packets, 1, "TCP to 90: outside the range, the default's");
	frame_to_port(&f, "2001:db8::1", TB_PROTO_UDP, 53);
	run(xdp_fd, &f);
	frame_to_port(&f, "2001:db8::1", TB_PROTO_TCP, 53);
	run(xdp_fd, &f);
	CHECK_EQ(passed_under("2001:db8::1", u6), 1, "IPv6 UDP: the protocol rule's bucket");
	CHECK_EQ(bucket_of("2001:db8::1").c.passed_packets, 1, "IPv6 TCP: the address's own");
	for (int id = 0; id < TB_MAX_RULES; id++)
		if (rs->rules[id].in_use && rs->rules[id].match.proto) {
			struct tb_prefix p;

			rule_prefix(&rs->rules[id], &p);
			CHECK(!ruleset_del(rs, &p), "delete rule %d", id);
		}
	CHECK(!rs->cfg.resolve_first && !rs->cfg.match_reads, "with the last match gone, so are the flags");
	frame_to_port(&f, "198.18.1.1", TB_PROTO_UDP, 53);
	run(xdp_fd, &f);
	CHECK_EQ(bucket_of("198.18.1.1").c.passed_packets, 2, "UDP to 53 then: the default's");
out:
	teardown();
}

/* The rules with a match of the node a packet from addr looks up, by
 * slot, in the order they are tried ("-": no node). */
static void node_in(const struct ruleset *rs, const char *addr, char *out, size_t len)
{
	struct tb_addr a;
	__u32 slot;
	struct tb_node n;
	int err;

	addr_parse(addr, &a);
	if (addr_is_v4(&a)) {
		struct tb_lpm_v4 k = { .prefixlen = 32, .addr = a.w[3] };

		err = bpf_map_lookup_elem(rs->m.matches_v4, &k, &slot);
	} else {
		struct tb_lpm_v6 k = { .prefixlen = 128 };

		memcpy(k.addr, a.w, 16);
		err = bpf_map_lookup_elem(rs->m.matches_v6, &k, &slot);
	}
	if (err && rs->cfg.default_node) {
		slot = rs->cfg.default_node - 1;
		err = 0;
	}
	if (err || bpf_map_lookup_elem(rs->m.nodes, &slot, &n)) {
		snprintf(out, len, "-");
		return;
	}
	*out = 0;
	for (__u32 i = 0; i < n.n; i++)
		snprintf(out + strlen(out), len - strlen(out), "%s%u", i ? " " : "", n.e[i].rule);
}

static void node_of(const char *addr, char *out, size_t len)
{
	node_in(rs, addr, out, len);
}

/* tbctl keeps each prefix's node what its rules and those around it say,
 * publishes a change in a fresh slot, and refuses a 17th rule for a
 * prefix, changing nothing. */
static void match_nodes_follow_changes(void)
{
	char got[128], want[128];
	struct ruleset *again;
	int d, a, b, err, n;

	setup();
	d = set_match("default", "udp", NULL, 100000, TB_SCOPE_PER_ADDRESS, 0);
	a = set_match("198.18.0.0/16", "tcp", NULL, 100000, TB_SCOPE_PER_ADDRESS, 0);
	b = set_match("198.18.1.0/24", "udp", "53", 100000, TB_SCOPE_PER_ADDRESS, 0);
	node_of("198.18.1.1", got, sizeof(got));
	snprintf(want, sizeof(want), "%d %d %d", b, a, d);
	CHECK(!strcmp(got, want), "the /24's node: its rule, the /16's, the default's: %s, not %s", got, want);
	node_of("198.18.2.1", got, sizeof(got));
	snprintf(want, sizeof(want), "%d %d", a, d);
	CHECK(!strcmp(got, want), "the /16's: %s, not %s", got, want);
	node_of("2001:db8::1", got, sizeof(got));
	snprintf(want, sizeof(want), "%d", d);
	CHECK(!strcmp(got, want), "IPv6: the default's: %s, not %s", got, want);
	d = set_match("default", "udp", NULL, 50000, TB_SCOPE_PER_ADDRESS, 0);
	node_of("198.18.1.1", got, sizeof(got));
	snprintf(want, sizeof(want), "%d %d %d", b, a, d);
	CHECK(!strcmp(got, want), "a changed default rule's new slot in every node: %s, not %s", got, want);
	n = 0;
	for (int i = 0; i < TB_MAX_RULES; i++)
		n += rs->rules[i].in_use;
	for (int port = 1; port <= 13; port++) {
		char dport[8];

		snprintf(dport, sizeof(dport), "%d", port);
		set_match("198.18.1.0/24", "udp", dport, 100000, TB_SCOPE_PER_ADDRESS, 0);
	}
	{
		struct rule_spec s = { .rate = 1000, .burst = 100000 };
		struct tb_prefix p;
		char e[160];

		prefix_parse("198.18.1.128/25", &p, e, sizeof(e));
		match_parse(&(struct match_words){ .proto = "udp", .dport = "99" }, &p, e, sizeof(e));
		err = ruleset_set(rs, &p, &s);
		CHECK_EQ(err, -E2BIG, "a 17th rule with a match for 198.18.1.128/25 is refused");
	}
	for (int i = 0; i < TB_MAX_RULES; i++)
		n -= rs->rules[i].in_use;
	CHECK_EQ(n, -13, "13 more rules, and none for the refused one");
	node_of("198.18.1.200", got, sizeof(got));
	n = 1;
	for (const char *c = got; *c; c++)
		n += *c == ' ';
	CHECK(n == TB_NODE_ENTRIES, "the /24's full node still serves 198.18.1.200: %s", got);
	{
		struct tb_prefix p;
		char e[160];

		prefix_parse("198.18.0.0/16", &p, e, sizeof(e));
		match_parse(&(struct match_words){ .proto = "tcp" }, &p, e, sizeof(e));
		CHECK(!ruleset_del(rs, &p), "delete the /16's rule");
	}
	node_of("198.18.2.1", got, sizeof(got));
	snprintf(want, sizeof(want), "%d", d);
	CHECK(!strcmp(got, want), "with it gone, the /16 has no node: the default's, %s", got);
	again = calloc(1, sizeof(*again));
	if (CHECK(again && !ruleset_read(again, &rs->m), "read the rules again")) {
		n = 0;
		for (int i = 0; i < TB_MAX_RULES; i++)
			n += again->rules[i].in_use != rs->rules[i].in_use;
		CHECK_EQ(n, 0, "a reader finds every published rule with a match");
	}
	/* A change of the default's rule killed between two nodes: the
	 * default's own names its new slot, the /24's still the old one,
	 * since retired. The next writer's load makes the /24's whole. */
	if (again) {
		struct tb_lpm_v4 k = { .prefixlen = 32 };
		struct tb_node bn;
		__u32 slot;

		inet_pton(AF_INET, "198.18.1.1", &k.addr);
		if (CHECK(!bpf_map_lookup_elem(rs->m.matches_v4, &k, &slot) &&
			  !bpf_map_lookup_elem(rs->m.nodes, &slot, &bn), "read the /24's node")) {
			for (__u32 e = 0; e < bn.n && e < TB_NODE_ENTRIES; e++)
				if (bn.e[e].rule == d)
					bn.e[e].rule = TB_MAX_RULES - 1;
			CHECK(!bpf_map_update_elem(rs->m.nodes, &slot, &bn, BPF_ANY), "leave it naming a free slot");
		}
		memset(again, 0, sizeof(*again));
		if (CHECK(!ruleset_load(again, &rs->m), "load the rules as a writer")) {
			node_in(again, "198.18.1.1", got, sizeof(got));
			snprintf(want, sizeof(want), " %d", d);
			CHECK(strstr(got, want) && !strstr(got, "16383"), "the /24's node names the default's rule "
			      "again: %s", got);
		}
	}
	free(again);
	teardown();
}

/* ICMP and ICMPv6 have rules of their own; a transport header cut before
 * its ports, in a whole frame, is malformed where a rule reads ports. */
static void icmp_rules_and_malformed_transport(void)
{
	struct tb_stats before;
	int i4, i6;
	struct frame f;

	setup();
	set_rule("default", 1000, 100000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	frame_to_port(&f, "198.18.1.1", TB_PROTO_UDP, 53);
	before = totals();
	run_len(xdp_fd, &f, f.hdr_len + 2);
	CHECK_EQ(totals().malformed_packets, before.malformed_packets, "with no match, ports are not read");
	i4 = set_match("0.0.0.0/0", "icmp", NULL, 100000, TB_SCOPE_PER_ADDRESS, 0);
	i6 = set_match("2001:db8::/32", "icmpv6", NULL, 100000, TB_SCOPE_PER_ADDRESS, 0);
	set_match("default", "udp", "53", 100000, TB_SCOPE_PER_ADDRESS, 0);
	if (i4 < 0 || i6 < 0)
		goto out;
	frame_to_port(&f, "198.18.1.2", 1, 0x0800);
	run(xdp_fd, &f);
	frame_to_port(&f, "2001:db8::2", 58, 0x8000);
	run(tc_fd, &f);
	CHECK_EQ(passed_under("198.18.1.2", i4), 1, "ICMP: its rule");
	CHECK_EQ(passed_under("2001:db8::2", i6), 1, "ICMPv6: its rule");
	frame_to_port(&f, "198.18.1.3", TB_PROTO_UDP, 53);
	before = totals();
	CHECK_EQ(run_len(xdp_fd, &f, f.hdr_len + 3), XDP_PASS, "UDP cut before its ports passes");
	CHECK_EQ(totals().malformed_packets - before.malformed_packets, 1, "counted as malformed");
	CHECK(!has_bucket("198.18.1.3") && !passed_under("198.18.1.3", i4), "charged to no bucket");
out:
	teardown();
}

/* A rule for SYNs and one for echo requests on a prefix: each takes its
 * packets alone, in both hooks; a SYN-ACK, a segment of data and an echo
 * reply go by the default's rule. A TCP header cut before its flags, in a
 * whole frame, is malformed where a rule reads them. */
static void syn_and_echo_request_rules(void)
{
	struct match_words syn_words = { .proto = "tcp", .flags = "syn" };
	struct match_words echo_words = { .proto = "icmp", .type = "echo-request" };
	struct tb_stats before;
	struct frame f;
	int syn, echo;

	setup();
	set_rule("default", 1000, 100000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	syn = set_match_words("198.18.0.0/16", &syn_words, 100000, TB_SCOPE_PER_ADDRESS, 0);
	echo = set_match_words("198.18.0.0/16", &echo_words, 100000, TB_SCOPE_PER_ADDRESS, 0);
	if (syn < 0 || echo < 0)
		goto out;
	CHECK(rs->cfg.match_reads == (TB_READS_PROTO | TB_READS_DPORT | TB_READS_FLAGS),
	      "the config says a rule reads flags and types: %u", rs->cfg.match_reads);
	frame_to_port(&f, "198.18.1.1", TB_PROTO_TCP, 80);
	f.b[f.hdr_len + 13] = TB_TCPF_SYN;
	run(xdp_fd, &f);
	f.b[f.hdr_len + 13] = TB_TCPF_SYN | TB_TCPF_ECE | TB_TCPF_CWR;
	run(tc_fd, &f);
	f.b[f.hdr_len + 13] = TB_TCPF_SYN | TB_TCPF_ACK;
	run(xdp_fd, &f);
	f.b[f.hdr_len + 13] = TB_TCPF_ACK | TB_TCPF_PSH;
	run(tc_fd, &f);
	CHECK_EQ(passed_under("198.18.1.1", syn), 2, "the SYNs, with ECN's flags or not: the SYN rule's bucket");
	CHECK_EQ(bucket_of("198.18.1.1").c.passed_packets, 2, "the SYN-ACK and the data: the default's");
	frame_to_port(&f, "198.18.1.2", TB_PROTO_ICMP, 0);
	f.b[f.hdr_len] = 8;
	f.b[f.hdr_len + 1] = 0;
	run(xdp_fd, &f);
	f.b[f.hdr_len] = 0;
	run(tc_fd, &f);
	CHECK_EQ(passed_under("198.18.1.2", echo), 1, "the echo request: its rule's bucket");
	CHECK_EQ(bucket_of("198.18.1.2").c.passed_packets, 1, "the echo reply: the default's");
	frame_to_port(&f, "198.18.1.3", TB_PROTO_TCP, 80);
	f.b[f.hdr_len + 13] = TB_TCPF_SYN;
	before = totals();
	CHECK_EQ(run_len(xdp_fd, &f, f.hdr_len + 13), XDP_PASS, "TCP cut before its flags passes");
	CHECK_EQ(totals().malformed_packets - before.malformed_packets, 1, "counted as malformed");
	CHECK(!has_bucket("198.18.1.3") && !passed_under("198.18.1.3", syn), "charged to no bucket");
out:
	teardown();
}

TOPIC(prog_matches,
	T(port_beats_protocol_beats_plain),
	T(match_nodes_follow_changes),
	T(icmp_rules_and_malformed_transport),
	T(syn_and_echo_request_rules)
);
