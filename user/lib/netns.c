// SPDX-License-Identifier: GPL-2.0
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "lib/netns.h"

#define NETNS_RUN_DIR "/var/run/netns"

__u64 netns_self(void)
{
	struct stat st;

	return stat("/proc/self/ns/net", &st) ? 0 : st.st_ino;
}

bool netns_named(__u64 ino, char *name, size_t len)
{
	char path[sizeof(NETNS_RUN_DIR) + 258];
	DIR *d = opendir(NETNS_RUN_DIR);
	struct dirent *e;
	struct stat st;
	bool found = false;

	while (d && !found && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", NETNS_RUN_DIR, e->d_name);
		if (!stat(path, &st) && st.st_ino == ino) {
			snprintf(name, len, "%s", e->d_name);
			found = true;
		}
	}
	if (d)
		closedir(d);
	return found;
}

void netns_label(__u64 ino, char *buf, size_t len)
{
	if (!netns_named(ino, buf, len))
		snprintf(buf, len, "net:[%llu]", (unsigned long long)ino);
}

int netns_resolve(const char *what, __u64 *ino)
{
	char path[sizeof(NETNS_RUN_DIR) + 258];
	const char *digits = what;
	struct stat st;
	char *end;

	if (!strncmp(what, "net:[", 5))
		digits = what + 5;
	if (isdigit((unsigned char)*digits)) {
		*ino = strtoull(digits, &end, 10);
		if (!strcmp(end, digits == what ? "" : "]") && *ino)
			return 0;
	}
	if (strchr(what, '/') || strlen(what) > 255)
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/%s", NETNS_RUN_DIR, what);
	if (stat(path, &st))
		return -ENOENT;
	*ino = st.st_ino;
	return 0;
}

int netns_enter(const char *name)
{
	char path[sizeof(NETNS_RUN_DIR) + 258];
	int fd, err = 0;

	if (strchr(name, '/') || strlen(name) > 255)
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/%s", NETNS_RUN_DIR, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (setns(fd, CLONE_NEWNET))
		err = -errno;
	close(fd);
	return err;
}
