/* SPDX-License-Identifier: GPL-2.0 */
/* The capabilities a command needs, checked before it touches anything:
 * tbctl runs as any user that holds them, root or not. */
#ifndef CAPS_H
#define CAPS_H

#include <linux/capability.h>
#include <linux/types.h>

#define CAPS(c) (1ULL << (c))
/* Every command: the bpf() syscall, with unprivileged BPF off. */
#define CAPS_READ CAPS(CAP_BPF)
/* Loading tbctl's programs (reset runs one): XDP and tc programs load
 * only with CAP_NET_ADMIN, and the verifier lets only CAP_PERFMON's
 * holders do the pointer arithmetic they do. */
#define CAPS_LOAD (CAPS_READ | CAPS(CAP_PERFMON) | CAPS(CAP_NET_ADMIN))
/* Taking them off a device: netlink's XDP and tc changes take
 * CAP_NET_ADMIN, and opening a program by its id (to tell tbctl's on a
 * device from another's, and to replace only that one) CAP_SYS_ADMIN. */
#define CAPS_UNHOOK (CAPS_READ | CAPS(CAP_NET_ADMIN) | CAPS(CAP_SYS_ADMIN))
/* Loading and hooking them. */
#define CAPS_HOOK (CAPS_LOAD | CAPS_UNHOOK)

/* 0 when the process holds every capability of need, effective; else
 * says which it lacks, as what (a command, "dev DEV" and all), and
 * returns 1. */
int caps_require(const char *what, __u64 need);

#endif
