// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Lost data. A write that was acknowledged but whose writeback failed
 * leaves the file's older bytes (or a hole) under its range. fsync reports
 * the loss once; reads must not pass the older bytes off as the file's. ext4 can
 * return them, from the device once the page cache lets go; zonefuse
 * fails such reads with EIO until the range is written again (and that
 * write lands) or truncated away. The table lives in DRAM only: after a
 * remount the range reads as what the journal recorded, as on ext4.
 * Failed writebacks are rare, so it is a plain array.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "data_i.h"
#include "zonefuse/util.h"

/* Does [s, e) of @ino meet a lost range? Caller holds the rt lock. */
bool data_lost_hit(struct zfs *fs, uint64_t ino, uint64_t s, uint64_t e)
{
	bool hit = false;
	uint32_t i;

	if (!atomic_load_explicit(&fs->nr_lost, memory_order_relaxed))
		return false;
	zlock_mutex(&fs->lost_lock, ZLOCK_LOST);
	for (i = 0; i < fs->nr_lost && !hit; i++)
		hit = fs->lost[i].ino == ino && fs->lost[i].s < e &&
		      s < fs->lost[i].e;
	zlock_unmutex(&fs->lost_lock);
	return hit;
}

/* Room for @n ranges in all. Caller holds lost_lock. */
static int data_lost_room(struct zfs *fs, uint32_t n)
{
	uint32_t cap;
	struct zfs_lost *l;

	ZLOCK_HELD(&fs->lost_lock);

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
void data_lost_cut(struct zfs *fs, uint64_t ino, uint64_t s, uint64_t e)
{
	uint32_t i = 0, n;

	if (!atomic_load_explicit(&fs->nr_lost, memory_order_relaxed))
		return;
	zlock_mutex(&fs->lost_lock, ZLOCK_LOST);
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
	zlock_unmutex(&fs->lost_lock);
}

int data_lost_mark(struct zfs *fs, uint64_t ino, uint64_t s, uint64_t e)
{
	int ret;

	zlock_mutex(&fs->lost_lock, ZLOCK_LOST);
	ret = data_lost_room(fs, fs->nr_lost + 1);
	if (!ret) {
		fs->lost[fs->nr_lost] = (struct zfs_lost) { ino, s, e };
		atomic_store_explicit(&fs->nr_lost, fs->nr_lost + 1,
				      memory_order_relaxed);
	}
	zlock_unmutex(&fs->lost_lock);
	return ret;
}

/* Mark [s, e) of @ino lost. Caller holds the rt lock exclusive. */
static void data_lost_add(struct zfs *fs, uint64_t ino, uint64_t s, uint64_t e)
{
	if (data_lost_mark(fs, ino, s, e))
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
void data_lost_update(struct zfs *fs, struct zfs_rt *rt,
			     const struct zfs_chunk *c, uint64_t logged)
{
	uint64_t lim = c->foff + c->limit;
	uint32_t i;

	ZLOCK_HELD_EXCL(&rt->lock);

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
