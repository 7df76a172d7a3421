// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The real-device backend: any Linux zoned block device (null_blk, NVMe ZNS,
 * SMR) through libzbd for zone management and io_uring for data.
 *
 * Data I/O is O_DIRECT: the page cache would hide write-pointer errors
 * until writeback, far from the write that caused them, and zonefuse keeps
 * its own buffers anyway. Each caller thread borrows an io_uring from a
 * small pool, so a batch of reads over several extents, or writes to
 * several zones, is in flight at once without a ring per request.
 *
 * libzbd returns -1 and leaves the reason in errno; this file is the one
 * place that turns that into a negative errno.
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <libzbd/zbd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "zdev_i.h"
#include "zonefuse/util.h"

#define ZBD_RING_DEPTH 64u
#define ZBD_MAX_IO (4u << 20)
#define ZBD_REPORT_CHUNK 4096u

struct zbd_ring {
	struct io_uring ring;
	struct zbd_ring *next; /* in zbd_dev.free_rings */
};

struct zbd_dev {
	struct zdev dev; /* first */
	int fd;
	/* Rings not lent to a thread. Protected by ring_lock. */
	pthread_mutex_t ring_lock;
	struct zbd_ring *free_rings;
	/*
	 * Per zone: its capacity, 0 for a conventional zone. Set at open and
	 * after each reset of the zone (a ZNS drive may change a capacity
	 * there). A zone's entry is written only by a reset of that zone,
	 * which the caller does not issue together with writes to it.
	 */
	_Atomic uint64_t *cap;
};

static struct zbd_dev *to_zbd(struct zdev *dev)
{
	return (struct zbd_dev *)dev;
}

static int zbd_report(struct zdev *dev, uint32_t first, uint32_t nr,
		      struct zdev_zone *out)
{
	struct zbd_dev *z = to_zbd(dev);
	struct zbd_zone *zones;
	uint32_t done = 0;
	int ret = 0;

	zones = calloc(ZF_MIN(nr, ZBD_REPORT_CHUNK), sizeof(*zones));
	if (!zones)
		return -ENOMEM;
	while (done < nr) {
		unsigned int n = ZF_MIN(nr - done, ZBD_REPORT_CHUNK), i;
		uint64_t ofst = zdev_zone_start(dev, first + done);

		ret = zbd_report_zones(z->fd, (off_t)ofst,
				       (off_t)((uint64_t)n * dev->geom.zone_size),
				       ZBD_RO_ALL, zones, &n);
		if (ret) {
			ret = ret == -1 ? -errno : ret;
			goto out_free;
		}
		if (!n)
			break;
		for (i = 0; i < n; i++) {
			struct zdev_zone *o = &out[done + i];

			o->start = zones[i].start;
			o->len = zones[i].len;
			o->capacity = zones[i].capacity;
			o->wp = zones[i].wp;
			/*
			 * A read-only or offline zone has no valid write
			 * pointer: null_blk reports sector -1, which libzbd
			 * turns into 0xfffffffffffffe00. Report start + len,
			 * as for a zone without one, and as the emulator does.
			 */
			if (zones[i].cond == ZBD_ZONE_COND_READONLY ||
			    zones[i].cond == ZBD_ZONE_COND_OFFLINE)
				o->wp = o->start + o->len;
			o->type = (uint8_t)zones[i].type;
			o->cond = (uint8_t)zones[i].cond;
			o->resets = ZDEV_RESETS_UNKNOWN;
		}
		done += n;
	}
	ret = (int)done;
out_free:
	free(zones);
	return ret;
}

static struct zbd_ring *zbd_ring_get(struct zbd_dev *z)
{
	struct zbd_ring *r;

	pthread_mutex_lock(&z->ring_lock);
	r = z->free_rings;
	if (r)
		z->free_rings = r->next;
	pthread_mutex_unlock(&z->ring_lock);
	if (r)
		return r;
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	if (io_uring_queue_init(ZBD_RING_DEPTH, &r->ring, 0) < 0) {
		free(r);
		return NULL;
	}
	return r;
}

static void zbd_ring_put(struct zbd_dev *z, struct zbd_ring *r)
{
	pthread_mutex_lock(&z->ring_lock);
	r->next = z->free_rings;
	z->free_rings = r;
	pthread_mutex_unlock(&z->ring_lock);
}

/*
 * May this write be issued? A device fails a write that crosses its zone's
 * capacity, but the block layer splits a large write (at max_sectors and at
 * zone boundaries) and the device fails only the pieces past the capacity:
 * the ones before it land and move the write pointer, and a write that
 * fills a zone whose capacity is its size runs on into the next zone's
 * write pointer and succeeds. The contract, which the emulator keeps, is
 * that such a write fails and writes nothing, so it is refused here. Only
 * conventional zones may be written across.
 */
static bool zbd_write_fits(struct zbd_dev *z, const struct zdev_io *io)
{
	uint32_t first = zdev_zone_of(&z->dev, io->off);
	uint32_t last = zdev_zone_of(&z->dev, io->off + io->len - 1), i;
	uint64_t cap = z->cap[first];

	if (io->op != ZDEV_OP_WRITE)
		return true;
	if (cap)
		return io->off + io->len <=
		       zdev_zone_start(&z->dev, first) + cap;
	for (i = first + 1; i <= last; i++)
		if (z->cap[i])
			return false;
	return true;
}

/*
 * Issue @nr I/Os on one ring, at most a ring's depth at a time, and wait for
 * all. A short transfer (which a block device gives only at its end, or
 * after a partial failure) is reissued for the rest, so callers see whole
 * I/Os or errors.
 */
static int zbd_submit(struct zdev *dev, struct zdev_io *ios, unsigned int nr)
{
	struct zbd_dev *z = to_zbd(dev);
	struct zbd_ring *r = zbd_ring_get(z);
	size_t *done;
	unsigned int i, base = 0;
	int ret = 0;

	if (!r)
		return -ENOMEM;
	done = calloc(nr, sizeof(*done));
	if (!done) {
		zbd_ring_put(z, r);
		return -ENOMEM;
	}
	while (base < nr) {
		unsigned int n = ZF_MIN(nr - base, ZBD_RING_DEPTH), pending = 0;

		for (i = base; i < base + n; i++) {
			struct io_uring_sqe *sqe;

			if (!zbd_write_fits(z, &ios[i])) {
				ios[i].res = -EIO;
				continue;
			}
			sqe = io_uring_get_sqe(&r->ring);
			if (ios[i].op == ZDEV_OP_READ)
				io_uring_prep_read(sqe, z->fd, ios[i].buf,
						   (unsigned int)ios[i].len,
						   ios[i].off);
			else
				io_uring_prep_write(sqe, z->fd, ios[i].buf,
						    (unsigned int)ios[i].len,
						    ios[i].off);
			io_uring_sqe_set_data64(sqe, i);
			pending++;
		}
		while (pending) {
			struct io_uring_cqe *cqe;

			ret = io_uring_submit_and_wait(&r->ring, 1);
			if (ret < 0 && ret != -EINTR)
				goto out;
			ret = io_uring_wait_cqe(&r->ring, &cqe);
			if (ret == -EINTR)
				continue;
			if (ret < 0)
				goto out;
			i = (unsigned int)io_uring_cqe_get_data64(cqe);
			if (cqe->res < 0) {
				ios[i].res = cqe->res;
			} else if (cqe->res == 0) {
				ios[i].res = -EIO;
			} else if (done[i] + (size_t)cqe->res < ios[i].len) {
				struct io_uring_sqe *sqe;
				char *p;
				uint64_t off;
				unsigned int left;

				done[i] += (size_t)cqe->res;
				p = (char *)ios[i].buf + done[i];
				off = ios[i].off + done[i];
				left = (unsigned int)(ios[i].len - done[i]);
				sqe = io_uring_get_sqe(&r->ring);
				if (ios[i].op == ZDEV_OP_READ)
					io_uring_prep_read(sqe, z->fd, p, left,
							   off);
				else
					io_uring_prep_write(sqe, z->fd, p,
							    left, off);
				io_uring_sqe_set_data64(sqe, i);
				io_uring_cqe_seen(&r->ring, cqe);
				continue;
			}
			io_uring_cqe_seen(&r->ring, cqe);
			pending--;
		}
		base += n;
	}
	ret = 0;
out:
	free(done);
	if (ret < 0) {
		/*
		 * The ring is in an unknown state (its I/Os may still be in
		 * flight): drop it rather than lend it again.
		 */
		io_uring_queue_exit(&r->ring);
		free(r);
		return ret;
	}
	zbd_ring_put(z, r);
	for (i = 0; i < nr; i++)
		if (ios[i].res)
			return ios[i].res;
	return 0;
}

static int zbd_rw(struct zdev *dev, uint8_t op, void *buf, size_t len,
		  uint64_t off)
{
	struct zdev_io io = { .op = op, .buf = buf, .len = len, .off = off };

	return zbd_submit(dev, &io, 1);
}

static int zbd_read(struct zdev *dev, void *buf, size_t len, uint64_t off)
{
	return zbd_rw(dev, ZDEV_OP_READ, buf, len, off);
}

static int zbd_write(struct zdev *dev, const void *buf, size_t len,
		     uint64_t off)
{
	return zbd_rw(dev, ZDEV_OP_WRITE, (void *)buf, len, off);
}

/*
 * Without a volatile cache the kernel completes a flush before it reaches
 * the driver (submit_bio_noacct() drops it), so the call would only cost
 * its system call and an empty bio: 26 us of each journal commit in the
 * peers suite's guest on null_blk, 6 us without (the clock reads around
 * it; bench/results/peers-nullb-m1.json, peers-nullb-wc.json).
 */
static int zbd_flush(struct zdev *dev)
{
	if (!dev->geom.volatile_cache)
		return 0;
	return fdatasync(to_zbd(dev)->fd) < 0 ? -errno : 0;
}

static int zbd_zone_op(struct zdev *dev, enum zdev_op op, uint32_t zone)
{
	struct zbd_dev *z = to_zbd(dev);
	off_t ofst = (off_t)zdev_zone_start(dev, zone);
	off_t len = (off_t)dev->geom.zone_size;
	int ret;

	errno = 0;
	switch (op) {
	case ZDEV_OP_RESET:
		ret = zbd_reset_zones(z->fd, ofst, len);
		break;
	case ZDEV_OP_FINISH:
		ret = zbd_finish_zones(z->fd, ofst, len);
		break;
	case ZDEV_OP_OPEN:
		ret = zbd_open_zones(z->fd, ofst, len);
		break;
	case ZDEV_OP_CLOSE:
		ret = zbd_close_zones(z->fd, ofst, len);
		break;
	default:
		return -EINVAL;
	}
	if (ret)
		return errno ? -errno : -EIO;
	if (op == ZDEV_OP_RESET) {
		struct zdev_zone zn;

		if (zbd_report(dev, zone, 1, &zn) == 1 &&
		    zn.type != ZDEV_ZONE_CONV)
			z->cap[zone] = zn.capacity;
	}
	return 0;
}

static void zbd_dev_close(struct zdev *dev)
{
	struct zbd_dev *z = to_zbd(dev);

	while (z->free_rings) {
		struct zbd_ring *r = z->free_rings;

		z->free_rings = r->next;
		io_uring_queue_exit(&r->ring);
		free(r);
	}
	if (z->fd >= 0)
		zbd_close(z->fd);
	free(z->cap);
	pthread_mutex_destroy(&z->ring_lock);
	zdev_free_common(dev);
	free(z);
}

static const struct zdev_ops zbd_ops = {
	.name = "zbd",
	.report = zbd_report,
	.read = zbd_read,
	.write = zbd_write,
	.flush = zbd_flush,
	.zone_op = zbd_zone_op,
	.submit = zbd_submit,
	.close = zbd_dev_close,
};

/*
 * Find the conventional zones and the zone capacities: the report is the
 * only way to know.
 */
static int zbd_load_zones(struct zdev *dev)
{
	struct zbd_dev *z = to_zbd(dev);
	struct zdev_zone *zones;
	uint32_t i, nr = dev->geom.nr_zones;
	int ret;

	zones = calloc(nr, sizeof(*zones));
	z->cap = calloc(nr, sizeof(*z->cap));
	if (!zones || !z->cap) {
		free(zones);
		return -ENOMEM;
	}
	ret = zbd_report(dev, 0, nr, zones);
	if (ret >= 0) {
		dev->geom.nr_conv = 0;
		for (i = 0; i < (uint32_t)ret; i++) {
			if (zones[i].type == ZDEV_ZONE_CONV)
				dev->geom.nr_conv++;
			else
				z->cap[i] = zones[i].capacity;
		}
		ret = 0;
	}
	free(zones);
	return ret;
}

/*
 * Whether the kernel sends flushes to the device: its queue's write_cache
 * attribute, "write back" or "write through". The kernel reads the same
 * flag at each flush; it is read here once, at open. Anything unreadable
 * counts as a volatile cache: a needless flush costs time, a missing one
 * data.
 */
static bool zbd_volatile_cache(int fd)
{
	char path[64], val[32];
	struct stat st;

	if (fstat(fd, &st) < 0 || !S_ISBLK(st.st_mode))
		return true;
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/queue/write_cache",
		 major(st.st_rdev), minor(st.st_rdev));
	return zutil_read_line(path, val, sizeof(val)) ||
	       strcmp(val, "write through") != 0;
}

int zbd_open_dev(const char *path, unsigned int flags, struct zdev **devp,
		 char *err, size_t errlen)
{
	bool rdonly = flags & ZDEV_RDONLY;
	struct zbd_info info;
	struct zbd_dev *z;
	int oflags, ret;

	zbd_set_log_level(ZBD_LOG_NONE);
	if (zbd_device_is_zoned(path) != 1) {
		zutil_err(err, errlen,
			  "%s: a block device, but not a zoned one (zonefuse needs a zoned device; on a regular disk use an emulator image: zonefuse emu create)",
			  path);
		return -ENOTBLK;
	}
	z = calloc(1, sizeof(*z));
	if (!z)
		return -ENOMEM;
	z->fd = -1;
	pthread_mutex_init(&z->ring_lock, NULL);
	ret = zdev_init_common(&z->dev, &zbd_ops, path, flags);
	if (ret)
		goto out_close;

	oflags = (rdonly ? O_RDONLY : O_RDWR) | O_DIRECT | O_CLOEXEC;
	if (!rdonly || (flags & ZDEV_EXCL))
		oflags |= O_EXCL;
	errno = 0;
	z->fd = zbd_open(path, oflags, &info);
	if (z->fd < 0) {
		ret = errno ? -errno : -EIO;
		z->fd = -1;
		if (ret == -EBUSY)
			zutil_err(err, errlen,
				  "%s: the device is in use (is it mounted?)",
				  path);
		else
			zutil_err(err, errlen, "%s: cannot open: %s", path,
				  strerror(-ret));
		goto out_close;
	}
	z->dev.geom.size = info.nr_sectors << 9;
	z->dev.geom.zone_size = info.zone_size;
	z->dev.geom.nr_zones = info.nr_zones;
	z->dev.geom.block_size = info.lblock_size;
	z->dev.geom.max_open = info.max_nr_open_zones;
	z->dev.geom.max_active = info.max_nr_active_zones;
	z->dev.geom.max_io = ZBD_MAX_IO;
	z->dev.geom.volatile_cache = zbd_volatile_cache(z->fd);
	ret = zbd_load_zones(&z->dev);
	if (ret) {
		zutil_err(err, errlen, "%s: cannot report zones: %s", path,
			  strerror(-ret));
		goto out_close;
	}
	*devp = &z->dev;
	return 0;

out_close:
	zbd_dev_close(&z->dev);
	return ret;
}
