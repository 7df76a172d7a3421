// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Counting zones: at mount, what each zone is after replay (free, data,
 * parked, dead and queued for its reset) and the counts against the
 * device's open and active limits; again from a zone report when the
 * device refuses a write for a limit; the limits zonefuse needs; and, in
 * a checking build, every count against its zones.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_i.h"
#include "zonefuse/util.h"

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

/*
 * Count again, from a zone report, the zones the device holds active and
 * open: the device refused a write for a limit we thought was not reached.
 * The counts of zones that are ours to know (heads' zones not yet written)
 * stay; zones the device says are open but no write of ours is in flight
 * to are closed, so that the open count starts again from what we know.
 * alloc_lock held.
 */
void alloc_resync_locked(struct zfs *fs)
{
	uint32_t i, n = fs->m.nr_zones, open = 0, active = 0;
	struct zdev_zone *rep = calloc(n, sizeof(*rep));

	ZLOCK_HELD(&fs->alloc_lock);

	if (!rep)
		return;
	if (zdev_report(fs->dev, 0, n, rep) != (int)n)
		goto out_free;
	for (i = 0; i < n; i++) {
		struct zm_zone *z = &fs->m.zones[i];
		struct zfs_zone_acct *a = &fs->acct[i];
		bool o = rep[i].cond == ZDEV_COND_IMP_OPEN ||
			 rep[i].cond == ZDEV_COND_EXP_OPEN;

		if (rep[i].type != ZDEV_ZONE_SEQ)
			continue;
		if (o || rep[i].cond == ZDEV_COND_CLOSED) {
			active++;
			zlog_debug("zone %u active on the device (%s): state %u, flags 0x%x, counted %d, written %" PRIu64 " of %" PRIu64,
				   i, zdev_cond_name(rep[i].cond), z->state,
				   z->flags, a->active, z->wp - z->start, z->cap);
			/* Believed full: the device did not finish it. */
			if (!a->io && z->wp == z->start + z->cap) {
				if (zdev_finish(fs->dev, i))
					zlog_warn("%s: zone %u: finishing it failed",
						  zdev_path(fs->dev), i);
				else
					o = false;
			}
		}
		if (o && !a->io) {
			zdev_zone_op(fs->dev, ZDEV_OP_CLOSE, i);
			o = false;
		}
		if (a->open != (o || a->io)) {
			a->open = o || a->io;
			fs->nr_open += a->open ? 1 : (uint32_t)-1;
		}
		open += a->open;
	}
	zlog_warn("%s: the device refused a write for its open or active zone limit: it holds %u active zones (%u counted here, and the journal's and super zone's slots), %u open: recounted",
		  zdev_path(fs->dev), active, fs->nr_active, open);
	alloc_event(fs);
out_free:
	free(rep);
}

void alloc_resync(struct zfs *fs)
{
	zlock_mutex(&fs->alloc_lock, ZLOCK_ALLOC);
	alloc_resync_locked(fs);
	zlock_unmutex(&fs->alloc_lock);
}

void alloc_describe(struct zfs *fs, char *buf, size_t len)
{
	uint32_t i, parked = 0, heads = 0, io = 0, free = 0, dead = 0;

	zlock_mutex(&fs->alloc_lock, ZLOCK_ALLOC);
	for (i = 0; i < fs->m.nr_zones; i++) {
		const struct zm_zone *z = &fs->m.zones[i];

		parked += !!(z->flags & ZFS_ZF_PARKED);
		heads += !!(z->flags & ZFS_ZF_HEAD);
		io += fs->acct[i].io;
		free += z->state == ZM_ZONE_FREE;
		dead += !!(z->flags & ZFS_ZF_RESETQ);
	}
	snprintf(buf, len,
		 "%u data zones active (%u of heads, %u parked) of %u slots (the journal's and %s the super zone's apart), %u open of %u, %u writes in flight, %u free zones, %u dead",
		 fs->nr_active, heads, parked, fs->max_active,
		 fs->super_slot ? "" : fs->super_busy ? "now" : "not",
		 fs->nr_open, fs->max_open, io, free, dead);
	zlock_unmutex(&fs->alloc_lock);
}

#ifdef ZONEFUSE_CHECKS
/*
 * The allocator's counts against the zones they count, checked in a
 * checking build at every event (every state change a waiter could want):
 * each running total equals its sum over the zones, no zone holds more
 * live bytes than it can, and the device's limits are kept. A mismatch is
 * a bug: say which, and abort. alloc_lock held.
 */
void alloc_check(struct zfs *fs)
{
	uint64_t pending = 0, waste = 0, live = 0;
	uint32_t i, active = 0, open = 0;
	char what[160] = "";

	for (i = 0; i < fs->m.nr_zones; i++) {
		const struct zm_zone *z = &fs->m.zones[i];

		active += fs->acct[i].active;
		open += fs->acct[i].open;
		pending += z->pending;
		waste += fs->acct[i].waste;
		live += z->valid;
		if (z->valid > z->cap || z->wp < z->start ||
		    (z->type == ZDEV_ZONE_SEQ && z->wp > z->start + z->cap))
			snprintf(what, sizeof(what),
				 "zone %u: %" PRIu64 " live bytes, written %" PRIu64 " of %" PRIu64,
				 i, z->valid, z->wp - z->start, z->cap);
	}
	if (active != fs->nr_active || open != fs->nr_open)
		snprintf(what, sizeof(what), "%u active zones counted %u, %u open counted %u",
			 active, fs->nr_active, open, fs->nr_open);
	else if (pending != fs->pending_total || waste != fs->waste_total ||
		 fs->copy_pending > fs->pending_total)
		snprintf(what, sizeof(what), "pending %" PRIu64 " counted %" PRIu64 " (copies %" PRIu64 "), waste %" PRIu64 " counted %" PRIu64,
			 pending, fs->pending_total, fs->copy_pending, waste,
			 fs->waste_total);
	else if (live != fs->m.live_bytes)
		snprintf(what, sizeof(what), "live bytes %" PRIu64 " counted %" PRIu64,
			 live, fs->m.live_bytes);
	else if (fs->max_active &&
		 fs->nr_active + fs->jrnl_slots +
				 (fs->super_slot || fs->super_busy) >
			 fs->max_active)
		snprintf(what, sizeof(what), "%u data zones active past a limit of %u",
			 fs->nr_active, fs->max_active);
	else if (fs->max_open && fs->nr_open > fs->max_open)
		snprintf(what, sizeof(what), "%u zones open past a limit of %u",
			 fs->nr_open, fs->max_open);
	if (*what) {
		zlog_err("internal error: the allocator's counts are wrong: %s",
			 what);
		abort();
	}
}
#endif


/*
 * The least zonefuse works with: one active zone for each copy of the
 * journal's chain and one that every data stream and reclaim share (the
 * super zone borrows a data zone's slot for each anchor). Any open limit
 * works: open zones are closed and reopened as writes need them.
 */
int alloc_check_limits(struct zdev *dev, unsigned int copies, char *err,
		       size_t errlen)
{
	const struct zdev_geom *g = zdev_geom(dev);

	if (g->max_active && g->max_active < copies + 1) {
		zutil_err(err, errlen,
			  "%s allows %u active zone%s: zonefuse with %u cop%s of the metadata needs at least %u (%s, one for data), or no limit%s",
			  zdev_path(dev), g->max_active,
			  g->max_active > 1 ? "s" : "", copies,
			  copies > 1 ? "ies" : "y", copies + 1,
			  copies > 1 ? "one for each copy of the metadata journal" :
				       "one for the metadata journal",
			  copies > 1 ? "; `zonefuse mkfs --metadata-copies 1` makes a file system with one" :
				       "");
		return -ENOTSUP;
	}
	return 0;
}

/*
 * Zones the device holds open from the last session are closed, so that
 * the open count starts from what this one writes (alloc_io_begin()).
 */
static void alloc_close_open(struct zfs *fs)
{
	uint32_t i;

	for (i = 0; i < fs->m.nr_zones; i++) {
		struct zm_zone *z = &fs->m.zones[i];

		if (z->type == ZDEV_ZONE_SEQ &&
		    (z->cond == ZDEV_COND_IMP_OPEN ||
		     z->cond == ZDEV_COND_EXP_OPEN) &&
		    zdev_zone_op(fs->dev, ZDEV_OP_CLOSE, i))
			zlog_debug("zone %u: close at mount failed", i);
	}
}

int alloc_init(struct zfs *fs)
{
	const struct zdev_geom *g = zdev_geom(fs->dev);
	uint32_t i, chain[1024], nchain, tail = ZF_NO_ZONE, mtail = ZF_NO_ZONE;
	struct zdev_zone *rep;

	fs->resetq = calloc(fs->m.nr_zones, sizeof(*fs->resetq));
	fs->acct = calloc(fs->m.nr_zones, sizeof(*fs->acct));
	rep = calloc(fs->m.nr_zones, sizeof(*rep));
	if (!fs->resetq || !fs->acct || !rep) {
		free(rep);
		return -ENOMEM;
	}
	if (zdev_report(fs->dev, 0, fs->m.nr_zones, rep) != (int)fs->m.nr_zones)
		memset(rep, 0, fs->m.nr_zones * sizeof(*rep));
	fs->reserve_zones = le32toh(fs->sb.reserve_zones);
	fs->cap_dirty = true;
	fs->snap_bytes = fs->replay.snap_bytes;
	fs->max_active = g->max_active;
	fs->max_open = g->max_open;
	fs->super_slot = !g->max_active || g->max_active >= ALLOC_SUPER_SLOT_MIN;
	fs->small.zone = fs->hot.zone = fs->gc.zone = fs->cold.zone = ZF_NO_ZONE;
	fs->small.kind = ZFS_HEAD_SMALL;
	fs->hot.kind = ZFS_HEAD_HOT;
	fs->gc.kind = ZFS_HEAD_GC;
	fs->cold.kind = ZFS_HEAD_COLD;
	pthread_mutex_init(&fs->small.lock, NULL);
	pthread_mutex_init(&fs->hot.lock, NULL);
	pthread_mutex_init(&fs->gc.lock, NULL);
	pthread_mutex_init(&fs->cold.lock, NULL);
	nchain = jrnl_chain(fs->j, 0, chain, ZF_ARRAY_SIZE(chain));
	if (nchain)
		tail = chain[nchain - 1];
	nchain = jrnl_chain(fs->j, 1, chain, ZF_ARRAY_SIZE(chain));
	if (nchain)
		mtail = chain[nchain - 1];
	fs->jrnl_slots = nchain ? 2 : 1;

	alloc_conv_wps(fs);
	if (!fs->rdonly)
		alloc_close_open(fs);
	zlock_mutex(&fs->alloc_lock, ZLOCK_ALLOC);
	for (i = 0; i < fs->m.nr_zones; i++) {
		struct zm_zone *z = &fs->m.zones[i];

		/* The device's own count wins over a journal that lags by one. */
		if (rep[i].resets != ZDEV_RESETS_UNKNOWN && rep[i].resets > z->resets)
			z->resets = rep[i].resets;
		if (z->state == ZM_ZONE_BAD)
			continue;
		if (z->state == ZM_ZONE_SUPER) {
			/* Its next anchor then goes to the other one. */
			if (!fs->super_slot && !fs->rdonly)
				alloc_finish_dev(fs, i);
			continue;
		}
		if (z->state == ZM_ZONE_META) {
			/* Only the chain's last zone (and mirror) is written. */
			if (i != tail && i != mtail && !fs->rdonly)
				alloc_finish_dev(fs, i);
			continue;
		}
		/*
		 * Its mtime stays 0: the journal keeps no zone ages, and a
		 * zone from before the mount counts as older than any
		 * written since, by far. Reclaim then empties such zones
		 * first once 1/16 of them is dead: cold data that had a few
		 * records rewritten frees its dead room for good. Aged from
		 * the mount instead, they waited behind zones written since
		 * and write amplification rose from 4.15-4.27 to 4.67-4.90
		 * (bench/reclaim-host.py --touch-cold 10, seeds 1-3).
		 */
		if (z->valid) {
			z->state = ZM_ZONE_DATA;
			if (alloc_is_active(z))
				z->flags |= ZFS_ZF_PARKED;
			alloc_settle(fs, i);
			continue;
		}
		/*
		 * No live data: free. Written (data deleted just before a
		 * crash, or a write whose extent never reached the journal):
		 * queued for the background reset, so that the zone is
		 * empty before it is needed and the reset is journaled.
		 */
		z->free_seq = 0;
		if (z->wp != z->start && z->type == ZDEV_ZONE_SEQ &&
		    !fs->rdonly) {
			z->state = ZM_ZONE_DATA;
			z->flags = 0;
			alloc_settle(fs, i);
			alloc_maybe_dead(fs, z);
			continue;
		}
		z->state = ZM_ZONE_FREE;
	}
	free(rep);
	/* Zones left active by the last session beyond our budget: finish. */
	while (!fs->rdonly && fs->max_active &&
	       fs->nr_active + fs->jrnl_slots + fs->super_slot > fs->max_active &&
	       alloc_free_slot(fs, NULL, true))
		;
	zlock_unmutex(&fs->alloc_lock);
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
	pthread_mutex_destroy(&fs->cold.lock);
	free(fs->resetq);
	fs->resetq = NULL;
	free(fs->acct);
	fs->acct = NULL;
}
