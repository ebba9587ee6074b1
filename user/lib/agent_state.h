/* SPDX-License-Identifier: GPL-2.0 */
/* The fleet agent's state as its pinned record (struct tb_fleet_state)
 * and the process table say it, for status, fleet show and the metrics. */
#ifndef TB_AGENT_STATE_H
#define TB_AGENT_STATE_H

#include "abi/tb_abi.h"

/* "running", "stalled" (no heartbeat for 2 s), "gone (killed)",
 * "stopped" or "never run". */
const char *fleet_agent_state(const struct tb_fleet_state *fs);

#endif
