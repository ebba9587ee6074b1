/* SPDX-License-Identifier: GPL-2.0 */
/* tbctl's commands: each parses its words into its own options without
 * touching anything (so -batch can check every line first), then runs. */
#ifndef TBCTL_H
#define TBCTL_H

#include <stdbool.h>
#include <stdio.h>
#include <net/if.h>
#include "cli/caps.h"
#include "lib/banfile.h"
#include "lib/prefix.h"
#include "lib/names.h"
#include "lib/ruleset.h"
#include "lib/takeover.h"

#define EXIT_USAGE 2
#define MAX_ADDRS_MAX (64U << 20)

/* The device, and for a rule change the rule, that a command acts on:
 * the first member of every command's options, so that -batch and apply
 * can lock, check and undo a line by it alone. */
struct cmd_target {
	char dev[IF_NAMESIZE];
	bool has_dev;
	struct tb_prefix prefix;        /* CMD_RULE_SET, CMD_RULE_DEL */
};

/* What a command is, for -batch and apply, which run lines of any. */
enum cmd_flag {
	CMD_ATTACHED = 1 << 0,  /* needs its device attached: -batch checks it is, or is by its line */
	CMD_NO_BATCH = 1 << 1,  /* runs until stopped, or draws on a terminal: not from -batch */
	CMD_ATTACH = 1 << 2,    /* attaches its device */
	CMD_DETACH = 1 << 3,    /* detaches it, its rules gone */
	CMD_RULE_SET = 1 << 4,  /* sets the rule at its prefix; its options are struct rule_set_opts */
	CMD_RULE_DEL = 1 << 5,  /* deletes it */
	CMD_FINAL = 1 << 6,     /* cannot be undone when a later line of -batch fails */
	CMD_SAVED = 1 << 7,     /* a line save writes and apply reads */
};

struct command {
	const char *name;       /* "rule set" for subcommands */
	const char *usage;
	size_t opts_size;       /* its options: struct cmd_target first */
	/* The words into opts (zeroed), touching nothing (so -batch can
	 * check every line first); EXIT_USAGE, said, on a bad word. */
	int (*parse)(const char *cmd, int argc, char **argv, void *opts);
	int (*run)(const void *opts);
	/* What run would refuse on a device attached as cfg, refused (and
	 * said) by -batch and apply before anything runs; may be NULL. */
	int (*check)(const void *opts, const struct tb_config *cfg);
	unsigned int flags;     /* enum cmd_flag */
	__u64 caps;             /* the capabilities it needs (caps.h) */
};

/* One command parsed: the words it came from (its options may point
 * into them) and its options. */
struct cmd_line {
	const struct command *cmd;
	void *opts;
	char *text;             /* owned, when the words were a line of a file */
};

static inline const struct cmd_target *line_target(const struct cmd_line *l)
{
	return l->opts;
}

/* rule set's options: apply reads them from its file's lines. */
struct rule_set_opts {
	struct cmd_target t;
	struct rule_spec spec;
};

/* Keyword arguments, iproute2 style: "dev eth0 rate 10mbit ...". */
struct kw {
	const char *name;
	const char *value;      /* set by kw_parse: the last given */
	/* A keyword that may repeat: each value into many[n++], at most max. */
	const char **many;
	int max, n;
};

/* Fill kws from argv; a word that is no keyword goes to *positional when
 * that is given. Errors (unknown, repeated, missing value) are reported
 * and return EXIT_USAGE. */
int kw_parse(const char *cmd, int argc, char **argv, struct kw *kws, const char **positional);
const char *kw_get(const struct kw *kws, const char *name);
/* "dev NAME": a name a device may have. */
int parse_dev(const char *cmd, const char *name, struct cmd_target *t);
/* For commands whose only word is "dev DEV": parse of such a command,
 * and of one where it is optional. */
int parse_dev_only(const char *cmd, int argc, char **argv, void *opts);
int parse_dev_optional(const char *cmd, int argc, char **argv, void *opts);
/* A whole number in [min, max] for keyword what; EXIT_USAGE after reporting. */
int parse_count(const char *cmd, const char *what, const char *v, __u32 min, __u32 max, __u32 *out);
/* Usage error for cmd; returns EXIT_USAGE. */
int usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Pick value among choices (exact match); -1 after reporting. */
int choose(const char *cmd, const char *what, const char *value, const char *const *choices);
/* Words a line of a -batch or apply file may have. */
#define LINE_MAX_WORDS 64
/* Split a line of a file into at most max words, in place, from its
 * first '#' on a comment; -1 when it has more. */
int words_split(char *line, char **argv, int max);

/* dispatch.c: the command argv names, parsed into l (line_free frees
 * it); its capabilities checked (said when lacking); run. */
int parse_command(int argc, char **argv, struct cmd_line *l);
void line_free(struct cmd_line *l);
int require_caps(const struct cmd_line *l);
int run_command(const struct cmd_line *l);
/* The command of that name; NULL when there is none. */
const struct command *command_named(const char *name);
/* Every command's usage (JSON under -j). */
void usage(FILE *f);
/* -batch FILE (- for stdin); batch.c. */
int run_batch(const char *path);
/* cmdfile.c: each line of path (- for stdin) that has words, parsed, to
 * fn, which takes l over; out.batch_line says the line meanwhile. Stops
 * at the first error (said; who names the reader in it): the error, or
 * fn's non-zero return. */
int cmdfile_read(const char *path, const char *who, int (*fn)(struct cmd_line *l, int lineno, void *ctx),
		 void *ctx);

/* attached.c. Mount bpffs if needed; says so, as what, and returns 1
 * when it cannot be. */
int bpffs_ready(const char *what);
/* Mount bpffs if needed and, when lock, take dev's lock
 * (held until exit); reports and returns 1 on error. */
int device_lock(const char *cmd, const char *dev, bool lock);
/* Take over the pins an earlier release keyed by dev's name alone, when
 * they police dev here, or as reach allows (lib/takeover.h); reports and
 * returns 1 on error. */
int device_take_over(const char *cmd, const char *dev, enum takeover_reach reach);
/* Open dev's pinned state under its lock, the pins an earlier release
 * made for dev here taken over first (device_take_over); reports and
 * returns 1 on error. */
int open_attached(const char *cmd, const char *dev, struct tb_maps *m);
/* The same for a command that only reads: it takes no lock, so it never
 * waits for a writer, nor holds one up. */
int open_attached_ro(const char *cmd, const char *dev, struct tb_maps *m);
/* The config alone, locked: for detach, which must work over the pins of
 * any build. */
int open_attached_config(const char *cmd, const char *dev, int *fd);
/* Take tbctl's program off dev, with the qdiscs it made, and remove the
 * pins (of any layout); cmd names the command in what it reports. 1 on
 * error (said). */
int remove_attached(const char *cmd, const char *dev, const struct tb_config *c);

extern const struct command cmd_attach, cmd_detach, cmd_status;
extern const struct command cmd_rule_set, cmd_rule_del, cmd_rule_list;
extern const struct command cmd_show, cmd_stats, cmd_reset;
extern const struct command cmd_metrics, cmd_exporter, cmd_top;
extern const struct command cmd_save, cmd_apply;
extern const struct command cmd_fleet_run, cmd_fleet_show;
extern const struct command cmd_events, cmd_events_set;
extern const struct command cmd_ban_add, cmd_ban_del, cmd_ban_list, cmd_ban_apply;
/* ban add lines' entries (struct banfile_entry) put into m's manual ban
 * list, as of now: what apply does with a file's ban add lines. */
int ban_add_lines(const struct tb_maps *m, const struct banfile_entry *e, size_t n);
/* A ban add line's entry. */
const struct banfile_entry *ban_add_entry(const void *opts);
/* An events set line's options (cmd_events_set) written into m's config,
 * for apply, which holds the device's lock. 0 or -errno. */
int events_set_config(const void *opts, const struct tb_maps *m);

#endif
