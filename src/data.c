// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The data path: writes are staged in DRAM chunks per file and written to
 * zones by writeback threads; reads merge zones and staged data.
 *
 * Why stage at all: a zone takes writes only at its write pointer, one at a
 * time. Staging turns whatever the kernel sends (1 MiB writes, sometimes
 * out of order when several daemon threads serve one writer; small
 * unaligned writes) into large, aligned, in-order appends, and lets
 * write() return as soon as the bytes are copied: the device work happens
 * on another thread.
 *
 * A chunk covers ZFS_CHUNK bytes of a file at an aligned offset. Writes
 * fill it in any order; it is sealed when full, when its file is fsynced,
 * when it sits idle past half a commit interval, or under memory pressure.
 * Sealed chunks are written oldest first per file, so a later write to the
 * same bytes always lands after an earlier one. Blocks a chunk only partly
 * covers are completed from the file's current data on the device (the
 * read-modify-write of a partial block), so every extent is block-aligned
 * in the file and on the device.
 *
 * Ordering with the journal: the EXTENT record naming written data is
 * appended only after the device write completed, and a commit flushes the
 * device before it writes records: a record never names data that is not
 * durable.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "zfs_i.h"
#include "zonefuse/util.h"

#define DATA_MAX_OPEN 16u   /* open chunks per file: the reorder window */
#define DATA_MIN_ALLOC 4096u
#define DATA_WB_NICE (-5) /* writeback threads' nice value: see data_wb_main */
#define DATA_WB_BATCH 4u  /* chunks of one file before another's turn */
#define DATA_POOL_KEEP 8u /* chunk buffers kept while idle: data_buf_get */
/* Reads this large use the chunk pool: glibc's default mmap threshold. */
#define DATA_READ_POOL_MIN (128u * 1024u)

/* ---- chunks ------------------------------------------------------------------ */

/* Add [s, e) to @c's filled ranges, merging. */
static int chunk_fill(struct zfs_chunk *c, uint32_t s, uint32_t e)
{
	uint32_t i = 0, j;

	while (i < c->nr && c->fill[i].e < s)
		i++;
	j = i;
	while (j < c->nr && c->fill[j].s <= e) {
		s = ZF_MIN(s, c->fill[j].s);
		e = ZF_MAX(e, c->fill[j].e);
		j++;
	}
	if (j == i) {
		if (c->nr == c->cap) {
			uint32_t ncap = c->cap ? c->cap * 2 : 4;
			struct zfs_range *nf =
				realloc(c->fill, ncap * sizeof(*nf));

			if (!nf)
				return -ENOMEM;
			c->fill = nf;
			c->cap = ncap;
		}
		memmove(&c->fill[i + 1], &c->fill[i],
			(c->nr - i) * sizeof(*c->fill));
		c->nr++;
	} else if (j > i + 1) {
		memmove(&c->fill[i + 1], &c->fill[j],
			(c->nr - j) * sizeof(*c->fill));
		c->nr -= j - i - 1;
	}
	c->fill[i].s = s;
	c->fill[i].e = e;
	return 0;
}

/* Bytes of whole blocks the filled ranges touch, up to @limit. */
static uint64_t chunk_blocks(const struct zfs_chunk *c, uint32_t bs)
{
	uint64_t total = 0, last_end = 0;
	uint32_t i;

	for (i = 0; i < c->nr; i++) {
		uint64_t s = ZF_ROUND_DOWN(c->fill[i].s, bs);
		uint64_t e = ZF_ROUND_UP(ZF_MIN(c->fill[i].e, c->limit), bs);

		if (c->fill[i].s >= c->limit)
			break;
		s = ZF_MAX(s, last_end);
		if (e > s)
			total += e - s;
		last_end = ZF_MAX(last_end, e);
	}
	return total;
}

static bool chunk_full(const struct zfs_chunk *c)
{
	return c->nr == 1 && c->fill[0].s == 0 && c->fill[0].e == ZFS_CHUNK;
}

/*
 * Full-size chunk buffers are kept for reuse: a fresh 1 MiB buffer costs
 * an mmap, 256 page faults and an munmap per chunk (glibc maps buffers
 * that large), and page faults are dear in a VM: with four files written
 * at once, when a pool of 64 held a quarter of the staging budget, faults
 * on new buffers took 12% of the daemon's CPU. The pool holds as many as
 * the staging budget can use; once writing stops for a commit interval,
 * data_pool_trim() gives all but DATA_POOL_KEEP of them back.
 */
static char *data_buf_get(struct zfs *fs)
{
	char *b = NULL;

	pthread_mutex_lock(&fs->wb_lock);
	if (fs->nr_pool)
		b = fs->pool[--fs->nr_pool];
	fs->pool_used = true;
	pthread_mutex_unlock(&fs->wb_lock);
	return b ? b : zdev_buf_alloc(fs->dev, ZFS_CHUNK);
}

static void data_buf_put(struct zfs *fs, char *b, uint32_t len)
{
	if (!b)
		return;
	if (len == ZFS_CHUNK) {
		pthread_mutex_lock(&fs->wb_lock);
		if (fs->nr_pool < fs->pool_max) {
			fs->pool[fs->nr_pool++] = b;
			b = NULL;
		}
		pthread_mutex_unlock(&fs->wb_lock);
	}
	free(b);
}

/*
 * A read buffer of 1 MiB was an mmap and an munmap per READ, its 256 pages
 * faulted in while the device filled them: on a daemon that had not yet
 * written (glibc raises its mmap threshold only once such a buffer is
 * freed), a cold 2 GiB read took 38,000 page faults and twice the CPU,
 * 2.0 against 3.0 GB/s for the FUSE peer. Large reads borrow a chunk
 * buffer instead; small ones are cheap from malloc's arenas and leave the
 * pool's lock alone.
 */
void *data_read_buf(struct zfs *fs, size_t size)
{
	if (size >= DATA_READ_POOL_MIN && size <= ZFS_CHUNK)
		return data_buf_get(fs);
	return zdev_buf_alloc(fs->dev, size ? size : 1);
}

void data_read_buf_put(struct zfs *fs, void *buf, size_t size)
{
	if (size >= DATA_READ_POOL_MIN && size <= ZFS_CHUNK)
		data_buf_put(fs, buf, ZFS_CHUNK);
	else
		free(buf);
}

void data_pool_trim(struct zfs *fs)
{
	for (;;) {
		char *b = NULL;

		pthread_mutex_lock(&fs->wb_lock);
		if (!fs->pool_used && fs->nr_pool > DATA_POOL_KEEP)
			b = fs->pool[--fs->nr_pool];
		else
			fs->pool_used = false;
		pthread_mutex_unlock(&fs->wb_lock);
		if (!b)
			return;
		free(b);
	}
}

void data_pool_free(struct zfs *fs)
{
	while (fs->nr_pool)
		free(fs->pool[--fs->nr_pool]);
	free(fs->pool);
	fs->pool = NULL;
	fs->pool_max = 0;
}

static void chunk_free(struct zfs *fs, struct zfs_chunk *c)
{
	data_buf_put(fs, c->data, c->alloc);
	free(c->fill);
	free(c);
}

/* Grow @c's buffer to hold @need bytes (zeroed). Returns bytes added. */
static int64_t chunk_grow(struct zfs *fs, struct zfs_chunk *c, uint32_t need)
{
	uint32_t n = c->alloc ? c->alloc : DATA_MIN_ALLOC;
	char *nb;

	if (need <= c->alloc)
		return 0;
	while (n < need)
		n *= 2;
	n = ZF_MIN(n, (uint32_t)ZFS_CHUNK);
	nb = n == ZFS_CHUNK ? data_buf_get(fs) : zdev_buf_alloc(fs->dev, n);
	if (!nb)
		return -ENOMEM;
	/*
	 * Bytes no write filled are never read: reads take the filled
	 * ranges only, and the writeback completes partial blocks from the
	 * file's data (zeros for holes) before it writes them.
	 */
	if (c->alloc)
		memcpy(nb, c->data, c->alloc);
	data_buf_put(fs, c->data, c->alloc);
	c->data = nb;
	n -= c->alloc;
	c->alloc += n;
	return n;
}

/* ---- pins and the dirty list --------------------------------------------- */

/*
 * An inode with chunks is pinned (npin): it is not freed, even unlinked and
 * closed, until its chunks are gone. Caller holds the rt lock exclusive
 * and meta_lock, either mode. Pins change only under meta_lock, so that
 * whoever holds it exclusive sees them stand still: an unlink decides in
 * zfs_last_link() whether the inode is busy, and its record then frees the
 * inode (zm_apply()) or not. A writeback thread that unpinned in between
 * left the inode freed with its rt still attached (leaked), and read the
 * freed inode's nlink.
 */
static void data_pin(struct zfs_rt *rt)
{
	if (!rt->pinned) {
		rt->pinned = true;
		__atomic_add_fetch(&rt->inode->npin, 1, __ATOMIC_RELAXED);
	}
}

/*
 * Unpin if nothing is staged and no writeback thread is working on @rt
 * (it unpins when it lets go: data_wb_done()); true if the inode may now
 * be freeable. Locks as for data_pin().
 */
static bool data_unpin(struct zfs *fs, struct zfs_rt *rt, bool by_writeback)
{
	bool busy;

	if (!rt->pinned || rt->open || rt->wb_first)
		return false;
	pthread_mutex_lock(&fs->wb_lock);
	busy = rt->wb_busy || rt->wb_queued;
	pthread_mutex_unlock(&fs->wb_lock);
	if (busy && !by_writeback)
		return false;
	rt->pinned = false;
	__atomic_sub_fetch(&rt->inode->npin, 1, __ATOMIC_RELAXED);
	return !rt->inode->nlink;
}

static void data_dirty_add(struct zfs *fs, struct zfs_rt *rt)
{
	pthread_mutex_lock(&fs->wb_lock);
	if (!rt->dirty) {
		rt->dirty = true;
		rt->dirty_prev = NULL;
		rt->dirty_next = fs->dirty;
		if (fs->dirty)
			fs->dirty->dirty_prev = rt;
		fs->dirty = rt;
	}
	pthread_mutex_unlock(&fs->wb_lock);
}

/* Caller holds wb_lock. */
static void data_dirty_del(struct zfs *fs, struct zfs_rt *rt)
{
	if (!rt->dirty)
		return;
	if (rt->dirty_prev)
		rt->dirty_prev->dirty_next = rt->dirty_next;
	else
		fs->dirty = rt->dirty_next;
	if (rt->dirty_next)
		rt->dirty_next->dirty_prev = rt->dirty_prev;
	rt->dirty = false;
}

/* Queue @rt for the writeback threads. Caller holds wb_lock. */
static void data_queue(struct zfs *fs, struct zfs_rt *rt)
{
	rt->wb_queued = true;
	rt->wb_next = NULL;
	if (fs->wb_tail)
		fs->wb_tail->wb_next = rt;
	else
		fs->wb_queue = rt;
	fs->wb_tail = rt;
	pthread_cond_signal(&fs->wb_cv);
}

/*
 * Seal @c (an open chunk of @rt) and queue it for writeback, unless it is
 * queued or being written already. Caller holds the rt lock exclusive.
 */
static void data_seal(struct zfs *fs, struct zfs_rt *rt, struct zfs_chunk *c)
{
	struct zfs_chunk **pp = &rt->open;

	while (*pp != c)
		pp = &(*pp)->next;
	*pp = c->next;
	rt->nr_open--;
	c->next = NULL;
	if (rt->wb_last)
		rt->wb_last->next = c;
	else
		rt->wb_first = c;
	rt->wb_last = c;

	pthread_mutex_lock(&fs->wb_lock);
	fs->wb_pending++;
	if (!rt->open)
		data_dirty_del(fs, rt);
	if (!rt->wb_queued && !rt->wb_busy)
		data_queue(fs, rt);
	pthread_mutex_unlock(&fs->wb_lock);
}

static void data_seal_all(struct zfs *fs, struct zfs_rt *rt, uint64_t idle_ns)
{
	uint64_t now = zutil_now_mono_ns();
	struct zfs_chunk *c = rt->open, *next;

	for (; c; c = next) {
		next = c->next;
		if (!idle_ns || now - c->mtime_ns >= idle_ns)
			data_seal(fs, rt, c);
	}
}

/* ---- lost data ----------------------------------------------------------------- */

/*
 * A write that was acknowledged but whose writeback failed leaves the
 * file's older bytes (or a hole) under its range. fsync reports the loss
 * once; reads must not pass the older bytes off as the file's. ext4 can
 * return them, from the device once the page cache lets go; zonefuse
 * fails such reads with EIO until the range is written again (and that
 * write lands) or truncated away. The table lives in DRAM only: after a
 * remount the range reads as what the journal recorded, as on ext4.
 * Failed writebacks are rare, so it is a plain array.
 */

/* Does [s, e) of @ino meet a lost range? Caller holds the rt lock. */
static bool data_lost_hit(struct zfs *fs, uint64_t ino, uint64_t s, uint64_t e)
{
	bool hit = false;
	uint32_t i;

	if (!atomic_load_explicit(&fs->nr_lost, memory_order_relaxed))
		return false;
	pthread_mutex_lock(&fs->lost_lock);
	for (i = 0; i < fs->nr_lost && !hit; i++)
		hit = fs->lost[i].ino == ino && fs->lost[i].s < e &&
		      s < fs->lost[i].e;
	pthread_mutex_unlock(&fs->lost_lock);
	return hit;
}

/* Room for @n ranges in all. Caller holds lost_lock. */
static int data_lost_room(struct zfs *fs, uint32_t n)
{
	uint32_t cap;
	struct zfs_lost *l;

	if (n <= fs->cap_lost)
		return 0;
	cap = ZF_MAX(fs->cap_lost * 2, n);
	cap = ZF_MAX(cap, 16u);
	l = realloc(fs->lost, cap * sizeof(*l));
	if (!l)
		return -ENOMEM;
	fs->lost = l;
	fs->cap_lost = cap;
	return 0;
}

/*
 * Take [s, e) of @ino out of the lost ranges. A range split in two needs
 * room for one more; without memory it stays whole, and its reads keep
 * failing: never the other way round. Caller holds the rt lock exclusive
 * (or the inode is being freed).
 */
static void data_lost_cut(struct zfs *fs, uint64_t ino, uint64_t s, uint64_t e)
{
	uint32_t i = 0, n;

	if (!atomic_load_explicit(&fs->nr_lost, memory_order_relaxed))
		return;
	pthread_mutex_lock(&fs->lost_lock);
	n = fs->nr_lost;
	while (i < n) {
		struct zfs_lost *l = &fs->lost[i];

		if (l->ino != ino || l->e <= s || e <= l->s) {
			i++;
		} else if (l->s < s && e < l->e) {
			if (!data_lost_room(fs, n + 1)) {
				l = &fs->lost[i]; /* the array may have moved */
				fs->lost[n++] =
					(struct zfs_lost) { ino, e, l->e };
				l->e = s;
			}
			i++;
		} else if (l->s < s) {
			l->e = s;
			i++;
		} else if (e < l->e) {
			l->s = e;
			i++;
		} else {
			*l = fs->lost[--n];
		}
	}
	atomic_store_explicit(&fs->nr_lost, n, memory_order_relaxed);
	pthread_mutex_unlock(&fs->lost_lock);
}

/* Mark [s, e) of @ino lost. Caller holds the rt lock exclusive. */
static void data_lost_add(struct zfs *fs, uint64_t ino, uint64_t s, uint64_t e)
{
	int ret;

	pthread_mutex_lock(&fs->lost_lock);
	ret = data_lost_room(fs, fs->nr_lost + 1);
	if (!ret) {
		fs->lost[fs->nr_lost] = (struct zfs_lost) { ino, s, e };
		atomic_store_explicit(&fs->nr_lost, fs->nr_lost + 1,
				      memory_order_relaxed);
	}
	pthread_mutex_unlock(&fs->lost_lock);
	if (ret)
		zlog_err("%s: out of memory marking bytes %" PRIu64 "..%" PRIu64
			 " of inode %" PRIu64
			 " lost: reads of them return older data",
			 zdev_path(fs->dev), s, e, ino);
}

/*
 * Chunk @c is retired with its pieces below @logged (a file offset) in the
 * journal and the rest not: its bytes below are the file's now, those
 * above are lost. Only the bytes the writer filled count: the rest of a
 * block was read back from the file (data_rmw()) and stays as it was.
 * Caller holds the rt lock exclusive.
 */
static void data_lost_update(struct zfs *fs, struct zfs_rt *rt,
			     const struct zfs_chunk *c, uint64_t logged)
{
	uint64_t lim = c->foff + c->limit;
	uint32_t i;

	for (i = 0; i < c->nr; i++) {
		uint64_t s = c->foff + c->fill[i].s;
		uint64_t e = ZF_MIN(c->foff + c->fill[i].e, lim);

		if (s >= e)
			break;
		if (s < logged)
			data_lost_cut(fs, rt->ino, s, ZF_MIN(e, logged));
		if (e > logged)
			data_lost_add(fs, rt->ino, ZF_MAX(s, logged), e);
	}
}

void data_lost_forget(struct zfs *fs, uint64_t ino)
{
	data_lost_cut(fs, ino, 0, UINT64_MAX);
}

/* ---- write ------------------------------------------------------------------- */

static struct zfs_chunk *data_chunk_get(struct zfs *fs, struct zfs_rt *rt,
					uint64_t foff)
{
	struct zfs_chunk **pp = &rt->open, *c;

	while (*pp && (*pp)->foff < foff)
		pp = &(*pp)->next;
	if (*pp && (*pp)->foff == foff)
		return *pp;
	if (rt->nr_open >= DATA_MAX_OPEN) {
		/* The window is full: the lowest chunk goes out as it is. */
		data_seal(fs, rt, rt->open);
		return data_chunk_get(fs, rt, foff);
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->foff = foff;
	c->limit = ZFS_CHUNK;
	c->next = *pp;
	*pp = c;
	rt->nr_open++;
	data_pin(rt);
	if (rt->nr_open == 1)
		data_dirty_add(fs, rt);
	return c;
}

ssize_t data_write(struct zfs *fs, struct zm_inode *in, const void *buf,
		   size_t size, uint64_t off)
{
	struct zfs_rt *rt = in->rt;
	const char *p = buf;
	uint64_t pos = off, end = off + size, now = zutil_now_mono_ns();
	int64_t grown = 0;

	while (pos < end) {
		uint64_t foff = ZF_ROUND_DOWN(pos, (uint64_t)ZFS_CHUNK);
		uint32_t s = (uint32_t)(pos - foff);
		uint32_t n = (uint32_t)ZF_MIN(end - pos, (uint64_t)(ZFS_CHUNK - s));
		struct zfs_chunk *c = data_chunk_get(fs, rt, foff);
		int64_t g = c ? chunk_grow(fs, c, s + n) : -ENOMEM;
		uint64_t before;

		if (g < 0)
			break;
		grown += g;
		if (chunk_fill(c, s, s + n))
			break;
		memcpy(c->data + s, p, n);
		c->mtime_ns = now;
		before = c->reserved;
		c->reserved = chunk_blocks(c, fs->bs);
		pthread_mutex_lock(&fs->alloc_lock);
		fs->reserved += c->reserved - before;
		pthread_mutex_unlock(&fs->alloc_lock);
		if (chunk_full(c))
			data_seal(fs, rt, c);
		pos += n;
		p += n;
	}
	if (grown) {
		pthread_mutex_lock(&fs->wb_lock);
		fs->staged += (uint64_t)grown;
		pthread_mutex_unlock(&fs->wb_lock);
	}
	/* Out of memory part way: the pieces copied are the write. */
	if (pos == off)
		return -ENOMEM;
	if (pos > rt->vsize)
		rt->vsize = pos;
	/* Rewriting bytes already written: this file's data dies young. */
	if (off < in->size)
		rt->hot = true;
	in->mtime = in->ctime = zfs_now();
	return (ssize_t)(pos - off);
}

void data_truncate_staged(struct zfs *fs, struct zfs_rt *rt, uint64_t size)
{
	struct zfs_chunk *c, **pp;
	uint64_t freed = 0, unres = 0;

	data_lost_cut(fs, rt->ino, size, UINT64_MAX);
	/* Sealed chunks are immutable: lower their limit. */
	for (c = rt->wb_first; c; c = c->next)
		if (c->foff + c->limit > size)
			c->limit = size > c->foff ? (uint32_t)(size - c->foff) : 0;
	/* Open ones lose their ranges above the size. */
	for (pp = &rt->open; (c = *pp);) {
		uint32_t cut, i;

		if (c->foff + ZFS_CHUNK <= size) {
			pp = &c->next;
			continue;
		}
		cut = size > c->foff ? (uint32_t)(size - c->foff) : 0;
		for (i = 0; i < c->nr;) {
			if (c->fill[i].s >= cut) {
				c->nr = i;
				break;
			}
			if (c->fill[i].e > cut)
				c->fill[i].e = cut;
			i++;
		}
		unres += c->reserved;
		c->reserved = chunk_blocks(c, fs->bs);
		unres -= c->reserved;
		if (!c->nr) {
			*pp = c->next;
			rt->nr_open--;
			freed += c->alloc;
			chunk_free(fs, c);
			continue;
		}
		pp = &c->next;
	}
	if (size < data_vsize(rt->inode))
		rt->hot = true;
	rt->vsize = size;
	pthread_mutex_lock(&fs->wb_lock);
	fs->staged -= ZF_MIN(freed, fs->staged);
	if (!rt->open)
		data_dirty_del(fs, rt);
	pthread_cond_broadcast(&fs->stage_cv);
	pthread_mutex_unlock(&fs->wb_lock);
	if (unres)
		alloc_unreserve(fs, unres);
	/* The caller still holds the inode: it is not freed from here. */
	data_unpin(fs, rt, false);
}

void data_discard(struct zfs *fs, struct zfs_rt *rt)
{
	pthread_rwlock_wrlock(&rt->lock);
	data_truncate_staged(fs, rt, 0);
	pthread_rwlock_unlock(&rt->lock);
}

void data_throttle(struct zfs *fs)
{
	struct timespec ts;

	pthread_mutex_lock(&fs->wb_lock);
	if (fs->staged <= fs->opts.stage_bytes) {
		pthread_mutex_unlock(&fs->wb_lock);
		return;
	}
	pthread_mutex_unlock(&fs->wb_lock);
	/* Over budget: push out what is open, oldest writers first. */
	data_seal_idle(fs, 0);
	pthread_mutex_lock(&fs->wb_lock);
	while (fs->staged > fs->opts.stage_bytes && fs->wb_pending &&
	       !fs->wb_stop) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&fs->stage_cv, &fs->wb_lock, &ts);
	}
	pthread_mutex_unlock(&fs->wb_lock);
}

/* ---- read --------------------------------------------------------------------- */

/* Copy @c's filled bytes that fall in [off, off + size) into @buf. */
static void data_overlay(const struct zfs_chunk *c, char *buf, uint64_t off,
			 size_t size)
{
	uint32_t i;

	for (i = 0; i < c->nr; i++) {
		uint64_t s = c->foff + c->fill[i].s;
		uint64_t e = c->foff + ZF_MIN(c->fill[i].e, c->limit);

		s = ZF_MAX(s, off);
		e = ZF_MIN(e, off + size);
		if (s < e)
			memcpy(buf + (s - off), c->data + (s - c->foff),
			       (size_t)(e - s));
	}
}

/*
 * One piece of a read: [s, t) of the file, at device address a. It is read
 * from the device as whole blocks, straight into the caller's buffer when
 * that lands the blocks in place: the buffer is aligned as the device wants
 * (O_DIRECT), and the piece starts and ends on a block both in the buffer
 * and on the device, so that no widened block spills over another piece
 * or past the buffer. That is every piece of the page-aligned reads the
 * kernel sends, but a file's unaligned end. Other pieces go through a
 * bounce buffer and are copied.
 */
static bool data_read_direct(const struct zfs *fs, const char *buf,
			     uint64_t off, uint64_t s, uint64_t t, uint64_t a)
{
	uint32_t bs = fs->bs;

	return (uintptr_t)buf % zdev_buf_align(fs->dev) == 0 &&
	       (s - off) % bs == 0 && a % bs == 0 && (t - s) % bs == 0;
}

/*
 * Read [off, off + size) of @in's extents (device data) into @buf, zeros
 * for holes. Caller holds the rt lock (shared or exclusive): the extents
 * cannot change, nor their zones be reset, while it reads.
 */
static int data_read_extents(struct zfs *fs, struct zm_inode *in, char *buf,
			     uint64_t off, size_t size)
{
	uint32_t bs = fs->bs, k = zm_extent_find(in, off), n = 0, i;
	struct zdev_io ios[16];
	uint64_t end = off + size, pos = off;
	char *bounce = NULL;
	size_t blen = 0, bpos = 0;
	bool any = false;
	int ret = 0;

	/* Size the bounce buffer: the pieces that need it, in whole blocks. */
	for (i = k; i < in->f.n_ext && in->f.ext[i].foff < end; i++) {
		const struct zm_extent *e = &in->f.ext[i];
		uint64_t s = ZF_MAX(e->foff, off);
		uint64_t t = ZF_MIN(e->foff + e->len, end);
		uint64_t a = e->addr + (s - e->foff);

		any = true;
		if (!data_read_direct(fs, buf, off, s, t, a))
			blen += ZF_ROUND_UP(a + (t - s), bs) -
				ZF_ROUND_DOWN(a, bs);
	}
	if (!any) {
		memset(buf, 0, size); /* all hole */
		return 0;
	}
	if (blen) {
		bounce = zdev_buf_alloc(fs->dev, blen);
		if (!bounce)
			return -ENOMEM;
	}
	while (k < in->f.n_ext && in->f.ext[k].foff < end) {
		/* Up to 16 pieces per batch, all in flight at once. */
		uint32_t first = k;

		n = 0;
		for (; k < in->f.n_ext && in->f.ext[k].foff < end && n < 16;
		     k++) {
			const struct zm_extent *e = &in->f.ext[k];
			uint64_t s = ZF_MAX(e->foff, off);
			uint64_t t = ZF_MIN(e->foff + e->len, end);
			uint64_t a = e->addr + (s - e->foff);
			uint64_t as = ZF_ROUND_DOWN(a, bs);

			ios[n].op = ZDEV_OP_READ;
			ios[n].off = as;
			ios[n].len = (size_t)(ZF_ROUND_UP(a + (t - s), bs) - as);
			if (data_read_direct(fs, buf, off, s, t, a)) {
				ios[n].buf = buf + (s - off);
			} else {
				ios[n].buf = bounce + bpos;
				bpos += ios[n].len;
			}
			n++;
		}
		ret = zdev_submit(fs->dev, ios, n);
		if (ret)
			break;
		for (i = 0; i < n; i++) {
			const struct zm_extent *e = &in->f.ext[first + i];
			uint64_t s = ZF_MAX(e->foff, off);
			uint64_t t = ZF_MIN(e->foff + e->len, end);
			uint64_t a = e->addr + (s - e->foff);

			/* Holes read as zeros: only they are cleared. */
			if (s > pos)
				memset(buf + (pos - off), 0, (size_t)(s - pos));
			if ((char *)ios[i].buf != buf + (s - off))
				memcpy(buf + (s - off),
				       (char *)ios[i].buf + (a - ios[i].off),
				       (size_t)(t - s));
			pos = t;
		}
	}
	if (!ret && pos < end)
		memset(buf + (pos - off), 0, (size_t)(end - pos));
	free(bounce);
	if (ret)
		zlog_err("%s: read of inode %" PRIu64 " at %" PRIu64 " failed: %s",
			 zdev_path(fs->dev), in->ino, off, strerror(-ret));
	return ret;
}

ssize_t data_read(struct zfs *fs, struct zm_inode *in, void *buf, size_t size,
		  uint64_t off)
{
	struct zfs_rt *rt = in->rt;
	const struct zfs_chunk *c;
	uint64_t vsize;
	ssize_t ret;

	pthread_rwlock_rdlock(&rt->lock);
	vsize = data_vsize(in);
	if (off >= vsize) {
		ret = 0;
		goto out_unlock;
	}
	size = (size_t)ZF_MIN((uint64_t)size, vsize - off);
	if (data_lost_hit(fs, in->ino, off, off + size)) {
		ret = -EIO;
		goto out_unlock;
	}
	ret = data_read_extents(fs, in, buf, off, size);
	if (ret)
		goto out_unlock;
	/* Staged data is newer than the extents: sealed first, then open. */
	for (c = rt->wb_first; c; c = c->next)
		data_overlay(c, buf, off, size);
	for (c = rt->open; c; c = c->next)
		data_overlay(c, buf, off, size);
	ret = (ssize_t)size;
out_unlock:
	pthread_rwlock_unlock(&rt->lock);
	return ret;
}

/* ---- writeback ------------------------------------------------------------------ */

struct data_piece {
	uint64_t foff, addr, len;
};

/*
 * Complete the partly filled blocks of [rs, re) (chunk offsets) from the
 * file's current data, so the whole run can be written. Caller holds the
 * rt lock shared.
 */
static int data_rmw(struct zfs *fs, struct zm_inode *in, struct zfs_chunk *c,
		    uint32_t rs, uint32_t re)
{
	uint32_t i, covered = 0;
	char *old;
	int ret;

	for (i = 0; i < c->nr; i++) {
		uint32_t s = ZF_MAX(c->fill[i].s, rs);
		uint32_t e = ZF_MIN(ZF_MIN(c->fill[i].e, c->limit), re);

		if (s < e)
			covered += e - s;
	}
	if (covered == re - rs)
		return 0;
	old = malloc(re - rs);
	if (!old)
		return -ENOMEM;
	ret = data_read_extents(fs, in, old, c->foff + rs, re - rs);
	if (!ret) {
		/* Keep the filled bytes; take the rest from the old data. */
		uint32_t pos = rs;

		for (i = 0; i <= c->nr; i++) {
			uint32_t s = i < c->nr ? ZF_MAX(c->fill[i].s, rs) : re;
			uint32_t gap_end = ZF_MIN(s, re);

			if (gap_end > pos)
				memcpy(c->data + pos, old + (pos - rs),
				       gap_end - pos);
			if (i < c->nr)
				pos = ZF_MAX(pos, ZF_MIN(c->fill[i].e, re));
			if (pos >= re)
				break;
		}
	}
	free(old);
	return ret;
}

/*
 * Staged data was promised space (alloc_reserve counts dead bytes as
 * space: reclaim makes it usable). When the zones are not there yet,
 * let reclaim and resets catch up rather than drop acknowledged data;
 * give up only after about ten seconds.
 */
static bool data_enospc_retry(struct zfs *fs, unsigned int *tries)
{
	struct timespec ts = { 0, 100000000 };

	fs->space_low = true;
	if (++*tries > 100 || fs->error || fs->wb_stop)
		return false;
	gc_collect(fs, 1, true);
	jrnl_commit(fs->j, UINT64_MAX);
	alloc_reclaim(fs);
	nanosleep(&ts, NULL);
	return true;
}

/*
 * Write chunk @c of @rt to zones. Fills @pieces with where each part
 * landed and *@npp with how many, also on failure (those parts are then
 * garbage, but they were written). Returns 0 or an errno.
 */
static int data_write_chunk(struct zfs *fs, struct zfs_rt *rt,
			    struct zfs_chunk *c, struct data_piece **piecesp,
			    uint32_t *maxp, uint32_t *npp)
{
	uint32_t bs = fs->bs, i = 0, np = 0;
	struct data_piece *pieces = *piecesp;
	unsigned int tries = 0;
	struct zfs_head *head;
	int ret = 0;

	pthread_rwlock_wrlock(&rt->lock);
	/*
	 * A file that writes whole chunks is large: it gets zones of its
	 * own. Small writes go to the shared heads: the rewrite stream for a
	 * file that rewrites its data, the small-file stream otherwise.
	 */
	if (!rt->head && (chunk_full(c) || rt->flushed >= ZFS_CHUNK))
		rt->head = alloc_private_head(fs, rt->group);
	if (rt->head && (chunk_full(c) || !rt->hot))
		head = rt->head;
	else
		head = rt->hot ? &fs->hot : &fs->small;
	pthread_rwlock_unlock(&rt->lock);

	while (i < c->nr) {
		uint32_t rs = ZF_ROUND_DOWN(c->fill[i].s, bs), re;

		if (c->fill[i].s >= c->limit)
			break;
		re = ZF_ROUND_UP(ZF_MIN(c->fill[i].e, c->limit), bs);
		/* Extend the run over ranges whose blocks touch it. */
		while (++i < c->nr && c->fill[i].s < c->limit &&
		       ZF_ROUND_DOWN(c->fill[i].s, bs) <= re)
			re = ZF_MAX(re, (uint32_t)ZF_ROUND_UP(
						ZF_MIN(c->fill[i].e, c->limit), bs));
		re = ZF_MIN(re, c->alloc);

		pthread_rwlock_rdlock(&rt->lock);
		ret = data_rmw(fs, rt->inode, c, rs, re);
		pthread_rwlock_unlock(&rt->lock);
		if (ret)
			goto out;
		while (rs < re) {
			uint64_t addr;
			size_t done;

			if (np == *maxp) {
				uint32_t nmax = *maxp * 2;
				struct data_piece *nps =
					realloc(pieces, nmax * sizeof(*nps));

				if (!nps) {
					ret = -ENOMEM;
					goto out;
				}
				pieces = *piecesp = nps;
				*maxp = nmax;
			}
			ret = alloc_head_write(fs, head, c->data + rs, re - rs,
					       &addr, &done);
			if ((ret == -EBUSY || ret == -ENOSPC) &&
			    head->kind == ZFS_HEAD_PRIVATE) {
				/*
				 * No active zone to spare, or no free zone
				 * for a zone of its own: share, never fail.
				 */
				head = rt->hot ? &fs->hot : &fs->small;
				continue;
			}
			/*
			 * Wait for space where the write stopped: what the
			 * chunk wrote so far stays, so a device near full is
			 * not filled further with retries' garbage.
			 */
			if (ret == -ENOSPC && data_enospc_retry(fs, &tries))
				continue;
			if (ret)
				goto out;
			if (np && pieces[np - 1].foff + pieces[np - 1].len ==
					  c->foff + rs &&
			    pieces[np - 1].addr + pieces[np - 1].len == addr &&
			    zm_zone_of(&fs->m, addr) ==
				    zm_zone_of(&fs->m, pieces[np - 1].addr)) {
				pieces[np - 1].len += done;
			} else {
				pieces[np].foff = c->foff + rs;
				pieces[np].addr = addr;
				pieces[np].len = done;
				np++;
			}
			rs += (uint32_t)done;
		}
	}
out:
	*npp = np;
	return ret;
}

/* The pieces' zones no longer wait for their records. */
static void data_land(struct zfs *fs, const struct data_piece *pieces, int np)
{
	int i;

	for (i = 0; i < np; i++)
		alloc_landed(fs, pieces[i].addr,
			     ZF_ROUND_UP(pieces[i].len, (uint64_t)fs->bs), false);
}

/*
 * Journal where chunk @c landed and retire it. The pieces are clipped to
 * the chunk's limit and the file's size now: a truncate that came while
 * the chunk was being written wins. @err: the chunk's write failed (no
 * pieces); its data is lost, as is what a failed record leaves unlogged.
 */
static void data_apply_chunk(struct zfs *fs, struct zfs_rt *rt,
			     struct zfs_chunk *c, struct data_piece *pieces,
			     int np, int err)
{
	struct zm_inode *in = rt->inode;
	uint64_t logged = err ? 0 : UINT64_MAX;
	int i;

	pthread_rwlock_rdlock(&fs->meta_lock);
	pthread_rwlock_wrlock(&rt->lock);
	for (i = 0; i < np; i++) {
		struct zf_rec_extent rec;
		uint64_t vsize = data_vsize(in);
		uint64_t lim = ZF_MIN(c->foff + c->limit, vsize);
		uint64_t len = pieces[i].len;

		if (pieces[i].foff >= lim)
			continue;
		len = ZF_MIN(len, lim - pieces[i].foff);
		rec.ino = htole64(in->ino);
		rec.foff = htole64(pieces[i].foff);
		rec.addr = htole64(pieces[i].addr);
		rec.len = htole64(len);
		rec.size = htole64(pieces[i].foff + len);
		rec.mtime = (int64_t)htole64((uint64_t)in->mtime);
		if (zfs_log(fs, ZF_REC_EXTENT, &rec, sizeof(rec))) {
			logged = pieces[i].foff;
			rt->wb_error = -EIO;
			break;
		}
		rt->flushed += len;
	}
	data_lost_update(fs, rt, c, logged);
	/* Retire the chunk: it is the oldest sealed one. */
	rt->wb_first = c->next;
	if (!rt->wb_first)
		rt->wb_last = NULL;
	pthread_rwlock_unlock(&rt->lock);
	pthread_rwlock_unlock(&fs->meta_lock);
	data_land(fs, pieces, np);

	alloc_unreserve(fs, c->reserved);
	pthread_mutex_lock(&fs->wb_lock);
	fs->staged -= ZF_MIN((uint64_t)c->alloc, fs->staged);
	fs->wb_pending--;
	pthread_cond_broadcast(&rt->wb_done);
	pthread_cond_broadcast(&fs->stage_cv);
	pthread_mutex_unlock(&fs->wb_lock);
	chunk_free(fs, c);
}

/*
 * The writeback is done with @rt: unpin the inode and let go. Once
 * meta_lock is let go others may free @rt, so it is not touched after; an
 * unlinked file whose last data just went is freed here.
 */
static void data_wb_done(struct zfs *fs, struct zfs_rt *rt)
{
	struct zfs_head *head = NULL;
	uint64_t ino = rt->ino;
	bool freeable;

	/* Caller holds meta_lock shared and rt->lock exclusive. */
	if (rt->put_head && !rt->open) {
		head = rt->head;
		rt->head = NULL;
		rt->put_head = false;
	}
	freeable = data_unpin(fs, rt, true);
	pthread_mutex_lock(&fs->wb_lock);
	rt->wb_busy = false;
	pthread_cond_broadcast(&rt->wb_done);
	pthread_mutex_unlock(&fs->wb_lock);
	pthread_rwlock_unlock(&rt->lock);
	pthread_rwlock_unlock(&fs->meta_lock);
	if (head)
		alloc_put_head(fs, head);
	if (freeable) {
		struct zm_inode *in;

		pthread_rwlock_wrlock(&fs->meta_lock);
		in = zm_iget(&fs->m, ino);
		if (in)
			zfs_inode_maybe_free(fs, in);
		pthread_rwlock_unlock(&fs->meta_lock);
	}
}

/*
 * Another file's turn: after DATA_WB_BATCH chunks of @rt, if other files
 * wait, @rt goes to the back of the queue (still pinned: its chunks keep
 * it). Without this a writeback thread stays with a file for as long as
 * its writer keeps sealing chunks: with two files streaming (a checkpoint
 * being written) and two writeback threads, a third file's fsync (the
 * `latest` file) would wait until one of the streams stopped.
 */
static bool data_wb_yield(struct zfs *fs, struct zfs_rt *rt)
{
	bool yield;

	pthread_mutex_lock(&fs->wb_lock);
	yield = fs->wb_queue != NULL;
	if (yield) {
		rt->wb_busy = false;
		data_queue(fs, rt); /* wakes a thread: the caller may be none */
	}
	pthread_mutex_unlock(&fs->wb_lock);
	return yield;
}

/*
 * Write out everything sealed in @rt, oldest first, with a turn for other
 * files every DATA_WB_BATCH chunks.
 */
static void data_wb_inode(struct zfs *fs, struct zfs_rt *rt,
			  struct data_piece **pieces, uint32_t *max)
{
	unsigned int done = 0;

	for (;;) {
		struct zfs_chunk *c;
		uint32_t np;
		int ret;

		/* meta_lock for data_wb_done()'s unpin (data_pin()). */
		pthread_rwlock_rdlock(&fs->meta_lock);
		pthread_rwlock_wrlock(&rt->lock);
		c = rt->wb_first;
		if (!c) {
			data_wb_done(fs, rt);
			return;
		}
		pthread_rwlock_unlock(&rt->lock);
		pthread_rwlock_unlock(&fs->meta_lock);
		if (done++ == DATA_WB_BATCH) {
			if (data_wb_yield(fs, rt))
				return;
			done = 1;
		}
		np = 0;
		ret = fs->error == -ESHUTDOWN ?
			      -ESHUTDOWN :
			      data_write_chunk(fs, rt, c, pieces, max, &np);
		if (ret) {
			/* What was written of it is garbage now. */
			data_land(fs, *pieces, (int)np);
			np = 0;
			if (ret != -ESHUTDOWN)
				zlog_err(
					"%s: writing data of inode %" PRIu64
					" at offset %" PRIu64
					" failed: %s; that data is lost, and reads of it fail with EIO until it is written again",
					zdev_path(fs->dev), rt->ino, c->foff,
					strerror(-ret));
			pthread_rwlock_wrlock(&rt->lock);
			rt->wb_error = ret;
			pthread_rwlock_unlock(&rt->lock);
		}
		data_apply_chunk(fs, rt, c, *pieces, (int)np, ret);
	}
}

static void *data_wb_main(void *arg)
{
	struct zfs *fs = arg;
	uint32_t max = 64;
	struct data_piece *pieces = malloc(max * sizeof(*pieces));

	if (!pieces) {
		zlog_err("out of memory starting a writeback thread");
		return NULL;
	}
	/*
	 * Writeback must drain faster than the request threads stage, or
	 * writers stall at the staging limit and fsync waits. On a machine
	 * with fewer cores than runnable writers, the scheduler's fair share
	 * starves the writeback threads behind every request thread and
	 * writing process: four files written at once on 2 cores went at a
	 * quarter of one file's speed (0.4-0.5 GB/s), 0.5-1.3 GB/s with
	 * this weight. Without CAP_SYS_NICE the call fails and the threads
	 * keep the default.
	 */
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), DATA_WB_NICE);
	pthread_mutex_lock(&fs->wb_lock);
	for (;;) {
		struct zfs_rt *rt = fs->wb_queue;

		if (!rt) {
			if (fs->wb_stop)
				break;
			pthread_cond_wait(&fs->wb_cv, &fs->wb_lock);
			continue;
		}
		fs->wb_queue = rt->wb_next;
		if (!fs->wb_queue)
			fs->wb_tail = NULL;
		rt->wb_queued = false;
		rt->wb_busy = true;
		pthread_mutex_unlock(&fs->wb_lock);
		data_wb_inode(fs, rt, &pieces, &max);
		pthread_mutex_lock(&fs->wb_lock);
	}
	pthread_mutex_unlock(&fs->wb_lock);
	free(pieces);
	return NULL;
}

/* ---- flushing ---------------------------------------------------------------------- */

/*
 * The last close of a file written whole (seal_on_close) starts writing its
 * staged data out, instead of leaving it to idle for half a commit
 * interval. Whole means:
 * - created by the open: a tree being copied or extracted (a dataset, the
 *   shards of a checkpoint) otherwise sat in staging until the budget
 *   (stage_mb) was full, and each writer then waited for all of it to be
 *   written: 8,000 new files of 128 KiB went from 247 to 477 MB/s;
 * - truncated to nothing and written again (the other replace idiom,
 *   open(O_TRUNC) and write): a crash after the truncate's record is
 *   committed then does not leave the file empty or cut short for long
 *   (ext4's auto_da_alloc).
 * A later open that appends is not such a writer: its data still waits, so
 * that small appends gather into whole blocks.
 *
 * A new small file's data was handed to a writeback thread at its last
 * close, which cost each file a wakeup and a sleep of that thread, and its
 * locks taken against the request threads': with 4 KiB files the daemon
 * switched 8.9 times per file, 3.8 with empty ones, and created 6.1-6.9k
 * files/s where writing on the closing thread makes 7.4-8.5k. The close
 * (RELEASE) does not make the program wait, so its thread may as well do
 * the write. Not while free zones run low (space_low): the writeback's
 * ENOSPC retries may wait for seconds, which a request thread should not.
 * The flag is the background thread's last look, so a close may still
 * meet ENOSPC first; it then waits as a writeback thread would, and sets
 * the flag for the closes after it. Before that, taking a zone may run
 * reclaim on the closing thread (alloc_head_zone()), as a WRITE's space
 * check does (alloc_reserve()): the write path's own backpressure.
 */
bool data_close_inode(struct zfs *fs, struct zfs_rt *rt)
{
	bool claim;

	pthread_rwlock_wrlock(&rt->lock);
	if (!rt->seal_on_close) {
		pthread_rwlock_unlock(&rt->lock);
		return false;
	}
	rt->seal_on_close = false;
	claim = !fs->space_low && rt->nr_open == 1 && !rt->wb_first;
	if (claim) {
		pthread_mutex_lock(&fs->wb_lock);
		claim = !rt->wb_queued && !rt->wb_busy;
		if (claim) /* busy: the seal below does not queue it */
			rt->wb_busy = true;
		pthread_mutex_unlock(&fs->wb_lock);
	}
	data_seal_all(fs, rt, 0);
	pthread_rwlock_unlock(&rt->lock);
	return claim;
}

void data_write_claimed(struct zfs *fs, struct zfs_rt *rt)
{
	uint32_t max = 16;
	struct data_piece *pieces = malloc(max * sizeof(*pieces));

	if (!pieces) {
		pthread_mutex_lock(&fs->wb_lock);
		rt->wb_busy = false;
		data_queue(fs, rt);
		pthread_mutex_unlock(&fs->wb_lock);
		return;
	}
	data_wb_inode(fs, rt, &pieces, &max);
	free(pieces);
}

int data_flush_inode(struct zfs *fs, struct zfs_rt *rt)
{
	int ret;

	pthread_rwlock_wrlock(&rt->lock);
	data_seal_all(fs, rt, 0);
	pthread_rwlock_unlock(&rt->lock);
	pthread_mutex_lock(&fs->wb_lock);
	for (;;) {
		bool pending;

		pthread_mutex_unlock(&fs->wb_lock);
		pthread_rwlock_rdlock(&rt->lock);
		pending = rt->wb_first != NULL;
		ret = rt->wb_error;
		rt->wb_error = 0;
		pthread_mutex_lock(&fs->wb_lock);
		pthread_rwlock_unlock(&rt->lock);
		if (!pending || fs->wb_stop)
			break;
		pthread_cond_wait(&rt->wb_done, &fs->wb_lock);
	}
	pthread_mutex_unlock(&fs->wb_lock);
	return ret ? -EIO : 0;
}

void data_seal_idle(struct zfs *fs, uint64_t idle_ns)
{
	struct zfs_rt **list = NULL, *rt;
	size_t n = 0, cap = 0, i;

	/* meta_lock keeps every rt on the dirty list alive. */
	pthread_rwlock_rdlock(&fs->meta_lock);
	pthread_mutex_lock(&fs->wb_lock);
	for (rt = fs->dirty; rt; rt = rt->dirty_next) {
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct zfs_rt **nl = realloc(list, ncap * sizeof(*nl));

			if (!nl)
				break;
			list = nl;
			cap = ncap;
		}
		list[n++] = rt;
	}
	pthread_mutex_unlock(&fs->wb_lock);
	for (i = 0; i < n; i++) {
		pthread_rwlock_wrlock(&list[i]->lock);
		data_seal_all(fs, list[i], idle_ns);
		pthread_rwlock_unlock(&list[i]->lock);
	}
	pthread_rwlock_unlock(&fs->meta_lock);
	free(list);
}

int data_flush_all(struct zfs *fs)
{
	data_seal_idle(fs, 0);
	pthread_mutex_lock(&fs->wb_lock);
	while (fs->wb_pending && !fs->wb_stop)
		pthread_cond_wait(&fs->stage_cv, &fs->wb_lock);
	pthread_mutex_unlock(&fs->wb_lock);
	return 0;
}

/* ---- heads and lifetime ------------------------------------------------------------- */

struct zfs_head *data_release_head(struct zfs *fs, struct zfs_rt *rt)
{
	struct zfs_head *head = NULL;

	(void)fs;
	pthread_rwlock_wrlock(&rt->lock);
	if (rt->head && !rt->open && !rt->wb_first) {
		head = rt->head;
		rt->head = NULL;
	} else if (rt->head) {
		/* Data still staged: the writeback gives it back when done. */
		rt->put_head = true;
	}
	pthread_rwlock_unlock(&rt->lock);
	return head;
}

void data_rt_free(struct zfs *fs, struct zfs_rt *rt)
{
	struct zfs_chunk *c, *next;
	uint64_t freed = 0, unres = 0;

	pthread_mutex_lock(&fs->wb_lock);
	data_dirty_del(fs, rt);
	pthread_mutex_unlock(&fs->wb_lock);
	for (c = rt->open; c; c = next) {
		next = c->next;
		freed += c->alloc;
		unres += c->reserved;
		chunk_free(fs, c);
	}
	for (c = rt->wb_first; c; c = next) {
		next = c->next;
		freed += c->alloc;
		unres += c->reserved;
		chunk_free(fs, c);
	}
	rt->open = rt->wb_first = rt->wb_last = NULL;
	rt->nr_open = 0;
	if (rt->pinned) {
		rt->pinned = false;
		__atomic_sub_fetch(&rt->inode->npin, 1, __ATOMIC_RELAXED);
	}
	if (rt->head) {
		alloc_put_head(fs, rt->head);
		rt->head = NULL;
	}
	pthread_mutex_lock(&fs->wb_lock);
	fs->staged -= ZF_MIN(freed, fs->staged);
	pthread_mutex_unlock(&fs->wb_lock);
	if (unres)
		alloc_unreserve(fs, unres);
}

int data_init(struct zfs *fs)
{
	uint32_t i;
	int ret;

	/*
	 * The staging budget in chunks, and the open chunks over it. A
	 * read-only mount has no background thread to trim the pool: it
	 * keeps for its reads what an idle mount keeps.
	 */
	if (fs->rdonly)
		fs->pool_max = DATA_POOL_KEEP;
	else
		fs->pool_max = (uint32_t)(fs->opts.stage_bytes / ZFS_CHUNK) +
			       DATA_MAX_OPEN;
	fs->pool = calloc(fs->pool_max, sizeof(*fs->pool));
	if (!fs->pool)
		return -ENOMEM;
	if (fs->rdonly)
		return 0;
	fs->nr_wb = fs->opts.wb_threads ? fs->opts.wb_threads : 2;
	fs->wb_threads = calloc(fs->nr_wb, sizeof(*fs->wb_threads));
	if (!fs->wb_threads)
		return -ENOMEM;
	for (i = 0; i < fs->nr_wb; i++) {
		ret = pthread_create(&fs->wb_threads[i], NULL, data_wb_main, fs);
		if (ret) {
			fs->nr_wb = i;
			data_stop(fs);
			return -ret;
		}
	}
	return 0;
}

void data_stop(struct zfs *fs)
{
	uint32_t i;

	if (!fs->wb_threads)
		return;
	pthread_mutex_lock(&fs->wb_lock);
	fs->wb_stop = true;
	pthread_cond_broadcast(&fs->wb_cv);
	pthread_cond_broadcast(&fs->stage_cv);
	pthread_mutex_unlock(&fs->wb_lock);
	for (i = 0; i < fs->nr_wb; i++)
		pthread_join(fs->wb_threads[i], NULL);
	free(fs->wb_threads);
	fs->wb_threads = NULL;
}
