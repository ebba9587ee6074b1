/* SPDX-License-Identifier: GPL-2.0 */
/* tbctl's commands: each parses its words into cmd_args without touching
 * anything (so -batch can check every line first), then runs. */
#ifndef TBCTL_H
#define TBCTL_H

#include <stdbool.h>
#include <stdio.h>
#include <net/if.h>
#include "cli/caps.h"
#include "lib/prefix.h"
#include "lib/names.h"
#include "lib/ruleset.h"

#define EXIT_USAGE 2
#define MAX_ADDRS_MAX (64U << 20)

enum sort_key { SORT_BYTES, SORT_PASSED, SORT_DROPPED };
enum reset_what { RESET_COUNTERS = 1, RESET_BUCKETS = 2 };

struct cmd_args {
	const struct command *cmd;
	char dev[IF_NAMESIZE];
	bool has_dev;
	/* attach; a re-attach keeps the mode and key not given */
	int mode;
	int key;
	bool has_mode;
	bool has_key;
	__u32 max_addrs;       /* 0: keep the pinned table's, or the default */
	bool fq;               /* install fq as the root qdisc (for action shape) */
	bool replace;          /* start over: the pins' rules kept, the rest not */
	/* rule set / del */
	struct tb_prefix prefix;
	struct rule_spec spec;
	/* show */
	struct tb_addr addr;
	bool has_addr;
	__u32 top;
	int sort;
	bool has_sort;
	/* reset */
	int reset;
	/* apply */
	const char *file;
	/* metrics, exporter: named devices (none: every attached one) */
	const char *const *devs;
	int ndevs;
	const char *listen;
	/* top (rows in top) */
	int top_col;
	__u32 top_count;        /* refreshes before quitting; 0: until q */
	unsigned int top_interval_ms;
	/* fleet run */
	struct {
		const char *store, *fleet, *host;
		__u32 interval_ms, lease_ms;
		bool closed;
	} fleet;
};

struct command {
	const char *name;       /* "rule set" for subcommands */
	int (*parse)(int argc, char **argv, struct cmd_args *a);
	int (*run)(const struct cmd_args *a);
	const char *usage;
	bool needs_attached;    /* -batch checks the device is attached (or attached earlier in the file) */
	__u64 caps;             /* the capabilities it needs (caps.h) */
};

/* Keyword arguments, iproute2 style: "dev eth0 rate 10mbit ...". */
struct kw {
	const char *name;
	const char *value;      /* set by kw_parse */
};

/* Fill kws from argv; a word that is no keyword goes to *positional when
 * that is given. Errors (unknown, repeated, missing value) are reported
 * and return EXIT_USAGE. */
int kw_parse(const char *cmd, int argc, char **argv, struct kw *kws, const char **positional);
const char *kw_get(const struct kw *kws, const char *name);
/* Resolve "dev NAME" to a device that exists. */
int parse_dev(const char *cmd, const char *name, struct cmd_args *a);
/* For commands whose only word is "dev DEV" (optional when asked). */
int parse_dev_only(const char *cmd, int argc, char **argv, struct cmd_args *a, bool optional);
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

/* dispatch.c: the command argv names, parsed; its capabilities checked
 * (said when lacking); run. */
int parse_command(int argc, char **argv, struct cmd_args *a);
int require_caps(const struct cmd_args *a);
int run_command(const struct cmd_args *a);
/* Every command's usage (JSON under -j). */
void usage(FILE *f);
/* -batch FILE (- for stdin); batch.c. */
int run_batch(const char *path);

/* attached.c. Mount bpffs if needed and, when lock, take dev's lock
 * (held until exit); reports and returns 1 on error. */
int device_lock(const char *cmd, const char *dev, bool lock);
/* Open dev's pinned state under its lock; reports and returns 1 on error. */
int open_attached(const char *cmd, const char *dev, struct tb_maps *m);
/* The same for a command that only reads: it takes no lock, so it never
 * waits for a writer, nor holds one up. */
int open_attached_ro(const char *cmd, const char *dev, struct tb_maps *m);
/* The config alone, locked: for detach, which must work over the pins of
 * any build. */
int open_attached_config(const char *cmd, const char *dev, int *fd);

extern const struct command cmd_attach, cmd_detach, cmd_status;
extern const struct command cmd_rule_set, cmd_rule_del, cmd_rule_list;
extern const struct command cmd_show, cmd_stats, cmd_reset;
extern const struct command cmd_metrics, cmd_exporter, cmd_top;
extern const struct command cmd_save, cmd_apply;
extern const struct command cmd_fleet_run, cmd_fleet_show;
struct tb_fleet_state;
struct json_object;
/* The fleet agent's state as status says it: a line, or into o (-j). */
void fleet_status(const struct tb_fleet_state *fs, struct json_object *o);
int shape_refused(const struct cmd_args *a, const struct tb_config *cfg);
/* One rule as a "rule set" line to f, in units that keep every value
 * exact (cmd_config.c). */
void rule_save(FILE *f, const char *dev, const struct tb_rule *r);
/* A rule's words after its prefix, as rule set takes them: exact (save)
 * or in the units a person reads (rule list). */
void rule_words(FILE *f, const struct tb_rule *r, bool exact);
/* Non-zero (said) when a re-attach asks for another mode, key or table
 * size than the pinned config has. */
int attach_conflicts(const struct cmd_args *a, const struct tb_config *cfg);

#endif
