// SPDX-License-Identifier: GPL-2.0
#include <stdio.h>
#include "lib/units.h"
#include "view/ban_text.h"
#include "view/output.h"

/* What is left of a ban until until_ns at now: "forever", or in seconds
 * to the millisecond. */
static void left_text(__u64 until_ns, __u64 now, char *buf, size_t len)
{
	__u64 ms;

	if (until_ns == TB_BAN_FOREVER) {
		snprintf(buf, len, "forever");
		return;
	}
	ms = until_ns > now ? (until_ns - now + 999999) / 1000000 : 0;
	snprintf(buf, len, "%llu.%03llus", (unsigned long long)(ms / 1000), (unsigned long long)(ms % 1000));
}

static void row(struct json_object *arr, const char *what, const char *kind, const char *rule, __u64 until_ns,
		__u64 now)
{
	struct json_object *o;
	char left[32];

	if (!arr) {
		left_text(until_ns, now, left, sizeof(left));
		printf("%-40s %-6s %-24s %s\n", what, kind, rule, left);
		return;
	}
	o = json_object_new_object();
	json_add_str(o, "ban", what);
	json_add_str(o, "kind", kind);
	json_add_str(o, "rule", rule);
	if (until_ns == TB_BAN_FOREVER)
		json_object_object_add(o, "left_ms", NULL);
	else
		json_add_u64(o, "left_ms", until_ns > now ? (until_ns - now + 999999) / 1000000 : 0);
	json_object_array_add(arr, o);
}

void ban_print(const struct ban *b, __u64 now, struct json_object *arr)
{
	char p[PREFIX_TEXT_MAX];

	prefix_format_short(&b->p, p, sizeof(p));
	row(arr, p, "manual", "-", b->own_ns, now);
}

void ban_save(FILE *f, const char *dev, const struct ban *v, size_t n, __u64 now)
{
	for (size_t i = 0; i < n; i++) {
		char p[PREFIX_TEXT_MAX], left[32] = "";

		prefix_format_short(&v[i].p, p, sizeof(p));
		if (v[i].own_ns != TB_BAN_FOREVER)
			format_duration((v[i].own_ns - now + 999999) / 1000000 * 1000000, left, sizeof(left));
		fprintf(f, "ban add dev %s %s%s%s\n", dev, p, *left ? " for " : "", left);
	}
}

void autoban_print(const struct autoban *a, const struct ruleset *rs, __u64 now, struct json_object *arr)
{
	int rule = a->a.rule && a->a.rule - 1 < TB_MAX_RULES && rs->rules[a->a.rule - 1].in_use ? (int)a->a.rule - 1 : -1;
	char what[PREFIX_TEXT_MAX + 16], name[PREFIX_TEXT_MAX] = "-";

	if (rule >= 0)
		rule_format(&rs->rules[rule], name, sizeof(name));
	if (autoban_shared_slot(&a->key) >= 0)
		snprintf(what, sizeof(what), "%s shared", name);
	else
		ruleset_addr_format(rs, &a->key, rule, what, sizeof(what));
	row(arr, what, "rule", name, a->a.until_ns, now);
}
