// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Tests of the space policy (space.c): the table itself, row by row (every
 * limit, every outcome), and its executor on emulator images through the
 * file-system library: a writer that finds no active slot waits for one
 * instead of failing, a large file shares a head, write()'s space check
 * says ENOSPC only when the live data fills the device, and reclaim out
 * of memory costs no data.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "zfs_i.h"
#include "zonefuse/util.h"

#define ZONE (1 * TU_MIB)

/* The rows of @who lacking @need, in table order. */
static size_t rows_of(enum space_who who, enum alloc_need need,
		      const struct space_rule **out, size_t max)
{
	size_t n, i, k = 0;
	const struct space_rule *t = space_table(&n);

	for (i = 0; i < n; i++)
		if (t[i].who == who && t[i].need == need && k < max)
			out[k++] = &t[i];
	return k;
}

/*
 * For every asker and need with rows: deciding again and again walks the
 * rows in order, each as often as its limit says, and stays on the first
 * row without a limit (or the last one, when all have limits: then the
 * answer is SPACE_FAIL, as for a need without rows).
 */
START_TEST(test_rows_in_order)
{
	enum space_who who;
	enum alloc_need need;
	size_t n;

	space_table(&n);
	ck_assert_uint_le(n, ZF_ARRAY_SIZE(((struct space_state *)0)->used));
	for (who = SPACE_WRITER; who <= SPACE_JOURNAL; who++) {
		for (need = ALLOC_NEED_SLOT; need <= ALLOC_NEED_FLUSH; need++) {
			const struct space_rule *rows[16];
			size_t nr = rows_of(who, need, rows, 16), r;
			struct space_state st;
			unsigned int k;

			space_start(&st, who);
			for (r = 0; r < nr; r++) {
				unsigned int times = rows[r]->limit ? rows[r]->limit : 100;

				for (k = 0; k < times; k++)
					ck_assert_msg(space_decide(&st, who, need) ==
							      rows[r]->act,
						      "asker %d need %d row %zu use %u",
						      who, need, r, k);
				if (!rows[r]->limit)
					break;
			}
			if (r == nr)
				ck_assert_int_eq(space_decide(&st, who, need),
						 SPACE_FAIL);
		}
	}
}
END_TEST

/* Something moved: the counts start again from the first row. */
START_TEST(test_progress_restarts)
{
	struct space_state st;
	int i;

	space_start(&st, SPACE_WRITER);
	for (i = 0; i < 8; i++)
		ck_assert_int_eq(space_decide(&st, SPACE_WRITER, ALLOC_NEED_RECLAIM),
				 SPACE_COLLECT);
	ck_assert_int_eq(space_decide(&st, SPACE_WRITER, ALLOC_NEED_RECLAIM),
			 SPACE_COLLECT_ANY);
	space_progress(&st);
	ck_assert_int_eq(space_decide(&st, SPACE_WRITER, ALLOC_NEED_RECLAIM),
			 SPACE_COLLECT);
}
END_TEST

/*
 * Zone limits never end in a failure: a writer (shared head or the
 * journal) waits as long as it takes, a large file shares. Only space
 * (RECLAIM for a writer, COMMIT and FLUSH for write()) can end in
 * SPACE_FAIL, after its rows.
 */
START_TEST(test_limits_never_fail)
{
	static const enum space_who who[] = { SPACE_WRITER, SPACE_PRIVATE,
					      SPACE_JOURNAL };
	static const enum alloc_need need[] = { ALLOC_NEED_SLOT, ALLOC_NEED_OPEN };
	size_t w, k;
	int i;

	for (w = 0; w < ZF_ARRAY_SIZE(who); w++) {
		for (k = 0; k < ZF_ARRAY_SIZE(need); k++) {
			struct space_state st;

			space_start(&st, who[w]);
			for (i = 0; i < 100000; i++) {
				enum space_act a = space_decide(&st, who[w], need[k]);

				ck_assert(a == SPACE_WAIT || a == SPACE_SHARE);
			}
		}
	}
}
END_TEST

/* A large file never waits for space or a slot: it shares. */
START_TEST(test_private_shares)
{
	static const enum alloc_need need[] = { ALLOC_NEED_SLOT, ALLOC_NEED_COMMIT,
						ALLOC_NEED_RECLAIM };
	struct space_state st;
	size_t k;

	for (k = 0; k < ZF_ARRAY_SIZE(need); k++) {
		space_start(&st, SPACE_PRIVATE);
		ck_assert_int_eq(space_decide(&st, SPACE_PRIVATE, need[k]),
				 SPACE_SHARE);
	}
	space_start(&st, SPACE_PRIVATE);
	ck_assert_int_eq(space_decide(&st, SPACE_PRIVATE, ALLOC_NEED_OPEN),
			 SPACE_WAIT);
}
END_TEST

/* The journal is the committer: no row has it commit, flush or collect. */
START_TEST(test_journal_only_waits)
{
	size_t n, i;
	const struct space_rule *t = space_table(&n);

	for (i = 0; i < n; i++)
		if (t[i].who == SPACE_JOURNAL)
			ck_assert_int_eq(t[i].act, SPACE_WAIT);
	for (i = 0; i < n; i++)
		ck_assert_msg(t[i].why && *t[i].why, "row %zu says why", i);
}
END_TEST

/* An asker and need without a row: SPACE_FAIL, not a loop. */
START_TEST(test_missing_row_fails)
{
	struct space_state st;

	space_start(&st, SPACE_ADMIT);
	ck_assert_int_eq(space_decide(&st, SPACE_ADMIT, ALLOC_NEED_SLOT),
			 SPACE_FAIL);
	space_start(&st, SPACE_JOURNAL);
	ck_assert_int_eq(space_decide(&st, SPACE_JOURNAL, ALLOC_NEED_RECLAIM),
			 SPACE_FAIL);
}
END_TEST

/* ---- the executor, on a file system ---------------------------------- */

static struct zfs *mount_geom(uint32_t zones, uint32_t max_open,
			      uint32_t max_active)
{
	struct zemu_params p = {
		.size = zones * ZONE,
		.zone_size = ZONE,
		.block_size = 4096,
		.max_open = max_open,
		.max_active = max_active,
	};

	tu_mkfs_image(tu_img, &p);
	return tu_mount(tu_img, false);
}

struct writer {
	struct zfs *fs;
	struct zfs_head *head;
	char *buf;
	int ret;
	bool done;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	uint64_t addr;
	size_t done;

	w->ret = space_write(w->fs, &w->head, &w->fs->small, w->buf,
			     64 * 1024, &addr, &done);
	if (!w->ret)
		alloc_landed(w->fs, addr, done, false);
	__atomic_store_n(&w->done, true, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * On a device of 2 active zones (the journal's and one for data), a
 * writer through a second shared head finds the one data slot held by a
 * head that is writing (its lock held, as across a device write): it
 * waits, and writes once that head lets go (the slot's zone is then taken
 * over), never failing with EBUSY as it did after 10 s.
 */
START_TEST(test_writer_waits_for_slot)
{
	struct alloc_try t = { 0 };
	struct writer w = { 0 };
	uint64_t addr;
	pthread_t th;
	size_t done;
	char *buf;
	int i;

	w.fs = mount_geom(32, 2, 2);
	buf = zdev_buf_alloc(w.fs->dev, 64 * 1024);
	ck_assert_ptr_nonnull(buf);
	memset(buf, 0x5a, 64 * 1024);
	TU_OK(alloc_head_write(w.fs, &w.fs->small, buf, 64 * 1024, &addr,
			       &done, &t));
	alloc_landed(w.fs, addr, done, false);
	ck_assert_uint_ne(w.fs->small.zone, ZF_NO_ZONE);
	ck_assert_uint_eq(w.fs->nr_active, 1);
	zlock_mutex(&w.fs->small.lock, ZLOCK_HEAD); /* a write in flight */
	w.head = &w.fs->hot;
	w.buf = buf;
	ck_assert_int_eq(pthread_create(&th, NULL, writer_main, &w), 0);
	for (i = 0; i < 30; i++) {
		struct timespec ts = { 0, 50 * 1000000 };

		nanosleep(&ts, NULL);
		ck_assert_msg(!__atomic_load_n(&w.done, __ATOMIC_ACQUIRE),
			      "the writer did not wait for the slot: %d", w.ret);
	}
	zlock_unmutex(&w.fs->small.lock);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	TU_OK(w.ret);
	/* It took the small head's zone over: still one data zone active. */
	ck_assert_uint_eq(w.fs->nr_active, 1);
	free(buf);
	tu_unmount(w.fs);
}
END_TEST

/*
 * A large file's own head finds no slot on a device of 2 active zones:
 * its data goes through the shared head (space_write() hands it back),
 * and lands.
 */
START_TEST(test_private_falls_back)
{
	struct zfs_head *priv, *head;
	uint64_t addr;
	struct zfs *fs;
	size_t done;
	char *buf;

	fs = mount_geom(32, 2, 2);
	buf = zdev_buf_alloc(fs->dev, ZONE);
	ck_assert_ptr_nonnull(buf);
	memset(buf, 0x33, ZONE);
	priv = head = alloc_private_head(fs, 7);
	ck_assert_ptr_nonnull(head);
	TU_OK(space_write(fs, &head, &fs->small, buf, 256 * 1024, &addr, &done));
	ck_assert_ptr_eq(head, &fs->small);
	ck_assert_uint_eq(priv->zone, ZF_NO_ZONE);
	alloc_landed(fs, addr, done, false);
	alloc_put_head(fs, priv);
	free(buf);
	tu_unmount(fs);
}
END_TEST

/*
 * write()'s space check: a file of the whole free space is admitted, one
 * block more is refused with ENOSPC (nothing staged, nothing dead: no
 * row gives space back); after the file is deleted the space is there at
 * once (its zones wait for a commit: the COMMIT row).
 */
START_TEST(test_reserve_enospc)
{
	struct statvfs sv;
	struct zfs *fs;
	uint64_t avail;
	int64_t ino;

	fs = mount_geom(24, 0, 0);
	TU_OK(zfs_statfs(fs, &sv));
	avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	TU_OK(space_reserve(fs, avail));
	ck_assert_int_eq(space_reserve(fs, 4096), -ENOSPC);
	alloc_unreserve(fs, avail);
	TU_OK(tu_write(fs, "/f", 0, (size_t)avail - 64 * 1024, 3));
	TU_OK(zfs_sync(fs));
	ck_assert_int_eq(space_reserve(fs, 256 * 1024), -ENOSPC);
	ino = tu_ino(fs, "/f");
	ck_assert_int_gt(ino, 0);
	TU_OK(tu_unlink(fs, "/f"));
	ck_assert(tu_wait_freed(fs, (uint64_t)ino));
	TU_OK(space_reserve(fs, avail / 2));
	alloc_unreserve(fs, avail / 2);
	tu_unmount(fs);
}
END_TEST

/* Free bytes as df sees them. */
static uint64_t df_free(struct zfs *fs)
{
	struct statvfs sv;

	TU_OK(zfs_statfs(fs, &sv));
	return (uint64_t)sv.f_bavail * sv.f_frsize;
}

static uint64_t blocks_of(struct zfs *fs, uint64_t ino)
{
	struct stat st;

	TU_OK(zfs_getattr(fs, ino, &st));
	return (uint64_t)st.st_blocks * 512;
}

/*
 * fallocate reserves (issue 23, item 9): more than the free space is
 * ENOSPC with nothing reserved; what fits counts at once in df and
 * st_blocks, survives a remount, and a write into it succeeds when the
 * rest of the device is full; truncate and unlink give it back.
 */
START_TEST(test_fallocate_reserves)
{
	struct zfs *fs;
	uint64_t free0, half, ino, g;
	unsigned int cache;
	char *buf;

	fs = mount_geom(24, 0, 0);
	free0 = df_free(fs);
	half = ZF_ROUND_DOWN(free0 / 2, (uint64_t)ZONE);
	TU_OK(tu_write(fs, "/f", 0, 8, 1));
	ino = (uint64_t)tu_ino(fs, "/f");
	TU_OK(zfs_sync(fs));
	free0 = df_free(fs);
	TU_OK(zfs_open(fs, &tu_root_ctx, ino, O_RDWR, &cache));
	ck_assert_int_eq(zfs_fallocate(fs, &tu_root_ctx, ino, 0, 0,
				       (off_t)(2 * free0)),
			 -ENOSPC);
	ck_assert_uint_eq(df_free(fs), free0);
	TU_OK(zfs_fallocate(fs, &tu_root_ctx, ino, FALLOC_FL_KEEP_SIZE, 0,
			    (off_t)half));
	/* The block holding the 8 bytes was data already. */
	ck_assert_uint_eq(df_free(fs), free0 - (half - 4096));
	ck_assert_uint_eq(blocks_of(fs, ino), half);
	TU_OK(zfs_release(fs, ino, cache));
	tu_unmount(fs);

	fs = tu_mount(tu_img, false);
	ck_assert_uint_eq(df_free(fs), free0 - (half - 4096));
	ck_assert_uint_eq(blocks_of(fs, ino), half);
	/* Fill the rest until ENOSPC. */
	TU_OK(tu_write(fs, "/g", 0, 8, 2));
	g = (uint64_t)tu_ino(fs, "/g");
	TU_OK(zfs_open(fs, &tu_root_ctx, g, O_RDWR, &cache));
	buf = calloc(1, ZONE / 4);
	ck_assert_ptr_nonnull(buf);
	for (uint64_t off = 0;; off += ZONE / 4) {
		ssize_t n = zfs_write(fs, &tu_root_ctx, g, buf, ZONE / 4,
				      (off_t)off, false);

		if (n < 0) {
			ck_assert_int_eq(n, -ENOSPC);
			break;
		}
		ck_assert_uint_le(off, 2 * free0);
	}
	TU_OK(zfs_release(fs, g, cache));
	TU_OK(zfs_sync(fs));
	/*
	 * Writes into the reserved range still succeed, all of them. (Not
	 * over the first block: that is data, and rewriting data takes new
	 * space on a zoned device until reclaim frees the old.)
	 */
	TU_OK(tu_write(fs, "/f", 4096, (size_t)half - 4096, 7));
	TU_OK(zfs_sync(fs));
	TU_OK(tu_verify(fs, "/f", 4096, (size_t)half - 4096, 7));
	ck_assert_uint_eq(blocks_of(fs, ino), half);
	/* Written: nothing is reserved any more; truncate frees the data. */
	TU_OK(zfs_open(fs, &tu_root_ctx, ino, O_RDWR, &cache));
	TU_OK(zfs_fallocate(fs, &tu_root_ctx, ino, FALLOC_FL_KEEP_SIZE,
			    (off_t)half, 8 * 4096));
	ck_assert_uint_eq(blocks_of(fs, ino), half + 8 * 4096);
	TU_OK(zfs_release(fs, ino, cache));
	TU_OK(tu_truncate(fs, "/f", half));
	ck_assert_uint_eq(blocks_of(fs, ino), half);
	TU_OK(tu_unlink(fs, "/g"));
	TU_OK(tu_unlink(fs, "/f"));
	ck_assert(tu_wait_freed(fs, ino));
	free(buf);
	tu_unmount(fs);
}
END_TEST

/* ---- reclaim without memory ------------------------------------------- */

static int fail_bufs; /* zdev_buf_alloc() calls to fail from now */

void *__real_zdev_buf_alloc(const struct zdev *dev, size_t len);
void *__wrap_zdev_buf_alloc(const struct zdev *dev, size_t len);

void *__wrap_zdev_buf_alloc(const struct zdev *dev, size_t len)
{
	/* Only reclaim's buffer has this size. */
	if (len == GC_IO_BYTES && __atomic_load_n(&fail_bufs, __ATOMIC_RELAXED) > 0) {
		__atomic_sub_fetch(&fail_bufs, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	return __real_zdev_buf_alloc(dev, len);
}

/*
 * Reclaim that cannot allocate its copy buffer fails with -ENOMEM and
 * moves nothing (the writer's collect that meets it logs it and goes on
 * with the next row); with memory again it moves the zone, and the data
 * reads back.
 */
START_TEST(test_collect_enomem)
{
	struct alloc_try t = { 0 };
	struct zfs *fs;

	fs = mount_geom(16, 0, 0);
	TU_OK(tu_write(fs, "/a", 0, ZONE, 1));
	TU_OK(zfs_sync(fs));
	TU_OK(tu_write(fs, "/a", 0, ZONE / 2, 2));
	TU_OK(zfs_sync(fs));
	__atomic_store_n(&fail_bufs, 1, __ATOMIC_RELAXED);
	ck_assert_int_eq(gc_collect(fs, 1, GC_COST_BENEFIT, &t, NULL), -ENOMEM);
	ck_assert_int_eq(gc_collect(fs, 1, GC_COST_BENEFIT, &t, NULL), 1);
	TU_OK(zfs_sync(fs));
	tu_unmount(fs);
	fs = tu_mount(tu_img, true);
	TU_OK(tu_verify(fs, "/a", 0, ZONE / 2, 2));
	TU_OK(tu_verify(fs, "/a", ZONE / 2, ZONE / 2, 1));
	tu_unmount(fs);
}
END_TEST

/*
 * The stats count what finding no room cost: a write past the free zones
 * (no background thread here) reclaims on its own path, and that time
 * and those copies show in space_stall_ns and gc_bytes_by_writers; the
 * data reads back.
 */
START_TEST(test_stall_counted)
{
	struct zfs_stats st0, st;
	uint64_t avail, half, fill, off;
	char json[8192], want[64];
	struct zfs *fs;

	fs = mount_geom(16, 0, 0);
	avail = df_free(fs);
	half = ZF_ROUND_DOWN(avail / 2, (uint64_t)ZONE);
	TU_OK(tu_write(fs, "/a", 0, (size_t)half, 1));
	TU_OK(zfs_sync(fs));
	/* Every other 64 KiB again: each zone of /a half dead. */
	for (off = 0; off < half; off += 128 * 1024)
		TU_OK(tu_write(fs, "/a", off, 64 * 1024, 2));
	TU_OK(zfs_sync(fs));
	TU_OK(zfs_get_stats(fs, &st0));
	ck_assert_uint_eq(st0.gc_bytes_by_writers, 0);
	fill = df_free(fs) - 128 * 1024;
	TU_OK(tu_write(fs, "/b", 0, (size_t)fill, 3));
	TU_OK(zfs_sync(fs));
	TU_OK(zfs_get_stats(fs, &st));
	ck_assert_uint_gt(st.gc_bytes_by_writers, 0);
	ck_assert_uint_eq(st.gc_bytes_by_writers,
			  st.gc_bytes_written - st0.gc_bytes_written);
	ck_assert_uint_gt(st.space_stall_ns, st0.space_stall_ns);
	ck_assert_int_gt(zfs_stats_json(&st, json, sizeof(json)), 0);
	snprintf(want, sizeof(want), "\"gc_bytes_by_writers\": %llu",
		 (unsigned long long)st.gc_bytes_by_writers);
	ck_assert_msg(strstr(json, want), "%s", json);
	snprintf(want, sizeof(want), "\"space_stall_ns\": %llu",
		 (unsigned long long)st.space_stall_ns);
	ck_assert_msg(strstr(json, want), "%s", json);
	tu_unmount(fs);
	fs = tu_mount(tu_img, true);
	for (off = 0; off < half; off += 128 * 1024) {
		TU_OK(tu_verify(fs, "/a", off, 64 * 1024, 2));
		TU_OK(tu_verify(fs, "/a", off + 64 * 1024, 64 * 1024, 1));
	}
	TU_OK(tu_verify(fs, "/b", 0, (size_t)fill, 3));
	tu_unmount(fs);
}
END_TEST

/* ---- a large file's head without memory ------------------------------- */

static int fail_heads; /* alloc_private_head() calls to fail from now */

struct zfs_head *__real_alloc_private_head(struct zfs *fs, uint64_t group);
struct zfs_head *__wrap_alloc_private_head(struct zfs *fs, uint64_t group);

struct zfs_head *__wrap_alloc_private_head(struct zfs *fs, uint64_t group)
{
	if (__atomic_load_n(&fail_heads, __ATOMIC_RELAXED) > 0) {
		__atomic_sub_fetch(&fail_heads, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	return __real_alloc_private_head(fs, group);
}

/*
 * A large file whose own head cannot be made (no memory) writes through
 * the small-file head: its data lands, fsync says 0, and it reads back.
 */
START_TEST(test_private_head_enomem)
{
	struct zfs *fs;

	fs = mount_geom(16, 0, 0);
	__atomic_store_n(&fail_heads, 1000, __ATOMIC_RELAXED);
	TU_OK(tu_write(fs, "/big", 0, 3 * ZONE / 2, 4));
	TU_OK(zfs_sync(fs));
	ck_assert_int_lt(__atomic_load_n(&fail_heads, __ATOMIC_RELAXED), 1000);
	__atomic_store_n(&fail_heads, 0, __ATOMIC_RELAXED);
	tu_unmount(fs);
	fs = tu_mount(tu_img, true);
	TU_OK(tu_verify(fs, "/big", 0, 3 * ZONE / 2, 4));
	tu_unmount(fs);
}
END_TEST

static void add(Suite *s, const char *name, const TTest *t)
{
	tu_add_case(s, name, t, tu_img_setup, tu_img_teardown, 60);
}

int main(void)
{
	Suite *s = suite_create("space");

	add(s, "rows_in_order", test_rows_in_order);
	add(s, "progress_restarts", test_progress_restarts);
	add(s, "limits_never_fail", test_limits_never_fail);
	add(s, "private_shares", test_private_shares);
	add(s, "journal_only_waits", test_journal_only_waits);
	add(s, "missing_row_fails", test_missing_row_fails);
	add(s, "writer_waits_for_slot", test_writer_waits_for_slot);
	add(s, "private_falls_back", test_private_falls_back);
	add(s, "reserve_enospc", test_reserve_enospc);
	add(s, "fallocate_reserves", test_fallocate_reserves);
	add(s, "collect_enomem", test_collect_enomem);
	add(s, "stall_counted", test_stall_counted);
	add(s, "private_head_enomem", test_private_head_enomem);
	printf("check_space: the space policy, row by row, and what it makes writers do\n");
	return tu_run(s);
}
