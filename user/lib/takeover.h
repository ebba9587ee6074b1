/* SPDX-License-Identifier: GPL-2.0 */
/* Pins an earlier release keyed by a device's name alone (devkey.h) made
 * the pins of the namespace whose device they police: renamed within
 * bpffs, so the program, its rules, buckets and counters carry on. */
#ifndef TB_TAKEOVER_H
#define TB_TAKEOVER_H

/* Which unkeyed pins a command takes over: only those it can use, so
 * that pins a command refuses stay where the build that made them finds
 * them. */
enum takeover_reach {
	TAKE_USABLE,    /* this build's layout, policing dev here */
	/* attach: also the layout it upgrades, and pins no program uses any
	 * more while dev is here (a device made again; it opens programs by
	 * id to tell). attach ... replace starts over on older ones where
	 * they are. */
	TAKE_UPGRADE,
};

/* Take over dev's unkeyed pins into this namespace, under dev's lock,
 * when the program on the hook their config names here is theirs (or as
 * reach allows). Those that police here but are out of reach are read
 * where they are from then on (devkey_keep_unkeyed): the command refuses
 * them, naming what to do, and the build that made them still finds
 * them. 1 when taken over, 0 when not, or -errno. */
int takeover_pins(const char *dev, enum takeover_reach reach);
/* takeover_pins under dev's lock, taken for the while when this process
 * does not hold it. */
int takeover_locked(const char *dev, enum takeover_reach reach);
/* The same for every device of this namespace that has unkeyed pins,
 * each under its lock. */
void takeover_all(void);

#endif
