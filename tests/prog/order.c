// SPDX-License-Identifier: GPL-2.0
/* The memory order the loaded programs keep (bpf/logic/order.h): the form
 * the object was built in fits this machine, its fences are in the
 * instructions, and the kernel probes say what this kernel takes. */
#define _GNU_SOURCE
#include <sys/utsname.h>
#include "prog.h"

/* Of a program's instructions, the exchanges on a stack word: the fences
 * of the fence form, and nothing else makes one. */
static int stack_exchanges(const struct bpf_program *p)
{
	const struct bpf_insn *in = bpf_program__insns(p);
	int n = 0;

	for (size_t i = 0; i < bpf_program__insn_cnt(p); i++)
		n += in[i].code == (BPF_STX | BPF_DW | BPF_ATOMIC) && in[i].imm == BPF_XCHG &&
		     in[i].dst_reg == BPF_REG_10;
	return n;
}

static void the_object_orders_as_this_machine_needs(void)
{
	struct utsname un;
	char why[256] = "";
	bool x86;
	__u8 form;

	setup();
	CHECK(!uname(&un), "uname");
	x86 = !strcmp(un.machine, "x86_64");
	form = skel->rodata->tb_order_form;
	CHECK_EQ(form, x86 ? TB_ORDER_PLAIN : TB_ORDER_FENCE, "the object's form on %s", un.machine);
	CHECK(!order_supported(form, why, sizeof(why)), "this machine and kernel take it: %s", why);
	for (int tc = 0; tc < 2; tc++) {
		const struct bpf_program *p = tc ? skel->progs.tb_tc : skel->progs.tb_xdp;
		int fences = stack_exchanges(p);

		if (x86)
			CHECK_EQ(fences, 0, "%s: plain loads and stores, no fence", bpf_program__name(p));
		else
			CHECK(fences >= 10, "%s: %d fences, an exchange on a stack word each", bpf_program__name(p),
			      fences);
	}
	teardown();
}

/* Fetching atomics came in 5.12, load-acquire and store-release in 6.15:
 * the probes agree with the kernel's version. */
static void the_probes_agree_with_the_kernel(void)
{
	struct utsname un;
	int major = 0, minor = 0;
	bool acq_rel;

	CHECK(!uname(&un) && sscanf(un.release, "%d.%d", &major, &minor) == 2, "the kernel's version: %s",
	      un.release);
	acq_rel = major > 6 || (major == 6 && minor >= 15);
	CHECK(order_fetch_atomics(), "%s takes fetching atomics", un.release);
	CHECK_EQ(order_acq_rel(), acq_rel, "%s %s load-acquire and store-release", un.release,
		 acq_rel ? "takes" : "refuses");
	setup();
	CHECK_EQ(skel->rodata->tb_acq_rel, acq_rel, "the object loaded with tb_acq_rel as the probe said");
	teardown();
}

TOPIC(prog_order,
	T(the_object_orders_as_this_machine_needs),
	T(the_probes_agree_with_the_kernel)
);
