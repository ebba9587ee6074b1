// SPDX-License-Identifier: GPL-2.0
/* Upgrades: values copied by their common beginning, shared buckets and
 * counters merged, the table taken over. */
#define _GNU_SOURCE
#include "prog.h"

/* An upgrade's new object, opened with the maps named kept taken from
 * the loaded one, as attach keeps them; NULL when it cannot open. */
static struct tb *open_keeping(const char *const *kept, size_t n)
{
	struct tb *o = tb__open();

	if (!CHECK(o, "open the new object"))
		return NULL;
	o->rodata->tb_acq_rel = order_acq_rel();
	for (size_t i = 0; i < n; i++)
		CHECK(!bpf_map__reuse_fd(bpf_object__find_map_by_name(o->obj, kept[i]),
					 bpf_object__find_map_fd_by_name(skel->obj, kept[i])), "keep %s", kept[i]);
	return o;
}

/* upgrade_copy_map, both ways a value can change size, for an array (copied
 * in batches) and an LPM trie (entry by entry): every entry arrives, each
 * value by the beginning both layouts share, the rest zero. */
static void copy_check(enum bpf_map_type type, __u32 key_size, __u32 from_size, __u32 to_size)
{
	enum { N = 5 };
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = type == BPF_MAP_TYPE_LPM_TRIE ? BPF_F_NO_PREALLOC : 0);
	unsigned char key[16], val[32], got[32];
	int from = bpf_map_create(type, "from", key_size, from_size, 64, &o);
	int to = bpf_map_create(type, "to", key_size, to_size, 64, &o);

	if (!CHECK(from >= 0 && to >= 0, "create maps: %s", strerror(errno)))
		return;
	for (int i = 0; i < N; i++) {
		memset(key, 0, sizeof(key));
		key[0] = type == BPF_MAP_TYPE_LPM_TRIE ? 24 : i;   /* prefixlen, or index */
		key[4] = 198, key[5] = 18, key[6] = i;
		memset(val, 0xa0 + i, sizeof(val));
		CHECK(!bpf_map_update_elem(from, key, val, BPF_ANY), "fill entry %d: %s", i, strerror(errno));
	}
	CHECK_EQ(upgrade_copy_map(from, to), 0, "upgrade_copy_map, type %d, value %u -> %u", type, from_size,
		 to_size);
	for (int i = 0; i < N; i++) {
		memset(key, 0, sizeof(key));
		key[0] = type == BPF_MAP_TYPE_LPM_TRIE ? 24 : i;
		key[4] = 198, key[5] = 18, key[6] = i;
		memset(got, 0x55, sizeof(got));
		if (!CHECK(!bpf_map_lookup_elem(to, key, got), "entry %d copied: %s", i, strerror(errno)))
			continue;
		for (__u32 b = 0; b < to_size; b++)
			if (!CHECK_EQ(got[b], b < from_size ? 0xa0 + i : 0, "entry %d, byte %u", i, b))
				break;
	}
	close(from);
	close(to);
}

static void upgrade_copies_values_by_their_common_beginning(void)
{
	copy_check(BPF_MAP_TYPE_ARRAY, 4, 8, 24);
	copy_check(BPF_MAP_TYPE_ARRAY, 4, 24, 8);
	copy_check(BPF_MAP_TYPE_LPM_TRIE, 8, 4, 12);
	copy_check(BPF_MAP_TYPE_LPM_TRIE, 8, 12, 4);
}

static struct tb_shared shared_in(int fd, __u32 slot)
{
	struct tb_shared sh = {};

	CHECK(!bpf_map_lookup_elem_flags(fd, &slot, &sh, BPF_F_LOCK), "shared slot %u: %s", slot, strerror(errno));
	return sh;
}

static struct tb_stats stats_in(int fd)
{
	struct tb_maps m;
	struct tb_stats s = {};

	for (int i = 0; i < TB_N_MAPS; i++)
		m.fd[i] = -1;
	m.stats = fd;
	CHECK(!stats_sum(&m, &s), "read stats %d", fd);
	return s;
}

/* An upgrade to a layout whose shared buckets and global counters grew,
 * this build standing for both programs: the table is shared, so its
 * buckets carry on in place; the new shared buckets stand in empty until
 * the merge after the swap, which moves the older ones' levels and every
 * counter once, however often it runs. */
static void upgrade_merges_shared_buckets_and_counters(void)
{
	enum { SHARED = offsetof(struct tb_maps, shared) / sizeof(int),
	       STATS = offsetof(struct tb_maps, stats) / sizeof(int) };
	const char *kept[] = { "buckets", "rules", "prefixes_v4", "prefixes_v6", "config", "locks", "dropcache",
			       "denycache", "flushseq", "owed" };
	struct upgrade_moves mv;
	struct tb_maps om, nm;
	struct tb_shared sh;
	struct tb_stats before, after;
	struct frame f;
	struct tb *nskel;
	int shared_rule, nxdp;
	__u32 slot;

	setup();
	pin_cpu0();
	set_owed_shift(16);
	/* 10 B/s: nothing refills a frame's worth while an emulated kernel
	 * loads the new object. */
	set_rule("default", 10, 3000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	shared_rule = set_rule("198.18.40.0/24", 10, 3000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_SHARED);
	slot = rs->rules[shared_rule].shared;
	frame_ipv4_len(&f, "198.18.40.1", 1000);
	CHECK_EQ(pass_count(xdp_fd, &f, 2, XDP_PASS), 2, "older program: the shared prefix passes 2 frames");
	frame_ipv4_len(&f, "198.18.42.1", 1000);
	CHECK_EQ(run(xdp_fd, &f), XDP_PASS, "older program: 198.18.42.1 passes once, into the table");
	before = totals();

	/* The new program: the older maps it keeps, new shared buckets and
	 * counters, and the older ones bound as attach binds them. */
	om = rs->m;
	nskel = open_keeping(kept, sizeof(kept) / sizeof(kept[0]));
	if (!nskel)
		goto out;
	CHECK(!bpf_map__reuse_fd(nskel->maps.shared_prev, om.shared) &&
	      !bpf_map__reuse_fd(nskel->maps.stats_prev, om.stats), "bind the older maps: %s", strerror(errno));
	if (!CHECK(!tb__load(nskel), "load the new object: %s", strerror(errno)))
		goto out_new;
	maps_from_skel(nskel, &nm);
	nxdp = bpf_program__fd(nskel->progs.tb_xdp);
	upgrade_moves_init(&mv);
	mv.old[SHARED] = om.shared;
	mv.old[STATS] = om.stats;
	mv.fresh[SHARED] = mv.fresh[STATS] = true;
	CHECK_EQ(upgrade_copy(&mv, nskel), 0, "upgrade_copy");
	sh = shared_in(nm.shared, slot);
	CHECK(sh.b.lvl.last_ns == TB_MOVED_NS && sh.b.lvl.tokens == 0 && sh.b.c.passed_packets == 0,
	      "the new shared bucket stands in empty, without counters");

	/* The table is shared: what the older program made carries on. */
	frame_ipv4_len(&f, "198.18.42.1", 1000);
	CHECK_EQ(run(nxdp, &f), XDP_PASS, "new program: 198.18.42.1 passes again");
	CHECK_EQ(raw_bucket_of("198.18.42.1").c.passed_packets, 2, "in the bucket the older program made");
	/* Shared: denied until the merge. */
	frame_ipv4_len(&f, "198.18.40.1", 1000);
	CHECK_EQ(run(nxdp, &f), XDP_DROP, "new program: the shared prefix is denied until the merge");

	/* The merge: counters once. */
	for (int round = 1; round <= 2; round++) {
		CHECK_EQ(upgrade_finish(&mv, nskel, &rs->cfg), 0, "upgrade_finish, round %d", round);
		sh = shared_in(nm.shared, slot);
		CHECK_EQ(sh.b.c.passed_packets, 2, "round %d: shared passed packets merged once", round);
		CHECK_EQ(sh.b.c.dropped_packets, 1, "round %d: with the denial counted since", round);
		CHECK(sh.b.lvl.last_ns < TB_MOVED_NS && sh.b.lvl.tokens >= 1000 * TB_NANO,
		      "round %d: shared level merged", round);
		after = stats_in(nm.stats);
		CHECK_EQ(after.c.passed_packets, before.c.passed_packets + 1,
			 "round %d: global passed counters carried on, once", round);
		CHECK_EQ(stats_in(om.stats).c.passed_packets, 0, "round %d: the older counters emptied", round);
	}
	CHECK_EQ(run(nxdp, &f), XDP_PASS, "after the merge the shared prefix passes from its level");
out_new:
	tb__destroy(nskel);
out:
	unpin();
	teardown();
}

/* Address addr's bucket in the table of maps m placed as cfg says, or a
 * zero one. */
static struct tb_bucket bucket_in(const struct tb_maps *m, const struct tb_config *cfg, const char *addr)
{
	struct tb_bucket b = {};
	struct tb_addr a;

	addr_parse(addr, &a);
	bucket_get(m, cfg, &a, &b);
	return b;
}

static void config_put(const struct tb_maps *m, const struct tb_config *cfg)
{
	__u32 zero = 0;

	CHECK(!bpf_map_update_elem(m->config, &zero, cfg, BPF_ANY), "write the new config");
}

/* An upgrade that takes the table over into one placed by SipHash, from
 * pins placed by layout 12's mix, this build standing for both programs.
 * While the older program may run, both charge the older table; then an
 * address's first packet takes its bucket over, level and counters,
 * leaving it moved; an address the older table lacks gets a moved mark
 * there while a packet may still charge it; a bucket moved and gone from
 * the new table is denied until the rest is moved; and the move of the
 * rest, however often it runs, moves each bucket once. */
static void upgrade_takes_the_table_over(void)
{
	const char *kept[] = { "rules", "prefixes_v4", "prefixes_v6", "shared", "locks", "stats", "dropcache",
			       "denycache", "flushseq", "owed", "placecache" };
	enum { BUCKETS = offsetof(struct tb_maps, buckets) / sizeof(int),
	       CONFIG = offsetof(struct tb_maps, config) / sizeof(int) };
	struct tb_config ncfg;
	struct upgrade_moves mv;
	struct tb_bucket b;
	struct tb_maps nm;
	struct frame f;
	struct tb_addr a;
	struct tb *nskel;
	int nxdp;
	__u32 zero = 0;

	setup();
	pin_cpu0();
	set_config_placed(16, TEST_SLOT_SEED, TB_PLACE_MIX);
	/* 10 B/s: nothing refills a frame's worth while the new object loads. */
	set_rule("default", 10, 3000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	frame_ipv4_len(&f, "198.18.50.1", 1000);
	CHECK_EQ(pass_count(xdp_fd, &f, 2, XDP_PASS), 2, "older program: A passes 2 frames");
	frame_ipv4_len(&f, "198.18.50.2", 1000);
	CHECK_EQ(run(xdp_fd, &f), XDP_PASS, "older program: B passes 1");
	frame_ipv4_len(&f, "198.18.50.4", 1000);
	CHECK_EQ(pass_count(xdp_fd, &f, 4, XDP_PASS), 3, "older program: D passes 3 of 4 frames");
	addr_parse("198.18.50.4", &a);
	CHECK_EQ(table_edit_in(&rs->m, &rs->cfg, &a, NULL), 0, "evict D from the older table");

	nskel = open_keeping(kept, sizeof(kept) / sizeof(kept[0]));
	if (!nskel)
		goto out;
	CHECK(!bpf_map__set_inner_map_fd(nskel->maps.table_prev, rs->m.buckets), "the older table as template");
	if (!CHECK(!tb__load(nskel), "load the new object: %s", strerror(errno)))
		goto out_new;
	maps_from_skel(nskel, &nm);
	nxdp = bpf_program__fd(nskel->progs.tb_xdp);
	upgrade_moves_init(&mv);
	mv.replace = true;
	mv.old[BUCKETS] = rs->m.buckets;
	mv.old[CONFIG] = rs->m.config;
	mv.fresh[BUCKETS] = mv.fresh[CONFIG] = true;
	CHECK_EQ(upgrade_copy(&mv, nskel), 0, "upgrade_copy");
	ncfg = rs->cfg;
	CHECK_EQ(upgrade_config(&mv, &ncfg), 0, "upgrade_config");
	CHECK(ncfg.place == TB_PLACE_SIPHASH && ncfg.prev_place == TB_PLACE_MIX && ncfg.take_over == TB_TAKE_SHARE &&
	      (ncfg.place_key[0] | ncfg.place_key[1]) && ncfg.slot_seed == rs->cfg.slot_seed,
	      "the new config: SipHash under a new key, the caches' seed kept, sharing the older table first");
	config_put(&nm, &ncfg);

	/* Sharing: the new program charges the older table. */
	frame_ipv4_len(&f, "198.18.50.1", 1000);
	CHECK_EQ(run(nxdp, &f), XDP_PASS, "shared: A's third frame passes, from the older table");
	CHECK_EQ(run(nxdp, &f), XDP_DROP, "and its fourth is dropped");
	b = bucket_in(&rs->m, &rs->cfg, "198.18.50.1");
	CHECK_EQ(b.c.passed_packets, 3, "all of A's in its older bucket");
	CHECK(!has_bucket_in(&nm, &ncfg, "198.18.50.1"), "and none in the new table");

	/* Every CPU takes over: B's next packet moves B. */
	ncfg.take_over = TB_TAKE_OVER;
	config_put(&nm, &ncfg);
	frame_ipv4_len(&f, "198.18.50.2", 1000);
	CHECK_EQ(run(nxdp, &f), XDP_PASS, "B's second frame passes, from the bucket taken over");
	b = bucket_in(&nm, &ncfg, "198.18.50.2");
	CHECK_EQ(b.c.passed_packets, 2, "B's bucket is in the new table, counters carried");
	/* A new bucket would hold 2000 B; the VM's slow clock refills tens. */
	CHECK(held(&b) < 1500 * TB_NANO, "with its level carried: %llu nano-bytes",
	      (unsigned long long)held(&b));
	CHECK(bucket_in(&rs->m, &rs->cfg, "198.18.50.2").lvl.last_ns >= TB_MOVED_NS, "B's older bucket is moved");
	CHECK_EQ(run(nxdp, &f), XDP_PASS, "B's third frame takes the last of its burst");
	CHECK_EQ(run(nxdp, &f), XDP_DROP, "B's fourth is dropped: one burst across the move");

	/* Moved, then evicted from the new table: denied until the rest moves. */
	addr_parse("198.18.50.2", &a);
	CHECK_EQ(table_edit_in(&nm, &ncfg, &a, NULL), 0, "evict B from the new table");

	/* Marks, while a packet may still charge the older table. */
	ncfg.take_over = TB_TAKE_MARK;
	config_put(&nm, &ncfg);
	frame_ipv4_len(&f, "198.18.50.3", 1000);
	CHECK_EQ(run(nxdp, &f), XDP_PASS, "C, new, passes into the new table");
	CHECK(has_bucket_in(&nm, &ncfg, "198.18.50.3"), "C has a bucket there");
	b = bucket_in(&rs->m, &rs->cfg, "198.18.50.3");
	CHECK(b.lvl.last_ns >= TB_MOVED_NS && b.lvl.tokens == 0, "and a moved mark in the older table");
	CHECK_EQ(run(xdp_fd, &f), XDP_DROP, "which the older program finds empty");
	frame_ipv4_len(&f, "198.18.50.2", 1000);
	CHECK_EQ(run(nxdp, &f), XDP_DROP, "B, moved and evicted, is denied meanwhile");

	/* The rest, twice. */
	ncfg.take_over = TB_TAKE_SHARE;
	config_put(&nm, &ncfg);
	for (int round = 1; round <= 2; round++) {
		if (round == 2) {
			CHECK_EQ(bpf_map_update_elem(bpf_map__fd(nskel->maps.table_prev), &zero, &rs->m.buckets,
						     BPF_ANY), 0, "bind the older table again, as a rerun does");
			ncfg.take_over = TB_TAKE_MARK;
		}
		CHECK_EQ(upgrade_finish(&mv, nskel, &ncfg), 0, "upgrade_finish, round %d", round);
		CHECK_EQ(ncfg.take_over, TB_TAKE_NONE, "round %d: the take-over is over", round);
		CHECK(ncfg.prev_owed_until > 0 && ncfg.prev_owed_until < TB_MOVED_NS,
		      "round %d: the older placement's debts matter until %llu", round,
		      (unsigned long long)ncfg.prev_owed_until);
		b = bucket_in(&nm, &ncfg, "198.18.50.1");
		CHECK_EQ(b.c.passed_packets, 3, "round %d: A moved, its passes once", round);
		CHECK_EQ(b.c.dropped_packets, 1, "round %d: and its drop", round);
		CHECK(held(&b) < 1000 * TB_NANO, "round %d: A's level moved: %llu", round, (unsigned long long)held(&b));
		CHECK(bucket_in(&rs->m, &rs->cfg, "198.18.50.1").lvl.last_ns >= TB_MOVED_NS,
		      "round %d: A's older bucket is moved", round);
	}
	CHECK(bpf_map_lookup_elem(bpf_map__fd(nskel->maps.table_prev), &zero, &b) && errno == ENOENT,
	      "the older table is dropped");
	frame_ipv4_len(&f, "198.18.50.1", 1000);
	CHECK_EQ(run(nxdp, &f), XDP_DROP, "A stays over its limit in the new table");
	frame_ipv4_len(&f, "198.18.50.2", 1000);
	CHECK_EQ(run(nxdp, &f), XDP_DROP, "B, evicted empty, starts from what it owed");
	frame_ipv4_len(&f, "198.18.50.4", 1000);
	CHECK_EQ(run(nxdp, &f), XDP_DROP, "D, evicted from the older table, starts from what it owed there");
out_new:
	tb__destroy(nskel);
out:
	unpin();
	teardown();
}

TOPIC(prog_upgrade,
	T(upgrade_copies_values_by_their_common_beginning),
	T(upgrade_merges_shared_buckets_and_counters),
	T(upgrade_takes_the_table_over)
);
