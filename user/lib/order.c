// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/utsname.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include "logic/order.h"
#include "lib/order.h"

/* BPF_LOAD_ACQ (Linux 6.15); older UAPI headers lack it. */
#ifndef BPF_LOAD_ACQ
#define BPF_LOAD_ACQ 0x100
#endif

static bool is_x86(const char *machine)
{
	static const char *const x86[] = { "x86_64", "i386", "i486", "i586", "i686" };

	for (size_t i = 0; i < sizeof(x86) / sizeof(x86[0]); i++)
		if (!strcmp(machine, x86[i]))
			return true;
	return false;
}

int order_check(__u8 form, const char *machine, bool fetch, char *why, size_t n)
{
	if (form == TB_ORDER_PLAIN && !is_x86(machine)) {
		snprintf(why, n, "these programs were built for x86, whose memory order they rely on, and this "
			 "machine is %s: build tbctl for it", machine);
		return -ENOTSUP;
	}
	if (form == TB_ORDER_FENCE && !fetch) {
		snprintf(why, n, "on %s the programs order memory with fetching BPF atomics, which this kernel "
			 "does not take (Linux 5.12 added them)", machine);
		return -ENOTSUP;
	}
	if (form != TB_ORDER_PLAIN && form != TB_ORDER_FENCE) {
		snprintf(why, n, "the programs order memory in a way this tbctl does not know (%u)", form);
		return -ENOTSUP;
	}
	return 0;
}

int order_supported(__u8 form, char *why, size_t n)
{
	struct utsname un;

	if (uname(&un)) {
		int err = errno;

		snprintf(why, n, "uname: %s", strerror(err));
		return -err;
	}
	return order_check(form, un.machine, form != TB_ORDER_FENCE || order_fetch_atomics(), why, n);
}

/* Whether the kernel loads a socket filter made of one atomic on a stack
 * word: the exchange's (code BPF_XCHG) or load-acquire's. A refusal for
 * want of privilege says nothing of the kernel: the load that follows
 * reports it. */
static bool kernel_takes(__s32 atomic)
{
	bool acquire = atomic == BPF_LOAD_ACQ;
	struct bpf_insn prog[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_1, .imm = 0 },
		{ .code = BPF_STX | BPF_DW | BPF_MEM, .dst_reg = BPF_REG_10, .src_reg = BPF_REG_1, .off = -8 },
		{ .code = BPF_STX | BPF_DW | BPF_ATOMIC, .dst_reg = acquire ? BPF_REG_1 : BPF_REG_10,
		  .src_reg = acquire ? BPF_REG_10 : BPF_REG_1, .off = -8, .imm = atomic },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, NULL, "GPL", prog, sizeof(prog) / sizeof(prog[0]),
			       NULL);

	if (fd < 0)
		return errno == EPERM;
	close(fd);
	return true;
}

bool order_fetch_atomics(void)
{
	static int known = -1;

	if (known < 0)
		known = kernel_takes(BPF_XCHG);
	return known;
}

bool order_acq_rel(void)
{
	static int known = -1;

	if (known < 0)
		known = kernel_takes(BPF_LOAD_ACQ);
	return known;
}
