// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <signal.h>
#include "lib/agent_state.h"
#include "lib/clock.h"

const char *fleet_agent_state(const struct tb_fleet_state *fs)
{
	if (!fs->pid)
		return fs->heartbeat_ns ? "stopped" : "never run";
	if (kill((pid_t)fs->pid, 0) && errno == ESRCH)
		return "gone (killed)";
	return now_ns() - fs->heartbeat_ns > 2000000000ULL ? "stalled" : "running";
}
