/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Inside the allocator: what alloc.c (zones, slots, heads, space),
 * alloc_reclaim.c (resets, reclaim's victims, the journal's zones) and
 * alloc_mount.c (counting zones: at mount, from a report, checked) share. Everything here is
 * called with zfs.alloc_lock held.
 */
#ifndef ZONEFUSE_ALLOC_I_H
#define ZONEFUSE_ALLOC_I_H

#include "zfs_i.h"

/*
 * Below this many active slots the live super zone does not keep one: the
 * journal's chain and the data zones come first (a device of 2 slots has
 * one for data), and an anchor, written once per snapshot, takes a slot
 * only while it is written (alloc_super_begin()).
 */
#define ALLOC_SUPER_SLOT_MIN 6u

/*
 * Finishing a zone to give its active slot to another skips the room left
 * in it. Only a zone with less than this share of it left is finished for
 * a slot: the room is then not worth a slot, and it is little to lose.
 */
#define ALLOC_FINISH_DIV 16u

/*
 * The shared heads (small, hot, gc, cold): each may hold an active slot.
 * alloc_slots_spare() keeps that many free besides a head of a file not
 * yet large, counting those that hold one already twice: it errs on the
 * side of the large files.
 */
#define ALLOC_SHARED_HEADS 4u

/* Reclaim moves a zone only if it frees at least this share of it. */
#define ALLOC_GC_MIN_GAIN_DIV 16u

/*
 * Wear leveling moves a zone's cold data when the most reset zone of the
 * pool is this many resets ahead of it.
 */
#define ALLOC_WEAR_SPREAD 2u

/* Who takes a zone: the rules of floors and slots differ (alloc_floor()). */
enum alloc_kind { ALLOC_META, ALLOC_GC, ALLOC_SHARED, ALLOC_PRIVATE };

static inline uint32_t alloc_zone_id(const struct zfs *fs,
				     const struct zm_zone *z)
{
	return (uint32_t)(z - fs->m.zones);
}

/* Partly written: the device counts it against its active limit. */
static inline bool alloc_is_active(const struct zm_zone *z)
{
	return z->type == ZDEV_ZONE_SEQ && z->wp > z->start &&
	       z->wp < z->start + z->cap;
}

/* Bytes still writable in @z. */
static inline uint64_t alloc_room(const struct zm_zone *z)
{
	return z->start + z->cap - z->wp;
}

/* Something a waiter may want freed up: bump zfs.event, wake waiters. */
void alloc_event(struct zfs *fs);
/*
 * Bring zone @id's counts (zfs.acct: active, open) in line with its state.
 * Every change of a zone's write pointer, state or head goes through it.
 */
void alloc_settle(struct zfs *fs, uint32_t id);
/* Queue @z for its reset if nothing lives in it and nothing holds it. */
void alloc_maybe_dead(struct zfs *fs, struct zm_zone *z);
/*
 * Finish zone @id on the device (its write pointer goes to the end): false
 * if it cannot be now (no room to open it under the open limit, or the
 * device refused). Any zone: data, chain, super.
 */
bool alloc_finish_dev(struct zfs *fs, uint32_t id);
/*
 * Finish data zone @z: its room is skipped (waste while it holds data);
 * taken but never written, it is free again. False as alloc_finish_dev().
 */
bool alloc_finish(struct zfs *fs, struct zm_zone *z);
/*
 * Finish the parked or idle zone with the least room (not @self's) if
 * that room is under 1/ALLOC_FINISH_DIV of it, or whatever it is with
 * @any. True if an active slot was freed.
 */
bool alloc_free_slot(struct zfs *fs, struct zfs_head *self, bool any);
/* Free zones @kind must leave to others. */
uint32_t alloc_floor(struct zfs *fs, enum alloc_kind kind);
/* The device refused a write for a limit: count again from a report. */
void alloc_resync_locked(struct zfs *fs);
#ifdef ZONEFUSE_CHECKS
/* Check every count against its zones; abort on a mismatch. */
void alloc_check(struct zfs *fs);
#else
static inline void alloc_check(struct zfs *fs)
{
	(void)fs;
}
#endif
/*
 * Reset one dead zone whose freeing record is durable, now (alloc_lock is
 * dropped around the command). True if a zone became free.
 */
bool alloc_reset_now(struct zfs *fs);

#endif /* ZONEFUSE_ALLOC_I_H */
