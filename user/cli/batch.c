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
#include "lib/grow.h"
#include "lib/state.h"
#include "cli/tbctl.h"

/* -batch: every line is parsed, and checked against what the device state
 * will be when it runs, before the first one runs. */

struct batch_line {
	int lineno;
	struct cmd_line l;
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
	struct tb_config cfg;   /* the pinned config, read once */
	int cfg_read;           /* 0: not yet; 1: read; -1: none */
};

struct batch_rule {
	int dev;                /* batch_dev index; -1: empty slot */
	struct tb_prefix prefix;
	int at;                 /* line index of the latest set or del */
	bool set;
};

struct batch_state {
	struct batch_dev *dev;
	int ndev;
	size_t capdev;
	struct batch_rule *rule;        /* open addressing, power-of-two size */
	size_t nrule, caprule;
};

static int batch_dev_of(struct batch_state *bs, const char *name)
{
	for (int i = 0; i < bs->ndev; i++)
		if (!strcmp(bs->dev[i].name, name))
			return i;
	if (GROW(bs->dev, bs->ndev, bs->capdev, 8))
		return -1;
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
static bool batch_rule_exists(struct batch_state *bs, int d, const struct cmd_target *t)
{
	struct batch_dev *dev = &bs->dev[d];
	struct batch_rule *r = batch_rule_of(bs, d, &t->prefix, false);

	if (r && r->at > dev->cleared_at)
		return r->set;
	if (dev->cleared_at >= 0)
		return false;
	if (!dev->rs_read) {
		dev->rs_read = true;
		dev->rs = rules_on_disk(dev->name);
	}
	return dev->rs && ruleset_find(dev->rs, &t->prefix) >= 0;
}

/* The pinned config of a device the batch has not attached or detached
 * yet; NULL when it is not attached. */
static const struct tb_config *batch_pinned(struct batch_state *bs, int d)
{
	struct batch_dev *dev = &bs->dev[d];
	struct tb_maps m;

	if (dev->attached >= 0)
		return NULL;
	if (!dev->cfg_read) {
		dev->cfg_read = -1;
		if (!state_open(dev->name, &m)) {
			if (!state_read_config(&m, &dev->cfg) && dev->cfg.attached)
				dev->cfg_read = 1;
			maps_close(&m);
		}
	}
	return dev->cfg_read > 0 ? &dev->cfg : NULL;
}

/* What line l would refuse at run time, refused now (said): an attach
 * to a device that does not exist, and what its command checks against
 * the pinned config of a device the batch has not changed yet. */
static int batch_check(struct batch_state *bs, int d, const struct cmd_line *l)
{
	const struct cmd_target *t = line_target(l);
	const struct tb_config *cfg;

	if ((l->cmd->flags & CMD_ATTACH) && !if_nametoindex(t->dev)) {
		out_error("%s dev %s: no such device", l->cmd->name, t->dev);
		return 1;
	}
	if (l->cmd->check && (cfg = batch_pinned(bs, d)))
		return l->cmd->check(l->opts, cfg);
	return 0;
}

/* Record what line i will have done. */
static int batch_note(struct batch_state *bs, int d, int i, const struct cmd_line *l)
{
	unsigned int flags = l->cmd->flags;
	struct batch_rule *r;

	if (flags & CMD_ATTACH) {
		bs->dev[d].attached = 1;
	} else if (flags & CMD_DETACH) {
		bs->dev[d].attached = 0;
		bs->dev[d].cleared_at = i;
	} else if (flags & (CMD_RULE_SET | CMD_RULE_DEL)) {
		r = batch_rule_of(bs, d, &line_target(l)->prefix, true);
		if (!r)
			return -ENOMEM;
		r->at = i;
		r->set = flags & CMD_RULE_SET;
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
		if (line_target(&lines[i].l)->has_dev)
			names[k++] = line_target(&lines[i].l)->dev;
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
		const struct cmd_target *t = line_target(&lines[i].l);
		bool seen = false;

		if (!(lines[i].l.cmd->flags & (CMD_ATTACH | CMD_RULE_SET | CMD_RULE_DEL)))
			continue;
		for (int k = 0; k < u->n && !seen; k++)
			seen = !strcmp(u->dev[k].name, t->dev);
		if (seen)
			continue;
		snprintf(u->dev[u->n].name, sizeof(u->dev[0].name), "%s", t->dev);
		u->dev[u->n++].rules = rules_on_disk(t->dev);
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

/* The batch's own attach of dev taken back, by the detach command. */
static int detach(const char *dev)
{
	const struct command *c = command_named("detach");
	struct cmd_target *t = c ? calloc(1, c->opts_size) : NULL;
	int err;

	if (!t)
		return -ENOMEM;
	snprintf(t->dev, sizeof(t->dev), "%s", dev);
	t->has_dev = true;
	err = c->run(t) ? -EIO : 0;
	free(t);
	return err;
}

/* A line failed at run time: undo the lines before it. Devices the batch
 * attached are detached; every other device gets its rules back. A detach
 * or a reset the batch ran cannot be taken back, and is said so. */
static void undo_apply(const struct batch_undo *u, const struct batch_line *lines, int failed)
{
	for (int i = 0; i < failed; i++)
		if (lines[i].l.cmd->flags & CMD_FINAL)
			out_warn("batch: line %d (%s dev %s) cannot be undone", lines[i].lineno,
				 lines[i].l.cmd->name, line_target(&lines[i].l)->dev);
	out.batch_line = 0;
	for (int k = 0; k < u->n; k++) {
		char dir[PATH_MAX];
		int err;

		state_dir(u->dev[k].name, dir, sizeof(dir));
		if (access(dir, F_OK))
			continue;       /* detached by the batch: nothing to give rules back to */
		if (!u->dev[k].rules) {
			err = detach(u->dev[k].name);
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

struct batch_lines {
	struct batch_line *v;
	int n;
	size_t cap;
};

static int line_keep(struct cmd_line *l, int lineno, void *ctx)
{
	struct batch_lines *bl = ctx;

	if (GROW(bl->v, bl->n, bl->cap, 64)) {
		line_free(l);
		out_error("batch: %s", strerror(ENOMEM));
		return 1;
	}
	bl->v[bl->n++] = (struct batch_line){ .lineno = lineno, .l = *l };
	return 0;
}

/* Every line checked against the state it will run in, in order. */
static int check_lines(const struct batch_line *lines, int n)
{
	struct batch_state bs = {};
	int err = 0;

	for (int i = 0; i < n && !err; i++) {
		const struct cmd_line *l = &lines[i].l;
		const struct cmd_target *t = line_target(l);
		int d;

		out.batch_line = lines[i].lineno;
		d = batch_dev_of(&bs, t->dev);
		if (d < 0) {
			out_error("batch: %s", strerror(ENOMEM));
			err = 1;
		} else if ((l->cmd->flags & CMD_ATTACHED) && !batch_attached(&bs, d)) {
			out_error("%s dev %s: not attached", l->cmd->name, t->dev);
			err = 1;
		} else if (batch_check(&bs, d, l)) {
			err = 1;
		} else if ((l->cmd->flags & CMD_RULE_DEL) && !batch_rule_exists(&bs, d, t)) {
			char p[PREFIX_TEXT_MAX];

			prefix_format(&t->prefix, p, sizeof(p));
			out_error("%s dev %s: no rule for %s", l->cmd->name, t->dev, p);
			err = 1;
		} else if (batch_note(&bs, d, i, l)) {
			out_error("batch: %s", strerror(ENOMEM));
			err = 1;
		}
	}
	batch_free(&bs);
	return err;
}

/* Each line run in turn; after a failure, the lines before it undone. */
static int run_lines(const struct batch_line *lines, int n)
{
	struct batch_undo undo = {};
	int err = 0;

	if (undo_prepare(&undo, lines, n)) {
		out_error("batch: %s", strerror(ENOMEM));
		return 1;
	}
	state_keep(true);
	for (int i = 0; i < n && !err; i++) {
		out.batch_line = lines[i].lineno;
		err = run_command(&lines[i].l);
		if (lines[i].l.cmd->flags & (CMD_ATTACH | CMD_DETACH))
			state_forget();
		if (err)
			state_keep(false);
		if (err && i)
			undo_apply(&undo, lines, i);
	}
	state_keep(false);
	undo_free(&undo);
	return err;
}

int run_batch(const char *path)
{
	struct batch_lines bl = {};
	int err = cmdfile_read(path, "batch", line_keep, &bl);

	/* Checked and run under the lock of every device the file names, so
	 * nothing changes between the check and the run. */
	for (int i = 0; i < bl.n && !err; i++) {
		out.batch_line = bl.v[i].lineno;
		err = require_caps(&bl.v[i].l);
	}
	if (!err)
		err = lock_devices(bl.v, bl.n);
	if (!err)
		err = check_lines(bl.v, bl.n);
	if (!err)
		err = run_lines(bl.v, bl.n);
	for (int i = 0; i < bl.n; i++)
		line_free(&bl.v[i].l);
	free(bl.v);
	out.batch_line = 0;
	return err;
}
