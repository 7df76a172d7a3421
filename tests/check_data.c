// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Tests of the data path's reads (data.c) through the file-system library,
 * on emulator images, without FUSE: whatever the buffer (aligned for the
 * device, from zfs_read_buf(), or not), a read returns the file's bytes,
 * from extents read straight into it or through a bounce buffer, with
 * holes as zeros and staged data laid over the device's.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "zonefuse/zemu.h"
#include "zfs_i.h"
#include "zonefuse/util.h"


/* The file the tests build: 7 MiB + 5000 bytes, holes and all. */
#define FILE_SIZE (7 * TU_MIB + 5000)

static void mkfs(uint32_t bs)
{
	struct zemu_params p = {
		.size = 64 * TU_MIB,
		.zone_size = 4 * TU_MIB,
		.block_size = bs,
	};

	tu_mkfs_image(tu_img, &p);
}

/* A fresh 256 MiB image of 4096-byte blocks, mounted with its threads. */
static struct zfs *mount_large(void)
{
	struct zemu_params p = {
		.size = 256 * TU_MIB,
		.zone_size = 4 * TU_MIB,
		.block_size = 4096,
	};

	tu_mkfs_image(tu_img, &p);
	return tu_mount(tu_img, false);
}

/* Write the pattern of @seed at [off, off + len) of /f and of @model. */
static void put(struct zfs *fs, char *model, uint64_t off, size_t len,
		uint32_t seed)
{
	char *tmp = malloc(ZF_ROUND_UP(len, 8u));

	ck_assert_ptr_nonnull(tmp);
	TU_OK(tu_write(fs, "/f", off, len, seed));
	tu_fill(tmp, ZF_ROUND_UP(len, 8u), off, seed);
	memcpy(model + off, tmp, len);
	free(tmp);
}

/*
 * /f with every kind of piece a read meets: whole chunks on the device,
 * a block rewritten in part (read-modify-write, a later extent over an
 * earlier one), a hole, an unaligned end, and data still staged.
 */
static char *build(struct zfs *fs)
{
	char *model = calloc(1, FILE_SIZE);

	ck_assert_ptr_nonnull(model);
	put(fs, model, 0, 3 * TU_MIB, 1);
	TU_OK(zfs_sync(fs));
	put(fs, model, 3 * 4096 + 512, 10000, 2);
	put(fs, model, 6 * TU_MIB, TU_MIB + 5000, 3); /* 3..6 MiB is a hole */
	TU_OK(zfs_sync(fs));
	put(fs, model, TU_MIB + 4096, 8192, 4); /* staged, not synced */
	return model;
}

/* Read [off, off + len) of /f into @buf; assert it is @model's. */
static void check_read(struct zfs *fs, uint64_t ino, char *buf,
		       const char *model, uint64_t off, size_t len)
{
	size_t want = off >= FILE_SIZE ? 0 : ZF_MIN(len, FILE_SIZE - off);
	ssize_t n;

	memset(buf, 0xa5, len);
	n = zfs_read(fs, ino, buf, len, (off_t)off);
	ck_assert_int_eq(n, (ssize_t)want);
	ck_assert_msg(!memcmp(buf, model + off, want),
		      "read of %zu at %llu differs from what was written", len,
		      (unsigned long long)off);
}

/* Reads the kernel sends (page-aligned) and reads it does not. */
static const struct {
	uint64_t off;
	size_t len;
} reads[] = {
	{ 0, FILE_SIZE },	       /* everything */
	{ 0, 128 << 10 },	       /* readahead-sized, one extent */
	{ 8192, 16384 },	       /* over the rewritten block */
	{ TU_MIB, TU_MIB },		       /* under the staged data */
	{ 3 * TU_MIB - 4096, 8192 },      /* from data into the hole */
	{ 4 * TU_MIB, 4096 },	       /* inside the hole */
	{ 6 * TU_MIB - 4096, 2 * TU_MIB },   /* from the hole to the end */
	{ 7 * TU_MIB, TU_MIB },	       /* the unaligned end, asked past it */
	{ 3 * 4096 + 100, 10000 },     /* unaligned in the file */
	{ 2 * TU_MIB + 7, 3 },	       /* a few bytes */
	{ FILE_SIZE, 4096 },	       /* at the end: nothing */
};

static void read_all_ways(uint32_t bs)
{
	struct zfs *fs;
	char *model, *direct, *plain;
	int64_t ino;
	size_t i;

	mkfs(bs);
	fs = tu_mount(tu_img, false);
	model = build(fs);
	ino = tu_ino(fs, "/f");
	ck_assert_int_gt(ino, 0);
	TU_OK(zfs_open(fs, &tu_root_ctx, (uint64_t)ino, O_RDONLY, NULL));
	direct = zfs_read_buf(fs, FILE_SIZE + TU_MIB);
	plain = malloc(FILE_SIZE + TU_MIB + 1);
	ck_assert_ptr_nonnull(direct);
	ck_assert_ptr_nonnull(plain);
	ck_assert_uint_eq((uintptr_t)direct % zdev_buf_align(fs->dev), 0);
	for (i = 0; i < ZF_ARRAY_SIZE(reads); i++) {
		check_read(fs, (uint64_t)ino, direct, model, reads[i].off,
			   reads[i].len);
		/* One byte off: never aligned, every piece bounced. */
		check_read(fs, (uint64_t)ino, plain + 1, model, reads[i].off,
			   reads[i].len);
	}
	TU_OK(zfs_release(fs, (uint64_t)ino, 0));
	zfs_read_buf_put(fs, direct, FILE_SIZE + TU_MIB);
	free(plain);
	free(model);
	tu_unmount(fs);
}

/* A read returns the file's bytes, into any buffer (4096-byte blocks). */
START_TEST(test_read_any_buffer)
{
	read_all_ways(4096);
}
END_TEST

/* The same with 512-byte blocks: pieces align to blocks, not pages. */
START_TEST(test_read_any_buffer_512)
{
	read_all_ways(512);
}
END_TEST

/* The same after a remount: every piece from the device, none staged. */
START_TEST(test_read_after_remount)
{
	struct zfs *fs;
	char *model, *direct;
	int64_t ino;
	size_t i;

	mkfs(4096);
	fs = tu_mount(tu_img, false);
	model = build(fs);
	tu_unmount(fs);
	fs = tu_mount(tu_img, true);
	ino = tu_ino(fs, "/f");
	ck_assert_int_gt(ino, 0);
	TU_OK(zfs_open(fs, &tu_root_ctx, (uint64_t)ino, O_RDONLY, NULL));
	direct = zfs_read_buf(fs, FILE_SIZE + TU_MIB);
	ck_assert_ptr_nonnull(direct);
	for (i = 0; i < ZF_ARRAY_SIZE(reads); i++)
		check_read(fs, (uint64_t)ino, direct, model, reads[i].off,
			   reads[i].len);
	TU_OK(zfs_release(fs, (uint64_t)ino, 0));
	zfs_read_buf_put(fs, direct, FILE_SIZE + TU_MIB);
	free(model);
	tu_unmount(fs);
}
END_TEST

/*
 * A block whose bytes changed on the medium, or that the device cannot
 * read, is never handed back: the reads that touch it fail with EIO, the
 * blocks around it read, the failure is counted, and scrub names the
 * range (and only it).
 */
static void damaged_block(uint32_t bs)
{
	struct zfs_scrub_file sr;
	struct zfs_stats st;
	struct zemu_bad bad;
	uint64_t a;
	int64_t ino;
	char x = 'X';
	struct zfs *fs;

	mkfs(bs);
	fs = tu_mount(tu_img, false);
	TU_OK(tu_write(fs, "/f", 0, 256 * 1024, 7));
	TU_OK(zfs_sync(fs));
	ino = tu_ino(fs, "/f");
	a = zm_iget(&fs->m, (uint64_t)ino)->f.ext[0].addr;
	tu_unmount(fs);

	/* One byte of the block at file offset 64 KiB. */
	tu_image_write(tu_img, a + 65536 + 100, &x, 1);
	fs = tu_mount(tu_img, true);
	ck_assert_int_eq(tu_verify(fs, "/f", 65536, bs, 7), -EIO);
	ck_assert_int_eq(tu_verify(fs, "/f", 0, 131072, 7), -EIO); /* across it */
	TU_OK(tu_verify(fs, "/f", 0, 65536 - 4096, 7));
	TU_OK(tu_verify(fs, "/f", 65536 + 4096, 65536, 7));
	TU_OK(zfs_get_stats(fs, &st));
	ck_assert_uint_ge(st.checksum_errors, 2);
	TU_OK(zfs_scrub_file(fs, (uint64_t)ino, &sr));
	ck_assert_uint_eq(sr.bytes, 256 * 1024);
	ck_assert_uint_eq(sr.nbad, 1);
	ck_assert_uint_eq(sr.bad[0].foff, 65536 + ZF_ROUND_DOWN(100u, bs));
	ck_assert_uint_eq(sr.bad[0].len, bs);
	ck_assert(!sr.bad[0].unreadable);
	tu_unmount(fs);

	/* A media error on the block at 128 KiB: EIO too, said as such. */
	{
		struct zdev *dev;
		char err[256];

		TU_OK(zdev_open(tu_img, ZDEV_EXCL, &dev, err, sizeof(err)));
		TU_OK(zemu_set_bad(dev, a + 131072, bs));
		zdev_close(dev);
	}
	fs = tu_mount(tu_img, true);
	ck_assert_int_eq(tu_verify(fs, "/f", 131072, bs, 7), -EIO);
	TU_OK(tu_verify(fs, "/f", 131072 + 4096, 4096, 7));
	TU_OK(zfs_scrub_file(fs, (uint64_t)ino, &sr));
	ck_assert_uint_eq(sr.nbad, 2);
	ck_assert_uint_eq(sr.bad[1].foff, 131072);
	ck_assert(sr.bad[1].unreadable);
	ck_assert_uint_eq(zemu_bad_list(fs->dev, &bad, 1), 1);
	tu_unmount(fs);
}

START_TEST(test_damaged_block_eio)
{
	damaged_block(4096);
}
END_TEST

START_TEST(test_damaged_block_eio_512)
{
	damaged_block(512);
}
END_TEST

/* Reading a directory or a missing inode says so. */
START_TEST(test_read_errors)
{
	struct zfs *fs;
	char *buf;
	int64_t d;

	mkfs(4096);
	fs = tu_mount(tu_img, false);
	TU_OK(tu_mkdir(fs, "/d", 0755));
	d = tu_ino(fs, "/d");
	buf = zfs_read_buf(fs, 4096);
	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(zfs_read(fs, (uint64_t)d, buf, 4096, 0), -EISDIR);
	ck_assert_int_eq(zfs_read(fs, 999999, buf, 4096, 0), -ENOENT);
	ck_assert_int_eq(zfs_read(fs, (uint64_t)d, buf, 4096, -1), -EINVAL);
	zfs_read_buf_put(fs, buf, 4096);
	tu_unmount(fs);
}
END_TEST

/*
 * Large read buffers are handed from one read to the next, on read-write
 * and read-only mounts alike; every size is aligned for the device.
 */
static void read_bufs_reused(bool rdonly)
{
	static const size_t sizes[] = { 1, 4096, 128 * 1024, ZFS_CHUNK,
					ZFS_CHUNK + 4096 };
	struct zfs *fs;
	char *a, *b;
	uint32_t n;
	size_t i;

	fs = tu_mount(tu_img, rdonly);
	for (i = 0; i < ZF_ARRAY_SIZE(sizes); i++) {
		a = zfs_read_buf(fs, sizes[i]);
		ck_assert_ptr_nonnull(a);
		ck_assert_uint_eq((uintptr_t)a % zdev_buf_align(fs->dev), 0);
		memset(a, 0x5a, sizes[i]);
		zfs_read_buf_put(fs, a, sizes[i]);
	}
	/* A large buffer comes from the chunk pool and goes back to it. */
	n = fs->nr_pool;
	ck_assert_uint_gt(n, 0);
	a = zfs_read_buf(fs, 256 * 1024);
	ck_assert_uint_eq(fs->nr_pool, n - 1);
	ck_assert_ptr_eq(a, fs->pool[n - 1]);
	b = zfs_read_buf(fs, 4096); /* a small one does not */
	ck_assert_uint_eq(fs->nr_pool, n - 1);
	zfs_read_buf_put(fs, b, 4096);
	zfs_read_buf_put(fs, a, 256 * 1024);
	ck_assert_uint_eq(fs->nr_pool, n);
	tu_unmount(fs);
}

START_TEST(test_read_bufs_reused)
{
	mkfs(4096);
	read_bufs_reused(false);
	read_bufs_reused(true);
}
END_TEST

/* Extents of @path (0 when its data is all staged). */
static uint32_t n_extents(struct zfs *fs, const char *path)
{
	int64_t ino = tu_ino(fs, path);
	struct zm_inode *in;
	uint32_t n;

	ck_assert_int_gt(ino, 0);
	zlock_rd(&fs->meta_lock, ZLOCK_META);
	in = zm_iget(&fs->m, (uint64_t)ino);
	ck_assert_ptr_nonnull(in);
	n = in->f.n_ext;
	zlock_unrw(&fs->meta_lock);
	return n;
}

/*
 * The last close of a new file of one chunk writes its data before it
 * returns (a writeback thread would take a while to wake: checked on 50
 * files, some would still be staged). With free zones low it is left to
 * the writeback threads, and arrives all the same.
 */
START_TEST(test_close_writes_small_file)
{
	char path[32];
	struct zfs *fs;
	int i;

	mkfs(4096);
	fs = tu_mount(tu_img, false);
	for (i = 0; i < 50; i++) {
		snprintf(path, sizeof(path), "/s%d", i);
		TU_OK(tu_write(fs, path, 0, 5000, (uint32_t)i + 1));
		ck_assert_uint_gt(n_extents(fs, path), 0);
	}
	fs->space_low = true;
	TU_OK(tu_write(fs, "/low", 0, 5000, 99));
	TU_OK(zfs_sync(fs));
	ck_assert_uint_gt(n_extents(fs, "/low"), 0);
	tu_unmount(fs);
	fs = tu_mount(tu_img, true);
	for (i = 0; i < 50; i++) {
		snprintf(path, sizeof(path), "/s%d", i);
		TU_OK(tu_verify(fs, path, 0, 5000, (uint32_t)i + 1));
	}
	TU_OK(tu_verify(fs, "/low", 0, 5000, 99));
	tu_unmount(fs);
}
END_TEST

/* zfs_write() of the pattern of @seed at [off, off + len) of @ino, @model's. */
static void wr(struct zfs *fs, uint64_t ino, char *model, uint64_t off,
	       size_t len, uint32_t seed)
{
	char *tmp = malloc(ZF_ROUND_UP(len, 8u));

	ck_assert_ptr_nonnull(tmp);
	tu_fill(tmp, ZF_ROUND_UP(len, 8u), off, seed);
	ck_assert_int_eq(zfs_write(fs, &tu_root_ctx, ino, tmp, len, (off_t)off,
				   false),
			 (ssize_t)len);
	memcpy(model + off, tmp, len);
	free(tmp);
}

/*
 * The checksum a write takes of a block it leaves filled whole is the
 * block's as it goes to the device, whatever comes between: a rewrite of
 * part of it, a truncate that cuts it (the writeback then completes it
 * from the file's data), appends that fill it bit by bit, a sync between
 * writes. The file stays open throughout, so that its chunks stay staged
 * between writes (a last close writes a new file's data). Every block of
 * /f then passes its check, at once and after a remount, and both ways of
 * taking checksums were used.
 */
static void csums_follow_bytes(uint32_t bs)
{
	const size_t size = 3 * TU_MIB + 12288;
	struct zfs_scrub_file sr;
	struct zfs_stats st;
	char *model = calloc(1, size), *buf = malloc(size);
	struct zfs *fs;
	uint64_t ino;
	int i;

	ck_assert_ptr_nonnull(model);
	ck_assert_ptr_nonnull(buf);
	mkfs(bs);
	fs = tu_mount(tu_img, false);
	TU_OK(tu_write(fs, "/f", 0, 0, 1));
	ino = (uint64_t)tu_ino(fs, "/f");
	TU_OK(zfs_open(fs, &tu_root_ctx, ino, O_RDWR, NULL));
	wr(fs, ino, model, 0, 65536, 1);	  /* whole blocks: taken */
	wr(fs, ino, model, 4096 + 104, 200, 2); /* part of a whole block */
	wr(fs, ino, model, 20000, 48, 3);
	TU_OK(tu_truncate(fs, "/f", 10000)); /* cuts the block at 8 KiB */
	memset(model + 10000, 0, size - 10000);
	wr(fs, ino, model, 12288, 4096, 4);
	for (i = 0; i < 5; i++) /* fills the block at 16 KiB piece by piece */
		wr(fs, ino, model, 16384 + (uint64_t)i * 1000, 1000, 6);
	TU_OK(zfs_fsync(fs, ino, false));
	wr(fs, ino, model, 16384 + 504, 1000, 7); /* over synced data */
	wr(fs, ino, model, TU_MIB + 4096, 65536, 5); /* taken, then overwritten */
	wr(fs, ino, model, 65536, 3 * TU_MIB - 65536, 8); /* chunks filled whole */
	wr(fs, ino, model, 3 * TU_MIB, 12288, 9);
	wr(fs, ino, model, 3 * TU_MIB + 4096, 8, 10);
	TU_OK(zfs_fsync(fs, ino, false));
	TU_OK(zfs_get_stats(fs, &st));
	ck_assert_uint_gt(st.checksums_at_write, 0);
	ck_assert_uint_gt(st.checksums_at_writeback, 0);
	TU_OK(zfs_scrub_file(fs, ino, &sr));
	ck_assert_uint_eq(sr.nbad, 0);
	ck_assert_uint_eq(st.checksum_errors, 0);
	TU_OK(zfs_release(fs, ino, 0));
	tu_unmount(fs);

	fs = tu_mount(tu_img, true);
	TU_OK(zfs_scrub_file(fs, ino, &sr));
	ck_assert_uint_eq(sr.nbad, 0);
	ck_assert_uint_gt(sr.bytes, 3 * TU_MIB - 65536);
	TU_OK(zfs_open(fs, &tu_root_ctx, ino, O_RDONLY, NULL));
	ck_assert_int_eq(zfs_read(fs, ino, buf, size, 0), (ssize_t)size);
	ck_assert(!memcmp(buf, model, size));
	TU_OK(zfs_release(fs, ino, 0));
	tu_unmount(fs);
	free(buf);
	free(model);
}

START_TEST(test_csums_follow_bytes)
{
	csums_follow_bytes(4096);
}
END_TEST

START_TEST(test_csums_follow_bytes_512)
{
	csums_follow_bytes(512);
}
END_TEST

/* What fail_writes() fails, and how many it failed. */
static struct {
	struct zfs *fs;
	bool journal;
	_Atomic unsigned int fired;
} fail;

static int fail_writes(void *arg, enum zdev_op op, uint32_t zone, uint64_t off,
		       size_t len)
{
	int state;

	(void)arg;
	(void)off;
	(void)len;
	if (op != ZDEV_OP_WRITE)
		return 0;
	state = fail.fs->m.zones[zone].state;
	if (fail.journal ? state != ZM_ZONE_META && state != ZM_ZONE_SUPER :
			   state != ZM_ZONE_DATA)
		return 0;
	fail.fired++;
	return -EIO;
}

/*
 * From now until zdev_set_fault(dev, NULL, NULL), fail with EIO every write
 * to a data zone, or with @journal every write to the journal's zones.
 */
static void fail_arm(struct zfs *fs, bool journal)
{
	fail.fs = fs;
	fail.journal = journal;
	fail.fired = 0;
	zdev_set_fault(fs->dev, fail_writes, NULL);
}

/* zfs_read() of [off, off + len) of inode @ino: the byte count or errno. */
static ssize_t read_at(struct zfs *fs, uint64_t ino, uint64_t off, size_t len)
{
	char *buf = malloc(len);
	ssize_t n;

	ck_assert_ptr_nonnull(buf);
	n = zfs_read(fs, ino, buf, len, (off_t)off);
	free(buf);
	return n;
}

/*
 * Bytes whose writeback failed read as EIO, not as the older bytes under
 * them, until written again (and landed) or truncated away; the rest of
 * the file reads as before, and the file system stays writable. An
 * unlinked file's ranges go with it.
 */
START_TEST(test_lost_write_reads_eio)
{
	const uint64_t lo = 8192, hi = 8192 + 10000; /* the lost write */
	struct zfs *fs;
	int64_t ino, g;

	mkfs(4096);
	fs = tu_mount(tu_img, false);
	TU_OK(tu_write(fs, "/f", 0, TU_MIB, 1));
	TU_OK(tu_write(fs, "/g", 0, 3 * TU_MIB, 1));
	TU_OK(zfs_sync(fs));
	ino = tu_ino(fs, "/f");
	g = tu_ino(fs, "/g");
	ck_assert_int_gt(ino, 0);
	ck_assert_int_gt(g, 0);

	fail_arm(fs, false);
	TU_OK(tu_write(fs, "/f", lo, (size_t)(hi - lo), 2));
	TU_OK(tu_write(fs, "/g", TU_MIB, TU_MIB, 2));
	TU_OK(zfs_open(fs, &tu_root_ctx, (uint64_t)ino, O_RDWR, NULL));
	ck_assert_int_eq(zfs_fsync(fs, (uint64_t)ino, false), -EIO);
	TU_OK(zfs_release(fs, (uint64_t)ino, 0));
	TU_OK(zfs_sync(fs)); /* syncfs does not say which file lost data */
	zdev_set_fault(fs->dev, NULL, NULL);
	ck_assert_uint_gt(fail.fired, 0);
	ck_assert_int_eq(fs->error, 0);

	/* The lost bytes, and any read that meets them. */
	ck_assert_int_eq(read_at(fs, (uint64_t)ino, lo, hi - lo), -EIO);
	ck_assert_int_eq(read_at(fs, (uint64_t)ino, 0, TU_MIB), -EIO);
	ck_assert_int_eq(read_at(fs, (uint64_t)ino, hi - 1, 1), -EIO);
	/* Around them, in the same blocks too: the file's bytes. */
	TU_OK(tu_verify(fs, "/f", 0, lo, 1));
	TU_OK(tu_verify(fs, "/f", hi, TU_MIB - hi, 1));
	/* fsync reported the loss once; the file system goes on. */
	TU_OK(zfs_open(fs, &tu_root_ctx, (uint64_t)ino, O_RDWR, NULL));
	TU_OK(zfs_fsync(fs, (uint64_t)ino, false));
	TU_OK(zfs_release(fs, (uint64_t)ino, 0));

	/* Written again and landed: those bytes are back, the rest not. */
	TU_OK(tu_write(fs, "/f", 12288, 4096, 3));
	TU_OK(zfs_sync(fs));
	TU_OK(tu_verify(fs, "/f", 12288, 4096, 3));
	ck_assert_int_eq(read_at(fs, (uint64_t)ino, lo, 4096), -EIO);
	ck_assert_int_eq(read_at(fs, (uint64_t)ino, 16384, hi - 16384), -EIO);

	/* Truncated: what is left of the range still fails; then none. */
	TU_OK(tu_truncate(fs, "/f", 16384 + 8));
	ck_assert_int_eq(read_at(fs, (uint64_t)ino, 16384, 8), -EIO);
	TU_OK(tu_truncate(fs, "/f", 12288));
	TU_OK(tu_truncate(fs, "/f", TU_MIB));
	TU_OK(tu_verify(fs, "/f", 0, lo, 1));
	ck_assert_int_eq(read_at(fs, (uint64_t)ino, lo, 4096), -EIO);
	TU_OK(tu_truncate(fs, "/f", lo));
	TU_OK(tu_truncate(fs, "/f", TU_MIB));
	TU_OK(tu_verify(fs, "/f", lo, TU_MIB - lo, 0));

	/* /g's lost MiB goes with the file. */
	ck_assert_int_eq(read_at(fs, (uint64_t)g, TU_MIB, 4096), -EIO);
	ck_assert_uint_gt(fs->nr_lost, 0);
	TU_OK(tu_unlink(fs, "/g"));
	ck_assert_uint_eq(fs->nr_lost, 0);
	tu_unmount(fs);

	/* Not kept across a remount: the journal's bytes read back. */
	fs = tu_mount(tu_img, true);
	TU_OK(tu_verify(fs, "/f", 0, lo, 1));
	tu_unmount(fs);
}
END_TEST

/*
 * The journal fails while a file's data is staged: the file system turns
 * read-only, the data is written but its extents cannot be logged, and its
 * bytes read as EIO, not as the file's older bytes.
 */
START_TEST(test_lost_when_journal_fails)
{
	struct zfs *fs;
	int64_t ino;

	mkfs(4096);
	fs = tu_mount(tu_img, false);
	TU_OK(tu_write(fs, "/f", 0, 2 * TU_MIB, 1));
	TU_OK(zfs_sync(fs));
	ino = tu_ino(fs, "/f");
	ck_assert_int_gt(ino, 0);
	TU_OK(tu_write(fs, "/f", 4096, 3 * 4096, 2)); /* staged */

	fail_arm(fs, true);
	TU_OK(tu_mkdir(fs, "/d", 0755));
	ck_assert_int_eq(zfs_fsyncdir(fs, ZF_ROOT_INO), -EIO);
	ck_assert_uint_gt(fail.fired, 0);
	ck_assert_int_ne(fs->error, 0);
	TU_OK(zfs_open(fs, &tu_root_ctx, (uint64_t)ino, O_RDONLY, NULL));
	ck_assert_int_eq(zfs_fsync(fs, (uint64_t)ino, false), -EIO);
	TU_OK(zfs_release(fs, (uint64_t)ino, 0));
	zdev_set_fault(fs->dev, NULL, NULL);

	ck_assert_int_eq(read_at(fs, (uint64_t)ino, 4096, 4096), -EIO);
	ck_assert_int_eq(read_at(fs, (uint64_t)ino, 0, 2 * TU_MIB), -EIO);
	TU_OK(tu_verify(fs, "/f", 0, 4096, 1));
	TU_OK(tu_verify(fs, "/f", 4 * 4096, 2 * TU_MIB - 4 * 4096, 1));
	ck_assert_int_eq(tu_write(fs, "/f", 4096, 4096, 3), -EROFS);
	ck_assert_int_eq(zfs_unmount(fs), -EIO); /* it says so at the end */
}
END_TEST

/*
 * One cut may split several lost ranges (the same bytes lost more than
 * once): each split gets room of its own. 20 pieces of one chunk lost
 * three times make 60 ranges (room for 64); a chunk that rewrites the
 * middle of each piece then splits three of them per piece.
 */
START_TEST(test_lost_ranges_split)
{
	struct zfs *fs;
	int64_t ino;
	int k, round;

	fs = mount_large();
	TU_OK(tu_write(fs, "/f", 0, 20 * 8192, 1));
	TU_OK(zfs_sync(fs));
	ino = tu_ino(fs, "/f");
	ck_assert_int_gt(ino, 0);
	for (round = 0; round < 3; round++) {
		fail_arm(fs, false);
		for (k = 0; k < 20; k++)
			TU_OK(tu_write(fs, "/f", (uint64_t)k * 8192, 24, 2));
		TU_OK(zfs_open(fs, &tu_root_ctx, (uint64_t)ino, O_RDWR, NULL));
		ck_assert_int_eq(zfs_fsync(fs, (uint64_t)ino, false), -EIO);
		TU_OK(zfs_release(fs, (uint64_t)ino, 0));
		zdev_set_fault(fs->dev, NULL, NULL);
	}
	ck_assert_uint_eq(fs->nr_lost, 60);
	for (k = 0; k < 20; k++)
		TU_OK(tu_write(fs, "/f", (uint64_t)k * 8192 + 8, 8, 3));
	TU_OK(zfs_sync(fs));
	ck_assert_uint_eq(fs->nr_lost, 120);
	for (k = 0; k < 20; k++) {
		uint64_t at = (uint64_t)k * 8192;

		TU_OK(tu_verify(fs, "/f", at + 8, 8, 3));
		ck_assert_int_eq(read_at(fs, (uint64_t)ino, at, 8), -EIO);
		ck_assert_int_eq(read_at(fs, (uint64_t)ino, at + 16, 8), -EIO);
		TU_OK(tu_verify(fs, "/f", at + 24, 8192 - 24, 1));
	}
	tu_unmount(fs);
}
END_TEST

/*
 * Pins change only under meta_lock (data_pin()): while it is held
 * exclusive, as an unlink holds it between its busy check and its record,
 * a writeback thread that has just retired a file's last chunk does not
 * unpin the inode. It did, holding only the rt lock, and the unlink's
 * record then freed the inode with its rt attached.
 *
 * The window is a few instructions wide (data_apply_chunk() retires the
 * chunk and lets meta_lock go; data_wb_inode() takes it again to unpin),
 * too narrow to hit by timing alone. So this binary is linked with
 * --wrap=alloc_unreserve, which data_apply_chunk() calls inside it holding
 * no lock: an armed park stops the next writeback thread there. The test
 * parks the thread at each chunk it retires until the queue is empty, takes
 * meta_lock exclusive, lets the thread go and holds the lock a while: the
 * pin must stay.
 */
/* Where an armed park stops the next thread other than the test's. */
enum park_at { PARK_UNRESERVE, PARK_PUT_HEAD };

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cv;
	enum park_at at; /* protected by lock */
	bool armed; /* protected by lock: the next call parks */
	bool parked; /* protected by lock: a thread waits in the wrapper */
	bool released_parked; /* protected by lock: heads released meanwhile */
	pthread_t test; /* set before arming: its own calls never park */
} park = { .lock = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

static void park_here(enum park_at at)
{
	pthread_mutex_lock(&park.lock);
	if (park.armed && park.at == at &&
	    !pthread_equal(pthread_self(), park.test)) {
		park.armed = false;
		park.parked = true;
		pthread_cond_broadcast(&park.cv);
		while (park.parked)
			pthread_cond_wait(&park.cv, &park.lock);
	}
	pthread_mutex_unlock(&park.lock);
}

void __real_alloc_unreserve(struct zfs *fs, uint64_t len);
void __wrap_alloc_unreserve(struct zfs *fs, uint64_t len);

void __wrap_alloc_unreserve(struct zfs *fs, uint64_t len)
{
	park_here(PARK_UNRESERVE);
	__real_alloc_unreserve(fs, len);
}

void __real_alloc_put_head(struct zfs *fs, struct zfs_head *head);
void __wrap_alloc_put_head(struct zfs *fs, struct zfs_head *head);

void __wrap_alloc_put_head(struct zfs *fs, struct zfs_head *head)
{
	park_here(PARK_PUT_HEAD);
	__real_alloc_put_head(fs, head);
}

void __real_alloc_release_heads(struct zfs *fs);
void __wrap_alloc_release_heads(struct zfs *fs);

void __wrap_alloc_release_heads(struct zfs *fs)
{
	pthread_mutex_lock(&park.lock);
	park.released_parked |= park.parked;
	pthread_mutex_unlock(&park.lock);
	__real_alloc_release_heads(fs);
}

static void park_arm(enum park_at at)
{
	pthread_mutex_lock(&park.lock);
	park.test = pthread_self();
	park.at = at;
	park.armed = true;
	park.released_parked = false;
	pthread_mutex_unlock(&park.lock);
}

/* Wait (10 s at most) for a thread to park; true if one did. */
static bool park_wait(void)
{
	struct timespec ts;
	bool parked;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	pthread_mutex_lock(&park.lock);
	while (!park.parked &&
	       pthread_cond_timedwait(&park.cv, &park.lock, &ts) != ETIMEDOUT)
		;
	parked = park.parked;
	pthread_mutex_unlock(&park.lock);
	return parked;
}

/* Let the parked thread go; @rearm parks the next call again. */
static void park_release(bool rearm)
{
	pthread_mutex_lock(&park.lock);
	park.armed = rearm;
	park.parked = false;
	pthread_cond_broadcast(&park.cv);
	pthread_mutex_unlock(&park.lock);
}

START_TEST(test_unpin_waits_for_meta_lock)
{
	struct zfs *fs;
	int file;

	fs = mount_large();
	for (file = 0; file < 3; file++) {
		struct zm_inode *in;
		struct zfs_rt *rt;
		uint32_t npin;
		int64_t ino;
		bool queued;

		park_arm(PARK_UNRESERVE);
		TU_OK(tu_write(fs, "/f", 0, 3 * TU_MIB, (uint32_t)file));
		ino = tu_ino(fs, "/f");
		ck_assert_int_gt(ino, 0);
		for (;;) {
			ck_assert_msg(
				park_wait(),
				"no writeback thread retired a chunk of /f in 10 s");
			zlock_wr(&fs->meta_lock, ZLOCK_META);
			in = zm_iget(&fs->m, (uint64_t)ino);
			ck_assert_ptr_nonnull(in);
			rt = in->rt;
			ck_assert_ptr_nonnull(rt); /* pinned: kept */
			zlock_rd(&rt->lock, ZLOCK_RT);
			queued = rt->wb_first != NULL;
			zlock_unrw(&rt->lock);
			if (!queued)
				break;
			zlock_unrw(&fs->meta_lock);
			park_release(true);
		}
		/* The last chunk retired; the thread has not let go yet. */
		npin = in->npin;
		ck_assert_uint_gt(npin, 0);
		park_release(false);
		/* Unpinning without meta_lock would take it microseconds. */
		usleep(50000);
		ck_assert_uint_eq(in->npin, npin);
		zlock_unrw(&fs->meta_lock);
		TU_OK(tu_unlink(fs, "/f"));
	}
	tu_unmount(fs);
}
END_TEST

static void *unmount_thread(void *arg)
{
	return (void *)(intptr_t)zfs_unmount(arg);
}

/*
 * Unmount lets go of the heads only once the writeback threads have given
 * back theirs. The thread that writes a closed file's last chunk frees the
 * file's head after the chunk is retired (data_wb_done()), and so after
 * data_flush_all() returns: a head freed while alloc_release_heads()
 * walked the list (it holds no lock) was read after its free, an ASan
 * report or, with the memory used again, an unmount that hung (e2e-model,
 * once in about 25 runs). This binary also wraps alloc_put_head() and
 * alloc_release_heads(): the writeback thread is parked as it gives the
 * head back, the unmount is under way, and no head may be released
 * until the thread goes on.
 */
START_TEST(test_unmount_waits_for_heads)
{
	struct zfs *fs;
	pthread_t t;
	void *ret;

	fs = mount_large();
	/*
	 * Not a new file, so its close does not write it: the last chunk
	 * stays staged past the close, and the writeback thread that writes
	 * it at unmount gives the head back.
	 */
	TU_OK(tu_write(fs, "/f", 0, 8, 1));
	TU_OK(tu_write(fs, "/f", 0, 3 * TU_MIB + 4096, 2));
	park_arm(PARK_PUT_HEAD);
	ck_assert_int_eq(pthread_create(&t, NULL, unmount_thread, fs), 0);
	ck_assert_msg(park_wait(),
		      "no writeback thread gave /f's head back in 10 s");
	/* Time for an unmount that does not wait to release the heads. */
	usleep(100000);
	pthread_mutex_lock(&park.lock);
	ck_assert_msg(!park.released_parked,
		      "heads released while a writeback thread gave one back");
	pthread_mutex_unlock(&park.lock);
	park_release(false);
	ck_assert_int_eq(pthread_join(t, &ret), 0);
	ck_assert_int_eq((int)(intptr_t)ret, 0);
	ck_assert(!park.released_parked);
	fs = tu_mount(tu_img, true);
	TU_OK(tu_verify(fs, "/f", 0, 3 * TU_MIB + 4096, 2));
	tu_unmount(fs);
}
END_TEST

/* Does open file @ino have data staged in open chunks (not sealed)? */
static bool has_open_chunks(struct zfs *fs, uint64_t ino)
{
	struct zm_inode *in;
	struct zfs_rt *rt;
	bool open;

	zlock_rd(&fs->meta_lock, ZLOCK_META);
	in = zm_iget(&fs->m, ino);
	ck_assert_ptr_nonnull(in);
	rt = in->rt;
	ck_assert_ptr_nonnull(rt);
	zlock_rd(&rt->lock, ZLOCK_RT);
	open = rt->open != NULL;
	zlock_unrw(&rt->lock);
	zlock_unrw(&fs->meta_lock);
	return open;
}

static uint64_t sent_at_once(struct zfs *fs)
{
	struct zfs_stats st;

	TU_OK(zfs_get_stats(fs, &st));
	return st.writes_sent_at_once;
}

/* @len bytes of /f from its start equal @model, and pass their checks. */
static void check_f(struct zfs *fs, uint64_t ino, const char *model, size_t len)
{
	struct zfs_scrub_file sr;
	char *buf = malloc(len);

	ck_assert_ptr_nonnull(buf);
	TU_OK(zfs_open(fs, &tu_root_ctx, ino, O_RDONLY, NULL));
	ck_assert_int_eq(zfs_read(fs, ino, buf, len, 0), (ssize_t)len);
	ck_assert(!memcmp(buf, model, len));
	TU_OK(zfs_release(fs, ino, 0));
	TU_OK(zfs_scrub_file(fs, ino, &sr));
	ck_assert_uint_eq(sr.nbad, 0);
	free(buf);
}

/*
 * The first write after an fsync that followed a single write goes to the
 * device at once (sealed by the write: nothing of it left in an open
 * chunk). A second write before the next fsync stays staged, and the
 * write after an fsync of two writes is not sent at once either. Pieces
 * that end in a block written in part (read-modify-write, then written
 * again) leave the file's bytes and checksums right, also after a remount.
 */
START_TEST(test_sent_at_once_after_each_fsync)
{
	const size_t size = 64 * 1024;
	char *model = calloc(1, size);
	struct zfs *fs;
	uint64_t ino;

	ck_assert_ptr_nonnull(model);
	mkfs(4096);
	fs = tu_mount(tu_img, false);
	TU_OK(tu_write(fs, "/f", 0, 0, 1));
	ino = (uint64_t)tu_ino(fs, "/f");
	TU_OK(zfs_open(fs, &tu_root_ctx, ino, O_RDWR, NULL));
	wr(fs, ino, model, 0, 5000, 1);
	ck_assert(has_open_chunks(fs, ino)); /* no fsync seen yet */
	TU_OK(zfs_fsync(fs, ino, false));
	wr(fs, ino, model, 5000, 3000, 2);
	ck_assert(!has_open_chunks(fs, ino));
	ck_assert_uint_eq(sent_at_once(fs), 1);
	wr(fs, ino, model, 8000, 104, 3); /* a second write: staged */
	ck_assert(has_open_chunks(fs, ino));
	ck_assert_uint_eq(sent_at_once(fs), 1);
	TU_OK(zfs_fsync(fs, ino, false));
	wr(fs, ino, model, 9000, 4096, 4); /* after two writes: staged */
	ck_assert(has_open_chunks(fs, ino));
	TU_OK(zfs_fsync(fs, ino, false));
	wr(fs, ino, model, 4096, 20000, 5); /* one write again: sent */
	ck_assert(!has_open_chunks(fs, ino));
	ck_assert_uint_eq(sent_at_once(fs), 2);
	TU_OK(zfs_fsync(fs, ino, false));
	TU_OK(zfs_release(fs, ino, 0));
	check_f(fs, ino, model, 24096);
	tu_unmount(fs);

	fs = tu_mount(tu_img, true);
	check_f(fs, ino, model, 24096);
	tu_unmount(fs);
	free(model);
}
END_TEST

/* Create /@name, open for writing; its inode. */
static uint64_t create_open(struct zfs *fs, const char *name)
{
	struct stat st;

	TU_OK(zfs_create(fs, &tu_root_ctx, ZF_ROOT_INO, name, 0644, O_RDWR,
			 &st, NULL));
	zfs_forget(fs, (uint64_t)st.st_ino, 1);
	return (uint64_t)st.st_ino;
}

/* The zone of the first extent of @ino (whose data is written). */
static uint32_t first_zone(struct zfs *fs, uint64_t ino)
{
	struct zm_inode *in;
	uint32_t z;

	zlock_rd(&fs->meta_lock, ZLOCK_META);
	in = zm_iget(&fs->m, ino);
	ck_assert_ptr_nonnull(in);
	ck_assert_uint_gt(in->f.n_ext, 0);
	z = zm_zone_of(&fs->m, in->f.ext[0].addr);
	zlock_unrw(&fs->meta_lock);
	return z;
}

/*
 * Files opened for writing vote: +1 for one fsynced after its first write,
 * -1 for one written again before its first fsync or closed unsynced.
 * From 4, the first write after an open goes to the device at once (new
 * files and files opened again alike), where a whole file of its size
 * goes (a 940 KiB one, with slots to spare, to a zone of its own); below
 * 4 it is staged, and so is a piece the kernel cut from a larger write
 * (DATA_CUT_MIN: a stream's first does not go to the small files' zones).
 */
START_TEST(test_sent_at_once_after_open)
{
	static const char *const voters[] = { "v0", "v1", "v2", "v3" };
	const size_t size = 1020 * 1024;
	char *model = calloc(1, size);
	uint64_t ino, v0 = 0, s0, big;
	struct zfs *fs;
	size_t i;

	ck_assert_ptr_nonnull(model);
	mkfs(4096);
	fs = tu_mount(tu_img, false);
	for (i = 0; i < 4; i++) {
		ino = create_open(fs, voters[i]);
		v0 = i ? v0 : ino;
		wr(fs, ino, model, 0, 5000, 1);
		ck_assert(has_open_chunks(fs, ino)); /* vote below 4 */
		TU_OK(zfs_fsync(fs, ino, false));
		TU_OK(zfs_release(fs, ino, 0));
	}
	ck_assert_uint_eq(sent_at_once(fs), 0);

	s0 = create_open(fs, "s0"); /* vote 4: sent */
	wr(fs, s0, model, 0, 5000, 1);
	ck_assert(!has_open_chunks(fs, s0));
	ck_assert_uint_eq(sent_at_once(fs), 1);
	TU_OK(zfs_fsync(fs, s0, false)); /* vote 5 */
	TU_OK(zfs_release(fs, s0, 0));

	TU_OK(zfs_open(fs, &tu_root_ctx, v0, O_WRONLY, NULL));
	wr(fs, v0, model, 5000, 3000, 1); /* an existing file's: sent */
	ck_assert(!has_open_chunks(fs, v0));
	ck_assert_uint_eq(sent_at_once(fs), 2);
	wr(fs, v0, model, 8000, 100, 1); /* a second write: staged, vote 4 */
	ck_assert(has_open_chunks(fs, v0));
	TU_OK(zfs_release(fs, v0, 0));

	ino = create_open(fs, "c0"); /* vote 4: sent */
	wr(fs, ino, model, 0, 5000, 1);
	ck_assert_uint_eq(sent_at_once(fs), 3);
	TU_OK(zfs_release(fs, ino, 0)); /* closed unsynced: vote 3 */

	ino = create_open(fs, "c1");
	wr(fs, ino, model, 0, 5000, 1);
	ck_assert(has_open_chunks(fs, ino));
	ck_assert_uint_eq(sent_at_once(fs), 3);
	TU_OK(zfs_fsync(fs, ino, false)); /* vote 4 */
	TU_OK(zfs_release(fs, ino, 0));

	ino = create_open(fs, "mid"); /* under 960 KiB: sent */
	wr(fs, ino, model, 0, 940 * 1024, 2);
	ck_assert(!has_open_chunks(fs, ino));
	ck_assert_uint_eq(sent_at_once(fs), 4);
	TU_OK(zfs_fsync(fs, ino, false));
	TU_OK(zfs_release(fs, ino, 0));
	/* Half a chunk or more, slots to spare: a zone of its own. */
	ck_assert_uint_ne(first_zone(fs, ino), first_zone(fs, s0));
	check_f(fs, ino, model, 940 * 1024);

	big = create_open(fs, "big"); /* a piece the kernel cut: staged */
	wr(fs, big, model, 0, size, 3);
	ck_assert(has_open_chunks(fs, big));
	ck_assert_uint_eq(sent_at_once(fs), 4);
	TU_OK(zfs_fsync(fs, big, false));
	TU_OK(zfs_release(fs, big, 0));
	check_f(fs, big, model, size);
	tu_unmount(fs);

	fs = tu_mount(tu_img, true);
	check_f(fs, big, model, size);
	TU_OK(tu_verify(fs, "/v0", 0, 5000, 1));
	tu_unmount(fs);
	free(model);
}
END_TEST

/* Create @name, write @len bytes of pattern @seed, fsync, close. */
static uint64_t put_file(struct zfs *fs, const char *name, size_t len,
			 uint32_t seed)
{
	char *model = malloc(len);
	uint64_t ino;

	ck_assert_ptr_nonnull(model);
	ino = create_open(fs, name);
	wr(fs, ino, model, 0, len, seed);
	TU_OK(zfs_fsync(fs, ino, false));
	TU_OK(zfs_release(fs, ino, 0));
	free(model);
	return ino;
}

/*
 * A file that rewrites nothing and fills half a chunk or more takes zones
 * of its own while the device has active slots to spare: with no active
 * limit, and with null_blk's 14, beside the journal and the four shared
 * heads. At 6 active zones it stays with the small files, and the slots
 * stay for large files. Under half a chunk it always does.
 */
START_TEST(test_half_chunk_own_zone)
{
	static const uint32_t limits[] = { 0, 14, 6 };
	unsigned int i;

	for (i = 0; i < ZF_ARRAY_SIZE(limits); i++) {
		struct zemu_params p = {
			.size = 64 * TU_MIB,
			.zone_size = 4 * TU_MIB,
			.block_size = 4096,
			.max_active = limits[i],
		};
		uint64_t sm, under, half;
		struct zfs *fs;

		unlink(tu_img);
		tu_mkfs_image(tu_img, &p);
		fs = tu_mount(tu_img, false);
		sm = put_file(fs, "small", 5000, 1);
		under = put_file(fs, "under", ZFS_CHUNK / 2 - 4096, 2);
		half = put_file(fs, "half", ZFS_CHUNK / 2, 3);
		ck_assert_uint_eq(first_zone(fs, under), first_zone(fs, sm));
		if (limits[i] == 6)
			ck_assert_uint_eq(first_zone(fs, half),
					  first_zone(fs, sm));
		else
			ck_assert_uint_ne(first_zone(fs, half),
					  first_zone(fs, sm));
		tu_unmount(fs);
		fs = tu_mount(tu_img, true);
		TU_OK(tu_verify(fs, "/under", 0, ZFS_CHUNK / 2 - 4096, 2));
		TU_OK(tu_verify(fs, "/half", 0, ZFS_CHUNK / 2, 3));
		tu_unmount(fs);
	}
}
END_TEST

static void add(Suite *s, const char *name, const TTest *t)
{
	tu_add_case(s, name, t, tu_img_setup, tu_img_teardown, 60);
}

int main(void)
{
	Suite *s = suite_create("data");

	add(s, "read_any_buffer", test_read_any_buffer);
	add(s, "read_any_buffer_512", test_read_any_buffer_512);
	add(s, "read_after_remount", test_read_after_remount);
	add(s, "read_errors", test_read_errors);
	add(s, "damaged_block_eio", test_damaged_block_eio);
	add(s, "damaged_block_eio_512", test_damaged_block_eio_512);
	add(s, "read_bufs_reused", test_read_bufs_reused);
	add(s, "close_writes_small_file", test_close_writes_small_file);
	add(s, "csums_follow_bytes", test_csums_follow_bytes);
	add(s, "csums_follow_bytes_512", test_csums_follow_bytes_512);
	add(s, "sent_at_once_after_each_fsync",
	    test_sent_at_once_after_each_fsync);
	add(s, "sent_at_once_after_open", test_sent_at_once_after_open);
	add(s, "half_chunk_own_zone", test_half_chunk_own_zone);
	add(s, "lost_write_reads_eio", test_lost_write_reads_eio);
	add(s, "lost_when_journal_fails", test_lost_when_journal_fails);
	add(s, "lost_ranges_split", test_lost_ranges_split);
	add(s, "unpin_waits_for_meta_lock", test_unpin_waits_for_meta_lock);
	add(s, "unmount_waits_for_heads", test_unmount_waits_for_heads);
	printf("check_data: reads return the file's bytes into any buffer, from the device and from staging\n");
	return tu_run(s);
}
