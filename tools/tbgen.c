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
 *   tbgen raw --src A --dst B --shape later|ext:N|syn|icmp:T [--port P] [--size BYTES]
 *             [--seconds S] [--count N] [--pps N] [--id N]
 *       Sends UDP as no socket builds it, through a raw IP socket: later
 *       fragments only (their first never sent), of datagrams numbered
 *       from --id on, IPv4 or IPv6; or, IPv6, datagrams to P behind N
 *       destination-options headers; or, IPv4, TCP SYNs to P (a SYN
 *       flood), each from the next source port, or ICMP messages of a
 *       type (icmp:8, echo requests) with --size bytes of payload. Prints
 *       "src dst packets bytes" (IP packet bytes), "elapsed SECONDS" and
 *       "stalled SECONDS" as send.
 *   tbgen hold --src A[,A...] --dst B --port P --count N --seconds S [--trickle T]
 *       An HTTP server's hostile clients: N connections from every source
 *       to B:P, each sending a request line and one header but never the
 *       end of its headers (with --trickle, one more byte every T
 *       seconds), opened again once the server closes one (at most once
 *       a second), for S seconds. Prints "opened N", "closed N" (by the server) and
 *       "longest SECONDS", the longest a connection lived before the
 *       server closed it.
 *   tbgen recv [--port P] [--seconds S] [--by src|dst] [--every T] [--idle T] [--dscp]
 *       Counts datagrams per source (or destination) address for S
 *       seconds, or until T seconds pass without one after the first
 *       (--idle: the senders are done). Prints "addr packets bytes" (UDP
 *       payload bytes); with --every, also "start SECONDS" first (its
 *       CLOCK_MONOTONIC, which every namespace shares, so that receivers'
 *       intervals line up) and "@ t addr packets bytes" per address and
 *       interval, t from that start. With --dscp, also "dscp addr DSCP
 *       packets bytes" per address and DSCP the datagrams arrived with.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/ip6.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
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

/* The Internet checksum's sum of len bytes at p, folded later. */
static unsigned int sum16(const unsigned char *p, size_t len, unsigned int sum)
{
	for (size_t i = 0; i + 1 < len; i += 2)
		sum += p[i] << 8 | p[i + 1];
	if (len & 1)
		sum += p[len - 1] << 8;
	return sum;
}

/* The Internet checksum of a running sum: folded, complemented. */
static unsigned int sum_fold(unsigned int sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return ~sum & 0xffff;
}

/* A UDP header to port with a valid IPv6 checksum, payload bytes after it. */
static size_t udp6(unsigned char *u, const struct ip6_hdr *ip6, int port, int payload)
{
	unsigned int sum, len = 8 + payload;

	memset(u, 0, 8);
	u[0] = 40000 >> 8;
	u[1] = 40000 & 0xff;
	u[2] = port >> 8;
	u[3] = port & 0xff;
	u[4] = len >> 8;
	u[5] = len & 0xff;
	memset(u + 8, 0x5a, payload);
	sum = sum16((const unsigned char *)&ip6->ip6_src, 32, len + IPPROTO_UDP);
	sum = sum_fold(sum16(u, len, sum));
	u[6] = (sum ? sum : 0xffff) >> 8;
	u[7] = (sum ? sum : 0xffff) & 0xff;
	return len;
}

/* An IPv4 header from s to d of protocol proto with len bytes after it,
 * into b (the kernel sets its checksum: IP_HDRINCL); returns where those
 * bytes go, zeroed. */
static unsigned char *ip4_header(unsigned char *b, const struct sockaddr_storage *s,
				 const struct sockaddr_storage *d, int proto, size_t len)
{
	struct iphdr *ip = (struct iphdr *)b;

	memset(ip, 0, sizeof(*ip) + len);
	ip->version = 4;
	ip->ihl = 5;
	ip->ttl = 64;
	ip->protocol = proto;
	ip->tot_len = htons(sizeof(*ip) + len);
	ip->saddr = ((const struct sockaddr_in *)s)->sin_addr.s_addr;
	ip->daddr = ((const struct sockaddr_in *)d)->sin_addr.s_addr;
	return b + sizeof(*ip);
}

/* An IPv4 TCP SYN to port from source port sport, its checksums set, into
 * b; returns its length. */
static size_t syn4(unsigned char *b, const struct sockaddr_storage *s, const struct sockaddr_storage *d, int port,
		   unsigned int sport)
{
	unsigned char *t = ip4_header(b, s, d, IPPROTO_TCP, 20), pseudo[12] = { 0 };
	unsigned int sum;

	t[0] = sport >> 8;
	t[1] = sport & 0xff;
	t[2] = port >> 8;
	t[3] = port & 0xff;
	t[7] = 1;               /* sequence number 1 */
	t[12] = 5 << 4;         /* 20 bytes of header */
	t[13] = 0x02;           /* SYN */
	t[14] = 0xff;           /* window */
	memcpy(pseudo, &((const struct iphdr *)b)->saddr, 8);
	pseudo[9] = IPPROTO_TCP;
	pseudo[11] = 20;
	sum = sum_fold(sum16(t, 20, sum16(pseudo, 12, 0)));
	t[16] = sum >> 8;
	t[17] = sum & 0xff;
	return sizeof(struct iphdr) + 20;
}

/* An IPv4 ICMP message of type, code 0, sequence seq, size bytes of
 * payload, its checksum set, into b; returns its length. */
static size_t icmp4(unsigned char *b, const struct sockaddr_storage *s, const struct sockaddr_storage *d, int type,
		    int size, unsigned int seq)
{
	unsigned char *m = ip4_header(b, s, d, IPPROTO_ICMP, 8 + size);
	unsigned int sum;

	m[0] = type;
	m[4] = 0x7b;            /* identifier */
	m[6] = seq >> 8 & 0xff;
	m[7] = seq & 0xff;
	memset(m + 8, 0x5a, size);
	sum = sum_fold(sum16(m, 8 + size, 0));
	m[2] = sum >> 8;
	m[3] = sum & 0xff;
	return sizeof(struct iphdr) + 8 + size;
}

/* One packet of shape ext (N > 0: that many destination-options headers;
 * 0: a later fragment of datagram id; -1: a SYN from source port id;
 * -2 - T: an ICMP message of type T) into b; returns its length. */
static size_t build_raw(unsigned char *b, const struct sockaddr_storage *s, const struct sockaddr_storage *d,
			int ext, int port, int size, unsigned int id)
{
	if (ext == -1)
		return syn4(b, s, d, port, 1024 + id % 64000);
	if (ext < -1)
		return icmp4(b, s, d, -2 - ext, size, id);
	if (s->ss_family == AF_INET) {
		struct iphdr *ip = (struct iphdr *)b;

		memset(ip4_header(b, s, d, IPPROTO_UDP, size), 0x5a, size);
		ip->id = htons(id);
		ip->frag_off = htons(1480 / 8);   /* the last of its datagram */
		return sizeof(*ip) + size;
	}
	struct ip6_hdr *ip6 = (struct ip6_hdr *)b;
	unsigned char *h = b + sizeof(*ip6), *nh = &ip6->ip6_nxt;
	size_t len;

	memset(ip6, 0, sizeof(*ip6));
	ip6->ip6_flow = htonl(6 << 28);
	ip6->ip6_hlim = 64;
	ip6->ip6_src = ((const struct sockaddr_in6 *)s)->sin6_addr;
	ip6->ip6_dst = ((const struct sockaddr_in6 *)d)->sin6_addr;
	if (!ext) {
		*nh = IPPROTO_FRAGMENT;
		memset(h, 0, 8);
		h[0] = IPPROTO_UDP;
		h[2] = 1480 >> 8;
		h[3] = 1480 & 0xf8;
		id = htonl(id);
		memcpy(h + 4, &id, 4);
		memset(h + 8, 0x5a, size);
		len = 8 + size;
	} else {
		for (int i = 0; i < ext; i++, h += 8) {
			*nh = IPPROTO_DSTOPTS;
			memset(h, 0, 8);
			h[2] = 1;       /* PadN over the header's other 4 bytes */
			h[3] = 4;
			nh = h;
		}
		*nh = IPPROTO_UDP;
		len = ext * 8 + udp6(h, ip6, port, size);
	}
	ip6->ip6_plen = htons(len);
	return sizeof(*ip6) + len;
}

static int do_raw(const char *src, const char *dst, const char *shape, int port, int size, double seconds,
		  unsigned long long count, double pps, unsigned int id)
{
	static unsigned char pkt[MAX_SIZE];
	struct sockaddr_storage s, d;
	socklen_t sl, dl;
	unsigned long long packets = 0, bytes = 0;
	double start, prev, stalled = 0;
	int ext = 0, fd;

	if (sockaddr_of(src, 0, &s, &sl) || sockaddr_of(dst, 0, &d, &dl) || s.ss_family != d.ss_family) {
		fprintf(stderr, "tbgen raw: bad address pair %s -> %s\n", src, dst);
		return 2;
	}
	if (!strcmp(shape, "syn") && s.ss_family == AF_INET)
		ext = -1;
	else if (sscanf(shape, "icmp:%d", &ext) == 1 && ext >= 0 && ext <= 255 && s.ss_family == AF_INET)
		ext = -2 - ext;
	else if (strcmp(shape, "later") && (sscanf(shape, "ext:%d", &ext) != 1 || ext < 1 || ext > 64 ||
					    s.ss_family != AF_INET6)) {
		fprintf(stderr, "tbgen raw: --shape later, syn or icmp:TYPE for IPv4, or ext:1..64 for IPv6\n");
		return 2;
	}
	if (size > 1400) {
		fprintf(stderr, "tbgen raw: --size 1..1400: a raw packet is not fragmented\n");
		return 2;
	}
	/* IPPROTO_RAW: the header is ours (IP_HDRINCL), IPv6's too. */
	fd = socket(s.ss_family, SOCK_RAW, IPPROTO_RAW);
	if (fd < 0) {
		fprintf(stderr, "tbgen raw: raw socket: %s\n", strerror(errno));
		return 1;
	}
	start = prev = now_s();
	while (packets < count) {
		double t = now_s();
		size_t len;

		if (t - prev > STALL_GAP_S)
			stalled += t - prev;
		prev = t;
		if (t >= start + seconds)
			break;
		if (pps > 0 && packets >= (unsigned long long)((t - start) * pps) + 1) {
			usleep(200);
			continue;
		}
		len = build_raw(pkt, &s, &d, ext, port, size, id + (unsigned int)packets);
		if (sendto(fd, pkt, len, 0, (struct sockaddr *)&d, dl) < 0) {
			if (errno == ENOBUFS || errno == EAGAIN)
				continue;
			fprintf(stderr, "tbgen raw: send %s -> %s: %s\n", src, dst, strerror(errno));
			return 1;
		}
		packets++;
		bytes += len;
	}
	printf("%s %s %llu %llu\n", src, dst, packets, bytes);
	printf("elapsed %.6f\n", now_s() - start);
	printf("stalled %.6f\n", stalled);
	close(fd);
	return 0;
}

struct tally {
	char addr[INET6_ADDRSTRLEN + 16];   /* or, with its DSCP, "ADDR DSCP" */
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

/* The DSCP a datagram arrived with (IP_RECVTOS, IPV6_RECVTCLASS), or -1. */
static int dscp_of(struct msghdr *mh)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS)
			return *(unsigned char *)CMSG_DATA(c) >> 2;
		if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS) {
			int tc;

			memcpy(&tc, CMSG_DATA(c), sizeof(tc));
			return tc >> 2;
		}
	}
	return -1;
}

static void print_interval(double t, struct tally *now, struct tally *prev, int n)
{
	for (int i = 0; i < n; i++) {
		printf("@ %.3f %s %llu %llu\n", t, now[i].addr, now[i].packets - prev[i].packets,
		       now[i].bytes - prev[i].bytes);
		prev[i] = now[i];
	}
}

struct held {
	int fd;                 /* -1: to open again */
	int src;
	double opened, sent;    /* when it connected, and last sent */
	int said;               /* bytes of the request sent */
};

#define HOLD_MAX 20000
static const char hold_request[] = "GET /metrics HTTP/1.1\r\nHost: x\r\n";

static int hold_open(struct held *h, const struct sockaddr_storage *src, socklen_t sl,
		     const struct sockaddr_storage *dst, socklen_t dl, double now)
{
	h->fd = socket(dst->ss_family, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (h->fd < 0)
		return -1;
	if (bind(h->fd, (const struct sockaddr *)src, sl) ||
	    (connect(h->fd, (const struct sockaddr *)dst, dl) && errno != EINPROGRESS)) {
		close(h->fd);
		h->fd = -1;
		return -1;
	}
	h->opened = h->sent = now;
	h->said = 0;
	return 0;
}

/* What a held connection sends next: the request line and header at
 * once, then (trickle) one byte of an endless header every T seconds. */
static void hold_send(struct held *h, double trickle, double now)
{
	if (!h->said) {
		if (send(h->fd, hold_request, sizeof(hold_request) - 1, MSG_NOSIGNAL) > 0)
			h->said = sizeof(hold_request) - 1;
		h->sent = now;
	} else if (trickle > 0 && now - h->sent >= trickle) {
		send(h->fd, "X", 1, MSG_NOSIGNAL);
		h->said++;
		h->sent = now;
	}
}

static int do_hold(char *srcs, const char *dst, int port, int count, double seconds, double trickle)
{
	static struct held held[HOLD_MAX];
	static struct pollfd pf[HOLD_MAX];
	char *s[MAX_FLOWS];
	struct sockaddr_storage sa[MAX_FLOWS], da;
	socklen_t sl[MAX_FLOWS], dl;
	int ns = split(srcs, s, MAX_FLOWS);
	nfds_t n;
	unsigned long long opened = 0, closed = 0;
	double start = now_s(), longest = 0;
	struct rlimit rl;

	if (!ns || (long long)ns * count > HOLD_MAX || count < 1 || sockaddr_of(dst, port, &da, &dl)) {
		fprintf(stderr, "tbgen hold: 1..%d connections in all, and a destination address\n", HOLD_MAX);
		return 2;
	}
	for (int i = 0; i < ns; i++)
		if (sockaddr_of(s[i], 0, &sa[i], &sl[i]) || sa[i].ss_family != da.ss_family) {
			fprintf(stderr, "tbgen hold: bad source %s\n", s[i]);
			return 2;
		}
	n = (nfds_t)ns * count;
	/* A descriptor a connection, and a few more. */
	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_max < n + 64) {
		fprintf(stderr, "tbgen hold: %lu connections need more descriptors than the hard limit\n", n);
		return 2;
	}
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	for (nfds_t i = 0; i < n; i++)
		held[i] = (struct held){ .fd = -1, .src = i / count };
	while (now_s() - start < seconds) {
		double now = now_s();

		for (nfds_t i = 0; i < n; i++) {
			/* Again at most once a second: a client, not a SYN flood. */
			if (held[i].fd < 0 && now - held[i].opened >= 1 &&
			    !hold_open(&held[i], &sa[held[i].src], sl[held[i].src], &da, dl, now))
				opened++;
			pf[i] = (struct pollfd){ .fd = held[i].fd, .events = POLLIN | POLLOUT };
		}
		poll(pf, n, 10);
		now = now_s();
		for (nfds_t i = 0; i < n; i++) {
			char buf[512];

			if (held[i].fd < 0)
				continue;
			if (pf[i].revents & (POLLIN | POLLHUP | POLLERR)) {
				ssize_t got = recv(held[i].fd, buf, sizeof(buf), 0);

				if (got > 0 || (got < 0 && errno == EAGAIN))
					continue;
				/* Closed by the server (a refused connect too). */
				if (held[i].said) {
					closed++;
					if (now - held[i].opened > longest)
						longest = now - held[i].opened;
				}
				close(held[i].fd);
				held[i].fd = -1;
			} else if (pf[i].revents & POLLOUT) {
				hold_send(&held[i], trickle, now);
			}
		}
	}
	for (nfds_t i = 0; i < n; i++)
		if (held[i].fd >= 0)
			close(held[i].fd);
	printf("opened %llu\nclosed %llu\nlongest %.3f\n", opened, closed, longest);
	return 0;
}

static int do_recv(int port, double seconds, int by_dst, double every, double idle, int by_dscp)
{
	static struct tally prev[MAX_FLOWS], classes[MAX_FLOWS];
	int nclasses = 0;
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
	if (by_dscp && (setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one)) ||
			setsockopt(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, &one, sizeof(one)))) {
		fprintf(stderr, "tbgen: receive the traffic class: %s\n", strerror(errno));
		return 1;
	}
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
			if (by_dscp) {
				char k[INET6_ADDRSTRLEN + 16];

				snprintf(k, sizeof(k), "%s %d", a, dscp_of(&msgs[i].msg_hdr));
				count_addr(classes, &nclasses, k, msgs[i].msg_len);
			}
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
	for (int i = 0; i < nclasses; i++)
		printf("dscp %s %llu %llu\n", classes[i].addr, classes[i].packets, classes[i].bytes);
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
		{ "shape", required_argument, 0, 'h' }, { "id", required_argument, 0, 'n' },
		{ "trickle", required_argument, 0, 'k' }, { "dscp", no_argument, 0, 'q' },
		{ 0, 0, 0, 0 },
	};
	char *src = NULL, *dst = NULL, *shape = NULL;
	unsigned int id = 1;
	int port = 9000, size = 1000, by_dst = 0, by_dscp = 0, o;
	double seconds = 1, pps = 0, every = 0, idle = 0, trickle = 0;
	unsigned long long count = ~0ULL;

	if (argc < 2 || (strcmp(argv[1], "send") && strcmp(argv[1], "recv") && strcmp(argv[1], "raw") &&
			 strcmp(argv[1], "hold"))) {
		fprintf(stderr, "usage: tbgen send --src A,.. --dst B,.. [--port P] [--size N] "
				"[--seconds S] [--count N] [--pps N]\n"
				"       tbgen raw --src A --dst B --shape later|ext:N|syn|icmp:T [--port P] [--size N] "
				"[--seconds S] [--count N] [--pps N] [--id N]\n"
				"       tbgen hold --src A,.. --dst B --port P --count N --seconds S [--trickle T]\n"
				"       tbgen recv [--port P] [--seconds S] [--by src|dst] [--every T] [--idle T] [--dscp]\n");
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
		case 'h': shape = optarg; break;
		case 'n': id = strtoul(optarg, NULL, 10); break;
		case 'k': trickle = atof(optarg); break;
		case 'q': by_dscp = 1; break;
		default: return 2;
		}
	}
	/* Every run is bounded: at most 10 minutes, whatever was asked. */
	if (seconds <= 0 || seconds > 600 || size < 1 || size > MAX_SIZE || port < 1 || port > 65535) {
		fprintf(stderr, "tbgen: --seconds 0..600, --size 1..%d, --port 1..65535\n", MAX_SIZE);
		return 2;
	}
	if (!strcmp(argv[1], "recv"))
		return do_recv(port, seconds, by_dst, every, idle, by_dscp);
	if (!src || !dst) {
		fprintf(stderr, "tbgen %s: --src and --dst are required\n", argv[1]);
		return 2;
	}
	if (!strcmp(argv[1], "hold"))
		return do_hold(src, dst, port, count > HOLD_MAX ? 0 : (int)count, seconds, trickle);
	if (!strcmp(argv[1], "raw")) {
		if (!shape) {
			fprintf(stderr, "tbgen raw: --shape is required\n");
			return 2;
		}
		return do_raw(src, dst, shape, port, size, seconds, count, pps, id);
	}
	return do_send(src, dst, port, size, seconds, count, pps);
}
