// SPDX-License-Identifier: GPL-2.0
/* -batch: a file of commands, checked in full against the state each line
 * will run in, then run, all under the locks of every device it names. */
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "view/output.h"
#include "lib/state.h"
#include "cli/tbctl.h"

/* -batch: every line is parsed, and checked against what the device state
 * will be when it runs, before the first one runs. */

struct batch_line {
	int lineno;
	int argc;
	char *text;     /* the line, split in place: argv points into it */
	char *argv[LINE_MAX_WORDS];
	struct cmd_args a;
};

/* What a batch will have done by a given line, so each line is checked
 * in constant time against the state it will run in: per device, whether
 * it will be attached and since which line its rules are gone (a detach
 * drops them all); per rule, the last line that set or deleted it. */
struct batch_dev {
	char name[IF_NAMESIZE];
	int attached;           /* -1: as on disk */
	int cleared_at;         /* line index of the latest detach; -1: none */
	struct ruleset *rs;     /* the rules on disk, read once */
	bool rs_read;
};

struct batch_rule {
	int dev;                /* batch_dev index; -1: empty slot */
	struct tb_prefix prefix;
	int at;                 /* line index of the latest set or del */
	bool set;
};

struct batch_state {
	struct batch_dev *dev;
	int ndev, capdev;
	struct batch_rule *rule;        /* open addressing, power-of-two size */
	size_t nrule, caprule;
};

static int batch_dev_of(struct batch_state *bs, const char *name)
{
	for (int i = 0; i < bs->ndev; i++)
		if (!strcmp(bs->dev[i].name, name))
			return i;
	if (bs->ndev == bs->capdev) {
		int cap = bs->capdev ? 2 * bs->capdev : 8;
		struct batch_dev *d = realloc(bs->dev, cap * sizeof(*d));

		if (!d)
			return -1;
		bs->dev = d;
		bs->capdev = cap;
	}
	bs->dev[bs->ndev] = (struct batch_dev){ .attached = -1, .cleared_at = -1 };
	snprintf(bs->dev[bs->ndev].name, sizeof(bs->dev[0].name), "%s", name);
	return bs->ndev++;
}

static size_t batch_rule_hash(int dev, const struct tb_prefix *p)
{
	size_t h = 14695981039346656037ULL ^ (size_t)dev ^ (size_t)p->family << 8 ^ (size_t)p->len << 16;

	for (int i = 0; i < 16; i++)
		h = (h ^ p->addr[i]) * 1099511628211ULL;
	return h;
}

static struct batch_rule *batch_rule_of(struct batch_state *bs, int dev, const struct tb_prefix *p, bool add)
{
	size_t i;

	if (add && 2 * (bs->nrule + 1) > bs->caprule) {
		size_t cap = bs->caprule ? 2 * bs->caprule : 1024;
		struct batch_rule *v = malloc(cap * sizeof(*v)), *old = bs->rule;

		if (!v)
			return NULL;
		for (i = 0; i < cap; i++)
			v[i].dev = -1;
		bs->rule = v;
		for (size_t k = 0; k < bs->caprule; k++) {
			size_t j;

			if (old[k].dev < 0)
				continue;
			for (j = batch_rule_hash(old[k].dev, &old[k].prefix) & (cap - 1); v[j].dev >= 0; j = (j + 1) & (cap - 1))
				;
			v[j] = old[k];
		}
		bs->caprule = cap;
		free(old);
	}
	if (!bs->caprule)
		return NULL;
	for (i = batch_rule_hash(dev, p) & (bs->caprule - 1); bs->rule[i].dev >= 0; i = (i + 1) & (bs->caprule - 1))
		if (bs->rule[i].dev == dev && prefix_equal(&bs->rule[i].prefix, p))
			return &bs->rule[i];
	if (!add)
		return NULL;
	bs->rule[i] = (struct batch_rule){ .dev = dev, .prefix = *p, .at = -1 };
	bs->nrule++;
	return &bs->rule[i];
}

static bool batch_attached(struct batch_state *bs, int d)
{
	char dir[PATH_MAX];

	if (bs->dev[d].attached >= 0)
		return bs->dev[d].attached;
	state_dir(bs->dev[d].name, dir, sizeof(dir));
	return access(dir, F_OK) == 0;
}

/* The rules of an attached device as they are now; NULL if none. */
static struct ruleset *rules_on_disk(const char *dev)
{
	struct ruleset *rs = calloc(1, sizeof(*rs));
	struct tb_maps m;
	int err;

	if (!rs || state_open(dev, &m)) {
		free(rs);
		return NULL;
	}
	err = ruleset_read(rs, &m);
	maps_close(&m);
	if (err) {
		free(rs);
		return NULL;
	}
	return rs;
}

/* Whether a rule for a->prefix will exist when this line runs. */
static bool batch_rule_exists(struct batch_state *bs, int d, const struct cmd_args *a)
{
	struct batch_dev *dev = &bs->dev[d];
	struct batch_rule *r = batch_rule_of(bs, d, &a->prefix, false);

	if (r && r->at > dev->cleared_at)
		return r->set;
	if (dev->cleared_at >= 0)
		return false;
	if (!dev->rs_read) {
		dev->rs_read = true;
		dev->rs = rules_on_disk(dev->name);
	}
	return dev->rs && ruleset_find(dev->rs, &a->prefix) >= 0;
}

/* What attach would refuse at run time, refused now: a device that does
 * not exist, or a re-attach that asks for another mode, key or size than
 * the pinned state has. */
static bool attach_possible(struct batch_state *bs, int d, const struct cmd_args *a)
{
	struct tb_config cfg;
	struct tb_maps m;
	bool ok = true;

	if (!if_nametoindex(a->dev)) {
		out_error("attach dev %s: no such device", a->dev);
		return false;
	}
	if (bs->dev[d].attached >= 0 || state_open(a->dev, &m))
		return true;    /* attached by this batch, or not at all: a fresh attach */
	if (!state_read_config(&m, &cfg) && cfg.attached)
		ok = !attach_conflicts(a, &cfg);
	maps_close(&m);
	return ok;
}

/* Record what line i will have done. */
static int batch_note(struct batch_state *bs, int d, int i, const struct cmd_args *a)
{
	struct batch_rule *r;

	if (a->cmd == &cmd_attach) {
		bs->dev[d].attached = 1;
	} else if (a->cmd == &cmd_detach) {
		bs->dev[d].attached = 0;
		bs->dev[d].cleared_at = i;
	} else if (a->cmd == &cmd_rule_set || a->cmd == &cmd_rule_del) {
		r = batch_rule_of(bs, d, &a->prefix, true);
		if (!r)
			return -ENOMEM;
		r->at = i;
		r->set = a->cmd == &cmd_rule_set;
	}
	return 0;
}

static void batch_free(struct batch_state *bs)
{
	for (int i = 0; i < bs->ndev; i++)
		free(bs->dev[i].rs);
	free(bs->dev);
	free(bs->rule);
}

static int by_name(const void *x, const void *y)
{
	return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* Every device the lines name, locked in name order: two batches naming
 * the same devices in another order cannot deadlock. */
static int lock_devices(const struct batch_line *lines, int n)
{
	const char **names = calloc(n ? n : 1, sizeof(*names));
	int k = 0, err = 0;

	if (!names) {
		out_error("batch: %s", strerror(ENOMEM));
		return 1;
	}
	for (int i = 0; i < n; i++)
		if (lines[i].a.has_dev)
			names[k++] = lines[i].a.dev;
	qsort(names, k, sizeof(*names), by_name);
	out.batch_line = 0;
	for (int i = 0; i < k && !err; i++) {
		int fd = i && !strcmp(names[i], names[i - 1]) ? 0 : state_lock(names[i]);

		/* No such device and nothing pinned: nothing to guard, and the
		 * check says what is wrong with its line. */
		if (fd < 0 && fd != -ENODEV) {
			out_error("batch: lock %s/%s.lock: %s", TB_LOCK_DIR, names[i], strerror(-fd));
			err = 1;
		}
	}
	free(names);
	return err;
}

/* What undoing a batch that failed partway needs: each device's rules as
 * they were before the first line ran, and which devices the batch
 * attached. */
struct batch_undo {
	struct undo_dev {
		char name[IF_NAMESIZE];
		struct ruleset *rules;  /* NULL: not attached before the batch */
	} *dev;
	int n;
};

static int undo_prepare(struct batch_undo *u, const struct batch_line *lines, int n)
{
	u->dev = calloc(n ? n : 1, sizeof(*u->dev));
	u->n = 0;
	if (!u->dev)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		const struct cmd_args *a = &lines[i].a;
		bool seen = false;

		if (a->cmd != &cmd_attach && a->cmd != &cmd_rule_set && a->cmd != &cmd_rule_del)
			continue;
		for (int k = 0; k < u->n && !seen; k++)
			seen = !strcmp(u->dev[k].name, a->dev);
		if (seen)
			continue;
		snprintf(u->dev[u->n].name, sizeof(u->dev[0].name), "%s", a->dev);
		u->dev[u->n++].rules = rules_on_disk(a->dev);
	}
	return 0;
}

/* Make dev's rules those of before. */
static int restore_rules(const char *dev, const struct ruleset *before)
{
	static struct ruleset now;
	static struct tb_prefix p[TB_MAX_RULES];
	static struct rule_spec spec[TB_MAX_RULES];
	struct tb_maps m;
	int err = state_open(dev, &m), n = 0;

	if (err)
		return err;
	for (int i = 0; i < TB_MAX_RULES; i++) {
		if (!before->rules[i].in_use)
			continue;
		rule_prefix(&before->rules[i], &p[n]);
		rule_spec_of(&before->rules[i], &spec[n++]);
	}
	err = ruleset_load(&now, &m);
	if (!err)
		err = ruleset_apply(&now, p, spec, n);
	maps_close(&m);
	return err;
}

/* A line failed at run time: undo the lines before it. Devices the batch
 * attached are detached; every other device gets its rules back. A detach
 * or a reset the batch ran cannot be taken back, and is said so. */
static void undo_apply(const struct batch_undo *u, const struct batch_line *lines, int failed)
{
	for (int i = 0; i < failed; i++)
		if (lines[i].a.cmd == &cmd_detach || lines[i].a.cmd == &cmd_reset)
			out_warn("batch: line %d (%s dev %s) cannot be undone", lines[i].lineno,
				 lines[i].a.cmd->name, lines[i].a.dev);
	out.batch_line = 0;
	for (int k = 0; k < u->n; k++) {
		struct cmd_args a = { .cmd = &cmd_detach, .has_dev = true };
		char dir[PATH_MAX];
		int err;

		state_dir(u->dev[k].name, dir, sizeof(dir));
		if (access(dir, F_OK))
			continue;       /* detached by the batch: nothing to give rules back to */
		if (!u->dev[k].rules) {
			snprintf(a.dev, sizeof(a.dev), "%s", u->dev[k].name);
			err = cmd_detach.run(&a) ? -EIO : 0;
		} else {
			err = restore_rules(u->dev[k].name, u->dev[k].rules);
		}
		if (err)
			out_warn("batch: undo on dev %s: %s", u->dev[k].name, strerror(-err));
	}
	out_warn("batch: line %d failed; the %d line%s before it %s undone", lines[failed].lineno, failed,
		 failed == 1 ? "" : "s", failed == 1 ? "was" : "were");
}

static void undo_free(struct batch_undo *u)
{
	for (int k = 0; k < u->n; k++)
		free(u->dev[k].rules);
	free(u->dev);
}

int run_batch(const char *path)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	struct batch_state bs = {};
	struct batch_undo undo = {};
	struct batch_line *lines = NULL;
	int n = 0, cap = 0, err = 0, lineno = 0;
	char *buf = NULL;
	size_t blen = 0;
	ssize_t len;

	if (!f) {
		out_error("batch: open %s: %s", path, strerror(errno));
		return 1;
	}
	while (!err && (errno = 0, len = getline(&buf, &blen, f)) >= 0) {
		struct batch_line *l;
		char *copy;

		out.batch_line = ++lineno;
		if (strlen(buf) != (size_t)len) {
			out_error("a NUL byte in the line");
			err = EXIT_USAGE;
			break;
		}
		if (n == cap) {
			struct batch_line *v = realloc(lines, (cap ? 2 * cap : 64) * sizeof(*lines));

			if (!v) {
				out_error("batch: %s", strerror(ENOMEM));
				err = 1;
				break;
			}
			lines = v;
			cap = cap ? 2 * cap : 64;
		}
		l = &lines[n];
		copy = strdup(buf);
		l->lineno = lineno;
		l->text = copy;
		l->argc = copy ? words_split(copy, l->argv, LINE_MAX_WORDS) : -1;
		if (!copy) {
			out_error("batch: %s", strerror(ENOMEM));
			err = 1;
		} else if (l->argc < 0) {
			out_error("more than %d words", LINE_MAX_WORDS);
			err = EXIT_USAGE;
		} else if (l->argc) {
			err = parse_command(l->argc, l->argv, &l->a);
		}
		if (err || !l->argc)
			free(copy);     /* not kept: an empty line, or the one that failed */
		else
			n++;
	}
	/* getline's -1 is the end of the file only if the file says so. */
	if (!err && !feof(f)) {
		out.batch_line = lineno + 1;
		out_error("batch: read %s: %s", strcmp(path, "-") ? path : "standard input",
			  strerror(errno ? errno : EIO));
		err = 1;
	}
	free(buf);
	if (f != stdin)
		fclose(f);
	/* Checked and run under the lock of every device the file names, so
	 * nothing changes between the check and the run. */
	for (int i = 0; i < n && !err; i++) {
		out.batch_line = lines[i].lineno;
		err = require_caps(&lines[i].a);
	}
	if (!err)
		err = lock_devices(lines, n);
	for (int i = 0; i < n && !err; i++) {
		struct batch_line *l = &lines[i];
		int d;

		out.batch_line = l->lineno;
		d = batch_dev_of(&bs, l->a.dev);
		if (d < 0) {
			out_error("batch: %s", strerror(ENOMEM));
			err = 1;
			break;
		}
		if (l->a.cmd->needs_attached && !batch_attached(&bs, d)) {
			out_error("%s dev %s: not attached", l->a.cmd->name, l->a.dev);
			err = 1;
			break;
		}
		if (l->a.cmd == &cmd_attach && !attach_possible(&bs, d, &l->a)) {
			err = 1;
			break;
		}
		if (l->a.cmd == &cmd_rule_del && !batch_rule_exists(&bs, d, &l->a)) {
			char p[PREFIX_TEXT_MAX];

			prefix_format(&l->a.prefix, p, sizeof(p));
			out_error("rule del dev %s: no rule for %s", l->a.dev, p);
			err = 1;
			break;
		}
		if (batch_note(&bs, d, i, &l->a)) {
			out_error("batch: %s", strerror(ENOMEM));
			err = 1;
			break;
		}
	}
	batch_free(&bs);
	if (!err && undo_prepare(&undo, lines, n)) {
		out_error("batch: %s", strerror(ENOMEM));
		err = 1;
	}
	state_keep(true);
	for (int i = 0; i < n && !err; i++) {
		out.batch_line = lines[i].lineno;
		err = run_command(&lines[i].a);
		if (lines[i].a.cmd == &cmd_attach || lines[i].a.cmd == &cmd_detach)
			state_forget();
		if (err)
			state_keep(false);
		if (err && i)
			undo_apply(&undo, lines, i);
	}
	state_keep(false);
	undo_free(&undo);
	for (int i = 0; i < n; i++)
		free(lines[i].text);
	free(lines);
	out.batch_line = 0;
	return err;
}

