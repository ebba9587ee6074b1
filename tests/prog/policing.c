// SPDX-License-Identifier: GPL-2.0
/* Policing by address through every hook: bursts then drops, VLANs, malformed
 * and non-IP frames, costs in bytes and packets, aggregates charged by segment. */
#define _GNU_SOURCE
#include "prog.h"

/* Frames of len bytes from src against a 1000 B/s rule of burst bytes:
 * as many as the burst holds pass, the next one drops, and every one is
 * counted whole in the bucket and the global counters. */
static void burst_then_drop(const char *src, size_t len, __u64 burst)
{
	__u64 fit = burst / len;
	struct frame f;
	struct tb_bucket b;
	struct tb_stats s;

	setup();
	set_rule("default", 1000, burst, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	frame_ipv4_len(&f, src, len);
	for (__u64 i = 1; i <= fit; i++)
		CHECK_EQ(run(xdp_fd, &f), XDP_PASS, "%s: %zu-byte frame %llu, burst %llu", src, len, i, burst);
	CHECK_EQ(run(xdp_fd, &f), XDP_DROP, "%s: the next frame, the bucket empty", src);
	b = bucket_of(src);
	CHECK_EQ(b.c.passed_packets, fit, "%s: bucket passed packets", src);
	CHECK_EQ(b.c.passed_bytes, fit * len, "%s: bucket passed bytes", src);
	CHECK_EQ(b.c.dropped_packets, 1, "%s: bucket dropped packets", src);
	CHECK_EQ(b.c.dropped_bytes, len, "%s: bucket dropped bytes", src);
	s = totals();
	CHECK_EQ(s.c.passed_packets, fit, "%s: global passed packets", src);
	CHECK_EQ(s.c.dropped_bytes, len, "%s: global dropped bytes", src);
	CHECK_EQ(s.buckets_created, 1, "%s: buckets created", src);
	teardown();
}

static void xdp_ipv4_burst_then_drop(void)
{
	burst_then_drop("198.18.0.1", 1000, 3000);
}

static void xdp_ipv6_burst_then_drop(void)
{
	struct frame f;

	setup();
	set_rule("default", 1000, 3000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	frame_ipv6_len(&f, "2001:db8::1", 1500);
	CHECK_EQ(pass_count(xdp_fd, &f, 3, XDP_PASS), 2, "1500-byte IPv6 frames passed of 3");
	CHECK_EQ(bucket_of("2001:db8::1").c.dropped_bytes, 1500, "IPv6 bucket dropped bytes");
	teardown();
}

static void vlan_tagged_frames_are_policed(void)
{
	setup();
	set_rule("default", 1000, 2000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	for (int vlans = 1; vlans <= 2; vlans++) {
		struct frame_opts o = { .vlans = vlans, .payload = 958 };
		const char *src = vlans == 1 ? "198.18.1.1" : "2001:db8::1:1";
		struct frame f;

		if (vlans == 1)
			frame_ipv4(&f, src, "198.19.0.1", &o);
		else
			frame_ipv6(&f, src, "2001:db8::2", &o);
		CHECK(pass_count(xdp_fd, &f, 4, XDP_PASS) == 2 - (vlans == 2 && f.len > 1000),
		      "%d tag(s): frames of %zu bytes against burst 2000", vlans, f.len);
		CHECK(bucket_of(src).c.passed_bytes + bucket_of(src).c.dropped_bytes == 4 * f.len,
		      "%d tag(s): every frame charged to %s", vlans, src);
	}
	teardown();
}

static void truncated_headers_pass_as_malformed(void)
{
	int expected = 0;

	setup();
	set_rule("default", 1, 1500, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	for (int prog = 0; prog < 2; prog++) {
		int fd = prog ? tc_fd : xdp_fd;
		__u32 pass = prog ? (__u32)TC_ACT_UNSPEC : XDP_PASS;

		for (int vlans = 0; vlans <= 2; vlans++) {
			for (int fam = 4; fam <= 6; fam += 2) {
				struct frame_opts o = { .vlans = vlans, .ip_option_words = fam == 4 ? 2 : 0 };
				struct frame f;

				if (fam == 4)
					frame_ipv4(&f, "198.18.0.9", "198.19.0.1", &o);
				else
					frame_ipv6(&f, "2001:db8::9", "2001:db8::2", &o);
				/* The kernel refuses test frames shorter than Ethernet's
				 * header, and builds no skb from an untagged IP frame
				 * cut inside its fixed IP header: those cuts are covered by
				 * the host parser test (same parse.h). */
				for (size_t cut = ETH_HLEN; cut < f.hdr_len; cut++) {
					__u32 ret = ~0U;
					int err = try_run(fd, &f, cut, &ret);

					if (prog && !vlans && cut < ETH_HLEN + (fam == 4 ? 20u : 40u)) {
						CHECK(err == -EINVAL, "tc, untagged IPv%d cut at %zu: "
						      "expected the kernel to refuse, got %d", fam, cut, err);
						continue;
					}
					CHECK(!err && ret == pass, "%s, %d tags, IPv%d cut at %zu: expected pass, "
					      "got %u (err %d)", prog ? "tc" : "xdp", vlans, fam, cut, ret, err);
					expected++;
				}
			}
		}
	}
	CHECK_EQ(totals().malformed_packets, expected, "malformed count");
	CHECK_EQ(totals().buckets_created, 0, "no bucket for a malformed frame");
	teardown();
}

static void non_ip_and_neighbour_discovery_pass(void)
{
	struct frame f;

	setup();
	set_rule("default", 1, 1500, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	frame_arp(&f);
	CHECK_EQ(pass_count(xdp_fd, &f, 5, XDP_PASS), 5, "ARP frames passed by XDP");
	CHECK_EQ(pass_count(tc_fd, &f, 5, (__u32)TC_ACT_UNSPEC), 5, "ARP frames passed by tc");
	CHECK_EQ(totals().nonip_packets, 10, "non-IP count");
	frame_icmp6(&f, "2001:db8::5", 135, 255);
	CHECK_EQ(pass_count(xdp_fd, &f, 5, XDP_PASS), 5, "neighbour solicitations pass an empty bucket");
	CHECK_EQ(totals().nd_packets, 5, "neighbour discovery count");
	CHECK(!has_bucket("2001:db8::5"), "no bucket charged for neighbour discovery");
	teardown();
}

static void options_and_fragments_are_charged(void)
{
	struct frame_opts opt = { .ip_option_words = 10, .payload = 100 };
	struct frame_opts frag = { .fragment = 1, .payload = 100 };
	struct frame f;

	setup();
	set_rule("default", 1000, 10000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	frame_ipv4(&f, "198.18.2.1", "198.19.0.1", &opt);
	run(xdp_fd, &f);
	CHECK_EQ(bucket_of("198.18.2.1").c.passed_bytes, f.len, "IPv4 with options charged");
	frame_ipv4(&f, "198.18.2.2", "198.19.0.1", &frag);
	run(xdp_fd, &f);
	CHECK_EQ(bucket_of("198.18.2.2").c.passed_bytes, f.len, "fragment charged to its source");
	teardown();
}

static void addresses_are_isolated(void)
{
	struct frame a, b;

	setup();
	set_rule("default", 1000, 2000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	frame_ipv4_len(&a, "198.18.3.1", 1000);
	frame_ipv4_len(&b, "198.18.3.2", 1000);
	CHECK_EQ(pass_count(xdp_fd, &a, 10, XDP_PASS), 2, "first address drains its own bucket");
	CHECK_EQ(pass_count(xdp_fd, &b, 10, XDP_PASS), 2, "second address still has its burst");
	teardown();
}

static void packets_cost_mode(void)
{
	struct frame small, big;

	setup();
	set_rule("default", 10, 3, TB_COST_PACKETS, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	frame_ipv4_len(&small, "198.18.11.1", 64);
	frame_ipv4_len(&big, "198.18.11.1", 1500);
	CHECK_EQ(run(xdp_fd, &small) + run(xdp_fd, &big) + run(xdp_fd, &small) == 3 * XDP_PASS, 1,
		 "three packets of any size fit a 3-packet burst");
	CHECK_EQ(run(xdp_fd, &small), XDP_DROP, "fourth packet dropped");
	teardown();
}

static void tc_program_polices(void)
{
	struct frame f;

	setup();
	set_rule("default", 1000, 2000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	frame_ipv4_len(&f, "198.18.12.1", 1000);
	CHECK_EQ(run(tc_fd, &f), (__u32)TC_ACT_UNSPEC, "tc: 1st frame passes on");
	CHECK_EQ(run(tc_fd, &f), (__u32)TC_ACT_UNSPEC, "tc: 2nd frame passes on");
	CHECK_EQ(run(tc_fd, &f), TC_ACT_SHOT, "tc: 3rd frame shot");
	frame_ipv6_len(&f, "2001:db8::12", 1000);
	CHECK_EQ(pass_count(tc_fd, &f, 4, (__u32)TC_ACT_UNSPEC), 2, "tc: IPv6");
	CHECK_EQ(bucket_of("198.18.12.1").c.dropped_bytes, 1000, "tc: charged skb->len");
	teardown();
}

static void destination_key_variant(void)
{
	struct frame_opts o = { .payload = 958 };
	struct frame f;

	setup_key(1);
	set_rule("default", 1000, 2000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	frame_ipv4(&f, "198.18.13.1", "198.19.13.2", &o);
	CHECK_EQ(pass_count(tc_fd, &f, 3, (__u32)TC_ACT_UNSPEC), 2, "dst key: burst");
	CHECK(has_bucket("198.19.13.2"), "bucket keyed by destination");
	CHECK(!has_bucket("198.18.13.1"), "no bucket for the source");
	frame_ipv4(&f, "198.18.13.9", "198.19.13.2", &o);
	CHECK_EQ(run(tc_fd, &f), TC_ACT_SHOT, "another source to the same destination: same bucket");
	teardown();
}

/* A GSO/GRO aggregate of 3 TCP segments: 54 bytes of headers carried
 * once in the aggregate, three times on the wire. */
static void gso_frame(struct frame *f, const char *src, struct __sk_buff *ctx)
{
	frame_ipv4_len(f, src, 14 + 20 + 20 + 3000);
	frame_tcp(f, 14, 0);
	memset(ctx, 0, sizeof(*ctx));
	ctx->gso_segs = 3;
	ctx->gso_size = 1000;
}

static void gso_aggregates_are_charged_by_segments(void)
{
	struct rule_spec spec = { .rate = 1, .burst = 10000 };
	struct __sk_buff ctx;
	struct frame f, out;
	struct tb_bucket b;

	setup();
	set_spec("default", &spec);
	gso_frame(&f, "198.18.22.1", &ctx);
	CHECK_EQ(run_out(tc_fd, &f, &out, &ctx), (__u32)TC_ACT_UNSPEC, "aggregate within the burst");
	b = bucket_of("198.18.22.1");
	CHECK_EQ(b.c.passed_bytes, 3054 + 2 * 54, "charged: the aggregate plus two more headers");
	CHECK_EQ(b.c.passed_packets, 3, "counted as its segments");
	CHECK_EQ(held(&b), (10000 - 3162ULL) * TB_NANO, "tokens left");

	/* A burst smaller than the aggregate: it passes once, from the full
	 * bucket, and the bucket owes the rest. A plain frame as large never passes. */
	spec.burst = 3000;
	set_spec("198.18.22.2", &spec);
	gso_frame(&f, "198.18.22.2", &ctx);
	CHECK_EQ(run_out(tc_fd, &f, &out, &ctx), (__u32)TC_ACT_UNSPEC, "aggregate larger than the burst: passes");
	CHECK_EQ(run_out(tc_fd, &f, &out, &ctx), TC_ACT_SHOT, "the next waits for the debt");
	frame_ipv4_len(&f, "198.18.22.2", 100);
	CHECK_EQ(run(tc_fd, &f), TC_ACT_SHOT, "a small frame too: the bucket is in debt");
	set_spec("198.18.22.3", &spec);
	frame_ipv4_len(&f, "198.18.22.3", 3054);
	frame_tcp(&f, 14, 0);
	CHECK_EQ(run(tc_fd, &f), TC_ACT_SHOT, "a plain frame larger than the burst never passes");

	/* By packets, an aggregate takes one per segment. */
	spec = (struct rule_spec){ .rate = 1, .burst = 5, .cost = TB_COST_PACKETS };
	set_spec("198.18.22.4", &spec);
	gso_frame(&f, "198.18.22.4", &ctx);
	CHECK_EQ(run_out(tc_fd, &f, &out, &ctx), (__u32)TC_ACT_UNSPEC, "by packets: 3 segments within 5");
	b = bucket_of("198.18.22.4");
	CHECK_EQ(held(&b), 2 * TB_NANO, "by packets: 3 of the 5 taken");
	CHECK_EQ(b.c.passed_packets, 3, "by packets: counted as its segments");
	CHECK_EQ(run_out(tc_fd, &f, &out, &ctx), TC_ACT_SHOT, "by packets: 3 more do not fit the 2 left");
	teardown();
}

/* XDP frames on a device of this process's own, in a network namespace of
 * its own, so that the program sees that device's MTU (1500). */
static __u32 run_xdp_on(int ifindex, const struct frame *f)
{
	struct xdp_md ctx = { .data_end = f->len, .ingress_ifindex = ifindex };
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = f->b, .data_size_in = f->len, .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx), .repeat = 1);

	CHECK(!bpf_prog_test_run_opts(xdp_fd, &o), "BPF_PROG_TEST_RUN on ifindex %d: %s", ifindex,
	      strerror(errno));
	return o.retval;
}

/* Generic XDP sees a TSO or GRO aggregate whole, with no segment count:
 * one longer than the device's MTU is charged and counted as the segments
 * the MTU cuts it into (54 bytes of headers leave 1460 of 1500). */
static void xdp_aggregates_are_charged_by_segments(void)
{
	struct rule_spec spec = { .rate = 1, .burst = 100000 };
	int home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC), ifindex = 0;
	struct tb_bucket b;
	struct frame f;

	if (!CHECK(home >= 0 && !unshare(CLONE_NEWNET), "a network namespace of our own: %s", strerror(errno)))
		return;
	if (CHECK(!system("ip link add tbmtu0 mtu 1500 type veth peer name tbmtu1 mtu 1500"),
		  "ip link add a veth pair"))
		ifindex = if_nametoindex("tbmtu0");
	setup();
	set_spec("default", &spec);
	if (CHECK(ifindex > 0, "index of tbmtu0: %s", strerror(errno))) {
		frame_ipv4_len(&f, "198.18.23.1", 54 + 2920);
		frame_tcp(&f, 14, 0);
		CHECK_EQ(run_xdp_on(ifindex, &f), XDP_PASS, "two full segments");
		b = bucket_of("198.18.23.1");
		CHECK_EQ(b.c.passed_packets, 2, "counted as two segments");
		CHECK_EQ(b.c.passed_bytes, 2974 + 54, "charged the headers twice");

		frame_ipv4_len(&f, "198.18.23.2", 54 + 2921);
		frame_tcp(&f, 14, 0);
		CHECK_EQ(run_xdp_on(ifindex, &f), XDP_PASS, "one byte more");
		b = bucket_of("198.18.23.2");
		CHECK_EQ(b.c.passed_packets, 3, "counted as three segments");
		CHECK_EQ(b.c.passed_bytes, 2975 + 2 * 54, "charged the headers three times");

		frame_ipv4_len(&f, "198.18.23.3", 1514);
		frame_tcp(&f, 14, 0);
		CHECK_EQ(run_xdp_on(ifindex, &f), XDP_PASS, "a full frame");
		b = bucket_of("198.18.23.3");
		CHECK_EQ(b.c.passed_packets, 1, "a frame the MTU allows is one packet");
		CHECK_EQ(b.c.passed_bytes, 1514, "charged as it is");
	}
	if (ifindex > 0) {
		/* More buffers than one (BPF_PROG_TEST_RUN splits a frame
		 * longer than a page): all of them are segmented. */
		frame_ipv4_len(&f, "198.18.23.5", 9000);
		frame_tcp(&f, 14, 0);
		CHECK_EQ(run_xdp_on(ifindex, &f), XDP_PASS, "a 9,000-byte aggregate");
		b = bucket_of("198.18.23.5");
		CHECK_EQ(b.c.passed_packets, 7, "counted as the seven segments of its 8,946 bytes of payload");
		CHECK_EQ(b.c.passed_bytes, 9000 + 6 * 54, "charged the headers seven times");
	}
	frame_ipv4_len(&f, "198.18.23.4", 54 + 2921);
	frame_tcp(&f, 14, 0);
	CHECK_EQ(run(xdp_fd, &f), XDP_PASS, "the same aggregate on loopback (MTU 65536)");
	b = bucket_of("198.18.23.4");
	CHECK_EQ(b.c.passed_packets, 1, "within loopback's MTU: one packet");
	teardown();
	CHECK(!setns(home, CLONE_NEWNET), "back to the test's network namespace: %s", strerror(errno));
	close(home);
}

/* A frame of more than one buffer (a device with a jumbo MTU; here
 * BPF_PROG_TEST_RUN splits any frame longer than a page) is charged and
 * counted all its bytes, not the first buffer's that the parser reads. */
static void jumbo_frames_are_charged_whole(void)
{
	setup();
	CHECK(skel->rodata->tb_xdp_frags, "multi-buffer XDP on this kernel (5.18 on): the program takes such frames");
	teardown();
	burst_then_drop("198.18.24.1", 9000, 20000);
}

TOPIC(prog_policing,
	T(xdp_ipv4_burst_then_drop),
	T(xdp_ipv6_burst_then_drop),
	T(vlan_tagged_frames_are_policed),
	T(truncated_headers_pass_as_malformed),
	T(non_ip_and_neighbour_discovery_pass),
	T(options_and_fragments_are_charged),
	T(addresses_are_isolated),
	T(packets_cost_mode),
	T(tc_program_polices),
	T(destination_key_variant),
	T(gso_aggregates_are_charged_by_segments),
	T(xdp_aggregates_are_charged_by_segments),
	T(jumbo_frames_are_charged_whole)
);
