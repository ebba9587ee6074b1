// SPDX-License-Identifier: GPL-2.0
/* tcxpeer: puts another tool's program (peer.bpf.c) on a device's tcx
 * hook, for the tests of tbctl among others there; bpftool 7.1 attaches
 * no tcx program.
 *   tcxpeer attach DIR DEV ingress|egress next|pass [first|last]
 *       loads it with that verdict, pins its count at DIR/seen and its
 *       link at DIR/link (removing that pin takes it off), prints its id
 *   tcxpeer seen DIR
 *       prints how many IPv4 UDP packets it has seen
 *   tcxpeer progs DEV ingress|egress
 *       prints the programs on the hook, in the order they run: "ID NAME" */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "peer.skel.h"
#include "lib/hook.h"
#include "lib/tcx.h"

static int usage(void)
{
	fprintf(stderr, "usage: tcxpeer attach DIR DEV ingress|egress next|pass [first|last]\n"
			"       tcxpeer seen DIR\n"
			"       tcxpeer progs DEV ingress|egress\n");
	return 2;
}

static int attach(const char *dir, const char *dev, const char *hook, const char *verdict, const char *where)
{
	struct tcx_place place = { .after = where && !strcmp(where, "last") };
	char path[PATH_MAX];
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	int ifindex = if_nametoindex(dev), err;
	struct peer *skel;

	if (!ifindex) {
		fprintf(stderr, "tcxpeer: no device %s\n", dev);
		return 1;
	}
	skel = peer__open();
	if (!skel) {
		fprintf(stderr, "tcxpeer: open peer.bpf.o: %s\n", strerror(errno));
		return 1;
	}
	skel->rodata->verdict = strcmp(verdict, "pass") ? TC_ACT_UNSPEC : TC_ACT_OK;
	err = peer__load(skel);
	if (err) {
		fprintf(stderr, "tcxpeer: load: %s\n", strerror(-err));
		goto out;
	}
	snprintf(path, sizeof(path), "%s/seen", dir);
	err = bpf_map__pin(skel->maps.seen, path);
	if (err) {
		fprintf(stderr, "tcxpeer: pin %s: %s\n", path, strerror(-err));
		goto out;
	}
	snprintf(path, sizeof(path), "%s/link", dir);
	err = tcx_attach(ifindex, !strcmp(hook, "egress"), bpf_program__fd(skel->progs.peer), &place, path);
	if (err) {
		fprintf(stderr, "tcxpeer: attach to %s's tcx %s hook: %s\n", dev, hook, strerror(-err));
		goto out;
	}
	if (!bpf_obj_get_info_by_fd(bpf_program__fd(skel->progs.peer), &info, &len))
		printf("%u\n", info.id);
out:
	peer__destroy(skel);
	return err ? 1 : 0;
}

static int seen(const char *dir)
{
	char path[PATH_MAX];
	__u32 zero = 0;
	__u64 n;
	int fd;

	snprintf(path, sizeof(path), "%s/seen", dir);
	fd = bpf_obj_get(path);
	if (fd < 0 || bpf_map_lookup_elem(fd, &zero, &n)) {
		fprintf(stderr, "tcxpeer: read %s: %s\n", path, strerror(errno));
		return 1;
	}
	close(fd);
	printf("%llu\n", (unsigned long long)n);
	return 0;
}

static int progs(const char *dev, const char *hook)
{
	__u32 ids[TCX_MAX_PROGS];
	int ifindex = if_nametoindex(dev), n;

	if (!ifindex) {
		fprintf(stderr, "tcxpeer: no device %s\n", dev);
		return 1;
	}
	n = tcx_progs(ifindex, !strcmp(hook, "egress"), ids, NULL);
	if (n < 0) {
		fprintf(stderr, "tcxpeer: list %s's tcx %s hook: %s\n", dev, hook, strerror(-n));
		return 1;
	}
	for (int i = 0; i < n; i++) {
		char name[BPF_OBJ_NAME_LEN];

		prog_name(ids[i], name);
		printf("%u %s\n", ids[i], name);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 6 && argc <= 7 && !strcmp(argv[1], "attach") &&
	    (!strcmp(argv[4], "ingress") || !strcmp(argv[4], "egress")) &&
	    (!strcmp(argv[5], "next") || !strcmp(argv[5], "pass")) &&
	    (argc == 6 || !strcmp(argv[6], "first") || !strcmp(argv[6], "last")))
		return attach(argv[2], argv[3], argv[4], argv[5], argc == 7 ? argv[6] : NULL);
	if (argc == 3 && !strcmp(argv[1], "seen"))
		return seen(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "progs") && (!strcmp(argv[3], "ingress") || !strcmp(argv[3], "egress")))
		return progs(argv[2], argv[3]);
	return usage();
}
