// SPDX-License-Identifier: GPL-2.0
/* Actions mark, shape and remark: CE on ECN-capable packets, early drops
 * of the rest, the signal's hold, departure times, the DSCP of packets
 * over the limit. */
#define _GNU_SOURCE
#include "prog.h"

/* Frames of 1000 bytes against a 4,000,000-byte burst with no refill,
 * until the bucket is empty: 4,000 pass. Below half the burst is the early
 * signal's range. In its upper half an ECN-capable frame is marked (with
 * a probability rising to 1/16 there) and charged; in its lower half,
 * where marks have not slowed the sender, it is dropped early and charged
 * nothing. After each signal the next waits for the level to fall a
 * sixteenth of the burst (250 frames), so each half signals 1 to 4 times
 * (none in 1,000 frames has a chance below 1e-13). */
static void mark_check(int fd, __u32 pass, const char *src, int ipv6)
{
	struct rule_spec spec = { .rate = 1, .burst = 4000000, .action = TB_ACTION_MARK, .early = 1 };
	struct tb_stats before, after;
	struct frame f, out;
	int passed = 0, marked = 0, early = 0, bad_csum = 0, sent = 0;

	set_spec("default", &spec);
	if (ipv6)
		frame_ipv6_len(&f, src, 1000);
	else
		frame_ipv4_len(&f, src, 1000);
	frame_ecn(&f, ipv6, 2);   /* ECT(0) */
	before = totals();
	for (; passed < 4000 && sent < 4100; sent++) {
		int level = 4000 - passed;   /* in frames, before this one */
		__u32 ret = run_out(fd, &f, &out, NULL);
		int ecn = ipv6 ? (out.b[15] >> 4) & 3 : out.b[15] & 3;

		if (ret != pass) {
			early++;
			CHECK(level < 1000, "a frame dropped early at level %d frames: above the lower half",
			      level);
			continue;
		}
		passed++;
		if (ecn == 3) {
			marked++;
			CHECK(level >= 1000 && level < 2000, "a frame marked at level %d frames: outside the "
			      "upper half of the early range", level);
		}
		CHECK(ecn == 2 || ecn == 3, "ECN field after: %d", ecn);
		bad_csum += !ipv6 && ipv4_header_sum(out.b + 14) != 0xffff;
		/* Past the ECN byte only the IPv4 checksum (bytes 24-25) may change. */
		CHECK(!memcmp(out.b + 16, f.b + 16, 8) && !memcmp(out.b + 26, f.b + 26, f.len - 26) &&
		      (ipv6 || ecn == 3 || !memcmp(out.b + 24, f.b + 24, 2)),
		      "nothing but the ECN field and the checksum changes");
	}
	after = totals();
	CHECK_EQ(passed, 4000, "frames passed: every token paid for by one frame");
	CHECK(marked >= 1 && marked <= 4, "%d frames marked: expected 1 to 4", marked);
	CHECK(early >= 1 && early <= 4, "%d frames dropped early: expected 1 to 4", early);
	CHECK_EQ(after.marked_packets - before.marked_packets, marked, "stats: marked_packets");
	CHECK_EQ(after.early_dropped_packets - before.early_dropped_packets, early,
		 "stats: early_dropped_packets");
	CHECK_EQ(bad_csum, 0, "frames with an invalid IPv4 header checksum");
	CHECK_EQ(run_out(fd, &f, &out, NULL) == pass, 0, "the bucket is empty: the next frame is dropped");
}

static void mark_sets_ce_on_ect_packets(void)
{
	setup();
	mark_check(xdp_fd, XDP_PASS, "198.18.20.1", 0);
	mark_check(xdp_fd, XDP_PASS, "2001:db8::20:1", 1);
	mark_check(tc_fd, TC_ACT_UNSPEC, "198.18.20.2", 0);
	mark_check(tc_fd, TC_ACT_UNSPEC, "2001:db8::20:2", 1);
	teardown();
}

static void mark_drops_early_what_is_not_ect(void)
{
	struct rule_spec spec = { .rate = 1, .burst = 1000000, .action = TB_ACTION_MARK, .early = 1 };
	struct tb_stats before, after;
	struct frame f, out;
	int passed = 0;
	__u64 tokens;

	setup();
	set_spec("default", &spec);
	frame_ipv4_len(&f, "198.18.21.1", 1000);
	frame_ecn(&f, 0, 0);   /* Not-ECT */
	before = totals();
	for (int i = 0; i < 1000; i++) {
		passed += run_out(xdp_fd, &f, &out, NULL) == XDP_PASS;
		CHECK_EQ(out.b[15], f.b[15], "a Not-ECT packet is never marked");
	}
	after = totals();
	CHECK(passed < 1000, "%d of 1000 passed: the early signal dropped some", passed);
	CHECK_EQ(after.early_dropped_packets - before.early_dropped_packets, 1000 - passed,
		 "stats: early_dropped_packets");
	CHECK_EQ(after.marked_packets - before.marked_packets, 0, "stats: marked_packets");
	{
		struct tb_bucket b = bucket_of("198.18.21.1");

		tokens = held(&b);
	}
	/* 1 byte/s refills a few nano-bytes while the test runs. */
	CHECK(tokens >= (1000000 - 1000ULL * passed) * TB_NANO &&
	      tokens < (1000000 - 1000ULL * passed + 1) * TB_NANO,
	      "early drops take no tokens: %llu nano-bytes left after %d passed",
	      (unsigned long long)tokens, passed);
	teardown();
}

/* A TCP segment of 1000 bytes from src, with sequence number seq, CWR
 * set where cwr, ECT(0) where ect. */
static void tcp_segment(struct frame *f, const char *src, int ipv6, __u32 seq, int cwr, int ect)
{
	size_t l4 = 14 + (ipv6 ? 40 : 20);

	if (ipv6)
		frame_ipv6_len(f, src, 1000);
	else
		frame_ipv4_len(f, src, 1000);
	frame_tcp(f, 14, ipv6);
	if (!ipv6)
		frame_ipv4_checksum(f->b + 14);
	frame_ecn(f, ipv6, ect ? 2 : 0);
	frame_tcp_seq(f, l4, seq, 0x10 | (cwr ? 0x80 : 0));   /* ACK, CWR */
}

/* A sender at 1,000 bytes a segment drains a bucket of 1,000 segments (1
 * byte/s: no refill to speak of). The first signal (an early drop, or
 * under mark a CE mark) is answered after wait_ms: by the dropped
 * segment's retransmission, or by a segment with CWR. Then it sends new
 * segments until the bucket is well past empty. Returns the signals after
 * the answer (stats), or -1 when the first never came. */
static int signals_after_an_answer(int fd, __u32 pass, const char *src, int ipv6, int action, int wait_ms)
{
	struct rule_spec spec = { .rate = 1, .burst = 1000000, .action = action, .early = 1 };
	int mark = action == TB_ACTION_MARK, answered = 0;
	struct tb_stats from, to;
	__u32 seq = 1000, ret;
	struct frame f, out;

	set_spec("default", &spec);
	for (int i = 0; i < 1200; i++, seq += 1000) {
		tcp_segment(&f, src, ipv6, seq, 0, mark);
		ret = run_out(fd, &f, &out, NULL);
		if (answered || (ret == pass && (ipv6 ? out.b[15] >> 4 : out.b[15]) % 4 != 3 ))
			continue;
		usleep(wait_ms * 1000);
		if (mark)
			tcp_segment(&f, src, ipv6, seq + 1000, 1, 1);
		else
			tcp_segment(&f, src, ipv6, seq, 0, 0);
		from = totals();
		CHECK_EQ(run_out(fd, &f, &out, NULL), pass, "the answer passes");
		answered = 1;
		seq += 1000;
	}
	to = totals();
	CHECK_EQ(run(fd, &f), pass == XDP_PASS ? XDP_DROP : TC_ACT_SHOT, "the bucket is empty at the end");
	if (!answered)
		return -1;
	return to.early_dropped_packets - from.early_dropped_packets + to.marked_packets - from.marked_packets;
}

/* The answer to a signal tells the round trip: 50 ms is long, and the
 * signal stays off until the bucket is empty; 0 ms is not, and a sender
 * that goes on draining meets the signal again. For drop the answer is
 * the dropped segment's retransmission, for mark a segment with CWR;
 * IPv4 and IPv6, XDP and tc. */
static void an_answer_after_a_long_round_trip_stops_the_signal(void)
{
	setup();
	CHECK_EQ(signals_after_an_answer(xdp_fd, XDP_PASS, "198.18.22.1", 0, TB_ACTION_DROP, 50), 0,
		 "drop, IPv4, xdp, retransmitted after 50 ms: signals after it");
	CHECK(signals_after_an_answer(xdp_fd, XDP_PASS, "198.18.22.2", 0, TB_ACTION_DROP, 0) > 0,
	      "drop, IPv4, xdp, retransmitted at once: the signal goes on");
	{
		struct tb_bucket at50 = bucket_of("198.18.22.1"), at0 = bucket_of("198.18.22.2");

		CHECK(bucket_long_rtt(&at50, now_ns()), "tbctl reads 50 ms as a long round trip");
		CHECK(!bucket_long_rtt(&at0, now_ns()), "tbctl reads 0 ms as not long");
	}
	CHECK_EQ(signals_after_an_answer(tc_fd, TC_ACT_UNSPEC, "2001:db8::22:1", 1, TB_ACTION_DROP, 50), 0,
		 "drop, IPv6, tc, retransmitted after 50 ms: signals after it");
	CHECK(signals_after_an_answer(tc_fd, TC_ACT_UNSPEC, "2001:db8::22:2", 1, TB_ACTION_DROP, 0) > 0,
	      "drop, IPv6, tc, retransmitted at once: the signal goes on");
	CHECK_EQ(signals_after_an_answer(xdp_fd, XDP_PASS, "2001:db8::22:3", 1, TB_ACTION_MARK, 50), 0,
		 "mark, IPv6, xdp, CWR after 50 ms: signals after it");
	CHECK(signals_after_an_answer(xdp_fd, XDP_PASS, "2001:db8::22:4", 1, TB_ACTION_MARK, 0) > 0,
	      "mark, IPv6, xdp, CWR at once: the signal goes on");
	CHECK_EQ(signals_after_an_answer(tc_fd, TC_ACT_UNSPEC, "198.18.22.5", 0, TB_ACTION_MARK, 50), 0,
		 "mark, IPv4, tc, CWR after 50 ms: signals after it");
	teardown();
}

/* Shape under a total: each address's frames leave at its own rate's
 * spacing until the total's, slower, spaces them: the later departure of
 * the two. A frame the total cannot schedule within the horizon is
 * dropped and refunded to its address. */
static void shape_under_a_total_takes_the_later_departure(void)
{
	/* 10,000 B/s each, 10,000 B/s together: two addresses' frames,
	 * alternating, leave 100 ms apart in all, 200 ms apart each. */
	struct rule_spec spec = { .rate = 10000, .burst = 1500, .action = TB_ACTION_SHAPE,
				  .horizon_ns = 1000000000, .total_rate = 10000, .total_burst = 1500 };
	struct __sk_buff ctx;
	struct frame f[2], out;
	__u64 prev = 0, last[2] = { 0, 0 };
	int delayed = 0, shot = 0;

	setup_hook(0, 1);
	set_spec("198.18.24.0/24", &spec);
	frame_ipv4_len(&f[0], "198.18.24.1", 1000);
	frame_ipv4_len(&f[1], "198.18.24.2", 1000);
	memset(&ctx, 0, sizeof(ctx));
	CHECK_EQ(run_out(tc_fd, &f[0], &out, &ctx), (__u32)TC_ACT_UNSPEC, "first frame: from both bursts");
	CHECK_EQ(ctx.tstamp, 0, "first frame: no departure time");
	for (int i = 0; i < 20; i++) {
		__u32 ret;

		memset(&ctx, 0, sizeof(ctx));
		ret = run_out(tc_fd, &f[(i + 1) % 2], &out, &ctx);
		if (ret == TC_ACT_SHOT) {
			shot++;
			continue;
		}
		CHECK(ctx.tstamp > 0, "frame %d: a departure time", i + 2);
		if (prev)
			CHECK_EQ(ctx.tstamp - prev, 100000000, "the total spaces all departures 100 ms apart");
		if (last[(i + 1) % 2])
			CHECK(ctx.tstamp - last[(i + 1) % 2] >= 100000000, "each address's at least its own spacing");
		prev = last[(i + 1) % 2] = ctx.tstamp;
		delayed++;
	}
	CHECK(delayed >= 9 && delayed <= 11, "%d frames scheduled within the 1 s horizon", delayed);
	CHECK_EQ(shot, 20 - delayed, "frames beyond the total's horizon dropped");
	CHECK_EQ(bucket_of("198.18.24.2").c.dropped_packets + bucket_of("198.18.24.1").c.dropped_packets, shot,
		 "and counted as dropped by their addresses");
	teardown();
}

static void shape_sets_departure_times(void)
{
	/* 10,000 B/s: one 1000-byte frame per 100 ms, a 1 s horizon. Slow
	 * enough that even an emulated CPU runs the frames faster. */
	struct rule_spec spec = { .rate = 10000, .burst = 1500, .action = TB_ACTION_SHAPE,
				  .horizon_ns = 1000000000 };
	struct __sk_buff ctx;
	struct frame f, out;
	struct tb_stats s;
	__u64 prev = 0;
	int delayed = 0, shot = 0;

	setup_hook(0, 1);
	set_spec("default", &spec);
	frame_ipv4_len(&f, "198.18.23.1", 1000);
	memset(&ctx, 0, sizeof(ctx));
	CHECK_EQ(run_out(tc_fd, &f, &out, &ctx), (__u32)TC_ACT_UNSPEC, "first frame: from the burst");
	CHECK_EQ(ctx.tstamp, 0, "first frame: no departure time");
	for (int i = 0; i < 20; i++) {
		__u32 ret;

		memset(&ctx, 0, sizeof(ctx));
		ret = run_out(tc_fd, &f, &out, &ctx);
		if (ret == TC_ACT_SHOT) {
			shot++;
			continue;
		}
		CHECK_EQ(ret, (__u32)TC_ACT_UNSPEC, "a shaped frame passes on");
		CHECK(ctx.tstamp > 0, "frame %d: a departure time", i + 2);
		if (prev)
			CHECK_EQ(ctx.tstamp - prev, 100000000, "spacing of departures, ns");
		prev = ctx.tstamp;
		delayed++;
	}
	/* The run takes far less than 100 ms a frame: the schedule fills to
	 * the horizon, and the rest is dropped. */
	CHECK(delayed >= 9 && delayed <= 11, "%d frames scheduled within the 1 s horizon", delayed);
	CHECK_EQ(shot, 20 - delayed, "frames beyond the horizon dropped");
	s = totals();
	CHECK_EQ(s.delayed_packets, delayed, "stats: delayed_packets");
	CHECK_EQ(s.c.dropped_packets, shot, "stats: dropped_packets");
	teardown();

	/* Where nothing honours a departure time (XDP, tc ingress), shape can
	 * only drop what does not fit. */
	setup();
	set_spec("default", &spec);
	CHECK_EQ(pass_count(xdp_fd, &f, 3, XDP_PASS), 1, "shape without a delaying hook: tail drop");
	teardown();
}

/* A frame's traffic class (IPv4 TOS, IPv6 Traffic Class) at IP header h. */
static int tclass(const unsigned char *h, int ipv6)
{
	return ipv6 ? (h[0] & 0xf) << 4 | h[1] >> 4 : h[1];
}

static void tclass_set(unsigned char *h, int ipv6, int tc)
{
	if (ipv6) {
		h[0] = (h[0] & 0xf0) | tc >> 4;
		h[1] = (h[1] & 0x0f) | (tc & 0xf) << 4;
		return;
	}
	h[1] = tc;
	frame_ipv4_checksum(h);
}

/* Frames of 1000 bytes, DSCP cs1 and ECT(1), against a remark af13 rule
 * of 4,000 bytes' burst and no refill: 4 pass as they came, the other 6
 * pass with DSCP af13 (14), ECT(1) kept, the IPv4 checksum valid, nothing
 * else changed; counted passed and monitored, none dropped. */
static void remark_check(int fd, __u32 pass, const char *src, int ipv6, int vlans)
{
	struct rule_spec spec = { .rate = 1, .burst = 4000, .action = TB_ACTION_REMARK, .dscp = 14 };
	struct frame_opts o = { .vlans = vlans, .payload = 1000 - 14 - 4 * vlans - (ipv6 ? 40 : 20) };
	size_t l3 = 14 + 4 * vlans;
	struct tb_stats before, after;
	struct frame f, out;
	int as_sent = 0, remarked = 0;

	set_spec("default", &spec);
	if (ipv6)
		frame_ipv6(&f, src, "2001:db8:ffff::1", &o);
	else
		frame_ipv4(&f, src, "198.19.0.1", &o);
	tclass_set(f.b + l3, ipv6, 8 << 2 | 1);
	before = totals();
	for (int i = 0; i < 10; i++) {
		int tc;

		CHECK_EQ(run_out(fd, &f, &out, NULL), pass, "frame %d of a remark rule passes", i + 1);
		tc = tclass(out.b + l3, ipv6);
		as_sent += tc == (8 << 2 | 1);
		remarked += tc == (14 << 2 | 1);
		CHECK(ipv6 || ipv4_header_sum(out.b + l3) == 0xffff, "frame %d: a valid IPv4 header checksum", i + 1);
		CHECK(!memcmp(out.b, f.b, l3) && !memcmp(out.b + l3 + 2, f.b + l3 + 2, ipv6 ? f.len - l3 - 2 : 8) &&
		      (ipv6 || !memcmp(out.b + l3 + 12, f.b + l3 + 12, f.len - l3 - 12)),
		      "frame %d: nothing but the class and the checksum changes", i + 1);
	}
	after = totals();
	CHECK_EQ(as_sent, 4, "frames within the burst keep their DSCP");
	CHECK_EQ(remarked, 6, "frames over it get af13, their ECN field kept");
	CHECK_EQ(after.c.passed_packets - before.c.passed_packets, 4, "stats: passed_packets");
	CHECK_EQ(after.c.monitored_packets - before.c.monitored_packets, 6, "stats: monitored_packets");
	CHECK_EQ(after.c.dropped_packets - before.c.dropped_packets, 0, "stats: dropped_packets");
	CHECK_EQ(bucket_of(src).c.monitored_packets, 6, "the address's monitored_packets");
}

static void remark_sets_the_dscp_over_the_limit(void)
{
	setup();
	remark_check(xdp_fd, XDP_PASS, "198.18.23.1", 0, 0);
	remark_check(xdp_fd, XDP_PASS, "2001:db8::23:1", 1, 0);
	remark_check(xdp_fd, XDP_PASS, "198.18.23.2", 0, 1);
	remark_check(tc_fd, TC_ACT_UNSPEC, "198.18.23.3", 0, 0);
	remark_check(tc_fd, TC_ACT_UNSPEC, "2001:db8::23:3", 1, 1);
	teardown();
}

/* Over a rule's total, as over its rate: remarked, not dropped. Two
 * addresses of 3 frames each fit their own burst, but the total's 4
 * frames take only four of them. */
static void remark_over_a_total(void)
{
	struct frame f, out;
	int remarked = 0;
	char src[32];

	setup();
	set_total("198.18.24.0/28", 1, 3000, 1, 4000, TB_ACTION_REMARK);
	for (int i = 0; i < 6; i++) {
		snprintf(src, sizeof(src), "198.18.24.%d", 1 + i / 3);
		frame_ipv4_len(&f, src, 1000);
		tclass_set(f.b + 14, 0, 8 << 2);
		CHECK_EQ(run_out(xdp_fd, &f, &out, NULL), XDP_PASS, "frame %d passes", i + 1);
		remarked += out.b[15] == 0;
		CHECK_EQ(ipv4_header_sum(out.b + 14), 0xffff, "frame %d: a valid IPv4 header checksum", i + 1);
	}
	CHECK_EQ(remarked, 2, "frames over the total remarked to cs0");
	CHECK_EQ(totals().c.monitored_packets, 2, "stats: monitored_packets");
	teardown();
}

/* With a peak (RFC 2698): of 1000-byte frames at once against a committed
 * burst of 3,000 bytes and a peak burst of 8,000, and rates too slow to
 * refill, 3 pass as sent, 5 remarked, the rest dropped; a bucket made
 * again after eviction neither passes more nor remarks more. */
static void remark_with_a_peak(int fd, __u32 pass, __u32 drop, const char *src)
{
	struct rule_spec spec = { .rate = 1, .burst = 3000, .action = TB_ACTION_REMARK, .dscp = 10,
				  .peak_rate = 2, .peak_burst = 8000 };
	struct tb_stats before = totals(), after;
	int green = 0, yellow = 0, red = 0;
	struct frame f, out;

	set_spec("default", &spec);
	frame_ipv4_len(&f, src, 1000);
	tclass_set(f.b + 14, 0, 0);
	for (int i = 0; i < 12; i++) {
		__u32 ret = run_out(fd, &f, &out, NULL);

		red += ret == drop;
		green += ret == pass && out.b[15] == 0;
		yellow += ret == pass && out.b[15] == 10 << 2;
		CHECK(ret == drop || ipv4_header_sum(out.b + 14) == 0xffff, "frame %d: a valid checksum", i + 1);
	}
	CHECK(green == 3 && yellow == 5 && red == 4, "%d green, %d yellow, %d red: expected 3, 5, 4", green, yellow,
	      red);
	after = totals();
	CHECK_EQ(after.c.passed_packets - before.c.passed_packets, 3, "stats: passed_packets");
	CHECK_EQ(after.c.monitored_packets - before.c.monitored_packets, 5, "stats: monitored_packets (remarked)");
	CHECK_EQ(after.c.dropped_packets - before.c.dropped_packets, 4, "stats: dropped_packets (over the peak)");
	evict(src);
	CHECK_EQ(pass_count(fd, &f, 4, pass), 0, "made again after eviction: nothing passes yet");
}

static void remark_with_a_peak_drops_over_it(void)
{
	setup();
	remark_with_a_peak(xdp_fd, XDP_PASS, XDP_DROP, "198.18.25.1");
	remark_with_a_peak(tc_fd, TC_ACT_UNSPEC, TC_ACT_SHOT, "198.18.25.2");
	teardown();
}

TOPIC(prog_actions,
	T(mark_sets_ce_on_ect_packets),
	T(mark_drops_early_what_is_not_ect),
	T(an_answer_after_a_long_round_trip_stops_the_signal),
	T(shape_sets_departure_times),
	T(shape_under_a_total_takes_the_later_departure),
	T(remark_sets_the_dscp_over_the_limit),
	T(remark_over_a_total),
	T(remark_with_a_peak_drops_over_it)
);
