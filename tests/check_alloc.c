// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Tests of space allocation and reclaim (alloc.c, gc.c) through the
 * file-system library, on emulator images, without FUSE: data the space
 * check admitted lands somewhere, however the free space is scattered.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "testutil.h"
#include "zfs_i.h"
#include "zonefuse/util.h"

#define ZONE (1 * TU_MIB)

static void mkfs(uint32_t zones)
{
	struct zemu_params p = {
		.size = zones * ZONE,
		.zone_size = ZONE,
		.block_size = 4096,
	};

	tu_mkfs_image(tu_img, &p);
}

/* Write @len bytes of the pattern of @seed at @off of the open @ino. */
static void write_ino(struct zfs *fs, uint64_t ino, uint64_t off, size_t len,
		      uint32_t seed)
{
	char *buf = malloc(ZF_ROUND_UP(len, 8u));
	size_t done = 0;

	ck_assert_ptr_nonnull(buf);
	tu_fill(buf, ZF_ROUND_UP(len, 8u), off, seed);
	while (done < len) {
		ssize_t n = zfs_write(fs, &tu_root_ctx, ino, buf + done,
				      len - done, (off_t)(off + done), false);

		ck_assert_msg(n > 0, "write at %llu: %zd",
			      (unsigned long long)(off + done), n);
		done += (size_t)n;
	}
	free(buf);
}

/*
 * Create @name in the root, write @len bytes of @seed's pattern, fsync,
 * and leave it open (its cache mode in *@cache). Returns its inode.
 */
static uint64_t create_open(struct zfs *fs, const char *name, size_t len,
			    uint32_t seed, unsigned int *cache)
{
	uint64_t root = (uint64_t)tu_ino(fs, "/");
	struct stat st;

	TU_OK(zfs_create(fs, &tu_root_ctx, root, name, 0644, O_RDWR, &st,
			 cache));
	write_ino(fs, (uint64_t)st.st_ino, 0, len, seed);
	TU_OK(zfs_fsync(fs, (uint64_t)st.st_ino, false));
	return (uint64_t)st.st_ino;
}

/*
 * A file written whole (a first chunk that is full: a private head) and
 * synced, then left open, keeps its head's zone with the room after its
 * tail unwritten. When every free zone is gone, a write admitted by the
 * space check (which counts that room as space) takes such a zone over
 * instead of failing: six open files held 4.5 of the 25 MiB of free space
 * here, more than the reserve a writer may dip into, and the fsync of the
 * file filling the rest returned EIO, its data lost.
 */
START_TEST(test_full_takes_head_tail)
{
	uint64_t ino[6], root, fill;
	unsigned int cache[6], i;
	struct statvfs sv;
	struct stat st;
	struct zfs *fs;
	char name[16];

	mkfs(32);
	fs = tu_mount(tu_img, false);
	root = (uint64_t)tu_ino(fs, "/");
	for (i = 0; i < 6; i++) {
		snprintf(name, sizeof(name), "o%u", i);
		ino[i] = create_open(fs, name, ZONE + 256 * 1024, i + 1,
				     &cache[i]);
	}
	TU_OK(zfs_statfs(fs, &sv));
	fill = (uint64_t)sv.f_bavail * sv.f_frsize;
	ck_assert_uint_gt(fill, 4 * ZONE);
	fill -= 64 * 1024;
	TU_OK(zfs_create(fs, &tu_root_ctx, root, "fill", 0644, O_RDWR, &st,
			 NULL));
	write_ino(fs, (uint64_t)st.st_ino, 0, (size_t)fill, 99);
	TU_OK(zfs_fsync(fs, (uint64_t)st.st_ino, false));
	TU_OK(zfs_release(fs, (uint64_t)st.st_ino, 0));
	zfs_forget(fs, (uint64_t)st.st_ino, 1);
	for (i = 0; i < 6; i++) {
		TU_OK(zfs_release(fs, ino[i], cache[i]));
		zfs_forget(fs, ino[i], 1);
	}
	tu_unmount(fs);

	fs = tu_mount(tu_img, true);
	TU_OK(tu_verify(fs, "/fill", 0, (size_t)fill, 99));
	for (i = 0; i < 6; i++) {
		snprintf(name, sizeof(name), "/o%u", i);
		TU_OK(tu_verify(fs, name, 0, ZONE + 256 * 1024, i + 1));
	}
	tu_unmount(fs);
}
END_TEST

/*
 * Background reclaim leaves a zone with less than 1/16 of it dead (moving
 * it costs a zone of writes for a sliver); a writer with nowhere else to
 * go moves it all the same, and the data it held reads back.
 */
START_TEST(test_gc_any_gain)
{
	struct zfs *fs;

	mkfs(16);
	fs = tu_mount(tu_img, false);
	TU_OK(tu_write(fs, "/a", 0, ZONE, 1));
	TU_OK(zfs_sync(fs));
	TU_OK(tu_write(fs, "/a", 8192, 4096, 2));
	TU_OK(zfs_sync(fs));
	ck_assert_int_eq(gc_collect(fs, 1, false), 0);
	ck_assert_int_eq(gc_collect(fs, 1, true), 1);
	ck_assert_int_eq(gc_collect(fs, 1, true), 0); /* nothing dead left */
	TU_OK(zfs_sync(fs));
	tu_unmount(fs);

	fs = tu_mount(tu_img, true);
	TU_OK(tu_verify(fs, "/a", 0, 8192, 1));
	TU_OK(tu_verify(fs, "/a", 8192, 4096, 2));
	TU_OK(tu_verify(fs, "/a", 12288, ZONE - 12288, 1));
	tu_unmount(fs);
}
END_TEST

/* Zones the device holds open, and active (open or closed). */
static void count_active(struct zfs *fs, uint32_t *open, uint32_t *active)
{
	uint32_t i, n = fs->m.nr_zones;
	struct zdev_zone *rep = calloc(n, sizeof(*rep));

	ck_assert_ptr_nonnull(rep);
	ck_assert_int_eq(zdev_report(fs->dev, 0, n, rep), (int)n);
	*open = *active = 0;
	for (i = 0; i < n; i++) {
		bool o = rep[i].cond == ZDEV_COND_IMP_OPEN ||
			 rep[i].cond == ZDEV_COND_EXP_OPEN;

		*open += o;
		*active += o || rep[i].cond == ZDEV_COND_CLOSED;
	}
	free(rep);
}

/*
 * At its active limit a device will not reopen a closed zone, even to
 * close an open one for it (null_blk's rule). The allocator keeps one
 * active slot spare for that, but the journal is never refused a zone:
 * here two large files and a small one hold three zones, the journal's
 * chain one and the live super zone one (5 of 6, 4 open), and a journal
 * roll takes the sixth for its new chain. The super zone, closed by the
 * device meanwhile, then refused the roll's anchor: the journal failed
 * after 200 ms and the file system went read-only (seen in
 * tests/e2e/stress.py). The allocator now finishes an idle zone instead.
 */
START_TEST(test_roll_at_active_limit)
{
	struct zemu_params p = {
		.size = 32 * 4 * ZONE,
		.zone_size = 4 * ZONE,
		.block_size = 4096,
		.max_open = 4,
		.max_active = 6,
	};
	unsigned int cache[3], i;
	uint32_t open, active;
	uint64_t ino[3];
	struct zfs *fs;
	char name[16];

	tu_mkfs_image(tu_img, &p);
	fs = tu_mount(tu_img, false);
	for (i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "f%u", i);
		ino[i] = create_open(fs, name, i < 2 ? ZONE + 256 * 1024 : 4096,
				     i + 1, &cache[i]);
	}
	count_active(fs, &open, &active);
	ck_assert_msg(open == 4 && active == 5,
		      "the state this test needs: 4 open, 5 active; %u, %u",
		      open, active);
	TU_OK(jrnl_roll(fs->j));
	ck_assert_int_eq(jrnl_error(fs->j), 0);
	count_active(fs, &open, &active);
	ck_assert_uint_le(active, 5); /* the spare is kept */
	for (i = 0; i < 3; i++) {
		write_ino(fs, ino[i], ZONE + 256 * 1024, 8192, 10 + i);
		TU_OK(zfs_fsync(fs, ino[i], false));
		TU_OK(zfs_release(fs, ino[i], cache[i]));
		zfs_forget(fs, ino[i], 1);
	}
	tu_unmount(fs);

	fs = tu_mount(tu_img, true);
	for (i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "/f%u", i);
		TU_OK(tu_verify(fs, name, 0, i < 2 ? ZONE + 256 * 1024 : 4096,
				i + 1));
		TU_OK(tu_verify(fs, name, ZONE + 256 * 1024, 8192, 10 + i));
	}
	tu_unmount(fs);
}
END_TEST

/*
 * The free space (df, and the check that admits writes) does not dip
 * while reclaim moves data: a copy written through the gc head replaces
 * live bytes one for one, and its move record makes those dead, which
 * count as available. New data counts from the moment it is written.
 * Counting copies until they landed, df right after an rm showed up to a
 * chunk less than the file had held (tests/space/fill.py, cap).
 */
START_TEST(test_copy_in_flight_keeps_free)
{
	uint64_t cap, free0, free1, used, dead, addr;
	const size_t len = 64 * 1024;
	struct zfs *fs;
	size_t done;
	char *buf;

	mkfs(16);
	fs = tu_mount(tu_img, false);
	TU_OK(tu_write(fs, "/a", 0, 3 * ZONE / 2, 1));
	TU_OK(zfs_sync(fs));
	buf = zdev_buf_alloc(fs->dev, len);
	ck_assert_ptr_nonnull(buf);
	memset(buf, 0x5a, len);
	alloc_space(fs, &cap, &free0, &used, &dead);

	pthread_mutex_lock(&fs->gc_lock); /* the gc head is reclaim's */
	TU_OK(alloc_head_write(fs, &fs->gc, buf, len, &addr, &done));
	ck_assert_uint_eq(done, len);
	alloc_space(fs, &cap, &free1, &used, &dead);
	ck_assert_uint_eq(free1, free0);
	alloc_landed(fs, addr, done, true);
	pthread_mutex_unlock(&fs->gc_lock);
	alloc_space(fs, &cap, &free1, &used, &dead);
	ck_assert_uint_eq(free1, free0);

	TU_OK(alloc_head_write(fs, &fs->small, buf, len, &addr, &done));
	ck_assert_uint_eq(done, len);
	alloc_space(fs, &cap, &free1, &used, &dead);
	ck_assert_uint_eq(free1, free0 - len);
	/* Never named by a record: dead, so available again. */
	alloc_landed(fs, addr, done, false);
	alloc_space(fs, &cap, &free1, &used, &dead);
	ck_assert_uint_eq(free1, free0);

	free(buf);
	tu_unmount(fs);
	fs = tu_mount(tu_img, true);
	TU_OK(tu_verify(fs, "/a", 0, 3 * ZONE / 2, 1));
	tu_unmount(fs);
}
END_TEST

static void add(Suite *s, const char *name, const TTest *t)
{
	tu_add_case(s, name, t, tu_img_setup, tu_img_teardown, 60);
}

int main(void)
{
	Suite *s = suite_create("alloc");

	add(s, "full_takes_head_tail", test_full_takes_head_tail);
	add(s, "gc_any_gain", test_gc_any_gain);
	add(s, "roll_at_active_limit", test_roll_at_active_limit);
	add(s, "copy_in_flight_keeps_free", test_copy_in_flight_keeps_free);
	printf("check_alloc: admitted data lands however the free space is scattered\n");
	return tu_run(s);
}
