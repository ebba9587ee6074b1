// SPDX-License-Identifier: GPL-2.0
#include "view/counters.h"

#define COUNTER(name, help) { #name, help, offsetof(struct tb_counters, name) },
#define STATS_COUNTER(name, help) { #name, help, offsetof(struct tb_stats, c.name) },
#define STATS_FIELD(name, help) { #name, help, offsetof(struct tb_stats, name) },

const struct counter_field counter_fields[] = { TB_COUNTERS(COUNTER) };
const struct counter_field stats_fields[] = { TB_COUNTERS(STATS_COUNTER) TB_STATS(STATS_FIELD) };
const int counter_field_count = sizeof(counter_fields) / sizeof(counter_fields[0]);
const int stats_field_count = sizeof(stats_fields) / sizeof(stats_fields[0]);

_Static_assert(sizeof(stats_fields) / sizeof(stats_fields[0]) == sizeof(struct tb_stats) / sizeof(__u64),
	       "every counter in the table");
