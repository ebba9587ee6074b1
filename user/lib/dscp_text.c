// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/dscp_text.h"

#define DSCP_MAX 63

static const struct {
	const char *name;
	__u8 dscp;
} dscp_names[] = {
	{ "cs0", 0 },   { "le", 1 },    { "cs1", 8 },   { "af11", 10 }, { "af12", 12 }, { "af13", 14 },
	{ "cs2", 16 },  { "af21", 18 }, { "af22", 20 }, { "af23", 22 }, { "cs3", 24 },  { "af31", 26 },
	{ "af32", 28 }, { "af33", 30 }, { "cs4", 32 },  { "af41", 34 }, { "af42", 36 }, { "af43", 38 },
	{ "cs5", 40 },  { "va", 44 },   { "ef", 46 },   { "cs6", 48 },  { "cs7", 56 },  { "df", 0 },
};

#define NNAMES (sizeof(dscp_names) / sizeof(dscp_names[0]))

int dscp_parse(const char *word, __u8 *dscp, char *err, size_t errlen)
{
	char *end;
	unsigned long n;

	for (size_t i = 0; i < NNAMES; i++)
		if (!strcasecmp(word, dscp_names[i].name)) {
			*dscp = dscp_names[i].dscp;
			return 0;
		}
	if (isdigit((unsigned char)*word)) {
		/* Decimal, or hex as tc writes a TOS: never octal. */
		n = strtoul(word, &end, word[0] == '0' && (word[1] == 'x' || word[1] == 'X') ? 16 : 10);
		if (!*end && n <= DSCP_MAX) {
			*dscp = (__u8)n;
			return 0;
		}
	}
	snprintf(err, errlen, "invalid DSCP \"%s\" (expected cs0..cs7, af11..af43, ef, va, le, df or 0..%d)", word,
		 DSCP_MAX);
	return -1;
}

void dscp_format(__u8 dscp, char *buf, size_t len)
{
	for (size_t i = 0; i < NNAMES; i++)
		if (dscp_names[i].dscp == dscp) {
			snprintf(buf, len, "%s", dscp_names[i].name);
			return;
		}
	snprintf(buf, len, "%u", dscp);
}
