/* SPDX-License-Identifier: GPL-2.0 */
/* Bringing pins of an older layout (TB_LAYOUT) up to this build's, in
 * place, during attach. */
#ifndef TB_UPGRADE_H
#define TB_UPGRADE_H

#include "ruleset.h"

/* The layout a config claims (configs of layout 1 read 0). */
unsigned int upgrade_layout_of(const struct tb_config *cfg);
/* Fill in the config fields that layouts after cfg's added; done before
 * the new program is hooked, which reads them. */
void upgrade_config(struct tb_config *cfg);
/* What an older layout left incomplete in the maps, redone once the new
 * program is hooked; then the config's layout is set, last, so a kill
 * anywhere before leaves pins that the next attach upgrades again.
 * 0 or -errno. */
int upgrade_maps(const struct tb_maps *m, struct tb_config *cfg);

#endif
