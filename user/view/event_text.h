/* SPDX-License-Identifier: GPL-2.0 */
/* A record of the events buffer (struct tb_event) as a line, or as a
 * JSON object a line, and the kinds an operator picks them by. */
#ifndef TB_EVENT_TEXT_H
#define TB_EVENT_TEXT_H

#include <time.h>
#include "lib/ruleset.h"
#include "lib/state.h"

enum event_kind {
	EVENT_KIND_DROP = 1,
	EVENT_KIND_MARK = 2,    /* ECN CE */
	EVENT_KIND_REMARK = 4,  /* DSCP */
	EVENT_KIND_FLEET = 8,   /* refused by the fleet */
	EVENT_KIND_BAN = 16,    /* dropped by a ban */
};

/* The wall clock at one monotonic instant, to date the records by. */
struct event_clock {
	__u64 mono_ns;
	struct timespec wall;
};

void event_clock_start(struct event_clock *c);
/* The kind a word names ("drop", "mark", "remark", "fleet", "ban"), or 0. */
int event_kind_parse(const char *word);
/* The kinds record e is of. */
unsigned int event_kind(const struct tb_event *e);
/* Print e, its key read back as an address or group under its rule (the
 * one it resolves to now, where the record has none) of rs. */
void event_print(const struct tb_event *e, const struct ruleset *rs, const struct tb_maps *m,
		 const struct event_clock *c);
/* Print what was not logged since the last such line: lost to a full
 * buffer, or held back by the sampling's rate. */
void event_print_missed(__u64 lost, __u64 capped);

#endif
