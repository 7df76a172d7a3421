// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * zraw - the raw sequential speed of a zoned device, through the same
 * device layer (zdev) the daemon uses: the "emu raw" column of
 * bench/run.sh, what zonefuse could get from its device at best.
 *
 *   zraw write DEVICE BYTES   write BYTES from the first sequential zone
 *                             on, 1 MiB per write, zone after zone, then
 *                             flush (the zones must be empty)
 *   zraw read DEVICE BYTES    read the same range back, 1 MiB per read
 *   zraw reset DEVICE         reset every written sequential zone
 *
 * Each prints one JSON object: the operation, the bytes, the seconds
 * (for write: up to the end of the flush) and MB/s (10^6 bytes).
 * One thread, one I/O at a time: zonefuse's writeback threads each write
 * one zone the same way.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zonefuse/util.h"
#include "zonefuse/zdev.h"

#define ZRAW_IO (1u << 20)

static double zraw_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * Write or read @bytes over the sequential zones in order. A write must
 * start at each zone's write pointer: the zones must be empty (a fresh
 * emulator image, or after `zraw reset`).
 */
static int zraw_run(struct zdev *dev, bool write, uint64_t bytes)
{
	const struct zdev_geom *g = zdev_geom(dev);
	size_t io = ZF_MIN(ZRAW_IO, g->max_io ? g->max_io : ZRAW_IO);
	uint64_t done = 0;
	char *buf = zdev_buf_alloc(dev, io);
	uint32_t z;
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	memset(buf, 0xa5, io);
	for (z = g->nr_conv; z < g->nr_zones && done < bytes; z++) {
		struct zdev_zone zone;
		uint64_t off;

		ret = zdev_report(dev, z, 1, &zone);
		if (ret < 0)
			goto out_free;
		if (write && zone.cond != ZDEV_COND_EMPTY) {
			fprintf(stderr,
				"zraw: zone %" PRIu32
				" is not empty: run `zraw reset` first\n",
				z);
			ret = -EIO;
			goto out_free;
		}
		for (off = 0; off < zone.capacity && done < bytes;) {
			size_t n = (size_t)ZF_MIN((uint64_t)io,
						  zone.capacity - off);

			n = (size_t)ZF_MIN((uint64_t)n, bytes - done);
			n = ZF_ROUND_UP(n, g->block_size);
			ret = write ? zdev_write(dev, buf, n,
						 zone.start + off) :
				      zdev_read(dev, buf, n, zone.start + off);
			if (ret < 0) {
				fprintf(stderr,
					"zraw: %s of zone %" PRIu32
					" at %" PRIu64 ": %s\n",
					write ? "write" : "read", z, off,
					strerror(-ret));
				goto out_free;
			}
			off += n;
			done += n;
		}
	}
	if (done < bytes) {
		fprintf(stderr,
			"zraw: the device holds only %" PRIu64
			" bytes in sequential zones\n",
			done);
		ret = -ENOSPC;
		goto out_free;
	}
	ret = write ? zdev_flush(dev) : 0;
out_free:
	free(buf);
	return ret;
}

static int zraw_reset_all(struct zdev *dev)
{
	const struct zdev_geom *g = zdev_geom(dev);
	uint32_t z;
	int ret;

	for (z = g->nr_conv; z < g->nr_zones; z++) {
		struct zdev_zone zone;

		ret = zdev_report(dev, z, 1, &zone);
		if (ret < 0)
			return ret;
		if (zone.cond == ZDEV_COND_EMPTY)
			continue;
		ret = zdev_reset(dev, z);
		if (ret < 0)
			return ret;
	}
	return 0;
}

int main(int argc, char **argv)
{
	char err[256] = "";
	struct zdev *dev;
	uint64_t bytes = 0;
	double t0, t;
	bool write;
	int ret;

	if (argc == 3 && !strcmp(argv[1], "reset")) {
		write = true;
	} else if (argc == 4 &&
		   (!strcmp(argv[1], "write") || !strcmp(argv[1], "read"))) {
		write = !strcmp(argv[1], "write");
		if (zutil_parse_size(argv[3], &bytes) || !bytes)
			goto usage;
	} else {
		goto usage;
	}
	ret = zdev_open(argv[2], write ? ZDEV_EXCL : ZDEV_RDONLY, &dev, err,
			sizeof(err));
	if (ret) {
		fprintf(stderr, "zraw: %s\n", err[0] ? err : strerror(-ret));
		return 1;
	}
	t0 = zraw_now();
	if (!bytes)
		ret = zraw_reset_all(dev);
	else
		ret = zraw_run(dev, write, bytes);
	t = zraw_now() - t0;
	zdev_close(dev);
	if (ret) {
		fprintf(stderr, "zraw: %s: %s\n", argv[2], strerror(-ret));
		return 1;
	}
	if (bytes)
		printf("{\"op\": \"%s\", \"bytes\": %" PRIu64
		       ", \"seconds\": %.6f, \"mb_per_s\": %.1f}\n",
		       argv[1], bytes, t, t > 0 ? (double)bytes / t / 1e6 : 0);
	return 0;

usage:
	fprintf(stderr,
		"usage: zraw write DEVICE BYTES | zraw read DEVICE BYTES | zraw reset DEVICE\n"
		"Sequential 1 MiB I/O over the sequential zones of a zoned device or an\n"
		"emulator image, through zonefuse's device layer.\n");
	return 16;
}
