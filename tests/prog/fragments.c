// SPDX-License-Identifier: GPL-2.0
/* Fragments and long IPv6 header chains: charged by their datagram's rule, or
 * dropped when it cannot be known. */
#define _GNU_SOURCE
#include "prog.h"

/* Datagram id from frame f's source in two fragments through fd: the
 * first (ports sport and dport), then a later one. */
static void run_datagram(int fd, struct frame *f, __u16 id, __u16 sport, __u16 dport)
{
	frame_ipv4_fragment(f, 1, id, sport, dport);
	run(fd, f);
	frame_ipv4_fragment(f, 0, id, 0, 0);
	run(fd, f);
}

/* A fragment after the first carries no ports: it is charged to the
 * rule of its datagram, whose first fragment's ports the datapath keeps
 * (bpf/stages/fragment.h), on either hook. One whose first was not seen is
 * dropped where a port rule could take it, and counted; where only a
 * protocol rule could, charged to that rule. Fragments of two datagrams
 * with one identification but two sources stay apart. */
static void fragments_are_charged_to_their_datagram(void)
{
	struct frame_opts frag = { .fragment = 1, .payload = 100 };
	struct tb_stats before;
	int u, u53;
	struct frame f;
	size_t l4;

	setup();
	set_rule("default", 1000, 100000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	u = set_match("default", "udp", NULL, 100000, TB_SCOPE_PER_ADDRESS, 0);
	u53 = set_match("default", "udp", "53", 100000, TB_SCOPE_PER_ADDRESS, 0);
	if (u < 0 || u53 < 0)
		goto out;
	frame_ipv4(&f, "198.18.1.1", "198.19.0.1", &frag);
	frame_ipv4_fragment(&f, 1, 7, 40000, 53);
	run(xdp_fd, &f);
	CHECK_EQ(passed_under("198.18.1.1", u53), 1, "IPv4, the first fragment: the port rule");
	frame_ipv4_fragment(&f, 0, 7, 0, 0);
	run(xdp_fd, &f);
	run(tc_fd, &f);
	CHECK_EQ(passed_under("198.18.1.1", u53), 3, "its later fragments, on either hook: the port rule");
	CHECK_EQ(passed_under("198.18.1.1", u), 0, "none to the protocol rule");
	before = totals();
	frame_ipv4_fragment(&f, 0, 8, 0, 0);
	CHECK_EQ(run(xdp_fd, &f), XDP_DROP, "a later fragment whose first was not seen is dropped");
	CHECK_EQ(run(tc_fd, &f), TC_ACT_SHOT, "on tc too");
	CHECK_EQ(totals().fragments_unknown_packets - before.fragments_unknown_packets, 2, "counted as such");
	CHECK_EQ(totals().c.dropped_packets - before.c.dropped_packets, 2, "and as dropped");
	CHECK_EQ(passed_under("198.18.1.1", u53) + passed_under("198.18.1.1", u), 3, "charged to no bucket");
	run_datagram(xdp_fd, &f, 8, 40000, 80);
	CHECK_EQ(passed_under("198.18.1.1", u), 2, "out of order: once its first came, the next is its datagram's");
	frame_ipv4(&f, "198.18.1.2", "198.19.0.1", &frag);
	run_datagram(xdp_fd, &f, 7, 40000, 80);
	CHECK_EQ(passed_under("198.18.1.2", u), 2, "identification 7 from another source: its own datagram's rule");
	frame_ipv4(&f, "198.18.1.1", "198.19.0.1", &frag);
	frame_ipv4_fragment(&f, 0, 7, 0, 0);
	run(xdp_fd, &f);
	CHECK_EQ(passed_under("198.18.1.1", u53), 4, "and the first source's still its own");
	l4 = frame_ipv6_chain(&f, "2001:db8::1", 1, 0, TB_PROTO_UDP, 40000, 53, 100);
	frame_ipv6_frag_id(&f, l4, 70000);
	run(tc_fd, &f);
	CHECK_EQ(passed_under("2001:db8::1", u53), 1, "IPv6, past an options header and a first fragment's: the port rule");
	l4 = frame_ipv6_chain(&f, "2001:db8::1", 1, 185, TB_PROTO_UDP, 40000, 53, 100);
	frame_ipv6_frag_id(&f, l4, 70000);
	run(xdp_fd, &f);
	CHECK_EQ(passed_under("2001:db8::1", u53), 2, "its later fragment: the port rule");
	before = totals();
	frame_ipv6_frag_id(&f, l4, 70001);
	CHECK_EQ(run(xdp_fd, &f), XDP_DROP, "IPv6, a later fragment whose first was not seen: dropped");
	CHECK_EQ(totals().fragments_unknown_packets - before.fragments_unknown_packets, 1, "counted as such");
	{
		struct tb_prefix p;
		char e[160];

		prefix_parse("default", &p, e, sizeof(e));
		match_parse(&(struct match_words){ .proto = "udp", .dport = "53" }, &p, e, sizeof(e));
		CHECK(!ruleset_del(rs, &p), "delete the port rule");
	}
	frame_ipv4(&f, "198.18.1.3", "198.19.0.1", &frag);
	frame_ipv4_fragment(&f, 0, 9, 0, 0);
	CHECK_EQ(run(xdp_fd, &f), XDP_PASS, "with only a protocol rule, a fragment whose first was not seen");
	CHECK_EQ(passed_under("198.18.1.3", u), 1, "is charged to that rule");
out:
	teardown();
}

/* tc-egress, key dst: a later fragment is charged to its datagram's
 * port rule and its destination's bucket, and one whose first was not
 * seen is dropped, as at ingress. */
static void fragments_at_egress_by_destination(void)
{
	struct frame_opts frag = { .fragment = 1, .payload = 100 };
	struct frame f;
	int u53;

	setup_hook(1, 1);
	set_rule("default", 1000, 100000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	u53 = set_match("default", "udp", "53", 100000, TB_SCOPE_PER_ADDRESS, 0);
	if (u53 < 0)
		goto out;
	frame_ipv4(&f, "198.18.1.1", "198.19.0.1", &frag);
	run_datagram(tc_fd, &f, 7, 40000, 53);
	CHECK_EQ(passed_under("198.19.0.1", u53), 2, "both fragments: the destination's port-rule bucket");
	frame_ipv4_fragment(&f, 0, 8, 0, 0);
	CHECK_EQ(run(tc_fd, &f), TC_ACT_SHOT, "a later fragment whose first was not seen: dropped");
out:
	teardown();
}

/* A fragmented datagram to a port no rule has passes whole, unmatched;
 * where no rule reads ports, no fragment is looked up. */
static void fragments_to_a_port_without_a_rule_pass(void)
{
	struct frame_opts frag = { .fragment = 1, .payload = 100 };
	struct tb_stats before;
	struct frame f;

	setup();
	if (set_match("198.18.0.0/16", "udp", "53", 100000, TB_SCOPE_PER_ADDRESS, 0) < 0)
		goto out;
	frame_ipv4(&f, "198.18.1.1", "198.19.0.1", &frag);
	before = totals();
	frame_ipv4_fragment(&f, 1, 7, 40000, 80);
	CHECK_EQ(run(xdp_fd, &f), XDP_PASS, "the first fragment, to port 80, passes");
	frame_ipv4_fragment(&f, 0, 7, 0, 0);
	CHECK_EQ(run(xdp_fd, &f), XDP_PASS, "and its later one");
	CHECK_EQ(totals().unmatched_packets - before.unmatched_packets, 2, "both unmatched");
	frame_ipv4(&f, "198.19.1.1", "198.19.0.1", &frag);
	frame_ipv4_fragment(&f, 0, 9, 0, 0);
	CHECK_EQ(run(xdp_fd, &f), XDP_PASS, "a source no rule covers: its fragment passes, first seen or not");
	CHECK_EQ(totals().fragments_unknown_packets, before.fragments_unknown_packets, "none counted unknown");
	{
		struct rule_spec pass = { .action = TB_ACTION_PASS };
		struct tb_prefix p;
		char e[160];

		prefix_parse("198.18.0.0/16", &p, e, sizeof(e));
		match_parse(&(struct match_words){ .proto = "udp", .dport = "9053" }, &p, e, sizeof(e));
		CHECK(ruleset_set(rs, &p, &pass) >= 0, "a pass rule for UDP to 9053");
	}
	before = totals();
	frame_ipv4(&f, "198.18.1.1", "198.19.0.1", &frag);
	frame_ipv4_fragment(&f, 1, 10, 40000, 9053);
	CHECK_EQ(run(tc_fd, &f), (__u32)TC_ACT_UNSPEC, "the first fragment to 9053 passes");
	frame_ipv4_fragment(&f, 0, 10, 0, 0);
	CHECK_EQ(run(tc_fd, &f), (__u32)TC_ACT_UNSPEC, "and its later one");
	CHECK_EQ(totals().allowed_packets - before.allowed_packets, 2, "both allowed by the pass rule");
out:
	teardown();
}

/* n first fragments from src to dst, identifications 1 to n, UDP to port
 * 53, into fragments[] as the datapath keeps them, in one batch. */
static int flood_fragments(const char *src, const char *dst, int n)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	struct tb_frag_key *keys = calloc(n, sizeof(*keys));
	__u64 *l4 = calloc(n, sizeof(*l4));
	__u32 count = n;
	int err = -ENOMEM;

	if (keys && l4) {
		for (int i = 0; i < n; i++) {
			addr_parse(src, &keys[i].src);
			addr_parse(dst, &keys[i].dst);
			keys[i].id = htons(i + 1);
			keys[i].proto = TB_PROTO_UDP;
			l4[i] = TB_PROTO_UDP | TB_L4_PORTS | 53ULL << 16 | 40000ULL << 32;
		}
		err = bpf_map_update_batch(bpf_map__fd(skel->maps.fragments), keys, l4, &count, &opts) ? -errno : 0;
	}
	free(keys);
	free(l4);
	return err;
}

/* The table of first fragments is bounded: a flood of first fragments
 * evicts the oldest, whose later fragments are then dropped as unknown,
 * and leaves the newest. */
static void a_full_fragment_table_evicts_the_oldest(void)
{
	struct frame_opts frag = { .fragment = 1, .payload = 100 };
	struct tb_stats before;
	struct frame f;
	int u53;

	setup();
	u53 = set_match("default", "udp", "53", 1ULL << 30, TB_SCOPE_PER_ADDRESS, 0);
	if (u53 < 0)
		goto out;
	frame_ipv4(&f, "198.18.1.1", "198.19.0.1", &frag);
	frame_ipv4_fragment(&f, 1, 0, 40000, 53);
	run(xdp_fd, &f);
	/* The flood's other first fragments written straight into the map,
	 * in one call: as many test runs take minutes in the emulated VM. */
	if (!CHECK(!flood_fragments("198.18.1.1", "198.19.0.1", 2 * TB_FRAGMENTS), "a flood of first fragments"))
		goto out;
	frame_ipv4_fragment(&f, 1, 2 * TB_FRAGMENTS, 40000, 53);
	run(xdp_fd, &f);
	before = totals();
	frame_ipv4_fragment(&f, 0, 0, 0, 0);
	CHECK_EQ(run(xdp_fd, &f), XDP_DROP, "after %d more first fragments, the oldest's later one is unknown",
		 2 * TB_FRAGMENTS);
	CHECK_EQ(totals().fragments_unknown_packets - before.fragments_unknown_packets, 1, "and counted");
	frame_ipv4_fragment(&f, 0, 2 * TB_FRAGMENTS, 0, 0);
	CHECK_EQ(run(xdp_fd, &f), XDP_PASS, "the newest's is charged to its datagram's rule");
	CHECK_EQ(passed_under("198.18.1.1", u53), 3, "both firsts and that one");
out:
	teardown();
}

/* 0 to 32 IPv6 extension headers: within TB_EXT_MAX the port rule
 * charges them; past it, where a rule with a match could take them, they
 * are dropped and counted, never passed as another rule's; where no such
 * rule could (a longer plain prefix), its rule charges them. */
static void long_ipv6_chains_never_escape_a_port_rule(void)
{
	/* Hop-by-hop, routing, destination options, AH, fragment. */
	static const __u8 kinds[] = { 0, 43, 60, 51, 44 };
	int u53, plain;
	__u8 chain[32];
	struct frame f;

	setup();
	set_rule("default", 1000, 1ULL << 30, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	plain = set_rule("2001:db8:1::/48", 1000, 1ULL << 30, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	u53 = set_match("default", "udp", "53", 1ULL << 30, TB_SCOPE_PER_ADDRESS, 0);
	if (u53 < 0 || plain < 0)
		goto out;
	for (size_t k = 0; k < sizeof(kinds); k++) {
		struct tb_stats before = totals();
		__u64 charged = passed_under("2001:db8::1", u53);
		__u64 plain_before = has_bucket("2001:db8:1::1") ? bucket_of("2001:db8:1::1").c.passed_packets : 0;
		int wrong = 0;

		memset(chain, kinds[k], sizeof(chain));
		for (int n = 0; n <= 32; n++) {
			int fd = n % 2 ? tc_fd : xdp_fd;
			__u32 drop = fd == tc_fd ? TC_ACT_SHOT : XDP_DROP;

			frame_ipv6_exts(&f, "2001:db8::1", chain, n, TB_PROTO_UDP, 40000, 53, 100);
			wrong += (run(fd, &f) == drop) != (n > TB_EXT_MAX);
			frame_ipv6_exts(&f, "2001:db8:1::1", chain, n, TB_PROTO_UDP, 40000, 53, 100);
			wrong += run(fd, &f) == drop;
		}
		CHECK_EQ(wrong, 0, "type %d: dropped past %d headers, and only there; under the plain /48 never",
			 kinds[k], TB_EXT_MAX);
		CHECK_EQ(passed_under("2001:db8::1", u53) - charged, TB_EXT_MAX + 1, "the port rule charged 0 to %d",
			 TB_EXT_MAX);
		CHECK_EQ(totals().headers_unknown_packets - before.headers_unknown_packets, 32 - TB_EXT_MAX,
			 "the rest counted unknown");
		CHECK_EQ(bucket_of("2001:db8:1::1").c.passed_packets - plain_before, 33, "the /48's rule charged all 33");
	}
out:
	teardown();
}

TOPIC(prog_fragments,
	T(fragments_are_charged_to_their_datagram),
	T(fragments_to_a_port_without_a_rule_pass),
	T(fragments_at_egress_by_destination),
	T(a_full_fragment_table_evicts_the_oldest),
	T(long_ipv6_chains_never_escape_a_port_rule)
);
