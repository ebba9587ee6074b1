// SPDX-License-Identifier: GPL-2.0
/* tbctl: global options, the command table, -batch, and the keyword
 * parsing every command shares. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "output.h"
#include "state.h"
#include "tbctl.h"

#define TBCTL_VERSION "0.1.0"

const char *const mode_names[] = { "xdp", "xdpgeneric", "tc-ingress", "tc-egress", NULL };
const char *const key_names[] = { "src", "dst", NULL };
const char *const cost_names[] = { "bytes", "packets", NULL };
const char *const action_names[] = { "drop", "monitor", "mark", "shape", NULL };
const char *const scope_names[] = { "per-address", "shared", NULL };

static const struct command *const commands[] = {
	&cmd_attach, &cmd_detach, &cmd_status,
	&cmd_rule_set, &cmd_rule_del, &cmd_rule_list,
	&cmd_show, &cmd_stats, &cmd_reset,
};
#define N_COMMANDS (int)(sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
	if (out.json) {
		struct json_object *o = json_object_new_object(), *arr = json_object_new_array();

		for (int i = 0; i < N_COMMANDS; i++) {
			struct json_object *c = json_object_new_object();

			json_add_str(c, "command", commands[i]->name);
			json_add_str(c, "arguments", commands[i]->usage);
			json_object_array_add(arr, c);
		}
		json_object_object_add(o, "commands", arr);
		out_json(o);
		return;
	}
	fprintf(f, "Usage: tbctl [-j|--json] [-p|--pretty] [-v] [-h|--help] [-V|--version] COMMAND ...\n"
		   "       tbctl [-j] -batch FILE   (FILE - for stdin: one command per line, # comments)\n"
		   "Commands:\n");
	for (int i = 0; i < N_COMMANDS; i++)
		fprintf(f, "  tbctl %s %s\n", commands[i]->name, commands[i]->usage);
	fprintf(f, "RATE as tc: bit/kbit/mbit/gbit (bits/s), bps/kbps/mbps (BYTES/s); pps/kpps in packet mode.\n"
		   "SIZE as tc: b, k/kb, m/mb, g/gb (bytes, 1024-based); a packet count in packet mode.\n");
}

int usage_error(const char *cmd, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	out_error("%s: %s", cmd, msg);
	return EXIT_USAGE;
}

int choose(const char *cmd, const char *what, const char *value, const char *const *choices)
{
	char list[256] = "";

	for (int i = 0; choices[i]; i++) {
		if (!strcmp(value, choices[i]))
			return i;
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? "|" : "", choices[i]);
	}
	usage_error(cmd, "invalid %s \"%s\" (expected %s)", what, value, list);
	return -1;
}

int parse_count(const char *cmd, const char *what, const char *v, __u32 min, __u32 max, __u32 *out)
{
	char *end;
	unsigned long long n;

	errno = 0;
	n = strtoull(v, &end, 10);
	if (!isdigit((unsigned char)*v) || *end || errno || n < min || n > max)
		return usage_error(cmd, "invalid %s \"%s\" (a whole number, %u..%u)", what, v, min, max);
	*out = n;
	return 0;
}

int kw_parse(const char *cmd, int argc, char **argv, struct kw *kws, const char **positional)
{
	for (int i = 0; i < argc; i++) {
		struct kw *k = kws;

		while (k->name && strcmp(k->name, argv[i]))
			k++;
		if (!k->name) {
			if (positional && !*positional) {
				*positional = argv[i];
				continue;
			}
			return usage_error(cmd, "unknown keyword \"%s\"", argv[i]);
		}
		if (k->value)
			return usage_error(cmd, "keyword \"%s\" given twice", k->name);
		if (i + 1 >= argc)
			return usage_error(cmd, "keyword \"%s\" needs a value", k->name);
		k->value = argv[++i];
	}
	return 0;
}

const char *kw_get(const struct kw *kws, const char *name)
{
	for (; kws->name; kws++)
		if (!strcmp(kws->name, name))
			return kws->value;
	return NULL;
}

int parse_dev(const char *cmd, const char *name, struct cmd_args *a)
{
	if (!name)
		return usage_error(cmd, "missing \"dev DEV\"");
	if (!*name || strlen(name) >= sizeof(a->dev) || strchr(name, '/') || !strcmp(name, ".") ||
	    !strcmp(name, ".."))
		return usage_error(cmd, "invalid device name \"%s\"", name);
	strcpy(a->dev, name);
	a->has_dev = true;
	return 0;
}

int parse_dev_only(const char *cmd, int argc, char **argv, struct cmd_args *a, bool optional)
{
	struct kw kws[] = { { "dev" }, { 0 } };
	int err = kw_parse(cmd, argc, argv, kws, NULL);

	if (err)
		return err;
	if (optional && !kw_get(kws, "dev"))
		return 0;
	return parse_dev(cmd, kw_get(kws, "dev"), a);
}

static int open_maps(const char *cmd, const char *dev, struct tb_maps *m, int *config, bool lock)
{
	int err, fd;

	err = bpffs_ensure();
	if (err) {
		out_error("%s dev %s: bpffs unavailable at %s: %s", cmd, dev, TB_BPFFS, strerror(-err));
		return 1;
	}
	fd = lock ? state_lock(dev) : 0;
	if (fd < 0) {
		out_error("%s dev %s: lock %s: %s", cmd, dev, TB_LOCK_DIR, strerror(-fd));
		return 1;
	}
	err = m ? state_open(dev, m) : state_open_config(dev, config);
	if (err == -ENOENT) {
		out_error("%s dev %s: not attached", cmd, dev);
		return 1;
	}
	if (err == -EPROTO) {
		out_error("%s dev %s: the pinned maps are another tbctl build's (%s); "
			  "detach, then attach with this build", cmd, dev, state_layout_error());
		return 1;
	}
	if (err) {
		out_error("%s dev %s: open pinned maps: %s", cmd, dev, strerror(-err));
		return 1;
	}
	return 0;
}

int open_attached(const char *cmd, const char *dev, struct tb_maps *m)
{
	return open_maps(cmd, dev, m, NULL, true);
}

int open_attached_ro(const char *cmd, const char *dev, struct tb_maps *m)
{
	return open_maps(cmd, dev, m, NULL, false);
}

int open_attached_config(const char *cmd, const char *dev, int *fd)
{
	return open_maps(cmd, dev, NULL, fd, true);
}

/* Unique prefixes of command words are accepted, as in ip(8). */
static int match_word(const char *word, const char *const *names, int n, const char *what)
{
	int hit = -1, hits = 0;
	char list[256] = "";

	for (int i = 0; i < n; i++) {
		if (!strcmp(word, names[i]))
			return i;
		if (!strncmp(word, names[i], strlen(word))) {
			hit = i;
			hits++;
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", hits > 1 ? ", " : "", names[i]);
		}
	}
	if (hits == 1)
		return hit;
	if (hits > 1)
		out_error("ambiguous %s \"%s\": %s", what, word, list);
	else
		out_error("unknown %s \"%s\" (try \"tbctl help\")", what, word);
	return -1;
}

/* Find the command argv names in the table; *used is how many words it
 * took. Names are one word ("show") or two ("rule set"); each word may be
 * shortened to a unique prefix among its siblings. */
static const struct command *find_command(int argc, char **argv, int *used)
{
	char firsts[N_COMMANDS][16], list[128] = "";
	const char *words[N_COMMANDS + 1], *subwords[N_COMMANDS];
	const struct command *subs[N_COMMANDS];
	int n = 0, nsub = 0, w, s;

	for (int i = 0; i < N_COMMANDS; i++) {
		snprintf(firsts[n], sizeof(firsts[n]), "%.*s", (int)strcspn(commands[i]->name, " "),
			 commands[i]->name);
		if (!n || strcmp(firsts[n], firsts[n - 1])) {
			words[n] = firsts[n];
			n++;
		}
	}
	words[n++] = "help";
	w = match_word(argv[0], words, n, "command");
	if (w < 0)
		return NULL;
	if (w == n - 1) {
		if (out.batch_line > 0) {
			out_error("help is no command to run from a batch");
			return NULL;
		}
		usage(stdout);
		exit(0);
	}
	*used = 1;
	for (int i = 0; i < N_COMMANDS; i++) {
		const char *name = commands[i]->name, *sp = strchr(name, ' ');

		if ((size_t)(sp ? sp - name : (long)strlen(name)) != strlen(words[w]) ||
		    strncmp(name, words[w], strlen(words[w])))
			continue;
		if (!sp)
			return commands[i];
		subs[nsub] = commands[i];
		subwords[nsub++] = sp + 1;
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", nsub > 1 ? ", " : "", sp + 1);
	}
	if (argc < 2) {
		out_error("%s: missing subcommand (%s)", words[w], list);
		return NULL;
	}
	s = match_word(argv[1], subwords, nsub, "subcommand");
	if (s < 0)
		return NULL;
	*used = 2;
	return subs[s];
}

static int parse_command(int argc, char **argv, struct cmd_args *a)
{
	const struct command *c;
	int used = 0;

	memset(a, 0, sizeof(*a));
	c = find_command(argc, argv, &used);
	if (!c)
		return EXIT_USAGE;
	a->cmd = c;
	return c->parse(argc - used, argv + used, a);
}

static int require_root(const struct cmd_args *a)
{
	if (geteuid() == 0)
		return 0;
	out_error("%s%s%s: permission denied: tbctl needs root (CAP_BPF and CAP_NET_ADMIN)",
		  a->cmd->name, a->has_dev ? " dev " : "", a->has_dev ? a->dev : "");
	return 1;
}

static int run_command(const struct cmd_args *a)
{
	return require_root(a) ? 1 : a->cmd->run(a);
}

/* -batch: every line is parsed, and checked against what the device state
 * will be when it runs, before the first one runs. */
#define BATCH_MAX_WORDS 64

struct batch_line {
	int lineno;
	int argc;
	char *argv[BATCH_MAX_WORDS];
	struct cmd_args a;
};

static int split_words(char *line, char **argv)
{
	int n = 0;
	char *hash = strchr(line, '#'), *tok, *save;

	if (hash)
		*hash = 0;
	for (tok = strtok_r(line, " \t\r\n", &save); tok; tok = strtok_r(NULL, " \t\r\n", &save)) {
		if (n == BATCH_MAX_WORDS)
			return -1;
		argv[n++] = tok;
	}
	return n;
}

/* Whether dev is attached after lines[0..upto) run. */
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

		if (fd < 0) {
			out_error("batch: lock %s/%s.lock: %s", TB_LOCK_DIR, names[i], strerror(-fd));
			err = 1;
		}
	}
	free(names);
	return err;
}

static int run_batch(const char *path)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	struct batch_state bs = {};
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
		l->argc = copy ? split_words(copy, l->argv) : -1;
		if (!copy) {
			out_error("batch: %s", strerror(ENOMEM));
			err = 1;
			break;
		}
		if (l->argc < 0) {
			out_error("more than %d words", BATCH_MAX_WORDS);
			err = EXIT_USAGE;
			break;
		}
		if (!l->argc)
			continue;
		err = parse_command(l->argc, l->argv, &l->a);
		if (err)
			break;
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
	if (!err && n && geteuid() != 0) {
		out.batch_line = lines[0].lineno;
		err = require_root(&lines[0].a);
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
		if (l->a.cmd == &cmd_rule_del && !batch_rule_exists(&bs, d, &l->a)) {
			char p[64];

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
	for (int i = 0; i < n && !err; i++) {
		out.batch_line = lines[i].lineno;
		err = run_command(&lines[i].a);
	}
	out.batch_line = 0;
	return err;
}

int main(int argc, char **argv)
{
	const char *batch = NULL;
	struct cmd_args a;
	int i, err;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		const char *o = argv[i];

		if (!strcmp(o, "-j") || !strcmp(o, "--json")) {
			out.json = 1;
		} else if (!strcmp(o, "-p") || !strcmp(o, "--pretty")) {
			out.pretty = 1;
		} else if (!strcmp(o, "-v") || !strcmp(o, "--verbose")) {
			out.verbose++;
		} else if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(o, "-V") || !strcmp(o, "--version")) {
			printf("tbctl %s (libbpf %s)\n", TBCTL_VERSION, libbpf_version_string());
			return 0;
		} else if (!strcmp(o, "-batch") || !strcmp(o, "--batch") || !strcmp(o, "-b")) {
			if (++i >= argc) {
				out_error("-batch needs a file name (or - for stdin)");
				return EXIT_USAGE;
			}
			batch = argv[i];
		} else {
			out_error("unknown option \"%s\" (try \"tbctl --help\")", o);
			return EXIT_USAGE;
		}
	}
	out_libbpf_setup();
	if (batch) {
		if (i < argc) {
			out_error("-batch takes no command on the command line");
			return EXIT_USAGE;
		}
		return run_batch(batch);
	}
	if (i >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	err = parse_command(argc - i, argv + i, &a);
	return err ? err : run_command(&a);
}
