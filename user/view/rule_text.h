/* SPDX-License-Identifier: GPL-2.0 */
/* A rule as rule set takes its words, and as rule list -j writes it. */
#ifndef TB_RULE_TEXT_H
#define TB_RULE_TEXT_H

#include <stdbool.h>
#include <stdio.h>
#include <json-c/json.h>
#include "abi/tb_abi.h"

/* A rule's words after its prefix: exact (save) or in the units a
 * person reads (rule list). */
void rule_words(FILE *f, const struct tb_rule *r, bool exact);
/* One rule as a "rule set" line to f, in units that keep every value
 * exact. */
void rule_save(FILE *f, const char *dev, const struct tb_rule *r);
/* One rule as an object, appended to arr. */
void rule_json(const struct tb_rule *r, struct json_object *arr);

#endif
