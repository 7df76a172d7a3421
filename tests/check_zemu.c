// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Tests of what only the emulator has: creating images, their persistence
 * across close and reopen (the flush rule), lifetime counters, forced zone
 * conditions, damaged images and the exclusive lock. The zone rules it
 * shares with real devices are in check_zdev.c.
 */
#include <check.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "zonefuse/crc32c.h"
#include "zonefuse/util.h"

/* The image format (docs/emulator.md), as far as these tests poke at it. */
#define HDR_VERSION 8
#define HDR_FEATURES 12
#define HDR_SIZE 16
#define HDR_ZONE_SIZE 24
#define HDR_NR_ZONES 40
#define HDR_NR_CONV 44
#define HDR_BLOCK_SIZE 48
#define HDR_MAX_OPEN 52
#define HDR_DATA_OFF 72
#define HDR_CRC 252
#define TABLE_OFF 4096
#define ZENT_SIZE 32
#define ZENT_WP 0
#define ZENT_COND 24
#define ZENT_CRC 28

static char tmpdir[PATH_MAX];
static char img[PATH_MAX];

/* 16 zones of 1 MiB, 4 KiB blocks, no limits. */
static const struct zemu_params base = {
	.size = 16ull << 20,
	.zone_size = 1ull << 20,
	.block_size = 4096,
};

static void setup(void)
{
	tu_mkdtemp(tmpdir, sizeof(tmpdir));
	tu_path(img, sizeof(img), tmpdir, "emu.img");
}

static void teardown(void)
{
	tu_rmtree(tmpdir);
}

/* ---- helpers ------------------------------------------------------------- */

static struct zdev *open_img(unsigned int flags)
{
	struct zdev *dev = NULL;
	char err[256] = "";
	int ret = zdev_open(img, flags, &dev, err, sizeof(err));

	ck_assert_msg(ret == 0, "open %s: %d (%s)", img, ret, err);
	ck_assert(zemu_is(dev));
	return dev;
}

/* Open must fail with @want, naming the image in its message. */
static void expect_open_fails(int want)
{
	struct zdev *dev = NULL;
	char err[256] = "";
	int ret = zdev_open(img, 0, &dev, err, sizeof(err));

	ck_assert_msg(ret == want, "open gave %d (%s), expected %d", ret, err,
		      want);
	ck_assert_ptr_null(dev);
	ck_assert_msg(strstr(err, img), "message \"%s\" does not name %s",
		      err, img);
}

static struct zdev_zone rep(struct zdev *dev, uint32_t zone)
{
	struct zdev_zone z;

	tu_report1(dev, zone, &z);
	return z;
}

#define expect_zone(dev, zone, c, rel)                                         \
	do {                                                                   \
		struct zdev_zone z_ = rep(dev, zone);                          \
		ck_assert_msg(z_.cond == (c), "zone %u is %s, expected %s",    \
			      (zone), zdev_cond_name(z_.cond),                 \
			      zdev_cond_name(c));                              \
		ck_assert_msg(z_.wp == z_.start + (rel),                       \
			      "zone %u wp is start+%llu, expected +%llu",      \
			      (zone), (unsigned long long)(z_.wp - z_.start),  \
			      (unsigned long long)(rel));                      \
	} while (0)

static int write_pat(struct zdev *dev, uint64_t off, size_t len, uint32_t seed)
{
	void *buf = zdev_buf_alloc(dev, len);
	int ret;

	ck_assert_ptr_nonnull(buf);
	tu_fill(buf, len, off, seed);
	ret = zdev_write(dev, buf, len, off);
	free(buf);
	return ret;
}

/* Append @len bytes of pattern @seed at zone @zone's write pointer. */
static void append(struct zdev *dev, uint32_t zone, size_t len, uint32_t seed)
{
	ck_assert_int_eq(write_pat(dev, rep(dev, zone).wp, len, seed), 0);
}

static void expect_pat(struct zdev *dev, uint64_t off, size_t len,
		       uint32_t seed)
{
	void *buf = zdev_buf_alloc(dev, len);

	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(zdev_read(dev, buf, len, off), 0);
	ck_assert_int_eq(tu_check(buf, len, off, seed), -1);
	free(buf);
}

static void expect_zeros(struct zdev *dev, uint64_t off, size_t len)
{
	void *buf = zdev_buf_alloc(dev, len);

	ck_assert_ptr_nonnull(buf);
	memset(buf, 0xa5, len);
	ck_assert_int_eq(zdev_read(dev, buf, len, off), 0);
	ck_assert(tu_is_zero(buf, len));
	free(buf);
}

static void file_rw(bool wr, void *buf, size_t len, off_t off)
{
	int fd = open(img, wr ? O_WRONLY : O_RDONLY);
	ssize_t n;

	ck_assert_int_ge(fd, 0);
	n = wr ? pwrite(fd, buf, len, off) : pread(fd, buf, len, off);
	ck_assert_int_eq(n, (ssize_t)len);
	close(fd);
}

static void poke32(off_t off, uint32_t v)
{
	v = htole32(v);
	file_rw(true, &v, 4, off);
}

static void poke64(off_t off, uint64_t v)
{
	v = htole64(v);
	file_rw(true, &v, 8, off);
}

static void poke8(off_t off, uint8_t v)
{
	file_rw(true, &v, 1, off);
}

/* Recompute the header's CRC, so that only the field changed is wrong. */
static void seal_hdr(void)
{
	unsigned char h[256];

	file_rw(false, h, sizeof(h), 0);
	poke32(HDR_CRC, crc32c(0, h, HDR_CRC));
}

static void seal_zone(uint32_t zone)
{
	unsigned char e[ZENT_SIZE];
	off_t off = TABLE_OFF + (off_t)zone * ZENT_SIZE;

	file_rw(false, e, sizeof(e), off);
	poke32(off + ZENT_CRC, crc32c(0, e, ZENT_CRC));
}

/* ---- creating ------------------------------------------------------------ */

START_TEST(test_check_params)
{
	static const struct {
		struct zemu_params p;
		const char *why;
	} bad[] = {
		{ { .size = 16 << 20, .zone_size = 1 << 20,
		    .block_size = 1024 },
		  "block size" },
		{ { .size = 16 << 20, .zone_size = 1 << 20,
		    .block_size = 8192 },
		  "block size" },
		{ { .size = 16 << 20, .zone_size = (1 << 20) + 512,
		    .block_size = 4096 },
		  "zone size" },
		{ { .size = 16 << 20, .zone_size = 1 << 20,
		    .zone_capacity = (1 << 20) + 4096 },
		  "capacity" },
		{ { .size = 16 << 20, .zone_size = 1 << 20,
		    .zone_capacity = 1001 * 512, .block_size = 4096 },
		  "capacity" },
		{ { .size = (16 << 20) + 4096, .zone_size = 1 << 20 },
		  "device size" },
		{ { .size = 0, .zone_size = 1 << 20 }, "device size" },
		{ { .size = 16 << 20, .zone_size = 1 << 20, .nr_conv = 16 },
		  "conventional" },
		{ { .size = 16 << 20, .zone_size = 1 << 20, .nr_conv = 17 },
		  "conventional" },
		{ { .size = 16 << 20, .zone_size = 1 << 20, .max_open = 5,
		    .max_active = 4 },
		  "max open" },
	};
	struct zemu_params p = { .size = 64ull << 20 };
	char err[256];
	unsigned int i;

	for (i = 0; i < ZF_ARRAY_SIZE(bad); i++) {
		p = bad[i].p;
		err[0] = '\0';
		ck_assert_msg(zemu_check_params(&p, err, sizeof(err)) ==
				      -EINVAL,
			      "case %u (%s) accepted", i, bad[i].why);
		ck_assert_msg(strstr(err, bad[i].why),
			      "case %u: message \"%s\" does not mention %s", i,
			      err, bad[i].why);
		ck_assert_int_eq(zemu_create(img, &bad[i].p, NULL, 0), -EINVAL);
		ck_assert_int_eq(access(img, F_OK), -1);
	}

	/* Defaults. */
	p = (struct zemu_params){ .size = 128ull << 20 };
	ck_assert_int_eq(zemu_check_params(&p, err, sizeof(err)), 0);
	ck_assert_uint_eq(p.block_size, ZEMU_DEFAULT_BLOCK_SIZE);
	ck_assert_uint_eq(p.zone_size, ZEMU_DEFAULT_ZONE_SIZE);
	ck_assert_uint_eq(p.zone_capacity, ZEMU_DEFAULT_ZONE_SIZE);
	p = (struct zemu_params){ .size = 16 << 20, .zone_size = 1 << 20,
				  .block_size = 512, .zone_capacity = 512,
				  .nr_conv = 15, .max_open = 1,
				  .max_active = 1 };
	ck_assert_int_eq(zemu_check_params(&p, err, sizeof(err)), 0);
}
END_TEST

/*
 * A limit as large as the number of sequential zones can never be reached:
 * null_blk then reports no limit, and so does the emulator (the image must
 * open, whatever the limit asked).
 */
START_TEST(test_limits_past_zone_count)
{
	struct zemu_params p = base;
	struct zdev *dev;
	uint32_t i;

	p.max_open = 40;
	p.max_active = 40;
	p.nr_conv = 2;
	tu_make_image(img, &p);
	dev = open_img(0);
	ck_assert_uint_eq(zdev_geom(dev)->max_open, 0);
	ck_assert_uint_eq(zdev_geom(dev)->max_active, 0);
	for (i = 2; i < 16; i++)
		append(dev, i, 4096, 1);
	zdev_close(dev);
	unlink(img);

	p.max_open = 14;
	p.max_active = 15;
	tu_make_image(img, &p);
	dev = open_img(0);
	ck_assert_uint_eq(zdev_geom(dev)->max_open, 0);
	ck_assert_uint_eq(zdev_geom(dev)->max_active, 0);
	zdev_close(dev);
	unlink(img);

	p.max_open = 13;
	p.max_active = 0;
	tu_make_image(img, &p);
	dev = open_img(0);
	ck_assert_uint_eq(zdev_geom(dev)->max_open, 13);
	zdev_close(dev);
}
END_TEST

START_TEST(test_create_exists)
{
	char err[256] = "";
	struct zdev *dev;
	struct stat st;

	tu_make_image(img, &base);
	dev = open_img(0);
	append(dev, 3, 8192, 2);
	ck_assert_int_eq(zdev_flush(dev), 0);
	zdev_close(dev);
	ck_assert_int_eq(zemu_create(img, &base, err, sizeof(err)), -EEXIST);
	ck_assert_msg(strstr(err, img), "message \"%s\"", err);
	/* The image it refused to replace is intact. */
	dev = open_img(0);
	expect_pat(dev, 3ull << 20, 8192, 2);
	zdev_close(dev);
	ck_assert_int_eq(stat(img, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
}
END_TEST

START_TEST(test_create_cleanup)
{
	char path[PATH_MAX], err[256] = "";
	struct zemu_params p = base;

	tu_path(path, sizeof(path), tmpdir, "missing/emu.img");
	ck_assert_int_eq(zemu_create(path, &base, err, sizeof(err)), -ENOENT);
	ck_assert(strstr(err, path));
	p.block_size = 1000;
	ck_assert_int_eq(zemu_create(img, &p, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(access(img, F_OK), -1);
}
END_TEST

/* ---- persistence --------------------------------------------------------- */

/*
 * Write pointers survive a flush and reopen; zones that were open come back
 * closed, or empty if nothing was written in them, as after a power cycle.
 */
START_TEST(test_persist_zones)
{
	struct zemu_params p = base;
	struct zdev *dev;

	p.nr_conv = 1;
	p.zone_capacity = 768 << 10;
	tu_make_image(img, &p);
	dev = open_img(0);
	append(dev, 1, 4096, 3); /* implicit open */
	append(dev, 2, 8192, 3);
	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_OPEN, 2), 0); /* explicit */
	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_OPEN, 3), 0); /* unwritten */
	append(dev, 4, 4096, 3);
	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_CLOSE, 4), 0); /* closed */
	append(dev, 5, 768 << 10, 3); /* full by writes */
	ck_assert_int_eq(zdev_finish(dev, 6), 0); /* full by finish */
	ck_assert_int_eq(write_pat(dev, 0, 4096, 3), 0); /* conventional */
	ck_assert_int_eq(zdev_flush(dev), 0);
	zdev_close(dev);

	dev = open_img(0);
	expect_zone(dev, 0, ZDEV_COND_NOT_WP, 1 << 20);
	expect_zone(dev, 1, ZDEV_COND_CLOSED, 4096);
	expect_zone(dev, 2, ZDEV_COND_CLOSED, 8192);
	expect_zone(dev, 3, ZDEV_COND_EMPTY, 0);
	expect_zone(dev, 4, ZDEV_COND_CLOSED, 4096);
	expect_zone(dev, 5, ZDEV_COND_FULL, 768 << 10);
	expect_zone(dev, 6, ZDEV_COND_FULL, 1 << 20);
	expect_zone(dev, 7, ZDEV_COND_EMPTY, 0);
	ck_assert_uint_eq(rep(dev, 5).capacity, 768 << 10);
	expect_pat(dev, 0, 4096, 3);
	expect_pat(dev, 1 << 20, 4096, 3);
	expect_pat(dev, 2 << 20, 8192, 3);
	expect_pat(dev, 5 << 20, 768 << 10, 3);
	expect_zeros(dev, (5 << 20) + (768 << 10), 256 << 10);
	/* And they carry on from there. */
	append(dev, 1, 4096, 4);
	expect_zone(dev, 1, ZDEV_COND_IMP_OPEN, 8192);
	/* The conversion to closed is itself persisted by the next flush. */
	ck_assert_int_eq(zdev_flush(dev), 0);
	zdev_close(dev);
	dev = open_img(0);
	expect_zone(dev, 1, ZDEV_COND_CLOSED, 8192);
	expect_pat(dev, (1 << 20) + 4096, 4096, 4);
	zdev_close(dev);
}
END_TEST

/* Per-zone reset counts persist, at once: a reset is durable on return. */
START_TEST(test_persist_resets)
{
	struct zdev *dev;
	unsigned int i;

	tu_make_image(img, &base);
	dev = open_img(0);
	ck_assert_uint_eq(rep(dev, 2).resets, 0);
	for (i = 0; i < 3; i++) {
		append(dev, 2, 4096, 5);
		ck_assert_int_eq(zdev_reset(dev, 2), 0);
	}
	ck_assert_int_eq(zdev_reset(dev, 2), 0); /* empty: not counted */
	ck_assert_uint_eq(rep(dev, 2).resets, 3);
	zdev_close(dev); /* no flush */
	dev = open_img(0);
	ck_assert_uint_eq(rep(dev, 2).resets, 3);
	ck_assert_uint_eq(rep(dev, 3).resets, 0);
	zdev_close(dev);
}
END_TEST

/*
 * THE FLUSH RULE: what was written and flushed survives a close and reopen;
 * what was written after the last flush is gone (the write pointer is back,
 * the bytes read as zeros, and the next write goes where they were).
 */
START_TEST(test_flush_rule)
{
	struct zdev *dev;

	tu_make_image(img, &base);
	dev = open_img(0);
	append(dev, 1, 8192, 6);
	ck_assert_int_eq(zdev_flush(dev), 0);
	append(dev, 1, 4096, 7);  /* not flushed */
	append(dev, 2, 16384, 7); /* not flushed, in an empty zone */
	zdev_close(dev);

	dev = open_img(0);
	expect_zone(dev, 1, ZDEV_COND_CLOSED, 8192);
	expect_pat(dev, 1 << 20, 8192, 6);
	expect_zeros(dev, (1 << 20) + 8192, 4096);
	expect_zone(dev, 2, ZDEV_COND_EMPTY, 0);
	expect_zeros(dev, 2 << 20, 16384);
	/* The lost write's place is written again. */
	ck_assert_int_eq(write_pat(dev, (1 << 20) + 12288, 4096, 8), -EIO);
	ck_assert_int_eq(write_pat(dev, (1 << 20) + 8192, 4096, 8), 0);
	expect_pat(dev, (1 << 20) + 8192, 4096, 8);
	ck_assert_int_eq(write_pat(dev, 2 << 20, 4096, 8), 0);
	expect_pat(dev, 2 << 20, 4096, 8);
	expect_zeros(dev, (2 << 20) + 4096, 12288);
	ck_assert_int_eq(zdev_flush(dev), 0);
	zdev_close(dev);

	dev = open_img(0);
	expect_pat(dev, 1 << 20, 8192, 6);
	expect_pat(dev, (1 << 20) + 8192, 4096, 8);
	expect_zone(dev, 2, ZDEV_COND_CLOSED, 4096);
	expect_zeros(dev, (2 << 20) + 4096, 12288);
	zdev_close(dev);
}
END_TEST

/* A reset and a finish are durable when they return, with no flush. */
START_TEST(test_zone_ops_persisted)
{
	struct zdev *dev;

	tu_make_image(img, &base);
	dev = open_img(0);
	append(dev, 1, 8192, 9);
	append(dev, 2, 8192, 9);
	ck_assert_int_eq(zdev_flush(dev), 0);
	ck_assert_int_eq(zdev_reset(dev, 1), 0);
	ck_assert_int_eq(zdev_finish(dev, 2), 0);
	ck_assert_int_eq(zdev_finish(dev, 3), 0);
	zdev_close(dev);

	dev = open_img(0);
	expect_zone(dev, 1, ZDEV_COND_EMPTY, 0);
	expect_zeros(dev, 1 << 20, 8192);
	ck_assert_uint_eq(rep(dev, 1).resets, 1);
	expect_zone(dev, 2, ZDEV_COND_FULL, 1 << 20);
	expect_pat(dev, 2 << 20, 8192, 9);
	expect_zone(dev, 3, ZDEV_COND_FULL, 1 << 20);
	zdev_close(dev);
}
END_TEST

/*
 * A finish makes the zone's data readable up to its end, so it must not
 * expose bytes of a write that was lost (never flushed) before it.
 */
START_TEST(test_finish_after_lost_write)
{
	struct zdev *dev;

	tu_make_image(img, &base);
	dev = open_img(0);
	append(dev, 1, 4096, 10);
	ck_assert_int_eq(zdev_flush(dev), 0);
	append(dev, 1, 8192, 11); /* lost */
	zdev_close(dev);
	dev = open_img(0);
	ck_assert_int_eq(zdev_finish(dev, 1), 0);
	expect_pat(dev, 1 << 20, 4096, 10);
	expect_zeros(dev, (1 << 20) + 4096, (1 << 20) - 4096);
	zdev_close(dev);
}
END_TEST

/* Zone resources are counted from the table at open. */
START_TEST(test_resources_after_reopen)
{
	struct zemu_params p = base;
	struct zdev *dev;

	p.max_open = 2;
	p.max_active = 2;
	tu_make_image(img, &p);
	dev = open_img(0);
	append(dev, 0, 4096, 12);
	append(dev, 1, 4096, 12);
	ck_assert_int_eq(zdev_flush(dev), 0);
	zdev_close(dev);
	dev = open_img(0);
	expect_zone(dev, 0, ZDEV_COND_CLOSED, 4096);
	expect_zone(dev, 1, ZDEV_COND_CLOSED, 4096);
	ck_assert_int_eq(write_pat(dev, 2 << 20, 4096, 12), -EOVERFLOW);
	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_OPEN, 2), -EOVERFLOW);
	append(dev, 0, 4096, 12);
	append(dev, 1, 4096, 12);
	ck_assert_int_eq(zdev_reset(dev, 0), 0);
	append(dev, 2, 4096, 12);
	zdev_close(dev);
}
END_TEST

START_TEST(test_counters)
{
	struct zemu_counters c, c2;
	struct zdev *dev;

	tu_make_image(img, &base);
	dev = open_img(0);
	ck_assert_int_eq(zemu_counters(dev, &c), 0);
	ck_assert_uint_eq(c.media_bytes_written, 0);
	ck_assert_uint_eq(c.flushes, 0);
	ck_assert_uint_eq(c.resets, 0);
	append(dev, 1, 8192, 13);
	append(dev, 2, 4096, 13);
	ck_assert_int_eq(write_pat(dev, (5 << 20) + 4096, 4096, 13), -EIO);
	ck_assert_int_eq(zdev_reset(dev, 2), 0);
	ck_assert_int_eq(zdev_reset(dev, 3), 0); /* empty: not counted */
	ck_assert_int_eq(zdev_flush(dev), 0);
	ck_assert_int_eq(zemu_counters(dev, &c), 0);
	ck_assert_uint_eq(c.media_bytes_written, 12288);
	ck_assert_uint_eq(c.flushes, 1);
	ck_assert_uint_eq(c.resets, 1);
	zdev_close(dev);

	dev = open_img(0);
	ck_assert_int_eq(zemu_counters(dev, &c2), 0);
	ck_assert_mem_eq(&c, &c2, sizeof(c));
	/* Counted since the last flush only: lost with the writes. */
	append(dev, 4, 4096, 13);
	ck_assert_int_eq(zemu_counters(dev, &c2), 0);
	ck_assert_uint_eq(c2.media_bytes_written, 16384);
	zdev_close(dev);
	dev = open_img(0);
	ck_assert_int_eq(zemu_counters(dev, &c2), 0);
	ck_assert_mem_eq(&c, &c2, sizeof(c));
	ck_assert_int_eq(zdev_flush(dev), 0);
	ck_assert_int_eq(zemu_counters(dev, &c2), 0);
	ck_assert_uint_eq(c2.flushes, 2);
	zdev_close(dev);
}
END_TEST

/* ---- forced conditions --------------------------------------------------- */

START_TEST(test_set_cond)
{
	static const enum zdev_op ops[] = { ZDEV_OP_RESET, ZDEV_OP_FINISH,
					    ZDEV_OP_OPEN, ZDEV_OP_CLOSE };
	struct zemu_params p = base;
	struct zdev *dev;
	unsigned int i;
	char *buf;

	p.nr_conv = 1;
	p.max_open = 1;
	tu_make_image(img, &p);
	dev = open_img(0);
	buf = zdev_buf_alloc(dev, 4096);
	ck_assert_ptr_nonnull(buf);
	append(dev, 1, 8192, 14);
	append(dev, 2, 4096, 14);
	ck_assert_int_eq(zemu_set_cond(dev, 1, ZDEV_COND_READONLY), 0);
	ck_assert_int_eq(zemu_set_cond(dev, 2, ZDEV_COND_OFFLINE), 0);

	/* Read-only: readable, nothing else. */
	expect_pat(dev, 1 << 20, 8192, 14);
	ck_assert_int_eq(write_pat(dev, (1 << 20) + 8192, 4096, 14), -EIO);
	for (i = 0; i < ZF_ARRAY_SIZE(ops); i++)
		ck_assert_int_eq(zdev_zone_op(dev, ops[i], 1), -EIO);
	/* Offline: not even readable. */
	ck_assert_int_eq(zdev_read(dev, buf, 4096, 2 << 20), -EIO);
	ck_assert_int_eq(zdev_read(dev, buf, 4096, (2 << 20) + 65536), -EIO);
	ck_assert_int_eq(write_pat(dev, (2 << 20) + 4096, 4096, 14), -EIO);
	for (i = 0; i < ZF_ARRAY_SIZE(ops); i++)
		ck_assert_int_eq(zdev_zone_op(dev, ops[i], 2), -EIO);
	ck_assert_uint_eq(rep(dev, 1).cond, ZDEV_COND_READONLY);
	ck_assert_uint_eq(rep(dev, 2).cond, ZDEV_COND_OFFLINE);
	/* Their open resource was given back (max_open is 1). */
	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_OPEN, 3), 0);

	/* What cannot be forced. */
	ck_assert_int_eq(zemu_set_cond(dev, 3, ZDEV_COND_EMPTY), -EINVAL);
	ck_assert_int_eq(zemu_set_cond(dev, 3, ZDEV_COND_FULL), -EINVAL);
	ck_assert_int_eq(zemu_set_cond(dev, 0, ZDEV_COND_OFFLINE), -EINVAL);
	ck_assert_int_eq(zemu_set_cond(dev, 16, ZDEV_COND_OFFLINE), -EINVAL);
	zdev_close(dev);

	/* Persistent, with no flush. */
	dev = open_img(0);
	ck_assert_uint_eq(rep(dev, 1).cond, ZDEV_COND_READONLY);
	ck_assert_uint_eq(rep(dev, 2).cond, ZDEV_COND_OFFLINE);
	expect_pat(dev, 1 << 20, 8192, 14);
	ck_assert_int_eq(zdev_read(dev, buf, 4096, 2 << 20), -EIO);
	zdev_close(dev);
	dev = open_img(ZDEV_RDONLY);
	ck_assert_int_eq(zemu_set_cond(dev, 3, ZDEV_COND_OFFLINE), -EROFS);
	zdev_close(dev);
	free(buf);
}
END_TEST

/*
 * Media errors: a read that meets one fails whole with -EIO, reads beside
 * it work; they outlive the process; a reset of their zone (sequential)
 * or a write covering them whole (conventional) clears them.
 */
START_TEST(test_media_error)
{
	struct zemu_params p = base;
	struct zemu_bad bad[ZEMU_MAX_BAD];
	struct zdev *dev;
	unsigned int i;
	char *buf;

	p.nr_conv = 1;
	tu_make_image(img, &p);
	dev = open_img(0);
	buf = zdev_buf_alloc(dev, 16384);
	ck_assert_ptr_nonnull(buf);
	append(dev, 1, 16384, 21);
	ck_assert_int_eq(write_pat(dev, 0, 16384, 22), 0);
	ck_assert_int_eq(zdev_flush(dev), 0);
	ck_assert_int_eq(zemu_set_bad(dev, (1 << 20) + 4096, 4096), 0);
	ck_assert_int_eq(zemu_set_bad(dev, 4096, 8192), 0);

	ck_assert_int_eq(zdev_read(dev, buf, 16384, 1 << 20), -EIO);
	ck_assert_int_eq(zdev_read(dev, buf, 4096, (1 << 20) + 4096), -EIO);
	expect_pat(dev, 1 << 20, 4096, 21);
	expect_pat(dev, (1 << 20) + 8192, 8192, 21);
	ck_assert_int_eq(zdev_read(dev, buf, 4096, 8192), -EIO);
	expect_pat(dev, 12288, 4096, 22);
	ck_assert_uint_eq(zemu_bad_list(dev, bad, ZEMU_MAX_BAD), 2);
	zdev_close(dev);

	/* Kept in the image, with no flush. */
	dev = open_img(ZDEV_RDONLY);
	ck_assert_int_eq(zdev_read(dev, buf, 4096, (1 << 20) + 4096), -EIO);
	ck_assert_int_eq(zemu_set_bad(dev, 0, 4096), -EROFS);
	zdev_close(dev);

	dev = open_img(0);
	/* A write over part of a conventional one leaves it. */
	ck_assert_int_eq(write_pat(dev, 4096, 4096, 23), 0);
	ck_assert_int_eq(zdev_read(dev, buf, 4096, 8192), -EIO);
	/* One over all of it clears it: the drive remaps the block. */
	ck_assert_int_eq(write_pat(dev, 4096, 8192, 23), 0);
	expect_pat(dev, 4096, 8192, 23);
	/* A reset clears those of its zone. */
	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_RESET, 1), 0);
	ck_assert_uint_eq(zemu_bad_list(dev, bad, ZEMU_MAX_BAD), 0);
	append(dev, 1, 8192, 24);
	expect_pat(dev, 1 << 20, 8192, 24);

	/* What is refused. */
	ck_assert_int_eq(zemu_set_bad(dev, p.size, 4096), -EINVAL);
	ck_assert_int_eq(zemu_set_bad(dev, p.size - 4096, 8192), -EINVAL);
	for (i = 0; i < ZEMU_MAX_BAD; i++)
		ck_assert_int_eq(zemu_set_bad(dev, (2 << 20) + i * 4096ull,
					      4096), 0);
	ck_assert_int_eq(zemu_set_bad(dev, 3 << 20, 4096), -ENOSPC);
	ck_assert_int_eq(zemu_set_bad(dev, 0, 0), 0);
	ck_assert_uint_eq(zemu_bad_list(dev, bad, ZEMU_MAX_BAD), 0);
	zdev_close(dev);
	free(buf);
}
END_TEST

/* ---- damaged images ------------------------------------------------------ */

START_TEST(test_bad_random)
{
	unsigned char junk[8192];
	unsigned int i;
	int fd;

	srand(7);
	for (i = 0; i < sizeof(junk); i++)
		junk[i] = (unsigned char)rand();
	fd = open(img, O_CREAT | O_EXCL | O_WRONLY, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
	close(fd);
	expect_open_fails(-EMEDIUMTYPE);
	/* Too short to hold a header, or empty. */
	ck_assert_int_eq(truncate(img, 100), 0);
	expect_open_fails(-EMEDIUMTYPE);
	ck_assert_int_eq(truncate(img, 0), 0);
	expect_open_fails(-EMEDIUMTYPE);
}
END_TEST

START_TEST(test_bad_header_crc)
{
	tu_make_image(img, &base);
	poke64(HDR_SIZE, 32 << 20);
	expect_open_fails(-EUCLEAN);
}
END_TEST

START_TEST(test_bad_truncated)
{
	struct stat st;

	tu_make_image(img, &base);
	ck_assert_int_eq(stat(img, &st), 0);
	ck_assert_int_eq(truncate(img, st.st_size - 4096), 0);
	expect_open_fails(-EUCLEAN);
	ck_assert_int_eq(truncate(img, 8192), 0); /* into the table */
	expect_open_fails(-EUCLEAN);
	ck_assert_int_eq(truncate(img, 256), 0); /* the header alone */
	expect_open_fails(-EUCLEAN);
}
END_TEST

START_TEST(test_bad_zone_entry)
{
	tu_make_image(img, &base);
	poke64(TABLE_OFF + 5 * ZENT_SIZE + ZENT_WP, (5 << 20) + 4096);
	expect_open_fails(-EUCLEAN);
}
END_TEST

/* Entries with a valid CRC but impossible contents. */
START_TEST(test_bad_zone_values)
{
	static const struct {
		unsigned int field;
		unsigned int width;
		uint64_t v;
	} bad[] = {
		{ ZENT_WP, 8, (5ull << 20) - 4096 },	  /* below the zone */
		{ ZENT_WP, 8, (6ull << 20) + 4096 },	  /* above it */
		{ ZENT_WP, 8, (5ull << 20) + 100 },	  /* misaligned */
		{ ZENT_WP, 8, UINT64_MAX },		  /* overflow */
		{ 16, 8, 0 },				  /* no capacity */
		{ 16, 8, (1 << 20) + 4096 },		  /* capacity > size */
		{ 16, 8, 1000 },			  /* misaligned */
		{ ZENT_COND, 1, ZDEV_COND_NOT_WP },	  /* not sequential */
		{ ZENT_COND, 1, 0x7 },			  /* no such cond */
		{ ZENT_COND + 1, 1, ZDEV_ZONE_CONV },	  /* type */
		{ ZENT_COND + 1, 1, 9 },		  /* type */
	};
	unsigned char orig[ZENT_SIZE];
	off_t e = TABLE_OFF + 5 * ZENT_SIZE;
	unsigned int i;

	tu_make_image(img, &base);
	file_rw(false, orig, sizeof(orig), e);
	for (i = 0; i < ZF_ARRAY_SIZE(bad); i++) {
		file_rw(true, orig, sizeof(orig), e);
		if (bad[i].width == 8)
			poke64(e + bad[i].field, bad[i].v);
		else
			poke8(e + bad[i].field, (uint8_t)bad[i].v);
		seal_zone(5);
		expect_open_fails(-EUCLEAN);
	}
}
END_TEST

START_TEST(test_bad_version)
{
	tu_make_image(img, &base);
	poke32(HDR_VERSION, 2);
	seal_hdr();
	expect_open_fails(-ENOTSUP);
	poke32(HDR_VERSION, 1);
	poke32(HDR_FEATURES, 1u << 31);
	seal_hdr();
	expect_open_fails(-ENOTSUP);
	poke32(HDR_FEATURES, 0);
	seal_hdr();
	zdev_close(open_img(0));
}
END_TEST

/* A header with a valid CRC that describes what cannot be. */
START_TEST(test_bad_geometry)
{
	static const struct {
		unsigned int field;
		unsigned int width;
		uint64_t v;
	} bad[] = {
		{ HDR_BLOCK_SIZE, 4, 1024 },
		{ HDR_BLOCK_SIZE, 4, 0 },
		{ HDR_ZONE_SIZE, 8, 0 },
		{ HDR_ZONE_SIZE, 8, (1 << 20) + 512 },
		{ HDR_ZONE_SIZE, 8, 2 << 20 },
		{ HDR_SIZE, 8, 0 },
		{ HDR_SIZE, 8, 32ull << 20 },
		{ HDR_SIZE, 8, UINT64_MAX - 4095 },
		{ HDR_NR_ZONES, 4, 0 },
		{ HDR_NR_ZONES, 4, 17 },
		{ HDR_NR_ZONES, 4, UINT32_MAX },
		{ HDR_NR_CONV, 4, 16 },
		{ HDR_MAX_OPEN, 4, 17 },
		{ HDR_DATA_OFF, 8, 0 },
		{ HDR_DATA_OFF, 8, 4096 },
		{ HDR_DATA_OFF, 8, 1000 },
		{ HDR_DATA_OFF, 8, UINT64_MAX - 4095 },
		{ HDR_DATA_OFF, 8, UINT64_MAX - (16ull << 20) + 1 },
		{ 64, 8, 8192 }, /* table_off */
	};
	unsigned char orig[256];
	unsigned int i;

	tu_make_image(img, &base);
	file_rw(false, orig, sizeof(orig), 0);
	for (i = 0; i < ZF_ARRAY_SIZE(bad); i++) {
		file_rw(true, orig, sizeof(orig), 0);
		if (bad[i].width == 8)
			poke64(bad[i].field, bad[i].v);
		else
			poke32(bad[i].field, (uint32_t)bad[i].v);
		seal_hdr();
		expect_open_fails(-EUCLEAN);
	}
}
END_TEST

/*
 * Random damage to the header (resealed, so it gets past the CRC) and to
 * the table must give an error or a working device, never a crash; under
 * ASan and UBSan, never an overflow either.
 */
START_TEST(test_bad_fuzz)
{
	static unsigned char pristine[TABLE_OFF + 16 * ZENT_SIZE];
	static unsigned char cur[sizeof(pristine)];
	struct stat st;
	unsigned int i, j;

	tu_make_image(img, &base);
	file_rw(false, pristine, sizeof(pristine), 0);
	ck_assert_int_eq(stat(img, &st), 0);
	srand(1234);
	for (i = 0; i < 400; i++) {
		unsigned int nr = 1 + (unsigned int)rand() % 4;
		bool table = i % 2;
		struct zdev *dev = NULL;
		char err[256] = "";
		int ret;

		memcpy(cur, pristine, sizeof(cur));
		for (j = 0; j < nr; j++) {
			unsigned int off = (unsigned int)rand();

			off = table ? TABLE_OFF + off % (16 * ZENT_SIZE) :
				      off % HDR_CRC;

			cur[off] ^= (unsigned char)(1 + rand() % 255);
		}
		ck_assert_int_eq(truncate(img, st.st_size), 0);
		file_rw(true, cur, sizeof(cur), 0);
		if (table)
			for (j = 0; j < 16; j++)
				seal_zone(j);
		else
			seal_hdr();
		ret = zdev_open(img, 0, &dev, err, sizeof(err));
		if (ret == 0) {
			struct zdev_zone z[16];
			char *buf = zdev_buf_alloc(dev, 4096);

			ck_assert_ptr_nonnull(buf);
			ck_assert_int_ge(zdev_report(dev, 0, 16, z), 1);
			memset(buf, 0, 4096);
			zdev_read(dev, buf, 4096, 0);
			zdev_write(dev, buf, 4096, z[0].wp);
			free(buf);
			zdev_close(dev);
		} else {
			ck_assert_int_lt(ret, 0);
			ck_assert_ptr_null(dev);
			ck_assert_msg(strstr(err, img), "round %u: \"%s\"", i,
				      err);
		}
	}
}
END_TEST

/* ---- locking and read-only ----------------------------------------------- */

START_TEST(test_exclusive)
{
	struct zdev *dev, *r1, *r2, *d2 = NULL;
	char err[256] = "";

	tu_make_image(img, &base);
	dev = open_img(0);
	ck_assert_int_eq(zdev_open(img, 0, &d2, err, sizeof(err)), -EBUSY);
	ck_assert(strstr(err, img));
	ck_assert_int_eq(zdev_open(img, ZDEV_EXCL, &d2, NULL, 0), -EBUSY);
	ck_assert_int_eq(zdev_open(img, ZDEV_RDONLY | ZDEV_EXCL, &d2, NULL, 0),
			 -EBUSY);
	ck_assert_ptr_null(d2);
	r1 = open_img(ZDEV_RDONLY); /* a plain reader takes no lock */
	zdev_close(r1);
	zdev_close(dev);

	/* Exclusive readers share the image with each other only. */
	r1 = open_img(ZDEV_RDONLY | ZDEV_EXCL);
	r2 = open_img(ZDEV_RDONLY | ZDEV_EXCL);
	ck_assert_int_eq(zdev_open(img, 0, &d2, NULL, 0), -EBUSY);
	zdev_close(r1);
	zdev_close(r2);
	dev = open_img(0);
	zdev_close(dev);
}
END_TEST

START_TEST(test_rdonly)
{
	static const enum zdev_op ops[] = { ZDEV_OP_RESET, ZDEV_OP_FINISH,
					    ZDEV_OP_OPEN, ZDEV_OP_CLOSE };
	struct zdev *dev;
	struct stat st1, st2;
	struct zdev_io io;
	unsigned int i;
	char *buf;

	tu_make_image(img, &base);
	dev = open_img(0);
	append(dev, 1, 4096, 15);
	ck_assert_int_eq(zdev_flush(dev), 0);
	zdev_close(dev);
	ck_assert_int_eq(stat(img, &st1), 0);

	dev = open_img(ZDEV_RDONLY);
	buf = zdev_buf_alloc(dev, 4096);
	ck_assert_ptr_nonnull(buf);
	expect_pat(dev, 1 << 20, 4096, 15);
	ck_assert_int_eq(write_pat(dev, (1 << 20) + 4096, 4096, 15), -EROFS);
	for (i = 0; i < ZF_ARRAY_SIZE(ops); i++)
		ck_assert_int_eq(zdev_zone_op(dev, ops[i], 1), -EROFS);
	io = (struct zdev_io){ .op = ZDEV_OP_WRITE, .buf = buf, .len = 4096,
			       .off = 2 << 20 };
	ck_assert_int_eq(zdev_submit(dev, &io, 1), -EROFS);
	ck_assert_int_eq(zdev_flush(dev), 0);
	zdev_close(dev);
	ck_assert_int_eq(stat(img, &st2), 0);
	ck_assert_int_eq(st1.st_mtim.tv_sec, st2.st_mtim.tv_sec);
	ck_assert_int_eq(st1.st_mtim.tv_nsec, st2.st_mtim.tv_nsec);
	free(buf);
}
END_TEST

/*
 * Where null_blk and NVMe ZNS (QEMU) answer differently, the emulator gives
 * null_blk's answer, the stricter one in each case below (check_zdev only
 * checks what both guarantee). Seen on Linux 6.1 null_blk and QEMU 7.2 ZNS.
 */
START_TEST(test_null_blk_rules)
{
	struct zemu_params p = base;
	struct zdev *dev;
	unsigned int i;

	p.max_open = 2;
	p.max_active = 3;
	p.zone_capacity = 512 << 10;
	tu_make_image(img, &p);
	dev = open_img(0);
	for (i = 0; i < 3; i++)
		append(dev, i, 4096, 17);
	ck_assert_uint_eq(rep(dev, 0).cond, ZDEV_COND_CLOSED);
	/* Finishing an empty zone needs an active resource (ZNS: full). */
	ck_assert_int_eq(zdev_finish(dev, 5), -EOVERFLOW);
	/*
	 * At both limits, a write to a closed zone does not close an
	 * implicitly open one to make room (ZNS does, and writes).
	 */
	ck_assert_int_eq(write_pat(dev, (0 << 20) + 4096, 4096, 17),
			 -ETOOMANYREFS);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(zdev_reset(dev, i), 0);

	/* Finishing a closed zone needs an open resource (ZNS: full). */
	append(dev, 0, 4096, 17);
	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_CLOSE, 0), 0);
	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_OPEN, 1), 0);
	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_OPEN, 2), 0);
	ck_assert_int_eq(zdev_finish(dev, 0), -ETOOMANYREFS);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(zdev_reset(dev, i), 0);

	/* An unwritten zone, opened and closed, is empty (ZNS: closed). */
	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_OPEN, 3), 0);
	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_CLOSE, 3), 0);
	expect_zone(dev, 3, ZDEV_COND_EMPTY, 0);

	/* Written full, wp = start + capacity (ZNS: start + zone size). */
	append(dev, 4, 512 << 10, 17);
	expect_zone(dev, 4, ZDEV_COND_FULL, 512 << 10);
	zdev_close(dev);
}
END_TEST

/* ---- threads ------------------------------------------------------------- */

struct writer {
	struct zdev *dev;
	uint32_t zone;
	int ret;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	uint64_t off = (uint64_t)w->zone << 20;
	unsigned int i;

	for (i = 0; i < 64 && !w->ret; i++) {
		w->ret = write_pat(w->dev, off, 4096, 16);
		off += 4096;
		if (i % 16 == 0 && !w->ret)
			w->ret = zdev_flush(w->dev);
	}
	return NULL;
}

/*
 * Writers to more zones than the open limit, at once: as on a device, each
 * write finds an open zone to give up (one with no write in flight), or
 * waits for one, and none fails.
 */
START_TEST(test_threads)
{
	struct zemu_params p = base;
	struct writer w[6];
	pthread_t t[6];
	struct zdev *dev;
	unsigned int i;

	p.max_open = 2;
	tu_make_image(img, &p);
	dev = open_img(0);
	for (i = 0; i < 6; i++) {
		w[i] = (struct writer){ .dev = dev, .zone = i + 1 };
		ck_assert_int_eq(pthread_create(&t[i], NULL, writer_main,
						&w[i]),
				 0);
	}
	for (i = 0; i < 6; i++)
		pthread_join(t[i], NULL);
	for (i = 0; i < 6; i++) {
		ck_assert_msg(w[i].ret == 0, "writer of zone %u: %d",
			      w[i].zone, w[i].ret);
		ck_assert_uint_eq(rep(dev, i + 1).wp,
				  ((uint64_t)(i + 1) << 20) + 64 * 4096);
		expect_pat(dev, (uint64_t)(i + 1) << 20, 64 * 4096, 16);
	}
	zdev_close(dev);
}
END_TEST

static void add(Suite *s, const char *name, const TTest *t)
{
	tu_add_case(s, name, t, setup, teardown, 30);
}

static Suite *zemu_suite(void)
{
	Suite *s = suite_create("zemu");

	add(s, "check_params", test_check_params);
	add(s, "limits_past_zone_count", test_limits_past_zone_count);
	add(s, "create_exists", test_create_exists);
	add(s, "create_cleanup", test_create_cleanup);
	add(s, "persist_zones", test_persist_zones);
	add(s, "persist_resets", test_persist_resets);
	add(s, "flush_rule", test_flush_rule);
	add(s, "zone_ops_persisted", test_zone_ops_persisted);
	add(s, "finish_after_lost_write", test_finish_after_lost_write);
	add(s, "resources_after_reopen", test_resources_after_reopen);
	add(s, "counters", test_counters);
	add(s, "set_cond", test_set_cond);
	add(s, "media_error", test_media_error);
	add(s, "bad_random", test_bad_random);
	add(s, "bad_header_crc", test_bad_header_crc);
	add(s, "bad_truncated", test_bad_truncated);
	add(s, "bad_zone_entry", test_bad_zone_entry);
	add(s, "bad_zone_values", test_bad_zone_values);
	add(s, "bad_version", test_bad_version);
	add(s, "bad_geometry", test_bad_geometry);
	add(s, "bad_fuzz", test_bad_fuzz);
	add(s, "exclusive", test_exclusive);
	add(s, "rdonly", test_rdonly);
	add(s, "null_blk_rules", test_null_blk_rules);
	add(s, "threads", test_threads);
	return s;
}

int main(void)
{
	printf("check_zemu: emulator images: creation, persistence and the flush rule, counters, forced conditions, damaged images, locking\n");
	return tu_run(zemu_suite());
}
