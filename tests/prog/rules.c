// SPDX-License-Identifier: GPL-2.0
/* Rules: the longest prefix, groups, shared and total scopes, monitor and pass,
 * and rule changes published without a packet seeing half of one. */
#define _GNU_SOURCE
#include "prog.h"

static void longest_prefix_wins(void)
{
	struct frame f;
	int wide, narrow;

	setup();
	set_rule("default", 1000, 10000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	wide = set_rule("198.18.0.0/15", 1000, 3000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	narrow = set_rule("198.18.5.0/24", 1000, 5000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	set_rule("2001:db8::/32", 1000, 2000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	frame_ipv4_len(&f, "198.18.5.7", 1000);
	CHECK_EQ(pass_count(xdp_fd, &f, 10, XDP_PASS), 5, "/24 rule's burst");
	CHECK_EQ(bucket_of("198.18.5.7").rule & TB_RULE_INDEX, narrow, "bucket cached the /24 rule");
	frame_ipv4_len(&f, "198.19.0.7", 1000);
	CHECK_EQ(pass_count(xdp_fd, &f, 10, XDP_PASS), 3, "/15 rule's burst");
	CHECK_EQ(bucket_of("198.19.0.7").rule & TB_RULE_INDEX, wide, "bucket cached the /15 rule");
	frame_ipv4_len(&f, "198.51.100.1", 1000);
	CHECK_EQ(pass_count(xdp_fd, &f, 20, XDP_PASS), 10, "default rule's burst");
	frame_ipv6_len(&f, "2001:db8::77", 1000);
	CHECK_EQ(pass_count(xdp_fd, &f, 10, XDP_PASS), 2, "IPv6 /32 rule's burst");
	teardown();
}

static int set_group(const char *prefix, __u64 burst, __u8 len)
{
	struct rule_spec s = { .rate = 1000, .burst = burst, .scope = TB_SCOPE_GROUP, .group_len = len };

	return set_spec(prefix, &s);
}

/* The bucket of addr's group with its counters, as show finds it. */
static struct tb_bucket group_bucket_of(const char *addr, char *name, size_t len)
{
	struct tb_bucket b;
	struct tb_addr a, key;

	addr_parse(addr, &a);
	ruleset_key_of(rs, &rs->m, &a, &key);
	addr_format(&key, name, len);
	CHECK(read_key_as_tbctl(&key, &b), "bucket of %s's group %s exists", addr, name);
	return b;
}

/* first's group takes fit frames of its burst by XDP, then other, of the
 * same group, gets none by tc; the group, named name, counts them. */
static void group_drains(const char *first, const char *other, int v6, int fit, const char *name)
{
	struct frame f;
	char got[64];

	if (v6)
		frame_ipv6_len(&f, first, 1000);
	else
		frame_ipv4_len(&f, first, 1000);
	CHECK_EQ(pass_count(xdp_fd, &f, 10, XDP_PASS), fit, "%s: its group's burst", first);
	if (v6)
		frame_ipv6_len(&f, other, 1000);
	else
		frame_ipv4_len(&f, other, 1000);
	CHECK_EQ(pass_count(tc_fd, &f, 10, (__u32)TC_ACT_UNSPEC), 0, "%s: the same group, drained", other);
	CHECK_EQ(group_bucket_of(other, got, sizeof(got)).c.passed_packets, fit, "the group passed %d", fit);
	CHECK(!strcmp(got, name), "the group is named %s, not %s", name, got);
}

/* scope per-/LEN: a bucket for each /LEN, shared by its addresses, in
 * both hooks; a more specific rule's address whose key would be its
 * group's first address keeps a bucket of its own; ::/32 sources, whose
 * keys are the groups', are malformed. */
static void groups_share_a_bucket_per_prefix(void)
{
	struct tb_prefix p;
	struct tb_stats st;
	struct frame f;
	char name[64];

	setup();
	set_rule("default", 1000, 5000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	set_group("198.18.0.0/16", 3000, 24);
	set_rule("198.18.5.0/32", 1000, 2000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	set_group("2001:db8::/32", 4000, 64);
	CHECK_EQ(rs->cfg.resolve_first, 1, "the config says some rule is per-/LEN");
	group_drains("198.18.5.7", "198.18.5.200", 0, 3, "198.18.5.0/24");
	CHECK_EQ(group_bucket_of("198.18.5.7", name, sizeof(name)).c.dropped_packets, 17, "and dropped 17");
	frame_ipv4_len(&f, "198.18.6.1", 1000);
	CHECK_EQ(pass_count(xdp_fd, &f, 10, XDP_PASS), 3, "198.18.6.1: another /24's burst");
	frame_ipv4_len(&f, "198.18.5.0", 1000);
	CHECK_EQ(pass_count(xdp_fd, &f, 10, XDP_PASS), 2, "198.18.5.0: its own rule's burst");
	CHECK_EQ(bucket_of("198.18.5.0").c.passed_packets, 2, "198.18.5.0's bucket is its own");
	/* Each CPU keeps the latest resolution per address: a rule change
	 * makes it stale. */
	set_rule("198.18.5.7/32", 1000, 2000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	frame_ipv4_len(&f, "198.18.5.7", 1000);
	CHECK_EQ(pass_count(xdp_fd, &f, 10, XDP_PASS), 2, "198.18.5.7, given a rule of its own: its burst");
	CHECK_EQ(bucket_of("198.18.5.7").c.passed_packets, 2, "in a bucket of its own");
	frame_ipv4_len(&f, "198.51.100.1", 1000);
	CHECK_EQ(pass_count(xdp_fd, &f, 10, XDP_PASS), 5, "outside the groups: per address");
	CHECK_EQ(bucket_of("198.51.100.1").c.passed_packets, 5, "under its own key");

	group_drains("2001:db8:0:7::1", "2001:db8:0:7:ffff:ffff:ffff:ffff", 1, 4, "2001:db8:0:7::/64");
	CHECK_EQ(group_bucket_of("2001:db8:0:7::9", name, sizeof(name)).c.passed_packets, 4,
		 "another address of it finds the same group");
	frame_ipv6_len(&f, "2001:db8:0:8::1", 1000);
	CHECK_EQ(pass_count(xdp_fd, &f, 10, XDP_PASS), 4, "2001:db8:0:8::1: the next /64's burst");

	frame_ipv6_len(&f, "0:0:0:6040:0:0:c612:507", 1000);
	CHECK_EQ(pass_count(xdp_fd, &f, 3, XDP_PASS), 3, "a ::/32 source passes, spending no group's bucket");
	st = totals();
	CHECK_EQ(st.malformed_packets, 3, "counted as malformed");

	CHECK(!prefix_parse("2001:db8::/32", &p, name, sizeof(name)) && !ruleset_del(rs, &p), "delete the /64s");
	CHECK(!prefix_parse("198.18.0.0/16", &p, name, sizeof(name)) && !ruleset_del(rs, &p), "delete the /24s");
	CHECK_EQ(rs->cfg.resolve_first, 0, "with the last per-/LEN rule gone, so is the flag");
	frame_ipv4_len(&f, "198.18.9.9", 1000);
	CHECK_EQ(pass_count(xdp_fd, &f, 10, XDP_PASS), 5, "198.18.9.9: per address again");
	CHECK_EQ(bucket_of("198.18.9.9").c.passed_packets, 5, "under its own key");
	teardown();
}

static void new_rule_reclassifies_cached_buckets(void)
{
	struct frame f;
	int id;

	setup();
	set_rule("default", 1000, 2000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	frame_ipv4_len(&f, "198.18.6.1", 1000);
	CHECK_EQ(pass_count(xdp_fd, &f, 3, XDP_PASS), 2, "default burst");
	id = set_rule("198.18.6.0/24", 1000, 2000, TB_COST_PACKETS, TB_ACTION_MONITOR, TB_SCOPE_PER_ADDRESS);
	CHECK_EQ(pass_count(xdp_fd, &f, 3, XDP_PASS), 3, "monitor rule added later applies");
	CHECK_EQ(bucket_of("198.18.6.1").rule & TB_RULE_INDEX, id, "cached rule replaced");
	teardown();
}

static void unmatched_addresses_pass(void)
{
	struct frame f;

	setup();
	set_rule("198.18.0.0/24", 1000, 1500, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	frame_ipv4_len(&f, "198.19.9.9", 1000);
	CHECK_EQ(pass_count(xdp_fd, &f, 5, XDP_PASS), 5, "no rule, no default: all pass");
	CHECK_EQ(totals().unmatched_packets, 5, "unmatched packets");
	CHECK_EQ(totals().unmatched_bytes, 5000, "unmatched bytes");
	CHECK(!has_bucket("198.19.9.9"), "no bucket for an unmatched address");
	teardown();
}

static void shared_scope_caps_the_prefix(void)
{
	struct frame f;
	char src[32];
	int passed = 0;

	setup();
	set_rule("198.18.7.0/24", 1000, 3000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_SHARED);
	set_rule("198.18.8.0/24", 1000, 3000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	for (int i = 1; i <= 3; i++) {
		snprintf(src, sizeof(src), "198.18.7.%d", i);
		frame_ipv4_len(&f, src, 1000);
		passed += pass_count(xdp_fd, &f, 3, XDP_PASS);
	}
	CHECK_EQ(passed, 3, "shared /24: frames passed from 3 sources");
	CHECK(!has_bucket("198.18.7.1"), "shared scope creates no per-address bucket");
	passed = 0;
	for (int i = 1; i <= 3; i++) {
		snprintf(src, sizeof(src), "198.18.8.%d", i);
		frame_ipv4_len(&f, src, 1000);
		passed += pass_count(xdp_fd, &f, 3, XDP_PASS);
	}
	CHECK_EQ(passed, 9, "per-address /24: frames passed from 3 sources");
	teardown();
}

/* A /28 at 3000 B each and 5000 B together: the first address takes its
 * own burst, the second what the total has left, the third nothing; a
 * frame the total refuses is counted as dropped by its address and
 * takes nothing from it. */
static void total_caps_the_addresses_together(void)
{
	struct tb_bucket b;
	struct frame f;
	int id;

	setup();
	id = set_total("198.18.20.0/28", 1000, 3000, 1000, 5000, TB_ACTION_DROP);
	frame_ipv4_len(&f, "198.18.20.1", 1000);
	CHECK_EQ(pass_count(xdp_fd, &f, 4, XDP_PASS), 3, ".1: its own burst, 3 of 4");
	frame_ipv4_len(&f, "198.18.20.2", 1000);
	CHECK_EQ(pass_count(tc_fd, &f, 4, TC_ACT_UNSPEC), 2, ".2, tc: what the total has left, 2 of 4");
	frame_ipv4_len(&f, "198.18.20.3", 1000);
	CHECK_EQ(pass_count(xdp_fd, &f, 4, XDP_PASS), 0, ".3: the total is spent, 0 of 4");
	b = bucket_of("198.18.20.2");
	CHECK_EQ(b.c.passed_packets, 2, ".2's bucket counts the 2 that passed");
	CHECK_EQ(b.c.dropped_packets, 2, "and the 2 the total refused as dropped");
	b = raw_bucket_of("198.18.20.2");
	CHECK(b.lvl.tokens >= 1000 * TB_NANO && b.lvl.tokens < 1100 * TB_NANO,
	      ".2 keeps the tokens of the frames the total refused (level %llu)",
	      (unsigned long long)(b.lvl.tokens / TB_NANO));
	b = raw_bucket_of("198.18.20.3");
	CHECK(b.lvl.tokens == 3000 * TB_NANO, ".3's bucket stays full (level %llu)",
	      (unsigned long long)(b.lvl.tokens / TB_NANO));
	CHECK_EQ(bucket_of("198.18.20.3").c.dropped_packets, 4, ".3 counts its 4 as dropped");
	b = total_of(id);
	CHECK_EQ(b.c.passed_packets, 5, "the total passed 5");
	CHECK_EQ(b.c.dropped_packets, 6, "and refused the 6 its addresses passed beyond it");
	CHECK_EQ(totals().c.passed_packets, 5, "globally: 5 passed");
	CHECK_EQ(totals().c.dropped_packets, 7, "and 7 dropped");
	set_total("198.18.20.0/28", 1000, 3000, 1000, 5000, TB_ACTION_MONITOR);
	frame_ipv4_len(&f, "198.18.20.4", 1000);
	CHECK_EQ(pass_count(xdp_fd, &f, 2, XDP_PASS), 2, "monitor: the total refuses, both pass");
	b = bucket_of("198.18.20.4");
	CHECK_EQ(b.c.monitored_packets, 2, "counted as monitored by the address");
	CHECK(raw_bucket_of("198.18.20.4").lvl.tokens == 3000 * TB_NANO, "which keeps its tokens");
	teardown();
}

/* A per-/64 rule with a total: the groups are the total's members, and
 * a refusal is refunded to the group's bucket. */
static void total_caps_the_groups_together(void)
{
	struct rule_spec s = { .rate = 1000, .burst = 3000, .scope = TB_SCOPE_GROUP, .group_len = 64,
			       .total_rate = 1000, .total_burst = 4000 };
	struct tb_bucket b;
	struct frame f;
	char name[64];
	int id;

	setup();
	id = set_spec("2001:db8:20::/48", &s);
	frame_ipv6_len(&f, "2001:db8:20::1", 1000);
	CHECK_EQ(pass_count(xdp_fd, &f, 4, XDP_PASS), 3, "the first /64: its burst, 3 of 4");
	frame_ipv6_len(&f, "2001:db8:20:1::1", 1000);
	CHECK_EQ(pass_count(xdp_fd, &f, 2, XDP_PASS), 1, "the second /64: what the total has left, 1 of 2");
	frame_ipv6_len(&f, "2001:db8:20:1::2", 1000);
	CHECK_EQ(pass_count(tc_fd, &f, 2, TC_ACT_UNSPEC), 0, "another address of it, tc: none");
	b = group_bucket_of("2001:db8:20:1::9", name, sizeof(name));
	CHECK(!strcmp(name, "2001:db8:20:1::/64"), "the group is named 2001:db8:20:1::/64, not %s", name);
	CHECK_EQ(b.c.passed_packets, 1, "the second /64 passed 1");
	CHECK_EQ(b.c.dropped_packets, 3, "and counts the 3 the total refused");
	CHECK_EQ(total_of(id).c.passed_packets, 4, "the total passed 4");
	teardown();
}

static void monitor_counts_and_passes(void)
{
	struct frame f;
	struct tb_bucket b;

	setup();
	set_rule("default", 1000, 2000, TB_COST_BYTES, TB_ACTION_MONITOR, TB_SCOPE_PER_ADDRESS);
	frame_ipv4_len(&f, "198.18.9.1", 1000);
	CHECK_EQ(pass_count(xdp_fd, &f, 5, XDP_PASS), 5, "monitor passes everything");
	b = bucket_of("198.18.9.1");
	CHECK_EQ(b.c.passed_packets, 2, "within limit");
	CHECK_EQ(b.c.monitored_packets, 3, "would have dropped");
	CHECK_EQ(b.c.dropped_packets, 0, "dropped");
	CHECK_EQ(totals().c.monitored_bytes, 3000, "global monitored bytes");
	teardown();
}

/* An allow-listed prefix passes under a default cap, uncharged: no
 * bucket, counted as passed; made a capped rule again, it is charged. */
static void pass_rule_passes_uncharged(void)
{
	struct tb_stats before;
	struct frame f, g;

	setup();
	set_rule("default", 1000, 2000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	set_rule("198.18.9.16/28", 0, 0, TB_COST_BYTES, TB_ACTION_PASS, TB_SCOPE_PER_ADDRESS);
	set_rule("2001:db8:9::/48", 0, 0, TB_COST_BYTES, TB_ACTION_PASS, TB_SCOPE_PER_ADDRESS);
	before = totals();
	frame_ipv4_len(&f, "198.18.9.17", 1000);
	frame_ipv6_len(&g, "2001:db8:9::1", 1000);
	CHECK_EQ(pass_count(xdp_fd, &f, 50, XDP_PASS), 50, "IPv4 allow-listed: 50 of 50 frames pass");
	CHECK_EQ(pass_count(tc_fd, &g, 50, TC_ACT_UNSPEC), 50, "IPv6 allow-listed, tc: 50 of 50 pass");
	CHECK(!has_bucket("198.18.9.17") && !has_bucket("2001:db8:9::1"), "neither has a bucket");
	CHECK_EQ(totals().c.passed_packets - before.c.passed_packets, 100, "all counted as passed");
	CHECK_EQ(totals().allowed_packets - before.allowed_packets, 100, "and as allowed");
	CHECK_EQ(totals().allowed_bytes - before.allowed_bytes, 100 * 1000, "their bytes too");
	CHECK_EQ(totals().c.dropped_packets, before.c.dropped_packets, "none dropped");
	frame_ipv4_len(&f, "198.18.9.32", 1000);
	CHECK_EQ(pass_count(xdp_fd, &f, 5, XDP_PASS), 2, "outside the /28 the default caps: 2 of 5");
	CHECK_EQ(totals().allowed_packets - before.allowed_packets, 100, "which it does not count as allowed");
	set_rule("198.18.9.16/28", 1000, 2000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	frame_ipv4_len(&f, "198.18.9.17", 1000);
	CHECK_EQ(pass_count(xdp_fd, &f, 5, XDP_PASS), 2, "capped once the rule is: 2 of 5");
	teardown();
}

static void rate_change_keeps_bucket_state(void)
{
	struct frame f;
	struct tb_bucket before, after;

	setup();
	set_rule("198.18.10.0/24", 1000, 3000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	frame_ipv4_len(&f, "198.18.10.1", 1000);
	CHECK_EQ(pass_count(xdp_fd, &f, 5, XDP_PASS), 3, "burst drained");
	before = bucket_of("198.18.10.1");
	set_rule("198.18.10.0/24", 2000, 3000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	CHECK_EQ(run(xdp_fd, &f), XDP_DROP, "after a rate change the bucket is still empty");
	after = bucket_of("198.18.10.1");
	CHECK(held(&after) < 1000 * TB_NANO, "no free burst: level %llu nano-bytes",
	      (unsigned long long)held(&after));
	CHECK(after.lvl.last_ns > before.lvl.last_ns, "bucket kept and refilled in place");
	teardown();
}

static void rule_change_publishes_a_fresh_slot(void)
{
	struct tb_rule r;
	struct frame f;
	char src[32];
	int before, after, passed = 0;

	setup();
	before = set_rule("198.18.15.0/24", 1000, 3000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_SHARED);
	for (int i = 1; i <= 2; i++) {
		snprintf(src, sizeof(src), "198.18.15.%d", i);
		frame_ipv4_len(&f, src, 1000);
		passed += pass_count(xdp_fd, &f, 2, XDP_PASS);
	}
	CHECK_EQ(passed, 3, "shared /24 drained");
	after = set_rule("198.18.15.0/24", 2000, 3000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_SHARED);
	CHECK(after != before, "the change went to a fresh slot (%d -> %d)", before, after);
	CHECK(!bpf_map_lookup_elem(rs->m.rules, &before, &r) && !r.in_use, "the old slot is retired");
	CHECK(r.r.rate == 1000 && r.burst == 3000, "and otherwise left as it was");
	CHECK_EQ(rs->rules[after].shared, r.shared, "the prefix keeps its shared bucket");
	CHECK_EQ(run(xdp_fd, &f), XDP_DROP, "no fresh burst after the change");
	teardown();
}

static void interrupted_change_resolves_to_the_published_slot(void)
{
	struct ruleset *reader, *fresh;
	struct tb_prefix p;
	struct tb_rule r;
	char err[64];
	int live, stale;

	setup();
	live = set_rule("198.18.16.0/24", 1000, 3000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	/* A tbctl that died after writing a new slot, before publishing it. */
	stale = live + 1;
	r = rs->rules[live];
	r.burst = 9999;
	CHECK(!bpf_map_update_elem(rs->m.rules, &stale, &r, BPF_ANY), "write a stray slot");
	prefix_parse("198.18.16.0/24", &p, err, sizeof(err));
	/* The next tbctl to read the rules: a reader leaves the map alone. */
	reader = calloc(1, sizeof(*reader));
	if (!CHECK(reader && !ruleset_read(reader, &rs->m), "a reader reads the rules")) {
		free(reader);
		teardown();
		return;
	}
	CHECK_EQ(ruleset_find(reader, &p), live, "the reader finds the published slot");
	CHECK(!reader->rules[stale].in_use, "the reader's copy leaves the stray slot out");
	CHECK(!bpf_map_lookup_elem(rs->m.rules, &stale, &r) && r.in_use, "the reader retired nothing");
	free(reader);
	fresh = calloc(1, sizeof(*fresh));
	if (!CHECK(fresh && !ruleset_load(fresh, &rs->m), "a writer reads the rules")) {
		free(fresh);
		teardown();
		return;
	}
	CHECK_EQ(ruleset_find(fresh, &p), live, "the published slot is found");
	CHECK(!bpf_map_lookup_elem(rs->m.rules, &stale, &r) && !r.in_use, "the stray slot is retired");
	free(fresh);
	teardown();
}

/* A tbctl that died with a prefix in one slot that is not published: a
 * rule del after unpublishing, or a rule set of a new prefix before
 * publishing. No packet matches it, so no reader shows it, and the next
 * writer retires it: rule del then finds nothing, rule set a new rule. */
static void unpublished_slot_is_in_no_ones_view(void)
{
	const char *gone = "198.18.17.0/24", *unborn = "2001:db8:17::/48";
	struct ruleset *reader, *writer;
	struct tb_lpm_v4 k4 = { .prefixlen = 24, .addr = htonl(0xc6121100) };
	struct tb_prefix p, q;
	struct tb_rule r;
	struct frame f;
	char err[64];
	int del_id, new_id;

	setup();
	del_id = set_rule(gone, 1000, 3000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	CHECK(!bpf_map_delete_elem(rs->m.prefixes_v4, &k4), "unpublish %s, as rule del does first", gone);
	prefix_parse(gone, &p, err, sizeof(err));
	prefix_parse(unborn, &q, err, sizeof(err));
	new_id = del_id + 1;
	r = rs->rules[del_id];
	r.family = q.family;
	r.prefixlen = q.len;
	memcpy(r.addr, q.addr, sizeof(r.addr));
	CHECK(!bpf_map_update_elem(rs->m.rules, &new_id, &r, BPF_ANY), "write %s's slot, as rule set does first", unborn);
	frame_ipv4_len(&f, "198.18.17.1", 1000);
	CHECK_EQ(pass_count(xdp_fd, &f, 10, XDP_PASS), 10, "no packet is charged under %s", gone);
	reader = calloc(1, sizeof(*reader));
	if (!CHECK(reader && !ruleset_read(reader, &rs->m), "a reader reads the rules")) {
		free(reader);
		teardown();
		return;
	}
	CHECK_EQ(ruleset_find(reader, &p), -1, "the reader does not show %s", gone);
	CHECK_EQ(ruleset_find(reader, &q), -1, "nor %s", unborn);
	CHECK(!bpf_map_lookup_elem(rs->m.rules, &del_id, &r) && r.in_use, "the reader retired nothing");
	free(reader);
	writer = calloc(1, sizeof(*writer));
	if (!CHECK(writer && !ruleset_load(writer, &rs->m), "a writer reads the rules")) {
		free(writer);
		teardown();
		return;
	}
	CHECK(!bpf_map_lookup_elem(rs->m.rules, &del_id, &r) && !r.in_use, "the writer retired %s's slot", gone);
	CHECK(!bpf_map_lookup_elem(rs->m.rules, &new_id, &r) && !r.in_use, "and %s's", unborn);
	CHECK_EQ(ruleset_del(writer, &p), -ENOENT, "rule del %s finds nothing", gone);
	CHECK(ruleset_set(writer, &p, &(struct rule_spec){ .rate = 1000, .burst = 3000 }) >= 0,
	      "rule set %s makes it anew", gone);
	CHECK_EQ(pass_count(xdp_fd, &f, 10, XDP_PASS), 3, "and it is charged again");
	free(writer);
	teardown();
}

/* The ruleset's indexes (prefix hash, free slots, shared slots) against a
 * plain scan of the slots, through 3,000 creations, 1,000 changes and
 * 1,500 deletions, and against a fresh read of the maps. */
static void ruleset_indexes_follow_changes(void)
{
	struct ruleset *again = calloc(1, sizeof(*again));
	struct tb_prefix p;
	char buf[64], err[64];
	int bad = 0, used = 0, shared_used = 0;
	static __u8 seen[TB_MAX_RULES];

	setup();
	for (int i = 0; i < 3000; i++) {
		snprintf(buf, sizeof(buf), "2001:db8:%x::/48", i);
		set_rule(buf, 1000 + i, 3000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	}
	for (int i = 0; i < 3000; i += 3) {
		snprintf(buf, sizeof(buf), "2001:db8:%x::/48", i);
		set_rule(buf, 7, 3000, TB_COST_PACKETS, TB_ACTION_DROP, TB_SCOPE_SHARED);
	}
	for (int i = 0; i < 3000; i += 2) {
		snprintf(buf, sizeof(buf), "2001:db8:%x::/48", i);
		prefix_parse(buf, &p, err, sizeof(err));
		CHECK(!ruleset_del(rs, &p), "delete %s", buf);
	}
	memset(seen, 0, sizeof(seen));
	for (int i = 0; i < 3000; i++) {
		int id, scan = -1;

		snprintf(buf, sizeof(buf), "2001:db8:%x::/48", i);
		prefix_parse(buf, &p, err, sizeof(err));
		for (int k = 0; k < TB_MAX_RULES; k++) {
			struct tb_prefix q;

			rule_prefix(&rs->rules[k], &q);
			if (rs->rules[k].in_use && prefix_equal(&q, &p))
				scan = k;
		}
		id = ruleset_find(rs, &p);
		bad += id != scan || (i % 2 == 0) != (id < 0);
		if (id >= 0)
			bad += rs->rules[id].r.rate != (i % 3 ? 1000ULL + i : 7) || seen[rs->rules[id].shared]++;
	}
	CHECK_EQ(bad, 0, "prefixes whose slot differs from a scan, or is wrong");
	for (int k = 0; k < TB_MAX_RULES; k++) {
		used += rs->rules[k].in_use;
		shared_used += seen[k];
	}
	CHECK_EQ(used, 1500, "slots in use");
	CHECK_EQ(rs->nfree_rules, TB_MAX_RULES - used, "free slots");
	CHECK_EQ(rs->nfree_shared, TB_MAX_RULES - shared_used, "free shared slots");
	CHECK(again && !ruleset_read(again, &rs->m), "read the rules afresh");
	CHECK(!memcmp(again->rules, rs->rules, sizeof(rs->rules)), "a fresh read sees the same slots");
	CHECK_EQ(again->nfree_rules, rs->nfree_rules, "a fresh read: free slots");
	CHECK_EQ(again->nfree_shared, rs->nfree_shared, "a fresh read: free shared slots");
	free(again);
	teardown();
}

/* 16,383 rules at most: the last slot stays free, so that any rule can
 * still be changed (a change writes a fresh slot before retiring). */
static void rule_table_keeps_a_slot_for_changes(void)
{
	struct rule_spec spec = { .rate = 1000, .burst = 3000 };
	struct tb_prefix p;
	char buf[64], err[64];
	int id = 0;

	setup();
	for (int i = 0; i < TB_MAX_RULES - 1 && id >= 0; i++) {
		snprintf(buf, sizeof(buf), "2001:db8:%x:%x::/64", i >> 8, i & 0xff);
		prefix_parse(buf, &p, err, sizeof(err));
		id = ruleset_set(rs, &p, &spec);
	}
	CHECK(id >= 0, "16,383 rules stored (%s)", strerror(-id));
	prefix_parse("2001:db8:ffff::/64", &p, err, sizeof(err));
	CHECK_EQ(ruleset_set(rs, &p, &spec), -ENOSPC, "the 16,384th rule is refused");
	prefix_parse("2001:db8:0:7::/64", &p, err, sizeof(err));
	spec.rate = 2000;
	id = ruleset_set(rs, &p, &spec);
	CHECK(id >= 0 && rs->rules[id].r.rate == 2000, "a rule of a full table can still be changed");
	CHECK(!ruleset_del(rs, &p), "and deleted");
	prefix_parse("2001:db8:ffff::/64", &p, err, sizeof(err));
	CHECK(ruleset_set(rs, &p, &spec) >= 0, "then a new rule fits again");
	teardown();
}

/* The bound belongs to the rule it was computed under: a rule change
 * clears it, and the next tail drop computes it from the new rate. */
static void rule_change_clears_the_empty_bound(void)
{
	struct tb_bucket b;
	struct frame f;
	int id;

	setup();
	set_rule("default", 1000, 3000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	drain(xdp_fd, XDP_PASS, XDP_DROP, "198.18.24.1", &f);
	id = set_rule("default", 500, 3000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	CHECK_EQ(run(xdp_fd, &f), XDP_DROP, "still drained under the new rule");
	b = raw_bucket_of("198.18.24.1");
	CHECK_EQ(tb_cached_rule(&b), id, "the bucket resolved the new rule");
	CHECK_EQ(b.empty_ns, tb_empty_since(&b.lvl, &rs->rules[id].r),
		 "the bound was recomputed at the new rate");
	teardown();
}

TOPIC(prog_rules,
	T(longest_prefix_wins),
	T(groups_share_a_bucket_per_prefix),
	T(new_rule_reclassifies_cached_buckets),
	T(unmatched_addresses_pass),
	T(shared_scope_caps_the_prefix),
	T(total_caps_the_addresses_together),
	T(total_caps_the_groups_together),
	T(monitor_counts_and_passes),
	T(pass_rule_passes_uncharged),
	T(rate_change_keeps_bucket_state),
	T(rule_change_publishes_a_fresh_slot),
	T(interrupted_change_resolves_to_the_published_slot),
	T(unpublished_slot_is_in_no_ones_view),
	T(ruleset_indexes_follow_changes),
	T(rule_table_keeps_a_slot_for_changes),
	T(rule_change_clears_the_empty_bound)
);
