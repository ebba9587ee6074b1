/* SPDX-License-Identifier: GPL-2.0 */
/* Bringing the pins of the layout before this build's up to it during
 * attach (user/upgrade.c says how). */
#ifndef TB_UPGRADE_H
#define TB_UPGRADE_H

#include "lib/ruleset.h"

struct tb;

/* The maps an upgrade makes anew: old[i] is the old map's descriptor, -1
 * for a map kept in place; fresh[i] when this load made the new one (not
 * a killed upgrade, whose new maps the program on the device uses).
 * replace when the table is taken over into one placed anew; redo when a
 * killed upgrade's take-over is taken up again, under its config,
 * pending. */
struct upgrade_moves {
	int old[TB_N_MAPS];
	bool fresh[TB_N_MAPS];
	bool replace, redo;
	struct tb_config pending;
};

/* Nothing moved. */
void upgrade_moves_init(struct upgrade_moves *mv);
/* Pending pins left by an upgrade that was killed: renamed into place
 * when the program on the device (prog_id; 0: none) already uses them,
 * removed otherwise. Sets *finished when they were renamed. Left alone
 * when shared buckets or counters are still to be merged: attach then
 * upgrades again, with them. 0 or -errno. */
int upgrade_resume(const char *dev, __u32 prog_id, bool *finished);
/* Before load: which of dev's pinned maps, whose config is cfg, this
 * build lays out otherwise, and the table and config too when the table
 * is placed otherwise than a fresh attach places it. Those are pointed at
 * pending pins, so the load makes them anew, and the new program is
 * given the older ones to merge from; a change no upgrade can carry
 * (another type, key or size, a value that shrank, a map the datapath
 * writes other than the table, shared buckets and the global counters) is
 * -EPROTO, with upgrade_error() saying which. */
int upgrade_plan(const char *dev, struct tb *skel, const struct tb_config *cfg, struct upgrade_moves *mv);
/* The config the new program starts under, from the older one in cfg:
 * for a take-over, placed by a new key, in its first phase. 0 or -errno. */
int upgrade_config(const struct upgrade_moves *mv, struct tb_config *cfg);
const char *upgrade_error(void);
/* After load, before the hook: every entry of each moved map the datapath
 * only reads copied into its new map, each value by the beginning both
 * layouts share (the rest zero, which means "as before"); new shared
 * buckets made to stand in, empty, for the older ones; the older table
 * given to the new program. Maps taken up again are left. 0 or -errno. */
int upgrade_copy(const struct upgrade_moves *mv, struct tb *skel);
/* Every entry of map from into map to, values by their common beginning
 * (arrays in batches). 0 or -errno. */
int upgrade_copy_map(int from, int to);
/* After the hook: once no CPU runs the older program, what its shared
 * buckets and global counters hold is merged into the new maps, and the
 * older table taken over through the phases of enum tb_take_over, cfg
 * (the config written before the hook) following them. Safe to repeat
 * after a kill: what it moves, it leaves moved or zero. 0 or -errno. */
int upgrade_finish(const struct upgrade_moves *mv, struct tb *skel, struct tb_config *cfg);
/* After the hook: upgrade_finish, then the pending pins renamed over the
 * old ones, the config's last, so that until then every other command
 * sees the old layout and asks for attach. Closes the old maps.
 * 0 or -errno. */
int upgrade_settle(const char *dev, struct upgrade_moves *mv, struct tb *skel, struct tb_config *cfg);
/* An upgrade that failed before the hook: the pending pins this load
 * made removed, the old maps closed. 0 or -errno. */
int upgrade_abandon(const char *dev, struct upgrade_moves *mv);
/* Last: the pins the older layout had and this one has not removed, then
 * the config's layout set, so a kill anywhere before leaves pins that the
 * next attach upgrades again. 0 or -errno. */
int upgrade_maps(const char *dev, const struct tb_maps *m, struct tb_config *cfg);

#endif
