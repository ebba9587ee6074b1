// SPDX-License-Identifier: GPL-2.0
/* bucket.h, through charge.h's tb_decide as the datapath uses it, driven
 * by a virtual clock: the precision rules of the seed notes, the b + r*T
 * bound as a property, and the extremes of range. */
#include <stdlib.h>
#include "logic/charge.h"
#include "../check.h"
#include "logic/tuning.h"
#include "logic/counters.h"

#define MS 1000000ULL
#define SEC 1000000000ULL
#define DAY (86400ULL * SEC)
/* The peak rate of a rule without one. */
static const struct tb_rate no_peak;

/* Admit whole units (bytes or packets) against a level: a drop rule
 * without the early signal, so every outcome is the bucket's alone. */
static int admit(struct tb_level *l, __u64 now, __u64 units, const struct tb_rate *r)
{
	struct tb_terms t = { .r = *r, .cost = units * TB_NANO, .action = TB_ACTION_DROP };
	__u64 depart;

	t.r.early = 0;
	return tb_decide(l, &t, now, &depart) == TB_FIT;
}

static void millisecond_refills_a_millisecond(void)
{
	struct tb_rate r = tb_rate_make(5, 5);
	struct tb_level l = { .tokens = 0, .last_ns = 1000 * MS };

	CHECK_EQ(tb_refill(&l, 1001 * MS, &r), 5 * MS, "nano-tokens after 1 ms at 5/s");
}

static void long_idle_refills_exactly_capacity(void)
{
	struct tb_rate r = tb_rate_make(5, 5);
	struct tb_level l = { .tokens = 0, .last_ns = 0 };

	CHECK_EQ(tb_refill(&l, 3600 * SEC, &r), 5 * TB_NANO, "level after 1 h idle");
	CHECK_EQ(tb_refill(&l, 30 * DAY, &r), 5 * TB_NANO, "level after 30 days idle");
}

static void backwards_clock_changes_nothing(void)
{
	struct tb_rate r = tb_rate_make(5, 5);
	struct tb_level l = { .tokens = 2500 * MS, .last_ns = 10 * SEC };

	CHECK_EQ(tb_refill(&l, 5 * SEC, &r), 2500 * MS, "level after clock stepped back");
	CHECK(admit(&l, 5 * SEC, 1, &r), "a token that is there is admitted");
	CHECK_EQ(l.last_ns, 10 * SEC, "timestamp never moves backwards");
	CHECK_EQ(l.tokens, 1500 * MS, "level after taking one token");
}

static void million_operations_no_drift(void)
{
	struct tb_rate r = tb_rate_make(5, 5);
	struct tb_level l;
	__u64 admitted = 0, over = 0;

	tb_fill(&l, 0, &r);
	for (__u64 i = 0; i <= 1000000; i++) {
		admitted += admit(&l, i * 7 * MS, 1, &r);
		over += l.tokens > r.cap;
	}
	CHECK_EQ(over, 0, "steps with the level above capacity");
	/* 7000 s at 5/s plus the 5 the bucket started with, to the token. */
	CHECK_EQ(admitted, 5 + 5 * 7000, "tokens admitted in 7000 s");
}

static void half_token_per_tick(void)
{
	/* Capacity 1, half a token per tick: a tick is 500 ms at 1 token/s. */
	struct tb_rate r = tb_rate_make(1, 1);
	struct tb_level l;
	const __u64 tick = 500 * MS;

	tb_fill(&l, 0, &r);
	CHECK(admit(&l, 0, 1, &r), "tick 0: full bucket admits");
	CHECK(!admit(&l, 0, 1, &r), "tick 0 again: no time passed, denied");
	CHECK(!admit(&l, 1 * tick, 1, &r), "tick 1: only half a token, denied");
	CHECK(admit(&l, 2 * tick, 1, &r), "tick 2: exactly one token, admitted");
}

static int burst_of(struct tb_level *l, __u64 now, int n, const struct tb_rate *r)
{
	int ok = 0;

	for (int i = 0; i < n; i++)
		ok += admit(l, now, 1, r);
	return ok;
}

static void burst_and_rate_table(void)
{
	static const struct { __u64 b; int admitted; } table[] = {
		{ 1, 1 }, { 5, 5 }, { 15, 10 }, { 1000, 10 },
	};
	struct tb_rate r = tb_rate_make(5, 5);
	struct tb_level l;

	tb_fill(&l, 0, &r);
	CHECK_EQ(burst_of(&l, 0, 10, &r), 5, "b=5 r=5: first burst of 10");
	CHECK_EQ(burst_of(&l, 2 * SEC, 10, &r), 5, "b=5 r=5: burst of 10 after 2 s idle");
	for (unsigned i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		r = tb_rate_make(5, table[i].b);
		tb_fill(&l, 0, &r);
		CHECK(burst_of(&l, 0, 10, &r) == table[i].admitted,
		      "b=%llu r=5: expected %d of 10 admitted", table[i].b, table[i].admitted);
	}
	/* b=10, r=5: any one-second stretch holds at most 15. */
	r = tb_rate_make(5, 10);
	tb_fill(&l, 0, &r);
	CHECK_EQ(burst_of(&l, 0, 20, &r) + burst_of(&l, 1 * SEC, 20, &r), 15,
		 "b=10 r=5: admitted in [0, 1 s]");
}

/* For random arrivals, every window [t_i, t_j] admits at most
 * cap + rate * (t_j - t_i) nano-units. */
static void window_bound_property(void)
{
	enum { SEQS = 300, N = 400 };
	static __u64 t[N], cum[N + 1];
	int violations = 0, total_admitted = 0;

	srand(12345);
	for (int s = 0; s < SEQS; s++) {
		__u64 rate = 1000 + (__u64)rand() % 1000000;
		__u64 burst = 1500 + (__u64)rand() % 20000;
		struct tb_rate r = tb_rate_make(rate, burst);
		struct tb_level l;
		__u64 now = (__u64)rand() * 1000;

		tb_fill(&l, now, &r);
		cum[0] = 0;
		for (int i = 0; i < N; i++) {
			__u64 cost = 64 + rand() % 1437;

			now += rand() % 4 == 0 ? 0 : (__u64)rand() % (5 * MS);
			t[i] = now;
			cum[i + 1] = cum[i] + (admit(&l, now, cost, &r) ? cost : 0);
			total_admitted += cum[i + 1] != cum[i];
		}
		for (int i = 0; i < N; i++)
			for (int j = i; j < N; j++)
				if ((cum[j + 1] - cum[i]) * TB_NANO > r.cap + rate * (t[j] - t[i]))
					violations++;
	}
	CHECK_EQ(violations, 0, "windows exceeding b + r*T");
	CHECK(total_admitted > SEQS * N / 10, "the property saw admissions (%d)", total_admitted);
}

/* A refund leaves the level where it would be had the charge not been
 * made: in credit, at the cap, and in debt (a departure scheduled ahead). */
static void refund_undoes_the_charge(void)
{
	struct tb_rate r = tb_rate_make(1000, 3000);
	struct tb_level l = { .tokens = 2000 * TB_NANO, .last_ns = 10 * SEC }, before = l;
	__u64 d;

	CHECK(admit(&l, 10 * SEC, 500, &r), "500 of 2000 taken");
	tb_refund(&l, 10 * SEC, 500 * TB_NANO, &r);
	CHECK_EQ(l.tokens, before.tokens, "refunded at once: the level as before");
	CHECK(admit(&l, 10 * SEC, 500, &r), "taken again");
	tb_refund(&l, 11 * SEC, 500 * TB_NANO, &r);
	CHECK_EQ(l.tokens, 3000 * TB_NANO, "refunded a second later: 2000 + 1000 refilled, not above the cap");
	CHECK_EQ(l.last_ns, 11 * SEC, "refilled to the refund");
	l = (struct tb_level){ .tokens = 0, .last_ns = 20 * SEC };
	d = tb_defer(&l, 20 * SEC, 1500 * TB_NANO, &r);
	CHECK_EQ(d, 21500 * MS, "1500 owed at 1000/s departs 1.5 s later");
	tb_refund(&l, 20 * SEC, 1500 * TB_NANO, &r);
	CHECK_EQ(l.last_ns, 20 * SEC, "refunded: the debt is gone");
	CHECK_EQ(l.tokens, 0, "and the level as it was");
	d = tb_defer(&l, 20 * SEC, 1500 * TB_NANO, &r);
	tb_defer(&l, 20 * SEC, 1000 * TB_NANO, &r);
	tb_refund(&l, 20 * SEC, 1000 * TB_NANO, &r);
	CHECK_EQ(l.last_ns, d, "the second refunded: the first's departure stands");
	CHECK(tb_refill(&l, d + SEC, &r) == 1000 * TB_NANO, "and refills from it");
}

/* Addresses under a rule with a total, charged as the datapath does: the
 * address's bucket first, then the total, refunded to the address when
 * the total refuses. Over every window, each address admits at most
 * b + r*T and all of them together at most B + R*T. */
static void total_keeps_both_bounds(void)
{
	enum { SEQS = 60, N = 600, ADDRS = 4 };
	static __u64 t[N], cum[ADDRS][N + 1], all[N + 1];
	int violations = 0, refused = 0, admitted = 0;

	srand(777);
	for (int s = 0; s < SEQS; s++) {
		__u64 rate = 1000 + (__u64)rand() % 100000, total = rate + (__u64)rand() % (2 * rate);
		struct tb_rate r = tb_rate_make(rate, 1500 + rand() % 6000);
		struct tb_rate tr = tb_rate_make(total, 1500 + rand() % 12000);
		struct tb_level l[ADDRS], lt;
		__u64 now = (__u64)rand() * 1000;

		for (int a = 0; a < ADDRS; a++) {
			tb_fill(&l[a], now, &r);
			cum[a][0] = 0;
		}
		tb_fill(&lt, now, &tr);
		all[0] = 0;
		for (int i = 0; i < N; i++) {
			int a = rand() % ADDRS;
			__u64 cost = 64 + rand() % 1437, in = 0;

			now += rand() % 3 == 0 ? 0 : (__u64)rand() % (2 * MS);
			t[i] = now;
			if (admit(&l[a], now, cost, &r)) {
				if (admit(&lt, now, cost, &tr)) {
					in = cost;
				} else {
					tb_refund(&l[a], now, cost * TB_NANO, &r);
					refused++;
				}
			}
			admitted += in != 0;
			for (int k = 0; k < ADDRS; k++)
				cum[k][i + 1] = cum[k][i] + (k == a ? in : 0);
			all[i + 1] = all[i] + in;
		}
		for (int i = 0; i < N; i++)
			for (int j = i; j < N; j++) {
				violations += (all[j + 1] - all[i]) * TB_NANO > tr.cap + total * (t[j] - t[i]);
				for (int k = 0; k < ADDRS; k++)
					violations += (cum[k][j + 1] - cum[k][i]) * TB_NANO > r.cap + rate * (t[j] - t[i]);
			}
	}
	CHECK_EQ(violations, 0, "windows exceeding b + r*T or B + R*T");
	CHECK(refused > SEQS * N / 20, "the total refused some (%d)", refused);
	CHECK(admitted > SEQS * N / 10, "and admitted some (%d)", admitted);
}

static void thirty_days_overload_exact(void)
{
	/* 1500-byte packets every 0.5 s against 1500 B/s, burst 3000. */
	struct tb_rate r = tb_rate_make(1500, 3000);
	struct tb_level l;
	__u64 admitted = 0, t;

	tb_fill(&l, 0, &r);
	for (t = 0; t <= 30 * DAY; t += 500 * MS)
		admitted += admit(&l, t, 1500, &r) ? 1500 : 0;
	CHECK_EQ(admitted, 3000 + 1500 * (30 * DAY / SEC), "bytes admitted in 30 days");

	/* An awkward rate: 3 packets/s probed every 0.1 s for 30 days. */
	r = tb_rate_make(3, 2);
	tb_fill(&l, 0, &r);
	admitted = 0;
	for (t = 0; t <= 30 * DAY; t += 100 * MS)
		admitted += admit(&l, t, 1, &r);
	CHECK_EQ(admitted, 2 + 3 * (30 * DAY / SEC), "packets admitted in 30 days");
}

static void extreme_rates(void)
{
	struct tb_rate r = tb_rate_make(TB_RATE_MAX, TB_BURST_MAX);
	struct tb_level l = { .tokens = 0, .last_ns = 0 };

	CHECK_EQ(tb_refill(&l, r.fill_ns - 1, &r), (r.fill_ns - 1) * TB_RATE_MAX,
		 "max rate, max burst: level one ns before full");
	CHECK_EQ(tb_refill(&l, r.fill_ns, &r), TB_BURST_MAX * TB_NANO, "max rate: full");
	CHECK_EQ(tb_refill(&l, ~0ULL, &r), TB_BURST_MAX * TB_NANO, "max rate: longest gap");

	r = tb_rate_make(50000000000ULL, 1500);   /* 400 Gbit/s */
	CHECK_EQ(tb_refill(&l, 1, &r), 50 * TB_NANO, "400 Gbit/s: bytes per ns");
	CHECK_EQ(r.fill_ns, 30, "400 Gbit/s, 1500 B: ns to fill");

	r = tb_rate_make(1, TB_BURST_MAX);       /* 1 byte/s */
	CHECK_EQ(tb_refill(&l, 1 * SEC, &r), TB_NANO, "1 B/s: one byte per second");
	CHECK_EQ(tb_refill(&l, 1499 * SEC, &r), 1499 * TB_NANO, "1 B/s: after 1499 s");
	CHECK_EQ(tb_refill(&l, 10000000000ULL * SEC, &r), 10000000000ULL * TB_NANO,
		 "1 B/s, 16 GiB burst: 317 years of refill, no overflow");
	CHECK_EQ(tb_refill(&l, ~0ULL, &r), TB_BURST_MAX * TB_NANO, "1 B/s: longest gap fills");
}

static void cost_above_burst_never_admitted(void)
{
	struct tb_rate r = tb_rate_make(1000000, 1500);
	struct tb_level l;

	tb_fill(&l, 0, &r);
	CHECK(!admit(&l, 0, 1501, &r), "1501 bytes against a 1500-byte burst");
	CHECK(!admit(&l, 365 * DAY, 1501, &r), "still not after a year idle");
	CHECK(admit(&l, 365 * DAY, 1500, &r), "1500 bytes fit a full 1500-byte bucket");
}

static void rate_change_keeps_level(void)
{
	struct tb_rate slow = tb_rate_make(1000, 10000), fast = tb_rate_make(100000, 10000);
	struct tb_rate small = tb_rate_make(100000, 2000);
	struct tb_level l;

	tb_fill(&l, 0, &slow);
	CHECK(admit(&l, 0, 9000, &slow), "drain 9000 of 10000");
	CHECK_EQ(tb_refill(&l, 10 * MS, &fast), 2000 * TB_NANO,
		 "new rate applies from the last refill, level kept");
	CHECK_EQ(tb_refill(&l, 0, &small), 1000 * TB_NANO, "level under a lowered cap kept");
	tb_fill(&l, 0, &slow);
	CHECK_EQ(tb_refill(&l, 0, &small), 2000 * TB_NANO, "level above a lowered cap is cut");
}

/* tb_earn_ns, tb_origin's division-free floor(tokens / rate), is never
 * above the exact one (a re-created bucket never holds more than the evicted one would)
 * and short of it by at most a few ns per second of fill_ns. */
static void earn_time_is_a_tight_lower_bound(void)
{
	static const __u64 rates[] = { 1, 3, 1000, 125000, 1250000, 12500000, 1000000007ULL,
				       TB_RATE_MAX };
	static const __u64 bursts[] = { 1, 1500, 65536, 1250000, 1ULL << 30, TB_BURST_MAX };
	int over = 0, loose = 0, n = 0;
	__u64 worst = 0;

	srand(777);
	for (unsigned i = 0; i < sizeof(rates) / sizeof(rates[0]); i++)
		for (unsigned j = 0; j < sizeof(bursts) / sizeof(bursts[0]); j++) {
			struct tb_rate r = tb_rate_make(rates[i], bursts[j]);

			for (int k = 0; k < 20000; k++) {
				__u64 t = k == 0 ? r.cap : k == 1 ? 0 :
					  (((__u64)rand() << 33) ^ ((__u64)rand() << 2) ^ rand()) % (r.cap + 1);
				__u64 exact = t / r.rate, back = tb_earn_ns(t, &r);

				n++;
				over += back > exact;
				if (exact - back > worst)
					worst = exact - back;
				loose += exact - back > (r.fill_ns >> 29) + 2;
			}
		}
	CHECK_EQ(over, 0, "quotients above the exact one, of %d", n);
	CHECK_EQ(loose, 0, "quotients short by more than fill_ns/2^29 + 2 ns (worst %llu ns)",
		 (unsigned long long)worst);
}

/* An evicted bucket re-created from its recorded full-again instant, at
 * random points, admits no more over every window than one that was never
 * evicted may: cap + rate * T. Nothing owed (0) starts full. */
static void eviction_adds_no_burst(void)
{
	enum { SEQS = 200, N = 400 };
	static __u64 t[N], cum[N + 1];
	int violations = 0, admitted = 0, evictions = 0;

	srand(4242);
	for (int s = 0; s < SEQS; s++) {
		__u64 rate = 1000 + (__u64)rand() % 1000000;
		struct tb_rate r = tb_rate_make(rate, 1500 + (__u64)rand() % 20000);
		struct tb_level l;
		__u64 now = SEC + (__u64)rand() * 1000, full_at = 0;

		tb_restore(&l, full_at, now, &r, &no_peak);
		CHECK_EQ(l.tokens, r.cap, "nothing owed: a new bucket starts full");
		cum[0] = 0;
		for (int i = 0; i < N; i++) {
			__u64 cost = 64 + rand() % 1437;
			int fit;

			now += rand() % 4 == 0 ? 0 : (__u64)rand() % (5 * MS);
			if (rand() % 8 == 0) {
				tb_restore(&l, full_at, now, &r, &no_peak);
				evictions++;
			}
			t[i] = now;
			fit = admit(&l, now, cost, &r);
			if (fit) {
				__u64 f = tb_full_at(&l, &r);

				full_at = f > full_at ? f : full_at;
			}
			cum[i + 1] = cum[i] + (fit ? cost : 0);
			admitted += fit;
		}
		for (int i = 0; i < N; i++)
			for (int j = i; j < N; j++)
				if ((cum[j + 1] - cum[i]) * TB_NANO > r.cap + rate * (t[j] - t[i]))
					violations++;
	}
	CHECK_EQ(violations, 0, "windows exceeding b + r*T across %d evictions", evictions);
	CHECK(admitted > SEQS * N / 10, "the property saw admissions (%d)", admitted);
}

/* Credit (struct tb_bucket): units set aside from the level after a
 * charge that passed, spent without the lock at any moment, taken back by
 * the next locked charge. Whenever it is spent, level and credit together
 * keep b + r*T in every window, and the credit costs little of the rate. */
static void credit_keeps_the_bound(void)
{
	enum { SEQS = 300, N = 400 };
	static __u64 t[N], cum[N + 1];
	int violations = 0, from_credit = 0, grants = 0;
	__u64 admitted = 0, plain = 0;

	srand(777);
	for (int s = 0; s < SEQS; s++) {
		__u64 rate = 1000 + (__u64)rand() % 1000000;
		__u64 burst = 6400 + (__u64)rand() % 200000;
		struct tb_rate r = tb_rate_make(rate, burst);
		__u32 units_set = burst >> TB_CREDIT_SHIFT;
		struct tb_level l, lp;
		__u64 now = SEC + (__u64)rand() * 1000, credit = 0, granted = 0;

		tb_fill(&l, now, &r);
		lp = l;
		cum[0] = 0;
		for (int i = 0; i < N; i++) {
			__u64 units = 64 + rand() % 1437;
			int fit;

			now += rand() % 4 == 0 ? 0 : (__u64)rand() % (5 * MS);
			t[i] = now;
			if (credit >= units && rand() % 8) {
				credit -= units;
				fit = 1;
				from_credit++;
			} else {
				if (granted) {
					l.tokens = tb_unspend(&l, now, &r, granted, credit);
					l.last_ns = now > l.last_ns ? now : l.last_ns;
					credit = granted = 0;
				}
				fit = admit(&l, now, units, &r);
				if (fit && tb_credit_fits(&l, &r, units_set)) {
					l.tokens -= (__u64)units_set * TB_NANO;
					credit = granted = units_set;
					grants++;
				}
			}
			cum[i + 1] = cum[i] + (fit ? units : 0);
			plain += admit(&lp, now, units, &r) ? units : 0;
		}
		for (int i = 0; i < N; i++)
			for (int j = i; j < N; j++)
				if ((cum[j + 1] - cum[i]) * TB_NANO > r.cap + rate * (t[j] - t[i]))
					violations++;
		admitted += cum[N];
	}
	CHECK_EQ(violations, 0, "windows exceeding b + r*T");
	CHECK(grants > SEQS && from_credit > SEQS * N / 10,
	      "the property saw credit granted (%d times) and spent (%d packets)", grants, from_credit);
	CHECK(admitted * 100 >= plain * 99, "%llu units admitted, %llu without credit",
	      (unsigned long long)admitted, (unsigned long long)plain);
}

/* Re-created at once, a drained bucket is still drained; after a long idle
 * it is exactly full, as the evicted one would be (the seed's idle rule).
 * A slot mate that took one packet costs a re-created bucket at most that
 * packet's time at its own rate. */
static void restored_bucket_owes_what_it_took(void)
{
	struct tb_rate r = tb_rate_make(1000, 3000), fast = tb_rate_make(1000000, 16384);
	struct tb_level l, mate;
	__u64 full_at;

	tb_fill(&l, 10 * SEC, &r);
	CHECK(admit(&l, 10 * SEC, 3000, &r), "drain the whole burst");
	full_at = tb_full_at(&l, &r);
	CHECK_EQ(full_at, 13 * SEC, "drained at 10 s, 1000 B/s and 3000 B: full again at 13 s");
	tb_restore(&l, full_at, 10 * SEC, &r, &no_peak);
	CHECK(!admit(&l, 10 * SEC, 1, &r), "re-created at once: nothing to hand out");
	CHECK(admit(&l, 11 * SEC, 1000, &r) && !admit(&l, 11 * SEC, 1, &r),
	      "one second later: exactly one second of rate");
	tb_restore(&l, full_at, 30 * DAY, &r, &no_peak);
	CHECK_EQ(tb_refill(&l, 30 * DAY, &r), r.cap, "a month later: exactly full");

	tb_fill(&mate, 20 * SEC, &fast);
	CHECK(admit(&mate, 20 * SEC, 64, &fast), "a slot mate under a fast rule takes 64 bytes");
	tb_restore(&l, tb_full_at(&mate, &fast), 20 * SEC, &r, &no_peak);
	CHECK(tb_refill(&l, 20 * SEC, &r) >= r.cap - 65000 * r.rate,
	      "the slow bucket next to it starts short of full by 64 us of its rate at most");
}

/* The credit word (struct tb_bucket): a spend pays units from what is
 * unspent and counts the other measure beside it, refusing what it
 * cannot pay or count; what it admitted is what the counters lack,
 * counted from the grant or the latest reset. */
static void credit_word_counts_what_it_admits(void)
{
	struct tb_bucket b = { .cost = TB_COST_BYTES, .credit_granted = 1000, .credit_from = 1000 };
	struct tb_counters c = {};
	__u64 w = 1000;

	w = tb_credit_spend(w, 300, 1);
	w = tb_credit_spend(w, 200, 1);
	CHECK_EQ(w, 2ULL << 32 | 500, "two packets of 500 B paid and counted");
	CHECK_EQ(tb_credit_spend(w, 501, 1), 0, "501 B cannot be paid from 500");
	CHECK_EQ(tb_credit_spend(0xffffffffULL << 32 | 500, 1, 1), 0, "a full count takes no more");
	tb_credit_counted(&b, w, &c);
	CHECK_EQ(c.passed_bytes, 500, "bytes admitted: granted less unspent");
	CHECK_EQ(c.passed_packets, 2, "packets admitted: the count");
	b.credit_from = 500;
	c = (struct tb_counters){};
	tb_credit_counted(&b, tb_credit_unspent(w), &c);
	CHECK(!c.passed_bytes && !c.passed_packets, "after a reset at 500 unspent, nothing counted");
	b.credit_from = 400;
	c = (struct tb_counters){};
	tb_credit_counted(&b, tb_credit_unspent(w), &c);
	CHECK(!c.passed_bytes, "a word read beside a later grant counts nothing, not a wrapped count");
	b = (struct tb_bucket){ .cost = TB_COST_PACKETS, .credit_granted = 10, .credit_from = 10 };
	w = tb_credit_spend(10, 1, 1500);
	c = (struct tb_counters){};
	tb_credit_counted(&b, w, &c);
	CHECK(c.passed_packets == 1 && c.passed_bytes == 1500, "by packets: 1 packet, its 1,500 B counted");
	b.credit_granted = 0;
	c = (struct tb_counters){};
	tb_credit_counted(&b, 0, &c);
	CHECK(!c.passed_bytes && !c.passed_packets, "no credit outstanding, nothing counted");
}

TEST_LIST(
	T(millisecond_refills_a_millisecond),
	T(long_idle_refills_exactly_capacity),
	T(backwards_clock_changes_nothing),
	T(million_operations_no_drift),
	T(half_token_per_tick),
	T(burst_and_rate_table),
	T(window_bound_property),
	T(thirty_days_overload_exact),
	T(extreme_rates),
	T(cost_above_burst_never_admitted),
	T(rate_change_keeps_level),
	T(earn_time_is_a_tight_lower_bound),
	T(eviction_adds_no_burst),
	T(restored_bucket_owes_what_it_took),
	T(credit_keeps_the_bound),
	T(credit_word_counts_what_it_admits),
	T(refund_undoes_the_charge),
	T(total_keeps_both_bounds),
);

int main(int argc, char **argv)
{
	return RUN("bucket");
}
