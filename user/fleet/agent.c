// SPDX-License-Identifier: GPL-2.0
/* The fleet agent. Each round it reads fleet[] (every key this host's
 * datapath has charged under a fleet rule), and for each key:
 *  - busy (it spent credit or was refused since the last round): asks the
 *    store for credit when it holds less than half of what its rate needs
 *    over the store's round trip and two rounds (agent_want);
 *  - holding credit whose lease is half gone: renews the lease;
 *  - idle for IDLE_ROUNDS rounds: takes its credit back and returns it;
 *  - idle, holding nothing, its share full again: deletes the key, unless
 *    a bucket the table keeps shows its refusals (kept_for_refusals).
 * A round's asks go to the store STORE_BATCH keys at a time, one call a
 * hash tag, pipelined: a round trip to each server. Grants and take-backs
 * are made by the datapath's own program (tb_fleet_apply), atomic against
 * the CPUs spending the credit. The store is never waited on by a packet:
 * a key short of credit is refused until the next round's grant lands. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "lib/clock.h"
#include "lib/ctlprog.h"
#include "lib/err.h"
#include "fleet/agent.h"
#include "lib/ruleset.h"
#include "lib/state.h"
#include "lib/tables.h"
#include "fleet/store.h"
#include "tb.skel.h"

#define STORE_BATCH 512
#define IDLE_ROUNDS 20
#define BACKOFF_MIN_MS 50
#define BACKOFF_MAX_MS 500
#define KEY_TEXT 200
#define FLEET_BATCH 4096U

struct akey {
	struct tb_fleet_key k;
	bool used;
	bool seen;              /* in this round's scan */
	__u64 spent, refused;   /* the entry's counts at the last round */
	double rate;            /* units/s spent or refused, smoothed */
	__u64 active_ns;        /* the latest round it was busy in */
	__u64 lease_end_ns;     /* of the credit it holds */
	__u64 next_ask_ns;      /* no ask for more before */
	__u64 kept_until_ns;    /* kept for its refusals: not looked at again before */
	__u64 ret;              /* taken back, not yet returned */
	/* this round */
	__u64 have, want;
	bool ask, renew, take;
	int rule;
};

struct agent {
	const struct agent_opts *o;
	struct tb_maps m;
	struct tb *skel;
	struct ruleset rs;
	int rule_of[TB_MAX_RULES];      /* shared[] slot -> rules[] slot of its fleet rule; -1: none */
	bool ready;                     /* rule_of[] made */
	struct store st;
	struct akey *keys;      /* [max], n used */
	struct tb_fleet_key *bk;        /* [max]: fleet[] as read this round */
	struct tb_fleet_entry *bv;
	int *idx;               /* [cap] */
	size_t max, cap, n;
	struct tb_fleet_state fs;
	__u64 rtt_ns, next_try_ns, backoff_ms;
	char host[64];
};

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
	(void)sig;
	stopping = 1;
}

static size_t key_hash(const struct tb_fleet_key *k)
{
	size_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < sizeof(*k); i++)
		h = (h ^ ((const unsigned char *)k)[i]) * 1099511628211ULL;
	return h;
}

/* keys[] holds the n keys densely, in no order; idx[] (open addressing,
 * cap slots, -1 free) finds them. NULL when k is new and !add, or there
 * is no room. */
static struct akey *key_find(struct agent *a, const struct tb_fleet_key *k, bool add)
{
	for (size_t i = key_hash(k) & (a->cap - 1);; i = (i + 1) & (a->cap - 1)) {
		if (a->idx[i] < 0) {
			if (!add || a->n == a->max)
				return NULL;
			a->idx[i] = (int)a->n;
			memset(&a->keys[a->n], 0, sizeof(a->keys[a->n]));
			a->keys[a->n].used = true;
			a->keys[a->n].k = *k;
			return &a->keys[a->n++];
		}
		if (!memcmp(&a->keys[a->idx[i]].k, k, sizeof(*k)))
			return &a->keys[a->idx[i]];
	}
}

/* Drop the keys no longer used, and index the rest again: open
 * addressing without tombstones. */
static void keys_compact(struct agent *a)
{
	size_t n = 0;

	for (size_t i = 0; i < a->n; i++)
		if (a->keys[i].used)
			a->keys[n++] = a->keys[i];
	memset(a->idx, -1, a->cap * sizeof(*a->idx));
	a->n = 0;
	for (size_t i = 0; i < n; i++) {
		struct akey k = a->keys[i];

		*key_find(a, &k.k, true) = k;
	}
}

/* Run ops[0..n) through tb_fleet_apply. */
static int apply_ops(struct agent *a, struct tb_fleet_opslot *ops, __u32 n)
{
	struct tb_fleet_req req = { .n = n };
	int fd = bpf_map__fd(a->skel->maps.fleetops), err;

	for (__u32 i = 0; i < n; i++)
		if (bpf_map_update_elem(fd, &i, &ops[i], BPF_ANY))
			return -errno;
	if ((err = ctlprog_run(a->skel->progs.tb_fleet_apply, &req, sizeof(req), false)))
		return err;
	for (__u32 i = 0; i < n; i++)
		if (bpf_map_lookup_elem(fd, &i, &ops[i]))
			return -errno;
	return 0;
}

static int rules_refresh(struct agent *a)
{
	__u32 gen = a->rs.cfg.gen, id = a->rs.rules_map_id;
	int err = ruleset_read(&a->rs, &a->m);

	if (err)
		return err;
	if (a->ready && gen == a->rs.cfg.gen && id == a->rs.rules_map_id)
		return 0;
	a->ready = true;
	for (int i = 0; i < TB_MAX_RULES; i++)
		a->rule_of[i] = -1;
	for (int i = 0; i < TB_MAX_RULES; i++)
		if (a->rs.rules[i].in_use && a->rs.rules[i].fleet)
			a->rule_of[a->rs.rules[i].shared] = i;
	return 0;
}

/* The least credit a key of rule r asks for: a frame, in its units. */
static __u64 frame_of(const struct tb_rule *r)
{
	return r->cost == TB_COST_PACKETS ? 1 : AGENT_FRAME;
}

/* The key's name in the store, into buf, and its tag: its rule's prefix
 * (and match), and its address, group, or "total" for a shared rule's
 * one key. Made only for the keys a round asks about. */
static unsigned int key_name(const struct agent *a, const struct akey *k, char *buf, size_t len)
{
	const struct tb_rule *r = &a->rs.rules[k->rule];
	char rule[PREFIX_TEXT_MAX], addr[64];

	rule_format(r, rule, sizeof(rule));
	if (r->scope == TB_SCOPE_SHARED)
		snprintf(addr, sizeof(addr), "total");
	else
		ruleset_addr_format(&a->rs, &k->k.key, k->rule, addr, sizeof(addr));
	return store_key(a->o->fleet, rule, addr, buf, len);
}

/* All of fleet[] into bk[] and bv[], a batch of syscalls; how many. */
static int fleet_read(struct agent *a)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	__u32 n = 0, count, batch;
	void *from = NULL;
	int err;

	do {
		count = a->max - n < FLEET_BATCH ? a->max - n : FLEET_BATCH;
		if (!count)
			break;
		err = bpf_map_lookup_batch(a->m.fleet, from, &batch, a->bk + n, a->bv + n, &count, &opts);
		if (err && errno != ENOENT)
			return -errno;
		n += count;
		from = &batch;
	} while (!err);
	return (int)n;
}

/* Whether an idle key holding nothing stays for its refusals: show, top
 * and the metrics read a bucket's fleet refusals from its key, a counter
 * only a reset may lower, so the key lives as long as its bucket does.
 * Only a bucket the table spares (TB_SEEN_AGAIN, table.h) keeps its key:
 * a flood of sources seen once cannot fill fleet[], which has a way for
 * every bucket. A shared rule's one key lives with its rule. Looked at
 * again once every IDLE_ROUNDS rounds: a set is a kilobyte to read. */
static bool kept_for_refusals(struct agent *a, struct akey *ak, const struct tb_fleet_entry *e,
			      const struct tb_rule *r, __u64 now, __u64 interval)
{
	struct tb_config cfg;
	struct tb_bucket b;

	if (!e->refused)
		return false;
	if (now < ak->kept_until_ns || r->scope == TB_SCOPE_SHARED)
		return true;
	if (state_read_config(&a->m, &cfg) || bucket_get(&a->m, &cfg, &ak->k.key, &b) ||
	    !(b.rule & TB_SEEN_AGAIN) || (b.rule & TB_RULE_INDEX) != ak->rule)
		return false;
	ak->kept_until_ns = now + IDLE_ROUNDS * interval;
	return true;
}

/* Units counted since the last round in one of an entry's cumulative
 * counts; a reset (tb_reset_counters) zeroes refusals. */
static __u64 since(__u64 was, __u64 is)
{
	return is >= was ? is - was : is;
}

/* Read fleet[] and decide each key's part in this round. */
static int scan(struct agent *a, __u64 now, __u64 dt_ns, bool *deleted)
{
	__u64 interval = (__u64)a->o->interval_ms * 1000000ULL, lease = (__u64)a->o->lease_ms * 1000000ULL;
	int got = fleet_read(a);

	if (got < 0)
		return got;
	for (size_t i = 0; i < a->n; i++)
		a->keys[i].seen = false;
	a->fs.keys = got;
	for (int j = 0; j < got; j++) {
		const struct tb_fleet_key k = a->bk[j];
		const struct tb_fleet_entry e = a->bv[j];
		struct akey *ak;
		const struct tb_rule *r;
		__u64 d;
		int rule;

		ak = key_find(a, &k, true);
		if (!ak)
			continue;
		ak->seen = true;
		rule = k.rule < TB_MAX_RULES ? a->rule_of[k.rule] : -1;
		ak->ask = ak->renew = ak->take = false;
		ak->want = 0;
		d = since(ak->spent, e.spent) + since(ak->refused, e.refused);
		ak->spent = e.spent;
		ak->refused = e.refused;
		ak->have = e.credit > 0 && e.expires_ns > now ? (__u64)e.credit : 0;
		if (d)
			ak->active_ns = now;
		if (dt_ns)
			ak->rate = ak->rate * 0.5 + (double)d * 1e9 / (double)dt_ns * 0.5;
		ak->rule = rule;
		if (rule < 0) {
			/* The rule is gone, or no longer a fleet rule: the key
			 * can no longer be named in the store, and what it
			 * holds lapses there with its lease. */
			ak->ret = 0;
			ak->take = e.credit > 0;
			if (!ak->take && !ak->ret && bpf_map_delete_elem(a->m.fleet, &k) == 0) {
				ak->used = false;
				*deleted = true;
			}
			continue;
		}
		r = &a->rs.rules[rule];
		if (now - ak->active_ns > IDLE_ROUNDS * interval) {
			ak->take = e.credit > 0;
			ak->ask = ak->ret > 0;
			if (!ak->take && !ak->ret && e.credit <= 0 &&
			    (!r->share.rate || now - e.share.last_ns >= r->share.fill_ns) &&
			    now - e.last_ns > IDLE_ROUNDS * interval && !kept_for_refusals(a, ak, &e, r, now, interval) &&
			    bpf_map_delete_elem(a->m.fleet, &k) == 0) {
				ak->used = false;
				*deleted = true;
			}
			continue;
		}
		/* A key the store could not give all it asked for waits until
		 * the store has refilled a frame at the key's rate. At least a
		 * frame is asked for, and no more: credit a host holds is part
		 * of the key's burst, and a host that holds more than it
		 * spends soon keeps it from the others. */
		if (d && now >= ak->next_ask_ns)
			ak->want = agent_want(ak->rate, a->rtt_ns, interval, ak->have,
					      frame_of(r), r->burst);
		ak->renew = ak->have && ak->lease_end_ns < now + lease / 2;
		ak->ask = ak->want || ak->renew || ak->ret;
	}
	for (size_t i = 0; i < a->n; i++)
		if (a->keys[i].used && !a->keys[i].seen) {
			a->keys[i].used = false;
			*deleted = true;
		}
	return 0;
}

/* Take back the credit of the keys marked take; it is returned by this
 * round's call, or a later one. */
static int take_back(struct agent *a)
{
	struct tb_fleet_opslot ops[TB_FLEET_OPS];
	struct akey *of[TB_FLEET_OPS];
	__u32 n = 0;
	int err;

	for (size_t i = 0; i <= a->n; i++) {
		if (n == TB_FLEET_OPS || (i == a->n && n)) {
			if ((err = apply_ops(a, ops, n)))
				return err;
			for (__u32 j = 0; j < n; j++) {
				of[j]->have = 0;
				if (of[j]->rule < 0)
					continue;
				of[j]->ret += ops[j].amount > 0 ? ops[j].amount : 0;
				of[j]->ask = of[j]->ret > 0;
			}
			n = 0;
		}
		if (i == a->n)
			break;
		if (!a->keys[i].used || !a->keys[i].take)
			continue;
		memset(&ops[n], 0, sizeof(ops[n]));
		ops[n].k = a->keys[i].k;
		ops[n].op = TB_FLEET_TAKE;
		of[n++] = &a->keys[i];
	}
	return 0;
}

static void status_write(struct agent *a)
{
	__u32 zero = 0;

	bpf_map_update_elem(a->m.fleetstate, &zero, &a->fs, BPF_ANY);
}

static void store_down(struct agent *a, __u64 now)
{
	a->fs.errors++;
	a->fs.reachable = 0;
	snprintf(a->fs.error, sizeof(a->fs.error), "%s", a->st.error);
	a->fs.share_off = a->o->closed;
	a->backoff_ms = a->backoff_ms ? a->backoff_ms * 2 : BACKOFF_MIN_MS;
	if (a->backoff_ms > BACKOFF_MAX_MS)
		a->backoff_ms = BACKOFF_MAX_MS;
	a->next_try_ns = now + a->backoff_ms * 1000000ULL;
	store_close(&a->st);
}

/* One store round for asks[0..n) and the grants it brings. An ask the
 * store did not take keeps what it returns for the next round. */
static int call(struct agent *a, struct akey **ks, struct store_ask *asks, size_t n, __u64 now)
{
	struct tb_fleet_opslot ops[TB_FLEET_OPS];
	struct akey *opk[TB_FLEET_OPS];
	__u64 sent = now_ns(), lease = (__u64)a->o->lease_ms * 1000000ULL, end;
	char epoch[sizeof(a->fs.epoch)] = "";
	__u32 m = 0;
	int err, left;

	left = store_grant(&a->st, a->o->fleet, a->host, a->o->lease_ms, asks, n, epoch, sizeof(epoch));
	if ((size_t)left == n) {
		store_down(a, now);
		return -EIO;
	}
	a->rtt_ns = now_ns() - sent;
	a->fs.rtt_ns = a->rtt_ns;
	a->fs.calls++;
	a->fs.reachable = 1;
	a->fs.share_off = 0;
	a->backoff_ms = 0;
	if (left) {
		a->fs.errors++;
		snprintf(a->fs.error, sizeof(a->fs.error), "%s", a->st.error);
	} else {
		a->fs.error[0] = 0;
	}
	if (epoch[0])
		snprintf(a->fs.epoch, sizeof(a->fs.epoch), "%s", epoch);
	/* The lease counts from before the ask, and ends a little early:
	 * the store's starts later, by its own clock. */
	end = sent + lease - lease / 32;
	for (size_t i = 0; i <= n; i++) {
		if (m == TB_FLEET_OPS || (i == n && m)) {
			if ((err = apply_ops(a, ops, m)))
				return err;
			for (__u32 j = 0; j < m; j++)
				if (!ops[j].done)
					/* Deleted meanwhile: returned by the next call. */
					opk[j]->ret += ops[j].amount;
			m = 0;
		}
		if (i == n)
			break;
		if (!asks[i].done)
			continue;
		a->fs.returned += ks[i]->ret;
		ks[i]->ret = 0;
		memset(&ops[m], 0, sizeof(ops[m]));
		ops[m].k = ks[i]->k;
		ops[m].op = TB_FLEET_GRANT;
		ops[m].amount = asks[i].granted;
		ops[m].expires_ns = end;
		ks[i]->lease_end_ns = end;
		if (asks[i].granted < asks[i].want) {
			const struct tb_rule *r = &a->rs.rules[ks[i]->rule];

			ks[i]->next_ask_ns = now + frame_of(r) * 1000000000ULL / (r->r.rate ? r->r.rate : 1);
		}
		a->fs.granted += asks[i].granted;
		if (asks[i].granted)
			a->fs.last_grant_ns = now;
		opk[m++] = ks[i];
	}
	return 0;
}

/* The round's store calls; an error only when the datapath's program
 * failed, which the agent cannot go on without. */
static int round_trip(struct agent *a, __u64 now)
{
	static struct akey *ks[STORE_BATCH];
	static struct store_ask asks[STORE_BATCH];
	static char names[STORE_BATCH][KEY_TEXT];
	size_t n = 0;
	int err;

	if (now < a->next_try_ns)
		return 0;
	if (!a->st.nnodes && store_connect(&a->st)) {
		store_down(a, now);
		return 0;
	}
	for (size_t i = 0; i <= a->n; i++) {
		if (n == STORE_BATCH || (i == a->n && n)) {
			err = call(a, ks, asks, n, now);
			if (err)
				return err == -EIO ? 0 : err;
			n = 0;
		}
		if (i == a->n)
			break;
		if (!a->keys[i].used || !a->keys[i].ask || a->keys[i].rule < 0)
			continue;
		ks[n] = &a->keys[i];
		asks[n] = (struct store_ask){ .key = names[n], .tag = key_name(a, &a->keys[i], names[n], sizeof(names[n])),
					      .rate = a->rs.rules[a->keys[i].rule].r.rate,
					      .burst = a->rs.rules[a->keys[i].rule].burst,
					      .have = a->keys[i].have, .want = a->keys[i].want, .ret = a->keys[i].ret };
		n++;
	}
	return 0;
}

/* At the end: every key's credit back to the store. */
static void give_back(struct agent *a)
{
	for (size_t i = 0; i < a->n; i++)
		if (a->keys[i].used) {
			a->keys[i].take = true;
			a->keys[i].want = 0;
			a->keys[i].renew = false;
			a->keys[i].ask = false;
		}
	if (take_back(a))
		return;
	for (size_t i = 0; i < a->n; i++)
		if (a->keys[i].used)
			a->keys[i].have = 0;
	a->next_try_ns = 0;
	if ((round_trip(a, now_ns()) || a->fs.error[0]) && a->o->warn)
		a->o->warn(a->o, a->fs.error[0] ? a->fs.error : "the datapath's program failed");
}

static int agent_open(struct agent *a, struct tb_err *e)
{
	struct tb_config cfg;
	char why[256];
	__u32 zero = 0;
	int err;

	if ((err = bpffs_ensure()))
		return tb_fail(e, err, "bpffs unavailable at %s: %s", TB_BPFFS, bpffs_error(err));
	if ((err = state_open(a->o->dev, &a->m)))
		return tb_fail(e, err, "%s", state_open_why(a->o->dev, err, why, sizeof(why)));
	if (bpf_map_lookup_elem(a->m.config, &zero, &cfg))
		return tb_fail(e, -errno, "read config: %s", strerror(errno));
	a->skel = ctlprog_open(a->o->dev, cfg.max_addrs, "tb_fleet_apply");
	if (!a->skel)
		return tb_fail(e, -errno, "load the BPF object: %s", strerror(errno));
	a->max = cfg.max_addrs;
	a->cap = 1;
	while (a->cap < a->max * 2)
		a->cap <<= 1;
	a->keys = calloc(a->max, sizeof(*a->keys));
	a->idx = malloc(a->cap * sizeof(*a->idx));
	a->bk = calloc(a->max, sizeof(*a->bk));
	a->bv = calloc(a->max, sizeof(*a->bv));
	if (!a->keys || !a->idx || !a->bk || !a->bv)
		return tb_fail(e, -ENOMEM, "%s", strerror(ENOMEM));
	memset(a->idx, -1, a->cap * sizeof(*a->idx));
	if ((err = rules_refresh(a)))
		return tb_fail(e, err, "read rules: %s", strerror(-err));
	return 0;
}

int agent_run(const struct agent_opts *o, struct tb_err *e)
{
	static struct agent a;
	struct sigaction sa = { .sa_handler = on_signal };
	char err[160];
	__u64 last, interval = (__u64)o->interval_ms * 1000000ULL;
	int rc;

	memset(&a, 0, sizeof(a));
	a.o = o;
	snprintf(a.host, sizeof(a.host), "%s", o->host);
	if (store_parse_url(o->store, &a.st, err, sizeof(err)))
		return tb_fail(e, -EINVAL, "%s", err);
	a.st.timeout_ms = o->interval_ms * 4 > 100 ? o->interval_ms * 4 : 100;
	if (store_connect(&a.st))
		return tb_fail(e, -ECONNREFUSED, "store %s: %s", o->store, a.st.error);
	if ((rc = agent_open(&a, e)))
		goto out;
	store_where(&a.st, a.fs.store, sizeof(a.fs.store));
	snprintf(a.fs.fleet, sizeof(a.fs.fleet), "%s", o->fleet);
	a.fs.pid = getpid();
	a.fs.reachable = 1;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	last = now_ns();
	while (!stopping) {
		__u64 now = now_ns();
		bool deleted = false;
		struct timespec ts;

		if ((rc = rules_refresh(&a)) || (rc = scan(&a, now, now - last, &deleted)) || (rc = take_back(&a))) {
			tb_fail(e, rc, "%s", strerror(-rc));
			goto out;
		}
		if (deleted)
			keys_compact(&a);
		if ((rc = round_trip(&a, now))) {
			tb_fail(e, rc, "grant credit: %s", strerror(-rc));
			goto out;
		}
		a.fs.heartbeat_ns = now;
		status_write(&a);
		last = now;
		now = now_ns();
		if (now < last + interval) {
			ts.tv_sec = (last + interval - now) / 1000000000ULL;
			ts.tv_nsec = (last + interval - now) % 1000000000ULL;
			nanosleep(&ts, NULL);
		}
	}
	give_back(&a);
	rc = 0;
out:
	a.fs.pid = 0;
	a.fs.reachable = 0;
	if (a.m.fleetstate > 0)
		status_write(&a);
	store_close(&a.st);
	if (a.skel)
		tb__destroy(a.skel);
	free(a.keys);
	free(a.idx);
	free(a.bk);
	free(a.bv);
	return rc;
}
