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
	&cmd_save, &cmd_apply,
	&cmd_metrics, &cmd_exporter, &cmd_top,
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

int device_lock(const char *cmd, const char *dev, bool lock)
{
	int err = bpffs_ensure(), fd;

	if (err) {
		out_error("%s dev %s: bpffs unavailable at %s: %s", cmd, dev, TB_BPFFS, strerror(-err));
		return 1;
	}
	fd = lock ? state_lock(dev) : 0;
	if (fd == -ENODEV) {
		out_error("%s dev %s: no such device", cmd, dev);
		return 1;
	}
	if (fd < 0) {
		out_error("%s dev %s: lock %s: %s", cmd, dev, TB_LOCK_DIR, strerror(-fd));
		return 1;
	}
	return 0;
}

static int open_maps(const char *cmd, const char *dev, struct tb_maps *m, int *config, bool lock)
{
	int err;

	if (device_lock(cmd, dev, lock))
		return 1;
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
	if (err == -ESTALE) {
		out_error("%s dev %s: the pinned maps are an older tbctl build's (%s); "
			  "tbctl attach dev %s upgrades them", cmd, dev, state_layout_error(), dev);
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

int parse_command(int argc, char **argv, struct cmd_args *a)
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

int require_caps(const struct cmd_args *a)
{
	char what[64];

	snprintf(what, sizeof(what), "%s%s%s", a->cmd->name, a->has_dev ? " dev " : "", a->has_dev ? a->dev : "");
	return caps_require(what, a->cmd->caps);
}

int run_command(const struct cmd_args *a)
{
	return require_caps(a) ? 1 : a->cmd->run(a);
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
