// SPDX-License-Identifier: GPL-2.0
/* tbctl: the global options, then one command, or -batch FILE. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "view/output.h"
#include "lib/devkey.h"
#include "lib/netns.h"
#include "cli/tbctl.h"


/* -n NS: a command that hooks (attach, detach) enters NS, as ip -n does;
 * the others, and detach where NS cannot be entered (its inode given,
 * or a namespace deleted since), key its devices' pins to NS and see
 * them as another namespace's. */
static int use_netns(const char *netns, const struct command *cmd)
{
	__u64 ino;
	int err;

	if (netns_resolve(netns, &ino)) {
		out_error("-n %s: no such network namespace (an ip netns name, or its inode)", netns);
		return EXIT_USAGE;
	}
	if (cmd->flags & (CMD_ATTACH | CMD_DETACH)) {
		err = netns_enter(netns);
		if (!err)
			return 0;
		if (cmd->flags & CMD_ATTACH) {
			out_error("-n %s: enter the network namespace to attach there: %s", netns,
				  err == -ENOENT ? "it has no ip netns name" : strerror(-err));
			return 1;
		}
	}
	devkey_set_netns(ino);
	return 0;
}

int main(int argc, char **argv)
{
	/* "-batch" is one word with one dash, as in ip(8): long options
	 * may take one dash, and the short ones are still theirs. */
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },    { "pretty", no_argument, NULL, 'p' },
		{ "verbose", no_argument, NULL, 'v' }, { "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' }, { "batch", required_argument, NULL, 'b' },
		{ "netns", required_argument, NULL, 'n' }, { 0 },
	};
	const char *batch = NULL, *netns = NULL;
	struct cmd_line l;
	int c, err;

	opterr = 0;
	/* "+": the options end at the command, whose own words may look
	 * like options (top's -n). */
	while ((c = getopt_long_only(argc, argv, "+:jpvhVn:", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			out.json = 1;
			break;
		case 'p':
			out.pretty = 1;
			break;
		case 'v':
			out.verbose++;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("tbctl %s (libbpf %s)\n", TBCTL_VERSION, libbpf_version_string());
			return 0;
		case 'b':
			batch = optarg;
			break;
		case 'n':
			netns = optarg;
			break;
		case ':':
			out_error("%s needs %s", argv[optind - 1],
				  optopt == 'n' ? "a network namespace" : "a file name (or - for stdin)");
			return EXIT_USAGE;
		default:
			out_error("unknown option \"%s\" (try \"tbctl --help\")", argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	out_libbpf_setup();
	if (batch) {
		if (optind < argc || netns) {
			out_error(netns ? "-batch takes no -n: run it in the namespace (nsenter --net=...)"
					: "-batch takes no command on the command line");
			return EXIT_USAGE;
		}
		return run_batch(batch);
	}
	if (optind >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	err = parse_command(argc - optind, argv + optind, &l);
	if (!err && netns)
		err = use_netns(netns, l.cmd);
	if (!err)
		err = run_command(&l);
	line_free(&l);
	return err;
}
