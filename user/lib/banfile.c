// SPDX-License-Identifier: GPL-2.0
/* Ban list files (banfile.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "lib/banfile.h"
#include "lib/grow.h"
#include "lib/units.h"

#define BANFILE_LINE_MAX 512

int ban_words(const char *prefix, const char *const *words, int nwords, struct banfile_entry *e, char *err,
	      size_t errlen)
{
	char why[160];

	memset(e, 0, sizeof(*e));
	switch (prefix_parse(prefix, &e->p, why, sizeof(why))) {
	case PREFIX_BAD:
		snprintf(err, errlen, "%s", why);
		return -1;
	case PREFIX_HOST_BITS:
		e->host_bits = true;
		break;
	}
	if (!e->p.family) {
		snprintf(err, errlen, "a ban takes an address or prefix, not \"default\" (0.0.0.0/0 and ::/0 "
				      "are every address)");
		return -1;
	}
	if (nwords == 2 && !strcmp(words[0], "timeout")) {
		/* ipset's timeout: seconds, 0 for none. */
		if (strcmp(words[1], "0") && parse_duration(words[1], "timeout", BAN_MAX_NS, &e->dur_ns, err, errlen))
			return -1;
		if (strspn(words[1], "0123456789") != strlen(words[1])) {
			snprintf(err, errlen, "timeout \"%s\": seconds, as a number", words[1]);
			return -1;
		}
		return 0;
	}
	if (nwords > 1) {
		snprintf(err, errlen, "\"%s\" after the duration", words[1]);
		return -1;
	}
	if (nwords == 1 && parse_duration(words[0], "duration", BAN_MAX_NS, &e->dur_ns, err, errlen))
		return -1;
	return 0;
}

/* The words of line, '#' and after dropped, into w (at most max). */
static int split(char *line, char **w, int max)
{
	int n = 0;

	line[strcspn(line, "#\r\n")] = 0;
	for (char *save, *t = strtok_r(line, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
		if (n == max)
			return -1;
		w[n++] = t;
	}
	return n;
}

int banfile_read(FILE *f, struct banfile_entry **out, size_t *n, char *err, size_t errlen)
{
	char line[BANFILE_LINE_MAX + 2], why[200], *w[4];
	size_t cap = 0;
	int lineno = 0, nw;

	*out = NULL;
	*n = 0;
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			snprintf(err, errlen, "line %d: longer than %d characters", lineno, BANFILE_LINE_MAX);
			goto bad;
		}
		nw = split(line, w, 4);
		if (!nw)
			continue;
		if (nw < 0) {
			snprintf(err, errlen, "line %d: too many words (PREFIX [DURATION | timeout SECONDS])", lineno);
			goto bad;
		}
		if (GROW(*out, *n, cap, 256)) {
			snprintf(err, errlen, "%s", strerror(ENOMEM));
			goto bad;
		}
		if (ban_words(w[0], (const char *const *)w + 1, nw - 1, &(*out)[*n], why, sizeof(why))) {
			snprintf(err, errlen, "line %d: %s", lineno, why);
			goto bad;
		}
		(*out)[(*n)++].line = lineno;
	}
	if (ferror(f)) {
		snprintf(err, errlen, "read: %s", strerror(errno));
		goto bad;
	}
	return 0;
bad:
	free(*out);
	*out = NULL;
	*n = 0;
	return -1;
}
