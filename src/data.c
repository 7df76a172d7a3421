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
 *
 * This file: chunks, staging, reads, flushing and the inodes' runtime
 * state; data_wb.c: the writeback threads; data_lost.c: the ranges whose
 * writeback failed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "data_i.h"
#include "zonefuse/crc32c.h"
#include "zonefuse/util.h"

#define DATA_MIN_ALLOC 4096u
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

void data_csum_forget(struct zfs *fs, struct zfs_chunk *c, uint32_t s,
		      uint32_t e)
{
	uint32_t b;

	for (b = s / fs->bs; (uint64_t)b * fs->bs < e; b++)
		c->csum_ok[b / 64] &= ~(1ull << (b % 64));
}

/*
 * The checksums of the blocks that [s, e) of @c, just written, touched:
 * taken now if @take and the block is filled whole (the write has just
 * brought its bytes into the cache), else forgotten. Taken here, they are
 * off the fsync's path: the fsync of a small file writes its data itself
 * (data_flush_inode()), and the writeback would checksum every block
 * after the device write. A large file's are left to the writeback
 * threads, which run beside the writer: taken here, they would lengthen
 * every write() of a checkpoint. Without memory for them, the writeback
 * takes them all.
 */
static void chunk_csum(struct zfs *fs, struct zfs_chunk *c, uint32_t s,
		       uint32_t e, bool take)
{
	const struct zfs_range *r = c->fill;
	uint32_t bs = fs->bs, b;

	data_csum_forget(fs, c, s, e);
	if (!take)
		return;
	/* The write's bytes are all in one filled range, merged. */
	while (r->e < e)
		r++;
	for (b = s / bs; b * bs < e; b++) {
		if (r->s > b * bs || r->e < (b + 1) * bs)
			continue;
		if (!c->csum) {
			c->csum = malloc(ZFS_CHUNK / bs * sizeof(*c->csum));
			if (!c->csum)
				return;
		}
		c->csum[b] = crc32c(0, c->data + (size_t)b * bs, bs);
		c->csum_ok[b / 64] |= 1ull << (b % 64);
	}
}

bool data_chunk_full(const struct zfs_chunk *c)
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

	zlock_mutex(&fs->wb_lock, ZLOCK_WB);
	if (fs->nr_pool)
		b = fs->pool[--fs->nr_pool];
	fs->pool_used = true;
	zlock_unmutex(&fs->wb_lock);
	return b ? b : zdev_buf_alloc(fs->dev, ZFS_CHUNK);
}

static void data_buf_put(struct zfs *fs, char *b, uint32_t len)
{
	if (!b)
		return;
	if (len == ZFS_CHUNK) {
		zlock_mutex(&fs->wb_lock, ZLOCK_WB);
		if (fs->nr_pool < fs->pool_max) {
			fs->pool[fs->nr_pool++] = b;
			b = NULL;
		}
		zlock_unmutex(&fs->wb_lock);
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

		zlock_mutex(&fs->wb_lock, ZLOCK_WB);
		if (!fs->pool_used && fs->nr_pool > DATA_POOL_KEEP)
			b = fs->pool[--fs->nr_pool];
		else
			fs->pool_used = false;
		zlock_unmutex(&fs->wb_lock);
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

void data_chunk_free(struct zfs *fs, struct zfs_chunk *c)
{
	data_buf_put(fs, c->data, c->alloc);
	free(c->fill);
	free(c->csum);
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
bool data_unpin(struct zfs *fs, struct zfs_rt *rt, bool by_writeback)
{
	bool busy;

	ZLOCK_HELD(&fs->meta_lock);
	ZLOCK_HELD_EXCL(&rt->lock);

	if (!rt->pinned || rt->open || rt->wb_first)
		return false;
	zlock_mutex(&fs->wb_lock, ZLOCK_WB);
	busy = rt->wb_busy || rt->wb_queued;
	zlock_unmutex(&fs->wb_lock);
	if (busy && !by_writeback)
		return false;
	rt->pinned = false;
	__atomic_sub_fetch(&rt->inode->npin, 1, __ATOMIC_RELAXED);
	return !rt->inode->nlink;
}

static void data_dirty_add(struct zfs *fs, struct zfs_rt *rt)
{
	zlock_mutex(&fs->wb_lock, ZLOCK_WB);
	if (!rt->dirty) {
		rt->dirty = true;
		rt->dirty_prev = NULL;
		rt->dirty_next = fs->dirty;
		if (fs->dirty)
			fs->dirty->dirty_prev = rt;
		fs->dirty = rt;
	}
	zlock_unmutex(&fs->wb_lock);
}

/* Caller holds wb_lock. */
static void data_dirty_del(struct zfs *fs, struct zfs_rt *rt)
{
	ZLOCK_HELD(&fs->wb_lock);

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
void data_queue(struct zfs *fs, struct zfs_rt *rt)
{
	ZLOCK_HELD(&fs->wb_lock);

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

	ZLOCK_HELD_EXCL(&rt->lock);

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

	zlock_mutex(&fs->wb_lock, ZLOCK_WB);
	fs->wb_pending++;
	if (!rt->open)
		data_dirty_del(fs, rt);
	if (!rt->wb_queued && !rt->wb_busy)
		data_queue(fs, rt);
	zlock_unmutex(&fs->wb_lock);
}

void data_seal_all(struct zfs *fs, struct zfs_rt *rt, uint64_t idle_ns)
{
	uint64_t now = zutil_now_mono_ns();
	struct zfs_chunk *c = rt->open, *next;

	ZLOCK_HELD_EXCL(&rt->lock);

	for (; c; c = next) {
		next = c->next;
		if (!idle_ns || now - c->mtime_ns >= idle_ns)
			data_seal(fs, rt, c);
	}
}

/* ---- write ------------------------------------------------------------------- */

static struct zfs_chunk *data_chunk_get(struct zfs *fs, struct zfs_rt *rt,
					uint64_t foff)
{
	struct zfs_chunk **pp = &rt->open, *c;

	ZLOCK_HELD_EXCL(&rt->lock);

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
		/* Large: a file with zones of its own, or a whole chunk. */
		chunk_csum(fs, c, s, s + n, !rt->head && !data_chunk_full(c));
		c->mtime_ns = now;
		before = c->reserved;
		c->reserved = chunk_blocks(c, fs->bs);
		if (c->reserved != before)
			alloc_restage(fs, before, c->reserved);
		if (data_chunk_full(c))
			data_seal(fs, rt, c);
		pos += n;
		p += n;
	}
	if (grown) {
		zlock_mutex(&fs->wb_lock, ZLOCK_WB);
		fs->staged += (uint64_t)grown;
		zlock_unmutex(&fs->wb_lock);
	}
	/* Out of memory part way: the pieces copied are the write. */
	if (pos == off)
		return -ENOMEM;
	if (pos > rt->vsize)
		rt->vsize = pos;
	/* Rewriting bytes already written: this file's data dies young. */
	if (off < in->size)
		rt->hot = true;
	in->mtime = in->ctime = zutil_now_real_ns();
	/*
	 * The first write since an fsync that followed one write, or since
	 * the open while the files opened lately were fsynced after their
	 * first write (zfs.sync_vote): an fsync is expected, so the data
	 * goes to a writeback thread now, its device write beside the reply
	 * and the fsync's round trip instead of after them (issue 26;
	 * docs/performance.md, "Writes sent at once for the fsync
	 * expected"). A second write before the fsync ends it: staged, small
	 * writes gather into whole blocks and pieces. A wrong guess costs a
	 * partial block written again. After an open, not a piece the kernel
	 * cut from a larger write (DATA_CUT_MIN): a sent piece goes where a
	 * whole file of its size goes, on a device without active slots to
	 * spare the small files' zones (data_write_chunk()), and a stream's
	 * first piece would die there with the stream, beside files that
	 * live on (tests/space/wear.py). One shared zone for pieces of half
	 * a chunk or more raised the write amplification near full
	 * (docs/performance.md).
	 */
	if (rt->unsynced_writes < 2)
		rt->unsynced_writes++;
	if (rt->unsynced_writes == 2 && rt->opened) {
		/* Written again before its first fsync: a vote against. */
		rt->opened = false;
		data_vote(fs, -1);
	}
	if (rt->unsynced_writes == 1 && rt->open &&
	    (rt->sync_each ||
	     (rt->opened && size < DATA_CUT_MIN &&
	      atomic_load(&fs->sync_vote) >= DATA_VOTE_ON))) {
		data_seal_all(fs, rt, 0);
		atomic_fetch_add(&fs->sent_at_once, 1);
	}
	return (ssize_t)(pos - off);
}

void data_vote(struct zfs *fs, int d)
{
	int v = atomic_load(&fs->sync_vote), n;

	do {
		n = ZF_MAX(0, ZF_MIN((int)DATA_VOTE_MAX, v + d));
	} while (n != v &&
		 !atomic_compare_exchange_weak(&fs->sync_vote, &v, n));
}

void data_open_write(struct zfs_rt *rt)
{
	zlock_wr(&rt->lock, ZLOCK_RT);
	rt->opened = true;
	rt->unsynced_writes = 0;
	zlock_unrw(&rt->lock);
}

void data_truncate_staged(struct zfs *fs, struct zfs_rt *rt, uint64_t size)
{
	struct zfs_chunk *c, **pp;
	uint64_t freed = 0, unres = 0;

	ZLOCK_HELD_EXCL(&rt->lock);

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
			data_chunk_free(fs, c);
			continue;
		}
		pp = &c->next;
	}
	if (size < data_vsize(rt->inode))
		rt->hot = true;
	rt->vsize = size;
	zlock_mutex(&fs->wb_lock, ZLOCK_WB);
	fs->staged -= ZF_MIN(freed, fs->staged);
	if (!rt->open)
		data_dirty_del(fs, rt);
	pthread_cond_broadcast(&fs->stage_cv);
	zlock_unmutex(&fs->wb_lock);
	if (unres)
		alloc_unreserve(fs, unres);
	/* The caller still holds the inode: it is not freed from here. */
	data_unpin(fs, rt, false);
}

void data_discard(struct zfs *fs, struct zfs_rt *rt)
{
	zlock_wr(&rt->lock, ZLOCK_RT);
	data_truncate_staged(fs, rt, 0);
	zlock_unrw(&rt->lock);
}

void data_throttle(struct zfs *fs)
{
	struct timespec ts;

	zlock_mutex(&fs->wb_lock, ZLOCK_WB);
	if (fs->staged <= fs->opts.stage_bytes) {
		zlock_unmutex(&fs->wb_lock);
		return;
	}
	zlock_unmutex(&fs->wb_lock);
	/* Over budget: push out what is open, oldest writers first. */
	data_seal_idle(fs, 0);
	zlock_mutex(&fs->wb_lock, ZLOCK_WB);
	while (fs->staged > fs->opts.stage_bytes && fs->wb_pending &&
	       !fs->wb_stop) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&fs->stage_cv, &fs->wb_lock, &ts);
	}
	zlock_unmutex(&fs->wb_lock);
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
 * Check the blocks just read for extents @first.. of @in (@ios, @n of
 * them) against their checksums. A mismatch is never handed back as the
 * file's bytes: -EIO, and the log says which file, offset and zone.
 */
static int data_csum_check(struct zfs *fs, struct zm_inode *in, uint32_t first,
			   const struct zdev_io *ios, uint32_t n)
{
	uint32_t i;
	uint64_t bad;

	for (i = 0; i < n; i++) {
		const struct zm_extent *e = &in->f.ext[first + i];
		uint64_t foff;

		if (!zm_csum_check(&fs->m, ios[i].off, ios[i].buf, ios[i].len,
				   &bad))
			continue;
		foff = e->foff + (bad > e->addr ? bad - e->addr : 0);
		atomic_fetch_add(&fs->csum_errors, 1);
		zlog_err("%s: inode %" PRIu64 ": the block at file offset %" PRIu64 " (zone %u, device offset 0x%" PRIx64 ") does not match its checksum: the read fails with EIO",
			 zdev_path(fs->dev), in->ino, ZF_ROUND_DOWN(foff, (uint64_t)fs->bs),
			 zm_zone_of(&fs->m, bad), bad);
		return -EIO;
	}
	return 0;
}

/*
 * Read [off, off + size) of @in's extents (device data) into @buf, zeros
 * for holes. Every block read is checked against its checksum. Caller holds the rt lock (shared or exclusive): the extents
 * cannot change, nor their zones be reset, while it reads.
 */
int data_read_extents(struct zfs *fs, struct zm_inode *in, char *buf,
			     uint64_t off, size_t size)
{
	uint32_t bs = fs->bs, k = zm_extent_find(in, off), n = 0, i;
	struct zdev_io ios[16];
	uint64_t end = off + size, pos = off;
	char *bounce = NULL;
	size_t blen = 0, bpos = 0;
	bool any = false;
	int ret = 0;

	ZLOCK_HELD(&((struct zfs_rt *)in->rt)->lock);

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
		ret = data_csum_check(fs, in, first, ios, n);
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

	zlock_rd(&rt->lock, ZLOCK_RT);
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
	zlock_unrw(&rt->lock);
	return ret;
}

/* ---- flushing ---------------------------------------------------------------------- */

/*
 * An error met by the writeback of any chunk it waited for is this
 * flush's, even if later chunks went well: each turn of the wait takes
 * what was reported meanwhile. Taking the last turn's alone, an fsync
 * that began before a chunk failed and ended after the next one landed
 * returned 0 for lost data.
 */
int data_flush_inode(struct zfs *fs, struct zfs_rt *rt)
{
	int ret = 0;

	zlock_wr(&rt->lock, ZLOCK_RT);
	data_seal_all(fs, rt, 0);
	zlock_unrw(&rt->lock);
	zlock_mutex(&fs->wb_lock, ZLOCK_WB);
	for (;;) {
		bool pending;

		zlock_unmutex(&fs->wb_lock);
		zlock_wr(&rt->lock, ZLOCK_RT);
		pending = rt->wb_first != NULL;
		if (rt->wb_error)
			ret = rt->wb_error;
		rt->wb_error = 0;
		zlock_mutex(&fs->wb_lock, ZLOCK_WB);
		zlock_unrw(&rt->lock);
		if (!pending || fs->wb_stop)
			break;
		pthread_cond_wait(&rt->wb_done, &fs->wb_lock);
	}
	zlock_unmutex(&fs->wb_lock);
	return ret ? -EIO : 0;
}

void data_seal_idle(struct zfs *fs, uint64_t idle_ns)
{
	struct zfs_rt **list = NULL, *rt;
	size_t n = 0, cap = 0, i;

	/* meta_lock keeps every rt on the dirty list alive. */
	zlock_rd(&fs->meta_lock, ZLOCK_META);
	zlock_mutex(&fs->wb_lock, ZLOCK_WB);
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
	zlock_unmutex(&fs->wb_lock);
	for (i = 0; i < n; i++) {
		zlock_wr(&list[i]->lock, ZLOCK_RT);
		data_seal_all(fs, list[i], idle_ns);
		zlock_unrw(&list[i]->lock);
	}
	zlock_unrw(&fs->meta_lock);
	free(list);
}

int data_flush_all(struct zfs *fs)
{
	data_seal_idle(fs, 0);
	zlock_mutex(&fs->wb_lock, ZLOCK_WB);
	while (fs->wb_pending && !fs->wb_stop)
		pthread_cond_wait(&fs->stage_cv, &fs->wb_lock);
	zlock_unmutex(&fs->wb_lock);
	return 0;
}

/* ---- heads and lifetime ------------------------------------------------------------- */

struct zfs_head *data_release_head(struct zfs *fs, struct zfs_rt *rt)
{
	struct zfs_head *head = NULL;

	(void)fs;
	zlock_wr(&rt->lock, ZLOCK_RT);
	if (rt->head && !rt->open && !rt->wb_first) {
		head = rt->head;
		rt->head = NULL;
	} else if (rt->head) {
		/* Data still staged: the writeback gives it back when done. */
		rt->put_head = true;
	}
	zlock_unrw(&rt->lock);
	return head;
}

struct zfs_rt *data_rt_get(struct zfs *fs, struct zm_inode *in)
{
	struct zfs_rt *rt = in->rt;

	(void)fs;
	if (rt)
		return rt;
	rt = calloc(1, sizeof(*rt));
	if (!rt)
		return NULL;
	pthread_rwlock_init(&rt->lock, NULL);
	pthread_cond_init(&rt->wb_done, NULL);
	rt->ino = in->ino;
	rt->inode = in;
	in->rt = rt;
	return rt;
}

void data_rt_destroy(struct zm_inode *in)
{
	struct zfs_rt *rt = in->rt;

	if (!rt)
		return;
	pthread_rwlock_destroy(&rt->lock);
	pthread_cond_destroy(&rt->wb_done);
	free(rt);
	in->rt = NULL;
}

/*
 * An unlinked inode that neither the kernel nor an open file uses is freed,
 * and the INODE_FREE record says so (replay frees it at its last unlink).
 * Here, with the inode's runtime state, because the writeback frees an
 * unlinked file whose last data just went (data_wb_done()).
 */
void data_inode_maybe_free(struct zfs *fs, struct zm_inode *in)
{
	struct zf_rec_ino rec;
	struct zfs_rt *rt = in->rt;

	if (in->nlink || zm_inode_busy(in) || in->ino == ZF_ROOT_INO)
		return;
	data_lost_forget(fs, in->ino);
	if (rt) {
		data_rt_free(fs, rt);
		data_rt_destroy(in);
	}
	rec.ino = htole64(in->ino);
	if (rec_log(fs, ZF_REC_INODE_FREE, &rec, sizeof(rec)) &&
	    !rec_writable(fs))
		zlog_err("%s: freeing inode %" PRIu64 " failed",
			 zdev_path(fs->dev), in->ino);
}

void data_rt_free(struct zfs *fs, struct zfs_rt *rt)
{
	struct zfs_chunk *c, *next;
	uint64_t freed = 0, unres = 0;

	zlock_mutex(&fs->wb_lock, ZLOCK_WB);
	data_dirty_del(fs, rt);
	zlock_unmutex(&fs->wb_lock);
	for (c = rt->open; c; c = next) {
		next = c->next;
		freed += c->alloc;
		unres += c->reserved;
		data_chunk_free(fs, c);
	}
	for (c = rt->wb_first; c; c = next) {
		next = c->next;
		freed += c->alloc;
		unres += c->reserved;
		data_chunk_free(fs, c);
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
	zlock_mutex(&fs->wb_lock, ZLOCK_WB);
	fs->staged -= ZF_MIN(freed, fs->staged);
	zlock_unmutex(&fs->wb_lock);
	if (unres)
		alloc_unreserve(fs, unres);
}
