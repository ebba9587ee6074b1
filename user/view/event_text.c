// SPDX-License-Identifier: GPL-2.0
#include <stdio.h>
#include <string.h>
#include "lib/prefix.h"
#include "view/event_text.h"
#include "view/output.h"

static const char *const kind_names[] = { "drop", "mark", "remark", "fleet", "ban" };
static const char *const verdict_names[] = { [TB_EVENT_DROP] = "drop", [TB_EVENT_MARK] = "mark",
					     [TB_EVENT_REMARK] = "remark" };
static const char *const why_names[] = { [TB_WHY_RATE] = "rate",   [TB_WHY_EARLY] = "early",
					 [TB_WHY_PEAK] = "peak",   [TB_WHY_TOTAL] = "total",
					 [TB_WHY_FLEET] = "fleet", [TB_WHY_UNKNOWN] = "unknown",
					 [TB_WHY_BAN] = "ban" };

#define NAME_OF(names, i) ((i) < sizeof(names) / sizeof(names[0]) && names[i] ? names[i] : "?")

void event_clock_start(struct event_clock *c)
{
	struct timespec mono;

	clock_gettime(CLOCK_REALTIME, &c->wall);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	c->mono_ns = (__u64)mono.tv_sec * 1000000000ULL + mono.tv_nsec;
}

int event_kind_parse(const char *word)
{
	for (size_t i = 0; i < sizeof(kind_names) / sizeof(kind_names[0]); i++)
		if (!strcmp(word, kind_names[i]))
			return 1 << i;
	return 0;
}

unsigned int event_kind(const struct tb_event *e)
{
	unsigned int k = e->verdict == TB_EVENT_DROP ? EVENT_KIND_DROP :
			 e->verdict == TB_EVENT_MARK ? EVENT_KIND_MARK : EVENT_KIND_REMARK;

	return k | (e->why == TB_WHY_FLEET ? EVENT_KIND_FLEET : 0) | (e->why == TB_WHY_BAN ? EVENT_KIND_BAN : 0);
}

/* The record's time on the wall clock, as ISO 8601 in UTC. */
static void event_time(const struct tb_event *e, const struct event_clock *c, char *buf, size_t len)
{
	__u64 ns = (__u64)c->wall.tv_nsec + (e->ns - c->mono_ns);
	time_t sec = c->wall.tv_sec + ns / 1000000000ULL;
	struct tm tm;
	size_t n;

	gmtime_r(&sec, &tm);
	n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, len - n, ".%06lluZ", (unsigned long long)(ns % 1000000000ULL / 1000));
}

void event_print(const struct tb_event *e, const struct ruleset *rs, const struct tb_maps *m,
		 const struct event_clock *c)
{
	int rule = e->rule && e->rule - 1 < TB_MAX_RULES && rs->rules[e->rule - 1].in_use ?
			   e->rule - 1 :
			   ruleset_rule_of(rs, m, &e->key, NULL, rs->cfg.gen);
	char when[48], addr[PREFIX_TEXT_MAX + 8], name[PREFIX_TEXT_MAX] = "-";

	event_time(e, c, when, sizeof(when));
	ruleset_addr_format(rs, &e->key, rule, addr, sizeof(addr));
	if (rule >= 0)
		rule_format(&rs->rules[rule], name, sizeof(name));
	if (out.json) {
		struct json_object *o = json_object_new_object();

		json_add_str(o, "time", when);
		json_add_u64(o, "monotonic_ns", e->ns);
		json_add_str(o, "address", addr);
		json_add_str(o, "rule", name);
		json_add_str(o, "verdict", NAME_OF(verdict_names, e->verdict));
		json_add_str(o, "why", NAME_OF(why_names, e->why));
		json_add_u64(o, "bytes", e->bytes);
		json_add_u64(o, "packets", e->packets);
		printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
		json_object_put(o);
	} else {
		printf("%s %-40s %-22s %-6s %-7s %6u B %3u pkt\n", when, addr, name, NAME_OF(verdict_names, e->verdict),
		       NAME_OF(why_names, e->why), e->bytes, e->packets);
	}
	fflush(stdout);
}

void event_print_missed(__u64 lost, __u64 capped)
{
	if (out.json) {
		struct json_object *o = json_object_new_object();

		json_add_u64(o, "lost", lost);
		json_add_u64(o, "capped", capped);
		printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
		json_object_put(o);
	} else {
		printf("# not logged: %llu lost (the buffer was full), %llu over the rate a second\n",
		       (unsigned long long)lost, (unsigned long long)capped);
	}
	fflush(stdout);
}
