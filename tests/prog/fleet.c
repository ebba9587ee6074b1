// SPDX-License-Identifier: GPL-2.0
/* Fleet rules: a key's static share, then the store's credit. */
#define _GNU_SOURCE
#include "prog.h"

static __u64 mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int set_fleet(const char *prefix, int scope, int action, __u64 burst, __u64 share, __u64 share_burst)
{
	struct rule_spec s = { .rate = 1000, .burst = burst, .scope = scope, .action = action, .fleet = 1,
			       .share_rate = share, .share_burst = share_burst };

	return set_spec(prefix, &s);
}

/* The fleet key of address addr (NULL: a shared rule's) under rule id. */
static struct tb_fleet_key fleet_key(const char *addr, int id)
{
	struct tb_fleet_key k = { .rule = rs->rules[id].shared };

	if (addr)
		CHECK(addr_parse(addr, &k.key) == 0, "address %s", addr);
	return k;
}

static struct tb_fleet_entry fleet_entry(const struct tb_fleet_key *k)
{
	struct tb_fleet_entry e = {};

	CHECK(!bpf_map_lookup_elem(rs->m.fleet, k, &e), "no fleet entry: %s", strerror(errno));
	return e;
}

/* One operation of the agent's program on key k; its amount out. */
static __s64 fleet_apply(const struct tb_fleet_key *k, __u32 op, __s64 amount, __u64 expires_ns)
{
	struct tb_fleet_opslot o = { .k = *k, .op = op, .amount = amount, .expires_ns = expires_ns };
	struct tb_fleet_req req = { .n = 1 };
	LIBBPF_OPTS(bpf_test_run_opts, t, .data_in = &req, .data_size_in = sizeof(req), .repeat = 1);
	__u32 zero = 0;

	if (!CHECK(!bpf_map_update_elem(bpf_map__fd(skel->maps.fleetops), &zero, &o, BPF_ANY), "write the op") ||
	    !CHECK(!bpf_prog_test_run_opts(bpf_program__fd(skel->progs.tb_fleet_apply), &t), "run tb_fleet_apply: %s",
		   strerror(errno)) ||
	    !CHECK_EQ(t.retval, XDP_PASS, "tb_fleet_apply's verdict") ||
	    !CHECK(!bpf_map_lookup_elem(bpf_map__fd(skel->maps.fleetops), &zero, &o), "read the op back"))
		return -1;
	CHECK(o.done, "tb_fleet_apply found no entry for the key");
	return o.amount;
}

/* A fleet key pays from the host's static share first, then from the
 * store's credit while its lease runs; what neither pays is refused,
 * refunded to the address's bucket and counted there as dropped. */
static void fleet_key_pays_from_share_then_credit(void)
{
	const char *a = "198.18.30.1";
	struct tb_fleet_entry e;
	struct tb_fleet_key k;
	struct tb_bucket b;
	struct frame f;
	int id;

	setup();
	id = set_fleet("198.18.30.0/24", TB_SCOPE_PER_ADDRESS, TB_ACTION_DROP, 30000, 10, 2000);
	frame_ipv4_len(&f, a, 1000);
	CHECK_EQ(pass_count(xdp_fd, &f, 4, XDP_PASS), 2, "with no credit, the share's 2000 B pass 2 of 4");
	k = fleet_key(a, id);
	e = fleet_entry(&k);
	CHECK_EQ(e.share_spent, 2000, "units the share paid");
	CHECK_EQ(e.refused, 2000, "units refused");
	b = bucket_of(a);
	CHECK_EQ(b.c.passed_packets, 2, "the address's bucket counts 2 passed");
	CHECK_EQ(b.c.dropped_packets, 2, "and the 2 refused as dropped");
	b = raw_bucket_of(a);
	CHECK(b.lvl.tokens >= 28000 * TB_NANO && b.lvl.tokens < 28100 * TB_NANO,
	      "the bucket keeps the tokens of the refused frames (level %llu)",
	      (unsigned long long)(b.lvl.tokens / TB_NANO));
	CHECK_EQ(totals().fleet_refused_packets, 2, "globally, fleet refusals");

	fleet_apply(&k, TB_FLEET_GRANT, 2500, mono_now() + 10000000000ULL);
	CHECK_EQ(pass_count(tc_fd, &f, 3, TC_ACT_UNSPEC), 2, "tc: 2500 B of credit pass 2 of 3");
	e = fleet_entry(&k);
	CHECK_EQ(e.spent, 2000, "credit spent");
	CHECK_EQ(e.credit, 500, "credit left");
	CHECK_EQ(fleet_apply(&k, TB_FLEET_TAKE, 0, 0), 500, "taken back");
	CHECK_EQ(fleet_entry(&k).credit, 0, "credit after the take");

	/* The key's refusals show as its bucket's: a reset zeroes them with
	 * the bucket's counters, and leaves what the agent reads of the rest. */
	CHECK_EQ(reset_counters(0, NULL), XDP_PASS, "reset program ran");
	e = fleet_entry(&k);
	CHECK_EQ(e.refused, 0, "a reset zeroes the key's refusals");
	CHECK_EQ(e.spent, 2000, "and keeps its spending");
	CHECK_EQ(e.share_spent, 2000, "and its share's");

	/* Credit under a lease that has run out is never spent, and a grant
	 * after it takes it away first: the store counted it as spent. */
	fleet_apply(&k, TB_FLEET_GRANT, 3000, mono_now() - 1);
	CHECK_EQ(pass_count(xdp_fd, &f, 1, XDP_PASS), 0, "credit under an ended lease paid");
	fleet_apply(&k, TB_FLEET_GRANT, 1000, mono_now() + 10000000000ULL);
	CHECK_EQ(fleet_entry(&k).credit, 1000, "a grant over an ended lease holds only itself");
	CHECK_EQ(pass_count(xdp_fd, &f, 2, XDP_PASS), 1, "which pays 1 of 2");

	/* Fallback closed, with the store unreachable: the agent turns the
	 * static shares off, and only credit pays. */
	{
		struct tb_fleet_state fs = { .share_off = 1 };
		__u32 zero = 0;
		const char *b = "198.18.30.2";

		CHECK(!bpf_map_update_elem(rs->m.fleetstate, &zero, &fs, BPF_ANY), "write the agent's state");
		frame_ipv4_len(&f, b, 1000);
		CHECK_EQ(pass_count(xdp_fd, &f, 2, XDP_PASS), 0, "shares off: a new key's full share paid");
		fs.share_off = 0;
		CHECK(!bpf_map_update_elem(rs->m.fleetstate, &zero, &fs, BPF_ANY), "write the agent's state");
		CHECK_EQ(pass_count(xdp_fd, &f, 3, XDP_PASS), 2, "shares on again: the share pays 2 of 3");
		frame_ipv4_len(&f, a, 1000);
	}

	/* Monitor: a refusal passes, counted as monitored. */
	set_fleet("198.18.30.0/24", TB_SCOPE_PER_ADDRESS, TB_ACTION_MONITOR, 30000, 0, 0);
	CHECK_EQ(pass_count(xdp_fd, &f, 2, XDP_PASS), 2, "monitor passes what the fleet refuses");
	CHECK_EQ(bucket_of(a).c.monitored_packets, 2, "counted as monitored");
	teardown();
}

/* A shared rule's fleet key is the rule's own; a refusal is refunded to
 * the shared bucket. */
static void fleet_key_of_a_shared_rule(void)
{
	struct tb_fleet_key k;
	struct tb_bucket b;
	struct frame f;
	int id;

	setup();
	id = set_fleet("198.18.31.0/24", TB_SCOPE_SHARED, TB_ACTION_DROP, 5000, 0, 0);
	k = fleet_key(NULL, id);
	frame_ipv4_len(&f, "198.18.31.7", 1000);
	CHECK_EQ(pass_count(xdp_fd, &f, 2, XDP_PASS), 0, "no share, no credit: nothing passes");
	b = total_of(id);
	CHECK_EQ(b.lvl.tokens, 5000 * TB_NANO, "the shared bucket got its tokens back");
	CHECK_EQ(b.c.dropped_packets, 2, "and counts the refusals");
	fleet_apply(&k, TB_FLEET_GRANT, 1000, mono_now() + 10000000000ULL);
	frame_ipv4_len(&f, "198.18.31.8", 1000);
	CHECK_EQ(pass_count(xdp_fd, &f, 2, XDP_PASS), 1, "another address spends the same key's credit");
	CHECK_EQ(fleet_entry(&k).spent, 1000, "the key's spending");
	teardown();
}

TOPIC(prog_fleet,
	T(fleet_key_pays_from_share_then_credit),
	T(fleet_key_of_a_shared_rule)
);
