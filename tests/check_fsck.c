// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Tests of zfs_fsck() (fsck.c) and of what mount and fsck do with bad
 * input, on emulator images, without FUSE.
 *
 * Each invariant is broken on purpose: the metadata is changed in memory
 * through the core's internals (zfs_i.h) and written out as a snapshot
 * with jrnl_roll(), or a record that should never exist is logged with
 * rec_log(). fsck must find it (exit 4 without --repair), fix what it can
 * (exit 1, then a second fsck says 0) and leave the rest (exit 4).
 *
 * Bad input (foreign or damaged superblocks, a journal overwritten with
 * junk, a truncated image, records fuzzed with valid CRCs) must give a
 * clear error, never a crash; the ASan build runs these too.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "zfs_i.h"
#include "zonefuse/crc32c.h"
#include "zonefuse/util.h"

#define NZONES 48u

static void setup(void)
{
	struct zemu_params p = {
		.size = NZONES * TU_MIB,
		.zone_size = TU_MIB,
		.block_size = 4096,
	};

	tu_img_setup();
	tu_mkfs_image(tu_img, &p);
}

/* ---- running fsck ---------------------------------------------------------- */

/* What fsck said, finding by finding: the text and the code. */
struct said {
	char line[32][512];
	char code[32][32];
	struct zfs_finding f[32]; /* its strings are gone: numbers only */
	unsigned int n;
};

static void say(void *arg, const struct zfs_finding *f)
{
	struct said *s = arg;

	printf("  fsck: [%s] %s\n", f->code, f->text);
	if (s->n < ZF_ARRAY_SIZE(s->line)) {
		snprintf(s->line[s->n], sizeof(s->line[0]), "%s", f->text);
		snprintf(s->code[s->n], sizeof(s->code[0]), "%s", f->code);
		s->f[s->n] = *f;
		s->f[s->n].inos = NULL;
		s->f[s->n].name = s->f[s->n].path = s->f[s->n].text = NULL;
		s->n++;
	}
}

/* The first finding of code @code, or NULL. */
static const struct zfs_finding *said_code(const struct said *s,
					   const char *code)
{
	unsigned int i;

	for (i = 0; i < s->n; i++)
		if (!strcmp(s->code[i], code))
			return &s->f[i];
	return NULL;
}

static unsigned int said_count(const struct said *s, const char *needle)
{
	unsigned int i, n = 0;

	for (i = 0; i < s->n; i++)
		n += strstr(s->line[i], needle) != NULL;
	return n;
}

struct run {
	int ret;
	struct zfs_fsck_result res;
	struct said said;
	char err[512];
};

static void fsck(bool repair, struct run *r)
{
	memset(r, 0, sizeof(*r));
	r->ret = zfs_fsck(tu_img, repair, say, &r->said, &r->res, r->err,
			  sizeof(r->err));
	printf("fsck%s: %d, %u errors, %u fixed%s%s\n",
	       repair ? " --repair" : "", r->ret, r->res.errors, r->res.fixed,
	       r->err[0] ? ": " : "", r->err);
}

/*
 * What fsck finds, the mount finds too (they run one check): a writable
 * mount is refused, and a read-only one serves the file system as it is.
 */
static void mount_refuses(void)
{
	struct zfs *fs;

	tu_mount_refused(tu_img);
	fs = tu_mount(tu_img, true);
	tu_unmount(fs);
}

/*
 * The finding @needle is reported without --repair (exit 4) and refused
 * by a writable mount, fixed by --repair (exit 1), and gone after (exit
 * 0).
 */
static void detected_and_fixed(const char *needle)
{
	struct run r;

	mount_refuses();
	fsck(false, &r);
	ck_assert_int_eq(r.ret, ZFS_FSCK_UNFIXED);
	ck_assert_uint_ge(r.res.errors, 1);
	ck_assert_uint_eq(r.res.fixed, 0);
	ck_assert_msg(said_count(&r.said, needle), "fsck did not say \"%s\"",
		      needle);
	fsck(true, &r);
	ck_assert_int_eq(r.ret, ZFS_FSCK_FIXED);
	ck_assert_uint_eq(r.res.fixed, r.res.errors);
	ck_assert_msg(said_count(&r.said, needle), "fsck --repair did not say \"%s\"",
		      needle);
	fsck(false, &r);
	ck_assert_int_eq(r.ret, ZFS_FSCK_OK);
	ck_assert_uint_eq(r.res.errors, 0);
	/* And a repaired file system mounts writable and takes changes. */
	{
		struct zfs *fs = tu_mount(tu_img, false);

		TU_OK(tu_mkdir(fs, "/after-repair", 0755));
		tu_unmount(fs);
	}
	fsck(false, &r);
	ck_assert_int_eq(r.ret, ZFS_FSCK_OK);
}

/* A few of everything: /d/f (data, 2 names), /d/sub, /g, /l. */
static void populate(struct zfs *fs)
{
	TU_OK(tu_mkdir(fs, "/d", 0755));
	TU_OK(tu_mkdir(fs, "/d/sub", 0755));
	TU_OK(tu_write(fs, "/d/f", 0, 40000, 1));
	TU_OK(tu_write(fs, "/g", 0, 10000, 2));
	TU_OK(tu_link(fs, "/d/f", "/d/sub/f2"));
	TU_OK(tu_symlink(fs, "/l", "d/f"));
	TU_OK(tu_setxattr(fs, "/g", "user.x", "y", 1));
	TU_OK(zfs_sync(fs));
}

/*
 * The inode at @path, to change behind the core's back. Not with meta_lock
 * held: the lookup takes it (an inode stays put while nothing frees it).
 */
static struct zm_inode *inode_at(struct zfs *fs, const char *path)
{
	int64_t ino = tu_ino(fs, path);
	struct zm_inode *in;

	ck_assert_msg(ino > 0, "%s: %" PRId64, path, ino);
	in = zm_iget(&fs->m, (uint64_t)ino);
	ck_assert_ptr_nonnull(in);
	return in;
}

/* Write the in-memory state (with what the test broke) as a snapshot. */
static void write_broken(struct zfs *fs, bool clean)
{
	/* Broken on purpose: not a bug of the session (zfs_verify()). */
	fs->verified = false;
	TU_OK(jrnl_roll(fs->j));
	if (clean)
		tu_unmount(fs);
	else
		zfs_crash(fs);
}

/* ---- a clean file system ----------------------------------------------------- */

START_TEST(test_clean)
{
	struct zfs *fs;
	struct run r;

	fsck(false, &r);
	ck_assert_int_eq(r.ret, ZFS_FSCK_OK);
	ck_assert_uint_eq(r.res.inodes, 1);
	ck_assert(r.res.clean_tail);

	fs = tu_mount(tu_img, false);
	populate(fs);
	tu_unmount(fs);
	fsck(false, &r);
	ck_assert_int_eq(r.ret, ZFS_FSCK_OK);
	ck_assert_uint_eq(r.res.errors, 0);
	ck_assert_uint_eq(r.res.inodes, 6);
	ck_assert_uint_eq(r.res.dirs, 3);
	ck_assert_uint_ge(r.res.extents, 2);
	ck_assert_uint_gt(r.res.log_records, 0);
	ck_assert(r.res.clean_tail);
	ck_assert_str_eq(r.err, "");
	fsck(true, &r);
	ck_assert_int_eq(r.ret, ZFS_FSCK_OK);
	ck_assert_uint_eq(r.res.fixed, 0);

	/* After a crash: clean too, and it says the tail was not. */
	fs = tu_mount(tu_img, false);
	TU_OK(tu_write(fs, "/h", 0, 5000, 3));
	TU_OK(zfs_sync(fs));
	zfs_crash(fs);
	fsck(false, &r);
	ck_assert_int_eq(r.ret, ZFS_FSCK_OK);
	ck_assert(!r.res.clean_tail);
	ck_assert_uint_eq(said_count(&r.said, "not cleanly unmounted"), 1);
	ck_assert_uint_eq(r.res.inodes, 7);
}
END_TEST

/* ---- planted problems ---------------------------------------------------------- */

static void nlink_case(bool clean)
{
	struct zfs *fs = tu_mount(tu_img, false);
	struct zm_inode *f, *d;
	struct stat st;

	populate(fs);
	f = inode_at(fs, "/d/f");
	d = inode_at(fs, "/d");
	zlock_wr(&fs->meta_lock, ZLOCK_META);
	f->nlink = 5; /* it has 2 names */
	d->nlink = 7; /* it has 1 subdirectory */
	zlock_unrw(&fs->meta_lock);
	write_broken(fs, clean);
	detected_and_fixed("link count");

	fs = tu_mount(tu_img, true);
	TU_OK(zfs_getattr(fs, (uint64_t)tu_ino(fs, "/d/f"), &st));
	ck_assert_uint_eq(st.st_nlink, 2);
	TU_OK(zfs_getattr(fs, (uint64_t)tu_ino(fs, "/d"), &st));
	ck_assert_uint_eq(st.st_nlink, 3);
	TU_OK(tu_verify(fs, "/d/sub/f2", 0, 40000, 1));
	tu_unmount(fs);
}

START_TEST(test_nlink)
{
	nlink_case(true);
}
END_TEST

START_TEST(test_nlink_unclean)
{
	nlink_case(false);
}
END_TEST

/*
 * Each finding has a stable code and names what it concerns: a wrong
 * link count is "link-count" on its inode, an error, fixed only by a
 * repair; an unclean journal is a "journal-unclean" note.
 */
START_TEST(test_codes)
{
	struct zfs *fs = tu_mount(tu_img, false);
	const struct zfs_finding *w;
	struct zm_inode *f;
	uint64_t ino;
	struct run r;

	populate(fs);
	f = inode_at(fs, "/g");
	ino = f->ino;
	zlock_wr(&fs->meta_lock, ZLOCK_META);
	f->nlink = 3;
	zlock_unrw(&fs->meta_lock);
	write_broken(fs, false);
	fsck(false, &r);
	w = said_code(&r.said, "link-count");
	ck_assert_ptr_nonnull(w);
	ck_assert_uint_eq(w->has, ZFS_FIND_INO);
	ck_assert_uint_eq(w->ino, ino);
	ck_assert_int_eq(w->severity, ZFS_SEV_ERROR);
	ck_assert(!w->fixed);
	w = said_code(&r.said, "journal-unclean");
	ck_assert_ptr_nonnull(w);
	ck_assert_int_eq(w->severity, ZFS_SEV_NOTE);
	fsck(true, &r);
	w = said_code(&r.said, "link-count");
	ck_assert_ptr_nonnull(w);
	ck_assert(w->fixed);
	ck_assert_uint_eq(w->ino, ino);
}
END_TEST

static int count_fill(void *arg, const char *name, const struct stat *st,
		      off_t next)
{
	(void)st;
	(void)next;
	if (strcmp(name, ".") && strcmp(name, ".."))
		(*(uint32_t *)arg)++;
	return 0;
}

static uint32_t count_entries(struct zfs *fs, const char *path)
{
	int64_t ino = tu_ino(fs, path);
	uint32_t n = 0;

	ck_assert_int_gt(ino, 0);
	TU_OK(zfs_readdir(fs, (uint64_t)ino, 0, false, count_fill, &n));
	return n;
}

/*
 * A file and a directory (with a file in it) nobody names: they go to
 * /lost+found, the directory with what it holds.
 */
START_TEST(test_unreachable)
{
	struct zfs *fs = tu_mount(tu_img, false);
	int64_t f, sub, lf, dotdot = 0;
	struct zm_inode *d;
	struct stat st;
	struct run r;
	char p[64];

	populate(fs);
	TU_OK(tu_unlink(fs, "/d/sub/f2"));
	TU_OK(tu_write(fs, "/d/sub/inner", 0, 3000, 4));
	TU_OK(zfs_sync(fs));
	f = tu_ino(fs, "/d/f");
	sub = tu_ino(fs, "/d/sub");
	d = inode_at(fs, "/d");
	zlock_wr(&fs->meta_lock, ZLOCK_META);
	zm_dent_del(d, zm_lookup(d, "f", 1));
	zm_dent_del(d, zm_lookup(d, "sub", 3));
	zlock_unrw(&fs->meta_lock);
	write_broken(fs, true);

	/* Two tops; what is in the directory comes with it. */
	fsck(false, &r);
	ck_assert_int_eq(r.ret, ZFS_FSCK_UNFIXED);
	ck_assert_uint_eq(said_count(&r.said, "not reachable"), 2);
	ck_assert_uint_eq(said_count(&r.said, "1 inodes below it"), 1);
	detected_and_fixed("reachable");

	fs = tu_mount(tu_img, true);
	lf = tu_ino(fs, "/lost+found");
	ck_assert_int_gt(lf, 0);
	snprintf(p, sizeof(p), "/lost+found/#%" PRId64, f);
	ck_assert_int_eq(tu_ino(fs, p), f);
	TU_OK(tu_verify(fs, p, 0, 40000, 1));
	snprintf(p, sizeof(p), "/lost+found/#%" PRId64 "/inner", sub);
	TU_OK(tu_verify(fs, p, 0, 3000, 4));
	TU_OK(zfs_getattr(fs, (uint64_t)tu_ino(fs, p), &st));
	ck_assert_uint_eq(st.st_nlink, 1); /* not a second name */
	ck_assert_uint_eq(count_entries(fs, "/lost+found"), 2);
	snprintf(p, sizeof(p), "/lost+found/#%" PRId64 "/..", sub);
	dotdot = tu_ino(fs, p);
	ck_assert_int_eq(dotdot, lf);
	TU_OK(zfs_getattr(fs, (uint64_t)lf, &st));
	ck_assert_uint_eq(st.st_nlink, 3);
	TU_OK(zfs_getattr(fs, (uint64_t)tu_ino(fs, "/d"), &st));
	ck_assert_uint_eq(st.st_nlink, 2);
	tu_unmount(fs);
}
END_TEST

/*
 * Log an EXTENT record by hand, as the core would (rec_log()). The records
 * these tests log are what fsck must find: the state no longer verifies,
 * and a checking build must not take that for a bug of the session at
 * unmount (zfs_verify()).
 */
static void log_extent(struct zfs *fs, uint64_t ino, uint64_t foff,
		       uint64_t addr, uint64_t len, uint64_t size)
{
	struct {
		struct zf_rec_extent rec;
		uint32_t csum[64];
	} r = { .rec = {
		.ino = htole64(ino),
		.foff = htole64(foff),
		.addr = htole64(addr),
		.len = htole64(len),
		.size = htole64(size),
		.mtime = (int64_t)htole64((uint64_t)zutil_now_real_ns()),
	} };
	uint32_t n = ZF_CSUMS(addr, len, fs->bs), i;
	char *blk = zdev_buf_alloc(fs->dev, fs->bs);

	/* The checksums of what the device holds there (zeros if nothing). */
	ck_assert_uint_le(n, ZF_ARRAY_SIZE(r.csum));
	ck_assert_ptr_nonnull(blk);
	for (i = 0; i < n; i++) {
		uint64_t a = ZF_ROUND_DOWN(addr, fs->bs) + (uint64_t)i * fs->bs;

		TU_OK(zdev_read(fs->dev, blk, fs->bs, a));
		r.csum[i] = htole32(crc32c(0, blk, fs->bs));
	}
	free(blk);
	zlock_wr(&fs->meta_lock, ZLOCK_META);
	TU_OK(rec_log(fs, ZF_REC_EXTENT, &r,
		      (uint32_t)(sizeof(r.rec) + n * sizeof(r.csum[0]))));
	zlock_unrw(&fs->meta_lock);
	fs->verified = false;
}

/*
 * fsck --repair of a sound file system that was not unmounted cleanly
 * changes nothing and exits 0: fsck(8)'s 1 means the image was changed.
 */
START_TEST(test_repair_sound_untouched)
{
	struct zfs *fs = tu_mount(tu_img, false);
	char before[PATH_MAX + 8];
	struct run r;

	populate(fs);
	zfs_crash(fs);
	snprintf(before, sizeof(before), "%s.before", tu_img);
	tu_copy_file(tu_img, before);
	fsck(true, &r);
	ck_assert_int_eq(r.ret, ZFS_FSCK_OK);
	ck_assert_uint_eq(r.res.errors, 0);
	ck_assert_msg(said_count(&r.said, "not cleanly unmounted"),
		      "fsck --repair did not say the log was unclean");
	ck_assert_msg(tu_files_equal(tu_img, before),
		      "fsck --repair of a sound image changed it");
	unlink(before);
}
END_TEST

/* An extent naming device space never written: above the write pointer. */
START_TEST(test_extent_above_wp)
{
	struct zfs *fs = tu_mount(tu_img, false);
	uint32_t zone = NZONES - 1;
	int64_t ino;

	populate(fs);
	TU_OK(tu_write(fs, "/ghost", 0, 4096, 5));
	TU_OK(zfs_sync(fs));
	ino = tu_ino(fs, "/ghost");
	/* The last zone never written (the mirror chain starts at the end). */
	while (zone && (fs->m.zones[zone].state != ZM_ZONE_FREE ||
			fs->m.zones[zone].wp != fs->m.zones[zone].start))
		zone--;
	ck_assert_uint_eq(fs->m.zones[zone].state, ZM_ZONE_FREE);
	ck_assert_uint_eq(fs->m.zones[zone].wp, fs->m.zones[zone].start);
	log_extent(fs, (uint64_t)ino, 8192, fs->m.zones[zone].start, 8192,
		   16384);
	TU_OK(zfs_sync(fs));
	tu_unmount(fs);

	/* Read-only, the range the device never got reads as EIO. */
	fs = tu_mount(tu_img, true);
	ck_assert_int_eq(tu_verify(fs, "/ghost", 0, 4096, 5), 0);
	ck_assert_int_eq(tu_verify(fs, "/ghost", 8192, 4096, 5), -EIO);
	tu_unmount(fs);

	detected_and_fixed("write pointer");
	fs = tu_mount(tu_img, true);
	/*
	 * The file is cut where its data stops: it reads short, never
	 * zeros passed off as its bytes; the real data is untouched.
	 */
	TU_OK(tu_verify(fs, "/ghost", 0, 4096, 5));
	TU_OK(tu_verify(fs, "/ghost", 4096, 4096, 0)); /* its own hole */
	ck_assert_int_eq(tu_verify(fs, "/ghost", 8192, 4096, 0), -EILSEQ);
	{
		struct stat st;

		TU_OK(zfs_getattr(fs, (uint64_t)ino, &st));
		ck_assert_int_eq(st.st_size, 8192);
	}
	ck_assert_uint_eq(fs->m.zones[zone].valid, 0);
	tu_unmount(fs);
}
END_TEST

/* The zone of extent @k of @path (the last one if @k is past it). */
static uint32_t zone_of(struct zfs *fs, const char *path, uint32_t k)
{
	struct zm_inode *in = inode_at(fs, path);

	ck_assert_uint_gt(in->f.n_ext, 0);
	k = ZF_MIN(k, in->f.n_ext - 1);
	return zm_zone_of(&fs->m, in->f.ext[k].addr);
}

/*
 * A zone holding file data that the device made read-only or offline: a
 * warning naming the inode (exit 0, nothing to repair), and the rest of the
 * file system mounts writable.
 */
static void failed_zone_case(enum zdev_zone_cond cond, const char *words)
{
	struct zfs *fs = tu_mount(tu_img, false);
	uint32_t zone;
	int64_t ino;
	char want[64];
	struct run r;

	populate(fs);
	/* 2.5 zones: its middle extent fills a zone of its own. */
	TU_OK(tu_write(fs, "/big", 0, 5 * TU_MIB / 2, 4));
	TU_OK(zfs_sync(fs));
	zone = zone_of(fs, "/big", 1);
	ino = tu_ino(fs, "/big");
	ck_assert_uint_ne(zone_of(fs, "/g", 0), zone);
	ck_assert_uint_ne(zone_of(fs, "/d/f", 0), zone);
	TU_OK(zemu_set_cond(zfs_dev(fs), zone, cond));
	tu_unmount(fs);

	fsck(false, &r);
	ck_assert_int_eq(r.ret, ZFS_FSCK_OK);
	ck_assert_uint_eq(r.res.errors, 0);
	ck_assert_uint_eq(r.res.warnings, 1);
	snprintf(want, sizeof(want), "zone %u is %s", zone, words);
	ck_assert_msg(said_count(&r.said, want), "fsck did not say \"%s\"",
		      want);
	snprintf(want, sizeof(want), "(inode %" PRId64 ")", ino);
	ck_assert_msg(said_count(&r.said, want), "fsck did not say \"%s\"",
		      want);
	fsck(true, &r);
	ck_assert_int_eq(r.ret, ZFS_FSCK_OK);
	ck_assert_uint_eq(r.res.fixed, 0);

	fs = tu_mount(tu_img, false);
	ck_assert_uint_eq(fs->m.zones[zone].state, ZM_ZONE_BAD);
	TU_OK(tu_verify(fs, "/g", 0, 10000, 2));
	if (cond == ZDEV_COND_READONLY)
		TU_OK(tu_verify(fs, "/big", 0, 5 * TU_MIB / 2, 4));
	else
		ck_assert_int_eq(tu_verify(fs, "/big", 0, 5 * TU_MIB / 2, 4),
				 -EIO);
	TU_OK(tu_write(fs, "/after", 0, 300000, 5));
	TU_OK(zfs_sync(fs));
	ck_assert_uint_ne(zone_of(fs, "/after", 0), zone);
	tu_unmount(fs);
	fsck(false, &r);
	ck_assert_int_eq(r.ret, ZFS_FSCK_OK);
	ck_assert_uint_eq(r.res.warnings, 1);
}

START_TEST(test_zone_readonly)
{
	failed_zone_case(ZDEV_COND_READONLY, "read-only");
}
END_TEST

START_TEST(test_zone_offline)
{
	failed_zone_case(ZDEV_COND_OFFLINE, "offline");
}
END_TEST

/* A directory whose ".." names the wrong directory, or none at all. */
START_TEST(test_parent_pointer)
{
	struct zfs *fs = tu_mount(tu_img, false);
	struct zm_inode *c, *e;
	int64_t a, b;

	TU_OK(tu_mkdir(fs, "/a", 0755));
	TU_OK(tu_mkdir(fs, "/b", 0755));
	TU_OK(tu_mkdir(fs, "/a/c", 0755));
	TU_OK(tu_mkdir(fs, "/b/e", 0755));
	a = tu_ino(fs, "/a");
	b = tu_ino(fs, "/b");
	c = inode_at(fs, "/a/c");
	e = inode_at(fs, "/b/e");
	zlock_wr(&fs->meta_lock, ZLOCK_META);
	c->parent = (uint64_t)b;
	e->parent = 999999; /* no such inode */
	zlock_unrw(&fs->meta_lock);
	write_broken(fs, true);

	{
		struct run r;

		fsck(false, &r);
		ck_assert_uint_eq(said_count(&r.said, "records parent"), 2);
	}
	detected_and_fixed("records parent");
	fs = tu_mount(tu_img, true);
	ck_assert_int_eq(tu_ino(fs, "/a/c/.."), a);
	ck_assert_int_eq(tu_ino(fs, "/b/e/.."), b);
	tu_unmount(fs);
}
END_TEST

/*
 * An entry naming an inode that does not exist. A snapshot cannot hold
 * one (the load refuses it), but the log can make one from a bad link
 * count: a file with two names recorded with one link loses its inode at
 * the first unlink, and the other name points at nothing. fsck removes it.
 */
START_TEST(test_dangling_entry)
{
	struct zfs *fs = tu_mount(tu_img, false);
	struct zm_inode *f;
	struct run r;
	uint64_t ino;

	populate(fs);
	f = inode_at(fs, "/d/f"); /* also /d/sub/f2 */
	ino = f->ino;
	zlock_wr(&fs->meta_lock, ZLOCK_META);
	f->nlink = 1;
	zlock_unrw(&fs->meta_lock);
	TU_OK(jrnl_roll(fs->j));
	TU_OK(tu_unlink(fs, "/d/f")); /* the inode goes with it */
	ck_assert(tu_wait_freed(fs, ino));
	TU_OK(zfs_sync(fs));
	tu_unmount(fs);

	fsck(false, &r);
	ck_assert_uint_eq(said_count(&r.said, "which does not exist"), 1);
	detected_and_fixed("which does not exist");
	fs = tu_mount(tu_img, true);
	ck_assert_int_eq(tu_ino(fs, "/d/sub/f2"), -ENOENT);
	ck_assert_uint_eq(count_entries(fs, "/d/sub"), 0);
	tu_unmount(fs);
}
END_TEST

/* A file whose extents reach past its size. */
START_TEST(test_extent_past_size)
{
	struct zfs *fs = tu_mount(tu_img, false);
	struct zm_inode *g;

	populate(fs);
	g = inode_at(fs, "/g");
	zlock_wr(&fs->meta_lock, ZLOCK_META);
	g->size = 100;
	zlock_unrw(&fs->meta_lock);
	write_broken(fs, true);
	detected_and_fixed("past the file size");
	fs = tu_mount(tu_img, true);
	TU_OK(tu_verify(fs, "/g", 0, 96, 2));
	tu_unmount(fs);
}
END_TEST

/*
 * Two files mapping the same device bytes: found, not fixable (which one
 * owns the data is not knowable). Three files: x holds 16 KiB, y maps its
 * second block and z its fourth; both overlaps are reported.
 */
START_TEST(test_shared_bytes)
{
	struct zfs *fs = tu_mount(tu_img, false);
	struct zm_inode *x;
	int64_t y, z;
	uint64_t a;
	struct run r;
	char yname[32], zname[32];

	TU_OK(tu_write(fs, "/x", 0, 16384, 1));
	TU_OK(tu_write(fs, "/y", 0, 4096, 2));
	TU_OK(tu_write(fs, "/z", 0, 4096, 3));
	TU_OK(zfs_sync(fs));
	x = inode_at(fs, "/x");
	ck_assert_uint_eq(x->f.n_ext, 1);
	a = x->f.ext[0].addr;
	y = tu_ino(fs, "/y");
	z = tu_ino(fs, "/z");
	log_extent(fs, (uint64_t)y, 0, a + 4096, 4096, 4096);
	log_extent(fs, (uint64_t)z, 0, a + 12288, 4096, 4096);
	TU_OK(zfs_sync(fs));
	tu_unmount(fs);

	snprintf(yname, sizeof(yname), " %" PRId64 " both map", y);
	snprintf(zname, sizeof(zname), " %" PRId64 " both map", z);
	fsck(false, &r);
	ck_assert_int_eq(r.ret, ZFS_FSCK_UNFIXED);
	ck_assert_uint_eq(said_count(&r.said, "both map"), 2);
	ck_assert_uint_eq(said_count(&r.said, yname), 1);
	ck_assert_uint_eq(said_count(&r.said, zname), 1);
	fsck(true, &r);
	ck_assert_int_eq(r.ret, ZFS_FSCK_UNFIXED);
	ck_assert_uint_eq(r.res.fixed, 0);
	ck_assert_uint_eq(said_count(&r.said, "(not fixed)"), 2);
	fsck(false, &r);
	ck_assert_int_eq(r.ret, ZFS_FSCK_UNFIXED);
	/* The data is still readable where each file says it is. */
	fs = tu_mount(tu_img, true);
	TU_OK(tu_verify(fs, "/x", 0, 16384, 1));
	tu_unmount(fs);
}
END_TEST

/* ---- bad input: clear errors, no crash --------------------------------------- */

/* zfs_mount must fail with @err_want, and fsck with @fsck_want. */
static void refused(int err_want, const char *msg_want, int fsck_want)
{
	struct zfs *fs = NULL;
	char err[512] = "";
	struct run r;
	int ret;

	ret = zfs_mount(tu_img, NULL, &fs, err, sizeof(err));
	printf("mount: %d: %s\n", ret, err);
	ck_assert_msg(ret == err_want, "mount returned %d (%s), not %d", ret,
		      err, err_want);
	ck_assert_msg(strstr(err, msg_want), "mount said \"%s\"", err);
	ck_assert_msg(strstr(err, tu_img), "the message does not name %s", tu_img);
	fsck(false, &r);
	ck_assert_int_eq(r.ret, fsck_want);
	ck_assert_msg(r.err[0], "fsck gave no reason");
	fsck(true, &r);
	ck_assert_int_eq(r.ret, fsck_want);
}

START_TEST(test_foreign)
{
	struct zemu_params p = { .size = NZONES * TU_MIB, .zone_size = TU_MIB,
				 .block_size = 4096 };
	struct zdev *dev;
	char *buf, err[256];
	uint32_t z;

	/* A blank device. */
	unlink(tu_img);
	tu_make_image(tu_img, &p);
	refused(-EMEDIUMTYPE, "no zonefuse file system", ZFS_FSCK_OPERROR);

	/* Another user's data in the first zones, through the device. */
	TU_OK(zdev_open(tu_img, 0, &dev, err, sizeof(err)));
	buf = zdev_buf_alloc(dev, 64 << 10);
	for (z = 0; z < 4; z++) {
		tu_random(buf, 64 << 10, z);
		TU_OK(zdev_write(dev, buf, 64 << 10, z * TU_MIB));
	}
	TU_OK(zdev_flush(dev));
	zdev_close(dev);
	free(buf);
	refused(-EMEDIUMTYPE, "no zonefuse file system", ZFS_FSCK_OPERROR);

	/* What is there is not zonefuse: mkfs takes the device without --force. */
	{
		struct zfs_mkfs_opts o = { .reserve_pct = -1 };
		struct zfs *fs;

		TU_OK(zfs_mkfs(tu_img, &o, NULL, err, sizeof(err)));
		fs = tu_mount(tu_img, false);
		tu_unmount(fs);
	}
}
END_TEST

/* Random bytes over the superblocks of a formatted device. */
START_TEST(test_foreign_over_fs)
{
	char junk[4096];
	struct zfs *fs = tu_mount(tu_img, true);
	uint32_t s0 = le32toh(fs->sb.super_zone[0]);
	uint32_t s1 = le32toh(fs->sb.super_zone[1]);

	tu_unmount(fs);
	tu_random(junk, sizeof(junk), 1);
	tu_image_write(tu_img, s0 * TU_MIB, junk, sizeof(junk));
	tu_random(junk, sizeof(junk), 2);
	tu_image_write(tu_img, s1 * TU_MIB, junk, sizeof(junk));
	refused(-EMEDIUMTYPE, "no zonefuse file system", ZFS_FSCK_OPERROR);
}
END_TEST

/*
 * A superblock whose CRC fails. Both copies: -EUCLEAN, "damaged". One
 * copy: the other one is there for that, the file system mounts; fsck
 * reports the bad copy (exit 4), --repair writes it anew (exit 1), and a
 * writable mount does the same by itself.
 */
START_TEST(test_superblock_crc)
{
	struct zfs *fs = tu_mount(tu_img, false);
	uint32_t s0 = le32toh(fs->sb.super_zone[0]);
	uint32_t s1 = le32toh(fs->sb.super_zone[1]);
	uint64_t label = offsetof(struct zf_super, label);
	struct run r;

	populate(fs);
	TU_OK(jrnl_roll(fs->j)); /* anchors in the first super zone */
	tu_unmount(fs);

	tu_image_flip(tu_img, s1 * TU_MIB + label);
	fs = tu_mount(tu_img, true);
	TU_OK(tu_verify(fs, "/d/f", 0, 40000, 1));
	ck_assert(fs->replay.super_damaged);
	tu_unmount(fs);
	fsck(false, &r);
	ck_assert_int_eq(r.ret, ZFS_FSCK_UNFIXED);
	ck_assert_uint_eq(said_count(&r.said, "superblock"), 1);
	{
		char copy[PATH_MAX + 8];

		snprintf(copy, sizeof(copy), "%s.copy", tu_img);
		tu_copy_file(tu_img, copy);
		fsck(true, &r);
		ck_assert_int_eq(r.ret, ZFS_FSCK_FIXED);
		fsck(false, &r);
		ck_assert_int_eq(r.ret, ZFS_FSCK_OK);
		/* The mount heals it too. */
		tu_copy_file(copy, tu_img);
		unlink(copy);
		fs = tu_mount(tu_img, false);
		tu_unmount(fs);
		fsck(false, &r);
		ck_assert_int_eq(r.ret, ZFS_FSCK_OK);
	}

	tu_image_flip(tu_img, s0 * TU_MIB + label);
	fs = tu_mount(tu_img, true);
	TU_OK(tu_verify(fs, "/d/f", 0, 40000, 1));
	tu_unmount(fs);

	tu_image_flip(tu_img, s1 * TU_MIB + label);
	refused(-EUCLEAN, "CRC", ZFS_FSCK_UNFIXED);
}
END_TEST

/* An unknown incompatible feature or version: -ENOTSUP, said so. */
/*
 * Rewrite both superblock copies with @version and @incompat, their CRCs
 * made good: what a zonefuse of another format would have written.
 */
static void superblocks_as(uint32_t version, uint64_t incompat)
{
	struct zfs *fs = tu_mount(tu_img, true);
	uint32_t sz[2] = { le32toh(fs->sb.super_zone[0]),
			   le32toh(fs->sb.super_zone[1]) };
	struct zf_super sb;
	uint32_t i;

	tu_unmount(fs);
	for (i = 0; i < 2; i++) {
		tu_image_read(tu_img, sz[i] * TU_MIB, &sb, sizeof(sb));
		sb.version = htole32(version);
		sb.feat_incompat = htole64(incompat);
		sb.crc = 0;
		sb.crc = htole32(crc32c(0, &sb, sizeof(sb)));
		tu_image_write(tu_img, sz[i] * TU_MIB, &sb, sizeof(sb));
	}
}

START_TEST(test_superblock_unknown)
{
	superblocks_as(ZF_FORMAT_VERSION, 1ull << 40);
	refused(-ENOTSUP, "not supported", ZFS_FSCK_OPERROR);
}
END_TEST

/*
 * A file system of format 1 (no data checksums) is refused, with what to
 * do, by mount and fsck alike.
 */
START_TEST(test_superblock_old_version)
{
	superblocks_as(1, 0);
	refused(-ENOTSUP, "made by an older zonefuse", ZFS_FSCK_OPERROR);
}
END_TEST

/* The used part of every zone of the journal's chain, as [start, wp). */
struct span {
	uint64_t start, end;
};

/* The written part of each zone of copy @copy of the chain. */
static uint32_t chain_spans(unsigned int copy, struct span *sp, uint32_t max)
{
	struct zfs *fs = tu_mount(tu_img, true);
	uint32_t zones[64], n, i;

	n = jrnl_chain(fs->j, copy, zones, ZF_MIN(max, 64u));
	for (i = 0; i < n; i++) {
		sp[i].start = fs->m.zones[zones[i]].start;
		sp[i].end = fs->m.zones[zones[i]].wp;
	}
	tu_unmount(fs);
	return n;
}

static void junk_spans(const struct span *sp, uint32_t n, char *junk)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		tu_random(junk, TU_MIB, i);
		tu_image_write(tu_img, sp[i].start, junk, sp[i].end - sp[i].start);
	}
}

START_TEST(test_journal_junk)
{
	struct zemu_params p = {
		.size = NZONES * TU_MIB,
		.zone_size = TU_MIB,
		.block_size = 4096,
	};
	struct zfs *fs;
	struct span sp[8], msp[8];
	uint32_t s0, s1, n, mn;
	char *junk, *want, *got;
	struct run r;

	unlink(tu_img);
	tu_mkfs_image_copies(tu_img, &p, 2);
	fs = tu_mount(tu_img, false);
	populate(fs);
	s0 = le32toh(fs->sb.super_zone[0]);
	s1 = le32toh(fs->sb.super_zone[1]);
	want = tu_digest(fs);
	tu_unmount(fs);
	n = chain_spans(0, sp, ZF_ARRAY_SIZE(sp));
	mn = chain_spans(1, msp, ZF_ARRAY_SIZE(msp));
	ck_assert_uint_ge(n, 1);
	ck_assert_uint_eq(mn, n);
	junk = malloc(TU_MIB);
	ck_assert_ptr_nonnull(junk);

	/*
	 * Junk over the primary copy's zone headers and snapshot: the mirror
	 * serves, fsck reports the copy, --repair writes both anew.
	 */
	junk_spans(sp, n, junk);
	fsck(false, &r);
	ck_assert_int_eq(r.ret, ZFS_FSCK_UNFIXED);
	ck_assert_uint_ge(r.res.copies_bad, 1);
	ck_assert_msg(said_count(&r.said, "the primary copy of the metadata chain"),
		      "fsck did not name the damaged copy");
	fsck(true, &r);
	ck_assert_int_eq(r.ret, ZFS_FSCK_FIXED);
	fsck(false, &r);
	ck_assert_int_eq(r.ret, ZFS_FSCK_OK);
	fs = tu_mount(tu_img, true);
	got = tu_digest(fs);
	ck_assert_str_eq(got, want);
	free(got);
	tu_unmount(fs);

	/* The same over the mirror's: a writable mount heals it. */
	n = chain_spans(0, sp, ZF_ARRAY_SIZE(sp));
	mn = chain_spans(1, msp, ZF_ARRAY_SIZE(msp));
	junk_spans(msp, mn, junk);
	fs = tu_mount(tu_img, false);
	ck_assert(fs->replay.copy_damaged);
	got = tu_digest(fs);
	ck_assert_str_eq(got, want);
	free(got);
	tu_unmount(fs);
	fsck(false, &r);
	ck_assert_int_eq(r.ret, ZFS_FSCK_OK);
	free(want);

	/* Junk over both copies: unmountable. */
	n = chain_spans(0, sp, ZF_ARRAY_SIZE(sp));
	mn = chain_spans(1, msp, ZF_ARRAY_SIZE(msp));
	junk_spans(sp, n, junk);
	junk_spans(msp, mn, junk);
	refused(-EUCLEAN, "snapshot", ZFS_FSCK_UNFIXED);

	/* Junk over the anchors of both super zones (superblocks intact). */
	tu_random(junk, TU_MIB, 99);
	tu_image_write(tu_img, s0 * TU_MIB + 4096, junk, TU_MIB - 4096);
	tu_image_write(tu_img, s1 * TU_MIB + 4096, junk, TU_MIB - 4096);
	refused(-EUCLEAN, "anchor", ZFS_FSCK_UNFIXED);
	free(junk);
}
END_TEST

START_TEST(test_truncated)
{
	struct zfs *fs = tu_mount(tu_img, false);

	populate(fs);
	tu_unmount(fs);
	ck_assert_int_eq(truncate(tu_img, (off_t)(NZONES / 2 * TU_MIB)), 0);
	refused(-EUCLEAN, "truncated", ZFS_FSCK_UNFIXED);
	ck_assert_int_eq(truncate(tu_img, 100), 0);
	refused(-EMEDIUMTYPE, "too small", ZFS_FSCK_OPERROR);
	ck_assert_int_eq(truncate(tu_img, 0), 0);
	refused(-EMEDIUMTYPE, "too small", ZFS_FSCK_OPERROR);
}
END_TEST

/*
 * Records with valid CRCs but nonsense inside (as a bug would write them):
 * a random record of the chain (snapshot or log) gets a few random bytes,
 * its CRC is recomputed, and mount, a walk of everything, and fsck with
 * and without --repair must each end with an answer, not a crash.
 */
struct rec_at {
	uint64_t off; /* device offset of the header */
	uint32_t len; /* payload */
};

static uint32_t find_records(const struct span *sp, uint32_t nsp,
			     struct rec_at *out, uint32_t max)
{
	uint32_t n = 0, i;

	for (i = 0; i < nsp; i++) {
		uint64_t pos = sp[i].start + 4096;

		while (pos + sizeof(struct zf_rec_hdr) <= sp[i].end && n < max) {
			struct zf_rec_hdr h;

			tu_image_read(tu_img, pos, &h, sizeof(h));
			if (!h.crc && !h.type && !h.len) {
				pos = ZF_ROUND_UP(pos + 1, 4096);
				continue;
			}
			out[n].off = pos;
			out[n].len = le32toh(h.len);
			n++;
			pos += sizeof(h) + ZF_ROUND_UP(le32toh(h.len), 8u);
		}
	}
	return n;
}

/* Recompute the CRC of the record at @off over the length it now says. */
static void reseal(uint64_t off)
{
	struct zf_rec_hdr h;
	uint64_t room = NZONES * TU_MIB - off - sizeof(h);
	uint32_t len;
	char *b;

	tu_image_read(tu_img, off, &h, sizeof(h));
	len = (uint32_t)ZF_MIN((uint64_t)le32toh(h.len),
			       ZF_MIN(room, (uint64_t)ZF_REC_MAX));
	b = malloc(sizeof(h) + len);
	ck_assert_ptr_nonnull(b);
	tu_image_read(tu_img, off, b, sizeof(h) + len);
	memset(b, 0, sizeof(h.crc));
	h.crc = htole32(crc32c(0, b, sizeof(h) + len));
	tu_image_write(tu_img, off, &h.crc, sizeof(h.crc));
	free(b);
}

/*
 * A record flag this zonefuse does not know (as a newer one would write):
 * the mount refuses the log there, naming the flags; fsck reports it, and
 * --repair cuts the log at that record.
 */
START_TEST(test_record_flags_unknown)
{
	struct rec_at recs[512];
	struct zf_rec_hdr h;
	struct zfs *fs = NULL;
	char err[512] = "";
	struct span sp[8];
	uint32_t nsp, n;
	struct run r;

	fs = tu_mount(tu_img, false);
	populate(fs);
	TU_OK(zfs_sync(fs));
	zfs_crash(fs);
	nsp = chain_spans(0, sp, ZF_ARRAY_SIZE(sp));
	n = find_records(sp, nsp, recs, ZF_ARRAY_SIZE(recs));
	ck_assert_uint_ge(n, 2);
	tu_image_read(tu_img, recs[n - 1].off, &h, sizeof(h));
	h.flags |= htole16(1u << 3);
	tu_image_write(tu_img, recs[n - 1].off, &h, sizeof(h));
	reseal(recs[n - 1].off);

	ck_assert_int_eq(zfs_mount(tu_img, NULL, &fs, err, sizeof(err)),
			 -EUCLEAN);
	ck_assert_msg(strstr(err, "flags 0x") && strstr(err, tu_img), "%s",
		      err);
	fsck(false, &r);
	ck_assert_int_eq(r.ret, ZFS_FSCK_UNFIXED);
	fsck(true, &r);
	ck_assert_int_eq(r.ret, ZFS_FSCK_FIXED);
	fs = tu_mount(tu_img, false);
	tu_unmount(fs);
	fsck(false, &r);
	ck_assert_int_eq(r.ret, ZFS_FSCK_OK);
}
END_TEST

/* One readdir entry: the first one filled, then stop. */
struct one_ent {
	char name[256];
	off_t next;
	bool got;
};

static int walk_one(void *arg, const char *name, const struct stat *st,
		    off_t next)
{
	struct one_ent *e = arg;

	(void)st;
	if (e->got)
		return 1;
	snprintf(e->name, sizeof(e->name), "%s", name);
	e->next = next;
	e->got = true;
	return 0;
}

/* Visit everything a user could, ignoring errors: it must not crash. */
static void walk(struct zfs *fs, uint64_t ino, unsigned int depth)
{
	struct stat st, cst;
	char buf[4096];

	if (depth > 32 || zfs_getattr(fs, ino, &st))
		return;
	zfs_listxattr(fs, ino, buf, sizeof(buf));
	if (S_ISLNK(st.st_mode))
		zfs_readlink(fs, ino, buf, sizeof(buf));
	if (S_ISREG(st.st_mode) &&
	    !zfs_open(fs, &tu_root_ctx, ino, O_RDONLY, NULL)) {
		off_t off;

		for (off = 0; off < st.st_size && off < (off_t)TU_MIB;
		     off += (off_t)sizeof(buf))
			if (zfs_read(fs, ino, buf, sizeof(buf), off) <= 0)
				break;
		zfs_release(fs, ino, 0);
	}
	/* Every directory is listed, a dangling ".." included. */
	if (S_ISDIR(st.st_mode)) {
		uint32_t n = 0;
		off_t pos = 0;

		/* One entry at a time, as a small readdir buffer would. */
		for (;;) {
			struct one_ent e = { .got = false };

			if (zfs_readdir(fs, ino, pos, false, walk_one, &e) ||
			    !e.got || ++n > 1000)
				break;
			pos = e.next;
			if (!strcmp(e.name, ".") || !strcmp(e.name, ".."))
				continue;
			if (!zfs_lookup(fs, ino, e.name, &cst)) {
				walk(fs, (uint64_t)cst.st_ino, depth + 1);
				zfs_forget(fs, (uint64_t)cst.st_ino, 1);
			}
		}
	}
}

START_TEST(test_fuzz_records)
{
	char base[PATH_MAX];
	struct rec_at *recs = calloc(4096, sizeof(*recs));
	struct span sp[8];
	uint32_t nsp, n, it, mounted = 0, refusedn = 0;
	struct zfs *fs;
	struct run r;
	uint64_t rnd = 12345;

	ck_assert_ptr_nonnull(recs);
	fs = tu_mount(tu_img, false);
	populate(fs);
	TU_OK(jrnl_roll(fs->j)); /* a snapshot with all of it, then a log */
	TU_OK(tu_rename(fs, "/g", "/d/sub/g", 0));
	TU_OK(tu_truncate(fs, "/d/f", 5000));
	TU_OK(tu_write(fs, "/d/new", 0, 9000, 6));
	TU_OK(tu_setxattr(fs, "/d/new", "user.n", "v", 1));
	TU_OK(tu_unlink(fs, "/l"));
	TU_OK(zfs_sync(fs));
	zfs_crash(fs);
	nsp = chain_spans(0, sp, ZF_ARRAY_SIZE(sp));
	n = find_records(sp, nsp, recs, 4096);
	ck_assert_uint_ge(n, 10);
	tu_path(base, sizeof(base), tu_dir, "base.img");
	tu_copy_file(tu_img, base);

	for (it = 0; it < 150; it++) {
		struct rec_at *rc;
		uint32_t k, flips;
		char err[512];
		int ret;

		tu_copy_file(base, tu_img);
		rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
		rc = &recs[(rnd >> 33) % n];
		flips = 1 + (uint32_t)((rnd >> 20) % 4);
		printf("fuzz %u: record at 0x%" PRIx64 " (%u bytes):", it,
		       rc->off, rc->len);
		for (k = 0; k < flips; k++) {
			uint64_t span = sizeof(struct zf_rec_hdr) + rc->len;
			uint64_t at;
			unsigned char c;

			rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
			/* Payload mostly; the type and length fields too. */
			at = (rnd >> 33) % span;
			if (at < sizeof(struct zf_rec_hdr) &&
			    at != offsetof(struct zf_rec_hdr, type) &&
			    at != offsetof(struct zf_rec_hdr, len))
				at = sizeof(struct zf_rec_hdr) +
				     (rc->len ? at % rc->len : 0);
			if (at >= span)
				continue;
			tu_image_read(tu_img, rc->off + at, &c, 1);
			c ^= (unsigned char)(1u << ((rnd >> 10) % 8));
			if ((rnd >> 40) % 4 == 0)
				c = (unsigned char)(rnd >> 48);
			tu_image_write(tu_img, rc->off + at, &c, 1);
			printf(" +%" PRIu64 "=0x%02x", at, c);
		}
		printf("\n");
		fflush(stdout);
		reseal(rc->off);

		fs = NULL;
		ret = zfs_mount(tu_img, &(struct zfs_opts){ .rdonly = true }, &fs,
				err, sizeof(err));
		if (ret) {
			ck_assert_msg(ret == -EUCLEAN || ret == -EINVAL ||
					      ret == -ENOTSUP,
				      "mount: %d (%s)", ret, err);
			ck_assert_msg(err[0], "mount failed without a reason");
			refusedn++;
		} else {
			walk(fs, ZF_ROOT_INO, 0);
			tu_unmount(fs);
			mounted++;
		}
		fsck(false, &r);
		ck_assert(r.ret == ZFS_FSCK_OK || r.ret == ZFS_FSCK_UNFIXED);
		fsck(true, &r);
		ck_assert(r.ret == ZFS_FSCK_OK || r.ret == ZFS_FSCK_FIXED ||
			  r.ret == ZFS_FSCK_UNFIXED);
	}
	printf("fuzzed records: %u images mounted, %u refused\n", mounted,
	       refusedn);
	ck_assert_uint_gt(refusedn, 0);
	free(recs);
}
END_TEST

/*
 * A snapshot in which a directory's parent names no inode loads
 * (zm_snap_load does not check parents; fsck repairs them from the
 * entries): readdir of that directory must not read ".." through a NULL
 * inode.
 */
START_TEST(test_readdir_dangling_parent)
{
	struct zfs *fs = tu_mount(tu_img, false);
	struct zm_inode *c;
	int64_t ino;
	uint32_t n;

	TU_OK(tu_mkdir(fs, "/a", 0755));
	TU_OK(tu_mkdir(fs, "/a/c", 0755));
	c = inode_at(fs, "/a/c");
	zlock_wr(&fs->meta_lock, ZLOCK_META);
	c->parent = 999999;
	zlock_unrw(&fs->meta_lock);
	write_broken(fs, true);

	fs = tu_mount(tu_img, true);
	ino = tu_ino(fs, "/a/c");
	ck_assert_int_gt(ino, 0);
	n = count_entries(fs, "/a/c"); /* crashes here */
	ck_assert_uint_eq(n, 0);
	tu_unmount(fs);
}
END_TEST

/* ---- progress (-C) ---------------------------------------------------------------- */

struct progress_log {
	unsigned int n;
	struct {
		unsigned int pass;
		uint64_t done, total;
	} at[16];
};

static void progress_rec(void *arg, unsigned int pass, uint64_t done,
			 uint64_t total)
{
	struct progress_log *l = arg;

	ck_assert_uint_lt(l->n, ZF_ARRAY_SIZE(l->at));
	l->at[l->n].pass = pass;
	l->at[l->n].done = done;
	l->at[l->n].total = total;
	l->n++;
}

static void progress_ignore(void *arg, const struct zfs_finding *f)
{
	(void)arg;
	(void)f;
}

/*
 * Pass 1 (the metadata) goes from 0 to 1 of 1; with the data, pass 2
 * counts the files that hold data, from 0 to all of them, in order.
 */
START_TEST(test_progress)
{
	struct zfs_fsck_result res;
	struct progress_log l = { 0 };
	char err[256] = "";
	struct zfs *fs;
	unsigned int i;

	fs = tu_mount(tu_img, false);
	populate(fs); /* two files with data: /d/f and /g */
	tu_unmount(fs);
	ck_assert_int_eq(zfs_fsck_progress(tu_img, ZFS_FSCK_DATA,
					   progress_ignore, progress_rec, &l,
					   &res, err, sizeof(err)),
			 ZFS_FSCK_OK);
	ck_assert_uint_eq(l.n, 5);
	ck_assert_uint_eq(l.at[0].pass, 1);
	ck_assert_uint_eq(l.at[0].done, 0);
	ck_assert_uint_eq(l.at[1].pass, 1);
	ck_assert_uint_eq(l.at[1].done, 1);
	ck_assert_uint_eq(l.at[1].total, 1);
	for (i = 2; i < 5; i++) {
		ck_assert_uint_eq(l.at[i].pass, 2);
		ck_assert_uint_eq(l.at[i].done, i - 2);
		ck_assert_uint_eq(l.at[i].total, 2);
	}

	/* Without the data: pass 1 only. */
	l.n = 0;
	ck_assert_int_eq(zfs_fsck_progress(tu_img, 0, progress_ignore,
					   progress_rec, &l, &res, err,
					   sizeof(err)),
			 ZFS_FSCK_OK);
	ck_assert_uint_eq(l.n, 2);
	ck_assert_uint_eq(l.at[1].pass, 1);
	ck_assert_uint_eq(l.at[1].done, 1);
}
END_TEST

/* ---- the suite ---------------------------------------------------------------- */

static void add(Suite *s, const char *name, const TTest *t)
{
	tu_add_case(s, name, t, setup, tu_img_teardown, 60);
}

static Suite *fsck_suite(void)
{
	Suite *s = suite_create("fsck");

	add(s, "clean", test_clean);
	add(s, "nlink", test_nlink);
	add(s, "nlink_unclean", test_nlink_unclean);
	add(s, "codes", test_codes);
	add(s, "unreachable", test_unreachable);
	add(s, "extent_above_wp", test_extent_above_wp);
	add(s, "repair_sound_untouched", test_repair_sound_untouched);
	add(s, "zone_readonly", test_zone_readonly);
	add(s, "zone_offline", test_zone_offline);
	add(s, "parent_pointer", test_parent_pointer);
	add(s, "extent_past_size", test_extent_past_size);
	add(s, "dangling_entry", test_dangling_entry);
	add(s, "shared_bytes", test_shared_bytes);
	add(s, "foreign", test_foreign);
	add(s, "foreign_over_fs", test_foreign_over_fs);
	add(s, "superblock_crc", test_superblock_crc);
	add(s, "superblock_unknown", test_superblock_unknown);
	add(s, "superblock_old_version", test_superblock_old_version);
	add(s, "journal_junk", test_journal_junk);
	add(s, "truncated", test_truncated);
	add(s, "fuzz_records", test_fuzz_records);
	add(s, "record_flags_unknown", test_record_flags_unknown);
	add(s, "readdir_dangling_parent", test_readdir_dangling_parent);
	add(s, "progress", test_progress);
	return s;
}

int main(void)
{
	printf("check_fsck: fsck finds and repairs planted problems; mount and fsck refuse bad images with a clear error\n");
	return tu_run(fsck_suite());
}
