// SPDX-License-Identifier: GPL-2.0
/* metrics (the Prometheus text format on stdout, for node_exporter's
 * textfile collector) and exporter (the same over HTTP: exporter/). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "lib/err.h"
#include "exporter/metrics.h"
#include "exporter/server.h"
#include "view/output.h"
#include "lib/state.h"
#include "cli/tbctl.h"

#define MAX_NAMED 64

struct metrics_opts {
	struct cmd_target t;
	const char *devs[MAX_NAMED];    /* "dev DEV" may repeat: none, every attached device */
	int ndevs;
	__u32 top;
	const char *listen;
};

static int parse_metrics_words(const char *cmd, int argc, char **argv, struct metrics_opts *a, bool listen)
{
	struct kw kws[] = { { "dev", .many = a->devs, .max = MAX_NAMED }, { "top" }, { listen ? "listen" : NULL },
			    { 0 } };
	const char *v;
	int rc = kw_parse(cmd, argc, argv, kws, NULL);

	for (int i = 0; !rc && i < kws[0].n; i++)
		rc = parse_dev(cmd, a->devs[i], &a->t);
	a->ndevs = kws[0].n;
	a->t.has_dev = false;   /* locks none: it reads, every device or the named ones */
	if (!rc && (v = kw_get(kws, "top")))
		rc = parse_count(cmd, "top", v, 0, METRICS_TOP_MAX, &a->top);
	if (!rc && listen)
		a->listen = kw_get(kws, "listen");
	return rc;
}

static int parse_metrics(const char *cmd, int argc, char **argv, void *opts)
{
	return parse_metrics_words(cmd, argc, argv, opts, false);
}

static int run_metrics(const void *opts)
{
	const struct metrics_opts *a = opts;
	int err;

	if (bpffs_ready("metrics"))
		return 1;
	err = metrics_write(stdout, a->devs, a->ndevs, a->top);
	if (err) {
		out_error("metrics: %s", strerror(-err));
		return 1;
	}
	return 0;
}

static int parse_exporter(const char *cmd, int argc, char **argv, void *opts)
{
	struct metrics_opts *a = opts;
	struct sockaddr_storage ss;
	bool any;
	int err = parse_metrics_words(cmd, argc, argv, a, true);

	if (!err && a->listen && exporter_listen_parse(a->listen, &ss, &any))
		return usage_error(cmd, "invalid listen address \"%s\" (ADDR:PORT, [ADDR6]:PORT or :PORT)",
				   a->listen);
	return err;
}

/* Serves until SIGINT or SIGTERM, then exits 0. */
static int run_exporter(const void *opts)
{
	const struct metrics_opts *a = opts;
	struct exporter_opts o = { .devs = a->devs, .ndevs = a->ndevs, .top = a->top, .listen = a->listen };
	struct tb_err e;

	if (bpffs_ready("exporter"))
		return 1;
	if (exporter_serve(&o, &e)) {
		out_error("exporter: %s", e.msg);
		return 1;
	}
	return 0;
}

const struct command cmd_metrics = {
	.name = "metrics",
	.usage = "[dev DEV]... [top N]",
	.opts_size = sizeof(struct metrics_opts),
	.parse = parse_metrics,
	.run = run_metrics,
	.flags = CMD_NO_BATCH,
	.caps = CAPS_READ,
};
const struct command cmd_exporter = {
	.name = "exporter",
	.usage = "[listen ADDR:PORT] [dev DEV]... [top N]",
	.opts_size = sizeof(struct metrics_opts),
	.parse = parse_exporter,
	.run = run_exporter,
	.flags = CMD_NO_BATCH,
	.caps = CAPS_READ,
};
