/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Inside the file system core: the state zfs*.c (namespace, attributes,
 * mount), data*.c (staging, writeback, reads), space.c (the policy for
 * "no room now"), gc.c (reclaim, wear leveling), alloc*.c (zones, slots,
 * space) and rec.c (the record operation) share. The calls go one way:
 * zfs -> data -> space -> gc -> alloc -> rec -> meta, jrnl -> zdev.
 *
 * Locks, in the order they are taken (zlock.h checks it, and the
 * "caller holds" of the functions that say so, in checking builds):
 *
 *   zfs.gc_lock (mutex)      one reclaim at a time (and wear leveling).
 *   zfs.meta_lock (rwlock)   every metadata change holds it, shared for
 *                            data-path changes (size, extents), exclusive
 *                            for namespace changes; the journal's snapshot
 *                            takes it exclusive, so no record is ever
 *                            between zm_apply() and jrnl_append().
 *   zfs_rt.lock (rwlock)     one inode's data: extents, size, times, staged
 *                            chunks. Readers shared, writers exclusive.
 *                            Several are taken in increasing ino order.
 *   zfs.wb_lock (mutex)      writeback queue and staging memory.
 *   zfs_head.lock (mutex)    one write head: its zone and that zone's write
 *                            pointer; held across the device write (one
 *                            write per zone) and nothing else: a head that
 *                            cannot get a zone lets it go before the space
 *                            policy waits or reclaims.
 *   zfs.alloc_lock (mutex)   zone states, slots, open zones, free space,
 *                            zone valid byte counts (zm_zone.valid), the
 *                            reset queue; and the order of every metadata
 *                            record (rec_log()). Other heads' locks are
 *                            only tried under it.
 *   zfs.lost_lock (mutex)    the lost ranges (data_lost.c): a leaf.
 *   zfs.bg_lock (mutex)      the background thread's wake-ups: a leaf.
 *   jrnl's lock, zdev's locks
 *
 * An inode's metadata fields (mode, uid, times, size) are changed with
 * meta_lock held (either mode) and the inode's rt lock exclusive; they may
 * be read with meta_lock exclusive, or with meta_lock shared and the rt
 * lock held. Namespace fields (entries, nlink) need meta_lock exclusive to
 * change and shared to read.
 */
#ifndef ZONEFUSE_ZFS_I_H
#define ZONEFUSE_ZFS_I_H

#include <pthread.h>
#include <stdatomic.h>

#include "zlock.h"
#include "zonefuse/jrnl.h"
#include "zonefuse/meta.h"
#include "zonefuse/zdev.h"
#include "zonefuse/zfs.h"

/*
 * A staged chunk: up to ZFS_CHUNK bytes of one file at a chunk-aligned
 * offset, filled by write() in any order, then sealed and written to a
 * zone by a writeback thread.
 */
struct zfs_chunk {
	struct zfs_chunk *next; /* in zfs_rt.open by foff, or the wb FIFO */
	uint64_t foff;		/* file offset of data[0], ZFS_CHUNK-aligned */
	char *data;		/* aligned buffer, zeroed where not filled */
	uint32_t alloc;		/* bytes allocated at data */
	/* Filled byte ranges [s, e) of data, sorted and merged. */
	uint32_t nr, cap;
	struct zfs_range {
		uint32_t s, e;
	} * fill;
	/*
	 * Bytes from foff still part of the file: a truncate below a sealed
	 * chunk lowers it, and the chunk's data above it is not applied.
	 */
	uint32_t limit;
	uint64_t reserved; /* space reserved for it (alloc_reserve) */
	uint64_t mtime_ns; /* monotonic time of the last write into it */
	/*
	 * The CRC32C of each block of data (fs->bs bytes) that a write left
	 * filled whole, taken by that write (data_write()); bit b of csum_ok
	 * set: csum[b] is block b's checksum as its bytes are now. csum is
	 * NULL until a write takes one. Changed under the rt lock held
	 * exclusive while the chunk is open, by its writeback alone once
	 * sealed (data_rmw()), like data.
	 */
	uint32_t *csum;
	uint64_t csum_ok[ZFS_CHUNK / 512 / 64];
};

/*
 * Per-inode runtime state, from first open to last forget. Fields are
 * protected by lock unless said otherwise.
 */
struct zfs_rt {
	pthread_rwlock_t lock; /* see the lock order above */
	struct zfs_chunk *open; /* chunks being filled, by foff */
	uint32_t nr_open;
	struct zfs_chunk *wb_first, *wb_last; /* sealed, oldest first */
	uint64_t vsize;	      /* size with staged data (in->size is what
				 records made durable-able) */
	bool pinned;	      /* holds inode->npin: has chunks */
	int wb_error;	      /* a writeback failed: reported by fsync */
	bool put_head;	      /* give the head back once written out */
	struct zfs_head *head; /* private write head, or NULL */
	uint64_t group;	      /* placement group: the directory the file was
				 created in (files written together die
				 together), 0 if unknown */
	bool hot;	      /* rewritten: its small writes go to the hot
				 stream */
	uint64_t flushed;     /* data bytes written to zones so far */
	bool seal_on_close;   /* created by an open, or truncated to 0 from
				 a non-empty size: the last close writes
				 the staged data out (data_close_inode()) */
	/*
	 * The fsync expected after a write (data_write()): the writes since
	 * the last fsync or the open (counting to 2), whether that fsync
	 * followed a single write (the next write's data goes out at once),
	 * and whether the file has been open for writing since before its
	 * first fsync (that fsync, or the last close, votes in
	 * zfs.sync_vote). Protected by lock.
	 */
	uint8_t unsynced_writes;
	bool sync_each;
	bool opened;
	/*
	 * The kernel's caching of this file (ZFS_OPEN_* in zfs.h), protected
	 * by zfs.meta_lock. rt lives until the kernel forgets the inode, and
	 * the page cache dies with the kernel's inode, so neither outlives
	 * the other.
	 */
	uint32_t nocache;  /* open handles that bypass the page cache */
	bool cache_stale;  /* such a handle may have written: the next
			      cached open drops the page cache */
	uint64_t ino;
	struct zm_inode *inode;
	/*
	 * Writeback scheduling: protected by zfs.wb_lock. wb_busy: a
	 * writeback thread, or the thread of the last close, is writing the
	 * sealed chunks (data_close_inode()).
	 */
	bool wb_queued, wb_busy;
	struct zfs_rt *wb_next;
	pthread_cond_t wb_done; /* with zfs.wb_lock: a chunk was applied */
	struct zfs_rt *dirty_next, *dirty_prev; /* zfs.dirty */
	bool dirty;
};

/*
 * Streams of data with different lifetimes, kept in different zones so
 * that zones die whole: large files (one head each), small new files,
 * rewritten data (small files rewritten in place, overwrites), what
 * reclaim copies (cold: it has already outlived its zone-mates), and what
 * wear leveling moves (the coldest: data that never died).
 */
enum zfs_head_kind {
	ZFS_HEAD_SMALL,	  /* small files and tails, shared */
	ZFS_HEAD_PRIVATE, /* one large file's own zones */
	ZFS_HEAD_HOT,	  /* rewritten data, shared */
	ZFS_HEAD_GC,	  /* data moved by reclaim */
	ZFS_HEAD_COLD,	  /* data moved by wear leveling (gc.c) */
};

/*
 * A write head: the zone data of one stream is appended to. Heads do not
 * own zones for good: when zones or active slots run short another head
 * takes over the zone of one that is not writing (alloc.c).
 */
struct zfs_head {
	pthread_mutex_t lock; /* held across the device write; zone is
				 changed with it and alloc_lock held
				 (others only try it) */
	uint32_t zone;	      /* ZF_NO_ZONE: take one on the next write */
	enum zfs_head_kind kind;
	uint64_t group;	      /* placement group (private heads) */
	struct zfs_head *next; /* in zfs.heads, under alloc_lock */
};

/* Zone roles (zm_zone.flags), under alloc_lock. */
#define ZFS_ZF_HEAD (1u << 0)	/* a head's current zone */
#define ZFS_ZF_PARKED (1u << 1) /* partly written, no head: reusable by
				   its group (zm_zone.owner), by the shared
				   heads if it has none (0) or free zones
				   are short, by anyone when zones or slots
				   run out */
#define ZFS_ZF_RESETQ (1u << 2) /* queued for reset */
#define ZFS_ZF_GC (1u << 3)	/* being emptied by reclaim */

/*
 * What the allocator counts per zone against the device's limits, apart
 * from the zone's role: protected by alloc_lock. alloc_settle() is the one
 * place that turns a zone's state into these counts.
 */
struct zfs_zone_acct {
	bool active;	/* a data zone counted in zfs.nr_active */
	bool open;	/* open on the device: counted in zfs.nr_open */
	bool io;	/* a write to it is in flight: not to be closed */
	uint64_t waste;	/* room a finish skipped while the zone held live
			   data: not usable until the zone is reset */
	uint64_t wr_epoch; /* zfs.resets_done when it was last written:
			      wear leveling's measure of cold data */
};

struct zfs {
	struct zdev *dev;
	struct zf_super sb;
	struct zmeta m;
	struct jrnl *j;
	struct zfs_opts opts;
	uint32_t bs;
	bool rdonly;

	pthread_rwlock_t meta_lock;

	/*
	 * Allocator state: protected by alloc_lock. alloc_lock also orders
	 * every metadata record: rec_log() applies and appends under it, so
	 * that records reach the journal in the order they were applied.
	 */
	pthread_mutex_t alloc_lock;
	pthread_cond_t alloc_cv; /* event moved (alloc_event()) */
	uint64_t event;		/* bumped when something a waiter may want
				   frees: a write ends, a zone fills, is
				   finished, reset or taken over, space is
				   unreserved */
	struct zfs_head *heads; /* private heads */
	struct zfs_head small;	/* the shared heads */
	struct zfs_head hot;
	struct zfs_head gc;
	struct zfs_head cold;
	struct zfs_zone_acct *acct; /* per zone */
	uint32_t nr_active;	/* data zones counted active (acct.active) */
	uint32_t max_active;	/* the device's active limit, 0: none */
	uint32_t nr_open;	/* zones counted open (acct.open) */
	uint32_t max_open;	/* the device's open limit, 0: none */
	uint32_t jrnl_slots;	/* active slots the journal's chain keeps: 2
				   with its mirror, else 1 (set at mount) */
	bool super_slot;	/* the live super zone keeps an active slot
				   for good (enough slots); else it takes one
				   only while an anchor is written */
	bool super_busy;	/* an anchor is being written */
	uint32_t *resetq;	/* dead zones waiting for their reset */
	uint32_t nr_resetq;
	uint64_t reserved;	/* bytes staged, promised to writers */
	uint32_t reserve_zones;
	_Atomic uint64_t snap_bytes; /* size of the last journal snapshot */
	uint64_t pending_total;	/* sum of zm_zone.pending */
	uint64_t copy_pending;	/* reclaim's part of pending_total */
	uint64_t waste_total;	/* sum of acct.waste */
	uint64_t resets_done;	/* zone resets since mount */
	uint32_t nr_gc_victims;	/* zones flagged ZFS_ZF_GC */
	uint64_t usable_cap;	/* capacity of zones data may use ... */
	uint64_t max_zcap;	/* ... and the largest zone capacity */
	bool cap_dirty;		/* zone states changed: recount those */

	/* Writeback: protected by wb_lock. */
	pthread_mutex_t wb_lock;
	pthread_cond_t wb_cv;	   /* work queued, or stopping */
	pthread_cond_t stage_cv;   /* staging memory freed */
	struct zfs_rt *wb_queue, *wb_tail;
	struct zfs_rt *dirty;	   /* inodes with open chunks, LRU */
	uint64_t staged;	   /* bytes of chunk buffers */
	uint64_t wb_pending;	   /* sealed chunks not yet applied */
	char **pool;		   /* free ZFS_CHUNK buffers (data.c) */
	uint32_t nr_pool, pool_max;
	bool pool_used;		   /* a buffer taken since the last trim */
	bool wb_stop;
	uint32_t nr_wb;
	pthread_t *wb_threads;

	/*
	 * Background: commit timer, reclaim, wear leveling. bg_lock is a
	 * leaf: taken under alloc_lock (alloc_zone_dead()), nothing taken
	 * under it.
	 */
	pthread_t bg_thread;
	bool bg_started;
	pthread_mutex_t bg_lock;
	pthread_cond_t bg_cv;
	bool bg_stop, bg_kick; /* protected by bg_lock */
	bool bg_dead;	       /* a zone's data all died: commit soon, so that
				  it can be reset (protected by bg_lock) */

	/* Reclaim: one collector at a time. Lock order: first of all. */
	pthread_mutex_t gc_lock;
	_Atomic uint64_t wear_bytes; /* bytes wear leveling moved (gc_bytes
					counts them too) */
	/*
	 * Write out every staged chunk and wait for it (data_flush_all(),
	 * set by data_init()): the space check's way to let staged
	 * overwrites give their old bytes back (space.c).
	 */
	int (*flush_staged)(struct zfs *fs);
	/*
	 * Free zones are low: gc_wanted() as the background thread last saw
	 * it, or a data write met ENOSPC since. Closes then leave their data
	 * to the writeback threads (data_close_inode()).
	 */
	_Atomic bool space_low;
	/* Writes whose data went out at once for the fsync expected. */
	_Atomic uint64_t sent_at_once; /* zfs_stats.writes_sent_at_once */
	/*
	 * How the files opened for writing lately were synced, 0 to
	 * DATA_VOTE_MAX: one fsynced after its first write counts +1, one
	 * written again before its first fsync or closed unsynced -1. From
	 * DATA_VOTE_ON, the first write after an open goes out at once
	 * unless the kernel cut it from a larger write (data_write()).
	 */
	_Atomic int sync_vote;

	/* Counters since mount (added to the journaled lifetime ones). */
	_Atomic uint64_t host_bytes;
	_Atomic uint64_t last_write_ns; /* monotonic time of the last write() */
	uint64_t base_device_bytes; /* lifetime device bytes at mount */
	uint64_t base_host_bytes;
	uint64_t base_gc_bytes;
	uint64_t base_meta_bytes;
	_Atomic uint64_t gc_bytes;
	_Atomic uint64_t csum_errors; /* blocks read that failed their
					 checksum, since mount */
	/* Blocks written whose checksum their write took / the writeback. */
	_Atomic uint64_t csum_at_write, csum_at_writeback;
	/* fsyncs since mount, their time, and of it their data's (ns). */
	_Atomic uint64_t fsyncs, fsync_ns, fsync_data_ns;
	/* Callers' time making room, reclaim's copies on it (space_do()). */
	_Atomic uint64_t space_stall_ns, gc_bytes_by_writers;
	/* The daemon's FUSE transport (zfs_set_transport()), NULL: none. */
	_Atomic(const char *) transport;

	struct jrnl_replay_info replay; /* how the mount's replay went */
	bool verified;	/* checking builds: zm_verify() passed at mount */

	/* The sticky error: a metadata write failed, we are read-only. */
	_Atomic int error;

	/*
	 * Ranges of files whose last write never reached the device (its
	 * writeback failed, or its extents could not be logged): reads of
	 * them fail with EIO rather than return the older bytes, until they
	 * are written again or truncated away (data.c). Kept in DRAM only.
	 * Protected by lost_lock, a leaf; nr_lost is also read without it,
	 * under the inode's rt lock, which every change holds too (but the
	 * forgetting of a freed inode's ranges, which no read can meet).
	 */
	pthread_mutex_t lost_lock;
	struct zfs_lost {
		uint64_t ino, s, e; /* bytes [s, e) of inode ino */
	} * lost;
	_Atomic uint32_t nr_lost;
	uint32_t cap_lost;
};

/* ---- rec.c: the record operation ---------------------------------------- */

/*
 * Apply a record (zm_apply()) and append it to the journal, in one step
 * under alloc_lock. The caller holds meta_lock and the locks the record's
 * inodes need. 0; -EROFS on a read-only or failed file system; -ENOMEM
 * with nothing changed; -EIO when the record does not apply (a bug) or
 * was applied but could not be appended: both make the file system
 * read-only (rec_fail()).
 */
int rec_log(struct zfs *fs, uint16_t type, const void *rec, uint32_t len);
/* Record the first metadata failure (sticky), say so, turn read-only. */
void rec_fail(struct zfs *fs, int err, const char *what);
/* 0, or -EROFS on a read-only mount or after a failure. */
int rec_writable(struct zfs *fs);
/* Journal callbacks (space_jrnl_cb): a snapshot, durability, failure. */
int rec_snapshot(void *arg, zm_emit_fn emit, void *emit_arg);
void rec_durable(void *arg, uint64_t seq);
void rec_jrnl_failed(void *arg, int err);

/* ---- zfs.c ---------------------------------------------------------------- */

void zfs_fill_stat(struct zfs *fs, const struct zm_inode *in, struct stat *st);

/* ---- zfs.c helpers shared by zfs_*.c ------------------------------------- */

/* The largest file: a size or a write beyond it is -EFBIG. */
#define ZFS_MAX_FILE_SIZE ZF_MAX_FILE_SIZE
/* ZFS_OPEN_* for an open of @in with access @acc (meta_lock exclusive). */
unsigned int zfs_cache_mode(struct zm_inode *in, struct zfs_rt *rt, int acc);
/* 0 if @ctx (NULL: the file system) may access @in for @mask, or -EACCES. */
int zfs_perm(const struct zfs_ctx *ctx, const struct zm_inode *in, int mask);
/* @in's attributes as a record's zf_dattr, little-endian. */
void zfs_dattr(const struct zm_inode *in, struct zf_dattr *a);
/* The live directory @ino in *@dp, or -ENOENT, -ENOTDIR (meta_lock held). */
int zfs_get_dir(struct zfs *fs, uint64_t ino, struct zm_inode **dp);
/* @mode less the set-ID bits a write or truncate by @ctx clears (@gid: the file's). */
uint32_t zfs_kill_suid(const struct zfs_ctx *ctx, uint32_t gid, uint32_t mode);

/* ---- data.c --------------------------------------------------------------- */

/* The inode's runtime state, created on first use (meta_lock held). */
struct zfs_rt *data_rt_get(struct zfs *fs, struct zm_inode *in);
/* Free @in->rt once emptied (data_rt_free()); meta_lock exclusive or alone. */
void data_rt_destroy(struct zm_inode *in);
/*
 * Free an unlinked inode nobody uses any more, with its INODE_FREE record
 * (meta_lock exclusive).
 */
void data_inode_maybe_free(struct zfs *fs, struct zm_inode *in);
int data_init(struct zfs *fs);
/* Stop the writeback threads (after data_flush_all()). */
void data_stop(struct zfs *fs);
/* Seal every open chunk and wait until all data is applied. */
int data_flush_all(struct zfs *fs);
/* Same for one inode. */
int data_flush_inode(struct zfs *fs, struct zfs_rt *rt);
/*
 * @rt's file is opened for writing, and no handle had it open: the writes
 * count from here (rt.unsynced_writes), and its first fsync or last close
 * votes (zfs.sync_vote). meta_lock held, rt lock not.
 */
void data_open_write(struct zfs_rt *rt);
/*
 * The last close of a linked file: if its data goes out at close
 * (seal_on_close), seal all of it. A file of one chunk, while free zones
 * are not low, is kept for the caller: true, and the caller must then
 * call data_write_claimed() once it holds no lock (the rt stays pinned
 * until then). Otherwise the data is queued for the writeback threads, or
 * left staged: false.
 */
bool data_close_inode(struct zfs *fs, struct zfs_rt *rt);
/* Write what data_close_inode() kept, as a writeback thread would. */
void data_write_claimed(struct zfs *fs, struct zfs_rt *rt);
/*
 * data_flush_inode() for fsync: the staged data is written on the calling
 * thread, not a writeback thread's, when none has the file already and
 * free zones are not low. The caller holds no lock and the file open.
 */
int data_fsync_inode(struct zfs *fs, struct zfs_rt *rt);
/* Seal chunks idle for more than @idle_ns (commit timer). */
void data_seal_idle(struct zfs *fs, uint64_t idle_ns);
ssize_t data_read(struct zfs *fs, struct zm_inode *in, void *buf, size_t size,
		  uint64_t off);
/*
 * Stage @size bytes of @buf at @off (rt lock exclusive). The first write
 * after an fsync that followed a single write (rt.sync_each), or after an
 * open, while zfs.sync_vote says files are fsynced after their first write
 * and the write is not a piece the kernel cut from a larger one
 * (DATA_CUT_MIN), is sealed at once, for the fsync expected next.
 */
ssize_t data_write(struct zfs *fs, struct zm_inode *in, const void *buf,
		   size_t size, uint64_t off);
/*
 * Drop staged data at or above @size (truncate). Caller holds the rt lock
 * exclusive; waits for chunks being written first.
 */
void data_truncate_staged(struct zfs *fs, struct zfs_rt *rt, uint64_t size);
/*
 * Inode @ino is being freed: drop its lost ranges (zfs.lost). Inode
 * numbers are not reused within a mount: this only gives back memory.
 */
void data_lost_forget(struct zfs *fs, uint64_t ino);
/*
 * Mark [s, e) of @ino lost: its reads fail with EIO until it is written
 * again or truncated away. For the mount, before any thread runs.
 * 0 or -ENOMEM.
 */
int data_lost_mark(struct zfs *fs, uint64_t ino, uint64_t s, uint64_t e);
/*
 * Check every invariant of the replayed metadata against the device's
 * write pointers (zfs_check.c): the one check that mount and fsck run.
 * Each problem goes to @say as a finding (and counts in @res: errors,
 * fixed, warnings, inodes, directories, extents); with @repair, what can
 * be fixed without losing data that can be proven good is fixed in
 * memory (the caller writes it as a new snapshot). Takes meta_lock and
 * alloc_lock; no other thread may run. 0, or -ENOMEM when a check could
 * not run.
 */
int zfs_check(struct zfs *fs, bool repair, zfs_finding_fn *say, void *arg,
	      struct zfs_fsck_result *res);
/* zfs_read_buf() and zfs_read_buf_put(). */
void *data_read_buf(struct zfs *fs, size_t size);
void data_read_buf_put(struct zfs *fs, void *buf, size_t size);
/*
 * Give back the buffers kept for reuse, but a few, if none was taken since
 * the last call (the background thread calls it every commit interval).
 */
void data_pool_trim(struct zfs *fs);
/* Free the buffers kept for reuse (at the very end). */
void data_pool_free(struct zfs *fs);
/* Free staged data of an inode being freed (no writers left). */
void data_rt_free(struct zfs *fs, struct zfs_rt *rt);
/*
 * The last close: detach the private head if the file's data is all
 * written (else the writeback gives it back when done). The caller passes
 * what is returned to alloc_put_head() once it holds no lock.
 */
struct zfs_head *data_release_head(struct zfs *fs, struct zfs_rt *rt);
/*
 * The file is gone for good (no link, no open file): drop its staged data
 * instead of writing it. Caller holds meta_lock exclusive.
 */
void data_discard(struct zfs *fs, struct zfs_rt *rt);
/* Wait until staged memory is under the budget (no lock held). */
void data_throttle(struct zfs *fs);
/* Size including staged data. Caller holds the rt lock (if rt). */
static inline uint64_t data_vsize(const struct zm_inode *in)
{
	const struct zfs_rt *rt = in->rt;

	return rt && rt->vsize > in->size ? rt->vsize : in->size;
}

/* ---- alloc*.c: zones, slots, heads and space; nothing here waits -------- */

/* What an allocation that cannot be done now lacks (alloc_* -EAGAIN). */
enum alloc_need {
	ALLOC_NEED_NONE,
	ALLOC_NEED_SLOT,    /* every active slot is held by a zone being
			       written (or to be: none is idle) */
	ALLOC_NEED_OPEN,    /* every open zone has a write in flight */
	ALLOC_NEED_COMMIT,  /* the free zones wait for the record that freed
			       them to be durable */
	ALLOC_NEED_RECLAIM, /* no free zone and no room: space is in dead
			       bytes, for reclaim to give back */
	ALLOC_NEED_FLUSH,   /* (write()'s check) staged data holds the space */
};

struct alloc_try {
	enum alloc_need need; /* what is missing */
	uint64_t event;	      /* zfs.event then: wait for a later one */
};

/* Classify zones after replay; reset dead ones. */
int alloc_init(struct zfs *fs);
void alloc_destroy(struct zfs *fs);
/*
 * Can zonefuse work within @dev's limits with @copies (1 or 2) copies of
 * the journal's chain? 0, or -ENOTSUP with the limit and the minimum in
 * @err (mkfs and mount refuse such a device).
 */
int alloc_check_limits(struct zdev *dev, unsigned int copies, char *err,
		       size_t errlen);
/*
 * Write @len bytes (aligned) from @buf through @head, into its zone (or
 * one it takes, alloc.c says how): *@done bytes went at *@addr; a write
 * stops at a zone's end, the caller calls again for the rest. 0; -EAGAIN
 * when no zone can be had now (@t says what is missing: space.c decides);
 * or the device's errno once the zone was retired.
 */
int alloc_head_write(struct zfs *fs, struct zfs_head *head, const void *buf,
		     size_t len, uint64_t *addr, size_t *done,
		     struct alloc_try *t);
/*
 * Wait until zfs.event moves past @t->event, at most @ms: true if it did.
 * With no lock held.
 */
bool alloc_wait(struct zfs *fs, const struct alloc_try *t, unsigned int ms);
/*
 * The @len bytes written at @addr (by alloc_head_write()) are now named by
 * an applied record, or will never be: they stop keeping their zone alive.
 * @copy: reclaim wrote them (through the gc or cold head).
 */
void alloc_landed(struct zfs *fs, uint64_t addr, uint64_t len, bool copy);
struct zfs_head *alloc_private_head(struct zfs *fs, uint64_t group);
/*
 * May a file not yet known to be large take zones of its own? True if
 * the device has no active limit, or one that leaves a slot for every
 * shared head and the journal besides. Taking alloc_lock.
 */
bool alloc_slots_spare(struct zfs *fs);
void alloc_put_head(struct zfs *fs, struct zfs_head *head);
/*
 * Reserve @len bytes of space for staged data. 0; -EAGAIN when space may
 * come back (@t: COMMIT, dead zones wait; FLUSH, staged data may free
 * some); -ENOSPC when the live data fills the usable space.
 */
int alloc_reserve(struct zfs *fs, uint64_t len, struct alloc_try *t);
void alloc_unreserve(struct zfs *fs, uint64_t len);
/* A chunk's reservation went from @before to @after bytes. */
void alloc_restage(struct zfs *fs, uint64_t before, uint64_t after);
void alloc_zone_dead(void *arg, uint32_t zone, uint64_t seq);
/*
 * Reset the queued dead zones whose freeing record is durable, each with
 * its ZONE_RESET record. Returns how many, or an errno. The caller holds
 * neither meta_lock nor alloc_lock; neither is held across a reset, so
 * metadata changes go on while the device resets a zone.
 */
int alloc_reclaim(struct zfs *fs);
/*
 * At unmount, once nothing writes: heads let go of their zones, and those
 * with nothing live are queued for their reset (alloc_reclaim()). Nothing
 * writes means no request thread and no writeback thread (data_stop()):
 * a writeback thread gives a file's head back after its last chunk is
 * retired, and the private heads are walked here without alloc_lock.
 */
void alloc_release_heads(struct zfs *fs);
/* The bytes files have reserved (fallocate), all files together. */
uint64_t alloc_prealloc_bytes(struct zfs *fs);
void alloc_space(struct zfs *fs, uint64_t *capacity, uint64_t *free,
		 uint64_t *used, uint64_t *reclaimable);
/* Free zones (empty or dead, ready for a reset), and data's floor. */
uint32_t alloc_free_zones(struct zfs *fs, uint32_t *floor);

/* How reclaim picks its victim (alloc_gc_victim()). */
enum gc_mode {
	GC_COST_BENEFIT, /* background: worth its copy (1/16 dead or more) */
	GC_GREEDY,	 /* a writer with nowhere to go: the most dead bytes */
	GC_WEAR,	 /* wear leveling: the least-worn zone holding data */
};

/*
 * Pick the zone reclaim should empty next by @mode, or ZF_NO_ZONE: one
 * whose live data fits what reclaim's @head can still write. It is flagged
 * so that nothing else takes it until alloc_gc_done().
 */
uint32_t alloc_gc_victim(struct zfs *fs, enum gc_mode mode,
			 const struct zfs_head *head);
void alloc_gc_done(struct zfs *fs, uint32_t zone);
/* Is @zone ALLOC_WEAR_SPREAD resets or more behind the most worn? */
bool alloc_wear_lags(struct zfs *fs, uint32_t zone);

/* The journal's side (space_jrnl_cb calls these). */
/* An empty zone for the chain (never waits): 0 or -ENOSPC. */
int alloc_jrnl_zone(struct zfs *fs, uint32_t *zone);
/*
 * The journal will not write chain (or super) zone @zone again: finish it.
 * 0, or -EAGAIN (ALLOC_NEED_OPEN): a closed zone is opened to be finished,
 * and every open zone has a write in flight.
 */
int alloc_jrnl_done(struct zfs *fs, uint32_t zone, struct alloc_try *t);
/* Chain zone @zone is no longer needed: queue its reset. */
void alloc_jrnl_release(struct zfs *fs, uint32_t zone);
/*
 * A write to @zone is about to start (any zone: data, chain, super): it
 * is made open, closing an idle open zone if the open limit is reached.
 * 0, or -EAGAIN (ALLOC_NEED_OPEN) when every open zone has a write in
 * flight. alloc_io_end() when the write is done.
 */
int alloc_io_begin(struct zfs *fs, uint32_t zone, struct alloc_try *t);
void alloc_io_end(struct zfs *fs, uint32_t zone);
/*
 * An anchor is about to be written: the super zone gets an active slot
 * (a data zone is finished for it if need be). 0, or -EAGAIN
 * (ALLOC_NEED_SLOT) when every data zone is being written.
 * alloc_super_end() after the anchor is durable: the super zone @zone is
 * then finished if it holds no slot for good; 0, or -EAGAIN as
 * alloc_jrnl_done().
 */
int alloc_super_begin(struct zfs *fs, struct alloc_try *t);
int alloc_super_end(struct zfs *fs, uint32_t zone, struct alloc_try *t);
/* The device refused a write for a limit: count again from a report. */
void alloc_resync(struct zfs *fs);
/* The allocator's counts in words, for a message (a stalled writer). */
void alloc_describe(struct zfs *fs, char *buf, size_t len);

/* ---- gc.c: reclaim and wear leveling ------------------------------------ */

/* Reclaim's reads and writes are at most this long (its copy buffer). */
#define GC_IO_BYTES (256u << 10)

/*
 * Move the live data out of victims (by @mode) until @want zones more are
 * free or no victim is left. Returns the zones emptied (they are reset
 * once the moves are durable), 0, -EAGAIN when reclaim's head found no
 * zone now (@t says what it lacks), or an errno; the bytes it copied are
 * added to *@copied (NULL: not counted). No file system lock held.
 */
int gc_collect(struct zfs *fs, uint32_t want, enum gc_mode mode,
	       struct alloc_try *t, uint64_t *copied);
/* Should the background thread collect? (free zones under the mark) */
bool gc_wanted(struct zfs *fs);
/*
 * Wear leveling, when the file system is idle: if the zone resets have
 * spread too far and the budget allows, move the data of the least-worn
 * cold zone into the most-worn free one, or roll the journal if its chain
 * holds the least-worn zone. Returns what it did (0: nothing, 1: a zone
 * moved or the journal rolled) or an errno.
 */
int gc_wear(struct zfs *fs);

/* ---- space.c: the space policy ------------------------------------------ */

/* Who asks the policy. */
enum space_who {
	SPACE_WRITER,  /* the writeback, through a shared head */
	SPACE_PRIVATE, /* the writeback, through a large file's own head */
	SPACE_ADMIT,   /* write(): space for what it stages */
	SPACE_JOURNAL, /* the committer: an open zone, the super zone's slot */
};

/* What the policy has the asker do. */
enum space_act {
	SPACE_SHARE,	   /* write through the shared head instead */
	SPACE_WAIT,	   /* wait for an allocator event (a write ends...) */
	SPACE_COMMIT,	   /* commit, then reset the zones that frees */
	SPACE_FLUSH,	   /* write staged data out, then commit */
	SPACE_COLLECT,	   /* reclaim one zone worth it */
	SPACE_COLLECT_ANY, /* reclaim the zone with the most dead bytes */
	SPACE_FAIL,	   /* give up: -ENOSPC */
};

/* One row of the policy: space.c's space_rules[]. */
struct space_rule {
	enum space_who who;
	enum alloc_need need;
	enum space_act act;
	unsigned int limit; /* times per call; 0: no limit */
	const char *why;
};

/* Where one asker is in the table: how often each row was used. */
struct space_state {
	enum space_who who;
	unsigned int used[24];
	unsigned int idle_waits; /* waits in a row that saw nothing move */
	uint64_t waited_ns;	 /* in all, this call */
	uint64_t report_ns;	 /* report a stall when waited_ns gets here */
};

/* What @need is, in words (messages). */
const char *space_need_name(enum alloc_need need);
/* The table (tests and docs walk it). */
const struct space_rule *space_table(size_t *n);
void space_start(struct space_state *st, enum space_who who);
/* Something moved: every row's count starts again. */
void space_progress(struct space_state *st);
/*
 * What @who, lacking @need, does next: the first row for them whose limit
 * is not used up (and it counts one use). SPACE_FAIL if none.
 */
enum space_act space_decide(struct space_state *st, enum space_who who,
			    enum alloc_need need);
/*
 * The writeback's write: alloc_head_write() through *@headp, doing what
 * the policy says until it is written. *@headp becomes @shared when a
 * large file's own head is refused. 0, -ENOSPC (a bug: the space check
 * admitted this data), -EROFS, or the device's errno.
 */
int space_write(struct zfs *fs, struct zfs_head **headp,
		struct zfs_head *shared, const void *buf, size_t len,
		uint64_t *addr, size_t *done);
/* write()'s space check: 0, -ENOSPC, -EROFS. No lock held (it waits). */
int space_reserve(struct zfs *fs, uint64_t len);
/* The journal's callbacks: zones, open zones, the super zone's slot. */
extern const struct jrnl_cb space_jrnl_cb;

#endif /* ZONEFUSE_ZFS_I_H */
