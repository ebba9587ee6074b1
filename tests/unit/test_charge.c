// SPDX-License-Identifier: GPL-2.0
/* charge.h and tos.h on the host: the early signal's probability curve,
 * mark, shape's departure spacing and horizon, aggregates larger than
 * the burst, the two-rate marker's colours and bounds, all on a virtual
 * clock; the class rewrites on crafted frames. */
#include <stdlib.h>
#include "logic/charge.h"
#include "logic/tos.h"
#include "../packets.h"
#include "../check.h"
#include "logic/tuning.h"

#define US 1000ULL
#define MS 1000000ULL
#define SEC 1000000000ULL

/* 65,536 draws spread evenly over the 32-bit range, with drop's curve
 * (rising to 1) or mark's (rising to 1/8). */
static __u64 signalled_max(__u64 tokens, const struct tb_rate *r, __u64 pmax)
{
	__u64 n = 0;

	for (__u64 k = 0; k < 65536; k++)
		n += tb_early(tokens, r, (__u32)(k << 16 | 0x8000), pmax);
	return n;
}

/* Level v as the hold keeps a peak: rounded up (hold.h). */
static __u64 held(__u64 v, const struct tb_rate *r)
{
	return tb_hold_peak(tb_hold_at(0, v, r), r);
}

static __u64 signalled(__u64 tokens, const struct tb_rate *r)
{
	return signalled_max(tokens, r, TB_EARLY_PMAX_DROP);
}

static void early_signal_rises_linearly_as_the_bucket_drains(void)
{
	struct tb_rate r = tb_rate_make(1000000, 100000);

	CHECK_EQ(r.early, 50000 * TB_NANO, "the signal starts at half the burst");
	CHECK_EQ(signalled(r.cap, &r), 0, "draws signalled at a full bucket");
	CHECK_EQ(signalled(r.early, &r), 0, "draws signalled at the threshold");
	for (int pct = 0; pct <= 100; pct += 10) {
		__u64 level = r.early / 100 * pct;
		double want = 65536.0 * (100 - pct) / 100;
		__u64 got = signalled(level, &r), mark = signalled_max(level, &r, TB_EARLY_PMAX_MARK);

		CHECK(got + 1 >= want && got <= want + 1,
		      "drop, level %d%% of the threshold: %llu of 65536 draws signalled, expected %.0f", pct,
		      (unsigned long long)got, want);
		CHECK(mark + 1 >= want / 8 && mark <= want / 8 + 1,
		      "mark, level %d%% of the threshold: %llu of 65536 draws signalled, expected %.0f", pct,
		      (unsigned long long)mark, want / 8);
	}
}

static void early_signal_curve_holds_at_extreme_bursts(void)
{
	/* 16 GiB in nano-units needs a large shift; one packet needs none. */
	struct tb_rate big = tb_rate_make(TB_RATE_MAX, TB_BURST_MAX);
	struct tb_rate small = tb_rate_make(1, 1);

	CHECK(big.early >> big.early_shift < (1ULL << 32), "a 16 GiB threshold is shifted to 32 bits");
	CHECK_EQ(small.early_shift, 0, "shift for a one-packet burst");
	CHECK_EQ(signalled(big.early / 4, &big), 49152, "draws at a quarter of a 16 GiB threshold");
	CHECK_EQ(signalled(small.early / 2, &small), 32768, "draws at half a one-packet threshold");
	CHECK_EQ(signalled(0, &small), 65536, "drop: draws at an empty bucket");
	CHECK_EQ(signalled_max(0, &small, TB_EARLY_PMAX_MARK), 8192, "mark: draws at an empty bucket");
}

static struct tb_terms terms(__u64 rate, __u64 burst, int action, int early)
{
	struct tb_terms t = { .r = tb_rate_make(rate, burst), .action = action };

	if (!early)
		t.r.early = 0;
	return t;
}

/* Drive packets of len bytes at a fixed interval through tb_decide with
 * pseudo-random draws; the bound b + r*T must hold in every window that
 * starts at the first packet, whatever the signal did. */
static void early_signal_keeps_the_bound_and_the_rate(void)
{
	struct tb_terms t = terms(125000, 20000, TB_ACTION_DROP, 1);
	struct tb_level l;
	__u64 admitted = 0, early = 0, depart, now = 0;
	const __u64 gap = 4 * MS;        /* 1000 bytes each 4 ms: twice the rate */
	int bad = 0;

	srandom(7);
	tb_fill(&l, 0, &t.r);
	t.cost = 1000 * TB_NANO;
	for (int i = 0; i < 250000; i++, now += gap) {
		int out;

		t.rnd = (__u32)random() << 1 ^ (__u32)random();
		out = tb_decide(&l, &t, now, &depart);
		admitted += out <= TB_DELAYED ? 1000 : 0;
		early += out == TB_EARLY;
		bad += admitted > 20000 + 125000 * (now + 1) / SEC;
	}
	CHECK_EQ(bad, 0, "windows from the start where admitted exceeded b + r*T");
	CHECK(early > 0, "the flood met the early signal (%llu times)", (unsigned long long)early);
	/* 1000 s at 125,000 B/s: the signal slows a flood, it does not starve it. */
	CHECK(admitted >= 125000ULL * 1000 * 99 / 100, "admitted %llu bytes of 125,000,000 in 1000 s",
	      (unsigned long long)admitted);
}

static void mark_charges_where_drop_signals_early(void)
{
	struct tb_terms drop = terms(1, 100000, TB_ACTION_DROP, 1);
	struct tb_terms mark = terms(1, 100000, TB_ACTION_MARK, 1);
	struct tb_level ld, lm;
	__u64 depart;

	tb_fill(&ld, 0, &drop.r);
	tb_fill(&lm, 0, &mark.r);
	/* In the early range (below 50,000), above its lower half. */
	ld.tokens = lm.tokens = 30000 * TB_NANO;
	drop.cost = mark.cost = 1000 * TB_NANO;
	drop.rnd = mark.rnd = 0;                 /* a draw that always signals there */
	mark.ect = 1;
	CHECK_EQ(tb_decide(&ld, &drop, 0, &depart), TB_EARLY, "drop: early drop");
	CHECK_EQ(ld.tokens, 30000 * TB_NANO, "an early drop takes no tokens");
	CHECK_EQ(tb_decide(&lm, &mark, 0, &depart), TB_MARKED, "mark, ECN-capable: marked");
	CHECK_EQ(lm.tokens, 29000 * TB_NANO, "a marked packet is charged");
	mark.ect = 0;
	lm.hold = tb_hold_at(lm.hold, mark.r.cap, &mark.r);  /* past the hold (next test) */
	CHECK_EQ(tb_decide(&lm, &mark, 0, &depart), TB_EARLY, "mark, not ECN-capable: early drop");
	mark.ect = 1;
	lm.tokens = 500 * TB_NANO;
	CHECK_EQ(tb_decide(&lm, &mark, 0, &depart), TB_OVER, "mark: an empty bucket still drops");
	drop.rnd = mark.rnd = 0xffffffff;
	ld.tokens = 60000 * TB_NANO;
	CHECK_EQ(tb_decide(&ld, &drop, 0, &depart), TB_FIT, "above the threshold nothing is signalled");
}

/* Marks have failed to slow a sender that still drains the lower half of
 * the early range: there an ECN-capable packet is dropped, not marked,
 * at every level, and the top half only ever marks it. */
static void mark_drops_ect_in_the_lower_half_of_the_range(void)
{
	struct tb_terms mark = terms(1, 100000, TB_ACTION_MARK, 1);
	__u64 marked = 0, dropped = 0;

	mark.cost = 100 * TB_NANO;
	mark.ect = 1;
	mark.rnd = 0;
	for (__u64 level = 1000; level < 50000; level += 100) {
		struct tb_level l;
		__u64 depart;
		int out;

		tb_fill(&l, 0, &mark.r);
		l.tokens = level * TB_NANO;
		out = tb_decide(&l, &mark, 0, &depart);
		if (!CHECK_EQ(out, level < 25000 ? TB_EARLY : TB_MARKED, "ECN-capable packet at level %llu",
			      (unsigned long long)level))
			return;
		CHECK_EQ(l.tokens, (out == TB_MARKED ? level - 100 : level) * TB_NANO,
			 "tokens after the signal at level %llu", (unsigned long long)level);
		marked += out == TB_MARKED;
		dropped += out == TB_EARLY;
	}
	CHECK_EQ(dropped, 240, "levels 1,000 to 24,900: dropped");
	CHECK_EQ(marked, 250, "levels 25,000 to 49,900: marked");
}

/* After a signal the next waits until the level has fallen a sixteenth
 * of the burst below its highest point since; a tail drop counts as a
 * signal. A rate of 1 B/s keeps refills out of the way. */
static void early_signal_holds_until_the_level_falls_a_step(void)
{
	struct tb_terms t = terms(1, 160000, TB_ACTION_DROP, 1);
	const __u64 step = 10000 * TB_NANO;
	struct tb_level l;
	__u64 depart, level;
	int out;

	tb_fill(&l, 0, &t.r);
	t.cost = 1000 * TB_NANO;
	t.rnd = 0;                              /* signals wherever the hold allows */
	l.tokens = 70000 * TB_NANO;             /* below the threshold, a step below the peak */
	CHECK_EQ(tb_decide(&l, &t, 0, &depart), TB_EARLY, "first packet below the threshold");
	CHECK_EQ(tb_hold_peak(l.hold, &t.r), held(70000 * TB_NANO, &t.r), "the signal restarts the peak at its level");
	while ((out = tb_decide(&l, &t, 0, &depart)) == TB_FIT)
		;
	CHECK_EQ(out, TB_EARLY, "the next outcome after the packets that fit");
	CHECK_EQ(l.tokens, 70000 * TB_NANO - step, "level of the next signal: one step down");
	/* The sender backs off and the level rises: the peak follows it. */
	l.tokens = 65000 * TB_NANO;
	CHECK_EQ(tb_decide(&l, &t, 0, &depart), TB_FIT, "rising level: no signal");
	CHECK_EQ(tb_hold_peak(l.hold, &t.r), held(65000 * TB_NANO, &t.r), "the peak follows the level up");
	while ((out = tb_decide(&l, &t, 0, &depart)) == TB_FIT)
		;
	level = l.tokens;
	CHECK_EQ(level, 65000 * TB_NANO - step, "after a rise the step counts from the new peak");
	l.tokens = 500 * TB_NANO;
	l.hold = tb_hold_at(l.hold, 70000 * TB_NANO, &t.r);
	CHECK_EQ(tb_decide(&l, &t, 0, &depart), TB_OVER, "empty bucket: tail drop");
	CHECK_EQ(tb_hold_peak(l.hold, &t.r), held(500 * TB_NANO, &t.r), "a tail drop restarts the peak too");
}

/* An aggregate of segs segments meets drop's early signal with segs
 * times a segment's probability, up to 1; mark's curve is per packet.
 * At a tenth of the way into the range a segment has probability 1/10. */
static void aggregate_meets_the_early_signal_as_its_segments(void)
{
	struct tb_terms t = terms(1, 100000, TB_ACTION_DROP, 1);
	const __u32 segs[] = { 1, 2, 4, 7, 10, 44 };

	t.cost = 100 * TB_NANO;
	for (int m = 0; m < 2; m++) {
		t.action = m ? TB_ACTION_MARK : TB_ACTION_DROP;
		for (unsigned i = 0; i < sizeof(segs) / sizeof(segs[0]); i++) {
			double p = m ? 0.1 / 8 : (segs[i] >= 10 ? 1.0 : 0.1 * segs[i]);
			__u64 n = 0, depart;

			t.segs = segs[i];
			for (__u64 k = 0; k < 65536; k++) {
				struct tb_level l;

				tb_fill(&l, 0, &t.r);
				l.tokens = t.r.early / 10 * 9;       /* peak stays at the burst: armed */
				t.rnd = (__u32)(k << 16 | 0x8000);
				n += tb_decide(&l, &t, 0, &depart) == TB_EARLY;
			}
			CHECK(n + segs[i] + 1 >= 65536 * p && n <= 65536 * p + segs[i] + 1,
			      "%s, %u segments: %llu of 65536 draws signalled, expected %.0f",
			      m ? "mark" : "drop", segs[i], (unsigned long long)n, 65536 * p);
		}
	}
}

/* Where the lock-free denials of decide_both_ways came from. */
struct denials {
	__u64 by_bound, by_copy, all;
};

/* 2,000,000 packets of random sizes at random gaps below max_gap, with
 * the early signal's draws, decided twice: as the seed rule decides, which
 * writes the timestamp on every denial, and as the datapath does, which
 * drops a packet that certainly cannot be paid on the bound the latest
 * tail drop left (tb_short), writing nothing. With copy, the datapath
 * first tries a copy of the bound taken at the last denial that read it,
 * as a CPU's denycache holds one. Returns how many packets the two ways
 * decided differently. */
static int decide_both_ways(unsigned int seed, __u64 max_gap, int copy, struct denials *d)
{
	struct tb_terms t = terms(125000, 20000, TB_ACTION_DROP, 1);
	struct tb_level writing, readonly;
	__u64 now = 5 * SEC, empty = 0, kept = 0, depart;
	int differ = 0;

	memset(d, 0, sizeof(*d));
	srandom(seed);
	tb_fill(&writing, now, &t.r);
	tb_fill(&readonly, now, &t.r);
	for (int i = 0; i < 2000000; i++) {
		int a, b;

		now += random() % max_gap;
		t.cost = (64 + random() % 1437) * TB_NANO;
		t.rnd = (__u32)random() << 1 ^ (__u32)random();
		a = tb_decide(&writing, &t, now, &depart);
		if (copy && tb_short(kept, now, t.cost, t.r.rate, t.r.fill_ns)) {
			b = TB_OVER;
			d->by_copy++;
		} else if (tb_short(empty, now, t.cost, t.r.rate, t.r.fill_ns)) {
			b = TB_OVER;
			d->by_bound++;
			kept = empty;
		} else {
			b = tb_decide(&readonly, &t, now, &depart);
			empty = tb_bound_after(b, &readonly, &t.r, empty);
		}
		differ += a != b;
		d->all += b == TB_OVER;
	}
	return differ;
}

/* At about twice the rate, denials that write nothing decide every packet
 * as the seed rule does. */
static void readonly_denials_decide_as_writing_ones(void)
{
	struct denials d;

	CHECK_EQ(decide_both_ways(11, 8 * MS, 0, &d), 0, "packets decided differently");
	CHECK(d.by_bound > 100000, "%llu packets denied without a write", (unsigned long long)d.by_bound);
}

/* A CPU denies on its copy alone while it can: an older bound is still a
 * bound. At twelve times the rate every packet is decided as the seed
 * rule decides it, and most denials never read the bucket's bound (each
 * admission costs a tail drop and one denial on the bound). */
static void older_copies_of_the_bound_decide_the_same(void)
{
	struct denials d;

	CHECK_EQ(decide_both_ways(17, MS, 1, &d), 0, "packets decided differently");
	CHECK(d.by_copy > d.all / 2, "%llu of %llu denials from the copy", (unsigned long long)d.by_copy,
	      (unsigned long long)d.all);
}

/* The bound never claims less than the level holds, at any rate and
 * burst, so a read-only denial is never wrong. */
static void empty_bound_never_undercounts_the_level(void)
{
	const __u64 rates[] = { 1, 3, 1000, 125000, 1250000000, TB_RATE_MAX };
	const __u64 bursts[] = { 1, 1500, 65536, TB_BURST_MAX };
	int bad = 0;

	srandom(13);
	for (size_t i = 0; i < sizeof(rates) / sizeof(rates[0]); i++) {
		for (size_t j = 0; j < sizeof(bursts) / sizeof(bursts[0]); j++) {
			struct tb_rate r = tb_rate_make(rates[i], bursts[j]);

			for (int k = 0; k < 10000; k++) {
				struct tb_level l = { .last_ns = 1000 * SEC + random() };
				__u64 e, now, level;

				l.tokens = ((__u64)random() << 31 ^ random()) % (r.cap + 1);
				e = tb_empty_since(&l, &r);
				now = l.last_ns + (random() % 4 ? (__u64)(random() % 1000) : (__u64)random() * 1000);
				level = tb_refill(&l, now, &r);
				/* A packet costing exactly the level can be paid. */
				bad += level > 0 && tb_short(e, now, level, r.rate, r.fill_ns);
			}
		}
	}
	CHECK_EQ(bad, 0, "levels that could pay a packet tb_short denied");
}

static void shape_spaces_departures_exactly(void)
{
	/* 1,000,000 B/s: a 1000-byte packet is 1 ms of rate. */
	struct tb_terms t = terms(1000000, 1500, TB_ACTION_SHAPE, 0);
	struct tb_level l;
	__u64 depart = 0, prev = 0, now = 5 * SEC;

	t.can_delay = 1;
	t.horizon_ns = 10 * MS;
	t.cost = 1000 * TB_NANO;
	tb_fill(&l, now, &t.r);
	CHECK_EQ(tb_decide(&l, &t, now, &depart), TB_FIT, "first packet: from the burst");
	CHECK_EQ(depart, 0, "first packet leaves now: no departure time");
	CHECK_EQ(tb_decide(&l, &t, now, &depart), TB_DELAYED, "second packet: delayed");
	CHECK_EQ(depart, now + 500 * US, "second packet waits for the 500 bytes missing");
	for (int i = 0; i < 9; i++) {
		prev = depart;
		CHECK_EQ(tb_decide(&l, &t, now, &depart), TB_DELAYED, "queued packet");
		CHECK_EQ(depart - prev, 1 * MS, "spacing between departures");
	}
	CHECK_EQ(depart - now, 9500 * US, "the last one within the 10 ms horizon");
	prev = l.last_ns;
	CHECK_EQ(tb_decide(&l, &t, now, &depart), TB_OVER, "10.5 ms ahead: beyond the horizon, dropped");
	CHECK_EQ(l.last_ns, prev, "a drop leaves the schedule as it was");
	/* Time passes: the schedule drains at the rate, then the bucket refills. */
	depart = 0;
	CHECK_EQ(tb_decide(&l, &t, now + 20 * MS, &depart), TB_FIT, "after the queue drained");
	CHECK_EQ(depart, 0, "leaves at once");
}

static void shape_departures_keep_the_bound(void)
{
	struct tb_terms t = terms(125000, 3000, TB_ACTION_SHAPE, 0);
	struct tb_level l;
	__u64 deps[4000], depart = 0, now = 0;
	int n = 0, bad = 0;

	t.can_delay = 1;
	t.horizon_ns = 50 * MS;
	tb_fill(&l, 0, &t.r);
	srandom(3);
	for (int i = 0; i < 20000 && n < 4000; i++) {
		__u64 len = 64 + random() % 1450;

		now += random() % (2 * MS);
		t.cost = len * TB_NANO;
		depart = now;   /* what a packet that is not delayed leaves at */
		if (tb_decide(&l, &t, now, &depart) <= TB_DELAYED) {
			CHECK(depart <= now + t.horizon_ns, "departure within the horizon");
			deps[n++] = depart << 12 | len;  /* departures are issued in order */
		}
	}
	for (int a = 0; a < n; a++) {
		__u64 sum = 0;

		for (int b = a; b < n; b++) {
			__u64 span = (deps[b] >> 12) - (deps[a] >> 12);

			sum += deps[b] & 0xfff;
			bad += sum * SEC > 3000 * SEC + 125000 * span + SEC;
		}
	}
	CHECK(n > 1000, "%d packets scheduled", n);
	CHECK_EQ(bad, 0, "departure windows that carried more than b + r*T");
}

static void oversized_aggregate_passes_from_a_full_bucket_and_owes(void)
{
	/* A 64 KB GRO aggregate against a 16 KB burst at 1,000,000 B/s. */
	struct tb_terms t = terms(1000000, 16000, TB_ACTION_DROP, 0);
	struct tb_level l;
	__u64 depart;

	tb_fill(&l, 0, &t.r);
	t.cost = 64000 * TB_NANO;
	t.segs = 44;
	CHECK_EQ(tb_decide(&l, &t, 0, &depart), TB_FIT, "aggregate larger than the burst, full bucket");
	CHECK_EQ(l.last_ns, 48 * MS, "the refill clock carries the 48,000 bytes owed");
	CHECK_EQ(l.tokens, 0, "nothing left");
	t.cost = 1000 * TB_NANO;
	t.segs = 0;
	CHECK_EQ(tb_decide(&l, &t, 48 * MS, &depart), TB_OVER, "the debt is paid at 48 ms, not before");
	CHECK_EQ(tb_decide(&l, &t, 49 * MS, &depart), TB_FIT, "1000 bytes later: admitted");
	t.cost = 64000 * TB_NANO;
	t.segs = 44;
	CHECK_EQ(tb_decide(&l, &t, 60 * MS, &depart), TB_OVER, "an aggregate waits for a full bucket");
	CHECK_EQ(tb_decide(&l, &t, 65 * MS, &depart), TB_FIT, "full again at 65 ms");
	t.segs = 0;
	tb_fill(&l, 0, &t.r);
	CHECK_EQ(tb_decide(&l, &t, 0, &depart), TB_OVER, "a plain packet larger than the burst never passes");
}

static int ecn_mark(struct frame *f, int cls, __u16 *delta)
{
	struct tb_pkt pkt = {};

	CHECK_EQ(tb_parse(f->b, f->b + f->len, 0, &pkt), cls, "class");
	return tb_ecn_set_ce(f->b, f->b + f->len, delta);
}

static void ce_is_set_on_ect_ipv4_only_with_a_valid_checksum(void)
{
	struct frame_opts o = { .payload = 100 };
	__u16 delta;

	for (int tos = 0; tos < 256; tos++) {
		struct frame f;

		int marked, ect = (tos & 3) == 1 || (tos & 3) == 2;

		frame_ipv4(&f, "198.18.0.1", "198.18.0.2", &o);
		f.b[15] = tos;
		frame_ipv4_checksum(f.b + 14);
		marked = ecn_mark(&f, TB_CLASS_IPV4, &delta);

		CHECK_EQ(marked, ect, "marked (tos)");
		CHECK_EQ(f.b[15], ect ? (tos | 3) : tos, "TOS after");
		CHECK(ipv4_header_sum(f.b + 14) == 0xffff, "tos %#x: header checksum invalid after marking", tos);
		CHECK_EQ(delta, 0, "IPv4 needs no receive-checksum change");
	}
}

static __u16 fold_memory_sum(const unsigned char *p, size_t len)
{
	__u32 sum = 0;

	for (size_t i = 0; i < len; i += 2) {
		__u16 w;

		memcpy(&w, p + i, 2);
		sum += w;
	}
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum;
}

static void ce_is_set_on_ect_ipv6_with_the_checksum_delta(void)
{
	struct frame_opts o = { .payload = 100 };

	for (int tc = 0; tc < 256; tc++) {
		struct frame f;
		__u16 delta, before, after;
		int marked, ect = (tc & 3) == 1 || (tc & 3) == 2;

		frame_ipv6(&f, "2001:db8::1", "2001:db8::2", &o);
		f.b[14] = 0x60 | tc >> 4;
		f.b[15] = (tc & 0xf) << 4 | 0x5;   /* flow label bits must survive */
		before = fold_memory_sum(f.b + 14, f.len - 14);
		marked = ecn_mark(&f, TB_CLASS_IPV6, &delta);
		after = fold_memory_sum(f.b + 14, f.len - 14);
		CHECK_EQ(marked, ect, "marked (traffic class)");
		CHECK_EQ((f.b[14] & 0xf) << 4 | f.b[15] >> 4, ect ? (tc | 3) : tc, "traffic class after");
		CHECK_EQ(f.b[15] & 0xf, 0x5, "flow label bits");
		CHECK_EQ(tb_csum16_add(before, delta), after, "receive checksum plus delta matches the packet");
	}
}

/* A remark rule of committed rate cr, burst cb and peak pr, pb. */
static struct tb_terms two_rate(__u64 cr, __u64 cb, __u64 pr, __u64 pb)
{
	struct tb_terms t = terms(cr, cb, TB_ACTION_REMARK, 0);

	t.peak = tb_rate_make(pr, pb);
	t.peak.early = 0;
	return t;
}

/* From full buckets at one instant: green while the committed burst
 * lasts, then yellow while the peak's does, then red; red takes nothing,
 * yellow only the peak's. An idle second refills both exactly to their
 * caps, and a tenth of one each by its rate. */
static void two_rate_colours_in_order(void)
{
	struct tb_terms t = two_rate(10000, 3000, 20000, 8000);
	int want[] = { TB_FIT, TB_FIT, TB_FIT, TB_OVER, TB_OVER, TB_OVER, TB_OVER, TB_OVER, TB_OVER_PEAK };
	struct tb_level l;
	__u64 depart;

	tb_fill(&l, 0, &t.r);
	CHECK_EQ(l.hold, 0, "a new bucket's peak is full");
	t.cost = 1000 * TB_NANO;
	for (int i = 0; i < 9; i++)
		CHECK_EQ(tb_decide(&l, &t, 0, &depart), want[i], "packet %d's colour", i + 1);
	CHECK_EQ(l.tokens, 0, "the committed bucket is empty");
	CHECK_EQ(l.hold, 8000 * TB_NANO, "the peak lacks its whole cap");
	CHECK_EQ(tb_decide(&l, &t, 50 * MS, &depart), TB_OVER, "50 ms later: the peak has 1,000 bytes again");
	CHECK_EQ(tb_decide(&l, &t, 100 * MS, &depart), TB_FIT, "100 ms: the committed bucket has 1,000 too");
	CHECK_EQ(tb_decide(&l, &t, 100 * MS, &depart), TB_OVER_PEAK, "and the peak has nothing left");
	CHECK_EQ(tb_decide(&l, &t, 100 * MS + 10 * SEC, &depart), TB_FIT, "ten idle seconds later, green");
	CHECK_EQ(l.tokens, 2000 * TB_NANO, "the committed bucket was refilled to exactly its cap");
	CHECK_EQ(l.hold, 1000 * TB_NANO, "and the peak to exactly its");
	t.cost = 9000 * TB_NANO;
	CHECK_EQ(tb_decide(&l, &t, 100 * MS + 30 * SEC, &depart), TB_OVER_PEAK,
		 "a packet larger than the peak burst is red even from full buckets");
}

/* Random arrivals of random sizes at about twice the peak rate: in every
 * window that starts at a packet, what passed unmarked (green) is within
 * cb + cr*T and all that passed (green and yellow) within pb + pr*T;
 * all three colours are seen. */
static void two_rate_keeps_both_bounds(void)
{
	static __u64 at[6000], green[6000], all[6000];
	struct tb_terms t = two_rate(100000, 5000, 300000, 20000);
	int n = 0, red = 0, bad_c = 0, bad_p = 0, yellow = 0;
	struct tb_level l;
	__u64 now = 0, depart;

	tb_fill(&l, 0, &t.r);
	srandom(7);
	for (int i = 0; i < 6000; i++) {
		__u64 len = 64 + random() % 1450;
		int out;

		now += random() % (5 * MS);
		t.cost = len * TB_NANO;
		out = tb_decide(&l, &t, now, &depart);
		red += out == TB_OVER_PEAK;
		yellow += out == TB_OVER;
		at[n] = now;
		green[n] = out == TB_FIT ? len : 0;
		all[n++] = out == TB_OVER_PEAK ? 0 : len;
	}
	for (int a = 0; a < n; a++) {
		__u64 g = 0, p = 0;

		for (int b = a; b < n; b++) {
			__u64 span = at[b] - at[a];

			g += green[b];
			p += all[b];
			bad_c += g * SEC > 5000 * SEC + 100000 * span;
			bad_p += p * SEC > 20000 * SEC + 300000 * span;
		}
	}
	CHECK(red > 100 && yellow > 100, "%d red and %d yellow of 6000", red, yellow);
	CHECK_EQ(bad_c, 0, "windows whose green packets carried more than cb + cr*T");
	CHECK_EQ(bad_p, 0, "windows whose passed packets carried more than pb + pr*T");
}

/* A bucket evicted and made again from its slot's record never holds
 * more, in either bucket, than the evicted one would have, at any later
 * instant: the record is the later of the two full-again instants, and
 * the restore empties both from the later of the two empty instants. */
static void two_rate_restore_gives_nothing_away(void)
{
	struct tb_terms fast_peak = two_rate(1000, 10000, 100000, 20000), slow_peak = two_rate(1000, 2000, 2000, 50000);
	const struct tb_terms *kinds[] = { &fast_peak, &slow_peak };
	int bad = 0, cases = 0;

	srandom(11);
	for (int k = 0; k < 2; k++) {
		const struct tb_terms *t = kinds[k];

		for (int i = 0; i < 2000; i++) {
			struct tb_level l, again;
			__u64 now = 100 * SEC + random() % SEC, full_at, later;

			l.last_ns = now - random() % (2 * SEC);
			l.tokens = (__u64)random() % (t->r.cap / TB_NANO + 1) * TB_NANO;
			l.hold = (__u64)random() % (t->peak.cap / TB_NANO + 1) * TB_NANO;
			full_at = tb_full_at_both(&l, &t->r, &t->peak);
			tb_restore(&again, full_at, now, &t->r, &t->peak);
			for (int j = 0; j < 20; j++) {
				later = now + (__u64)random() % (60 * SEC);
				bad += tb_refill(&again, later, &t->r) > tb_refill(&l, later, &t->r) ||
				       tb_peak_lack(&again, later, &t->peak) < tb_peak_lack(&l, later, &t->peak);
				cases++;
			}
		}
	}
	CHECK_EQ(bad, 0, "of %d instants, ones where a restored bucket held more than its evicted one", cases);
}

/* Every DSCP over every class, IPv4 with and without a VLAN tag: the
 * DSCP set, the ECN bits kept, the header checksum valid, and "changed"
 * only where the class did. */
static void dscp_is_set_on_ipv4_with_a_valid_checksum(void)
{
	for (int vlans = 0; vlans <= 1; vlans++) {
		struct frame_opts o = { .vlans = vlans, .payload = 100 };
		size_t l3 = 14 + 4 * vlans;

		for (int tos = 0; tos < 256; tos++) {
			for (int dscp = 0; dscp < 64; dscp += 7) {
				struct frame f;
				__u16 delta = 1;
				int want = dscp << 2 | (tos & 3), changed;

				frame_ipv4(&f, "198.18.0.1", "198.18.0.2", &o);
				f.b[l3 + 1] = tos;
				frame_ipv4_checksum(f.b + l3);
				changed = tb_dscp_set(f.b, f.b + f.len, dscp, &delta);
				if (!CHECK_EQ(f.b[l3 + 1], want, "tos %#x, dscp %d, %d tags: TOS after", tos, dscp, vlans) ||
				    !CHECK_EQ(changed, want != tos, "changed") ||
				    !CHECK(ipv4_header_sum(f.b + l3) == 0xffff, "tos %#x: header checksum invalid", tos) ||
				    !CHECK_EQ(delta, 0, "IPv4 needs no receive-checksum change"))
					return;
			}
		}
	}
}

static void dscp_is_set_on_ipv6_with_the_checksum_delta(void)
{
	struct frame_opts o = { .vlans = 1, .payload = 100 };

	for (int tc = 0; tc < 256; tc++) {
		for (int dscp = 0; dscp < 64; dscp += 5) {
			struct frame f;
			__u16 delta, before, after;
			int want = dscp << 2 | (tc & 3);

			frame_ipv6(&f, "2001:db8::1", "2001:db8::2", &o);
			f.b[18] = 0x60 | tc >> 4;
			f.b[19] = (tc & 0xf) << 4 | 0x5;
			before = fold_memory_sum(f.b + 18, f.len - 18);
			tb_dscp_set(f.b, f.b + f.len, dscp, &delta);
			after = fold_memory_sum(f.b + 18, f.len - 18);
			if (!CHECK_EQ((f.b[18] & 0xf) << 4 | f.b[19] >> 4, want, "class %#x, dscp %d: after", tc, dscp) ||
			    !CHECK_EQ(f.b[18] >> 4, 6, "version") || !CHECK_EQ(f.b[19] & 0xf, 0x5, "flow label bits") ||
			    !CHECK_EQ(tb_csum16_add(before, delta), after, "receive checksum plus delta"))
				return;
		}
	}
}

/* A frame cut short of the class, or not IP, is left alone. */
static void dscp_leaves_what_it_cannot_read(void)
{
	struct frame_opts o = { .payload = 100 };
	struct frame f;
	__u16 delta;

	frame_ipv4(&f, "198.18.0.1", "198.18.0.2", &o);
	CHECK_EQ(tb_dscp_set(f.b, f.b + 14 + 11, 46, &delta), 0, "IPv4 header cut before its checksum");
	CHECK_EQ(f.b[15], 0, "TOS untouched");
	frame_ipv6(&f, "2001:db8::1", "2001:db8::2", &o);
	CHECK_EQ(tb_dscp_set(f.b, f.b + 15, 46, &delta), 0, "IPv6 header cut in its class");
	f.b[12] = 0x08;
	f.b[13] = 0x06;
	CHECK_EQ(tb_dscp_set(f.b, f.b + f.len, 46, &delta), 0, "ARP");
}

TEST_LIST(T(early_signal_rises_linearly_as_the_bucket_drains),
	  T(early_signal_curve_holds_at_extreme_bursts),
	  T(early_signal_keeps_the_bound_and_the_rate),
	  T(mark_charges_where_drop_signals_early),
	  T(mark_drops_ect_in_the_lower_half_of_the_range),
	  T(early_signal_holds_until_the_level_falls_a_step),
	  T(aggregate_meets_the_early_signal_as_its_segments),
	  T(readonly_denials_decide_as_writing_ones),
	  T(older_copies_of_the_bound_decide_the_same),
	  T(empty_bound_never_undercounts_the_level),
	  T(shape_spaces_departures_exactly),
	  T(shape_departures_keep_the_bound),
	  T(oversized_aggregate_passes_from_a_full_bucket_and_owes),
	  T(ce_is_set_on_ect_ipv4_only_with_a_valid_checksum),
	  T(ce_is_set_on_ect_ipv6_with_the_checksum_delta),
	  T(dscp_is_set_on_ipv4_with_a_valid_checksum),
	  T(dscp_is_set_on_ipv6_with_the_checksum_delta),
	  T(dscp_leaves_what_it_cannot_read),
	  T(two_rate_colours_in_order),
	  T(two_rate_keeps_both_bounds),
	  T(two_rate_restore_gives_nothing_away));

int main(int argc, char **argv)
{
	return RUN("charge");
}
