// SPDX-License-Identifier: GPL-2.0
/* rule set, rule del, rule list. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "logic/group.h"
#include "view/output.h"
#include "lib/dscp_text.h"
#include "lib/match_text.h"
#include "lib/qdisc.h"
#include "lib/state.h"
#include "fleet/store.h"
#include "cli/tbctl.h"
#include "lib/units.h"
#include "view/rule_text.h"

/* The default burst: the larger of DEFAULT_BURST_MS at the rate and 16
 * full-size Ethernet frames (or 16 packets). A TCP loss that fast
 * retransmit cannot repair waits out a timeout of at least 200 ms
 * (TCP_RTO_MIN), doubled when the retransmission is lost too; a bucket
 * holding two such waits' worth of rate saves their tokens, so the flow
 * still gets its rate over the next seconds (docs/tcp.md measures it). */
#define DEFAULT_BURST_MS 1000
#define DEFAULT_BURST_FRAMES 16
#define FULL_FRAME 1514
/* A peak's default burst in bytes at least: the largest GSO or GRO
 * aggregate a tc hook charges whole (64 KiB of IP packet, its frame). */
#define PEAK_BURST_MIN_BYTES (65536 + 14)
/* Action shape: how far ahead a packet may be scheduled before it is
 * dropped instead; it bounds the delay fq adds. */
#define DEFAULT_HORIZON_NS 100000000ULL
#define HORIZON_MAX_NS 10000000000ULL

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

/* scope per-address|shared|per-/LEN. A /LEN lies within the prefix, so
 * that the prefix's rule is every group member's; one as long as an
 * address is per-address. */
static int parse_scope(const char *v, const struct tb_prefix *p, struct rule_spec *s)
{
	int width = p->family == 4 ? 32 : 128, max = p->family == 4 ? 32 : TB_GROUP_V6_MAX;
	unsigned long len;
	char *end;

	if (strncmp(v, "per-/", 5)) {
		int c = choose("rule set", "scope", v, scope_names);

		if (c < 0)
			return EXIT_USAGE;
		s->scope = c;
		return 0;
	}
	if (!p->family)
		return usage_error("rule set", "scope %s on default would span both families: set it on "
				   "0.0.0.0/0 and on ::/0", v);
	errno = 0;
	len = strtoul(v + 5, &end, 10);
	if (!isdigit((unsigned char)v[5]) || *end || errno || len > (unsigned long)width)
		return usage_error("rule set", "invalid scope \"%s\" (per-/LEN with LEN 0..%d for IPv%d)", v, width,
				   p->family);
	if (len < p->len)
		return usage_error("rule set", "scope %s is shorter than the prefix /%u: every group must lie "
				   "within the rule's prefix", v, p->len);
	if (len == (unsigned long)width) {
		s->scope = TB_SCOPE_PER_ADDRESS;
		return 0;
	}
	if (len > (unsigned long)max)
		return usage_error("rule set", "scope %s: IPv6 groups are at most /%d (or per-address, /128)", v,
				   TB_GROUP_V6_MAX);
	s->scope = TB_SCOPE_GROUP;
	s->group_len = len;
	return 0;
}

/* A burst given as word v, or else the default for rate. */
static int parse_burst(const char *v, const char *what, const struct rule_spec *s, __u64 rate, __u64 *burst)
{
	char err[160];

	if (v) {
		if (parse_size(v, s->cost == TB_COST_PACKETS, burst, err, sizeof(err)))
			return usage_error("rule set", "%s", err);
	} else {
		__u64 floor = DEFAULT_BURST_FRAMES * (s->cost == TB_COST_PACKETS ? 1 : FULL_FRAME);
		__u64 tcp = rate * DEFAULT_BURST_MS / 1000;

		*burst = tcp > floor ? tcp : floor;
		if (*burst > TB_BURST_MAX)
			*burst = TB_BURST_MAX;
	}
	if (s->cost == TB_COST_BYTES && *burst < TB_BURST_MIN_BYTES)
		return usage_error("rule set", "%s %s is below %llu bytes: a full-size packet could never pass",
				   what, v, TB_BURST_MIN_BYTES);
	return 0;
}

/* total RATE [total-burst SIZE]: one more bucket over all of the rule's
 * addresses or groups, which a shared rule already is. */
static int parse_total(const struct kw *kws, struct rule_spec *s)
{
	const char *v = kw_get(kws, "total"), *b = kw_get(kws, "total-burst");
	char err[160];

	if (!v)
		return b ? usage_error("rule set", "total-burst needs \"total RATE\"") : 0;
	if (s->scope == TB_SCOPE_SHARED)
		return usage_error("rule set", "total on scope shared: the shared bucket already is the "
				   "rule's total (set its rate instead)");
	if (parse_rate(v, s->cost == TB_COST_PACKETS, &s->total_rate, err, sizeof(err)))
		return usage_error("rule set", "total: %s", err);
	if (s->total_rate < s->rate)
		return usage_error("rule set", "total %s is below rate %s: the total bounds the addresses "
				   "together, each of which the rate bounds", v, kw_get(kws, "rate"));
	return parse_burst(b, "total-burst", s, s->total_rate, &s->total_burst);
}

/* action remark DSCP peak RATE [peak-burst SIZE]: RFC 2698's two-rate
 * marker. Its default burst holds at least the rule's, and in bytes
 * the largest aggregate a tc hook sees, which the peak charges whole. */
static int parse_peak(const struct kw *kws, struct rule_spec *s)
{
	const char *v = kw_get(kws, "peak"), *b = kw_get(kws, "peak-burst");
	char err[160];
	int rc;

	if (!v)
		return b ? usage_error("rule set", "peak-burst needs \"peak RATE\"") : 0;
	if (s->action != TB_ACTION_REMARK)
		return usage_error("rule set", "peak applies to action remark only: over the peak a packet is "
				   "dropped, between the two rates remarked");
	if (parse_rate(v, s->cost == TB_COST_PACKETS, &s->peak_rate, err, sizeof(err)))
		return usage_error("rule set", "peak: %s", err);
	if (s->peak_rate < s->rate)
		return usage_error("rule set", "peak %s is below rate %s: the peak rate bounds what passes, "
				   "remarked or not", v, kw_get(kws, "rate"));
	if ((rc = parse_burst(b, "peak-burst", s, s->peak_rate, &s->peak_burst)) || b)
		return rc;
	if (s->peak_burst < s->burst)
		s->peak_burst = s->burst;
	if (s->cost == TB_COST_BYTES && s->peak_burst < PEAK_BURST_MIN_BYTES)
		s->peak_burst = PEAK_BURST_MIN_BYTES;
	return 0;
}

/* fleet on [share RATE [share-burst SIZE]]: a fleet-wide key as well,
 * of which this host may admit share on its own. The store does its
 * arithmetic in Lua's doubles, exact to 2^53: rate and burst must stay
 * within what its micro-unit sums hold (user/store.c). */
static int parse_fleet(const struct kw *kws, struct rule_spec *s)
{
	const char *v = kw_get(kws, "fleet"), *sh = kw_get(kws, "share"), *b = kw_get(kws, "share-burst");
	char err[160];
	int c;

	if (v && (c = choose("rule set", "fleet", v, on_off_names)) < 0)
		return EXIT_USAGE;
	s->fleet = v ? c : 0;
	if (!s->fleet)
		return sh || b ? usage_error("rule set", "share and share-burst need \"fleet on\"") : 0;
	if (s->total_rate)
		return usage_error("rule set", "fleet on with a total: make the total a rule of scope shared "
				   "with fleet on instead");
	if (s->rate > FLEET_RATE_MAX || s->burst > FLEET_BURST_MAX)
		return usage_error("rule set", "fleet on: rate and burst are at most %llu units/s and %llu "
				   "units (the store's exact range)", FLEET_RATE_MAX, FLEET_BURST_MAX);
	if (!sh)
		return b ? usage_error("rule set", "share-burst needs \"share RATE\"") : 0;
	if (parse_rate(sh, s->cost == TB_COST_PACKETS, &s->share_rate, err, sizeof(err)))
		return usage_error("rule set", "share: %s", err);
	if (s->share_rate > s->rate)
		return usage_error("rule set", "share %s is above rate %s: a host's share is part of the "
				   "key's rate", sh, kw_get(kws, "rate"));
	if (!b) {
		/* The burst in proportion, at least a full frame. */
		__u64 floor = s->cost == TB_COST_PACKETS ? 1 : FULL_FRAME;

		s->share_burst = (__u64)((unsigned __int128)s->burst * s->share_rate / s->rate);
		if (s->share_burst < floor)
			s->share_burst = floor;
		return 0;
	}
	return parse_burst(b, "share-burst", s, s->share_rate, &s->share_burst);
}

/* proto, dport, sport, flags, type: with the prefix, what names the
 * rule. */
static int parse_match(const char *cmd, const struct kw *kws, struct tb_prefix *p)
{
	struct match_words w = { kw_get(kws, "proto"), kw_get(kws, "dport"), kw_get(kws, "sport"),
				 kw_get(kws, "flags"), kw_get(kws, "type") };
	char err[200];

	if (match_parse(&w, p, err, sizeof(err)))
		return usage_error(cmd, "%s", err);
	return 0;
}

/* ban DURATION [ban-after N]: a key refused N times within a second is
 * banned for DURATION; at most RULE_BAN_MAX, whose ms fit the rule's 32
 * bits (a longer ban is a manual one's: ban add). */
#define RULE_BAN_MAX_NS (30ULL * 86400 * 1000000000ULL)

static int parse_ban(const struct kw *kws, struct rule_spec *s)
{
	const char *v = kw_get(kws, "ban"), *after = kw_get(kws, "ban-after");
	char err[160];
	__u64 ns;
	__u32 n = 1;
	int rc;

	if (!v)
		return after ? usage_error("rule set", "ban-after needs \"ban DURATION\"") : 0;
	if (s->action != TB_ACTION_DROP)
		return usage_error("rule set", "ban applies to action drop only: a ban drops what its rule refuses");
	if (parse_duration(v, "ban", RULE_BAN_MAX_NS, &ns, err, sizeof(err)))
		return usage_error("rule set", "%s (at most 30d; longer, or with no end: tbctl ban add)", err);
	if (after && (rc = parse_count("rule set", "ban-after", after, 1, UINT16_MAX, &n)))
		return rc;
	s->ban_ms = ns / 1000000;
	s->ban_after = n;
	return 0;
}

static bool names_rule(const char *kw)
{
	return !strcmp(kw, "dev") || !strcmp(kw, "proto") || !strcmp(kw, "dport") || !strcmp(kw, "sport") ||
	       !strcmp(kw, "flags") || !strcmp(kw, "type");
}

/* "action remark DSCP": the one action that takes a word of its own,
 * which is taken out of the words here for kw_parse to read the rest. */
static int take_remark_dscp(int *argc, char **argv, struct rule_spec *s)
{
	char err[160];

	for (int i = 0; i + 1 < *argc; i++) {
		if (strcmp(argv[i], "action") || strcmp(argv[i + 1], "remark"))
			continue;
		if (i + 2 >= *argc)
			return usage_error("rule set", "action remark needs a DSCP (a name such as af11, or 0..63)");
		if (dscp_parse(argv[i + 2], &s->dscp, err, sizeof(err)))
			return usage_error("rule set", "action remark: %s", err);
		memmove(&argv[i + 2], &argv[i + 3], (*argc - i - 3) * sizeof(*argv));
		(*argc)--;
		return 0;
	}
	return 0;
}

static int parse_rule_set(const char *cmd, int argc, char **argv, void *opts)
{
	struct rule_set_opts *a = opts;
	struct kw kws[] = { { "dev" }, { "proto" }, { "dport" }, { "sport" }, { "flags" }, { "type" }, { "rate" },
			    { "burst" }, { "cost" },
			    { "action" }, { "scope" }, { "early" }, { "horizon" }, { "total" }, { "total-burst" },
			    { "fleet" }, { "share" }, { "share-burst" }, { "peak" }, { "peak-burst" }, { "ban" }, { "ban-after" }, { 0 } };
	const char *prefix = NULL, *v;
	struct rule_spec *s = &a->spec;
	char err[160];
	int rc, c;

	rc = take_remark_dscp(&argc, argv, s);
	if (!rc)
		rc = kw_parse(cmd, argc, argv, kws, &prefix);
	if (rc || (rc = parse_dev(cmd, kw_get(kws, "dev"), &a->t)) || (rc = parse_prefix(cmd, prefix, &a->t.prefix)) ||
	    (rc = parse_match(cmd, kws, &a->t.prefix)))
		return rc;
	if ((v = kw_get(kws, "cost")) && (c = choose("rule set", "cost", v, cost_names)) < 0)
		return EXIT_USAGE;
	s->cost = v ? c : TB_COST_BYTES;
	if ((v = kw_get(kws, "action")) && (c = choose("rule set", "action", v, action_names)) < 0)
		return EXIT_USAGE;
	s->action = v ? c : TB_ACTION_DROP;
	if (s->action == TB_ACTION_PASS) {
		/* An allow-list entry: nothing to charge, so nothing to say how. */
		for (const struct kw *k = kws; k->name; k++)
			if (k->value && strcmp(k->name, "action") && !names_rule(k->name))
				return usage_error("rule set", "action pass takes no \"%s\": it passes uncharged",
						   k->name);
		*s = (struct rule_spec){ .cost = TB_COST_BYTES, .action = TB_ACTION_PASS };
		return 0;
	}
	if ((v = kw_get(kws, "scope")) && (rc = parse_scope(v, &a->t.prefix, s)))
		return rc;
	if ((v = kw_get(kws, "early")) && (c = choose("rule set", "early", v, on_off_names)) < 0)
		return EXIT_USAGE;
	s->early = v ? c : 1;
	if (v && s->action != TB_ACTION_DROP && s->action != TB_ACTION_MARK)
		return usage_error("rule set", "early applies to action drop and mark only");
	v = kw_get(kws, "horizon");
	if (v && s->action != TB_ACTION_SHAPE)
		return usage_error("rule set", "horizon applies to action shape only");
	s->horizon_ns = s->action == TB_ACTION_SHAPE ? DEFAULT_HORIZON_NS : 0;
	if (v && parse_time(v, "horizon", HORIZON_MAX_NS, &s->horizon_ns, err, sizeof(err)))
		return usage_error("rule set", "%s", err);

	v = kw_get(kws, "rate");
	if (!v)
		return usage_error("rule set", "missing \"rate RATE\"");
	if (parse_rate(v, s->cost == TB_COST_PACKETS, &s->rate, err, sizeof(err)))
		return usage_error("rule set", "%s", err);
	if ((rc = parse_burst(kw_get(kws, "burst"), "burst", s, s->rate, &s->burst)) || (rc = parse_total(kws, s)) ||
	    (rc = parse_peak(kws, s)) || (rc = parse_ban(kws, s)))
		return rc;
	return parse_fleet(kws, s);
}

static int rule_error(const char *cmd, const struct cmd_target *t, int err)
{
	char p[PREFIX_TEXT_MAX];

	prefix_format(&t->prefix, p, sizeof(p));
	if (err == -ENOENT)
		out_error("%s dev %s: no rule for %s", cmd, t->dev, p);
	else if (err == -ENOSPC && t->prefix.m.proto)
		out_error("%s dev %s %s: rule table full (%d rules, or rules with a match on %d prefixes)", cmd,
			  t->dev, p, TB_MAX_RULES - 1, TB_MAX_NODES - 1);
	else if (err == -ENOSPC)
		out_error("%s dev %s %s: rule table full (%d rules; one slot stays free so that any rule "
			  "can still be changed)", cmd, t->dev, p, TB_MAX_RULES - 1);
	else if (err == -E2BIG)
		out_error("%s dev %s %s: more than %d rules with a match would apply to one prefix (its own, "
			  "those of the prefixes around it and the default's)", cmd, t->dev, p, TB_NODE_ENTRIES);
	else
		out_error("%s dev %s %s: update maps: %s", cmd, t->dev, p, strerror(-err));
	return 1;
}

static struct ruleset rs;

/* Action shape only delays: without fq honouring the departure times on
 * the device's egress, it would police nothing. Non-zero (said) when a
 * shape rule must be refused. */
static int shape_refused(const void *opts, const struct tb_config *cfg)
{
	const struct rule_set_opts *a = opts;
	int fq;

	if (a->spec.action != TB_ACTION_SHAPE)
		return 0;
	if (cfg->mode != TB_MODE_TC_EGRESS) {
		out_error("rule set dev %s: action shape needs mode tc-egress (attached as %s)", a->t.dev,
			  mode_names[cfg->mode]);
		return 1;
	}
	fq = qdisc_fq_paces(cfg->ifindex);
	if (fq < 0)
		out_error("rule set dev %s: read qdiscs: %s", a->t.dev, strerror(-fq));
	else if (!fq)
		out_error("rule set dev %s: action shape needs fq as the root qdisc "
			  "(tbctl attach dev %s mode tc-egress qdisc fq)", a->t.dev, a->t.dev);
	return fq != 1;
}

/* rule set and rule del: one change to the device's rules; spec NULL
 * for a del. */
static int rule_change(const char *cmd, const struct cmd_target *t, const struct rule_set_opts *set)
{
	struct tb_maps m;
	int err;

	if (open_attached(cmd, t->dev, &m))
		return 1;
	err = ruleset_load(&rs, &m);
	if (!err && set && shape_refused(set, &rs.cfg)) {
		maps_close(&m);
		return 1;
	}
	if (!err)
		err = set ? ruleset_set(&rs, &t->prefix, &set->spec) : ruleset_del(&rs, &t->prefix);
	maps_close(&m);
	return err < 0 ? rule_error(cmd, t, err) : 0;
}

static int run_rule_set(const void *opts)
{
	const struct rule_set_opts *a = opts;

	return rule_change("rule set", &a->t, a);
}

static int run_rule_del(const void *opts)
{
	return rule_change("rule del", opts, NULL);
}

static int parse_rule_del(const char *cmd, int argc, char **argv, void *opts)
{
	struct kw kws[] = { { "dev" }, { "proto" }, { "dport" }, { "sport" }, { "flags" }, { "type" }, { 0 } };
	struct cmd_target *t = opts;
	const char *prefix = NULL;
	int rc = kw_parse(cmd, argc, argv, kws, &prefix);

	if (rc || (rc = parse_dev(cmd, kw_get(kws, "dev"), t)) || (rc = parse_prefix(cmd, prefix, &t->prefix)))
		return rc;
	return parse_match(cmd, kws, &t->prefix);
}

/* Listing order: the default, then IPv4, then IPv6, by address and length. */
static int by_prefix(const void *x, const void *y)
{
	const struct tb_rule *a = &rs.rules[*(const int *)x], *b = &rs.rules[*(const int *)y];
	int c = a->family - b->family;

	if (!c)
		c = memcmp(a->addr, b->addr, sizeof(a->addr));
	if (!c)
		c = a->prefixlen - b->prefixlen;
	return c ? c : memcmp(&a->match, &b->match, sizeof(a->match));
}

static int run_rule_list(const void *opts)
{
	const struct cmd_target *a = opts;
	static int order[TB_MAX_RULES];
	struct json_object *arr;
	struct tb_maps m;
	int err, n = 0;

	if (open_attached_ro("rule list", a->dev, &m))
		return 1;
	err = ruleset_read(&rs, &m);
	maps_close(&m);
	if (err) {
		out_error("rule list dev %s: read rules: %s", a->dev, strerror(-err));
		return 1;
	}
	/* Built only for -j: text goes out as it is made. */
	arr = out.json ? json_object_new_array() : NULL;
	for (int i = 0; i < TB_MAX_RULES; i++)
		if (rs.rules[i].in_use)
			order[n++] = i;
	qsort(order, n, sizeof(order[0]), by_prefix);
	for (int i = 0; i < n; i++) {
		const struct tb_rule *r = &rs.rules[order[i]];
		char p[PREFIX_TEXT_MAX];

		if (out.json) {
			rule_json(r, arr);
			continue;
		}
		rule_format(r, p, sizeof(p));
		printf("%s ", p);
		rule_words(stdout, r, false);
		putchar('\n');
	}
	if (out.json)
		out_json(arr);
	return 0;
}

const struct command cmd_rule_set = {
	.name = "rule set",
	.usage = "dev DEV {default|PREFIX} [proto PROTO [dport PORT[-PORT]] [sport PORT[-PORT]] [flags FLAGS[/FLAGS]] "
		 "[type TYPE]] {rate RATE [burst SIZE] [cost bytes|packets] "
		 "[action drop|mark|monitor|shape|remark DSCP] [scope per-address|shared|per-/LEN] [early on|off] [horizon TIME] "
		 "[peak RATE [peak-burst SIZE]] [total RATE [total-burst SIZE]] [fleet on|off [share RATE [share-burst SIZE]]] "
		 "[ban DURATION [ban-after N]] "
		 "| action pass}",
	.opts_size = sizeof(struct rule_set_opts),
	.parse = parse_rule_set,
	.run = run_rule_set,
	.check = shape_refused,
	.flags = CMD_ATTACHED | CMD_RULE_SET | CMD_SAVED,
	.caps = CAPS_READ,
};
const struct command cmd_rule_del = {
	.name = "rule del",
	.usage = "dev DEV {default|PREFIX} [proto PROTO [dport PORT[-PORT]] [sport PORT[-PORT]] [flags FLAGS[/FLAGS]] "
		 "[type TYPE]]",
	.opts_size = sizeof(struct cmd_target),
	.parse = parse_rule_del,
	.run = run_rule_del,
	.flags = CMD_ATTACHED | CMD_RULE_DEL,
	.caps = CAPS_READ,
};
const struct command cmd_rule_list = {
	.name = "rule list",
	.usage = "dev DEV",
	.opts_size = sizeof(struct cmd_target),
	.parse = parse_dev_only,
	.run = run_rule_list,
	.flags = CMD_ATTACHED,
	.caps = CAPS_READ,
};
