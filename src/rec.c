// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The record operation: every change to the metadata is a journal record,
 * applied to the state in DRAM (zm_apply()) and appended to the journal in
 * one step, under zfs.alloc_lock, so that records reach the journal in the
 * order they were applied. It lies below everything that changes metadata
 * (the namespace, the data path, the allocator, reclaim), so that none of
 * them calls up into another to log.
 *
 * Failures: zm_apply() changes nothing when it fails (meta.h), so a record
 * refused for lack of memory is simply not made, and the caller may try
 * again or give up. A record that does not apply is a bug; a record
 * applied but not appended leaves the state ahead of the journal. Both are
 * sticky: the file system turns read-only and says why.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "zfs_i.h"
#include "zonefuse/util.h"

void rec_fail(struct zfs *fs, int err, const char *what)
{
	int expected = 0;

	if (atomic_compare_exchange_strong(&fs->error, &expected, err ? err : -EIO))
		zlog_err("%s: %s failed (%s): the file system is now read-only; unmount it and run `zonefuse fsck %s`",
			 zdev_path(fs->dev), what, strerror(err ? -err : EIO),
			 zdev_path(fs->dev));
}

int rec_writable(struct zfs *fs)
{
	if (fs->rdonly || fs->error)
		return -EROFS;
	return 0;
}

int rec_log(struct zfs *fs, uint16_t type, const void *rec, uint32_t len)
{
	char why[200] = "";
	uint64_t seq;
	int ret;

	ZLOCK_HELD(&fs->meta_lock);

	ret = rec_writable(fs);
	if (ret)
		return ret;
	zlock_mutex(&fs->alloc_lock, ZLOCK_ALLOC);
	seq = jrnl_last_seq(fs->j) + 1;
	ret = zm_apply(&fs->m, type, rec, len, seq, why, sizeof(why));
	if (ret) {
		zlock_unmutex(&fs->alloc_lock);
		if (ret != -ENOMEM) {
			zlog_err("%s: internal error: record type %u refused: %s",
				 zdev_path(fs->dev), type, why);
			rec_fail(fs, -EIO, "a metadata update");
			return -EIO;
		}
		return ret;
	}
	ret = jrnl_append(fs->j, type, rec, len, NULL);
	zlock_unmutex(&fs->alloc_lock);
	if (ret) {
		/* Applied but not logged: the state is ahead of the log. */
		rec_fail(fs, ret, "appending to the metadata journal");
		return -EIO;
	}
	return 0;
}

/* Counts what a snapshot emits on its way to the journal. */
struct rec_snap_count {
	zm_emit_fn emit;
	void *arg;
	uint64_t bytes;
};

static int rec_snap_counted(void *arg, uint16_t type, const void *payload,
			    uint32_t len)
{
	struct rec_snap_count *c = arg;

	c->bytes += sizeof(struct zf_rec_hdr) + ZF_ROUND_UP(len, ZF_REC_ALIGN);
	return c->emit(c->arg, type, payload, len);
}

/*
 * A snapshot stops every metadata change: meta_lock exclusive keeps every
 * record out (they are made under it, either mode), so that none is
 * between zm_apply() and jrnl_append() while the state is encoded.
 */
int rec_snapshot(void *arg, zm_emit_fn emit, void *emit_arg)
{
	struct rec_snap_count count = { .emit = emit, .arg = emit_arg };
	struct zfs *fs = arg;
	struct zdev_stats ds;
	int ret;

	zlock_wr(&fs->meta_lock, ZLOCK_META);
	zdev_get_stats(fs->dev, &ds);
	fs->m.counters.host_bytes = fs->base_host_bytes + fs->host_bytes;
	fs->m.counters.device_bytes = fs->base_device_bytes + ds.bytes_written;
	fs->m.counters.gc_bytes = fs->base_gc_bytes + fs->gc_bytes;
	zlock_mutex(&fs->alloc_lock, ZLOCK_ALLOC);
	ret = zm_snap_encode(&fs->m, rec_snap_counted, &count);
	zlock_unmutex(&fs->alloc_lock);
	zlock_unrw(&fs->meta_lock);
	if (!ret)
		fs->snap_bytes = count.bytes;
	return ret;
}

void rec_durable(void *arg, uint64_t seq)
{
	struct zfs *fs = arg;

	(void)seq;
	zlock_mutex(&fs->bg_lock, ZLOCK_BG);
	fs->bg_kick = true;
	pthread_cond_signal(&fs->bg_cv);
	zlock_unmutex(&fs->bg_lock);
}

/*
 * The journal could not write or flush: the metadata on the device stops
 * at the last good commit, so the file system must stop changing (read-only
 * from here, in statfs and the stats too), and the user must be told.
 */
void rec_jrnl_failed(void *arg, int err)
{
	rec_fail(arg, err, "writing the metadata journal");
}
