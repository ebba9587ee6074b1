/* SPDX-License-Identifier: GPL-2.0 */
/* Bringing pins of an older layout (TB_LAYOUT) up to this build's during
 * attach: maps whose layout is unchanged are kept in place; maps whose
 * values grew are made anew, pinned aside until the new program is hooked
 * and everything is moved into them: copied before the hook for maps the
 * datapath only reads, taken over by the new program and merged after the
 * hook for buckets, shared buckets and the global counters. */
#ifndef TB_UPGRADE_H
#define TB_UPGRADE_H

#include "ruleset.h"

struct tb;

/* Where a map's new copy is pinned until the program that uses it is
 * hooked: then it is renamed over the old map's pin. */
#define TB_PENDING ":pending"

/* The maps an upgrade makes anew: old[i] is the old map's descriptor, -1
 * for a map kept in place; fresh[i] when this load made the new one (not
 * a killed upgrade, whose new maps the program on the device uses). */
struct upgrade_moves {
	int old[TB_N_MAPS];
	bool fresh[TB_N_MAPS];
	int inner;      /* the older buckets' inner map template, or -1 */
};

/* Nothing moved. */
void upgrade_moves_init(struct upgrade_moves *mv);
/* Before load: give the new program older map fd of TB_MAPS entry i
 * (buckets, shared or stats) to take over or merge from. 0 or -errno. */
int upgrade_bind_prev(struct tb *skel, struct upgrade_moves *mv, int i, int fd);

/* The layout a config claims (configs of layout 1 read 0). */
unsigned int upgrade_layout_of(const struct tb_config *cfg);
/* Pending pins left by an upgrade that was killed: renamed into place
 * when the program on the device (prog_id; 0: none) already uses them,
 * removed otherwise. Sets *finished when they were renamed. Left alone
 * when that program is still taking buckets over: attach then upgrades
 * again, with them. 0 or -errno. */
int upgrade_resume(const char *dev, __u32 prog_id, bool *finished);
/* Before load: which of dev's pinned maps this build lays out otherwise.
 * Those are pointed at pending pins, so the load makes them anew, and the
 * new program is given the older buckets to take over; a change no
 * upgrade can carry (another type, key or size, a value that shrank, a
 * lock, drop cache or owed[] that changed) is -EPROTO, with
 * upgrade_error() saying which. */
int upgrade_plan(const char *dev, struct tb *skel, struct upgrade_moves *mv);
const char *upgrade_error(void);
/* After load, before the hook: every entry of each moved map the datapath
 * only reads copied into its new map, each value by the beginning both
 * layouts share (the rest zero, which means "as before"); the older
 * buckets handed to the new program; new shared buckets made to stand in,
 * empty, for the older ones. 0 or -errno. */
int upgrade_copy(const struct upgrade_moves *mv, struct tb *skel);
/* Every entry of map from into map to, values by their common beginning
 * (arrays in batches). 0 or -errno. */
int upgrade_copy_map(int from, int to);
/* After the hook: once no CPU runs the older program, what its buckets,
 * shared buckets and global counters still hold is moved into the new
 * maps, and the new program lets go of the older buckets. Safe to repeat
 * after a kill: what it moves, it leaves moved or zero. 0 or -errno. */
int upgrade_finish(const struct upgrade_moves *mv, struct tb *skel);
/* After the hook: upgrade_finish, then the pending pins renamed over the
 * old ones, the config's last, so that until then every other command
 * sees the old layout and asks for attach. Closes the old maps.
 * 0 or -errno. */
int upgrade_settle(const char *dev, struct upgrade_moves *mv, struct tb *skel);
/* An upgrade that failed before the hook: the pending pins this load
 * made removed, the old maps closed. 0 or -errno. */
int upgrade_abandon(const char *dev, struct upgrade_moves *mv);
/* Fill in the config fields that layouts after cfg's added (owed[]'s
 * size, the slot seed); done before the new program is hooked, which
 * reads them. */
void upgrade_config(struct tb_config *cfg);
/* What an older layout left incomplete in the maps, redone once the new
 * program is hooked and the maps are settled; then the config's layout
 * is set, last, so a kill anywhere before leaves pins that the next
 * attach upgrades again. 0 or -errno. */
int upgrade_maps(const struct tb_maps *m, struct tb_config *cfg);

#endif
