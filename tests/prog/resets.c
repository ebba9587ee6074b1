// SPDX-License-Identifier: GPL-2.0
/* reset counters and reset buckets: counters zeroed in place, the global ones
 * restarted, the CPUs' cached drops made stale. */
#define _GNU_SOURCE
#include "prog.h"

static void reset_program_zeroes_counters_in_place(void)
{
	const struct tb_counters zero = {};
	struct tb_bucket before, after, v6;
	struct tb_shared sh0, sh1;
	struct tb_config cfg;
	__u16 epoch;
	__u32 shared;
	int id;
	struct frame f;

	setup();
	set_rule("default", 1000, 3000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	id = set_rule("198.18.34.0/24", 1000, 3000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_SHARED);
	frame_ipv4_len(&f, "198.18.17.1", 1000);
	pass_count(xdp_fd, &f, 5, XDP_PASS);
	frame_ipv6_len(&f, "2001:db8::17", 1000);
	pass_count(xdp_fd, &f, 2, XDP_PASS);
	frame_ipv4_len(&f, "198.18.34.1", 1000);
	CHECK_EQ(pass_count(xdp_fd, &f, 5, XDP_PASS), 3, "198.18.34.0/24: 3 of 5 pass");
	before = bucket_of("198.18.17.1");
	CHECK_EQ(pending_of("198.18.17.1").dropped_packets, 1,
		 "a drop counted without the lock is pending in its CPU's cache");
	shared = rs->rules[id].shared;
	CHECK(!bpf_map_lookup_elem_flags(rs->m.shared, &shared, &sh0, BPF_F_LOCK), "shared bucket");
	epoch = rs->cfg.reset_epoch;
	CHECK_EQ(reset_counters(0, NULL), XDP_PASS, "reset program ran");
	CHECK(!state_read_config(&rs->m, &cfg) && cfg.reset_epoch != epoch && cfg.reset_epoch == rs->cfg.reset_epoch,
	      "the program moved the reset epoch on, to %u (was %u)", cfg.reset_epoch, epoch);
	CHECK(!bpf_map_lookup_elem_flags(rs->m.shared, &shared, &sh1, BPF_F_LOCK), "shared bucket");
	CHECK_EQ(sh0.b.c.passed_packets, 3, "the shared bucket counted before the reset");
	CHECK(!memcmp(&sh1.b.c, &zero, sizeof(zero)), "the shared bucket's counters zeroed");
	CHECK(sh1.b.lvl.tokens == sh0.b.lvl.tokens && sh1.b.lvl.last_ns == sh0.b.lvl.last_ns,
	      "the shared bucket's level untouched");
	CHECK_EQ(pending_of("198.18.17.1").dropped_packets, 0,
		 "the pending drop is of the epoch before the reset: read as none");
	after = bucket_of("198.18.17.1");
	v6 = bucket_of("2001:db8::17");
	CHECK(before.c.dropped_packets == 2, "counted before the reset");
	CHECK(!memcmp(&after.c, &zero, sizeof(zero)), "IPv4 bucket's counters zeroed");
	CHECK(!memcmp(&v6.c, &zero, sizeof(zero)), "IPv6 bucket's counters zeroed");
	CHECK(after.lvl.tokens == before.lvl.tokens && after.lvl.last_ns == before.lvl.last_ns,
	      "level untouched");
	frame_ipv4_len(&f, "198.18.17.1", 1000);
	CHECK_EQ(run(xdp_fd, &f), XDP_DROP, "the drained bucket stays drained");
	CHECK_EQ(bucket_of("198.18.17.1").c.dropped_packets, 1, "and counts that drop alone");
	teardown();
}

/* The global counters: what every CPU counted is taken from one CPU's,
 * so their sum restarts at zero and the program says what it took. A
 * request too short to read is refused. */
static void reset_program_restarts_the_global_counters(void)
{
	int ncpu = libbpf_num_possible_cpus();
	struct tb_stats before, taken, zero = {}, after;
	struct frame f;

	setup();
	set_rule("default", 1000, 3000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	frame_ipv4_len(&f, "198.18.17.2", 1000);
	pass_count(xdp_fd, &f, 5, XDP_PASS);
	run_len(xdp_fd, &f, 20);   /* cut inside the IPv4 header */
	before = totals();
	CHECK(before.c.passed_packets == 3 && before.c.dropped_packets == 2 && before.malformed_packets == 1,
	      "counted before the reset: %llu passed, %llu dropped, %llu malformed",
	      (unsigned long long)before.c.passed_packets, (unsigned long long)before.c.dropped_packets,
	      (unsigned long long)before.malformed_packets);
	CHECK_EQ(reset_counters(ncpu, &taken), XDP_PASS, "reset program ran over %d CPUs", ncpu);
	CHECK(!memcmp(&taken, &before, sizeof(before)), "it took exactly what the CPUs had counted");
	after = totals();
	CHECK(!memcmp(&after, &zero, sizeof(zero)), "every global counter sums to 0 after it");
	frame_ipv4_len(&f, "198.18.17.3", 1000);
	run(xdp_fd, &f);
	after = totals();
	CHECK(after.c.passed_packets == 1 && after.c.passed_bytes == f.len,
	      "counting goes on from zero: %llu packets, %llu bytes", (unsigned long long)after.c.passed_packets,
	      (unsigned long long)after.c.passed_bytes);
	CHECK_EQ(run_len(bpf_program__fd(skel->progs.tb_reset_counters), &f, 20), XDP_ABORTED,
		 "a request shorter than struct tb_reset_req is refused");
	CHECK_EQ(totals().c.passed_packets, 1, "and changes nothing");
	teardown();
}

/* Set the config's reset epoch, as a reset that chose it would. */
static void set_reset_epoch(__u16 epoch)
{
	__u32 zero = 0;

	rs->cfg.reset_epoch = epoch;
	CHECK(!bpf_map_update_elem(rs->m.config, &zero, &rs->cfg, BPF_ANY), "write config");
}

/* A reset leaves the CPUs' cached drops where they are, of an epoch now
 * stale: read as none, discarded by the CPU when it next counts in that
 * slot (not flushed, though another address takes it), and never taken
 * for current again when the 16-bit epoch comes round: the reset skips
 * an epoch that a slot still holding counts was counted under. */
static void reset_leaves_cached_drops_stale(void)
{
	char a[32] = "198.18.25.1", other[32] = "";
	struct frame fa, fb;

	slot_mates_with_drops(a, 26, other, sizeof(other), &fa);
	CHECK_EQ(pending_of(a).dropped_packets, 10, "%s: 10 pending", a);
	CHECK_EQ(reset_counters(0, NULL), XDP_PASS, "reset");
	CHECK_EQ(rs->cfg.reset_epoch, 1, "the reset moved the epoch from 0 to 1");
	CHECK_EQ(bucket_of(a).c.dropped_packets, 0, "%s: nothing counted after the reset", a);
	drain(xdp_fd, XDP_PASS, XDP_DROP, other, &fb);
	CHECK_EQ(run(xdp_fd, &fb), XDP_DROP, "%s: a drop without the lock, in %s's slot", other, a);
	CHECK_EQ(raw_bucket_of(a).c.dropped_packets, 0, "%s: its stale drops were not flushed", a);
	CHECK_EQ(pending_of(other).dropped_packets, 1, "%s: 1 pending", other);

	set_reset_epoch(0xffff);
	CHECK_EQ(bucket_of(other).c.dropped_packets, 1,
		 "%s: epoch 0xffff: the slot's drop is stale, the locked one counts", other);
	CHECK_EQ(run(xdp_fd, &fb), XDP_DROP, "%s: a drop under epoch 0xffff", other);
	CHECK_EQ(pending_of(other).dropped_packets, 1, "%s: only it is pending", other);
	set_reset_epoch(0xfffe);
	CHECK_EQ(reset_counters(0, NULL), XDP_PASS, "reset from epoch 0xfffe");
	CHECK_EQ(rs->cfg.reset_epoch, 0, "the reset skipped 0xffff, which a slot with counts holds, for 0");
	CHECK_EQ(bucket_of(other).c.dropped_packets, 0, "%s: nothing counted after the reset", other);
	CHECK_EQ(run(xdp_fd, &fb), XDP_DROP, "%s: a drop under epoch 0", other);
	CHECK_EQ(bucket_of(other).c.dropped_packets, 1, "%s: that drop alone", other);
	unpin();
	teardown();
}

TOPIC(prog_resets,
	T(reset_program_zeroes_counters_in_place),
	T(reset_program_restarts_the_global_counters),
	T(reset_leaves_cached_drops_stale)
);
