// SPDX-License-Identifier: GPL-2.0
/* The real BPF object under BPF_PROG_TEST_RUN: crafted frames through the
 * hooks, and the control programs' requests, a topic a file (prog.h has
 * what they share). Arguments run the tests whose names hold any of them. */
#include "../check.h"

extern const struct test_topic prog_policing, prog_rules, prog_matches, prog_fragments, prog_fleet, prog_actions,
	prog_events, prog_bans, prog_fastpaths, prog_table, prog_resets, prog_upgrade, prog_races,
	prog_order;

int main(int argc, char **argv)
{
	static const struct test_topic *const topics[] = {
		&prog_policing, &prog_rules, &prog_matches, &prog_fragments, &prog_fleet, &prog_actions,
		&prog_events, &prog_bans, &prog_fastpaths, &prog_table, &prog_resets, &prog_upgrade, &prog_races,
		&prog_order,
	};

	return run_topics("prog", topics, sizeof(topics) / sizeof(topics[0]), argc, argv);
}
