/* SPDX-License-Identifier: GPL-2.0 */
/* Bans as the maps keep them: the manual list (prefixes banned by hand,
 * in the pair of tries tb_config.ban_side names), and the keys that rules
 * banned (autobans). Times are CLOCK_MONOTONIC ns, the datapath's. */
#ifndef TB_BANS_H
#define TB_BANS_H

#include <stddef.h>
#include "lib/banfile.h"
#include "lib/prefix.h"
#include "lib/state.h"

/* One prefix of the manual list: banned until own_ns (TB_BAN_FOREVER:
 * no end), since added_ns. */
struct ban {
	struct tb_prefix p;
	__u64 own_ns;
	__u64 added_ns;
	size_t order;           /* bans_put: of two of one prefix, the later wins */
};

/* The manual list in force, without the bans ended by now, sorted by
 * family, address and length, into *out (malloc'ed; *n of them). */
int bans_read(const struct tb_maps *m, __u64 now, struct ban **out, size_t *n);
/* Make the manual list exactly v (n prefixes, each once): written into
 * the pair of tries not in force, which then is, in one config write, so
 * that a packet sees the whole old list or the whole new one. Each
 * entry's end, as the datapath reads it, is the latest of its own and of
 * every prefix around it: a longer prefix, which the lookup finds first,
 * never ends a shorter one's ban. The caller holds the device's lock. */
int bans_write(const struct tb_maps *m, struct ban *v, size_t n);
/* Put the n entries e into the manual list (replace: make it exactly
 * them), as of now: each banned from now for its duration, or with no
 * end; a prefix already there, or twice in e, takes the later's. -E2BIG
 * when a family would have more than TB_MAX_BANS. */
int bans_put(const struct tb_maps *m, const struct banfile_entry *e, size_t n, bool replace, __u64 now);
/* Take p out of the manual list: -ENOENT when it is not there. */
int bans_del(const struct tb_maps *m, const struct tb_prefix *p, __u64 now);

/* A key a rule banned, and its entry. */
struct autoban {
	struct tb_addr key;
	struct tb_autoban a;
};

/* The automatic bans that hold at now, into *out (malloc'ed; *n). */
int autobans_read(const struct tb_maps *m, __u64 now, struct autoban **out, size_t *n);
struct ruleset;

/* Lift the automatic bans of keys inside p: of addresses, and of groups
 * no wider than p inside it (keys read back under their rules of rs);
 * *lifted says how many. */
int autobans_lift(const struct tb_maps *m, const struct ruleset *rs, const struct tb_prefix *p, __u64 now,
		  int *lifted);
/* Whether key is a shared bucket's (logic/ban.h); its shared[] slot. */
int autoban_shared_slot(const struct tb_addr *key);

#endif
