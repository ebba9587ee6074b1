/* SPDX-License-Identifier: GPL-2.0 */
/* Text for people, or with -j one JSON document (json-c) for programs;
 * errors in the same shape as the output they replace. */
#ifndef TB_OUTPUT_H
#define TB_OUTPUT_H

#include <json-c/json.h>
#include <linux/types.h>

struct output {
	int json;
	int pretty;
	int verbose;
	int batch_line;   /* > 0 while running -batch: prefixes errors */
};

extern struct output out;

void out_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void out_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print a document and drop the reference. */
void out_json(struct json_object *doc);
/* A JSON array written element by element, so that its length costs no
 * memory: begin, then one item per element (each freed), then end. */
struct json_stream {
	unsigned long n;
};
void out_json_begin(struct json_stream *js);
void out_json_item(struct json_stream *js, struct json_object *o);
void out_json_end(struct json_stream *js);
/* libbpf's messages: printed live with -v -v; its warnings (the verifier's
 * log among them) are kept so a failed load can show the last lines. */
void out_libbpf_setup(void);
void out_libbpf_tail(int lines);
void json_add_u64(struct json_object *o, const char *key, __u64 v);
void json_add_str(struct json_object *o, const char *key, const char *v);

#endif
