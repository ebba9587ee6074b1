// SPDX-License-Identifier: GPL-2.0
/* A rule as words and as JSON. */
#include <stdio.h>
#include <string.h>
#include "lib/names.h"
#include "lib/dscp_text.h"
#include "lib/match_text.h"
#include "lib/prefix.h"
#include "lib/ruleset.h"
#include "lib/units.h"
#include "view/output.h"
#include "view/rule_text.h"

/* A rate and a burst as words: exact (save) or for people. */
static void rate_words(__u64 rate, __u64 burst, int pk, bool exact, char *rbuf, char *bbuf, size_t len)
{
	if (exact) {
		snprintf(rbuf, len, "%llu%s", (unsigned long long)rate, pk ? "pps" : "bps");
		snprintf(bbuf, len, "%llu%s", (unsigned long long)burst, pk ? "" : "b");
	} else {
		format_rate(rate, pk, rbuf, len);
		format_size(burst, pk, bbuf, len);
	}
}

void rule_words(FILE *f, const struct tb_rule *r, bool exact)
{
	int pk = r->cost == TB_COST_PACKETS;
	char rate[32], burst[32], horizon[32], scope[16];

	if (r->action == TB_ACTION_PASS) {
		fputs("action pass", f);
		return;
	}
	rate_words(r->r.rate, r->burst, pk, exact, rate, burst, sizeof(rate));
	fprintf(f, "rate %s burst %s cost %s action %s", rate, burst, cost_names[r->cost], action_names[r->action]);
	if (r->action == TB_ACTION_REMARK) {
		dscp_format(r->dscp, scope, sizeof(scope));
		fprintf(f, " %s", scope);
	}
	fprintf(f, " scope %s", scope_format(r->scope, r->group_len, scope, sizeof(scope)));
	if (r->action == TB_ACTION_DROP || r->action == TB_ACTION_MARK)
		fprintf(f, " early %s", on_off_names[r->r.early != 0]);
	if (r->action == TB_ACTION_SHAPE) {
		format_time(r->horizon_ns, horizon, sizeof(horizon));
		fprintf(f, " horizon %s", horizon);
	}
	if (r->total.rate) {
		rate_words(r->total.rate, r->total_burst, pk, exact, rate, burst, sizeof(rate));
		fprintf(f, " total %s total-burst %s", rate, burst);
	}
	if (r->fleet)
		fputs(" fleet on", f);
	if (r->share.rate) {
		rate_words(r->share.rate, r->share_burst, pk, exact, rate, burst, sizeof(rate));
		fprintf(f, " share %s share-burst %s", rate, burst);
	}
	if (r->peak.rate) {
		rate_words(r->peak.rate, r->peak_burst, pk, exact, rate, burst, sizeof(rate));
		fprintf(f, " peak %s peak-burst %s", rate, burst);
	}
	if (r->ban_ms) {
		format_duration((__u64)r->ban_ms * 1000000, horizon, sizeof(horizon));
		fprintf(f, " ban %s ban-after %u", horizon, r->ban_after ? r->ban_after : 1);
	}
}

void rule_json(const struct tb_rule *r, struct json_object *arr)
{
	struct json_object *o = json_object_new_object();
	int pk = r->cost == TB_COST_PACKETS;
	char buf[PREFIX_TEXT_MAX], scope[16];
	struct tb_prefix p;

	rule_prefix(r, &p);
	memset(&p.m, 0, sizeof(p.m));
	prefix_format(&p, buf, sizeof(buf));
	json_add_str(o, "prefix", buf);
	if (r->match.proto) {
		proto_format(r->match.proto, buf, sizeof(buf));
		json_add_str(o, "proto", buf);
		if (r->match.ports & TB_MATCH_DPORT) {
			json_add_u64(o, "dport_min", r->match.dport[0]);
			json_add_u64(o, "dport_max", r->match.dport[1]);
		}
		if (r->match.ports & TB_MATCH_SPORT) {
			json_add_u64(o, "sport_min", r->match.sport[0]);
			json_add_u64(o, "sport_max", r->match.sport[1]);
		}
		if (r->match.ports & TB_MATCH_FLAGS) {
			tcp_flags_format(r->match.flags, buf, sizeof(buf));
			json_add_str(o, "tcp_flags", buf);
			tcp_flags_format(r->match.flags_mask, buf, sizeof(buf));
			json_add_str(o, "tcp_flags_mask", buf);
		}
		if (r->match.ports & TB_MATCH_TYPE) {
			json_add_u64(o, "icmp_type_min", r->match.dport[0]);
			json_add_u64(o, "icmp_type_max", r->match.dport[1]);
		}
	}
	json_add_str(o, "action", action_names[r->action]);
	if (r->action == TB_ACTION_PASS) {
		json_object_array_add(arr, o);
		return;
	}
	json_add_u64(o, pk ? "rate_packets_per_sec" : "rate_bytes_per_sec", r->r.rate);
	json_add_u64(o, pk ? "burst_packets" : "burst_bytes", r->burst);
	json_add_str(o, "cost", cost_names[r->cost]);
	json_add_str(o, "scope", scope_format(r->scope, r->group_len, scope, sizeof(scope)));
	if (r->action == TB_ACTION_DROP || r->action == TB_ACTION_MARK)
		json_object_object_add(o, "early", json_object_new_boolean(r->r.early != 0));
	if (r->action == TB_ACTION_SHAPE)
		json_add_u64(o, "horizon_ns", r->horizon_ns);
	if (r->action == TB_ACTION_REMARK) {
		json_add_u64(o, "dscp", r->dscp);
		dscp_format(r->dscp, buf, sizeof(buf));
		json_add_str(o, "dscp_name", buf);
	}
	if (r->ban_ms) {
		json_add_u64(o, "ban_ms", r->ban_ms);
		json_add_u64(o, "ban_after", r->ban_after ? r->ban_after : 1);
	}
	if (r->peak.rate) {
		json_add_u64(o, pk ? "peak_rate_packets_per_sec" : "peak_rate_bytes_per_sec", r->peak.rate);
		json_add_u64(o, pk ? "peak_burst_packets" : "peak_burst_bytes", r->peak_burst);
	}
	if (r->total.rate) {
		json_add_u64(o, pk ? "total_rate_packets_per_sec" : "total_rate_bytes_per_sec", r->total.rate);
		json_add_u64(o, pk ? "total_burst_packets" : "total_burst_bytes", r->total_burst);
	}
	if (r->fleet)
		json_object_object_add(o, "fleet", json_object_new_boolean(true));
	if (r->share.rate) {
		json_add_u64(o, pk ? "share_rate_packets_per_sec" : "share_rate_bytes_per_sec", r->share.rate);
		json_add_u64(o, pk ? "share_burst_packets" : "share_burst_bytes", r->share_burst);
	}
	json_object_array_add(arr, o);
}

void rule_save(FILE *f, const char *dev, const struct tb_rule *r)
{
	char p[PREFIX_TEXT_MAX];

	rule_format(r, p, sizeof(p));
	fprintf(f, "rule set dev %s %s ", dev, p);
	rule_words(f, r, true);
	fputc('\n', f);
}

