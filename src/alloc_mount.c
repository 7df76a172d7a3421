// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The allocator at mount and unmount: what each zone is after replay
 * (free, data, parked, dead and queued for its reset), the counts against
 * the device's open and active limits, and the limits zonefuse needs.
 */
#include <errno.h>
#include <inttypes.h>
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

/*
 * The least zonefuse works with: two active zones, one for the journal's
 * chain and one that every data stream and reclaim share (the super zone
 * borrows a data zone's slot for each anchor). Any open limit works: open
 * zones are closed and reopened as writes need them.
 */
int alloc_check_limits(struct zdev *dev, char *err, size_t errlen)
{
	const struct zdev_geom *g = zdev_geom(dev);

	if (g->max_active == 1) {
		zutil_err(err, errlen,
			  "%s allows 1 active zone: zonefuse needs at least 2 (one for the metadata journal, one for data), or no limit",
			  zdev_path(dev));
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
	uint32_t i, chain[1024], nchain, tail = ZF_NO_ZONE;
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
	nchain = jrnl_chain(fs->j, chain, ZF_ARRAY_SIZE(chain));
	if (nchain)
		tail = chain[nchain - 1];

	alloc_conv_wps(fs);
	if (!fs->rdonly) {
		alloc_check_wps(fs);
		alloc_close_open(fs);
	}
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
			/* Only the chain's last zone is still written. */
			if (i != tail && !fs->rdonly)
				alloc_finish_dev(fs, i);
			continue;
		}
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
	       fs->nr_active + 1 + fs->super_slot > fs->max_active &&
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
