// SPDX-License-Identifier: GPL-2.0
/* ban add, del, list and apply: the manual ban list, and the keys rules
 * banned (lib/bans.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "lib/banfile.h"
#include "lib/bans.h"
#include "lib/clock.h"
#include "lib/state.h"
#include "lib/units.h"
#include "view/ban_text.h"
#include "view/output.h"
#include "cli/tbctl.h"

struct ban_opts {
	struct cmd_target t;
	struct banfile_entry e;         /* ban add, ban del */
	const char *file;               /* ban apply */
};

/* PREFIX, and for ban add "for DURATION", into a->e. */
static int parse_ban_prefix(const char *cmd, int argc, char **argv, struct ban_opts *a, bool takes_for)
{
	struct kw kws[] = { { "dev" }, { "for" }, { 0 } };
	const char *prefix = NULL, *dur;
	char err[200];
	int rc = kw_parse(cmd, argc, argv, kws, &prefix);

	if (rc || (rc = parse_dev(cmd, kw_get(kws, "dev"), &a->t)))
		return rc;
	if (!prefix)
		return usage_error(cmd, "missing PREFIX (an address or prefix)");
	dur = kw_get(kws, "for");
	if (dur && !takes_for)
		return usage_error(cmd, "takes no \"for\"");
	if (ban_words(prefix, &dur, !!dur, &a->e, err, sizeof(err)))
		return usage_error(cmd, "%s", err);
	if (a->e.host_bits) {
		prefix_format(&a->e.p, err, sizeof(err));
		out_warn("%s: host bits of %s cleared: %s", cmd, prefix, err);
	}
	return 0;
}

static int parse_ban_add(const char *cmd, int argc, char **argv, void *opts)
{
	return parse_ban_prefix(cmd, argc, argv, opts, true);
}

static int parse_ban_del(const char *cmd, int argc, char **argv, void *opts)
{
	return parse_ban_prefix(cmd, argc, argv, opts, false);
}

static int ban_error(const char *cmd, const char *dev, const char *what, int err)
{
	if (err == -E2BIG)
		out_error("%s dev %s: more than %u prefixes of one family", cmd, dev, TB_MAX_BANS);
	else
		out_error("%s dev %s: %s: %s", cmd, dev, what, strerror(-err));
	return 1;
}

const struct banfile_entry *ban_add_entry(const void *opts)
{
	return &((const struct ban_opts *)opts)->e;
}

int ban_add_lines(const struct tb_maps *m, const struct banfile_entry *e, size_t n)
{
	return bans_put(m, e, n, false, now_ns());
}

static int run_ban_add(const void *opts)
{
	const struct ban_opts *a = opts;
	struct tb_maps m;
	int err;

	if (open_attached("ban add", a->t.dev, &m))
		return 1;
	err = ban_add_lines(&m, &a->e, 1);
	maps_close(&m);
	return err ? ban_error("ban add", a->t.dev, "update the ban list", err) : 0;
}

static struct ruleset rs;

/* The manual ban of the prefix, and every key inside it a rule banned. */
static int run_ban_del(const void *opts)
{
	const struct ban_opts *a = opts;
	char p[PREFIX_TEXT_MAX];
	struct tb_maps m;
	int err, lifted = 0;
	__u64 now = now_ns();
	bool manual;

	if (open_attached("ban del", a->t.dev, &m))
		return 1;
	err = bans_del(&m, &a->e.p, now);
	manual = !err;
	if (err == -ENOENT)
		err = 0;
	if (!err && !(err = ruleset_read(&rs, &m)))
		err = autobans_lift(&m, &rs, &a->e.p, now, &lifted);
	maps_close(&m);
	if (err)
		return ban_error("ban del", a->t.dev, "update the bans", err);
	prefix_format(&a->e.p, p, sizeof(p));
	if (!manual && !lifted) {
		out_error("ban del dev %s: no ban of %s (by hand, or of a key inside it by a rule)", a->t.dev, p);
		return 1;
	}
	if (lifted && !out.json)
		printf("lifted %d ban%s that rules made inside %s\n", lifted, lifted == 1 ? "" : "s", p);
	return 0;
}

static int run_ban_list(const void *opts)
{
	const struct cmd_target *a = opts;
	struct json_object *arr = out.json ? json_object_new_array() : NULL;
	struct autoban *auto_v = NULL;
	struct ban *v = NULL;
	size_t n = 0, na = 0;
	struct tb_maps m;
	__u64 now = now_ns();
	int err;

	if (open_attached_ro("ban list", a->dev, &m)) {
		json_object_put(arr);
		return 1;
	}
	err = bans_read(&m, now, &v, &n);
	if (!err)
		err = ruleset_read(&rs, &m);
	if (!err)
		err = autobans_read(&m, now, &auto_v, &na);
	maps_close(&m);
	if (err) {
		json_object_put(arr);
		free(v);
		return ban_error("ban list", a->dev, "read the bans", err);
	}
	for (size_t i = 0; i < n; i++)
		ban_print(&v[i], now, arr);
	for (size_t i = 0; i < na; i++)
		autoban_print(&auto_v[i], &rs, now, arr);
	if (arr)
		out_json(arr);
	free(v);
	free(auto_v);
	return 0;
}

static int parse_ban_apply(const char *cmd, int argc, char **argv, void *opts)
{
	struct kw kws[] = { { "dev" }, { 0 } };
	struct ban_opts *a = opts;
	int rc = kw_parse(cmd, argc, argv, kws, &a->file);

	if (rc || (rc = parse_dev(cmd, kw_get(kws, "dev"), &a->t)))
		return rc;
	if (!a->file)
		return usage_error(cmd, "missing FILE (a prefix a line, # comments; - for stdin)");
	return 0;
}

/* The file read in full first: a bad line names itself and nothing
 * changes; then the manual list becomes the file's, at once. */
static int run_ban_apply(const void *opts)
{
	const struct ban_opts *a = opts;
	FILE *f = strcmp(a->file, "-") ? fopen(a->file, "r") : stdin;
	struct banfile_entry *e = NULL;
	char err_text[300];
	struct tb_maps m;
	size_t n = 0;
	int err;

	if (!f) {
		out_error("ban apply dev %s: open %s: %s", a->t.dev, a->file, strerror(errno));
		return 1;
	}
	err = banfile_read(f, &e, &n, err_text, sizeof(err_text));
	if (f != stdin)
		fclose(f);
	if (err) {
		out_error("ban apply dev %s: %s: %s; nothing applied", a->t.dev, a->file, err_text);
		return EXIT_USAGE;
	}
	for (size_t i = 0; i < n; i++)
		if (e[i].host_bits) {
			prefix_format(&e[i].p, err_text, sizeof(err_text));
			out_warn("ban apply: %s line %d: host bits cleared: %s", a->file, e[i].line, err_text);
		}
	if (open_attached("ban apply", a->t.dev, &m)) {
		free(e);
		return 1;
	}
	err = bans_put(&m, e, n, true, now_ns());
	maps_close(&m);
	free(e);
	return err ? ban_error("ban apply", a->t.dev, "replace the ban list", err) : 0;
}

const struct command cmd_ban_add = {
	.name = "ban add",
	.usage = "dev DEV PREFIX [for DURATION]",
	.opts_size = sizeof(struct ban_opts),
	.parse = parse_ban_add,
	.run = run_ban_add,
	.flags = CMD_ATTACHED | CMD_SAVED | CMD_FINAL,
	.caps = CAPS_READ,
};
const struct command cmd_ban_del = {
	.name = "ban del",
	.usage = "dev DEV PREFIX",
	.opts_size = sizeof(struct ban_opts),
	.parse = parse_ban_del,
	.run = run_ban_del,
	.flags = CMD_ATTACHED | CMD_FINAL,
	.caps = CAPS_READ,
};
const struct command cmd_ban_list = {
	.name = "ban list",
	.usage = "dev DEV",
	.opts_size = sizeof(struct cmd_target),
	.parse = parse_dev_only,
	.run = run_ban_list,
	.flags = CMD_ATTACHED,
	.caps = CAPS_READ,
};
const struct command cmd_ban_apply = {
	.name = "ban apply",
	.usage = "dev DEV FILE",
	.opts_size = sizeof(struct ban_opts),
	.parse = parse_ban_apply,
	.run = run_ban_apply,
	.flags = CMD_ATTACHED | CMD_FINAL,
	.caps = CAPS_READ,
};
