// SPDX-License-Identifier: GPL-2.0
/* The store's grant function (user/store.c) against a real redis-server,
 * which the test starts on 127.0.0.1 and a free port and stops by its
 * PID: what a new key holds, the bound with two hosts asking, credit
 * held and returned, leases that end, epochs, and stores that answer
 * garbage. The store's clock decides refills, so each check allows for
 * the time the test itself took. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <hiredis/hiredis.h>
#include "fleet/store.h"
#include "../check.h"

static pid_t redis_pid;
static int redis_port;

static __u64 now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, ms % 1000 * 1000000L };

	nanosleep(&ts, NULL);
}

/* A listening socket on 127.0.0.1 and a free port. */
static int listener(int *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 4) ||
	    getsockname(fd, (struct sockaddr *)&a, &len))
		return -1;
	*port = ntohs(a.sin_port);
	return fd;
}

static bool port_free(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				 .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	bool ok = fd >= 0 && !setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) &&
		  !bind(fd, (struct sockaddr *)&a, sizeof(a));

	if (fd >= 0)
		close(fd);
	return ok;
}

static int redis_start(void)
{
	char port[16];
	int fd = listener(&redis_port);
	struct store s;
	char err[128], url[64];

	if (fd < 0)
		return -1;
	close(fd);
	snprintf(port, sizeof(port), "%d", redis_port);
	redis_pid = fork();
	if (!redis_pid) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		dup2(null, 2);
		execlp("redis-server", "redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "",
		       "--appendonly", "no", "--loglevel", "warning", (char *)NULL);
		_exit(127);
	}
	snprintf(url, sizeof(url), "redis://127.0.0.1:%d", redis_port);
	store_parse_url(url, &s, err, sizeof(err));
	for (int i = 0; i < 250; i++) {
		if (!store_connect(&s)) {
			store_close(&s);
			return 0;
		}
		sleep_ms(20);
	}
	fprintf(stderr, "redis-server did not answer on port %d: %s\n", redis_port, s.error);
	return -1;
}

static void redis_stop(void)
{
	if (redis_pid > 0) {
		kill(redis_pid, SIGTERM);
		waitpid(redis_pid, NULL, 0);
	}
}

static bool connected(struct store *s)
{
	char url[64], err[128];

	snprintf(url, sizeof(url), "redis://127.0.0.1:%d", redis_port);
	return CHECK(!store_parse_url(url, s, err, sizeof(err)), "%s", err) &&
	       CHECK(!store_connect(s), "connect: %s", s->error);
}

/* One ask of key under rate and burst; what was granted, or -1. */
static long long ask(struct store *s, const char *fleet, const char *host, const char *key, __u64 rate, __u64 burst,
		     __u64 have, __u64 want, __u64 ret, __u64 lease_ms)
{
	char name[128], epoch[64];
	struct store_ask a = { .key = name, .rate = rate, .burst = burst, .have = have, .want = want, .ret = ret };

	a.tag = store_key(fleet, "198.18.0.0/16", key, name, sizeof(name));
	if (!CHECK(!store_grant(s, fleet, host, lease_ms, &a, 1, epoch, sizeof(epoch)), "grant: %s", s->error))
		return -1;
	return (long long)a.granted;
}

static void a_new_store_starts_its_keys_empty(void)
{
	struct store s;
	long long g;
	__u64 t0;

	if (!connected(&s))
		return;
	t0 = now_us();
	/* 1,000,000 units/s: a key of a new epoch holds what it refilled
	 * since the epoch began, a unit a microsecond. */
	g = ask(&s, "empty", "h1", "198.18.0.10", 1000000, 500000, 0, 500000, 0, 5000);
	CHECK(g >= 0 && (__u64)g <= now_us() - t0 + 1, "granted %lld in %llu us", g,
	      (unsigned long long)(now_us() - t0));
	sleep_ms(600);
	g = ask(&s, "empty", "h1", "198.18.0.10", 1000000, 500000, 0, 500000, 0, 5000);
	CHECK(g > 0 && g <= 500000, "after the fill time granted %lld of the burst (500000) less what is held", g);
	store_close(&s);
}

static void held_credit_counts_against_the_burst(void)
{
	struct store s;
	long long a, b;

	if (!connected(&s))
		return;
	ask(&s, "held", "h1", "k", 1000, 100000, 0, 0, 0, 5000);
	sleep_ms(1100);
	/* The key has refilled to its burst of 1,000 units... of 100,000:
	 * at 1,000 units/s it holds what 1.1 s refilled. */
	a = ask(&s, "held", "h1", "k", 1000, 1000, 0, 600, 0, 5000);
	CHECK_EQ(a, 600, "h1 granted");
	b = ask(&s, "held", "h2", "k", 1000, 1000, 0, 1000, 0, 5000);
	CHECK(b >= 400 && b <= 402, "h2 granted %lld while h1 holds 600 of a 1000 burst", b);
	/* h1 says it still holds all 600: nothing refilled beyond the burst. */
	b = ask(&s, "held", "h2", "k", 1000, 1000, (__u64)b, 1000, 0, 5000);
	CHECK(b >= 0 && b <= 3, "h2 granted %lld more with the burst held", b);
	store_close(&s);
}

static void returned_credit_is_granted_again(void)
{
	struct store s;
	long long a, b;

	if (!connected(&s))
		return;
	ask(&s, "ret", "h1", "k", 1000, 1000, 0, 0, 0, 5000);
	sleep_ms(1100);
	a = ask(&s, "ret", "h1", "k", 1000, 1000, 0, 1000, 0, 5000);
	CHECK_EQ(a, 1000, "h1 granted the burst");
	/* h1 spent 300 and gives the other 700 back. */
	ask(&s, "ret", "h1", "k", 1000, 1000, 0, 0, 700, 5000);
	b = ask(&s, "ret", "h2", "k", 1000, 1000, 0, 1000, 0, 5000);
	CHECK(b >= 700 && b <= 720, "h2 granted %lld after h1 returned 700", b);
	store_close(&s);
}

static void a_lease_that_ends_counts_as_spent(void)
{
	struct store s;
	long long a, b;

	if (!connected(&s))
		return;
	ask(&s, "lease", "h1", "k", 1000, 1000, 0, 0, 0, 200);
	sleep_ms(1100);
	a = ask(&s, "lease", "h1", "k", 1000, 1000, 0, 1000, 0, 200);
	CHECK_EQ(a, 1000, "h1 granted the burst");
	sleep_ms(300);
	/* h1's lease ended: what it held is spent, not returned, and the
	 * level refills from empty, 300 ms at 1,000 units/s. */
	b = ask(&s, "lease", "h2", "k", 1000, 1000, 0, 1000, 0, 200);
	CHECK(b >= 300 && b <= 400, "h2 granted %lld 300 ms after h1's lease ended", b);
	store_close(&s);
}

static void two_hosts_never_get_more_than_b_plus_r_t(void)
{
	struct store s1, s2;
	__u64 total = 0, t0, t1, burst = 20000, rate = 100000;

	if (!connected(&s1) || !connected(&s2))
		return;
	ask(&s1, "bound", "h1", "k", rate, burst, 0, 0, 0, 5000);
	sleep_ms(300);
	t0 = now_us();
	for (int i = 0; i < 200; i++) {
		/* Each spends all it holds at once, and asks for more. */
		long long a = ask(&s1, "bound", "h1", "k", rate, burst, 0, 7000, 0, 5000);
		long long b = ask(&s2, "bound", "h2", "k", rate, burst, 0, 7000, 0, 5000);

		if (a < 0 || b < 0)
			return;
		total += a + b;
		sleep_ms(2);
	}
	t1 = now_us();
	CHECK(total <= burst + rate * (t1 - t0 + 2000) / 1000000,
	      "granted %llu in %llu us > b + r*T = %llu", (unsigned long long)total,
	      (unsigned long long)(t1 - t0), (unsigned long long)(burst + rate * (t1 - t0 + 2000) / 1000000));
	CHECK(total >= rate * (t1 - t0) / 1000000 * 95 / 100, "granted %llu in %llu us: under the rate",
	      (unsigned long long)total, (unsigned long long)(t1 - t0));
	store_close(&s1);
	store_close(&s2);
}

static void another_server_starts_a_new_epoch_with_keys_empty(void)
{
	struct store s;
	long long a, b;
	__u64 t0;

	if (!connected(&s))
		return;
	ask(&s, "epoch", "h1", "k", 1000000, 1000000, 0, 0, 0, 5000);
	sleep_ms(1100);
	a = ask(&s, "epoch", "h1", "k", 1000000, 1000000, 0, 1, 0, 5000);
	CHECK_EQ(a, 1, "granted in the first epoch");
	/* As a restarted server, or a replica promoted, would be seen: its run
	 * id differs. The full bucket must not be granted again. */
	snprintf(s.nodes[0].run_id, sizeof(s.nodes[0].run_id), "%s", "00000000000000000000000000000000000000aa");
	t0 = now_us();
	b = ask(&s, "epoch", "h1", "k", 1000000, 1000000, 0, 1000000, 0, 5000);
	CHECK(b >= 0 && (__u64)b <= now_us() - t0 + 1, "the new epoch granted %lld in %llu us", b,
	      (unsigned long long)(now_us() - t0));
	store_close(&s);
}

/* A server that answers every request with reply, once. */
static pid_t fake_store(const char *reply, int *port)
{
	int fd = listener(port);
	pid_t pid;

	if (fd < 0)
		return -1;
	pid = fork();
	if (!pid) {
		for (int n = 0; n < 4; n++) {
			int c = accept(fd, NULL, NULL);
			char buf[65536];

			while (c >= 0 && read(c, buf, sizeof(buf)) > 0)
				if (write(c, reply, strlen(reply)) < 0)
					break;
			if (c >= 0)
				close(c);
		}
		_exit(0);
	}
	close(fd);
	return pid;
}

static void a_store_that_answers_garbage_is_refused(void)
{
	static const struct {
		const char *reply, *said;
	} cases[] = {
		{ "this is no redis\r\n", "load the grant function" },
		{ "+OK\r\n", "INFO server has no run_id" },
		{ "-ERR unknown command 'FUNCTION'\r\n", "the store answered" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char url[64], err[128];
		struct store s;
		int port;
		pid_t pid = fake_store(cases[i].reply, &port);

		if (!CHECK(pid > 0, "fake store: %s", strerror(errno)))
			return;
		snprintf(url, sizeof(url), "redis://127.0.0.1:%d", port);
		store_parse_url(url, &s, err, sizeof(err));
		CHECK(store_connect(&s) && strstr(s.error, cases[i].said), "a store answering \"%.10s\": \"%s\"",
		      cases[i].reply, s.error);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

static void bad_urls_are_refused_with_what_is_wrong(void)
{
	static const struct {
		const char *url, *said;
	} cases[] = {
		{ "127.0.0.1:6379", "expected redis://" },
		{ "redis://", "missing" },
		{ "redis://127.0.0.1:0", "port" },
		{ "redis://127.0.0.1:99999", "port" },
		{ "redis://127.0.0.1:63x9", "port" },
		{ "redis://[::1:6379", "brackets" },
		{ "redis://127.0.0.1/2", "database" },
	};
	struct store s;
	char err[160];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		CHECK(store_parse_url(cases[i].url, &s, err, sizeof(err)) && strstr(err, cases[i].said),
		      "%s: \"%s\"", cases[i].url, err);
	CHECK(!store_parse_url("redis://[::1]:6380", &s, err, sizeof(err)) && !strcmp(s.seeds[0].host, "::1") &&
		      s.seeds[0].port == 6380, "an IPv6 store: %s", err);
	CHECK(!store_parse_url("redis://localhost", &s, err, sizeof(err)) && s.seeds[0].port == 6379,
	      "the default port");
	CHECK(!store_parse_url("redis-cluster://127.0.0.1:7000,[::1]:7001,h3", &s, err, sizeof(err)) && s.cluster &&
		      s.nseeds == 3 && s.seeds[1].port == 7001 && !strcmp(s.seeds[2].host, "h3") &&
		      s.seeds[2].port == 6379, "a cluster's seeds: %s", err);
	CHECK(store_parse_url("redis://a:1,b:2", &s, err, sizeof(err)) && strstr(err, "one server"),
	      "two servers in redis://: \"%s\"", err);
}

static void cluster_slots_follow_the_specification(void)
{
	struct cluster_master m;
	unsigned int slot;

	/* The specification's test vector, and keys known to its clients. */
	CHECK_EQ(cluster_crc16("123456789", 9), 0x31c3, "CRC16 of 123456789");
	CHECK_EQ(cluster_slot("foo"), 12182, "slot of foo");
	CHECK_EQ(cluster_slot("{user1000}.following"), cluster_slot("{user1000}.followers"), "a hash tag's keys");
	CHECK_EQ(cluster_slot("{}.x"), cluster_crc16("{}.x", 4) % CLUSTER_SLOTS, "an empty tag hashes the whole key");
	CHECK_EQ(cluster_redirect("MOVED 3999 127.0.0.1:6381", &slot, &m), 1, "MOVED");
	CHECK(slot == 3999 && m.port == 6381 && !strcmp(m.host, "127.0.0.1"), "MOVED's slot and node");
	CHECK_EQ(cluster_redirect("ASK 12 ::1:7000", &slot, &m), 2, "ASK");
	CHECK(slot == 12 && m.port == 7000 && !strcmp(m.host, "::1"), "ASK's node, an IPv6 one");
	CHECK_EQ(cluster_redirect("ERR wrong", &slot, &m), 0, "another error");
	CHECK_EQ(cluster_redirect("MOVED 99999 h:1", &slot, &m), 0, "a slot out of range");
}

/* A 3-master Redis Cluster on loopback, made by redis-cli --cluster. */
#define CLUSTER_N 3
static pid_t cluster_pid[CLUSTER_N];
static int cluster_port[CLUSTER_N];
static char cluster_dir[] = "/tmp/tbctl-cluster-XXXXXX";

/* A command to the node on port; its reply, or NULL. */
static redisReply *node_cmd(int port, const char *fmt, ...)
{
	redisContext *c = redisConnect("127.0.0.1", port);
	redisReply *r = NULL;
	va_list ap;

	if (c && !c->err) {
		va_start(ap, fmt);
		r = redisvCommand(c, fmt, ap);
		va_end(ap);
	}
	if (c)
		redisFree(c);
	return r;
}

static long long node_int(int port, const char *cmd)
{
	redisReply *r = node_cmd(port, cmd);
	long long v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;

	if (r)
		freeReplyObject(r);
	return v;
}

static bool cluster_ok(void)
{
	for (int i = 0; i < CLUSTER_N; i++) {
		redisReply *r = node_cmd(cluster_port[i], "CLUSTER INFO");
		bool ok = r && r->type == REDIS_REPLY_STRING && strstr(r->str, "cluster_state:ok");

		if (r)
			freeReplyObject(r);
		if (!ok)
			return false;
	}
	return true;
}

static int cluster_start(void)
{
	char cmd[512], port[16], conf[128];
	int n = 0;

	if (!mkdtemp(cluster_dir))
		return -1;
	for (int i = 0; i < CLUSTER_N; i++) {
		/* A node also listens on its port + 10000 (the cluster bus):
		 * both free and below the ephemeral ports (32768 up), which an
		 * outgoing connection could take before the node binds. */
		do
			cluster_port[i] = 10000 + rand() % 12768;
		while (!port_free(cluster_port[i]) || !port_free(cluster_port[i] + 10000));
		snprintf(port, sizeof(port), "%d", cluster_port[i]);
		snprintf(conf, sizeof(conf), "nodes-%d.conf", cluster_port[i]);
		cluster_pid[i] = fork();
		if (!cluster_pid[i]) {
			int null = open("/dev/null", O_WRONLY);

			dup2(null, 1);
			dup2(null, 2);
			execlp("redis-server", "redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "",
			       "--appendonly", "no", "--cluster-enabled", "yes", "--cluster-config-file", conf,
			       "--dir", cluster_dir, "--loglevel", "warning", (char *)NULL);
			_exit(127);
		}
	}
	for (int i = 0; i < 500 && n < CLUSTER_N; i++, sleep_ms(20))
		for (n = 0; n < CLUSTER_N && node_int(cluster_port[n], "DBSIZE") == 0; n++)
			;
	if (n < CLUSTER_N) {
		fprintf(stderr, "    the cluster's nodes did not answer\n");
		return -1;
	}
	snprintf(cmd, sizeof(cmd), "redis-cli --cluster create 127.0.0.1:%d 127.0.0.1:%d 127.0.0.1:%d "
		 "--cluster-replicas 0 --cluster-yes >/dev/null 2>&1", cluster_port[0], cluster_port[1], cluster_port[2]);
	if (system(cmd)) {
		fprintf(stderr, "    %s failed\n", cmd);
		return -1;
	}
	for (int i = 0; i < 500; i++, sleep_ms(20))
		if (cluster_ok())
			return 0;
	return -1;
}

static void cluster_stop(void)
{
	char cmd[128];

	if (strcmp(cluster_dir, "/tmp/tbctl-cluster-XXXXXX") == 0)
		return;
	for (int i = 0; i < CLUSTER_N; i++)
		if (cluster_pid[i] > 0) {
			kill(cluster_pid[i], SIGTERM);
			waitpid(cluster_pid[i], NULL, 0);
		}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", cluster_dir);
	if (strncmp(cluster_dir, "/tmp/tbctl-cluster-", 19) || system(cmd))
		fprintf(stderr, "could not remove %s\n", cluster_dir);
}

/* One key of every tag: its name in names[tag]. */
static void key_per_tag(char names[STORE_TAGS][96], const char *fleet)
{
	int found = 0;
	char key[32], name[96];

	for (int i = 0; found < STORE_TAGS; i++) {
		unsigned int t;

		snprintf(key, sizeof(key), "198.18.%d.%d", i / 250, i % 250 + 1);
		t = store_key(fleet, "198.18.0.0/15", key, name, sizeof(name));
		if (!names[t][0]) {
			memcpy(names[t], name, sizeof(name));
			found++;
		}
	}
}

static int cluster_grant(struct store *s, char names[STORE_TAGS][96], const char *fleet, __u64 want,
			 __u64 *granted)
{
	struct store_ask a[STORE_TAGS];
	char epoch[64];
	int left;

	for (int t = 0; t < STORE_TAGS; t++)
		a[t] = (struct store_ask){ .key = names[t], .tag = t, .rate = 100000, .burst = 10000, .want = want };
	left = store_grant(s, fleet, "h1", 5000, a, STORE_TAGS, epoch, sizeof(epoch));
	for (int t = 0; granted && t < STORE_TAGS; t++)
		granted[t] += a[t].granted;
	return left;
}

static bool cluster_connected(struct store *s)
{
	static int started;
	char url[64], err[160];

	if (!started)
		started = cluster_start() ? -1 : 1;
	if (!CHECK(started > 0, "a 3-node redis cluster could not be made"))
		return false;
	snprintf(url, sizeof(url), "redis-cluster://127.0.0.1:%d", cluster_port[1]);
	return CHECK(!store_parse_url(url, s, err, sizeof(err)), "%s", err) &&
	       CHECK(!store_connect(s), "connect to the cluster: %s", s->error) &&
	       CHECK_EQ(s->nnodes, CLUSTER_N, "masters found");
}

static void a_cluster_holds_keys_on_every_node(void)
{
	static char names[STORE_TAGS][96];
	static struct store s;

	if (!cluster_connected(&s))
		return;
	key_per_tag(names, "spread");
	CHECK_EQ(cluster_grant(&s, names, "spread", 100, NULL), 0, "asks not done (%s)", s.error);
	for (int i = 0; i < CLUSTER_N; i++)
		CHECK(node_int(cluster_port[i], "DBSIZE") > 2, "node %d holds %lld keys", i,
		      node_int(cluster_port[i], "DBSIZE"));
	store_close(&s);
}

static char *node_id(int port, char *buf, size_t len)
{
	redisReply *r = node_cmd(port, "CLUSTER MYID");

	snprintf(buf, len, "%s", r && r->type == REDIS_REPLY_STRING ? r->str : "?");
	if (r)
		freeReplyObject(r);
	return buf;
}

/* Move a tag's slot from one master to another, step by step, asking for
 * every tag's key between steps: importing and migrating (the keys
 * still at the source), half of them moved (ASK to the target, or
 * TRYAGAIN for a call that spans both), all moved, then the slot given
 * (MOVED, and the map read again). Every ask is bounded by the key's
 * b + r*T whatever step it met, and the moved tag is granted again. */
static void a_slot_moves_while_grants_run(void)
{
	static char names[STORE_TAGS][96];
	static struct store s;
	__u64 granted[STORE_TAGS] = {}, before = 0, t0, t1;
	int tag = 5, from = -1, to, left = 0;
	char fid[64], tid[64];
	unsigned int slot;
	char key[96];
	redisReply *r;

	if (!cluster_connected(&s))
		return;
	key_per_tag(names, "move");
	snprintf(key, sizeof(key), "{move:%02d}", tag);
	slot = cluster_slot(key);
	for (int i = 0; i < CLUSTER_N; i++)
		if (!strcmp(s.nodes[s.slot_node[slot]].host, "127.0.0.1") && s.nodes[s.slot_node[slot]].port == cluster_port[i])
			from = i;
	if (!CHECK(from >= 0, "the slot's master"))
		return;
	to = (from + 1) % CLUSTER_N;
	node_id(cluster_port[from], fid, sizeof(fid));
	node_id(cluster_port[to], tid, sizeof(tid));
	t0 = now_us();
	for (int i = 0; i < 300; i++) {
		if (i == 60) {
			r = node_cmd(cluster_port[to], "CLUSTER SETSLOT %u IMPORTING %s", slot, fid);
			CHECK(r && r->type == REDIS_REPLY_STATUS, "importing");
			freeReplyObject(r);
			r = node_cmd(cluster_port[from], "CLUSTER SETSLOT %u MIGRATING %s", slot, tid);
			CHECK(r && r->type == REDIS_REPLY_STATUS, "migrating");
			freeReplyObject(r);
		}
		if (i == 100 || i == 140) {
			/* 100: the tag's key; 140: the rest, its epoch key. */
			r = node_cmd(cluster_port[from], "MIGRATE 127.0.0.1 %d %s 0 1000", cluster_port[to],
				     i == 100 ? names[tag] : "tbctl:{move:05}:epoch");
			CHECK(r && r->type == REDIS_REPLY_STATUS, "migrate at %d: %s", i, r && r->str ? r->str : "?");
			freeReplyObject(r);
		}
		if (i == 180)
			for (int n = 0; n < CLUSTER_N; n++) {
				r = node_cmd(cluster_port[n], "CLUSTER SETSLOT %u NODE %s", slot, tid);
				CHECK(r && r->type == REDIS_REPLY_STATUS, "give the slot on %d", n);
				freeReplyObject(r);
			}
		if (i == 200)
			before = granted[tag];
		left += cluster_grant(&s, names, "move", 2000, granted);
		sleep_ms(2);
	}
	t1 = now_us();
	CHECK(node_int(cluster_port[to], "DBSIZE") > node_int(cluster_port[from], "DBSIZE") - 100,
	      "the target holds the slot's keys");
	CHECK(granted[tag] > before, "the moved tag granted again after the move (%llu, %llu before)",
	      (unsigned long long)granted[tag], (unsigned long long)before);
	for (int t = 0; t < STORE_TAGS; t++)
		CHECK(granted[t] <= 10000 + 100000 * (t1 - t0 + 2000) / 1000000,
		      "tag %d granted %llu > b + r*T", t, (unsigned long long)granted[t]);
	CHECK(left < 300, "asks not done during the move: %d", left);
	printf("     slot %u moved from :%d to :%d; %d asks redirected or retried\n", slot, cluster_port[from],
	       cluster_port[to], left);
	store_close(&s);
}

static void an_unreachable_store_says_so(void)
{
	char url[64], err[128];
	struct store s;
	int port, fd = listener(&port);

	close(fd);
	snprintf(url, sizeof(url), "redis://127.0.0.1:%d", port);
	store_parse_url(url, &s, err, sizeof(err));
	CHECK(store_connect(&s) && strstr(s.error, "connect to 127.0.0.1"), "no store: \"%s\"", s.error);
}

/* A store that accepts and never answers, at the start and while grants
 * run: the error says it did not answer within the limit. */
static void a_store_that_never_answers_says_so(void)
{
	char url[64], err[128], epoch[64], name[128];
	struct store_ask a = { .key = name, .rate = 1000, .burst = 1000, .want = 100 };
	struct store s;
	int port, fd = listener(&port);

	snprintf(url, sizeof(url), "redis://127.0.0.1:%d", port);
	store_parse_url(url, &s, err, sizeof(err));
	CHECK(store_connect(&s) && strstr(s.error, "did not answer within 200 ms"), "at the start: \"%s\"", s.error);
	close(fd);
	if (!connected(&s))
		return;
	a.tag = store_key("silent", "198.18.0.0/16", "k", name, sizeof(name));
	kill(redis_pid, SIGSTOP);
	CHECK(store_grant(&s, "silent", "h1", 1000, &a, 1, epoch, sizeof(epoch)) &&
	      strstr(s.error, "did not answer within 200 ms"), "while running: \"%s\"", s.error);
	kill(redis_pid, SIGCONT);
	store_close(&s);
}

int main(int argc, char **argv)
{
	static const struct test_case tests[] = {
		{ "a_new_store_starts_its_keys_empty", a_new_store_starts_its_keys_empty },
		{ "held_credit_counts_against_the_burst", held_credit_counts_against_the_burst },
		{ "returned_credit_is_granted_again", returned_credit_is_granted_again },
		{ "a_lease_that_ends_counts_as_spent", a_lease_that_ends_counts_as_spent },
		{ "two_hosts_never_get_more_than_b_plus_r_t", two_hosts_never_get_more_than_b_plus_r_t },
		{ "another_server_starts_a_new_epoch_with_keys_empty", another_server_starts_a_new_epoch_with_keys_empty },
		{ "a_store_that_answers_garbage_is_refused", a_store_that_answers_garbage_is_refused },
		{ "bad_urls_are_refused_with_what_is_wrong", bad_urls_are_refused_with_what_is_wrong },
		{ "cluster_slots_follow_the_specification", cluster_slots_follow_the_specification },
		{ "an_unreachable_store_says_so", an_unreachable_store_says_so },
		{ "a_store_that_never_answers_says_so", a_store_that_never_answers_says_so },
		{ "a_cluster_holds_keys_on_every_node", a_cluster_holds_keys_on_every_node },
		{ "a_slot_moves_while_grants_run", a_slot_moves_while_grants_run },
	};
	int rc;

	srand(getpid());
	if (redis_start()) {
		redis_stop();
		printf("FAIL store: redis-server could not be started (is it installed?)\n0 passed, 1 failed\n");
		return 1;
	}
	rc = run_tests("store", tests, sizeof(tests) / sizeof(tests[0]), argc, argv);
	redis_stop();
	cluster_stop();
	return rc;
}
