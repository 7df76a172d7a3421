// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Zones and space, as plain operations that never wait: which zone data
 * goes to, how many zones are active and open, how much space is left,
 * and resetting zones whose data is all dead. An operation that cannot be
 * done now returns -EAGAIN and says what is missing (struct alloc_try);
 * what to do about it (wait, share a head, commit, collect, give up) is
 * the space policy's, in one table (space.c).
 *
 * Rules the zone model imposes, and how they are kept:
 * - A zone is written only at its write pointer, one write at a time: each
 *   write head has a lock held across its device write.
 * - Active zones (written, neither empty nor full) are a device resource.
 *   The journal's chain always has a slot (two, with its mirror: the
 *   copies are written in lockstep); the live super zone has one for
 *   good on a device with ALLOC_SUPER_SLOT_MIN slots or more, else only
 *   while an anchor is written; data zones share the rest. A zone a head
 *   holds counts from the moment it is taken, a parked one until it fills,
 *   is finished or is reset (alloc_settle()).
 * - Open zones are managed here too: before a zone that is not open is
 *   written, an open one that no write is in flight to is closed if the
 *   open limit is reached, so the device never has to choose one itself
 *   (null_blk refuses to reopen a closed zone at its active limit even to
 *   close another for it, and the file system went read-only on that).
 * - A zone is reset only when no live extent points into it and the record
 *   that freed its last extent is durable: a crash before that record lands
 *   must still find the data it names.
 * - Empty zones are taken least-worn first (fewest resets), so that a job
 *   writing and deleting checkpoints in a loop spreads resets over all
 *   zones; wear leveling's cold data goes to the most-worn (gc.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc_i.h"
#include "zonefuse/util.h"

/* A count about to go below zero is a bug; release builds clamp it. */
static uint64_t alloc_sub(uint64_t have, uint64_t take, const char *what)
{
#ifdef ZONEFUSE_CHECKS
	if (take > have) {
		zlog_err("internal error: %s goes below zero (%" PRIu64 " - %" PRIu64 ")",
			 what, have, take);
		abort();
	}
#else
	(void)what;
#endif
	return have - ZF_MIN(take, have);
}

void alloc_event(struct zfs *fs)
{
	ZLOCK_HELD(&fs->alloc_lock);

	alloc_check(fs);
	fs->event++;
	pthread_cond_broadcast(&fs->alloc_cv);
}

/*
 * Bring zone @id's counts in line with its state: a data zone is counted
 * active while a head holds it or it is partly written, a zone is counted
 * open only while it is partly written or a write to it is in flight.
 * Every change of a zone's write pointer, state or head goes through here.
 * alloc_lock held.
 */
void alloc_settle(struct zfs *fs, uint32_t id)
{
	struct zm_zone *z = &fs->m.zones[id];
	struct zfs_zone_acct *a = &fs->acct[id];
	bool active = z->type == ZDEV_ZONE_SEQ && z->state == ZM_ZONE_DATA &&
		      ((z->flags & ZFS_ZF_HEAD) || alloc_is_active(z));
	bool open = a->io || alloc_is_active(z);

	ZLOCK_HELD(&fs->alloc_lock);

	if (a->active != active) {
		a->active = active;
		if (active) {
			fs->nr_active++;
		} else {
			fs->nr_active--;
			alloc_event(fs);
		}
	}
	if (a->open && !open) {
		a->open = false;
		fs->nr_open--;
		alloc_event(fs);
	}
}

/*
 * Queue @z for its reset if nothing lives in it: no live extent, and no
 * write whose extent is still to be applied (a zone filled by writes in
 * flight looks empty to the extent count). alloc_lock held.
 */
void alloc_maybe_dead(struct zfs *fs, struct zm_zone *z)
{
	ZLOCK_HELD(&fs->alloc_lock);

	if (z->valid || z->pending || z->state != ZM_ZONE_DATA ||
	    (z->flags & (ZFS_ZF_HEAD | ZFS_ZF_RESETQ | ZFS_ZF_GC)))
		return;
	z->flags = (uint8_t)((z->flags & ~ZFS_ZF_PARKED) | ZFS_ZF_RESETQ);
	fs->resetq[fs->nr_resetq++] = alloc_zone_id(fs, z);
	alloc_settle(fs, alloc_zone_id(fs, z));
}

/*
 * Free zones the next journal snapshot needs (its size as last encoded),
 * in each copy of the chain.
 */
static uint32_t alloc_snap_zones(struct zfs *fs)
{
	uint64_t cap = fs->m.zones[le32toh(fs->sb.super_zone[0])].cap;

	/*
	 * The snapshot size as last encoded: asking the journal could wait
	 * for its committer, which may be waiting for alloc_lock.
	 */
	return (uint32_t)ZF_DIV_ROUND_UP(fs->snap_bytes + 1, cap) *
	       fs->jrnl_slots;
}

/*
 * Free zones a taker must leave. The journal takes any: it is what makes
 * reclaim's moves and every reset durable. Reclaim leaves the journal its
 * next snapshot and the zones its chain may still take before that roll
 * (jrnl_grow_zones(), at least one per copy): when reclaim could take the
 * last zones, the journal's next chain zone was refused and the file
 * system went read-only (stop 23's stress seed 930), and when data
 * was admitted into zones the chain then took, that data found no zone.
 * Data leaves the
 * reserve too (mkfs --reserve), which reclaim writes into while it empties
 * zones, and never takes from it: data that did, as a last resort, left
 * reclaim no zone to work in once every zone held live and dead data, and
 * the file system could free nothing again (the stress test's seed 2).
 */
uint32_t alloc_floor(struct zfs *fs, enum alloc_kind kind)
{
	uint32_t grow = fs->j ? jrnl_grow_zones(fs->j) : 0;
	uint32_t keep = alloc_snap_zones(fs) + ZF_MAX(grow, fs->jrnl_slots);

	ZLOCK_HELD(&fs->alloc_lock);

	if (kind == ALLOC_META)
		return 0;
	if (kind == ALLOC_GC)
		return keep;
	return fs->reserve_zones + keep - 1;
}

/*
 * Bytes new data can still take: the capacity of the zones data may use,
 * less the data's floor, the live data, the files' reserved ranges
 * (fallocate: promised to writes into them, zfs_write_need()), writes not
 * yet logged and room finishes skipped. Dead bytes count as available: reclaim turns them back
 * into free zones when writers need them (a zone whose data is all dead
 * needs only a reset). Caller holds alloc_lock.
 */
static uint64_t alloc_avail(struct zfs *fs)
{
	uint32_t floor = alloc_floor(fs, ALLOC_SHARED);
	uint64_t cap, live;
	uint32_t i;

	ZLOCK_HELD(&fs->alloc_lock);

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
	live = fs->m.live_bytes + fs->m.prealloc_bytes + fs->pending_total -
	       ZF_MIN(fs->copy_pending, fs->pending_total) + fs->waste_total;
	return cap > live ? cap - live : 0;
}

/* Free zones, and dead ones queued for their reset. alloc_lock held. */
static uint32_t alloc_free_count(struct zfs *fs)
{
	uint32_t i, n = 0;

	ZLOCK_HELD(&fs->alloc_lock);

	for (i = 0; i < fs->m.nr_zones; i++) {
		struct zm_zone *z = &fs->m.zones[i];

		if (z->state == ZM_ZONE_FREE ||
		    (z->state == ZM_ZONE_DATA && !z->valid &&
		     (z->flags & ZFS_ZF_RESETQ)))
			n++;
	}
	return n;
}

uint32_t alloc_free_zones(struct zfs *fs, uint32_t *floor)
{
	uint32_t n;

	zlock_mutex(&fs->alloc_lock, ZLOCK_ALLOC);
	*floor = alloc_floor(fs, ALLOC_SHARED);
	n = alloc_free_count(fs);
	zlock_unmutex(&fs->alloc_lock);
	return n;
}

bool alloc_wait(struct zfs *fs, const struct alloc_try *t, unsigned int ms)
{
	struct timespec ts;
	bool moved;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * 1000000l;
	if (ts.tv_nsec >= 1000000000l) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000l;
	}
	zlock_mutex(&fs->alloc_lock, ZLOCK_ALLOC);
	while (fs->event == t->event &&
	       !pthread_cond_timedwait(&fs->alloc_cv, &fs->alloc_lock, &ts))
		;
	moved = fs->event != t->event;
	zlock_unmutex(&fs->alloc_lock);
	return moved;
}

/* @t says what is missing, as of now. alloc_lock held. */
static int alloc_need(struct zfs *fs, struct alloc_try *t, enum alloc_need need)
{
	ZLOCK_HELD(&fs->alloc_lock);

	t->need = need;
	t->event = fs->event;
	return -EAGAIN;
}

/* ---- finishing and closing -------------------------------------------- */

/* Close open zone @z (no write in flight to it). alloc_lock held. */
static void alloc_close(struct zfs *fs, struct zm_zone *z)
{
	uint32_t id = alloc_zone_id(fs, z);
	int ret = zdev_zone_op(fs->dev, ZDEV_OP_CLOSE, id);

	ZLOCK_HELD(&fs->alloc_lock);

	if (ret)
		zlog_debug("zone %u: close failed: %s", id, strerror(-ret));
	fs->acct[id].open = false;
	fs->nr_open--;
}

/*
 * An open zone to close for @self: one no write is in flight to, data
 * zones first (the journal's and the super zone are written at every
 * commit). alloc_lock held.
 */
static struct zm_zone *alloc_close_victim(struct zfs *fs, uint32_t self)
{
	struct zm_zone *meta = NULL;
	uint32_t i;

	ZLOCK_HELD(&fs->alloc_lock);

	for (i = 0; i < fs->m.nr_zones; i++) {
		struct zfs_zone_acct *a = &fs->acct[i];

		if (i == self || !a->open || a->io)
			continue;
		if (fs->m.zones[i].state == ZM_ZONE_DATA)
			return &fs->m.zones[i];
		meta = &fs->m.zones[i];
	}
	return meta;
}

/*
 * Room under the open limit for zone @self to be opened: close idle open
 * zones until there is. False if every open zone has a write in flight.
 * alloc_lock held.
 */
static bool alloc_open_room(struct zfs *fs, uint32_t self)
{
	ZLOCK_HELD(&fs->alloc_lock);

	while (fs->max_open && fs->nr_open >= fs->max_open) {
		struct zm_zone *v = alloc_close_victim(fs, self);

		if (!v)
			return false;
		alloc_close(fs, v);
	}
	return true;
}

bool alloc_finish_dev(struct zfs *fs, uint32_t id)
{
	struct zm_zone *z = &fs->m.zones[id];
	int ret;

	ZLOCK_HELD(&fs->alloc_lock);

	if (z->type == ZDEV_ZONE_SEQ && z->wp == z->start)
		return true;
	if (alloc_is_active(z)) {
		/*
		 * A zone not open must be opened to be finished (null_blk's
		 * rule, and the emulator's): at the open limit the finish of
		 * a closed zone is refused, and a zone believed finished held
		 * its active slot on the device.
		 */
		if (!fs->acct[id].open && !alloc_open_room(fs, id))
			return false;
		ret = zdev_finish(fs->dev, id);
		if (ret) {
			zlog_warn("%s: finishing zone %u failed: %s",
				  zdev_path(fs->dev), id, strerror(-ret));
			return false;
		}
	}
	z->wp = z->start + z->cap;
	alloc_settle(fs, id);
	return true;
}

/*
 * Finish @z: it keeps its data and gives back its active slot. The room it
 * skips is waste while the zone holds data (alloc_avail() does not count
 * it), until the zone is reset. A zone taken but never written is simply
 * free again. False if the device cannot finish it now. alloc_lock held;
 * the zone command is quick and keeps the zone's state consistent with the
 * device's.
 */
bool alloc_finish(struct zfs *fs, struct zm_zone *z)
{
	uint32_t id = alloc_zone_id(fs, z);
	uint64_t room = alloc_room(z);

	ZLOCK_HELD(&fs->alloc_lock);

	if (z->wp == z->start && z->state == ZM_ZONE_DATA && !z->valid &&
	    !z->pending && !(z->flags & ZFS_ZF_RESETQ)) {
		z->flags = 0;
		z->state = ZM_ZONE_FREE;
		fs->cap_dirty = true;
		alloc_settle(fs, id);
		return true;
	}
	if (!alloc_finish_dev(fs, id))
		return false;
	if ((z->valid || z->pending) && z->state == ZM_ZONE_DATA) {
		fs->acct[id].waste += room;
		fs->waste_total += room;
	}
	z->flags &= (uint8_t)~ZFS_ZF_PARKED;
	alloc_settle(fs, id);
	alloc_maybe_dead(fs, z);
	return true;
}

int alloc_io_begin(struct zfs *fs, uint32_t zone, struct alloc_try *t)
{
	struct zm_zone *z = &fs->m.zones[zone];
	struct zfs_zone_acct *a = &fs->acct[zone];
	int ret = 0;

	zlock_mutex(&fs->alloc_lock, ZLOCK_ALLOC);
	if (z->type == ZDEV_ZONE_SEQ && !a->open) {
		if (!alloc_open_room(fs, zone)) {
			ret = alloc_need(fs, t, ALLOC_NEED_OPEN);
			goto out_unlock;
		}
		a->open = true;
		fs->nr_open++;
	}
	a->io = true;
out_unlock:
	zlock_unmutex(&fs->alloc_lock);
	return ret;
}

static void alloc_io_end_locked(struct zfs *fs, uint32_t zone)
{
	ZLOCK_HELD(&fs->alloc_lock);

	fs->acct[zone].io = false;
	alloc_settle(fs, zone);
	alloc_event(fs);
}

void alloc_io_end(struct zfs *fs, uint32_t zone)
{
	zlock_mutex(&fs->alloc_lock, ZLOCK_ALLOC);
	alloc_io_end_locked(fs, zone);
	zlock_unmutex(&fs->alloc_lock);
}

/* ---- active slots ------------------------------------------------------ */

/*
 * Active slots held: data zones, the journal's chain, the super zone
 * while it keeps one or writes an anchor. alloc_lock held.
 */
static uint32_t alloc_slots_used(struct zfs *fs)
{
	ZLOCK_HELD(&fs->alloc_lock);
	return fs->nr_active + fs->jrnl_slots +
	       (fs->super_slot || fs->super_busy);
}

/*
 * May a data zone of @kind become active? The journal's chain always has
 * a slot, the super zone one while it keeps it or writes an anchor; a
 * large file takes a zone of its own only while one slot more stays for
 * the shared heads (it shares instead: it never pushes a head out).
 * alloc_lock held.
 */
static bool alloc_slot_ok(struct zfs *fs, enum alloc_kind kind)
{
	if (!fs->max_active)
		return true;
	return alloc_slots_used(fs) + 1 + (kind == ALLOC_PRIVATE) <=
	       fs->max_active;
}

bool alloc_slots_spare(struct zfs *fs)
{
	bool ok;

	zlock_mutex(&fs->alloc_lock, ZLOCK_ALLOC);
	ok = !fs->max_active ||
	     alloc_slots_used(fs) + 1 + ALLOC_SHARED_HEADS <= fs->max_active;
	zlock_unmutex(&fs->alloc_lock);
	return ok;
}

/*
 * The head other than @self that is not writing now (its lock is free)
 * and whose zone @score rates highest (0: not a candidate), returned with
 * its lock held; NULL if none. alloc_lock held; heads' locks are only
 * tried, keeping the lock order (a head's lock before alloc_lock).
 */
static struct zfs_head *
alloc_idle_head(struct zfs *fs, struct zfs_head *self,
		uint64_t (*score)(const struct zm_zone *))
{
	struct zfs_head *shared[] = { &fs->small, &fs->hot, &fs->gc, &fs->cold };
	uint32_t nshared = ZF_ARRAY_SIZE(shared), i;
	struct zfs_head *best = NULL, *h;
	uint64_t best_score = 0;

	ZLOCK_HELD(&fs->alloc_lock);

	for (i = 0; i <= nshared; i++) {
		for (h = i < nshared ? shared[i] : fs->heads; h;
		     h = i < nshared ? NULL : h->next) {
			uint64_t sc;

			/*
			 * Reclaim's heads are left alone while it empties a
			 * victim: it counted on their room (alloc_gc_budget()).
			 */
			if (h == self || h->zone == ZF_NO_ZONE ||
			    (fs->nr_gc_victims && (h->kind == ZFS_HEAD_GC ||
						   h->kind == ZFS_HEAD_COLD)) ||
			    zlock_mutex_try(&h->lock, ZLOCK_HEAD))
				continue;
			sc = h->zone == ZF_NO_ZONE ? 0 :
						     score(&fs->m.zones[h->zone]);
			if (sc > best_score) {
				if (best)
					zlock_unmutex(&best->lock);
				best = h;
				best_score = sc;
			} else {
				zlock_unmutex(&h->lock);
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
	return alloc_room(z);
}

/*
 * Give back an active slot at little cost: finish the fullest parked zone
 * or idle head's zone (other than @self's), if what it leaves is under
 * 1/ALLOC_FINISH_DIV of it (or everything, with @any: the super zone's
 * anchor cannot wait for a zone to fill). True if a slot was freed.
 * alloc_lock held.
 */
bool alloc_free_slot(struct zfs *fs, struct zfs_head *self, bool any)
{
	struct zm_zone *best = NULL;
	struct zfs_head *bh;
	uint32_t i;

	ZLOCK_HELD(&fs->alloc_lock);

	for (i = 0; i < fs->m.nr_zones; i++) {
		struct zm_zone *z = &fs->m.zones[i];

		if ((z->flags & ZFS_ZF_PARKED) &&
		    (!best || alloc_room(z) < alloc_room(best)))
			best = z;
	}
	bh = alloc_idle_head(fs, self, alloc_score_written);
	if (bh && (!best || alloc_room(&fs->m.zones[bh->zone]) < alloc_room(best))) {
		best = &fs->m.zones[bh->zone];
	} else if (bh) {
		zlock_unmutex(&bh->lock);
		bh = NULL;
	}
	if (!best || (!any && alloc_room(best) * ALLOC_FINISH_DIV >= best->cap)) {
		if (bh)
			zlock_unmutex(&bh->lock);
		return false;
	}
	zlog_debug("zone %u: finished to free an active slot, %" PRIu64 " bytes left",
		   alloc_zone_id(fs, best), alloc_room(best));
	if (bh)
		best->flags &= (uint8_t)~ZFS_ZF_HEAD;
	if (!alloc_finish(fs, best)) {
		if (bh) {
			best->flags |= ZFS_ZF_HEAD;
			zlock_unmutex(&bh->lock);
		}
		return false;
	}
	if (bh) {
		bh->zone = ZF_NO_ZONE;
		zlock_unmutex(&bh->lock);
	}
	return true;
}

int alloc_super_begin(struct zfs *fs, struct alloc_try *t)
{
	int ret = 0;

	zlock_mutex(&fs->alloc_lock, ZLOCK_ALLOC);
	if (!fs->super_slot) {
		/* The slot for the anchor: a data zone gives its slot back. */
		while (fs->max_active &&
		       fs->nr_active + fs->jrnl_slots + 1 > fs->max_active &&
		       alloc_free_slot(fs, NULL, true))
			;
		if (fs->max_active &&
		    fs->nr_active + fs->jrnl_slots + 1 > fs->max_active)
			ret = alloc_need(fs, t, ALLOC_NEED_SLOT);
		else
			fs->super_busy = true;
	}
	zlock_unmutex(&fs->alloc_lock);
	return ret;
}

int alloc_super_end(struct zfs *fs, uint32_t zone, struct alloc_try *t)
{
	int ret = 0;

	zlock_mutex(&fs->alloc_lock, ZLOCK_ALLOC);
	if (!fs->super_slot) {
		/* Its next anchor goes to the other super zone (jrnl.c). */
		if (!alloc_finish_dev(fs, zone)) {
			ret = alloc_need(fs, t, ALLOC_NEED_OPEN);
		} else {
			fs->super_busy = false;
			alloc_event(fs);
		}
	}
	zlock_unmutex(&fs->alloc_lock);
	return ret;
}

/* ---- taking zones -------------------------------------------------------- */

/*
 * Take an empty zone: the least-worn free zone (the most-worn for the
 * cold head: wear leveling puts data that does not die where resets have
 * been many). Returns 0, -EAGAIN when the only free zones left wait for
 * their freeing record to be durable, -ENOSPC when none is free above the
 * taker's floor, -EBUSY when a data zone's active slot, which the caller
 * checked, was taken while alloc_lock was dropped for a reset. alloc_lock
 * held (may be dropped for a reset).
 */
static int alloc_take_zone(struct zfs *fs, enum alloc_kind kind,
			   bool most_worn, uint32_t *zone)
{
	bool meta = kind == ALLOC_META;

	ZLOCK_HELD(&fs->alloc_lock);

	for (;;) {
		uint32_t floor = alloc_floor(fs, kind);
		uint32_t i, nfree = 0, waiting = 0;
		struct zm_zone *best = NULL;
		int ret;

		/*
		 * Again after each reset: another head may have taken the
		 * last slot meanwhile, and this zone would have been one
		 * past the device's limit (e2e-stress, max_active 6).
		 */
		if (!meta && !alloc_slot_ok(fs, kind))
			return -EBUSY;

		for (i = 0; i < fs->m.nr_zones; i++) {
			struct zm_zone *z = &fs->m.zones[i];

			/*
			 * A dead zone a head took back is not waiting for a
			 * commit: it is freed when that head lets go, and a
			 * writer told to wait for commits would wait for it
			 * for ever.
			 */
			if (z->state == ZM_ZONE_DATA && !z->valid &&
			    (z->flags & ZFS_ZF_RESETQ) &&
			    !(z->flags & ZFS_ZF_HEAD))
				waiting++;
			if (z->state != ZM_ZONE_FREE || z->cap < fs->bs)
				continue;
			nfree++;
			if (meta && z->cap < JRNL_MIN_ZONE_CAP)
				continue;
			if (!best || (most_worn ? z->resets > best->resets :
						  z->resets < best->resets))
				best = z;
		}
		if ((!best || nfree <= floor) && waiting && alloc_reset_now(fs))
			continue;
		if (!best || nfree <= floor)
			return waiting ? -EAGAIN : -ENOSPC;
		*zone = alloc_zone_id(fs, best);
		best->state = meta ? ZM_ZONE_META : ZM_ZONE_DATA;
		fs->cap_dirty = true;
		best->flags = meta ? 0 : ZFS_ZF_HEAD;
		best->mtime = zutil_now_real_ns();
		if (best->wp != best->start) {
			/* Dead since the last mount: reset before use. */
			best->state = ZM_ZONE_BAD;
			zlock_unmutex(&fs->alloc_lock);
			ret = best->type == ZDEV_ZONE_SEQ ?
				      zdev_reset(fs->dev, *zone) : 0;
			zlock_mutex(&fs->alloc_lock, ZLOCK_ALLOC);
			if (ret) {
				zlog_err("%s: reset of zone %u failed: %s; the zone is retired",
					 zdev_path(fs->dev), *zone,
					 strerror(-ret));
				best->flags = 0;
				fs->cap_dirty = true;
				continue;
			}
			best->wp = best->start;
			best->resets++;
			fs->resets_done++;
			/* Free again, and chosen again: the lock was dropped. */
			best->state = ZM_ZONE_FREE;
			best->flags = 0;
			continue;
		}
		alloc_settle(fs, *zone);
		return 0;
	}
}

/*
 * Is a zone free above @kind's floor, or soon (dead, queued for its
 * reset)? Only then is a slot worth freeing. alloc_lock held.
 */
static bool alloc_have_free(struct zfs *fs, enum alloc_kind kind)
{
	uint32_t floor = alloc_floor(fs, kind), i, n = 0;

	ZLOCK_HELD(&fs->alloc_lock);

	for (i = 0; i < fs->m.nr_zones && n <= floor; i++) {
		struct zm_zone *z = &fs->m.zones[i];

		n += z->state == ZM_ZONE_FREE ||
		     (z->state == ZM_ZONE_DATA && (z->flags & ZFS_ZF_RESETQ));
	}
	return n > floor;
}

int alloc_jrnl_zone(struct zfs *fs, uint32_t *zone)
{
	int ret;

	zlock_mutex(&fs->alloc_lock, ZLOCK_ALLOC);
	ret = alloc_take_zone(fs, ALLOC_META, false, zone);
	zlock_unmutex(&fs->alloc_lock);
	/* Zones that wait for a commit are no use to the committer. */
	return ret == -EAGAIN ? -ENOSPC : ret;
}

static enum alloc_kind alloc_head_kind(const struct zfs_head *h)
{
	switch (h->kind) {
	case ZFS_HEAD_PRIVATE:
		return ALLOC_PRIVATE;
	case ZFS_HEAD_GC:
	case ZFS_HEAD_COLD:
		return ALLOC_GC;
	default:
		return ALLOC_SHARED;
	}
}

/*
 * The parked zone with the most room that belongs to @group, or to no
 * group with @group 0 (a zone from before the mount, a victim reclaim
 * left with data), or to any with @any. alloc_lock held.
 */
static struct zm_zone *alloc_parked_best(struct zfs *fs, uint64_t group,
					 bool any)
{
	struct zm_zone *best = NULL;
	uint32_t i;

	ZLOCK_HELD(&fs->alloc_lock);

	for (i = 0; i < fs->m.nr_zones; i++) {
		struct zm_zone *z = &fs->m.zones[i];

		if ((z->flags & ZFS_ZF_PARKED) && (any || z->owner == group) &&
		    (!best || alloc_room(z) > alloc_room(best)))
			best = z;
	}
	return best;
}

/*
 * Continue in the room of another stream's zone: a parked zone or the zone
 * of a head not writing now, the one with the most room. The room of every
 * zone counts as free space (alloc_avail()), and with zones or active
 * slots short it is where admitted data goes: with many large files in
 * writeback at once, 13 heads held 14.8 MiB of a 116 MiB capacity while
 * the shared heads found no zone, and admitted data was lost. The head
 * that loses its zone takes another on its next write. alloc_lock and
 * @head's lock held; other heads' locks only tried.
 */
static bool alloc_take_over(struct zfs *fs, struct zfs_head *head)
{
	struct zfs_head *bh = alloc_idle_head(fs, head, alloc_score_room);
	struct zm_zone *best = alloc_parked_best(fs, 0, true);

	ZLOCK_HELD(&fs->alloc_lock);
	ZLOCK_HELD(&head->lock);

	if (bh && (!best || alloc_room(&fs->m.zones[bh->zone]) > alloc_room(best))) {
		head->zone = bh->zone;
		bh->zone = ZF_NO_ZONE;
		zlock_unmutex(&bh->lock);
	} else {
		if (bh)
			zlock_unmutex(&bh->lock);
		if (!best)
			return false;
		best->flags = (uint8_t)((best->flags & ~ZFS_ZF_PARKED) |
					ZFS_ZF_HEAD);
		head->zone = alloc_zone_id(fs, best);
	}
	zlog_debug("zone %u: taken over by a head of kind %d, %" PRIu64 " bytes left",
		   head->zone, head->kind, alloc_room(&fs->m.zones[head->zone]));
	alloc_event(fs);
	return true;
}

/*
 * Are free zones short enough that a shared head should continue in the
 * room a large file's directory parked rather than take a fresh zone: no
 * more free above the floor than the data zones active now, each of which
 * may want a fresh zone next? Then reclaim is near, and idle room is
 * worth more than a checkpoint's zones kept apart from small files.
 * alloc_lock held.
 */
static bool alloc_free_short(struct zfs *fs)
{
	ZLOCK_HELD(&fs->alloc_lock);
	return alloc_free_count(fs) <=
	       alloc_floor(fs, ALLOC_SHARED) + fs->nr_active;
}

/*
 * A parked zone for @head to continue in, or NULL: for a private head,
 * one of its placement group (a large file of the directory the last one
 * came from continues where it stopped); for a shared head, one of no
 * group, or of any once free zones are short. A fresh zone taken while
 * parked room idled brought reclaim nearer for nothing: near full, with
 * the zones of before the mount left parked, reclaim copied 30 of 48 MiB
 * of full zones while parked zones held 98 MiB of room (seed 6 of
 * bench/reclaim-host.py --zone-cap 48). alloc_lock held.
 */
static struct zm_zone *alloc_parked_next(struct zfs *fs, struct zfs_head *head)
{
	ZLOCK_HELD(&fs->alloc_lock);

	if (head->kind == ZFS_HEAD_PRIVATE)
		return head->group ? alloc_parked_best(fs, head->group, false) :
				     NULL;
	if (alloc_head_kind(head) != ALLOC_SHARED)
		return NULL;
	return alloc_parked_best(fs, 0, alloc_free_short(fs));
}

/*
 * Give @head a zone without waiting, in this order:
 * 1. a parked zone (alloc_parked_next());
 * 2. a fresh zone, if its kind may have another active slot and a free
 *    zone is left above its floor;
 * 3. no slot: a nearly full zone finished for its slot, then a fresh zone;
 * 4. a shared head: the room of a parked or idle zone (alloc_take_over()).
 * Else -EAGAIN, and @t says what is missing. A private head stops before
 * 4: its data goes to a shared head (space.c). alloc_lock and @head's lock
 * held.
 */
static int alloc_head_zone(struct zfs *fs, struct zfs_head *head,
			   struct alloc_try *t)
{
	enum alloc_kind kind = alloc_head_kind(head);
	struct zm_zone *z = alloc_parked_next(fs, head);
	bool slot, cold = head->kind == ZFS_HEAD_COLD;
	uint32_t zone;
	int ret;

	ZLOCK_HELD(&fs->alloc_lock);
	ZLOCK_HELD(&head->lock);

	if (z) {
		z->flags = (uint8_t)((z->flags & ~ZFS_ZF_PARKED) | ZFS_ZF_HEAD);
		head->zone = alloc_zone_id(fs, z);
		zlog_debug("zone %u: parked zone of group %" PRIu64 " taken by a head of kind %d",
			   head->zone, z->owner, head->kind);
		return 0;
	}
	slot = alloc_slot_ok(fs, kind) ||
	       (alloc_have_free(fs, kind) &&
		alloc_free_slot(fs, head, false) && alloc_slot_ok(fs, kind));
	ret = slot ? alloc_take_zone(fs, kind, cold, &zone) : -EBUSY;
	if (!ret) {
		head->zone = zone;
		zlog_debug("zone %u: taken by a head of kind %d", zone, head->kind);
		return 0;
	}
	if (kind != ALLOC_PRIVATE && alloc_take_over(fs, head))
		return 0;
	if (ret == -EBUSY)
		return alloc_need(fs, t, ALLOC_NEED_SLOT);
	return alloc_need(fs, t, ret == -EAGAIN ? ALLOC_NEED_COMMIT :
						  ALLOC_NEED_RECLAIM);
}

/* @head's zone filled up: it lets go (alloc_lock held). */
static void alloc_head_full(struct zfs *fs, struct zfs_head *head)
{
	struct zm_zone *z = &fs->m.zones[head->zone];

	ZLOCK_HELD(&fs->alloc_lock);
	ZLOCK_HELD(&head->lock);

	z->flags &= (uint8_t)~ZFS_ZF_HEAD;
	alloc_settle(fs, head->zone);
	alloc_maybe_dead(fs, z);
	head->zone = ZF_NO_ZONE;
}

/*
 * After a failed write the device's write pointer may be anywhere (a
 * partial write, a drive that moved it): ask the device, believe it, and
 * stop using the zone for new data. alloc_lock held (a report is quick).
 */
static void alloc_write_failed(struct zfs *fs, struct zfs_head *head, int err)
{
	struct zm_zone *z = &fs->m.zones[head->zone];
	struct zdev_zone rep;
	bool have = zdev_report(fs->dev, head->zone, 1, &rep) == 1;

	ZLOCK_HELD(&fs->alloc_lock);
	ZLOCK_HELD(&head->lock);

	zlog_err("%s: write to zone %u at 0x%" PRIx64 " failed: %s; the zone is retired",
		 zdev_path(fs->dev), head->zone, z->wp, strerror(-err));
	if (have && rep.type == ZDEV_ZONE_SEQ && rep.cond != ZDEV_COND_FULL &&
	    rep.wp >= z->start && rep.wp <= z->start + z->cap)
		z->wp = rep.wp;
	if (have && (rep.cond == ZDEV_COND_READONLY ||
		     rep.cond == ZDEV_COND_OFFLINE))
		z->wp = z->start + z->cap;
	else if (!alloc_finish(fs, z))
		z->flags &= (uint8_t)~ZFS_ZF_PARKED; /* never written again */
	alloc_head_full(fs, head);
}

int alloc_head_write(struct zfs *fs, struct zfs_head *head, const void *buf,
		     size_t len, uint64_t *addr, size_t *done,
		     struct alloc_try *t)
{
	int ret = 0, failures = 0, refusals = 0;
	struct zm_zone *z;
	uint32_t zone;
	size_t n;

	zlock_mutex(&head->lock, ZLOCK_HEAD);
	for (;;) {
		zlock_mutex(&fs->alloc_lock, ZLOCK_ALLOC);
		if (head->zone == ZF_NO_ZONE) {
			ret = alloc_head_zone(fs, head, t);
			if (ret) {
				zlock_unmutex(&fs->alloc_lock);
				goto out_unlock;
			}
		}
		zone = head->zone;
		zlock_unmutex(&fs->alloc_lock);
		ret = alloc_io_begin(fs, zone, t);
		if (ret)
			goto out_unlock;
		z = &fs->m.zones[zone];
		n = (size_t)ZF_MIN((uint64_t)len, alloc_room(z));
		n = ZF_MIN(n, (size_t)ZFS_CHUNK);
		ret = zdev_write(fs->dev, buf, n, z->wp);
		zlock_mutex(&fs->alloc_lock, ZLOCK_ALLOC);
		if (!ret)
			break;
		/* A zone limit refused it: our counts drifted. */
		if (zdev_limit_err(ret) && ++refusals <= 3) {
			alloc_io_end_locked(fs, zone);
			alloc_resync_locked(fs);
			zlock_unmutex(&fs->alloc_lock);
			continue;
		}
		alloc_write_failed(fs, head, ret);
		alloc_io_end_locked(fs, zone);
		zlock_unmutex(&fs->alloc_lock);
		if (++failures < 3 && ret != -ENOSPC)
			continue;
		goto out_unlock;
	}
	*addr = z->wp;
	*done = n;
	z->wp += n;
	z->pending += n; /* until alloc_landed() */
	fs->pending_total += n;
	if (head->kind == ZFS_HEAD_GC || head->kind == ZFS_HEAD_COLD)
		fs->copy_pending += n;
	z->mtime = zutil_now_real_ns();
	fs->acct[zone].wr_epoch = fs->resets_done;
	if (z->wp == z->start + z->cap)
		alloc_head_full(fs, head);
	alloc_io_end_locked(fs, zone);
	zlock_unmutex(&fs->alloc_lock);
out_unlock:
	zlock_unmutex(&head->lock);
	return ret;
}

void alloc_landed(struct zfs *fs, uint64_t addr, uint64_t len, bool copy)
{
	struct zm_zone *z = &fs->m.zones[zm_zone_of(&fs->m, addr)];
	uint64_t n;

	zlock_mutex(&fs->alloc_lock, ZLOCK_ALLOC);
	n = ZF_MIN(len, z->pending);
	z->pending = alloc_sub(z->pending, len, "a zone's pending bytes");
	fs->pending_total = alloc_sub(fs->pending_total, n, "pending bytes");
	if (copy)
		fs->copy_pending = alloc_sub(fs->copy_pending, n,
					     "reclaim's pending bytes");
	if (!z->pending && !z->valid) {
		/* Whatever record dropped the zone's data, it is appended. */
		z->free_seq = ZF_MAX(z->free_seq, jrnl_last_seq(fs->j));
		alloc_maybe_dead(fs, z);
	}
	alloc_event(fs);
	zlock_unmutex(&fs->alloc_lock);
}

/* ---- private heads ------------------------------------------------------- */

struct zfs_head *alloc_private_head(struct zfs *fs, uint64_t group)
{
	struct zfs_head *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	pthread_mutex_init(&h->lock, NULL);
	h->zone = ZF_NO_ZONE;
	h->kind = ZFS_HEAD_PRIVATE;
	h->group = group;
	zlock_mutex(&fs->alloc_lock, ZLOCK_ALLOC);
	h->next = fs->heads;
	fs->heads = h;
	zlock_unmutex(&fs->alloc_lock);
	return h;
}

/*
 * A head lets go of its zone: a zone with nothing live in it and nothing
 * in flight goes to its reset; otherwise it is parked, for the next large
 * file of @group, or anyone once zones or slots run short. It is not
 * finished: its room would be lost until the zone is reset, and a
 * write-once fill to ENOSPC then made reclaim copy every byte to get it
 * back (1 MiB files: 1,599 MiB copied, write amplification 2.00). A slot
 * is freed when one is needed (alloc_free_slot()). alloc_lock held.
 */
static void alloc_head_park(struct zfs *fs, struct zfs_head *head,
			    uint64_t group)
{
	struct zm_zone *z;

	ZLOCK_HELD(&fs->alloc_lock);
	ZLOCK_HELD(&head->lock);

	if (head->zone == ZF_NO_ZONE)
		return;
	z = &fs->m.zones[head->zone];
	z->flags &= (uint8_t)~ZFS_ZF_HEAD;
	if (z->wp == z->start && !z->valid && !z->pending) {
		/* Written nothing: free again, with nothing to reset. */
		z->flags = 0;
		z->state = ZM_ZONE_FREE;
		fs->cap_dirty = true;
		alloc_settle(fs, head->zone);
	} else if (!z->valid && !z->pending) {
		alloc_settle(fs, head->zone);
		alloc_maybe_dead(fs, z);
	} else {
		z->flags |= ZFS_ZF_PARKED;
		z->owner = group;
		zlog_debug("zone %u: parked for group %" PRIu64, head->zone,
			   group);
	}
	head->zone = ZF_NO_ZONE;
	alloc_event(fs);
}

void alloc_put_head(struct zfs *fs, struct zfs_head *head)
{
	struct zfs_head **pp;

	zlock_mutex(&head->lock, ZLOCK_HEAD);
	zlock_mutex(&fs->alloc_lock, ZLOCK_ALLOC);
	alloc_head_park(fs, head, head->group);
	for (pp = &fs->heads; *pp != head; pp = &(*pp)->next)
		;
	*pp = head->next;
	zlock_unmutex(&fs->alloc_lock);
	zlock_unmutex(&head->lock);
	pthread_mutex_destroy(&head->lock);
	free(head);
}

/* Lock order: a head's lock, then alloc_lock (as alloc_head_write()). */
static void alloc_release_head(struct zfs *fs, struct zfs_head *h)
{
	zlock_mutex(&h->lock, ZLOCK_HEAD);
	zlock_mutex(&fs->alloc_lock, ZLOCK_ALLOC);
	alloc_head_park(fs, h, 0);
	zlock_unmutex(&fs->alloc_lock);
	zlock_unmutex(&h->lock);
}

void alloc_release_heads(struct zfs *fs)
{
	struct zfs_head *h;

#ifdef ZONEFUSE_CHECKS
	/* The walk below holds no lock: no thread may give a head back. */
	if (fs->wb_threads) {
		zlog_err("internal error: heads released with writeback threads running");
		abort();
	}
#endif
	alloc_release_head(fs, &fs->small);
	alloc_release_head(fs, &fs->hot);
	alloc_release_head(fs, &fs->gc);
	alloc_release_head(fs, &fs->cold);
	zlock_mutex(&fs->alloc_lock, ZLOCK_ALLOC);
	h = fs->heads;
	zlock_unmutex(&fs->alloc_lock);
	for (; h; h = h->next)
		alloc_release_head(fs, h);
}

/* ---- space --------------------------------------------------------------- */

int alloc_reserve(struct zfs *fs, uint64_t len, struct alloc_try *t)
{
	int ret = 0;

	zlock_mutex(&fs->alloc_lock, ZLOCK_ALLOC);
	if (alloc_avail(fs) < fs->reserved + len) {
		/*
		 * Space may come back: dead zones wait for their freeing
		 * record to be durable, and data staged in DRAM holds a
		 * promise of space that, once written (an overwrite in
		 * particular), frees the bytes it replaces.
		 */
		if (fs->nr_resetq)
			ret = alloc_need(fs, t, ALLOC_NEED_COMMIT);
		else if (fs->reserved)
			ret = alloc_need(fs, t, ALLOC_NEED_FLUSH);
		else
			ret = -ENOSPC;
	} else {
		fs->reserved += len;
	}
	zlock_unmutex(&fs->alloc_lock);
	return ret;
}

void alloc_unreserve(struct zfs *fs, uint64_t len)
{
	zlock_mutex(&fs->alloc_lock, ZLOCK_ALLOC);
	fs->reserved = alloc_sub(fs->reserved, len, "reserved space");
	alloc_event(fs);
	zlock_unmutex(&fs->alloc_lock);
}

void alloc_restage(struct zfs *fs, uint64_t before, uint64_t after)
{
	zlock_mutex(&fs->alloc_lock, ZLOCK_ALLOC);
	fs->reserved = alloc_sub(fs->reserved, before, "reserved space") + after;
	zlock_unmutex(&fs->alloc_lock);
}

uint64_t alloc_prealloc_bytes(struct zfs *fs)
{
	uint64_t n;

	zlock_mutex(&fs->alloc_lock, ZLOCK_ALLOC);
	n = fs->m.prealloc_bytes;
	zlock_unmutex(&fs->alloc_lock);
	return n;
}

void alloc_space(struct zfs *fs, uint64_t *capacity, uint64_t *free,
		 uint64_t *used, uint64_t *reclaimable)
{
	uint64_t cap = 0, u = 0, dead = 0, avail;
	uint32_t i, floor;

	zlock_mutex(&fs->alloc_lock, ZLOCK_ALLOC);
	floor = alloc_floor(fs, ALLOC_SHARED);
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
			dead += (z->wp - z->start) -
				ZF_MIN(z->valid, z->wp - z->start);
	}
	/* Reserved ranges are used space to df, as ext4's unwritten extents. */
	u += fs->m.prealloc_bytes;
	avail = alloc_avail(fs);
	*free = avail > fs->reserved ? avail - fs->reserved : 0;
	/* The reserve is not capacity users can fill (as alloc_avail()). */
	*capacity = cap - ZF_MIN(cap, (uint64_t)floor * fs->max_zcap);
	zlock_unmutex(&fs->alloc_lock);
	*used = u;
	*reclaimable = dead - ZF_MIN(dead, fs->waste_total);
}

