// SPDX-License-Identifier: GPL-2.0
#include <net/if.h>
#include <stdbool.h>
#include "lib/netns.h"
#include "lib/devkey.h"
#include "view/prom.h"

void prom_label(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

void prom_family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void prom_dev_labels(char *buf, const char *key)
{
	char dev[IF_NAMESIZE], netns[IF_NAMESIZE + 64];
	FILE *f = fmemopen(buf, PROM_DEV_LABELS, "w");
	bool other = !devkey_ours(key) || devkey_unkeyed(key);

	buf[0] = 0;
	if (!f)
		return;
	devkey_dev(key, dev);
	fputs("dev=\"", f);
	prom_label(f, dev);
	fputc('"', f);
	if (other) {
		if (devkey_unkeyed(key))
			snprintf(netns, sizeof(netns), "unknown");
		else
			netns_label(devkey_netns(key), netns, sizeof(netns));
		fputs(",netns=\"", f);
		prom_label(f, netns);
		fputc('"', f);
	}
	fclose(f);
}
