// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * zonefuse: the one binary. Subcommands dispatch to cli_*.c.
 */
#include <libgen.h>
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
	{ "mkfs", cli_mkfs, "make a file system" },
	{ "mount", cli_mount, "mount a file system" },
	{ "fsck", cli_fsck, "check (and repair) a file system" },
	{ "label", cli_label, "show or change the label" },
	{ "probe", cli_probe, "say whether a device holds zonefuse (as blkid)" },
	{ "scrub", cli_scrub, "read all file data and check its checksums" },
	{ "stat", cli_stat, "space, zones, write amplification, wear" },
	{ "dump", cli_dump, "the namespace and each file's extents" },
};

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: zonefuse COMMAND [ARGS]  (zonefuse COMMAND --help for more)\n\n");
	for (i = 0; i < sizeof(cli_cmds) / sizeof(cli_cmds[0]); i++)
		fprintf(f, "  %-8s %s\n", cli_cmds[i].name, cli_cmds[i].what);
	fprintf(f, "\nEvery command, and zonefuse itself, takes -V or --version.\n");
}

int main(int argc, char **argv)
{
	const char *prog = basename(argv[0]);
	size_t i;

	/*
	 * Installed as mkfs.zonefuse, fsck.zonefuse and mount.zonefuse too,
	 * and as fsck.fuse.zonefuse, mount.fuse.zonefuse and the umount
	 * helpers: util-linux looks for TOOL.TYPE, and an fstab line or a
	 * mount of a FUSE file system has the type fuse.zonefuse.
	 */
	if (!strcmp(prog, "mkfs.zonefuse"))
		return cli_mkfs(argc, argv);
	if (!strcmp(prog, "fsck.zonefuse") || !strcmp(prog, "fsck.fuse.zonefuse"))
		return cli_fsck(argc, argv);
	if (!strcmp(prog, "mount.zonefuse") ||
	    !strcmp(prog, "mount.fuse.zonefuse"))
		return cli_mount_helper(argc, argv);
	/*
	 * umount(8) runs umount.zonefuse for helper=zonefuse in utab, or
	 * umount.TYPE with TYPE as mountinfo says it.
	 */
	if (!strcmp(prog, "umount.zonefuse") ||
	    !strcmp(prog, "umount.fuse.zonefuse") ||
	    !strcmp(prog, "umount.fuseblk.zonefuse"))
		return cli_umount_helper(argc, argv);
	if (argc < 2) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V"))
		return cli_version();
	for (i = 0; i < sizeof(cli_cmds) / sizeof(cli_cmds[0]); i++)
		if (!strcmp(argv[1], cli_cmds[i].name))
			return cli_cmds[i].fn(argc - 1, argv + 1);
	/* mount.fuse3 runs "zonefuse DEVICE DIR -o OPTIONS". */
	if (argc >= 3 && argv[1][0] != '-' && argv[2][0] != '-')
		return cli_mount(argc, argv);
	fprintf(stderr, "zonefuse: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return CLI_EXIT_USAGE;
}
