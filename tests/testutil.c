// SPDX-License-Identifier: GPL-2.0-or-later
#include "testutil.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zonefuse/crc32c.h"
#include "zonefuse/util.h"
#include "zfs_i.h"
#include "zonefuse/zfs.h"

void tu_mkdtemp(char *dir, size_t len)
{
	const char *tmp = getenv("TMPDIR");

	if (!tmp || !*tmp)
		tmp = "/tmp";
	ck_assert_int_lt(snprintf(dir, len, "%s/zonefuse-test.XXXXXX", tmp),
			 (int)len);
	ck_assert_msg(mkdtemp(dir), "mkdtemp %s: %s", dir, strerror(errno));
}

static char tu_base[PATH_MAX];

void tu_scratch_begin(void)
{
	const char *tmp = getenv("TMPDIR");

	if (!tmp || !*tmp)
		tmp = "/tmp";
	snprintf(tu_base, sizeof(tu_base), "%s/zonefuse-test.XXXXXX", tmp);
	if (!mkdtemp(tu_base) || setenv("TMPDIR", tu_base, 1)) {
		fprintf(stderr, "cannot make a scratch directory in %s: %s\n",
			tmp, strerror(errno));
		exit(EXIT_FAILURE);
	}
}

void tu_add_case(Suite *s, const char *name, const TTest *t,
		 void (*setup)(void), void (*teardown)(void), int timeout)
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, timeout);
	tcase_add_test(tc, t);
	suite_add_tcase(s, tc);
}

int tu_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	tu_scratch_begin();
	srunner_run_all(sr, CK_NORMAL);
	tu_scratch_end();
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

static int tu_rm_one(const char *path, const struct stat *st, int flag,
		     struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path) < 0 ? -1 : 0;
}

void tu_rmtree(const char *dir)
{
	if (dir && *dir)
		nftw(dir, tu_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

char tu_dir[PATH_MAX], tu_img[PATH_MAX];

void tu_img_setup(void)
{
	tu_mkdtemp(tu_dir, sizeof(tu_dir));
	tu_path(tu_img, sizeof(tu_img), tu_dir, "fs.img");
}

void tu_img_teardown(void)
{
	tu_rmtree(tu_dir);
}

void tu_scratch_end(void)
{
	tu_rmtree(tu_base);
}

void tu_path(char *path, size_t len, const char *dir, const char *name)
{
	ck_assert_int_lt(snprintf(path, len, "%s/%s", dir, name), (int)len);
}

void tu_make_image(const char *path, const struct zemu_params *p)
{
	char err[256] = "";
	int ret = zemu_create(path, p, err, sizeof(err));

	ck_assert_msg(ret == 0, "zemu_create %s: %d (%s)", path, ret, err);
}

int tu_parse_geom(const char *s, struct zemu_params *p)
{
	char *copy = strdup(s), *save = NULL, *tok;
	uint64_t zones = 0;
	bool cap = false;
	int ret = 0;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, " ,", &save); tok && !ret;
	     tok = strtok_r(NULL, " ,", &save)) {
		char *val = strchr(tok, '=');
		uint64_t v;

		if (!val) {
			ret = -EINVAL;
			break;
		}
		*val++ = '\0';
		ret = zutil_parse_size(val, &v);
		if (ret)
			break;
		if (!strcmp(tok, "zones"))
			zones = v;
		else if (!strcmp(tok, "zone_size"))
			p->zone_size = v;
		else if (!strcmp(tok, "zone_capacity"))
			p->zone_capacity = v, cap = true;
		else if (!strcmp(tok, "bs"))
			p->block_size = (uint32_t)v;
		else if (!strcmp(tok, "max_open"))
			p->max_open = (uint32_t)v;
		else if (!strcmp(tok, "max_active"))
			p->max_active = (uint32_t)v;
		else if (!strcmp(tok, "nr_conv"))
			p->nr_conv = (uint32_t)v;
		else
			ret = -EINVAL;
	}
	/* A new zone size without a capacity means a full-size capacity. */
	if (!cap)
		p->zone_capacity = 0;
	if (!ret && zones)
		p->size = zones * p->zone_size;
	free(copy);
	return ret;
}

/* A 64-bit word per 8 bytes: the seed, then the byte offset on the device. */
static uint64_t tu_word(uint64_t off, uint32_t seed)
{
	return ((uint64_t)seed << 48) ^ off ^ 0x5a5a000000000000ull;
}

void tu_fill(void *buf, size_t len, uint64_t dev_off, uint32_t seed)
{
	unsigned char *p = buf;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		uint64_t w = tu_word(dev_off + i, seed);

		memcpy(p + i, &w, 8);
	}
	for (; i < len; i++)
		p[i] = (unsigned char)(seed + i);
}

long tu_check(const void *buf, size_t len, uint64_t dev_off, uint32_t seed)
{
	const unsigned char *p = buf;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		uint64_t w = tu_word(dev_off + i, seed);

		if (memcmp(p + i, &w, 8))
			return (long)i;
	}
	for (; i < len; i++)
		if (p[i] != (unsigned char)(seed + i))
			return (long)i;
	return -1;
}

bool tu_is_zero(const void *buf, size_t len)
{
	const unsigned char *p = buf;

	return !len || (p[0] == 0 && !memcmp(p, p + 1, len - 1));
}

void tu_report1(struct zdev *dev, uint32_t zone, struct zdev_zone *z)
{
	int ret = zdev_report(dev, zone, 1, z);

	ck_assert_msg(ret == 1, "report of zone %u: %d", zone, ret);
}

void tu_mkfs_image(const char *path, const struct zemu_params *p)
{
	tu_mkfs_image_copies(path, p, 0);
}

void tu_mkfs_image_copies(const char *path, const struct zemu_params *p,
			  unsigned int copies)
{
	struct zfs_mkfs_opts o = {
		.label = "test",
		.reserve_pct = -1,
		.copies = copies,
	};
	char err[512] = "";
	int ret;

	tu_make_image(path, p);
	ret = zfs_mkfs(path, &o, NULL, err, sizeof(err));
	ck_assert_msg(ret == 0, "zfs_mkfs %s: %d (%s)", path, ret, err);
}

uint64_t tu_image_data_off(const char *path)
{
	unsigned char b[8];
	uint64_t off = 0;
	int fd = open(path, O_RDONLY);
	int i;

	ck_assert_msg(fd >= 0, "open %s: %s", path, strerror(errno));
	/* struct zemu_disk_hdr: data_off is the little-endian u64 at 72. */
	ck_assert_int_eq(pread(fd, b, sizeof(b), 72), (ssize_t)sizeof(b));
	close(fd);
	for (i = 7; i >= 0; i--)
		off = off << 8 | b[i];
	ck_assert_msg(off >= 4096 && off % 4096 == 0, "%s: data_off %llu", path,
		      (unsigned long long)off);
	return off;
}

void tu_image_write(const char *path, uint64_t dev_off, const void *buf,
		    size_t len)
{
	uint64_t base = tu_image_data_off(path);
	int fd = open(path, O_WRONLY);

	ck_assert_msg(fd >= 0, "open %s: %s", path, strerror(errno));
	ck_assert_msg(pwrite(fd, buf, len, (off_t)(base + dev_off)) ==
			      (ssize_t)len,
		      "pwrite %s: %s", path, strerror(errno));
	close(fd);
}

void tu_image_set_wp(const char *path, uint32_t zone, uint64_t wp)
{
	/* struct zemu_disk_zone: wp (u64) at 0, crc of bytes 0-27 at 28. */
	unsigned char e[32];
	uint64_t at = 4096 + 32ull * zone;
	uint32_t crc;
	int fd = open(path, O_RDWR), i;

	ck_assert_msg(fd >= 0, "open %s: %s", path, strerror(errno));
	ck_assert_int_eq(pread(fd, e, sizeof(e), (off_t)at), (ssize_t)sizeof(e));
	for (i = 0; i < 8; i++)
		e[i] = (unsigned char)(wp >> (8 * i));
	crc = crc32c(0, e, 28);
	for (i = 0; i < 4; i++)
		e[28 + i] = (unsigned char)(crc >> (8 * i));
	ck_assert_int_eq(pwrite(fd, e, sizeof(e), (off_t)at), (ssize_t)sizeof(e));
	close(fd);
}

void tu_image_read(const char *path, uint64_t dev_off, void *buf, size_t len)
{
	uint64_t base = tu_image_data_off(path);
	int fd = open(path, O_RDONLY);

	ck_assert_msg(fd >= 0, "open %s: %s", path, strerror(errno));
	ck_assert_msg(pread(fd, buf, len, (off_t)(base + dev_off)) ==
			      (ssize_t)len,
		      "pread %s: %s", path, strerror(errno));
	close(fd);
}

void tu_image_flip(const char *path, uint64_t dev_off)
{
	unsigned char c;

	tu_image_read(path, dev_off, &c, 1);
	c ^= 0xff;
	tu_image_write(path, dev_off, &c, 1);
}

bool tu_files_equal(const char *a, const char *b)
{
	int fa = open(a, O_RDONLY), fb = open(b, O_RDONLY);
	char *ba = malloc(1 << 20), *bb = malloc(1 << 20);
	bool same = lseek(fa, 0, SEEK_END) == lseek(fb, 0, SEEK_END);
	off_t pos = 0;

	ck_assert_msg(fa >= 0 && fb >= 0 && ba && bb, "compare %s with %s: %s",
		      a, b, strerror(errno));
	while (same) {
		ssize_t ra = pread(fa, ba, 1 << 20, pos);
		ssize_t rb = pread(fb, bb, 1 << 20, pos);

		ck_assert_int_ge(ra, 0);
		same = ra == rb && !memcmp(ba, bb, (size_t)ra);
		if (ra <= 0)
			break;
		pos += ra;
	}
	free(ba);
	free(bb);
	close(fa);
	close(fb);
	return same;
}

/* Copies the data segments only, so a sparse image stays sparse. */
void tu_copy_file(const char *from, const char *to)
{
	int in = open(from, O_RDONLY);
	int out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	char *buf = malloc(1 << 20);
	off_t end, pos = 0;

	ck_assert_msg(in >= 0 && out >= 0 && buf, "copy %s to %s: %s", from, to,
		      strerror(errno));
	end = lseek(in, 0, SEEK_END);
	ck_assert_int_eq(ftruncate(out, end), 0);
	for (;;) {
		off_t data = lseek(in, pos, SEEK_DATA), hole;

		if (data < 0)
			break;
		hole = lseek(in, data, SEEK_HOLE);
		ck_assert_int_ge(hole, data);
		for (pos = data; pos < hole;) {
			size_t n = (size_t)ZF_MIN((off_t)(1 << 20), hole - pos);
			ssize_t r = pread(in, buf, n, pos);

			ck_assert_int_gt(r, 0);
			ck_assert_int_eq(pwrite(out, buf, (size_t)r, pos), r);
			pos += r;
		}
	}
	free(buf);
	close(in);
	ck_assert_int_eq(close(out), 0);
}

void tu_random(void *buf, size_t len, uint64_t seed)
{
	unsigned char *p = buf;
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	size_t i;

	for (i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (unsigned char)(x >> 24);
	}
}

/* ---- driving a mounted file system ---------------------------------------- */

const struct zfs_ctx tu_root_ctx = { .uid = 0, .gid = 0, .umask = 022 };

struct zfs *tu_mount(const char *img, bool rdonly)
{
	struct zfs_opts o = {
		.rdonly = rdonly,
		.commit_ms = 3600 * 1000,
		.no_reclaim_thread = true,
	};
	struct zfs *fs = NULL;
	char err[512] = "";
	int ret = zfs_mount(img, &o, &fs, err, sizeof(err));

	ck_assert_msg(ret == 0, "mount of %s: %d (%s)", img, ret, err);
	return fs;
}

void tu_mount_refused(const char *img)
{
	struct zfs_opts o = { .commit_ms = 3600 * 1000,
			      .no_reclaim_thread = true };
	char before[PATH_MAX + 8], err[512] = "";
	struct zfs *fs = NULL;
	int ret;

	snprintf(before, sizeof(before), "%s.before", img);
	tu_copy_file(img, before);
	ret = zfs_mount(img, &o, &fs, err, sizeof(err));
	ck_assert_msg(ret == -EUCLEAN, "writable mount of %s: %d (%s)", img,
		      ret, err);
	ck_assert_msg(strstr(err, "-o ro") && strstr(err, "fsck --repair"),
		      "the refusal does not say what to do: %s", err);
	ck_assert_msg(tu_files_equal(img, before),
		      "the refused mount changed %s", img);
	unlink(before);
}

void tu_unmount(struct zfs *fs)
{
	int ret = zfs_unmount(fs);

	ck_assert_msg(ret == 0, "unmount: %d", ret);
}

bool tu_wait_freed(struct zfs *fs, uint64_t ino)
{
	int i;

	for (i = 0; i < 1000; i++) {
		bool gone;

		zlock_rd(&fs->meta_lock, ZLOCK_META);
		gone = !zm_iget(&fs->m, ino);
		zlock_unrw(&fs->meta_lock);
		if (gone)
			return true;
		usleep(10000);
	}
	return false;
}

/* Walk @path to its last component: the parent's inode, @name its name. */
static int64_t tu_walk(struct zfs *fs, const char *path, bool parent,
		       char *name, size_t namelen)
{
	uint64_t cur = 1; /* ZF_ROOT_INO */
	const char *p = path;

	ck_assert_msg(path[0] == '/', "not absolute: %s", path);
	for (;;) {
		const char *s = p + strspn(p, "/"), *e = s + strcspn(s, "/");
		char comp[256];
		struct stat st;
		int ret;

		if (e == s) {
			ck_assert_msg(!parent, "no last component: %s", path);
			return (int64_t)cur;
		}
		ck_assert_uint_lt((size_t)(e - s), sizeof(comp));
		memcpy(comp, s, (size_t)(e - s));
		comp[e - s] = '\0';
		if (parent && e[strspn(e, "/")] == '\0') {
			ck_assert_uint_lt(strlen(comp), namelen);
			strcpy(name, comp);
			return (int64_t)cur;
		}
		ret = zfs_lookup(fs, cur, comp, &st);
		if (ret)
			return ret;
		zfs_forget(fs, (uint64_t)st.st_ino, 1);
		cur = (uint64_t)st.st_ino;
		p = e;
	}
}

int64_t tu_ino(struct zfs *fs, const char *path)
{
	return tu_walk(fs, path, false, NULL, 0);
}

/* The directory @path is in (or a negative errno); @name gets the name. */
static int64_t tu_parent(struct zfs *fs, const char *path, char *name)
{
	return tu_walk(fs, path, true, name, 256);
}

int tu_mkdir(struct zfs *fs, const char *path, unsigned int mode)
{
	int64_t dir;
	char name[256];
	struct stat st;
	int ret;

	dir = tu_parent(fs, path, name);
	if (dir < 0)
		return (int)dir;
	ret = zfs_mkdir(fs, &tu_root_ctx, (uint64_t)dir, name, mode, &st);
	if (!ret)
		zfs_forget(fs, (uint64_t)st.st_ino, 1);
	return ret;
}

int tu_symlink(struct zfs *fs, const char *path, const char *target)
{
	int64_t dir;
	char name[256];
	struct stat st;
	int ret;

	dir = tu_parent(fs, path, name);
	if (dir < 0)
		return (int)dir;
	ret = zfs_symlink(fs, &tu_root_ctx, (uint64_t)dir, name, target, &st);
	if (!ret)
		zfs_forget(fs, (uint64_t)st.st_ino, 1);
	return ret;
}

int tu_link(struct zfs *fs, const char *from, const char *to)
{
	int64_t ino, dir;
	char name[256];
	struct stat st;
	int ret;

	ino = tu_ino(fs, from);
	if (ino < 0)
		return (int)ino;
	dir = tu_parent(fs, to, name);
	if (dir < 0)
		return (int)dir;
	ret = zfs_link(fs, &tu_root_ctx, (uint64_t)ino, (uint64_t)dir, name,
		       &st);
	if (!ret)
		zfs_forget(fs, (uint64_t)st.st_ino, 1);
	return ret;
}

int tu_rename(struct zfs *fs, const char *from, const char *to,
	      unsigned int flags)
{
	char sname[256], dname[256];
	int64_t sdir, ddir;

	sdir = tu_parent(fs, from, sname);
	if (sdir < 0)
		return (int)sdir;
	ddir = tu_parent(fs, to, dname);
	if (ddir < 0)
		return (int)ddir;
	return zfs_rename(fs, &tu_root_ctx, (uint64_t)sdir, sname,
			  (uint64_t)ddir, dname, flags);
}

int tu_unlink(struct zfs *fs, const char *path)
{
	char name[256];
	int64_t dir = tu_parent(fs, path, name);

	return dir < 0 ? (int)dir :
			 zfs_unlink(fs, &tu_root_ctx, (uint64_t)dir, name);
}

int tu_rmdir(struct zfs *fs, const char *path)
{
	char name[256];
	int64_t dir = tu_parent(fs, path, name);

	return dir < 0 ? (int)dir :
			 zfs_rmdir(fs, &tu_root_ctx, (uint64_t)dir, name);
}

int tu_setxattr(struct zfs *fs, const char *path, const char *name,
		const void *value, size_t len)
{
	int64_t ino = tu_ino(fs, path);

	if (ino < 0)
		return (int)ino;
	return zfs_setxattr(fs, &tu_root_ctx, (uint64_t)ino, name, value, len,
			    0);
}

int tu_removexattr(struct zfs *fs, const char *path, const char *name)
{
	int64_t ino = tu_ino(fs, path);

	if (ino < 0)
		return (int)ino;
	return zfs_removexattr(fs, &tu_root_ctx, (uint64_t)ino, name);
}

static int tu_setattr(struct zfs *fs, const char *path, struct stat *a,
		      unsigned int set)
{
	int64_t ino = tu_ino(fs, path);
	struct stat st;

	if (ino < 0)
		return (int)ino;
	return zfs_setattr(fs, &tu_root_ctx, (uint64_t)ino, a, set, &st);
}

int tu_truncate(struct zfs *fs, const char *path, uint64_t size)
{
	struct stat a = { .st_size = (off_t)size };

	return tu_setattr(fs, path, &a, ZFS_SET_SIZE);
}

int tu_chmod(struct zfs *fs, const char *path, unsigned int mode)
{
	struct stat a = { .st_mode = mode };

	return tu_setattr(fs, path, &a, ZFS_SET_MODE);
}

int tu_write(struct zfs *fs, const char *path, uint64_t off, size_t len,
	     uint32_t seed)
{
	int64_t ino = tu_ino(fs, path);
	char *buf = malloc(ZF_ROUND_UP(len, 8u) + 8);
	size_t done = 0;
	struct stat st;
	int ret;

	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(off % 8, 0);
	/* Whole words: the bytes at a file offset do not depend on @len. */
	tu_fill(buf, ZF_ROUND_UP(len, 8u), off, seed);
	if (ino == -ENOENT) {
		char name[256];
		int64_t dir = tu_walk(fs, path, true, name, sizeof(name));

		ret = dir < 0 ? (int)dir : 0;
		if (ret)
			goto out_free;
		ret = zfs_create(fs, &tu_root_ctx, (uint64_t)dir, name, 0644,
				 O_RDWR, &st, NULL);
		if (ret)
			goto out_free;
		zfs_forget(fs, (uint64_t)st.st_ino, 1);
		ino = (int64_t)st.st_ino;
	} else if (ino < 0) {
		ret = (int)ino;
		goto out_free;
	} else {
		ret = zfs_open(fs, &tu_root_ctx, (uint64_t)ino, O_RDWR, NULL);
		if (ret)
			goto out_free;
	}
	while (done < len) {
		ssize_t n = zfs_write(fs, &tu_root_ctx, (uint64_t)ino,
				      buf + done, len - done,
				      (off_t)(off + done), false);

		if (n <= 0) {
			ret = n ? (int)n : -EIO;
			break;
		}
		done += (size_t)n;
	}
	zfs_release(fs, (uint64_t)ino, 0);
out_free:
	free(buf);
	return ret;
}

int tu_verify(struct zfs *fs, const char *path, uint64_t off, size_t len,
	      uint32_t seed)
{
	int64_t ino = tu_ino(fs, path);
	char *buf = malloc(len ? len : 1);
	size_t done = 0;
	int ret;

	ck_assert_ptr_nonnull(buf);
	if (ino < 0) {
		free(buf);
		return (int)ino;
	}
	ret = zfs_open(fs, &tu_root_ctx, (uint64_t)ino, O_RDONLY, NULL);
	if (ret)
		goto out_free;
	while (done < len) {
		ssize_t n = zfs_read(fs, (uint64_t)ino, buf + done, len - done,
				     (off_t)(off + done));

		if (n <= 0) {
			ret = n ? (int)n : -EILSEQ; /* short: past the end */
			break;
		}
		done += (size_t)n;
	}
	zfs_release(fs, (uint64_t)ino, 0);
	if (!ret) {
		char *want = calloc(1, ZF_ROUND_UP(len, 8u) + 8);
		size_t i;

		ck_assert_ptr_nonnull(want);
		ck_assert_uint_eq(off % 8, 0);
		if (seed)
			tu_fill(want, ZF_ROUND_UP(len, 8u), off, seed);
		for (i = 0; i < len && buf[i] == want[i]; i++)
			;
		if (i < len) {
			fprintf(stderr, "%s: wrong byte at offset %llu\n", path,
				(unsigned long long)(off + i));
			ret = -EILSEQ;
		}
		free(want);
	}
out_free:
	free(buf);
	return ret;
}

struct tu_text {
	char *b;
	size_t len, cap;
};

__attribute__((format(printf, 2, 3))) static void
tu_text_add(struct tu_text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(t->b ? t->b + t->len : NULL,
			      t->b ? t->cap - t->len : 0, fmt, ap);
		va_end(ap);
		ck_assert_int_ge(n, 0);
		if (t->b && t->len + (size_t)n < t->cap)
			break;
		t->cap = (t->cap + (size_t)n + 1) * 2;
		t->b = realloc(t->b, t->cap);
		ck_assert_ptr_nonnull(t->b);
	}
	t->len += (size_t)n;
}

struct tu_names {
	char **v;
	size_t n, cap;
};

static int tu_names_fill(void *arg, const char *name, const struct stat *st,
			 off_t next)
{
	struct tu_names *l = arg;

	(void)st;
	(void)next;
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 16;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
		ck_assert_ptr_nonnull(l->v);
	}
	l->v[l->n] = strdup(name);
	ck_assert_ptr_nonnull(l->v[l->n]);
	l->n++;
	return 0;
}

static int tu_strcmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void tu_digest_node(struct zfs *fs, uint64_t ino, const char *path,
			   struct tu_text *t)
{
	struct stat st;
	ssize_t n;
	int ret;

	ret = zfs_getattr(fs, ino, &st);
	ck_assert_msg(ret == 0, "getattr of %s: %d", path, ret);
	tu_text_add(t, "%s mode=%o uid=%u gid=%u nlink=%lu size=%lld", path,
		    (unsigned int)st.st_mode, (unsigned int)st.st_uid,
		    (unsigned int)st.st_gid, (unsigned long)st.st_nlink,
		    (long long)st.st_size);
	if (S_ISREG(st.st_mode)) {
		char *buf = malloc(1 << 20);
		uint32_t crc = 0;
		off_t off = 0;

		ck_assert_ptr_nonnull(buf);
		ret = zfs_open(fs, &tu_root_ctx, ino, O_RDONLY, NULL);
		ck_assert_msg(ret == 0, "open of %s: %d", path, ret);
		while ((n = zfs_read(fs, ino, buf, 1 << 20, off)) > 0) {
			crc = crc32c(crc, buf, (size_t)n);
			off += n;
		}
		ck_assert_msg(n == 0, "read of %s: %zd", path, n);
		zfs_release(fs, ino, 0);
		free(buf);
		tu_text_add(t, " read=%lld crc=%08x", (long long)off, crc);
	} else if (S_ISLNK(st.st_mode)) {
		char target[4096];

		n = zfs_readlink(fs, ino, target, sizeof(target));
		ck_assert_msg(n >= 0, "readlink of %s: %zd", path, n);
		tu_text_add(t, " -> %s", target);
	}
	n = zfs_listxattr(fs, ino, NULL, 0);
	ck_assert_msg(n >= 0, "listxattr of %s: %zd", path, n);
	if (n > 0) {
		struct tu_names xl = { 0 };
		char *list = malloc((size_t)n), *p;
		size_t i;

		ck_assert_ptr_nonnull(list);
		ck_assert_int_eq(zfs_listxattr(fs, ino, list, (size_t)n), n);
		for (p = list; p < list + n; p += strlen(p) + 1)
			tu_names_fill(&xl, p, NULL, 0);
		qsort(xl.v, xl.n, sizeof(*xl.v), tu_strcmp);
		for (i = 0; i < xl.n; i++) {
			static char v[65536];
			ssize_t vl = zfs_getxattr(fs, NULL, ino, xl.v[i], v,
						  sizeof(v));

			ck_assert_msg(vl >= 0, "getxattr %s of %s: %zd",
				      xl.v[i], path, vl);
			tu_text_add(t, " %s=%zd/%08x", xl.v[i], vl,
				    crc32c(0, v, (size_t)vl));
			free(xl.v[i]);
		}
		free(xl.v);
		free(list);
	}
	tu_text_add(t, "\n");
	if (S_ISDIR(st.st_mode)) {
		struct tu_names l = { 0 };
		size_t i;

		ret = zfs_readdir(fs, ino, 0, false, tu_names_fill, &l);
		ck_assert_msg(ret == 0, "readdir of %s: %d", path, ret);
		if (l.n)
			qsort(l.v, l.n, sizeof(*l.v), tu_strcmp);
		for (i = 0; i < l.n; i++) {
			char cpath[4096];
			struct stat cst;

			snprintf(cpath, sizeof(cpath), "%s%s%s", path,
				 path[1] ? "/" : "", l.v[i]);
			ret = zfs_lookup(fs, ino, l.v[i], &cst);
			ck_assert_msg(ret == 0, "lookup of %s: %d", cpath, ret);
			tu_digest_node(fs, (uint64_t)cst.st_ino, cpath, t);
			zfs_forget(fs, (uint64_t)cst.st_ino, 1);
			free(l.v[i]);
		}
		free(l.v);
	}
}

char *tu_digest(struct zfs *fs)
{
	struct tu_text t = { 0 };

	tu_text_add(&t, "%s", "");
	tu_digest_node(fs, 1, "/", &t);
	return t.b;
}

void tu_skip(const char *fmt, ...)
{
	va_list ap;

	printf("SKIP: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}
