// SPDX-License-Identifier: GPL-2.0
/* detach: tbctl's program off the device, with the qdiscs it made and
 * its pins; found by the device alone where no pins are in sight. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include "view/output.h"
#include "lib/devkey.h"
#include "lib/hook.h"
#include "lib/state.h"
#include "cli/tbctl.h"

/* Detach must not take the program off and then fail to remove the pins
 * (a read-only bpffs): it checks first, and changes nothing if it cannot. */
static int pins_removable(const char *dev)
{
	char dir[PATH_MAX], label[DEVKEY_LABEL_MAX];

	state_dir(dev, dir, sizeof(dir));
	if (access(dir, W_OK) && errno != ENOENT) {
		devkey_label(dev, label, sizeof(label));
		out_error("detach dev %s: cannot remove the pins in %s: %s", label, dir, strerror(errno));
		return 0;
	}
	return 1;
}

/* detach with no pins here: bpffs unmounted, or another mount
 * namespace's. tbctl's programs found on the device are removed; pins
 * another bpffs holds stay there (detach there removes them). */
static int detach_unpinned(const char *dev)
{
	struct hooked h[4];
	int ifindex = if_nametoindex(dev), n = ifindex ? hooked_anywhere(ifindex, h) : 0, rc = 0;

	if (!n) {
		out_error("detach dev %s: not attached", dev);
		return 1;
	}
	for (int i = 0; i < n; i++) {
		int err = unhook(ifindex, h[i].mode, h[i].id);

		if (err) {
			out_error("detach dev %s: remove tbctl's program (id %u, mode %s): %s", dev, h[i].id,
				  mode_names[h[i].mode], strerror(-err));
			rc = 1;
		} else {
			out_warn("detach dev %s: no pins in %s, but tbctl's program (id %u, mode %s) was on the "
				 "device: removed it (pins another bpffs holds stay there)", dev, TB_PIN_ROOT,
				 h[i].id, mode_names[h[i].mode]);
		}
	}
	return rc;
}

/* The program that may still police with key's pins, which are another
 * namespace's, out of sight of this one: its tcx link's, or any loaded
 * program that uses the config (the program of a device a namespace took
 * with it when it was deleted is gone). 0 when none. */
static __u32 still_policing(const char *key, const struct tb_config *cfg, int config_fd)
{
	return cfg->tcx ? hook_tcx_link(key) : map_user(config_fd);
}

/* tbctl -n NS detach, where NS cannot be entered: another namespace's
 * pins, removed once no program polices with them, as after the
 * namespace was deleted with tbctl attached. A namespace that still has
 * it detaches it itself. */
static int detach_elsewhere(const char *dev)
{
	char key[DEVKEY_MAX], label[DEVKEY_LABEL_MAX];
	struct tb_config cfg;
	__u32 id;
	int err, fd;

	devkey_make(dev, key, sizeof(key));
	devkey_label(key, label, sizeof(label));
	if (bpffs_ready("detach"))
		return 1;
	if (!state_pinned(key)) {
		out_error("detach dev %s: not attached", label);
		return 1;
	}
	if ((err = state_lock(key)) < 0) {
		out_error("detach dev %s: lock %s: %s", label, TB_LOCK_DIR, strerror(-err));
		return 1;
	}
	if (!pins_removable(key))
		return 1;
	err = state_open_config(key, &fd);
	if (!err) {
		err = state_config_get(fd, &cfg);
		id = err ? 0 : still_policing(key, &cfg, fd);
		close(fd);
		if (id) {
			out_error("detach dev %s: program %u still polices with its pins there; detach it in that "
				  "namespace", label, id);
			return 1;
		}
	}
	err = state_unpin(key, true);
	if (err)
		out_error("detach dev %s: remove pins: %s", label, strerror(-err));
	return err != 0;
}

static int run_detach(const void *opts)
{
	const struct cmd_target *a = opts;
	struct tb_config cfg;
	int err, fd;

	if (!devkey_here(a->dev))
		return detach_elsewhere(a->dev);
	if (device_lock("detach", a->dev, true) || device_take_over("detach", a->dev, TAKE_USABLE))
		return 1;
	if (!pins_removable(a->dev))
		return 1;
	if (state_unfinished(a->dev)) {
		/* Pins without a config: an attach killed while pinning. */
		err = state_unpin(a->dev, true);
		if (err)
			out_error("detach dev %s: remove pins: %s", a->dev, strerror(-err));
		return err != 0;
	}
	err = state_open_config(a->dev, &fd);
	if (err == -ENOENT && !state_pinned(a->dev))
		return detach_unpinned(a->dev);
	if (!err)
		close(fd);
	if (open_attached_config("detach", a->dev, &fd))
		return 1;
	err = state_config_get(fd, &cfg);
	close(fd);
	if (err) {
		out_error("detach dev %s: read pinned config: %s", a->dev, strerror(-err));
		return 1;
	}
	return remove_attached("detach", a->dev, &cfg);
}

const struct command cmd_detach = {
	.name = "detach",
	.usage = "dev DEV",
	.opts_size = sizeof(struct cmd_target),
	.parse = parse_dev_only,
	.run = run_detach,
	.flags = CMD_ATTACHED | CMD_DETACH | CMD_FINAL,
	.caps = CAPS_UNHOOK,
};
