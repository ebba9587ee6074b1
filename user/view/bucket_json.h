/* SPDX-License-Identifier: GPL-2.0 */
/* A bucket's fields as show -j and top -j write them. */
#ifndef TB_BUCKET_JSON_H
#define TB_BUCKET_JSON_H

#include <json-c/json.h>
#include "lib/state.h"
#include "abi/tb_abi.h"

/* Its tokens, in its rule's unit, and for a fleet rule what the fleet
 * key holds here and has refused since the last reset, in the same unit:
 * addr's (NULL: the rule's shared key). */
void bucket_json(struct json_object *o, const struct tb_maps *m, const struct tb_rule *rule,
		 const struct tb_addr *addr, __u64 tokens, __u64 now);
/* Its counters, each by its name (view/counters.h). */
void counters_json(struct json_object *o, const struct tb_counters *c);

#endif
