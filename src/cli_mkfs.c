// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * zonefuse mkfs DEVICE [--force] [--label L] [--uuid UUID] [--reserve PCT]
 *                      [--metadata-copies N]
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "zonefuse/util.h"
#include "zonefuse/zfs.h"

static void mkfs_usage(FILE *f)
{
	fprintf(f,
		"usage: zonefuse mkfs DEVICE [--force] [--label LABEL] [--uuid UUID]\n"
		"                     [--reserve PCT] [--metadata-copies N]\n"
		"Make a zonefuse file system on a zoned block device or an emulator image.\n"
		"\n"
		"  -f, --force      overwrite an existing file system\n"
		"  -L, --label LABEL\n"
		"                   a name: up to 63 bytes of UTF-8, no control\n"
		"                   characters, no '/'\n"
		"  -U, --uuid UUID  the file system's UUID (8-4-4-4-12 hex digits), or\n"
		"                   'random' (the default)\n"
		"  --reserve PCT    share of zones kept free for reclaim and the journal\n"
		"                   (default 1%%, at least %u zones)\n"
		"  --metadata-copies N\n"
		"                   copies of the metadata journal, each in zones of its\n"
		"                   own: 2 (the default; needs 3 active zones, else 1)\n"
		"                   or 1\n"
		"  -V, --version    print the version\n",
		ZFS_MIN_RESERVE);
}

struct mkfs_progress {
	bool tty;
	uint64_t start;
	bool shown;
};

static void mkfs_progress(void *arg, uint32_t done, uint32_t total)
{
	struct mkfs_progress *p = arg;

	/* Only on a terminal, and only once it has taken a second. */
	if (!p->tty || zutil_now_mono_ns() - p->start < 1000000000ull)
		return;
	fprintf(stderr, "\rresetting zones: %u/%u", done, total);
	p->shown = true;
}

int cli_mkfs(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "force", no_argument, NULL, 'f' },
		{ "label", required_argument, NULL, 'L' },
		{ "uuid", required_argument, NULL, 'U' },
		{ "reserve", required_argument, NULL, 'r' },
		{ "metadata-copies", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct zfs_mkfs_opts o = { .reserve_pct = -1, .wait_busy = true };
	struct mkfs_progress prog = { 0 };
	struct zfs_mkfs_info info;
	char err[512] = "", a[32], b[32], c[32];
	char ustr[ZUTIL_UUID_STR_LEN + 1];
	uint32_t pct, copies;
	uint8_t uuid[16];
	int opt, ret;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "fL:U:hV", opts, NULL)) != -1) {
		switch (opt) {
		case 'f':
			o.force = true;
			break;
		case 'L':
			if (zfs_label_check(optarg, err, sizeof(err))) {
				cli_error("mkfs", "--label: %s", err);
				return CLI_EXIT_USAGE;
			}
			o.label = optarg;
			break;
		case 'U':
			if (!strcmp(optarg, "random")) {
				o.uuid = NULL;
				break;
			}
			if (zutil_uuid_parse(optarg, uuid)) {
				cli_error("mkfs",
					  "--uuid: '%s' is not a UUID: give 8-4-4-4-12 hex digits (as uuidgen prints) or 'random'",
					  optarg);
				return CLI_EXIT_USAGE;
			}
			if (!memcmp(uuid, (uint8_t[16]){ 0 }, sizeof(uuid))) {
				cli_error("mkfs",
					  "--uuid: the nil UUID names no file system: give another, or 'random'");
				return CLI_EXIT_USAGE;
			}
			o.uuid = uuid;
			break;
		case 'r':
			if (cli_u32_arg("mkfs", "--reserve", optarg, &pct))
				return CLI_EXIT_USAGE;
			if (pct > 50) {
				cli_error("mkfs", "--reserve %u%%: keep it at 50%% or less",
					  pct);
				return CLI_EXIT_USAGE;
			}
			o.reserve_pct = (int)pct;
			break;
		case 'c':
			if (cli_u32_arg("mkfs", "--metadata-copies", optarg,
					&copies))
				return CLI_EXIT_USAGE;
			if (copies < 1 || copies > 2) {
				cli_error("mkfs", "--metadata-copies %u: give 1 or 2",
					  copies);
				return CLI_EXIT_USAGE;
			}
			o.copies = copies;
			break;
		case 'V':
			return cli_version();
		case 'h':
			mkfs_usage(stdout);
			return 0;
		default:
			mkfs_usage(stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind + 1 != argc) {
		cli_error("mkfs", "expected one DEVICE");
		mkfs_usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (cli_refuse_mounted("mkfs", argv[optind]))
		return 1;
	prog.tty = isatty(STDERR_FILENO);
	prog.start = zutil_now_mono_ns();
	o.progress = mkfs_progress;
	o.arg = &prog;
	ret = zfs_mkfs(argv[optind], &o, &info, err, sizeof(err));
	if (prog.shown)
		fputc('\n', stderr);
	if (ret) {
		cli_error("mkfs", "%s", err[0] ? err : strerror(-ret));
		return 1;
	}
	printf("%s: zonefuse file system made\n", argv[optind]);
	printf("  uuid         %s\n", zutil_uuid_str(info.uuid, ustr));
	printf("  label        %s\n", o.label ? o.label : "");
	printf("  zones        %u of %s (capacity %s), %u conventional, block size %u\n",
	       info.nr_zones, zutil_size_str(info.zone_size, a, sizeof(a)),
	       zutil_size_str(info.zone_capacity, b, sizeof(b)), info.nr_conv,
	       info.block_size);
	printf("  superblocks  zones %u and %u\n", info.super_zone[0],
	       info.super_zone[1]);
	printf("  metadata     %u cop%s of the journal%s\n", info.copies,
	       info.copies > 1 ? "ies" : "y",
	       info.copies > 1 ? " (a mirror)" : " (no mirror)");
	printf("  reserved     %u zones (kept free for reclaim and the journal)\n",
	       info.reserve_zones);
	printf("  usable       %s\n",
	       zutil_size_str(info.usable_bytes, c, sizeof(c)));
	return 0;
}
