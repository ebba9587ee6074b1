// SPDX-License-Identifier: GPL-2.0
/* A file of commands, one a line, '#' comments: what -batch runs and
 * apply reads. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "view/output.h"
#include "cli/tbctl.h"

/* One line into l: its words, in a copy l owns, parsed. */
static int line_parse(const char *buf, struct cmd_line *l, bool *empty)
{
	char *argv[LINE_MAX_WORDS], *text = strdup(buf);
	int argc, err;

	*l = (struct cmd_line){};
	if (!text) {
		out_error("%s", strerror(ENOMEM));
		return 1;
	}
	argc = words_split(text, argv, LINE_MAX_WORDS);
	*empty = !argc;
	if (argc <= 0) {
		free(text);
		if (argc < 0)
			out_error("more than %d words", LINE_MAX_WORDS);
		return argc < 0 ? EXIT_USAGE : 0;
	}
	err = parse_command(argc, argv, l);
	l->text = text;
	if (err)
		line_free(l);
	return err;
}

int cmdfile_read(const char *path, const char *who, int (*fn)(struct cmd_line *l, int lineno, void *ctx), void *ctx)
{
	bool is_stdin = !strcmp(path, "-"), empty;
	FILE *f = is_stdin ? stdin : fopen(path, "r");
	int err = 0, lineno = 0;
	char *buf = NULL;
	size_t blen = 0;
	ssize_t len;

	if (!f) {
		out_error("%s: open %s: %s", who, path, strerror(errno));
		return 1;
	}
	while (!err && (errno = 0, len = getline(&buf, &blen, f)) >= 0) {
		struct cmd_line l;

		out.batch_line = ++lineno;
		if (strlen(buf) != (size_t)len) {
			out_error("a NUL byte in the line");
			err = EXIT_USAGE;
		} else if (!(err = line_parse(buf, &l, &empty)) && !empty) {
			err = fn(&l, lineno, ctx);
		}
	}
	/* getline's -1 is the end of the file only if the file says so. */
	if (!err && !feof(f)) {
		out.batch_line = lineno + 1;
		out_error("%s: read %s: %s", who, is_stdin ? "standard input" : path, strerror(errno ? errno : EIO));
		err = 1;
	}
	free(buf);
	if (!is_stdin)
		fclose(f);
	return err;
}
