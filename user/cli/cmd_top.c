// SPDX-License-Identifier: GPL-2.0
/* top: a live view of one device, refreshed every interval: per address
 * its rule, passed and dropped rates over the last interval, tokens and
 * the share of its cap in use, under the device's totals. A screen drawn
 * with ncurses on a terminal (q quits, a key picks the sort column);
 * plain blocks on anything else, as top -b; one JSON document a refresh
 * under -j. Reads as show does: no lock. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <curses.h>
#include <bpf/bpf.h>
#include "lib/clock.h"
#include "lib/grow.h"
#include "view/bucket_json.h"
#include "view/output.h"
#include "lib/snapshot.h"
#include "lib/state.h"
#include "lib/tables.h"
#include "cli/tbctl.h"
#include "lib/units.h"

enum top_col { COL_DROPPED, COL_PASSED, COL_SHARE, COL_TOKENS, COL_ADDRESS, COL_RULE };
static const char *const col_names[] = { "dropped", "passed", "share", "tokens", "address", "rule", NULL };
static const char col_keys[] = "dpstar";

#define TOP_INTERVAL_MAX_MS 3600000u

/* One address at one refresh. */
struct top_row {
	struct tb_addr addr;
	int rule;
	struct tb_counters c;
	__u64 tokens;
	/* over the last interval */
	double passed_bps, passed_pps, dropped_bps, dropped_pps, share;
};

struct frame {
	struct top_row *v;
	size_t n, cap;
	struct tb_stats st;
	__u64 now;
	struct ruleset *rs;
};

struct top_opts {
	struct cmd_target t;
	int col;                /* enum top_col: the sort column */
	__u32 rows;
	__u32 count;            /* refreshes before quitting; 0: until q */
	unsigned int interval_ms;
};

static int parse_top(const char *cmd, int argc, char **argv, void *opts)
{
	struct kw kws[] = { { "dev" }, { "sort" }, { "-n" }, { "interval" }, { "rows" }, { 0 } };
	struct top_opts *a = opts;
	const char *v;
	double secs;
	char *end;
	int rc = kw_parse(cmd, argc, argv, kws, NULL);

	if (rc || (rc = parse_dev(cmd, kw_get(kws, "dev"), &a->t)))
		return rc;
	a->interval_ms = 1000;
	a->col = COL_DROPPED;
	if ((v = kw_get(kws, "sort")) && (a->col = choose(cmd, "sort", v, col_names)) < 0)
		return EXIT_USAGE;
	if ((v = kw_get(kws, "-n")) && parse_count(cmd, "-n", v, 1, 1000000, &a->count))
		return EXIT_USAGE;
	if ((v = kw_get(kws, "rows")) && parse_count(cmd, "rows", v, 1, 100000, &a->rows))
		return EXIT_USAGE;
	if ((v = kw_get(kws, "interval"))) {
		secs = strtod(v, &end);
		if (end == v || *end || !isfinite(secs) || secs < 0.1 || secs * 1000 > TOP_INTERVAL_MAX_MS)
			return usage_error(cmd, "invalid interval \"%s\" (seconds, 0.1 to 3600)", v);
		a->interval_ms = (unsigned int)(secs * 1000 + 0.5);
	}
	return 0;
}

static int add_row(const struct tb_addr *a, const struct tb_bucket *b, int rule, void *ctx)
{
	struct frame *s = ctx;
	struct top_row *r;

	if (GROW(s->v, s->n, s->cap, 1024))
		return -ENOMEM;
	r = &s->v[s->n++];
	memset(r, 0, sizeof(*r));
	r->addr = *a;
	r->c = b->c;
	r->rule = rule;
	if (r->rule >= 0) {
		const struct tb_rule *rule = &s->rs->rules[r->rule];

		r->tokens = bucket_units(b, rule, s->now);
	}
	return 0;
}

static int by_addr(const void *x, const void *y)
{
	return memcmp(&((const struct top_row *)x)->addr, &((const struct top_row *)y)->addr, sizeof(struct tb_addr));
}

/* The device as it is now; rows sorted by address, for the next diff. */
static int take(const char *dev, struct frame *s)
{
	struct snapshot sn;
	struct tb_maps m;
	int err = state_open(dev, &m);

	if (err)
		return err;
	s->n = 0;
	err = snapshot_begin(&sn, &m, s->rs);
	if (!err)
		err = stats_sum(&m, &s->st);
	s->now = now_ns();
	if (!err)
		err = snapshot_foreach(&sn, add_row, s);
	snapshot_end(&sn);
	maps_close(&m);
	if (!err && s->n)
		qsort(s->v, s->n, sizeof(*s->v), by_addr);
	return err;
}

/* Counters that fell since *prev were reset, or their bucket evicted and
 * made anew: they count from 0 again. */
static void count_from(struct tb_counters *prev, const struct tb_counters *cur)
{
	if (cur->passed_bytes < prev->passed_bytes || cur->dropped_bytes < prev->dropped_bytes)
		memset(prev, 0, sizeof(*prev));
}

/* Rates of cur's rows against prev (an address new since counts from 0). */
static void rates(struct frame *cur, const struct frame *prev)
{
	double secs = (cur->now - prev->now) / 1e9;
	size_t j = 0;

	for (size_t i = 0; i < cur->n; i++) {
		struct top_row *r = &cur->v[i];
		struct tb_counters p = {};

		while (j < prev->n && by_addr(&prev->v[j], r) < 0)
			j++;
		if (j < prev->n && !by_addr(&prev->v[j], r))
			p = prev->v[j].c;
		count_from(&p, &r->c);
		r->passed_bps = (r->c.passed_bytes - p.passed_bytes) * 8 / secs;
		r->passed_pps = (r->c.passed_packets - p.passed_packets) / secs;
		r->dropped_bps = (r->c.dropped_bytes - p.dropped_bytes) * 8 / secs;
		r->dropped_pps = (r->c.dropped_packets - p.dropped_packets) / secs;
		r->share = 0;
		if (r->rule >= 0 && cur->rs->rules[r->rule].r.rate) {
			const struct tb_rule *rule = &cur->rs->rules[r->rule];
			double used = rule->cost == TB_COST_PACKETS ? r->passed_pps : r->passed_bps / 8;

			r->share = used / rule->r.rate;
		}
	}
}

static int sort_col;

static int by_column(const void *x, const void *y)
{
	const struct top_row *a = x, *b = y;
	double va = 0, vb = 0;

	switch (sort_col) {
	case COL_DROPPED: va = a->dropped_bps; vb = b->dropped_bps; break;
	case COL_PASSED: va = a->passed_bps; vb = b->passed_bps; break;
	case COL_SHARE: va = a->share; vb = b->share; break;
	case COL_TOKENS: va = a->tokens; vb = b->tokens; break;
	case COL_RULE: va = b->rule; vb = a->rule; break;      /* in rule table order */
	default: return by_addr(a, b);
	}
	return va < vb ? 1 : va > vb ? -1 : by_addr(a, b);
}

static void rate_text(double bps, char *buf, size_t len)
{
	format_rate((__u64)(bps / 8 + 0.5), 0, buf, len);
}

static void rule_text(const struct frame *s, int id, char *buf, size_t len)
{
	if (id < 0)
		snprintf(buf, len, "-");
	else
		rule_format(&s->rs->rules[id], buf, len);
}

struct totals {
	double passed_bps, passed_pps, dropped_bps, dropped_pps, banned_pps;
};

static struct totals totals_of(const struct frame *cur, const struct frame *prev)
{
	double secs = (cur->now - prev->now) / 1e9;
	struct tb_counters p = prev->st.c;

	count_from(&p, &cur->st.c);
	return (struct totals){
		(cur->st.c.passed_bytes - p.passed_bytes) * 8 / secs,
		(cur->st.c.passed_packets - p.passed_packets) / secs,
		(cur->st.c.dropped_bytes - p.dropped_bytes) * 8 / secs,
		(cur->st.c.dropped_packets - p.dropped_packets) / secs,
		cur->st.banned_packets >= prev->st.banned_packets ?
			(cur->st.banned_packets - prev->st.banned_packets) / secs : 0,
	};
}

/* One refresh as text: to a window (ncurses) or to stdout. */
static void print_text(const char *dev, const struct frame *s, const struct totals *t, size_t rows,
		       int (*line)(const char *fmt, ...))
{
	char a[PREFIX_TEXT_MAX], b[PREFIX_TEXT_MAX], c[64], d[64];

	rate_text(t->passed_bps, a, sizeof(a));
	rate_text(t->dropped_bps, b, sizeof(b));
	line("tbctl top dev %s: %zu addresses; passed %s %.0f pps; dropped %s %.0f pps (banned %.0f pps); sort %s\n",
	     dev, s->n, a, t->passed_pps, b, t->dropped_pps, t->banned_pps, col_names[sort_col]);
	line("%-40s %-20s %12s %10s %12s %10s %12s %6s\n", "ADDRESS", "RULE", "PASSED", "PPS", "DROPPED",
	     "PPS", "TOKENS", "SHARE");
	for (size_t i = 0; i < s->n && i < rows; i++) {
		const struct top_row *r = &s->v[i];

		ruleset_addr_format(s->rs, &r->addr, r->rule, a, sizeof(a));
		rule_text(s, r->rule, b, sizeof(b));
		rate_text(r->passed_bps, c, sizeof(c));
		rate_text(r->dropped_bps, d, sizeof(d));
		line("%-40s %-20s %12s %10.0f %12s %10.0f %12llu %5.0f%%\n", a, b, c, r->passed_pps, d,
		     r->dropped_pps, (unsigned long long)r->tokens, r->share * 100);
	}
}

static void print_json(const char *dev, const struct frame *s, const struct totals *t, size_t rows)
{
	struct json_object *o = json_object_new_object(), *tot = json_object_new_object();
	struct json_object *arr = json_object_new_array();
	char a[PREFIX_TEXT_MAX], b[PREFIX_TEXT_MAX];

	json_add_str(o, "dev", dev);
	json_add_str(o, "sort", col_names[sort_col]);
	json_add_u64(tot, "addresses", s->n);
	json_object_object_add(tot, "passed_bits_per_sec", json_object_new_double(t->passed_bps));
	json_object_object_add(tot, "passed_packets_per_sec", json_object_new_double(t->passed_pps));
	json_object_object_add(tot, "dropped_bits_per_sec", json_object_new_double(t->dropped_bps));
	json_object_object_add(tot, "dropped_packets_per_sec", json_object_new_double(t->dropped_pps));
	json_object_object_add(tot, "banned_packets_per_sec", json_object_new_double(t->banned_pps));
	json_object_object_add(o, "totals", tot);
	for (size_t i = 0; i < s->n && i < rows; i++) {
		const struct top_row *r = &s->v[i];
		struct json_object *e = json_object_new_object();

		ruleset_addr_format(s->rs, &r->addr, r->rule, a, sizeof(a));
		rule_text(s, r->rule, b, sizeof(b));
		json_add_str(e, "address", a);
		json_add_str(e, "rule", b);
		json_object_object_add(e, "passed_bits_per_sec", json_object_new_double(r->passed_bps));
		json_object_object_add(e, "passed_packets_per_sec", json_object_new_double(r->passed_pps));
		json_object_object_add(e, "dropped_bits_per_sec", json_object_new_double(r->dropped_bps));
		json_object_object_add(e, "dropped_packets_per_sec", json_object_new_double(r->dropped_pps));
		if (r->rule >= 0)
			bucket_json(e, &s->rs->m, &s->rs->rules[r->rule], &r->addr, r->tokens, s->now);
		else
			json_add_u64(e, "tokens_bytes", r->tokens);
		json_object_object_add(e, "share", json_object_new_double(r->share));
		json_object_array_add(arr, e);
	}
	json_object_object_add(o, "addresses", arr);
	out_json(o);
	fflush(stdout);
}

static int line_stdout(const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vprintf(fmt, ap);
	va_end(ap);
	return n;
}

static int line_curses(const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vw_printw(stdscr, fmt, ap);
	va_end(ap);
	return n;
}

/* Waits an interval; on a screen, a key may quit (q) or resort. 1 to quit. */
static int wait_keys(bool screen, unsigned int ms)
{
	__u64 until = now_ns() + ms * 1000000ULL;

	if (!screen) {
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

		nanosleep(&ts, NULL);
		return 0;
	}
	for (;;) {
		__u64 now = now_ns();
		const char *k;
		int ch;

		if (now >= until)
			return 0;
		timeout((int)((until - now) / 1000000) + 1);
		ch = getch();
		if (ch == 'q' || ch == 'Q')
			return 1;
		if (ch != ERR && ch && (k = strchr(col_keys, ch))) {
			sort_col = k - col_keys;
			return 0;
		}
	}
}

static int run_top(const void *opts)
{
	const struct top_opts *a = opts;
	struct frame snap[2] = {};
	bool screen = !out.json && isatty(STDOUT_FILENO) && isatty(STDIN_FILENO);
	unsigned int shown = 0;
	int err, cur = 0;

	if (device_lock("top", a->t.dev, false) || device_take_over("top", a->t.dev, TAKE_USABLE))
		return 1;
	snap[0].rs = calloc(1, sizeof(*snap[0].rs));
	snap[1].rs = calloc(1, sizeof(*snap[1].rs));
	err = snap[0].rs && snap[1].rs ? take(a->t.dev, &snap[0]) : -ENOMEM;
	if (err) {
		out_error("top dev %s: %s", a->t.dev, err == -ENOENT ? "not attached" : strerror(-err));
		free(snap[0].rs);
		free(snap[1].rs);
		return 1;
	}
	sort_col = a->col;
	if (screen) {
		initscr();
		cbreak();
		noecho();
		curs_set(0);
	}
	while (!a->count || shown < a->count) {
		struct frame *s = &snap[!cur], *prev = &snap[cur];
		struct totals t;
		size_t rows = a->rows ? a->rows : screen ? (size_t)(LINES > 3 ? LINES - 3 : 1) : 20;

		if (wait_keys(screen, a->interval_ms))
			break;
		err = take(a->t.dev, s);
		if (err)
			break;
		rates(s, prev);
		t = totals_of(s, prev);
		if (s->n)       /* qsort's pointer must not be NULL */
			qsort(s->v, s->n, sizeof(*s->v), by_column);
		if (out.json) {
			print_json(a->t.dev, s, &t, rows);
		} else if (screen) {
			erase();
			move(0, 0);
			print_text(a->t.dev, s, &t, rows, line_curses);
			refresh();
		} else {
			print_text(a->t.dev, s, &t, rows, line_stdout);
			putchar('\n');
			fflush(stdout);
		}
		/* Back in address order for the next diff. */
		if (s->n)
			qsort(s->v, s->n, sizeof(*s->v), by_addr);
		cur = !cur;
		shown++;
	}
	if (screen)
		endwin();
	for (int i = 0; i < 2; i++) {
		free(snap[i].v);
		free(snap[i].rs);
	}
	if (err) {
		out_error("top dev %s: %s", a->t.dev, err == -ENOENT ? "detached" : strerror(-err));
		return 1;
	}
	return 0;
}

const struct command cmd_top = {
	.name = "top",
	.usage = "dev DEV [sort dropped|passed|share|tokens|address|rule] [interval SECONDS] [rows N] [-n COUNT]",
	.opts_size = sizeof(struct top_opts),
	.parse = parse_top,
	.run = run_top,
	.flags = CMD_NO_BATCH,
	.caps = CAPS_READ,
};
