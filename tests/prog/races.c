// SPDX-License-Identifier: GPL-2.0
/* Two CPUs on one bucket at once: the bound holds, resets keep every count,
 * reads count each batch once. */
#define _GNU_SOURCE
#include "prog.h"

/* Two CPUs hammer one address at once. */
struct racer {
	int cpu;
	int err;
	const struct frame *f;
};

/* Runs of each racing CPU: a million, or TB_RACE_RUNS (the emulated VM
 * takes a quarter: it races as surely, four times as fast). */
static __u64 race_runs(void)
{
	static __u64 runs;
	const char *v = getenv("TB_RACE_RUNS");

	if (!runs)
		runs = v && strtoull(v, NULL, 10) >= 10000 ? strtoull(v, NULL, 10) : 1000000;
	return runs;
}

#define RACE_RUNS race_runs()

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

/* Whether the global counters count less than addr's bucket, by more
 * than the one packet of len bytes the racing CPU may be charging: it
 * counts in the bucket first, and in the global counters as it leaves.
 * The bucket is read first, so that what is charged after can only add
 * to the global side. */
static int globals_short_of(const char *addr, __u64 len)
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
	return s.c.passed_packets + 1 < b.c.passed_packets || s.c.passed_bytes + len < b.c.passed_bytes ||
	       s.c.dropped_packets + 1 < b.c.dropped_packets || s.c.dropped_bytes + len < b.c.dropped_bytes;
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
			*short_of += globals_short_of(watch, f->len);
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

TOPIC(prog_races,
	T(two_cpus_one_bucket_over_the_limit),
	T(two_cpus_one_bucket_under_the_limit),
	T(two_cpus_reset_keeps_every_count),
	T(two_cpus_reset_takes_cached_drops_exactly),
	T(two_cpus_reads_count_each_batch_once),
	T(two_cpus_reset_keeps_the_shared_level),
	T(two_cpus_total_holds_both_bounds)
);
