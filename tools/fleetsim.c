// SPDX-License-Identifier: GPL-2.0
/* fleetsim: many simulated hosts against one real store, in real time.
 * Each host is the datapath's fleet accounting (bpf/logic/fleet_credit.h: a
 * static share and the store's credit) and the agent's credit logic
 * (user/agent.h sizing, user/store.c calls), driven by synthetic demand:
 * one client per key at LOAD times the key's rate, split over the hosts.
 * Beside it, in the same harness, the anchors: per-host caps alone, and
 * counting after admitting with a sync every 100 ms (as Gubernator's
 * GLOBAL behaviour does). Prints one JSON object: the worst ratio of what
 * the fleet admitted in any window to b + r*T (plus the shares and a
 * packet a host, for tbctl), the use of the rate over 1 s windows, the
 * store's calls and commands per second and the agents' CPU. Hosts'
 * clocks may be set off by seconds and run fast or slow (--offset,
 * --drift): only the store's clock refills. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <hiredis/hiredis.h>
#include "lib/clock.h"
#include "logic/fleet_credit.h"
#include "fleet/agent.h"
#include "fleet/store.h"

#define PKT 1000ULL             /* units a packet */
#define SLOT_NS 10000000ULL     /* admitted counted per 10 ms */
#define SYNC_NS 100000000ULL    /* the count-after-admit scheme's sync */
#define IDLE_ROUNDS 20

enum scheme { TBCTL, LOCAL, COUNT };

struct hkey {
	struct tb_level share, local;
	__s64 credit;
	__u64 lease_end, spent, refused, seen, active, ret, want;
	double rate, owe;       /* demand not yet sent, units */
	double cache;           /* COUNT: remaining as last synced */
	__u64 unsynced;
};

struct host {
	struct store st;
	struct hkey *k;
	__u64 next_round, next_sync;
	char name[16];
};

struct owner {                  /* COUNT: the key's bucket at its owner */
	struct tb_level l;
};

static __u64 cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* Commands the store's servers have processed, summed. */
static long long store_commands(const struct store *s)
{
	long long sum = 0;

	for (int i = 0; i < s->nnodes; i++) {
		redisContext *c = redisConnect(s->nodes[i].host, s->nodes[i].port);
		redisReply *r = c && !c->err ? redisCommand(c, "INFO stats") : NULL;
		const char *p = r && r->type == REDIS_REPLY_STRING ? strstr(r->str, "total_commands_processed:") : NULL;

		if (p)
			sum += atoll(p + 25);
		if (r)
			freeReplyObject(r);
		if (c)
			redisFree(c);
	}
	return sum;
}

static void die(const char *what, const char *why)
{
	fprintf(stderr, "fleetsim: %s: %s\n", what, why);
	exit(1);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "store", 1, 0, 's' }, { "hosts", 1, 0, 'n' }, { "keys", 1, 0, 'k' }, { "seconds", 1, 0, 't' },
		{ "rate", 1, 0, 'r' }, { "burst", 1, 0, 'b' }, { "share", 1, 0, 'h' }, { "load", 1, 0, 'l' },
		{ "split", 1, 0, 'p' }, { "interval", 1, 0, 'i' }, { "scheme", 1, 0, 'c' }, { "fleet", 1, 0, 'f' },
		{ "lease", 1, 0, 'L' }, { "drift", 1, 0, 'd' }, { "offset", 1, 0, 'o' },
		{ 0 }
	};
	const char *url = NULL, *split = "even", *scheme_name = "tbctl", *fleet = "sim";
	int nhosts = 4, nkeys = 1, o;
	double seconds = 5, load = 2, rate = 500000, burst = 50000, share = 0, interval_ms = 10, lease_ms = 5000;
	double drift = 0, offset_s = 0;
	enum scheme scheme;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 's': url = optarg; break;
		case 'n': nhosts = atoi(optarg); break;
		case 'k': nkeys = atoi(optarg); break;
		case 't': seconds = atof(optarg); break;
		case 'r': rate = atof(optarg); break;
		case 'b': burst = atof(optarg); break;
		case 'h': share = atof(optarg); break;
		case 'l': load = atof(optarg); break;
		case 'p': split = optarg; break;
		case 'i': interval_ms = atof(optarg); break;
		case 'c': scheme_name = optarg; break;
		case 'f': fleet = optarg; break;
		case 'L': lease_ms = atof(optarg); break;
		case 'd': drift = atof(optarg); break;
		case 'o': offset_s = atof(optarg); break;
		default: return 2;
		}
	}
	scheme = !strcmp(scheme_name, "tbctl") ? TBCTL : !strcmp(scheme_name, "local") ? LOCAL :
		 !strcmp(scheme_name, "count") ? COUNT : (enum scheme)-1;
	/* Bounded like every traffic loop: 10 minutes at most. */
	if ((int)scheme < 0 || nhosts < 1 || nhosts > 1024 || nkeys < 1 || nkeys > 1000000 || seconds <= 1 ||
	    seconds > 600 || rate < 1 || burst < PKT || load <= 0 || interval_ms < 1 || (scheme == TBCTL && !url) ||
	    lease_ms < 100 || drift < 0 || drift >= 50 || offset_s < 0 || offset_s > 3600 ||
	    (strcmp(split, "even") && strcmp(split, "90-10") && strcmp(split, "one"))) {
		fprintf(stderr, "usage: fleetsim --store URL [--scheme tbctl|local|count] [--hosts N] [--keys K] "
				"[--seconds 1..600] [--rate U/s] [--burst U] [--share U/s] [--load X] "
				"[--split even|90-10|one] [--interval MS] [--fleet NAME] [--lease MS] "
				"[--drift PCT] [--offset SECONDS]\n");
		return 2;
	}

	struct tb_rate r = tb_rate_make((__u64)rate, (__u64)burst);
	struct tb_rate sh = tb_rate_make(share ? (__u64)share : 1, share ? (__u64)(burst * share / rate) + PKT : PKT);
	struct host *h = calloc(nhosts, sizeof(*h));
	struct owner *ow = calloc(nkeys, sizeof(*ow));
	size_t nslots = (size_t)(seconds * 1e9 / SLOT_NS) + 2;
	__u64 *adm = calloc((size_t)nkeys * nslots, sizeof(*adm));
	char (*names)[96] = calloc(nkeys, sizeof(*names));
	unsigned int *tags = calloc(nkeys, sizeof(*tags));
	struct store_ask *asks = calloc(nkeys, sizeof(*asks));
	int *of = calloc(nkeys, sizeof(*of));
	double *frac = calloc(nhosts, sizeof(*frac));
	__u64 interval = (__u64)(interval_ms * 1e6), lease = (__u64)(lease_ms * 1e6), calls = 0, rounds = 0, round_ns = 0;
	__u64 round_sum = 0;
	long long cmds0 = 0;
	char err[160], epoch[64], key[32];

	if (!h || !ow || !adm || !names || !tags || !asks || !of || !frac)
		die("memory", strerror(ENOMEM));
	for (int i = 0; i < nhosts; i++)
		frac[i] = !strcmp(split, "even") ? 1.0 / nhosts : !strcmp(split, "one") ? (i == 0) :
			  nhosts == 1 ? 1 : i == 0 ? 0.9 : 0.1 / (nhosts - 1);
	for (int k = 0; k < nkeys; k++) {
		snprintf(key, sizeof(key), "198.18.%d.%d", k / 250 % 256, k % 250 + 1);
		if (k >= 64000)
			snprintf(key, sizeof(key), "2001:db8::%x", k);
		tags[k] = store_key(fleet, "198.18.0.0/15", key, names[k], sizeof(names[k]));
	}
	__u64 t0 = now_ns();

	for (int i = 0; i < nhosts; i++) {
		h[i].k = calloc(nkeys, sizeof(*h[i].k));
		if (!h[i].k)
			die("memory", strerror(ENOMEM));
		snprintf(h[i].name, sizeof(h[i].name), "h%d", i);
		for (int k = 0; k < nkeys; k++) {
			tb_share_start(&h[i].k[k].share, t0, &sh);
			h[i].k[k].local = (struct tb_level){ .tokens = r.cap, .last_ns = t0 };
			h[i].k[k].cache = burst;
		}
		h[i].next_round = t0 + interval * i / nhosts;
		h[i].next_sync = t0 + SYNC_NS * i / nhosts;
		if (scheme == TBCTL) {
			if (store_parse_url(url, &h[i].st, err, sizeof(err)))
				die("store", err);
			h[i].st.timeout_ms = 500;
			if (store_connect(&h[i].st))
				die("store", h[i].st.error);
		}
	}
	for (int k = 0; k < nkeys; k++)
		ow[k].l = (struct tb_level){ .tokens = r.cap, .last_ns = t0 };
	if (scheme == TBCTL)
		cmds0 = store_commands(&h[0].st);
	t0 = now_ns();
	__u64 cpu0 = cpu_ns(), agent_cpu = 0, last = t0, now;

	while ((now = now_ns()) < t0 + (__u64)(seconds * 1e9)) {
		double dt = (double)(now - last);
		size_t slot = (now - t0) / SLOT_NS;

		last = now;
		for (int i = 0; i < nhosts; i++) {
			/* The host's own clock: set off by seconds, and running
			 * fast or slow (odd hosts fast) by drift. */
			__u64 hn = t0 + (__u64)((double)(now - t0) * (1 + (i & 1 ? drift : -drift) / 100)) +
				   (__u64)(offset_s * 1e9) * i;

			for (int k = 0; k < nkeys; k++) {
				struct hkey *x = &h[i].k[k];
				int paid;

				x->owe += load * rate * frac[i] * dt / 1e9;
				while (x->owe >= PKT) {
					x->owe -= PKT;
					if (scheme == LOCAL) {
						paid = tb_share_pay(&x->local, now, PKT * TB_NANO, &r);
					} else if (scheme == COUNT) {
						paid = x->cache >= PKT;
						if (paid) {
							x->cache -= PKT;
							x->unsynced += PKT;
						}
					} else {
						paid = share && tb_share_pay(&x->share, hn, PKT * TB_NANO, &sh);
						if (!paid && hn < x->lease_end && tb_credit_pay(&x->credit, PKT)) {
							paid = 1;
							x->spent += PKT;
						}
						if (!paid)
							x->refused += PKT;
					}
					if (paid)
						adm[(size_t)k * nslots + slot] += PKT;
				}
			}
			if (scheme == COUNT && now >= h[i].next_sync) {
				/* The owner takes the hits counted since, and says
				 * what is left: the host admits against that. */
				for (int k = 0; k < nkeys; k++) {
					struct hkey *x = &h[i].k[k];
					/* Refilled over the time the hits were made in,
					 * then charged them, then capped. */
					double t = ow[k].l.tokens / 1e9 + rate * (now - ow[k].l.last_ns) / 1e9 -
						   (double)x->unsynced;

					t = t < 0 ? 0 : t > burst ? burst : t;
					ow[k].l.tokens = (__u64)(t * 1e9);
					ow[k].l.last_ns = now;
					x->unsynced = 0;
					x->cache = t;
				}
				h[i].next_sync += SYNC_NS;
			}
			if (scheme != TBCTL || now < h[i].next_round)
				continue;
			/* The agent's round. */
			__u64 c0 = cpu_ns(), c0_real = now_ns(), sent = hn, end = sent + lease - lease / 32;
			int n = 0;

			for (int k = 0; k < nkeys; k++) {
				struct hkey *x = &h[i].k[k];
				__u64 d = x->spent + x->refused - x->seen, have = x->credit > 0 && hn < x->lease_end ? x->credit : 0;

				x->seen = x->spent + x->refused;
				x->rate = x->rate * 0.5 + d * 1e9 / (double)interval * 0.5;
				if (d)
					x->active = now;
				x->want = d ? agent_want(x->rate, round_ns, interval, have, AGENT_FRAME, (__u64)burst) : 0;
				if (now - x->active > IDLE_ROUNDS * interval && x->credit > 0) {
					x->ret += tb_credit_take(&x->credit);
					have = 0;
				}
				if (!x->want && !x->ret && !(have && x->lease_end < hn + lease / 2))
					continue;
				asks[n] = (struct store_ask){ .key = names[k], .tag = tags[k], .rate = (__u64)rate,
							      .burst = (__u64)burst, .have = have, .want = x->want,
							      .ret = x->ret };
				of[n++] = k;
			}
			for (int at = 0; at < n; at += 512) {
				int m = n - at < 512 ? n - at : 512;

				store_grant(&h[i].st, fleet, h[i].name, lease / 1000000, asks + at, m, epoch, sizeof(epoch));
				calls++;
			}
			for (int j = 0; j < n; j++) {
				struct hkey *x = &h[i].k[of[j]];

				if (!asks[j].done)
					continue;
				x->ret = 0;
				if (hn >= x->lease_end)
					x->credit = 0;
				x->credit += asks[j].granted;
				x->lease_end = end;
			}
			round_ns = now_ns() - c0_real;
			round_sum += round_ns;
			rounds++;
			h[i].next_round = now + interval;
			agent_cpu += cpu_ns() - c0;
		}
	}
	double elapsed = (now_ns() - t0) / 1e9;
	__u64 cpu = cpu_ns() - cpu0;
	long long cmds = scheme == TBCTL ? store_commands(&h[0].st) - cmds0 : 0;

	/* The worst window, over windows of 1 to 100 slots (10 ms to 1 s)
	 * and the whole run, of the first 256 keys; the use of 1 s windows
	 * after the first. */
	double worst = 0, use_min = 1e9, use_sum = 0;
	int use_n = 0;
	/* The slots written: the last round may have run past the end. */
	size_t used = (size_t)(elapsed * 1e9 / SLOT_NS) < nslots ? (size_t)(elapsed * 1e9 / SLOT_NS) : nslots;
	double extra = scheme == TBCTL ? nhosts * ((share ? sh.cap / TB_NANO : 0) + PKT) : 0;
	double extra_rate = scheme == TBCTL ? nhosts * share : 0;

	for (int k = 0; k < nkeys; k++) {
		const __u64 *a = adm + (size_t)k * nslots;

		for (size_t w = 1; k < 256 && w <= used; w = w < 100 ? w + 1 : w == 100 ? used : used + 1) {
			__u64 sum = 0;

			for (size_t s = 0; s < used; s++) {
				sum += a[s];
				if (s >= w)
					sum -= a[s - w];
				if (s + 1 >= w) {
					double T = w * SLOT_NS / 1e9;
					double ratio = sum / (burst + rate * T + extra + extra_rate * T);

					if (ratio > worst)
						worst = ratio;
				}
			}
		}
		for (size_t s = 100; s + 100 <= used; s += 100) {
			__u64 sum = 0;

			for (size_t j = s; j < s + 100; j++)
				sum += a[j];
			use_sum += sum / rate;
			use_n++;
			if (sum / rate < use_min)
				use_min = sum / rate;
		}
	}
	printf("{\"scheme\": \"%s\", \"store\": \"%s\", \"hosts\": %d, \"keys\": %d, \"split\": \"%s\", \"load\": %g, "
	       "\"rate\": %.0f, \"burst\": %.0f, \"share\": %.0f, \"drift_pct\": %g, \"offset_s\": %g, "
	       "\"seconds\": %.2f, \"worst_bound_ratio\": %.4f, \"use_min\": %.4f, \"use_mean\": %.4f, "
	       "\"store_calls_per_s\": %.1f, \"store_commands_per_s\": %.1f, \"agent_cpu_per_s\": %.4f, "
	       "\"sim_cpu_per_s\": %.4f, \"round_ms\": %.3f, \"rounds\": %llu}\n",
	       scheme_name, scheme == TBCTL ? (h[0].st.cluster ? "cluster" : "standalone") : "none", nhosts, nkeys,
	       split, load, rate, burst, share, drift, offset_s, elapsed, worst, use_n ? use_min : 0, use_n ? use_sum / use_n : 0, calls / elapsed,
	       cmds / elapsed, agent_cpu / 1e9 / elapsed, cpu / 1e9 / elapsed, rounds ? round_sum / 1e6 / rounds : 0,
	       (unsigned long long)rounds);
	return 0;
}
