// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The life of a mounted file system: mount (device, journal replay,
 * allocator), the start of the writeback and background threads, the
 * background thread itself (commit timer, idle chunks, counters,
 * reclaim), unmount, and the crash the tests use.
 *
 * Apart from zfs.c because it makes and tears down the struct zfs that
 * every other operation only uses.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zfs_i.h"
#include "zonefuse/util.h"

/* ---- background: commit timer and reclaim ------------------------------------------------------ */

static int zfs_log_counters(struct zfs *fs)
{
	struct zf_rec_counters rec;
	struct jrnl_stats js;
	struct zdev_stats ds;
	int ret;

	/* Before meta_lock: the journal's committer may be waiting for it. */
	jrnl_get_stats(fs->j, &js);
	zdev_get_stats(fs->dev, &ds);
	zlock_rd(&fs->meta_lock, ZLOCK_META);
	rec.host_bytes = htole64(fs->base_host_bytes + fs->host_bytes);
	rec.device_bytes = htole64(fs->base_device_bytes + ds.bytes_written);
	rec.gc_bytes = htole64(fs->base_gc_bytes + fs->gc_bytes);
	rec.meta_bytes = htole64(fs->base_meta_bytes + js.meta_bytes);
	if (le64toh(rec.host_bytes) == fs->m.counters.host_bytes &&
	    le64toh(rec.device_bytes) == fs->m.counters.device_bytes) {
		zlock_unrw(&fs->meta_lock);
		return 0;
	}
	ret = rec_log(fs, ZF_REC_COUNTERS, &rec, sizeof(rec));
	zlock_unrw(&fs->meta_lock);
	return ret;
}

/*
 * Wear leveling's turn: the file system has been idle for half a commit
 * interval (no write(), nothing in writeback), and the last turn did
 * something or writes came since (a turn that found nothing to do waits
 * for the next write). One step per turn, a turn per half interval, so
 * that a job's pause between checkpoints is used, and the next write
 * never waits long behind a move.
 */
static bool zfs_wear_due(struct zfs *fs, uint64_t now, uint64_t idle_ns,
			 uint64_t wear_at, uint64_t idle_since)
{
	uint64_t last = atomic_load(&fs->last_write_ns);
	bool due;

	if (fs->opts.no_reclaim_thread || now < last + idle_ns ||
	    now < wear_at || last == idle_since)
		return false;
	zlock_mutex(&fs->wb_lock, ZLOCK_WB);
	due = !fs->wb_pending;
	zlock_unmutex(&fs->wb_lock);
	return due;
}

static void *zfs_bg_main(void *arg)
{
	struct zfs *fs = arg;
	uint64_t interval = (uint64_t)fs->opts.commit_ms * 1000000ull;
	uint64_t idle_ns = interval / 2, wear_at = 0, idle_since = UINT64_MAX;
	uint64_t next = zutil_now_mono_ns() + interval;
	struct alloc_try t = { 0 };

	zlock_mutex(&fs->bg_lock, ZLOCK_BG);
	while (!fs->bg_stop) {
		uint64_t now = zutil_now_mono_ns(), wake = next;
		uint64_t idle_at = atomic_load(&fs->last_write_ns) + idle_ns;
		struct timespec ts;
		bool kick, dead, wear;

		if (fs->opts.no_reclaim_thread)
			fs->bg_dead = false;
		/* Wake when the file system turns idle, or its next turn. */
		if (idle_since != idle_at - idle_ns)
			wake = ZF_MIN(wake, ZF_MAX(idle_at, wear_at));
		if (!fs->bg_kick && !fs->bg_dead && now < wake) {
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += (time_t)((wake - now) / 1000000000ull);
			ts.tv_nsec += (long)((wake - now) % 1000000000ull);
			if (ts.tv_nsec >= 1000000000l) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000l;
			}
			pthread_cond_timedwait(&fs->bg_cv, &fs->bg_lock, &ts);
			continue;
		}
		kick = fs->bg_kick;
		dead = fs->bg_dead;
		fs->bg_kick = fs->bg_dead = false;
		zlock_unmutex(&fs->bg_lock);
		if (!fs->error) {
			wear = zfs_wear_due(fs, now, idle_ns, wear_at, idle_since);
			if (zutil_now_mono_ns() >= next) {
				data_seal_idle(fs, interval / 2);
				data_pool_trim(fs);
				zfs_log_counters(fs);
				jrnl_commit(fs->j, UINT64_MAX);
				next = zutil_now_mono_ns() + interval;
			} else if (dead) {
				/* Group commit: one for a whole rm -r. */
				jrnl_commit(fs->j, UINT64_MAX);
			}
			if (wear) {
				uint64_t last = atomic_load(&fs->last_write_ns);

				if (gc_wear(fs) > 0) {
					jrnl_commit(fs->j, UINT64_MAX);
					wear_at = zutil_now_mono_ns() + idle_ns;
				} else {
					idle_since = last;
				}
			}
			if (!fs->opts.no_reclaim_thread || kick)
				alloc_reclaim(fs);
			/*
			 * Free zones low: empty one zone, commit the moves
			 * (the commit kicks this thread again to reset it).
			 */
			fs->space_low = gc_wanted(fs);
			if (!fs->opts.no_reclaim_thread && fs->space_low &&
			    gc_collect(fs, 1, GC_COST_BENEFIT, &t, NULL) > 0)
				jrnl_commit(fs->j, UINT64_MAX);
		}
		zlock_mutex(&fs->bg_lock, ZLOCK_BG);
	}
	zlock_unmutex(&fs->bg_lock);
	return NULL;
}

/*
 * A checking build verifies the whole metadata set (zm_verify(): each
 * zone's live bytes against its extents, extents sorted and in bounds)
 * after replay, and again at unmount: state that verified at mount and
 * does not at unmount is a bug of this session, and it aborts. An image
 * that does not verify at mount is fsck's to report, not a bug here.
 */
static void zfs_verify(struct zfs *fs, bool at_mount)
{
#ifdef ZONEFUSE_CHECKS
	char why[200];
	int ret;

	if (!at_mount && !fs->verified)
		return;
	zlock_wr(&fs->meta_lock, ZLOCK_META);
	zlock_mutex(&fs->alloc_lock, ZLOCK_ALLOC);
	ret = zm_verify(&fs->m, why, sizeof(why));
	zlock_unmutex(&fs->alloc_lock);
	zlock_unrw(&fs->meta_lock);
	if (at_mount) {
		fs->verified = !ret;
	} else if (ret) {
		zlog_err("internal error: %s: the metadata no longer holds together at unmount: %s",
			 zdev_path(fs->dev), why);
		abort();
	}
#else
	(void)fs;
	(void)at_mount;
#endif
}

/* ---- what the mount refuses ---------------------------------------------------------------------------- */

#define ZFS_CHECK_SHOWN 20 /* problems the mount log lists, of any number */

struct zfs_mount_say {
	const char *path;
	uint32_t n;
};

static void zfs_mount_say(void *arg, const struct zfs_finding *f)
{
	struct zfs_mount_say *s = arg;

	if (s->n++ < ZFS_CHECK_SHOWN)
		zlog_err("%s: %s", s->path, f->text);
	else if (s->n == ZFS_CHECK_SHOWN + 1)
		zlog_err("%s: ... and more: `zonefuse fsck %s` lists them all",
			 s->path, s->path);
}

/*
 * A read-only mount of damaged metadata serves what is there, but the
 * bytes the device says never landed (above a zone's write pointer) are
 * not the file's: their reads fail with EIO, as those of a writeback
 * that failed do (data_lost.c), rather than hand back what the zone holds
 * there (zeros, or an older file's data on a conventional zone).
 */
static int zfs_mount_mark_unwritten(struct zfs *fs)
{
	uint32_t b, k;
	int ret;

	for (b = 0; b <= fs->m.imask; b++) {
		struct zm_inode *in;

		for (in = fs->m.itab[b]; in; in = in->hnext) {
			if (!zm_is_reg(in))
				continue;
			for (k = 0; k < in->f.n_ext; k++) {
				const struct zm_extent *e = &in->f.ext[k];
				const struct zm_zone *z =
					&fs->m.zones[zm_zone_of(&fs->m, e->addr)];
				uint64_t keep;

				if (z->type != ZDEV_ZONE_SEQ ||
				    e->addr + e->len <= z->wp)
					continue;
				keep = e->addr < z->wp ? z->wp - e->addr : 0;
				ret = data_lost_mark(fs, in->ino, e->foff + keep,
						     e->foff + e->len);
				if (ret)
					return ret;
			}
		}
	}
	return 0;
}

/*
 * Damage found after replay: the journal ends at a bad record with later
 * records behind it, or the metadata fails a check of zfs_check() (the
 * one fsck runs). A writable mount would make the loss permanent (its new
 * snapshot leaves out what the damage hides, and zones only the lost
 * records name would be reset), so it is refused, with the reason on
 * stderr (the daemon has not gone to the background yet) and what to run.
 * A read-only mount serves the metadata as replayed, with a warning.
 */
static int zfs_mount_check(struct zfs *fs, const char *path, char *err,
			   size_t errlen)
{
	struct zfs_mount_say say = { .path = path };
	struct zfs_fsck_result res;
	const struct jrnl_replay_info *info = &fs->replay;
	uint32_t problems;
	int ret;

	memset(&res, 0, sizeof(res));
	/* Damage a copy covers: served, and rewritten by a writable mount. */
	if (info->super_damaged)
		zlog_warn("%s: %s is damaged; the other copy served%s",
			  path, info->super_bad,
			  fs->rdonly ? ": run `zonefuse fsck --repair` to rewrite it" :
				       ", and both are written anew now");
	if (info->anchor_damaged)
		zlog_warn("%s: %s is damaged; %s%s", path, info->anchor_bad,
			  info->anchor_scanned ? "the metadata chain it named was found by its head zone" :
						 "a valid anchor named the metadata",
			  fs->rdonly ? ": run `zonefuse fsck --repair` to rewrite the super zone" :
				       ", and the super zones are written anew now");
	if (info->super_unwritable)
		zlog_warn("%s: super zone %u could not be written at the last mount: the superblock and anchors have one copy%s",
			  path, info->super_unwritable_zone,
			  fs->rdonly ? "; a writable mount tries the zone again" :
				       "; trying the zone again now");
	if (info->copy_damaged)
		zlog_warn("%s: %s is damaged (%u block%s of one copy); the other copy served%s",
			  path, info->copy_bad, info->copy_bad_count,
			  info->copy_bad_count > 1 ? "s" : "",
			  fs->rdonly ? ": run `zonefuse fsck --repair` to write both anew" :
				       ", and both copies are written anew now");
	if (info->damaged && info->damaged_seq)
		zlog_err("%s: the metadata journal is damaged: replay stopped at %s, but valid records up to seq %" PRIu64 " follow; the changes they hold are not in what was replayed",
			 path, info->stop, info->damaged_seq);
	else if (info->damaged)
		zlog_err("%s: the metadata journal is damaged: replay stopped at %s; the changes the log holds from there on are not in what was replayed",
			 path, info->stop);
	ret = zfs_check(fs, false, zfs_mount_say, &say, &res);
	if (ret) {
		zutil_err(err, errlen, "%s: checking the metadata failed: %s",
			  path, strerror(-ret));
		return ret;
	}
	problems = res.errors + info->damaged;
	if (!problems)
		return 0;
	if (!fs->rdonly) {
		zutil_err(err, errlen,
			  "%s: the metadata is damaged (%u problem%s, above); no metadata was written. Mount with -o ro to read the files as replayed, or run `zonefuse fsck --repair %s` to keep what is sound and write it anew",
			  path, problems, problems > 1 ? "s" : "", path);
		return -EUCLEAN;
	}
	ret = zfs_mount_mark_unwritten(fs);
	if (ret) {
		zutil_err(err, errlen, "%s: marking unreadable data failed: %s",
			  path, strerror(-ret));
		return ret;
	}
	zlog_warn("%s: mounted read-only despite %u problem%s (above): files read as replayed, data the device never got reads as EIO; `zonefuse fsck --repair %s` makes it writable again",
		  path, problems, problems > 1 ? "s" : "", path);
	return 0;
}

/* ---- mount, unmount ------------------------------------------------------------------------------------ */

static void zfs_free(struct zfs *fs)
{
	uint32_t i;

	if (fs->m.itab) {
		for (i = 0; i <= fs->m.imask; i++) {
			struct zm_inode *in;

			for (in = fs->m.itab[i]; in; in = in->hnext)
				if (in->rt) {
					data_rt_free(fs, in->rt);
					data_rt_destroy(in);
				}
		}
	}
	data_pool_free(fs);
	alloc_destroy(fs);
	zm_destroy(&fs->m);
	pthread_rwlock_destroy(&fs->meta_lock);
	pthread_mutex_destroy(&fs->alloc_lock);
	pthread_cond_destroy(&fs->alloc_cv);
	pthread_mutex_destroy(&fs->wb_lock);
	pthread_cond_destroy(&fs->wb_cv);
	pthread_cond_destroy(&fs->stage_cv);
	pthread_mutex_destroy(&fs->bg_lock);
	pthread_cond_destroy(&fs->bg_cv);
	pthread_mutex_destroy(&fs->gc_lock);
	pthread_mutex_destroy(&fs->lost_lock);
	free(fs->lost);
	free(fs);
}

int zfs_mount(const char *path, const struct zfs_opts *opts,
	      struct zfs **fsp, char *err, size_t errlen)
{
	struct jrnl_replay_info info;
	struct zfs *fs;
	int ret;

	fs = calloc(1, sizeof(*fs));
	if (!fs)
		return -ENOMEM;
	if (opts)
		fs->opts = *opts;
	if (!fs->opts.commit_ms)
		fs->opts.commit_ms = ZFS_DEFAULT_COMMIT_MS;
	if (!fs->opts.stage_bytes)
		fs->opts.stage_bytes = ZFS_DEFAULT_STAGE_BYTES;
	fs->rdonly = fs->opts.rdonly;
	pthread_rwlock_init(&fs->meta_lock, NULL);
	pthread_mutex_init(&fs->alloc_lock, NULL);
	pthread_cond_init(&fs->alloc_cv, NULL);
	pthread_mutex_init(&fs->wb_lock, NULL);
	pthread_cond_init(&fs->wb_cv, NULL);
	pthread_cond_init(&fs->stage_cv, NULL);
	pthread_mutex_init(&fs->bg_lock, NULL);
	pthread_mutex_init(&fs->lost_lock, NULL);
	pthread_cond_init(&fs->bg_cv, NULL);
	pthread_mutex_init(&fs->gc_lock, NULL);

	ret = zdev_open(path,
			(fs->rdonly ? ZDEV_RDONLY |
					      (fs->opts.no_lock ? 0 : ZDEV_EXCL) :
				      ZDEV_EXCL) |
				(fs->opts.wait_busy ? ZDEV_WAIT : 0),
			&fs->dev, err, errlen);
	if (ret)
		goto out_free;
	ret = fs->rdonly ? 0 : alloc_check_limits(fs->dev, 1, err, errlen);
	if (ret)
		goto out_close;
	fs->bs = zdev_geom(fs->dev)->block_size;
	ret = jrnl_open(fs->dev,
			(fs->rdonly ? JRNL_RDONLY : 0) |
				(fs->opts.salvage ? JRNL_SALVAGE : 0),
			&fs->m, &fs->j, &fs->sb, &info, err, errlen);
	if (ret)
		goto out_close;
	if (!fs->rdonly && info.mirrored) {
		ret = alloc_check_limits(fs->dev, 2, err, errlen);
		if (ret)
			goto out_jrnl;
	}
	jrnl_set_cb(fs->j, &space_jrnl_cb, fs);
	fs->replay = info;
	fs->base_host_bytes = fs->m.counters.host_bytes;
	fs->base_device_bytes = fs->m.counters.device_bytes;
	fs->base_gc_bytes = fs->m.counters.gc_bytes;
	fs->base_meta_bytes = fs->m.counters.meta_bytes;
	ret = alloc_init(fs);
	if (ret)
		goto out_jrnl;
	zfs_verify(fs, true);
	if (!fs->opts.no_check) {
		ret = zfs_mount_check(fs, path, err, errlen);
		if (ret)
			goto out_alloc;
	}
	if (!fs->rdonly) {
		if (!info.clean && !info.damaged)
			zlog_info("%s: the last session did not unmount cleanly (%s); starting a new metadata snapshot",
				  path, info.stop);
		ret = jrnl_start(fs->j);
		if (ret) {
			zutil_err(err, errlen,
				  "%s: writing the metadata snapshot failed: %s",
				  path, strerror(-ret));
			goto out_alloc;
		}
	}
	if (!fs->opts.defer_threads) {
		ret = zfs_start(fs);
		if (ret)
			goto out_alloc;
	}
	*fsp = fs;
	return 0;

out_alloc:
	alloc_destroy(fs);
out_jrnl:
	jrnl_close(fs->j, false);
	fs->j = NULL;
	zm_destroy(&fs->m);
out_close:
	zdev_close(fs->dev);
out_free:
	fs->m.itab = NULL;
	zfs_free(fs);
	return ret;
}

int zfs_start(struct zfs *fs)
{
	int ret;

	ret = data_init(fs);
	if (ret || fs->rdonly)
		return ret;
	ret = pthread_create(&fs->bg_thread, NULL, zfs_bg_main, fs);
	if (ret) {
		data_stop(fs);
		return -ret;
	}
	fs->bg_started = true;
	return 0;
}

static void zfs_bg_stop(struct zfs *fs)
{
	if (!fs->bg_started)
		return;
	zlock_mutex(&fs->bg_lock, ZLOCK_BG);
	fs->bg_stop = true;
	pthread_cond_signal(&fs->bg_cv);
	zlock_unmutex(&fs->bg_lock);
	pthread_join(fs->bg_thread, NULL);
	fs->bg_started = false;
}

int zfs_unmount(struct zfs *fs)
{
	int ret = 0, r;

	if (!fs->rdonly && !fs->error) {
		ret = data_flush_all(fs);
		zfs_bg_stop(fs);
		/*
		 * The writeback threads are stopped before the heads are let
		 * go: data_flush_all() returns once the last chunk is retired,
		 * but the thread that wrote it still gives the file's head
		 * back after that (data_wb_done()), and a head freed while
		 * alloc_release_heads() walked the list was read after its
		 * free: a use after free under ASan, a hang at unmount when
		 * its memory had been used again (e2e-model, once in ~25 runs).
		 */
		data_stop(fs);
		zfs_verify(fs, false);
		/*
		 * Zones whose data was deleted leave empty: the heads let go
		 * of theirs, the freeing records are made durable, and then
		 * the resets can be journaled before the last commit.
		 */
		alloc_release_heads(fs);
		if (!ret)
			ret = jrnl_commit(fs->j, UINT64_MAX);
		alloc_reclaim(fs);
		if (!ret)
			ret = zfs_log_counters(fs);
	} else {
		zfs_bg_stop(fs);
	}
	data_stop(fs);
	r = jrnl_close(fs->j, !fs->rdonly && !fs->error && !ret);
	if (!ret)
		ret = r;
	if (!ret && fs->error)
		ret = fs->error;
	fs->j = NULL;
	if (!fs->rdonly) {
		r = zdev_flush(fs->dev);
		if (!ret)
			ret = r;
	}
	zdev_close(fs->dev);
	zfs_free(fs);
	return ret;
}

void zfs_crash(struct zfs *fs)
{
	/* Nothing more reaches the device: stop threads, drop everything. */
	atomic_store(&fs->error, -ESHUTDOWN);
	zfs_bg_stop(fs);
	data_stop(fs);
	jrnl_close(fs->j, false);
	fs->j = NULL;
	zdev_close(fs->dev);
	zfs_free(fs);
}
