/* SPDX-License-Identifier: GPL-2.0 */
/* Network namespaces as tbctl tells them apart: by the inode of their
 * nsfs file, the number /proc/PID/ns/net, lsns and ip netns identify
 * them by, which reading takes no capability. */
#ifndef TB_NETNS_H
#define TB_NETNS_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

/* This process's network namespace; 0 when /proc cannot tell. */
__u64 netns_self(void);
/* The name ip netns gives namespace ino (a file under /var/run/netns
 * bound to it), into name[len]: false when it has none. */
bool netns_named(__u64 ino, char *name, size_t len);
/* How a message or status names namespace ino: its ip netns name, else
 * "net:[INO]", as /proc shows it. */
void netns_label(__u64 ino, char *buf, size_t len);

/* The namespace what names: an ip netns name, its inode, or "net:[INO]"
 * as /proc shows it. 0, or -ENOENT when there is no such name. */
int netns_resolve(const char *what, __u64 *ino);

/* Enter the namespace ip netns calls name (setns: CAP_SYS_ADMIN). 0, or
 * -errno (-ENOENT: no such name). */
int netns_enter(const char *name);

#endif
