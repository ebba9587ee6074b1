// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "lib/hook.h"
#include "lib/devkey.h"
#include "lib/state.h"
#include "lib/takeover.h"

/* Whether no program uses the pinned config fd: waited for up to 2 s,
 * as the kernel frees a deleted device's program shortly after it. */
static bool unused(int fd)
{
	for (int i = 0; i < 100; i++) {
		if (!map_user(fd))
			return true;
		usleep(20000);
	}
	return false;
}

/* What the unkeyed pins of key are to this namespace. */
enum unkeyed_pins {
	ELSEWHERE,      /* another namespace's, or no one's, for another to take */
	OURS,           /* ours to take over */
	OURS_REFUSED,   /* police here, but of a layout reach does not take */
};

/* Whether reach takes pins of config cfg's layout. */
static bool layout_in_reach(const struct tb_config *cfg, enum takeover_reach reach)
{
	unsigned int layout = cfg->layout ? cfg->layout : 1;

	if (layout > TB_LAYOUT)
		return false;
	return layout == TB_LAYOUT || (reach == TAKE_UPGRADE && layout == TB_LAYOUT - 1);
}

/* Ours when the program on the hook the config names here is theirs, or
 * (TAKE_UPGRADE on) when dev is here and no program uses them any more.
 * Pins another namespace's device polices with are that namespace's. */
static enum unkeyed_pins unkeyed_pins(const char *key, enum takeover_reach reach)
{
	enum unkeyed_pins what = ELSEWHERE;
	struct tb_config cfg;
	bool here;
	int fd;

	if (state_open_config(key, &fd))
		return ELSEWHERE;
	if (!state_config_get(fd, &cfg) && cfg.attached && cfg.prog_id) {
		here = hooked_prog(key, &cfg) == cfg.prog_id;
		if (!layout_in_reach(&cfg, reach))
			what = here ? OURS_REFUSED : ELSEWHERE;
		else if (here || (reach != TAKE_USABLE && devkey_ifindex(key) && unused(fd)))
			what = OURS;
	}
	close(fd);
	return what;
}

/* Where dev's unkeyed pins are, and where this namespace's would be:
 * whether there are the first and not the second. */
static bool unkeyed_only(const char *dev, char *unkeyed, char *from, char *to)
{
	char name[IF_NAMESIZE];

	devkey_dev(dev, name);
	snprintf(unkeyed, DEVKEY_MAX, "%s:", name);
	state_dir(unkeyed, from, PATH_MAX);
	state_dir(name, to, PATH_MAX);
	return !access(from, F_OK) && access(to, F_OK);
}

int takeover_pins(const char *dev, enum takeover_reach reach)
{
	char unkeyed[DEVKEY_MAX], from[PATH_MAX], to[PATH_MAX], name[IF_NAMESIZE];

	if (!unkeyed_only(dev, unkeyed, from, to))
		return 0;
	switch (unkeyed_pins(unkeyed, reach)) {
	case OURS:
		return rename(from, to) ? -errno : 1;
	case OURS_REFUSED:
		devkey_dev(dev, name);
		devkey_keep_unkeyed(name);
		return 0;
	default:
		return 0;
	}
}

int takeover_locked(const char *dev, enum takeover_reach reach)
{
	char unkeyed[DEVKEY_MAX], from[PATH_MAX], to[PATH_MAX];
	bool held = state_locked(dev);
	int err;

	if (!unkeyed_only(dev, unkeyed, from, to))
		return 0;
	err = held ? 0 : state_lock(dev);
	if (err < 0)
		return err;
	err = takeover_pins(dev, reach);
	if (!held)
		state_unlock(dev);
	return err;
}

static int take_one(const char *key, void *ctx)
{
	char name[IF_NAMESIZE];

	(void)ctx;
	if (!devkey_unkeyed(key) || !devkey_ifindex(key))
		return 0;
	devkey_dev(key, name);
	takeover_locked(name, TAKE_USABLE);
	return 0;
}

void takeover_all(void)
{
	state_foreach_device(take_one, NULL);
}
