/* SPDX-License-Identifier: GPL-2.0 */
/* ban list's rows: a manual ban, or a key a rule banned, with the time
 * left, as a line or as a JSON object. */
#ifndef TB_BAN_TEXT_H
#define TB_BAN_TEXT_H

#include <stdio.h>
#include <json-c/json.h>
#include "lib/bans.h"
#include "lib/ruleset.h"

/* Manual ban b at now: printed, or added to arr under -j. */
void ban_print(const struct ban *b, __u64 now, struct json_object *arr);
/* The n bans made by hand in v as ban add lines for dev, each for what
 * is left of it at now (to the ms, rounded up): what save writes. */
void ban_save(FILE *f, const char *dev, const struct ban *v, size_t n, __u64 now);
/* The automatic ban a, its key read back under its rule of rs. */
void autoban_print(const struct autoban *a, const struct ruleset *rs, __u64 now, struct json_object *arr);

#endif
