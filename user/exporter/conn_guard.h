/* SPDX-License-Identifier: GPL-2.0 */
#ifndef TB_CONN_GUARD_H
#define TB_CONN_GUARD_H

#include <stdbool.h>
#include <pthread.h>
#include <microhttpd.h>
#include <linux/types.h>

struct guard_slot {
	int fd;
	__u64 since_ns;         /* when the request now awaited began */
	bool used;
	bool complete;          /* its headers came: being answered */
	bool cut;
};

/* The exporter's guard over its connections (conn_guard.c). */
struct conn_guard {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_t watchdog;
	struct guard_slot *slots;
	unsigned int n;         /* slots: libmicrohttpd's connection limit */
	unsigned int used;
	unsigned int spare;     /* kept free by cutting the oldest incomplete request */
	__u64 deadline_ns;      /* a request's headers must be complete by then */
	bool stop;
	bool running;
};

int guard_start(struct conn_guard *g, unsigned int slots, unsigned int spare, unsigned int deadline_ms);
void guard_stop(struct conn_guard *g);
/* MHD_OPTION_NOTIFY_CONNECTION and MHD_OPTION_NOTIFY_COMPLETED, cls g. */
void guard_connection(void *cls, struct MHD_Connection *c, void **socket_context,
		      enum MHD_ConnectionNotificationCode code);
void guard_request_done(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe);
/* From the access handler: c's request headers are complete. */
void guard_request_complete(struct conn_guard *g, struct MHD_Connection *c);

#endif
