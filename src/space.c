// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The space policy: what a writer, the journal or write()'s space check
 * does when the allocator says "not now" (alloc.c returns -EAGAIN and what
 * is missing). Every "wait, share, commit, collect, give up" of the file
 * system is a row of space_rules[] below; nothing else loops on the
 * allocator. The allocator's operations never wait, so this is the one
 * place where a thread can stall for space, and the table says for how
 * long.
 *
 * What the rows keep:
 * - Data that write() accepted is never dropped for lack of an active or
 *   open zone: a writer waits for one (a write in flight always ends and
 *   gives its zone's slot or open state to whoever waits), or shares a
 *   head: a large file whose own zone is refused writes through a shared
 *   head. So an fsync waits for the work queued ahead of it, never for a
 *   timeout. Before this, a shared head gave up after 10 s with EBUSY, and
 *   8 writers on a device of 2 active zones lost their data.
 * - A writer short of free zones gets them from, in order of cost: resets
 *   of dead zones (a commit makes them resettable), reclaim of zones worth
 *   it, reclaim of any dead space (never the reserve: it is reclaim's room
 *   to work in); and if nothing at all
 *   moves for SPACE_STALL_WAITS waits, it gives up (-ENOSPC): the space
 *   check counted space that is not there, a bug the log names.
 * - The journal never waits for a commit (it is the committer), only for
 *   a write in flight to end.
 * - write() is refused with ENOSPC when the live data fills the usable
 *   space, after staged data and dead zones had their chance to give
 *   space back.
 *
 * Layering: this module calls down into reclaim (gc.c), the allocator
 * and the journal; the data path calls it. Writing out staged data, which
 * the space check may want, is data.c's: it is reached through the
 * zfs.flush_staged callback.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "zfs_i.h"
#include "zonefuse/util.h"

/* How long one wait for an allocator event lasts at most. */
#define SPACE_WAIT_MS 1000u

/*
 * Waits of SPACE_WAIT_MS in a row that saw no event at all, with every
 * other way tried, before a writer short of space gives up.
 */
#define SPACE_STALL_WAITS 5u

/* An asker that has waited this long is reported (then 4, 16... times). */
#define SPACE_STALL_REPORT_NS (UINT64_C(10) * 1000000000u)

/*
 * The policy. For each asker and what it lacks, the rows in order: the
 * first whose limit (times per call, 0: none) is not used up applies.
 * Progress (a zone freed, an event after a wait) starts the counts again.
 */
static const struct space_rule space_rules[] = {
	/* A large file never pushes a head out, nor waits for space. */
	{ SPACE_PRIVATE, ALLOC_NEED_OPEN, SPACE_WAIT, 0,
	  "every open zone has a write in flight: one ends soon" },
	{ SPACE_PRIVATE, ALLOC_NEED_SLOT, SPACE_SHARE, 0,
	  "no active slot for a zone of its own: write through a shared head" },
	{ SPACE_PRIVATE, ALLOC_NEED_COMMIT, SPACE_SHARE, 0,
	  "no free zone now: the shared head finds room" },
	{ SPACE_PRIVATE, ALLOC_NEED_RECLAIM, SPACE_SHARE, 0,
	  "no free zone now: the shared head finds room" },

	{ SPACE_WRITER, ALLOC_NEED_OPEN, SPACE_WAIT, 0,
	  "every open zone has a write in flight: one ends soon" },
	{ SPACE_WRITER, ALLOC_NEED_SLOT, SPACE_WAIT, 0,
	  "every active slot is held by a zone being written: its write ends soon" },
	{ SPACE_WRITER, ALLOC_NEED_COMMIT, SPACE_COMMIT, 4,
	  "dead zones wait for the record that freed them: commit, reset" },
	{ SPACE_WRITER, ALLOC_NEED_COMMIT, SPACE_WAIT, 0,
	  "the dead zones are still held (reclaim, a write in flight)" },
	{ SPACE_WRITER, ALLOC_NEED_RECLAIM, SPACE_COLLECT, 8,
	  "no free zone, no room: reclaim a zone worth it (1/16 dead or more)" },
	{ SPACE_WRITER, ALLOC_NEED_RECLAIM, SPACE_COLLECT_ANY, 8,
	  "nothing worth it: reclaim the zone with the most dead bytes" },
	{ SPACE_WRITER, ALLOC_NEED_RECLAIM, SPACE_WAIT, SPACE_STALL_WAITS,
	  "others may be freeing space (resets, reclaim in another thread)" },
	{ SPACE_WRITER, ALLOC_NEED_RECLAIM, SPACE_FAIL, 0,
	  "nothing moved: the space check admitted more than there is" },

	{ SPACE_ADMIT, ALLOC_NEED_COMMIT, SPACE_COMMIT, 8,
	  "dead zones wait for the record that freed them: commit, reset" },
	{ SPACE_ADMIT, ALLOC_NEED_COMMIT, SPACE_FAIL, 0,
	  "resets gave back nothing more" },
	{ SPACE_ADMIT, ALLOC_NEED_FLUSH, SPACE_FLUSH, 2,
	  "staged data written out frees the bytes it overwrites" },
	{ SPACE_ADMIT, ALLOC_NEED_FLUSH, SPACE_FAIL, 0,
	  "writing staged data out gave back nothing more" },

	{ SPACE_JOURNAL, ALLOC_NEED_OPEN, SPACE_WAIT, 0,
	  "every open zone has a write in flight: one ends soon" },
	{ SPACE_JOURNAL, ALLOC_NEED_SLOT, SPACE_WAIT, 0,
	  "every data zone is being written: one ends soon and gives its slot to the anchor" },
};

const char *space_need_name(enum alloc_need need)
{
	static const char *const name[] = {
		[ALLOC_NEED_NONE] = "nothing",
		[ALLOC_NEED_SLOT] = "an active zone slot",
		[ALLOC_NEED_OPEN] = "an open zone",
		[ALLOC_NEED_COMMIT] = "a commit to free dead zones",
		[ALLOC_NEED_RECLAIM] = "reclaim to free a zone",
		[ALLOC_NEED_FLUSH] = "staged data to be written",
	};

	return need < ZF_ARRAY_SIZE(name) ? name[need] : "?";
}

static const char *space_act_name(enum space_act act)
{
	static const char *const name[] = {
		[SPACE_SHARE] = "share", [SPACE_WAIT] = "wait",
		[SPACE_COMMIT] = "commit", [SPACE_FLUSH] = "flush",
		[SPACE_COLLECT] = "collect", [SPACE_COLLECT_ANY] = "collect any",
		[SPACE_FAIL] = "fail",
	};

	return act < ZF_ARRAY_SIZE(name) ? name[act] : "?";
}

const struct space_rule *space_table(size_t *n)
{
	*n = ZF_ARRAY_SIZE(space_rules);
	return space_rules;
}

static const char *space_who_name(enum space_who who)
{
	static const char *const name[] = {
		[SPACE_WRITER] = "writeback",
		[SPACE_PRIVATE] = "writeback",
		[SPACE_ADMIT] = "write()",
		[SPACE_JOURNAL] = "journal commit",
	};

	return who < ZF_ARRAY_SIZE(name) ? name[who] : "?";
}

void space_start(struct space_state *st, enum space_who who)
{
	memset(st, 0, sizeof(*st));
	st->who = who;
	st->report_ns = SPACE_STALL_REPORT_NS;
}

void space_progress(struct space_state *st)
{
	memset(st->used, 0, sizeof(st->used));
}

enum space_act space_decide(struct space_state *st, enum space_who who,
			    enum alloc_need need)
{
	size_t i;

	for (i = 0; i < ZF_ARRAY_SIZE(space_rules); i++) {
		const struct space_rule *r = &space_rules[i];

		if (r->who != who || r->need != need)
			continue;
		if (r->limit && st->used[i] >= r->limit)
			continue;
		st->used[i]++;
		return r->act;
	}
	/* An asker and need the table has no row for: a bug. */
	zlog_err("internal error: the space policy has no rule for asker %d lacking %d",
		 who, need);
	return SPACE_FAIL;
}

/* Commit the journal, then reset the zones that made resettable. */
static int space_commit(struct zfs *fs)
{
	int ret = jrnl_commit(fs->j, UINT64_MAX);

	if (ret)
		return ret;
	return alloc_reclaim(fs);
}

/*
 * Do @act for an asker that lacked what @t says. 0 to try again,
 * -ENOSPC for SPACE_FAIL, or the errno of a failed
 * commit (the journal failed: the file system is read-only now).
 */
static int space_do(struct zfs *fs, struct space_state *st,
		    enum space_act act, struct alloc_try *t)
{
	uint64_t t0 = zutil_now_mono_ns(), copied = 0;
	struct alloc_try gt = { 0 };
	int ret = 0;

	zlog_debug("space: a %s lacking %s: %s", space_who_name(st->who),
		   space_need_name(t->need), space_act_name(act));
	switch (act) {
	case SPACE_SHARE:
		break;
	case SPACE_WAIT: {
		uint64_t w0 = zutil_now_mono_ns();

		if (alloc_wait(fs, t, SPACE_WAIT_MS)) {
			space_progress(st);
			st->idle_waits = 0;
		} else {
			st->idle_waits++;
		}
		st->waited_ns += zutil_now_mono_ns() - w0;
		if (st->waited_ns >= st->report_ns) {
			char what[320];

			alloc_describe(fs, what, sizeof(what));
			zlog_warn("%s: a %s has waited %" PRIu64 " s for %s: %s",
				  zdev_path(fs->dev), space_who_name(st->who),
				  st->waited_ns / UINT64_C(1000000000),
				  space_need_name(t->need), what);
			st->report_ns *= 4;
		}
		break;
	}
	case SPACE_COMMIT:
		ret = space_commit(fs);
		if (ret > 0)
			space_progress(st);
		ret = ret < 0 ? ret : 0;
		break;
	case SPACE_FLUSH:
		if (fs->flush_staged)
			fs->flush_staged(fs);
		ret = space_commit(fs);
		ret = ret < 0 ? ret : 0;
		break;
	case SPACE_COLLECT:
	case SPACE_COLLECT_ANY:
		fs->space_low = true;
		ret = gc_collect(fs, 1,
				 act == SPACE_COLLECT ? GC_COST_BENEFIT : GC_GREEDY,
				 &gt, &copied);
		fs->gc_bytes_by_writers += copied;
		zlog_debug("space: reclaim: %d", ret);
		if (ret > 0) {
			/* The victim is reset once its moves are durable. */
			space_progress(st);
			ret = space_commit(fs);
		} else if (ret == -EAGAIN) {
			/* Reclaim's own head found no zone now: wait for one. */
			alloc_wait(fs, &gt, SPACE_WAIT_MS);
		} else if (ret < 0 && ret != -EROFS) {
			zlog_warn("%s: reclaim for a writer failed: %s",
				  zdev_path(fs->dev), strerror(-ret));
		}
		ret = ret == -EROFS ? ret : 0;
		break;
	case SPACE_FAIL:
		ret = -ENOSPC;
		break;
	}
	if (!ret && rec_writable(fs))
		ret = -EROFS;
	fs->space_stall_ns += zutil_now_mono_ns() - t0;
	return ret;
}

int space_write(struct zfs *fs, struct zfs_head **headp,
		struct zfs_head *shared, const void *buf, size_t len,
		uint64_t *addr, size_t *done)
{
	struct space_state st;
	struct alloc_try t = { 0 };
	int ret;

	space_start(&st, SPACE_WRITER);
	for (;;) {
		enum space_who who = (*headp)->kind == ZFS_HEAD_PRIVATE ?
					     SPACE_PRIVATE :
					     SPACE_WRITER;
		enum space_act act;

		ret = alloc_head_write(fs, *headp, buf, len, addr, done, &t);
		if (ret != -EAGAIN)
			return ret;
		act = space_decide(&st, who, t.need);
		if (act == SPACE_SHARE) {
			*headp = shared;
			continue;
		}
		if (act == SPACE_FAIL)
			zlog_err("%s: internal error: data the space check admitted found no zone (lacking %d); it is lost",
				 zdev_path(fs->dev), t.need);
		ret = space_do(fs, &st, act, &t);
		if (ret)
			return ret;
	}
}

int space_reserve(struct zfs *fs, uint64_t len)
{
	struct space_state st;
	struct alloc_try t = { 0 };
	int ret;

	space_start(&st, SPACE_ADMIT);
	for (;;) {
		ret = alloc_reserve(fs, len, &t);
		if (ret != -EAGAIN)
			return ret;
		ret = space_do(fs, &st, space_decide(&st, SPACE_ADMIT, t.need),
			       &t);
		if (ret)
			return ret == -EROFS ? ret : -ENOSPC;
	}
}

/* ---- the journal's side ---------------------------------------------- */

static int space_jrnl_zone(void *arg, uint32_t *zone)
{
	return alloc_jrnl_zone(arg, zone);
}

static void space_jrnl_done(void *arg, uint32_t zone)
{
	struct zfs *fs = arg;
	struct space_state st;
	struct alloc_try t = { 0 };

	space_start(&st, SPACE_JOURNAL);
	while (alloc_jrnl_done(fs, zone, &t) == -EAGAIN)
		space_do(fs, &st, space_decide(&st, SPACE_JOURNAL, t.need), &t);
}

static void space_jrnl_release(void *arg, uint32_t zone)
{
	alloc_jrnl_release(arg, zone);
}

/* The journal about to write @zone: it must be open (or may be opened). */
static void space_jrnl_io_begin(void *arg, uint32_t zone)
{
	struct zfs *fs = arg;
	struct space_state st;
	struct alloc_try t = { 0 };

	space_start(&st, SPACE_JOURNAL);
	while (alloc_io_begin(fs, zone, &t) == -EAGAIN)
		space_do(fs, &st, space_decide(&st, SPACE_JOURNAL, t.need), &t);
}

static void space_jrnl_io_end(void *arg, uint32_t zone)
{
	alloc_io_end(arg, zone);
}

/* An anchor is about to be written: the super zone needs its slot. */
static void space_jrnl_super_begin(void *arg)
{
	struct zfs *fs = arg;
	struct space_state st;
	struct alloc_try t = { 0 };

	space_start(&st, SPACE_JOURNAL);
	while (alloc_super_begin(fs, &t) == -EAGAIN)
		space_do(fs, &st, space_decide(&st, SPACE_JOURNAL, t.need), &t);
}

static void space_jrnl_super_end(void *arg, uint32_t zone)
{
	struct zfs *fs = arg;
	struct space_state st;
	struct alloc_try t = { 0 };

	space_start(&st, SPACE_JOURNAL);
	while (alloc_super_end(fs, zone, &t) == -EAGAIN)
		space_do(fs, &st, space_decide(&st, SPACE_JOURNAL, t.need), &t);
}

static void space_jrnl_resync(void *arg)
{
	alloc_resync(arg);
}

const struct jrnl_cb space_jrnl_cb = {
	.zone_alloc = space_jrnl_zone,
	.zone_done = space_jrnl_done,
	.zone_release = space_jrnl_release,
	.io_begin = space_jrnl_io_begin,
	.io_end = space_jrnl_io_end,
	.super_begin = space_jrnl_super_begin,
	.super_end = space_jrnl_super_end,
	.resync = space_jrnl_resync,
	.snapshot = rec_snapshot,
	.durable = rec_durable,
	.failed = rec_jrnl_failed,
};
