// SPDX-License-Identifier: GPL-2.0
/* The real BPF object under BPF_PROG_TEST_RUN: crafted frames through the
 * XDP and tc programs, rules set through the same code tbctl uses, and two
 * CPUs racing on one bucket. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "lib/clock.h"
#include "logic/bucket.h"
#include "logic/match.h"
#include "lib/hook.h"
#include "tb.skel.h"
#include "lib/ruleset.h"
#include "lib/state.h"
#include "lib/pending.h"
#include "lib/tables.h"
#include "lib/upgrade.h"
#include "../packets.h"
#include "../check.h"
#include "logic/counters.h"
#include "logic/hash.h"

static struct tb *skel;
static struct ruleset *rs;
static int xdp_fd, tc_fd;

/* Empty one map, as a freshly loaded object's is: arrays zeroed (a
 * batch, one syscall), other maps' keys collected then deleted. */
static void map_clear(const struct bpf_map *map)
{
	int fd = bpf_map__fd(map), ncpus = libbpf_num_possible_cpus();
	enum bpf_map_type type = bpf_map__type(map);
	__u32 n = bpf_map__max_entries(map), zero = 0, count;
	size_t ksz = bpf_map__key_size(map), vsz = bpf_map__value_size(map), got = 0;
	char *keys, *vals;
	int err = 0;

	if (type == BPF_MAP_TYPE_ARRAY_OF_MAPS) {
		if (bpf_map_delete_elem(fd, &zero) && errno != ENOENT)
			err = errno;
	} else if (type == BPF_MAP_TYPE_ARRAY || type == BPF_MAP_TYPE_PERCPU_ARRAY) {
		if (type == BPF_MAP_TYPE_PERCPU_ARRAY)
			vsz = ((vsz + 7) & ~7UL) * ncpus;
		keys = calloc(n, sizeof(__u32));
		vals = calloc(n, vsz);
		if (!keys || !vals) {
			err = ENOMEM;
			free(keys);
			free(vals);
			goto out;
		}
		for (__u32 i = 0; i < n; i++)
			((__u32 *)keys)[i] = i;
		count = n;
		if (bpf_map_update_batch(fd, keys, vals, &count, NULL))
			err = errno;
		free(keys);
		free(vals);
	} else {
		keys = malloc((size_t)n * ksz);
		if (!keys) {
			err = ENOMEM;
			goto out;
		}
		while (got < n && !bpf_map_get_next_key(fd, got ? keys + (got - 1) * ksz : NULL, keys + got * ksz))
			got++;
		for (size_t i = 0; i < got && !err; i++)
			if (bpf_map_delete_elem(fd, keys + i * ksz) && errno != ENOENT)
				err = errno;
		free(keys);
	}
out:
	if (err) {
		fprintf(stderr, "empty map %s: %s\n", bpf_map__name(map), strerror(err));
		exit(2);
	}
}

/* A seed for the caches' slots as attach draws one (observe.sh checks
 * that it does), but fixed: which of a test's addresses share a slot is
 * then the same on every run. */
#define TEST_SLOT_SEED 0x5eed7b01u

/* The config's owed[] size, slot seed and placement, and the table's
 * size, as attach writes them. */
static void set_config_placed(__u8 owed_shift, __u32 slot_seed, __u8 place)
{
	struct tb_config cfg;
	__u32 zero = 0;

	CHECK(!bpf_map_lookup_elem(rs->m.config, &zero, &cfg), "read config");
	cfg.owed_shift = rs->cfg.owed_shift = owed_shift;
	cfg.slot_seed = rs->cfg.slot_seed = slot_seed;
	cfg.place = rs->cfg.place = place;
	cfg.place_key[0] = rs->cfg.place_key[0] = 0x0706050403020100ULL ^ slot_seed;
	cfg.place_key[1] = rs->cfg.place_key[1] = 0x0f0e0d0c0b0a0908ULL;
	cfg.table_shift = rs->cfg.table_shift = __builtin_ctz(bpf_map__max_entries(skel->maps.buckets));
	cfg.ways = rs->cfg.ways = TB_WAYS;
	CHECK(!bpf_map_update_elem(rs->m.config, &zero, &cfg, BPF_ANY), "write config");
}

static void set_config(__u8 owed_shift, __u32 slot_seed)
{
	set_config_placed(owed_shift, slot_seed, TB_PLACE_SIPHASH);
}

static void set_owed_shift(__u8 shift)
{
	set_config(shift, rs->cfg.slot_seed);
}

/* One object per hook variant, loaded once: each test starts from its
 * maps emptied, as a fresh load's are, without another verifier pass (a
 * few seconds each in the emulated VM). */
static struct tb *loaded[2][2];

static void setup_hook(int key_dst, int egress)
{
	struct tb_maps m;
	struct bpf_map *map;

	skel = loaded[key_dst][egress];
	if (skel) {
		bpf_object__for_each_map(map, skel->obj)
			if (!bpf_map__is_internal(map))
				map_clear(map);
	} else {
		skel = tb__open();
		if (!skel) {
			fprintf(stderr, "open BPF object: %s\n", strerror(errno));
			exit(2);
		}
		skel->rodata->tb_key_dst = key_dst;
		skel->rodata->tb_egress = egress;
		skel->rodata->tb_xdp_frags = hook_xdp_frags(skel->progs.tb_xdp);
		if (tb__load(skel)) {
			fprintf(stderr, "load BPF object: %s\n", strerror(errno));
			exit(2);
		}
		loaded[key_dst][egress] = skel;
	}
	maps_from_skel(skel, &m);
	rs = calloc(1, sizeof(*rs));
	if (!rs || ruleset_load(rs, &m)) {
		fprintf(stderr, "read rules: %s\n", strerror(errno));
		exit(2);
	}
	/* owed[] in use, a slot seed and SipHash placement, as a fresh attach
	 * sets them. */
	set_config(__builtin_ctz(bpf_map__max_entries(skel->maps.owed)), TEST_SLOT_SEED);
	xdp_fd = bpf_program__fd(skel->progs.tb_xdp);
	tc_fd = bpf_program__fd(skel->progs.tb_tc);
}

static void setup_key(int key_dst)
{
	setup_hook(key_dst, 0);
}

static void setup(void)
{
	setup_key(0);
}

static void teardown(void)
{
	free(rs);
}

static int set_spec(const char *prefix, const struct rule_spec *s)
{
	struct tb_prefix p;
	char err[128];
	int id;

	if (!CHECK(prefix_parse(prefix, &p, err, sizeof(err)) == PREFIX_OK, "prefix %s: %s", prefix, err))
		return -EINVAL;
	id = ruleset_set(rs, &p, s);
	CHECK(id >= 0, "set rule %s: %s", prefix, strerror(-id));
	return id;
}

static int set_rule(const char *prefix, __u64 rate, __u64 burst, int cost, int action, int scope)
{
	struct rule_spec s = { .rate = rate, .burst = burst, .cost = cost, .action = action, .scope = scope };

	return set_spec(prefix, &s);
}

static int try_run(int fd, const struct frame *f, size_t len, __u32 *retval)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = f->b, .data_size_in = len, .repeat = 1);

	if (bpf_prog_test_run_opts(fd, &o))
		return -errno;
	*retval = o.retval;
	return 0;
}

static __u32 run_len(int fd, const struct frame *f, size_t len)
{
	__u32 ret = ~0U;
	int err = try_run(fd, f, len, &ret);

	CHECK(!err, "BPF_PROG_TEST_RUN: %s", strerror(-err));
	return ret;
}

static __u32 run(int fd, const struct frame *f)
{
	return run_len(fd, f, f->len);
}

/* Reset the counters as tbctl does: the reset program, which moves the
 * reset epoch on, over cpus CPUs' global counters; what it took from them
 * goes to *taken (may be NULL). */
static __u32 reset_counters(__u32 cpus, struct tb_stats *taken)
{
	struct tb_reset_req req = { .stats_cpus = cpus };
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = &req, .data_size_in = sizeof(req), .data_out = &req,
		    .data_size_out = sizeof(req), .repeat = 1);
	int err = pending_epoch_next(&rs->m, &rs->cfg, &req.reset_epoch);

	if (!CHECK(!err, "the next reset epoch: %s", strerror(-err)))
		return ~0U;
	if (!CHECK(!bpf_prog_test_run_opts(bpf_program__fd(skel->progs.tb_reset_counters), &o),
		   "BPF_PROG_TEST_RUN of tb_reset_counters: %s", strerror(errno)))
		return ~0U;
	rs->cfg.reset_epoch = req.reset_epoch;
	if (taken)
		*taken = req.taken;
	return o.retval;
}

/* The bucket as the map holds it. */
static struct tb_bucket raw_bucket_of(const char *addr)
{
	struct tb_bucket b = {};
	struct tb_addr a;

	if (CHECK(!addr_parse(addr, &a), "address %s", addr))
		CHECK(!bucket_get(&rs->m, &rs->cfg, &a, &b), "bucket of %s exists", addr);
	return b;
}

/* Address addr's bucket (none: zero) with its counters as tbctl reads
 * them, in show's order: the caches, the bucket, what is pending added.
 * Whether it has one. */
static int read_key_as_tbctl(const struct tb_addr *k, struct tb_bucket *b)
{
	struct tb_pending p;
	char name[64];
	int has = 0;

	memset(b, 0, sizeof(*b));
	addr_format(k, name, sizeof(name));
	if (CHECK(!pending_read(&rs->m, &rs->cfg, &p), "read the caches")) {
		has = !bucket_get(&rs->m, &rs->cfg, k, b);
		CHECK(!pending_add(&rs->m, &p, k, b), "%s: read what is pending", name);
		pending_free(&p);
	}
	return has;
}

static int read_as_tbctl(const char *addr, struct tb_bucket *b)
{
	struct tb_addr a;

	addr_parse(addr, &a);
	return read_key_as_tbctl(&a, b);
}

static struct tb_bucket bucket_of(const char *addr)
{
	struct tb_bucket b;

	CHECK(read_as_tbctl(addr, &b), "bucket of %s exists", addr);
	return b;
}

/* What is counted but not yet in the bucket's counters: admissions its
 * credit counts, and drops in the per-CPU caches. */
static struct tb_counters pending_of(const char *addr)
{
	struct tb_bucket b, raw = {};
	struct tb_addr a;

	read_as_tbctl(addr, &b);
	addr_parse(addr, &a);
	bucket_get(&rs->m, &rs->cfg, &a, &raw);
	return (struct tb_counters){
		.passed_packets = b.c.passed_packets - raw.c.passed_packets,
		.passed_bytes = b.c.passed_bytes - raw.c.passed_bytes,
		.dropped_packets = b.c.dropped_packets - raw.c.dropped_packets,
		.dropped_bytes = b.c.dropped_bytes - raw.c.dropped_bytes,
		.monitored_packets = b.c.monitored_packets - raw.c.monitored_packets,
		.monitored_bytes = b.c.monitored_bytes - raw.c.monitored_bytes,
	};
}

/* What a bucket holds at its latest charge: its level and the credit
 * set aside from it, unspent. */
static __u64 held(const struct tb_bucket *b)
{
	return b->lvl.tokens + (b->credit_granted ? tb_credit_unspent(b->credit) : 0) * TB_NANO;
}

/* Clear address a's way of the table of maps m placed as cfg says, in
 * place of the datapath (evict), or set its bucket to b. 0 or -errno. */
static int table_edit_in(const struct tb_maps *m, const struct tb_config *cfg, const struct tb_addr *a,
			 const struct tb_bucket *b)
{
	__u32 si = tb_set_index(tb_place_hash(cfg, a), cfg->table_shift);
	struct tb_set set;
	int w;

	if (bpf_map_lookup_elem(m->buckets, &si, &set))
		return -errno;
	w = tb_way_find(&set, a, cfg->ways);
	if (w < 0)
		return -ENOENT;
	if (!b)
		tb_way_clear(&set, w);
	else
		set.b[w] = *b;
	return bpf_map_update_elem(m->buckets, &si, &set, BPF_EXIST) ? -errno : 0;
}

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

static int has_bucket_in(const struct tb_maps *m, const struct tb_config *cfg, const char *addr)
{
	struct tb_bucket b;
	struct tb_addr a;

	addr_parse(addr, &a);
	return !bucket_get(m, cfg, &a, &b);
}

static int has_bucket(const char *addr)
{
	return has_bucket_in(&rs->m, &rs->cfg, addr);
}

static struct tb_stats totals(void)
{
	struct tb_stats s;

	CHECK(!stats_sum(&rs->m, &s), "read stats");
	return s;
}

/* An upgrade's new object, opened with the maps named kept taken from
 * the loaded one, as attach keeps them; NULL when it cannot open. */
static struct tb *open_keeping(const char *const *kept, size_t n)
{
	struct tb *o = tb__open();

	if (!CHECK(o, "open the new object"))
		return NULL;
	for (size_t i = 0; i < n; i++)
		CHECK(!bpf_map__reuse_fd(bpf_object__find_map_by_name(o->obj, kept[i]),
					 bpf_object__find_map_fd_by_name(skel->obj, kept[i])), "keep %s", kept[i]);
	return o;
}

/* Send n frames, return how many the program passed. */
static int pass_count(int fd, const struct frame *f, int n, __u32 pass)
{
	int passed = 0;

	for (int i = 0; i < n; i++)
		passed += run(fd, f) == pass;
	return passed;
}

/* Frames of len bytes from src against a 1000 B/s rule of burst bytes:
 * as many as the burst holds pass, the next one drops, and every one is
 * counted whole in the bucket and the global counters. */
static void burst_then_drop(const char *src, size_t len, __u64 burst)
{
	__u64 fit = burst / len;
	struct frame f;
	struct tb_bucket b;
	struct tb_stats s;

	setup();
	set_rule("default", 1000, burst, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	frame_ipv4_len(&f, src, len);
	for (__u64 i = 1; i <= fit; i++)
		CHECK_EQ(run(xdp_fd, &f), XDP_PASS, "%s: %zu-byte frame %llu, burst %llu", src, len, i, burst);
	CHECK_EQ(run(xdp_fd, &f), XDP_DROP, "%s: the next frame, the bucket empty", src);
	b = bucket_of(src);
	CHECK_EQ(b.c.passed_packets, fit, "%s: bucket passed packets", src);
	CHECK_EQ(b.c.passed_bytes, fit * len, "%s: bucket passed bytes", src);
	CHECK_EQ(b.c.dropped_packets, 1, "%s: bucket dropped packets", src);
	CHECK_EQ(b.c.dropped_bytes, len, "%s: bucket dropped bytes", src);
	s = totals();
	CHECK_EQ(s.c.passed_packets, fit, "%s: global passed packets", src);
	CHECK_EQ(s.c.dropped_bytes, len, "%s: global dropped bytes", src);
	CHECK_EQ(s.buckets_created, 1, "%s: buckets created", src);
	teardown();
}

static void xdp_ipv4_burst_then_drop(void)
{
	burst_then_drop("198.18.0.1", 1000, 3000);
}

static void xdp_ipv6_burst_then_drop(void)
{
	struct frame f;

	setup();
	set_rule("default", 1000, 3000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	frame_ipv6_len(&f, "2001:db8::1", 1500);
	CHECK_EQ(pass_count(xdp_fd, &f, 3, XDP_PASS), 2, "1500-byte IPv6 frames passed of 3");
	CHECK_EQ(bucket_of("2001:db8::1").c.dropped_bytes, 1500, "IPv6 bucket dropped bytes");
	teardown();
}

static void vlan_tagged_frames_are_policed(void)
{
	setup();
	set_rule("default", 1000, 2000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	for (int vlans = 1; vlans <= 2; vlans++) {
		struct frame_opts o = { .vlans = vlans, .payload = 958 };
		const char *src = vlans == 1 ? "198.18.1.1" : "2001:db8::1:1";
		struct frame f;

		if (vlans == 1)
			frame_ipv4(&f, src, "198.19.0.1", &o);
		else
			frame_ipv6(&f, src, "2001:db8::2", &o);
		CHECK(pass_count(xdp_fd, &f, 4, XDP_PASS) == 2 - (vlans == 2 && f.len > 1000),
		      "%d tag(s): frames of %zu bytes against burst 2000", vlans, f.len);
		CHECK(bucket_of(src).c.passed_bytes + bucket_of(src).c.dropped_bytes == 4 * f.len,
		      "%d tag(s): every frame charged to %s", vlans, src);
	}
	teardown();
}

static void truncated_headers_pass_as_malformed(void)
{
	int expected = 0;

	setup();
	set_rule("default", 1, 1500, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	for (int prog = 0; prog < 2; prog++) {
		int fd = prog ? tc_fd : xdp_fd;
		__u32 pass = prog ? (__u32)TC_ACT_UNSPEC : XDP_PASS;

		for (int vlans = 0; vlans <= 2; vlans++) {
			for (int fam = 4; fam <= 6; fam += 2) {
				struct frame_opts o = { .vlans = vlans, .ip_option_words = fam == 4 ? 2 : 0 };
				struct frame f;

				if (fam == 4)
					frame_ipv4(&f, "198.18.0.9", "198.19.0.1", &o);
				else
					frame_ipv6(&f, "2001:db8::9", "2001:db8::2", &o);
				/* The kernel refuses test frames shorter than Ethernet's
				 * header, and builds no skb from an untagged IP frame
				 * cut inside its fixed IP header: those cuts are covered by
				 * the host parser test (same parse.h). */
				for (size_t cut = ETH_HLEN; cut < f.hdr_len; cut++) {
					__u32 ret = ~0U;
					int err = try_run(fd, &f, cut, &ret);

					if (prog && !vlans && cut < ETH_HLEN + (fam == 4 ? 20u : 40u)) {
						CHECK(err == -EINVAL, "tc, untagged IPv%d cut at %zu: "
						      "expected the kernel to refuse, got %d", fam, cut, err);
						continue;
					}
					CHECK(!err && ret == pass, "%s, %d tags, IPv%d cut at %zu: expected pass, "
					      "got %u (err %d)", prog ? "tc" : "xdp", vlans, fam, cut, ret, err);
					expected++;
				}
			}
		}
	}
	CHECK_EQ(totals().malformed_packets, expected, "malformed count");
	CHECK_EQ(totals().buckets_created, 0, "no bucket for a malformed frame");
	teardown();
}

static void non_ip_and_neighbour_discovery_pass(void)
{
	struct frame f;

	setup();
	set_rule("default", 1, 1500, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	frame_arp(&f);
	CHECK_EQ(pass_count(xdp_fd, &f, 5, XDP_PASS), 5, "ARP frames passed by XDP");
	CHECK_EQ(pass_count(tc_fd, &f, 5, (__u32)TC_ACT_UNSPEC), 5, "ARP frames passed by tc");
	CHECK_EQ(totals().nonip_packets, 10, "non-IP count");
	frame_icmp6(&f, "2001:db8::5", 135, 255);
	CHECK_EQ(pass_count(xdp_fd, &f, 5, XDP_PASS), 5, "neighbour solicitations pass an empty bucket");
	CHECK_EQ(totals().nd_packets, 5, "neighbour discovery count");
	CHECK(!has_bucket("2001:db8::5"), "no bucket charged for neighbour discovery");
	teardown();
}

static void options_and_fragments_are_charged(void)
{
	struct frame_opts opt = { .ip_option_words = 10, .payload = 100 };
	struct frame_opts frag = { .fragment = 1, .payload = 100 };
	struct frame f;

	setup();
	set_rule("default", 1000, 10000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	frame_ipv4(&f, "198.18.2.1", "198.19.0.1", &opt);
	run(xdp_fd, &f);
	CHECK_EQ(bucket_of("198.18.2.1").c.passed_bytes, f.len, "IPv4 with options charged");
	frame_ipv4(&f, "198.18.2.2", "198.19.0.1", &frag);
	run(xdp_fd, &f);
	CHECK_EQ(bucket_of("198.18.2.2").c.passed_bytes, f.len, "fragment charged to its source");
	teardown();
}

static void addresses_are_isolated(void)
{
	struct frame a, b;

	setup();
	set_rule("default", 1000, 2000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	frame_ipv4_len(&a, "198.18.3.1", 1000);
	frame_ipv4_len(&b, "198.18.3.2", 1000);
	CHECK_EQ(pass_count(xdp_fd, &a, 10, XDP_PASS), 2, "first address drains its own bucket");
	CHECK_EQ(pass_count(xdp_fd, &b, 10, XDP_PASS), 2, "second address still has its burst");
	teardown();
}

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

static int set_total(const char *prefix, __u64 rate, __u64 burst, __u64 total, __u64 total_burst, int action)
{
	struct rule_spec s = { .rate = rate, .burst = burst, .action = action, .total_rate = total,
			       .total_burst = total_burst };

	return set_spec(prefix, &s);
}

/* The bucket of rule slot id's total, as the map holds it. */
static struct tb_bucket total_of(int id)
{
	__u32 slot = rs->rules[id].shared;
	struct tb_shared sh = {};

	CHECK(!bpf_map_lookup_elem_flags(rs->m.shared, &slot, &sh, BPF_F_LOCK), "read the total's bucket");
	return sh.b;
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

/* A rule named by prefix and match (as "rule set PREFIX proto ...").
 * Returns its slot. */
static int set_match(const char *prefix, const char *proto, const char *dport, __u64 burst, int scope,
		     __u8 group_len)
{
	struct rule_spec s = { .rate = 1000, .burst = burst, .scope = scope, .group_len = group_len };
	struct tb_prefix p;
	char err[160];
	int id;

	if (!CHECK(prefix_parse(prefix, &p, err, sizeof(err)) == PREFIX_OK, "prefix %s: %s", prefix, err) ||
	    !CHECK(!match_parse(proto, dport, NULL, &p, err, sizeof(err)), "%s proto %s: %s", prefix, proto, err))
		return -EINVAL;
	id = ruleset_set(rs, &p, &s);
	CHECK(id >= 0, "set rule %s proto %s dport %s: %s", prefix, proto, dport, strerror(-id));
	return id;
}

/* Packets counted by the bucket of addr (or its group) under rule id. */
static __u64 passed_under(const char *addr, int id)
{
	const struct tb_rule *r = &rs->rules[id];
	struct tb_bucket b;
	struct tb_addr k;

	addr_parse(addr, &k);
	tb_rule_key(&k, r, r->family == 6, rs->cfg.place_key);
	return read_key_as_tbctl(&k, &b) ? b.c.passed_packets : 0;
}

/* A UDP (or, with proto set, another protocol's) frame from src to dport. */
static void frame_to_port(struct frame *f, const char *src, __u8 proto, __u16 dport)
{
	struct frame_opts o = { .payload = 100 };

	if (strchr(src, ':')) {
		frame_ipv6_chain(f, src, 0, -1, proto, 40000, dport, 100);
		return;
	}
	frame_ipv4(f, src, "198.19.0.1", &o);
	f->b[14 + 9] = proto;
	frame_ports(f, f->hdr_len, 40000, dport);
}

/* The rule for a packet: the longest prefix with a rule that matches it,
 * and on one prefix a port rule before a protocol rule before a plain
 * one. A rule with a match charges buckets of its own, per address or
 * per group, in both families. */
static void port_beats_protocol_beats_plain(void)
{
	int d, u, u53, g, u6;
	struct frame f;

	setup();
	d = set_rule("default", 1000, 100000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	u = set_match("198.18.0.0/16", "udp", NULL, 100000, TB_SCOPE_PER_ADDRESS, 0);
	u53 = set_match("198.18.0.0/16", "udp", "53", 100000, TB_SCOPE_PER_ADDRESS, 0);
	set_rule("198.18.5.0/24", 1000, 100000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	g = set_match("198.18.6.0/24", "tcp", "80-89", 100000, TB_SCOPE_GROUP, 28);
	u6 = set_match("2001:db8::/32", "udp", NULL, 100000, TB_SCOPE_PER_ADDRESS, 0);
	if (d < 0 || u < 0 || u53 < 0 || g < 0 || u6 < 0)
		goto out;
	CHECK(rs->cfg.resolve_first && rs->cfg.match_reads == (TB_READS_PROTO | TB_READS_DPORT),
	      "the config says a rule reads protocols and destination ports: %u %u", rs->cfg.resolve_first,
	      rs->cfg.match_reads);
	frame_to_port(&f, "198.18.1.1", TB_PROTO_UDP, 53);
	run(xdp_fd, &f);
	frame_to_port(&f, "198.18.1.1", TB_PROTO_UDP, 54);
	run(xdp_fd, &f);
	run(tc_fd, &f);
	frame_to_port(&f, "198.18.1.1", TB_PROTO_TCP, 53);
	run(xdp_fd, &f);
	CHECK_EQ(passed_under("198.18.1.1", u53), 1, "UDP to 53: the port rule's bucket");
	CHECK_EQ(passed_under("198.18.1.1", u), 2, "UDP to 54, xdp and tc: the protocol rule's");
	CHECK_EQ(bucket_of("198.18.1.1").c.passed_packets, 1, "TCP: the address's own, the default's");
	frame_to_port(&f, "198.18.5.1", TB_PROTO_UDP, 53);
	run(xdp_fd, &f);
	CHECK_EQ(bucket_of("198.18.5.1").c.passed_packets, 1, "UDP to 53 inside a longer plain prefix: its rule");
	CHECK_EQ(passed_under("198.18.5.1", u53), 0, "not the shorter prefix's port rule");
	frame_to_port(&f, "198.18.6.1", TB_PROTO_TCP, 85);
	run(xdp_fd, &f);
	frame_to_port(&f, "198.18.6.2", TB_PROTO_TCP, 89);
	run(xdp_fd, &f);
	frame_to_port(&f, "198.18.6.3", TB_PROTO_TCP, 90);
	run(xdp_fd, &f);
	CHECK_EQ(passed_under("198.18.6.1", g), 2, "TCP to 85 and 89 from one /28: its group's bucket");
	CHECK_EQ(bucket_of("198.18.6.3").c.passed_packets, 1, "TCP to 90: outside the range, the default's");
	frame_to_port(&f, "2001:db8::1", TB_PROTO_UDP, 53);
	run(xdp_fd, &f);
	frame_to_port(&f, "2001:db8::1", TB_PROTO_TCP, 53);
	run(xdp_fd, &f);
	CHECK_EQ(passed_under("2001:db8::1", u6), 1, "IPv6 UDP: the protocol rule's bucket");
	CHECK_EQ(bucket_of("2001:db8::1").c.passed_packets, 1, "IPv6 TCP: the address's own");
	for (int id = 0; id < TB_MAX_RULES; id++)
		if (rs->rules[id].in_use && rs->rules[id].match.proto) {
			struct tb_prefix p;

			rule_prefix(&rs->rules[id], &p);
			CHECK(!ruleset_del(rs, &p), "delete rule %d", id);
		}
	CHECK(!rs->cfg.resolve_first && !rs->cfg.match_reads, "with the last match gone, so are the flags");
	frame_to_port(&f, "198.18.1.1", TB_PROTO_UDP, 53);
	run(xdp_fd, &f);
	CHECK_EQ(bucket_of("198.18.1.1").c.passed_packets, 2, "UDP to 53 then: the default's");
out:
	teardown();
}

/* The rules with a match of the node a packet from addr looks up, by
 * slot, in the order they are tried ("-": no node). */
static void node_in(const struct ruleset *rs, const char *addr, char *out, size_t len)
{
	struct tb_addr a;
	__u32 slot;
	struct tb_node n;
	int err;

	addr_parse(addr, &a);
	if (addr_is_v4(&a)) {
		struct tb_lpm_v4 k = { .prefixlen = 32, .addr = a.w[3] };

		err = bpf_map_lookup_elem(rs->m.matches_v4, &k, &slot);
	} else {
		struct tb_lpm_v6 k = { .prefixlen = 128 };

		memcpy(k.addr, a.w, 16);
		err = bpf_map_lookup_elem(rs->m.matches_v6, &k, &slot);
	}
	if (err && rs->cfg.default_node) {
		slot = rs->cfg.default_node - 1;
		err = 0;
	}
	if (err || bpf_map_lookup_elem(rs->m.nodes, &slot, &n)) {
		snprintf(out, len, "-");
		return;
	}
	*out = 0;
	for (__u32 i = 0; i < n.n; i++)
		snprintf(out + strlen(out), len - strlen(out), "%s%u", i ? " " : "", n.e[i].rule);
}

static void node_of(const char *addr, char *out, size_t len)
{
	node_in(rs, addr, out, len);
}

/* tbctl keeps each prefix's node what its rules and those around it say,
 * publishes a change in a fresh slot, and refuses a 17th rule for a
 * prefix, changing nothing. */
static void match_nodes_follow_changes(void)
{
	char got[128], want[128];
	struct ruleset *again;
	int d, a, b, err, n;

	setup();
	d = set_match("default", "udp", NULL, 100000, TB_SCOPE_PER_ADDRESS, 0);
	a = set_match("198.18.0.0/16", "tcp", NULL, 100000, TB_SCOPE_PER_ADDRESS, 0);
	b = set_match("198.18.1.0/24", "udp", "53", 100000, TB_SCOPE_PER_ADDRESS, 0);
	node_of("198.18.1.1", got, sizeof(got));
	snprintf(want, sizeof(want), "%d %d %d", b, a, d);
	CHECK(!strcmp(got, want), "the /24's node: its rule, the /16's, the default's: %s, not %s", got, want);
	node_of("198.18.2.1", got, sizeof(got));
	snprintf(want, sizeof(want), "%d %d", a, d);
	CHECK(!strcmp(got, want), "the /16's: %s, not %s", got, want);
	node_of("2001:db8::1", got, sizeof(got));
	snprintf(want, sizeof(want), "%d", d);
	CHECK(!strcmp(got, want), "IPv6: the default's: %s, not %s", got, want);
	d = set_match("default", "udp", NULL, 50000, TB_SCOPE_PER_ADDRESS, 0);
	node_of("198.18.1.1", got, sizeof(got));
	snprintf(want, sizeof(want), "%d %d %d", b, a, d);
	CHECK(!strcmp(got, want), "a changed default rule's new slot in every node: %s, not %s", got, want);
	n = 0;
	for (int i = 0; i < TB_MAX_RULES; i++)
		n += rs->rules[i].in_use;
	for (int port = 1; port <= 13; port++) {
		char dport[8];

		snprintf(dport, sizeof(dport), "%d", port);
		set_match("198.18.1.0/24", "udp", dport, 100000, TB_SCOPE_PER_ADDRESS, 0);
	}
	{
		struct rule_spec s = { .rate = 1000, .burst = 100000 };
		struct tb_prefix p;
		char e[160];

		prefix_parse("198.18.1.128/25", &p, e, sizeof(e));
		match_parse("udp", "99", NULL, &p, e, sizeof(e));
		err = ruleset_set(rs, &p, &s);
		CHECK_EQ(err, -E2BIG, "a 17th rule with a match for 198.18.1.128/25 is refused");
	}
	for (int i = 0; i < TB_MAX_RULES; i++)
		n -= rs->rules[i].in_use;
	CHECK_EQ(n, -13, "13 more rules, and none for the refused one");
	node_of("198.18.1.200", got, sizeof(got));
	n = 1;
	for (const char *c = got; *c; c++)
		n += *c == ' ';
	CHECK(n == TB_NODE_ENTRIES, "the /24's full node still serves 198.18.1.200: %s", got);
	{
		struct tb_prefix p;
		char e[160];

		prefix_parse("198.18.0.0/16", &p, e, sizeof(e));
		match_parse("tcp", NULL, NULL, &p, e, sizeof(e));
		CHECK(!ruleset_del(rs, &p), "delete the /16's rule");
	}
	node_of("198.18.2.1", got, sizeof(got));
	snprintf(want, sizeof(want), "%d", d);
	CHECK(!strcmp(got, want), "with it gone, the /16 has no node: the default's, %s", got);
	again = calloc(1, sizeof(*again));
	if (CHECK(again && !ruleset_read(again, &rs->m), "read the rules again")) {
		n = 0;
		for (int i = 0; i < TB_MAX_RULES; i++)
			n += again->rules[i].in_use != rs->rules[i].in_use;
		CHECK_EQ(n, 0, "a reader finds every published rule with a match");
	}
	/* A change of the default's rule killed between two nodes: the
	 * default's own names its new slot, the /24's still the old one,
	 * since retired. The next writer's load makes the /24's whole. */
	if (again) {
		struct tb_lpm_v4 k = { .prefixlen = 32 };
		struct tb_node bn;
		__u32 slot;

		inet_pton(AF_INET, "198.18.1.1", &k.addr);
		if (CHECK(!bpf_map_lookup_elem(rs->m.matches_v4, &k, &slot) &&
			  !bpf_map_lookup_elem(rs->m.nodes, &slot, &bn), "read the /24's node")) {
			for (__u32 e = 0; e < bn.n && e < TB_NODE_ENTRIES; e++)
				if (bn.e[e].rule == d)
					bn.e[e].rule = TB_MAX_RULES - 1;
			CHECK(!bpf_map_update_elem(rs->m.nodes, &slot, &bn, BPF_ANY), "leave it naming a free slot");
		}
		memset(again, 0, sizeof(*again));
		if (CHECK(!ruleset_load(again, &rs->m), "load the rules as a writer")) {
			node_in(again, "198.18.1.1", got, sizeof(got));
			snprintf(want, sizeof(want), " %d", d);
			CHECK(strstr(got, want) && !strstr(got, "16383"), "the /24's node names the default's rule "
			      "again: %s", got);
		}
	}
	free(again);
	teardown();
}

/* Datagram id from frame f's source in two fragments through fd: the
 * first (ports sport and dport), then a later one. */
static void run_datagram(int fd, struct frame *f, __u16 id, __u16 sport, __u16 dport)
{
	frame_ipv4_fragment(f, 1, id, sport, dport);
	run(fd, f);
	frame_ipv4_fragment(f, 0, id, 0, 0);
	run(fd, f);
}

/* A fragment after the first carries no ports: it is charged to the
 * rule of its datagram, whose first fragment's ports the datapath keeps
 * (bpf/stages/fragment.h), on either hook. One whose first was not seen is
 * dropped where a port rule could take it, and counted; where only a
 * protocol rule could, charged to that rule. Fragments of two datagrams
 * with one identification but two sources stay apart. */
static void fragments_are_charged_to_their_datagram(void)
{
	struct frame_opts frag = { .fragment = 1, .payload = 100 };
	struct tb_stats before;
	int u, u53;
	struct frame f;
	size_t l4;

	setup();
	set_rule("default", 1000, 100000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	u = set_match("default", "udp", NULL, 100000, TB_SCOPE_PER_ADDRESS, 0);
	u53 = set_match("default", "udp", "53", 100000, TB_SCOPE_PER_ADDRESS, 0);
	if (u < 0 || u53 < 0)
		goto out;
	frame_ipv4(&f, "198.18.1.1", "198.19.0.1", &frag);
	frame_ipv4_fragment(&f, 1, 7, 40000, 53);
	run(xdp_fd, &f);
	CHECK_EQ(passed_under("198.18.1.1", u53), 1, "IPv4, the first fragment: the port rule");
	frame_ipv4_fragment(&f, 0, 7, 0, 0);
	run(xdp_fd, &f);
	run(tc_fd, &f);
	CHECK_EQ(passed_under("198.18.1.1", u53), 3, "its later fragments, on either hook: the port rule");
	CHECK_EQ(passed_under("198.18.1.1", u), 0, "none to the protocol rule");
	before = totals();
	frame_ipv4_fragment(&f, 0, 8, 0, 0);
	CHECK_EQ(run(xdp_fd, &f), XDP_DROP, "a later fragment whose first was not seen is dropped");
	CHECK_EQ(run(tc_fd, &f), TC_ACT_SHOT, "on tc too");
	CHECK_EQ(totals().fragments_unknown_packets - before.fragments_unknown_packets, 2, "counted as such");
	CHECK_EQ(totals().c.dropped_packets - before.c.dropped_packets, 2, "and as dropped");
	CHECK_EQ(passed_under("198.18.1.1", u53) + passed_under("198.18.1.1", u), 3, "charged to no bucket");
	run_datagram(xdp_fd, &f, 8, 40000, 80);
	CHECK_EQ(passed_under("198.18.1.1", u), 2, "out of order: once its first came, the next is its datagram's");
	frame_ipv4(&f, "198.18.1.2", "198.19.0.1", &frag);
	run_datagram(xdp_fd, &f, 7, 40000, 80);
	CHECK_EQ(passed_under("198.18.1.2", u), 2, "identification 7 from another source: its own datagram's rule");
	frame_ipv4(&f, "198.18.1.1", "198.19.0.1", &frag);
	frame_ipv4_fragment(&f, 0, 7, 0, 0);
	run(xdp_fd, &f);
	CHECK_EQ(passed_under("198.18.1.1", u53), 4, "and the first source's still its own");
	l4 = frame_ipv6_chain(&f, "2001:db8::1", 1, 0, TB_PROTO_UDP, 40000, 53, 100);
	frame_ipv6_frag_id(&f, l4, 70000);
	run(tc_fd, &f);
	CHECK_EQ(passed_under("2001:db8::1", u53), 1, "IPv6, past an options header and a first fragment's: the port rule");
	l4 = frame_ipv6_chain(&f, "2001:db8::1", 1, 185, TB_PROTO_UDP, 40000, 53, 100);
	frame_ipv6_frag_id(&f, l4, 70000);
	run(xdp_fd, &f);
	CHECK_EQ(passed_under("2001:db8::1", u53), 2, "its later fragment: the port rule");
	before = totals();
	frame_ipv6_frag_id(&f, l4, 70001);
	CHECK_EQ(run(xdp_fd, &f), XDP_DROP, "IPv6, a later fragment whose first was not seen: dropped");
	CHECK_EQ(totals().fragments_unknown_packets - before.fragments_unknown_packets, 1, "counted as such");
	{
		struct tb_prefix p;
		char e[160];

		prefix_parse("default", &p, e, sizeof(e));
		match_parse("udp", "53", NULL, &p, e, sizeof(e));
		CHECK(!ruleset_del(rs, &p), "delete the port rule");
	}
	frame_ipv4(&f, "198.18.1.3", "198.19.0.1", &frag);
	frame_ipv4_fragment(&f, 0, 9, 0, 0);
	CHECK_EQ(run(xdp_fd, &f), XDP_PASS, "with only a protocol rule, a fragment whose first was not seen");
	CHECK_EQ(passed_under("198.18.1.3", u), 1, "is charged to that rule");
out:
	teardown();
}

/* tc-egress, key dst: a later fragment is charged to its datagram's
 * port rule and its destination's bucket, and one whose first was not
 * seen is dropped, as at ingress. */
static void fragments_at_egress_by_destination(void)
{
	struct frame_opts frag = { .fragment = 1, .payload = 100 };
	struct frame f;
	int u53;

	setup_hook(1, 1);
	set_rule("default", 1000, 100000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	u53 = set_match("default", "udp", "53", 100000, TB_SCOPE_PER_ADDRESS, 0);
	if (u53 < 0)
		goto out;
	frame_ipv4(&f, "198.18.1.1", "198.19.0.1", &frag);
	run_datagram(tc_fd, &f, 7, 40000, 53);
	CHECK_EQ(passed_under("198.19.0.1", u53), 2, "both fragments: the destination's port-rule bucket");
	frame_ipv4_fragment(&f, 0, 8, 0, 0);
	CHECK_EQ(run(tc_fd, &f), TC_ACT_SHOT, "a later fragment whose first was not seen: dropped");
out:
	teardown();
}

/* A fragmented datagram to a port no rule has passes whole, unmatched;
 * where no rule reads ports, no fragment is looked up. */
static void fragments_to_a_port_without_a_rule_pass(void)
{
	struct frame_opts frag = { .fragment = 1, .payload = 100 };
	struct tb_stats before;
	struct frame f;

	setup();
	if (set_match("198.18.0.0/16", "udp", "53", 100000, TB_SCOPE_PER_ADDRESS, 0) < 0)
		goto out;
	frame_ipv4(&f, "198.18.1.1", "198.19.0.1", &frag);
	before = totals();
	frame_ipv4_fragment(&f, 1, 7, 40000, 80);
	CHECK_EQ(run(xdp_fd, &f), XDP_PASS, "the first fragment, to port 80, passes");
	frame_ipv4_fragment(&f, 0, 7, 0, 0);
	CHECK_EQ(run(xdp_fd, &f), XDP_PASS, "and its later one");
	CHECK_EQ(totals().unmatched_packets - before.unmatched_packets, 2, "both unmatched");
	frame_ipv4(&f, "198.19.1.1", "198.19.0.1", &frag);
	frame_ipv4_fragment(&f, 0, 9, 0, 0);
	CHECK_EQ(run(xdp_fd, &f), XDP_PASS, "a source no rule covers: its fragment passes, first seen or not");
	CHECK_EQ(totals().fragments_unknown_packets, before.fragments_unknown_packets, "none counted unknown");
	{
		struct rule_spec pass = { .action = TB_ACTION_PASS };
		struct tb_prefix p;
		char e[160];

		prefix_parse("198.18.0.0/16", &p, e, sizeof(e));
		match_parse("udp", "9053", NULL, &p, e, sizeof(e));
		CHECK(ruleset_set(rs, &p, &pass) >= 0, "a pass rule for UDP to 9053");
	}
	before = totals();
	frame_ipv4(&f, "198.18.1.1", "198.19.0.1", &frag);
	frame_ipv4_fragment(&f, 1, 10, 40000, 9053);
	CHECK_EQ(run(tc_fd, &f), (__u32)TC_ACT_UNSPEC, "the first fragment to 9053 passes");
	frame_ipv4_fragment(&f, 0, 10, 0, 0);
	CHECK_EQ(run(tc_fd, &f), (__u32)TC_ACT_UNSPEC, "and its later one");
	CHECK_EQ(totals().allowed_packets - before.allowed_packets, 2, "both allowed by the pass rule");
out:
	teardown();
}

/* n first fragments from src to dst, identifications 1 to n, UDP to port
 * 53, into fragments[] as the datapath keeps them, in one batch. */
static int flood_fragments(const char *src, const char *dst, int n)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	struct tb_frag_key *keys = calloc(n, sizeof(*keys));
	__u64 *l4 = calloc(n, sizeof(*l4));
	__u32 count = n;
	int err = -ENOMEM;

	if (keys && l4) {
		for (int i = 0; i < n; i++) {
			addr_parse(src, &keys[i].src);
			addr_parse(dst, &keys[i].dst);
			keys[i].id = htons(i + 1);
			keys[i].proto = TB_PROTO_UDP;
			l4[i] = TB_PROTO_UDP | TB_L4_PORTS | 53ULL << 16 | 40000ULL << 32;
		}
		err = bpf_map_update_batch(bpf_map__fd(skel->maps.fragments), keys, l4, &count, &opts) ? -errno : 0;
	}
	free(keys);
	free(l4);
	return err;
}

/* The table of first fragments is bounded: a flood of first fragments
 * evicts the oldest, whose later fragments are then dropped as unknown,
 * and leaves the newest. */
static void a_full_fragment_table_evicts_the_oldest(void)
{
	struct frame_opts frag = { .fragment = 1, .payload = 100 };
	struct tb_stats before;
	struct frame f;
	int u53;

	setup();
	u53 = set_match("default", "udp", "53", 1ULL << 30, TB_SCOPE_PER_ADDRESS, 0);
	if (u53 < 0)
		goto out;
	frame_ipv4(&f, "198.18.1.1", "198.19.0.1", &frag);
	frame_ipv4_fragment(&f, 1, 0, 40000, 53);
	run(xdp_fd, &f);
	/* The flood's other first fragments written straight into the map,
	 * in one call: as many test runs take minutes in the emulated VM. */
	if (!CHECK(!flood_fragments("198.18.1.1", "198.19.0.1", 2 * TB_FRAGMENTS), "a flood of first fragments"))
		goto out;
	frame_ipv4_fragment(&f, 1, 2 * TB_FRAGMENTS, 40000, 53);
	run(xdp_fd, &f);
	before = totals();
	frame_ipv4_fragment(&f, 0, 0, 0, 0);
	CHECK_EQ(run(xdp_fd, &f), XDP_DROP, "after %d more first fragments, the oldest's later one is unknown",
		 2 * TB_FRAGMENTS);
	CHECK_EQ(totals().fragments_unknown_packets - before.fragments_unknown_packets, 1, "and counted");
	frame_ipv4_fragment(&f, 0, 2 * TB_FRAGMENTS, 0, 0);
	CHECK_EQ(run(xdp_fd, &f), XDP_PASS, "the newest's is charged to its datagram's rule");
	CHECK_EQ(passed_under("198.18.1.1", u53), 3, "both firsts and that one");
out:
	teardown();
}

/* 0 to 32 IPv6 extension headers: within TB_EXT_MAX the port rule
 * charges them; past it, where a rule with a match could take them, they
 * are dropped and counted, never passed as another rule's; where no such
 * rule could (a longer plain prefix), its rule charges them. */
static void long_ipv6_chains_never_escape_a_port_rule(void)
{
	/* Hop-by-hop, routing, destination options, AH, fragment. */
	static const __u8 kinds[] = { 0, 43, 60, 51, 44 };
	int u53, plain;
	__u8 chain[32];
	struct frame f;

	setup();
	set_rule("default", 1000, 1ULL << 30, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	plain = set_rule("2001:db8:1::/48", 1000, 1ULL << 30, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	u53 = set_match("default", "udp", "53", 1ULL << 30, TB_SCOPE_PER_ADDRESS, 0);
	if (u53 < 0 || plain < 0)
		goto out;
	for (size_t k = 0; k < sizeof(kinds); k++) {
		struct tb_stats before = totals();
		__u64 charged = passed_under("2001:db8::1", u53);
		__u64 plain_before = has_bucket("2001:db8:1::1") ? bucket_of("2001:db8:1::1").c.passed_packets : 0;
		int wrong = 0;

		memset(chain, kinds[k], sizeof(chain));
		for (int n = 0; n <= 32; n++) {
			int fd = n % 2 ? tc_fd : xdp_fd;
			__u32 drop = fd == tc_fd ? TC_ACT_SHOT : XDP_DROP;

			frame_ipv6_exts(&f, "2001:db8::1", chain, n, TB_PROTO_UDP, 40000, 53, 100);
			wrong += (run(fd, &f) == drop) != (n > TB_EXT_MAX);
			frame_ipv6_exts(&f, "2001:db8:1::1", chain, n, TB_PROTO_UDP, 40000, 53, 100);
			wrong += run(fd, &f) == drop;
		}
		CHECK_EQ(wrong, 0, "type %d: dropped past %d headers, and only there; under the plain /48 never",
			 kinds[k], TB_EXT_MAX);
		CHECK_EQ(passed_under("2001:db8::1", u53) - charged, TB_EXT_MAX + 1, "the port rule charged 0 to %d",
			 TB_EXT_MAX);
		CHECK_EQ(totals().headers_unknown_packets - before.headers_unknown_packets, 32 - TB_EXT_MAX,
			 "the rest counted unknown");
		CHECK_EQ(bucket_of("2001:db8:1::1").c.passed_packets - plain_before, 33, "the /48's rule charged all 33");
	}
out:
	teardown();
}

/* ICMP and ICMPv6 have rules of their own; a transport header cut before
 * its ports, in a whole frame, is malformed where a rule reads ports. */
static void icmp_rules_and_malformed_transport(void)
{
	struct tb_stats before;
	int i4, i6;
	struct frame f;

	setup();
	set_rule("default", 1000, 100000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	frame_to_port(&f, "198.18.1.1", TB_PROTO_UDP, 53);
	before = totals();
	run_len(xdp_fd, &f, f.hdr_len + 2);
	CHECK_EQ(totals().malformed_packets, before.malformed_packets, "with no match, ports are not read");
	i4 = set_match("0.0.0.0/0", "icmp", NULL, 100000, TB_SCOPE_PER_ADDRESS, 0);
	i6 = set_match("2001:db8::/32", "icmpv6", NULL, 100000, TB_SCOPE_PER_ADDRESS, 0);
	set_match("default", "udp", "53", 100000, TB_SCOPE_PER_ADDRESS, 0);
	if (i4 < 0 || i6 < 0)
		goto out;
	frame_to_port(&f, "198.18.1.2", 1, 0x0800);
	run(xdp_fd, &f);
	frame_to_port(&f, "2001:db8::2", 58, 0x8000);
	run(tc_fd, &f);
	CHECK_EQ(passed_under("198.18.1.2", i4), 1, "ICMP: its rule");
	CHECK_EQ(passed_under("2001:db8::2", i6), 1, "ICMPv6: its rule");
	frame_to_port(&f, "198.18.1.3", TB_PROTO_UDP, 53);
	before = totals();
	CHECK_EQ(run_len(xdp_fd, &f, f.hdr_len + 3), XDP_PASS, "UDP cut before its ports passes");
	CHECK_EQ(totals().malformed_packets - before.malformed_packets, 1, "counted as malformed");
	CHECK(!has_bucket("198.18.1.3") && !passed_under("198.18.1.3", i4), "charged to no bucket");
out:
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

static void packets_cost_mode(void)
{
	struct frame small, big;

	setup();
	set_rule("default", 10, 3, TB_COST_PACKETS, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	frame_ipv4_len(&small, "198.18.11.1", 64);
	frame_ipv4_len(&big, "198.18.11.1", 1500);
	CHECK_EQ(run(xdp_fd, &small) + run(xdp_fd, &big) + run(xdp_fd, &small) == 3 * XDP_PASS, 1,
		 "three packets of any size fit a 3-packet burst");
	CHECK_EQ(run(xdp_fd, &small), XDP_DROP, "fourth packet dropped");
	teardown();
}

static void tc_program_polices(void)
{
	struct frame f;

	setup();
	set_rule("default", 1000, 2000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	frame_ipv4_len(&f, "198.18.12.1", 1000);
	CHECK_EQ(run(tc_fd, &f), (__u32)TC_ACT_UNSPEC, "tc: 1st frame passes on");
	CHECK_EQ(run(tc_fd, &f), (__u32)TC_ACT_UNSPEC, "tc: 2nd frame passes on");
	CHECK_EQ(run(tc_fd, &f), TC_ACT_SHOT, "tc: 3rd frame shot");
	frame_ipv6_len(&f, "2001:db8::12", 1000);
	CHECK_EQ(pass_count(tc_fd, &f, 4, (__u32)TC_ACT_UNSPEC), 2, "tc: IPv6");
	CHECK_EQ(bucket_of("198.18.12.1").c.dropped_bytes, 1000, "tc: charged skb->len");
	teardown();
}

static void destination_key_variant(void)
{
	struct frame_opts o = { .payload = 958 };
	struct frame f;

	setup_key(1);
	set_rule("default", 1000, 2000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	frame_ipv4(&f, "198.18.13.1", "198.19.13.2", &o);
	CHECK_EQ(pass_count(tc_fd, &f, 3, (__u32)TC_ACT_UNSPEC), 2, "dst key: burst");
	CHECK(has_bucket("198.19.13.2"), "bucket keyed by destination");
	CHECK(!has_bucket("198.18.13.1"), "no bucket for the source");
	frame_ipv4(&f, "198.18.13.9", "198.19.13.2", &o);
	CHECK_EQ(run(tc_fd, &f), TC_ACT_SHOT, "another source to the same destination: same bucket");
	teardown();
}

/* Keep this thread on one CPU: the dropcache is per CPU. */
static void pin_cpu0(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	CHECK(!sched_setaffinity(0, sizeof(set), &set), "pin to CPU 0: %s", strerror(errno));
}

static void unpin(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	for (int i = 0; i < CPU_SETSIZE; i++)
		CPU_SET(i, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/* Drain src's bucket (3 frames of 1000 bytes against a 3000-byte burst
 * at 1000 B/s, which refills 1 byte a millisecond) and drop one frame
 * under the lock; that tail drop leaves the bound lockless drops use. */
static void drain(int fd, __u32 pass, __u32 drop, const char *src, struct frame *f)
{
	if (strchr(src, ':'))
		frame_ipv6_len(f, src, 1000);
	else
		frame_ipv4_len(f, src, 1000);
	CHECK_EQ(pass_count(fd, f, 3, pass), 3, "%s: the burst passes", src);
	CHECK_EQ(run(fd, f), drop, "%s: first drop, under the lock", src);
	CHECK(raw_bucket_of(src).empty_ns != 0, "%s: the tail drop wrote the bound", src);
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

static void evict(const char *addr)
{
	struct tb_addr a;

	addr_parse(addr, &a);
	CHECK(!table_edit_in(&rs->m, &rs->cfg, &a, NULL), "evict the bucket of %s", addr);
}

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

/* An address 198.18.X.Y, X from first to 255, that shares a's drop cache
 * slot under this test's seed, into out; false when none does. */
static bool slot_mate(const char *a, int first, char *out, size_t len)
{
	__u32 seed = rs->cfg.slot_seed;
	struct tb_addr ka, kb;

	addr_parse(a, &ka);
	for (int x = first; x < 256; x++)
		for (int y = 1; y < 255; y++) {
			snprintf(out, len, "198.18.%d.%d", x, y);
			addr_parse(out, &kb);
			if (tb_dropcache_slot(&kb, seed) == tb_dropcache_slot(&ka, seed))
				return true;
		}
	return false;
}

/* Set up with this thread on CPU 0: other, an address of 198.18.first.1
 * on, shares a's cache slot; a's bucket is drained, and 10 more drops of
 * it are pending in the slot. */
static void slot_mates_with_drops(char *a, int first, char *other, size_t len, struct frame *fa)
{
	setup();
	CHECK(slot_mate(a, first, other, len), "an address of 198.18.%d.1 to 198.18.255.254 shares %s's slot",
	      first, a);
	pin_cpu0();
	set_rule("default", 1000, 3000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	drain(xdp_fd, XDP_PASS, XDP_DROP, a, fa);
	CHECK_EQ(pass_count(xdp_fd, fa, 10, XDP_DROP), 10, "%s: 10 drops without the lock", a);
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

/* Where address k sits: its cache slot, lock stripe and owed[] slot. */
struct placement {
	__u32 slot, stripe, owed;
};

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

/* Two CPUs hammer one address at once. */
struct racer {
	int cpu;
	int err;
	const struct frame *f;
};

#define RACE_RUNS 1000000

static void *race(void *arg)
{
	struct racer *r = arg;
	cpu_set_t set;
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = r->f->b, .data_size_in = r->f->len,
		    .repeat = RACE_RUNS);

	CPU_ZERO(&set);
	CPU_SET(r->cpu, &set);
	r->err = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	if (!r->err && bpf_prog_test_run_opts(xdp_fd, &o))
		r->err = errno;
	return NULL;
}

/* Two CPUs send 1M 100-byte frames each to one address's bucket; what the
 * bucket and the global counters show (pending drops included, as tbctl
 * reads them) must add up to what was sent, and what passed must stay
 * within b + r*T. */
static void race_one_bucket(const char *src, __u64 rate, __u64 burst, int action)
{
	const __u64 sent = 2ULL * RACE_RUNS + 1;
	struct tb_stats s, before = totals();
	struct racer r[2];
	pthread_t th[2];
	struct tb_bucket b;
	struct frame f;
	__u64 t0, t1, bound;

	set_rule("default", rate, burst, TB_COST_BYTES, action, TB_SCOPE_PER_ADDRESS);
	frame_ipv4_len(&f, src, 100);
	run(xdp_fd, &f);   /* create the bucket outside the timed window */
	t0 = now_ns();
	for (int i = 0; i < 2; i++) {
		r[i] = (struct racer){ .cpu = i, .f = &f };
		pthread_create(&th[i], NULL, race, &r[i]);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	t1 = now_ns();
	CHECK(!r[0].err && !r[1].err, "test runs: %s / %s", strerror(r[0].err), strerror(r[1].err));
	b = bucket_of(src);
	s = totals();
	s.c.passed_packets -= before.c.passed_packets;
	s.c.dropped_packets -= before.c.dropped_packets;
	s.c.monitored_packets -= before.c.monitored_packets;
	CHECK_EQ(b.c.passed_packets + b.c.dropped_packets + b.c.monitored_packets, sent,
		 "bucket: passed + dropped + monitored == sent");
	CHECK_EQ(b.c.passed_bytes + b.c.dropped_bytes + b.c.monitored_bytes, sent * 100,
		 "bucket: bytes passed + dropped + monitored == sent");
	CHECK_EQ(s.c.passed_packets + s.c.dropped_packets + s.c.monitored_packets, sent,
		 "global: passed + dropped + monitored == sent");
	CHECK_EQ(s.c.passed_packets, b.c.passed_packets, "global and bucket agree on passed");
	CHECK_EQ(s.c.dropped_packets, b.c.dropped_packets, "global and bucket agree on dropped");
	CHECK_EQ(s.c.monitored_packets, b.c.monitored_packets, "global and bucket agree on monitored");
	if (action == TB_ACTION_MONITOR)
		CHECK_EQ(b.c.passed_packets + b.c.monitored_packets, sent, "monitor passes everything");
	else
		CHECK(b.c.passed_bytes <= (bound = burst + (__u64)((unsigned __int128)rate * (t1 - t0) / 1000000000ULL) + 100),
		      "passed %llu bytes > bound b + r*T = %llu (T = %llu ns)",
		      (unsigned long long)b.c.passed_bytes, (unsigned long long)bound,
		      (unsigned long long)(t1 - t0));
	printf("     race %s: %.1f ms, passed %llu, dropped %llu, monitored %llu packets\n", src,
	       (t1 - t0) / 1e6, (unsigned long long)b.c.passed_packets,
	       (unsigned long long)b.c.dropped_packets, (unsigned long long)b.c.monitored_packets);
}

static int two_cpus(void)
{
	if (sysconf(_SC_NPROCESSORS_ONLN) >= 2)
		return 1;
	CHECK(0, "this test needs 2 CPUs, the machine has 1");
	return 0;
}

/* Two CPUs, each flooding from its own address of a rule with a total
 * below the sum of their rates: each address stays within b + r*T, the
 * two together within B + R*T, and what the total passed is exactly
 * what the addresses did. Every admission goes through both locks; a
 * refund takes the first again. */
static void two_cpus_total_holds_both_bounds(void)
{
	/* Low enough that an emulated CPU under load still sends past them. */
	const __u64 rate = 5000000, burst = 20000, total = 7500000, total_burst = 30000;
	struct frame f[2];
	struct racer r[2];
	pthread_t th[2];
	struct tb_bucket b[2], t;
	__u64 t0, t1, bound, sum = 0;
	const char *src[2] = { "198.18.21.1", "198.18.21.2" };
	int id;

	if (!two_cpus())
		return;
	setup();
	id = set_total("198.18.21.0/24", rate, burst, total, total_burst, TB_ACTION_DROP);
	for (int i = 0; i < 2; i++) {
		frame_ipv4_len(&f[i], src[i], 100);
		run(xdp_fd, &f[i]);
	}
	t0 = now_ns();
	for (int i = 0; i < 2; i++) {
		r[i] = (struct racer){ .cpu = i, .f = &f[i] };
		pthread_create(&th[i], NULL, race, &r[i]);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	t1 = now_ns();
	CHECK(!r[0].err && !r[1].err, "test runs: %s / %s", strerror(r[0].err), strerror(r[1].err));
	for (int i = 0; i < 2; i++) {
		b[i] = bucket_of(src[i]);
		CHECK_EQ(b[i].c.passed_packets + b[i].c.dropped_packets, RACE_RUNS + 1, "%s: every frame counted",
			 src[i]);
		bound = burst + (__u64)((unsigned __int128)rate * (t1 - t0) / 1000000000ULL) + 100;
		CHECK(b[i].c.passed_bytes <= bound, "%s: passed %llu bytes > b + r*T = %llu", src[i],
		      (unsigned long long)b[i].c.passed_bytes, (unsigned long long)bound);
		sum += b[i].c.passed_bytes;
	}
	t = total_of(id);
	CHECK_EQ(t.c.passed_bytes, sum, "the total passed what the addresses did");
	bound = total_burst + (__u64)((unsigned __int128)total * (t1 - t0) / 1000000000ULL) + 200;
	CHECK(sum <= bound, "together %llu bytes > B + R*T = %llu", (unsigned long long)sum,
	      (unsigned long long)bound);
	CHECK(t.c.dropped_packets > 0, "the total refused some (%llu)", (unsigned long long)t.c.dropped_packets);
	printf("     race: %.1f ms, passed %llu + %llu bytes, the total refused %llu frames\n", (t1 - t0) / 1e6,
	       (unsigned long long)b[0].c.passed_bytes, (unsigned long long)b[1].c.passed_bytes,
	       (unsigned long long)t.c.dropped_packets);
	teardown();
}


/* 10 MB/s against ~2x1M 100-byte frames (0.15 s here, 2 s emulated): a
 * bucket that lost updates would admit far beyond b + r*T. Almost every
 * frame is dropped, most without the lock. */
static void two_cpus_one_bucket_over_the_limit(void)
{
	struct tb_bucket b;

	if (!two_cpus())
		return;
	setup();
	race_one_bucket("198.18.14.1", 10000000, 10000, TB_ACTION_DROP);
	b = bucket_of("198.18.14.1");
	CHECK(b.c.dropped_packets > RACE_RUNS / 2, "the race ran over the limit (%llu dropped)",
	      (unsigned long long)b.c.dropped_packets);
	CHECK(b.c.passed_bytes > 10000, "the bucket refilled during the race (%llu passed)",
	      (unsigned long long)b.c.passed_bytes);
	race_one_bucket("198.18.14.2", 10000000, 10000, TB_ACTION_MONITOR);
	CHECK(bucket_of("198.18.14.2").c.monitored_packets > RACE_RUNS / 2, "monitor: the race ran over");
	teardown();
}

/* 100 GB/s: everything fits, every frame takes the lock. */
static void two_cpus_one_bucket_under_the_limit(void)
{
	if (!two_cpus())
		return;
	setup();
	race_one_bucket("198.18.14.3", 100000000000ULL, 1000000, TB_ACTION_DROP);
	CHECK_EQ(bucket_of("198.18.14.3").c.passed_packets, 2ULL * RACE_RUNS + 1, "all passed");
	teardown();
}

/* Whether the global counters count less than addr's bucket: the bucket
 * read first, so that what is charged meanwhile can only add to the
 * global side. */
static int globals_short_of(const char *addr)
{
	struct tb_bucket b = {};
	struct tb_pending p;
	struct tb_stats s;
	struct tb_addr a;

	addr_parse(addr, &a);
	if (pending_read(&rs->m, &rs->cfg, &p))
		return 1;
	bucket_get(&rs->m, &rs->cfg, &a, &b);
	pending_add(&rs->m, &p, &a, &b);
	pending_free(&p);
	if (stats_sum(&rs->m, &s))
		return 1;
	return s.c.passed_packets < b.c.passed_packets || s.c.passed_bytes < b.c.passed_bytes ||
	       s.c.dropped_packets < b.c.dropped_packets || s.c.dropped_bytes < b.c.dropped_bytes;
}

/* Runs f RACE_RUNS times on CPU 1 while this thread, on CPU 0, resets the
 * counters over and over; *took sums what the resets took and *ns is how
 * long it all took. Where watch is an address, *short counts the resets
 * after which the global counters counted less than its bucket. Returns
 * how many resets ran. */
static __u64 race_resets(const struct frame *f, struct tb_stats *took, __u64 *ns, const char *watch,
			 __u64 *short_of)
{
	int ncpu = libbpf_num_possible_cpus();
	struct racer r = { .cpu = 1, .f = f };
	__u64 resets = 0, t0 = now_ns();
	struct tb_stats taken;
	pthread_t th;

	memset(took, 0, sizeof(*took));
	pin_cpu0();
	pthread_create(&th, NULL, race, &r);
	while (pthread_tryjoin_np(th, NULL) == EBUSY) {
		if (reset_counters(ncpu, &taken) != XDP_PASS)
			break;
		for (size_t i = 0; i < sizeof(taken) / sizeof(__u64); i++)
			((__u64 *)took)[i] += ((__u64 *)&taken)[i];
		resets++;
		if (watch)
			*short_of += globals_short_of(watch);
	}
	pthread_join(th, NULL);
	*ns = now_ns() - t0;
	unpin();
	CHECK(!r.err, "test run: %s", strerror(r.err));
	CHECK(resets > 10, "the counters were reset during the flood (%llu times)", (unsigned long long)resets);
	return resets;
}

/* One CPU floods an address while another resets the counters again and
 * again: what the resets took and what the counters hold at the end add
 * up to what was sent, exactly. Writing zeros into the other CPU's
 * counters, as tbctl did, loses what that CPU adds between its read and
 * its write. */
static void two_cpus_reset_keeps_every_count(void)
{
	const __u64 sent = RACE_RUNS;
	struct tb_stats took, s;
	__u64 resets, ns, short_of = 0;
	struct frame f;

	if (!two_cpus())
		return;
	setup();
	set_rule("default", 10000000, 10000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	frame_ipv4_len(&f, "198.18.14.4", 100);
	CHECK_EQ(reset_counters(libbpf_num_possible_cpus(), NULL), XDP_PASS, "reset before the race");
	resets = race_resets(&f, &took, &ns, "198.18.14.4", &short_of);
	s = totals();
	CHECK_EQ(took.c.passed_packets + took.c.dropped_packets + took.c.monitored_packets + s.c.passed_packets +
			 s.c.dropped_packets + s.c.monitored_packets,
		 sent, "packets taken by %llu resets + counted after == sent", (unsigned long long)resets);
	CHECK_EQ(took.c.passed_bytes + took.c.dropped_bytes + took.c.monitored_bytes + s.c.passed_bytes +
			 s.c.dropped_bytes + s.c.monitored_bytes,
		 sent * 100, "bytes taken + counted after == sent");
	CHECK_EQ(short_of, 0, "after each of %llu resets, the global counters count no less than the bucket",
		 (unsigned long long)resets);
	printf("     %llu resets during %llu packets, %llu of them counted after the last\n",
	       (unsigned long long)resets, (unsigned long long)sent,
	       (unsigned long long)(s.c.passed_packets + s.c.dropped_packets));
	teardown();
}

/* One CPU floods a shared prefix over its rate (here and in the emulated
 * VM alike) while another resets the counters over and over, the shared
 * bucket's in place under its lock. Admitted stays within b + r*T, and
 * every packet is counted once: taken by a reset or counted after the
 * last. (The window in which tbctl's former rewrite from user space
 * returned tokens is too short for this to catch:
 * reset_program_zeroes_counters_in_place checks the level directly.) */
static void two_cpus_reset_keeps_the_shared_level(void)
{
	const __u64 rate = 20000000, burst = 10000, sent = RACE_RUNS;
	__u64 passed, dropped, resets, ns, bound;
	struct tb_stats took, s;
	struct frame f;

	if (!two_cpus())
		return;
	setup();
	set_rule("198.18.33.0/24", rate, burst, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_SHARED);
	frame_ipv4_len(&f, "198.18.33.1", 100);
	CHECK_EQ(reset_counters(libbpf_num_possible_cpus(), NULL), XDP_PASS, "reset before the race");
	resets = race_resets(&f, &took, &ns, NULL, NULL);
	s = totals();
	passed = took.c.passed_bytes + s.c.passed_bytes;
	dropped = took.c.dropped_packets + s.c.dropped_packets;
	bound = burst + (__u64)((unsigned __int128)rate * ns / 1000000000ULL);
	CHECK(dropped > 0, "the flood was over the rate");
	CHECK(passed <= bound, "admitted %llu B <= b + r*T = %llu B across %llu resets", (unsigned long long)passed,
	      (unsigned long long)bound, (unsigned long long)resets);
	CHECK_EQ(passed / 100 + dropped, sent, "every packet taken by a reset or counted after the last");
	printf("     %llu resets; admitted %llu B of %llu sent, b + r*T = %llu B\n", (unsigned long long)resets,
	       (unsigned long long)passed, (unsigned long long)sent * 100, (unsigned long long)bound);
	teardown();
}

/* Sends f on CPU 1, one frame a run, until told to stop, keeping count. */
struct flooder {
	const struct frame *f;
	volatile int stop;
	__u64 sent;     /* frames whose run has returned */
	int err;
};

static void *flood(void *arg)
{
	struct flooder *fl = arg;
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = fl->f->b, .data_size_in = fl->f->len, .repeat = 1);
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(1, &set);
	fl->err = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	while (!fl->err && !fl->stop)
		if (bpf_prog_test_run_opts(xdp_fd, &o))
			fl->err = errno;
		else
			__atomic_add_fetch(&fl->sent, 1, __ATOMIC_RELEASE);
	return NULL;
}

static __u64 sent_by(struct flooder *fl)
{
	return __atomic_load_n(&fl->sent, __ATOMIC_ACQUIRE);
}

/* One CPU floods an address far over its limit, so almost every drop is
 * counted in that CPU's cache, while another resets the counters. Once the
 * flood has stopped, the address's counters (as tbctl reads them) hold
 * every frame sent after the reset ended and none sent before it began:
 * sent - s1 - 1 <= counted <= sent - s0, where s0 and s1 frames had
 * returned before and after the reset (one frame may be in flight). Each
 * round resets once, after at least one flush of a batch. Emptying the
 * caches from user space after the reset program, as tbctl did, let a
 * batch flushed in between carry counts from before the reset. */
static void two_cpus_reset_takes_cached_drops_exactly(void)
{
	const char *src = "198.18.27.1";
	const int rounds = 20;
	int bad = 0;
	struct frame f;

	if (!two_cpus())
		return;
	setup();
	set_rule("default", 1000, 3000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	pin_cpu0();
	for (int i = 0; i < rounds; i++) {
		struct flooder fl;
		__u64 s0, s1, counted;
		struct tb_bucket b;
		pthread_t th;

		frame_ipv4_len(&f, src, 1000);
		fl = (struct flooder){ .f = &f };
		pthread_create(&th, NULL, flood, &fl);
		while (sent_by(&fl) < TB_DROPCACHE_BATCH + 50 + 17 * (__u64)i && !fl.err)
			sched_yield();
		s0 = sent_by(&fl);
		if (reset_counters(libbpf_num_possible_cpus(), NULL) != XDP_PASS)
			bad++;
		s1 = sent_by(&fl);
		while (sent_by(&fl) < s1 + 100 && !fl.err)
			sched_yield();
		fl.stop = 1;
		pthread_join(th, NULL);
		CHECK(!fl.err, "round %d: test run: %s", i, strerror(fl.err));
		b = bucket_of(src);
		counted = b.c.passed_packets + b.c.dropped_packets + b.c.monitored_packets;
		if (!CHECK(counted + s1 + 1 >= fl.sent && counted + s0 <= fl.sent,
			   "round %d: %llu counted after a reset between frames %llu and %llu of %llu",
			   i, (unsigned long long)counted, (unsigned long long)s0, (unsigned long long)s1,
			   (unsigned long long)fl.sent))
			bad++;
	}
	unpin();
	CHECK_EQ(bad, 0, "%d rounds counted exactly what followed their reset", rounds);
	teardown();
}

/* One CPU floods an address far over its limit, so that its cache flushes
 * a batch into the bucket every 256 frames, while another reads the
 * address's counters as tbctl does, over and over. Each read must count
 * every frame that had returned before it began and none beyond the one
 * in flight when it ended: s0 <= counted <= s1 + 1. Reading the caches
 * and then the bucket, and no more, counted a batch flushed in between
 * twice. */
static void two_cpus_reads_count_each_batch_once(void)
{
	const char *src = "198.18.28.1";
	const int reads = 2000;
	__u64 s0 = 0, s1 = 0, counted = 0, last = 0;
	struct flooder fl;
	struct tb_bucket b;
	struct frame f;
	pthread_t th;
	int bad = 0, done = 0;

	if (!two_cpus())
		return;
	setup();
	set_rule("default", 1000, 3000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	pin_cpu0();
	frame_ipv4_len(&f, src, 1000);
	fl = (struct flooder){ .f = &f };
	pthread_create(&th, NULL, flood, &fl);
	while (sent_by(&fl) < TB_DROPCACHE_BATCH + 50 && !fl.err)
		sched_yield();
	for (; done < reads && !fl.err; done++) {
		__u64 r0 = sent_by(&fl), r1, c;

		read_as_tbctl(src, &b);
		r1 = sent_by(&fl);
		c = b.c.passed_packets + b.c.dropped_packets + b.c.monitored_packets;
		if ((c < r0 || c > r1 + 1) && !bad++) {
			s0 = r0;
			s1 = r1;
			counted = c;
		}
		last = r1;
	}
	fl.stop = 1;
	pthread_join(th, NULL);
	unpin();
	CHECK(!fl.err, "test run: %s", strerror(fl.err));
	CHECK_EQ(bad, 0, "reads out of bounds; the first counted %llu with frames %llu to %llu sent",
		 (unsigned long long)counted, (unsigned long long)s0, (unsigned long long)s1);
	b = bucket_of(src);
	CHECK_EQ(b.c.passed_packets + b.c.dropped_packets, fl.sent, "all %llu frames counted once the flood ended",
		 (unsigned long long)fl.sent);
	printf("     %d reads during %llu frames (%llu batches)\n", done, (unsigned long long)last,
	       (unsigned long long)(last / TB_DROPCACHE_BATCH));
	teardown();
}

/* Run f through the program and keep what it made of the packet (and, for
 * tc, of the __sk_buff) in out. */
static __u32 run_out(int fd, const struct frame *f, struct frame *out, struct __sk_buff *ctx)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = f->b, .data_size_in = f->len, .data_out = out->b,
		    .data_size_out = sizeof(out->b), .repeat = 1);
	int err;

	if (ctx) {
		o.ctx_in = o.ctx_out = ctx;
		o.ctx_size_in = o.ctx_size_out = sizeof(*ctx);
	}
	err = bpf_prog_test_run_opts(fd, &o);
	CHECK(!err, "BPF_PROG_TEST_RUN: %s", strerror(errno));
	out->len = o.data_size_out;
	return o.retval;
}

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

/* A GSO/GRO aggregate of 3 TCP segments: 54 bytes of headers carried
 * once in the aggregate, three times on the wire. */
static void gso_frame(struct frame *f, const char *src, struct __sk_buff *ctx)
{
	frame_ipv4_len(f, src, 14 + 20 + 20 + 3000);
	frame_tcp(f, 14, 0);
	memset(ctx, 0, sizeof(*ctx));
	ctx->gso_segs = 3;
	ctx->gso_size = 1000;
}

static void gso_aggregates_are_charged_by_segments(void)
{
	struct rule_spec spec = { .rate = 1, .burst = 10000 };
	struct __sk_buff ctx;
	struct frame f, out;
	struct tb_bucket b;

	setup();
	set_spec("default", &spec);
	gso_frame(&f, "198.18.22.1", &ctx);
	CHECK_EQ(run_out(tc_fd, &f, &out, &ctx), (__u32)TC_ACT_UNSPEC, "aggregate within the burst");
	b = bucket_of("198.18.22.1");
	CHECK_EQ(b.c.passed_bytes, 3054 + 2 * 54, "charged: the aggregate plus two more headers");
	CHECK_EQ(b.c.passed_packets, 3, "counted as its segments");
	CHECK_EQ(held(&b), (10000 - 3162ULL) * TB_NANO, "tokens left");

	/* A burst smaller than the aggregate: it passes once, from the full
	 * bucket, and the bucket owes the rest. A plain frame as large never passes. */
	spec.burst = 3000;
	set_spec("198.18.22.2", &spec);
	gso_frame(&f, "198.18.22.2", &ctx);
	CHECK_EQ(run_out(tc_fd, &f, &out, &ctx), (__u32)TC_ACT_UNSPEC, "aggregate larger than the burst: passes");
	CHECK_EQ(run_out(tc_fd, &f, &out, &ctx), TC_ACT_SHOT, "the next waits for the debt");
	frame_ipv4_len(&f, "198.18.22.2", 100);
	CHECK_EQ(run(tc_fd, &f), TC_ACT_SHOT, "a small frame too: the bucket is in debt");
	set_spec("198.18.22.3", &spec);
	frame_ipv4_len(&f, "198.18.22.3", 3054);
	frame_tcp(&f, 14, 0);
	CHECK_EQ(run(tc_fd, &f), TC_ACT_SHOT, "a plain frame larger than the burst never passes");

	/* By packets, an aggregate takes one per segment. */
	spec = (struct rule_spec){ .rate = 1, .burst = 5, .cost = TB_COST_PACKETS };
	set_spec("198.18.22.4", &spec);
	gso_frame(&f, "198.18.22.4", &ctx);
	CHECK_EQ(run_out(tc_fd, &f, &out, &ctx), (__u32)TC_ACT_UNSPEC, "by packets: 3 segments within 5");
	b = bucket_of("198.18.22.4");
	CHECK_EQ(held(&b), 2 * TB_NANO, "by packets: 3 of the 5 taken");
	CHECK_EQ(b.c.passed_packets, 3, "by packets: counted as its segments");
	CHECK_EQ(run_out(tc_fd, &f, &out, &ctx), TC_ACT_SHOT, "by packets: 3 more do not fit the 2 left");
	teardown();
}

/* XDP frames on a device of this process's own, in a network namespace of
 * its own, so that the program sees that device's MTU (1500). */
static __u32 run_xdp_on(int ifindex, const struct frame *f)
{
	struct xdp_md ctx = { .data_end = f->len, .ingress_ifindex = ifindex };
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = f->b, .data_size_in = f->len, .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx), .repeat = 1);

	CHECK(!bpf_prog_test_run_opts(xdp_fd, &o), "BPF_PROG_TEST_RUN on ifindex %d: %s", ifindex,
	      strerror(errno));
	return o.retval;
}

/* Generic XDP sees a TSO or GRO aggregate whole, with no segment count:
 * one longer than the device's MTU is charged and counted as the segments
 * the MTU cuts it into (54 bytes of headers leave 1460 of 1500). */
static void xdp_aggregates_are_charged_by_segments(void)
{
	struct rule_spec spec = { .rate = 1, .burst = 100000 };
	int home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC), ifindex = 0;
	struct tb_bucket b;
	struct frame f;

	if (!CHECK(home >= 0 && !unshare(CLONE_NEWNET), "a network namespace of our own: %s", strerror(errno)))
		return;
	if (CHECK(!system("ip link add tbmtu0 mtu 1500 type veth peer name tbmtu1 mtu 1500"),
		  "ip link add a veth pair"))
		ifindex = if_nametoindex("tbmtu0");
	setup();
	set_spec("default", &spec);
	if (CHECK(ifindex > 0, "index of tbmtu0: %s", strerror(errno))) {
		frame_ipv4_len(&f, "198.18.23.1", 54 + 2920);
		frame_tcp(&f, 14, 0);
		CHECK_EQ(run_xdp_on(ifindex, &f), XDP_PASS, "two full segments");
		b = bucket_of("198.18.23.1");
		CHECK_EQ(b.c.passed_packets, 2, "counted as two segments");
		CHECK_EQ(b.c.passed_bytes, 2974 + 54, "charged the headers twice");

		frame_ipv4_len(&f, "198.18.23.2", 54 + 2921);
		frame_tcp(&f, 14, 0);
		CHECK_EQ(run_xdp_on(ifindex, &f), XDP_PASS, "one byte more");
		b = bucket_of("198.18.23.2");
		CHECK_EQ(b.c.passed_packets, 3, "counted as three segments");
		CHECK_EQ(b.c.passed_bytes, 2975 + 2 * 54, "charged the headers three times");

		frame_ipv4_len(&f, "198.18.23.3", 1514);
		frame_tcp(&f, 14, 0);
		CHECK_EQ(run_xdp_on(ifindex, &f), XDP_PASS, "a full frame");
		b = bucket_of("198.18.23.3");
		CHECK_EQ(b.c.passed_packets, 1, "a frame the MTU allows is one packet");
		CHECK_EQ(b.c.passed_bytes, 1514, "charged as it is");
	}
	if (ifindex > 0) {
		/* More buffers than one (BPF_PROG_TEST_RUN splits a frame
		 * longer than a page): all of them are segmented. */
		frame_ipv4_len(&f, "198.18.23.5", 9000);
		frame_tcp(&f, 14, 0);
		CHECK_EQ(run_xdp_on(ifindex, &f), XDP_PASS, "a 9,000-byte aggregate");
		b = bucket_of("198.18.23.5");
		CHECK_EQ(b.c.passed_packets, 7, "counted as the seven segments of its 8,946 bytes of payload");
		CHECK_EQ(b.c.passed_bytes, 9000 + 6 * 54, "charged the headers seven times");
	}
	frame_ipv4_len(&f, "198.18.23.4", 54 + 2921);
	frame_tcp(&f, 14, 0);
	CHECK_EQ(run(xdp_fd, &f), XDP_PASS, "the same aggregate on loopback (MTU 65536)");
	b = bucket_of("198.18.23.4");
	CHECK_EQ(b.c.passed_packets, 1, "within loopback's MTU: one packet");
	teardown();
	CHECK(!setns(home, CLONE_NEWNET), "back to the test's network namespace: %s", strerror(errno));
	close(home);
}

/* A frame of more than one buffer (a device with a jumbo MTU; here
 * BPF_PROG_TEST_RUN splits any frame longer than a page) is charged and
 * counted all its bytes, not the first buffer's that the parser reads. */
static void jumbo_frames_are_charged_whole(void)
{
	setup();
	CHECK(skel->rodata->tb_xdp_frags, "multi-buffer XDP on this kernel (5.18 on): the program takes such frames");
	teardown();
	burst_then_drop("198.18.24.1", 9000, 20000);
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

TEST_LIST(
	T(xdp_ipv4_burst_then_drop),
	T(xdp_ipv6_burst_then_drop),
	T(vlan_tagged_frames_are_policed),
	T(truncated_headers_pass_as_malformed),
	T(non_ip_and_neighbour_discovery_pass),
	T(options_and_fragments_are_charged),
	T(addresses_are_isolated),
	T(longest_prefix_wins),
	T(groups_share_a_bucket_per_prefix),
	T(new_rule_reclassifies_cached_buckets),
	T(unmatched_addresses_pass),
	T(shared_scope_caps_the_prefix),
	T(total_caps_the_addresses_together),
	T(total_caps_the_groups_together),
	T(fleet_key_pays_from_share_then_credit),
	T(fleet_key_of_a_shared_rule),
	T(monitor_counts_and_passes),
	T(pass_rule_passes_uncharged),
	T(port_beats_protocol_beats_plain),
	T(match_nodes_follow_changes),
	T(fragments_are_charged_to_their_datagram),
	T(fragments_to_a_port_without_a_rule_pass),
	T(fragments_at_egress_by_destination),
	T(a_full_fragment_table_evicts_the_oldest),
	T(long_ipv6_chains_never_escape_a_port_rule),
	T(icmp_rules_and_malformed_transport),
	T(rate_change_keeps_bucket_state),
	T(rule_change_publishes_a_fresh_slot),
	T(interrupted_change_resolves_to_the_published_slot),
	T(unpublished_slot_is_in_no_ones_view),
	T(ruleset_indexes_follow_changes),
	T(rule_table_keeps_a_slot_for_changes),
	T(reset_program_zeroes_counters_in_place),
	T(reset_program_restarts_the_global_counters),
	T(packets_cost_mode),
	T(tc_program_polices),
	T(destination_key_variant),
	T(mark_sets_ce_on_ect_packets),
	T(mark_drops_early_what_is_not_ect),
	T(an_answer_after_a_long_round_trip_stops_the_signal),
	T(gso_aggregates_are_charged_by_segments),
	T(xdp_aggregates_are_charged_by_segments),
	T(jumbo_frames_are_charged_whole),
	T(shape_sets_departure_times),
	T(shape_under_a_total_takes_the_later_departure),
	T(denial_writes_nothing_shared),
	T(credit_admits_without_the_lock),
	T(rule_change_clears_the_empty_bound),
	T(dropcache_flushes_on_collision_and_batch),
	T(spoofed_drops_leave_the_slot_to_its_flooder),
	T(reset_leaves_cached_drops_stale),
	T(patterned_addresses_spread_over_the_caches),
	T(placement_follows_the_config),
	T(denial_copy_skips_the_bucket),
	T(credit_counts_packets_and_resets),
	T(evicted_bucket_starts_from_what_it_owed),
	T(upgrade_copies_values_by_their_common_beginning),
	T(upgrade_merges_shared_buckets_and_counters),
	T(upgrade_takes_the_table_over),
	T(a_set_keeps_its_live_address),
	T(a_reset_leaves_the_live_address_its_way),
	T(two_cpus_one_bucket_over_the_limit),
	T(two_cpus_one_bucket_under_the_limit),
	T(two_cpus_reset_keeps_every_count),
	T(two_cpus_reset_takes_cached_drops_exactly),
	T(two_cpus_reads_count_each_batch_once),
	T(two_cpus_reset_keeps_the_shared_level),
	T(two_cpus_total_holds_both_bounds),
);

int main(int argc, char **argv)
{
	return RUN("prog");
}
