// SPDX-License-Identifier: GPL-2.0
/* tbgen: bounded UDP load for tbctl's tests, demo and benchmark.
 *
 *   tbgen send --src A[,A...] --dst B[,B...] [--port P] [--size BYTES]
 *              [--seconds S] [--count N] [--pps N]
 *       Sends from every source to every destination, round robin, with
 *       sendmmsg; stops after S seconds or N packets per flow, whichever
 *       is first. --pps paces each flow. Prints "src dst packets bytes"
 *       per flow, "elapsed SECONDS" from the first send to the last, and
 *       "stalled SECONDS": the sum of the gaps over STALL_GAP_S between
 *       two rounds of sends, the time the sender offered nothing (off
 *       the CPU: a test judging a rate over the send discounts it).
 *   tbgen recv [--port P] [--seconds S] [--by src|dst] [--every T] [--idle T]
 *       Counts datagrams per source (or destination) address for S
 *       seconds, or until T seconds pass without one after the first
 *       (--idle: the senders are done). Prints "addr packets bytes" (UDP
 *       payload bytes); with --every, also "start SECONDS" first (its
 *       CLOCK_MONOTONIC, which every namespace shares, so that receivers'
 *       intervals line up) and "@ t addr packets bytes" per address and
 *       interval, t from that start.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_FLOWS 4096
#define BATCH 32
#define MAX_SIZE 65000
/* A round of sends takes well under this even emulated; a longer gap is
 * time the sender was not running. */
#define STALL_GAP_S 0.02

struct flow {
	int fd;
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];
	unsigned long long packets, bytes;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int sockaddr_of(const char *addr, int port, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		*len = sizeof(*s4);
		return 0;
	}
	if (inet_pton(AF_INET6, addr, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		*len = sizeof(*s6);
		return 0;
	}
	return -1;
}

static int split(char *list, char **out, int max)
{
	int n = 0;

	for (char *t = strtok(list, ","); t && n < max; t = strtok(NULL, ","))
		out[n++] = t;
	return n;
}

static int open_flow(struct flow *f, const char *src, const char *dst, int port)
{
	struct sockaddr_storage s, d;
	socklen_t sl, dl;
	int one = 1;

	if (sockaddr_of(src, 0, &s, &sl) || sockaddr_of(dst, port, &d, &dl) || s.ss_family != d.ss_family) {
		fprintf(stderr, "tbgen: bad address pair %s -> %s\n", src, dst);
		return -1;
	}
	f->fd = socket(s.ss_family, SOCK_DGRAM, 0);
	if (f->fd < 0 || setsockopt(f->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(f->fd, (struct sockaddr *)&s, sl) || connect(f->fd, (struct sockaddr *)&d, dl)) {
		fprintf(stderr, "tbgen: socket %s -> %s: %s\n", src, dst, strerror(errno));
		return -1;
	}
	snprintf(f->src, sizeof(f->src), "%s", src);
	snprintf(f->dst, sizeof(f->dst), "%s", dst);
	return 0;
}

static int do_send(char *srcs, char *dsts, int port, int size, double seconds,
		   unsigned long long count, double pps)
{
	static struct flow flows[MAX_FLOWS];
	static char payload[MAX_SIZE];
	char *s[MAX_FLOWS], *d[MAX_FLOWS];
	struct mmsghdr msgs[BATCH];
	struct iovec iov = { payload, size };
	int ns = split(srcs, s, MAX_FLOWS), nd = split(dsts, d, MAX_FLOWS), nf = 0, live;
	double start, end, prev, stalled = 0;

	if (!ns || !nd || ns * nd > MAX_FLOWS) {
		fprintf(stderr, "tbgen: need 1..%d flows\n", MAX_FLOWS);
		return 2;
	}
	/* Every source sends to every destination of its own family. */
	for (int i = 0; i < ns; i++)
		for (int j = 0; j < nd; j++)
			if (!strchr(s[i], ':') == !strchr(d[j], ':') && open_flow(&flows[nf++], s[i], d[j], port))
				return 1;
	if (!nf) {
		fprintf(stderr, "tbgen: no source and destination of the same family\n");
		return 2;
	}
	memset(payload, 0x5a, sizeof(payload));
	memset(msgs, 0, sizeof(msgs));
	for (int i = 0; i < BATCH; i++) {
		msgs[i].msg_hdr.msg_iov = &iov;
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	start = now_s();
	end = start + seconds;
	prev = start;
	do {
		double t = now_s();

		if (t - prev > STALL_GAP_S)
			stalled += t - prev;
		prev = t;
		if (t >= end)
			break;
		live = 0;
		for (int i = 0; i < nf; i++) {
			struct flow *f = &flows[i];
			unsigned long long due = count, n;
			int sent;

			if (pps > 0) {
				due = (unsigned long long)((t - start) * pps) + 1;
				if (due > count)
					due = count;
			}
			if (f->packets >= count)
				continue;
			live++;
			if (f->packets >= due)
				continue;
			n = due - f->packets < BATCH ? due - f->packets : BATCH;
			sent = sendmmsg(f->fd, msgs, n, 0);
			if (sent > 0) {
				f->packets += sent;
				f->bytes += (unsigned long long)sent * size;
			} else if (errno != ENOBUFS && errno != EAGAIN && errno != ECONNREFUSED) {
				fprintf(stderr, "tbgen: send %s -> %s: %s\n", f->src, f->dst, strerror(errno));
				return 1;
			}
		}
		if (pps > 0)
			usleep(200);
	} while (live);
	for (int i = 0; i < nf; i++)
		printf("%s %s %llu %llu\n", flows[i].src, flows[i].dst, flows[i].packets, flows[i].bytes);
	printf("elapsed %.6f\n", now_s() - start);
	printf("stalled %.6f\n", stalled);
	return 0;
}

struct tally {
	char addr[INET6_ADDRSTRLEN];
	unsigned long long packets, bytes;
};

static void count_addr(struct tally *t, int *n, const char *addr, int bytes)
{
	int i;

	for (i = 0; i < *n && strcmp(t[i].addr, addr); i++)
		;
	if (i == *n) {
		if (*n == MAX_FLOWS)
			return;
		snprintf(t[i].addr, sizeof(t[i].addr), "%s", addr);
		(*n)++;
	}
	t[i].packets++;
	t[i].bytes += bytes;
}

/* The address a datagram came from or went to, v4-mapped shown as v4. */
static void addr_text(const struct sockaddr_in6 *from, struct msghdr *mh, int by_dst, char *buf)
{
	struct in6_addr a = from->sin6_addr;

	if (by_dst) {
		for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
			if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO)
				a = ((struct in6_pktinfo *)CMSG_DATA(c))->ipi6_addr;
			if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
				memset(&a, 0, sizeof(a));
				a.s6_addr[10] = a.s6_addr[11] = 0xff;
				memcpy(&a.s6_addr[12], &((struct in_pktinfo *)CMSG_DATA(c))->ipi_addr, 4);
			}
		}
	}
	if (IN6_IS_ADDR_V4MAPPED(&a))
		inet_ntop(AF_INET, &a.s6_addr[12], buf, INET6_ADDRSTRLEN);
	else
		inet_ntop(AF_INET6, &a, buf, INET6_ADDRSTRLEN);
}

static void print_interval(double t, struct tally *now, struct tally *prev, int n)
{
	for (int i = 0; i < n; i++) {
		printf("@ %.3f %s %llu %llu\n", t, now[i].addr, now[i].packets - prev[i].packets,
		       now[i].bytes - prev[i].bytes);
		prev[i] = now[i];
	}
}

static int do_recv(int port, double seconds, int by_dst, double every, double idle)
{
	static struct tally prev[MAX_FLOWS];
	double start = now_s(), next = start + every;
	static struct tally t[MAX_FLOWS];
	static char bufs[BATCH][2048], ctl[BATCH][256];
	struct sockaddr_in6 addr = { .sin6_family = AF_INET6, .sin6_port = htons(port) }, from[BATCH];
	struct iovec iov[BATCH];
	struct mmsghdr msgs[BATCH];
	struct timeval tv = { 0, 100000 };
	int fd, zero = 0, one = 1, rcvbuf = 16 << 20, n = 0;
	double end = start + seconds, last = 0;

	fd = socket(AF_INET6, SOCK_DGRAM, 0);
	if (fd < 0 || setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)) ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof(one)) ||
	    setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&addr, sizeof(addr))) {
		fprintf(stderr, "tbgen: receive socket on port %d: %s\n", port, strerror(errno));
		return 1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf));
	if (every > 0)
		printf("start %.6f\n", start);
	while (now_s() < end) {
		int got;

		memset(msgs, 0, sizeof(msgs));
		for (int i = 0; i < BATCH; i++) {
			iov[i] = (struct iovec){ bufs[i], sizeof(bufs[i]) };
			msgs[i].msg_hdr = (struct msghdr){ .msg_name = &from[i], .msg_namelen = sizeof(from[i]),
							   .msg_iov = &iov[i], .msg_iovlen = 1,
							   .msg_control = ctl[i], .msg_controllen = sizeof(ctl[i]) };
		}
		got = recvmmsg(fd, msgs, BATCH, MSG_WAITFORONE, NULL);
		if (got > 0)
			last = now_s();
		else if (idle > 0 && last > 0 && now_s() - last >= idle)
			break;
		for (int i = 0; i < got; i++) {
			char a[INET6_ADDRSTRLEN];

			addr_text(&from[i], &msgs[i].msg_hdr, by_dst, a);
			count_addr(t, &n, a, msgs[i].msg_len);
		}
		if (every > 0 && now_s() >= next) {
			/* Intervals with nothing pass unprinted, while the
			 * receive waits out its timeout: what came in is the
			 * latest interval's. */
			next += floor((now_s() - next) / every) * every;
			print_interval(next - start, t, prev, n);
			next += every;
		}
	}
	for (int i = 0; i < n; i++)
		printf("%s %llu %llu\n", t[i].addr, t[i].packets, t[i].bytes);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "src", required_argument, 0, 's' }, { "dst", required_argument, 0, 'd' },
		{ "port", required_argument, 0, 'p' }, { "size", required_argument, 0, 'z' },
		{ "seconds", required_argument, 0, 't' }, { "count", required_argument, 0, 'c' },
		{ "pps", required_argument, 0, 'r' }, { "by", required_argument, 0, 'b' },
		{ "every", required_argument, 0, 'e' }, { "idle", required_argument, 0, 'i' },
		{ 0, 0, 0, 0 },
	};
	char *src = NULL, *dst = NULL;
	int port = 9000, size = 1000, by_dst = 0, o;
	double seconds = 1, pps = 0, every = 0, idle = 0;
	unsigned long long count = ~0ULL;

	if (argc < 2 || (strcmp(argv[1], "send") && strcmp(argv[1], "recv"))) {
		fprintf(stderr, "usage: tbgen send --src A,.. --dst B,.. [--port P] [--size N] "
				"[--seconds S] [--count N] [--pps N]\n"
				"       tbgen recv [--port P] [--seconds S] [--by src|dst] [--every T] [--idle T]\n");
		return 2;
	}
	while ((o = getopt_long(argc - 1, argv + 1, "", opts, NULL)) != -1) {
		switch (o) {
		case 's': src = optarg; break;
		case 'd': dst = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'z': size = atoi(optarg); break;
		case 't': seconds = atof(optarg); break;
		case 'c': count = strtoull(optarg, NULL, 10); break;
		case 'r': pps = atof(optarg); break;
		case 'b': by_dst = !strcmp(optarg, "dst"); break;
		case 'e': every = atof(optarg); break;
		case 'i': idle = atof(optarg); break;
		default: return 2;
		}
	}
	/* Every run is bounded: at most 10 minutes, whatever was asked. */
	if (seconds <= 0 || seconds > 600 || size < 1 || size > MAX_SIZE || port < 1 || port > 65535) {
		fprintf(stderr, "tbgen: --seconds 0..600, --size 1..%d, --port 1..65535\n", MAX_SIZE);
		return 2;
	}
	if (!strcmp(argv[1], "recv"))
		return do_recv(port, seconds, by_dst, every, idle);
	if (!src || !dst) {
		fprintf(stderr, "tbgen send: --src and --dst are required\n");
		return 2;
	}
	return do_send(src, dst, port, size, seconds, count, pps);
}
