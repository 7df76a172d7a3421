/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Inside the data path: what data.c (chunks, staging, reads, flushing),
 * data_wb.c (the writeback threads) and data_lost.c (the ranges whose
 * writeback failed) share. The locks each needs are those of zfs_i.h.
 */
#ifndef ZONEFUSE_DATA_I_H
#define ZONEFUSE_DATA_I_H

#include "zfs_i.h"

#define DATA_MAX_OPEN 16u  /* open chunks per file: the reorder window */
#define DATA_POOL_KEEP 8u  /* chunk buffers kept while idle: data_buf_get */
/*
 * zfs.sync_vote's range, and the vote from which the first write after an
 * open goes out at once: four more files fsynced after their first write
 * than files written twice or closed unsynced, among the last eight.
 */
#define DATA_VOTE_MAX 8
#define DATA_VOTE_ON 4
/*
 * A write this large or larger is likely a piece the kernel cut from a
 * larger write(2) at max_write (ZFS_CHUNK, fuse_ll.c) and max_pages, less
 * the user buffer's offset into its first page: a stream's first piece,
 * not a file's whole data (the wear test's 12.5 MiB shards came as
 * 1020 KiB and the rest). The slack covers pages of up to 64 KiB.
 */
#define DATA_CUT_MIN (ZFS_CHUNK - 65536u)

/* Is @c filled whole (a large file's chunk)? */
bool data_chunk_full(const struct zfs_chunk *c);
/*
 * Bytes [s, e) of @c changed: forget the checksums of the blocks they
 * touch (zfs_chunk.csum_ok). rt lock exclusive.
 */
void data_csum_forget(struct zfs *fs, struct zfs_chunk *c, uint32_t s,
		      uint32_t e);
/* Free @c and give its buffer back to the pool. */
void data_chunk_free(struct zfs *fs, struct zfs_chunk *c);
/*
 * Unpin @rt if nothing is staged and no writeback thread works on it
 * (@by_writeback: the caller is that thread); true if the inode may now
 * be freeable. rt lock exclusive and meta_lock, either mode.
 */
bool data_unpin(struct zfs *fs, struct zfs_rt *rt, bool by_writeback);
/* Add @d to zfs.sync_vote, within 0..DATA_VOTE_MAX. */
void data_vote(struct zfs *fs, int d);
/* Queue @rt for the writeback threads. wb_lock held. */
void data_queue(struct zfs *fs, struct zfs_rt *rt);
/* Seal @rt's open chunks idle for @idle_ns (0: all). rt lock exclusive. */
void data_seal_all(struct zfs *fs, struct zfs_rt *rt, uint64_t idle_ns);
/*
 * Read [off, off + size) of @in's extents into @buf, zeros for holes. rt
 * lock held (either mode).
 */
int data_read_extents(struct zfs *fs, struct zm_inode *in, char *buf,
		      uint64_t off, size_t size);

/* data_lost.c. Each with the inode's rt lock held (exclusive to change). */
/* Does [s, e) of @ino meet a lost range? */
bool data_lost_hit(struct zfs *fs, uint64_t ino, uint64_t s, uint64_t e);
/* [s, e) of @ino is not lost (any more). */
void data_lost_cut(struct zfs *fs, uint64_t ino, uint64_t s, uint64_t e);
/*
 * Chunk @c of @rt was retired with its pieces below file offset @logged
 * in the journal and the rest not: the bytes above are lost.
 */
void data_lost_update(struct zfs *fs, struct zfs_rt *rt,
		      const struct zfs_chunk *c, uint64_t logged);

#endif /* ZONEFUSE_DATA_I_H */
