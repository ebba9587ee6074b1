// SPDX-License-Identifier: GPL-2.0
#include <stdio.h>
#include "lib/names.h"
#include "abi/tb_abi.h"

const char *const mode_names[] = { "xdp", "xdpgeneric", "tc-ingress", "tc-egress", NULL };
const char *const key_names[] = { "src", "dst", NULL };
const char *const cost_names[] = { "bytes", "packets", NULL };
const char *const action_names[] = { "drop", "monitor", "mark", "shape", "pass", "remark", NULL };
const char *const scope_names[] = { "per-address", "shared", "per-/LEN", NULL };
const char *const on_off_names[] = { "off", "on", NULL };

const char *scope_format(__u8 scope, __u8 len, char *buf, size_t size)
{
	if (scope != TB_SCOPE_GROUP)
		return scope_names[scope];
	snprintf(buf, size, "per-/%u", len);
	return buf;
}
