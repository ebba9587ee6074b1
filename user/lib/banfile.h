/* SPDX-License-Identifier: GPL-2.0 */
/* A ban list file, the shape ipset and FireHOL lists have: one address or
 * prefix a line, '#' comments, and optionally how long, as "PREFIX
 * DURATION" or ipset's "PREFIX timeout SECONDS" (0: no end). */
#ifndef TB_BANFILE_H
#define TB_BANFILE_H

#include <stdbool.h>
#include <stdio.h>
#include "lib/prefix.h"

/* The longest ban that takes a duration; none is no end. */
#define BAN_MAX_NS (365ULL * 86400 * 1000000000ULL)

struct banfile_entry {
	struct tb_prefix p;
	__u64 dur_ns;           /* 0: no end */
	int line;
	bool host_bits;         /* the prefix had host bits set, now cleared */
};

/* One address or prefix (not "default") and its duration from words
 * (after the prefix: none, "DURATION", or "timeout SECONDS"). 0, or -1
 * with err saying what is wrong. */
int ban_words(const char *prefix, const char *const *words, int nwords, struct banfile_entry *e, char *err,
	      size_t errlen);
/* Every line of f into *out (malloc'ed, *n of them); on a bad line -1,
 * with err naming it by number, and nothing in *out. */
int banfile_read(FILE *f, struct banfile_entry **out, size_t *n, char *err, size_t errlen);

#endif
