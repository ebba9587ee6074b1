// SPDX-License-Identifier: GPL-2.0
/* Bans, on both hooks: a manual ban drops an address or prefix before any
 * bucket is made, a longer expired prefix not hiding a shorter one; a
 * rule's ban comes at its first refusal (or its Nth), of the key the rule
 * charges (an address, a group, a shared bucket), drops without the
 * bucket, counted as banned, logged as such, and ends when its time is
 * up; a list applied replaces the old one whole; and the table of bans
 * rules make stays bounded under a flood of refused sources, a new ban
 * still made when it is full. */
#define _GNU_SOURCE
#include "prog.h"
#include "lib/bans.h"
#include "logic/ban.h"

struct hook_case {
	const char *name;
	int *fd;
	__u32 pass, drop;
};

static const struct hook_case hooks[] = {
	{ "xdp", &xdp_fd, XDP_PASS, XDP_DROP },
	{ "tc", &tc_fd, (__u32)TC_ACT_UNSPEC, TC_ACT_SHOT },
};

static struct banfile_entry entry(const char *prefix, __u64 dur_ms)
{
	struct banfile_entry e;
	char err[200];
	const char *none = NULL;

	CHECK(!ban_words(prefix, &none, 0, &e, err, sizeof(err)), "ban %s: %s", prefix, err);
	e.dur_ns = dur_ms * 1000000;
	return e;
}

static void put(const char *prefix, __u64 dur_ms, __u64 now)
{
	struct banfile_entry e = entry(prefix, dur_ms);

	CHECK_EQ(bans_put(&rs->m, &e, 1, false, now), 0, "ban add %s", prefix);
}

static void frame_of(struct frame *f, const char *src, size_t len)
{
	if (strchr(src, ':'))
		frame_ipv6_len(f, src, len);
	else
		frame_ipv4_len(f, src, len);
}

static int passes(const struct hook_case *h, const char *src)
{
	struct frame f;

	frame_of(&f, src, 200);
	return run(*h->fd, &f) == h->pass;
}

static void a_manual_ban_drops_before_any_bucket(void)
{
	for (int k = 0; k < 2; k++) {
		const struct hook_case *h = &hooks[k];
		struct tb_stats before, after;
		struct tb_prefix p;
		char err[128];
		__u64 now;

		setup();
		set_rule("default", 1000000, 100000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
		now = now_ns();
		put("198.18.50.0/24", 0, now);
		put("2001:db8:50::/48", 3600000, now);
		before = totals();
		CHECK(!passes(h, "198.18.50.7"), "%s: an address in a banned /24 is dropped", h->name);
		CHECK(!passes(h, "2001:db8:50::7"), "%s: and one in a banned /48", h->name);
		CHECK(passes(h, "198.18.51.7"), "%s: one outside passes", h->name);
		after = totals();
		CHECK_EQ(after.banned_packets - before.banned_packets, 2, "%s: counted banned", h->name);
		CHECK_EQ(after.banned_bytes - before.banned_bytes, 400, "%s: with their bytes", h->name);
		CHECK_EQ(after.c.dropped_packets - before.c.dropped_packets, 2, "%s: and dropped", h->name);
		CHECK_EQ(after.buckets_created - before.buckets_created, 1, "%s: the banned made no bucket", h->name);
		CHECK(!has_bucket("198.18.50.7"), "%s: none for the banned address", h->name);

		/* A longer prefix whose own ban is over (written as of 10 s
		 * ago, for 1 s) is what the lookup finds: the /24's ban still
		 * holds through it. */
		put("198.18.50.128/25", 1000, now_ns() - 10000000000ULL);
		CHECK(!passes(h, "198.18.50.200"), "%s: a longer, ended ban hides no shorter one", h->name);
		prefix_parse("198.18.50.0/24", &p, err, sizeof(err));
		CHECK_EQ(bans_del(&rs->m, &p, now_ns()), 0, "%s: ban del the /24", h->name);
		CHECK(passes(h, "198.18.50.200"), "%s: then it passes", h->name);
		CHECK(passes(h, "198.18.50.7"), "%s: and so does the rest of the /24", h->name);
		CHECK(!passes(h, "2001:db8:50::8"), "%s: the /48 still holds", h->name);
		teardown();
	}
}

/* The autobans entry of key (as the map holds it); zero when none. */
static struct tb_autoban autoban_of(const char *addr)
{
	struct tb_autoban a = {};
	struct tb_addr k;

	addr_parse(addr, &k);
	bpf_map_lookup_elem(rs->m.autobans, &k, &a);
	return a;
}

/* The ban of addr ended now, as time would end it: the entry's end
 * moved, and what the CPUs cached made stale, as tbctl does when it lifts
 * a ban. */
static void end_ban(const char *addr)
{
	struct tb_autoban a = autoban_of(addr);
	struct tb_config cfg;
	struct tb_addr k;

	addr_parse(addr, &k);
	a.until_ns = now_ns() - 1;
	CHECK(!bpf_map_update_elem(rs->m.autobans, &k, &a, BPF_EXIST), "end the ban of %s", addr);
	state_read_config(&rs->m, &cfg);
	cfg.ban_gen++;
	state_write_config(&rs->m, &cfg);
}

/* Lift the bans rules made inside prefix p, as ban del does. */
static void lift(const char *p)
{
	struct tb_prefix pre;
	char err[128];
	int lifted;

	prefix_parse(p, &pre, err, sizeof(err));
	CHECK_EQ(autobans_lift(&rs->m, rs, &pre, now_ns(), &lifted), 0, "lift the bans inside %s", p);
	CHECK_EQ(lifted, 1, "one lifted");
}

static int records_why(int why)
{
	struct seen *s = records();
	int n = 0;

	for (int i = 0; i < s->n; i++)
		n += s->e[i].why == why;
	return n;
}

static void a_rule_bans_at_its_first_refusal(void)
{
	for (int k = 0; k < 2; k++) {
		const struct hook_case *h = &hooks[k];
		struct rule_spec s = { .rate = 1000, .burst = 2000, .cost = TB_COST_BYTES, .action = TB_ACTION_DROP,
				       .scope = TB_SCOPE_PER_ADDRESS, .ban_ms = 60000, .ban_after = 1 };
		const char *src = k ? "2001:db8::52:1" : "198.18.52.1";
		struct tb_stats before, after;
		struct tb_autoban a;
		struct tb_config cfg;
		struct frame f;
		__u64 t0, t1;
		int id;

		setup();
		id = set_spec("default", &s);
		state_read_config(&rs->m, &cfg);
		cfg.event_rate = 1000;
		cfg.event_interval_ms = 0;
		state_write_config(&rs->m, &cfg);
		frame_of(&f, src, 1000);
		before = totals();
		CHECK_EQ(pass_count(*h->fd, &f, 2, h->pass), 2, "%s: two frames within the burst", h->name);
		t0 = now_ns();
		CHECK_EQ(run(*h->fd, &f), h->drop, "%s: the third refused", h->name);
		t1 = now_ns();
		a = autoban_of(src);
		CHECK(a.until_ns >= t0 + 60000000000ULL && a.until_ns <= t1 + 60000000000ULL,
		      "%s: and banned for 60 s from then", h->name);
		CHECK_EQ(a.rule, id + 1, "%s: by its rule", h->name);
		CHECK_EQ(pass_count(*h->fd, &f, 10, h->pass), 0, "%s: ten more dropped", h->name);
		after = totals();
		CHECK_EQ(after.banned_packets - before.banned_packets, 10, "%s: banned", h->name);
		CHECK_EQ(after.bans_made - before.bans_made, 1, "%s: one ban made", h->name);
		CHECK_EQ(bucket_of(src).c.dropped_packets, 1, "%s: its bucket saw the refusal only", h->name);
		CHECK_EQ(records_why(TB_WHY_BAN), 10, "%s: each logged, why ban", h->name);
		end_ban(src);
		CHECK_EQ(run(*h->fd, &f), h->drop, "%s: once it ends, the bucket (still short) refuses", h->name);
		CHECK_EQ(bucket_of(src).c.dropped_packets, 2, "%s: and counts it", h->name);
		CHECK_EQ(totals().bans_made - before.bans_made, 2, "%s: which bans again", h->name);
		/* Lifted as ban del lifts it: this CPU's cached ban goes too. */
		lift(src);
		CHECK_EQ(run(*h->fd, &f), h->drop, "%s: lifted, the bucket decides again", h->name);
		CHECK_EQ(bucket_of(src).c.dropped_packets, 3, "%s: and counts it", h->name);
		teardown();
	}
}

static void ban_after_counts_refusals(void)
{
	for (int k = 0; k < 2; k++) {
		const struct hook_case *h = &hooks[k];
		struct rule_spec s = { .rate = 1000, .burst = 2000, .cost = TB_COST_BYTES, .action = TB_ACTION_DROP,
				       .scope = TB_SCOPE_PER_ADDRESS, .ban_ms = 60000, .ban_after = 5 };
		struct tb_stats before;
		struct frame f;

		setup();
		set_spec("default", &s);
		frame_of(&f, "198.18.53.1", 1000);
		before = totals();
		CHECK_EQ(pass_count(*h->fd, &f, 12, h->pass), 2, "%s: two of twelve pass", h->name);
		CHECK_EQ(bucket_of("198.18.53.1").c.dropped_packets, 5, "%s: five refused by the bucket", h->name);
		CHECK_EQ(totals().banned_packets - before.banned_packets, 5, "%s: the rest banned", h->name);
		teardown();
	}
}

static void a_group_and_a_shared_bucket_are_banned_whole(void)
{
	for (int k = 0; k < 2; k++) {
		const struct hook_case *h = &hooks[k];
		struct rule_spec group = { .rate = 1000, .burst = 2000, .cost = TB_COST_BYTES, .action = TB_ACTION_DROP,
					   .scope = TB_SCOPE_GROUP, .group_len = 24, .ban_ms = 60000, .ban_after = 1 };
		struct rule_spec shared = group;
		struct tb_stats before;
		struct frame f;

		shared.scope = TB_SCOPE_SHARED;
		shared.group_len = 0;
		setup();
		set_spec("198.18.54.0/23", &group);
		set_spec("198.18.60.0/24", &shared);
		set_rule("default", 1000000, 100000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
		frame_of(&f, "198.18.54.1", 1000);
		CHECK_EQ(pass_count(*h->fd, &f, 3, h->pass), 2, "%s: a /24 group's third frame refused", h->name);
		before = totals();
		CHECK(!passes(h, "198.18.54.99"), "%s: another address of the group is banned", h->name);
		CHECK(passes(h, "198.18.55.1"), "%s: the rule's other group is not", h->name);
		frame_of(&f, "198.18.60.1", 1000);
		CHECK_EQ(pass_count(*h->fd, &f, 3, h->pass), 2, "%s: the shared bucket's third frame refused", h->name);
		CHECK(!passes(h, "198.18.60.200"), "%s: every address of the shared rule is banned", h->name);
		CHECK(passes(h, "198.18.61.1"), "%s: others not", h->name);
		CHECK_EQ(totals().banned_packets - before.banned_packets, 2, "%s: counted banned", h->name);
		teardown();
	}
}

static void an_applied_list_replaces_the_old_whole(void)
{
	const struct hook_case *h = &hooks[0];
	struct banfile_entry a[2] = { entry("198.18.56.1", 0), entry("2001:db8::56:1", 0) };
	struct banfile_entry b[2] = { entry("198.18.56.2", 0), entry("198.18.57.0/24", 0) };
	struct tb_config cfg;
	__u8 side;

	setup();
	set_rule("default", 1000000, 100000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	CHECK_EQ(bans_put(&rs->m, a, 2, true, now_ns()), 0, "apply the first list");
	state_read_config(&rs->m, &cfg);
	side = cfg.ban_side;
	CHECK(cfg.bans_v4 == 1 && cfg.bans_v6 == 1, "the config counts its prefixes by family");
	CHECK(!passes(h, "198.18.56.1") && !passes(h, "2001:db8::56:1") && passes(h, "198.18.56.2"),
	      "the first list's addresses are banned");
	CHECK_EQ(bans_put(&rs->m, b, 2, true, now_ns()), 0, "apply the second");
	state_read_config(&rs->m, &cfg);
	CHECK(cfg.ban_side != side && cfg.bans_v4 == 2 && cfg.bans_v6 == 0, "the other side is in force");
	CHECK(passes(h, "198.18.56.1") && passes(h, "2001:db8::56:1"), "the first list's are not");
	CHECK(!passes(h, "198.18.56.2") && !passes(h, "198.18.57.9"), "the second's are");
	teardown();
}

/* Sources refused once each, more than the table of rules' bans holds:
 * it keeps at most its size, every refusal bans, and the newest sources
 * are banned, the least recently looked up gone; a ban by hand, kept
 * apart, is not. */
static void the_table_of_rules_bans_is_bounded(void)
{
	struct rule_spec s = { .rate = 1, .burst = 1500, .cost = TB_COST_BYTES, .action = TB_ACTION_DROP,
			       .scope = TB_SCOPE_PER_ADDRESS, .ban_ms = 60000, .ban_after = 1 };
	const int n = TB_AUTOBANS + 1024;
	struct tb_stats before;
	struct tb_addr key, next;
	char src[64];
	struct frame f;
	int entries = 0;

	setup();
	set_spec("default", &s);
	put("198.18.59.1", 0, now_ns());
	before = totals();
	for (int i = 0; i < n; i++) {
		snprintf(src, sizeof(src), "2001:db8:58::%x:%x", i >> 16, i & 0xffff);
		frame_ipv6_len(&f, src, 1600);
		run(xdp_fd, &f);
	}
	CHECK_EQ(totals().bans_made - before.bans_made, n, "every source refused was banned");
	for (void *prev = NULL; !bpf_map_get_next_key(rs->m.autobans, prev, &next); prev = &key) {
		key = next;
		entries++;
	}
	CHECK(entries <= (int)TB_AUTOBANS, "the table holds %d, at most %u", entries, TB_AUTOBANS);
	snprintf(src, sizeof(src), "2001:db8:58::%x:%x", (n - 1) >> 16, (n - 1) & 0xffff);
	frame_ipv6_len(&f, src, 200);
	before = totals();
	CHECK_EQ(run(xdp_fd, &f), XDP_DROP, "the newest source");
	CHECK_EQ(totals().banned_packets - before.banned_packets, 1, "is banned");
	frame_ipv4_len(&f, "198.18.59.1", 200);
	CHECK_EQ(run(xdp_fd, &f), XDP_DROP, "a ban by hand made before the flood still holds");
	teardown();
}

TOPIC(prog_bans,
	T(a_manual_ban_drops_before_any_bucket),
	T(a_rule_bans_at_its_first_refusal),
	T(ban_after_counts_refusals),
	T(a_group_and_a_shared_bucket_are_banned_whole),
	T(an_applied_list_replaces_the_old_whole),
	T(the_table_of_rules_bans_is_bounded)
);
