// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * check_fault: device errors under a mounted file system (the library),
 * injected through zdev_set_fault() and zemu_set_cond(). For each: the
 * caller gets EIO (or the file system carries on, when it can go around
 * the fault), the file system turns read-only when its metadata could not
 * be written (zfs_get_stats().read_only, statfs ST_RDONLY, EROFS), what
 * was durable before is never damaged, and a remount with fsck recovers.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "zonefuse/util.h"
#include "zonefuse/zdev.h"
#include "zonefuse/zemu.h"
#include "zonefuse/zfs.h"

#define ZS (1u << 20)
#define NZ 32u

static const struct zfs_ctx ctx = { .uid = 0, .gid = 0, .umask = 022 };
static const struct zfs_opts mopts = { .commit_ms = 3600000,
				       .no_reclaim_thread = true };
static char dir[1024], img[PATH_MAX];

/* ---- the fault hook ------------------------------------------------------ */

enum fault_mode {
	F_NONE,
	F_LEARN,	  /* note the zones written */
	F_WRITE_ONCE,	  /* fail the next write */
	F_WRITE_ZONE,	  /* fail every write to the zones of mask */
	F_WRITE_NOT_ZONE, /* fail every write but those to mask's zones */
	F_WRITE_COUNT,	  /* fail the next "zone" writes */
	F_FLUSH,	  /* fail every flush */
};

static struct {
	_Atomic int mode;
	_Atomic uint32_t zone;
	_Atomic uint64_t mask; /* F_WRITE_ZONE, F_WRITE_NOT_ZONE: zones */
	_Atomic uint32_t fired;
	_Atomic uint64_t seen; /* F_LEARN: zones written (first 64) */
} fault;

static int fault_hook(void *arg, enum zdev_op op, uint32_t zone, uint64_t off,
		      size_t len)
{
	int mode = fault.mode;

	(void)arg;
	(void)off;
	(void)len;
	if (op == ZDEV_OP_WRITE && mode == F_LEARN && zone < 64)
		fault.seen |= 1ull << zone;
	if (op == ZDEV_OP_WRITE &&
	    (mode == F_WRITE_ONCE || mode == F_WRITE_COUNT ||
	     (mode == F_WRITE_ZONE && zone < 64 && (fault.mask >> zone & 1)) ||
	     (mode == F_WRITE_NOT_ZONE &&
	      (zone >= 64 || !(fault.mask >> zone & 1))))) {
		if (mode == F_WRITE_ONCE ||
		    (mode == F_WRITE_COUNT && fault.fired + 1 >= fault.zone))
			fault.mode = F_NONE;
		fault.fired++;
		return -EIO;
	}
	if (op == ZDEV_OP_FLUSH && mode == F_FLUSH) {
		fault.fired++;
		return -EIO;
	}
	return 0;
}

static void arm_mask(struct zfs *fs, int mode, uint64_t mask)
{
	fault.mask = mask;
	fault.fired = 0;
	fault.seen = 0;
	fault.mode = mode;
	zdev_set_fault(zfs_dev(fs), fault_hook, NULL);
}

static void arm(struct zfs *fs, int mode, uint32_t zone)
{
	fault.zone = zone;
	arm_mask(fs, mode, 0);
}

static void disarm(struct zfs *fs)
{
	fault.mode = F_NONE;
	zdev_set_fault(zfs_dev(fs), NULL, NULL);
}

/* ---- files ------------------------------------------------------------------ */

static void pattern(uint8_t *b, size_t len, uint64_t off, uint32_t seed)
{
	for (size_t i = 0; i < len; i++) {
		uint64_t x = (off + i) * 0x9e3779b97f4a7c15ull ^ seed;

		b[i] = (uint8_t)((x >> 29) | 1);
	}
}

static uint64_t ino_of(struct zfs *fs, const char *name)
{
	struct stat st;

	if (zfs_lookup(fs, 1, name, &st))
		return 0;
	return st.st_ino;
}

/* Write @len bytes of @seed's pattern at @off of @name (created). */
static int put(struct zfs *fs, const char *name, uint64_t off, size_t len,
	       uint32_t seed)
{
	uint8_t *b = malloc(len);
	uint64_t ino = ino_of(fs, name);
	struct stat st;
	size_t done = 0;
	int ret;

	ck_assert_ptr_nonnull(b);
	if (!ino) {
		ret = zfs_create(fs, &ctx, 1, name, S_IFREG | 0644,
				 O_WRONLY | O_CREAT, &st, NULL);
		if (ret) {
			free(b);
			return ret;
		}
		ino = st.st_ino;
	} else {
		ret = zfs_open(fs, &ctx, ino, O_WRONLY, NULL);
		if (ret) {
			free(b);
			return ret;
		}
	}
	pattern(b, len, off, seed);
	while (done < len && !ret) {
		size_t n = len - done < ZFS_CHUNK ? len - done : ZFS_CHUNK;
		ssize_t w = zfs_write(fs, &ctx, ino, b + done, n,
				      (off_t)(off + done), false);

		if (w < 0)
			ret = (int)w;
		else
			done += (size_t)w;
	}
	zfs_release(fs, ino, 0);
	free(b);
	return ret;
}

static int sync_file(struct zfs *fs, const char *name)
{
	uint64_t ino = ino_of(fs, name);
	int ret;

	if (!ino)
		return -ENOENT;
	ret = zfs_open(fs, &ctx, ino, O_RDONLY, NULL);
	if (ret)
		return ret;
	ret = zfs_fsync(fs, ino, false);
	zfs_release(fs, ino, 0);
	return ret;
}

/*
 * Check that @name is @len bytes of @seed's pattern (in two parts:
 * [0, split) from @seed, the rest from @seed2). Returns 0, -EILSEQ, or
 * the read's errno.
 */
static int check2(struct zfs *fs, const char *name, size_t len, size_t split,
		  uint32_t seed, uint32_t seed2)
{
	uint64_t ino = ino_of(fs, name);
	uint8_t *b = malloc(len + 1), *w = malloc(len + 1);
	size_t done = 0;
	struct stat st;
	int ret;

	ck_assert_ptr_nonnull(b);
	ck_assert_ptr_nonnull(w);
	ck_assert_uint_ne(ino, 0);
	ck_assert_int_eq(zfs_getattr(fs, ino, &st), 0);
	ret = (size_t)st.st_size == len ? 0 : -EILSEQ;
	if (!ret)
		ret = zfs_open(fs, &ctx, ino, O_RDONLY, NULL);
	while (!ret && done < len) {
		ssize_t n = zfs_read(fs, ino, b + done, len - done,
				     (off_t)done);

		if (n <= 0)
			ret = n < 0 ? (int)n : -EILSEQ;
		else
			done += (size_t)n;
	}
	if ((size_t)st.st_size == len)
		zfs_release(fs, ino, 0);
	if (!ret) {
		pattern(w, split, 0, seed);
		pattern(w + split, len - split, split, seed2);
		if (memcmp(w, b, len))
			ret = -EILSEQ;
	}
	free(b);
	free(w);
	return ret;
}

static int check(struct zfs *fs, const char *name, size_t len, uint32_t seed)
{
	return check2(fs, name, len, len, seed, seed);
}

/* The zone of the extent holding byte @foff of @name. */
static uint32_t zone_of(struct zfs *fs, const char *name, uint64_t foff)
{
	char text[4096], *line, *save = NULL;
	ssize_t n = zfs_extents_text(fs, ino_of(fs, name), text,
				     sizeof(text) - 1);

	ck_assert_int_gt(n, 0);
	text[n] = '\0';
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned int z;
		uint64_t off, len, fo;

		if (sscanf(line,
			   "zone %u offset %" SCNu64 " length %" SCNu64
			   " file_offset %" SCNu64,
			   &z, &off, &len, &fo) == 4 &&
		    fo <= foff && foff - fo < len)
			return z;
	}
	ck_abort_msg("no extent of %s holds %" PRIu64, name, foff);
	return 0;
}

static struct zfs *mount_it(void)
{
	struct zfs *fs;
	char err[512];
	int ret = zfs_mount(img, &mopts, &fs, err, sizeof(err));

	ck_assert_msg(!ret, "mount: %s", err);
	return fs;
}

static void fsck_clean(void)
{
	struct zfs_fsck_result res;
	char err[512] = "";
	int ret = zfs_fsck(img, false, NULL, NULL, &res, err, sizeof(err));

	ck_assert_msg(ret == ZFS_FSCK_OK, "fsck: exit %d, %u errors: %s", ret,
		      res.errors, err);
}

static bool read_only(struct zfs *fs)
{
	struct zfs_stats zs;
	struct statvfs sv;

	ck_assert_int_eq(zfs_get_stats(fs, &zs), 0);
	ck_assert_int_eq(zfs_statfs(fs, &sv), 0);
	ck_assert_msg(zs.read_only == !!(sv.f_flag & ST_RDONLY),
		      "stats and statfs disagree on read-only");
	return zs.read_only;
}

/* The durable file every test starts with: "A", 1.5 MiB, fsynced. */
static struct zfs *setup_a(void)
{
	struct zfs *fs = mount_it();

	ck_assert_int_eq(put(fs, "A", 0, 3 * ZS / 2, 1), 0);
	ck_assert_int_eq(sync_file(fs, "A"), 0);
	return fs;
}

/*
 * The journal's zones: the ones a metadata-only commit writes (the
 * chain's last zone and its mirror's), as a mask.
 */
static uint64_t journal_zones(struct zfs *fs)
{
	uint64_t ino = ino_of(fs, "A");
	uint64_t want = 0;
	struct zfs_stats st;
	uint32_t last;

	ck_assert_int_eq(zfs_get_stats(fs, &st), 0);
	ck_assert_uint_ge(st.nr_chain, 1);
	ck_assert_uint_le(st.nr_chain, ZFS_STATS_CHAIN);
	last = st.chain[st.nr_chain - 1];
	if (last < 64)
		want |= 1ull << last;
	last = st.mirror_chain[st.nr_chain - 1];
	if (st.metadata_copies > 1 && last < 64)
		want |= 1ull << last;
	arm(fs, F_LEARN, 0);
	ck_assert_int_eq(zfs_setxattr(fs, &ctx, ino, "user.learn", "x", 1, 0),
			 0);
	ck_assert_int_eq(zfs_fsyncdir(fs, 1), 0);
	disarm(fs);
	ck_assert_msg(fault.seen == want,
		      "a metadata commit wrote to zones %#" PRIx64 ", not the journal's %#" PRIx64,
		      (uint64_t)fault.seen, want);
	return want;
}

static void setup(void)
{
	struct zemu_params p = { .size = NZ * ZS, .zone_size = ZS,
				 .block_size = 4096 };
	struct zfs_mkfs_opts mo = { .reserve_pct = -1 };
	struct zfs_mkfs_info info;
	const char *t = getenv("TMPDIR");
	char err[256];

	snprintf(dir, sizeof(dir), "%s/check_fault.XXXXXX", t && *t ? t : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(img, sizeof(img), "%s/img", dir);
	ck_assert_int_eq(zemu_check_params(&p, err, sizeof(err)), 0);
	ck_assert_int_eq(zemu_create(img, &p, err, sizeof(err)), 0);
	ck_assert_int_eq(zfs_mkfs(img, &mo, &info, err, sizeof(err)), 0);
	unsetenv(ZDEV_RECORD_ENV);
	zlog_set_level(ZLOG_ERR);
}

static void teardown(void)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* ---- the rules ---------------------------------------------------------------- */

/* One failed data write: retried elsewhere, the caller never knows. */
START_TEST(test_data_write_retried)
{
	struct zfs *fs = setup_a();

	arm(fs, F_WRITE_ONCE, 0);
	ck_assert_int_eq(put(fs, "B", 0, 3 * ZS / 2, 2), 0);
	ck_assert_int_eq(sync_file(fs, "B"), 0);
	ck_assert_uint_eq(fault.fired, 1);
	disarm(fs);
	ck_assert(!read_only(fs));
	ck_assert_int_eq(check(fs, "B", 3 * ZS / 2, 2), 0);
	ck_assert_int_eq(zfs_unmount(fs), 0);
	fsck_clean();
	fs = mount_it();
	ck_assert_int_eq(check(fs, "A", 3 * ZS / 2, 1), 0);
	ck_assert_int_eq(check(fs, "B", 3 * ZS / 2, 2), 0);
	ck_assert_int_eq(zfs_unmount(fs), 0);
}
END_TEST

/*
 * Every data write fails: fsync says EIO; the metadata is fine, so the
 * file system goes on, and a remount finds the durable file intact.
 */
START_TEST(test_data_writes_fail)
{
	struct zfs *fs = setup_a();
	uint64_t j = journal_zones(fs);

	arm_mask(fs, F_WRITE_NOT_ZONE, j);
	ck_assert_int_eq(put(fs, "B", 0, 3 * ZS / 2, 2), 0);
	ck_assert_int_eq(sync_file(fs, "B"), -EIO);
	ck_assert_uint_gt(fault.fired, 0);
	disarm(fs);
	ck_assert_int_eq(check(fs, "A", 3 * ZS / 2, 1), 0);
	/* B's bytes are lost: they read as EIO, not as a hole. */
	ck_assert_int_eq(check(fs, "B", 3 * ZS / 2, 2), -EIO);
	/* The device works again: so does the file system. */
	ck_assert_int_eq(put(fs, "C", 0, 5000, 3), 0);
	ck_assert_int_eq(sync_file(fs, "C"), 0);
	zfs_crash(fs);
	fsck_clean();
	fs = mount_it();
	ck_assert_int_eq(check(fs, "A", 3 * ZS / 2, 1), 0);
	ck_assert_int_eq(check(fs, "C", 5000, 3), 0);
	ck_assert_int_eq(zfs_unmount(fs), 0);
	fsck_clean();
}
END_TEST

/*
 * A chunk whose writes all fail, then one that lands: the fsync that
 * waited for both says EIO. It took only its last turn's report: an fsync
 * that began with the failure reported and the next chunk still to write
 * returned 0, and the bytes were lost without a word.
 */
START_TEST(test_failed_then_landed)
{
	struct zfs *fs = setup_a();
	uint8_t *b = malloc(ZS);
	struct stat st;
	uint64_t ino;
	int i;

	ck_assert_ptr_nonnull(b);
	ck_assert_int_eq(zfs_create(fs, &ctx, 1, "B", S_IFREG | 0644,
				    O_WRONLY | O_CREAT, &st, NULL), 0);
	ino = st.st_ino;
	/* The writeback retries a chunk in 3 zones, then gives up. */
	arm(fs, F_WRITE_COUNT, 3);
	pattern(b, ZS, 0, 2);
	ck_assert_int_eq(zfs_write(fs, &ctx, ino, b, ZS, 0, false), ZS);
	for (i = 0; i < 1000 && fault.fired < 3; i++)
		usleep(1000);
	ck_assert_uint_eq(fault.fired, 3);
	pattern(b, ZS / 2, ZS, 2);
	ck_assert_int_eq(zfs_write(fs, &ctx, ino, b, ZS / 2, ZS, false),
			 ZS / 2);
	ck_assert_int_eq(zfs_fsync(fs, ino, false), -EIO);
	ck_assert_int_eq(zfs_fsync(fs, ino, false), 0);
	zfs_release(fs, ino, 0);
	disarm(fs);
	ck_assert_int_eq(check(fs, "B", 3 * ZS / 2, 2), -EIO);
	free(b);
	ck_assert_int_eq(zfs_unmount(fs), 0);
	fsck_clean();
}
END_TEST

/*
 * The journal cannot be written: EIO to the caller, and the file system is
 * read-only from then on (design.md, "Failure": stats, statfs); after a
 * crash the image mounts with what was durable before.
 */
START_TEST(test_journal_write_fails)
{
	struct zfs *fs = setup_a();
	uint64_t j = journal_zones(fs);

	arm_mask(fs, F_WRITE_ZONE, j);
	ck_assert_int_eq(put(fs, "A", 3 * ZS / 2, 4096, 9), 0);
	ck_assert_int_eq(sync_file(fs, "A"), -EIO);
	ck_assert_uint_gt(fault.fired, 0);
	disarm(fs);
	ck_assert_msg(read_only(fs),
		      "the journal could not be written, but stats and statfs do not say read-only");
	zfs_crash(fs);
	fsck_clean();
	fs = mount_it();
	ck_assert(!read_only(fs));
	ck_assert_int_eq(check(fs, "A", 3 * ZS / 2, 1), 0);
	ck_assert_int_eq(zfs_unmount(fs), 0);
	fsck_clean();
}
END_TEST

/* After a failed metadata write, changes get EROFS (design.md). */
START_TEST(test_journal_failure_erofs)
{
	struct zfs *fs = setup_a();
	uint64_t j = journal_zones(fs);
	struct stat st;
	int ret;

	arm_mask(fs, F_WRITE_ZONE, j);
	ck_assert_int_eq(put(fs, "A", 3 * ZS / 2, 4096, 9), 0);
	ck_assert_int_eq(sync_file(fs, "A"), -EIO);
	disarm(fs);
	ret = zfs_mkdir(fs, &ctx, 1, "d", 0755, &st);
	ck_assert_msg(ret == -EROFS, "mkdir after the failure: %d (%s)", ret,
		      strerror(-ret));
	ret = put(fs, "B", 0, 100, 2);
	ck_assert_msg(ret == -EROFS, "create after the failure: %d (%s)", ret,
		      strerror(-ret));
	ret = put(fs, "A", 0, 100, 2);
	ck_assert_msg(ret == -EROFS, "write after the failure: %d (%s)", ret,
		      strerror(-ret));
	zfs_crash(fs);
	fsck_clean();
	fs = mount_it();
	ck_assert_int_eq(check(fs, "A", 3 * ZS / 2, 1), 0);
	ck_assert_int_eq(zfs_unmount(fs), 0);
}
END_TEST

/* A flush fails: as a failed journal write. */
START_TEST(test_flush_fails)
{
	struct zfs *fs = setup_a();
	int ret;

	arm(fs, F_FLUSH, 0);
	ck_assert_int_eq(put(fs, "B", 0, 200000, 2), 0);
	ck_assert_int_eq(sync_file(fs, "B"), -EIO);
	ck_assert_uint_gt(fault.fired, 0);
	disarm(fs);
	ck_assert_msg(read_only(fs),
		      "a flush failed, but stats and statfs do not say read-only");
	ret = sync_file(fs, "A");
	ck_assert_msg(ret == -EIO || ret == -EROFS, "fsync after: %d", ret);
	zfs_crash(fs);
	fsck_clean();
	fs = mount_it();
	ck_assert_int_eq(check(fs, "A", 3 * ZS / 2, 1), 0);
	ck_assert_int_eq(zfs_unmount(fs), 0);
	fsck_clean();
}
END_TEST

/*
 * The zone a file is being written into turns read-only: the write goes
 * elsewhere, what the zone holds stays readable.
 */
START_TEST(test_zone_readonly)
{
	struct zfs *fs = setup_a();
	uint32_t z = zone_of(fs, "A", 3 * ZS / 2 - 1);

	ck_assert_int_eq(zemu_set_cond(zfs_dev(fs), z, ZDEV_COND_READONLY), 0);
	ck_assert_int_eq(put(fs, "A", 3 * ZS / 2, ZS / 2, 4), 0);
	ck_assert_int_eq(sync_file(fs, "A"), 0);
	ck_assert(!read_only(fs));
	ck_assert_int_eq(check2(fs, "A", 2 * ZS, 3 * ZS / 2, 1, 4), 0);
	ck_assert_int_eq(zfs_unmount(fs), 0);
	fsck_clean();
	fs = mount_it();
	ck_assert_int_eq(check2(fs, "A", 2 * ZS, 3 * ZS / 2, 1, 4), 0);
	ck_assert_int_eq(put(fs, "B", 0, 300000, 2), 0);
	ck_assert_int_eq(sync_file(fs, "B"), 0);
	ck_assert_int_eq(zfs_unmount(fs), 0);
	fsck_clean();
}
END_TEST

/*
 * A zone holding a file's data goes offline: reading it gives EIO, never
 * other bytes; the rest of the file system works, and mounts again.
 */
START_TEST(test_zone_offline)
{
	struct zfs *fs = setup_a();
	uint32_t z;

	ck_assert_int_eq(put(fs, "B", 0, 5000, 2), 0);
	ck_assert_int_eq(sync_file(fs, "B"), 0);
	z = zone_of(fs, "A", 0);
	ck_assert_uint_ne(zone_of(fs, "B", 0), z);
	ck_assert_int_eq(zemu_set_cond(zfs_dev(fs), z, ZDEV_COND_OFFLINE), 0);
	ck_assert_int_eq(check(fs, "A", 3 * ZS / 2, 1), -EIO);
	ck_assert_int_eq(check(fs, "B", 5000, 2), 0);
	ck_assert_int_eq(put(fs, "C", 0, 70000, 3), 0);
	ck_assert_int_eq(sync_file(fs, "C"), 0);
	ck_assert_int_eq(zfs_unmount(fs), 0);
	fs = mount_it();
	ck_assert_int_eq(check(fs, "A", 3 * ZS / 2, 1), -EIO);
	ck_assert_int_eq(check(fs, "B", 5000, 2), 0);
	ck_assert_int_eq(check(fs, "C", 70000, 3), 0);
	ck_assert_int_eq(zfs_unmount(fs), 0);
}
END_TEST

int main(void)
{
	const struct {
		const char *name;
		const TTest *t;
	} cases[] = {
		{ "data_write_retried", test_data_write_retried },
		{ "data_writes_fail", test_data_writes_fail },
		{ "failed_then_landed", test_failed_then_landed },
		{ "journal_write_fails", test_journal_write_fails },
		{ "journal_failure_erofs", test_journal_failure_erofs },
		{ "flush_fails", test_flush_fails },
		{ "zone_readonly", test_zone_readonly },
		{ "zone_offline", test_zone_offline },
	};
	Suite *s = suite_create("fault");
	SRunner *sr;
	size_t i;
	int failed;

	printf("check_fault: device errors under a mounted file system: EIO to the caller, read-only when metadata fails, nothing durable damaged, remount and fsck recover\n");
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		TCase *tc = tcase_create(cases[i].name);

		tcase_add_checked_fixture(tc, setup, teardown);
		tcase_add_test(tc, cases[i].t);
		tcase_set_timeout(tc, 60);
		suite_add_tcase(s, tc);
	}
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
