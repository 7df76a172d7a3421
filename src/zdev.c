// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The device layer's front: picks the backend for a path, and wraps every
 * operation with the checks both backends share (alignment, bounds,
 * read-only), the counters and the fault hook. Keeping these here means a
 * backend cannot forget one, and tests can fail any operation of either
 * backend the same way.
 */
#include "zdev_i.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "zonefuse/crashlog.h"
#include "zonefuse/crc32c.h"
#include "zonefuse/util.h"

/*
 * A recording in progress (zdev_record()). One lock serialises the
 * appends, so that the log's order is an order the device could have seen:
 * a record is appended after its operation completed (a flush: before it
 * started), under this lock, which nothing else is taken under.
 */
struct zdev_rec {
	pthread_mutex_t lock;
	int fd;	      /* protected by lock; -1 once an append failed */
	uint64_t seq; /* protected by lock: records appended */
	char *path;
};

/*
 * `umount` of a FUSE mount returns before the daemon has finished writing
 * and closed the device: a tool run right after it (fsck, mkfs, a new
 * mount) would find the device busy. So with ZDEV_WAIT a busy device is
 * retried for a while before giving up.
 */
#define ZDEV_BUSY_WAIT_MS 30000
#define ZDEV_BUSY_STEP_MS 50

static int zdev_open_once(const char *path, unsigned int flags,
			  struct zdev **devp, char *err, size_t errlen)
{
	struct stat st;

	if (stat(path, &st) < 0) {
		int ret = -errno;

		zutil_err(err, errlen, "%s: %s", path, strerror(errno));
		return ret;
	}
	if (S_ISBLK(st.st_mode))
		return zbd_open_dev(path, flags, devp, err, errlen);
	if (S_ISREG(st.st_mode))
		return zemu_open_dev(path, flags, devp, err, errlen);
	zutil_err(err, errlen,
		  "%s: neither a zoned block device nor an emulator image",
		  path);
	return -ENODEV;
}

int zdev_open(const char *path, unsigned int flags, struct zdev **devp,
	      char *err, size_t errlen)
{
	struct timespec ts = { 0, ZDEV_BUSY_STEP_MS * 1000000l };
	const char *rec = getenv(ZDEV_RECORD_ENV);
	int waited, ret = 0;

	for (waited = 0; waited <= ZDEV_BUSY_WAIT_MS; waited += ZDEV_BUSY_STEP_MS) {
		ret = zdev_open_once(path, flags, devp, err, errlen);
		if (!ret && err && errlen)
			err[0] = '\0'; /* an earlier try's "busy" */
		if (ret != -EBUSY || !(flags & ZDEV_WAIT))
			break;
		nanosleep(&ts, NULL);
	}
	/*
	 * Asked to record, a writable open that cannot fails: a crash test
	 * that silently ran without its log would check nothing.
	 */
	if (!ret && rec && rec[0] && !(flags & (ZDEV_RDONLY | ZDEV_NORECORD))) {
		ret = zdev_record(*devp, rec);
		if (ret) {
			zutil_err(err, errlen,
				  "%s: cannot record to %s (%s=%s): %s", path,
				  rec, ZDEV_RECORD_ENV, rec, strerror(-ret));
			zdev_close(*devp);
			*devp = NULL;
		}
	}
	return ret;
}

int zdev_init_common(struct zdev *dev, const struct zdev_ops *ops,
		     const char *path, unsigned int flags)
{
	dev->ops = ops;
	dev->flags = flags;
	dev->path = strdup(path);
	return dev->path ? 0 : -ENOMEM;
}

void zdev_free_common(struct zdev *dev)
{
	free(dev->path);
}

static void zdev_record_stop(struct zdev *dev)
{
	struct zdev_rec *r = atomic_exchange(&dev->rec, NULL);

	if (!r)
		return;
	if (r->fd >= 0)
		close(r->fd);
	pthread_mutex_destroy(&r->lock);
	free(r->path);
	free(r);
}

void zdev_close(struct zdev *dev)
{
	if (!dev)
		return;
	zdev_record_stop(dev);
	dev->ops->close(dev);
}

static int zdev_writev_full(int fd, struct iovec *iov, int cnt)
{
	while (cnt) {
		ssize_t n = writev(fd, iov, cnt);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		while (cnt && (size_t)n >= iov->iov_len) {
			n -= (ssize_t)iov->iov_len;
			iov++;
			cnt--;
		}
		if (cnt) {
			iov->iov_base = (char *)iov->iov_base + n;
			iov->iov_len -= (size_t)n;
		}
	}
	return 0;
}

int zdev_record(struct zdev *dev, const char *path)
{
	struct crashlog_hdr h;
	struct iovec iov;
	struct zdev_rec *r;
	int ret;

	if (dev->flags & ZDEV_RDONLY)
		return -EROFS;
	if (atomic_load(&dev->rec))
		return -EBUSY;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->path = strdup(path);
	if (!r->path) {
		ret = -ENOMEM;
		goto out_free;
	}
	r->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (r->fd < 0) {
		ret = -errno;
		goto out_free;
	}
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, CRASHLOG_MAGIC, sizeof(h.magic));
	h.version = htole32(CRASHLOG_VERSION);
	h.hdr_size = htole32(sizeof(h));
	h.rec_size = htole32(sizeof(struct crashlog_rec));
	h.block_size = htole32(dev->geom.block_size);
	h.dev_size = htole64(dev->geom.size);
	h.zone_size = htole64(dev->geom.zone_size);
	h.nr_zones = htole32(dev->geom.nr_zones);
	h.nr_conv = htole32(dev->geom.nr_conv);
	h.start_ns = (int64_t)htole64((uint64_t)zutil_now_real_ns());
	h.pid = htole32((uint32_t)getpid());
	strncpy(h.dev_path, dev->path, sizeof(h.dev_path) - 1);
	h.crc = htole32(crc32c(0, &h, offsetof(struct crashlog_hdr, crc)));
	iov.iov_base = &h;
	iov.iov_len = sizeof(h);
	ret = zdev_writev_full(r->fd, &iov, 1);
	if (ret)
		goto out_close;
	pthread_mutex_init(&r->lock, NULL);
	atomic_store(&dev->rec, r);
	return 0;

out_close:
	close(r->fd);
out_free:
	free(r->path);
	free(r);
	return ret;
}

uint64_t zdev_record_seq(struct zdev *dev)
{
	struct zdev_rec *r = atomic_load(&dev->rec);
	uint64_t seq;

	if (!r)
		return 0;
	pthread_mutex_lock(&r->lock);
	seq = r->seq;
	pthread_mutex_unlock(&r->lock);
	return seq;
}

/*
 * Append one record. The data's CRC is taken before the lock; the head,
 * whose seq is only known under it, continues that CRC. Returns the
 * record's seq, or UINT64_MAX when not recording (or no longer).
 */
static uint64_t zdev_rec_append(struct zdev *dev, enum crashlog_type type,
				uint64_t off, const void *data, size_t len)
{
	struct zdev_rec *r = atomic_load(&dev->rec);
	struct crashlog_rec h;
	struct iovec iov[2];
	uint64_t seq = UINT64_MAX;
	uint32_t crc;
	int ret;

	if (!r)
		return seq;
	crc = len ? crc32c(0, data, len) : 0;
	memset(&h, 0, sizeof(h));
	h.magic = htole32(CRASHLOG_REC_MAGIC);
	h.off = htole64(off);
	h.len = htole32((uint32_t)len);
	h.zone = htole32(type == CRASHLOG_WRITE || type == CRASHLOG_RESET ||
					 type == CRASHLOG_FINISH ?
				 zdev_zone_of(dev, off) :
				 UINT32_MAX);
	h.type = htole16((uint16_t)type);
	iov[0].iov_base = &h;
	iov[0].iov_len = sizeof(h);
	iov[1].iov_base = (void *)data;
	iov[1].iov_len = len;

	pthread_mutex_lock(&r->lock);
	if (r->fd < 0)
		goto out_unlock;
	h.seq = htole64(r->seq);
	h.crc = htole32(crc32c(crc, &h, sizeof(h)));
	ret = zdev_writev_full(r->fd, iov, len ? 2 : 1);
	if (ret) {
		zlog_err("%s: recording to %s failed: %s; recording stopped, the log ends at record %llu",
			 dev->path, r->path, strerror(-ret),
			 (unsigned long long)r->seq);
		close(r->fd);
		r->fd = -1;
		goto out_unlock;
	}
	seq = r->seq++;
out_unlock:
	pthread_mutex_unlock(&r->lock);
	return seq;
}

const struct zdev_geom *zdev_geom(const struct zdev *dev)
{
	return &dev->geom;
}

const char *zdev_path(const struct zdev *dev)
{
	return dev->path;
}

uint64_t zdev_file_offset(const struct zdev *dev)
{
	return dev->file_off;
}

const char *zdev_backend(const struct zdev *dev)
{
	return dev->ops->name;
}

uint32_t zdev_zone_of(const struct zdev *dev, uint64_t off)
{
	return (uint32_t)(off / dev->geom.zone_size);
}

uint64_t zdev_zone_start(const struct zdev *dev, uint32_t zone)
{
	return (uint64_t)zone * dev->geom.zone_size;
}

static int zdev_fault(struct zdev *dev, enum zdev_op op, uint32_t zone,
		      uint64_t off, size_t len)
{
	zdev_fault_fn hook = dev->fault;

	return hook ? hook(dev->fault_arg, op, zone, off, len) : 0;
}

/* The alignment and bounds rules every data I/O obeys. */
static int zdev_check_io(const struct zdev *dev, const void *buf, size_t len,
			 uint64_t off)
{
	uint32_t bs = dev->geom.block_size;

	if (!len || len % bs || off % bs || (uintptr_t)buf % bs)
		return -EINVAL;
	if (off >= dev->geom.size || len > dev->geom.size - off)
		return -EINVAL;
	return 0;
}

int zdev_report(struct zdev *dev, uint32_t first, uint32_t nr,
		struct zdev_zone *zones)
{
	int ret;

	if (first >= dev->geom.nr_zones)
		return -EINVAL;
	nr = ZF_MIN(nr, dev->geom.nr_zones - first);
	if (!nr)
		return 0;
	ret = zdev_fault(dev, ZDEV_OP_REPORT, first, 0, 0);
	if (ret)
		return ret;
	return dev->ops->report(dev, first, nr, zones);
}

int zdev_read(struct zdev *dev, void *buf, size_t len, uint64_t off)
{
	int ret = zdev_check_io(dev, buf, len, off);

	if (ret)
		return ret;
	ret = zdev_fault(dev, ZDEV_OP_READ, zdev_zone_of(dev, off), off, len);
	if (ret)
		return ret;
	ret = dev->ops->read(dev, buf, len, off);
	if (!ret) {
		dev->st_reads++;
		dev->st_bytes_read += len;
	}
	return ret;
}

int zdev_write(struct zdev *dev, const void *buf, size_t len, uint64_t off)
{
	int ret = zdev_check_io(dev, buf, len, off);

	if (ret)
		return ret;
	if (dev->flags & ZDEV_RDONLY)
		return -EROFS;
	ret = zdev_fault(dev, ZDEV_OP_WRITE, zdev_zone_of(dev, off), off, len);
	if (ret)
		return ret;
	ret = dev->ops->write(dev, buf, len, off);
	if (!ret) {
		dev->st_writes++;
		dev->st_bytes_written += len;
		zdev_rec_append(dev, CRASHLOG_WRITE, off, buf, len);
	}
	return ret;
}

int zdev_flush(struct zdev *dev)
{
	uint64_t seq;
	int ret;

	if (dev->flags & ZDEV_RDONLY)
		return 0;
	ret = zdev_fault(dev, ZDEV_OP_FLUSH, UINT32_MAX, 0, 0);
	if (ret)
		return ret;
	seq = zdev_rec_append(dev, CRASHLOG_FLUSH, 0, NULL, 0);
	ret = dev->ops->flush(dev);
	if (!ret)
		dev->st_flushes++;
	if (seq != UINT64_MAX)
		zdev_rec_append(dev,
				ret ? CRASHLOG_FLUSH_FAILED :
				      CRASHLOG_FLUSH_DONE,
				seq, NULL, 0);
	return ret;
}

int zdev_zone_op(struct zdev *dev, enum zdev_op op, uint32_t zone)
{
	int ret;

	if (op != ZDEV_OP_RESET && op != ZDEV_OP_FINISH &&
	    op != ZDEV_OP_OPEN && op != ZDEV_OP_CLOSE)
		return -EINVAL;
	if (zone >= dev->geom.nr_zones)
		return -EINVAL;
	if (dev->flags & ZDEV_RDONLY)
		return -EROFS;
	ret = zdev_fault(dev, op, zone, zdev_zone_start(dev, zone), 0);
	if (ret)
		return ret;
	ret = dev->ops->zone_op(dev, op, zone);
	if (!ret && op == ZDEV_OP_RESET)
		dev->st_resets++;
	if (!ret && (op == ZDEV_OP_RESET || op == ZDEV_OP_FINISH))
		zdev_rec_append(dev,
				op == ZDEV_OP_RESET ? CRASHLOG_RESET :
						      CRASHLOG_FINISH,
				zdev_zone_start(dev, zone), NULL, 0);
	return ret;
}

int zdev_submit(struct zdev *dev, struct zdev_io *ios, unsigned int nr)
{
	struct zdev_io *sub;
	unsigned int i, n = 0, *idx = NULL;
	int ret, first = 0;

	/* Check everything first, so a bad batch issues nothing. */
	for (i = 0; i < nr; i++) {
		struct zdev_io *io = &ios[i];

		io->res = 0;
		if (io->op != ZDEV_OP_READ && io->op != ZDEV_OP_WRITE)
			return -EINVAL;
		ret = zdev_check_io(dev, io->buf, io->len, io->off);
		if (ret)
			return ret;
		if (io->op == ZDEV_OP_WRITE && (dev->flags & ZDEV_RDONLY))
			return -EROFS;
	}
	if (!dev->ops->submit) {
		for (i = 0; i < nr; i++) {
			struct zdev_io *io = &ios[i];

			if (io->op == ZDEV_OP_READ)
				io->res = zdev_read(dev, io->buf, io->len,
						    io->off);
			else
				io->res = zdev_write(dev, io->buf, io->len,
						     io->off);
			if (io->res && !first)
				first = io->res;
		}
		return first;
	}
	/*
	 * Faulted I/Os are failed here; the rest go to the backend. If some
	 * were faulted, the others are passed in a copy: the caller's array
	 * keeps its order, so that ios[i].res still answers for ios[i].
	 */
	for (i = 0; i < nr; i++) {
		struct zdev_io *io = &ios[i];

		io->res = zdev_fault(dev, io->op, zdev_zone_of(dev, io->off),
				     io->off, io->len);
		if (io->res && !first)
			first = io->res;
	}
	if (first) {
		sub = malloc(nr * sizeof(*sub));
		idx = malloc(nr * sizeof(*idx));
		if (!sub || !idx) {
			free(sub);
			free(idx);
			return -ENOMEM;
		}
		for (i = 0; i < nr; i++) {
			if (ios[i].res)
				continue;
			idx[n] = i;
			sub[n++] = ios[i];
		}
	} else {
		sub = ios;
		n = nr;
	}
	if (n) {
		ret = dev->ops->submit(dev, sub, n);
		if (ret < 0 && !first)
			first = ret;
		for (i = 0; i < n; i++) {
			struct zdev_io *io = idx ? &ios[idx[i]] : &ios[i];

			io->res = sub[i].res;
			if (io->res) {
				if (!first)
					first = io->res;
				continue;
			}
			if (io->op == ZDEV_OP_READ) {
				dev->st_reads++;
				dev->st_bytes_read += io->len;
			} else {
				dev->st_writes++;
				dev->st_bytes_written += io->len;
				zdev_rec_append(dev, CRASHLOG_WRITE, io->off,
						io->buf, io->len);
			}
		}
	}
	if (idx) {
		free(sub);
		free(idx);
	}
	/* The first failure in the caller's order, as the one-by-one path. */
	for (i = 0; i < nr; i++)
		if (ios[i].res)
			return ios[i].res;
	return first;
}

size_t zdev_buf_align(const struct zdev *dev)
{
	return ZF_MAX(dev->geom.block_size, 4096u);
}

void *zdev_buf_alloc(const struct zdev *dev, size_t len)
{
	size_t align = zdev_buf_align(dev);
	void *p;

	if (posix_memalign(&p, align, ZF_ROUND_UP(ZF_MAX(len, 1), align)))
		return NULL;
	return p;
}

const char *zdev_cond_name(uint8_t cond)
{
	switch (cond) {
	case ZDEV_COND_NOT_WP:
		return "not_wp";
	case ZDEV_COND_EMPTY:
		return "empty";
	case ZDEV_COND_IMP_OPEN:
		return "implicit_open";
	case ZDEV_COND_EXP_OPEN:
		return "explicit_open";
	case ZDEV_COND_CLOSED:
		return "closed";
	case ZDEV_COND_READONLY:
		return "read_only";
	case ZDEV_COND_FULL:
		return "full";
	case ZDEV_COND_OFFLINE:
		return "offline";
	default:
		return "unknown";
	}
}

void zdev_set_fault(struct zdev *dev, zdev_fault_fn hook, void *arg)
{
	dev->fault_arg = arg;
	dev->fault = hook;
}

void zdev_get_stats(const struct zdev *dev, struct zdev_stats *st)
{
	st->bytes_written = dev->st_bytes_written;
	st->bytes_read = dev->st_bytes_read;
	st->writes = dev->st_writes;
	st->reads = dev->st_reads;
	st->flushes = dev->st_flushes;
	st->resets = dev->st_resets;
}
