// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * fsck: replay the journal and run the file system's check (zfs_check(),
 * the one the mount runs) over what it replayed; with --repair, fix what
 * the check can fix and write the result as a new snapshot.
 *
 * The check runs first on a read-only mount, so that a sound file system
 * is never written to (not even the new snapshot a writable mount starts
 * after an unclean shutdown), and fsck's exit code says whether the image
 * changed: 0 sound (untouched), 1 every problem fixed (the image was
 * rewritten), 4 problems left, 8 the check could not run (fsck(8)).
 * Only when there is something to repair is it mounted again, writable,
 * with the journal's salvage mode: a record that does not apply ends the
 * log there, and the records a damaged block hides are given up. That
 * is the loss the user asked for by --repair; fsck says what it was.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zfs_i.h"
#include "zonefuse/util.h"

/*
 * The first pass of a repair keeps its findings (held), to be said only
 * if no repair pass follows to say them again.
 */
struct fsck {
	zfs_finding_fn *say;
	zfs_progress_fn *progress; /* may be NULL */
	void *arg;
	struct zfs_fsck_result *res;
	bool hold;
	struct zfs_finding *held; /* their strings and inodes are copies */
	size_t nheld;
	bool held_short; /* out of memory: some findings were not kept */
};

static void fsck_finding_free(struct zfs_finding *h)
{
	free((void *)h->inos);
	free((void *)h->name);
	free((void *)h->path);
	free((void *)h->text);
}

/* Copy @w's strings and inodes into @h. 0 or -ENOMEM (nothing kept). */
static int fsck_finding_dup(struct zfs_finding *h, const struct zfs_finding *w)
{
	*h = *w;
	h->inos = NULL;
	h->name = h->path = NULL;
	h->text = strdup(w->text);
	if (w->n_inos) {
		uint64_t *v = malloc(w->n_inos * sizeof(*v));

		if (v)
			memcpy(v, w->inos, w->n_inos * sizeof(*v));
		h->inos = v;
	}
	if (w->name)
		h->name = strdup(w->name);
	if (w->path)
		h->path = strdup(w->path);
	if (!h->text || (w->n_inos && !h->inos) || (w->name && !h->name) ||
	    (w->path && !h->path)) {
		fsck_finding_free(h);
		return -ENOMEM;
	}
	return 0;
}

static void fsck_emit(void *arg, const struct zfs_finding *w)
{
	struct fsck *f = arg;
	struct zfs_finding *h;

	if (!f->hold) {
		if (f->say)
			f->say(f->arg, w);
		return;
	}
	h = realloc(f->held, (f->nheld + 1) * sizeof(*h));
	if (h)
		f->held = h;
	if (!h || fsck_finding_dup(&h[f->nheld], w)) {
		f->held_short = true;
		return;
	}
	f->nheld++;
}

/* Say the held findings (@say) or drop them. */
static void fsck_release(struct fsck *f, bool say)
{
	size_t i;

	for (i = 0; i < f->nheld; i++) {
		if (say && f->say)
			f->say(f->arg, &f->held[i]);
		fsck_finding_free(&f->held[i]);
	}
	if (say && f->say && f->held_short)
		f->say(f->arg,
		       &(struct zfs_finding){
			       .code = "findings-lost",
			       .severity = ZFS_SEV_NOTE,
			       .text = "(out of memory: some findings were not kept)" });
	free(f->held);
	f->held = NULL;
	f->nheld = 0;
	f->held_short = false;
	f->hold = false;
}

/*
 * A finding of fsck's own (the journal's, the data's): @what has its
 * code, what it concerns and its severity, the format its text. With
 * @count it is one more problem in errors (the caller counts what it
 * fixed): a file's damaged ranges are one problem.
 */
__attribute__((format(printf, 4, 5))) static void
fsck_say(struct fsck *f, bool count, struct zfs_finding what,
	 const char *fmt, ...)
{
	char line[1024]; /* a replay's stop reason (512) and the words around it */
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (count)
		f->res->errors++;
	what.text = line;
	fsck_emit(f, &what);
}

/*
 * How the replay went, as findings: damage in the middle of the log is a
 * problem (fixed by a repair, which accepts the loss), an unclean tail is
 * normal after a crash.
 */
static void fsck_journal(struct fsck *f, const struct jrnl_replay_info *ri,
			 bool repair, bool sz_fixed)
{
	if (ri->damaged) {
		char after[64] = "";

		if (ri->damaged_seq)
			snprintf(after, sizeof(after),
				 ", but valid records up to seq %" PRIu64 " follow",
				 ri->damaged_seq);
		fsck_say(f, true,
			 (struct zfs_finding){
				 .code = "journal-damaged",
				 .fixed = repair,
				 .has = ri->damaged_seq ? ZFS_FIND_SEQ : 0,
				 .seq = ri->damaged_seq },
			 "journal: damaged in the middle: replay stopped at %s%s%s",
			 ri->stop, after,
			 repair ? "; the changes after it are given up, and the log now ends there (fixed)" :
				  ": a repair gives up the changes after it");
		if (repair)
			f->res->fixed++;
	}
	/*
	 * A repair rewrites a super zone by switching into it; a zone that
	 * cannot be written stays as it was (the anchors went to the other).
	 */
	if (ri->super_damaged) {
		fsck_say(f, true,
			 (struct zfs_finding){ .code = "superblock-damaged",
					       .fixed = sz_fixed },
			 "super zones: %s is damaged (the other copy served)%s",
			 ri->super_bad,
			 sz_fixed ? ": rewritten (fixed)" :
			 repair	  ? ": it could not be rewritten; replace the device" :
				    "");
		f->res->fixed += sz_fixed;
		f->res->copies_bad++;
	}
	if (ri->anchor_damaged) {
		fsck_say(f, true,
			 (struct zfs_finding){ .code = "anchor-damaged",
					       .fixed = sz_fixed },
			 "super zones: %s is damaged (%s)%s", ri->anchor_bad,
			 ri->anchor_scanned ? "the chain it named was found by its head zone" :
					      "a valid anchor names the metadata",
			 sz_fixed ? ": the super zones rewritten (fixed)" :
			 repair	  ? ": it could not be rewritten; replace the device" :
				    "");
		f->res->fixed += sz_fixed;
		f->res->copies_bad++;
	}
	if (ri->super_unwritable) {
		fsck_say(f, true,
			 (struct zfs_finding){ .code = "super-zone-unwritable",
					       .fixed = sz_fixed },
			 "super zones: super zone %u could not be written at the last mount: the superblock and anchors have one copy%s",
			 ri->super_unwritable_zone,
			 sz_fixed ? ": written anew (fixed)" :
			 repair	  ? ", and it still cannot be written; replace the device" :
				    "; a repair or a writable mount tries again");
		f->res->fixed += sz_fixed;
		f->res->copies_bad++;
	}
	if (ri->copy_damaged) {
		fsck_say(f, true,
			 (struct zfs_finding){ .code = "journal-copy-damaged",
					       .fixed = repair },
			 "journal: %s is damaged (%u block%s of one copy; the other copy served)%s",
			 ri->copy_bad, ri->copy_bad_count,
			 ri->copy_bad_count > 1 ? "s" : "",
			 repair ? ": both copies written anew (fixed)" : "");
		f->res->fixed += repair;
		f->res->copies_bad += ri->copy_bad_count;
	}
	if (ri->salvaged) {
		fsck_say(f, true,
			 (struct zfs_finding){ .code = "journal-salvaged",
					       .fixed = true },
			 "journal: %s (fixed)", ri->stop);
		f->res->fixed++;
	} else if (!ri->clean && !ri->damaged) {
		fsck_say(f, false,
			 (struct zfs_finding){ .code = "journal-unclean",
					       .severity = ZFS_SEV_NOTE },
			 "journal: not cleanly unmounted (normal after a crash): replay ended at: %s",
			 ri->stop);
	}
}

/* A file scrub found damaged: one problem, left (no copy to repair from). */
static void fsck_data_progress(void *arg, const struct zfs_scrub_total *t)
{
	struct fsck *f = arg;

	f->progress(f->arg, 2, t->files, t->files_total);
}

static void fsck_data_found(void *arg, const char *path, uint64_t ino,
			    const struct zfs_scrub_file *r)
{
	struct fsck *f = arg;
	uint32_t i;

	for (i = 0; i < r->nbad; i++)
		fsck_say(f, i == 0,
			 (struct zfs_finding){
				 .code = "data-damaged",
				 .has = ZFS_FIND_INO | ZFS_FIND_PATH |
					ZFS_FIND_ZONE | ZFS_FIND_RANGE,
				 .ino = ino,
				 .path = path,
				 .zone = r->bad[i].zone,
				 .foff = r->bad[i].foff,
				 .len = r->bad[i].len },
			 "data: %s (inode %" PRIu64 "): %" PRIu64 " bytes at file offset %" PRIu64 " (zone %u) %s: reads of them give EIO; restore the file from a copy",
			 path, ino, r->bad[i].len, r->bad[i].foff, r->bad[i].zone,
			 r->bad[i].unreadable ? "cannot be read" :
						"fail their checksum");
	if (r->more)
		fsck_say(f, false,
			 (struct zfs_finding){ .code = "data-damaged-more",
					       .severity = ZFS_SEV_NOTE,
					       .has = ZFS_FIND_INO | ZFS_FIND_PATH,
					       .ino = ino,
					       .path = path },
			 "data: %s (inode %" PRIu64 "): more damaged ranges than listed",
			 path, ino);
}

/*
 * One pass: mount (@repair: writable, salvaging), report the replay, run
 * the check (and with @data, read all file data); with @repair write what
 * it fixed as a new snapshot. Returns 0, -EUCLEAN when the metadata does
 * not replay (in @err), or another errno (the check could not run).
 */
static int fsck_pass(const char *path, bool repair, bool data, struct fsck *f,
		     char *err, size_t errlen)
{
	struct zfs_opts o = { 0 };
	struct zfs *fs;
	int ret;

	memset(f->res, 0, sizeof(*f->res));
	if (f->progress)
		f->progress(f->arg, 1, 0, 1);
	o.rdonly = !repair;
	o.defer_threads = true;
	o.salvage = repair;
	o.no_check = true;
	ret = zfs_mount(path, &o, &fs, err, errlen);
	if (ret)
		return ret;
	f->res->log_records = fs->replay.log_records;
	f->res->clean_tail = fs->replay.clean;
	snprintf(f->res->stop, sizeof(f->res->stop), "%s", fs->replay.stop);
	fsck_journal(f, &fs->replay, repair,
		     repair && jrnl_super_unwritable(fs->j) == ZF_NO_ZONE);
	ret = zfs_check(fs, repair, fsck_emit, f, f->res);
	if (!ret && f->progress)
		f->progress(f->arg, 1, 1, 1);
	if (!ret && data) {
		struct zfs_scrub_total t;

		ret = zfs_scrub_all(fs, fsck_data_found,
				    f->progress ? fsck_data_progress : NULL, f,
				    &t);
		f->res->data_bytes = t.bytes;
		f->res->data_files = t.files;
		f->res->damaged_files = t.damaged_files;
	}
	if (ret) {
		zutil_err(err, errlen, "%s: checking failed: %s", path,
			  strerror(-ret));
		zfs_crash(fs);
		return ret;
	}
	/*
	 * The writable mount started a new snapshot if the log was not
	 * clean; a repair of the tables is written the same way.
	 */
	if (repair && f->res->fixed) {
		uint32_t failed = jrnl_super_unwritable(fs->j);

		ret = jrnl_roll(fs->j);
		if (ret) {
			zutil_err(err, errlen,
				  "%s: writing the repaired metadata failed: %s",
				  path, strerror(-ret));
			zfs_crash(fs);
			return ret;
		}
		/*
		 * The roll's anchor met a block of a super zone that cannot
		 * be written (a bad block the damage left there): what was
		 * rewritten holds, but the device keeps one copy now.
		 */
		if (failed == ZF_NO_ZONE &&
		    jrnl_super_unwritable(fs->j) != ZF_NO_ZONE)
			fsck_say(f, true,
				 (struct zfs_finding){ .code = "super-zone-unwritable" },
				 "super zones: super zone %u could not be written during the repair: the superblock and anchors have one copy, and it still cannot be written; replace the device",
				 jrnl_super_unwritable(fs->j));
	}
	ret = zfs_unmount(fs);
	if (ret)
		zutil_err(err, errlen, "%s: closing failed: %s", path,
			  strerror(-ret));
	return ret;
}

int zfs_fsck(const char *path, unsigned int flags, zfs_finding_fn *say,
	     void *arg, struct zfs_fsck_result *res, char *err, size_t errlen)
{
	return zfs_fsck_progress(path, flags, say, NULL, arg, res, err,
				 errlen);
}

int zfs_fsck_progress(const char *path, unsigned int flags,
		      zfs_finding_fn *say, zfs_progress_fn *progress, void *arg,
		      struct zfs_fsck_result *res, char *err, size_t errlen)
{
	bool repair = flags & ZFS_FSCK_REPAIR, data = flags & ZFS_FSCK_DATA;
	struct fsck f = { .say = say, .progress = progress, .arg = arg,
			  .res = res, .hold = repair };
	int ret;

	/* The data is read in the last pass only: said once. */
	ret = fsck_pass(path, false, data && !repair, &f, err, errlen);
	if (ret && ret != -EUCLEAN) {
		fsck_release(&f, true);
		return ZFS_FSCK_OPERROR;
	}
	if (!repair || (!ret && !res->errors)) {
		fsck_release(&f, !data || !repair);
		if (ret) {
			/* Metadata that does not replay: a problem (in @err). */
			res->errors = 1;
			return ZFS_FSCK_UNFIXED;
		}
		if (data && repair) {
			/* Sound metadata: read the data, writing nothing. */
			ret = fsck_pass(path, false, true, &f, err, errlen);
			if (ret)
				return ZFS_FSCK_OPERROR;
		}
		return res->errors ? ZFS_FSCK_UNFIXED : ZFS_FSCK_OK;
	}
	/* Something to repair: the repair pass says it all again. */
	fsck_release(&f, false);
	err[0] = '\0';
	ret = fsck_pass(path, true, data, &f, err, errlen);
	if (ret == -EUCLEAN) {
		res->errors = 1;
		return ZFS_FSCK_UNFIXED;
	}
	if (ret)
		return ZFS_FSCK_OPERROR;
	return res->fixed == res->errors ? ZFS_FSCK_FIXED : ZFS_FSCK_UNFIXED;
}
