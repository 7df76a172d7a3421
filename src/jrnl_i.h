/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Inside the metadata journal: the state jrnl.c (writing, snapshots,
 * committing), jrnl_mkfs.c (a new file system) and jrnl_replay.c (reading
 * one back) share. Only src/jrnl*.c include this.
 */
#ifndef ZONEFUSE_JRNL_I_H
#define ZONEFUSE_JRNL_I_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zonefuse/format.h"
#include "zonefuse/jrnl.h"
#include "zonefuse/meta.h"
#include "zonefuse/zdev.h"

/* The super zones are among the first this many zones. */
#define JRNL_SB_SCAN_ZONES 16u
/* Bytes of j->iobuf, and half a chain reader's buffer. */
#define JRNL_READ_CHUNK (1u << 20)

struct jrnl {
	struct zdev *dev;
	struct zmeta *m; /* zone geometry, chain zone states */
	struct zf_super sb;
	uint32_t bs;
	bool rdonly;

	pthread_mutex_t lock; /* protects pend*, next_seq, durable_seq, gen,
				 busy, error */
	pthread_cond_t cv;    /* busy cleared or durable_seq moved */
	char *pend;	      /* encoded records not yet written */
	size_t pend_len, pend_cap;
	bool pend_preflush;   /* a pending record names something only a
				 flush before its commit makes durable
				 (jrnl_rec_names() < 0) */
	uint64_t next_seq;
	uint64_t durable_seq;
	uint32_t gen;
	bool busy; /* a committer runs: it alone touches the state below */
	int error; /* sticky */

	/* Committer state. */
	bool mirror;	 /* ZF_FEATURE_INCOMPAT_MIRROR: two copies */
	uint32_t *chain; /* the chain's zones, in order */
	uint32_t *mchain; /* with mirror: the mirror of chain[i] */
	uint32_t chain_len, chain_cap;
	uint64_t wpos; /* next write position in the chain's last zone (the
			  primary's; the mirror's is at the same offset) */
	char *iobuf;   /* aligned, JRNL_READ_CHUNK bytes */
	uint64_t snap_seq, snap_bytes, log_bytes;
	uint64_t log_rec_bytes; /* the log's records, unpadded: what a roll's
				   snapshot may have grown by at most */
	bool need_roll;
	uint32_t sz_cur;     /* index into sb.super_zone of the live one */
	uint64_t sz_wpos;    /* next anchor position */
	uint32_t sz_count;   /* anchors in the live super zone */
	uint32_t sz_switches; /* super zone switches the next anchors
				 must make (0-2): replay found damage in a
				 super zone (its superblock, or a unit of
				 its anchors), and a switch resets and
				 rewrites the zone it goes to. Damage in the
				 live zone takes two (away, and back into
				 it), in the other one. */
	bool sz_failed[2];   /* a write or reset of that super zone failed
				this mount: anchors stay in the other one
				while it has room (jrnl_write_anchor()) */
	bool sz_left;	     /* a switch left the other super zone, and
				its first anchor here is not durable yet:
				the zone left is finished only then, and
				if that anchor cannot be written, anchors
				go on there (sz_left_wpos, sz_left_count) */
	uint64_t sz_left_wpos;
	uint32_t sz_left_count;
	bool sz_sb_stale;    /* the live super zone's superblock is older
				than sb: the switch that was to write it
				failed */
	uint64_t anchor_seq; /* last anchor written */

	_Atomic uint64_t meta_bytes, commits, rolls;
	/* Commits' flushes, and commits written without the one before. */
	_Atomic uint64_t flushes, unflushed_commits;
	/*
	 * Time, this session: in commits (jrnl_commit_once()), in their
	 * flushes, and callers' waits for a commit another thread ran.
	 */
	_Atomic uint64_t commit_ns, flush_ns, wait_ns;
	/*
	 * Rolls, this session: their time, the longest, and the longest
	 * snapshot callback (the time metadata changes were stopped).
	 */
	_Atomic uint64_t roll_ns, roll_max_ns, snap_stop_max_ns;
	_Atomic uint32_t grow_zones; /* jrnl_grow_zones(): jrnl_set_grow() */

	const struct jrnl_cb *cb;
	void *cb_arg;
};

/* Snapshot being encoded into memory during a roll. */
struct jrnl_snap {
	struct jrnl *j;
	char *buf;
	size_t len, cap;
	uint64_t first_seq, seq;
	uint32_t gen;
	bool sealed;
};
/*
 * The helpers below that take a struct jrnl touch the committer state:
 * only the committer calls them (j->busy set), or the one thread that
 * owns a journal not yet shared (jrnl_mkfs(), jrnl_open()).
 */

/*
 * A journal over @dev and @m that has read and written nothing yet, its
 * lock and I/O buffer set up. NULL when out of memory.
 */
struct jrnl *jrnl_alloc(struct zdev *dev, struct zmeta *m, bool rdonly);

/* Free @j (NULL is fine) without writing anything. */
void jrnl_free(struct jrnl *j);

/*
 * What record @type (@len bytes of payload at @p) names that was written
 * before it, for the flush before a commit (jrnl_commit_once()) and for
 * replay's check of a commit written without that flush
 * (ZF_REC_F_UNFLUSHED):
 *   0  nothing: the record changes metadata only;
 *   1  file data ending at *@end in sequential zone *@zone, whose write
 *      pointer says whether the data reached the device;
 *  -1  something only a flush makes durable before the record: data in a
 *      conventional zone (no write pointer), a zone reset or finish, a
 *      record type not listed, or a payload too short to say.
 */
int jrnl_rec_names(const struct zmeta *m, uint16_t type, const void *p,
		   uint32_t len, uint32_t *zone, uint64_t *end);

/*
 * Add @zone, and its mirror @mzone (ZF_NO_ZONE without mirror), at the
 * end of the chain in memory and mark them ZM_ZONE_META. 0 or -ENOMEM.
 */
int jrnl_chain_push(struct jrnl *j, uint32_t zone, uint32_t mzone);

/*
 * Zones for the chain's next zone: *@zone, and with mirror *@mzone
 * (ZF_NO_ZONE without), from cb->zone_alloc, or without it (mkfs) empty
 * free zones of at least JRNL_MIN_ZONE_CAP, the mirror's from the far end
 * of the device. 0, -ENOSPC, or the callback's errno.
 */
int jrnl_alloc_zones(struct jrnl *j, uint32_t *zone, uint32_t *mzone);

/*
 * Work out again how many zones the chain may still take before its next
 * roll (jrnl_grow_zones()), after the chain or the snapshot changed.
 */
void jrnl_set_grow(struct jrnl *j);

/*
 * Write the header of chain zone @zone and of its mirror @mzone (index
 * @index in the chain, after @prev, its first record @first_seq) and
 * start them: they become the chain's last zone and the next write goes
 * after the header. 0, -ENOMEM or an I/O errno.
 */
int jrnl_start_zone(struct jrnl *j, uint32_t zone, uint32_t mzone,
		    uint32_t index, uint32_t prev, uint64_t first_seq);

/*
 * Append @len bytes of whole encoded records, in seq order, to the chain,
 * starting new zones as it fills them. Not durable until a flush. 0,
 * -ENOSPC (no zone for the chain), -EIO (the last zone has no room left
 * for its NEXT record) or an I/O errno. It can fail halfway, with part of
 * @buf written: the caller makes the failure sticky.
 */
int jrnl_write_records(struct jrnl *j, const char *buf, size_t len);

/* Set @sb's CRC, computed with the CRC field zeroed. */
void jrnl_sb_seal(struct zf_super *sb);

/*
 * Write @sb (sealed) at @off, the start of a super zone, padded to
 * ZF_SB_UNIT. 0 or an I/O errno.
 */
int jrnl_write_sb(struct jrnl *j, const struct zf_super *sb, uint64_t off);

/*
 * Write an anchor naming the current chain (its first zone, j->gen and
 * j->snap_seq) in the live super zone, switching to the other one (reset,
 * with a new superblock) when it is full; durable when this returns. 0 or
 * an I/O errno.
 */
int jrnl_write_anchor(struct jrnl *j);

/*
 * The zm_emit_fn that encodes a snapshot into @arg, a struct jrnl_snap
 * with its journal set and the rest zeroed: the records get the next
 * chain generation and the next sequence numbers. Takes j->lock. 0,
 * -EINVAL (a payload over ZF_REC_MAX) or -ENOMEM.
 */
int jrnl_snap_emit(void *arg, uint16_t type, const void *p, uint32_t len);

/*
 * Write a new chain headed by a fresh snapshot (in every copy), then the
 * anchor that names it (switching super zones as j->sz_switches asks),
 * then release the old chain. Runs as the committer. 0 or an errno; after
 * a failure the records the snapshot took from the pending list are gone,
 * so the caller makes it sticky (jrnl_set_error()).
 */
int jrnl_do_roll(struct jrnl *j);

/*
 * Make @err sticky, with j->lock held; @what says what failed. Returns
 * whether the caller must call cb->failed once it has dropped the lock.
 */
bool jrnl_set_error(struct jrnl *j, int err, const char *what);

#endif /* ZONEFUSE_JRNL_I_H */
