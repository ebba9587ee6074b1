// SPDX-License-Identifier: GPL-2.0
/* show (per-address buckets), stats (global counters), reset. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "lib/clock.h"
#include "logic/bucket.h"
#include "tb.skel.h"
#include "lib/heap.h"
#include "lib/ctlprog.h"
#include "lib/grow.h"
#include "view/bucket_json.h"
#include "view/counters.h"
#include "view/output.h"
#include "lib/snapshot.h"
#include "lib/state.h"
#include "lib/pending.h"
#include "lib/tables.h"
#include "cli/tbctl.h"
#include "lib/units.h"

enum sort_key { SORT_BYTES, SORT_PASSED, SORT_DROPPED };
enum reset_what { RESET_COUNTERS = 1, RESET_BUCKETS = 2 };

struct show_opts {
	struct cmd_target t;
	struct tb_addr addr;
	bool has_addr;
	__u32 top;
	int sort;
	bool has_sort;
};

struct reset_opts {
	struct cmd_target t;
	int what;               /* enum reset_what */
};

static struct ruleset rs;

/* One bucket: an address's own, or a shared rule's or a total's (shown
 * as its prefix). */
struct row {
	struct tb_addr addr;
	int rule;               /* rules[] slot, -1 when no rule matches any more */
	bool shared;
	struct tb_bucket b;
};

/* What show does with each row: print it at once (table order), keep the
 * top N in a heap, or keep them all to sort. */
struct show {
	const struct show_opts *a;
	const struct tb_maps *m;
	__u64 now;
	struct snapshot sn;
	bool stream;
	struct json_stream js;
	struct row *v;                  /* kept rows: a heap of a->top, or all */
	size_t n, cap;
};

static const char *const sort_names[] = { "bytes", "passed", "dropped", NULL };

static int sort_key;

static __u64 sort_value(const struct row *r)
{
	const struct tb_counters *c = &r->b.c;

	switch (sort_key) {
	case SORT_PASSED: return c->passed_bytes;
	case SORT_DROPPED: return c->dropped_bytes;
	}
	return c->passed_bytes + c->dropped_bytes + c->monitored_bytes;
}

/* Listing order: by the sort value, largest first, then by address. */
static int by_value_desc(const void *x, const void *y)
{
	__u64 a = sort_value(x), b = sort_value(y);

	return a < b ? 1 : a > b ? -1 : memcmp(&((const struct row *)x)->addr, &((const struct row *)y)->addr,
					       sizeof(struct tb_addr));
}

static void print_row(struct show *sh, const struct row *r);

static int emit(struct show *sh, const struct row *r)
{
	if (sh->stream) {
		print_row(sh, r);
		return 0;
	}
	if (sh->a->top) {
		heap_offer(sh->v, &sh->n, sh->a->top, sizeof(*r), r, by_value_desc);
		return 0;
	}
	if (GROW(sh->v, sh->n, sh->cap, 256))
		return -ENOMEM;
	sh->v[sh->n++] = *r;
	return 0;
}

static int emit_address(const struct tb_addr *a, const struct tb_bucket *b, int rule, void *ctx)
{
	struct row r = { .addr = *a, .rule = rule, .b = *b };

	return emit(ctx, &r);
}

static int emit_shared(struct show *sh, int id)
{
	struct row r = { .rule = id, .shared = true };
	__u32 slot = rs.rules[id].shared;
	struct tb_shared v;

	if (bpf_map_lookup_elem_flags(sh->m->shared, &slot, &v, BPF_F_LOCK))
		return -errno;
	r.b = v.b;
	return emit(sh, &r);
}

static int parse_show(const char *cmd, int argc, char **argv, void *opts)
{
	struct kw kws[] = { { "dev" }, { "addr" }, { "top" }, { "sort" }, { 0 } };
	struct show_opts *a = opts;
	const char *v;
	int rc = kw_parse(cmd, argc, argv, kws, NULL);

	if (rc || (rc = parse_dev(cmd, kw_get(kws, "dev"), &a->t)))
		return rc;
	if ((v = kw_get(kws, "addr"))) {
		if (addr_parse(v, &a->addr))
			return usage_error("show", "invalid address \"%s\"", v);
		a->has_addr = true;
	}
	if ((v = kw_get(kws, "top")) && parse_count("show", "top", v, 1, MAX_ADDRS_MAX, &a->top))
		return EXIT_USAGE;
	if ((v = kw_get(kws, "sort")) && (a->sort = choose("show", "sort", v, sort_names)) < 0)
		return EXIT_USAGE;
	a->has_sort = v != NULL;
	return 0;
}

static void print_row(struct show *sh, const struct row *r)
{
	const struct tb_rule *rule = r->rule >= 0 ? &rs.rules[r->rule] : NULL;
	const struct tb_counters *c = &r->b.c;
	int pk = rule && rule->cost == TB_COST_PACKETS;
	char addr[PREFIX_TEXT_MAX + 8], rname[PREFIX_TEXT_MAX] = "-", tok[32] = "-", buf[16];
	const char *scope = "-";
	struct tb_rule of;
	__u64 tokens = 0;

	ruleset_addr_format(&rs, &r->addr, r->rule, addr, sizeof(addr));
	if (rule) {
		rule_format(rule, rname, sizeof(rname));
		scope = scope_format(rule->scope, rule->group_len, buf, sizeof(buf));
		of = *rule;
		if (r->shared) {
			rule_of_shared(rule, &of);
			snprintf(addr, sizeof(addr), "%s%s", rname, rule->total.rate ? " total" : "");
			if (rule->total.rate)
				scope = "total";
		}
		tokens = bucket_units(&r->b, &of, sh->now);
		format_size(tokens, pk, tok, sizeof(tok));
	}
	if (out.json) {
		struct json_object *o = json_object_new_object();

		json_add_str(o, "address", r->shared ? rname : addr);
		json_add_str(o, "rule", rname);
		json_add_str(o, "scope", scope);
		if (rule)
			bucket_json(o, sh->m, rule, r->shared ? NULL : &r->addr, tokens, sh->now);
		if (rule && of.r.early)
			json_object_object_add(o, "long_rtt",
					       json_object_new_boolean(bucket_long_rtt(&r->b, sh->now)));
		if (rule && rule->peak.rate && !(r->shared && rule->total.rate))
			json_add_u64(o, pk ? "peak_tokens_packets" : "peak_tokens_bytes",
				     bucket_peak_units(&r->b, rule, sh->now));
		counters_json(o, c);
		out_json_item(&sh->js, o);
		return;
	}
	printf("%-40s %-22s %10s %12llu %14llu %12llu %14llu %12llu\n", addr, rname, tok,
	       (unsigned long long)c->passed_packets, (unsigned long long)c->passed_bytes,
	       (unsigned long long)c->dropped_packets, (unsigned long long)c->dropped_bytes,
	       (unsigned long long)c->monitored_packets);
}

/* One address: its bucket, or its shared rule's. 1 when it has neither
 * (reported unless quiet), or -errno. */
static int find_one(struct show *sh, struct row *r, bool quiet)
{
	const struct show_opts *a = sh->a;
	struct tb_shared v;
	char buf[64];
	__u32 slot;
	int err, id;

	memset(r, 0, sizeof(*r));
	err = snapshot_get(&sh->sn, &a->addr, &r->addr, &r->b, &r->rule);
	if (err != -ENOENT)
		return err;
	id = ruleset_rule_of(&rs, sh->m, &a->addr, NULL, sh->sn.cfg.gen);
	if (quiet && (id < 0 || rs.rules[id].scope != TB_SCOPE_SHARED))
		return 1;
	if (id < 0 || rs.rules[id].scope != TB_SCOPE_SHARED) {
		char p[PREFIX_TEXT_MAX] = "";

		addr_format(&a->addr, buf, sizeof(buf));
		if (id >= 0)
			rule_format(&rs.rules[id], p, sizeof(p));
		if (id < 0)
			out_error("show dev %s addr %s: no bucket: no rule matches it", a->t.dev, buf);
		else if (rs.rules[id].action == TB_ACTION_PASS)
			out_error("show dev %s addr %s: no bucket: its rule, %s action pass, charges none", a->t.dev,
				  buf, p);
		else
			out_error("show dev %s addr %s: no bucket (no traffic seen since it was last evicted "
				  "or reset)", a->t.dev, buf);
		return 1;
	}
	slot = rs.rules[id].shared;
	if (bpf_map_lookup_elem_flags(sh->m->shared, &slot, &v, BPF_F_LOCK))
		return -errno;
	memset(r, 0, sizeof(*r));
	r->rule = id;
	r->shared = true;
	r->b = v.b;
	return 0;
}

static int show_rows(struct show *sh)
{
	int err = snapshot_foreach(&sh->sn, emit_address, sh);

	for (int i = 0; i < TB_MAX_RULES && !err; i++)
		if (rule_charges_shared(&rs.rules[i]))
			err = emit_shared(sh, i);
	return err;
}

/* What bans dropped before any bucket saw it, under the table: what no
 * row counts (stats has it too, and the bans themselves ban list). */
static int print_banned(const struct tb_maps *m)
{
	struct tb_stats st;
	int err = stats_sum(m, &st);

	if (!err && (st.banned_packets || st.bans_made))
		printf("# banned: %llu packets, %llu bytes, not counted above (ban list names the bans)\n",
		       (unsigned long long)st.banned_packets, (unsigned long long)st.banned_bytes);
	return err;
}

/* Without top or sort, rows go out in table order as they are read, so
 * a million addresses cost no more memory than ten; top N keeps N. */
static int run_show(const void *opts)
{
	const struct show_opts *a = opts;
	struct show sh = { .a = a, .stream = !a->top && !a->has_sort };
	struct tb_maps m;
	struct row one;
	int err;

	if (open_attached_ro("show", a->t.dev, &m))
		return 1;
	sh.m = &m;
	err = snapshot_begin(&sh.sn, &m, &rs);
	sh.now = now_ns();
	sort_key = a->sort;
	if (!err && a->top && !(sh.v = calloc(a->top, sizeof(*sh.v))))
		err = -ENOMEM;
	/* An address: its buckets under rules with a match, then the one
	 * (or its shared rule's) under the rest; an error if it has none. */
	if (!err && a->has_addr) {
		sh.stream = false;
		err = snapshot_matched(&sh.sn, &a->addr, emit_address, &sh);
		if (!err)
			err = find_one(&sh, &one, sh.n > 0);
		if (err == 1 && sh.n > 0)
			err = 0;
		else if (!err)
			err = emit(&sh, &one);
	}
	if (!err) {
		if (out.json)
			out_json_begin(&sh.js);
		else
			printf("%-40s %-22s %10s %12s %14s %12s %14s %12s\n", "ADDRESS", "RULE", "TOKENS",
			       "PASSED_PKTS", "PASSED_BYTES", "DROPPED_PKTS", "DROPPED_BYTES", "MONITORED");
		if (!a->has_addr)
			err = show_rows(&sh);
		if (!sh.stream && sh.n) {       /* qsort's pointer must not be NULL */
			qsort(sh.v, sh.n, sizeof(*sh.v), by_value_desc);
			for (size_t i = 0; i < sh.n; i++)
				print_row(&sh, &sh.v[i]);
		}
		if (out.json)
			out_json_end(&sh.js);
		else if (!a->has_addr)
			err = print_banned(&m);
	}
	maps_close(&m);
	snapshot_end(&sh.sn);
	free(sh.v);
	if (err < 0)
		out_error("show dev %s: read rules and buckets: %s", a->t.dev, strerror(-err));
	return err != 0;
}

static int count_one(const struct tb_addr *k, const struct tb_bucket *b, void *ctx)
{
	(void)k;
	(void)b;
	(*(__u64 *)ctx)++;
	return 0;
}

static int run_stats(const void *opts)
{
	const struct cmd_target *a = opts;
	struct tb_stats s;
	struct tb_maps m;
	__u64 tracked = 0;
	int err;

	if (open_attached_ro("stats", a->dev, &m))
		return 1;
	err = stats_sum(&m, &s);
	if (!err)
		err = buckets_foreach(&m, count_one, &tracked);
	maps_close(&m);
	if (err) {
		out_error("stats dev %s: read counters: %s", a->dev, strerror(-err));
		return 1;
	}
	if (out.json) {
		struct json_object *o = json_object_new_object();

		json_add_str(o, "dev", a->dev);
		for (int i = 0; i < stats_field_count; i++)
			json_add_u64(o, stats_fields[i].name, counter_value(&s, &stats_fields[i]));
		json_add_u64(o, "addresses_tracked", tracked);
		out_json(o);
	} else {
		printf("%s:\n", a->dev);
		for (int i = 0; i < stats_field_count; i++)
			printf("  %-22s %llu\n", stats_fields[i].name,
			       (unsigned long long)counter_value(&s, &stats_fields[i]));
		printf("  %-22s %llu\n", "addresses_tracked", (unsigned long long)tracked);
	}
	return 0;
}

static int parse_reset(const char *cmd, int argc, char **argv, void *opts)
{
	static const char *const what[] = { "counters", "buckets", NULL };
	struct kw kws[] = { { "dev" }, { 0 } };
	struct reset_opts *a = opts;
	const char *word = NULL;
	int rc = kw_parse(cmd, argc, argv, kws, &word), w = 0;

	if (rc || (rc = parse_dev(cmd, kw_get(kws, "dev"), &a->t)))
		return rc;
	if (word && (w = choose(cmd, "what", word, what)) < 0)
		return EXIT_USAGE;
	a->what = !word || w == 0 ? RESET_COUNTERS : RESET_BUCKETS;
	return 0;
}

/* Counters are reset by the datapath's own reset program, in one run, so
 * a kill leaves all of it or none: it writes the new reset epoch, which
 * makes what the CPUs hold in their caches stale and leaves it to them
 * (tb_config.reset_epoch); zeroes the per-address and shared buckets'
 * counters under the datapath's locks; and takes what every CPU counted
 * from one CPU's global counters (tb_abi.h, tb_reset_req). No charge in
 * flight is lost or kept. */
static int reset_counters(const char *dev, const struct tb_maps *m, struct tb_config *cfg)
{
	struct tb_reset_req req = { .stats_cpus = libbpf_num_possible_cpus() };
	struct tb *skel;
	int err;

	if ((int)req.stats_cpus < 0)
		return (int)req.stats_cpus;
	err = pending_epoch_next(m, cfg, &req.reset_epoch);
	if (err)
		return err;
	skel = ctlprog_open(dev, cfg->max_addrs, "tb_reset_counters");
	if (!skel)
		return -errno;
	err = ctlprog_run(skel->progs.tb_reset_counters, &req, sizeof(req), false);
	tb__destroy(skel);
	if (err)
		return err;
	cfg->reset_epoch = req.reset_epoch;
	return 0;
}

/* Shared buckets and totals refilled: a rewrite from user space, which a
 * charge between its read and its write is lost to, as the bucket is
 * forgotten anyway. */
static int refill_shared(const struct tb_maps *m)
{
	for (int id = 0; id < TB_MAX_RULES; id++) {
		__u32 slot = rs.rules[id].shared;
		struct tb_shared sh;
		struct tb_rule of;

		if (!rule_charges_shared(&rs.rules[id]))
			continue;
		if (bpf_map_lookup_elem_flags(m->shared, &slot, &sh, BPF_F_LOCK))
			return -errno;
		rule_of_shared(&rs.rules[id], &of);
		tb_fill(&sh.b.lvl, 0, &of.r);
		if (bpf_map_update_elem(m->shared, &slot, &sh, BPF_F_LOCK))
			return -errno;
	}
	return 0;
}

static int run_reset(const void *opts)
{
	const struct reset_opts *a = opts;
	struct tb_maps m;
	int err;

	if (open_attached("reset", a->t.dev, &m))
		return 1;
	err = ruleset_load(&rs, &m);
	if (!err && a->what == RESET_BUCKETS) {
		/* First: what the CPUs count from here on is the new
		 * buckets'. */
		err = pending_restart(&m, &rs.cfg);
		/* Buckets are forgotten, and what evicted ones owed with
		 * them: every address starts full. */
		if (!err)
			err = buckets_clear(&m);
		if (!err)
			err = owed_zero(&m);
		/* CPUs keep copies of the forgotten buckets' bounds:
		 * made stale. */
		if (!err)
			err = ruleset_invalidate(&rs);
		if (!err)
			err = refill_shared(&m);
	}
	if (!err && a->what == RESET_COUNTERS)
		err = reset_counters(a->t.dev, &m, &rs.cfg);
	maps_close(&m);
	if (err) {
		out_error("reset dev %s: %s", a->t.dev, strerror(-err));
		return 1;
	}
	return 0;
}

const struct command cmd_show = {
	.name = "show",
	.usage = "dev DEV [addr ADDR] [top N] [sort bytes|passed|dropped]",
	.opts_size = sizeof(struct show_opts),
	.parse = parse_show,
	.run = run_show,
	.flags = CMD_ATTACHED,
	.caps = CAPS_READ,
};
const struct command cmd_stats = {
	.name = "stats",
	.usage = "dev DEV",
	.opts_size = sizeof(struct cmd_target),
	.parse = parse_dev_only,
	.run = run_stats,
	.flags = CMD_ATTACHED,
	.caps = CAPS_READ,
};
const struct command cmd_reset = {
	.name = "reset",
	.usage = "dev DEV [counters|buckets]",
	.opts_size = sizeof(struct reset_opts),
	.parse = parse_reset,
	.run = run_reset,
	.flags = CMD_ATTACHED | CMD_FINAL,
	.caps = CAPS_LOAD,
};
