// SPDX-License-Identifier: GPL-2.0
/* delayline: a fixed delay on one device's egress, for a kernel without
 * sch_netem (the TCP benchmark's round trips on this host).
 *
 *   delayline --dev DEV --tap TAP --delay MS [--mark M] [--limit BYTES]
 *             [--seconds S]
 *       Creates tap device TAP in the current network namespace and sends
 *       every frame the kernel transmits on it out of DEV, MS milliseconds
 *       later, in order, with socket mark M (default 1). The caller sets
 *       TAP up and steers DEV's egress into it, all but packets of mark M
 *       (tc: a root qdisc whose classifier matches mark 0, action mirred
 *       redirect), so the delayed frames leave through DEV's qdisc, which
 *       holds them while the device is full. GSO aggregates and checksum
 *       offload pass whole (virtio-net headers on both sides). The line
 *       holds BYTES (default 16 MiB); a frame that finds no room for a
 *       whole 64 KiB aggregate is dropped, as netem drops over its
 *       limit. Runs until S seconds have passed (default 3600) or
 *       SIGINT/SIGTERM, then prints "delayed FRAMES BYTES dropped FRAMES
 *       busy TIMES" (busy: how often DEV's qdisc had no room and the line
 *       waited) and exits 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/if.h>
#include <linux/if_packet.h>
#include <linux/if_tun.h>
#include <linux/virtio_net.h>
#include <net/ethernet.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* How long a frame DEV's qdisc refused for want of room waits to be
 * sent again. */
#define BUSY_WAIT_NS 20000ULL

/* A frame as the tap hands it over: a virtio-net header, then up to a
 * 64 KiB GSO aggregate with its Ethernet header. */
#define FRAME_MAX (sizeof(struct virtio_net_hdr) + 65536 + ETH_HLEN)

struct entry {
	uint64_t due_ns;
	uint32_t len;
};

/* The line: entries and their bytes in one ring, oldest first. An entry
 * never wraps; a gap too short for the next one is skipped (pad). */
struct line {
	unsigned char *buf;
	size_t size, head, tail, used, pad_at;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: delayline --dev DEV --tap TAP --delay MS [--mark M] [--limit BYTES] [--seconds S]\n");
}

/* The ring space an entry of len bytes takes. */
static size_t slot(size_t len)
{
	return (sizeof(struct entry) + len + 7) & ~(size_t)7;
}

/* Room at the tail for an entry of up to FRAME_MAX bytes, or NULL: the
 * line is full. The ring is wrapped while the tail is behind the head,
 * or level with it and not empty. */
static struct entry *line_reserve(struct line *l)
{
	size_t need = slot(FRAME_MAX);

	if (!l->used) {
		l->head = l->tail = 0;
		l->pad_at = l->size;
	}
	if (l->tail < l->head || (l->tail == l->head && l->used))
		return l->head - l->tail >= need ? (struct entry *)(l->buf + l->tail) : NULL;
	if (l->size - l->tail >= need)
		return (struct entry *)(l->buf + l->tail);
	if (l->head < need)
		return NULL;
	l->used += l->size - l->tail;
	l->pad_at = l->tail;
	l->tail = 0;
	return (struct entry *)l->buf;
}

static void line_commit(struct line *l, const struct entry *e)
{
	l->tail += slot(e->len);
	l->used += slot(e->len);
}

static struct entry *line_head(struct line *l)
{
	if (!l->used)
		return NULL;
	if (l->head == l->pad_at) {
		l->used -= l->size - l->pad_at;
		l->head = 0;
		l->pad_at = l->size;
	}
	return (struct entry *)(l->buf + l->head);
}

static void line_pop(struct line *l, const struct entry *e)
{
	l->head += slot(e->len);
	l->used -= slot(e->len);
}

static int tap_open(const char *name)
{
	struct ifreq ifr = {};
	int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK);
	unsigned int offload = TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6;

	if (fd < 0) {
		fprintf(stderr, "delayline: opening /dev/net/tun: %s\n", strerror(errno));
		return -1;
	}
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", name);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		fprintf(stderr, "delayline: creating tap %s: %s\n", name, strerror(errno));
		goto fail;
	}
	/* Without offloads the kernel would segment every aggregate and
	 * complete every checksum before handing it over. */
	if (ioctl(fd, TUNSETOFFLOAD, offload) < 0) {
		fprintf(stderr, "delayline: offloads on tap %s: %s\n", name, strerror(errno));
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return -1;
}

static int out_open(const char *dev, unsigned int mark)
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET };
	struct ifreq ifr = {};
	int one = 1, fd = socket(AF_PACKET, SOCK_RAW, 0);

	if (fd < 0) {
		fprintf(stderr, "delayline: packet socket: %s\n", strerror(errno));
		return -1;
	}
	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", dev);
	if (ioctl(fd, SIOCGIFINDEX, &ifr) < 0) {
		fprintf(stderr, "delayline: no device %s in this namespace\n", dev);
		goto fail;
	}
	sll.sll_ifindex = ifr.ifr_ifindex;
	if (setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_MARK, &mark, sizeof(mark)) < 0 ||
	    bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
		fprintf(stderr, "delayline: packet socket on %s: %s\n", dev, strerror(errno));
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return -1;
}

static int parse_u64(const char *s, const char *what, unsigned long long max, unsigned long long *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || *v > max) {
		fprintf(stderr, "delayline: %s %s is not a whole number up to %llu\n", what, s, max);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dev", required_argument, NULL, 'd' },   { "tap", required_argument, NULL, 't' },
		{ "delay", required_argument, NULL, 'D' }, { "mark", required_argument, NULL, 'm' },
		{ "limit", required_argument, NULL, 'l' }, { "seconds", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },        {}
	};
	const char *dev = NULL, *tap = NULL;
	unsigned long long delay_ms = 0, mark = 1, limit = 16 << 20, seconds = 3600;
	unsigned long long delayed = 0, bytes = 0, dropped = 0, busy = 0;
	struct line l = {};
	uint64_t delay, end;
	int c, in, out, have_delay = 0;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': dev = optarg; break;
		case 't': tap = optarg; break;
		case 'D':
			if (parse_u64(optarg, "delay", 60000, &delay_ms))
				return 2;
			have_delay = 1;
			break;
		case 'm':
			if (parse_u64(optarg, "mark", UINT32_MAX, &mark))
				return 2;
			if (!mark) {
				fprintf(stderr, "delayline: mark 0 is what the redirect matches\n");
				return 2;
			}
			break;
		case 'l':
			if (parse_u64(optarg, "limit", 1ULL << 32, &limit) || limit < 2 * FRAME_MAX) {
				if (limit < 2 * FRAME_MAX)
					fprintf(stderr, "delayline: limit must hold two frames (%zu bytes)\n",
						2 * FRAME_MAX);
				return 2;
			}
			break;
		case 's':
			if (parse_u64(optarg, "seconds", 86400, &seconds))
				return 2;
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!dev || !tap || !have_delay || optind != argc) {
		usage(stderr);
		return 2;
	}
	/* Wake-ups on time: the default 50 us slack would add to the delay. */
	prctl(PR_SET_TIMERSLACK, 1UL);
	l.size = limit;
	l.pad_at = l.size;
	l.buf = malloc(l.size);
	if (!l.buf) {
		fprintf(stderr, "delayline: %llu bytes for the line: out of memory\n", limit);
		return 1;
	}
	out = out_open(dev, mark);
	if (out < 0)
		return 1;
	in = tap_open(tap);
	if (in < 0)
		return 1;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	delay = delay_ms * 1000000ULL;
	end = now_ns() + seconds * 1000000000ULL;

	while (!stop) {
		uint64_t now = now_ns();
		struct pollfd p = { .fd = in, .events = POLLIN };
		struct timespec wait;
		struct entry *e;
		uint64_t until = end;

		if (now >= end)
			break;
		while ((e = line_head(&l)) && e->due_ns <= now) {
			if (send(out, e + 1, e->len, 0) < 0) {
				if (errno != ENOBUFS) {
					fprintf(stderr, "delayline: sending on %s: %s\n", dev, strerror(errno));
					return 1;
				}
				/* DEV's qdisc is full: the frame waits, and the
				 * line with it. */
				busy++;
				break;
			}
			delayed++;
			bytes += e->len - sizeof(struct virtio_net_hdr);
			line_pop(&l, e);
		}
		if (e)
			until = e->due_ns > now ? e->due_ns : now + BUSY_WAIT_NS;
		if (until > end)
			until = end;
		wait.tv_sec = (until - now) / 1000000000ULL;
		wait.tv_nsec = (until - now) % 1000000000ULL;
		if (ppoll(&p, 1, &wait, NULL) < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "delayline: waiting on %s: %s\n", tap, strerror(errno));
			return 1;
		}
		for (;;) {
			static unsigned char spill[FRAME_MAX];
			ssize_t n;

			e = line_reserve(&l);
			n = read(in, e ? (void *)(e + 1) : spill, FRAME_MAX);
			if (n < 0) {
				if (errno == EAGAIN || errno == EINTR)
					break;
				fprintf(stderr, "delayline: reading %s: %s\n", tap, strerror(errno));
				return 1;
			}
			if (!e) {
				dropped++;
				continue;
			}
			e->due_ns = now_ns() + delay;
			e->len = n;
			line_commit(&l, e);
		}
	}
	printf("delayed %llu %llu dropped %llu busy %llu\n", delayed, bytes, dropped, busy);
	return 0;
}
