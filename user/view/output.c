// SPDX-License-Identifier: GPL-2.0
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "view/output.h"

struct output out;

/* Length of the valid UTF-8 sequence at s (1-4), or 0 if it is none. */
static int utf8_len(const unsigned char *s)
{
	int n = s[0] < 0x80 ? 1 : (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3 :
		(s[0] & 0xf8) == 0xf0 ? 4 : 0;

	if (n == 2 && s[0] < 0xc2)
		return 0;       /* overlong */
	for (int i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

/* A message as it may reach a terminal or a JSON string: control bytes
 * and bytes that are no UTF-8, which the input may hold, as \xNN. */
static void escape(const char *in, char *out, size_t len)
{
	const unsigned char *s = (const unsigned char *)in;
	size_t o = 0;

	while (*s && o + 5 < len) {
		int n = utf8_len(s);

		if (n == 1 && *s >= 0x20 && *s != 0x7f) {
			out[o++] = *s++;
		} else if (n > 1) {
			memcpy(out + o, s, n);
			o += n;
			s += n;
		} else {
			o += snprintf(out + o, len - o, "\\x%02x", *s++);
		}
	}
	out[o] = 0;
}

void out_error(const char *fmt, ...)
{
	char raw[1024], msg[4 * 1024 + 1];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	escape(raw, msg, sizeof(msg));
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
	char raw[1024], msg[4 * 1024 + 1];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	escape(raw, msg, sizeof(msg));
	fprintf(stderr, "Warning: %s\n", msg);
}

void out_json(struct json_object *doc)
{
	int flags = out.pretty ? JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED : JSON_C_TO_STRING_PLAIN;

	puts(json_object_to_json_string_ext(doc, flags | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(doc);
}

void out_json_begin(struct json_stream *js)
{
	js->n = 0;
	fputs("[", stdout);
}

void out_json_item(struct json_stream *js, struct json_object *o)
{
	int flags = out.pretty ? JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED : JSON_C_TO_STRING_PLAIN;
	const char *text = json_object_to_json_string_ext(o, flags | JSON_C_TO_STRING_NOSLASHESCAPE);

	fputs(js->n++ ? "," : "", stdout);
	if (out.pretty) {
		/* One level deeper than a document of its own. */
		fputs("\n  ", stdout);
		for (const char *nl; (nl = strchr(text, '\n')); text = nl + 1) {
			fwrite(text, 1, nl - text, stdout);
			fputs("\n  ", stdout);
		}
		fputs(text, stdout);
	} else {
		fputs(text, stdout);
	}
	json_object_put(o);
}

void out_json_end(struct json_stream *js)
{
	fputs(out.pretty && js->n ? "\n]\n" : "]\n", stdout);
}

void json_add_u64(struct json_object *o, const char *key, __u64 v)
{
	json_object_object_add(o, key, json_object_new_uint64(v));
}

void json_add_str(struct json_object *o, const char *key, const char *v)
{
	json_object_object_add(o, key, json_object_new_string(v));
}

#define LOG_LINES 64
static char *log_ring[LOG_LINES];
static unsigned log_next;
static char log_partial[1024];

/* The line being made, with add bytes of text: as much as fits. */
static void log_append(const char *text, size_t add)
{
	size_t have = strlen(log_partial);

	if (have + add >= sizeof(log_partial))
		add = sizeof(log_partial) - have - 1;
	memcpy(log_partial + have, text, add);
	log_partial[have + add] = 0;
}

static void log_keep(const char *text)
{
	const char *nl;

	while ((nl = strchr(text, '\n'))) {
		log_append(text, nl - text);
		free(log_ring[log_next % LOG_LINES]);
		log_ring[log_next++ % LOG_LINES] = strdup(log_partial);
		log_partial[0] = 0;
		text = nl + 1;
	}
	log_append(text, strlen(text));
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char buf[4096];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	if (out.verbose >= 2)
		fputs(buf, stderr);
	if (level != LIBBPF_DEBUG)
		log_keep(buf);
	return 0;
}

void out_libbpf_setup(void)
{
	libbpf_set_print(libbpf_print);
}

void out_libbpf_tail(int lines)
{
	unsigned first = log_next > (unsigned)lines ? log_next - lines : 0;

	if (log_next - first > LOG_LINES)
		first = log_next - LOG_LINES;
	for (unsigned i = first; i < log_next; i++)
		if (log_ring[i % LOG_LINES])
			fprintf(stderr, "  %s\n", log_ring[i % LOG_LINES]);
}
