// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The invariants of a replayed file system, checked from scratch against
 * what the journal says and what the device's write pointers say. Mount
 * and fsck run this same check (zfs_check()), so that what fsck rejects
 * the mount rejects too: mount reports and refuses, fsck --repair fixes.
 *
 * A repair changes the metadata in memory; fsck then writes it as a new
 * snapshot (one atomic step, like every snapshot), so a crash during a
 * repair leaves the old state. A repair never invents data: a link count
 * is recounted from the entries, an inode nobody names is given a name
 * in /lost+found, and a file is cut only where the device proves its
 * data never landed (above the zone's write pointer).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zfs_i.h"
#include "zonefuse/util.h"

struct zfs_checker {
	struct zfs *fs;
	bool repair;
	zfs_finding_fn *say;
	void *arg;
	struct zfs_fsck_result *res;
};

/*
 * A problem: @what says its code and what it concerns (docs/usage.md
 * lists the codes), the format its text.
 */
__attribute__((format(printf, 4, 5))) static void
chk_problem(struct zfs_checker *f, struct zfs_finding what, bool fixed,
	    const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n > 0 && (size_t)n < sizeof(line) - 16)
		snprintf(line + n, sizeof(line) - (size_t)n, "%s",
			 fixed ? " (fixed)" : f->repair ? " (not fixed)" : "");
	f->res->errors++;
	if (fixed)
		f->res->fixed++;
	what.severity = ZFS_SEV_ERROR;
	what.fixed = fixed;
	what.text = line;
	if (f->say)
		f->say(f->arg, &what);
}

__attribute__((format(printf, 3, 4))) static void
chk_warn(struct zfs_checker *f, struct zfs_finding what, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	f->res->warnings++;
	what.severity = ZFS_SEV_WARNING;
	what.text = line;
	if (f->say)
		f->say(f->arg, &what);
}

/* Call @fn on every inode. */
#define chk_for_each_inode(m, in)                                            \
	for (uint32_t b_ = 0; b_ <= (m)->imask; b_++)                          \
		for (struct zm_inode *in = (m)->itab[b_], *n_ = NULL;           \
		     in && ((n_ = in->hnext), 1); in = n_)

/* Extents: inside a data zone, below its write pointer, under the size. */
static void chk_extents(struct zfs_checker *f)
{
	struct zmeta *m = &f->fs->m;

	chk_for_each_inode(m, in)
	{
		uint32_t k;

		if (!zm_is_reg(in))
			continue;
		for (k = 0; k < in->f.n_ext; k++) {
			struct zm_extent *e = &in->f.ext[k];
			uint32_t zid = zm_zone_of(m, e->addr);
			struct zm_zone *z = &m->zones[zid];
			uint64_t top = z->type == ZDEV_ZONE_SEQ ? z->wp :
								   z->start + z->cap;

			f->res->extents++;
			if (e->addr + e->len > top) {
				uint64_t keep = e->addr < top ? top - e->addr : 0;
				uint64_t cut = e->foff + keep, len = e->len - keep;
				bool fixed = f->repair &&
					     !zm_unmap(m, in, cut, UINT64_MAX);

				/*
				 * A hole there would read as zeros, which a
				 * reader cannot tell from the file's bytes:
				 * the file is cut where its data stops, so
				 * that it reads short (a checkpoint loader
				 * fails loudly) instead of wrong.
				 */
				if (fixed)
					in->size = cut;
				chk_problem(f,
					    (struct zfs_finding){
						    .code = "extent-above-wp",
						    .has = ZFS_FIND_INO |
							   ZFS_FIND_ZONE |
							   ZFS_FIND_RANGE,
						    .ino = in->ino,
						    .zone = zid,
						    .foff = cut,
						    .len = len },
					    fixed,
					     "inode %" PRIu64 ": %" PRIu64 " bytes at file offset %" PRIu64 " lie above zone %u's write pointer: that data never reached the device%s",
					     in->ino, len, cut, zid,
					     fixed ? "; the file is cut there (given up)" : "");
				if (fixed)
					break;
				continue;
			}
			if (e->foff + e->len > in->size) {
				bool fixed = f->repair &&
					     !zm_unmap(m, in, in->size,
						       UINT64_MAX);

				chk_problem(f,
					    (struct zfs_finding){
						    .code = "extent-past-size",
						    .has = ZFS_FIND_INO |
							   ZFS_FIND_ZONE |
							   ZFS_FIND_RANGE,
						    .ino = in->ino,
						    .zone = zid,
						    .foff = e->foff,
						    .len = e->len },
					    fixed,
					     "inode %" PRIu64 ": an extent reaches past the file size %" PRIu64,
					     in->ino, in->size);
				if (fixed)
					break;
			}
		}
	}
}

/*
 * Zones the device made read-only or offline while they held file data
 * (zm_zone_failed()). The metadata is right and nothing can repair the
 * device, so this is a warning, not an error: the file system mounts, the
 * data of a read-only zone reads, that of an offline zone gives EIO. The
 * user learns which files to copy away or restore.
 */
static void chk_failed_zones(struct zfs_checker *f)
{
	struct zmeta *m = &f->fs->m;
	uint32_t i;

	for (i = 0; i < m->nr_zones; i++) {
		struct zm_zone *z = &m->zones[i];
		bool offline = z->cond == ZDEV_COND_OFFLINE;
		char inos[8 * 22 + 1] = ""; /* 8 inode numbers, ", " between */
		uint64_t ino[8];
		size_t n = 0;
		uint32_t files = 0;

		if (!zm_zone_failed(z) || !z->valid)
			continue;
		chk_for_each_inode(m, in)
		{
			uint32_t k;

			if (!zm_is_reg(in))
				continue;
			for (k = 0; k < in->f.n_ext; k++)
				if (zm_zone_of(m, in->f.ext[k].addr) == i)
					break;
			if (k == in->f.n_ext)
				continue;
			if (files < 8 && n < sizeof(inos)) {
				ino[files] = in->ino;
				n += (size_t)snprintf(inos + n, sizeof(inos) - n,
						      "%s%" PRIu64,
						      n ? ", " : "", in->ino);
			}
			files++;
		}
		chk_warn(f,
			 (struct zfs_finding){
				 .code = offline ? "zone-offline" :
						   "zone-readonly",
				 .has = ZFS_FIND_ZONE | ZFS_FIND_INOS,
				 .zone = i,
				 .inos = ino,
				 .n_inos = ZF_MIN(files, 8u) },
			  "warning: zone %u is %s on the device: %" PRIu64 " bytes of file data there (inode%s %s%s) %s",
			  i, offline ? "offline" : "read-only", z->valid,
			  files > 1 ? "s" : "", inos,
			  files > 8 ? ", ..." : "",
			  offline ? "are lost: reading them gives EIO; restore those files from a copy or delete them" :
				    "can be read but not moved: copy those files elsewhere while they still read");
	}
}

struct chk_ext {
	uint64_t addr, len, ino;
};

static int chk_ext_cmp(const void *a, const void *b)
{
	const struct chk_ext *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* No two live extents share device bytes; zone byte counts add up. */
static int chk_overlaps(struct zfs_checker *f)
{
	struct zmeta *m = &f->fs->m;
	struct chk_ext *all = NULL;
	uint64_t *valid;
	size_t n = 0, cap = 0, i, far;
	int ret = -ENOMEM;

	valid = calloc(m->nr_zones, sizeof(*valid));
	if (!valid)
		return -ENOMEM;
	chk_for_each_inode(m, in)
	{
		uint32_t k;

		if (!zm_is_reg(in))
			continue;
		for (k = 0; k < in->f.n_ext; k++) {
			if (n == cap) {
				size_t ncap = cap ? cap * 2 : 1024;
				struct chk_ext *na =
					realloc(all, ncap * sizeof(*na));

				if (!na)
					goto out_free;
				all = na;
				cap = ncap;
			}
			all[n].addr = in->f.ext[k].addr;
			all[n].len = in->f.ext[k].len;
			all[n].ino = in->ino;
			/* Live bytes count whole blocks (meta.c). */
			valid[zm_zone_of(m, all[n].addr)] +=
				ZF_ROUND_UP(all[n].len, (uint64_t)m->block_size);
			n++;
		}
	}
	if (n)
		qsort(all, n, sizeof(*all), chk_ext_cmp);
	/*
	 * Each extent against the one reaching furthest before it, not just
	 * its neighbour: two small extents inside a large one both overlap it.
	 */
	for (i = 1, far = 0; i < n; i++) {
		if (all[far].addr + all[far].len > all[i].addr)
			chk_problem(f,
				    (struct zfs_finding){
					    .code = "extent-overlap",
					    .has = ZFS_FIND_INOS |
						   ZFS_FIND_ZONE | ZFS_FIND_ADDR,
					    .inos = (uint64_t[]){ all[far].ino,
								  all[i].ino },
					    .n_inos = 2,
					    .zone = zm_zone_of(m, all[i].addr),
					    .addr = all[i].addr },
				    false,
				     "inodes %" PRIu64 " and %" PRIu64 " both map device bytes at 0x%" PRIx64 ": one of them has the other's data",
				     all[far].ino, all[i].ino, all[i].addr);
		if (all[i].addr + all[i].len > all[far].addr + all[far].len)
			far = i;
	}
	for (i = 0; i < m->nr_zones; i++) {
		struct zm_zone *z = &m->zones[i];

		if (z->valid == valid[i])
			continue;
		chk_problem(f,
			    (struct zfs_finding){ .code = "zone-live-bytes",
						  .has = ZFS_FIND_ZONE,
						  .zone = (uint32_t)i },
			    f->repair,
			     "zone %zu: %" PRIu64 " live bytes counted, its extents hold %" PRIu64,
			     i, z->valid, valid[i]);
		if (f->repair) {
			m->live_bytes += valid[i] - z->valid;
			z->valid = valid[i];
		}
	}
	ret = 0;
out_free:
	free(all);
	free(valid);
	return ret;
}

/* Make (or find) /lost+found. */
static struct zm_inode *chk_lost_found(struct zfs_checker *f)
{
	struct zmeta *m = &f->fs->m;
	struct zm_inode *root = zm_iget(m, ZF_ROOT_INO);
	struct zm_dent *e = zm_lookup(root, "lost+found", 10);
	char buf[sizeof(struct zf_rec_create) + 10];
	struct zf_rec_create *rec = (void *)buf;
	int64_t now = zutil_now_real_ns();
	char why[128];

	if (e) {
		struct zm_inode *d = zm_iget(m, e->ino);

		return d && zm_is_dir(d) ? d : NULL;
	}
	memset(buf, 0, sizeof(buf));
	rec->parent = htole64(ZF_ROOT_INO);
	rec->attr.ino = htole64(m->next_ino);
	rec->attr.mode = htole32(0040700);
	rec->attr.atime = rec->attr.mtime = rec->attr.ctime = rec->attr.btime =
		(int64_t)htole64((uint64_t)now);
	rec->name_len = htole16(10);
	memcpy(rec + 1, "lost+found", 10);
	if (zm_apply(m, ZF_REC_CREATE, rec, sizeof(buf), 0, why, sizeof(why)))
		return NULL;
	e = zm_lookup(root, "lost+found", 10);
	return e ? zm_iget(m, e->ino) : NULL;
}

/*
 * Mark @top and everything below it reached (nlookup 1). Returns how many
 * inodes were newly marked. @queue has room for every inode.
 */
static uint64_t chk_reach(struct zmeta *m, uint64_t *queue,
			   struct zm_inode *top)
{
	uint64_t head = 0, tail = 0;

	top->nlookup = 1;
	queue[tail++] = top->ino;
	while (head < tail) {
		struct zm_inode *in = zm_iget(m, queue[head++]);
		struct zm_dent *e;

		if (!zm_is_dir(in))
			continue;
		for (e = zm_dir_next(in, 0); e; e = zm_dir_next(in, e->cookie)) {
			struct zm_inode *c = zm_iget(m, e->ino);

			if (c && c->nlookup != 1 && tail <= m->nr_inodes) {
				c->nlookup = 1;
				queue[tail++] = c->ino;
			}
		}
	}
	return tail;
}

/* Report (and with repair, name in /lost+found) unreachable @in. */
static void chk_unreachable(struct zfs_checker *f, struct zm_inode *in,
			     uint64_t below, struct zm_inode **lf)
{
	const char *what = zm_is_dir(in) ? "directory" : "file";
	char name[32], path[48], more[64] = "";

	if (below)
		snprintf(more, sizeof(more), ", %" PRIu64 " inodes below it",
			 below);
	if (!f->repair) {
		chk_problem(f,
			    (struct zfs_finding){ .code = "inode-unreachable",
						  .has = ZFS_FIND_INO,
						  .ino = in->ino },
			    false,
			     "inode %" PRIu64 " (%s, %" PRIu64 " bytes%s) is not reachable from the root",
			     in->ino, what, in->size, more);
		return;
	}
	if (!*lf) {
		*lf = chk_lost_found(f);
		if (*lf)
			(*lf)->nlookup = 1;
	}
	snprintf(name, sizeof(name), "#%" PRIu64, in->ino);
	snprintf(path, sizeof(path), "/lost+found/%s", name);
	if (*lf && !zm_dent_add(*lf, name, in->ino)) {
		if (zm_is_dir(in))
			in->parent = (*lf)->ino;
		chk_problem(f,
			    (struct zfs_finding){
				    .code = "inode-unreachable",
				    .has = ZFS_FIND_INO | ZFS_FIND_DIR |
					   ZFS_FIND_PATH,
				    .ino = in->ino,
				    .dir = (*lf)->ino,
				    .name = name,
				    .path = path },
			    true,
			     "inode %" PRIu64 " (%s, %" PRIu64 " bytes%s) was not reachable: now /lost+found/%s",
			     in->ino, what, in->size, more, name);
	} else {
		chk_problem(f,
			    (struct zfs_finding){ .code = "inode-unreachable",
						  .has = ZFS_FIND_INO,
						  .ino = in->ino },
			    false,
			     "inode %" PRIu64 " is not reachable and cannot be put in /lost+found",
			     in->ino);
	}
}

/*
 * Reachability and directory structure: walk from the root; every inode
 * must be reached, every directory exactly once and from its parent.
 *
 * Of what the walk did not reach, only the top of each unreachable subtree
 * is reported and named in /lost+found: what is below it comes along
 * (naming each inode would give those a second name). A top is an
 * unreached inode no unreached directory names; a ring of directories
 * naming each other has none, so one of them is taken. The tops are
 * listed before /lost+found is made: making it adds an inode, which may
 * rehash the inode table under an iteration.
 */
static int chk_tree(struct zfs_checker *f)
{
	struct zmeta *m = &f->fs->m;
	uint64_t *queue, *tops, head = 0, tail = 0, i;
	struct zm_inode *lf = NULL;
	int ret = -ENOMEM;

	/* + 1 for /lost+found, made below. */
	queue = calloc(m->nr_inodes + 2, sizeof(*queue));
	tops = calloc(m->nr_inodes + 1, sizeof(*tops));
	if (!queue || !tops)
		goto out_free;
	/*
	 * The visit mark is kept in nlookup, which nothing uses offline.
	 * (fsck runs on a mount no kernel sees.) 1: reached; 2: not reached
	 * but named by a directory not reached either.
	 */
	chk_for_each_inode(m, in) in->nlookup = 0;
	queue[tail++] = ZF_ROOT_INO;
	zm_iget(m, ZF_ROOT_INO)->nlookup = 1;
	while (head < tail) {
		struct zm_inode *dir = zm_iget(m, queue[head++]);
		struct zm_dent *e, *next;

		f->res->dirs++;
		for (e = zm_dir_next(dir, 0); e; e = next) {
			struct zm_inode *c = zm_iget(m, e->ino);

			next = zm_dir_next(dir, e->cookie);
			if (!c) {
				/* Nothing to name: the entry goes. */
				chk_problem(f,
					    (struct zfs_finding){
						    .code = "entry-dangling",
						    .has = ZFS_FIND_INO |
							   ZFS_FIND_DIR,
						    .ino = e->ino,
						    .dir = dir->ino,
						    .name = e->name },
					    f->repair,
					     "entry '%s' in directory %" PRIu64 " names inode %" PRIu64 ", which does not exist%s",
					     e->name, dir->ino, e->ino,
					     f->repair ? "; removed" : "");
				if (f->repair)
					zm_dent_del(dir, e);
				continue;
			}
			if (!zm_is_dir(c))
				continue;
			if (c->nlookup) {
				chk_problem(f,
					    (struct zfs_finding){
						    .code = "dir-second-name",
						    .has = ZFS_FIND_INO |
							   ZFS_FIND_DIR,
						    .ino = c->ino,
						    .dir = dir->ino,
						    .name = e->name },
					    false,
					     "directory %" PRIu64 " has a second name '%s' in %" PRIu64,
					     c->ino, e->name, dir->ino);
				continue;
			}
			c->nlookup = 1;
			if (c->parent != dir->ino) {
				chk_problem(f,
					    (struct zfs_finding){
						    .code = "dir-parent",
						    .has = ZFS_FIND_INO |
							   ZFS_FIND_DIR,
						    .ino = c->ino,
						    .dir = dir->ino,
						    .name = e->name },
					    f->repair,
					     "directory %" PRIu64 " ('%s') records parent %" PRIu64 ", but lives in %" PRIu64,
					     c->ino, e->name, c->parent, dir->ino);
				if (f->repair)
					c->parent = dir->ino;
			}
			if (tail <= m->nr_inodes)
				queue[tail++] = c->ino;
		}
		for (e = zm_dir_next(dir, 0); e; e = zm_dir_next(dir, e->cookie)) {
			struct zm_inode *c = zm_iget(m, e->ino);

			if (c)
				c->nlookup = 1;
		}
	}
	chk_for_each_inode(m, in) f->res->inodes++;
	for (;;) {
		uint64_t ntops = 0;

		chk_for_each_inode(m, in)
		{
			struct zm_dent *e;

			if (in->nlookup == 1 || !zm_is_dir(in))
				continue;
			for (e = zm_dir_next(in, 0); e;
			     e = zm_dir_next(in, e->cookie)) {
				struct zm_inode *c = zm_iget(m, e->ino);

				if (c && !c->nlookup)
					c->nlookup = 2;
			}
		}
		chk_for_each_inode(m, in)
		{
			if (!in->nlookup)
				tops[ntops++] = in->ino;
		}
		/* Only rings are left: take one of them. */
		chk_for_each_inode(m, in)
		{
			if (!ntops && in->nlookup == 2)
				tops[ntops++] = in->ino;
		}
		if (!ntops)
			break;
		for (i = 0; i < ntops; i++) {
			struct zm_inode *in = zm_iget(m, tops[i]);

			chk_unreachable(f, in, chk_reach(m, queue, in) - 1,
					 &lf);
		}
		chk_for_each_inode(m, in)
		{
			if (in->nlookup == 2)
				in->nlookup = 0;
		}
	}
	chk_for_each_inode(m, in) in->nlookup = 0;
	ret = 0;
out_free:
	free(tops);
	free(queue);
	return ret;
}

/* Link counts from the entries: files count names, directories 2 + subdirs. */
static void chk_links(struct zfs_checker *f)
{
	struct zmeta *m = &f->fs->m;

	chk_for_each_inode(m, in) in->nlookup = 0;
	chk_for_each_inode(m, in)
	{
		struct zm_dent *e;

		if (!zm_is_dir(in))
			continue;
		in->nlookup += 2;
		for (e = zm_dir_next(in, 0); e; e = zm_dir_next(in, e->cookie)) {
			struct zm_inode *c = zm_iget(m, e->ino);

			if (!c)
				continue; /* reported by chk_tree() */
			if (zm_is_dir(c))
				in->nlookup++;
			else
				c->nlookup++;
		}
	}
	chk_for_each_inode(m, in)
	{
		if (in->nlookup == in->nlink)
			continue;
		chk_problem(f,
			    (struct zfs_finding){ .code = "link-count",
						  .has = ZFS_FIND_INO,
						  .ino = in->ino },
			    f->repair,
			     "inode %" PRIu64 ": link count %u, but %" PRIu64 " found",
			     in->ino, in->nlink, in->nlookup);
		if (f->repair)
			in->nlink = (uint32_t)in->nlookup;
	}
	chk_for_each_inode(m, in) in->nlookup = 0;
}

int zfs_check(struct zfs *fs, bool repair, zfs_finding_fn *say, void *arg,
	      struct zfs_fsck_result *res)
{
	struct zfs_checker f = {
		.fs = fs, .repair = repair, .say = say, .arg = arg, .res = res
	};
	int ret;

	/*
	 * Nothing else touches the metadata yet (mount, before its threads)
	 * or at all (fsck). The repairs change it as records do, under both
	 * locks (a zone whose data they drop is queued for its reset by the
	 * allocator).
	 */
	zlock_wr(&fs->meta_lock, ZLOCK_META);
	zlock_mutex(&fs->alloc_lock, ZLOCK_ALLOC);
	chk_extents(&f);
	chk_failed_zones(&f);
	ret = chk_overlaps(&f);
	if (!ret)
		ret = chk_tree(&f);
	if (!ret)
		chk_links(&f);
	/*
	 * The invariants the code relies on, over the whole set: what the
	 * rules above did not name (extents out of order in a file, one
	 * crossing a zone's end) is still a problem.
	 */
	if (!ret && res->errors == res->fixed) {
		char why[200];

		ret = zm_verify(&fs->m, why, sizeof(why));
		if (ret == -EUCLEAN) {
			chk_problem(&f,
				    (struct zfs_finding){
					    .code = "metadata-invalid" },
				    false, "metadata: %s", why);
			ret = 0;
		}
	}
	zlock_unmutex(&fs->alloc_lock);
	zlock_unrw(&fs->meta_lock);
	return ret;
}
