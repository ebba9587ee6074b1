// SPDX-License-Identifier: GPL-2.0
/* The paths that take no lock: a denial's copy of the bound, credit spent by
 * compare-and-swap, the per-CPU drop counts and where addresses land. */
#define _GNU_SOURCE
#include "prog.h"

static int bucket_put(const struct tb_addr *a, const struct tb_bucket *b)
{
	return table_edit_in(&rs->m, &rs->cfg, a, b);
}

/* Credit word w as bucket b's way carries it. */
#define TB_CREDIT_TAG_MASK (0xffULL << TB_CREDIT_TAG_SHIFT)

static __u64 tagged(const struct tb_bucket *b, __u64 w)
{
	return (__u64)b->tag << TB_CREDIT_TAG_SHIFT | w;
}

/* A denied packet writes no byte of the bucket: its counts go to this
 * CPU's dropcache, where tbctl's read finds them. */
static void denial_writes_nothing_shared(void)
{
	const struct { int *fd; __u32 pass, drop; int action; const char *src; } c[] = {
		{ &xdp_fd, XDP_PASS, XDP_DROP, TB_ACTION_DROP, "198.18.22.1" },
		{ &tc_fd, TC_ACT_UNSPEC, TC_ACT_SHOT, TB_ACTION_DROP, "198.18.22.2" },
		{ &xdp_fd, XDP_PASS, XDP_PASS, TB_ACTION_MONITOR, "198.18.22.3" },
	};

	setup();
	pin_cpu0();
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct tb_bucket before, after;
		struct tb_counters pend;
		struct frame f;
		int denied = 0;

		set_rule("default", 1000, 3000, TB_COST_BYTES, c[i].action, TB_SCOPE_PER_ADDRESS);
		drain(*c[i].fd, c[i].pass, c[i].drop, c[i].src, &f);
		before = raw_bucket_of(c[i].src);
		for (int k = 0; k < 100; k++)
			denied += run(*c[i].fd, &f) == c[i].drop;
		after = raw_bucket_of(c[i].src);
		CHECK_EQ(denied, 100, "%s: frames over the limit", c[i].src);
		CHECK(!memcmp(&before, &after, sizeof(before)),
		      "%s: 100 denials left the bucket's bytes unchanged", c[i].src);
		pend = pending_of(c[i].src);
		if (c[i].action == TB_ACTION_MONITOR) {
			CHECK_EQ(pend.monitored_packets, 100, "%s: monitored, pending", c[i].src);
			CHECK_EQ(bucket_of(c[i].src).c.monitored_bytes, 101000,
				 "%s: monitored bytes as tbctl reads them", c[i].src);
		} else {
			CHECK_EQ(pend.dropped_packets, 100, "%s: dropped, pending", c[i].src);
			CHECK_EQ(bucket_of(c[i].src).c.dropped_bytes, 101000,
				 "%s: dropped bytes as tbctl reads them", c[i].src);
		}
	}
	unpin();
	teardown();
}

/* A packet admitted from credit takes no lock and writes nothing of the
 * bucket but the credit, which counts it. The credit spent, the next
 * charge takes the lock, adds what the credit admitted to the counters,
 * returns what is left and sets more aside. */
static void credit_admits_without_the_lock(void)
{
	const struct { int *fd; __u32 pass; const char *src; } c[] = {
		{ &xdp_fd, XDP_PASS, "198.18.27.1" },
		{ &tc_fd, TC_ACT_UNSPEC, "198.18.27.2" },
	};

	setup();
	/* 64,000 B of burst: 1,000 B of credit, one frame's worth. At 1 GB/s
	 * the bucket refills to its cap within 64 us. */
	set_rule("default", 1000000000, 64000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct tb_bucket before, after;
		struct frame f;

		frame_ipv4_len(&f, c[i].src, 1000);
		CHECK_EQ(run(*c[i].fd, &f), c[i].pass, "%s: the first frame passes, under the lock", c[i].src);
		before = raw_bucket_of(c[i].src);
		CHECK_EQ(before.credit, tagged(&before, 1000), "%s: 1,000 B set aside as credit, nothing counted in it", c[i].src);
		CHECK_EQ(before.credit_granted, 1000, "%s: granted", c[i].src);
		CHECK_EQ(before.lvl.tokens, (64000 - 2000ULL) * TB_NANO, "%s: from the level", c[i].src);
		CHECK_EQ(run(*c[i].fd, &f), c[i].pass, "%s: the second frame passes, from the credit", c[i].src);
		after = raw_bucket_of(c[i].src);
		CHECK_EQ(after.credit, tagged(&after, 1ULL << 32), "%s: the credit spent, and one packet counted in it", c[i].src);
		CHECK_EQ(pending_of(c[i].src).passed_packets, 1, "%s: counted, not yet in the counters", c[i].src);
		CHECK_EQ(pending_of(c[i].src).passed_bytes, 1000, "%s: its bytes too", c[i].src);
		CHECK_EQ(bucket_of(c[i].src).c.passed_bytes, 2000, "%s: both frames' bytes as tbctl reads them", c[i].src);
		after.credit = before.credit;
		CHECK(!memcmp(&before, &after, sizeof(before)),
		      "%s: nothing else of the bucket written: no lock, no level, no counter", c[i].src);
		usleep(1000);
		CHECK_EQ(run(*c[i].fd, &f), c[i].pass, "%s: the third frame passes, under the lock", c[i].src);
		after = raw_bucket_of(c[i].src);
		CHECK(after.lvl.last_ns > before.lvl.last_ns, "%s: the lock refilled the level", c[i].src);
		CHECK_EQ(after.c.passed_packets, 3, "%s: the credit's packet now in the counters", c[i].src);
		CHECK_EQ(after.c.passed_bytes, 3000, "%s: and its bytes", c[i].src);
		CHECK_EQ(pending_of(c[i].src).passed_packets, 0, "%s: nothing left to count", c[i].src);
		CHECK_EQ(after.credit, tagged(&after, 1000), "%s: and set credit aside again", c[i].src);
		/* A millisecond refills far more than the burst, yet the frame
		 * paid from credit is still missing: its room refills only from
		 * this charge on. Refilled from the grant, it would hold 63,000. */
		CHECK_EQ(held(&after), (64000 - 2000ULL) * TB_NANO,
			 "%s: the burst less the two frames since the grant", c[i].src);
	}
	teardown();
}

/* CPU 0's flush sequence of address a's cache slot. */
static __u64 flushseq_of(const char *a)
{
	struct tb_flushseq *v = calloc(libbpf_num_possible_cpus(), sizeof(*v));
	struct tb_addr k;
	__u64 seq = 0;
	__u32 slot;

	addr_parse(a, &k);
	slot = tb_dropcache_slot(&k, rs->cfg.slot_seed);
	if (CHECK(v && !bpf_map_lookup_elem(rs->m.flushseq, &slot, v), "read the flush sequences"))
		seq = v[0].seq;
	free(v);
	return seq;
}

/* Direct mapped, per CPU: an address taking another's slot flushes the
 * other's counts into its bucket; a slot flushes itself after a batch.
 * Each flush moves the slot's flush sequence on by two, to even. A drop
 * decided on the bucket itself, whose address the slot does not hold,
 * is counted in that bucket instead (a spoofed flood's every drop). */
static void dropcache_flushes_on_collision_and_batch(void)
{
	char a[32] = "198.18.23.1", other[32] = "";
	struct frame fa, fb;
	__u64 seq;

	slot_mates_with_drops(a, 24, other, sizeof(other), &fa);
	CHECK_EQ(raw_bucket_of(a).c.dropped_packets, 1, "%s: only the locked drop in the bucket", a);
	CHECK_EQ(pending_of(a).dropped_packets, 10, "%s: 10 pending", a);
	seq = flushseq_of(a);
	CHECK_EQ(seq % 2, 0, "no flush under way");
	drain(xdp_fd, XDP_PASS, XDP_DROP, other, &fb);
	CHECK_EQ(raw_bucket_of(other).c.dropped_packets, 1, "%s: its locked drop in the bucket", other);
	CHECK_EQ(run(xdp_fd, &fb), XDP_DROP, "%s: a drop without the lock, decided on its bucket", other);
	CHECK_EQ(raw_bucket_of(other).c.dropped_packets, 2, "%s: counted in its bucket, the slot being %s's", other, a);
	CHECK_EQ(raw_bucket_of(other).c.dropped_bytes, 2000, "%s: bytes too", other);
	CHECK_EQ(pending_of(a).dropped_packets, 10, "%s: still 10 pending", a);
	CHECK_EQ(flushseq_of(a), seq, "no flush");
	CHECK_EQ(run(xdp_fd, &fb), XDP_DROP, "%s: a drop on this CPU's copy of its bound", other);
	CHECK_EQ(raw_bucket_of(a).c.dropped_packets, 11, "%s: flushed when %s took the slot", a, other);
	CHECK_EQ(flushseq_of(a), seq + 2, "one flush begun and ended");
	CHECK_EQ(pending_of(a).dropped_packets, 0, "%s: nothing pending", a);
	CHECK_EQ(pending_of(other).dropped_packets, 1, "%s: 1 pending", other);
	CHECK_EQ(pass_count(xdp_fd, &fb, TB_DROPCACHE_BATCH - 2, XDP_DROP), TB_DROPCACHE_BATCH - 2, "%s: more drops", other);
	CHECK_EQ(pending_of(other).dropped_packets, TB_DROPCACHE_BATCH - 1, "%s: a batch less one", other);
	CHECK_EQ(run(xdp_fd, &fb), XDP_DROP, "%s: the batch's last drop", other);
	CHECK_EQ(pending_of(other).dropped_packets, 0, "%s: a full batch is flushed", other);
	CHECK_EQ(flushseq_of(a), seq + 4, "a second flush begun and ended");
	CHECK_EQ(raw_bucket_of(other).c.dropped_packets, 2 + TB_DROPCACHE_BATCH, "%s: in the bucket", other);
	CHECK_EQ(raw_bucket_of(other).c.dropped_bytes, 1000 * (2 + TB_DROPCACHE_BATCH), "%s: bytes", other);
	unpin();
	teardown();
}

/* A spoofed flood through a flooding address's slot: each spoofed
 * address, seen too rarely to keep a copy of its bound, has its drop
 * decided on its bucket and counted there, with no flush of the slot's
 * holder, which keeps its batch; every packet is counted once. */
static void spoofed_drops_leave_the_slot_to_its_flooder(void)
{
	char a[32] = "198.18.27.1", mate[4][32];
	struct frame fa, fm;
	__u64 seq;

	slot_mates_with_drops(a, 28, mate[0], sizeof(mate[0]), &fa);
	/* Each next mate from the /24 after the last one's (198.18.X.Y). */
	for (int i = 1; i < 4; i++)
		CHECK(slot_mate(a, atoi(mate[i - 1] + strlen("198.18.")) + 1, mate[i], sizeof(mate[i])),
		      "a slot mate after %s", mate[i - 1]);
	seq = flushseq_of(a);
	for (int i = 0; i < 4; i++) {
		drain(xdp_fd, XDP_PASS, XDP_DROP, mate[i], &fm);
		CHECK_EQ(run(xdp_fd, &fm), XDP_DROP, "%s: a drop without the lock, in %s's slot", mate[i], a);
		CHECK_EQ(raw_bucket_of(mate[i]).c.dropped_packets, 2, "%s: both drops in its bucket", mate[i]);
		CHECK_EQ(pending_of(mate[i]).dropped_packets, 0, "%s: none pending", mate[i]);
		CHECK_EQ(bucket_of(mate[i]).c.dropped_packets, 2, "%s: read as tbctl reads it: 2 drops", mate[i]);
		CHECK_EQ(bucket_of(mate[i]).c.passed_packets, 3, "%s: and its burst", mate[i]);
	}
	CHECK_EQ(flushseq_of(a), seq, "%s's slot was never flushed", a);
	CHECK_EQ(pending_of(a).dropped_packets, 10, "%s: its 10 drops still pending", a);
	CHECK_EQ(run(xdp_fd, &fa), XDP_DROP, "%s: floods on", a);
	CHECK_EQ(pending_of(a).dropped_packets, 11, "%s: in its batch", a);
	CHECK_EQ(raw_bucket_of(a).c.dropped_packets, 1, "%s: only the locked drop in the bucket", a);
	CHECK_EQ(bucket_of(a).c.dropped_packets, 12, "%s: read as tbctl reads it: every drop once", a);
	unpin();
	teardown();
}

static struct placement placement_of(const struct tb_addr *k, const struct tb_config *cfg)
{
	__u32 h = tb_place_hash(cfg, k);

	return (struct placement){ tb_dropcache_slot(k, cfg->slot_seed), h >> (32 - __builtin_ctz(TB_LOCK_STRIPES)),
				   h >> (32 - cfg->owed_shift) };
}

/* Of n addresses, how many distinct values of field f they take. */
static int distinct(const struct placement *p, int n, size_t f)
{
	int count = 0;

	for (int i = 0; i < n; i++) {
		bool seen = false;

		for (int j = 0; j < i && !seen; j++)
			seen = *(const __u32 *)((const char *)&p[j] + f) == *(const __u32 *)((const char *)&p[i] + f);
		count += !seen;
	}
	return count;
}

/* Addresses that differ in a pattern get places of their own: 64 of the
 * form 2001:db8:0:N::N, which folding the words by XOR put in one cache
 * slot, one lock stripe and one owed[] slot, take at least 48 of each
 * under each of a few seeds. Two of them flooding by turns are then
 * dropped on their own copies of the bound, with their buckets unwritten,
 * where sharing a slot would flush one's counts into its bucket, under
 * the lock, on every drop of the other; and one draining leaves the
 * other its burst, where sharing an owed[] slot started it empty. */
static void patterned_addresses_spread_over_the_caches(void)
{
	const __u32 seeds[] = { 0, 1, 0x9e3779b9, 0xffffffff };
	char a[64] = "2001:db8:0:1::1", b[64] = "";
	struct tb_bucket ba, bb, aa, ab;
	struct placement p[64], pa;
	struct tb_addr k[64];
	struct frame fa, fb;

	for (int n = 0; n < 64; n++) {
		char s[64];

		snprintf(s, sizeof(s), "2001:db8:0:%x::%x", n + 1, n + 1);
		addr_parse(s, &k[n]);
	}
	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		struct tb_config c = { .slot_seed = seeds[i], .owed_shift = 16, .place = TB_PLACE_SIPHASH,
				       .place_key = { seeds[i], ~(__u64)seeds[i] } };

		for (int n = 0; n < 64; n++)
			p[n] = placement_of(&k[n], &c);
		CHECK(distinct(p, 64, offsetof(struct placement, slot)) >= 48,
		      "seed %#x: 64 addresses 2001:db8:0:N::N in %d cache slots, not at least 48", seeds[i],
		      distinct(p, 64, offsetof(struct placement, slot)));
		CHECK(distinct(p, 64, offsetof(struct placement, stripe)) >= 48,
		      "seed %#x: 64 addresses 2001:db8:0:N::N in %d lock stripes, not at least 48", seeds[i],
		      distinct(p, 64, offsetof(struct placement, stripe)));
		CHECK(distinct(p, 64, offsetof(struct placement, owed)) >= 48,
		      "seed %#x: 64 addresses 2001:db8:0:N::N in %d owed[] slots, not at least 48", seeds[i],
		      distinct(p, 64, offsetof(struct placement, owed)));
	}
	setup();
	pa = placement_of(&k[0], &rs->cfg);
	for (int n = 1; n < 64 && !b[0]; n++) {
		struct placement pb = placement_of(&k[n], &rs->cfg);

		if (pb.slot != pa.slot && pb.stripe != pa.stripe && pb.owed != pa.owed)
			snprintf(b, sizeof(b), "2001:db8:0:%x::%x", n + 1, n + 1);
	}
	if (!CHECK(b[0], "an address 2001:db8:0:N::N apart from %s in slot, stripe and owed[] slot", a)) {
		teardown();
		return;
	}
	pin_cpu0();
	set_rule("default", 1000, 3000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	drain(xdp_fd, XDP_PASS, XDP_DROP, a, &fa);
	drain(xdp_fd, XDP_PASS, XDP_DROP, b, &fb);
	CHECK_EQ(run(xdp_fd, &fa), XDP_DROP, "%s: denied on the bound, which this CPU copies", a);
	CHECK_EQ(run(xdp_fd, &fb), XDP_DROP, "%s: denied on the bound, which this CPU copies", b);
	ba = raw_bucket_of(a);
	bb = raw_bucket_of(b);
	for (int i = 0; i < 50; i++) {
		CHECK_EQ(run(xdp_fd, &fa), XDP_DROP, "%s: drop %d", a, i);
		CHECK_EQ(run(xdp_fd, &fb), XDP_DROP, "%s: drop %d", b, i);
	}
	aa = raw_bucket_of(a);
	ab = raw_bucket_of(b);
	CHECK(!memcmp(&ba, &aa, sizeof(ba)), "%s: 50 drops by turns with %s left its bucket's bytes unchanged", a, b);
	CHECK(!memcmp(&bb, &ab, sizeof(bb)), "%s: 50 drops by turns with %s left its bucket's bytes unchanged", b, a);
	CHECK_EQ(bucket_of(a).c.dropped_packets, 52, "%s: every drop counted, as tbctl reads it", a);
	CHECK_EQ(bucket_of(b).c.dropped_packets, 52, "%s: every drop counted, as tbctl reads it", b);
	CHECK_EQ(bucket_of(b).c.passed_packets, 3, "%s: its own burst passed", b);
	unpin();
	teardown();
}

/* The datapath places an address as the config says, as tbctl finds it:
 * by SipHash, whose result this CPU keeps in the address's cache slot,
 * or, on pins upgraded from layout 12, by the mix. */
static void placement_follows_the_config(void)
{
	const char *a = "198.18.46.1", *b = "198.18.46.2";
	int ncpu = libbpf_num_possible_cpus();
	struct tb_placeslot *slots = calloc(ncpu, sizeof(*slots));
	struct tb_addr k;
	struct frame f;
	__u32 ci;

	setup();
	pin_cpu0();
	set_rule("default", 1000, 3000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	frame_ipv4_len(&f, a, 1000);
	CHECK_EQ(run(xdp_fd, &f), XDP_PASS, "%s passes", a);
	CHECK_EQ(raw_bucket_of(a).c.passed_packets, 1, "%s: its bucket where SipHash places it", a);
	addr_parse(a, &k);
	ci = tb_dropcache_slot(&k, rs->cfg.slot_seed);
	if (CHECK(slots && !bpf_map_lookup_elem(bpf_map__fd(skel->maps.placecache), &ci, slots),
		  "read placecache slot %u", ci)) {
		CHECK(!memcmp(&slots[0].addr, &k, sizeof(k)) && slots[0].h == tb_place_hash(&rs->cfg, &k),
		      "CPU 0 keeps %s's placement in its cache slot", a);
		slots[0].h ^= 1U << 31;
		CHECK(!bpf_map_update_elem(bpf_map__fd(skel->maps.placecache), &ci, slots, BPF_ANY),
		      "a wrong placement in CPU 0's slot");
		CHECK_EQ(run(xdp_fd, &f), XDP_PASS, "%s passes again", a);
		CHECK_EQ(raw_bucket_of(a).c.passed_packets, 1, "the datapath took the cached placement, not a new hash");
	}
	set_config_placed(rs->cfg.owed_shift, rs->cfg.slot_seed, TB_PLACE_MIX);
	frame_ipv4_len(&f, b, 1000);
	CHECK_EQ(run(xdp_fd, &f), XDP_PASS, "%s passes under the mix", b);
	CHECK_EQ(raw_bucket_of(b).c.passed_packets, 1, "%s: its bucket where the mix places it", b);
	set_config_placed(rs->cfg.owed_shift, rs->cfg.slot_seed, TB_PLACE_SIPHASH);
	free(slots);
	unpin();
	teardown();
}

/* A denial that read the bucket's bound leaves this CPU a copy of it:
 * later denials read neither the bucket nor its bound. The copy answers
 * only for its address, and only until the generation changes: an
 * address taking its slot, a rule change and reset buckets all send the
 * next packet to the bucket. */
static void denial_copy_skips_the_bucket(void)
{
	char a[32] = "198.18.30.1", other[32] = "";
	struct tb_bucket before, after;
	struct tb_addr k;
	struct frame f, fo;
	int id;

	setup();
	CHECK(slot_mate(a, 31, other, sizeof(other)), "an address of 198.18.31.1 to 198.18.255.254 shares %s's slot", a);
	pin_cpu0();
	set_rule("default", 1000, 3000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	drain(xdp_fd, XDP_PASS, XDP_DROP, a, &f);
	CHECK_EQ(run(xdp_fd, &f), XDP_DROP, "denied by the bucket's bound, which this CPU keeps");
	before = raw_bucket_of(a);
	before.empty_ns = 0;
	addr_parse(a, &k);
	CHECK(!bucket_put(&k, &before), "clear the bucket's bound");
	CHECK_EQ(pass_count(xdp_fd, &f, 50, XDP_DROP), 50, "50 more denials");
	after = raw_bucket_of(a);
	CHECK(!memcmp(&before, &after, sizeof(before)),
	      "denied by the copy: the bucket, bound cleared, neither charged nor written");
	CHECK_EQ(bucket_of(a).c.dropped_packets, 52, "every drop counted, as tbctl reads them");

	drain(xdp_fd, XDP_PASS, XDP_DROP, other, &fo);
	CHECK_EQ(run(xdp_fd, &fo), XDP_DROP, "%s: denied by its bound, and takes the copy's slot", other);
	CHECK_EQ(run(xdp_fd, &f), XDP_DROP, "%s: still drained", a);
	after = raw_bucket_of(a);
	CHECK(after.lvl.last_ns > before.lvl.last_ns && after.empty_ns,
	      "%s: its copy gone, charged under the lock, which wrote the bound again", a);

	CHECK_EQ(run(xdp_fd, &f), XDP_DROP, "%s: denied by the bound, copied again", a);
	id = set_rule("default", 999, 3000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	CHECK_EQ(run(xdp_fd, &f), XDP_DROP, "%s: drained under the new rule", a);
	CHECK_EQ(raw_bucket_of(a).rule & TB_RULE_INDEX, id, "the rule changed: the packet went to the bucket, which took it");

	/* What reset buckets does: buckets and what they owed forgotten,
	 * and the generation bumped. */
	CHECK_EQ(run(xdp_fd, &f), XDP_DROP, "%s: denied by the new bound, copied", a);
	evict(a);
	CHECK(!owed_zero(&rs->m), "forget what buckets owe");
	CHECK_EQ(run(xdp_fd, &f), XDP_DROP, "the bucket forgotten, the copy still denies");
	CHECK(!has_bucket(a), "without looking the bucket up");
	CHECK(!ruleset_invalidate(rs), "bump the generation");
	CHECK_EQ(pass_count(xdp_fd, &f, 3, XDP_PASS), 3, "then the copy is stale: a full burst");
	unpin();
	teardown();
}

/* A bucket charging packets counts its credit's admissions in bytes in
 * the credit word; reset counters starts counting again at what is
 * unspent, leaving the credit to admit the rest; a packet the count
 * could not hold takes the lock. */
static void credit_counts_packets_and_resets(void)
{
	const char *a = "198.18.29.1";
	struct tb_bucket b;
	struct tb_addr k;
	struct frame f;

	setup();
	/* 6,400 packets of burst: 100 of credit. */
	set_rule("default", 1000000, 6400, TB_COST_PACKETS, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	frame_ipv4_len(&f, a, 1000);
	CHECK_EQ(pass_count(xdp_fd, &f, 11, XDP_PASS), 11, "%s: the first frame under the lock, 10 from credit", a);
	b = raw_bucket_of(a);
	CHECK_EQ(b.credit, tagged(&b, 10000ULL << 32 | 90), "%s: 10 packets spent, their 10,000 B counted", a);
	CHECK_EQ(b.c.passed_packets, 1, "%s: the locked pass in the counters", a);
	CHECK_EQ(pending_of(a).passed_packets, 10, "%s: 10 counted in the credit", a);
	CHECK_EQ(bucket_of(a).c.passed_bytes, 11000, "%s: all 11 as tbctl reads them", a);
	CHECK_EQ(reset_counters(0, NULL), XDP_PASS, "reset program ran");
	b = raw_bucket_of(a);
	CHECK_EQ(b.credit, tagged(&b, 90), "%s: reset: the count emptied, the 90 unspent left", a);
	CHECK_EQ(b.credit_from, 90, "%s: counted from there on", a);
	CHECK_EQ(bucket_of(a).c.passed_packets, 0, "%s: nothing counted after the reset", a);
	CHECK_EQ(pass_count(xdp_fd, &f, 5, XDP_PASS), 5, "%s: 5 more from credit", a);
	b = bucket_of(a);
	CHECK_EQ(b.c.passed_packets, 5, "%s: the 5 counted", a);
	CHECK_EQ(b.c.passed_bytes, 5000, "%s: 5,000 B", a);
	CHECK_EQ(tb_credit_unspent(raw_bucket_of(a).credit), 85, "%s: from the credit", a);
	CHECK_EQ(pass_count(xdp_fd, &f, 85, XDP_PASS), 85, "%s: the credit's last 85", a);
	CHECK_EQ(raw_bucket_of(a).credit & ~TB_CREDIT_TAG_MASK, 90000ULL << 32, "%s: spent, 90 packets' bytes counted in it", a);
	CHECK_EQ(run(xdp_fd, &f), XDP_PASS, "%s: a frame under the lock", a);
	b = raw_bucket_of(a);
	CHECK_EQ(b.c.passed_packets, 91, "%s: the credit's 90 and this one in the counters", a);
	CHECK_EQ(b.c.passed_bytes, 91000, "%s: bytes too", a);
	CHECK_EQ(b.credit, tagged(&b, 100), "%s: a fresh credit", a);
	/* A count the word cannot hold: that packet takes the lock. */
	b.credit = tagged(&b, 0xffff00ULL << 32 | 100);
	addr_parse(a, &k);
	CHECK(!bucket_put(&k, &b), "fill the count");
	CHECK_EQ(run(xdp_fd, &f), XDP_PASS, "%s: a frame the count cannot hold passes", a);
	b = raw_bucket_of(a);
	CHECK_EQ(b.c.passed_packets, 92, "%s: under the lock, which took the credit back", a);
	CHECK_EQ(b.c.passed_bytes, 92000 + 0xffff00ULL, "%s: with the count it held", a);
	teardown();
}

TOPIC(prog_fastpaths,
	T(denial_writes_nothing_shared),
	T(credit_admits_without_the_lock),
	T(dropcache_flushes_on_collision_and_batch),
	T(spoofed_drops_leave_the_slot_to_its_flooder),
	T(patterned_addresses_spread_over_the_caches),
	T(placement_follows_the_config),
	T(denial_copy_skips_the_bucket),
	T(credit_counts_packets_and_resets)
);
