// SPDX-License-Identifier: GPL-2.0
#include "lib/snapshot.h"
#include "view/bucket_json.h"
#include "view/counters.h"
#include "view/output.h"

void bucket_json(struct json_object *o, const struct tb_maps *m, const struct tb_rule *rule,
		 const struct tb_addr *addr, __u64 tokens, __u64 now)
{
	__u64 credit, refused;

	json_add_u64(o, rule->cost == TB_COST_PACKETS ? "tokens_packets" : "tokens_bytes", tokens);
	if (!rule->fleet)
		return;
	snapshot_fleet_key(m, rule, addr, now, &credit, &refused);
	json_add_u64(o, "fleet_credit", credit);
	json_add_u64(o, "fleet_refused", refused);
}

void counters_json(struct json_object *o, const struct tb_counters *c)
{
	for (int i = 0; i < counter_field_count; i++)
		json_add_u64(o, counter_fields[i].name, counter_value(c, &counter_fields[i]));
}
