// SPDX-License-Identifier: GPL-2.0
/* save (a device's attach options and rules, as commands) and apply (make
 * a device's rules exactly those of such a file). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "view/output.h"
#include "lib/bans.h"
#include "lib/clock.h"
#include "lib/state.h"
#include "cli/tbctl.h"
#include "lib/units.h"
#include "view/rule_text.h"
#include "view/ban_text.h"

static struct ruleset rs;

static int run_save(const void *opts)
{
	const struct cmd_target *a = opts;
	struct tb_maps m;
	int err;

	if (open_attached_ro("save", a->dev, &m))
		return 1;
	struct ban *bans = NULL;
	size_t nbans = 0;
	__u64 now = now_ns();

	err = ruleset_read(&rs, &m);
	if (!err && (err = bans_read(&m, now, &bans, &nbans)))
		out_error("save dev %s: read the ban list: %s", a->dev, strerror(-err));
	else if (err)
		out_error("save dev %s: read rules: %s", a->dev, strerror(-err));
	maps_close(&m);
	if (err)
		return 1;
	printf("# tbctl save dev %s: its attach options and rules, for tbctl -batch or tbctl apply\n", a->dev);
	printf("attach dev %s mode %s key %s max-addrs %u%s\n", a->dev, mode_names[rs.cfg.mode],
	       key_names[rs.cfg.key], rs.cfg.max_addrs, rs.cfg.own_fq ? " qdisc fq" : "");
	printf("events set dev %s rate %u interval %ums\n", a->dev, rs.cfg.event_rate, rs.cfg.event_interval_ms);
	if (ruleset_default(&rs) >= 0)
		rule_save(stdout, a->dev, &rs.rules[ruleset_default(&rs)]);
	for (int i = 0; i < TB_MAX_RULES; i++)
		if (rs.rules[i].in_use && i != ruleset_default(&rs))
			rule_save(stdout, a->dev, &rs.rules[i]);
	/* The bans rules made are their rules' to make again. */
	ban_save(stdout, a->dev, bans, nbans, now);
	free(bans);
	return 0;
}

struct apply_opts {
	struct cmd_target t;
	const char *file;
};

static int parse_apply(const char *cmd, int argc, char **argv, void *opts)
{
	struct kw kws[] = { { "dev" }, { 0 } };
	struct apply_opts *a = opts;
	const char *file = NULL;
	int rc = kw_parse(cmd, argc, argv, kws, &file);

	if (rc || (rc = parse_dev(cmd, kw_get(kws, "dev"), &a->t)))
		return rc;
	if (!file)
		return usage_error(cmd, "missing FILE (as tbctl save writes it; - for stdin)");
	a->file = file;
	return 0;
}

/* The target: every "rule set" line for dev, each prefix once, its
 * events set line, and its ban add lines (added to the manual list, as
 * ban add does: ban apply is what replaces the list); an attach line for
 * dev must match how it is attached. Anything else is an error naming
 * its line. */
struct target {
	const char *dev;
	struct cmd_line events; /* its opts NULL: no events set line */
	struct banfile_entry *bans;
	size_t nbans;
	struct tb_prefix p[TB_MAX_RULES];
	struct rule_spec s[TB_MAX_RULES];
	int line[TB_MAX_RULES];
	int n;
};

/* A rule set line's rule, unless the file sets it twice or too many. */
static int target_add(struct target *t, const struct rule_set_opts *r, int lineno)
{
	char p[PREFIX_TEXT_MAX];

	for (int i = 0; i < t->n; i++)
		if (prefix_equal(&t->p[i], &r->t.prefix)) {
			prefix_format(&r->t.prefix, p, sizeof(p));
			out_error("rule set dev %s: %s is set twice (line %d)", t->dev, p, t->line[i]);
			return EXIT_USAGE;
		}
	if (t->n == TB_MAX_RULES - 1) {
		out_error("rule set dev %s: more than %d rules", t->dev, TB_MAX_RULES - 1);
		return 1;
	}
	t->p[t->n] = r->t.prefix;
	t->s[t->n] = r->spec;
	t->line[t->n++] = lineno;
	return 0;
}

static int target_line(struct cmd_line *l, int lineno, void *ctx)
{
	const struct cmd_target *lt = line_target(l);
	struct target *t = ctx;
	int err = 0;

	if (!(l->cmd->flags & CMD_SAVED)) {
		out_error("apply takes rule set, events set and ban add lines (and the device's attach line), not %s",
			  l->cmd->name);
		err = EXIT_USAGE;
	} else if (strcmp(lt->dev, t->dev)) {
		out_error("%s dev %s: this file applies to dev %s", l->cmd->name, lt->dev, t->dev);
		err = EXIT_USAGE;
	} else if (l->cmd->check && l->cmd->check(l->opts, &rs.cfg)) {
		err = 1;
	} else if (l->cmd->flags & CMD_RULE_SET) {
		err = target_add(t, l->opts, lineno);
	} else if (l->cmd == &cmd_events_set) {
		line_free(&t->events);
		t->events = *l;
		return 0;
	} else if (l->cmd == &cmd_ban_add) {
		struct banfile_entry *g = realloc(t->bans, (t->nbans + 1) * sizeof(*g));

		if (!g) {
			out_error("%s", strerror(ENOMEM));
			err = 1;
		} else {
			t->bans = g;
			t->bans[t->nbans++] = *ban_add_entry(l->opts);
		}
	}
	line_free(l);
	return err;
}

/* Checked in full first; then the rules become exactly the file's, and
 * rules the file leaves as they are keep their slots and buckets. */
static int run_apply(const void *opts)
{
	const struct apply_opts *a = opts;
	static struct target t;
	char who[IF_NAMESIZE + 16];
	struct tb_maps m;
	int err;

	if (open_attached("apply", a->t.dev, &m))
		return 1;
	err = ruleset_load(&rs, &m);
	if (err) {
		out_error("apply dev %s: read rules: %s", a->t.dev, strerror(-err));
		maps_close(&m);
		return 1;
	}
	t = (struct target){ .dev = a->t.dev };
	snprintf(who, sizeof(who), "apply dev %s", a->t.dev);
	err = cmdfile_read(a->file, who, target_line, &t);
	out.batch_line = 0;
	if (!err) {
		err = ruleset_apply(&rs, t.p, t.s, t.n);
		if (!err && t.events.opts)
			err = events_set_config(t.events.opts, &m);
		if (!err && t.nbans)
			err = ban_add_lines(&m, t.bans, t.nbans);
		if (err)
			out_error("apply dev %s: update maps: %s", a->t.dev, strerror(-err));
	}
	line_free(&t.events);
	free(t.bans);
	maps_close(&m);
	return err != 0 ? (err > 0 ? err : 1) : 0;
}

const struct command cmd_save = {
	.name = "save",
	.usage = "dev DEV",
	.opts_size = sizeof(struct cmd_target),
	.parse = parse_dev_only,
	.run = run_save,
	.flags = CMD_ATTACHED,
	.caps = CAPS_READ,
};
const struct command cmd_apply = {
	.name = "apply",
	.usage = "dev DEV FILE",
	.opts_size = sizeof(struct apply_opts),
	.parse = parse_apply,
	.run = run_apply,
	.flags = CMD_ATTACHED,
	.caps = CAPS_READ,
};
