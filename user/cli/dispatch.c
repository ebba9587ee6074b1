// SPDX-License-Identifier: GPL-2.0
/* The command table: finding a command by its (shortened) words, its
 * usage, and running it once its capabilities are checked. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "view/output.h"
#include "cli/tbctl.h"

static const struct command *const commands[] = {
	&cmd_attach, &cmd_detach, &cmd_status,
	&cmd_rule_set, &cmd_rule_del, &cmd_rule_list,
	&cmd_show, &cmd_stats, &cmd_reset,
	&cmd_save, &cmd_apply,
	&cmd_metrics, &cmd_exporter, &cmd_top,
	&cmd_fleet_run, &cmd_fleet_show,
	&cmd_events, &cmd_events_set,
	&cmd_ban_add, &cmd_ban_del, &cmd_ban_list, &cmd_ban_apply,
};
#define N_COMMANDS (int)(sizeof(commands) / sizeof(commands[0]))

void usage(FILE *f)
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
	fprintf(f, "Usage: tbctl [-j|--json] [-p|--pretty] [-v] [-n|--netns NS] [-h|--help] [-V|--version] COMMAND ...\n"
		   "       tbctl [-j] -batch FILE   (FILE - for stdin: one command per line, # comments)\n"
		   "Commands:\n");
	for (int i = 0; i < N_COMMANDS; i++)
		fprintf(f, "  tbctl %s %s\n", commands[i]->name, commands[i]->usage);
	fprintf(f, "RATE as tc: bit/kbit/mbit/gbit (bits/s), bps/kbps/mbps (BYTES/s); pps/kpps in packet mode.\n"
		   "SIZE as tc: b, k/kb, m/mb, g/gb (bytes, 1024-based); a packet count in packet mode.\n");
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
 * shortened to a unique prefix among its siblings. A word that is a
 * command of its own as well ("events", "events set") takes a second
 * word as its subcommand only when it is one in full. */
static const struct command *find_command(int argc, char **argv, int *used)
{
	char firsts[N_COMMANDS][16], list[128] = "";
	const char *words[N_COMMANDS + 1], *subwords[N_COMMANDS];
	const struct command *subs[N_COMMANDS], *single = NULL;
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
		if (!sp) {
			single = commands[i];
			continue;
		}
		subs[nsub] = commands[i];
		subwords[nsub++] = sp + 1;
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", nsub > 1 ? ", " : "", sp + 1);
	}
	if (single) {
		for (s = 0; s < nsub; s++)
			if (argc >= 2 && !strcmp(argv[1], subwords[s])) {
				*used = 2;
				return subs[s];
			}
		return single;
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

int parse_command(int argc, char **argv, struct cmd_line *l)
{
	const struct command *c;
	int used = 0;

	*l = (struct cmd_line){};
	c = find_command(argc, argv, &used);
	if (!c)
		return EXIT_USAGE;
	if ((c->flags & CMD_NO_BATCH) && out.batch_line > 0) {
		out_error("%s is no command to run from a batch", c->name);
		return EXIT_USAGE;
	}
	l->opts = calloc(1, c->opts_size);
	if (!l->opts) {
		out_error("%s: %s", c->name, strerror(ENOMEM));
		return 1;
	}
	l->cmd = c;
	return c->parse(c->name, argc - used, argv + used, l->opts);
}

void line_free(struct cmd_line *l)
{
	free(l->opts);
	free(l->text);
	*l = (struct cmd_line){};
}

const struct command *command_named(const char *name)
{
	for (int i = 0; i < N_COMMANDS; i++)
		if (!strcmp(commands[i]->name, name))
			return commands[i];
	return NULL;
}

int require_caps(const struct cmd_line *l)
{
	const struct cmd_target *t = line_target(l);
	char what[64];

	snprintf(what, sizeof(what), "%s%s%s", l->cmd->name, t->has_dev ? " dev " : "", t->has_dev ? t->dev : "");
	return caps_require(what, l->cmd->caps);
}

int run_command(const struct cmd_line *l)
{
	return require_caps(l) ? 1 : l->cmd->run(l->opts);
}
