// SPDX-License-Identifier: GPL-2.0
/* The per-address table: eviction that gives nothing away, and the live address
 * a set keeps. */
#define _GNU_SOURCE
#include "prog.h"

/* A bucket the table evicted comes back as what it owed, not as a fresh
 * burst: a drained address stays drained however often it is evicted,
 * and one idle long enough comes back full. Without owed[] (shift 0) the
 * same eviction hands out a whole new burst. */
static void evicted_bucket_starts_from_what_it_owed(void)
{
	struct tb_bucket b;
	struct frame f;

	setup();
	set_owed_shift(16);
	set_rule("default", 1000, 3000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	drain(xdp_fd, XDP_PASS, XDP_DROP, "198.18.26.1", &f);
	for (int i = 0; i < 5; i++) {
		evict("198.18.26.1");
		CHECK_EQ(run(xdp_fd, &f), XDP_DROP, "drained, evicted %d times: still drained", i + 1);
		CHECK(has_bucket("198.18.26.1"), "the drop re-created the bucket");
		b = raw_bucket_of("198.18.26.1");
		CHECK(held(&b) < 1000 * TB_NANO, "re-created below one frame's cost");
	}
	drain(tc_fd, TC_ACT_UNSPEC, TC_ACT_SHOT, "198.18.26.2", &f);
	evict("198.18.26.2");
	CHECK_EQ(run(tc_fd, &f), TC_ACT_SHOT, "tc: drained and evicted, still drained");

	set_owed_shift(0);
	evict("198.18.26.1");
	frame_ipv4_len(&f, "198.18.26.1", 1000);
	CHECK_EQ(pass_count(xdp_fd, &f, 3, XDP_PASS), 3, "without owed[], eviction is a new burst");
	set_owed_shift(16);

	set_rule("default", 1000000, 3000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	drain(xdp_fd, XDP_PASS, XDP_DROP, "198.18.26.3", &f);
	evict("198.18.26.3");
	CHECK_EQ(run(xdp_fd, &f), XDP_DROP, "fast rule: evicted at once, still drained");
	usleep(20000);
	evict("198.18.26.3");
	CHECK_EQ(pass_count(xdp_fd, &f, 4, XDP_PASS), 3, "after 20 ms idle (fill 3 ms): a full burst");
	teardown();
}

/* The set of address a in the table. */
static __u32 set_of(const struct tb_addr *a)
{
	return tb_set_index(tb_place_hash(&rs->cfg, a), rs->cfg.table_shift);
}

/* The ways of a's set holding a. */
static int ways_holding(const char *addr)
{
	struct tb_set set;
	struct tb_addr a;
	__u32 si;
	int n = 0;

	addr_parse(addr, &a);
	si = set_of(&a);
	CHECK(!bpf_map_lookup_elem(rs->m.buckets, &si, &set), "read set %u", si);
	for (int w = 0; w < TB_WAYS; w++)
		n += !memcmp(&set.key[w], &a, sizeof(a));
	return n;
}

/* The next address 2001:db8::N, N after *n, in set si, into out; false
 * when none is found. */
static bool set_mate(__u32 si, __u32 *n, char *out, size_t len)
{
	struct tb_addr m;

	while (++*n < 10000000) {
		snprintf(out, len, "2001:db8::%x:%x", *n >> 16, *n & 0xffff);
		addr_parse(out, &m);
		if (set_of(&m) == si)
			return true;
	}
	return false;
}

/* Set up with a default rule of burst bytes; f a 100-byte frame of live.
 * Returns live's set. */
static __u32 live_set(const char *live, __u64 burst, struct frame *f)
{
	struct tb_addr k;

	setup();
	set_rule("default", 1000000, burst, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	addr_parse(live, &k);
	frame_ipv6_len(f, live, 100);
	return set_of(&k);
}

/* A flood of one-packet sources through one set takes the ways of its
 * own kind: the set's live address keeps its bucket, and every packet
 * of it is counted there, in one way. */
static void a_set_keeps_its_live_address(void)
{
	const char *live = "2001:db8::1";
	struct frame f, fm;
	char mate[64];
	int mates = 0, sent = 0;
	__u32 si = live_set(live, 100000, &f), n = 1;

	while (mates < 10 * TB_WAYS && set_mate(si, &n, mate, sizeof(mate))) {
		if (mates++ % 4 == 0) {
			CHECK_EQ(run(xdp_fd, &f), XDP_PASS, "%s passes", live);
			sent++;
		}
		frame_ipv6_len(&fm, mate, 100);
		CHECK_EQ(run(xdp_fd, &fm), XDP_PASS, "%s, in %s's set, passes", mate, live);
		CHECK_EQ(ways_holding(mate), 1, "%s holds one way", mate);
	}
	CHECK_EQ(mates, 10 * TB_WAYS, "%d addresses share %s's set", 10 * TB_WAYS, live);
	CHECK_EQ(ways_holding(live), 1, "%s holds one way", live);
	CHECK_EQ(bucket_of(live).c.passed_packets, sent, "%s: all %d of its packets counted", live, sent);
	CHECK_EQ(totals().buckets_created, 1 + mates, "a bucket for each, %s's made once", live);
	teardown();
}

/* After reset counters, a live address whose frames all went through the
 * lock (its rule's credit pays no frame) holds no counts and an untouched
 * grant, as a one-packet source does; it keeps its way, and its level,
 * against a flood of those all the same. */
static void a_reset_leaves_the_live_address_its_way(void)
{
	const char *live = "2001:db8::1";
	struct tb_bucket before, after;
	struct frame f, fm;
	char mate[64];
	int mates = 0;
	/* 1500 B of burst: a credit of 23 B pays no 100-byte frame. */
	__u32 si = live_set(live, 1500, &f), n = 1;

	CHECK_EQ(pass_count(xdp_fd, &f, 5, XDP_PASS), 5, "%s: 5 frames pass", live);
	CHECK_EQ(reset_counters(0, NULL), XDP_PASS, "reset counters");
	before = raw_bucket_of(live);
	CHECK(before.c.passed_packets == 0 && before.credit_granted == tb_credit_unspent(before.credit),
	      "%s: no counts, and its grant untouched, as a one-packet source's", live);
	while (mates < 10 * TB_WAYS && set_mate(si, &n, mate, sizeof(mate))) {
		mates++;
		frame_ipv6_len(&fm, mate, 100);
		CHECK_EQ(run(xdp_fd, &fm), XDP_PASS, "%s, in %s's set, passes", mate, live);
	}
	CHECK_EQ(mates, 10 * TB_WAYS, "%d one-packet sources share %s's set", 10 * TB_WAYS, live);
	CHECK_EQ(ways_holding(live), 1, "%s keeps its way", live);
	after = raw_bucket_of(live);
	CHECK(after.lvl.tokens == before.lvl.tokens && after.lvl.last_ns == before.lvl.last_ns,
	      "%s keeps its level", live);
	teardown();
}

TOPIC(prog_table,
	T(evicted_bucket_starts_from_what_it_owed),
	T(a_set_keeps_its_live_address),
	T(a_reset_leaves_the_live_address_its_way)
);
