// SPDX-License-Identifier: GPL-2.0
#include <stdarg.h>
#include <stdio.h>
#include "output.h"

struct output out;

void out_error(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (out.json) {
		struct json_object *o = json_object_new_object();

		json_add_str(o, "error", msg);
		if (out.batch_line > 0)
			json_add_u64(o, "line", out.batch_line);
		out_json(o);
	} else if (out.batch_line > 0) {
		fprintf(stderr, "Error: line %d: %s\n", out.batch_line, msg);
	} else {
		fprintf(stderr, "Error: %s\n", msg);
	}
}

void out_warn(const char *fmt, ...)
{
	va_list ap;

	fputs("Warning: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void out_json(struct json_object *doc)
{
	int flags = out.pretty ? JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED : JSON_C_TO_STRING_PLAIN;

	puts(json_object_to_json_string_ext(doc, flags | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(doc);
}

void json_add_u64(struct json_object *o, const char *key, __u64 v)
{
	json_object_object_add(o, key, json_object_new_uint64(v));
}

void json_add_str(struct json_object *o, const char *key, const char *v)
{
	json_object_object_add(o, key, json_object_new_string(v));
}
