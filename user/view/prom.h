/* SPDX-License-Identifier: GPL-2.0 */
/* The Prometheus text exposition format's pieces. */
#ifndef TB_PROM_H
#define TB_PROM_H

#include <stdio.h>

/* A label's value, escaped. */
void prom_label(FILE *f, const char *s);
/* A family's HELP and TYPE lines. */
void prom_family(FILE *f, const char *name, const char *type, const char *help);

#endif
