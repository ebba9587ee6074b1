/* SPDX-License-Identifier: GPL-2.0 */
/* The fleet agent (tbctl fleet run): tops up this host's credit on the
 * fleet keys its datapath sees, from the store, ahead of need. */
#ifndef TB_AGENT_H
#define TB_AGENT_H

#include <stdbool.h>
#include <linux/types.h>

struct agent_opts {
	const char *dev;
	const char *store;      /* redis://HOST[:PORT] */
	const char *fleet;      /* the fleet's name: its keys' prefix in the store */
	const char *host;       /* this host's name in the store; unique in the fleet */
	__u32 interval_ms;      /* between rounds */
	__u32 lease_ms;         /* how long granted credit may be spent */
	bool closed;            /* fallback closed: no static share while the store is unreachable */
	/* Told what went wrong at the end, when the unspent credit could
	 * not be given back (it lapses with its lease). */
	void (*warn)(const struct agent_opts *o, const char *why);
};

/* A full Ethernet frame: the least credit a byte-counting key asks for. */
#define AGENT_FRAME 1514

/* How much credit to ask for: a key that spent (or was refused) at rate
 * units/s should hold enough for the store's round trip and two rounds,
 * twice over, and at least min; asked for once it holds less than half
 * of that. Pure (tests/unit/test_fleet.c). */
static inline __u64 agent_want(double rate, __u64 rtt_ns, __u64 interval_ns, __u64 have, __u64 min,
				__u64 burst)
{
	double need = rate * (double)(rtt_ns + 2 * interval_ns) / 1e9 * 2;
	__u64 target = need >= (double)burst ? burst : (__u64)need;

	if (target < min)
		target = min;
	if (target > burst)
		target = burst;
	return have * 2 >= target ? 0 : target - have;
}

/* Run until SIGINT or SIGTERM; then give back what credit is unspent.
 * -errno, said in e, when the store or the device's pins cannot be used
 * (at start: then nothing was changed). */
struct tb_err;
int agent_run(const struct agent_opts *o, struct tb_err *e);

#endif
