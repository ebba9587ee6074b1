// SPDX-License-Identifier: GPL-2.0
/* tbctl: the global options, then one command, or -batch FILE. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "view/output.h"
#include "cli/tbctl.h"


int main(int argc, char **argv)
{
	/* "-batch" is one word with one dash, as in ip(8): long options
	 * may take one dash, and the short ones are still theirs. */
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },    { "pretty", no_argument, NULL, 'p' },
		{ "verbose", no_argument, NULL, 'v' }, { "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' }, { "batch", required_argument, NULL, 'b' },
		{ 0 },
	};
	const char *batch = NULL;
	struct cmd_line l;
	int c, err;

	opterr = 0;
	/* "+": the options end at the command, whose own words may look
	 * like options (top's -n). */
	while ((c = getopt_long_only(argc, argv, "+:jpvhV", opts, NULL)) != -1) {
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
		case ':':
			out_error("%s needs a file name (or - for stdin)", argv[optind - 1]);
			return EXIT_USAGE;
		default:
			out_error("unknown option \"%s\" (try \"tbctl --help\")", argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	out_libbpf_setup();
	if (batch) {
		if (optind < argc) {
			out_error("-batch takes no command on the command line");
			return EXIT_USAGE;
		}
		return run_batch(batch);
	}
	if (optind >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	err = parse_command(argc - optind, argv + optind, &l);
	if (!err)
		err = run_command(&l);
	line_free(&l);
	return err;
}
