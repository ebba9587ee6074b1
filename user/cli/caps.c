// SPDX-License-Identifier: GPL-2.0
/* Capabilities from capget(2): the effective set is all a command needs
 * to look at, and the syscall is all libcap would wrap for it. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include "cli/caps.h"
#include "view/output.h"

static const struct {
	int cap;
	const char *name;
} names[] = {
	{ CAP_BPF, "CAP_BPF" },
	{ CAP_PERFMON, "CAP_PERFMON" },
	{ CAP_NET_ADMIN, "CAP_NET_ADMIN" },
	{ CAP_SYS_ADMIN, "CAP_SYS_ADMIN" },
};
#define N_NAMES (int)(sizeof(names) / sizeof(names[0]))

static __u64 caps_effective(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3] = {};

	if (syscall(SYS_capget, &h, d))
		return 0;
	return (__u64)d[1].effective << 32 | d[0].effective;
}

static void list(char *buf, size_t size, __u64 caps)
{
	*buf = 0;
	for (int i = 0, n = 0; i < N_NAMES; i++)
		if (caps & CAPS(names[i].cap))
			snprintf(buf + strlen(buf), size - strlen(buf), "%s%s", n++ ? ", " : "", names[i].name);
}

int caps_require(const char *what, __u64 need)
{
	__u64 missing = need & ~caps_effective();
	char needs[128], lacks[128];

	if (!missing)
		return 0;
	list(needs, sizeof(needs), need);
	list(lacks, sizeof(lacks), missing);
	out_error("%s: permission denied: it needs %s; this process lacks %s", what, needs, lacks);
	return 1;
}
