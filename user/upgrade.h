/* SPDX-License-Identifier: GPL-2.0 */
/* Bringing pins of an older layout (TB_LAYOUT) up to this build's during
 * attach: maps whose layout is unchanged are kept in place, maps the
 * datapath only reads and whose values changed size are copied into new
 * maps, pinned aside until the new program is hooked. */
#ifndef TB_UPGRADE_H
#define TB_UPGRADE_H

#include "ruleset.h"

struct tb;

/* Where a map's new copy is pinned until the program that uses it is
 * hooked: then it is renamed over the old map's pin. */
#define TB_PENDING ":pending"

/* The maps an upgrade copies: old[i] is the old map's descriptor, -1 for
 * a map kept in place. */
struct upgrade_moves {
	int old[TB_N_MAPS];
};

/* The layout a config claims (configs of layout 1 read 0). */
unsigned int upgrade_layout_of(const struct tb_config *cfg);
/* Pending pins left by an upgrade that was killed: renamed into place
 * when the program on the device (prog_id; 0: none) already uses them,
 * removed otherwise. Sets *finished when they were renamed. 0 or -errno. */
int upgrade_resume(const char *dev, __u32 prog_id, bool *finished);
/* Before load: which of dev's pinned maps this build lays out otherwise.
 * Those are pointed at pending pins, so the load makes them anew; a
 * change that no copy can carry (a map the datapath writes, another type
 * or key, another size) is -EPROTO, with upgrade_error() saying which. */
int upgrade_plan(const char *dev, struct tb *skel, struct upgrade_moves *mv);
const char *upgrade_error(void);
/* After load, before the hook: every entry of each moved map copied into
 * its new map, each value by the beginning both layouts share (the rest
 * zero, which means "as before"). 0 or -errno. */
int upgrade_copy(const struct upgrade_moves *mv, const struct tb_maps *m);
/* After the hook: the pending pins renamed over the old ones, the
 * config's last, so that until then every other command sees the old
 * layout and asks for attach. Closes the old maps. 0 or -errno. */
int upgrade_settle(const char *dev, struct upgrade_moves *mv);
/* An upgrade that failed before the hook: the pending pins removed, the
 * old maps closed. 0 or -errno. */
int upgrade_abandon(const char *dev, struct upgrade_moves *mv);
/* Fill in the config fields that layouts after cfg's added; done before
 * the new program is hooked, which reads them. */
void upgrade_config(struct tb_config *cfg);
/* What an older layout left incomplete in the maps, redone once the new
 * program is hooked; then the config's layout is set, last, so a kill
 * anywhere before leaves pins that the next attach upgrades again.
 * 0 or -errno. */
int upgrade_maps(const struct tb_maps *m, struct tb_config *cfg);

#endif
