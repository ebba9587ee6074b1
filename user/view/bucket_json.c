// SPDX-License-Identifier: GPL-2.0
#include "lib/snapshot.h"
#include "view/bucket_json.h"
#include "view/counters.h"
#include "view/output.h"

void bucket_json(struct json_object *o, const struct tb_maps *m, const struct tb_rule *rule,
		 const struct tb_addr *addr, __u64 tokens, __u64 now)
{
	bool packets = rule->cost == TB_COST_PACKETS;
	__u64 credit, refused;

	json_add_u64(o, packets ? "tokens_packets" : "tokens_bytes", tokens);
	if (!rule->fleet)
		return;
	snapshot_fleet_key(m, rule, addr, now, &credit, &refused);
	json_add_u64(o, packets ? "fleet_credit_packets" : "fleet_credit_bytes", credit);
	json_add_u64(o, packets ? "fleet_refused_packets" : "fleet_refused_bytes", refused);
}

void counters_json(struct json_object *o, const struct tb_counters *c)
{
	for (int i = 0; i < counter_field_count; i++)
		json_add_u64(o, counter_fields[i].name, counter_value(c, &counter_fields[i]));
}
