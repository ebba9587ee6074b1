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
#include "lib/clock.h"
#include "lib/err.h"
#include "fleet/agent.h"
#include "view/output.h"
#include "lib/state.h"
#include "fleet/store.h"
#include "cli/tbctl.h"

#define INTERVAL_MS_DEFAULT 10
#define LEASE_MS_DEFAULT 5000

struct fleet_run_opts {
	struct cmd_target t;
	const char *store, *fleet, *host;
	__u32 interval_ms, lease_ms;
	bool closed;
};

static int parse_fleet_run(const char *cmd, int argc, char **argv, void *opts)
{
	struct fleet_run_opts *a = opts;
	static const char *const fallback[] = { "share", "closed", NULL };
	struct kw kws[] = { { "dev" }, { "store" }, { "fleet" }, { "host" }, { "interval" }, { "lease" },
			    { "fallback" }, { 0 } };
	static char host[64];
	struct store st;
	const char *v;
	char err[160];
	int rc, c = 0;

	rc = kw_parse(cmd, argc, argv, kws, NULL);
	if (rc || (rc = parse_dev(cmd, kw_get(kws, "dev"), &a->t)))
		return rc;
	a->store = kw_get(kws, "store");
	if (!a->store)
		return usage_error(cmd, "missing \"store redis://HOST[:PORT]\" (or redis-cluster://...)");
	if (store_parse_url(a->store, &st, err, sizeof(err)))
		return usage_error(cmd, "%s", err);
	a->fleet = kw_get(kws, "fleet") ? kw_get(kws, "fleet") : "tbctl";
	if (strlen(a->fleet) >= sizeof(((struct tb_fleet_state *)0)->fleet) ||
	    strspn(a->fleet, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") !=
		    strlen(a->fleet) || !a->fleet[0])
		return usage_error(cmd, "invalid fleet \"%s\": 1-31 letters, digits, '-', '_' or '.'",
				   a->fleet);
	if ((v = kw_get(kws, "host"))) {
		if (!*v || strlen(v) >= sizeof(host) || strchr(v, ' '))
			return usage_error(cmd, "invalid host \"%s\": 1-63 characters, no spaces", v);
		a->host = v;
	} else {
		if (gethostname(host, sizeof(host)))
			return usage_error(cmd, "no host given, and gethostname failed: %s", strerror(errno));
		a->host = host;
	}
	a->interval_ms = INTERVAL_MS_DEFAULT;
	if ((v = kw_get(kws, "interval")) &&
	    (rc = parse_count(cmd, "interval (ms)", v, 1, 1000, &a->interval_ms)))
		return rc;
	a->lease_ms = LEASE_MS_DEFAULT;
	if ((v = kw_get(kws, "lease")) && (rc = parse_count(cmd, "lease (ms)", v, 100, 600000, &a->lease_ms)))
		return rc;
	if (a->lease_ms < a->interval_ms * 10)
		return usage_error(cmd, "lease %u ms is under ten intervals (%u ms): credit would lapse "
				   "between renewals", a->lease_ms, a->interval_ms * 10);
	if ((v = kw_get(kws, "fallback")) && (c = choose(cmd, "fallback", v, fallback)) < 0)
		return EXIT_USAGE;
	a->closed = v && c == 1;
	return 0;
}

static void credit_lapses(const struct agent_opts *o, const char *why)
{
	out_error("fleet run dev %s: could not return the unspent credit: %s (it lapses with its lease)", o->dev, why);
}

static int run_fleet_run(const void *opts)
{
	const struct fleet_run_opts *a = opts;
	struct agent_opts o = { .dev = a->t.dev, .store = a->store, .fleet = a->fleet, .host = a->host,
				.interval_ms = a->interval_ms, .lease_ms = a->lease_ms, .closed = a->closed,
				.warn = credit_lapses };
	struct tb_err e;

	if (agent_run(&o, &e)) {
		out_error("fleet run dev %s: %s", a->t.dev, e.msg);
		return 1;
	}
	return 0;
}

static int run_fleet_show(const void *opts)
{
	const struct cmd_target *a = opts;
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
	.name = "fleet run",
	.usage = "dev DEV store redis://HOST[:PORT]|redis-cluster://HOST[:PORT],... [fleet NAME] [host NAME] "
		 "[interval MS] [lease MS] [fallback share|closed]",
	.opts_size = sizeof(struct fleet_run_opts),
	.parse = parse_fleet_run,
	.run = run_fleet_run,
	.flags = CMD_NO_BATCH,
	.caps = CAPS_LOAD,
};
const struct command cmd_fleet_show = {
	.name = "fleet show",
	.usage = "dev DEV",
	.opts_size = sizeof(struct cmd_target),
	.parse = parse_dev_only,
	.run = run_fleet_show,
	.flags = CMD_ATTACHED,
	.caps = CAPS_READ,
};
