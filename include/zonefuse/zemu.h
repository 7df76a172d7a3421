/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * zemu - a strict zoned-device emulator kept in a regular (sparse) file.
 *
 * It is opened through zdev_open() like any device; this header holds what
 * only the emulator has: creating an image, its media counters, and zone
 * conditions a test can force. The image format is in docs/emulator.md.
 *
 * The rules it enforces are those of null_blk and NVMe ZNS (see zdev.h for
 * the errnos). What it adds to a drive, and why:
 * - A write reaches the backing file at once, but the write pointer that
 *   makes it readable is persisted only by a flush (or a zone management
 *   operation): a process that dies before flushing loses its unflushed
 *   writes, as a drive with a volatile cache may after a power cut.
 * - Zones that were open when the image was last closed come back closed
 *   (empty if nothing was written), as a drive's zones do after power loss.
 */
#ifndef ZONEFUSE_ZEMU_H
#define ZONEFUSE_ZEMU_H

#include <stdint.h>

#include "zonefuse/zdev.h"

struct zemu_params {
	uint64_t size;		/* device size; a multiple of zone_size */
	uint64_t zone_size;	/* multiple of block_size */
	uint64_t zone_capacity; /* 0: equal to zone_size */
	uint32_t max_open;	/* 0: no limit */
	uint32_t max_active;	/* 0: no limit */
	uint32_t nr_conv;	/* conventional zones at the start */
	uint32_t block_size;	/* 512 or 4096 */
};

/* Defaults of `zonefuse emu create`. */
#define ZEMU_DEFAULT_ZONE_SIZE (64ull << 20)
#define ZEMU_DEFAULT_BLOCK_SIZE 4096u

/*
 * Check @p and fill its defaults. Returns 0, or -EINVAL with the reason in
 * @err (one line).
 */
int zemu_check_params(struct zemu_params *p, char *err, size_t errlen);

/*
 * Create the image @path (which must not exist: -EEXIST) with geometry @p.
 * All sequential zones start empty. On failure nothing is left behind.
 */
int zemu_create(const char *path, const struct zemu_params *p, char *err,
		size_t errlen);

/* True if @dev is an emulator image. */
bool zemu_is(const struct zdev *dev);

/* Counters kept in the image over its whole life (persisted at flush). */
struct zemu_counters {
	uint64_t media_bytes_written;
	uint64_t flushes;
	uint64_t resets;
};
int zemu_counters(struct zdev *dev, struct zemu_counters *c);

/*
 * Force zone @zone into ZDEV_COND_READONLY or ZDEV_COND_OFFLINE (a worn or
 * failed zone), persistently: fault injection for tests. -EINVAL for other
 * conditions or a conventional zone.
 */
int zemu_set_cond(struct zdev *dev, uint32_t zone, enum zdev_zone_cond cond);

/*
 * Media errors: device ranges whose reads fail with -EIO, as a drive's
 * unreadable blocks do (a read that meets one fails whole). Kept in the
 * image header, so they outlive the process. A range goes when its zone
 * is reset, or (conventional zones) when a write covers it whole: a drive
 * remaps a bad block that is written again.
 */
#define ZEMU_MAX_BAD 8u

struct zemu_bad {
	uint64_t off; /* device byte offset */
	uint64_t len; /* bytes, > 0 */
};

/*
 * Add the media error [@off, @off + @len), or with @len 0 clear them all,
 * and persist the list at once. -EINVAL (outside the device), -ENOSPC
 * (ZEMU_MAX_BAD already), -EROFS (opened read-only), -EOPNOTSUPP (not an
 * emulator).
 */
int zemu_set_bad(struct zdev *dev, uint64_t off, uint64_t len);

/* Copy up to @max media errors to @out; returns how many there are. */
uint32_t zemu_bad_list(struct zdev *dev, struct zemu_bad *out, uint32_t max);

#endif /* ZONEFUSE_ZEMU_H */
