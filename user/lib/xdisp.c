// SPDX-License-Identifier: GPL-2.0
/* tbctl's XDP program as one of the programs of libxdp's dispatcher. The
 * layout of the dispatcher's configuration, its pins and its lock are
 * libxdp's protocol, version 2 (xdp-tools' lib/libxdp/protocol.org). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include "lib/xdisp.h"
#include "lib/err.h"
#include "abi/tb_abi.h"
#include "anchor.skel.h"

#define XDISP_MAGIC 236
#define XDISP_VERSION 2
/* Returned by an empty slot; always a chain-call action. */
#define XDISP_RETVAL 31
#define XDISP_RETRIES 10

/* The dispatcher's configuration, its .rodata. */
struct xdisp_config {
	__u8 magic;
	__u8 version;
	__u8 num_progs_enabled;
	__u8 is_xdp_frags;
	__u32 chain_call_actions[XDISP_MAX_PROGS];
	__u32 run_prios[XDISP_MAX_PROGS];
	__u32 program_flags[XDISP_MAX_PROGS];
};

/* The dispatcher object libxdp ships, where libxdp looks for it. */
#ifndef TB_XDP_OBJECT_DIR
#define TB_XDP_OBJECT_DIR "/usr/lib/bpf"
#endif

static int silent(enum libxdp_print_level level, const char *fmt, va_list ap)
{
	(void)level, (void)fmt, (void)ap;
	return 0;
}

/* libxdp prints its own warnings; tbctl says what failed itself. */
static void libxdp_quiet(void)
{
	libxdp_set_print(silent);
}

bool xdisp_wanted(void)
{
	const char *skip = secure_getenv("LIBXDP_SKIP_DISPATCHER");

	return !skip || strcmp(skip, "1");
}

static __u32 xdp_mode_flags(int mode)
{
	return mode == TB_MODE_XDP ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE;
}

/* Make prog an extension of anchor program fd's function. */
static int extend(struct bpf_program *prog, int fd)
{
	int err = bpf_program__set_type(prog, BPF_PROG_TYPE_EXT);

	err = err ? err : bpf_program__set_expected_attach_type(prog, 0);
	return err ? err : bpf_program__set_attach_target(prog, fd, "tb_xdp_anchor");
}

/* Whether this kernel loads extension programs: not without the BPF
 * trampoline (a kernel built without ftrace refuses them with EPERM). A
 * second anchor, made an extension of the first, is loaded to tell, as
 * libxdp loads a program of its own. */
static int can_extend(int fd)
{
	struct anchor *probe = anchor__open();
	int err;

	if (!probe)
		return -errno;
	err = extend(probe->progs.tb_xdp_anchor, fd);
	err = err ? err : anchor__load(probe);
	anchor__destroy(probe);
	return err;
}

int xdisp_prepare(struct bpf_program *prog, struct tb_err *e)
{
	struct anchor *a = anchor__open_and_load();
	int fd, err;

	if (!a)
		return tb_fail(e, -errno, "load the dispatcher's anchor program: %s", strerror(errno));
	fd = dup(bpf_program__fd(a->progs.tb_xdp_anchor));
	anchor__destroy(a);
	if (fd < 0)
		return tb_fail(e, -errno, "keep the anchor program: %s", strerror(errno));
	err = can_extend(fd);
	if (err) {
		close(fd);
		return tb_fail(e, -EOPNOTSUPP, "this kernel loads no extension (freplace) programs, which libxdp's "
			       "dispatcher is made of (%s)", strerror(-err));
	}
	/* The dispatcher carries the frags flag for all its programs. */
	bpf_program__set_flags(prog, bpf_program__flags(prog) & ~BPF_F_XDP_HAS_FRAGS);
	err = extend(prog, fd);
	if (err) {
		close(fd);
		return tb_fail(e, err, "make the XDP program an extension: %s", strerror(-err));
	}
	return fd;
}

int xdisp_detach(int ifindex, int mode, __u32 id)
{
	struct xdp_program *p;
	int err;

	libxdp_quiet();
	p = xdp_program__from_id(id);
	err = libxdp_get_error(p);
	if (err)
		return err;
	err = xdp_program__detach(p, ifindex, mode == TB_MODE_XDP ? XDP_MODE_NATIVE : XDP_MODE_SKB, 0);
	xdp_program__close(p);
	return err;
}

bool xdisp_is_component(__u32 id)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	int fd = bpf_prog_get_fd_by_id(id);
	bool ext;

	if (fd < 0)
		return false;
	ext = !bpf_obj_get_info_by_fd(fd, &info, &len) && info.type == BPF_PROG_TYPE_EXT;
	close(fd);
	return ext;
}

/* libxdp's folder of pins: $LIBXDP_BPFFS/xdp, by default in /sys/fs/bpf. */
static void pins_dir(char *buf, size_t len)
{
	const char *fs = secure_getenv("LIBXDP_BPFFS");

	snprintf(buf, len, "%s/xdp", fs && *fs ? fs : "/sys/fs/bpf");
}

static void disp_dir(int ifindex, __u32 disp_id, char *buf, size_t len)
{
	char dir[PATH_MAX - 64];

	pins_dir(dir, sizeof(dir));
	snprintf(buf, len, "%s/dispatch-%d-%u", dir, ifindex, disp_id);
}

/* The configuration of dispatcher disp_fd; -ENOENT when it is no
 * dispatcher (of this version). */
static int disp_config(int disp_fd, struct xdisp_config *c)
{
	struct bpf_prog_info pi = {};
	__u32 len = sizeof(pi), ids[8], zero = 0;
	int err = -ENOENT;

	pi.nr_map_ids = sizeof(ids) / sizeof(ids[0]);
	pi.map_ids = (__u64)(unsigned long)ids;
	if (bpf_obj_get_info_by_fd(disp_fd, &pi, &len))
		return -errno;
	if (strcmp(pi.name, "xdp_dispatcher"))
		return -ENOENT;
	for (__u32 i = 0; i < pi.nr_map_ids && i < sizeof(ids) / sizeof(ids[0]) && err; i++) {
		struct bpf_map_info mi = {};
		__u32 mlen = sizeof(mi);
		int fd = bpf_map_get_fd_by_id(ids[i]);

		if (fd < 0)
			continue;
		if (!bpf_obj_get_info_by_fd(fd, &mi, &mlen) && strstr(mi.name, ".rodata") &&
		    mi.value_size == sizeof(*c) && !bpf_map_lookup_elem(fd, &zero, c))
			err = c->magic == XDISP_MAGIC && c->version == XDISP_VERSION ? 0 : -EPROTO;
		close(fd);
	}
	return err;
}

/* The program in slot i of dispatcher disp_id on ifindex, from its pin;
 * -errno. */
static int slot_prog(int ifindex, __u32 disp_id, int i)
{
	char dir[PATH_MAX - 32], path[PATH_MAX];
	int fd;

	disp_dir(ifindex, disp_id, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/prog%d-prog", dir, i);
	fd = bpf_obj_get(path);
	return fd < 0 ? -errno : fd;
}

static __u32 id_of(int fd, char *name)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return 0;
	if (name)
		memcpy(name, info.name, BPF_OBJ_NAME_LEN);
	return info.id;
}

/* Read with CAP_BPF alone where it must be (status): the dispatcher is
 * known by its folder of pins, its programs by their pins; their
 * priorities, in its configuration, take opening it by id. */
int xdisp_programs(int ifindex, int mode, struct xdisp_prog *p, __u32 *dispatcher)
{
	struct xdisp_config c = {};
	char dir[PATH_MAX - 32];
	struct stat st;
	__u32 id = 0;
	int fd, n = 0;

	*dispatcher = 0;
	if (bpf_xdp_query_id(ifindex, xdp_mode_flags(mode), &id) || !id)
		return 0;
	fd = bpf_prog_get_fd_by_id(id);
	disp_dir(ifindex, id, dir, sizeof(dir));
	if (stat(dir, &st)) {
		p[0] = (struct xdisp_prog){ .id = id };
		if (fd >= 0)
			id_of(fd, p[0].name);
	} else {
		*dispatcher = id;
		if (fd >= 0 && disp_config(fd, &c))
			c = (struct xdisp_config){};
		for (int sfd; n < XDISP_MAX_PROGS && (sfd = slot_prog(ifindex, id, n)) >= 0; n++) {
			p[n] = (struct xdisp_prog){ .prio = c.run_prios[n] };
			p[n].id = id_of(sfd, p[n].name);
			close(sfd);
		}
	}
	if (fd >= 0)
		close(fd);
	return *dispatcher ? n : 1;
}

/* The dispatcher's function that slot i of a dispatcher of n slots
 * replaces: with one, the dispatcher's own (libxdp's choice, which saves
 * the call). */
static void slot_func(int n, int i, char *buf, size_t len)
{
	if (n == 1)
		snprintf(buf, len, "xdp_dispatcher");
	else
		snprintf(buf, len, "prog%d", i);
}

/* The BTF id of function name in loaded program fd. */
static int prog_btf_id(int fd, const char *name)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	struct btf *btf;
	int id;

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	btf = btf__load_from_kernel_by_id(info.btf_id);
	if (!btf)
		return -errno;
	id = btf__find_by_name_kind(btf, name, BTF_KIND_FUNC);
	btf__free(btf);
	return id;
}

/* A new dispatcher, what is being built to take the old one's place. */
struct build {
	struct xdisp_config c;
	int progs[XDISP_MAX_PROGS];     /* its programs' descriptors */
	bool owned[XDISP_MAX_PROGS];    /* opened here: closed when it is done */
	int links[XDISP_MAX_PROGS];
	struct bpf_object *obj;
	int fd;
	char dir[PATH_MAX - 32];
};

/* Load the dispatcher libxdp ships with b's configuration. */
static int build_load(struct build *b, struct tb_err *e)
{
	const char *dir = secure_getenv("LIBXDP_OBJECT_PATH");
	struct bpf_program *prog;
	struct bpf_map *map;
	char path[PATH_MAX];
	int err = -ENOENT;

	snprintf(path, sizeof(path), "%s/xdp-dispatcher.o", dir && *dir ? dir : TB_XDP_OBJECT_DIR);
	b->obj = bpf_object__open_file(path, NULL);
	if (!b->obj) {
		b->obj = NULL;
		return tb_fail(e, -errno, "open libxdp's dispatcher %s: %s", path, strerror(errno));
	}
	bpf_object__for_each_map(map, b->obj)
		if (strstr(bpf_map__name(map), ".rodata"))
			err = bpf_map__set_initial_value(map, &b->c, sizeof(b->c));
	prog = bpf_object__find_program_by_name(b->obj, "xdp_dispatcher");
	if (err || !prog)
		return tb_fail(e, err ? err : -ENOENT, "%s is not libxdp's dispatcher of version %d", path,
			       XDISP_VERSION);
	if (b->c.is_xdp_frags)
		bpf_program__set_flags(prog, bpf_program__flags(prog) | BPF_F_XDP_HAS_FRAGS);
	err = bpf_object__load(b->obj);
	if (err)
		return tb_fail(e, err, "load libxdp's dispatcher: %s", strerror(-err));
	b->fd = bpf_program__fd(prog);
	return 0;
}

/* Each program into its slot of the new dispatcher: a second link of an
 * extension program, which the kernel has allowed since Linux 5.10. */
static int build_link(struct build *b, struct tb_err *e)
{
	for (int i = 0; i < b->c.num_progs_enabled; i++) {
		LIBBPF_OPTS(bpf_link_create_opts, o);
		char func[16];

		slot_func(b->c.num_progs_enabled, i, func, sizeof(func));
		o.target_btf_id = prog_btf_id(b->fd, func);
		if ((int)o.target_btf_id <= 0)
			return tb_fail(e, -ENOENT, "the dispatcher has no function %s", func);
		b->links[i] = bpf_link_create(b->progs[i], b->fd, 0, &o);
		if (b->links[i] < 0)
			return tb_fail(e, -errno, "link program %u into the new dispatcher: %s", id_of(b->progs[i], NULL),
				       strerror(errno));
	}
	return 0;
}

static void build_unpin(struct build *b)
{
	char path[PATH_MAX];

	for (int i = 0; i < b->c.num_progs_enabled; i++) {
		snprintf(path, sizeof(path), "%s/prog%d-link", b->dir, i);
		unlink(path);
		snprintf(path, sizeof(path), "%s/prog%d-prog", b->dir, i);
		unlink(path);
	}
	rmdir(b->dir);
}

/* The pins that hold the new dispatcher's programs in it. */
static int build_pin(struct build *b, int ifindex, struct tb_err *e)
{
	char path[PATH_MAX];
	int err;

	disp_dir(ifindex, id_of(b->fd, NULL), b->dir, sizeof(b->dir));
	if (mkdir(b->dir, 0700) && errno != EEXIST)
		return tb_fail(e, -errno, "make %s: %s", b->dir, strerror(errno));
	for (int i = 0; i < b->c.num_progs_enabled; i++) {
		snprintf(path, sizeof(path), "%s/prog%d-link", b->dir, i);
		if (bpf_obj_pin(b->links[i], path))
			goto fail;
		snprintf(path, sizeof(path), "%s/prog%d-prog", b->dir, i);
		if (bpf_obj_pin(b->progs[i], path))
			goto fail;
	}
	return 0;
fail:
	err = tb_fail(e, -errno, "pin %s: %s", path, strerror(errno));
	build_unpin(b);
	return err;
}

static void build_free(struct build *b)
{
	for (int i = 0; i < XDISP_MAX_PROGS; i++) {
		if (b->links[i] >= 0)
			close(b->links[i]);
		if (b->owned[i])
			close(b->progs[i]);
	}
	bpf_object__close(b->obj);
}

/* libxdp's lock over its pins: flock on their folder. */
static int pins_lock(struct tb_err *e)
{
	char dir[PATH_MAX];
	int fd;

	pins_dir(dir, sizeof(dir));
	if (mkdir(dir, 0700) && errno != EEXIST)
		return tb_fail(e, -errno, "make %s: %s", dir, strerror(errno));
	fd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (fd < 0 || flock(fd, LOCK_EX)) {
		int err = tb_fail(e, -errno, "lock %s: %s", dir, strerror(errno));

		if (fd >= 0)
			close(fd);
		return err;
	}
	return fd;
}

/* The old dispatcher's pins, once the new one has taken its place. */
static void old_unpin(int ifindex, __u32 disp_id, int n)
{
	struct build old = { .c.num_progs_enabled = n };

	disp_dir(ifindex, disp_id, old.dir, sizeof(old.dir));
	build_unpin(&old);
}

/* The new dispatcher's slots: cur's (a dispatcher's, or a program's
 * attached without one) as they are. -errno said in e. */
static int plan_keep(struct build *b, int ifindex, int cur_fd, __u32 old_id, struct tb_err *e)
{
	__u32 cur = id_of(cur_fd, NULL);
	int err = disp_config(cur_fd, &b->c);

	if (err == -EPROTO)
		return tb_fail(e, err, "the XDP dispatcher on the device is another version than libxdp's %d",
			       XDISP_VERSION);
	if (err && cur != old_id)
		return tb_fail(e, -EEXIST, "another XDP program is attached without libxdp's dispatcher");
	if (err) {
		/* tbctl's own, from before the dispatcher: it is replaced. */
		b->c = (struct xdisp_config){ .magic = XDISP_MAGIC, .version = XDISP_VERSION, .num_progs_enabled = 1 };
		b->progs[0] = dup(cur_fd);
		b->owned[0] = b->progs[0] >= 0;
		return b->owned[0] ? 0 : tb_fail(e, -errno, "keep the XDP program: %s", strerror(errno));
	}
	for (int i = 0; i < b->c.num_progs_enabled && i < XDISP_MAX_PROGS; i++) {
		b->progs[i] = slot_prog(ifindex, cur, i);
		/* Gone: another tool has just swapped the dispatcher. */
		if (b->progs[i] == -ENOENT)
			return -EAGAIN;
		if (b->progs[i] < 0)
			return tb_fail(e, b->progs[i], "open the dispatcher's program %d: %s", i, strerror(-b->progs[i]));
		b->owned[i] = true;
	}
	return 0;
}

/* Where a new program of priority prio goes among b's: after those of a
 * lower priority, and of the same one with a name that sorts first, as
 * libxdp orders them. */
static int plan_place(const struct build *b, unsigned int prio, const char *name)
{
	char other[BPF_OBJ_NAME_LEN];
	int i;

	for (i = 0; i < b->c.num_progs_enabled; i++) {
		id_of(b->progs[i], other);
		if (b->c.run_prios[i] > prio || (b->c.run_prios[i] == prio && strcmp(other, name) > 0))
			break;
	}
	return i;
}

/* A new slot at i, the others moved up. */
static void plan_insert(struct build *b, int i)
{
	int n = b->c.num_progs_enabled++;

	memmove(&b->progs[i + 1], &b->progs[i], (n - i) * sizeof(b->progs[0]));
	memmove(&b->owned[i + 1], &b->owned[i], (n - i) * sizeof(b->owned[0]));
	memmove(&b->c.chain_call_actions[i + 1], &b->c.chain_call_actions[i], (n - i) * sizeof(__u32));
	memmove(&b->c.run_prios[i + 1], &b->c.run_prios[i], (n - i) * sizeof(__u32));
	memmove(&b->c.program_flags[i + 1], &b->c.program_flags[i], (n - i) * sizeof(__u32));
}

/* What the new dispatcher holds: the programs on the hook (cur_fd's,
 * none when it is -1), with new_fd in old_id's slot, or, when old_id is
 * 0, in a new one at priority prio. Its slot; -errno said in e. */
static int build_plan(struct build *b, int ifindex, int cur_fd, __u32 old_id, int new_fd, unsigned int prio,
		      bool frags, struct tb_err *e)
{
	char name[BPF_OBJ_NAME_LEN];
	int err = 0, slot = -1;

	b->c = (struct xdisp_config){ .magic = XDISP_MAGIC, .version = XDISP_VERSION };
	if (cur_fd >= 0 && (err = plan_keep(b, ifindex, cur_fd, old_id, e)))
		return err;
	for (int i = 0; old_id && i < b->c.num_progs_enabled; i++)
		if (id_of(b->progs[i], NULL) == old_id)
			slot = i;
	if (old_id && slot < 0)
		return tb_fail(e, -ENOENT, "tbctl's program %u is not on the device's XDP hook", old_id);
	if (!old_id && b->c.num_progs_enabled >= XDISP_MAX_PROGS)
		return tb_fail(e, -E2BIG, "libxdp's dispatcher on the device holds %d programs, its most",
			       XDISP_MAX_PROGS);
	if (!old_id) {
		id_of(new_fd, name);
		plan_insert(b, slot = plan_place(b, prio, name));
		b->c.run_prios[slot] = prio;
		b->c.chain_call_actions[slot] = 1U << XDP_PASS | 1U << XDISP_RETVAL;
	} else if (b->c.run_prios[slot] == 0 && b->c.num_progs_enabled == 1) {
		b->c.run_prios[slot] = prio;
		b->c.chain_call_actions[slot] = 1U << XDP_PASS | 1U << XDISP_RETVAL;
	}
	if (old_id)
		close(b->progs[slot]);
	b->progs[slot] = new_fd;
	b->owned[slot] = false;
	b->c.program_flags[slot] = frags ? BPF_F_XDP_HAS_FRAGS : 0;
	b->c.is_xdp_frags = 1;
	for (int i = 0; i < b->c.num_progs_enabled; i++)
		b->c.is_xdp_frags &= !!b->c.program_flags[i];
	return slot;
}

/* One try: -EAGAIN when the hook changed meanwhile. */
static int put_once(int ifindex, int mode, __u32 old_id, int new_fd, unsigned int prio, bool frags,
		    struct tb_err *e)
{
	LIBBPF_OPTS(bpf_xdp_attach_opts, xo, .old_prog_fd = -1);
	struct build b = { .fd = -1 };
	__u32 cur = 0, flags = xdp_mode_flags(mode);
	int err, lock = -1;

	for (int i = 0; i < XDISP_MAX_PROGS; i++)
		b.links[i] = -1;
	if (bpf_xdp_query_id(ifindex, flags, &cur))
		return tb_fail(e, -errno, "read the device's XDP program: %s", strerror(errno));
	if (cur && (xo.old_prog_fd = bpf_prog_get_fd_by_id(cur)) < 0)
		return tb_fail(e, -errno, "open the device's XDP program: %s", strerror(errno));
	err = build_plan(&b, ifindex, xo.old_prog_fd, old_id, new_fd, prio, frags, e);
	err = err < 0 ? err : build_load(&b, e);
	err = err ? err : build_link(&b, e);
	err = err ? err : (lock = pins_lock(e)) < 0 ? lock : build_pin(&b, ifindex, e);
	if (!err) {
		flags |= cur ? XDP_FLAGS_REPLACE : XDP_FLAGS_UPDATE_IF_NOEXIST;
		err = bpf_xdp_attach(ifindex, b.fd, flags, cur ? &xo : NULL);
		if (err)
			build_unpin(&b);
		if (err == -EEXIST || err == -EBUSY)
			err = -EAGAIN;
		else if (err == -EOPNOTSUPP && mode == TB_MODE_XDP)
			tb_fail(e, err, "the driver has no native XDP (try mode xdpgeneric)");
		else if (err)
			tb_fail(e, err, "attach libxdp's dispatcher: %s", strerror(-err));
		else if (cur && cur != old_id)
			old_unpin(ifindex, cur, b.c.num_progs_enabled - !old_id);
	}
	if (lock >= 0)
		close(lock);
	build_free(&b);
	if (xo.old_prog_fd >= 0)
		close(xo.old_prog_fd);
	return err;
}

static int xdisp_put(int ifindex, int mode, __u32 old_id, int new_fd, unsigned int prio, bool frags,
		     struct tb_err *e)
{
	int err;

	for (int i = 0; i < XDISP_RETRIES; i++)
		if ((err = put_once(ifindex, mode, old_id, new_fd, prio, frags, e)) != -EAGAIN)
			return err;
	return tb_fail(e, -EBUSY, "the device's XDP programs kept changing while the new dispatcher was built");
}

int xdisp_build(const int *progs, int n, int *links, struct tb_err *e)
{
	struct build b = { .fd = -1 };
	int err, fd = -1;

	if (n < 1 || n > XDISP_MAX_PROGS)
		return tb_fail(e, -EINVAL, "a dispatcher holds 1 to %d programs", XDISP_MAX_PROGS);
	b.c = (struct xdisp_config){ .magic = XDISP_MAGIC, .version = XDISP_VERSION, .num_progs_enabled = n };
	for (int i = 0; i < XDISP_MAX_PROGS; i++)
		b.links[i] = -1;
	for (int i = 0; i < n; i++) {
		b.progs[i] = progs[i];
		b.c.run_prios[i] = XDISP_PRIO_DEFAULT;
		b.c.chain_call_actions[i] = 1U << XDP_PASS | 1U << XDISP_RETVAL;
	}
	err = build_load(&b, e);
	err = err ? err : build_link(&b, e);
	if (!err && (fd = dup(b.fd)) < 0)
		err = tb_fail(e, -errno, "keep the dispatcher: %s", strerror(errno));
	for (int i = 0; !err && i < n; i++) {
		links[i] = b.links[i];
		b.links[i] = -1;
	}
	build_free(&b);
	return err ? err : fd;
}

int xdisp_attach(int ifindex, int mode, int prog_fd, unsigned int prio, bool frags, struct tb_err *e)
{
	return xdisp_put(ifindex, mode, 0, prog_fd, prio, frags, e);
}

int xdisp_replace(int ifindex, int mode, __u32 old_id, int new_fd, unsigned int prio, bool frags,
		  struct tb_err *e)
{
	return xdisp_put(ifindex, mode, old_id, new_fd, prio, frags, e);
}
