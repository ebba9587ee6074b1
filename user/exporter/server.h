/* SPDX-License-Identifier: GPL-2.0 */
/* The exporter: the metrics served over HTTP at /metrics. */
#ifndef TB_EXPORTER_SERVER_H
#define TB_EXPORTER_SERVER_H

#include <stdbool.h>
#include <sys/socket.h>

/* Above the 9100-9999 range of the Prometheus wiki's port list, which is
 * all allocated. */
#define EXPORTER_PORT "10088"

struct exporter_opts {
	const char *const *devs;        /* the devices named; none: every attached one */
	int ndevs;
	unsigned int top;               /* top addresses' series, as metrics_write */
	const char *listen;             /* ADDR:PORT; NULL: every address, EXPORTER_PORT */
};

/* ADDR:PORT, [ADDR6]:PORT or :PORT (every address, *any), numeric only,
 * into ss; -1 when it is none of those. */
int exporter_listen_parse(const char *s, struct sockaddr_storage *ss, bool *any);
/* Serve until SIGINT or SIGTERM, then 0; -errno, said in e, when it
 * cannot start. One exporter a process. */
struct tb_err;
int exporter_serve(const struct exporter_opts *o, struct tb_err *e);

#endif
