/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * jrnl - the metadata journal, kept in zones.
 *
 * It owns the superblock, the anchors and the metadata chain (format.h).
 * It does not decide what to log: the file system core appends records
 * (after applying them with zm_apply()) and asks for commits; the journal
 * makes them durable, in order, and rolls to a new snapshot when the log
 * since the last one has grown large.
 *
 * Ordering rules it keeps (docs/format.md):
 * - every data write that completed before a record was appended is
 *   durable before that record is, or replay can tell it is not: a commit
 *   flushes the device before it writes records, unless they name only
 *   data in sequential zones, whose write pointers tell replay whether
 *   the last commit's data reached the device (ZF_REC_F_UNFLUSHED);
 * - a commit is written only after the flush of the one before returned;
 * - a snapshot is durable before the anchor that names it is written, and
 *   the anchor is durable before the old chain's zones are released.
 *
 * Threads: jrnl_append() and jrnl_commit() may be called from any thread.
 * One committer runs at a time; other callers wait for it (group commit).
 * Lock order: the caller's locks -> jrnl's lock. The snapshot callback runs
 * in the committer with no journal lock held.
 */
#ifndef ZONEFUSE_JRNL_H
#define ZONEFUSE_JRNL_H

#include <stdbool.h>
#include <stdint.h>

#include "zonefuse/format.h"
#include "zonefuse/meta.h"
#include "zonefuse/zdev.h"

struct jrnl;

struct jrnl_cb {
	/*
	 * Give the journal an empty, writable zone for the chain: 0 and
	 * *@zone, or a negative errno (-ENOSPC).
	 */
	int (*zone_alloc)(void *arg, uint32_t *zone);
	/*
	 * The journal will not write chain zone @zone again (it moved on to
	 * a new one): finish it. Without this callback (mkfs) the journal
	 * finishes it itself.
	 */
	void (*zone_done)(void *arg, uint32_t zone);
	/* A chain zone is no longer needed (its replacement is durable). */
	void (*zone_release)(void *arg, uint32_t zone);
	/*
	 * Encode a snapshot: stop every metadata change (so that no record
	 * is between zm_apply() and jrnl_append()), then call
	 * zm_snap_encode(meta, @emit, @emit_arg) and return its result.
	 */
	int (*snapshot)(void *arg, zm_emit_fn emit, void *emit_arg);
	/* Optional: records up to @seq are durable. */
	void (*durable)(void *arg, uint64_t seq);
	/*
	 * Optional, all four (mkfs has none: it writes alone). A write to
	 * @zone (a chain or super zone) is about to start: make room for it
	 * under the device's open limit, waiting for a write in flight to
	 * end if need be (never for a commit); io_end() when it is done.
	 */
	void (*io_begin)(void *arg, uint32_t zone);
	void (*io_end)(void *arg, uint32_t zone);
	/*
	 * An anchor is about to be written to a super zone: give it an
	 * active slot (waiting for a write in flight to end if need be);
	 * super_end() once the anchor is durable, to take the slot back
	 * (the super zone is then finished, and the next anchor goes to the
	 * other one).
	 */
	void (*super_begin)(void *arg);
	void (*super_end)(void *arg, uint32_t zone);
	/*
	 * Optional: the device refused a write for its open or active zone
	 * limit (-ETOOMANYREFS, -EOVERFLOW) although io_begin() made room:
	 * count the zones again before the write is tried once more.
	 */
	void (*resync)(void *arg);
	/*
	 * Optional: a write or flush of the journal failed with @err, which
	 * is now sticky (every later append and commit fails). Called once,
	 * without the journal's lock; the callee reports it (without this
	 * callback the journal logs it itself).
	 */
	void (*failed)(void *arg, int err);
};

/*
 * zm_init() @m for @dev and fill each zone's geometry, write pointer and
 * condition from a zone report; unusable zones (read-only, offline, empty
 * capacity) get ZM_ZONE_BAD.
 */
int jrnl_zones_init(struct zdev *dev, struct zmeta *m, char *err,
		    size_t errlen);

struct jrnl_mkfs_params {
	const char *label;
	const uint8_t *uuid; /* 16 bytes, or NULL for a random one */
	uint32_t reserve_zones;
	int64_t time;
	bool mirror; /* ZF_FEATURE_INCOMPAT_MIRROR: two copies of the chain */
};

/*
 * Make a new file system on @dev: pick the super zones, write both
 * superblocks, a chain holding a snapshot of @m (which must hold the root
 * and nothing else of the device: zone states are set here) and the first
 * anchor. The zones it writes must be empty (mkfs resets them first).
 * Fills @sb with the superblock written.
 */
int jrnl_mkfs(struct zdev *dev, const struct jrnl_mkfs_params *p,
	      struct zmeta *m, struct zf_super *sb, char *err, size_t errlen);

/* Minimum zone capacity mkfs accepts. */
#define JRNL_MIN_ZONE_CAP (1ull << 20)

struct jrnl_replay_info {
	uint64_t snap_seq;    /* seq of the snapshot replayed */
	uint64_t last_seq;    /* last record accepted */
	uint64_t log_records; /* records after the snapshot */
	uint64_t snap_bytes, log_bytes;
	uint32_t chain_zones;
	uint32_t chain_gen;
	uint64_t anchor_seq;
	bool clean;	      /* ended with UNMOUNT at the write pointer */
	bool salvaged;	      /* JRNL_SALVAGE dropped a record that did not
				 apply, and what followed */
	bool damaged;	      /* the log ended at a bad record with valid
				 records of later seq after it, or at a
				 block it could not read: damage in the
				 middle, not a torn tail; what followed is
				 not replayed */
	uint64_t damaged_seq; /* the highest such later record (0: none
				 found, as after an unreadable block) */
	bool anchor_damaged;  /* a unit among the anchors of a super zone
				 is not one (anchor_bad says which). After
				 this or super_damaged, a writable journal
				 rolls at once (jrnl_start()), and its
				 anchors rewrite the damaged super zone */
	bool anchor_scanned;  /* that unit may have been the newest anchor:
				 the chain was found by its head zone's
				 header instead */
	char anchor_bad[80];
	bool super_damaged;   /* a super zone's superblock copy does not
				 hold (super_bad says which); the other
				 copy served */
	char super_bad[80];
	bool super_unwritable; /* the newest anchor says the other super
				  zone could not be written
				  (ZF_ANCHOR_OTHER_FAILED): one copy of the
				  superblock and anchors. A writable
				  journal tries that zone again at once */
	uint32_t super_unwritable_zone;
	bool mirrored;	      /* the chain has a mirror copy */
	bool copy_damaged;    /* a block of one copy of the chain did not
				 hold (a bad header or record, zeros, a
				 media error) where the other copy's did:
				 replay read that one (copy_bad says where,
				 first of copy_bad_count). A writable
				 journal rolls at once, writing both anew */
	uint32_t copy_bad_count;
	char copy_bad[200];
	uint64_t unflushed_dropped; /* records of the last commit not
				       replayed: it was written without a
				       flush before it (ZF_REC_F_UNFLUSHED)
				       and its data had not all reached the
				       device, so its own flush never
				       returned (stop says which data) */
	char stop[512];	      /* why replay stopped where it did */
};

/*
 * Find the file system on @dev, initialise @m for the device (zm_init and
 * the zone geometry from a report), and replay the newest snapshot and the
 * log after it into @m. Zones of the chain and the super zones get their
 * state. On success the journal is ready to append after the last record
 * (read-only with JRNL_RDONLY). Errors: -EMEDIUMTYPE (no zonefuse file system),
 * -ENOTSUP (unknown version or features), -EUCLEAN (damage: no valid
 * anchor, a snapshot that does not load, a record that does not apply),
 * -EINVAL (made for another geometry), or an I/O errno; @err says which,
 * on what.
 */
enum jrnl_open_flags {
	JRNL_RDONLY = 1u << 0,
	/*
	 * fsck --repair: a record that holds but does not apply ends the log
	 * (it and what follows are dropped) instead of failing the open.
	 */
	JRNL_SALVAGE = 1u << 1,
};

int jrnl_open(struct zdev *dev, unsigned int flags, struct zmeta *m,
	      struct jrnl **jp, struct zf_super *sb,
	      struct jrnl_replay_info *info, char *err, size_t errlen);

/* Read just the superblock of @dev (for tools). Same errors. */
int jrnl_read_super(struct zdev *dev, struct zf_super *sb, char *err,
		    size_t errlen);

void jrnl_set_cb(struct jrnl *j, const struct jrnl_cb *cb, void *arg);

/*
 * Prepare to append: if replay ended on a torn or unclean tail, write a new
 * snapshot chain first (records after garbage would never be replayed).
 */
int jrnl_start(struct jrnl *j);

/*
 * Append a record; *@seq (if not NULL) gets its sequence number. Not
 * durable until a commit covers it. -EROFS after a write error or on a
 * read-only journal; -EINVAL for a payload over ZF_REC_MAX.
 */
int jrnl_append(struct jrnl *j, uint16_t type, const void *payload,
		uint32_t len, uint64_t *seq);

/* Make every record up to @seq durable (UINT64_MAX: all appended). */
int jrnl_commit(struct jrnl *j, uint64_t seq);

/* Write a new snapshot chain now (tests, and to compact the log). */
int jrnl_roll(struct jrnl *j);

/*
 * Write @label (up to 63 bytes; the caller checks its characters) into
 * both superblock copies, one after the other, each with an anchor: a
 * crash in between leaves the old label or the new, never a damaged file
 * system. -ENAMETOOLONG, -EROFS, the sticky error, or an I/O errno (then
 * sticky, as a failed anchor write is; -EIO too when a super zone cannot
 * be written: the label stays the old one).
 */
int jrnl_set_label(struct jrnl *j, const char *label);

/*
 * The super zone whose write failed since the journal was opened, its
 * anchors gone to the other zone (see ZF_ANCHOR_OTHER_FAILED): the
 * superblock and anchors have one copy. ZF_NO_ZONE if none failed. For
 * the opener's thread, before other threads commit.
 */
uint32_t jrnl_super_unwritable(const struct jrnl *j);

/*
 * Zones the chain may still take, in all its copies, before a roll lets
 * its old zones go (the new snapshot's zones not counted): space that is
 * not the data's. Any thread, under any lock: it reads an atomic the
 * committer sets.
 */
uint32_t jrnl_grow_zones(struct jrnl *j);

uint64_t jrnl_last_seq(struct jrnl *j);
uint64_t jrnl_durable_seq(struct jrnl *j);
/* The sticky error (0 if none): once a metadata write failed. */
int jrnl_error(struct jrnl *j);

struct jrnl_stats {
	uint64_t meta_bytes; /* bytes written by the journal, this session */
	uint64_t commits, rolls;
	/*
	 * The commits' device flushes, and the commits written without a
	 * flush before their records (ZF_REC_F_UNFLUSHED): one flush each
	 * instead of two.
	 */
	uint64_t flushes, unflushed_commits;
	/*
	 * Nanoseconds, this session: in commits, in the flushes of those
	 * commits, and jrnl_commit() callers waiting for another's commit.
	 */
	uint64_t commit_ns, flush_ns, wait_ns;
	/*
	 * Nanoseconds, this session: in rolls, the longest roll, and the
	 * longest time a roll's snapshot kept metadata changes stopped.
	 */
	uint64_t roll_ns, roll_max_ns, snap_stop_max_ns;
	uint32_t chain_zones;
	uint32_t chain_gen;
	uint64_t anchor_seq, snap_seq;
	uint64_t snap_bytes, log_bytes;
	uint32_t super_zone[2];
	uint32_t cur_zone;
	bool mirror; /* the chain has a mirror copy */
};
void jrnl_get_stats(struct jrnl *j, struct jrnl_stats *st);

/*
 * Zones of the current chain (@copy 0) or of its mirror (@copy 1), in
 * order; returns how many (<= @max): 0 for a mirror the file system does
 * not have.
 */
uint32_t jrnl_chain(struct jrnl *j, unsigned int copy, uint32_t *zones,
		    uint32_t max);

/* One read-back of the journal by jrnl_scrub(). */
struct jrnl_scrub_pass {
	struct jrnl_replay_info info; /* what reading it back found */
	int read_err;	      /* it did not read back (jrnl_open()'s errno:
				 -EUCLEAN for damage); err says why */
	char err[256];
	uint64_t durable_seq; /* the live journal's, while it was read */
	bool short_log;	      /* the device's log ends before durable_seq:
				 records made durable are not there */
	bool damage;	      /* any of the above, or damage in info (a
				 superblock, anchor or chain copy, or the
				 log in both copies) */
};

struct jrnl_scrub {
	struct jrnl_scrub_pass pass[2]; /* [0] as found, [1] after rewriting */
	bool rewritten;		       /* the chain (every copy) and the
					  anchors were written anew */
	int rewrite_err;	       /* why they were not, when damaged:
					  -EROFS (read-only, or no repair
					  asked), the journal's sticky error,
					  or the roll's own */
};

/*
 * Scrub the journal of a mounted file system: read it back from the
 * device as a mount would (jrnl_open(), read-only, into a copy of the
 * metadata of its own), while commits wait, and compare where its log
 * ends with what was made durable. If anything does not hold and @repair,
 * on a writable, healthy journal: roll (a new chain from the metadata in
 * memory, in every copy, and anchors that rewrite a damaged super zone),
 * then read back once more. A failed rewrite is sticky, as a failed roll
 * is. Returns 0 with the findings in @r, -ENOMEM, or an I/O errno of the
 * read-back; damage is a finding, not an error.
 */
int jrnl_scrub(struct jrnl *j, bool repair, struct jrnl_scrub *r);

/*
 * Close. If @clean and the journal is writable and healthy, append an
 * UNMOUNT record and commit first. Returns the commit's result.
 */
int jrnl_close(struct jrnl *j, bool clean);

#endif /* ZONEFUSE_JRNL_H */
