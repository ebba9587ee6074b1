// SPDX-License-Identifier: GPL-2.0
/* tbbench: tbctl's in-kernel benchmarks, printed as one JSON document.
 *
 *   tbbench micro [--rounds R] [--repeat N] [--addrs K]
 *       Per-packet cost under BPF_PROG_TEST_RUN (median of R rounds of N
 *       runs, 64-byte frames) next to an empty program and a floor
 *       program; K addresses (a power of two), each run in an order of
 *       its own, against the floor with its state one word and as large
 *       as a bucket; 10,000 rules against 1; 1,000 rules, a tenth with a
 *       protocol and port match, against the floor; two CPUs on one address;
 *       map memory.
 *       Programs compared are timed in interleaved rounds, and each ratio
 *       is the median of the rounds' ratios.
 *   tbbench fill --dev DEV --addrs N
 *       Put N addresses (2001:db8::/64 and up) into DEV's pinned bucket
 *       table, each with counters and a rule cache one generation old, as
 *       every bucket is just after a rule change: for timing tbctl's show.
 *       Those whose set is full are left out; prints how many went in.
 *   tbbench evict --dev DEV --addr A --every-ms MS --seconds T
 *       Take A's bucket out of DEV's table every MS ms for T seconds, as
 *       an eviction does; prints how often it was there.
 *   tbbench slots --dev DEV
 *       The rule slots in use as the map holds them, one per line: "slot
 *       prefix rate_units_per_sec" (the crash tests check repairs).
 *   tbbench gen --dev DEV --dmac MAC --src A --sources S --dst B
 *               --size BYTES --seconds T [--count N]
 *       Kernel-side traffic generator: live frames of BYTES (Ethernet,
 *       IPv4, UDP) from S source addresses, sent out of DEV by XDP for T
 *       seconds (or N frames); where the kernel refuses live frames, the
 *       same frames through a packet socket. Prints the driver (live or
 *       packet), frames sent and ns taken.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <net/if.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <sys/socket.h>
#include <sys/ioctl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/udp.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "lib/clock.h"
#include "tb.skel.h"
#include "bench.skel.h"
#include "logic/bucket.h"
#include "lib/hook.h"
#include "lib/order.h"
#include "view/output.h"
#include "lib/bans.h"
#include "lib/match_text.h"
#include "lib/ruleset.h"
#include "lib/state.h"
#include "lib/xdisp.h"
#include "lib/err.h"
#include "anchor.skel.h"
#include "lib/pending.h"
#include "lib/tables.h"
#include "../tests/packets.h"
#include "logic/sizing.h"
#include "logic/hash.h"

static int rounds = 7;
static __u32 repeat = 2000000;
static __u32 many = 1 << 20;

static void die(const char *what)
{
	fprintf(stderr, "tbbench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double run_ns(int fd, const struct frame *f, __u32 reps, double per_run)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = f->b, .data_size_in = f->len, .repeat = reps);

	if (bpf_prog_test_run_opts(fd, &o))
		die("BPF_PROG_TEST_RUN");
	return o.duration / per_run;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(v[0]), cmp_double);
	return v[n / 2];
}

/* Programs compared with each other are timed in interleaved rounds, each
 * round running every one of them in turn: a change in the machine's
 * speed (its neighbours, its clock) then shifts a whole round alike, and
 * the median of each round's ratio keeps it out of the ratio. */
struct timed {
	int fd;
	const struct frame *f;
	__u32 reps;
	double per_run; /* packets one run handles */
	double v[64];   /* ns per packet, per round */
	double ns;      /* their median */
};

static void cost_interleaved(struct timed *p, int n)
{
	double v[64];

	for (int r = 0; r < rounds; r++)
		for (int i = 0; i < n; i++)
			p[i].v[r] = run_ns(p[i].fd, p[i].f, p[i].reps, p[i].per_run);
	for (int i = 0; i < n; i++) {
		memcpy(v, p[i].v, sizeof(v[0]) * rounds);
		p[i].ns = median(v, rounds);
	}
}

/* Median over the rounds of a's cost over b's. */
static double ratio_of(const struct timed *a, const struct timed *b)
{
	double v[64];

	for (int r = 0; r < rounds; r++)
		v[r] = a->v[r] / b->v[r];
	return median(v, rounds);
}

static void set_group_rule(struct ruleset *rs, const char *prefix, __u64 rate, __u64 burst, __u8 group_len)
{
	struct rule_spec s = { .rate = rate, .burst = burst, .scope = group_len ? TB_SCOPE_GROUP : 0,
			       .group_len = group_len };
	struct tb_prefix p;
	char err[128];

	if (prefix_parse(prefix, &p, err, sizeof(err)) != PREFIX_OK || ruleset_set(rs, &p, &s) < 0) {
		fprintf(stderr, "tbbench: rule %s: %s\n", prefix, err);
		exit(1);
	}
}

static void set_rule(struct ruleset *rs, const char *prefix, __u64 rate, __u64 burst)
{
	set_group_rule(rs, prefix, rate, burst, 0);
}

/* 10,000 rules: the default plus 9,999 IPv6 /64s, 2001:db8:0:X::/64. */
static void many_rules(struct ruleset *rs, __u64 rate, __u64 burst)
{
	char p[64];

	for (int x = 1; x < 10000; x++) {
		snprintf(p, sizeof(p), "2001:db8:0:%x::/64", x);
		set_rule(rs, p, rate, burst);
	}
}

/* 1,000 rules over 198.18.0.0/16, one per /26, a tenth of them with a
 * match (proto udp and the benchmark frame's destination port, 43947):
 * the default plus 999 more. The frame from 198.18.0.1 takes the match
 * of 198.18.0.0/26, which has no plain rule. */
static void matched_rules(struct ruleset *rs, __u64 rate, __u64 burst)
{
	struct rule_spec s = { .rate = rate, .burst = burst };
	struct tb_prefix p;
	char text[64], err[160];

	for (int i = 0; i < 999; i++) {
		snprintf(text, sizeof(text), "198.18.%d.%d/26", i / 4, i % 4 * 64);
		if (prefix_parse(text, &p, err, sizeof(err)) != PREFIX_OK ||
		    (i % 10 == 0 && match_parse(&(struct match_words){ .proto = "udp", .dport = "43947" }, &p, err, sizeof(err))) || ruleset_set(rs, &p, &s) < 0) {
			fprintf(stderr, "tbbench: rule %s: %s\n", text, err);
			exit(1);
		}
	}
}

/* The rules of a loaded object, with owed[] in use and SipHash placement
 * as tbctl's fresh attach sets them up. */
static struct ruleset *ruleset_of(struct bpf_object *obj)
{
	struct ruleset *rs = calloc(1, sizeof(*rs));
	struct tb_config cfg;
	struct tb_maps m;
	__u32 zero = 0;

	maps_from_obj(obj, &m);
	if (state_read_config(&m, &cfg))
		die("read config");
	cfg.owed_shift = __builtin_ctz(bpf_map__max_entries(bpf_object__find_map_by_name(obj, "owed")));
	cfg.place = TB_PLACE_SIPHASH;
	cfg.place_key[0] = 0x0706050403020100ULL;
	cfg.place_key[1] = 0x0f0e0d0c0b0a0908ULL;
	cfg.table_shift = __builtin_ctz(bpf_map__max_entries(bpf_object__find_map_by_name(obj, "buckets")));
	cfg.ways = TB_WAYS;
	if (bpf_map_update_elem(m.config, &zero, &cfg, BPF_ANY))
		die("write config");
	if (!rs || ruleset_load(rs, &m))
		die("read rules");
	return rs;
}

/* Events on, sampled as a fresh attach sets them. */
static void events_on(struct ruleset *rs)
{
	struct tb_config cfg;

	if (state_read_config(&rs->m, &cfg))
		die("read config");
	cfg.event_rate = TB_EVENT_RATE_DEFAULT;
	cfg.event_interval_ms = TB_EVENT_INTERVAL_MS_DEFAULT;
	if (state_write_config(&rs->m, &cfg))
		die("write config");
}

/* Bans by hand of 198.19.0.0/16 and 2001:db8:ffff::/48 (the benchmark's
 * frames come from neither), or of its frames' own addresses. */
static void bans_by_hand(struct ruleset *rs, int the_frames)
{
	const char *const words[2][2] = { { "198.19.0.0/16", "2001:db8:ffff::/48" }, { "198.18.0.1", "2001:db8::1" } };
	struct banfile_entry e[2];
	char err[200];

	for (int i = 0; i < 2; i++)
		if (ban_words(words[the_frames][i], NULL, 0, &e[i], err, sizeof(err)))
			die(err);
	if (bans_put(&rs->m, e, 2, true, now_ns()))
		die("write the ban list");
}

/* What an operator of bans, events and SYN and ICMP matches has on a
 * device that none of them hits: SYN and echo-request rules that ban,
 * bans by hand elsewhere, events on; the default rule bans too where
 * nothing is refused (a drop under it would ban the frames). */
static void features_configured(struct ruleset *rs, __u64 rate, __u64 burst)
{
	struct rule_spec s = { .rate = rate, .burst = burst, .cost = TB_COST_BYTES, .ban_ms = 60000, .ban_after = 1 };
	const struct match_words w[2] = { { .proto = "tcp", .flags = "syn" }, { .proto = "icmp", .type = "echo-request" } };
	struct tb_prefix p;
	char err[160];

	for (int i = 0; i < 3; i++) {
		if (i == 2 && rate < TB_RATE_MAX)
			s.ban_ms = 0;
		if (prefix_parse("default", &p, err, sizeof(err)) != PREFIX_OK ||
		    (i < 2 && match_parse(&w[i], &p, err, sizeof(err))) || ruleset_set(rs, &p, &s) < 0) {
			fprintf(stderr, "tbbench: rule %d: %s\n", i, err);
			exit(1);
		}
	}
	bans_by_hand(rs, 0);
	events_on(rs);
}

/* tbctl's object, loaded as tbctl attaches it. */
static struct tb *load_tb(void)
{
	struct tb *t = tb__open();

	if (!t)
		die("open tb object");
	t->rodata->tb_xdp_frags = hook_xdp_frags(t->progs.tb_xdp);
	t->rodata->tb_acq_rel = order_acq_rel();
	if (tb__load(t))
		die("load tb object");
	return t;
}

static void add_ns(struct json_object *o, const char *name, double ns)
{
	json_object_object_add(o, name, json_object_new_double(ns));
}

/* The policing program as an extension for the dispatcher, or as the
 * plain XDP program attached alone, with one rule no packet exhausts. */
static struct tb *load_tb_as(bool extension)
{
	struct tb *t = tb__open();
	struct tb_err e;
	int anchor = -1;

	if (!t)
		die("open tb object");
	t->rodata->tb_xdp_frags = hook_xdp_frags(t->progs.tb_xdp);
	t->rodata->tb_acq_rel = order_acq_rel();
	bpf_program__set_autoload(t->progs.tb_tc, false);
	if (extension && (anchor = xdisp_prepare(t->progs.tb_xdp, &e)) < 0) {
		fprintf(stderr, "tbbench: %s\n", e.msg);
		exit(1);
	}
	if (tb__load(t))
		die("load tb object");
	if (anchor >= 0)
		close(anchor);
	set_rule(ruleset_of(t->obj), "default", TB_RATE_MAX, TB_BURST_MAX);
	return t;
}

/* What libxdp's dispatcher adds per packet to tbctl's admit path: the
 * dispatcher holding a program that passes everything (xdp-filter's
 * place) and tbctl's, against the two run alone, in interleaved rounds.
 * Its cost is the difference: two calls through the slots and the
 * chain's checks. (A dispatcher of one is its program, through the
 * trampoline that replaces its function, which BPF_PROG_TEST_RUN does
 * not run.) Needs a kernel that loads extension programs. */
static int dispatcher_cost(void)
{
	struct tb *direct = load_tb_as(false), *ext = load_tb_as(true);
	struct anchor *pass = anchor__open_and_load(), *pass_ext = anchor__open();
	struct json_object *doc = json_object_new_object();
	int links[2], progs[2], two;
	struct tb_stats st = {};
	struct tb_maps m;
	struct timed p[3];
	struct frame v4;
	struct tb_err e;

	if (!pass || !pass_ext || xdisp_prepare(pass_ext->progs.tb_xdp_anchor, &e) < 0 || anchor__load(pass_ext))
		die("load a program that passes everything, alone and as an extension");
	progs[0] = bpf_program__fd(pass_ext->progs.tb_xdp_anchor);
	progs[1] = bpf_program__fd(ext->progs.tb_xdp);
	two = xdisp_build(progs, 2, links, &e);
	if (two < 0) {
		fprintf(stderr, "tbbench: %s\n", e.msg);
		return 1;
	}
	frame_ipv4_len(&v4, "198.18.0.1", 64);
	p[0] = (struct timed){ .fd = bpf_program__fd(direct->progs.tb_xdp), .f = &v4, .reps = repeat, .per_run = 1 };
	p[1] = (struct timed){ .fd = bpf_program__fd(pass->progs.tb_xdp_anchor), .f = &v4, .reps = repeat,
			       .per_run = 1 };
	p[2] = (struct timed){ .fd = two, .f = &v4, .reps = repeat, .per_run = 1 };
	cost_interleaved(p, 3);
	/* Each run through the dispatcher charged the program in it. */
	maps_from_obj(ext->obj, &m);
	if (stats_sum(&m, &st) || st.c.passed_packets != (__u64)rounds * repeat) {
		fprintf(stderr, "tbbench: the dispatcher ran tbctl's program %llu times, not %llu\n",
			(unsigned long long)st.c.passed_packets, (unsigned long long)rounds * repeat);
		return 1;
	}
	add_ns(doc, "xdp_v4_pass_ns", p[0].ns);
	add_ns(doc, "pass_all_ns", p[1].ns);
	add_ns(doc, "dispatcher_two_ns", p[2].ns);
	add_ns(doc, "dispatcher_cost_ns", p[2].ns - p[1].ns - p[0].ns);
	out.pretty = 1;
	out_json(doc);
	return 0;
}

static __u64 memlock_of(int fd)
{
	char path[64], line[256];
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		die("read fdinfo");
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "memlock: %llu", &v) == 1)
			break;
	fclose(f);
	return v;
}


/* A later fragment under the 1,000 rules with a match, its first seen:
 * what finding the first's ports costs beside a whole datagram's pass. */
static void fragment_lookup(struct tb *t1k, struct json_object *o, struct json_object *q)
{
	struct frame whole, first, later;
	struct timed p[2];

	frame_ipv4_len(&whole, "198.18.0.1", 64);
	first = whole;
	later = whole;
	/* The frame's payload bytes make its ports 43947, the rules'. */
	frame_ipv4_fragment(&first, 1, 7, 43947, 43947);
	frame_ipv4_fragment(&later, 0, 7, 0, 0);
	run_ns(bpf_program__fd(t1k->progs.tb_xdp), &first, 1, 1);
	for (int i = 0; i < 2; i++)
		p[i] = (struct timed){ .fd = bpf_program__fd(t1k->progs.tb_xdp), .f = i ? &later : &whole,
				       .reps = repeat, .per_run = 1 };
	cost_interleaved(p, 2);
	add_ns(o, "xdp_v4_later_fragment_1k_matched_rules_ns", p[1].ns);
	add_ns(q, "xdp_v4_later_fragment_over_whole_1k_matched", ratio_of(&p[1], &p[0]));
}

static void per_packet(struct json_object *doc)
{
	struct bench *b = bench__open_and_load();
	struct tb *t = load_tb(), *td = load_tb(), *t10k = load_tb(), *t64 = load_tb();
	struct tb *t1k = load_tb(), *td1k = load_tb(), *tde = load_tb();
	struct tb *tf = load_tb(), *tdf = load_tb(), *tbh = load_tb(), *tbr = load_tb();
	struct ruleset *rs = ruleset_of(t->obj), *rsd = ruleset_of(td->obj), *rs10k = ruleset_of(t10k->obj);
	struct ruleset *rs64 = ruleset_of(t64->obj), *rs1k = ruleset_of(t1k->obj), *rsd1k = ruleset_of(td1k->obj);
	struct ruleset *rsde = ruleset_of(tde->obj), *rsf = ruleset_of(tf->obj), *rsdf = ruleset_of(tdf->obj);
	struct ruleset *rsbh = ruleset_of(tbh->obj), *rsbr = ruleset_of(tbr->obj);
	struct frame v4, v6;
	struct json_object *o = json_object_new_object(), *q = json_object_new_object();
	/* The last two for IPv6 alone. */
	enum { FLOOR, XDP_PASS, XDP_DROP, TC_PASS, TC_DROP, XDP_PASS_1K, XDP_DROP_1K, XDP_DROP_EVENTS,
	       XDP_PASS_FEATURES, XDP_DROP_FEATURES, XDP_BANNED_BY_HAND, XDP_BANNED_BY_RULE, XDP_PASS_10K,
	       XDP_PASS_PER64, N };
	struct timed p4[N - 2], p6[N], empty;

	if (!b)
		die("load bench object");
	frame_ipv4_len(&v4, "198.18.0.1", 64);
	frame_ipv6_len(&v6, "2001:db8::1", 78);   /* the shortest IPv6/UDP frame */

	/* Under the limit: a rule no packet can exhaust, in t and t10k; over
	 * it, in td: 1 byte/s after a 1500-byte burst drops nearly all. */
	set_rule(rs, "default", TB_RATE_MAX, TB_BURST_MAX);
	set_rule(rs10k, "default", TB_RATE_MAX, TB_BURST_MAX);
	many_rules(rs10k, TB_RATE_MAX, TB_BURST_MAX);
	set_rule(rsd, "default", 1, 1500);
	/* The same drops with events on, as attach sets them: a key's first
	 * drop is logged, the rest sampled out. */
	set_rule(rsde, "default", 1, 1500);
	events_on(rsde);
	set_rule(rs1k, "default", TB_RATE_MAX, TB_BURST_MAX);
	matched_rules(rs1k, TB_RATE_MAX, TB_BURST_MAX);
	set_rule(rsd1k, "default", 1, 1500);
	matched_rules(rsd1k, 1, 1500);
	set_group_rule(rs64, "::/0", TB_RATE_MAX, TB_BURST_MAX, 64);
	/* Bans, events and matches configured, none hit: admitted, and
	 * dropped over the default rule's rate. */
	features_configured(rsf, TB_RATE_MAX, TB_BURST_MAX);
	features_configured(rsdf, 1, 1500);
	/* Dropped by a ban: by hand, and by a rule's, which the frames'
	 * first refusal makes (the drop that makes it is timed too, once). */
	set_rule(rsbh, "default", TB_RATE_MAX, TB_BURST_MAX);
	bans_by_hand(rsbh, 1);
	{
		struct rule_spec s = { .rate = 1, .burst = 1500, .ban_ms = 30U * 86400 * 1000, .ban_after = 1 };
		struct tb_prefix p;
		char err[128];

		if (prefix_parse("default", &p, err, sizeof(err)) != PREFIX_OK || ruleset_set(rsbr, &p, &s) < 0)
			die("rule with a ban");
	}
	for (int fam = 0; fam < 2; fam++) {
		struct timed *p = fam ? p6 : p4;
		const struct frame *f = fam ? &v6 : &v4;
		int fd[N] = {
			[FLOOR] = bpf_program__fd(b->progs.bench_floor),
			[XDP_PASS] = bpf_program__fd(t->progs.tb_xdp),
			[XDP_DROP] = bpf_program__fd(td->progs.tb_xdp),
			[TC_PASS] = bpf_program__fd(t->progs.tb_tc),
			[TC_DROP] = bpf_program__fd(td->progs.tb_tc),
			[XDP_PASS_1K] = bpf_program__fd(t1k->progs.tb_xdp),
			[XDP_DROP_1K] = bpf_program__fd(td1k->progs.tb_xdp),
			[XDP_DROP_EVENTS] = bpf_program__fd(tde->progs.tb_xdp),
			[XDP_PASS_FEATURES] = bpf_program__fd(tf->progs.tb_xdp),
			[XDP_DROP_FEATURES] = bpf_program__fd(tdf->progs.tb_xdp),
			[XDP_BANNED_BY_HAND] = bpf_program__fd(tbh->progs.tb_xdp),
			[XDP_BANNED_BY_RULE] = bpf_program__fd(tbr->progs.tb_xdp),
			[XDP_PASS_10K] = bpf_program__fd(t10k->progs.tb_xdp),
			[XDP_PASS_PER64] = bpf_program__fd(t64->progs.tb_xdp),
		};

		for (int i = 0; i < N - 2 * !fam; i++)
			p[i] = (struct timed){ .fd = fd[i], .f = f, .reps = repeat, .per_run = 1 };
		cost_interleaved(p, N - 2 * !fam);
	}
	empty = (struct timed){ .fd = bpf_program__fd(b->progs.bench_empty), .f = &v4, .reps = repeat, .per_run = 1 };
	cost_interleaved(&empty, 1);
	fragment_lookup(t1k, o, q);
	add_ns(o, "empty_xdp_ns", empty.ns);
	add_ns(o, "floor_v4_ns", p4[FLOOR].ns);
	add_ns(o, "floor_v6_ns", p6[FLOOR].ns);
	add_ns(o, "xdp_v4_pass_ns", p4[XDP_PASS].ns);
	add_ns(o, "xdp_v6_pass_ns", p6[XDP_PASS].ns);
	add_ns(o, "tc_v4_pass_ns", p4[TC_PASS].ns);
	add_ns(o, "tc_v6_pass_ns", p6[TC_PASS].ns);
	add_ns(o, "xdp_v4_pass_1k_matched_rules_ns", p4[XDP_PASS_1K].ns);
	add_ns(o, "xdp_v4_drop_1k_matched_rules_ns", p4[XDP_DROP_1K].ns);
	add_ns(o, "xdp_v6_pass_10k_rules_ns", p6[XDP_PASS_10K].ns);
	add_ns(o, "xdp_v6_pass_per64_ns", p6[XDP_PASS_PER64].ns);
	add_ns(o, "xdp_v4_drop_ns", p4[XDP_DROP].ns);
	add_ns(o, "xdp_v4_drop_events_ns", p4[XDP_DROP_EVENTS].ns);
	add_ns(o, "xdp_v6_drop_events_ns", p6[XDP_DROP_EVENTS].ns);
	add_ns(o, "xdp_v4_pass_features_ns", p4[XDP_PASS_FEATURES].ns);
	add_ns(o, "xdp_v4_drop_features_ns", p4[XDP_DROP_FEATURES].ns);
	add_ns(o, "xdp_v4_banned_by_hand_ns", p4[XDP_BANNED_BY_HAND].ns);
	add_ns(o, "xdp_v6_banned_by_hand_ns", p6[XDP_BANNED_BY_HAND].ns);
	add_ns(o, "xdp_v4_banned_by_rule_ns", p4[XDP_BANNED_BY_RULE].ns);
	add_ns(o, "xdp_v6_banned_by_rule_ns", p6[XDP_BANNED_BY_RULE].ns);
	add_ns(o, "xdp_v6_drop_ns", p6[XDP_DROP].ns);
	add_ns(o, "tc_v4_drop_ns", p4[TC_DROP].ns);
	add_ns(o, "tc_v6_drop_ns", p6[TC_DROP].ns);
	add_ns(q, "xdp_v4_drop_over_floor", ratio_of(&p4[XDP_DROP], &p4[FLOOR]));
	add_ns(q, "xdp_v4_drop_events_over_drop", ratio_of(&p4[XDP_DROP_EVENTS], &p4[XDP_DROP]));
	add_ns(q, "xdp_v4_pass_features_over_pass", ratio_of(&p4[XDP_PASS_FEATURES], &p4[XDP_PASS]));
	add_ns(q, "xdp_v4_drop_features_over_drop", ratio_of(&p4[XDP_DROP_FEATURES], &p4[XDP_DROP]));
	add_ns(q, "xdp_v4_banned_by_hand_over_drop", ratio_of(&p4[XDP_BANNED_BY_HAND], &p4[XDP_DROP]));
	add_ns(q, "xdp_v4_banned_by_rule_over_drop", ratio_of(&p4[XDP_BANNED_BY_RULE], &p4[XDP_DROP]));
	add_ns(q, "xdp_v4_pass_over_floor", ratio_of(&p4[XDP_PASS], &p4[FLOOR]));
	add_ns(q, "xdp_v6_10k_rules_over_one", ratio_of(&p6[XDP_PASS_10K], &p6[XDP_PASS]));
	add_ns(q, "xdp_v4_1k_matched_pass_over_floor", ratio_of(&p4[XDP_PASS_1K], &p4[FLOOR]));
	add_ns(q, "xdp_v4_1k_matched_drop_over_floor", ratio_of(&p4[XDP_DROP_1K], &p4[FLOOR]));
	add_ns(q, "xdp_v6_per64_over_per_address", ratio_of(&p6[XDP_PASS_PER64], &p6[XDP_PASS]));
	json_object_object_add(o, "ratios", q);
	json_object_object_add(doc, "per_packet", o);
	tb__destroy(t);
	tb__destroy(td);
	tb__destroy(t10k);
	tb__destroy(t64);
	tb__destroy(t1k);
	tb__destroy(tde);
	tb__destroy(tf);
	tb__destroy(tdf);
	tb__destroy(tbh);
	tb__destroy(tbr);
	free(rsf);
	free(rsdf);
	free(rsbh);
	free(rsbr);
	tb__destroy(td1k);
	free(rs64);
	free(rs1k);
	free(rsd1k);
	free(rsde);
	bench__destroy(b);
	free(rs);
	free(rsd);
	free(rs10k);
}

/* The many-address program over many live addresses, timed per address:
 * the floor's (its state one word, or as large as tbctl's), or tbctl's
 * with 1 or 10,000 rules, every address under its limit, or with every
 * address over it: a spoofed flood, whose addresses come too rarely for
 * a CPU to keep a copy of their bounds or a counting cache slot. */
struct many {
	struct bench *b;
	struct ruleset *rs;
};

enum many_kind { MANY_FLOOR, MANY_FLOOR_SIZED, MANY_TBCTL, MANY_TBCTL_10K, MANY_TBCTL_OVER, MANY_KINDS };

static struct many many_load(enum many_kind kind)
{
	struct many m = { .b = bench__open() };
	int floor = kind == MANY_FLOOR || kind == MANY_FLOOR_SIZED;

	if (!m.b)
		die("open bench object");
	m.b->rodata->many_n = many;
	m.b->rodata->many_floor = floor;
	/* Over: the first visit spends the whole burst, and 1 B/s never
	 * refills a frame's worth between visits. */
	if (kind == MANY_TBCTL_OVER)
		m.b->rodata->many_len = TB_BURST_MIN_BYTES;
	/* Only the tables the program uses get their full size. */
	bpf_map__set_max_entries(m.b->maps.buckets, 1U << tb_table_shift(floor ? 1 : 2 * many));
	bpf_map__set_max_entries(m.b->maps.owed, floor ? 1 : 1U << state_owed_shift(2 * many));
	bpf_map__set_max_entries(m.b->maps.floor_state, floor ? 2 * many : 1);
	if (kind == MANY_FLOOR_SIZED &&
	    bpf_map__set_value_size(m.b->maps.floor_state, sizeof(struct tb_bucket)))
		die("size the floor's state");
	if (bench__load(m.b))
		die("load bench object");
	m.rs = ruleset_of(m.b->obj);
	if (kind == MANY_TBCTL_OVER)
		set_rule(m.rs, "default", 1, TB_BURST_MIN_BYTES);
	else
		set_rule(m.rs, "default", TB_RATE_MAX, TB_BURST_MAX);
	if (kind == MANY_TBCTL_10K)
		many_rules(m.rs, TB_RATE_MAX, TB_BURST_MAX);
	return m;
}

/* Packets per address as tbctl reads them: buckets and what the CPUs'
 * caches hold for them. */
struct many_count {
	const struct tb_maps *m;
	const struct tb_pending *pend;
	__u64 passed, counted;
	__u64 most_passed;      /* by any one address */
};

static int many_count_one(const struct tb_addr *k, const struct tb_bucket *b, void *ctx)
{
	struct many_count *n = ctx;
	struct tb_bucket c = *b;
	int err = pending_add(n->m, n->pend, k, &c);

	n->passed += c.c.passed_packets;
	n->counted += c.c.passed_packets + c.c.dropped_packets;
	if (c.c.passed_packets > n->most_passed)
		n->most_passed = c.c.passed_packets;
	return err;
}

static struct many_count many_counted(const struct ruleset *rs)
{
	struct many_count n = { .m = &rs->m };
	struct tb_pending pend;

	if (pending_read(&rs->m, &rs->cfg, &pend))
		die("read the per-CPU counting caches");
	n.pend = &pend;
	if (buckets_foreach(&rs->m, many_count_one, &n))
		die("read the buckets' counters");
	pending_free(&pend);
	return n;
}

static void many_addresses(struct json_object *doc)
{
	struct json_object *o = json_object_new_object();
	struct many m[MANY_KINDS];
	struct timed p[MANY_KINDS];
	struct many_count over;
	struct frame f;
	struct tb_stats s;
	__u64 over_created, over_global;

	frame_ipv4_len(&f, "198.18.0.1", 64);
	for (int i = 0; i < MANY_KINDS; i++) {
		m[i] = many_load(i);
		p[i] = (struct timed){ .fd = bpf_program__fd(m[i].b->progs.bench_many), .f = &f,
				       .reps = 1, .per_run = many };
		/* The first pass creates every address's state; then time hits.
		 * Over the limit, a second pass drops every address's first
		 * packet under the lock, which leaves a bound for the lockless
		 * drops that follow. */
		run_ns(p[i].fd, &f, 1, many);
		if (i == MANY_TBCTL_OVER)
			run_ns(p[i].fd, &f, 1, many);
	}
	cost_interleaved(p, MANY_KINDS);
	over = many_counted(m[MANY_TBCTL_OVER].rs);
	stats_sum(&m[MANY_TBCTL_OVER].rs->m, &s);
	over_created = s.buckets_created;
	over_global = s.c.passed_packets + s.c.dropped_packets;
	stats_sum(&m[MANY_TBCTL].rs->m, &s);
	json_add_u64(o, "addresses", many);
	add_ns(o, "floor_ns", p[MANY_FLOOR].ns);
	add_ns(o, "floor_sized_ns", p[MANY_FLOOR_SIZED].ns);
	/* What each floor's table holds per address, as the memory section
	 * counts tbctl's. */
	json_add_u64(o, "floor_bytes_per_address",
		     memlock_of(bpf_map__fd(m[MANY_FLOOR].b->maps.floor_state)) / (2 * many));
	json_add_u64(o, "floor_sized_bytes_per_address",
		     memlock_of(bpf_map__fd(m[MANY_FLOOR_SIZED].b->maps.floor_state)) / (2 * many));
	add_ns(o, "tbctl_ns", p[MANY_TBCTL].ns);
	json_add_u64(o, "tbctl_buckets_created", s.buckets_created);
	add_ns(o, "tbctl_10k_rules_ns", p[MANY_TBCTL_10K].ns);
	add_ns(o, "tbctl_over_floor", ratio_of(&p[MANY_TBCTL], &p[MANY_FLOOR]));
	add_ns(o, "tbctl_over_sized_floor", ratio_of(&p[MANY_TBCTL], &p[MANY_FLOOR_SIZED]));
	add_ns(o, "ten_k_rules_over_one", ratio_of(&p[MANY_TBCTL_10K], &p[MANY_TBCTL]));
	add_ns(o, "tbctl_all_over_ns", p[MANY_TBCTL_OVER].ns);
	add_ns(o, "tbctl_all_over_over_floor", ratio_of(&p[MANY_TBCTL_OVER], &p[MANY_FLOOR]));
	json_add_u64(o, "all_over_sent_packets", (__u64)(2 + rounds) * many);
	json_add_u64(o, "all_over_admitted_packets", over.passed);
	json_add_u64(o, "all_over_most_admitted_per_address", over.most_passed);
	json_add_u64(o, "all_over_counted_packets", over.counted);
	/* A set holds 8 addresses wherever the hash puts them: at half the
	 * table's size some sets are full, and their addresses evict one
	 * another, taking their counts with them (docs/design.md, "The table"). */
	json_add_u64(o, "all_over_buckets_created", over_created);
	json_add_u64(o, "all_over_global_packets", over_global);
	json_object_object_add(doc, "many_addresses", o);
	for (int i = 0; i < MANY_KINDS; i++) {
		bench__destroy(m[i].b);
		free(m[i].rs);
	}
}

struct racer {
	int cpu, fd;
	const struct frame *f;
	double ns;
	int err;
};

static void *race(void *arg)
{
	struct racer *r = arg;
	cpu_set_t set;
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = r->f->b, .data_size_in = r->f->len, .repeat = repeat);

	CPU_ZERO(&set);
	CPU_SET(r->cpu, &set);
	r->err = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	if (!r->err && bpf_prog_test_run_opts(r->fd, &o))
		r->err = errno;
	r->ns = o.duration;
	return NULL;
}

struct race_result {
	double ns;              /* per packet per thread */
	__u64 passed, bound;    /* bytes admitted, and b + r*T */
	__u64 admitted;         /* packets admitted */
	__u64 sent, counted;    /* packets; counted as tbctl reads them */
};

/* One or two threads on one address at rate and burst. */
static struct race_result race_cost(int threads, __u64 rate, __u64 burst)
{
	struct tb *t = load_tb();
	struct ruleset *rs = ruleset_of(t->obj);
	struct race_result res = {};
	struct tb_pending pend;
	struct racer r[2];
	pthread_t th[2];
	struct tb_bucket bk = {};
	struct tb_addr a;
	struct frame f;
	__u64 t0, t1;

	set_rule(rs, "default", rate, burst);
	frame_ipv4_len(&f, "198.18.0.1", 100);
	for (int i = 0; i < threads; i++) {
		r[i] = (struct racer){ .cpu = i, .fd = bpf_program__fd(t->progs.tb_xdp), .f = &f };
		pthread_create(&th[i], NULL, race, &r[i]);
	}
	t0 = now_ns();
	for (int i = 0; i < threads; i++) {
		pthread_join(th[i], NULL);
		if (r[i].err)
			die("test run thread");
		res.ns += r[i].ns / threads;
	}
	t1 = now_ns();
	addr_parse("198.18.0.1", &a);
	bucket_get(&rs->m, &rs->cfg, &a, &bk);
	if (pending_read(&rs->m, &rs->cfg, &pend))
		die("read the per-CPU counting caches");
	if (pending_add(&rs->m, &pend, &a, &bk))
		die("read the address's counters");
	pending_free(&pend);
	res.passed = bk.c.passed_bytes;
	res.admitted = bk.c.passed_packets;
	/* t0 is taken after the threads start: widen T by the time before. */
	res.bound = burst + (__u64)((unsigned __int128)rate * (t1 - t0 + 1000000) / 1000000000ULL);
	res.sent = (__u64)threads * repeat;
	res.counted = bk.c.passed_packets + bk.c.dropped_packets;
	tb__destroy(t);
	free(rs);
	return res;
}

/* One address on one CPU and on two, 100-byte frames as fast as the
 * CPUs run them: a flood (1 MB/s: a few thousandths admitted, so nearly
 * every frame takes the drop path), over its limit with many admitted
 * (100 MB/s: a million admissions a second, each taking the lock and
 * writing the bucket; at this VM's speeds a tenth or more of the frames),
 * and under it (everything admitted). */
static void contention(struct json_object *doc)
{
	const struct { const char *name; __u64 rate, burst; } c[] = {
		{ "flood", 1000000, 10000 },
		{ "over", 100000000, 10000 },
		{ "under", TB_RATE_MAX, TB_BURST_MAX },
	};
	struct json_object *o = json_object_new_object();

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct json_object *e = json_object_new_object();
		struct race_result one = race_cost(1, c[i].rate, c[i].burst);
		struct race_result two = race_cost(2, c[i].rate, c[i].burst);

		json_object_object_add(e, "one_cpu_ns", json_object_new_double(one.ns));
		json_object_object_add(e, "two_cpus_ns_per_thread", json_object_new_double(two.ns));
		json_add_u64(e, "two_cpus_passed_bytes", two.passed);
		json_add_u64(e, "two_cpus_bound_bytes", two.bound);
		json_add_u64(e, "two_cpus_sent_packets", two.sent);
		json_add_u64(e, "two_cpus_admitted_packets", two.admitted);
		json_add_u64(e, "two_cpus_counted_packets", two.counted);
		json_object_object_add(o, c[i].name, e);
	}
	json_object_object_add(doc, "contention", o);
}

static void memory(struct json_object *doc)
{
	struct json_object *o = json_object_new_object();
	const __u32 sizes[] = { TB_DEFAULT_MAX_ADDRS, 1 << 20 };
	const char *keys[] = { "default", "one_million" };

	for (int i = 0; i < 2; i++) {
		struct json_object *e = json_object_new_object();
		struct tb *t = tb__open();
		__u64 fixed = 0, table;

		if (!t)
			die("open tb object");
		bpf_map__set_max_entries(t->maps.buckets, 1U << tb_table_shift(sizes[i]));
		bpf_map__set_max_entries(t->maps.owed, 1U << state_owed_shift(sizes[i]));
		if (tb__load(t))
			die("load tb object");
		/* owed[] grows with the table: it counts per address. */
		table = memlock_of(bpf_map__fd(t->maps.buckets)) + memlock_of(bpf_map__fd(t->maps.owed));
		for (int k = 0; k < tb_map_count; k++) {
			int fd = bpf_object__find_map_fd_by_name(t->obj, tb_map_names[k]);

			if (strcmp(tb_map_names[k], "buckets") && strcmp(tb_map_names[k], "owed"))
				fixed += memlock_of(fd);
		}
		json_add_u64(e, "max_addrs", sizes[i]);
		json_add_u64(e, "table_bytes", table);
		json_object_object_add(e, "bytes_per_address", json_object_new_double((double)table / sizes[i]));
		json_add_u64(e, "other_maps_bytes", fixed);
		json_object_object_add(o, keys[i], e);
		tb__destroy(t);
	}
	json_object_object_add(doc, "memory", o);
}

static int parse_mac(const char *s, unsigned char *mac)
{
	return sscanf(s, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &mac[0], &mac[1], &mac[2], &mac[3], &mac[4],
		      &mac[5]) == 6 ? 0 : -1;
}

static void gen_report(const char *driver, __u64 sent, __u64 ns)
{
	printf("{\"driver\": \"%s\", \"sent_packets\": %llu, \"ns\": %llu}\n", driver,
	       (unsigned long long)sent, (unsigned long long)ns);
}

/* The generator's frames through an AF_PACKET socket, bypassing the
 * qdisc, with each frame's source drawn as bench_gen draws it (the
 * base's block, visited in a scattered order). */
static int gen_packet(const struct frame *f, int ifindex, int sources, double seconds, __u64 count)
{
	enum { BATCH = 64 };
	static unsigned char bufs[BATCH][sizeof(f->b)];
	struct sockaddr_ll to = { .sll_family = AF_PACKET, .sll_ifindex = ifindex, .sll_halen = ETH_ALEN };
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	__u32 base, seq = 0;
	__u64 t0, t1, sent = 0;
	int one = 1, sk = socket(AF_PACKET, SOCK_RAW, 0);

	if (sk < 0 || setsockopt(sk, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one)))
		die("open a packet socket");
	memcpy(to.sll_addr, f->b, ETH_ALEN);
	memcpy(&base, f->b + 26, 4);
	base = ntohl(base) & ~(__u32)(sources - 1);
	for (int i = 0; i < BATCH; i++) {
		memcpy(bufs[i], f->b, f->len);
		iov[i] = (struct iovec){ .iov_base = bufs[i], .iov_len = f->len };
		msgs[i] = (struct mmsghdr){ .msg_hdr = { .msg_name = &to, .msg_namelen = sizeof(to),
							 .msg_iov = &iov[i], .msg_iovlen = 1 } };
	}
	t0 = t1 = now_ns();
	while (sent < count && t1 - t0 < seconds * 1e9) {
		int n = count - sent < BATCH ? (int)(count - sent) : BATCH, got;

		for (int i = 0; i < n; i++) {
			__u32 saddr = htonl(base | ((seq + i) * 2654435761u & (sources - 1))), csum = 0;
			__u16 w[10];

			memcpy(bufs[i] + 26, &saddr, 4);
			memset(bufs[i] + 24, 0, 2);
			memcpy(w, bufs[i] + 14, sizeof(w));
			for (int k = 0; k < 10; k++)
				csum += w[k];
			csum = (csum & 0xffff) + (csum >> 16);
			csum = (csum & 0xffff) + (csum >> 16);
			w[0] = ~csum;
			memcpy(bufs[i] + 24, w, 2);
		}
		got = sendmmsg(sk, msgs, n, 0);
		if (got < 0 && errno != ENOBUFS && errno != EAGAIN)
			die("send through the packet socket");
		if (got > 0) {
			sent += got;
			seq += got;
		}
		t1 = now_ns();
	}
	gen_report("packet", sent, t1 - t0);
	close(sk);
	return 0;
}

static int gen(const char *dev, const char *dmac, const char *src, int sources, const char *dst,
	       int size, double seconds, __u64 count)
{
	struct frame f;
	struct frame_opts fo = { .payload = size - 34 };   /* UDP header and data */
	struct udphdr *udp;
	struct ifreq ifr;
	struct bench *b;
	int sk;
	__u64 t0, t1, sent = 0;
	int ifindex = if_nametoindex(dev);

	if (!ifindex || size < 60 || size > 1514 || sources < 1 || sources > 1 << 20 || (sources & (sources - 1))) {
		fprintf(stderr, "tbbench gen: need an existing --dev, --size 60..1514, "
				"--sources a power of two up to 1048576\n");
		return 2;
	}
	frame_ipv4(&f, src, dst, &fo);
	if (parse_mac(dmac, f.b)) {
		fprintf(stderr, "tbbench gen: bad --dmac %s\n", dmac);
		return 2;
	}
	/* An ioctl, not /sys: /sys shows the namespace it was mounted in. */
	sk = socket(AF_INET, SOCK_DGRAM, 0);
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", dev);
	if (sk < 0 || ioctl(sk, SIOCGIFHWADDR, &ifr))
		die("read the device's MAC address");
	memcpy(f.b + 6, ifr.ifr_hwaddr.sa_data, 6);
	close(sk);
	udp = (struct udphdr *)(f.b + 34);
	udp->source = htons(9999);
	udp->dest = htons(9000);
	udp->len = htons(size - 34);
	udp->check = 0;

	b = bench__open();
	if (!b)
		die("open bench object");
	b->rodata->gen_ifindex = ifindex;
	b->rodata->gen_sources = sources;
	if (bench__load(b))
		die("load bench object");
	/* Chunks of 64k frames until the time or the count is up. */
	t0 = t1 = now_ns();
	while (sent < count && t1 - t0 < seconds * 1e9) {
		__u32 chunk = count - sent < 65536 ? count - sent : 65536;
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = f.b, .data_size_in = f.len, .repeat = chunk,
			    .flags = BPF_F_TEST_XDP_LIVE_FRAMES, .batch_size = 64);

		if (bpf_prog_test_run_opts(bpf_program__fd(b->progs.bench_gen), &o)) {
			/* A kernel may refuse to inject live frames (a
			 * sandbox's does, with EPERM): a packet socket sends
			 * the same frames, at a lower rate. */
			if (sent || errno != EPERM)
				die("live-frame test run");
			fprintf(stderr, "tbbench gen: the kernel refuses live frames (%s): "
					"sending through a packet socket\n", strerror(errno));
			bench__destroy(b);
			return gen_packet(&f, ifindex, sources, seconds, count);
		}
		sent += chunk;
		t1 = now_ns();
	}
	gen_report("live", sent, t1 - t0);
	bench__destroy(b);
	return 0;
}

/* n addresses 2001:db8::/96 + i with made-up counters, each in the first
 * free way of its set as the datapath places it: the whole table read,
 * filled and written back, for a device that passes no traffic. An
 * address whose set is full is left out. */
static int fill(const char *dev, __u32 n)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), count, out, placed = 0;
	struct tb_config cfg;
	struct tb_maps m;
	struct tb_set *sets = NULL;
	__u32 *keys = NULL;
	int err = state_open(dev, &m);

	if (!err && (state_read_config(&m, &cfg) || bpf_obj_get_info_by_fd(m.buckets, &info, &len)))
		err = -errno;
	if (!err) {
		sets = calloc(info.max_entries, sizeof(*sets));
		keys = calloc(info.max_entries, sizeof(*keys));
		err = sets && keys ? 0 : -ENOMEM;
	}
	count = info.max_entries;
	if (!err && bpf_map_lookup_batch(m.buckets, NULL, &out, keys, sets, &count, NULL) && errno != ENOENT)
		err = -errno;
	if (err) {
		fprintf(stderr, "tbbench fill: read %s's table: %s\n", dev, strerror(-err));
		return 1;
	}
	for (__u32 i = 0; i < n; i++) {
		struct tb_addr a = { .w = { htonl(0x20010db8), 0, htonl(i >> 16), htonl(i & 0xffff) } };
		struct tb_set *set = &sets[tb_set_index(tb_place_hash(&cfg, &a), cfg.table_shift)];

		for (int w = 0; w < cfg.ways; w++) {
			if (!tb_way_free(set, w))
				continue;
			set->key[w] = a;
			set->b[w] = (struct tb_bucket){ .gen = cfg.gen - 1, .lvl = { .last_ns = 1 } };
			set->b[w].c = (struct tb_counters){ .passed_packets = i, .passed_bytes = 1000ULL * i,
							    .dropped_packets = i % 7, .dropped_bytes = 1000ULL * (i % 7) };
			placed++;
			break;
		}
	}
	for (__u32 i = 0; i < info.max_entries; i++)
		keys[i] = i;
	count = info.max_entries;
	if (bpf_map_update_batch(m.buckets, keys, sets, &count, NULL)) {
		fprintf(stderr, "tbbench fill: write %s's table: %s\n", dev, strerror(errno));
		return 1;
	}
	printf("{\"placed\": %u}\n", placed);
	maps_close(&m);
	free(keys);
	free(sets);
	return 0;
}

/* Take addr's way of DEV's table away every ms milliseconds for seconds,
 * as an eviction does, and print how often it held one: for a test of
 * re-created buckets. A read-modify-write of the set from user space,
 * without the lock: a charge made meanwhile to another address of the
 * set may be undone, as it may by any rewrite of the table. */
static int evict(const char *dev, const char *addr, int ms, double seconds)
{
	struct tb_config cfg;
	struct tb_maps m;
	struct tb_set set;
	struct tb_addr a;
	__u32 si, n = 0;
	__u64 end;
	int err = state_open(dev, &m), w;

	if (!err && state_read_config(&m, &cfg))
		err = -errno;
	if (err || addr_parse(addr, &a)) {
		fprintf(stderr, "tbbench evict: %s on %s: %s\n", addr, dev, err ? strerror(-err) : "not an address");
		return 1;
	}
	si = tb_set_index(tb_place_hash(&cfg, &a), cfg.table_shift);
	end = now_ns() + (__u64)(seconds * 1e9);
	while (now_ns() < end) {
		if (bpf_map_lookup_elem(m.buckets, &si, &set)) {
			fprintf(stderr, "tbbench evict: read set %u: %s\n", si, strerror(errno));
			return 1;
		}
		w = tb_way_find(&set, &a, cfg.ways);
		if (w >= 0) {
			tb_way_clear(&set, w);
			if (bpf_map_update_elem(m.buckets, &si, &set, BPF_EXIST)) {
				fprintf(stderr, "tbbench evict: write set %u: %s\n", si, strerror(errno));
				return 1;
			}
			n++;
		}
		usleep(ms * 1000);
	}
	printf("{\"evicted\": %u}\n", n);
	maps_close(&m);
	return 0;
}

static int slots(const char *dev)
{
	static struct tb_rule rules[TB_MAX_RULES];
	__u32 keys[TB_MAX_RULES], count = TB_MAX_RULES, out;
	struct tb_maps m;
	int err = state_open(dev, &m);

	if (err || (bpf_map_lookup_batch(m.rules, NULL, &out, keys, rules, &count, NULL) && errno != ENOENT)) {
		fprintf(stderr, "tbbench slots: read %s's rules: %s\n", dev, strerror(err ? -err : errno));
		return 1;
	}
	for (__u32 i = 0; i < count; i++) {
		struct tb_prefix p;
		char buf[64];

		if (!rules[i].in_use)
			continue;
		rule_prefix(&rules[i], &p);
		prefix_format(&p, buf, sizeof(buf));
		printf("%u %s %llu\n", keys[i], buf, (unsigned long long)rules[i].r.rate);
	}
	maps_close(&m);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "rounds", required_argument, 0, 'r' }, { "repeat", required_argument, 0, 'n' },
		{ "addrs", required_argument, 0, 'a' }, { "dev", required_argument, 0, 'd' },
		{ "dmac", required_argument, 0, 'm' }, { "src", required_argument, 0, 's' },
		{ "sources", required_argument, 0, 'S' }, { "dst", required_argument, 0, 'D' },
		{ "size", required_argument, 0, 'z' }, { "count", required_argument, 0, 'c' },
		{ "seconds", required_argument, 0, 't' },
		{ 0, 0, 0, 0 },
	};
	const char *dev = NULL, *dmac = NULL, *src = "198.18.0.0", *dst = "198.19.0.1";
	int sources = 1, size = 64, o;
	__u64 count = ~0ULL;
	double seconds = 1;

	if (argc < 2 || (strcmp(argv[1], "micro") && strcmp(argv[1], "gen") && strcmp(argv[1], "fill") &&
			 strcmp(argv[1], "slots") && strcmp(argv[1], "evict") && strcmp(argv[1], "dispatcher"))) {
		fprintf(stderr, "usage: tbbench micro [--rounds R] [--repeat N] [--addrs K]\n"
				"       tbbench dispatcher [--rounds R] [--repeat N]\n"
				"       tbbench fill --dev DEV --addrs N\n"
				"       tbbench slots --dev DEV\n"
				"       tbbench evict --dev DEV --addr A --every-ms MS --seconds T\n"
				"       tbbench gen --dev DEV --dmac MAC [--src A] [--sources S] [--dst B] "
				"[--size BYTES] [--seconds T] [--count N]\n");
		return 2;
	}
	if (!strcmp(argv[1], "slots")) {
		if (argc != 4 || strcmp(argv[2], "--dev")) {
			fprintf(stderr, "tbbench slots: --dev DEV is required\n");
			return 2;
		}
		return slots(argv[3]);
	}
	if (!strcmp(argv[1], "fill")) {
		for (int i = 2; i + 1 < argc; i += 2) {
			if (!strcmp(argv[i], "--dev"))
				dev = argv[i + 1];
			else if (!strcmp(argv[i], "--addrs"))
				many = strtoul(argv[i + 1], NULL, 10);
		}
		if (!dev || !many) {
			fprintf(stderr, "tbbench fill: --dev DEV and --addrs N are required\n");
			return 2;
		}
		return fill(dev, many);
	}
	if (!strcmp(argv[1], "evict")) {
		const char *addr = NULL;
		int ms = 0;

		for (int i = 2; i + 1 < argc; i += 2) {
			if (!strcmp(argv[i], "--dev"))
				dev = argv[i + 1];
			else if (!strcmp(argv[i], "--addr"))
				addr = argv[i + 1];
			else if (!strcmp(argv[i], "--every-ms"))
				ms = atoi(argv[i + 1]);
			else if (!strcmp(argv[i], "--seconds"))
				seconds = atof(argv[i + 1]);
		}
		/* Bounded like every loop here. */
		if (!dev || !addr || ms < 1 || ms > 1000 || seconds <= 0 || seconds > 600) {
			fprintf(stderr, "tbbench evict: --dev, --addr, --every-ms 1..1000 and --seconds 0..600 are required\n");
			return 2;
		}
		return evict(dev, addr, ms, seconds);
	}
	while ((o = getopt_long(argc - 1, argv + 1, "", opts, NULL)) != -1) {
		switch (o) {
		case 'r': rounds = atoi(optarg); break;
		case 'n': repeat = strtoul(optarg, NULL, 10); break;
		case 'a': many = strtoul(optarg, NULL, 10); break;
		case 'd': dev = optarg; break;
		case 'm': dmac = optarg; break;
		case 's': src = optarg; break;
		case 'S': sources = atoi(optarg); break;
		case 'D': dst = optarg; break;
		case 'z': size = atoi(optarg); break;
		case 'c': count = strtoull(optarg, NULL, 10); break;
		case 't': seconds = atof(optarg); break;
		default: return 2;
		}
	}
	if (rounds < 1 || rounds > 64 || !repeat || !many || (many & (many - 1)) || many > (1U << 23)) {
		fprintf(stderr, "tbbench: --rounds 1..64, --repeat > 0, --addrs a power of two <= 2^23\n");
		return 2;
	}
	out_libbpf_setup();
	if (!strcmp(argv[1], "dispatcher"))
		return dispatcher_cost();
	if (!strcmp(argv[1], "gen")) {
		/* Bounded like every traffic loop here: 10 minutes at most. */
		if (!dev || !dmac || seconds <= 0 || seconds > 600) {
			fprintf(stderr, "tbbench gen: --dev and --dmac are required, --seconds 0..600\n");
			return 2;
		}
		return gen(dev, dmac, src, sources, dst, size, seconds, count);
	}
	{
		struct json_object *doc = json_object_new_object();

		per_packet(doc);
		many_addresses(doc);
		contention(doc);
		memory(doc);
		out.pretty = 1;
		out_json(doc);
	}
	return 0;
}
