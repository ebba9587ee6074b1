// SPDX-License-Identifier: GPL-2.0
/* events: the decisions that were not a plain pass, as the datapath logs
 * them to its ring buffer (bpf/stages/event.h), one line (or JSON object)
 * each, until stopped; what the buffer lost, and what the sampling's rate
 * held back, said as it happens. events set: the sampling. */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/libbpf.h>
#include "logic/event_gate.h"
#include "lib/clock.h"
#include "lib/state.h"
#include "lib/tables.h"
#include "view/event_text.h"
#include "view/output.h"
#include "cli/tbctl.h"
#include "lib/units.h"

#define EVENTS_INTERVAL_MAX_NS (3600ULL * 1000000000ULL)
#define EVENTS_POLL_MS 200

struct events_opts {
	struct cmd_target t;
	unsigned int kinds;     /* EVENT_KIND_* to show; 0: all */
	__u64 count;            /* records before stopping; 0: no limit */
	__u64 seconds;          /* 0: no limit */
};

static int parse_events(const char *cmd, int argc, char **argv, void *opts)
{
	struct kw kws[] = { { "dev" }, { "count" }, { "seconds" }, { 0 } };
	struct events_opts *a = opts;
	char *rest[argc + 1];
	const char *v;
	int n = 0, rc, k;
	__u32 x;

	for (int i = 0; i < argc; i++) {
		k = event_kind_parse(argv[i]);
		if (k && (i == 0 || strcmp(argv[i - 1], "dev")))
			a->kinds |= k;
		else
			rest[n++] = argv[i];
	}
	rc = kw_parse(cmd, n, rest, kws, NULL);
	if (rc || (rc = parse_dev(cmd, kw_get(kws, "dev"), &a->t)))
		return rc;
	if ((v = kw_get(kws, "count")) && (rc = parse_count(cmd, "count", v, 1, UINT32_MAX, &x)))
		return rc;
	a->count = v ? x : 0;
	if ((v = kw_get(kws, "seconds")) && (rc = parse_count(cmd, "seconds", v, 1, 31 * 86400, &x)))
		return rc;
	a->seconds = v ? x : 0;
	return 0;
}

static volatile sig_atomic_t stopping;

static void stop(int sig)
{
	(void)sig;
	stopping = 1;
}

/* What the reader needs in the ring buffer's callback. */
struct reader {
	const struct events_opts *a;
	struct tb_maps *m;
	struct ruleset rs;
	struct event_clock clock;
	__u64 shown;
};

static int on_event(void *ctx, void *data, size_t size)
{
	struct reader *r = ctx;
	const struct tb_event *e = data;

	/* Records from before this reader began were left by no one's; those
	 * past the count, by this one. */
	if (size < sizeof(*e) || e->ns < r->clock.mono_ns || (r->a->count && r->shown >= r->a->count))
		return 0;
	if (r->a->kinds && !(event_kind(e) & r->a->kinds))
		return 0;
	event_print(e, &r->rs, r->m, &r->clock);
	r->shown++;
	return 0;
}

/* What the sampling and the buffer kept back since the last look, said
 * when it grew. */
static int report_missed(struct reader *r, struct tb_stats *seen)
{
	struct tb_stats now;
	int err = stats_sum(r->m, &now);

	if (err)
		return err;
	if (now.events_lost > seen->events_lost || now.events_capped > seen->events_capped)
		event_print_missed(now.events_lost - seen->events_lost, now.events_capped - seen->events_capped);
	*seen = now;
	return 0;
}

static int stream(struct reader *r, struct ring_buffer *rb)
{
	struct tb_stats seen;
	__u64 end = r->a->seconds ? r->clock.mono_ns + r->a->seconds * 1000000000ULL : 0, next = 0;
	int err = stats_sum(r->m, &seen);

	while (!err && !stopping && (!end || now_ns() < end)) {
		err = ring_buffer__poll(rb, EVENTS_POLL_MS);
		if (r->a->count && r->shown >= r->a->count)
			return 0;
		if (err == -EINTR)
			err = 0;
		if (err >= 0 && now_ns() >= next) {
			err = report_missed(r, &seen);
			/* The rule set may have changed: names come from it. */
			if (!err)
				err = ruleset_read(&r->rs, r->m);
			next = now_ns() + 1000000000ULL;
		}
		err = err > 0 ? 0 : err;
	}
	/* What the last second held back, too. */
	return err ? err : report_missed(r, &seen);
}

static int run_events(const void *opts)
{
	const struct events_opts *a = opts;
	static struct reader r;
	struct ring_buffer *rb;
	struct tb_maps m;
	int err;

	if (open_attached_ro("events", a->t.dev, &m))
		return 1;
	r = (struct reader){ .a = a, .m = &m };
	err = ruleset_read(&r.rs, &m);
	if (err) {
		out_error("events dev %s: read rules: %s", a->t.dev, strerror(-err));
		maps_close(&m);
		return 1;
	}
	if (!r.rs.cfg.event_rate) {
		out_error("events dev %s: events are off (tbctl events set dev %s rate N turns them on)", a->t.dev,
			  a->t.dev);
		maps_close(&m);
		return 1;
	}
	rb = ring_buffer__new(m.events, on_event, &r, NULL);
	if (!rb) {
		out_error("events dev %s: map the events buffer: %s", a->t.dev, strerror(errno));
		maps_close(&m);
		return 1;
	}
	signal(SIGINT, stop);
	signal(SIGTERM, stop);
	event_clock_start(&r.clock);
	err = stream(&r, rb);
	ring_buffer__free(rb);
	maps_close(&m);
	if (err < 0) {
		out_error("events dev %s: read the events buffer: %s", a->t.dev, strerror(-err));
		return 1;
	}
	return 0;
}

const struct command cmd_events = {
	.name = "events",
	.usage = "dev DEV [drop|mark|remark|fleet|ban ...] [count N] [seconds S]",
	.opts_size = sizeof(struct events_opts),
	.parse = parse_events,
	.run = run_events,
	.flags = CMD_ATTACHED | CMD_NO_BATCH,
	.caps = CAPS_READ,
};

struct events_set_opts {
	struct cmd_target t;
	bool has_rate, has_interval;
	__u32 rate;
	__u32 interval_ms;
};

static int parse_events_set(const char *cmd, int argc, char **argv, void *opts)
{
	struct kw kws[] = { { "dev" }, { "rate" }, { "interval" }, { 0 } };
	struct events_set_opts *a = opts;
	const char *v;
	char err[160];
	__u64 ns;
	int rc = kw_parse(cmd, argc, argv, kws, NULL);

	if (rc || (rc = parse_dev(cmd, kw_get(kws, "dev"), &a->t)))
		return rc;
	if ((v = kw_get(kws, "rate")) && (rc = parse_count(cmd, "rate", v, 0, TB_EVENT_RATE_MAX, &a->rate)))
		return rc;
	a->has_rate = v;
	/* interval 0: every decision of a key, as far as the rate allows. */
	if ((v = kw_get(kws, "interval"))) {
		if (!strcmp(v, "0"))
			ns = 0;
		else if (parse_time(v, "interval", EVENTS_INTERVAL_MAX_NS, &ns, err, sizeof(err)))
			return usage_error(cmd, "%s", err);
		if (ns % 1000000)
			return usage_error(cmd, "interval %s: a whole number of milliseconds", v);
		a->interval_ms = ns / 1000000;
		a->has_interval = true;
	}
	if (!a->has_rate && !a->has_interval)
		return usage_error(cmd, "nothing to set (rate N, interval TIME)");
	return 0;
}

int events_set_config(const void *opts, const struct tb_maps *m)
{
	const struct events_set_opts *a = opts;
	struct tb_config cfg;
	int err = state_read_config(m, &cfg);

	if (err)
		return err;
	if (a->has_rate)
		cfg.event_rate = a->rate;
	if (a->has_interval)
		cfg.event_interval_ms = a->interval_ms;
	return state_write_config(m, &cfg);
}

static int run_events_set(const void *opts)
{
	const struct events_set_opts *a = opts;
	struct tb_maps m;
	int err;

	if (open_attached("events set", a->t.dev, &m))
		return 1;
	err = events_set_config(a, &m);
	maps_close(&m);
	if (err) {
		out_error("events set dev %s: update the config: %s", a->t.dev, strerror(-err));
		return 1;
	}
	return 0;
}

const struct command cmd_events_set = {
	.name = "events set",
	.usage = "dev DEV [rate N] [interval TIME]",
	.opts_size = sizeof(struct events_set_opts),
	.parse = parse_events_set,
	.run = run_events_set,
	.flags = CMD_ATTACHED | CMD_SAVED,
	.caps = CAPS_READ,
};
