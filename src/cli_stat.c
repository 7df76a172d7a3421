// SPDX-License-Identifier: GPL-2.0-or-later
/* zonefuse stat DEVICE [--json] */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#include "cli.h"
#include "zonefuse/util.h"
#include "zonefuse/zfs.h"

static void stat_usage(FILE *f)
{
	fprintf(f,
		"usage: zonefuse stat DEVICE [--json]\n"
		"Space, zones, journal, write amplification and wear of a file system.\n"
		"On a mounted device it shows the state as last committed; the mount's\n"
		"live figures are in: getfattr -n user.zonefuse.stats MOUNTPOINT\n"
		"(transport: the mount's FUSE transport, uring or dev, from there).\n");
}

/*
 * The FUSE transport of the mount of @dev, from the mount's stats
 * attribute: the image itself does not know it. Leaves @tr ("none") when
 * @dev is not mounted or the mount does not say.
 */
static void stat_transport(const char *dev, char *tr, size_t len)
{
	static const char key[] = "\"transport\": \"";
	char *dir = cli_mounted_on(dev), buf[4096], *p, *e;
	ssize_t n;

	if (!dir)
		return;
	n = getxattr(dir, ZFS_XATTR_STATS, buf, sizeof(buf) - 1);
	free(dir);
	if (n <= 0)
		return;
	buf[n] = '\0';
	p = strstr(buf, key);
	if (!p)
		return;
	p += sizeof(key) - 1;
	e = strchr(p, '"');
	if (e && (size_t)(e - p) < len)
		snprintf(tr, len, "%.*s", (int)(e - p), p);
}

int cli_stat(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct zfs_opts o = { .rdonly = true, .no_lock = true,
			      .defer_threads = true };
	struct zfs_stats st;
	struct zfs *fs;
	char err[512] = "", json[4096], a[32], b[32], c[32], d[32];
	char label[4 * ZFS_LABEL_MAX + 1], uuid[37];
	bool as_json = false;
	int opt, ret;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "hV", opts, NULL)) != -1) {
		switch (opt) {
		case 'j':
			as_json = true;
			break;
		case 'V':
			return cli_version();
		case 'h':
			stat_usage(stdout);
			return 0;
		default:
			stat_usage(stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind + 1 != argc) {
		cli_error("stat", "expected one DEVICE");
		stat_usage(stderr);
		return CLI_EXIT_USAGE;
	}
	ret = zfs_mount(argv[optind], &o, &fs, err, sizeof(err));
	if (ret) {
		cli_error("stat", "%s", err[0] ? err : strerror(-ret));
		return 1;
	}
	ret = zfs_get_stats(fs, &st);
	zfs_unmount(fs);
	if (ret) {
		cli_error("stat", "%s", strerror(-ret));
		return 1;
	}
	stat_transport(argv[optind], st.transport, sizeof(st.transport));
	if (as_json) {
		if (zfs_stats_json(&st, json, sizeof(json)) < 0)
			return 1;
		printf("%s\n", json);
		return 0;
	}
	printf("%s\n", argv[optind]);
	zutil_escape(label, sizeof(label), st.label, strlen(st.label));
	printf("  uuid         %s\n", zutil_uuid_str(st.uuid, uuid));
	printf("  label        %s\n", label[0] ? label : "(none)");
	printf("  capacity     %s, used %s, free %s, reclaimable %s\n",
	       zutil_size_str(st.capacity_bytes, a, sizeof(a)),
	       zutil_size_str(st.used_bytes, b, sizeof(b)),
	       zutil_size_str(st.free_bytes, c, sizeof(c)),
	       zutil_size_str(st.reclaimable_bytes, d, sizeof(d)));
	printf("  files        %" PRIu64 " files, %" PRIu64 " directories\n",
	       st.files, st.directories);
	printf("  zones        %u: %u empty, %u open, %u closed, %u full, %u metadata, %u bad\n",
	       st.zones_total, st.zones_empty, st.zones_open, st.zones_closed,
	       st.zones_full, st.meta_zones, st.zones_bad);
	printf("  journal      snapshot at seq %" PRIu64 ", last record %" PRIu64 "\n",
	       st.snap_seq, st.last_seq);
	printf("  written      host %s, device %s (metadata %s, reclaim %s)\n",
	       zutil_size_str(st.host_bytes_written, a, sizeof(a)),
	       zutil_size_str(st.device_bytes_written, b, sizeof(b)),
	       zutil_size_str(st.meta_bytes_written, c, sizeof(c)),
	       zutil_size_str(st.gc_bytes_written, d, sizeof(d)));
	if (st.write_amplification < 0)
		printf("  write amp.   - (nothing written yet)\n");
	else
		printf("  write amp.   %.3f\n", st.write_amplification);
	printf("  wear         resets per zone: min %" PRIu64 ", mean %.2f, max %" PRIu64 ", spread %" PRIu64 " (metadata zones: max %" PRIu64 ")\n",
	       st.resets_min, st.resets_mean, st.resets_max,
	       st.resets_max - st.resets_min, st.meta_resets_max);
	printf("  limits       open %u, active %u (0: none)\n", st.max_open,
	       st.max_active);
	printf("  transport    %s\n", strcmp(st.transport, "none") ?
					   st.transport :
					   "none (not mounted)");
	return 0;
}
