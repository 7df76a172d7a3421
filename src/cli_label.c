// SPDX-License-Identifier: GPL-2.0-or-later
/* zonefuse label DEVICE [NEW-LABEL]: show or change the label (as e2label). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "zonefuse/zfs.h"

static void label_usage(FILE *f)
{
	fprintf(f,
		"usage: zonefuse label DEVICE [NEW-LABEL]\n"
		"Print the label of the file system on DEVICE, or set it to NEW-LABEL\n"
		"(up to 63 bytes of UTF-8, no control characters, no '/'; \"\" clears\n"
		"it). Setting it rewrites both superblock copies, one after the other;\n"
		"the device must not be mounted.\n"
		"\n"
		"  -V, --version  print the version\n");
}

static int label_set(const char *path, const char *label)
{
	struct zfs_opts o = { .wait_busy = true };
	char err[512] = "";
	struct zfs *fs;
	int ret;

	if (zfs_label_check(label, err, sizeof(err))) {
		cli_error("label", "%s", err);
		return CLI_EXIT_USAGE;
	}
	if (cli_refuse_mounted("label", path))
		return 1;
	ret = zfs_mount(path, &o, &fs, err, sizeof(err));
	if (ret) {
		cli_error("label", "%s", err[0] ? err : strerror(-ret));
		return 1;
	}
	ret = zfs_set_label(fs, label, err, sizeof(err));
	if (ret)
		cli_error("label", "%s", err);
	if (zfs_unmount(fs) && !ret) {
		cli_error("label", "%s: unmounting after the label change failed",
			  path);
		ret = -EIO;
	}
	return ret ? 1 : 0;
}

int cli_label(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct zfs_ident id;
	char err[512] = "";
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "hV", opts, NULL)) != -1) {
		switch (c) {
		case 'V':
			return cli_version();
		case 'h':
			label_usage(stdout);
			return 0;
		default:
			label_usage(stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind == argc || argc - optind > 2) {
		cli_error("label", "expected DEVICE [NEW-LABEL]");
		label_usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (argc - optind == 2)
		return label_set(argv[optind], argv[optind + 1]);
	if (zfs_read_ident(argv[optind], &id, err, sizeof(err))) {
		cli_error("label", "%s", err);
		return 1;
	}
	printf("%s\n", id.label);
	return 0;
}
