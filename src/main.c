// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * zonefuse: the one binary. Subcommands dispatch to cli_*.c.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *what;
} cli_cmds[] = {
	{ "emu", cli_emu, "create an emulated zoned device image" },
	{ "zones", cli_zones, "report the zones of a device" },
};

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: zonefuse COMMAND [ARGS]  (zonefuse COMMAND --help for more)\n\n");
	for (i = 0; i < sizeof(cli_cmds) / sizeof(cli_cmds[0]); i++)
		fprintf(f, "  %-8s %s\n", cli_cmds[i].name, cli_cmds[i].what);
}

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("zonefuse %s\n", ZONEFUSE_VERSION);
		return 0;
	}
	for (i = 0; i < sizeof(cli_cmds) / sizeof(cli_cmds[0]); i++)
		if (!strcmp(argv[1], cli_cmds[i].name))
			return cli_cmds[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "zonefuse: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return CLI_EXIT_USAGE;
}
