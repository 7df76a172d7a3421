/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * zdev - the zoned block device layer.
 *
 * Every access zonefuse makes to a zoned device goes through this interface.
 * Two backends implement it: real zoned block devices through libzbd and
 * io_uring (src/zdev_zbd.c), and the file-backed emulator (src/zemu.c).
 * The thin wrappers below are also where tests inject faults.
 *
 * Units: every offset, length and zone position is in bytes. Zones are
 * numbered from 0 in LBA order.
 *
 * Errors: every function returns 0 (or a count) on success and a negative
 * errno on failure. The errnos a device gives, which both backends return:
 *   -EINVAL        offset, length or buffer address not aligned to the
 *                  logical block size; I/O outside the device; a zone
 *                  operation on a zone number that does not exist.
 *   -EIO           a write not at the write pointer, one that would cross
 *                  the zone capacity, a write to a full, read-only or
 *                  offline zone, a read of an offline zone, a zone
 *                  operation on a conventional zone or one the zone's
 *                  condition does not allow; a media error.
 *   -ETOOMANYREFS  the operation would exceed the open zone limit
 *                  (BLK_STS_ZONE_OPEN_RESOURCE).
 *   -EOVERFLOW     the operation would exceed the active zone limit
 *                  (BLK_STS_ZONE_ACTIVE_RESOURCE).
 *   -EROFS         a write or zone operation on a device opened read-only.
 *
 * Threads: all functions may be called concurrently from any thread.
 * Writes to one sequential zone must be issued one at a time by the caller,
 * in write-pointer order (the device cannot reorder them back).
 */
#ifndef ZONEFUSE_ZDEV_H
#define ZONEFUSE_ZDEV_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Zone types, with the values of linux/blkzoned.h. */
enum zdev_zone_type {
	ZDEV_ZONE_CONV = 1, /* no write pointer: written anywhere */
	ZDEV_ZONE_SEQ = 2,  /* sequential write required */
};

/* Zone conditions, with the values of linux/blkzoned.h. */
enum zdev_zone_cond {
	ZDEV_COND_NOT_WP = 0x0,
	ZDEV_COND_EMPTY = 0x1,
	ZDEV_COND_IMP_OPEN = 0x2,
	ZDEV_COND_EXP_OPEN = 0x3,
	ZDEV_COND_CLOSED = 0x4,
	ZDEV_COND_READONLY = 0xd,
	ZDEV_COND_FULL = 0xe,
	ZDEV_COND_OFFLINE = 0xf,
};

/* zdev_zone.resets when the backend cannot know it (real devices). */
#define ZDEV_RESETS_UNKNOWN UINT64_MAX

struct zdev_zone {
	uint64_t start;	   /* first byte of the zone */
	uint64_t len;	   /* zone size */
	uint64_t capacity; /* writable bytes from start; <= len */
	uint64_t wp;	   /* write pointer. Meaningless unless the zone is
			      empty, open or closed: conventional, finished,
			      read-only and offline zones report start + len,
			      a zone written full start + capacity (null_blk)
			      or start + len (NVMe) */
	uint64_t resets;   /* lifetime resets, or ZDEV_RESETS_UNKNOWN */
	uint8_t type;	   /* enum zdev_zone_type */
	uint8_t cond;	   /* enum zdev_zone_cond */
};

struct zdev_geom {
	uint64_t size;	       /* device size in bytes */
	uint64_t zone_size;    /* every zone but possibly the last */
	uint32_t nr_zones;
	uint32_t nr_conv;      /* conventional zones, counted at open */
	uint32_t block_size;   /* logical block size: I/O unit and alignment */
	uint32_t max_open;     /* 0: no limit */
	uint32_t max_active;   /* 0: no limit */
	uint32_t max_io;       /* largest single read or write, in bytes */
	bool volatile_cache;   /* writes sit in a cache a power cut loses
				  until zdev_flush(): the emulator always;
				  a block device as the kernel says at open */
};

/* Flags of zdev_open(). */
enum zdev_open_flags {
	ZDEV_RDONLY = 1u << 0, /* no writes, no zone operations, no lock */
	ZDEV_EXCL = 1u << 1,   /* fail with -EBUSY if another user holds it */
	ZDEV_NORECORD = 1u << 2, /* ignore ZDEV_RECORD_ENV (zdev_record()) */
	ZDEV_WAIT = 1u << 3,	 /* wait up to 30 s for a busy device */
};

/* Operations, as the fault hook and zdev_zone_op() see them. */
enum zdev_op {
	ZDEV_OP_READ,
	ZDEV_OP_WRITE,
	ZDEV_OP_FLUSH,
	ZDEV_OP_RESET,
	ZDEV_OP_FINISH,
	ZDEV_OP_OPEN,
	ZDEV_OP_CLOSE,
	ZDEV_OP_REPORT,
};

struct zdev;

/*
 * Open the zoned device at @path. The backend is chosen by what @path is: a
 * block device goes to libzbd (it must be zoned: -ENOTBLK otherwise), a
 * regular file must be an emulator image (-EMEDIUMTYPE if it is not one,
 * -EUCLEAN if it is a damaged one, -ENOTSUP for an unknown version).
 * @flags is a mask of enum zdev_open_flags. A device another process holds
 * gives -EBUSY; with ZDEV_WAIT it is waited for up to 30 s first (a daemon
 * finishing its unmount).
 * Returns 0 and sets *@devp, or a negative errno; the reason is also
 * written to @err (if not NULL, up to @errlen bytes) as one readable line.
 */
int zdev_open(const char *path, unsigned int flags, struct zdev **devp,
	      char *err, size_t errlen);

/* Close the device (does not flush: call zdev_flush() first). */
void zdev_close(struct zdev *dev);

const struct zdev_geom *zdev_geom(const struct zdev *dev);
const char *zdev_path(const struct zdev *dev);
/*
 * Where device byte 0 is in the file at zdev_path(): 0 for a block device,
 * the data offset of an emulator image (its header and zone table come
 * first). For tools that read the device bytes with other libraries.
 */
uint64_t zdev_file_offset(const struct zdev *dev);
/* "zbd" or "emulator". */
const char *zdev_backend(const struct zdev *dev);

/* Zone number of byte offset @off. */
uint32_t zdev_zone_of(const struct zdev *dev, uint64_t off);
/* First byte of zone @zone. */
uint64_t zdev_zone_start(const struct zdev *dev, uint32_t zone);

/*
 * Report @nr zones from @first into @zones. Returns the number of zones
 * reported (fewer only at the end of the device), or -EINVAL if @first is
 * out of range.
 */
int zdev_report(struct zdev *dev, uint32_t first, uint32_t nr,
		struct zdev_zone *zones);

/*
 * Read @len bytes at @off into @buf. @buf, @off and @len must be aligned to
 * the block size. The range may span zones. What bytes at or above a
 * sequential zone's write pointer read as is unspecified: zeros on the
 * emulator and NVMe ZNS, 0xff on null_blk. Never rely on it.
 */
int zdev_read(struct zdev *dev, void *buf, size_t len, uint64_t off);

/*
 * Write @len bytes from @buf at @off, which must be the write pointer of a
 * sequential zone (any offset in a conventional zone). The write must not
 * cross the zone capacity. Same alignment rules as zdev_read(). On success
 * the data is in the device's volatile cache: zdev_flush() makes it durable.
 * After a failure the write pointer may have moved (a partial write on a
 * drive): report the zone before writing to it again.
 */
int zdev_write(struct zdev *dev, const void *buf, size_t len, uint64_t off);

/*
 * Make every write completed before the call durable. On a device without
 * a volatile cache (geom.volatile_cache false) every completed write
 * already is, and nothing reaches the device.
 */
int zdev_flush(struct zdev *dev);

/*
 * Zone management: ZDEV_OP_RESET, ZDEV_OP_FINISH, ZDEV_OP_OPEN (explicit
 * open) or ZDEV_OP_CLOSE on zone @zone. A reset is durable when it returns.
 */
int zdev_zone_op(struct zdev *dev, enum zdev_op op, uint32_t zone);

static inline int zdev_reset(struct zdev *dev, uint32_t zone)
{
	return zdev_zone_op(dev, ZDEV_OP_RESET, zone);
}

static inline int zdev_finish(struct zdev *dev, uint32_t zone)
{
	return zdev_zone_op(dev, ZDEV_OP_FINISH, zone);
}

/*
 * The device refused the operation for its open or active zone limit
 * (-ETOOMANYREFS, -EOVERFLOW): nothing was done, and the caller may make
 * room and try again.
 */
static inline bool zdev_limit_err(int err)
{
	return err == -ETOOMANYREFS || err == -EOVERFLOW;
}

/* A batch of independent I/Os, issued together (io_uring on real devices). */
struct zdev_io {
	uint8_t op; /* ZDEV_OP_READ or ZDEV_OP_WRITE */
	void *buf;
	size_t len;
	uint64_t off;
	int res; /* out: 0 or a negative errno, per I/O */
};

/*
 * Issue @nr I/Os and wait for all of them. Writes in one batch must target
 * distinct zones (their order is not kept). Returns 0 if every I/O
 * succeeded, else the first failure's errno; each io->res says which.
 */
int zdev_submit(struct zdev *dev, struct zdev_io *ios, unsigned int nr);

/*
 * The alignment of I/O buffers: a memory address the device can read into
 * and write from directly (O_DIRECT), a multiple of the block size.
 */
size_t zdev_buf_align(const struct zdev *dev);
/* An aligned I/O buffer of @len bytes (rounded up to a block); free(). */
void *zdev_buf_alloc(const struct zdev *dev, size_t len);

/* Name of a condition as the JSON report spells it ("implicit_open"...). */
const char *zdev_cond_name(uint8_t cond);

/*
 * Fault injection, for tests: @hook runs before every operation that reaches
 * the backend; a negative return fails the operation with that errno
 * without touching the device. @zone is the target zone (or UINT32_MAX for a
 * flush). NULL removes the hook.
 */
typedef int (*zdev_fault_fn)(void *arg, enum zdev_op op, uint32_t zone,
			     uint64_t off, size_t len);
void zdev_set_fault(struct zdev *dev, zdev_fault_fn hook, void *arg);

/*
 * Recording, for crash tests: from this call until zdev_close(), append
 * to the file @path (created, or truncated) every successful write with
 * its data, every flush and every zone reset and finish, in the order the
 * device completed them (the format and its ordering rules are in
 * include/zonefuse/crashlog.h). With a copy of the device taken before
 * the call, src/crash.c (include/zonefuse/crash.h) rebuilds what the
 * device could hold after a power cut at any point of the recording.
 * Opens and closes of zones are not recorded: a power cut closes them.
 * Call it before other threads use @dev. zdev_open() calls it itself for
 * a writable open when the environment variable ZDEV_RECORD_ENV names a
 * file, so that a daemon can be recorded and then killed.
 * Returns 0; -EROFS on a read-only open; -EBUSY if @dev is already
 * recording; the errno of creating or writing @path. If an append fails
 * later (a full disk), recording stops there, with an error logged: the
 * log then ends early, and zdev_record_seq() stops counting.
 */
int zdev_record(struct zdev *dev, const char *path);

#define ZDEV_RECORD_ENV "ZONEFUSE_RECORD"

/*
 * Records appended so far by the recording of @dev (0 if it does not
 * record): a position in the log. A caller that notes it when an operation
 * returns knows that every record of that operation is below it.
 */
uint64_t zdev_record_seq(struct zdev *dev);

/* Device-level counters, kept by the wrappers for this open. */
struct zdev_stats {
	uint64_t bytes_written;
	uint64_t bytes_read;
	uint64_t writes;
	uint64_t reads;
	uint64_t flushes;
	uint64_t resets;
};
void zdev_get_stats(const struct zdev *dev, struct zdev_stats *st);

#endif /* ZONEFUSE_ZDEV_H */
