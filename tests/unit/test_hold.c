// SPDX-License-Identifier: GPL-2.0
/* hold.h on the host, on a virtual clock: the peak packed beside the round
 * trip, the answers that teach it (a retransmission, a CWR), the answers
 * that do not (too soon, a timeout, another segment), forgetting, and
 * tb_decide with the signal off while the round trip is long. */
#include "logic/charge.h"
#include "../check.h"
#include "logic/tuning.h"

#define MS 1000000ULL
#define SEC 1000000000ULL

/* A moment of the virtual clock far from 0, so that no field starts at a
 * wrap. */
#define T0 (123 * SEC + 456 * MS)

static struct tb_terms terms(__u64 rate, __u64 burst, int action)
{
	return (struct tb_terms){ .r = tb_rate_make(rate, burst), .action = action };
}

static void peak_fits_beside_the_round_trip_at_every_burst(void)
{
	const __u64 bursts[] = { 1, 1514, 125000, 1250000, 125000000, 1250000000, 17179869184ULL };

	for (unsigned i = 0; i < sizeof(bursts) / sizeof(bursts[0]); i++) {
		struct tb_rate r = tb_rate_make(1000, bursts[i]);
		__u64 step = 1ULL << (r.early_shift + TB_HOLD_PEAK_SHIFT);
		__u64 rtt = TB_HOLD_LONG | TB_HOLD_AWAITS | 0x5a5a5aULL << TB_HOLD_SENT_SHIFT;

		for (__u64 k = 0; k <= 64; k++) {
			__u64 level = r.cap / 64 * k, h = tb_hold_at(rtt, level, &r);

			if (!CHECK_EQ(h & TB_HOLD_RTT, rtt, "burst %llu, level %llu: the round trip's bits kept",
				      (unsigned long long)bursts[i], (unsigned long long)level))
				return;
			CHECK(tb_hold_peak(h, &r) >= level || (h & TB_HOLD_PEAK_MAX) == TB_HOLD_PEAK_MAX,
			      "burst %llu, level %llu: peak %llu rounded up", (unsigned long long)bursts[i],
			      (unsigned long long)level, (unsigned long long)tb_hold_peak(h, &r));
			CHECK(tb_hold_peak(h, &r) < level + step, "burst %llu, level %llu: peak %llu within a step",
			      (unsigned long long)bursts[i], (unsigned long long)level,
			      (unsigned long long)tb_hold_peak(h, &r));
		}
		CHECK(tb_hold_peak(tb_hold_at(0, r.cap, &r), &r) + (r.cap >> TB_EARLY_HOLD_SHIFT) > r.cap,
		      "burst %llu: a full bucket's peak is within a hold's step of the burst",
		      (unsigned long long)bursts[i]);
	}
}

/* A bucket of 100 segments of 1,000 bytes at 1 B/s (no refill to speak
 * of), at a level in the early range, armed: a draw of 0 signals. */
static struct tb_level armed(const struct tb_terms *t, __u64 now)
{
	struct tb_level l;

	tb_fill(&l, now, &t->r);
	l.tokens = t->r.early / 2;
	return l;
}

static int decide_at(struct tb_level *l, struct tb_terms *t, __u64 now, __u32 seq, __u8 tcp)
{
	__u64 depart;

	t->seq = seq;
	t->tcp = tcp;
	t->rnd = 0;
	t->cost = 1000 * TB_NANO;
	return tb_decide(l, t, now, &depart);
}

/* The early drop of segment seq at T0, answered at T0 + gap by its
 * retransmission: whether the round trip is long after it. */
static int long_after_retransmission(__u64 gap)
{
	struct tb_terms t = terms(1, 100000, TB_ACTION_DROP);
	struct tb_level l = armed(&t, T0);

	if (!CHECK_EQ(decide_at(&l, &t, T0, 7777, TB_TCP_SEGMENT), TB_EARLY, "the first signal"))
		return -1;
	CHECK(l.hold & TB_HOLD_AWAITS, "the signal awaits its answer");
	CHECK_EQ(decide_at(&l, &t, T0 + gap, 7777, TB_TCP_SEGMENT), TB_FIT,
		 "the retransmission, %llu ms later: held, it passes", (unsigned long long)(gap / MS));
	CHECK(!(l.hold & TB_HOLD_AWAITS), "answered: no longer awaited");
	return !!(l.hold & TB_HOLD_LONG);
}

static void retransmission_tells_the_round_trip(void)
{
	CHECK_EQ(long_after_retransmission(1 * MS), 0, "answer after 1 ms: not long");
	CHECK_EQ(long_after_retransmission(20 * MS), 0, "answer after 20 ms: not long");
	CHECK_EQ(long_after_retransmission(40 * MS), 1, "answer after 40 ms: long");
	CHECK_EQ(long_after_retransmission(80 * MS), 1, "answer after 80 ms: long");
	CHECK_EQ(long_after_retransmission(190 * MS), 1, "answer after 190 ms: long");
}

/* An answer at 200 ms or later is a retransmission timeout's: the signal
 * was forgotten by then, and the round trip is not learnt. */
static void timeout_is_not_a_round_trip(void)
{
	struct tb_terms t = terms(1, 100000, TB_ACTION_DROP);
	const __u64 gaps[] = { 210 * MS, 300 * MS, 1 * SEC, 3 * SEC };

	for (unsigned i = 0; i < sizeof(gaps) / sizeof(gaps[0]); i++) {
		struct tb_level l = armed(&t, T0);

		decide_at(&l, &t, T0, 4242, TB_TCP_SEGMENT);
		decide_at(&l, &t, T0 + gaps[i], 4242, TB_TCP_SEGMENT);
		CHECK(!(l.hold & (TB_HOLD_LONG | TB_HOLD_AWAITS)), "answer after %llu ms: not learnt, nor awaited",
		      (unsigned long long)(gaps[i] / MS));
	}
}

/* Only the dropped segment answers: 100,000 other segments of the same
 * flow meet the signal's 21-bit hash by chance at most once, and a packet
 * that is not TCP never. */
static void only_the_signalled_segment_answers(void)
{
	struct tb_terms t = terms(1, 100000, TB_ACTION_DROP);
	struct tb_level l = armed(&t, T0);
	__u32 seq = 0x8c3a11f0, hits = 0;

	decide_at(&l, &t, T0, seq, TB_TCP_SEGMENT);
	for (__u32 k = 1; k <= 100000; k++) {
		__u64 h = l.hold;

		tb_hold_answer(&h, TB_TCP_SEGMENT, seq + k * 1448, T0 + 50 * MS);
		hits += !(h & TB_HOLD_AWAITS);
	}
	CHECK(hits <= 1, "%u of 100,000 other segments answered", hits);
	decide_at(&l, &t, T0 + 50 * MS, seq, 0);
	CHECK(l.hold & TB_HOLD_AWAITS, "a packet that is not TCP does not answer");
	decide_at(&l, &t, T0 + 50 * MS, seq, TB_TCP_SEGMENT | TB_TCP_CWR);
	CHECK(!(l.hold & TB_HOLD_AWAITS) && (l.hold & TB_HOLD_LONG), "the segment itself does, CWR or not");
}

/* Under mark the answer to a CE mark is the sender's CWR, a round trip
 * after it; a segment with the marked one's number is not. */
static void cwr_answers_a_mark(void)
{
	struct tb_terms t = terms(1, 100000, TB_ACTION_MARK);
	struct tb_level l;

	t.ect = 1;
	tb_fill(&l, T0, &t.r);
	l.tokens = t.r.early / 4 * 3;           /* the upper half: marked */
	CHECK_EQ(decide_at(&l, &t, T0, 99, TB_TCP_SEGMENT), TB_MARKED, "the first signal marks");
	decide_at(&l, &t, T0 + 60 * MS, 99, TB_TCP_SEGMENT);
	CHECK(l.hold & TB_HOLD_AWAITS, "the marked segment's number does not answer a mark");
	decide_at(&l, &t, T0 + 60 * MS, 12345, TB_TCP_SEGMENT | TB_TCP_CWR);
	CHECK(!(l.hold & TB_HOLD_AWAITS) && (l.hold & TB_HOLD_LONG), "CWR after 60 ms: long");
}

/* While the round trip is long the bucket never signals early: it passes
 * what it can pay down to empty, and tail drops after. Ten seconds after
 * the answer the signal is back. */
static void long_round_trip_turns_the_signal_off_for_a_while(void)
{
	struct tb_terms t = terms(1, 100000, TB_ACTION_DROP);
	struct tb_level l = armed(&t, T0);
	__u64 now = T0 + 80 * MS;
	int out, early = 0;

	decide_at(&l, &t, T0, 5, TB_TCP_SEGMENT);
	decide_at(&l, &t, now, 5, TB_TCP_SEGMENT);
	if (!CHECK(l.hold & TB_HOLD_LONG, "learnt: long"))
		return;
	while ((out = decide_at(&l, &t, now, 6, TB_TCP_SEGMENT)) != TB_OVER)
		early += out == TB_EARLY;
	CHECK_EQ(early, 0, "early signals down to an empty bucket");
	CHECK(l.tokens < t.cost, "drained to less than a segment: %llu", (unsigned long long)l.tokens);
	for (now += SEC; now < T0 + 80 * MS + 10 * SEC; now += SEC)
		decide_at(&l, &t, now, 6, TB_TCP_SEGMENT);
	CHECK(l.hold & TB_HOLD_LONG, "9 s after the answer: still long");
	decide_at(&l, &t, T0 + 80 * MS + 10 * SEC + 200 * MS, 6, TB_TCP_SEGMENT);
	CHECK(!(l.hold & TB_HOLD_LONG), "10.2 s after the answer: forgotten");
	l.tokens = t.r.early / 2;
	l.hold = tb_hold_at(l.hold, t.r.cap, &t.r);
	CHECK_EQ(decide_at(&l, &t, T0 + 11 * SEC, 6, TB_TCP_SEGMENT), TB_EARLY, "the signal is back");
}

/* The answer counts even when the bucket cannot pay for it. */
static void answer_counts_from_an_empty_bucket(void)
{
	struct tb_terms t = terms(1, 100000, TB_ACTION_DROP);
	struct tb_level l = armed(&t, T0);

	decide_at(&l, &t, T0, 31337, TB_TCP_SEGMENT);
	l.tokens = 10 * TB_NANO;
	CHECK_EQ(decide_at(&l, &t, T0 + 70 * MS, 31337, TB_TCP_SEGMENT), TB_OVER, "the answer: tail dropped");
	CHECK(l.hold & TB_HOLD_LONG, "and learnt from: long");
}

/* A signal is awaited alone: a second, while the first awaits, does not
 * take its place; once answered, the next signal is awaited. */
static void one_signal_awaited_at_a_time(void)
{
	struct tb_terms t = terms(1, 100000, TB_ACTION_DROP);
	struct tb_level l = armed(&t, T0);

	decide_at(&l, &t, T0, 1000, TB_TCP_SEGMENT);
	l.hold = tb_hold_at(l.hold, t.r.cap, &t.r);    /* past the hold */
	CHECK_EQ(decide_at(&l, &t, T0 + 1 * MS, 2000, TB_TCP_SEGMENT), TB_EARLY, "a second signal");
	decide_at(&l, &t, T0 + 60 * MS, 2000, TB_TCP_SEGMENT);
	CHECK(l.hold & TB_HOLD_AWAITS, "the second's retransmission does not answer the first");
	decide_at(&l, &t, T0 + 61 * MS, 1000, TB_TCP_SEGMENT);
	CHECK(l.hold & TB_HOLD_LONG, "the first's does");
}

/* The times wrap (1.07 s and 34 s) but never alias: a gap between charges
 * long enough for a wrap forgets first (TB_HOLD_IDLE_*), and shorter gaps
 * see the expiry before the wrap. Times within a tick of an expiry are
 * not checked: ticks are 4.2 ms and 134 ms. */
static void times_never_alias_across_their_wrap(void)
{
	struct tb_terms t = terms(1, 100000, TB_ACTION_DROP);
	const __u64 gaps[] = { 3 * SEC, 7900 * MS, 8600 * MS, 30 * SEC, 34 * SEC, 100 * SEC };

	for (unsigned i = 0; i < sizeof(gaps) / sizeof(gaps[0]); i++) {
		struct tb_level l = armed(&t, T0);
		__u64 now = T0 + 80 * MS, after;

		decide_at(&l, &t, T0, 5, TB_TCP_SEGMENT);
		decide_at(&l, &t, now, 5, TB_TCP_SEGMENT);
		for (int k = 0; k < 40; k++) {
			now += gaps[i];
			after = now - (T0 + 80 * MS);
			decide_at(&l, &t, now, 6, 0);
			if (after > 9800 * MS && after <= 10 * SEC)
				continue;
			if (!CHECK_EQ(!!(l.hold & TB_HOLD_LONG),
				      gaps[i] < 1ULL << TB_HOLD_IDLE_LONG_SHIFT && after < 10 * SEC,
				      "charged every %llu ms, %llu ms after the answer: long",
				      (unsigned long long)(gaps[i] / MS), (unsigned long long)(after / MS)))
				break;
		}
	}
	for (__u64 gap = 30 * MS; gap <= 2 * SEC; gap += 70 * MS) {
		struct tb_level l = armed(&t, T0);
		__u64 now = T0;

		decide_at(&l, &t, now, 77, TB_TCP_SEGMENT);
		for (int k = 0; k < 40; k++) {
			now += gap;
			decide_at(&l, &t, now, 78, 0);
			if (now - T0 > 195 * MS && now - T0 < 206 * MS)
				continue;
			if (!CHECK_EQ(!!(l.hold & TB_HOLD_AWAITS),
				      gap < 1ULL << TB_HOLD_IDLE_SIGNAL_SHIFT && now - T0 < 200 * MS,
				      "charged every %llu ms, %llu ms after the signal: awaited",
				      (unsigned long long)(gap / MS), (unsigned long long)((now - T0) / MS)))
				break;
		}
	}
}

/* A bucket made full, or re-created empty, knows nothing of a round trip. */
static void new_levels_start_knowing_nothing(void)
{
	struct tb_terms t = terms(1, 100000, TB_ACTION_DROP);
	struct tb_level l = armed(&t, T0);

	decide_at(&l, &t, T0, 5, TB_TCP_SEGMENT);
	decide_at(&l, &t, T0 + 80 * MS, 5, TB_TCP_SEGMENT);
	tb_fill(&l, T0 + SEC, &t.r);
	CHECK_EQ(l.hold & TB_HOLD_RTT, 0, "filled");
	l.hold |= TB_HOLD_LONG;
	tb_restore(&l, T0 + 50 * SEC, T0 + SEC, &t.r, &t.peak);
	CHECK_EQ(l.hold, 0, "restored empty");
}

TEST_LIST(T(peak_fits_beside_the_round_trip_at_every_burst),
	  T(retransmission_tells_the_round_trip),
	  T(timeout_is_not_a_round_trip),
	  T(only_the_signalled_segment_answers),
	  T(cwr_answers_a_mark),
	  T(long_round_trip_turns_the_signal_off_for_a_while),
	  T(answer_counts_from_an_empty_bucket),
	  T(one_signal_awaited_at_a_time),
	  T(times_never_alias_across_their_wrap),
	  T(new_levels_start_knowing_nothing));

int main(int argc, char **argv)
{
	return RUN("hold");
}
