// SPDX-License-Identifier: GPL-2.0
/* Taking tbctl off a device: its program, the qdiscs it made and its
 * pins, for detach and for attach's replace. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "view/output.h"
#include "lib/hook.h"
#include "lib/qdisc.h"
#include "lib/state.h"
#include "cli/tbctl.h"

int remove_attached(const char *cmd, const char *dev, const struct tb_config *c)
{
	struct tb_config cfg = *c;
	__u32 id = hooked_prog(dev, &cfg);
	int err = 0;

	if (id)
		err = unhook(cfg.ifindex, cfg.mode, id);
	/* The qdiscs tbctl made go too, hooked program or not: an attach
	 * killed before hooking it may have made them already. */
	if (!err && cfg.mode >= TB_MODE_TC_INGRESS && dev_here(dev, &cfg)) {
		/* Deleting the clsact deletes every filter on it: one that
		 * holds filters others added since stays. */
		int used = cfg.own_qdisc ? qdisc_clsact_in_use(cfg.ifindex) : 0;
		struct bpf_tc_hook hook;

		tc_hook_of(cfg.ifindex, cfg.mode, &hook);
		hook.attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS;
		if (cfg.own_qdisc && !used)
			bpf_tc_hook_destroy(&hook);
		else if (used > 0)
			out_warn("%s dev %s: the clsact qdisc tbctl made holds other filters; left it in place",
				 cmd, dev);
		else if (used < 0)
			out_warn("%s dev %s: list the clsact qdisc's filters: %s; left it in place", cmd, dev,
				 strerror(-used));
		/* Someone may have put another root qdisc in place of the fq
		 * tbctl installed: theirs stays. */
		if (cfg.own_fq && qdisc_fq_delete(cfg.ifindex) == -EINVAL)
			out_warn("%s dev %s: the root qdisc is no longer the fq tbctl installed; "
				 "left it in place", cmd, dev);
	}
	if (err) {
		out_error("%s dev %s: remove program: %s", cmd, dev, strerror(-err));
		return 1;
	}
	err = state_unpin(dev, true);
	if (err)
		out_error("%s dev %s: remove pins: %s", cmd, dev, strerror(-err));
	return err != 0;
}
