// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/netns.h"
#include "lib/devkey.h"

static __u64 keyed_netns;
/* Names read by their unkeyed pins: a command names one device, a batch
 * a few. */
#define KEPT_UNKEYED 8
static char kept_unkeyed[KEPT_UNKEYED][IF_NAMESIZE];
static int nkept_unkeyed;

void devkey_keep_unkeyed(const char *dev)
{
	for (int i = 0; i < nkept_unkeyed; i++)
		if (!strcmp(kept_unkeyed[i], dev))
			return;
	if (nkept_unkeyed < KEPT_UNKEYED)
		snprintf(kept_unkeyed[nkept_unkeyed++], IF_NAMESIZE, "%s", dev);
}

void devkey_drop_unkeyed(const char *dev)
{
	for (int i = 0; i < nkept_unkeyed; i++)
		if (!strcmp(kept_unkeyed[i], dev)) {
			memcpy(kept_unkeyed[i], kept_unkeyed[--nkept_unkeyed], IF_NAMESIZE);
			return;
		}
}

static bool kept_as_unkeyed(const char *dev)
{
	for (int i = 0; i < nkept_unkeyed; i++)
		if (!strcmp(kept_unkeyed[i], dev))
			return true;
	return false;
}

void devkey_set_netns(__u64 ino)
{
	keyed_netns = ino;
}

void devkey_make(const char *dev, char *key, size_t len)
{
	if (strchr(dev, ':'))
		snprintf(key, len, "%s", dev);
	else if (kept_as_unkeyed(dev))
		snprintf(key, len, "%s:", dev);
	else
		snprintf(key, len, "%s:%llu", dev, (unsigned long long)(keyed_netns ? keyed_netns : netns_self()));
}

void devkey_dev(const char *key, char *dev)
{
	size_t n = strcspn(key, ":");

	if (n >= IF_NAMESIZE)
		n = IF_NAMESIZE - 1;
	memcpy(dev, key, n);
	dev[n] = 0;
}

__u64 devkey_netns(const char *key)
{
	const char *c = strchr(key, ':');

	if (!c)
		return keyed_netns ? keyed_netns : netns_self();
	return strtoull(c + 1, NULL, 10);
}

bool devkey_unkeyed(const char *key)
{
	const char *c = strchr(key, ':');

	return c && !c[1];
}

bool devkey_ours(const char *key)
{
	return devkey_unkeyed(key) || devkey_netns(key) == (keyed_netns ? keyed_netns : netns_self());
}

bool devkey_here(const char *key)
{
	return (devkey_unkeyed(key) && !keyed_netns) || devkey_netns(key) == netns_self();
}

unsigned int devkey_ifindex(const char *key)
{
	char dev[IF_NAMESIZE];

	if (!devkey_here(key))
		return 0;
	devkey_dev(key, dev);
	return if_nametoindex(dev);
}

int devkey_name_valid(const char *dev)
{
	size_t n = strlen(dev);

	if (!n || n >= IF_NAMESIZE || !strcmp(dev, ".") || !strcmp(dev, ".."))
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (dev[i] == '/' || dev[i] == ':' || isspace((unsigned char)dev[i]))
			return -EINVAL;
	return 0;
}

void devkey_label(const char *key, char *buf, size_t len)
{
	char dev[IF_NAMESIZE], ns[DEVKEY_LABEL_MAX - IF_NAMESIZE - 10];

	devkey_dev(key, dev);
	if (devkey_unkeyed(key)) {
		snprintf(buf, len, "%s (pinned by name alone)", dev);
	} else if (devkey_ours(key)) {
		snprintf(buf, len, "%s", dev);
	} else {
		netns_label(devkey_netns(key), ns, sizeof(ns));
		snprintf(buf, len, "%s (netns %s)", dev, ns);
	}
}
