// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The zoned-device emulator: a zoned device kept in a sparse regular file.
 *
 * It exists so that zonefuse can be developed and tested where no zoned
 * device exists, so its first duty is to be as strict as a real device:
 * code that passes on it must pass on null_blk and on an NVMe ZNS drive. The
 * zone state machine, the open/active resource rules and the errnos follow
 * the kernel's null_blk (drivers/block/null_blk/zoned.c), which follows ZBC
 * and ZNS. Where it is stricter than a device, the reason is given below.
 *
 * Image layout (docs/emulator.md has it byte by byte):
 *   [0, 4096)            header: geometry, lifetime counters, CRC32C
 *   [4096, ...)          zone table: one 32-byte entry per zone, CRC each
 *   [data_off, +size)    the zones' data, data_off aligned to 1 MiB
 *
 * Durability follows a drive with a volatile write cache. Data goes to the
 * backing file at once, but a zone's write pointer, the only thing that
 * makes the data readable, is written to the table by a flush. A process
 * that dies before flushing comes back with the old write pointers, so its
 * unflushed writes read as zeros and are overwritten by the next writes:
 * lost, as a drive may lose them. A flush first makes the data durable
 * (fdatasync), then the table, then syncs again, so that even a host crash
 * never leaves a write pointer above data that did not reach the file.
 * Zone management (reset, finish) is persisted when it returns, as a drive
 * completes a zone management command.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/falloc.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zdev_i.h"
#include "zonefuse/crc32c.h"
#include "zonefuse/util.h"
#include "zonefuse/zemu.h"

#define ZEMU_MAGIC "ZFEMUIMG"
#define ZEMU_VERSION 1u
#define ZEMU_TABLE_OFF 4096u
#define ZEMU_DATA_ALIGN (1u << 20)

/* On-disk header, at offset 0. All fields little-endian. */
struct zemu_disk_hdr {
	char magic[8];		      /* 0: "ZFEMUIMG" */
	uint32_t version;	      /* 8 */
	uint32_t features;	      /* 12: no feature bits are defined: 0 */
	uint64_t size;		      /* 16: device size, bytes */
	uint64_t zone_size;	      /* 24 */
	uint64_t zone_capacity;	      /* 32: of sequential zones */
	uint32_t nr_zones;	      /* 40 */
	uint32_t nr_conv;	      /* 44 */
	uint32_t block_size;	      /* 48 */
	uint32_t max_open;	      /* 52 */
	uint32_t max_active;	      /* 56 */
	uint32_t reserved0;	      /* 60 */
	uint64_t table_off;	      /* 64 */
	uint64_t data_off;	      /* 72 */
	uint64_t media_bytes_written; /* 80: lifetime, at the last flush */
	uint64_t flushes;	      /* 88: lifetime */
	uint64_t resets;	      /* 96: lifetime, all zones */
	uint32_t nr_bad;	      /* 104: media errors in bad[] */
	uint32_t reserved0b;	      /* 108 */
	struct zemu_bad bad[ZEMU_MAX_BAD]; /* 112: unreadable ranges */
	uint8_t reserved[12];	      /* 240 */
	uint32_t crc;		      /* 252: CRC32C of bytes 0-251 */
};
_Static_assert(sizeof(struct zemu_disk_hdr) == 256, "zemu header size");

/* On-disk zone table entry. All fields little-endian. */
struct zemu_disk_zone {
	uint64_t wp;	     /* 0: absolute byte offset */
	uint64_t resets;     /* 8: lifetime resets of this zone */
	uint64_t capacity;   /* 16: bytes */
	uint8_t cond;	     /* 24: enum zdev_zone_cond */
	uint8_t type;	     /* 25: enum zdev_zone_type */
	uint8_t reserved[2]; /* 26 */
	uint32_t crc;	     /* 28: CRC32C of bytes 0-27 */
};
_Static_assert(sizeof(struct zemu_disk_zone) == 32, "zemu zone entry size");

struct zemu_zone {
	/*
	 * Serialises writes and zone operations on this zone, as a drive
	 * processes one command per zone at a time.
	 * Lock order: zemu_zone.lock -> zemu.res_lock.
	 */
	pthread_mutex_t lock;
	_Atomic uint64_t wp;  /* protected by lock; read lock-free by reads */
	_Atomic uint8_t cond; /* protected by lock and res_lock (both held to
				 change it; either to read it) */
	_Atomic bool dirty;   /* table entry differs from memory */
	uint64_t resets;      /* protected by lock */
	uint64_t start, len, capacity;
	uint8_t type;
};

struct zemu {
	struct zdev dev; /* first: a struct zdev * is a struct zemu * */
	int fd;
	/*
	 * The image opened O_DIRECT, for the writes of data aligned to
	 * dio_align (buffer, offset and length), or -1. Set at open.
	 */
	int dfd;
	uint32_t dio_align;
	uint64_t table_off, data_off;
	struct zemu_disk_hdr hdr; /* geometry as read; counters below */
	struct zemu_zone *zones;

	/* Zone resources, as null_blk counts them. Protected by res_lock. */
	pthread_mutex_t res_lock;
	uint32_t nr_imp_open, nr_exp_open, nr_closed;
	uint32_t imp_close_next; /* where the implicit-close scan resumes */

	/* Serialises flushes (table and header writes). */
	pthread_mutex_t flush_lock;

	_Atomic uint64_t media_bytes_written, flushes, resets;

	/*
	 * Media errors: the device ranges whose reads fail (hdr.bad, in
	 * host order here). Protected by bad_lock; nr_bad is also read
	 * without it, so that reads skip the lock while there are none.
	 * Lock order: zemu_zone.lock -> bad_lock; flush_lock -> bad_lock.
	 */
	pthread_mutex_t bad_lock;
	_Atomic uint32_t nr_bad;
	struct zemu_bad bad[ZEMU_MAX_BAD];
};

static struct zemu *to_zemu(struct zdev *dev)
{
	return (struct zemu *)dev;
}

static int zemu_pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	char *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0) /* a truncated image: what is missing is lost */
			return -EIO;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

static int zemu_pwrite_full(int fd, const void *buf, size_t len, uint64_t off)
{
	const char *p = buf;

	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/* ---- zone conditions and resources (null_blk's rules) ------------------ */

static uint32_t *zemu_cond_counter(struct zemu *e, uint8_t cond)
{
	switch (cond) {
	case ZDEV_COND_IMP_OPEN:
		return &e->nr_imp_open;
	case ZDEV_COND_EXP_OPEN:
		return &e->nr_exp_open;
	case ZDEV_COND_CLOSED:
		return &e->nr_closed;
	default:
		return NULL;
	}
}

/* Change @z's condition, keeping the counters. Caller holds res_lock. */
static void zemu_cond_set(struct zemu *e, struct zemu_zone *z, uint8_t cond)
{
	uint32_t *c = zemu_cond_counter(e, z->cond);

	if (c)
		(*c)--;
	c = zemu_cond_counter(e, cond);
	if (c)
		(*c)++;
	z->cond = cond;
	z->dirty = true;
}

static bool zemu_active_ok(struct zemu *e)
{
	uint32_t max = e->dev.geom.max_active;

	return !max || e->nr_imp_open + e->nr_exp_open + e->nr_closed < max;
}

/*
 * Close one implicitly open zone, round-robin as null_blk does, to make room
 * under the open limit. A zone whose lock is held has a command in flight;
 * it is skipped (a drive finishes a command before it closes the zone), so
 * that no zone is closed under a write that is moving its write pointer.
 * Caller holds res_lock; trylock keeps the lock order. Returns true if a
 * zone was closed.
 */
static bool zemu_close_imp_open(struct zemu *e)
{
	uint32_t nr = e->dev.geom.nr_zones, conv = e->dev.geom.nr_conv;
	uint32_t zno = e->imp_close_next, i;

	for (i = conv; i < nr; i++) {
		struct zemu_zone *z;

		if (zno >= nr || zno < conv)
			zno = conv;
		z = &e->zones[zno++];
		if (z->cond != ZDEV_COND_IMP_OPEN ||
		    pthread_mutex_trylock(&z->lock))
			continue;
		zemu_cond_set(e, z, z->wp == z->start ? ZDEV_COND_EMPTY :
							ZDEV_COND_CLOSED);
		pthread_mutex_unlock(&z->lock);
		e->imp_close_next = zno;
		return true;
	}
	return false;
}

/*
 * May zone @z (empty or closed) become open? -EOVERFLOW past the active
 * limit, -ETOOMANYREFS past the open limit; at the open limit an implicitly
 * open zone is closed to make room, as null_blk does, if the active limit
 * allows. When every implicitly open zone has a write in flight, a drive
 * would close one once its command completes, so we wait for that instead
 * of failing: res_lock is dropped meanwhile and everything is checked
 * again. This cannot deadlock: whoever holds an implicitly open zone's lock
 * never waits for a resource (it is writing to or managing an open zone).
 * Caller holds z->lock, which keeps @z's condition, and res_lock.
 */
static int zemu_check_resources(struct zemu *e, struct zemu_zone *z)
{
	uint32_t max = e->dev.geom.max_open;

	for (;;) {
		if (z->cond == ZDEV_COND_EMPTY && !zemu_active_ok(e))
			return -EOVERFLOW;
		if (!max || e->nr_imp_open + e->nr_exp_open < max)
			return 0;
		if (!e->nr_imp_open || !zemu_active_ok(e))
			return -ETOOMANYREFS;
		if (zemu_close_imp_open(e))
			return 0;
		pthread_mutex_unlock(&e->res_lock);
		sched_yield();
		pthread_mutex_lock(&e->res_lock);
	}
}

/* ---- the table ---------------------------------------------------------- */

static void zemu_zone_encode(const struct zemu_zone *z,
			     struct zemu_disk_zone *d)
{
	memset(d, 0, sizeof(*d));
	d->wp = htole64(z->wp);
	d->resets = htole64(z->resets);
	d->capacity = htole64(z->capacity);
	d->cond = z->cond;
	d->type = z->type;
	d->crc = htole32(crc32c(0, d, offsetof(struct zemu_disk_zone, crc)));
}

/* Write @z's table entry now. Caller holds z->lock. */
static int zemu_zone_persist(struct zemu *e, struct zemu_zone *z, uint32_t i)
{
	struct zemu_disk_zone d;

	z->dirty = false;
	zemu_zone_encode(z, &d);
	return zemu_pwrite_full(e->fd, &d, sizeof(d),
				e->table_off + (uint64_t)i * sizeof(d));
}

static void zemu_hdr_seal(struct zemu_disk_hdr *h)
{
	h->crc = htole32(crc32c(0, h, offsetof(struct zemu_disk_hdr, crc)));
}

static int zemu_hdr_write(struct zemu *e)
{
	struct zemu_disk_hdr h = e->hdr;
	uint32_t i;

	h.media_bytes_written = htole64(e->media_bytes_written);
	h.flushes = htole64(e->flushes);
	h.resets = htole64(e->resets);
	memset(h.bad, 0, sizeof(h.bad));
	pthread_mutex_lock(&e->bad_lock);
	h.nr_bad = htole32(e->nr_bad);
	for (i = 0; i < e->nr_bad; i++) {
		h.bad[i].off = htole64(e->bad[i].off);
		h.bad[i].len = htole64(e->bad[i].len);
	}
	pthread_mutex_unlock(&e->bad_lock);
	zemu_hdr_seal(&h);
	return zemu_pwrite_full(e->fd, &h, sizeof(h), 0);
}

/* ---- operations ---------------------------------------------------------- */

static int zemu_report(struct zdev *dev, uint32_t first, uint32_t nr,
		       struct zdev_zone *out)
{
	struct zemu *e = to_zemu(dev);
	uint32_t i;

	for (i = 0; i < nr; i++) {
		struct zemu_zone *z = &e->zones[first + i];

		pthread_mutex_lock(&z->lock);
		out[i].start = z->start;
		out[i].len = z->len;
		out[i].capacity = z->capacity;
		/*
		 * A drive has no valid write pointer in a read-only or offline
		 * zone (null_blk reports -1), so neither do we: the one kept
		 * here only bounds the reads of a read-only zone.
		 */
		if (z->cond == ZDEV_COND_READONLY ||
		    z->cond == ZDEV_COND_OFFLINE)
			out[i].wp = z->start + z->len;
		else
			out[i].wp = z->wp;
		out[i].resets = z->resets;
		out[i].type = z->type;
		out[i].cond = z->cond;
		pthread_mutex_unlock(&z->lock);
	}
	return (int)nr;
}

/* Does a read of [@off, @off + @len) meet a media error? */
static bool zemu_bad_hit(struct zemu *e, uint64_t off, uint64_t len)
{
	bool hit = false;
	uint32_t i;

	if (!atomic_load_explicit(&e->nr_bad, memory_order_relaxed))
		return false;
	pthread_mutex_lock(&e->bad_lock);
	for (i = 0; i < e->nr_bad && !hit; i++)
		hit = e->bad[i].off < off + len &&
		      off < e->bad[i].off + e->bad[i].len;
	pthread_mutex_unlock(&e->bad_lock);
	return hit;
}

/*
 * Forget the media errors inside [@off, @off + @len): the range was
 * erased (a zone reset) or rewritten whole (a conventional write), as a
 * drive remaps a bad block when it is written again. Returns whether
 * any went (the header must then be written).
 */
static bool zemu_bad_clear(struct zemu *e, uint64_t off, uint64_t len)
{
	bool gone = false;
	uint32_t i = 0;

	if (!atomic_load_explicit(&e->nr_bad, memory_order_relaxed))
		return false;
	pthread_mutex_lock(&e->bad_lock);
	while (i < e->nr_bad) {
		if (e->bad[i].off >= off &&
		    e->bad[i].off + e->bad[i].len <= off + len) {
			e->bad[i] = e->bad[--e->nr_bad];
			gone = true;
		} else {
			i++;
		}
	}
	pthread_mutex_unlock(&e->bad_lock);
	return gone;
}

/*
 * Reads are not serialised against writes: data below a write pointer
 * never changes until a reset, and a reader racing a reset of the zone it
 * reads gets what a drive would give it (old data or zeros).
 */
static int zemu_read(struct zdev *dev, void *buf, size_t len, uint64_t off)
{
	struct zemu *e = to_zemu(dev);
	char *p = buf;

	while (len) {
		uint32_t zno = zdev_zone_of(dev, off);
		struct zemu_zone *z = &e->zones[zno];
		uint64_t end = ZF_MIN(off + len, z->start + z->len);
		size_t n = (size_t)(end - off), valid = n;
		int ret;

		/* A drive fails the whole command on a media error. */
		if (zemu_bad_hit(e, off, n))
			return -EIO;
		if (z->type == ZDEV_ZONE_SEQ) {
			uint64_t wp = z->wp;

			if (z->cond == ZDEV_COND_OFFLINE)
				return -EIO;
			if (z->cond == ZDEV_COND_FULL)
				wp = z->start + z->capacity;
			valid = wp <= off ? 0 : (size_t)ZF_MIN(n, wp - off);
		}
		if (valid) {
			ret = zemu_pread_full(e->fd, p, valid,
					      e->data_off + off);
			if (ret)
				return ret;
		}
		memset(p + valid, 0, n - valid);
		p += n;
		off += n;
		len -= n;
	}
	return 0;
}

/*
 * Write data at @off of the data area. Aligned writes go around the host's
 * page cache when the host file system can do direct I/O: buffered, a
 * disk-backed image ran at the speed of the host's writeback (380-430 MB/s
 * here, against 560-750 MB/s direct), and every byte was cached twice,
 * once by the host and once by zonefuse's own reader. The kernel keeps the
 * two paths coherent: a direct write first writes back the cached pages it
 * overlaps and then drops them, so the buffered reads and the writes that
 * stay buffered (unaligned, tables, header) see the same bytes.
 */
static int zemu_write_data(struct zemu *e, const void *buf, size_t len,
			   uint64_t off)
{
	uint64_t a = e->dio_align;

	off += e->data_off;
	if (e->dfd >= 0 && !(((uintptr_t)buf | len | off) & (a - 1)))
		return zemu_pwrite_full(e->dfd, buf, len, off);
	return zemu_pwrite_full(e->fd, buf, len, off);
}

static int zemu_write_conv(struct zemu *e, const void *buf, size_t len,
			   uint64_t off)
{
	uint32_t last = zdev_zone_of(&e->dev, off + len - 1);
	int ret;

	/* A write may span conventional zones, never into a sequential one. */
	if (e->zones[last].type != ZDEV_ZONE_CONV)
		return -EIO;
	ret = zemu_write_data(e, buf, len, off);
	if (!ret)
		e->media_bytes_written += len;
	if (!ret && zemu_bad_clear(e, off, len)) {
		pthread_mutex_lock(&e->flush_lock);
		ret = zemu_hdr_write(e);
		pthread_mutex_unlock(&e->flush_lock);
	}
	return ret;
}

static int zemu_write(struct zdev *dev, const void *buf, size_t len,
		      uint64_t off)
{
	struct zemu *e = to_zemu(dev);
	struct zemu_zone *z = &e->zones[zdev_zone_of(dev, off)];
	int ret = 0;

	if (z->type == ZDEV_ZONE_CONV)
		return zemu_write_conv(e, buf, len, off);

	pthread_mutex_lock(&z->lock);
	if (z->cond == ZDEV_COND_FULL || z->cond == ZDEV_COND_READONLY ||
	    z->cond == ZDEV_COND_OFFLINE || off != z->wp ||
	    len > z->start + z->capacity - z->wp) {
		ret = -EIO;
		goto out_unlock;
	}
	if (z->cond == ZDEV_COND_EMPTY || z->cond == ZDEV_COND_CLOSED) {
		pthread_mutex_lock(&e->res_lock);
		ret = zemu_check_resources(e, z);
		if (!ret)
			zemu_cond_set(e, z, ZDEV_COND_IMP_OPEN);
		pthread_mutex_unlock(&e->res_lock);
		if (ret)
			goto out_unlock;
	}
	ret = zemu_write_data(e, buf, len, off);
	if (ret)
		goto out_unlock;
	e->media_bytes_written += len;
	z->wp += len;
	z->dirty = true;
	if (z->wp == z->start + z->capacity) {
		pthread_mutex_lock(&e->res_lock);
		zemu_cond_set(e, z, ZDEV_COND_FULL);
		pthread_mutex_unlock(&e->res_lock);
	}
out_unlock:
	pthread_mutex_unlock(&z->lock);
	return ret;
}

/*
 * Flush: data first, then the table entries that changed, then the
 * header's counters, each made durable before the next is written.
 */
static int zemu_flush(struct zdev *dev)
{
	struct zemu *e = to_zemu(dev);
	uint32_t i;
	int ret;

	pthread_mutex_lock(&e->flush_lock);
	if (fdatasync(e->fd) < 0) {
		ret = -errno;
		goto out_unlock;
	}
	for (i = 0; i < dev->geom.nr_zones; i++) {
		struct zemu_zone *z = &e->zones[i];

		if (!z->dirty)
			continue;
		pthread_mutex_lock(&z->lock);
		ret = zemu_zone_persist(e, z, i);
		pthread_mutex_unlock(&z->lock);
		if (ret)
			goto out_unlock;
	}
	e->flushes++;
	ret = zemu_hdr_write(e);
	if (ret)
		goto out_unlock;
	if (fdatasync(e->fd) < 0)
		ret = -errno;
out_unlock:
	pthread_mutex_unlock(&e->flush_lock);
	return ret;
}

static int zemu_reset_locked(struct zemu *e, struct zemu_zone *z)
{
	/*
	 * The erase remaps the zone's bad blocks, empty or not; the list
	 * is persisted with the header at the next flush, as the counters.
	 */
	zemu_bad_clear(e, z->start, z->len);
	if (z->cond == ZDEV_COND_EMPTY)
		return 0;
	pthread_mutex_lock(&e->res_lock);
	zemu_cond_set(e, z, ZDEV_COND_EMPTY);
	pthread_mutex_unlock(&e->res_lock);
	z->wp = z->start;
	z->resets++;
	e->resets++;
	/*
	 * Give the space back to the host file system. Reads above the write
	 * pointer return zeros anyway, so a file system that cannot punch
	 * holes costs space, never correctness.
	 */
	if (fallocate(e->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      (off_t)(e->data_off + z->start), (off_t)z->len) < 0 &&
	    errno != EOPNOTSUPP)
		return -errno;
	return 0;
}

/*
 * Make [@off, @off + @len) of the data area read as zeros: punch a hole, or
 * write zeros where the host file system cannot punch.
 */
static int zemu_zero_range(struct zemu *e, uint64_t off, uint64_t len)
{
	static const char zeros[65536];
	int ret = 0;

	if (!len)
		return 0;
	if (!fallocate(e->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		       (off_t)(e->data_off + off), (off_t)len))
		return 0;
	if (errno != EOPNOTSUPP)
		return -errno;
	while (len && !ret) {
		size_t n = (size_t)ZF_MIN(len, sizeof(zeros));

		ret = zemu_pwrite_full(e->fd, zeros, n, e->data_off + off);
		off += n;
		len -= n;
	}
	return ret;
}

/*
 * A finish makes the whole zone readable. What lies in the file above the
 * write pointer is either nothing or the bytes of writes that were lost
 * (never flushed before the image was closed): those must not come back,
 * so that range is zeroed first.
 */
static int zemu_finish_locked(struct zemu *e, struct zemu_zone *z)
{
	int ret;

	if (z->cond == ZDEV_COND_FULL)
		return 0;
	/* Harmless if the finish then fails: it is above the write pointer. */
	ret = zemu_zero_range(e, z->wp, z->start + z->capacity - z->wp);
	if (ret)
		return ret;
	pthread_mutex_lock(&e->res_lock);
	if (z->cond == ZDEV_COND_EMPTY || z->cond == ZDEV_COND_CLOSED)
		ret = zemu_check_resources(e, z);
	if (!ret) {
		zemu_cond_set(e, z, ZDEV_COND_FULL);
		z->wp = z->start + z->len;
	}
	pthread_mutex_unlock(&e->res_lock);
	return ret;
}

static int zemu_open_locked(struct zemu *e, struct zemu_zone *z)
{
	int ret = 0;

	pthread_mutex_lock(&e->res_lock);
	switch (z->cond) {
	case ZDEV_COND_EXP_OPEN:
		break;
	case ZDEV_COND_EMPTY:
	case ZDEV_COND_CLOSED:
		ret = zemu_check_resources(e, z);
		if (!ret)
			zemu_cond_set(e, z, ZDEV_COND_EXP_OPEN);
		break;
	case ZDEV_COND_IMP_OPEN:
		zemu_cond_set(e, z, ZDEV_COND_EXP_OPEN);
		break;
	default:
		ret = -EIO;
	}
	pthread_mutex_unlock(&e->res_lock);
	return ret;
}

static int zemu_close_locked(struct zemu *e, struct zemu_zone *z)
{
	int ret = 0;

	pthread_mutex_lock(&e->res_lock);
	switch (z->cond) {
	case ZDEV_COND_CLOSED:
		break;
	case ZDEV_COND_IMP_OPEN:
	case ZDEV_COND_EXP_OPEN:
		zemu_cond_set(e, z, z->wp == z->start ? ZDEV_COND_EMPTY :
							ZDEV_COND_CLOSED);
		break;
	default:
		ret = -EIO;
	}
	pthread_mutex_unlock(&e->res_lock);
	return ret;
}

static int zemu_zone_op(struct zdev *dev, enum zdev_op op, uint32_t zno)
{
	struct zemu *e = to_zemu(dev);
	struct zemu_zone *z = &e->zones[zno];
	int ret;

	if (z->type == ZDEV_ZONE_CONV)
		return -EIO;
	pthread_mutex_lock(&z->lock);
	if (z->cond == ZDEV_COND_READONLY || z->cond == ZDEV_COND_OFFLINE) {
		ret = -EIO;
		goto out_unlock;
	}
	switch (op) {
	case ZDEV_OP_RESET:
		ret = zemu_reset_locked(e, z);
		break;
	case ZDEV_OP_FINISH:
		ret = zemu_finish_locked(e, z);
		break;
	case ZDEV_OP_OPEN:
		ret = zemu_open_locked(e, z);
		break;
	default:
		ret = zemu_close_locked(e, z);
		break;
	}
	/* Reset and finish complete durably, as a drive's zone commands do. */
	if (!ret && (op == ZDEV_OP_RESET || op == ZDEV_OP_FINISH))
		ret = zemu_zone_persist(e, z, zno);
out_unlock:
	pthread_mutex_unlock(&z->lock);
	return ret;
}

static void zemu_close(struct zdev *dev)
{
	struct zemu *e = to_zemu(dev);
	uint32_t i;

	/* Not a flush: what was never flushed stays volatile, and is lost. */
	for (i = 0; e->zones && i < dev->geom.nr_zones; i++)
		pthread_mutex_destroy(&e->zones[i].lock);
	free(e->zones);
	pthread_mutex_destroy(&e->res_lock);
	pthread_mutex_destroy(&e->flush_lock);
	pthread_mutex_destroy(&e->bad_lock);
	if (e->dfd >= 0)
		close(e->dfd);
	if (e->fd >= 0)
		close(e->fd);
	zdev_free_common(dev);
	free(e);
}

static const struct zdev_ops zemu_ops = {
	.name = "emulator",
	.report = zemu_report,
	.read = zemu_read,
	.write = zemu_write,
	.flush = zemu_flush,
	.zone_op = zemu_zone_op,
	.close = zemu_close,
};

bool zemu_is(const struct zdev *dev)
{
	return dev->ops == &zemu_ops;
}

/* ---- creating and opening images ---------------------------------------- */

int zemu_check_params(struct zemu_params *p, char *err, size_t errlen)
{
	char a[32], b[32];

	if (!p->block_size)
		p->block_size = ZEMU_DEFAULT_BLOCK_SIZE;
	if (!p->zone_size)
		p->zone_size = ZEMU_DEFAULT_ZONE_SIZE;
	if (!p->zone_capacity)
		p->zone_capacity = p->zone_size;
	if (p->block_size != 512 && p->block_size != 4096) {
		zutil_err(err, errlen,
			  "block size %u is not supported: use 512 or 4096",
			  p->block_size);
		return -EINVAL;
	}
	if (p->zone_size % p->block_size) {
		zutil_err(err, errlen,
			  "zone size %s is not a multiple of the block size (%u)",
			  zutil_size_str(p->zone_size, a, sizeof(a)),
			  p->block_size);
		return -EINVAL;
	}
	if (p->zone_capacity > p->zone_size) {
		zutil_err(err, errlen,
			  "zone capacity %s is larger than the zone size %s",
			  zutil_size_str(p->zone_capacity, a, sizeof(a)),
			  zutil_size_str(p->zone_size, b, sizeof(b)));
		return -EINVAL;
	}
	if (p->zone_capacity % p->block_size) {
		zutil_err(err, errlen,
			  "zone capacity %s is not a multiple of the block size (%u)",
			  zutil_size_str(p->zone_capacity, a, sizeof(a)),
			  p->block_size);
		return -EINVAL;
	}
	if (!p->size || p->size % p->zone_size) {
		zutil_err(err, errlen,
			  "device size %s is not a non-zero multiple of the zone size %s",
			  zutil_size_str(p->size, a, sizeof(a)),
			  zutil_size_str(p->zone_size, b, sizeof(b)));
		return -EINVAL;
	}
	if (p->size / p->zone_size > UINT32_MAX) {
		zutil_err(err, errlen, "too many zones: use larger zones");
		return -EINVAL;
	}
	if (p->nr_conv >= p->size / p->zone_size) {
		zutil_err(err, errlen,
			  "%u conventional zones leave no sequential zone (the device has %" PRIu64 " zones)",
			  p->nr_conv, p->size / p->zone_size);
		return -EINVAL;
	}
	if (p->max_active && p->max_open > p->max_active) {
		zutil_err(err, errlen,
			  "max open zones (%u) is larger than max active zones (%u)",
			  p->max_open, p->max_active);
		return -EINVAL;
	}
	/*
	 * A limit at or above the number of sequential zones can never be
	 * reached: null_blk turns it off (reports 0), and so do we. Kept, it
	 * would also make an image that zemu_load_hdr() refuses.
	 */
	if (p->max_active >= p->size / p->zone_size - p->nr_conv)
		p->max_active = 0;
	if (p->max_open >= p->size / p->zone_size - p->nr_conv)
		p->max_open = 0;
	return 0;
}

int zemu_create(const char *path, const struct zemu_params *in, char *err,
		size_t errlen)
{
	struct zemu_params p = *in;
	struct zemu_disk_hdr h;
	struct zemu_disk_zone *tab = NULL;
	uint64_t table_len, data_off;
	uint32_t nr, i;
	int fd, ret;

	ret = zemu_check_params(&p, err, errlen);
	if (ret)
		return ret;
	nr = (uint32_t)(p.size / p.zone_size);
	table_len = (uint64_t)nr * sizeof(*tab);
	data_off = ZF_ROUND_UP(ZEMU_TABLE_OFF + table_len, ZEMU_DATA_ALIGN);

	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		ret = -errno;
		zutil_err(err, errlen, "%s: %s", path, strerror(errno));
		return ret;
	}
	if (ftruncate(fd, (off_t)(data_off + p.size)) < 0) {
		ret = -errno;
		zutil_err(err, errlen, "%s: cannot size the image: %s", path,
			  strerror(errno));
		goto out_unlink;
	}

	tab = calloc(nr, sizeof(*tab));
	if (!tab) {
		ret = -ENOMEM;
		zutil_err(err, errlen, "out of memory");
		goto out_unlink;
	}
	for (i = 0; i < nr; i++) {
		struct zemu_zone z = { 0 };

		z.start = (uint64_t)i * p.zone_size;
		if (i < p.nr_conv) {
			z.type = ZDEV_ZONE_CONV;
			z.cond = ZDEV_COND_NOT_WP;
			z.capacity = p.zone_size;
			z.wp = z.start + p.zone_size;
		} else {
			z.type = ZDEV_ZONE_SEQ;
			z.cond = ZDEV_COND_EMPTY;
			z.capacity = p.zone_capacity;
			z.wp = z.start;
		}
		zemu_zone_encode(&z, &tab[i]);
	}
	ret = zemu_pwrite_full(fd, tab, table_len, ZEMU_TABLE_OFF);
	if (ret)
		goto out_io;

	memset(&h, 0, sizeof(h));
	memcpy(h.magic, ZEMU_MAGIC, sizeof(h.magic));
	h.version = htole32(ZEMU_VERSION);
	h.size = htole64(p.size);
	h.zone_size = htole64(p.zone_size);
	h.zone_capacity = htole64(p.zone_capacity);
	h.nr_zones = htole32(nr);
	h.nr_conv = htole32(p.nr_conv);
	h.block_size = htole32(p.block_size);
	h.max_open = htole32(p.max_open);
	h.max_active = htole32(p.max_active);
	h.table_off = htole64(ZEMU_TABLE_OFF);
	h.data_off = htole64(data_off);
	zemu_hdr_seal(&h);
	ret = zemu_pwrite_full(fd, &h, sizeof(h), 0);
	if (ret)
		goto out_io;
	if (fsync(fd) < 0) {
		ret = -errno;
		goto out_io;
	}
	free(tab);
	close(fd);
	return 0;

out_io:
	zutil_err(err, errlen, "%s: cannot write the image: %s", path,
		  strerror(-ret));
out_unlink:
	free(tab);
	close(fd);
	unlink(path);
	return ret;
}

/* Check the header read from @path; fills @e's geometry. */
static int zemu_load_hdr(struct zemu *e, const char *path, uint64_t file_size,
			 char *err, size_t errlen)
{
	struct zemu_disk_hdr *h = &e->hdr;
	struct zdev_geom *g = &e->dev.geom;
	uint64_t size, zsize, zcap, table_off, data_off;
	uint32_t nr, conv, bs;

	if (memcmp(h->magic, ZEMU_MAGIC, sizeof(h->magic))) {
		zutil_err(err, errlen,
			  "%s: not a zonefuse emulator image (create one with `zonefuse emu create`)",
			  path);
		return -EMEDIUMTYPE;
	}
	if (le32toh(h->crc) != crc32c(0, h, offsetof(struct zemu_disk_hdr, crc))) {
		zutil_err(err, errlen,
			  "%s: the emulator image header is damaged (CRC mismatch)",
			  path);
		return -EUCLEAN;
	}
	if (le32toh(h->version) != ZEMU_VERSION || h->features) {
		zutil_err(err, errlen,
			  "%s: emulator image version %u (features 0x%x) is not supported by this zonefuse (version %u)",
			  path, le32toh(h->version), le32toh(h->features),
			  ZEMU_VERSION);
		return -ENOTSUP;
	}
	size = le64toh(h->size);
	zsize = le64toh(h->zone_size);
	zcap = le64toh(h->zone_capacity);
	nr = le32toh(h->nr_zones);
	conv = le32toh(h->nr_conv);
	bs = le32toh(h->block_size);
	table_off = le64toh(h->table_off);
	data_off = le64toh(h->data_off);
	if ((bs != 512 && bs != 4096) || !zsize || zsize % bs || !zcap ||
	    zcap > zsize || zcap % bs || !nr || size / zsize != nr ||
	    size % zsize || conv >= nr || table_off != ZEMU_TABLE_OFF ||
	    data_off < table_off + (uint64_t)nr * sizeof(struct zemu_disk_zone) ||
	    data_off % bs || le32toh(h->max_open) > nr ||
	    le32toh(h->max_active) > nr) {
		zutil_err(err, errlen,
			  "%s: the emulator image header describes an impossible geometry",
			  path);
		return -EUCLEAN;
	}
	/* Written so that a huge data_off or size cannot wrap around. */
	if (size > file_size || data_off > file_size - size) {
		zutil_err(err, errlen,
			  "%s: the image is truncated (%" PRIu64 " bytes, needs %" PRIu64 ")",
			  path, file_size, data_off > UINT64_MAX - size ?
						   UINT64_MAX : data_off + size);
		return -EUCLEAN;
	}
	g->size = size;
	g->zone_size = zsize;
	g->nr_zones = nr;
	g->nr_conv = conv;
	g->block_size = bs;
	g->max_open = le32toh(h->max_open);
	g->max_active = le32toh(h->max_active);
	g->max_io = 1u << 20;
	g->volatile_cache = true; /* writes are lost unless flushed */
	e->table_off = table_off;
	e->data_off = data_off;
	e->dev.file_off = data_off;
	e->media_bytes_written = le64toh(h->media_bytes_written);
	e->flushes = le64toh(h->flushes);
	e->resets = le64toh(h->resets);
	if (le32toh(h->nr_bad) > ZEMU_MAX_BAD) {
		zutil_err(err, errlen,
			  "%s: the emulator image header lists %u media errors (at most %u)",
			  path, le32toh(h->nr_bad), ZEMU_MAX_BAD);
		return -EUCLEAN;
	}
	for (uint32_t i = 0; i < le32toh(h->nr_bad); i++) {
		uint64_t off = le64toh(h->bad[i].off), len = le64toh(h->bad[i].len);

		if (!len || off >= size || len > size - off) {
			zutil_err(err, errlen,
				  "%s: media error %u of the emulator image header lies outside the device",
				  path, i);
			return -EUCLEAN;
		}
		e->bad[i] = (struct zemu_bad){ off, len };
	}
	e->nr_bad = le32toh(h->nr_bad);
	return 0;
}

static bool zemu_cond_valid(uint8_t type, uint8_t cond)
{
	if (type == ZDEV_ZONE_CONV)
		return cond == ZDEV_COND_NOT_WP;
	switch (cond) {
	case ZDEV_COND_EMPTY:
	case ZDEV_COND_IMP_OPEN:
	case ZDEV_COND_EXP_OPEN:
	case ZDEV_COND_CLOSED:
	case ZDEV_COND_FULL:
	case ZDEV_COND_READONLY:
	case ZDEV_COND_OFFLINE:
		return true;
	default:
		return false;
	}
}

/*
 * Load and check the zone table. Zones left open come back closed (or
 * empty), as after a power cycle; that change is written at the next flush.
 */
static int zemu_load_zones(struct zemu *e, const char *path, char *err,
			   size_t errlen)
{
	struct zdev_geom *g = &e->dev.geom;
	struct zemu_disk_zone *tab;
	size_t len = (size_t)g->nr_zones * sizeof(*tab);
	uint32_t i;
	int ret;

	tab = malloc(len);
	e->zones = calloc(g->nr_zones, sizeof(*e->zones));
	if (!tab || !e->zones) {
		ret = -ENOMEM;
		zutil_err(err, errlen, "out of memory");
		goto out_free;
	}
	ret = zemu_pread_full(e->fd, tab, len, e->table_off);
	if (ret) {
		zutil_err(err, errlen, "%s: cannot read the zone table: %s",
			  path, strerror(-ret));
		goto out_free;
	}
	for (i = 0; i < g->nr_zones; i++) {
		struct zemu_disk_zone *d = &tab[i];
		struct zemu_zone *z = &e->zones[i];
		uint8_t type = i < g->nr_conv ? ZDEV_ZONE_CONV : ZDEV_ZONE_SEQ;
		uint64_t wp = le64toh(d->wp);

		z->start = (uint64_t)i * g->zone_size;
		z->len = g->zone_size;
		z->capacity = le64toh(d->capacity);
		z->resets = le64toh(d->resets);
		z->type = d->type;
		z->cond = d->cond;
		z->wp = wp;
		if (le32toh(d->crc) !=
			    crc32c(0, d, offsetof(struct zemu_disk_zone, crc)) ||
		    d->type != type || !zemu_cond_valid(type, d->cond) ||
		    !z->capacity || z->capacity > z->len ||
		    z->capacity % g->block_size || wp < z->start ||
		    wp > z->start + z->len || wp % g->block_size ||
		    (d->cond != ZDEV_COND_FULL && type == ZDEV_ZONE_SEQ &&
		     wp > z->start + z->capacity)) {
			zutil_err(err, errlen,
				  "%s: zone %u's table entry is damaged",
				  path, i);
			ret = -EUCLEAN;
			goto out_free;
		}
		if (z->cond == ZDEV_COND_IMP_OPEN ||
		    z->cond == ZDEV_COND_EXP_OPEN) {
			z->cond = wp == z->start ? ZDEV_COND_EMPTY :
						   ZDEV_COND_CLOSED;
			z->dirty = true;
		}
		if (z->cond == ZDEV_COND_CLOSED)
			e->nr_closed++;
		pthread_mutex_init(&z->lock, NULL);
	}
	free(tab);
	return 0;

out_free:
	free(tab);
	free(e->zones);
	e->zones = NULL;
	return ret;
}

/*
 * Open the image a second time for direct I/O, if the host file system
 * says it can do it (statx STATX_DIOALIGN: ext4, XFS, btrfs since Linux
 * 6.1). Where it cannot say, every write stays buffered, as it must on
 * tmpfs, where the page cache is the store. Nothing fails for want of it.
 */
static void zemu_open_direct(struct zemu *e, const char *path)
{
	struct statx sx;
	uint32_t a;

	if (statx(e->fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) < 0 ||
	    !(sx.stx_mask & STATX_DIOALIGN) || !sx.stx_dio_offset_align)
		return;
	a = ZF_MAX(sx.stx_dio_mem_align, sx.stx_dio_offset_align);
	if (a & (a - 1) || a > 65536)
		return;
	e->dfd = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);
	e->dio_align = a;
}

int zemu_open_dev(const char *path, unsigned int flags, struct zdev **devp,
		  char *err, size_t errlen)
{
	bool rdonly = flags & ZDEV_RDONLY;
	struct zemu *e;
	struct stat st;
	int ret;

	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->fd = -1;
	e->dfd = -1;
	pthread_mutex_init(&e->res_lock, NULL);
	pthread_mutex_init(&e->flush_lock, NULL);
	pthread_mutex_init(&e->bad_lock, NULL);
	ret = zdev_init_common(&e->dev, &zemu_ops, path, flags);
	if (ret)
		goto out_close;

	e->fd = open(path, (rdonly ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	if (e->fd < 0) {
		ret = -errno;
		zutil_err(err, errlen, "%s: %s", path, strerror(errno));
		goto out_close;
	}
	/*
	 * A writer owns the image; a reader that asks for exclusivity (fsck)
	 * shares it with other readers only.
	 */
	if (!rdonly || (flags & ZDEV_EXCL)) {
		if (flock(e->fd, (rdonly ? LOCK_SH : LOCK_EX) | LOCK_NB) < 0) {
			ret = errno == EWOULDBLOCK ? -EBUSY : -errno;
			zutil_err(err, errlen,
				  "%s: the image is in use by another process (is it mounted?)",
				  path);
			goto out_close;
		}
	}
	if (fstat(e->fd, &st) < 0) {
		ret = -errno;
		goto out_close;
	}
	if ((uint64_t)st.st_size < sizeof(e->hdr)) {
		zutil_err(err, errlen,
			  "%s: too small to be an emulator image (%lld bytes)",
			  path, (long long)st.st_size);
		ret = -EMEDIUMTYPE;
		goto out_close;
	}
	ret = zemu_pread_full(e->fd, &e->hdr, sizeof(e->hdr), 0);
	if (ret) {
		zutil_err(err, errlen, "%s: cannot read the header: %s", path,
			  strerror(-ret));
		goto out_close;
	}
	ret = zemu_load_hdr(e, path, (uint64_t)st.st_size, err, errlen);
	if (ret)
		goto out_close;
	ret = zemu_load_zones(e, path, err, errlen);
	if (ret)
		goto out_close;
	if (!rdonly)
		zemu_open_direct(e, path);
	*devp = &e->dev;
	return 0;

out_close:
	zemu_close(&e->dev);
	return ret;
}

int zemu_counters(struct zdev *dev, struct zemu_counters *c)
{
	struct zemu *e;

	if (!zemu_is(dev))
		return -EOPNOTSUPP;
	e = to_zemu(dev);
	c->media_bytes_written = e->media_bytes_written;
	c->flushes = e->flushes;
	c->resets = e->resets;
	return 0;
}

int zemu_set_cond(struct zdev *dev, uint32_t zno, enum zdev_zone_cond cond)
{
	struct zemu *e;
	struct zemu_zone *z;
	int ret;

	if (!zemu_is(dev))
		return -EOPNOTSUPP;
	if (zno >= dev->geom.nr_zones ||
	    (cond != ZDEV_COND_READONLY && cond != ZDEV_COND_OFFLINE))
		return -EINVAL;
	if (dev->flags & ZDEV_RDONLY)
		return -EROFS;
	e = to_zemu(dev);
	z = &e->zones[zno];
	if (z->type == ZDEV_ZONE_CONV)
		return -EINVAL;
	pthread_mutex_lock(&z->lock);
	pthread_mutex_lock(&e->res_lock);
	zemu_cond_set(e, z, (uint8_t)cond);
	pthread_mutex_unlock(&e->res_lock);
	ret = zemu_zone_persist(e, z, zno);
	pthread_mutex_unlock(&z->lock);
	return ret;
}

int zemu_set_bad(struct zdev *dev, uint64_t off, uint64_t len)
{
	struct zemu *e;
	int ret = 0;

	if (!zemu_is(dev))
		return -EOPNOTSUPP;
	if (dev->flags & ZDEV_RDONLY)
		return -EROFS;
	e = to_zemu(dev);
	if (len && (off >= dev->geom.size || len > dev->geom.size - off))
		return -EINVAL;
	pthread_mutex_lock(&e->flush_lock);
	pthread_mutex_lock(&e->bad_lock);
	if (!len)
		e->nr_bad = 0;
	else if (e->nr_bad == ZEMU_MAX_BAD)
		ret = -ENOSPC;
	else
		e->bad[e->nr_bad++] = (struct zemu_bad){ off, len };
	pthread_mutex_unlock(&e->bad_lock);
	if (!ret)
		ret = zemu_hdr_write(e);
	if (!ret && fdatasync(e->fd) < 0)
		ret = -errno;
	pthread_mutex_unlock(&e->flush_lock);
	return ret;
}

uint32_t zemu_bad_list(struct zdev *dev, struct zemu_bad *out, uint32_t max)
{
	struct zemu *e;
	uint32_t i, n;

	if (!zemu_is(dev))
		return 0;
	e = to_zemu(dev);
	pthread_mutex_lock(&e->bad_lock);
	n = e->nr_bad;
	for (i = 0; i < n && i < max; i++)
		out[i] = e->bad[i];
	pthread_mutex_unlock(&e->bad_lock);
	return n;
}
