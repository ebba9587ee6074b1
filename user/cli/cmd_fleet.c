// SPDX-License-Identifier: GPL-2.0
/* fleet run: the agent that keeps this host's fleet keys in credit;
 * fleet show: what each key holds, has spent and was refused. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "lib/agent_state.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "fleet/agent.h"
#include "view/output.h"
#include "lib/state.h"
#include "fleet/store.h"
#include "cli/tbctl.h"

#define INTERVAL_MS_DEFAULT 10
#define LEASE_MS_DEFAULT 5000

static int parse_fleet_run(int argc, char **argv, struct cmd_args *a)
{
	static const char *const fallback[] = { "share", "closed", NULL };
	struct kw kws[] = { { "dev" }, { "store" }, { "fleet" }, { "host" }, { "interval" }, { "lease" },
			    { "fallback" }, { 0 } };
	static char host[64];
	struct store st;
	const char *v;
	char err[160];
	int rc, c = 0;

	rc = kw_parse("fleet run", argc, argv, kws, NULL);
	if (rc || (rc = parse_dev("fleet run", kw_get(kws, "dev"), a)))
		return rc;
	a->fleet.store = kw_get(kws, "store");
	if (!a->fleet.store)
		return usage_error("fleet run", "missing \"store redis://HOST[:PORT]\" (or redis-cluster://...)");
	if (store_parse_url(a->fleet.store, &st, err, sizeof(err)))
		return usage_error("fleet run", "%s", err);
	a->fleet.fleet = kw_get(kws, "fleet") ? kw_get(kws, "fleet") : "tbctl";
	if (strlen(a->fleet.fleet) >= sizeof(((struct tb_fleet_state *)0)->fleet) ||
	    strspn(a->fleet.fleet, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") !=
		    strlen(a->fleet.fleet) || !a->fleet.fleet[0])
		return usage_error("fleet run", "invalid fleet \"%s\": 1-31 letters, digits, '-', '_' or '.'",
				   a->fleet.fleet);
	if ((v = kw_get(kws, "host"))) {
		if (!*v || strlen(v) >= sizeof(host) || strchr(v, ' '))
			return usage_error("fleet run", "invalid host \"%s\": 1-63 characters, no spaces", v);
		a->fleet.host = v;
	} else {
		if (gethostname(host, sizeof(host)))
			return usage_error("fleet run", "no host given, and gethostname failed: %s", strerror(errno));
		a->fleet.host = host;
	}
	a->fleet.interval_ms = INTERVAL_MS_DEFAULT;
	if ((v = kw_get(kws, "interval")) &&
	    (rc = parse_count("fleet run", "interval (ms)", v, 1, 1000, &a->fleet.interval_ms)))
		return rc;
	a->fleet.lease_ms = LEASE_MS_DEFAULT;
	if ((v = kw_get(kws, "lease")) && (rc = parse_count("fleet run", "lease (ms)", v, 100, 600000, &a->fleet.lease_ms)))
		return rc;
	if (a->fleet.lease_ms < a->fleet.interval_ms * 10)
		return usage_error("fleet run", "lease %u ms is under ten intervals (%u ms): credit would lapse "
				   "between renewals", a->fleet.lease_ms, a->fleet.interval_ms * 10);
	if ((v = kw_get(kws, "fallback")) && (c = choose("fleet run", "fallback", v, fallback)) < 0)
		return EXIT_USAGE;
	a->fleet.closed = v && c == 1;
	return 0;
}

static void credit_lapses(const struct agent_opts *o, const char *why)
{
	out_error("fleet run dev %s: could not return the unspent credit: %s (it lapses with its lease)", o->dev, why);
}

static int run_fleet_run(const struct cmd_args *a)
{
	struct agent_opts o = { .dev = a->dev, .store = a->fleet.store, .fleet = a->fleet.fleet, .host = a->fleet.host,
				.interval_ms = a->fleet.interval_ms, .lease_ms = a->fleet.lease_ms,
				.closed = a->fleet.closed, .warn = credit_lapses };
	struct tb_err e;

	if (agent_run(&o, &e)) {
		out_error("fleet run dev %s: %s", a->dev, e.msg);
		return 1;
	}
	return 0;
}

void fleet_status(const struct tb_fleet_state *fs, struct json_object *o)
{
	__u64 now = now_ns();

	if (o) {
		struct json_object *f = json_object_new_object();

		json_add_str(f, "agent", fleet_agent_state(fs));
		json_add_u64(f, "pid", fs->pid);
		json_add_str(f, "fleet", fs->fleet);
		json_add_str(f, "store", fs->store);
		json_object_object_add(f, "reachable", json_object_new_boolean(fs->reachable));
		json_add_u64(f, "rtt_us", fs->rtt_ns / 1000);
		json_add_u64(f, "last_grant_ms_ago", fs->last_grant_ns ? (now - fs->last_grant_ns) / 1000000 : 0);
		json_add_u64(f, "calls", fs->calls);
		json_add_u64(f, "errors", fs->errors);
		json_add_u64(f, "granted", fs->granted);
		json_add_u64(f, "returned", fs->returned);
		json_add_u64(f, "keys", fs->keys);
		json_add_str(f, "epoch", fs->epoch);
		json_object_object_add(f, "share_off", json_object_new_boolean(fs->share_off));
		if (fs->error[0])
			json_add_str(f, "error", fs->error);
		json_object_object_add(o, "fleet", f);
		return;
	}
	printf("  fleet %s: agent %s (pid %u), store %s %s", fs->fleet, fleet_agent_state(fs), fs->pid, fs->store,
	       fs->reachable ? "reachable" : "UNREACHABLE");
	if (fs->error[0])
		printf(" (%s)", fs->error);
	printf(", rtt %.2f ms, %llu keys, %llu calls, %llu errors", fs->rtt_ns / 1e6, (unsigned long long)fs->keys,
	       (unsigned long long)fs->calls, (unsigned long long)fs->errors);
	if (fs->last_grant_ns)
		printf(", last grant %.1f s ago", (now - fs->last_grant_ns) / 1e9);
	printf("%s\n", fs->share_off ? ", static shares OFF (fallback closed)" : "");
}

static int parse_fleet_show(int argc, char **argv, struct cmd_args *a)
{
	return parse_dev_only("fleet show", argc, argv, a, false);
}

/* Every key this host holds: its rule and address, the credit it holds
 * (while its lease runs), what it spent of the credit and of its share,
 * and what was refused for want of either. */
static int run_fleet_show(const struct cmd_args *a)
{
	static struct ruleset rs;
	struct tb_fleet_key k, next;
	struct tb_fleet_entry e;
	struct json_object *arr = out.json ? json_object_new_array() : NULL;
	struct tb_maps m;
	void *prev = NULL;
	__u64 now = now_ns();
	int err, rule_of[TB_MAX_RULES];

	if (open_attached_ro("fleet show", a->dev, &m))
		return 1;
	err = ruleset_read(&rs, &m);
	if (err) {
		maps_close(&m);
		out_error("fleet show dev %s: read rules: %s", a->dev, strerror(-err));
		return 1;
	}
	for (int i = 0; i < TB_MAX_RULES; i++)
		rule_of[i] = -1;
	for (int i = 0; i < TB_MAX_RULES; i++)
		if (rs.rules[i].in_use)
			rule_of[rs.rules[i].shared] = i;
	while (!bpf_map_get_next_key(m.fleet, prev, &next)) {
		char rule[PREFIX_TEXT_MAX] = "(gone)", addr[64] = "total";
		int id = next.rule < TB_MAX_RULES ? rule_of[next.rule] : -1;
		__s64 credit;

		k = next;
		prev = &k;
		if (bpf_map_lookup_elem(m.fleet, &k, &e))
			continue;
		credit = e.credit > 0 && e.expires_ns > now ? e.credit : 0;
		if (id >= 0) {
			rule_format(&rs.rules[id], rule, sizeof(rule));
			if (rs.rules[id].scope != TB_SCOPE_SHARED)
				ruleset_addr_format(&rs, &k.key, id, addr, sizeof(addr));
		}
		if (arr) {
			struct json_object *o = json_object_new_object();

			json_add_str(o, "rule", rule);
			json_add_str(o, "key", addr);
			json_add_u64(o, "credit", credit);
			json_add_u64(o, "lease_ms", e.expires_ns > now ? (e.expires_ns - now) / 1000000 : 0);
			json_add_u64(o, "spent", e.spent);
			json_add_u64(o, "share_spent", e.share_spent);
			json_add_u64(o, "refused", e.refused);
			json_object_array_add(arr, o);
		} else {
			printf("%s %s credit %lld lease %llu ms spent %llu share-spent %llu refused %llu\n", rule, addr,
			       (long long)credit,
			       (unsigned long long)(e.expires_ns > now ? (e.expires_ns - now) / 1000000 : 0),
			       (unsigned long long)e.spent, (unsigned long long)e.share_spent,
			       (unsigned long long)e.refused);
		}
	}
	maps_close(&m);
	if (arr)
		out_json(arr);
	return 0;
}

const struct command cmd_fleet_run = {
	"fleet run", parse_fleet_run, run_fleet_run,
	"dev DEV store redis://HOST[:PORT]|redis-cluster://HOST[:PORT],... [fleet NAME] [host NAME] [interval MS] [lease MS] "
	"[fallback share|closed]",
	false, CAPS_LOAD,
};
const struct command cmd_fleet_show = { "fleet show", parse_fleet_show, run_fleet_show, "dev DEV", true, CAPS_READ };
