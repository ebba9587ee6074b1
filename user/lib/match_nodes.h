/* SPDX-License-Identifier: GPL-2.0 */
/* The rules' match nodes, for ruleset.c, which keeps them in step with
 * the rules it publishes. */
#ifndef TB_MATCH_NODES_H
#define TB_MATCH_NODES_H

#include <stdbool.h>
#include "lib/ruleset.h"

/* Whether rule r matches on protocol or ports. */
bool has_match(const struct tb_rule *r);
/* The live node of a prefix, or -1. */
int node_find(const struct ruleset *rs, __u8 family, __u8 len, const __u8 *addr);
/* Make the nodes what rs->rules but skip say, after a change of rule
 * changed (NULL: of any), each changed node written to a fresh slot and
 * then published; with write false, only whether they fit. Returns how
 * many nodes it wrote or removed, -E2BIG (a node too long) or -ENOSPC
 * (too many nodes). A node outside the changed rule's prefix is as it
 * was. */
int nodes_sync(struct ruleset *rs, int skip, const struct tb_rule *changed, bool write);
/* Whether rule r, at slot id, would leave every node within its bounds,
 * where slot old (-1: none) is retired. */
int nodes_fit(struct ruleset *rs, const struct tb_rule *r, int id, int old);
/* The nodes as published: every slot, and which the tries point at. */
int nodes_read(struct ruleset *rs);

#endif
