// SPDX-License-Identifier: GPL-2.0
/* Opening an attached device's pins for a command: its lock, and errors
 * that say what to do about pins of another build. */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include "view/output.h"
#include "lib/state.h"
#include "lib/takeover.h"
#include "cli/tbctl.h"

int bpffs_ready(const char *what)
{
	int err = bpffs_ensure();

	if (err)
		out_error("%s: bpffs unavailable at %s: %s", what, TB_BPFFS, bpffs_error(err));
	return err != 0;
}

int device_lock(const char *cmd, const char *dev, bool lock)
{
	char what[IF_NAMESIZE + 64];
	int fd;

	snprintf(what, sizeof(what), "%s dev %s", cmd, dev);
	if (bpffs_ready(what))
		return 1;
	fd = lock ? state_lock(dev) : 0;
	if (fd == -ENODEV) {
		out_error("%s dev %s: no such device", cmd, dev);
		return 1;
	}
	if (fd < 0) {
		out_error("%s dev %s: lock %s: %s", cmd, dev, TB_LOCK_DIR, strerror(-fd));
		return 1;
	}
	return 0;
}

int device_take_over(const char *cmd, const char *dev, enum takeover_reach reach)
{
	int err = takeover_locked(dev, reach);

	if (err == -ENODEV)
		err = 0;
	if (err < 0) {
		out_error("%s dev %s: take over the pins an earlier release keyed by the name alone: %s", cmd, dev,
			  strerror(-err));
		return 1;
	}
	return 0;
}

static int open_maps(const char *cmd, const char *dev, struct tb_maps *m, int *config, bool lock)
{
	int err;

	if (device_lock(cmd, dev, lock) || device_take_over(cmd, dev, TAKE_USABLE))
		return 1;
	err = m ? state_open(dev, m) : state_open_config(dev, config);
	if (err) {
		char why[256];

		out_error("%s dev %s: %s", cmd, dev, state_open_why(dev, err, why, sizeof(why)));
		return 1;
	}
	return 0;
}

int open_attached(const char *cmd, const char *dev, struct tb_maps *m)
{
	return open_maps(cmd, dev, m, NULL, true);
}

int open_attached_ro(const char *cmd, const char *dev, struct tb_maps *m)
{
	return open_maps(cmd, dev, m, NULL, false);
}

int open_attached_config(const char *cmd, const char *dev, int *fd)
{
	return open_maps(cmd, dev, NULL, fd, true);
}
