// SPDX-License-Identifier: GPL-2.0
/* devkey.c and netns.c: an attachment's key, DEV:INODE, as the pins and
 * locks are named by it, and the namespaces -n names. */
#include <stdio.h>
#include <string.h>
#include "lib/devkey.h"
#include "lib/netns.h"
#include "../check.h"

static void bare_names_key_to_this_namespace(void)
{
	char key[DEVKEY_MAX], want[DEVKEY_MAX], dev[IF_NAMESIZE];
	__u64 self = netns_self();

	CHECK(self != 0, "this namespace's inode from /proc/self/ns/net");
	devkey_make("eth0", key, sizeof(key));
	snprintf(want, sizeof(want), "eth0:%llu", (unsigned long long)self);
	CHECK(!strcmp(key, want), "eth0 keyed %s, want %s", key, want);
	CHECK(devkey_here(key), "this namespace's key is here");
	CHECK(!devkey_unkeyed(key), "and keyed");
	CHECK_EQ(devkey_netns(key), self, "its namespace");
	devkey_dev(key, dev);
	CHECK(!strcmp(dev, "eth0"), "its device %s", dev);
	devkey_make("eth0:42", key, sizeof(key));
	CHECK(!strcmp(key, "eth0:42"), "a key stays as it is: %s", key);
	CHECK(!devkey_here(key), "another namespace's is not here");
	CHECK_EQ(devkey_ifindex(key), 0, "nor its device");
	CHECK_EQ(devkey_netns(key), 42, "its namespace");
}

static void unkeyed_pins_are_the_names_alone(void)
{
	char dev[IF_NAMESIZE], label[DEVKEY_LABEL_MAX];

	CHECK(devkey_unkeyed("eth0:"), "DEV: is an earlier release's");
	CHECK(devkey_here("eth0:"), "read by the name here, as that release did");
	devkey_dev("eth0:", dev);
	CHECK(!strcmp(dev, "eth0"), "device %s", dev);
	devkey_label("eth0:", label, sizeof(label));
	CHECK(!strcmp(label, "eth0 (pinned by name alone)"), "said as %s", label);
	devkey_label("eth0:42", label, sizeof(label));
	CHECK(!strcmp(label, "eth0 (netns net:[42])"), "another namespace said as %s", label);
}

static void device_names_as_the_kernel_takes_them(void)
{
	CHECK_EQ(devkey_name_valid("eth0"), 0, "eth0");
	CHECK_EQ(devkey_name_valid("veth-a.100"), 0, "dots and dashes");
	CHECK_EQ(devkey_name_valid("abcdefghijklmno"), 0, "15 characters");
	CHECK(devkey_name_valid("abcdefghijklmnop") < 0, "16 characters");
	CHECK(devkey_name_valid("") < 0, "empty");
	CHECK(devkey_name_valid("a:b") < 0, "a ':' (the key's separator)");
	CHECK(devkey_name_valid("a/b") < 0, "a '/'");
	CHECK(devkey_name_valid("a b") < 0, "a space");
	CHECK(devkey_name_valid("..") < 0, "..");
}

static void namespaces_by_inode_or_name(void)
{
	__u64 ino = 0;

	CHECK_EQ(netns_resolve("4026531840", &ino), 0, "an inode");
	CHECK_EQ(ino, 4026531840ULL, "read");
	CHECK_EQ(netns_resolve("net:[4026531841]", &ino), 0, "as /proc shows it");
	CHECK_EQ(ino, 4026531841ULL, "read");
	CHECK(netns_resolve("net:[12", &ino) < 0, "unclosed");
	CHECK(netns_resolve("0", &ino) < 0, "inode 0");
	CHECK(netns_resolve("no-such-namespace-here", &ino) < 0, "a name ip netns lacks");
	CHECK(netns_resolve("../../proc/self/ns/net", &ino) < 0, "a path");
	devkey_set_netns(42);
	{
		char key[DEVKEY_MAX];

		devkey_make("eth0", key, sizeof(key));
		CHECK(!strcmp(key, "eth0:42"), "-n keys bare names to its namespace: %s", key);
		CHECK(!devkey_here(key), "whose devices are out of sight");
	}
	devkey_set_netns(0);
}

TEST_LIST(
	T(bare_names_key_to_this_namespace),
	T(unkeyed_pins_are_the_names_alone),
	T(device_names_as_the_kernel_takes_them),
	T(namespaces_by_inode_or_name),
);

int main(int argc, char **argv)
{
	return RUN("devkey");
}
