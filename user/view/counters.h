/* SPDX-License-Identifier: GPL-2.0 */
/* The counters' field tables, from tb_abi.h's TB_COUNTERS and TB_STATS:
 * each counter's name, help and place, for every writer (stats, show,
 * top, the metrics) to walk rather than list them again. */
#ifndef TB_COUNTERS_H
#define TB_COUNTERS_H

#include <stddef.h>
#include "abi/tb_abi.h"

struct counter_field {
	const char *name;
	const char *help;
	size_t offset;
};

/* struct tb_counters' fields, and struct tb_stats' (its counters first). */
extern const struct counter_field counter_fields[], stats_fields[];
extern const int counter_field_count, stats_field_count;

static inline __u64 counter_value(const void *record, const struct counter_field *f)
{
	return *(const __u64 *)((const char *)record + f->offset);
}

#endif
