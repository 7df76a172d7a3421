// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * zonefuse emu create IMAGE --size SIZE [geometry options]
 * zonefuse emu media-error IMAGE [--offset OFF [--length LEN] | --clear]
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "zonefuse/util.h"
#include "zonefuse/zemu.h"

static void emu_usage(FILE *f)
{
	fprintf(f,
		"usage: zonefuse emu create IMAGE --size SIZE [options]\n"
		"Create an emulated zoned device in the regular file IMAGE (sparse).\n"
		"\n"
		"  --size SIZE            device size, a multiple of the zone size (required)\n"
		"  --zone-size SIZE       zone size (default 64M)\n"
		"  --zone-capacity SIZE   writable bytes per zone, <= zone size (default: zone size)\n"
		"  --max-open N           open zone limit, 0 = none (default 0)\n"
		"  --max-active N         active zone limit, 0 = none (default 0)\n"
		"  --conventional N       conventional zones at the start (default 0)\n"
		"  --block-size N         logical block size, 512 or 4096 (default 4096)\n"
		"SIZE takes a K, M, G or T suffix (powers of 1024).\n"
		"\n"
		"usage: zonefuse emu media-error IMAGE [--offset OFF [--length LEN] | --clear]\n"
		"Make device bytes of IMAGE unreadable (reads of them fail with EIO, as a\n"
		"drive's bad blocks do, until their zone is reset), list them, or clear them.\n"
		"\n"
		"  --offset OFF           first unreadable device byte\n"
		"  --length LEN           how many (default 4K)\n"
		"  --clear                make every byte readable again\n");
}

static int emu_create(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "zone-size", required_argument, NULL, 'z' },
		{ "zone-capacity", required_argument, NULL, 'c' },
		{ "max-open", required_argument, NULL, 'o' },
		{ "max-active", required_argument, NULL, 'a' },
		{ "conventional", required_argument, NULL, 'n' },
		{ "block-size", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct zemu_params p = { 0 };
	char err[512] = "", a[32], b[32];
	const char *img;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "hV", opts, NULL)) != -1) {
		int ret = 0;

		switch (c) {
		case 's':
			ret = cli_size_arg("emu", "--size", optarg, &p.size);
			break;
		case 'z':
			ret = cli_size_arg("emu", "--zone-size", optarg,
					   &p.zone_size);
			if (!ret && !p.zone_size) {
				cli_error("emu", "--zone-size must not be 0");
				ret = -1;
			}
			break;
		case 'c':
			ret = cli_size_arg("emu", "--zone-capacity", optarg,
					   &p.zone_capacity);
			if (!ret && !p.zone_capacity) {
				cli_error("emu", "--zone-capacity must not be 0");
				ret = -1;
			}
			break;
		case 'o':
			ret = cli_u32_arg("emu", "--max-open", optarg,
					  &p.max_open);
			break;
		case 'a':
			ret = cli_u32_arg("emu", "--max-active", optarg,
					  &p.max_active);
			break;
		case 'n':
			ret = cli_u32_arg("emu", "--conventional", optarg,
					  &p.nr_conv);
			break;
		case 'b':
			ret = cli_u32_arg("emu", "--block-size", optarg,
					  &p.block_size);
			if (!ret && !p.block_size) {
				cli_error("emu", "--block-size must be 512 or 4096");
				ret = -1;
			}
			break;
		case 'V':
			return cli_version();
		case 'h':
			emu_usage(stdout);
			return 0;
		default:
			emu_usage(stderr);
			return CLI_EXIT_USAGE;
		}
		if (ret)
			return CLI_EXIT_USAGE;
	}
	if (optind + 1 != argc) {
		cli_error("emu", optind >= argc ? "create: no IMAGE given" :
						 "create: one IMAGE only");
		emu_usage(stderr);
		return CLI_EXIT_USAGE;
	}
	img = argv[optind];
	if (!p.size) {
		cli_error("emu", "create: --size is required");
		return CLI_EXIT_USAGE;
	}
	if (zemu_check_params(&p, err, sizeof(err))) {
		cli_error("emu", "%s", err);
		return CLI_EXIT_USAGE;
	}
	if (zemu_create(img, &p, err, sizeof(err))) {
		cli_error("emu", "%s", err);
		return 1;
	}
	printf("%s: emulated zoned device, %s in %" PRIu64 " zones of %s (capacity %s), block size %u, %u conventional, max open %u, max active %u\n",
	       img, zutil_size_str(p.size, a, sizeof(a)), p.size / p.zone_size,
	       zutil_size_str(p.zone_size, b, sizeof(b)),
	       zutil_size_str(p.zone_capacity, err, sizeof(err)), p.block_size,
	       p.nr_conv, p.max_open, p.max_active);
	return 0;
}

static int emu_media_error(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "offset", required_argument, NULL, 'o' },
		{ "length", required_argument, NULL, 'l' },
		{ "clear", no_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct zemu_bad bad[ZEMU_MAX_BAD];
	uint64_t off = 0, len = 4096;
	bool have_off = false, clear = false;
	char err[512] = "";
	struct zdev *dev;
	uint32_t i, n;
	int c, ret;

	optind = 1;
	while ((c = getopt_long(argc, argv, "hV", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (cli_size_arg("emu", "--offset", optarg, &off))
				return CLI_EXIT_USAGE;
			have_off = true;
			break;
		case 'l':
			if (cli_size_arg("emu", "--length", optarg, &len))
				return CLI_EXIT_USAGE;
			if (!len) {
				cli_error("emu", "--length must not be 0");
				return CLI_EXIT_USAGE;
			}
			break;
		case 'c':
			clear = true;
			break;
		case 'V':
			return cli_version();
		case 'h':
			emu_usage(stdout);
			return 0;
		default:
			emu_usage(stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind + 1 != argc || (clear && have_off)) {
		cli_error("emu", optind + 1 != argc ?
					 "media-error: expected one IMAGE" :
					 "media-error: --clear takes no --offset");
		emu_usage(stderr);
		return CLI_EXIT_USAGE;
	}
	ret = zdev_open(argv[optind],
			(have_off || clear ? ZDEV_EXCL : ZDEV_RDONLY) | ZDEV_WAIT,
			&dev, err, sizeof(err));
	if (ret) {
		cli_error("emu", "%s", err[0] ? err : strerror(-ret));
		return 1;
	}
	if (!zemu_is(dev)) {
		cli_error("emu", "%s: not an emulator image: media errors are the emulator's",
			  argv[optind]);
		zdev_close(dev);
		return 1;
	}
	if (have_off || clear) {
		ret = zemu_set_bad(dev, off, clear ? 0 : len);
		if (ret) {
			if (ret == -ENOSPC)
				cli_error("emu", "%s: it holds %u media errors already, the most an image keeps (--clear them first)",
					  argv[optind], ZEMU_MAX_BAD);
			else
				cli_error("emu", "%s: %s", argv[optind],
					  ret == -EINVAL ? "that range is outside the device" :
							   strerror(-ret));
			zdev_close(dev);
			return 1;
		}
	}
	n = zemu_bad_list(dev, bad, ZEMU_MAX_BAD);
	for (i = 0; i < n; i++)
		printf("%s: unreadable: %" PRIu64 " bytes at device offset %" PRIu64 " (zone %u)\n",
		       argv[optind], bad[i].len, bad[i].off,
		       zdev_zone_of(dev, bad[i].off));
	if (!n)
		printf("%s: no media errors\n", argv[optind]);
	zdev_close(dev);
	return 0;
}

int cli_emu(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		emu_usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? CLI_EXIT_USAGE : 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V"))
		return cli_version();
	if (!strcmp(argv[1], "create"))
		return emu_create(argc - 1, argv + 1);
	if (!strcmp(argv[1], "media-error"))
		return emu_media_error(argc - 1, argv + 1);
	cli_error("emu", "unknown command '%s' (try: zonefuse emu create, zonefuse emu media-error)",
		  argv[1]);
	return CLI_EXIT_USAGE;
}
