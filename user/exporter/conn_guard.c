// SPDX-License-Identifier: GPL-2.0
/* The exporter's guard over its connections. libmicrohttpd's own limits
 * fall short against clients that hold connections: its timeout counts
 * idleness, so a client that sends a byte a second is never dropped, and
 * at its connection limit it accepts no one, so clients from enough
 * addresses shut every scraper out. The guard
 *  - cuts a connection whose request's headers are not complete within
 *    the deadline of when it began waiting for them, whatever trickles
 *    in (on a kept-alive connection, from the end of the previous reply);
 *  - keeps spare slots free: when a new connection takes one of them, the
 *    connection that has waited longest for its headers is cut.
 * A scraper sends its whole request at once, so neither ever cuts it.
 * Cut is shutdown(2) on the socket: libmicrohttpd then reads its end and
 * closes the connection in its own thread. The slot is freed when it says
 * the connection closed, before it closes the socket, so the guard never
 * shuts a descriptor down after it was closed and reused. */
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <sys/socket.h>
#include "lib/clock.h"
#include "exporter/conn_guard.h"

#define GUARD_TICK_MS 100

/* The caller holds g->lock. */
static void cut(struct guard_slot *s)
{
	if (s->cut)
		return;
	shutdown(s->fd, SHUT_RDWR);
	s->cut = true;
}

/* The connection that has waited longest for its request's headers, cut
 * to make room; the caller holds g->lock. */
static void cut_oldest_waiting(struct conn_guard *g)
{
	struct guard_slot *oldest = NULL;

	for (unsigned int i = 0; i < g->n; i++) {
		struct guard_slot *s = &g->slots[i];

		if (s->used && !s->complete && !s->cut && (!oldest || s->since_ns < oldest->since_ns))
			oldest = s;
	}
	if (oldest)
		cut(oldest);
}

static void *watch(void *arg)
{
	struct conn_guard *g = arg;

	pthread_mutex_lock(&g->lock);
	while (!g->stop) {
		struct timespec until;
		__u64 now = now_ns();

		for (unsigned int i = 0; i < g->n; i++) {
			struct guard_slot *s = &g->slots[i];

			if (s->used && !s->complete && now - s->since_ns > g->deadline_ns)
				cut(s);
		}
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += GUARD_TICK_MS * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&g->wake, &g->lock, &until);
	}
	pthread_mutex_unlock(&g->lock);
	return NULL;
}

int guard_start(struct conn_guard *g, unsigned int slots, unsigned int spare, unsigned int deadline_ms)
{
	pthread_condattr_t ca;
	int err;

	*g = (struct conn_guard){ .n = slots, .spare = spare, .deadline_ns = deadline_ms * 1000000ULL };
	g->slots = calloc(slots, sizeof(*g->slots));
	if (!g->slots)
		return -ENOMEM;
	pthread_mutex_init(&g->lock, NULL);
	/* The watchdog's waits on the monotonic clock, as its deadlines. */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&g->wake, &ca);
	pthread_condattr_destroy(&ca);
	err = pthread_create(&g->watchdog, NULL, watch, g);
	if (err) {
		free(g->slots);
		return -err;
	}
	g->running = true;
	return 0;
}

void guard_stop(struct conn_guard *g)
{
	if (!g->running)
		return;
	pthread_mutex_lock(&g->lock);
	g->stop = true;
	pthread_cond_signal(&g->wake);
	pthread_mutex_unlock(&g->lock);
	pthread_join(g->watchdog, NULL);
	free(g->slots);
	g->running = false;
}

static void opened(struct conn_guard *g, struct MHD_Connection *c, void **socket_context)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);

	if (!ci)
		return;
	for (unsigned int i = 0; i < g->n; i++) {
		struct guard_slot *s = &g->slots[i];

		if (s->used)
			continue;
		*s = (struct guard_slot){ .fd = ci->connect_fd, .since_ns = now_ns(), .used = true };
		*socket_context = s;
		if (++g->used > g->n - g->spare)
			cut_oldest_waiting(g);
		return;
	}
}

void guard_connection(void *cls, struct MHD_Connection *c, void **socket_context,
		      enum MHD_ConnectionNotificationCode code)
{
	struct conn_guard *g = cls;
	struct guard_slot *s = *socket_context;

	pthread_mutex_lock(&g->lock);
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		opened(g, c, socket_context);
	} else if (s) {
		s->used = false;
		g->used--;
		*socket_context = NULL;
	}
	pthread_mutex_unlock(&g->lock);
}

static struct guard_slot *slot_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

void guard_request_complete(struct conn_guard *g, struct MHD_Connection *c)
{
	struct guard_slot *s = slot_of(c);

	pthread_mutex_lock(&g->lock);
	if (s)
		s->complete = true;
	pthread_mutex_unlock(&g->lock);
}

void guard_request_done(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	struct conn_guard *g = cls;
	struct guard_slot *s = slot_of(c);

	(void)con_cls, (void)toe;
	pthread_mutex_lock(&g->lock);
	if (s && s->used) {
		/* A kept-alive connection waits for its next request's
		 * headers from now on. */
		s->complete = false;
		s->since_ns = now_ns();
	}
	pthread_mutex_unlock(&g->lock);
}
