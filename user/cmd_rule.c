// SPDX-License-Identifier: GPL-2.0
/* rule set, rule del, rule list. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "output.h"
#include "state.h"
#include "tbctl.h"
#include "units.h"

/* The larger of 10 ms at the rate and 16 full-size Ethernet frames (or 16
 * packets): enough for a TCP window's worth of back-to-back segments. */
#define DEFAULT_BURST_FRAMES 16
#define FULL_FRAME 1514

static int parse_prefix(const char *cmd, const char *word, struct tb_prefix *p)
{
	char err[160];

	if (!word)
		return usage_error(cmd, "missing PREFIX (or \"default\")");
	switch (prefix_parse(word, p, err, sizeof(err))) {
	case PREFIX_HOST_BITS:
		out_warn("%s: %s", cmd, err);
		return 0;
	case PREFIX_BAD:
		return usage_error(cmd, "%s", err);
	}
	return 0;
}

static int parse_rule_set(int argc, char **argv, struct cmd_args *a)
{
	struct kw kws[] = { { "dev" }, { "rate" }, { "burst" }, { "cost" }, { "action" }, { "scope" }, { 0 } };
	const char *prefix = NULL, *v;
	struct rule_spec *s = &a->spec;
	char err[160];
	int rc, c;

	rc = kw_parse("rule set", argc, argv, kws, &prefix);
	if (rc || (rc = parse_dev("rule set", kw_get(kws, "dev"), a)) ||
	    (rc = parse_prefix("rule set", prefix, &a->prefix)))
		return rc;
	if ((v = kw_get(kws, "cost")) && (c = choose("rule set", "cost", v, cost_names)) < 0)
		return EXIT_USAGE;
	s->cost = v ? c : TB_COST_BYTES;
	if ((v = kw_get(kws, "action")) && (c = choose("rule set", "action", v, action_names)) < 0)
		return EXIT_USAGE;
	s->action = v ? c : TB_ACTION_DROP;
	if ((v = kw_get(kws, "scope")) && (c = choose("rule set", "scope", v, scope_names)) < 0)
		return EXIT_USAGE;
	s->scope = v ? c : TB_SCOPE_PER_ADDRESS;

	v = kw_get(kws, "rate");
	if (!v)
		return usage_error("rule set", "missing \"rate RATE\"");
	if (parse_rate(v, s->cost == TB_COST_PACKETS, &s->rate, err, sizeof(err)))
		return usage_error("rule set", "%s", err);
	v = kw_get(kws, "burst");
	if (v) {
		if (parse_size(v, s->cost == TB_COST_PACKETS, &s->burst, err, sizeof(err)))
			return usage_error("rule set", "%s", err);
	} else {
		__u64 floor = DEFAULT_BURST_FRAMES * (s->cost == TB_COST_PACKETS ? 1 : FULL_FRAME);

		s->burst = s->rate / 100 > floor ? s->rate / 100 : floor;
		if (s->burst > TB_BURST_MAX)
			s->burst = TB_BURST_MAX;
	}
	if (s->cost == TB_COST_BYTES && s->burst < TB_BURST_MIN_BYTES)
		return usage_error("rule set", "burst %s is below %llu bytes: a full-size packet could never pass",
				   v, TB_BURST_MIN_BYTES);
	return 0;
}

static int rule_error(const struct cmd_args *a, int err)
{
	const char *cmd = a->cmd->name;
	char p[64];

	prefix_format(&a->prefix, p, sizeof(p));
	if (err == -ENOENT)
		out_error("%s dev %s: no rule for %s", cmd, a->dev, p);
	else if (err == -ENOSPC)
		out_error("%s dev %s %s: rule table full (%d rules)", cmd, a->dev, p, TB_MAX_RULES - 1);
	else
		out_error("%s dev %s %s: update maps: %s", cmd, a->dev, p, strerror(-err));
	return 1;
}

static struct ruleset rs;

/* rule set and rule del: one change to the device's rules. */
static int run_rule_change(const struct cmd_args *a)
{
	struct tb_maps m;
	int err;

	if (open_attached(a->cmd->name, a->dev, &m))
		return 1;
	err = ruleset_load(&rs, &m);
	if (!err)
		err = a->cmd == &cmd_rule_set ? ruleset_set(&rs, &a->prefix, &a->spec) :
						 ruleset_del(&rs, &a->prefix);
	maps_close(&m);
	return err < 0 ? rule_error(a, err) : 0;
}

static int parse_rule_del(int argc, char **argv, struct cmd_args *a)
{
	struct kw kws[] = { { "dev" }, { 0 } };
	const char *prefix = NULL;
	int rc = kw_parse("rule del", argc, argv, kws, &prefix);

	if (rc || (rc = parse_dev("rule del", kw_get(kws, "dev"), a)))
		return rc;
	return parse_prefix("rule del", prefix, &a->prefix);
}

static int parse_rule_list(int argc, char **argv, struct cmd_args *a)
{
	return parse_dev_only("rule list", argc, argv, a, false);
}

static void rule_json(const struct tb_rule *r, struct json_object *arr)
{
	struct json_object *o = json_object_new_object();
	int pk = r->cost == TB_COST_PACKETS;
	struct tb_prefix p;
	char buf[64];

	rule_prefix(r, &p);
	prefix_format(&p, buf, sizeof(buf));
	json_add_str(o, "prefix", buf);
	json_add_u64(o, pk ? "rate_packets_per_sec" : "rate_bytes_per_sec", r->r.rate);
	json_add_u64(o, pk ? "burst_packets" : "burst_bytes", r->burst);
	json_add_str(o, "cost", cost_names[r->cost]);
	json_add_str(o, "action", action_names[r->action]);
	json_add_str(o, "scope", scope_names[r->scope]);
	json_object_array_add(arr, o);
}

/* Listing order: the default, then IPv4, then IPv6, by address and length. */
static int by_prefix(const void *x, const void *y)
{
	const struct tb_rule *a = &rs.rules[*(const int *)x], *b = &rs.rules[*(const int *)y];
	int c = a->family - b->family;

	if (!c)
		c = memcmp(a->addr, b->addr, sizeof(a->addr));
	return c ? c : a->prefixlen - b->prefixlen;
}

static int run_rule_list(const struct cmd_args *a)
{
	struct json_object *arr = json_object_new_array();
	static int order[TB_MAX_RULES];
	struct tb_maps m;
	int err, n = 0;

	if (open_attached("rule list", a->dev, &m))
		return 1;
	err = ruleset_load(&rs, &m);
	maps_close(&m);
	if (err) {
		out_error("rule list dev %s: read rules: %s", a->dev, strerror(-err));
		return 1;
	}
	for (int i = 0; i < TB_MAX_RULES; i++)
		if (rs.rules[i].in_use)
			order[n++] = i;
	qsort(order, n, sizeof(order[0]), by_prefix);
	for (int i = 0; i < n; i++) {
		const struct tb_rule *r = &rs.rules[order[i]];
		int pk = r->cost == TB_COST_PACKETS;
		char p[64], rate[32], burst[32];
		struct tb_prefix pf;

		if (out.json) {
			rule_json(r, arr);
			continue;
		}
		rule_prefix(r, &pf);
		prefix_format(&pf, p, sizeof(p));
		format_rate(r->r.rate, pk, rate, sizeof(rate));
		format_size(r->burst, pk, burst, sizeof(burst));
		printf("%s rate %s burst %s cost %s action %s scope %s\n", p, rate, burst,
		       cost_names[r->cost], action_names[r->action], scope_names[r->scope]);
	}
	if (out.json)
		out_json(arr);
	else
		json_object_put(arr);
	return 0;
}

const struct command cmd_rule_set = {
	"rule set", parse_rule_set, run_rule_change,
	"dev DEV {default|PREFIX} rate RATE [burst SIZE] [cost bytes|packets] "
	"[action drop|monitor] [scope per-address|shared]",
	true,
};
const struct command cmd_rule_del = {
	"rule del", parse_rule_del, run_rule_change, "dev DEV {default|PREFIX}", true,
};
const struct command cmd_rule_list = { "rule list", parse_rule_list, run_rule_list, "dev DEV", true };
