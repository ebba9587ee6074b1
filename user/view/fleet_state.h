/* SPDX-License-Identifier: GPL-2.0 */
/* The fleet agent's state (struct tb_fleet_state) as status writes it,
 * in words or as JSON, and as the metrics' tbctl_fleet_* families: one
 * table of its fields for the three. */
#ifndef TB_FLEET_STATE_H
#define TB_FLEET_STATE_H

#include <stdio.h>
#include <json-c/json.h>
#include "abi/tb_abi.h"

/* As status's object "fleet", added to o. */
void fleet_state_json(const struct tb_fleet_state *fs, struct json_object *o);
/* As status's line. */
void fleet_state_text(FILE *f, const struct tb_fleet_state *fs);
/* Every tbctl_fleet_* family, a sample for each of the n devices whose
 * agent has run (fs[i].heartbeat_ns); labels[i] names fs[i]'s device
 * (prom_dev_labels). */
void fleet_state_prom(FILE *f, const char *const *labels, const struct tb_fleet_state *fs, int n);

#endif
