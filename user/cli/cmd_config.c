// SPDX-License-Identifier: GPL-2.0
/* save (a device's attach options and rules, as commands) and apply (make
 * a device's rules exactly those of such a file). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "view/output.h"
#include "lib/state.h"
#include "cli/tbctl.h"
#include "lib/units.h"

static struct ruleset rs;

static int parse_save(int argc, char **argv, struct cmd_args *a)
{
	return parse_dev_only("save", argc, argv, a, false);
}

void rule_save(FILE *f, const char *dev, const struct tb_rule *r)
{
	char p[PREFIX_TEXT_MAX];

	rule_format(r, p, sizeof(p));
	fprintf(f, "rule set dev %s %s ", dev, p);
	rule_words(f, r, true);
	fputc('\n', f);
}

static int run_save(const struct cmd_args *a)
{
	struct tb_maps m;
	int err;

	if (open_attached_ro("save", a->dev, &m))
		return 1;
	err = ruleset_read(&rs, &m);
	maps_close(&m);
	if (err) {
		out_error("save dev %s: read rules: %s", a->dev, strerror(-err));
		return 1;
	}
	printf("# tbctl save dev %s: its attach options and rules, for tbctl -batch or tbctl apply\n", a->dev);
	printf("attach dev %s mode %s key %s max-addrs %u%s\n", a->dev, mode_names[rs.cfg.mode],
	       key_names[rs.cfg.key], rs.cfg.max_addrs, rs.cfg.own_fq ? " qdisc fq" : "");
	if (ruleset_default(&rs) >= 0)
		rule_save(stdout, a->dev, &rs.rules[ruleset_default(&rs)]);
	for (int i = 0; i < TB_MAX_RULES; i++)
		if (rs.rules[i].in_use && i != ruleset_default(&rs))
			rule_save(stdout, a->dev, &rs.rules[i]);
	return 0;
}

static int parse_apply(int argc, char **argv, struct cmd_args *a)
{
	struct kw kws[] = { { "dev" }, { 0 } };
	const char *file = NULL;
	int rc = kw_parse("apply", argc, argv, kws, &file);

	if (rc || (rc = parse_dev("apply", kw_get(kws, "dev"), a)))
		return rc;
	if (!file)
		return usage_error("apply", "missing FILE (as tbctl save writes it; - for stdin)");
	a->file = file;
	return 0;
}

/* The target: every "rule set" line for dev, each prefix once; an attach
 * line for dev must match how it is attached. Anything else is an error
 * naming its line. */
struct target {
	struct tb_prefix p[TB_MAX_RULES];
	struct rule_spec s[TB_MAX_RULES];
	int line[TB_MAX_RULES];
	int n;
};

static int read_target(const struct cmd_args *a, struct target *t)
{
	FILE *f = strcmp(a->file, "-") ? fopen(a->file, "r") : stdin;
	char *buf = NULL, *words[LINE_MAX_WORDS];
	size_t blen = 0;
	int err = 0, lineno = 0;

	if (!f) {
		out_error("apply dev %s: open %s: %s", a->dev, a->file, strerror(errno));
		return 1;
	}
	t->n = 0;
	while (!err && getline(&buf, &blen, f) >= 0) {
		struct cmd_args l;
		int argc;

		lineno++;
		argc = words_split(buf, words, LINE_MAX_WORDS);
		if (!argc)
			continue;
		out.batch_line = lineno;
		if (argc < 0) {
			out_error("more than %d words", LINE_MAX_WORDS);
			err = EXIT_USAGE;
			break;
		}
		err = parse_command(argc, words, &l);
		if (!err && (l.cmd != &cmd_rule_set && l.cmd != &cmd_attach)) {
			out_error("apply takes rule set lines (and the device's attach line), not %s", l.cmd->name);
			err = EXIT_USAGE;
		} else if (!err && strcmp(l.dev, a->dev)) {
			out_error("%s dev %s: this file applies to dev %s", l.cmd->name, l.dev, a->dev);
			err = EXIT_USAGE;
		} else if (!err && l.cmd == &cmd_attach &&
			   ((l.has_mode && l.mode != rs.cfg.mode) || (l.has_key && l.key != rs.cfg.key))) {
			out_error("attach dev %s: attached as mode %s key %s, the file says mode %s key %s",
				  a->dev, mode_names[rs.cfg.mode], key_names[rs.cfg.key],
				  mode_names[l.has_mode ? l.mode : rs.cfg.mode], key_names[l.has_key ? l.key : rs.cfg.key]);
			err = 1;
		} else if (!err && l.cmd == &cmd_rule_set) {
			for (int i = 0; i < t->n && !err; i++)
				if (prefix_equal(&t->p[i], &l.prefix)) {
					char p[PREFIX_TEXT_MAX];

					prefix_format(&l.prefix, p, sizeof(p));
					out_error("rule set dev %s: %s is set twice (line %d)", a->dev, p, t->line[i]);
					err = EXIT_USAGE;
				}
			if (!err && t->n == TB_MAX_RULES - 1) {
				out_error("rule set dev %s: more than %d rules", a->dev, TB_MAX_RULES - 1);
				err = 1;
			}
			if (!err && !(err = shape_refused(&l, &rs.cfg))) {
				t->p[t->n] = l.prefix;
				t->s[t->n] = l.spec;
				t->line[t->n++] = lineno;
			}
		}
	}
	if (!err && !feof(f)) {
		out.batch_line = lineno + 1;
		out_error("apply dev %s: read %s: %s", a->dev, a->file, strerror(errno ? errno : EIO));
		err = 1;
	}
	out.batch_line = 0;
	free(buf);
	if (f != stdin)
		fclose(f);
	return err;
}

/* Checked in full first; then the rules become exactly the file's, and
 * rules the file leaves as they are keep their slots and buckets. */
static int run_apply(const struct cmd_args *a)
{
	static struct target t;
	struct tb_maps m;
	int err;

	if (open_attached("apply", a->dev, &m))
		return 1;
	err = ruleset_load(&rs, &m);
	if (err) {
		out_error("apply dev %s: read rules: %s", a->dev, strerror(-err));
		maps_close(&m);
		return 1;
	}
	err = read_target(a, &t);
	if (!err) {
		err = ruleset_apply(&rs, t.p, t.s, t.n);
		if (err)
			out_error("apply dev %s: update maps: %s", a->dev, strerror(-err));
	}
	maps_close(&m);
	return err != 0 ? (err > 0 ? err : 1) : 0;
}

const struct command cmd_save = { "save", parse_save, run_save, "dev DEV", true, CAPS_READ };
const struct command cmd_apply = { "apply", parse_apply, run_apply, "dev DEV FILE", true, CAPS_READ };
