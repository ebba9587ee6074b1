// SPDX-License-Identifier: GPL-2.0
/* The exporter: the metrics over HTTP (libmicrohttpd), every scrape
 * read from the pins afresh, behind a guard that keeps slots free for
 * scrapers however many connections others hold open. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netdb.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <microhttpd.h>
#include "lib/err.h"
#include "exporter/conn_guard.h"
#include "exporter/metrics.h"
#include "exporter/server.h"

/* Above the 9100-9999 range of the Prometheus wiki's port list, which is
 * all allocated. */
/* A connection idle this long is dropped (libmicrohttpd's timeout). */
#define EXPORTER_TIMEOUT_S 10
/* A request whose headers are not complete this long after the
 * connection began waiting for them is cut, however it trickles in
 * (conn_guard.c); a scrape sends its request at once. */
#define EXPORTER_DEADLINE_MS 3000
/* Connections at once from one address, and from all: one client that
 * opens many cannot take the slots every other scraper needs; and slots
 * kept free by cutting the connection that has waited longest for its
 * request, so that clients from many addresses cannot either. */
#define EXPORTER_PER_CLIENT 8
#define EXPORTER_CONNECTIONS 256
#define EXPORTER_SPARE 16

/* One exporter runs per process (it never runs from a batch). */
static struct conn_guard guard;

/* ADDR:PORT, [ADDR6]:PORT or :PORT (every address), numeric only. */
int exporter_listen_parse(const char *s, struct sockaddr_storage *ss, bool *any)
{
	struct addrinfo hints = { .ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV,
				  .ai_socktype = SOCK_STREAM }, *res;
	const char *colon = strrchr(s, ':');
	char host[INET6_ADDRSTRLEN];
	unsigned long port;
	char *end;
	size_t hl;

	if (!colon)
		return -1;
	port = strtoul(colon + 1, &end, 10);
	if (colon[1] < '0' || colon[1] > '9' || *end || !port || port > 65535)
		return -1;
	hl = colon - s;
	if (hl >= 2 && s[0] == '[' && s[hl - 1] == ']') {
		s++;
		hl -= 2;
	}
	if (hl >= sizeof(host))
		return -1;
	memcpy(host, s, hl);
	host[hl] = 0;
	*any = !hl;
	/* Every address: the IPv6 one, which takes IPv4 too (dual stack). */
	hints.ai_family = hl ? AF_UNSPEC : AF_INET6;
	if (getaddrinfo(hl ? host : NULL, colon + 1, &hints, &res))
		return -1;
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}

static enum MHD_Result send_text(struct MHD_Connection *c, unsigned int code, char *body, size_t len,
				 enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				code == MHD_HTTP_OK ? "text/plain; version=0.0.4; charset=utf-8" : "text/plain");
	ret = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);
	return ret;
}

/* GET /metrics: every scrape reads the pins afresh. */
static enum MHD_Result serve(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			     const char *version, const char *upload, size_t *upload_len, void **state)
{
	const struct exporter_opts *a = cls;
	static char not_found[] = "tbctl exporter: metrics are at /metrics\n";
	static char bad_method[] = "tbctl exporter: GET only\n";
	char *body = NULL;
	size_t len = 0;
	FILE *f;
	int err;

	(void)version, (void)upload, (void)upload_len, (void)state;
	guard_request_complete(&guard, c);
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return send_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, bad_method, strlen(bad_method),
				 MHD_RESPMEM_PERSISTENT);
	if (strcmp(url, "/metrics"))
		return send_text(c, MHD_HTTP_NOT_FOUND, not_found, strlen(not_found), MHD_RESPMEM_PERSISTENT);
	f = open_memstream(&body, &len);
	if (!f)
		return MHD_NO;
	err = metrics_write(f, a->devs, a->ndevs, a->top);
	fclose(f);
	if (err) {
		static char failed[] = "tbctl exporter: reading the pinned maps failed\n";

		free(body);
		fprintf(stderr, "Error: exporter: scrape: %s\n", strerror(-err));
		return send_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, failed, strlen(failed), MHD_RESPMEM_PERSISTENT);
	}
	return send_text(c, MHD_HTTP_OK, body, len, MHD_RESPMEM_MUST_FREE);
}

int exporter_serve(const struct exporter_opts *a, struct tb_err *e)
{
	struct sockaddr_storage ss;
	struct MHD_Daemon *daemon;
	/* epoll: no select() bound on descriptors, and one thread that never
	 * blocks on a slow client. */
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
	char listen[64];
	sigset_t stop;
	bool any;
	int sig, err;

	snprintf(listen, sizeof(listen), "%s", a->listen ? a->listen : ":" EXPORTER_PORT);
	exporter_listen_parse(listen, &ss, &any);
	if (any)
		flags |= MHD_USE_DUAL_STACK;
	else if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	/* Blocked before the server's thread starts, so only sigwait sees them. */
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	err = guard_start(&guard, EXPORTER_CONNECTIONS, EXPORTER_SPARE, EXPORTER_DEADLINE_MS);
	if (err)
		return tb_fail(e, err, "start the connection guard: %s", strerror(-err));
	daemon = MHD_start_daemon(flags, ntohs(((struct sockaddr_in *)&ss)->sin_port), NULL, NULL, serve,
				  (void *)a, MHD_OPTION_SOCK_ADDR, any ? NULL : (struct sockaddr *)&ss,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)EXPORTER_TIMEOUT_S,
				  MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)EXPORTER_PER_CLIENT,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned int)EXPORTER_CONNECTIONS,
				  MHD_OPTION_NOTIFY_CONNECTION, guard_connection, &guard,
				  MHD_OPTION_NOTIFY_COMPLETED, guard_request_done, &guard, MHD_OPTION_END);
	if (!daemon) {
		err = -(errno ? errno : EADDRINUSE);
		guard_stop(&guard);
		return tb_fail(e, err, "listen on %s: %s", listen, strerror(-err));
	}
	fprintf(stderr, "tbctl exporter: serving /metrics on %s\n", listen);
	sigwait(&stop, &sig);
	MHD_stop_daemon(daemon);
	guard_stop(&guard);
	return 0;
}
