/* SPDX-License-Identifier: GPL-2.0 */
/* Where an attachment is: a device name in a network namespace. Its pins
 * and its lock are keyed "DEV:INO", INO the namespace (netns.h), so eth0
 * in ten namespaces is ten attachments; no device name holds a ':'. A
 * command names a device bare, meaning its own namespace's; "DEV:" names
 * the pins an earlier release keyed by the name alone, which tbctl takes
 * over into the namespace whose device they police (takeover.h). */
#ifndef TB_DEVKEY_H
#define TB_DEVKEY_H

#include <stdbool.h>
#include <stddef.h>
#include <net/if.h>
#include <linux/types.h>

#define DEVKEY_MAX (IF_NAMESIZE + 24)

/* Key bare names to namespace ino from now on (tbctl -n, for commands
 * that need not enter it): its devices are then out of sight. */
void devkey_set_netns(__u64 ino);
/* Key bare name dev to the pins an earlier release keyed by the name
 * alone, from now on: pins of a layout this build refuses or only
 * detaches, which it reads where that release finds them (takeover.h). */
void devkey_keep_unkeyed(const char *dev);
/* Key dev to this namespace again, its unkeyed pins removed. */
void devkey_drop_unkeyed(const char *dev);
/* dev's key: a bare name keyed to this namespace (or devkey_set_netns's,
 * or devkey_keep_unkeyed's), a key as it is. */
void devkey_make(const char *dev, char *key, size_t len);
/* The device name of key (or of a bare name), into dev[IF_NAMESIZE]. */
void devkey_dev(const char *key, char *dev);
/* Its namespace; 0 for the pins of an earlier release. */
__u64 devkey_netns(const char *key);
/* Whether key is of the pins an earlier release keyed by name alone. */
bool devkey_unkeyed(const char *key);
/* Whether key is of the namespace the command works on: this one, or
 * -n's (devkey_set_netns); what names it needs no namespace. */
bool devkey_ours(const char *key);
/* Whether key is this namespace's (pins keyed by name alone may be): its
 * device in sight. */
bool devkey_here(const char *key);
/* The ifindex of key's device here; 0 when it is another namespace's, or
 * this one has no such device. */
unsigned int devkey_ifindex(const char *key);
/* How a message names key's device: its name, followed for another
 * namespace's (or unkeyed pins) by that namespace (netns_label). */
#define DEVKEY_LABEL_MAX (IF_NAMESIZE + 96)
void devkey_label(const char *key, char *buf, size_t len);
/* A device name as a command may give it: 0, or -EINVAL when it cannot
 * name a device (empty, too long, or holding a '/', a ':' or a space). */
int devkey_name_valid(const char *dev);

#endif
