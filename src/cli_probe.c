// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * zonefuse probe [--udev] DEVICE: what blkid(8) would say of DEVICE if
 * libblkid knew zonefuse.
 *
 * It does not, and util-linux 2.38 has no way to teach it, so udev's own
 * blkid builtin sets no ID_FS_* for a zonefuse device: no
 * /dev/disk/by-uuid or by-label link, nothing in `lsblk -f`. The udev rule
 * installed beside the binary (udev/64-zonefuse.rules.in) runs
 * `zonefuse probe --udev` on each zoned block device and imports what it
 * prints, the same properties, encoded the same way (libblkid's
 * blkid_safe_string() and blkid_encode_string(), which the builtin uses),
 * so those links and `lsblk -f` work as for any other file system.
 */
#include <blkid/blkid.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "zonefuse/util.h"
#include "zonefuse/zfs.h"

/* blkid(8)'s status for "nothing found": the udev rule then adds nothing. */
#define PROBE_EXIT_NONE 2

static void probe_usage(FILE *f)
{
	fprintf(f,
		"usage: zonefuse probe [--udev] DEVICE\n"
		"Say whether DEVICE holds a zonefuse file system, and its UUID and\n"
		"label, as blkid(8) says it of the file systems it knows:\n"
		"  DEVICE: UUID=\"...\" LABEL=\"...\" TYPE=\"zonefuse\"\n"
		"Exit 0 when it holds one, 2 when it holds none, 1 when DEVICE cannot\n"
		"be read. The superblock is read without a lock: a mounted device\n"
		"can be probed.\n"
		"\n"
		"  --udev         print udev properties (ID_FS_TYPE, ID_FS_USAGE,\n"
		"                 ID_FS_UUID, ID_FS_UUID_ENC, ID_FS_LABEL,\n"
		"                 ID_FS_LABEL_ENC) for IMPORT{program} in a udev rule\n"
		"  -V, --version  print the version\n");
}

/* One udev property, raw and as the builtin writes it, from @value. */
static void probe_udev_pair(const char *key, const char *value)
{
	/* Each byte may become "\xNN": 4 bytes, and the NUL. */
	char s[4 * ZFS_LABEL_MAX + 64];

	if (!value[0])
		return;
	if (!blkid_safe_string(value, s, sizeof(s)))
		printf("ID_FS_%s=%s\n", key, s);
	if (!blkid_encode_string(value, s, sizeof(s)))
		printf("ID_FS_%s_ENC=%s\n", key, s);
}

/* blkid's value quoting: '"' and '\\' escaped with a backslash. */
static void probe_quoted(const char *key, const char *value)
{
	printf(" %s=\"", key);
	for (; *value; value++) {
		if (*value == '"' || *value == '\\')
			putchar('\\');
		putchar(*value);
	}
	putchar('"');
}

int cli_probe(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "udev", no_argument, NULL, 'u' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	char err[512] = "", uuid[37];
	struct zfs_ident id;
	bool udev = false;
	int c, ret;

	optind = 1;
	while ((c = getopt_long(argc, argv, "hV", opts, NULL)) != -1) {
		switch (c) {
		case 'u':
			udev = true;
			break;
		case 'V':
			return cli_version();
		case 'h':
			probe_usage(stdout);
			return 0;
		default:
			probe_usage(stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if (argc - optind != 1) {
		cli_error("probe", "expected one DEVICE");
		probe_usage(stderr);
		return CLI_EXIT_USAGE;
	}
	ret = zfs_read_ident(argv[optind], &id, err, sizeof(err));
	/* No superblock, no emulator header, or a disk that is not zoned. */
	if (ret == -EMEDIUMTYPE || ret == -ENOTBLK)
		return PROBE_EXIT_NONE;
	if (ret) {
		cli_error("probe", "%s", err[0] ? err : strerror(-ret));
		return 1;
	}
	zutil_uuid_str(id.uuid, uuid);
	if (udev) {
		printf("ID_FS_TYPE=zonefuse\nID_FS_USAGE=filesystem\n");
		probe_udev_pair("UUID", uuid);
		probe_udev_pair("LABEL", id.label);
		return 0;
	}
	printf("%s:", argv[optind]);
	probe_quoted("UUID", uuid);
	if (id.label[0])
		probe_quoted("LABEL", id.label);
	probe_quoted("TYPE", "zonefuse");
	putchar('\n');
	return 0;
}
