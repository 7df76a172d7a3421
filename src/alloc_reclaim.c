// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Giving zones back: resetting dead zones (at once for a taker out of free
 * zones, or in the background with a ZONE_RESET record), reclaim's choice
 * of victims, and the zones of the journal's chain. Apart from alloc.c
 * because none of it is on the path of a write.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_i.h"
#include "zonefuse/util.h"

/*
 * Out of free zones, with dead ones queued: reset one whose freeing record
 * is durable right here, instead of waiting for the background thread
 * (the journal, which may be asking, cannot wait: it is the committer).
 * No ZONE_RESET record tells of it: replay takes a chain zone without live
 * data as reset (jrnl_rd_zone()), and a data zone is reset again before
 * use; the next snapshot carries the count. True if a zone was freed.
 * alloc_lock held (dropped around the reset).
 */
bool alloc_reset_now(struct zfs *fs)
{
	uint64_t durable = jrnl_durable_seq(fs->j);
	uint32_t i;

	ZLOCK_HELD(&fs->alloc_lock);

	for (i = 0; i < fs->nr_resetq; i++) {
		uint32_t id = fs->resetq[i];
		struct zm_zone *z = &fs->m.zones[id];
		int ret = 0;

		if (z->valid || z->pending || z->state != ZM_ZONE_DATA ||
		    (z->flags & (ZFS_ZF_HEAD | ZFS_ZF_GC)) ||
		    z->free_seq > durable || fs->acct[id].io)
			continue;
		fs->resetq[i] = fs->resetq[--fs->nr_resetq];
		z->flags = 0;
		/* BAD until reset: nothing takes it meanwhile. */
		z->state = ZM_ZONE_BAD;
		if (z->type == ZDEV_ZONE_SEQ && z->wp != z->start) {
			zlock_unmutex(&fs->alloc_lock);
			ret = zdev_reset(fs->dev, id);
			zlock_mutex(&fs->alloc_lock, ZLOCK_ALLOC);
		}
		if (ret) {
			fs->cap_dirty = true;
			zlog_err("%s: reset of zone %u failed: %s; the zone is retired",
				 zdev_path(fs->dev), id, strerror(-ret));
			return false;
		}
		z->wp = z->start;
		z->resets++;
		fs->resets_done++;
		fs->waste_total -= fs->acct[id].waste;
		fs->acct[id].waste = 0;
		z->state = ZM_ZONE_FREE;
		alloc_settle(fs, id);
		alloc_event(fs);
		return true;
	}
	return false;
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
	zlock_mutex(&fs->bg_lock, ZLOCK_BG);
	fs->bg_dead = true;
	pthread_cond_signal(&fs->bg_cv);
	zlock_unmutex(&fs->bg_lock);
}

/* ---- reclaim ----------------------------------------------------------- */

int alloc_reclaim(struct zfs *fs)
{
	uint64_t durable;
	uint32_t i, done = 0;
	int ret = 0;

	if (fs->rdonly || fs->error)
		return 0;
	durable = jrnl_durable_seq(fs->j);
	zlock_rd(&fs->meta_lock, ZLOCK_META);
	zlock_mutex(&fs->alloc_lock, ZLOCK_ALLOC);
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
		if (z->free_seq > durable || fs->acct[id].io) {
			i++;
			continue;
		}
		/*
		 * The zone stays DATA (and off the queue) until the
		 * ZONE_RESET record applies, so that no one writes into it
		 * before that record is in the log.
		 *
		 * Neither lock is held across the reset: a full zone's takes
		 * null_blk 18-23 ms, and with meta_lock held every create,
		 * unlink and rename waited for it (with resets of 20 ms on
		 * the emulator, a checkpoint rotation's creates waited up to
		 * 50 ms and its rm -rf 23 ms at the median; 3 ms and 1 ms
		 * without). Nothing can write into the zone meanwhile (it is
		 * neither free nor a head's), and a snapshot taken meanwhile
		 * records it as written with nothing live: what replay makes
		 * of a reset whose record a crash lost, as before.
		 */
		fs->resetq[i] = fs->resetq[--fs->nr_resetq];
		if (z->type == ZDEV_ZONE_SEQ && z->wp != z->start) {
			zlock_unmutex(&fs->alloc_lock);
			zlock_unrw(&fs->meta_lock);
			ret = zdev_reset(fs->dev, id);
			zlock_rd(&fs->meta_lock, ZLOCK_META);
			zlock_mutex(&fs->alloc_lock, ZLOCK_ALLOC);
		}
		if (ret) {
			zlog_err("%s: reset of zone %u failed: %s; the zone is retired",
				 zdev_path(fs->dev), id, strerror(-ret));
			z->state = ZM_ZONE_BAD;
			fs->cap_dirty = true;
			z->flags = 0;
			alloc_settle(fs, id);
			ret = 0;
			continue;
		}
		z->wp = z->start;
		z->resets++;
		fs->resets_done++;
		fs->waste_total -= fs->acct[id].waste;
		fs->acct[id].waste = 0;
		rec.zone = htole32(id);
		rec.reserved = 0;
		rec.resets = htole64(z->resets);
		zlock_unmutex(&fs->alloc_lock);
		ret = rec_log(fs, ZF_REC_ZONE_RESET, &rec, sizeof(rec));
		zlock_mutex(&fs->alloc_lock, ZLOCK_ALLOC);
		z->flags = 0;
		/*
		 * Without its record the zone is free all the same: replay
		 * takes a data zone without live data as free and resets it
		 * before use; the next snapshot carries the count.
		 */
		if (ret && z->state == ZM_ZONE_DATA) {
			z->state = ZM_ZONE_FREE;
			fs->cap_dirty = true;
		}
		alloc_settle(fs, id);
		alloc_event(fs);
		if (ret)
			break;
		done++;
	}
	zlock_unmutex(&fs->alloc_lock);
	zlock_unrw(&fs->meta_lock);
	return ret ? ret : (int)done;
}

/*
 * Cost-benefit victim choice (the log-structured file system's, as F2FS
 * uses for background cleaning): free space gained times its age, over
 * the cost of reading and rewriting the live part: (1 - u) * age / (1 + u)
 * with u the zone's live share. Old, mostly dead zones go first; a young
 * zone is left to die on its own a little longer. Every victim gives back
 * at least 1/ALLOC_GC_MIN_GAIN_DIV of a zone: a zone whose data is all
 * live is never one, and one nearly so costs a zone of writes for a
 * sliver.
 *
 * GC_GREEDY, for a writer with admitted data and nowhere to put it: the
 * most dead bytes first (the best gain for the copy), down to one block.
 * The space check counts every dead byte as space (alloc_avail()), and
 * those under the bar are space too once nothing else is left: at 90%
 * full (the mixed space workload, 64 zones of 2 MiB), when writers found
 * no zone, 1.5-1.9 MiB were dead in zones reclaim would not touch.
 *
 * GC_WEAR: the least-worn full or parked zone holding cold data, however
 * live, when the most reset zone of the pool is ALLOC_WEAR_SPREAD resets
 * ahead of it; or an idle shared head's zone (alloc_gc_head_victim()).
 * Cold: written before the pool's last full cycle of resets (as many
 * resets since as the pool has zones); data written since may still die
 * on its own, and moving it would only add writes. gc.c keeps the budget.
 */
/*
 * The zone of a head not writing now (not reclaim's own), as a victim:
 *
 * GC_GREEDY, when nothing else is dead: the one with the most dead bytes.
 * The space check counts the dead bytes of heads' zones too (a small-file
 * head's zone whose files were deleted), and at full a writer found no
 * zone while they were all that was left (the stress test's seed 0).
 *
 * GC_WEAR: one at least ALLOC_WEAR_SPREAD resets behind @max_resets and
 * behind @below (the best other victim's). A shared head's zone that
 * never fills (the small files of a checkpoint rotation, a `latest` file)
 * is never reset on its own: it held zones at 0 resets while the others
 * reached 6, over 40 rounds of a rotation. It is written to, so the
 * coldness rule of full zones does not apply; what it holds is mostly
 * small and the budget bounds the cost. The zone of the cold head itself,
 * once it is the least worn (it rests while the others are written), has
 * its data moved to the most-worn free zone like any other.
 *
 * The head takes another zone on its next write. Returns the zone, or
 * ZF_NO_ZONE. alloc_lock held.
 */
static uint32_t alloc_gc_head_victim(struct zfs *fs, enum gc_mode mode,
				     uint64_t budget, uint64_t max_resets,
				     uint64_t below)
{
	ZLOCK_HELD(&fs->alloc_lock);

	/* Wear leveling takes its own head's zone too, into a new one. */
	struct zfs_head *shared[] = { &fs->small, &fs->hot, &fs->cold };
	uint32_t nshared = ZF_ARRAY_SIZE(shared) - (mode != GC_WEAR), i, best;
	struct zfs_head *h, *bh = NULL;
	uint64_t best_score = 0;

	for (i = 0; i <= nshared; i++) {
		for (h = i < nshared ? shared[i] : fs->heads; h;
		     h = i < nshared ? NULL : h->next) {
			const struct zm_zone *z;
			uint64_t dead, score;

			if (h->zone == ZF_NO_ZONE || zlock_mutex_try(&h->lock, ZLOCK_HEAD))
				continue;
			z = &fs->m.zones[h->zone];
			dead = (z->wp - z->start) -
			       ZF_MIN(z->valid, z->wp - z->start);
			if (mode == GC_WEAR)
				score = z->resets + ALLOC_WEAR_SPREAD <= max_resets &&
						z->resets < below && z->valid ?
						UINT64_MAX - z->resets :
						0;
			else
				score = dead >= fs->bs ? dead : 0;
			if (h->zone != ZF_NO_ZONE && !z->pending &&
			    z->valid <= budget && score > best_score) {
				if (bh)
					zlock_unmutex(&bh->lock);
				bh = h;
				best_score = score;
			} else {
				zlock_unmutex(&h->lock);
			}
		}
	}
	if (!bh)
		return ZF_NO_ZONE;
	best = bh->zone;
	fs->m.zones[best].flags &= (uint8_t)~ZFS_ZF_HEAD;
	bh->zone = ZF_NO_ZONE;
	zlock_unmutex(&bh->lock);
	alloc_settle(fs, best);
	return best;
}

/*
 * What reclaim's head @head can still write: the room of its zone and of
 * the free zones it may take. A victim whose live data does not fit is not
 * started: reclaim stuck half way through a victim keeps the zones it took
 * and frees none, and at full (the stress test's seed 2) the reserve was
 * gone that way with every zone full of live and dead data. alloc_lock
 * held.
 */
static uint64_t alloc_gc_budget(struct zfs *fs, const struct zfs_head *head)
{
	uint32_t floor = alloc_floor(fs, ALLOC_GC), i, nfree = 0;
	uint64_t room = head->zone == ZF_NO_ZONE ?
				0 :
				alloc_room(&fs->m.zones[head->zone]);

	ZLOCK_HELD(&fs->alloc_lock);

	for (i = 0; i < fs->m.nr_zones; i++)
		nfree += fs->m.zones[i].state == ZM_ZONE_FREE;
	return room + (nfree > floor ? (uint64_t)(nfree - floor) : 0) *
			      fs->max_zcap;
}

uint32_t alloc_gc_victim(struct zfs *fs, enum gc_mode mode,
			 const struct zfs_head *head)
{
	int64_t now = zutil_now_real_ns();
	uint64_t max_resets = 0, pool = 0, budget;
	double best_score = 0;
	uint32_t i, best = ZF_NO_ZONE;

	zlock_mutex(&fs->alloc_lock, ZLOCK_ALLOC);
	budget = alloc_gc_budget(fs, head);
	for (i = 0; mode == GC_WEAR && i < fs->m.nr_zones; i++) {
		const struct zm_zone *z = &fs->m.zones[i];

		if (z->state == ZM_ZONE_FREE || z->state == ZM_ZONE_DATA ||
		    z->state == ZM_ZONE_META) {
			pool++;
			max_resets = ZF_MAX(max_resets, z->resets);
		}
	}
	for (i = 0; i < fs->m.nr_zones; i++) {
		struct zm_zone *z = &fs->m.zones[i];
		uint64_t bar = mode == GC_GREEDY ? fs->bs :
			       mode == GC_WEAR	 ? 0 :
						   z->cap / ALLOC_GC_MIN_GAIN_DIV;
		uint64_t written = z->wp - z->start, dead;
		double u, age, score;

		/*
		 * Full zones, and parked ones. The
		 * gain is the dead bytes: a parked zone's room is not, its
		 * group or anyone short of room writes there anyway (taking
		 * it for gain made a write-once fill copy 22-43 MiB).
		 */
		if (z->state != ZM_ZONE_DATA || !z->valid || z->pending ||
		    (z->flags & (ZFS_ZF_HEAD | ZFS_ZF_RESETQ | ZFS_ZF_GC)) ||
		    (z->wp < z->start + z->cap && !(z->flags & ZFS_ZF_PARKED)))
			continue;
		dead = written - ZF_MIN(z->valid, written);
		if (dead < bar || z->valid > budget)
			continue;
		if (mode == GC_WEAR &&
		    (z->resets + ALLOC_WEAR_SPREAD > max_resets ||
		     fs->resets_done - fs->acct[i].wr_epoch < pool))
			continue;
		u = (double)z->valid / (double)written;
		age = (double)(now - z->mtime) / 1e9 + 1;
		if (mode == GC_WEAR)
			score = 1.0 / (double)(z->resets + 1);
		else if (mode == GC_GREEDY)
			score = (double)dead;
		else
			score = (1 - u) * age / (1 + u);
		if (score > best_score) {
			best_score = score;
			best = i;
		}
	}
	if (best == ZF_NO_ZONE && mode == GC_GREEDY) {
		best = alloc_gc_head_victim(fs, mode, budget, 0, 0);
	} else if (mode == GC_WEAR) {
		uint32_t h = alloc_gc_head_victim(
			fs, mode, budget, max_resets,
			best == ZF_NO_ZONE ? UINT64_MAX : fs->m.zones[best].resets);

		best = h != ZF_NO_ZONE ? h : best;
	}
	/*
	 * A parked victim is not finished: nothing writes to it while it is
	 * flagged, and once emptied its reset frees its slot.
	 */
	if (best != ZF_NO_ZONE) {
		fs->m.zones[best].flags = (uint8_t)((fs->m.zones[best].flags &
						     ~ZFS_ZF_PARKED) | ZFS_ZF_GC);
		fs->nr_gc_victims++;
	}
	zlock_unmutex(&fs->alloc_lock);
	return best;
}

bool alloc_wear_lags(struct zfs *fs, uint32_t zone)
{
	uint64_t max = 0;
	uint32_t i;
	bool lags;

	zlock_mutex(&fs->alloc_lock, ZLOCK_ALLOC);
	for (i = 0; i < fs->m.nr_zones; i++) {
		const struct zm_zone *z = &fs->m.zones[i];

		if (z->state == ZM_ZONE_FREE || z->state == ZM_ZONE_DATA ||
		    z->state == ZM_ZONE_META)
			max = ZF_MAX(max, z->resets);
	}
	lags = fs->m.zones[zone].resets + ALLOC_WEAR_SPREAD <= max;
	zlock_unmutex(&fs->alloc_lock);
	return lags;
}

void alloc_gc_done(struct zfs *fs, uint32_t zone)
{
	struct zm_zone *z = &fs->m.zones[zone];

	zlock_mutex(&fs->alloc_lock, ZLOCK_ALLOC);
	z->flags &= (uint8_t)~ZFS_ZF_GC;
	fs->nr_gc_victims--;
	/*
	 * A victim left with data (reclaim stopped, wear leveling over its
	 * budget) and room is parked again: a parked or head's zone that
	 * lost its flag was neither written nor a victim again, and kept its
	 * slot for good. It is no directory's: the shared heads continue in
	 * it before they take a fresh zone.
	 */
	if (z->valid && alloc_is_active(z)) {
		z->flags |= ZFS_ZF_PARKED;
		z->owner = 0;
	}
	alloc_maybe_dead(fs, z);
	zlock_unmutex(&fs->alloc_lock);
}

/* ---- the journal's zones ----------------------------------------------- */

int alloc_jrnl_done(struct zfs *fs, uint32_t zone, struct alloc_try *t)
{
	int ret = 0;

	zlock_mutex(&fs->alloc_lock, ZLOCK_ALLOC);
	if (!alloc_finish_dev(fs, zone)) {
		t->need = ALLOC_NEED_OPEN;
		t->event = fs->event;
		ret = -EAGAIN;
	}
	zlock_unmutex(&fs->alloc_lock);
	return ret;
}

void alloc_jrnl_release(struct zfs *fs, uint32_t zone)
{
	struct zm_zone *z = &fs->m.zones[zone];

	zlock_mutex(&fs->alloc_lock, ZLOCK_ALLOC);
	z->state = ZM_ZONE_DATA;
	fs->cap_dirty = true;
	z->free_seq = 0;
	z->flags = ZFS_ZF_RESETQ;
	fs->resetq[fs->nr_resetq++] = zone;
	alloc_settle(fs, zone);
	zlock_unmutex(&fs->alloc_lock);
}
