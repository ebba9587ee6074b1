// SPDX-License-Identifier: GPL-2.0
#include <string.h>
#include "lib/agent_state.h"
#include "lib/clock.h"
#include "view/fleet_state.h"
#include "view/output.h"
#include "view/prom.h"

/* A number of the state, in its base unit (ns for times); each writer
 * scales it to its own: JSON's key says its unit, Prometheus's are
 * seconds, status's words theirs. */
struct fleet_field {
	const char *key;        /* status -j */
	double json_unit;       /* the key's unit, in base units */
	const char *metric, *type, *help;
	double metric_unit;
	const char *text;       /* status's words, around the value (%.*f); NULL: not in them */
	double text_unit;
	int text_digits;
	double (*get)(const struct tb_fleet_state *fs, __u64 now);
};

static double agent_up(const struct tb_fleet_state *fs, __u64 now)
{
	(void)now;
	return !strcmp(fleet_agent_state(fs), "running");
}

static double grant_age(const struct tb_fleet_state *fs, __u64 now)
{
	return fs->last_grant_ns ? (double)(now - fs->last_grant_ns) : 0;
}

#define FIELD(name)                                                                     \
	static double get_##name(const struct tb_fleet_state *fs, __u64 now)            \
	{                                                                               \
		(void)now;                                                              \
		return (double)fs->name;                                                \
	}
FIELD(reachable)
FIELD(rtt_ns)
FIELD(keys)
FIELD(calls)
FIELD(errors)
FIELD(granted)
FIELD(returned)
#undef FIELD

static const struct fleet_field fields[] = {
	{ NULL, 0, "tbctl_fleet_agent_up", "gauge", "1 while the fleet agent (tbctl fleet run) runs", 1,
	  NULL, 0, 0, agent_up },
	{ NULL, 0, "tbctl_fleet_store_reachable", "gauge", "1 when the agent's latest store call succeeded", 1,
	  NULL, 0, 0, get_reachable },
	{ "rtt_us", 1e3, "tbctl_fleet_store_rtt_seconds", "gauge", "The round trip of the agent's latest store call",
	  1e9, "rtt %.*f ms", 1e6, 2, get_rtt_ns },
	{ "keys", 1, "tbctl_fleet_keys", "gauge", "Fleet keys this host holds (fleet show)", 1, "%.*f keys", 1, 0,
	  get_keys },
	{ "calls", 1, "tbctl_fleet_store_calls_total", "counter", "Store calls that succeeded", 1, "%.*f calls", 1, 0,
	  get_calls },
	{ "errors", 1, "tbctl_fleet_store_errors_total", "counter", "Store calls and connects that failed", 1,
	  "%.*f errors", 1, 0, get_errors },
	{ "last_grant_ms_ago", 1e6, "tbctl_fleet_last_grant_age_seconds", "gauge",
	  "Time since the store last granted credit", 1e9, NULL, 0, 0, grant_age },
	{ "granted", 1, "tbctl_fleet_granted_units_total", "counter", "Credit the store granted this host, in rule units",
	  1, NULL, 0, 0, get_granted },
	{ "returned", 1, "tbctl_fleet_returned_units_total", "counter", "Unspent credit this host gave back", 1,
	  NULL, 0, 0, get_returned },
};
#define N_FIELDS (sizeof(fields) / sizeof(fields[0]))

void fleet_state_json(const struct tb_fleet_state *fs, struct json_object *o)
{
	struct json_object *f = json_object_new_object();
	__u64 now = now_ns();

	json_add_str(f, "agent", fleet_agent_state(fs));
	json_add_u64(f, "pid", fs->pid);
	json_add_str(f, "fleet", fs->fleet);
	json_add_str(f, "store", fs->store);
	json_object_object_add(f, "reachable", json_object_new_boolean(fs->reachable));
	for (size_t i = 0; i < N_FIELDS; i++)
		if (fields[i].key)
			json_add_u64(f, fields[i].key, (__u64)(fields[i].get(fs, now) / fields[i].json_unit));
	json_add_str(f, "epoch", fs->epoch);
	json_object_object_add(f, "share_off", json_object_new_boolean(fs->share_off));
	if (fs->error[0])
		json_add_str(f, "error", fs->error);
	json_object_object_add(o, "fleet", f);
}

void fleet_state_text(FILE *f, const struct tb_fleet_state *fs)
{
	__u64 now = now_ns();

	fprintf(f, "  fleet %s: agent %s (pid %u), store %s %s", fs->fleet, fleet_agent_state(fs), fs->pid, fs->store,
		fs->reachable ? "reachable" : "UNREACHABLE");
	if (fs->error[0])
		fprintf(f, " (%s)", fs->error);
	for (size_t i = 0; i < N_FIELDS; i++)
		if (fields[i].text) {
			fputs(", ", f);
			fprintf(f, fields[i].text, fields[i].text_digits, fields[i].get(fs, now) / fields[i].text_unit);
		}
	if (fs->last_grant_ns)
		fprintf(f, ", last grant %.1f s ago", grant_age(fs, now) / 1e9);
	fprintf(f, "%s\n", fs->share_off ? ", static shares OFF (fallback closed)" : "");
}

void fleet_state_prom(FILE *f, const char *const *labels, const struct tb_fleet_state *fs, int n)
{
	__u64 now = now_ns();

	for (size_t k = 0; k < N_FIELDS; k++) {
		prom_family(f, fields[k].metric, fields[k].type, fields[k].help);
		for (int i = 0; i < n; i++) {
			if (!fs[i].heartbeat_ns)
				continue;
			fprintf(f, "%s{%s,fleet=\"", fields[k].metric, labels[i]);
			prom_label(f, fs[i].fleet);
			fprintf(f, "\"} %.17g\n", fields[k].get(&fs[i], now) / fields[k].metric_unit);
		}
	}
}
