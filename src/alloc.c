// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Zones and space: which zone data goes to, how much space is left, and
 * resetting zones whose data is all dead.
 *
 * Rules the zone model imposes, and how they are kept:
 * - A zone is written only at its write pointer, one write at a time: each
 *   write head has a lock held across its device write.
 * - Open and active zones are a device resource: we count the zones we
 *   keep active (written but neither full nor empty) and never take a new
 *   one past max_active; a file that cannot get a zone of its own shares
 *   the small-file head instead of failing.
 * - A zone is reset only when no live extent points into it and the record
 *   that freed its last extent is durable: a crash before that record
 *   lands must still find the data it names.
 * - Empty zones are taken least-worn first (fewest resets), so that a job
 *   writing and deleting checkpoints in a loop spreads resets over all
 *   zones.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zfs_i.h"
#include "zonefuse/util.h"

/* Reclaim moves a zone only if it frees at least this share of it. */
#define ALLOC_GC_MIN_GAIN_DIV 16u

/* A private head's zone with less than this share left is finished. */
#define ALLOC_FINISH_DIV 4u
#define ALLOC_RETRY_OPEN 200

static uint32_t alloc_zone_id(const struct zfs *fs, const struct zm_zone *z)
{
	return (uint32_t)(z - fs->m.zones);
}

static bool alloc_is_active(const struct zm_zone *z)
{
	return z->wp > z->start && z->wp < z->start + z->cap;
}

static void alloc_finish(struct zfs *fs, struct zm_zone *z);

/*
 * Queue @z for its reset if nothing lives in it: no live extent, and no
 * write whose extent is still to be applied (a zone filled by writes in
 * flight looks empty to the extent count). alloc_lock held.
 */
static void alloc_maybe_dead(struct zfs *fs, struct zm_zone *z)
{
	if (z->valid || z->pending || z->state != ZM_ZONE_DATA ||
	    (z->flags & (ZFS_ZF_HEAD | ZFS_ZF_RESETQ | ZFS_ZF_GC)))
		return;
	z->flags = (uint8_t)((z->flags & ~ZFS_ZF_PARKED) | ZFS_ZF_RESETQ);
	fs->resetq[fs->nr_resetq++] = (uint32_t)(z - fs->m.zones);
}

/*
 * Zones kept free, never given to new data: the reserve (reclaim writes
 * there while it empties a zone, the journal grows there), plus room for
 * the journal's next snapshot, which is written before the old chain is
 * released.
 */
static uint32_t alloc_floor(struct zfs *fs)
{
	uint64_t cap = fs->m.zones[le32toh(fs->sb.super_zone[0])].cap;

	/*
	 * The snapshot size as last encoded: asking the journal could wait
	 * for its committer, which may be waiting for alloc_lock.
	 */
	return fs->reserve_zones +
	       (uint32_t)ZF_DIV_ROUND_UP(fs->snap_bytes + 1, cap);
}

/*
 * Bytes new data can still take: the capacity of the zones data may use,
 * less the reserve, less the live data. Dead bytes count as available:
 * reclaim turns them back into free zones when writers need them (a zone
 * whose data is all dead needs only a reset). Caller holds alloc_lock.
 */
static uint64_t alloc_avail(struct zfs *fs, uint32_t floor)
{
	uint64_t cap, live;
	uint32_t i;

	/* Zone states change rarely; this runs for every write. */
	if (fs->cap_dirty) {
		fs->usable_cap = fs->max_zcap = 0;
		for (i = 0; i < fs->m.nr_zones; i++) {
			struct zm_zone *z = &fs->m.zones[i];

			if (z->state != ZM_ZONE_FREE && z->state != ZM_ZONE_DATA)
				continue;
			fs->usable_cap += z->cap;
			fs->max_zcap = ZF_MAX(fs->max_zcap, z->cap);
		}
		fs->cap_dirty = false;
	}
	cap = fs->usable_cap -
	      ZF_MIN(fs->usable_cap, (uint64_t)floor * fs->max_zcap);
	/*
	 * Reclaim's copies in flight are not counted: each replaces live
	 * bytes one for one, and those count as available the moment its
	 * move is logged. Counted until they landed, they made the free
	 * space dip by up to a chunk whenever reclaim ran (df right after
	 * an rm showed a MiB less than the file had held).
	 */
	live = fs->m.live_bytes + fs->pending_total -
	       ZF_MIN(fs->copy_pending, fs->pending_total);
	return cap > live ? cap - live : 0;
}

uint32_t alloc_free_zones(struct zfs *fs, uint32_t *floor)
{
	uint32_t i, n = 0;

	*floor = alloc_floor(fs);
	pthread_mutex_lock(&fs->alloc_lock);
	for (i = 0; i < fs->m.nr_zones; i++) {
		struct zm_zone *z = &fs->m.zones[i];

		if (z->state == ZM_ZONE_FREE ||
		    (z->state == ZM_ZONE_DATA && !z->valid &&
		     (z->flags & ZFS_ZF_RESETQ)))
			n++;
	}
	pthread_mutex_unlock(&fs->alloc_lock);
	return n;
}

/*
 * Cost-benefit victim choice (the log-structured file system's, as F2FS
 * uses for background cleaning): free space gained times its age, over
 * the cost of reading and rewriting the live part: (1 - u) * age / (1 + u)
 * with u the zone's live share. Old, mostly dead zones go first; a young
 * zone is left to die on its own a little longer.
 *
 * A writer whose admitted data finds no zone asks for @any: greedy, the
 * most dead bytes first, down to one block. The space check counts every
 * dead byte as space (alloc_avail()), and those under the 1/16 bar are
 * space too once nothing else is left: at 90% full (the mixed space
 * workload, 64 zones of 2 MiB), when writers found no zone, 1.5-1.9 MiB
 * were dead in zones reclaim would not touch.
 */
uint32_t alloc_gc_victim(struct zfs *fs, bool any)
{
	int64_t now = zfs_now();
	double best_score = 0;
	uint32_t i, best = ZF_NO_ZONE;

	pthread_mutex_lock(&fs->alloc_lock);
	for (i = 0; i < fs->m.nr_zones; i++) {
		struct zm_zone *z = &fs->m.zones[i];
		double u, age, score;

		/*
		 * Full zones, and parked ones (finished first if chosen),
		 * with something to gain: moving a zone that is nearly all
		 * live costs a zone's worth of writes for a sliver of space.
		 */
		if (z->state != ZM_ZONE_DATA || !z->valid || z->pending ||
		    (z->flags & (ZFS_ZF_HEAD | ZFS_ZF_RESETQ | ZFS_ZF_GC)) ||
		    (z->wp < z->start + z->cap && !(z->flags & ZFS_ZF_PARKED)))
			continue;
		if (z->valid + (any ? fs->bs : z->cap / ALLOC_GC_MIN_GAIN_DIV) >
		    z->cap)
			continue;
		u = (double)z->valid / (double)z->cap;
		age = (double)(now - z->mtime) / 1e9 + 1;
		score = any ? (double)(z->cap - z->valid) :
			      (1 - u) * age / (1 + u);
		if (score > best_score) {
			best_score = score;
			best = i;
		}
	}
	if (best != ZF_NO_ZONE) {
		if (fs->m.zones[best].flags & ZFS_ZF_PARKED)
			alloc_finish(fs, &fs->m.zones[best]);
		fs->m.zones[best].flags |= ZFS_ZF_GC;
	}
	pthread_mutex_unlock(&fs->alloc_lock);
	return best;
}

void alloc_gc_done(struct zfs *fs, uint32_t zone)
{
	struct zm_zone *z = &fs->m.zones[zone];

	pthread_mutex_lock(&fs->alloc_lock);
	z->flags &= (uint8_t)~ZFS_ZF_GC;
	alloc_maybe_dead(fs, z);
	pthread_mutex_unlock(&fs->alloc_lock);
}

void alloc_zone_dead(void *arg, uint32_t zone, uint64_t seq)
{
	struct zfs *fs = arg;
	struct zm_zone *z = &fs->m.zones[zone];

	z->free_seq = seq;
	alloc_maybe_dead(fs, z);
	/*
	 * The zone is reset once the record that freed it is durable: ask
	 * for that commit now rather than at the end of the commit interval,
	 * so that rm gives zones back in milliseconds, not seconds.
	 */
	pthread_mutex_lock(&fs->bg_lock);
	fs->bg_dead = true;
	pthread_cond_signal(&fs->bg_cv);
	pthread_mutex_unlock(&fs->bg_lock);
}

void alloc_landed(struct zfs *fs, uint64_t addr, uint64_t len, bool copy)
{
	struct zm_zone *z = &fs->m.zones[zm_zone_of(&fs->m, addr)];
	uint64_t n;

	pthread_mutex_lock(&fs->alloc_lock);
	n = ZF_MIN(ZF_MIN(len, z->pending), fs->pending_total);
	fs->pending_total -= n;
	if (copy)
		fs->copy_pending -= ZF_MIN(n, fs->copy_pending);
	z->pending -= ZF_MIN(len, z->pending);
	if (!z->pending && !z->valid) {
		/* Whatever record dropped the zone's data, it is appended. */
		z->free_seq = ZF_MAX(z->free_seq, jrnl_last_seq(fs->j));
		alloc_maybe_dead(fs, z);
	}
	pthread_mutex_unlock(&fs->alloc_lock);
}

/* Finish @zone: it keeps its data and gives back its active slot. */
static void alloc_finish(struct zfs *fs, struct zm_zone *z)
{
	uint32_t id = alloc_zone_id(fs, z);

	if (z->type == ZDEV_ZONE_SEQ && alloc_is_active(z)) {
		int ret = zdev_finish(fs->dev, id);

		if (ret)
			zlog_warn("%s: finishing zone %u failed: %s",
				  zdev_path(fs->dev), id, strerror(-ret));
	}
	if (alloc_is_active(z) && z->type == ZDEV_ZONE_SEQ && fs->nr_active)
		fs->nr_active--;
	z->wp = z->start + z->cap;
	z->flags &= (uint8_t)~ZFS_ZF_PARKED;
	alloc_maybe_dead(fs, z);
}

/*
 * The head other than @self that is not writing now and whose zone
 * @score rates highest (0: not a candidate), returned with its lock held;
 * NULL if none. alloc_lock held; heads' locks are only tried, keeping the
 * lock order (a head's lock before alloc_lock).
 */
static struct zfs_head *
alloc_idle_head(struct zfs *fs, struct zfs_head *self,
		uint64_t (*score)(const struct zm_zone *))
{
	struct zfs_head *shared[3] = { &fs->small, &fs->hot, &fs->gc };
	struct zfs_head *best = NULL, *h;
	uint64_t best_score = 0;
	uint32_t i;

	for (i = 0; i < 3 + 1; i++) {
		for (h = i < 3 ? shared[i] : fs->heads; h;
		     h = i < 3 ? NULL : h->next) {
			uint64_t sc;

			if (h == self || h->zone == ZF_NO_ZONE ||
			    pthread_mutex_trylock(&h->lock))
				continue;
			sc = 0;
			if (h->zone != ZF_NO_ZONE)
				sc = score(&fs->m.zones[h->zone]);
			if (sc > best_score) {
				if (best)
					pthread_mutex_unlock(&best->lock);
				best = h;
				best_score = sc;
			} else {
				pthread_mutex_unlock(&h->lock);
			}
		}
	}
	return best;
}

/* Scores for alloc_idle_head(): the fullest zone; the most room left. */
static uint64_t alloc_score_written(const struct zm_zone *z)
{
	return z->wp - z->start + 1;
}

static uint64_t alloc_score_room(const struct zm_zone *z)
{
	return z->start + z->cap - z->wp;
}

/*
 * Free an active slot: finish the fullest parked zone, else the fullest
 * zone of a head that is not writing now (other than @self). Zones nearly
 * full cost little to finish; their dead tail is reclaimed with them.
 * alloc_lock held; other heads' locks only tried, keeping the lock order.
 */
static bool alloc_free_slot(struct zfs *fs, struct zfs_head *self,
			    bool heads_too)
{
	struct zm_zone *best = NULL;
	struct zfs_head *bh;
	uint32_t i;

	for (i = 0; i < fs->m.nr_zones; i++) {
		struct zm_zone *z = &fs->m.zones[i];

		if ((z->flags & ZFS_ZF_PARKED) && (!best || z->wp - z->start >
							      best->wp - best->start))
			best = z;
	}
	if (best) {
		alloc_finish(fs, best);
		return true;
	}
	bh = heads_too ? alloc_idle_head(fs, self, alloc_score_written) : NULL;
	if (!bh)
		return false;
	best = &fs->m.zones[bh->zone];
	best->flags &= (uint8_t)~ZFS_ZF_HEAD;
	bh->zone = ZF_NO_ZONE;
	alloc_finish(fs, best);
	pthread_mutex_unlock(&bh->lock);
	return true;
}

/*
 * The device refused to open a zone (-ETOOMANYREFS): its open limit is
 * reached and, at its active limit, it will not close an implicitly open
 * zone to make room (null_blk's rule). Finish a parked or idle zone other
 * than @self's to free an active slot; true if one was. With an open limit
 * of 4 and an active limit of 6, at 90-100% full (tests/e2e/stress.py),
 * the journal's rollover took the spare slot and its next write to the
 * closed super zone was refused for 200 ms: the file system went
 * read-only. Takes alloc_lock; heads' locks are only tried.
 */
static bool alloc_make_room(struct zfs *fs, struct zfs_head *self)
{
	bool freed;

	pthread_mutex_lock(&fs->alloc_lock);
	freed = fs->max_active && alloc_free_slot(fs, self, true);
	pthread_mutex_unlock(&fs->alloc_lock);
	return freed;
}

/*
 * Reset @id on the device (alloc_lock held, dropped around the command).
 * The caller owns the zone (its state keeps others away) and sets the
 * state after.
 */
static int alloc_reset_locked(struct zfs *fs, uint32_t id)
{
	struct zm_zone *z = &fs->m.zones[id];
	bool active = alloc_is_active(z);
	int ret = 0;

	zlog_debug("zone %u: reset (wp +%" PRIu64 ", live %" PRIu64 ", flags 0x%x)",
		   id, z->wp - z->start, z->valid, z->flags);
	if (z->type == ZDEV_ZONE_SEQ && z->wp != z->start) {
		pthread_mutex_unlock(&fs->alloc_lock);
		ret = zdev_reset(fs->dev, id);
		pthread_mutex_lock(&fs->alloc_lock);
	}
	if (ret)
		return ret;
	if (active && z->type == ZDEV_ZONE_SEQ && fs->nr_active)
		fs->nr_active--;
	z->wp = z->start;
	z->resets++;
	return 0;
}

/*
 * Who takes a zone, in order of precedence for the device's active zone
 * slots: the journal's chain must never wait (its next zone is taken just
 * before the previous one is finished); the shared heads (small files,
 * rewrites, reclaim) must always be able to go on; large files get zones of
 * their own only while a slot remains for the shared ones. Reclaim and the
 * journal may use the reserve: they are what gives space back.
 */
enum alloc_kind { ALLOC_META, ALLOC_GC, ALLOC_SHARED, ALLOC_PRIVATE };

static enum alloc_kind alloc_head_kind(const struct zfs_head *h)
{
	switch (h->kind) {
	case ZFS_HEAD_PRIVATE:
		return ALLOC_PRIVATE;
	case ZFS_HEAD_GC:
		return ALLOC_GC;
	default:
		return ALLOC_SHARED;
	}
}

/*
 * May one more zone become active for @kind? Other zones are finished to
 * make room. One slot is always the live super zone's. alloc_lock held.
 */
static bool alloc_active_ok(struct zfs *fs, enum alloc_kind kind,
			    struct zfs_head *self)
{
	/*
	 * The new zone, the super zone, a spare (at the active limit null_blk
	 * refuses to reopen a closed zone even to close another for it: the
	 * journal's zone, closed by the device, could not be written), and
	 * for a large file the slot kept for the shared heads.
	 */
	uint32_t need = kind == ALLOC_PRIVATE ? 4 : 3;

	if (!fs->max_active)
		return true;
	if (kind == ALLOC_META) {
		/*
		 * The journal is never refused (it is what gives space
		 * back), but its rollover would take the spare: the next
		 * write to the super zone or to a chain zone the device
		 * closed could not open (alloc_make_room()). Give back a
		 * zone first, if one is idle.
		 */
		while (fs->nr_active + need > fs->max_active &&
		       alloc_free_slot(fs, self, true))
			;
		return true;
	}
	/* A large file pushes no head out: it shares instead. */
	while (fs->nr_active + need > fs->max_active)
		if (!alloc_free_slot(fs, self, kind != ALLOC_PRIVATE))
			return false;
	return true;
}

/*
 * Out of free zones, with dead ones queued: reset one whose freeing record
 * is durable right here, instead of waiting for the background thread
 * (the journal, which may be asking, cannot wait: it is the committer).
 * No ZONE_RESET record tells of it: replay takes a chain zone without live
 * data as reset (jrnl_rd_zone()), and a data zone is reset again before
 * use; the next snapshot carries the count. True if a zone was freed.
 * alloc_lock held.
 */
static bool alloc_reset_now(struct zfs *fs)
{
	uint64_t durable = jrnl_durable_seq(fs->j);
	uint32_t i;

	for (i = 0; i < fs->nr_resetq; i++) {
		uint32_t id = fs->resetq[i];
		struct zm_zone *z = &fs->m.zones[id];

		if (z->valid || z->pending || z->state != ZM_ZONE_DATA ||
		    (z->flags & (ZFS_ZF_HEAD | ZFS_ZF_GC)) ||
		    z->free_seq > durable)
			continue;
		fs->resetq[i] = fs->resetq[--fs->nr_resetq];
		z->flags = 0;
		if (alloc_reset_locked(fs, id)) {
			z->state = ZM_ZONE_BAD;
			fs->cap_dirty = true;
			return false;
		}
		z->state = ZM_ZONE_FREE;
		return true;
	}
	return false;
}

/*
 * Take an empty zone for writing: the least-worn free zone. The journal
 * and reclaim may dip into the reserve; data may too with @dip (the last
 * resort, see alloc_head_zone()), down to the journal's snapshot room and
 * one zone for reclaim. Returns -ENOSPC when no zone is free (-EAGAIN
 * when the only free ones wait for their freeing record to be durable),
 * -EBUSY when @kind may not take another active zone. alloc_lock held.
 */
static int alloc_take_zone(struct zfs *fs, enum alloc_kind kind, bool dip,
			   struct zfs_head *self, uint32_t *zone)
{
	bool meta = kind == ALLOC_META;
	uint32_t floor = meta || kind == ALLOC_GC ? 0 : alloc_floor(fs);

	if (dip && floor > fs->reserve_zones)
		floor -= fs->reserve_zones - 1;

	for (;;) {
		uint32_t i, nfree = 0, waiting = 0;
		struct zm_zone *best = NULL;
		int ret;

		for (i = 0; i < fs->m.nr_zones; i++) {
			struct zm_zone *z = &fs->m.zones[i];

			if (z->state == ZM_ZONE_DATA && !z->valid &&
			    (z->flags & ZFS_ZF_RESETQ))
				waiting++;
			if (z->state != ZM_ZONE_FREE || z->cap < fs->bs)
				continue;
			nfree++;
			if (meta && z->cap < JRNL_MIN_ZONE_CAP)
				continue;
			if (!best || z->resets < best->resets)
				best = z;
		}
		if ((!best || nfree <= floor) && waiting &&
		    alloc_reset_now(fs))
			continue;
		if (!best || nfree <= floor)
			return waiting ? -EAGAIN : -ENOSPC;
		if (!alloc_active_ok(fs, kind, self))
			return -EBUSY;
		*zone = alloc_zone_id(fs, best);
		best->state = meta ? ZM_ZONE_META : ZM_ZONE_DATA;
		fs->cap_dirty = true;
		best->flags = 0;
		best->mtime = zfs_now();
		if (best->wp != best->start) {
			/* Dead since the last mount: reset before use. */
			ret = alloc_reset_locked(fs, *zone);
			if (ret) {
				zlog_err("%s: reset of zone %u failed: %s; the zone is retired",
					 zdev_path(fs->dev), *zone,
					 strerror(-ret));
				best->state = ZM_ZONE_BAD;
				fs->cap_dirty = true;
				continue;
			}
		}
		fs->nr_active++;
		return 0;
	}
}

/* Journal callbacks. */

static int alloc_jrnl_zone(void *arg, uint32_t *zone)
{
	struct zfs *fs = arg;
	int ret;

	pthread_mutex_lock(&fs->alloc_lock);
	ret = alloc_take_zone(fs, ALLOC_META, false, NULL, zone);
	pthread_mutex_unlock(&fs->alloc_lock);
	return ret == -EAGAIN ? -ENOSPC : ret;
}

static bool alloc_jrnl_make_room(void *arg)
{
	return alloc_make_room(arg, NULL);
}

/* The journal will not write @zone again: finish it (it stays META). */
static void alloc_jrnl_done(void *arg, uint32_t zone)
{
	struct zfs *fs = arg;

	pthread_mutex_lock(&fs->alloc_lock);
	alloc_finish(fs, &fs->m.zones[zone]);
	pthread_mutex_unlock(&fs->alloc_lock);
}

/* An old chain zone: its replacement is durable, reset it. */
static void alloc_jrnl_release(void *arg, uint32_t zone)
{
	struct zfs *fs = arg;
	struct zm_zone *z = &fs->m.zones[zone];

	pthread_mutex_lock(&fs->alloc_lock);
	z->state = ZM_ZONE_DATA;
	fs->cap_dirty = true;
	z->free_seq = 0;
	z->flags = ZFS_ZF_RESETQ;
	fs->resetq[fs->nr_resetq++] = zone;
	pthread_mutex_unlock(&fs->alloc_lock);
}

/* Counts what a snapshot emits on its way to the journal. */
struct alloc_snap_count {
	zm_emit_fn emit;
	void *arg;
	uint64_t bytes;
};

static int alloc_snap_counted(void *arg, uint16_t type, const void *payload,
			      uint32_t len)
{
	struct alloc_snap_count *c = arg;

	c->bytes += sizeof(struct zf_rec_hdr) + ZF_ROUND_UP(len, ZF_REC_ALIGN);
	return c->emit(c->arg, type, payload, len);
}

static int alloc_jrnl_snapshot(void *arg, zm_emit_fn emit, void *emit_arg)
{
	struct alloc_snap_count count = { .emit = emit, .arg = emit_arg };
	struct zfs *fs = arg;
	struct zdev_stats ds;
	int ret;

	pthread_rwlock_wrlock(&fs->meta_lock);
	zdev_get_stats(fs->dev, &ds);
	fs->m.counters.host_bytes = fs->base_host_bytes + fs->host_bytes;
	fs->m.counters.device_bytes = fs->base_device_bytes + ds.bytes_written;
	fs->m.counters.gc_bytes = fs->base_gc_bytes + fs->gc_bytes;
	pthread_mutex_lock(&fs->alloc_lock);
	ret = zm_snap_encode(&fs->m, alloc_snap_counted, &count);
	pthread_mutex_unlock(&fs->alloc_lock);
	pthread_rwlock_unlock(&fs->meta_lock);
	if (!ret)
		fs->snap_bytes = count.bytes;
	return ret;
}

static void alloc_jrnl_durable(void *arg, uint64_t seq)
{
	struct zfs *fs = arg;

	(void)seq;
	pthread_mutex_lock(&fs->bg_lock);
	fs->bg_kick = true;
	pthread_cond_signal(&fs->bg_cv);
	pthread_mutex_unlock(&fs->bg_lock);
}

/*
 * The journal could not write or flush: the metadata on the device stops
 * at the last good commit, so the file system must stop changing (read-only
 * from here, in statfs and the stats too), and the user must be told.
 */
static void alloc_jrnl_failed(void *arg, int err)
{
	zfs_fail(arg, err, "writing the metadata journal");
}

const struct jrnl_cb alloc_jrnl_cb = {
	.zone_alloc = alloc_jrnl_zone,
	.zone_done = alloc_jrnl_done,
	.zone_release = alloc_jrnl_release,
	.make_room = alloc_jrnl_make_room,
	.snapshot = alloc_jrnl_snapshot,
	.durable = alloc_jrnl_durable,
	.failed = alloc_jrnl_failed,
};

/* ---- heads ------------------------------------------------------------------ */

/*
 * A parked zone @head may continue in: one its own placement group parked
 * (files created in one directory are written and deleted together: a
 * checkpoint), or, when no free zone is left, any. Caller: alloc_lock.
 */
static struct zm_zone *alloc_parked_for(struct zfs *fs, struct zfs_head *head,
					bool any)
{
	uint32_t i;

	for (i = 0; i < fs->m.nr_zones; i++) {
		struct zm_zone *z = &fs->m.zones[i];

		if (!(z->flags & ZFS_ZF_PARKED) || (z->flags & ZFS_ZF_RESETQ))
			continue;
		if (any || (head->kind == ZFS_HEAD_PRIVATE && head->group &&
			    z->owner == head->group))
			return z;
	}
	return NULL;
}

/*
 * Out of free zones: take over the zone of another head that is not
 * writing now, the one with the most room left. Heads' unwritten tails
 * count as free space (alloc_avail()): with many large files in
 * writeback at once, 13 heads held 14.8 MiB of a 116 MiB capacity while
 * the shared heads found no zone, and admitted data was lost (the mixed
 * space workload at 90% full). The head that loses its zone takes
 * another on its next write; a private head then falls back to a shared
 * one (data_write_chunk()). alloc_lock and @head's lock held; other
 * heads' locks only tried, keeping the lock order.
 */
static bool alloc_steal_zone(struct zfs *fs, struct zfs_head *head)
{
	struct zfs_head *best = alloc_idle_head(fs, head, alloc_score_room);

	if (!best)
		return false;
	head->zone = best->zone;
	best->zone = ZF_NO_ZONE;
	pthread_mutex_unlock(&best->lock);
	zlog_debug("zone %u: taken over from another head, %" PRIu64 " bytes left",
		   head->zone, alloc_score_room(&fs->m.zones[head->zone]));
	return true;
}

/*
 * Give @head a zone: a parked zone of its group, else a fresh one (the
 * shared head never takes a large file's parked zone: that would mix
 * lifetimes and leave a deleted checkpoint's zone half alive).
 */
static int alloc_head_zone(struct zfs *fs, struct zfs_head *head)
{
	enum alloc_kind kind = alloc_head_kind(head);
	int ret, commits = 0, collects = 0, greedy = 0, waits = 0;
	bool dip = false, taken = false;
	struct zm_zone *z;
	uint32_t zone;

	pthread_mutex_lock(&fs->alloc_lock);
	for (;;) {
		struct timespec ts;

		z = alloc_parked_for(fs, head, false);
		if (z)
			break;
		ret = alloc_take_zone(fs, kind, dip, head, &zone);
		if (ret == -EAGAIN && ++commits <= 20) {
			/*
			 * Dead zones wait for their freeing record: commit
			 * it, reset them, try again. No file system lock is
			 * held here.
			 */
			pthread_mutex_unlock(&fs->alloc_lock);
			jrnl_commit(fs->j, UINT64_MAX);
			alloc_reclaim(fs);
			pthread_mutex_lock(&fs->alloc_lock);
			continue;
		}
		if (ret == -ENOSPC && kind != ALLOC_GC && ++collects <= 8) {
			/* No free zone: make one from dead space, if any. */
			pthread_mutex_unlock(&fs->alloc_lock);
			ret = gc_collect(fs, 1, false);
			pthread_mutex_lock(&fs->alloc_lock);
			if (ret > 0) {
				commits = 0;
				continue;
			}
			ret = -ENOSPC;
		}
		if (ret == -ENOSPC && kind != ALLOC_GC && !dip) {
			/*
			 * Reclaim has nothing left to gain, yet this data was
			 * admitted (alloc_reserve() counted its bytes against
			 * the capacity less the reserve): the free space is
			 * scattered in head zones' unwritten tails and dead
			 * scraps. Dip into the reserve rather than fail
			 * data a write already took.
			 */
			dip = true;
			commits = 0;
			continue;
		}
		if (ret == -ENOSPC || ret == -EAGAIN) {
			/*
			 * Out of free zones: any parked zone's space is
			 * better than ENOSPC, then another head's room, then
			 * a zone reclaim empties however little it gains
			 * (the copy is dear, so it comes last). A private
			 * head stops at the first: its data falls back to a
			 * shared head, which comes here (data_write_chunk()).
			 */
			z = alloc_parked_for(fs, head, true);
			if (z || kind == ALLOC_PRIVATE)
				break;
			taken = alloc_steal_zone(fs, head);
			if (taken)
				break;
			if (kind == ALLOC_GC || ++greedy > 8)
				break;
			pthread_mutex_unlock(&fs->alloc_lock);
			ret = gc_collect(fs, 1, true);
			pthread_mutex_lock(&fs->alloc_lock);
			if (ret > 0)
				commits = 0;
			continue;
		}
		if (ret != -EBUSY || kind == ALLOC_PRIVATE || ++waits > 1000)
			break;
		/*
		 * A shared head waits for an active slot: large files'
		 * zones fill and give theirs back (a private head falls back
		 * to the shared one instead: see data.c).
		 */
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 10000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&fs->alloc_cv, &fs->alloc_lock, &ts);
	}
	if (taken) {
		ret = 0;
	} else if (z) {
		z->flags = ZFS_ZF_HEAD;
		head->zone = alloc_zone_id(fs, z);
		zlog_debug("zone %u: parked zone taken by a head of group %" PRIu64,
			   head->zone, head->group);
		ret = 0;
	} else if (ret == -EAGAIN) {
		ret = -ENOSPC;
	} else if (!ret) {
		static const char *const name[] = {
			[ZFS_HEAD_SMALL] = "small-file", [ZFS_HEAD_PRIVATE] = "private",
			[ZFS_HEAD_HOT] = "rewrite", [ZFS_HEAD_GC] = "reclaim",
		};

		fs->m.zones[zone].flags = ZFS_ZF_HEAD;
		head->zone = zone;
		zlog_debug("zone %u: taken by a %s head", zone, name[head->kind]);
	}
	pthread_mutex_unlock(&fs->alloc_lock);
	return ret;
}

/* Drop @head's zone reference after it filled up (alloc_lock held). */
static void alloc_head_full(struct zfs *fs, struct zfs_head *head)
{
	struct zm_zone *z = &fs->m.zones[head->zone];

	pthread_cond_broadcast(&fs->alloc_cv); /* an active slot is free */
	z->flags &= (uint8_t)~ZFS_ZF_HEAD;
	alloc_maybe_dead(fs, z);
	head->zone = ZF_NO_ZONE;
}

/*
 * Count again, from a zone report, the zones the device holds active: our
 * count drifted if the device refused a write for a resource limit. The
 * live super zone is not in nr_active. alloc_lock held.
 */
static void alloc_resync_active(struct zfs *fs)
{
	uint32_t i, n = 0;
	struct zdev_zone *rep = calloc(fs->m.nr_zones, sizeof(*rep));

	if (!rep)
		return;
	if (zdev_report(fs->dev, 0, fs->m.nr_zones, rep) == (int)fs->m.nr_zones) {
		for (i = 0; i < fs->m.nr_zones; i++)
			if (rep[i].type == ZDEV_ZONE_SEQ &&
			    fs->m.zones[i].state != ZM_ZONE_SUPER &&
			    (rep[i].cond == ZDEV_COND_IMP_OPEN ||
			     rep[i].cond == ZDEV_COND_EXP_OPEN ||
			     rep[i].cond == ZDEV_COND_CLOSED))
				n++;
		zlog_warn("%s: %u zones active on the device, %u counted: recounted",
			  zdev_path(fs->dev), n, fs->nr_active);
		fs->nr_active = n;
	}
	free(rep);
}

/*
 * After a failed write the device's write pointer may be anywhere (a
 * partial write, a drive that moved it): ask the device, believe it, and
 * stop using the zone for new data. A zone the device refused to open
 * (a resource limit) was never written: it goes back to the free pool.
 */
static void alloc_write_failed(struct zfs *fs, struct zfs_head *head, int err)
{
	struct zm_zone *z = &fs->m.zones[head->zone];
	struct zdev_zone rep;
	bool have = zdev_report(fs->dev, head->zone, 1, &rep) == 1;

	pthread_mutex_lock(&fs->alloc_lock);
	if ((err == -EOVERFLOW || err == -ETOOMANYREFS) && have &&
	    rep.cond == ZDEV_COND_EMPTY && z->wp == z->start) {
		z->state = ZM_ZONE_FREE;
		z->flags = 0;
		head->zone = ZF_NO_ZONE;
		alloc_resync_active(fs);
		pthread_mutex_unlock(&fs->alloc_lock);
		return;
	}
	zlog_err("%s: write to zone %u at 0x%" PRIx64 " failed: %s; the zone is retired",
		 zdev_path(fs->dev), head->zone, z->wp, strerror(-err));
	if (have && rep.type == ZDEV_ZONE_SEQ && rep.cond != ZDEV_COND_FULL &&
	    rep.wp >= z->start && rep.wp <= z->start + z->cap)
		z->wp = rep.wp;
	if (have && (rep.cond == ZDEV_COND_READONLY ||
		     rep.cond == ZDEV_COND_OFFLINE)) {
		if (alloc_is_active(z) && fs->nr_active)
			fs->nr_active--;
		z->wp = z->start + z->cap;
	} else {
		alloc_finish(fs, z);
	}
	alloc_head_full(fs, head);
	pthread_mutex_unlock(&fs->alloc_lock);
}

int alloc_head_write(struct zfs *fs, struct zfs_head *head, const void *buf,
		     size_t len, uint64_t *addr, size_t *done)
{
	int ret = 0, tries = 0, failures = 0;
	struct zm_zone *z;
	size_t n;

	pthread_mutex_lock(&head->lock);
	for (;;) {
		if (head->zone == ZF_NO_ZONE) {
			ret = alloc_head_zone(fs, head);
			if (ret)
				goto out_unlock;
		}
		z = &fs->m.zones[head->zone];
		n = (size_t)ZF_MIN((uint64_t)len, z->start + z->cap - z->wp);
		n = ZF_MIN(n, (size_t)ZFS_CHUNK);
		ret = zdev_write(fs->dev, buf, n, z->wp);
		if (ret == -ETOOMANYREFS && ++tries < ALLOC_RETRY_OPEN) {
			/*
			 * Every open slot busy: the device frees one soon,
			 * or an idle zone finished frees one now.
			 */
			struct timespec ts = { 0, 1000000 };

			if (!alloc_make_room(fs, head))
				nanosleep(&ts, NULL);
			continue;
		}
		if (ret) {
			alloc_write_failed(fs, head, ret);
			if (++failures < 3 && ret != -ENOSPC)
				continue;
			goto out_unlock;
		}
		break;
	}
	pthread_mutex_lock(&fs->alloc_lock);
	*addr = z->wp;
	*done = n;
	z->wp += n;
	z->pending += n; /* until alloc_landed() */
	fs->pending_total += n;
	if (head->kind == ZFS_HEAD_GC)
		fs->copy_pending += n;
	z->mtime = zfs_now();
	if (z->wp == z->start + z->cap) {
		if (fs->nr_active)
			fs->nr_active--;
		alloc_head_full(fs, head);
	}
	pthread_mutex_unlock(&fs->alloc_lock);
out_unlock:
	pthread_mutex_unlock(&head->lock);
	return ret;
}

struct zfs_head *alloc_private_head(struct zfs *fs, uint64_t group)
{
	struct zfs_head *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	pthread_mutex_init(&h->lock, NULL);
	h->zone = ZF_NO_ZONE;
	h->kind = ZFS_HEAD_PRIVATE;
	h->group = group;
	pthread_mutex_lock(&fs->alloc_lock);
	h->next = fs->heads;
	fs->heads = h;
	pthread_mutex_unlock(&fs->alloc_lock);
	return h;
}

/*
 * A file is done with its own head. A zone nearly full is finished (its
 * active slot is worth more than the space); otherwise it is parked for the
 * next large file of the same group.
 */
void alloc_put_head(struct zfs *fs, struct zfs_head *head)
{
	struct zfs_head **pp;

	pthread_mutex_lock(&head->lock);
	pthread_mutex_lock(&fs->alloc_lock);
	if (head->zone != ZF_NO_ZONE) {
		struct zm_zone *z = &fs->m.zones[head->zone];

		z->flags &= (uint8_t)~ZFS_ZF_HEAD;
		if ((!z->valid && !z->pending) ||
		    z->start + z->cap - z->wp < z->cap / ALLOC_FINISH_DIV) {
			alloc_finish(fs, z);
		} else {
			z->flags |= ZFS_ZF_PARKED;
			z->owner = head->group;
			zlog_debug("zone %u: parked for group %" PRIu64,
				   head->zone, head->group);
		}
	}
	for (pp = &fs->heads; *pp != head; pp = &(*pp)->next)
		;
	*pp = head->next;
	pthread_mutex_unlock(&fs->alloc_lock);
	pthread_mutex_unlock(&head->lock);
	pthread_mutex_destroy(&head->lock);
	free(head);
}

/* ---- space --------------------------------------------------------------------- */

int alloc_reserve(struct zfs *fs, uint64_t len)
{
	int tries = 0, ret = 0;

	pthread_mutex_lock(&fs->alloc_lock);
	for (;;) {
		uint64_t avail = alloc_avail(fs, alloc_floor(fs));
		bool staged = fs->reserved != 0;

		if (avail >= fs->reserved + len) {
			fs->reserved += len;
			break;
		}
		/*
		 * Space may come back: data staged in DRAM holds a promise
		 * of space, and once written (an overwrite in particular)
		 * frees the bytes it replaces; dead zones wait for their
		 * freeing record to be durable. Write out, commit, reset,
		 * and try again before saying ENOSPC.
		 */
		if (++tries > 8 || (!fs->nr_resetq && !staged)) {
			ret = -ENOSPC;
			break;
		}
		pthread_mutex_unlock(&fs->alloc_lock);
		if (staged)
			data_flush_all(fs);
		jrnl_commit(fs->j, UINT64_MAX);
		alloc_reclaim(fs);
		pthread_mutex_lock(&fs->alloc_lock);
	}
	pthread_mutex_unlock(&fs->alloc_lock);
	return ret;
}

void alloc_unreserve(struct zfs *fs, uint64_t len)
{
	pthread_mutex_lock(&fs->alloc_lock);
	fs->reserved -= ZF_MIN(len, fs->reserved);
	pthread_cond_broadcast(&fs->alloc_cv);
	pthread_mutex_unlock(&fs->alloc_lock);
}

void alloc_space(struct zfs *fs, uint64_t *capacity, uint64_t *free,
		 uint64_t *used, uint64_t *reclaimable)
{
	uint64_t cap = 0, u = 0, dead = 0, avail;
	uint32_t i, floor;

	floor = alloc_floor(fs);
	pthread_mutex_lock(&fs->alloc_lock);
	for (i = 0; i < fs->m.nr_zones; i++) {
		struct zm_zone *z = &fs->m.zones[i];

		if (z->state == ZM_ZONE_BAD || z->state == ZM_ZONE_SUPER)
			continue;
		cap += z->cap;
		/*
		 * A chain zone is the journal's whole (its write pointer is
		 * the committer's to know); data zones count their live bytes.
		 */
		if (z->state == ZM_ZONE_META)
			u += z->cap;
		else if (z->state == ZM_ZONE_DATA)
			u += z->valid;
		if (z->state == ZM_ZONE_DATA && !(z->flags & ZFS_ZF_HEAD))
			dead += (z->wp - z->start) - ZF_MIN(z->valid, z->wp - z->start);
	}
	avail = alloc_avail(fs, floor);
	*free = avail > fs->reserved ? avail - fs->reserved : 0;
	/* The reserve is not capacity users can fill (as alloc_avail()). */
	*capacity = cap - ZF_MIN(cap, (uint64_t)floor * fs->max_zcap);
	pthread_mutex_unlock(&fs->alloc_lock);
	*used = u;
	*reclaimable = dead;
}

/* ---- reclaim ----------------------------------------------------------------- */

/*
 * Reset the queued dead zones whose freeing record is durable, and journal
 * each reset. Zones a head still writes wait for the head to move on.
 */
int alloc_reclaim(struct zfs *fs)
{
	uint64_t durable;
	uint32_t i, done = 0;
	int ret = 0;

	if (fs->rdonly || fs->error)
		return 0;
	durable = jrnl_durable_seq(fs->j);
	pthread_rwlock_rdlock(&fs->meta_lock);
	pthread_mutex_lock(&fs->alloc_lock);
	for (i = 0; i < fs->nr_resetq;) {
		uint32_t id = fs->resetq[i];
		struct zm_zone *z = &fs->m.zones[id];
		struct zf_rec_zone rec;

		if (z->valid || z->pending ||
		    (z->flags & (ZFS_ZF_HEAD | ZFS_ZF_GC)) ||
		    z->state != ZM_ZONE_DATA) {
			/*
			 * Live again (a head took it, a write landed), or not
			 * ours: drop it; alloc_landed() queues it again.
			 */
			if (z->valid || z->pending || z->state != ZM_ZONE_DATA) {
				z->flags &= (uint8_t)~ZFS_ZF_RESETQ;
				fs->resetq[i] = fs->resetq[--fs->nr_resetq];
				continue;
			}
			i++;
			continue;
		}
		if (z->free_seq > durable) {
			i++;
			continue;
		}
		/*
		 * The zone stays DATA (and off the queue) until the
		 * ZONE_RESET record applies, so that no one writes into it
		 * before that record is in the log.
		 */
		fs->resetq[i] = fs->resetq[--fs->nr_resetq];
		ret = alloc_reset_locked(fs, id);
		if (ret) {
			zlog_err("%s: reset of zone %u failed: %s; the zone is retired",
				 zdev_path(fs->dev), id, strerror(-ret));
			z->state = ZM_ZONE_BAD;
			fs->cap_dirty = true;
			z->flags = 0;
			ret = 0;
			continue;
		}
		rec.zone = htole32(id);
		rec.reserved = 0;
		rec.resets = htole64(z->resets);
		pthread_mutex_unlock(&fs->alloc_lock);
		ret = zfs_log(fs, ZF_REC_ZONE_RESET, &rec, sizeof(rec));
		pthread_mutex_lock(&fs->alloc_lock);
		z->flags = 0;
		if (ret)
			break;
		done++;
	}
	pthread_cond_broadcast(&fs->alloc_cv);
	pthread_mutex_unlock(&fs->alloc_lock);
	pthread_rwlock_unlock(&fs->meta_lock);
	return ret ? ret : (int)done;
}

/* Lock order: a head's lock, then alloc_lock (as alloc_head_write()). */
static void alloc_release_head(struct zfs *fs, struct zfs_head *h)
{
	pthread_mutex_lock(&h->lock);
	pthread_mutex_lock(&fs->alloc_lock);
	if (h->zone != ZF_NO_ZONE) {
		struct zm_zone *z = &fs->m.zones[h->zone];

		z->flags &= (uint8_t)~ZFS_ZF_HEAD;
		alloc_maybe_dead(fs, z);
		h->zone = ZF_NO_ZONE;
	}
	pthread_mutex_unlock(&fs->alloc_lock);
	pthread_mutex_unlock(&h->lock);
}

void alloc_release_heads(struct zfs *fs)
{
	struct zfs_head *h;

	alloc_release_head(fs, &fs->small);
	alloc_release_head(fs, &fs->hot);
	alloc_release_head(fs, &fs->gc);
	pthread_mutex_lock(&fs->alloc_lock);
	h = fs->heads;
	pthread_mutex_unlock(&fs->alloc_lock);
	for (; h; h = h->next)
		alloc_release_head(fs, h);
}

/* ---- mount ------------------------------------------------------------------- */

/* The file system's write pointer of a conventional data zone: its data. */
static void alloc_conv_wps(struct zfs *fs)
{
	uint32_t i, k;

	for (i = 0; i <= fs->m.imask; i++) {
		struct zm_inode *in;

		for (in = fs->m.itab[i]; in; in = in->hnext) {
			if (!zm_is_reg(in))
				continue;
			for (k = 0; k < in->f.n_ext; k++) {
				struct zm_extent *e = &in->f.ext[k];
				struct zm_zone *z =
					&fs->m.zones[zm_zone_of(&fs->m, e->addr)];
				uint64_t end = ZF_ROUND_UP(e->addr + e->len,
							   (uint64_t)fs->bs);

				if (z->type == ZDEV_ZONE_CONV && end > z->wp)
					z->wp = end;
			}
		}
	}
}

/* Warn about extents the device's write pointers say never landed. */
static void alloc_check_wps(struct zfs *fs)
{
	uint32_t i, k;

	for (i = 0; i <= fs->m.imask; i++) {
		struct zm_inode *in;

		for (in = fs->m.itab[i]; in; in = in->hnext) {
			if (!zm_is_reg(in))
				continue;
			for (k = 0; k < in->f.n_ext; k++) {
				struct zm_extent *e = &in->f.ext[k];
				uint32_t id = zm_zone_of(&fs->m, e->addr);
				struct zm_zone *z = &fs->m.zones[id];

				if (z->type == ZDEV_ZONE_SEQ &&
				    e->addr + e->len > z->wp)
					zlog_err("%s: inode %" PRIu64 ": extent at file offset %" PRIu64 " (zone %u) lies above the zone's write pointer: that data never reached the device; run fsck",
						 zdev_path(fs->dev), in->ino,
						 e->foff, id);
			}
		}
	}
}

int alloc_init(struct zfs *fs)
{
	const struct zdev_geom *g = zdev_geom(fs->dev);
	uint32_t i, chain[1024], nchain, tail = ZF_NO_ZONE;
	struct zdev_zone *rep;

	fs->resetq = calloc(fs->m.nr_zones, sizeof(*fs->resetq));
	rep = calloc(fs->m.nr_zones, sizeof(*rep));
	if (!fs->resetq || !rep) {
		free(rep);
		return -ENOMEM;
	}
	if (zdev_report(fs->dev, 0, fs->m.nr_zones, rep) != (int)fs->m.nr_zones)
		memset(rep, 0, fs->m.nr_zones * sizeof(*rep));
	fs->reserve_zones = le32toh(fs->sb.reserve_zones);
	fs->cap_dirty = true;
	fs->snap_bytes = fs->replay.snap_bytes;
	fs->max_active = g->max_active;
	fs->small.zone = fs->hot.zone = fs->gc.zone = ZF_NO_ZONE;
	fs->small.kind = ZFS_HEAD_SMALL;
	fs->hot.kind = ZFS_HEAD_HOT;
	fs->gc.kind = ZFS_HEAD_GC;
	pthread_mutex_init(&fs->small.lock, NULL);
	pthread_mutex_init(&fs->hot.lock, NULL);
	pthread_mutex_init(&fs->gc.lock, NULL);
	nchain = jrnl_chain(fs->j, chain, ZF_ARRAY_SIZE(chain));
	if (nchain)
		tail = chain[nchain - 1];

	alloc_conv_wps(fs);
	if (!fs->rdonly)
		alloc_check_wps(fs);
	for (i = 0; i < fs->m.nr_zones; i++) {
		struct zm_zone *z = &fs->m.zones[i];

		/* The device's own count wins over a journal that lags by one. */
		if (rep[i].resets != ZDEV_RESETS_UNKNOWN && rep[i].resets > z->resets)
			z->resets = rep[i].resets;
		if (z->state == ZM_ZONE_BAD)
			continue;
		if (z->state == ZM_ZONE_SUPER)
			continue;
		if (z->state == ZM_ZONE_META) {
			/* Only the chain's last zone is still written. */
			if (z->type == ZDEV_ZONE_SEQ && alloc_is_active(z)) {
				fs->nr_active++;
				if (i != tail && !fs->rdonly)
					alloc_finish(fs, z);
			}
			continue;
		}
		if (z->valid) {
			z->state = ZM_ZONE_DATA;
			if (alloc_is_active(z)) {
				fs->nr_active++;
				z->flags |= ZFS_ZF_PARKED;
			}
			continue;
		}
		/*
		 * No live data: free. Written (data deleted just before a
		 * crash, or a write whose extent never reached the journal):
		 * queued for the background reset, so that the zone is
		 * empty before it is needed and the reset is journaled.
		 */
		z->free_seq = 0;
		if (z->wp != z->start && alloc_is_active(z) &&
		    z->type == ZDEV_ZONE_SEQ)
			fs->nr_active++;
		if (z->wp != z->start && z->type == ZDEV_ZONE_SEQ &&
		    !fs->rdonly) {
			z->state = ZM_ZONE_DATA;
			z->flags = 0;
			alloc_maybe_dead(fs, z);
			continue;
		}
		z->state = ZM_ZONE_FREE;
	}
	free(rep);
	/* Zones left active by the last session beyond our budget: finish. */
	pthread_mutex_lock(&fs->alloc_lock);
	while (!fs->rdonly && fs->max_active &&
	       fs->nr_active + 4 > fs->max_active &&
	       alloc_free_slot(fs, NULL, false))
		;
	pthread_mutex_unlock(&fs->alloc_lock);
	fs->m.zone_dead = alloc_zone_dead;
	fs->m.zone_dead_arg = fs;
	return 0;
}

void alloc_destroy(struct zfs *fs)
{
	while (fs->heads) {
		struct zfs_head *h = fs->heads;

		fs->heads = h->next;
		pthread_mutex_destroy(&h->lock);
		free(h);
	}
	pthread_mutex_destroy(&fs->small.lock);
	pthread_mutex_destroy(&fs->hot.lock);
	pthread_mutex_destroy(&fs->gc.lock);
	free(fs->resetq);
	fs->resetq = NULL;
}
