// SPDX-License-Identifier: GPL-2.0
/* tc through tcx links. libbpf 1.1's bpf_link_create() passes no
 * relative program, and its bpf_prog_query() returns no link ids, so
 * those two calls go to the kernel directly, with their attributes laid
 * out as Linux 6.6 reads them. */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include "lib/tcx.h"

/* BPF_PROG_QUERY's attributes on a tcx hook. */
struct tcx_query_attr {
	__u32 target_ifindex;
	__u32 attach_type;
	__u32 query_flags;
	__u32 attach_flags;
	__u64 prog_ids;
	__u32 count;
	__u32 pad;
	__u64 prog_attach_flags;
	__u64 link_ids;
	__u64 link_attach_flags;
	__u64 revision;
};

/* BPF_LINK_CREATE's attributes with their tcx member. */
struct tcx_link_attr {
	__u32 prog_fd;
	__u32 target_ifindex;
	__u32 attach_type;
	__u32 flags;
	__u32 relative_id;
	__u32 pad;
	__u64 expected_revision;
};

/* bpf_link_info's beginning, with its tcx member. */
struct tcx_link_info {
	__u32 type;
	__u32 id;
	__u32 prog_id;
	__u32 pad;
	__u32 ifindex;          /* 0 once the link holds no device */
	__u32 attach_type;
};

static int sys_bpf(int cmd, void *attr, unsigned int size)
{
	long rc = syscall(__NR_bpf, cmd, attr, size);

	return rc < 0 ? -errno : (int)rc;
}

static __u32 tcx_type(bool egress)
{
	return egress ? TB_TCX_EGRESS : TB_TCX_INGRESS;
}

int tcx_supported(int ifindex)
{
	struct tcx_query_attr q = { .target_ifindex = ifindex, .attach_type = TB_TCX_INGRESS };
	int err = sys_bpf(BPF_PROG_QUERY, &q, sizeof(q));

	/* A kernel without tcx knows neither the attach type nor the
	 * attributes past its own (6.1: prog_attach_flags). */
	return err == -EINVAL ? 0 : err ? err : 1;
}

int tcx_progs(int ifindex, bool egress, __u32 *ids, __u32 *links)
{
	__u32 spare[TCX_MAX_PROGS];
	struct tcx_query_attr q = { .target_ifindex = ifindex, .attach_type = tcx_type(egress),
				    .prog_ids = (__u64)(unsigned long)ids,
				    .link_ids = (__u64)(unsigned long)(links ? links : spare),
				    .count = TCX_MAX_PROGS };
	int err = sys_bpf(BPF_PROG_QUERY, &q, sizeof(q));

	return err ? err : (int)q.count;
}

int tcx_attach(int ifindex, bool egress, int prog_fd, const struct tcx_place *place, const char *pin)
{
	struct tcx_link_attr a = { .prog_fd = prog_fd, .target_ifindex = ifindex, .attach_type = tcx_type(egress),
				   .flags = (place->after ? TB_F_AFTER : TB_F_BEFORE) | (place->id ? TB_F_ID : 0),
				   .relative_id = place->id };
	int fd = sys_bpf(BPF_LINK_CREATE, &a, sizeof(a)), err;

	if (fd < 0)
		return fd;
	/* Closing the only descriptor of a link not pinned detaches it. */
	err = bpf_obj_pin(fd, pin) ? -errno : 0;
	close(fd);
	return err;
}

int tcx_update(const char *pin, int prog_fd, __u32 old_id)
{
	LIBBPF_OPTS(bpf_link_update_opts, o, .flags = BPF_F_REPLACE);
	int fd = bpf_obj_get(pin), old_fd, err;

	if (fd < 0)
		return -errno;
	old_fd = bpf_prog_get_fd_by_id(old_id);
	if (old_fd < 0) {
		err = -errno;
	} else {
		o.old_prog_fd = old_fd;
		err = bpf_link_update(fd, prog_fd, &o) ? -errno : 0;
		close(old_fd);
	}
	close(fd);
	return err;
}

__u32 tcx_link_prog(const char *pin)
{
	struct tcx_link_info info = {};
	__u32 len = sizeof(info);
	int fd = bpf_obj_get(pin), err;

	if (fd < 0)
		return 0;
	err = bpf_obj_get_info_by_fd(fd, &info, &len);
	close(fd);
	return err || info.type != TB_LINK_TYPE_TCX || !info.ifindex ? 0 : info.prog_id;
}

int tcx_detach(int ifindex, bool egress, __u32 prog_id)
{
	__u32 ids[TCX_MAX_PROGS], links[TCX_MAX_PROGS];
	int n = tcx_progs(ifindex, egress, ids, links), fd, err;

	if (n < 0)
		return n;
	for (int i = 0; i < n; i++) {
		if (ids[i] != prog_id || !links[i])
			continue;
		fd = bpf_link_get_fd_by_id(links[i]);
		if (fd < 0)
			return -errno;
		err = bpf_link_detach(fd) ? -errno : 0;
		close(fd);
		return err;
	}
	return -ENOENT;
}
