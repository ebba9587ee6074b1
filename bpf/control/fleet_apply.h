/* SPDX-License-Identifier: GPL-2.0 */
/* The fleet agent's credit operations, run in the kernel. */
#ifndef TB_CONTROL_FLEET_APPLY_H
#define TB_CONTROL_FLEET_APPLY_H

#include "stages/fleet.h"

struct bpf_map;

/* One of the agent's operations on a key's credit (struct tb_fleet_opslot).
 * A grant over a lease that ran out first takes the old credit away: the
 * store has counted it as spent once the lease ended, and it must never
 * be spendable again. The credit is added before the lease is written, so
 * no packet spends new credit under an old lease, or old under a new. */
static long fleet_op(__u32 i, void *ctx)
{
	struct tb_fleet_opslot *o = bpf_map_lookup_elem(&fleetops, &i);
	struct tb_fleet_entry *e;

	if (!o)
		return 1;
	e = bpf_map_lookup_elem(&fleet, &o->k);
	o->done = e != 0;
	if (!e)
		return 0;
	if (o->op == TB_FLEET_TAKE) {
		o->amount = tb_credit_take(&e->credit);
	} else if (o->op == TB_FLEET_GRANT) {
		if (bpf_ktime_get_ns() >= READ_ONCE(e->expires_ns))
			tb_credit_take(&e->credit);
		__sync_fetch_and_add(&e->credit, o->amount);
		WRITE_ONCE(e->expires_ns, o->expires_ns);
	}
	return 0;
}

/* The fleet agent's operations applied (user/fleet/agent.c runs
 * tb_fleet_apply with req as the packet): credit granted and taken back
 * atomically against the datapath's spending. */
static __always_inline int tb_fleet_apply_run(const struct tb_fleet_req *req)
{
	if (req->n > TB_FLEET_OPS)
		return XDP_ABORTED;
	bpf_loop(req->n, fleet_op, 0, 0);
	return XDP_PASS;
}

#endif
