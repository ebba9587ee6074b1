// SPDX-License-Identifier: GPL-2.0
/* The words every command shares: keyword arguments, iproute2 style,
 * device names, counts, choices among names, and splitting a line of a
 * file into words. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "view/output.h"
#include "lib/devkey.h"
#include "cli/tbctl.h"

int usage_error(const char *cmd, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	out_error("%s: %s", cmd, msg);
	return EXIT_USAGE;
}

int choose(const char *cmd, const char *what, const char *value, const char *const *choices)
{
	char list[256] = "";

	for (int i = 0; choices[i]; i++) {
		if (!strcmp(value, choices[i]))
			return i;
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? "|" : "", choices[i]);
	}
	usage_error(cmd, "invalid %s \"%s\" (expected %s)", what, value, list);
	return -1;
}

int parse_count(const char *cmd, const char *what, const char *v, __u32 min, __u32 max, __u32 *out)
{
	char *end;
	unsigned long long n;

	errno = 0;
	n = strtoull(v, &end, 10);
	if (!isdigit((unsigned char)*v) || *end || errno || n < min || n > max)
		return usage_error(cmd, "invalid %s \"%s\" (a whole number, %u..%u)", what, v, min, max);
	*out = n;
	return 0;
}

int kw_parse(const char *cmd, int argc, char **argv, struct kw *kws, const char **positional)
{
	for (int i = 0; i < argc; i++) {
		struct kw *k = kws;

		while (k->name && strcmp(k->name, argv[i]))
			k++;
		if (!k->name) {
			if (positional && !*positional) {
				*positional = argv[i];
				continue;
			}
			return usage_error(cmd, "unknown keyword \"%s\"", argv[i]);
		}
		if (k->value && !k->many)
			return usage_error(cmd, "keyword \"%s\" given twice", k->name);
		if (i + 1 >= argc)
			return usage_error(cmd, "keyword \"%s\" needs a value", k->name);
		k->value = argv[++i];
		if (k->many && k->n == k->max)
			return usage_error(cmd, "keyword \"%s\" given more than %d times", k->name, k->max);
		if (k->many)
			k->many[k->n++] = k->value;
	}
	return 0;
}

const char *kw_get(const struct kw *kws, const char *name)
{
	for (; kws->name; kws++)
		if (!strcmp(kws->name, name))
			return kws->value;
	return NULL;
}

int parse_dev(const char *cmd, const char *name, struct cmd_target *t)
{
	if (!name)
		return usage_error(cmd, "missing \"dev DEV\"");
	if (devkey_name_valid(name))
		return usage_error(cmd, "invalid device name \"%s\"", name);
	strcpy(t->dev, name);
	t->has_dev = true;
	return 0;
}

static int dev_words(const char *cmd, int argc, char **argv, struct cmd_target *t, bool optional)
{
	struct kw kws[] = { { "dev" }, { 0 } };
	int err = kw_parse(cmd, argc, argv, kws, NULL);

	if (err)
		return err;
	if (optional && !kw_get(kws, "dev"))
		return 0;
	return parse_dev(cmd, kw_get(kws, "dev"), t);
}

int parse_dev_only(const char *cmd, int argc, char **argv, void *opts)
{
	return dev_words(cmd, argc, argv, opts, false);
}

int parse_dev_optional(const char *cmd, int argc, char **argv, void *opts)
{
	return dev_words(cmd, argc, argv, opts, true);
}

int words_split(char *line, char **argv, int max)
{
	int n = 0;
	char *tok, *save;

	line[strcspn(line, "#")] = 0;
	for (tok = strtok_r(line, " \t\r\n", &save); tok; tok = strtok_r(NULL, " \t\r\n", &save)) {
		if (n == max)
			return -1;
		argv[n++] = tok;
	}
	return n;
}
