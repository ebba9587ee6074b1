/* SPDX-License-Identifier: GPL-2.0 */
/* The Prometheus text exposition format's pieces. */
#ifndef TB_PROM_H
#define TB_PROM_H

#include <stdio.h>

/* A label's value, escaped. */
void prom_label(FILE *f, const char *s);
/* The labels that name the device of pins key (lib/devkey.h), escaped,
 * into buf[PROM_DEV_LABELS]: dev="NAME", and netns="..." (netns_label)
 * when it is not this namespace's. */
#define PROM_DEV_LABELS 200
void prom_dev_labels(char *buf, const char *key);
/* A family's HELP and TYPE lines. */
void prom_family(FILE *f, const char *name, const char *type, const char *help);

#endif
