// SPDX-License-Identifier: GPL-2.0
/* The events ring buffer: what a decision's record says, one record a key
 * an interval, the cap a second over all keys, and what a full buffer
 * loses, counted. */
#define _GNU_SOURCE
#include "prog.h"
#include "logic/event_gate.h"

/* Frame f run n times in one BPF_PROG_TEST_RUN (the emulated VM takes
 * milliseconds a call); the last run's verdict. */
static __u32 run_times(int fd, const struct frame *f, __u32 n)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = f->b, .data_size_in = f->len, .repeat = n);

	CHECK(!bpf_prog_test_run_opts(fd, &o), "BPF_PROG_TEST_RUN: %s", strerror(errno));
	return o.retval;
}

static void set_sampling(__u32 rate, __u32 interval_ms)
{
	struct tb_config cfg;

	CHECK(!state_read_config(&rs->m, &cfg), "read config");
	cfg.event_rate = rate;
	cfg.event_interval_ms = interval_ms;
	CHECK(!state_write_config(&rs->m, &cfg), "write config");
}

/* A flood from one address over its rule, on both hooks: one record in
 * the interval, and what it says: the key, the rule, drop, over its rate,
 * the frame's bytes, a time between the run's. */
static void a_flood_gives_one_record_an_interval(void)
{
	struct frame f;
	struct seen *s;
	struct tb_addr a;
	__u64 t0, t1;
	int id;

	setup();
	id = set_rule("default", 1000, 2000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	set_sampling(1000, 60000);
	frame_ipv4_len(&f, "198.18.40.1", 1000);
	t0 = now_ns();
	CHECK_EQ(pass_count(xdp_fd, &f, 2, XDP_PASS), 2, "two frames within the burst");
	CHECK_EQ(run_times(xdp_fd, &f, 298), XDP_DROP, "then drops");
	CHECK_EQ(run_times(tc_fd, &f, 300), TC_ACT_SHOT, "on tc too");
	t1 = now_ns();
	s = records();
	addr_parse("198.18.40.1", &a);
	if (CHECK_EQ(s->n, 1, "records of 598 drops within the interval")) {
		CHECK(!memcmp(&s->e[0].key, &a, sizeof(a)), "the record's key is the address");
		CHECK_EQ(s->e[0].rule, id + 1, "its rule");
		CHECK_EQ(s->e[0].verdict, TB_EVENT_DROP, "verdict");
		CHECK_EQ(s->e[0].why, TB_WHY_RATE, "why");
		CHECK_EQ(s->e[0].bytes, 1000, "bytes");
		CHECK_EQ(s->e[0].packets, 1, "packets");
		CHECK(s->e[0].ns >= t0 && s->e[0].ns <= t1, "its time is the decision's");
	}
	set_sampling(1000, 0);
	CHECK_EQ(pass_count(xdp_fd, &f, 10, XDP_PASS), 0, "ten more drops");
	CHECK_EQ(records()->n, 10, "records with no interval: one a decision");
	set_sampling(0, 0);
	CHECK_EQ(pass_count(xdp_fd, &f, 10, XDP_PASS), 0, "ten more");
	CHECK_EQ(records()->n, 0, "records with events off");
	teardown();
}

/* 300 addresses dropped at once (a frame larger than the burst): under
 * a rate of 1,000 a second each has its record; under 100, 100 do (the
 * test takes far less than a second, and the cap counts by second: at
 * most twice that across a second's end), and the rest are counted as
 * capped. */
static void the_rate_caps_records_over_all_keys(void)
{
	struct tb_stats before, after;
	char src[32];
	struct frame f;
	int n;

	for (int rate = 1000; rate >= 100; rate -= 900) {
		setup();
		set_rule("default", 1, 1500, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
		set_sampling(rate, 60000);
		before = totals();
		for (int i = 0; i < 300; i++) {
			snprintf(src, sizeof(src), "198.18.%d.%d", 41 + i / 200, 1 + i % 200);
			frame_ipv4_len(&f, src, 1600);
			run(xdp_fd, &f);
		}
		after = totals();
		n = records()->n;
		if (rate == 1000)
			CHECK_EQ(n, 300, "rate 1000: records of 300 addresses' drops");
		else
			CHECK(n >= 100 && n <= 200, "rate 100: %d records of 300 addresses' drops", n);
		CHECK_EQ(n + after.events_capped - before.events_capped, 300, "records and capped, together");
		teardown();
	}
}

/* With no reader, the buffer fills: every decision after that is counted
 * lost, none twice, none both. */
static void a_full_buffer_counts_what_it_loses(void)
{
	struct tb_stats before, after;
	struct frame f;
	int n;

	setup();
	set_rule("default", 1, 1500, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	set_sampling(TB_EVENT_RATE_MAX, 0);
	frame_ipv4_len(&f, "198.18.43.1", 1000);
	before = totals();
	CHECK_EQ(run(xdp_fd, &f), XDP_PASS, "the first frame passes");
	CHECK_EQ(run_times(xdp_fd, &f, 5999), XDP_DROP, "5,999 more are dropped");
	after = totals();
	n = records()->n;
	CHECK(n > 4000 && n < 5999, "%d records in the buffer", n);
	CHECK_EQ(n + after.events_lost - before.events_lost, 5999, "records and lost, together");
	teardown();
}

/* Why, as the record says it: a total's refusal, a remark rule's
 * remarked packet and its peak's drop, a later fragment whose first was
 * not seen under a port rule. */
static void records_say_why(void)
{
	struct rule_spec peak = { .rate = 1, .burst = 1500, .action = TB_ACTION_REMARK, .dscp = 10,
				  .peak_rate = 1, .peak_burst = 2000 };
	struct frame_opts o = { .fragment = 1, .payload = 200 };
	struct frame f;
	struct seen *s;
	int why[8] = {}, verdict[4] = {};

	setup();
	set_total("198.18.44.0/24", 1000, 1500, 1000, 1500, TB_ACTION_DROP);
	set_spec("198.18.45.0/24", &peak);
	set_match("198.18.46.0/24", "udp", "53", 1500, TB_SCOPE_PER_ADDRESS, 0);
	set_sampling(1000, 0);
	frame_ipv4_len(&f, "198.18.44.1", 1000);
	run(xdp_fd, &f);
	frame_ipv4_len(&f, "198.18.44.2", 1000);
	run(xdp_fd, &f);
	frame_ipv4_len(&f, "198.18.45.1", 1000);
	for (int i = 0; i < 3; i++)
		run(xdp_fd, &f);
	frame_ipv4(&f, "198.18.46.1", "198.19.0.1", &o);
	run(xdp_fd, &f);
	s = records();
	for (int i = 0; i < s->n; i++) {
		why[s->e[i].why & 7]++;
		verdict[s->e[i].verdict & 3]++;
	}
	CHECK_EQ(why[TB_WHY_TOTAL], 1, "a record of the total's refusal");
	CHECK_EQ(why[TB_WHY_RATE], 1, "of a remark rule's remarked packet");
	CHECK_EQ(why[TB_WHY_PEAK], 1, "of its peak's drop");
	CHECK_EQ(why[TB_WHY_UNKNOWN], 1, "of the fragment whose first was not seen");
	CHECK_EQ(verdict[TB_EVENT_REMARK], 1, "one remarked");
	CHECK_EQ(verdict[TB_EVENT_DROP], 3, "three dropped");
	CHECK_EQ(s->n, 4, "records");
	teardown();
}

TOPIC(prog_events,
	T(a_flood_gives_one_record_an_interval),
	T(the_rate_caps_records_over_all_keys),
	T(a_full_buffer_counts_what_it_loses),
	T(records_say_why)
);
