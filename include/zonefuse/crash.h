/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * crash - rebuild what a zoned device could hold after a power cut.
 *
 * A recording (zdev_record(), format in include/zonefuse/crashlog.h) is the
 * history of one open of a device: writes with their data, flushes, zone
 * resets and finishes, in completion order. With a copy of the device as it
 * was when the recording started (the base image), this module rebuilds the
 * device as a power cut at any moment of that history could leave it, and
 * lists the moments and the states worth checking.
 *
 * The model of a power cut is a drive with a volatile write cache:
 *  - A write is durable once a flush that started after it completed has
 *    returned (its FLUSH_DONE is in the log). The last such flush before
 *    the crash is the barrier: everything before it is on the device.
 *  - Writes after the barrier may each be lost, with one rule: a
 *    sequential zone's write pointer never skips a write, so each zone
 *    keeps a PREFIX of its writes since the barrier, and losing one loses
 *    every later write to that zone. Zones are independent of each other.
 *    A write to a conventional zone is on its own: each may be kept or
 *    lost independently.
 *  - Zone resets and finishes are durable when they complete, so they are
 *    always applied, in order. A reset settles the zone's earlier writes
 *    (they are gone anyway); a finish settles them too (the emulator
 *    persists a finished zone's content with its condition). So a zone's
 *    lost writes can only be among those after its last reset or finish.
 * What is kept per zone is a "stream": the writes to one sequential zone
 * after the barrier and after the zone's last reset or finish, or one
 * conventional-zone write. A state is a keep[] array, one count per stream:
 * how many of its first writes reached the media.
 *
 * Crash points. A crash point is a position in the log: the crash comes
 * before record `rec`, after every record below it. The points listed are
 * the start and the end of the log and every position before a flush, a
 * flush's completion, a reset or a finish, less those that would give the
 * same states as the point before them (nothing but flush starts in
 * between). Between two listed points only writes complete; a crash there
 * gives a state that the next listed point also gives (fewer writes
 * kept), so the points with all their states cover every moment.
 *
 * Errors: 0 or a negative errno; the reason also as one line in @err.
 */
#ifndef ZONEFUSE_CRASH_H
#define ZONEFUSE_CRASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct crash_log;

/*
 * Open and index the recording @path (read in memory-mapped). A log cut
 * short or damaged at the end (the recording process was killed while
 * appending) is accepted up to its last whole record; info.torn says so.
 * -EMEDIUMTYPE: not a recording; -ENOTSUP: another version; -EUCLEAN: a
 * bad header, or a record that contradicts the device (out of range).
 */
int crash_log_open(const char *path, struct crash_log **logp, char *err,
		   size_t errlen);
void crash_log_close(struct crash_log *log);

struct crash_log_info {
	uint64_t dev_size, zone_size;
	uint32_t nr_zones, nr_conv, block_size;
	uint64_t records; /* whole records */
	uint64_t writes, write_bytes;
	uint64_t flushes, flushes_failed, resets, finishes;
	bool torn;	     /* the log ends in a cut or damaged record */
	uint32_t nr_points;  /* crash points (crash_point()) */
};
void crash_log_info(const struct crash_log *log, struct crash_log_info *info);

/* What the record after a crash point is. */
enum crash_point_kind {
	CRASH_AT_START,	     /* before the first record: the base image */
	CRASH_AT_FLUSH,	     /* before a flush starts */
	CRASH_AT_FLUSH_DONE, /* a flush ran, but has not returned */
	CRASH_AT_RESET,
	CRASH_AT_FINISH,
	CRASH_AT_END,	     /* after the last record */
};

struct crash_point {
	uint64_t rec;	     /* records [0, rec) happened */
	uint64_t durable;    /* records [0, durable) are on the media:
				durable is the seq of the barrier's FLUSH
				(0: no flush completed before the point) */
	uint32_t nr_streams; /* streams whose writes may be lost */
	uint32_t lost_max;   /* writes that may be lost (sum of streams) */
	uint64_t nr_states;  /* product of (stream length + 1), saturated
				at UINT64_MAX */
	enum crash_point_kind kind;
};

/* Crash point @idx (0 .. info.nr_points - 1). -EINVAL out of range. */
int crash_point(const struct crash_log *log, uint32_t idx,
		struct crash_point *pt);

/*
 * Choose at most @max of the log's crash points when there are too many
 * to check all (a long recording): @pick (info.nr_points bytes) gets 1
 * for the chosen ones: the last @max / 2 points (the moments just before
 * the end, the likeliest to hold a half-done operation) and an even
 * spread over the rest, the first point among them. @max 0 picks all.
 */
void crash_pick_points(const struct crash_log *log, uint32_t max,
		       uint8_t *pick);

/*
 * The states to check at crash point @idx, as a malloc()ed array of
 * *@nr keep[] arrays of pt.nr_streams counts each (state k is at
 * (*keeps)[k * nr_streams]); free() it. If the point has at most @max_all
 * states, all of them, in order from "every stream loses everything" to
 * "nothing is lost". Otherwise @nr_sample states (at least 2): those two
 * extremes, then each stream alone losing all its writes, then random
 * distinct states drawn from @seed and @idx: the same arguments always
 * give the same list. A point with no stream has one state (*keeps may
 * hold nothing). -EINVAL, -ENOMEM.
 */
int crash_states(const struct crash_log *log, uint32_t idx, uint64_t max_all,
		 uint32_t nr_sample, uint64_t seed, uint32_t **keeps,
		 uint32_t *nr);

/*
 * Build the device state of crash point @idx with @keep (one count per
 * stream; NULL: nothing lost) in the emulator image @out: copy @base (the
 * image the recording started from; sparse), then, through zdev on @out,
 * replay every reset and finish before the point and every write that
 * reached the media, and flush. @out is replaced. -EINVAL if a keep count
 * is out of range or the base's geometry is not the log's; the errno of
 * copying or of the device otherwise (a replay the device refuses is a
 * bug here or a log that is not this base's history: -EUCLEAN).
 */
int crash_build(const struct crash_log *log, const char *base,
		const char *out, uint32_t idx, const uint32_t *keep, char *err,
		size_t errlen);

/*
 * Describe crash point @idx and the state @keep (NULL: nothing lost) in
 * one line: the record it comes before, the barrier, and per stream the
 * zone and how many of its writes are kept. Returns snprintf's count.
 */
int crash_state_str(const struct crash_log *log, uint32_t idx,
		    const uint32_t *keep, char *buf, size_t size);

/*
 * The keep[] of crash point @idx as a short token ("2.0.1"; "-" with no
 * stream), and back: crash_keep_parse() fills @keep (pt.nr_streams
 * entries) from such a token. -EINVAL if it does not fit the point.
 */
int crash_keep_str(const struct crash_log *log, uint32_t idx,
		   const uint32_t *keep, char *buf, size_t size);
int crash_keep_parse(const struct crash_log *log, uint32_t idx,
		     const char *s, uint32_t *keep);

/*
 * Copy the regular file @from to @to (replaced), keeping holes: what the
 * harness uses for base images and crash-state copies.
 */
int crash_copy_sparse(const char *from, const char *to);

#endif /* ZONEFUSE_CRASH_H */
