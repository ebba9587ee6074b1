// SPDX-License-Identifier: GPL-2.0
/* The events' sampling on a virtual clock (logic/event_gate.h): one
 * record a key an interval, keys sharing a slot, and the cap a second
 * over all keys, whatever the order the CPUs' clocks are read in; and the
 * kinds tbctl events picks records by. */
#include <stdlib.h>
#include "logic/event_gate.h"
#include "view/event_text.h"
#include "../check.h"

/* A slot driven by one key's decisions every step_ms for span_ms: how
 * many records it lets through. */
static int records(__u32 interval_ms, __u64 step_ms, __u64 span_ms)
{
	__u64 w = 0, next;
	int n = 0;

	for (__u64 t = 1000; t < 1000 + span_ms; t += step_ms) {
		next = tb_event_slot_next(w, 0xbeef, t * 1000000, interval_ms);
		if (next) {
			w = next;
			n++;
		}
	}
	return n;
}

static void one_record_a_key_an_interval(void)
{
	CHECK_EQ(records(1000, 1, 10000), 10, "a decision every ms for 10 s, 1 s interval");
	CHECK_EQ(records(1000, 999, 10000), 6, "one every 999 ms: each second after a record");
	CHECK_EQ(records(250, 1, 1000), 4, "250 ms interval over 1 s");
	CHECK_EQ(records(0, 1, 100), 100, "interval 0: every decision");
}

static void keys_sharing_a_slot_each_get_theirs(void)
{
	__u64 w = 0, next;
	int a = 0, b = 0;

	/* Two keys alternating in one slot take it from each other: each is
	 * sampled no more finely than on its own. */
	for (__u64 t = 1000; t < 3000; t += 10) {
		next = tb_event_slot_next(w, t % 20 ? 1 : 2, t * 1000000, 1000);
		if (next) {
			w = next;
			a += t % 20 ? 1 : 0;
			b += t % 20 ? 0 : 1;
		}
	}
	CHECK(a >= 2 && b >= 2, "both keys logged: %d and %d", a, b);
	w = tb_event_slot_next(0, 7, 5000 * 1000000ULL, 1000);
	CHECK_EQ(tb_event_slot_next(w, 7, 4999 * 1000000ULL, 1000), 0, "a clock a ms behind the record's is within it");
	CHECK_EQ(tb_event_slot_next(w, 7, 5999 * 1000000ULL, 1000), 0, "999 ms later, within it");
	CHECK(tb_event_slot_next(w, 7, 6002 * 1000000ULL, 1000) != 0, "an interval later, the key is logged again");
}

/* Random seconds from CPUs whose clocks differ by up to 5 ms: no second
 * ever lets more than rate through, and each lets rate through when it
 * is asked for more. */
static void the_cap_holds_every_second(void)
{
	static int per_second[120];
	__u64 w = 0, next;
	int over = 0, short_of = 0;

	srandom(5);
	for (__u64 t = 0; t < 100000; t += 1) {
		__u64 skewed = t > 5 ? t - random() % 6 : t;   /* ms */

		next = tb_event_gate_next(w, skewed / 1000, 50);
		if (next) {
			per_second[next >> TB_EVENT_COUNT_BITS]++;
			w = next;
		}
	}
	for (int s = 0; s < 100; s++) {
		over += per_second[s] > 50;
		short_of += per_second[s] < 50;
	}
	CHECK_EQ(over, 0, "seconds with more than the rate");
	CHECK_EQ(short_of, 0, "seconds with fewer, though more were asked for");
	CHECK_EQ(tb_event_gate_next(0, 3, 0), 0, "rate 0: nothing");
}

static void kinds_pick_records(void)
{
	struct tb_event drop = { .verdict = TB_EVENT_DROP, .why = TB_WHY_RATE };
	struct tb_event fleet = { .verdict = TB_EVENT_DROP, .why = TB_WHY_FLEET };
	struct tb_event remark = { .verdict = TB_EVENT_REMARK, .why = TB_WHY_TOTAL };
	struct tb_event mark = { .verdict = TB_EVENT_MARK, .why = TB_WHY_EARLY };

	CHECK_EQ(event_kind_parse("drop"), EVENT_KIND_DROP, "drop");
	CHECK_EQ(event_kind_parse("fleet"), EVENT_KIND_FLEET, "fleet");
	CHECK_EQ(event_kind_parse("dev"), 0, "a keyword is no kind");
	CHECK_EQ(event_kind(&drop), EVENT_KIND_DROP, "a drop over the rate");
	CHECK_EQ(event_kind(&fleet), EVENT_KIND_DROP | EVENT_KIND_FLEET, "a fleet refusal is a drop too");
	CHECK_EQ(event_kind(&remark), EVENT_KIND_REMARK, "a remark over the total");
	CHECK_EQ(event_kind(&mark), EVENT_KIND_MARK, "an early CE mark");
}

TEST_LIST(T(one_record_a_key_an_interval),
	  T(keys_sharing_a_slot_each_get_theirs),
	  T(the_cap_holds_every_second),
	  T(kinds_pick_records));

int main(int argc, char **argv)
{
	return RUN("event");
}
