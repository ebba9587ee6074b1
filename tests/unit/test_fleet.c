// SPDX-License-Identifier: GPL-2.0
/* fleet_credit.h and the agent's sizing on the host: a key's static
 * share on a virtual clock, credit spent and taken back, and how much
 * credit the agent asks for. */
#include "logic/fleet_credit.h"
#include "fleet/agent.h"
#include "../check.h"

#define MS 1000000ULL
#define SEC 1000000000ULL

static void a_new_share_is_full_and_refills_at_its_rate(void)
{
	struct tb_rate r = tb_rate_make(10000, 3000);
	struct tb_level l;
	__u64 t = 5 * SEC, passed = 0;

	tb_share_start(&l, t, &r);
	CHECK_EQ(l.tokens, r.cap, "a new key's share");
	for (int i = 0; i < 3; i++)
		passed += tb_share_pay(&l, t, 1000 * TB_NANO, &r);
	CHECK_EQ(passed, 3, "frames the full share of 3000 paid");
	CHECK(!tb_share_pay(&l, t, 1000 * TB_NANO, &r), "an empty share paid");
	CHECK_EQ(l.last_ns, t, "a refusal refills to now");
	/* 10,000 units/s: 1000 units take 100 ms. */
	CHECK(!tb_share_pay(&l, t + 99 * MS, 1000 * TB_NANO, &r), "paid before the tokens were there");
	CHECK(tb_share_pay(&l, t + 100 * MS, 1000 * TB_NANO, &r), "not paid once they were");
}

static void a_share_admits_at_most_b_plus_r_t(void)
{
	struct tb_rate r = tb_rate_make(10000, 3000);
	struct tb_level l;
	__u64 paid = 0, t0 = SEC;

	tb_share_start(&l, t0, &r);
	/* A 700-unit packet every ms for 10 s. */
	for (__u64 t = t0; t < t0 + 10 * SEC; t += MS)
		paid += tb_share_pay(&l, t, 700 * TB_NANO, &r) * 700;
	CHECK(paid <= 3000 + 10000 * 10, "paid %llu > b + r*T = %u", (unsigned long long)paid, 3000 + 10000 * 10);
	CHECK(paid >= 10000 * 10 - 700, "paid %llu, well under the rate", (unsigned long long)paid);
}

static void credit_pays_only_what_it_holds(void)
{
	__s64 credit = 2500;

	CHECK(tb_credit_pay(&credit, 1000), "1000 of 2500");
	CHECK(tb_credit_pay(&credit, 1000), "1000 of 1500");
	CHECK(!tb_credit_pay(&credit, 1000), "1000 of 500 was paid");
	CHECK_EQ(credit, 500, "a spend that did not fit leaves the credit as it was");
	CHECK(tb_credit_pay(&credit, 500), "the last 500");
	CHECK_EQ(credit, 0, "credit after spending all of it");
}

static void take_back_takes_all_that_is_unspent(void)
{
	__s64 credit = 4000, neg = -300;

	CHECK(tb_credit_pay(&credit, 1500), "a spend");
	CHECK_EQ(tb_credit_take(&credit), 2500, "taken back");
	CHECK_EQ(credit, 0, "credit after the take");
	CHECK(!tb_credit_pay(&credit, 1), "taken credit paid");
	/* Below zero is a spend being undone: nothing to take yet. */
	CHECK_EQ(tb_credit_take(&neg), 0, "taken from a credit being undone");
	CHECK_EQ(neg, -300, "a credit being undone after a take");
}

static void the_agent_asks_for_its_rate_over_a_round_trip_and_two_rounds(void)
{
	/* 1,000,000 units/s, 1 ms round trip, 10 ms rounds: 21 ms of rate,
	 * twice over. */
	__u64 want = agent_want(1e6, 1 * MS, 10 * MS, 0, 100, 10000000);

	CHECK_EQ(want, 42000, "asked with nothing held");
	CHECK_EQ(agent_want(1e6, 1 * MS, 10 * MS, 21000, 100, 10000000), 0, "asked while holding half the target");
	CHECK_EQ(agent_want(1e6, 1 * MS, 10 * MS, 20999, 100, 10000000), 21001, "asked holding under half");
	CHECK_EQ(agent_want(1e6, 1 * MS, 10 * MS, 0, 100, 30000), 30000, "asked beyond the burst");
	CHECK_EQ(agent_want(0, 1 * MS, 10 * MS, 0, AGENT_FRAME, 10000000), AGENT_FRAME, "a new key's least ask: a frame");
}

int main(int argc, char **argv)
{
	static const struct test_case tests[] = {
		{ "a_new_share_is_full_and_refills_at_its_rate", a_new_share_is_full_and_refills_at_its_rate },
		{ "a_share_admits_at_most_b_plus_r_t", a_share_admits_at_most_b_plus_r_t },
		{ "credit_pays_only_what_it_holds", credit_pays_only_what_it_holds },
		{ "take_back_takes_all_that_is_unspent", take_back_takes_all_that_is_unspent },
		{ "the_agent_asks_for_its_rate_over_a_round_trip_and_two_rounds",
		  the_agent_asks_for_its_rate_over_a_round_trip_and_two_rounds },
	};

	return run_tests("fleet", tests, sizeof(tests) / sizeof(tests[0]), argc, argv);
}
