// SPDX-License-Identifier: GPL-2.0
/* The program tests' shared fixture: the objects loaded once per hook
 * variant, maps emptied between tests, frames run through a hook. */
#define _GNU_SOURCE
#include "prog.h"

struct tb *skel;

struct ruleset *rs;

int xdp_fd, tc_fd;

static int drop_record(void *ctx, void *data, size_t size)
{
	(void)ctx;
	(void)data;
	(void)size;
	return 0;
}

void map_clear(const struct bpf_map *map)
{
	int fd = bpf_map__fd(map), ncpus = libbpf_num_possible_cpus();
	enum bpf_map_type type = bpf_map__type(map);
	__u32 n = bpf_map__max_entries(map), zero = 0, count;
	size_t ksz = bpf_map__key_size(map), vsz = bpf_map__value_size(map), got = 0;
	char *keys, *vals;
	int err = 0;

	if (type == BPF_MAP_TYPE_RINGBUF) {
		struct ring_buffer *rb = ring_buffer__new(fd, drop_record, NULL, NULL);

		if (!rb || ring_buffer__consume(rb) < 0)
			err = errno ? errno : EIO;
		ring_buffer__free(rb);
	} else if (type == BPF_MAP_TYPE_ARRAY_OF_MAPS) {
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

void set_config_placed(__u8 owed_shift, __u32 slot_seed, __u8 place)
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

void set_config(__u8 owed_shift, __u32 slot_seed)
{
	set_config_placed(owed_shift, slot_seed, TB_PLACE_SIPHASH);
}

void set_owed_shift(__u8 shift)
{
	set_config(shift, rs->cfg.slot_seed);
}

struct tb *loaded[2][2];

void setup_hook(int key_dst, int egress)
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
		skel->rodata->tb_acq_rel = order_acq_rel();
		/* XDP is never at egress (attach sets tb_egress for tc-egress
		 * alone): no test runs it there, and its verification is the
		 * longest part of a load in the emulated VM. */
		bpf_program__set_autoload(skel->progs.tb_xdp, !egress);
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

void setup_key(int key_dst)
{
	setup_hook(key_dst, 0);
}

void setup(void)
{
	setup_key(0);
}

void teardown(void)
{
	free(rs);
}

int set_spec(const char *prefix, const struct rule_spec *s)
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

int set_rule(const char *prefix, __u64 rate, __u64 burst, int cost, int action, int scope)
{
	struct rule_spec s = { .rate = rate, .burst = burst, .cost = cost, .action = action, .scope = scope };

	return set_spec(prefix, &s);
}

int try_run(int fd, const struct frame *f, size_t len, __u32 *retval)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = f->b, .data_size_in = len, .repeat = 1);

	if (bpf_prog_test_run_opts(fd, &o))
		return -errno;
	*retval = o.retval;
	return 0;
}

__u32 run_len(int fd, const struct frame *f, size_t len)
{
	__u32 ret = ~0U;
	int err = try_run(fd, f, len, &ret);

	CHECK(!err, "BPF_PROG_TEST_RUN: %s", strerror(-err));
	return ret;
}

__u32 run(int fd, const struct frame *f)
{
	return run_len(fd, f, f->len);
}

__u32 reset_counters(__u32 cpus, struct tb_stats *taken)
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

struct tb_bucket raw_bucket_of(const char *addr)
{
	struct tb_bucket b = {};
	struct tb_addr a;

	if (CHECK(!addr_parse(addr, &a), "address %s", addr))
		CHECK(!bucket_get(&rs->m, &rs->cfg, &a, &b), "bucket of %s exists", addr);
	return b;
}

int read_key_as_tbctl(const struct tb_addr *k, struct tb_bucket *b)
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

int read_as_tbctl(const char *addr, struct tb_bucket *b)
{
	struct tb_addr a;

	addr_parse(addr, &a);
	return read_key_as_tbctl(&a, b);
}

struct tb_bucket bucket_of(const char *addr)
{
	struct tb_bucket b;

	CHECK(read_as_tbctl(addr, &b), "bucket of %s exists", addr);
	return b;
}

struct tb_counters pending_of(const char *addr)
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

__u64 held(const struct tb_bucket *b)
{
	return b->lvl.tokens + (b->credit_granted ? tb_credit_unspent(b->credit) : 0) * TB_NANO;
}

int table_edit_in(const struct tb_maps *m, const struct tb_config *cfg, const struct tb_addr *a,
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

int has_bucket_in(const struct tb_maps *m, const struct tb_config *cfg, const char *addr)
{
	struct tb_bucket b;
	struct tb_addr a;

	addr_parse(addr, &a);
	return !bucket_get(m, cfg, &a, &b);
}

int has_bucket(const char *addr)
{
	return has_bucket_in(&rs->m, &rs->cfg, addr);
}

struct tb_stats totals(void)
{
	struct tb_stats s;

	CHECK(!stats_sum(&rs->m, &s), "read stats");
	return s;
}

static int keep(void *ctx, void *data, size_t size)
{
	struct seen *s = ctx;

	if (size == sizeof(struct tb_event) && s->n < 8192)
		memcpy(&s->e[s->n++], data, size);
	return 0;
}

/* Every record the buffer holds, taken out. */
struct seen *records(void)
{
	static struct seen s;
	struct ring_buffer *rb = ring_buffer__new(rs->m.events, keep, &s, NULL);

	s.n = 0;
	CHECK(rb && ring_buffer__consume(rb) >= 0, "read the events buffer");
	ring_buffer__free(rb);
	return &s;
}

int pass_count(int fd, const struct frame *f, int n, __u32 pass)
{
	int passed = 0;

	for (int i = 0; i < n; i++)
		passed += run(fd, f) == pass;
	return passed;
}

int set_total(const char *prefix, __u64 rate, __u64 burst, __u64 total, __u64 total_burst, int action)
{
	struct rule_spec s = { .rate = rate, .burst = burst, .action = action, .total_rate = total,
			       .total_burst = total_burst };

	return set_spec(prefix, &s);
}

struct tb_bucket total_of(int id)
{
	__u32 slot = rs->rules[id].shared;
	struct tb_shared sh = {};

	CHECK(!bpf_map_lookup_elem_flags(rs->m.shared, &slot, &sh, BPF_F_LOCK), "read the total's bucket");
	return sh.b;
}

int set_match_words(const char *prefix, const struct match_words *w, __u64 burst, int scope, __u8 group_len)
{
	struct rule_spec s = { .rate = 1000, .burst = burst, .scope = scope, .group_len = group_len };
	struct tb_prefix p;
	char err[200];
	int id;

	if (!CHECK(prefix_parse(prefix, &p, err, sizeof(err)) == PREFIX_OK, "prefix %s: %s", prefix, err) ||
	    !CHECK(!match_parse(w, &p, err, sizeof(err)), "%s proto %s: %s", prefix, w->proto, err))
		return -EINVAL;
	id = ruleset_set(rs, &p, &s);
	CHECK(id >= 0, "set rule %s proto %s: %s", prefix, w->proto, strerror(-id));
	return id;
}

int set_match(const char *prefix, const char *proto, const char *dport, __u64 burst, int scope,
		     __u8 group_len)
{
	return set_match_words(prefix, &(struct match_words){ .proto = proto, .dport = dport }, burst, scope,
			       group_len);
}

__u64 passed_under(const char *addr, int id)
{
	const struct tb_rule *r = &rs->rules[id];
	struct tb_bucket b;
	struct tb_addr k;

	addr_parse(addr, &k);
	tb_rule_key(&k, r, r->family == 6, rs->cfg.place_key);
	return read_key_as_tbctl(&k, &b) ? b.c.passed_packets : 0;
}

void pin_cpu0(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	CHECK(!sched_setaffinity(0, sizeof(set), &set), "pin to CPU 0: %s", strerror(errno));
}

void unpin(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	for (int i = 0; i < CPU_SETSIZE; i++)
		CPU_SET(i, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

void drain(int fd, __u32 pass, __u32 drop, const char *src, struct frame *f)
{
	if (strchr(src, ':'))
		frame_ipv6_len(f, src, 1000);
	else
		frame_ipv4_len(f, src, 1000);
	CHECK_EQ(pass_count(fd, f, 3, pass), 3, "%s: the burst passes", src);
	CHECK_EQ(run(fd, f), drop, "%s: first drop, under the lock", src);
	CHECK(raw_bucket_of(src).empty_ns != 0, "%s: the tail drop wrote the bound", src);
}

void evict(const char *addr)
{
	struct tb_addr a;

	addr_parse(addr, &a);
	CHECK(!table_edit_in(&rs->m, &rs->cfg, &a, NULL), "evict the bucket of %s", addr);
}

bool slot_mate(const char *a, int first, char *out, size_t len)
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

void slot_mates_with_drops(char *a, int first, char *other, size_t len, struct frame *fa)
{
	setup();
	CHECK(slot_mate(a, first, other, len), "an address of 198.18.%d.1 to 198.18.255.254 shares %s's slot",
	      first, a);
	pin_cpu0();
	set_rule("default", 1000, 3000, TB_COST_BYTES, TB_ACTION_DROP, TB_SCOPE_PER_ADDRESS);
	drain(xdp_fd, XDP_PASS, XDP_DROP, a, fa);
	CHECK_EQ(pass_count(xdp_fd, fa, 10, XDP_DROP), 10, "%s: 10 drops without the lock", a);
}

void *flood(void *arg)
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

__u32 run_out(int fd, const struct frame *f, struct frame *out, struct __sk_buff *ctx)
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
