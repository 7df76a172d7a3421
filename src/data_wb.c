// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The writeback: threads that write sealed chunks to zones, oldest first
 * per file, through the file's head (space_write(): the space policy
 * decides what happens when no zone can be had now), then log one EXTENT
 * record per piece. The thread of a last close may write a small file's
 * chunk itself (data_close_inode()).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "data_i.h"
#include "zonefuse/crc32c.h"
#include "zonefuse/util.h"

#define DATA_WB_NICE (-5) /* writeback threads' nice value: see data_wb_main */
#define DATA_WB_BATCH 4u  /* chunks of one file before another's turn */

/*
 * The checksum of block @b of @c as it is now: the one its write took
 * (counted in *@taken), else computed.
 */
static uint32_t data_csum(const struct zfs *fs, const struct zfs_chunk *c,
			  uint32_t b, uint32_t *taken)
{
	if (c->csum_ok[b / 64] & (1ull << (b % 64))) {
		(*taken)++;
		return c->csum[b];
	}
	return crc32c(0, c->data + (size_t)b * fs->bs, fs->bs);
}

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

			if (gap_end > pos) {
				memcpy(c->data + pos, old + (pos - rs),
				       gap_end - pos);
				data_csum_forget(fs, c, pos, gap_end);
			}
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
 * Journal the piece of chunk @c of @rt just written, @len bytes of file
 * offset @foff at device address @addr, clipped to the chunk's limit and
 * the file's size now (a truncate that came while the chunk was written
 * wins), and let its zone go (alloc_landed()). A piece is logged as soon
 * as it is written, not with the rest of its chunk: until its record
 * applies, its bytes hold their zone alive and out of reclaim's reach,
 * and a writer waiting for space with pieces unlogged kept reclaim from
 * the very zone the space was in (the fill test's rewrite after a
 * delete: 1 MiB dead beside 724 KiB written, unlogged, and data lost).
 * The record carries the CRC32C of each block written (docs/format.md).
 * 0, or the record's errno: the piece's bytes are then not the file's.
 */
static int data_log_piece(struct zfs *fs, struct zfs_rt *rt,
			  const struct zfs_chunk *c, uint64_t foff,
			  uint64_t addr, uint64_t len)
{
	struct zm_inode *in = rt->inode;
	struct {
		struct zf_rec_extent rec;
		uint32_t csum[ZFS_CHUNK / 512];
	} r;
	uint32_t bs = fs->bs, nb = ZF_CSUMS(addr, len, bs), i, taken = 0;
	uint32_t first = (uint32_t)(foff - c->foff) / bs;
	uint64_t lim;
	int ret = 0;

	/*
	 * Each block whole, as it went to the device: the write's checksum
	 * where it took one, else taken now; before the locks (the chunk is
	 * the writeback's alone now).
	 */
	for (i = 0; i < nb; i++)
		r.csum[i] = htole32(data_csum(fs, c, first + i, &taken));
	atomic_fetch_add(&fs->csum_at_write, taken);
	atomic_fetch_add(&fs->csum_at_writeback, nb - taken);
	zlock_rd(&fs->meta_lock, ZLOCK_META);
	zlock_wr(&rt->lock, ZLOCK_RT);
	lim = ZF_MIN(c->foff + c->limit, data_vsize(in));
	if (foff < lim) {
		uint64_t n = ZF_MIN(len, lim - foff);

		nb = ZF_CSUMS(addr, n, bs);
		r.rec.ino = htole64(in->ino);
		r.rec.foff = htole64(foff);
		r.rec.addr = htole64(addr);
		r.rec.len = htole64(n);
		r.rec.size = htole64(foff + n);
		r.rec.mtime = (int64_t)htole64((uint64_t)in->mtime);
		ret = rec_log(fs, ZF_REC_EXTENT, &r,
			      (uint32_t)(sizeof(r.rec) + nb * sizeof(r.csum[0])));
		if (!ret)
			rt->flushed += n;
	}
	zlock_unrw(&rt->lock);
	zlock_unrw(&fs->meta_lock);
	alloc_landed(fs, addr, ZF_ROUND_UP(len, (uint64_t)fs->bs), false);
	return ret;
}

/* Bytes of @c filled below its limit. */
static uint32_t chunk_filled(const struct zfs_chunk *c)
{
	uint32_t i, n = 0;

	for (i = 0; i < c->nr && c->fill[i].s < c->limit; i++)
		n += ZF_MIN(c->fill[i].e, c->limit) - c->fill[i].s;
	return n;
}

/*
 * Write chunk @c of @rt to zones, and journal each piece as it lands.
 * *@logged gets the file offset below which the chunk's data is in the
 * journal (all of it on success). Returns 0 or an errno.
 */
static int data_write_chunk(struct zfs *fs, struct zfs_rt *rt,
			    struct zfs_chunk *c, uint64_t *logged)
{
	uint32_t bs = fs->bs, i = 0;
	struct zfs_head *head, *shared;
	int ret = 0;

	*logged = c->foff;
	zlock_wr(&rt->lock, ZLOCK_RT);
	/*
	 * A file that writes whole chunks is large: it gets zones of its
	 * own. Small writes go to the shared heads: the rewrite stream for a
	 * file that rewrites its data, the small-file stream otherwise.
	 * Half a chunk or more of a file that rewrites nothing gets zones of
	 * its own too while the device has active slots to spare: its zone,
	 * parked when the file closes, is one reclaim may pick (a head's is
	 * not), and the small files' zones keep the smallest files (less
	 * copied near full: docs/performance.md, "Half chunks in zones of
	 * their own"). Without slots to spare, such a zone parked for its
	 * directory held the slot a large file needed next, which then began
	 * in the small files' zone and left it full of dead data at its
	 * delete (tests/real/mount.sh, 6 active zones).
	 */
	if (!rt->head &&
	    (data_chunk_full(c) || rt->flushed >= ZFS_CHUNK ||
	     (!rt->hot && chunk_filled(c) >= ZFS_CHUNK / 2 &&
	      alloc_slots_spare(fs))))
		rt->head = alloc_private_head(fs, rt->group);
	shared = rt->hot ? &fs->hot : &fs->small;
	head = rt->head && (data_chunk_full(c) || !rt->hot) ? rt->head : shared;
	zlock_unrw(&rt->lock);

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

		zlock_rd(&rt->lock, ZLOCK_RT);
		ret = data_rmw(fs, rt->inode, c, rs, re);
		zlock_unrw(&rt->lock);
		if (ret)
			return ret;
		while (rs < re) {
			uint64_t addr;
			size_t done;

			/*
			 * Waits for a zone as long as it takes, or shares a
			 * head (space.c): what this chunk wrote so far stays.
			 */
			ret = space_write(fs, &head, shared, c->data + rs,
					  re - rs, &addr, &done);
			if (!ret)
				ret = data_log_piece(fs, rt, c, c->foff + rs,
						     addr, done);
			if (ret)
				return ret;
			rs += (uint32_t)done;
			*logged = c->foff + rs;
		}
	}
	*logged = UINT64_MAX;
	return 0;
}

/*
 * Retire chunk @c of @rt, written and journaled below file offset @logged
 * (data_write_chunk()): its data above that is lost, and its reads fail.
 */
static void data_apply_chunk(struct zfs *fs, struct zfs_rt *rt,
			     struct zfs_chunk *c, uint64_t logged)
{
	zlock_rd(&fs->meta_lock, ZLOCK_META);
	zlock_wr(&rt->lock, ZLOCK_RT);
	data_lost_update(fs, rt, c, logged);
	/* Retire the chunk: it is the oldest sealed one. */
	rt->wb_first = c->next;
	if (!rt->wb_first)
		rt->wb_last = NULL;
	zlock_unrw(&rt->lock);
	zlock_unrw(&fs->meta_lock);

	alloc_unreserve(fs, c->reserved);
	zlock_mutex(&fs->wb_lock, ZLOCK_WB);
	fs->staged -= ZF_MIN((uint64_t)c->alloc, fs->staged);
	fs->wb_pending--;
	pthread_cond_broadcast(&rt->wb_done);
	pthread_cond_broadcast(&fs->stage_cv);
	zlock_unmutex(&fs->wb_lock);
	data_chunk_free(fs, c);
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

	ZLOCK_HELD(&fs->meta_lock);
	ZLOCK_HELD_EXCL(&rt->lock);

	/*
	 * The file closed with its data out: give its head back. Closed
	 * means put_head (the last close found data staged), or no open
	 * file at all: a close that came before this thread made the head
	 * (data_write_chunk()) saw none to give back, and the head kept its
	 * zone, and an active slot, until the kernel forgot the inode.
	 */
	if (rt->head && !rt->open &&
	    (rt->put_head || !rt->inode->nopen)) {
		head = rt->head;
		rt->head = NULL;
		rt->put_head = false;
	}
	freeable = data_unpin(fs, rt, true);
	zlock_mutex(&fs->wb_lock, ZLOCK_WB);
	rt->wb_busy = false;
	pthread_cond_broadcast(&rt->wb_done);
	zlock_unmutex(&fs->wb_lock);
	zlock_unrw(&rt->lock);
	zlock_unrw(&fs->meta_lock);
	if (head)
		alloc_put_head(fs, head);
	if (freeable) {
		struct zm_inode *in;

		zlock_wr(&fs->meta_lock, ZLOCK_META);
		in = zm_iget(&fs->m, ino);
		if (in)
			data_inode_maybe_free(fs, in);
		zlock_unrw(&fs->meta_lock);
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

	zlock_mutex(&fs->wb_lock, ZLOCK_WB);
	yield = fs->wb_queue != NULL;
	if (yield) {
		rt->wb_busy = false;
		data_queue(fs, rt); /* wakes a thread: the caller may be none */
	}
	zlock_unmutex(&fs->wb_lock);
	return yield;
}

/*
 * Write out everything sealed in @rt, oldest first, with a turn for other
 * files every DATA_WB_BATCH chunks.
 */
static void data_wb_inode(struct zfs *fs, struct zfs_rt *rt)
{
	unsigned int done = 0;

	for (;;) {
		struct zfs_chunk *c;
		uint64_t logged;
		int ret;

		/* meta_lock for data_wb_done()'s unpin (data_pin()). */
		zlock_rd(&fs->meta_lock, ZLOCK_META);
		zlock_wr(&rt->lock, ZLOCK_RT);
		c = rt->wb_first;
		if (!c) {
			data_wb_done(fs, rt);
			return;
		}
		zlock_unrw(&rt->lock);
		zlock_unrw(&fs->meta_lock);
		if (done++ == DATA_WB_BATCH) {
			if (data_wb_yield(fs, rt))
				return;
			done = 1;
		}
		logged = c->foff;
		ret = fs->error == -ESHUTDOWN ?
			      -ESHUTDOWN :
			      data_write_chunk(fs, rt, c, &logged);
		if (ret) {
			if (ret != -ESHUTDOWN)
				zlog_err(
					"%s: writing data of inode %" PRIu64
					" at offset %" PRIu64
					" failed: %s; that data is lost, and reads of it fail with EIO until it is written again",
					zdev_path(fs->dev), rt->ino,
					ZF_MAX(logged, c->foff),
					strerror(-ret));
			zlock_wr(&rt->lock, ZLOCK_RT);
			rt->wb_error = ret;
			zlock_unrw(&rt->lock);
		}
		data_apply_chunk(fs, rt, c, logged);
	}
}

static void *data_wb_main(void *arg)
{
	struct zfs *fs = arg;

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
	zlock_mutex(&fs->wb_lock, ZLOCK_WB);
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
		zlock_unmutex(&fs->wb_lock);
		data_wb_inode(fs, rt);
		zlock_mutex(&fs->wb_lock, ZLOCK_WB);
	}
	zlock_unmutex(&fs->wb_lock);
	return NULL;
}

/*
 * Keep the writing of @rt's staged data for the calling thread, about to
 * seal it: true if nothing is sealed yet and no writeback thread has the
 * file, and free zones are not low (see data_close_inode()). The file is
 * then busy, so the seal does not queue it. Caller holds the rt lock
 * exclusive.
 */
static bool data_claim(struct zfs *fs, struct zfs_rt *rt)
{
	bool claim;

	ZLOCK_HELD_EXCL(&rt->lock);

	if (fs->space_low || !rt->open || rt->wb_first)
		return false;
	zlock_mutex(&fs->wb_lock, ZLOCK_WB);
	claim = !rt->wb_queued && !rt->wb_busy;
	if (claim)
		rt->wb_busy = true;
	zlock_unmutex(&fs->wb_lock);
	return claim;
}

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
 * the write. Not while free zones run low (space_low): the space
 * policy's reclaim and waits may take seconds, which a request thread
 * should not. The flag is the background thread's last look, so a close
 * may still meet no zone first; it then does what a writeback thread
 * would (space_write()), which sets the flag for the closes after it: the
 * write path's own backpressure, as a WRITE's space check is.
 */
bool data_close_inode(struct zfs *fs, struct zfs_rt *rt)
{
	bool claim;

	zlock_wr(&rt->lock, ZLOCK_RT);
	/* Closed with its one write unsynced: a vote against. */
	if (rt->opened && rt->unsynced_writes)
		data_vote(fs, -1);
	rt->opened = false;
	if (!rt->seal_on_close) {
		zlock_unrw(&rt->lock);
		return false;
	}
	rt->seal_on_close = false;
	claim = rt->nr_open == 1 && data_claim(fs, rt);
	data_seal_all(fs, rt, 0);
	zlock_unrw(&rt->lock);
	return claim;
}

/*
 * fsync's wait for the staged data, which it writes itself when it may
 * (data_claim()): handing it to a writeback thread cost each fsync that
 * thread's wakeup and the wakeup back, two context switches on the path
 * of the latency that near-full small-file workloads measure (issue 26).
 */
int data_fsync_inode(struct zfs *fs, struct zfs_rt *rt)
{
	bool claim;

	zlock_wr(&rt->lock, ZLOCK_RT);
	if (rt->unsynced_writes) {
		rt->sync_each = rt->unsynced_writes == 1;
		/* Fsynced after its first write since the open: a vote for. */
		if (rt->opened)
			data_vote(fs, 1);
		rt->opened = false;
		rt->unsynced_writes = 0;
	}
	claim = data_claim(fs, rt);
	data_seal_all(fs, rt, 0);
	zlock_unrw(&rt->lock);
	if (claim)
		data_wb_inode(fs, rt);
	return data_flush_inode(fs, rt);
}

void data_write_claimed(struct zfs *fs, struct zfs_rt *rt)
{
	data_wb_inode(fs, rt);
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
	fs->flush_staged = data_flush_all;
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
	zlock_mutex(&fs->wb_lock, ZLOCK_WB);
	fs->wb_stop = true;
	pthread_cond_broadcast(&fs->wb_cv);
	pthread_cond_broadcast(&fs->stage_cv);
	zlock_unmutex(&fs->wb_lock);
	for (i = 0; i < fs->nr_wb; i++)
		pthread_join(fs->wb_threads[i], NULL);
	free(fs->wb_threads);
	fs->wb_threads = NULL;
}
