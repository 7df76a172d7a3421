// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * check_crash: the device recording (zdev_record(), ZONEFUSE_RECORD) and
 * the rebuilding of crash states from it (crash.h), on emulator images.
 * One TCase per rule.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zonefuse/crash.h"
#include "zonefuse/crashlog.h"
#include "zonefuse/zdev.h"
#include "zonefuse/zemu.h"

#define BS 4096u
#define ZS (256u * 1024u)
#define NZ 8u

static char dir[1024], img[PATH_MAX], base[PATH_MAX], logp[PATH_MAX],
	out[PATH_MAX];
static struct zdev *dev;
static void *buf;

static void setup(void)
{
	struct zemu_params p = { .size = NZ * ZS, .zone_size = ZS,
				 .block_size = BS };
	const char *t = getenv("TMPDIR");
	char err[256];

	snprintf(dir, sizeof(dir), "%s/check_crash.XXXXXX", t && *t ? t : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(img, sizeof(img), "%s/img", dir);
	snprintf(base, sizeof(base), "%s/base", dir);
	snprintf(logp, sizeof(logp), "%s/log", dir);
	snprintf(out, sizeof(out), "%s/out", dir);
	ck_assert_int_eq(zemu_check_params(&p, err, sizeof(err)), 0);
	ck_assert_int_eq(zemu_create(img, &p, err, sizeof(err)), 0);
	ck_assert_int_eq(crash_copy_sparse(img, base), 0);
	unsetenv(ZDEV_RECORD_ENV);
	ck_assert_int_eq(zdev_open(img, ZDEV_EXCL, &dev, err, sizeof(err)), 0);
	buf = zdev_buf_alloc(dev, ZS);
	ck_assert_ptr_nonnull(buf);
}

static void teardown(void)
{
	char cmd[PATH_MAX + 16];

	zdev_close(dev);
	dev = NULL;
	free(buf);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* Append @nblk blocks of pattern @tag at zone @z's write pointer. */
static void wr(uint32_t z, uint32_t nblk, uint8_t tag)
{
	struct zdev_zone zz;

	ck_assert_int_eq(zdev_report(dev, z, 1, &zz), 1);
	memset(buf, tag, (size_t)nblk * BS);
	ck_assert_int_eq(zdev_write(dev, buf, (size_t)nblk * BS, zz.wp), 0);
}

static struct crash_log *open_log(struct crash_log_info *li)
{
	struct crash_log *log;
	char err[256];

	ck_assert_int_eq(crash_log_open(logp, &log, err, sizeof(err)), 0);
	crash_log_info(log, li);
	return log;
}

/* The write pointer of zone @z in image @path, relative to the zone. */
static uint64_t wp_of(const char *path, uint32_t z, uint8_t *cond)
{
	struct zdev *d;
	struct zdev_zone zz;
	char err[256];

	ck_assert_int_eq(zdev_open(path, ZDEV_RDONLY, &d, err, sizeof(err)), 0);
	ck_assert_int_eq(zdev_report(d, z, 1, &zz), 1);
	zdev_close(d);
	if (cond)
		*cond = zz.cond;
	return zz.wp - zz.start;
}

/* ---- recording ----------------------------------------------------------- */

START_TEST(test_record_counts)
{
	struct crash_log_info li;
	struct crash_log *log;

	ck_assert_int_eq(zdev_record(dev, logp), 0);
	ck_assert_int_eq(zdev_record(dev, logp), -EBUSY);
	ck_assert_uint_eq(zdev_record_seq(dev), 0);
	wr(1, 2, 0xa1);
	ck_assert_uint_eq(zdev_record_seq(dev), 1);
	ck_assert_int_eq(zdev_flush(dev), 0);
	ck_assert_uint_eq(zdev_record_seq(dev), 3); /* FLUSH, FLUSH_DONE */
	ck_assert_int_eq(zdev_reset(dev, 1), 0);
	ck_assert_int_eq(zdev_finish(dev, 2), 0);
	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_OPEN, 3), 0);
	ck_assert_uint_eq(zdev_record_seq(dev), 5); /* open: not recorded */
	zdev_close(dev);
	dev = NULL;

	log = open_log(&li);
	ck_assert_uint_eq(li.records, 5);
	ck_assert_uint_eq(li.writes, 1);
	ck_assert_uint_eq(li.write_bytes, 2 * BS);
	ck_assert_uint_eq(li.flushes, 1);
	ck_assert_uint_eq(li.resets, 1);
	ck_assert_uint_eq(li.finishes, 1);
	ck_assert_uint_eq(li.nr_zones, NZ);
	ck_assert_uint_eq(li.zone_size, ZS);
	ck_assert_uint_eq(li.block_size, BS);
	ck_assert(!li.torn);
	crash_log_close(log);
	/* Reopen for the teardown. */
	ck_assert_int_eq(zdev_open(img, ZDEV_EXCL, &dev, NULL, 0), 0);
}
END_TEST

START_TEST(test_record_torn_tail)
{
	struct crash_log_info li;
	struct crash_log *log;
	struct stat st;

	ck_assert_int_eq(zdev_record(dev, logp), 0);
	wr(1, 1, 1);
	wr(1, 1, 2);
	wr(2, 3, 3);
	zdev_close(dev);
	dev = NULL;
	/* Killed in the middle of appending the last record. */
	ck_assert_int_eq(stat(logp, &st), 0);
	ck_assert_int_eq(truncate(logp, st.st_size - 100), 0);
	log = open_log(&li);
	ck_assert_uint_eq(li.records, 2);
	ck_assert(li.torn);
	crash_log_close(log);
	ck_assert_int_eq(zdev_open(img, ZDEV_EXCL, &dev, NULL, 0), 0);
}
END_TEST

START_TEST(test_record_damaged_record)
{
	struct crash_log_info li;
	struct crash_log *log;
	int fd;
	uint8_t b;
	off_t where = sizeof(struct crashlog_hdr) +
		      (sizeof(struct crashlog_rec) + BS) +
		      sizeof(struct crashlog_rec) + 10; /* record 1's data */

	ck_assert_int_eq(zdev_record(dev, logp), 0);
	wr(1, 1, 1);
	wr(1, 1, 2);
	wr(1, 1, 3);
	zdev_close(dev);
	dev = NULL;
	fd = open(logp, O_RDWR);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, &b, 1, where), 1);
	b ^= 0xff;
	ck_assert_int_eq(pwrite(fd, &b, 1, where), 1);
	close(fd);
	/* A bad CRC ends the log: nothing after it is used. */
	log = open_log(&li);
	ck_assert_uint_eq(li.records, 1);
	ck_assert(li.torn);
	crash_log_close(log);
	ck_assert_int_eq(zdev_open(img, ZDEV_EXCL, &dev, NULL, 0), 0);
}
END_TEST

START_TEST(test_record_not_a_log)
{
	struct crash_log *log;
	char err[256] = "";
	FILE *f = fopen(logp, "w");

	ck_assert_ptr_nonnull(f);
	fputs("hello, this is not a recording at all, but it is long enough to have a header's size maybe, yes it is, very long indeed....................................................", f);
	fclose(f);
	ck_assert_int_eq(crash_log_open(logp, &log, err, sizeof(err)),
			 -EMEDIUMTYPE);
	ck_assert_ptr_nonnull(strstr(err, logp));
	ck_assert_int_eq(crash_log_open("/nonexistent/x", &log, err,
					sizeof(err)),
			 -ENOENT);
}
END_TEST

START_TEST(test_record_env)
{
	struct zdev *d2;
	char err[256] = "", bad[PATH_MAX];
	struct stat st;

	zdev_close(dev);
	dev = NULL;
	setenv(ZDEV_RECORD_ENV, logp, 1);
	/* A read-only open does not record. */
	ck_assert_int_eq(zdev_open(img, ZDEV_RDONLY, &d2, err, sizeof(err)), 0);
	zdev_close(d2);
	ck_assert_int_eq(stat(logp, &st), -1);
	/* Nor one that asks not to. */
	ck_assert_int_eq(zdev_open(img, ZDEV_NORECORD, &d2, err, sizeof(err)),
			 0);
	zdev_close(d2);
	ck_assert_int_eq(stat(logp, &st), -1);
	/* A writable open does. */
	ck_assert_int_eq(zdev_open(img, ZDEV_EXCL, &d2, err, sizeof(err)), 0);
	ck_assert_int_eq(zdev_record(d2, logp), -EBUSY);
	zdev_close(d2);
	ck_assert_int_eq(stat(logp, &st), 0);
	ck_assert_int_eq(st.st_size, sizeof(struct crashlog_hdr));
	/* One that cannot record fails, and says why. */
	snprintf(bad, sizeof(bad), "%s/no/such/dir/log", dir);
	setenv(ZDEV_RECORD_ENV, bad, 1);
	ck_assert_int_eq(zdev_open(img, ZDEV_EXCL, &d2, err, sizeof(err)),
			 -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, ZDEV_RECORD_ENV));
	unsetenv(ZDEV_RECORD_ENV);
	ck_assert_int_eq(zdev_open(img, ZDEV_EXCL, &dev, NULL, 0), 0);
}
END_TEST

static int fail_flush(void *arg, enum zdev_op op, uint32_t zone, uint64_t off,
		      size_t len)
{
	(void)arg;
	(void)zone;
	(void)off;
	(void)len;
	return op == ZDEV_OP_FLUSH ? -EIO : 0;
}

START_TEST(test_record_faulted_flush)
{
	struct crash_log_info li;
	struct crash_log *log;
	struct crash_point pt;

	ck_assert_int_eq(zdev_record(dev, logp), 0);
	wr(1, 1, 1);
	zdev_set_fault(dev, fail_flush, NULL);
	ck_assert_int_eq(zdev_flush(dev), -EIO);
	zdev_set_fault(dev, NULL, NULL);
	zdev_close(dev);
	dev = NULL;
	/* A flush that never reached the device is not in the log. */
	log = open_log(&li);
	ck_assert_uint_eq(li.records, 1);
	ck_assert_uint_eq(li.flushes, 0);
	ck_assert_int_eq(crash_point(log, li.nr_points - 1, &pt), 0);
	ck_assert_uint_eq(pt.durable, 0);
	ck_assert_uint_eq(pt.nr_streams, 1);
	crash_log_close(log);
	ck_assert_int_eq(zdev_open(img, ZDEV_EXCL, &dev, NULL, 0), 0);
}
END_TEST

/* ---- crash points and states -------------------------------------------------- */

/*
 * The history used below (records):
 *   0 W z1  1 W z2  2 FLUSH  3 DONE  4 W z1  5 W z1  6 W z2  7 W z3
 *   8 RESET z3  9 W z3  10 FINISH z2  11 W z4
 */
static struct crash_log *history(struct crash_log_info *li)
{
	ck_assert_int_eq(zdev_record(dev, logp), 0);
	wr(1, 1, 0x11);
	wr(2, 1, 0x21);
	ck_assert_int_eq(zdev_flush(dev), 0);
	wr(1, 1, 0x12);
	wr(1, 1, 0x13);
	wr(2, 1, 0x22);
	wr(3, 1, 0x31);
	ck_assert_int_eq(zdev_reset(dev, 3), 0);
	wr(3, 2, 0x32);
	ck_assert_int_eq(zdev_finish(dev, 2), 0);
	wr(4, 1, 0x41);
	zdev_close(dev);
	dev = NULL;
	return open_log(li);
}

START_TEST(test_points)
{
	struct crash_log_info li;
	struct crash_log *log = history(&li);
	struct crash_point pt;
	char s[512];

	ck_assert_uint_eq(li.records, 12);
	/* Start, before the flush, before the reset, before the finish, the
	   end. Before the flush's end is no point of its own: only the
	   flush's start lies between it and the point before the flush. */
	ck_assert_uint_eq(li.nr_points, 5);
	ck_assert_int_eq(crash_point(log, 0, &pt), 0);
	ck_assert_int_eq(pt.kind, CRASH_AT_START);
	ck_assert_uint_eq(pt.nr_states, 1);
	ck_assert_int_eq(crash_point(log, 1, &pt), 0);
	ck_assert_int_eq(pt.kind, CRASH_AT_FLUSH);
	ck_assert_uint_eq(pt.rec, 2);
	ck_assert_uint_eq(pt.durable, 0);
	ck_assert_uint_eq(pt.nr_streams, 2);
	ck_assert_uint_eq(pt.nr_states, 4);
	/* Before the reset: z1 has 2 writes, z2 1, z3 1 since the barrier. */
	ck_assert_int_eq(crash_point(log, 2, &pt), 0);
	ck_assert_int_eq(pt.kind, CRASH_AT_RESET);
	ck_assert_uint_eq(pt.rec, 8);
	ck_assert_uint_eq(pt.durable, 2);
	ck_assert_uint_eq(pt.nr_streams, 3);
	ck_assert_uint_eq(pt.lost_max, 4);
	ck_assert_uint_eq(pt.nr_states, 3 * 2 * 2);
	/* After the reset z3's first write is settled: a new stream. */
	ck_assert_int_eq(crash_point(log, 3, &pt), 0);
	ck_assert_int_eq(pt.kind, CRASH_AT_FINISH);
	ck_assert_uint_eq(pt.nr_streams, 3);
	ck_assert_uint_eq(pt.nr_states, 3 * 2 * 2);
	/* After the finish z2's write is settled too; z4 joins. */
	ck_assert_int_eq(crash_point(log, 4, &pt), 0);
	ck_assert_int_eq(pt.kind, CRASH_AT_END);
	ck_assert_uint_eq(pt.rec, 12);
	ck_assert_uint_eq(pt.nr_streams, 3);
	ck_assert_uint_eq(pt.nr_states, 3 * 2 * 2);
	ck_assert_int_eq(crash_point(log, 5, &pt), -EINVAL);
	ck_assert_int_gt(crash_state_str(log, 4, NULL, s, sizeof(s)), 0);
	ck_assert_ptr_nonnull(strstr(s, "zone 1"));
	crash_log_close(log);
	ck_assert_int_eq(zdev_open(img, ZDEV_EXCL, &dev, NULL, 0), 0);
}
END_TEST

static bool has_state(const uint32_t *keeps, uint32_t nr, uint32_t ns,
		      const uint32_t *k)
{
	for (uint32_t i = 0; i < nr; i++)
		if (!memcmp(&keeps[i * ns], k, ns * sizeof(*k)))
			return true;
	return false;
}

START_TEST(test_states_all_and_sampled)
{
	struct crash_log_info li;
	struct crash_log *log = history(&li);
	uint32_t *k1, *k2, n1, n2, i, j;
	const uint32_t none[3] = { 0, 0, 0 }, all[3] = { 2, 1, 1 };

	/* 12 states: all of them, distinct. */
	ck_assert_int_eq(crash_states(log, 2, 64, 8, 1, &k1, &n1), 0);
	ck_assert_uint_eq(n1, 12);
	for (i = 0; i < n1; i++)
		for (j = i + 1; j < n1; j++)
			ck_assert(memcmp(&k1[i * 3], &k1[j * 3], 12));
	ck_assert(has_state(k1, n1, 3, none));
	ck_assert(has_state(k1, n1, 3, all));
	free(k1);
	/* Over the limit: a sample with both extremes, the same each time. */
	ck_assert_int_eq(crash_states(log, 2, 4, 6, 7, &k1, &n1), 0);
	ck_assert_int_eq(crash_states(log, 2, 4, 6, 7, &k2, &n2), 0);
	ck_assert_uint_eq(n1, 6);
	ck_assert_uint_eq(n2, 6);
	ck_assert(!memcmp(k1, k2, n1 * 3 * sizeof(*k1)));
	ck_assert(!memcmp(&k1[0], none, sizeof(none)));
	ck_assert(!memcmp(&k1[3], all, sizeof(all)));
	for (i = 0; i < n1; i++)
		for (j = i + 1; j < n1; j++)
			ck_assert(memcmp(&k1[i * 3], &k1[j * 3], 12));
	free(k1);
	free(k2);
	crash_log_close(log);
	ck_assert_int_eq(zdev_open(img, ZDEV_EXCL, &dev, NULL, 0), 0);
}
END_TEST

START_TEST(test_build_prefix_per_zone)
{
	struct crash_log_info li;
	struct crash_log *log = history(&li);
	uint32_t keep[3];
	uint8_t cond;
	char err[256];
	struct zdev *d;

	/* Before the reset (point 2): streams z1 (2), z2 (1), z3 (1). */
	keep[0] = 1;
	keep[1] = 0;
	keep[2] = 1;
	ck_assert_int_eq(crash_build(log, base, out, 2, keep, err, sizeof(err)),
			 0);
	ck_assert_uint_eq(wp_of(out, 1, NULL), 2 * BS); /* durable + 1 */
	ck_assert_uint_eq(wp_of(out, 2, NULL), 1 * BS); /* durable only */
	ck_assert_uint_eq(wp_of(out, 3, NULL), 1 * BS);
	ck_assert_int_eq(zdev_open(out, ZDEV_RDONLY, &d, err, sizeof(err)), 0);
	ck_assert_int_eq(zdev_read(d, buf, 2 * BS, zdev_zone_start(d, 1)), 0);
	ck_assert_uint_eq(((uint8_t *)buf)[0], 0x11);
	ck_assert_uint_eq(((uint8_t *)buf)[BS], 0x12);
	zdev_close(d);

	/* At the end, nothing lost: the finish made z2 full, z3 was reset
	   then written twice, z4 once. */
	ck_assert_int_eq(crash_build(log, base, out, 4, NULL, err, sizeof(err)),
			 0);
	ck_assert_uint_eq(wp_of(out, 1, NULL), 3 * BS);
	wp_of(out, 2, &cond);
	ck_assert_uint_eq(cond, ZDEV_COND_FULL);
	ck_assert_uint_eq(wp_of(out, 3, NULL), 2 * BS);
	ck_assert_uint_eq(wp_of(out, 4, NULL), 1 * BS);

	/* At the end, everything lost that can be: z2's second write stays
	   (settled by the finish), z3 is empty after its reset. */
	memset(keep, 0, sizeof(keep));
	ck_assert_int_eq(crash_build(log, base, out, 4, keep, err, sizeof(err)),
			 0);
	ck_assert_uint_eq(wp_of(out, 1, NULL), 1 * BS);
	wp_of(out, 2, &cond);
	ck_assert_uint_eq(cond, ZDEV_COND_FULL);
	ck_assert_int_eq(zdev_open(out, ZDEV_RDONLY, &d, err, sizeof(err)), 0);
	ck_assert_int_eq(zdev_read(d, buf, 2 * BS, zdev_zone_start(d, 2)), 0);
	ck_assert_uint_eq(((uint8_t *)buf)[BS], 0x22);
	zdev_close(d);
	ck_assert_uint_eq(wp_of(out, 3, NULL), 0);
	ck_assert_uint_eq(wp_of(out, 4, NULL), 0);
	crash_log_close(log);
	ck_assert_int_eq(zdev_open(img, ZDEV_EXCL, &dev, NULL, 0), 0);
}
END_TEST

START_TEST(test_build_rejects)
{
	struct crash_log_info li;
	struct crash_log *log = history(&li);
	struct zemu_params p = { .size = 2 * NZ * ZS, .zone_size = ZS,
				 .block_size = BS };
	uint32_t keep[3] = { 3, 0, 0 };
	char err[256] = "", other[PATH_MAX];

	ck_assert_int_eq(crash_build(log, base, out, 2, keep, err, sizeof(err)),
			 -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "cannot keep"));
	ck_assert_int_eq(crash_build(log, base, out, 99, NULL, err, sizeof(err)),
			 -EINVAL);
	snprintf(other, sizeof(other), "%s/other", dir);
	ck_assert_int_eq(zemu_check_params(&p, err, sizeof(err)), 0);
	ck_assert_int_eq(zemu_create(other, &p, err, sizeof(err)), 0);
	ck_assert_int_eq(crash_build(log, other, out, 4, NULL, err, sizeof(err)),
			 -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "geometry"));
	/* A base that is not the log's: a replay the device refuses. */
	ck_assert_int_eq(crash_build(log, img, out, 4, NULL, err, sizeof(err)),
			 -EUCLEAN);
	crash_log_close(log);
	ck_assert_int_eq(zdev_open(img, ZDEV_EXCL, &dev, NULL, 0), 0);
}
END_TEST

START_TEST(test_keep_tokens)
{
	struct crash_log_info li;
	struct crash_log *log = history(&li);
	uint32_t keep[3] = { 2, 0, 1 }, back[3];
	char s[64];

	ck_assert_int_gt(crash_keep_str(log, 2, keep, s, sizeof(s)), 0);
	ck_assert_str_eq(s, "2.0.1");
	ck_assert_int_eq(crash_keep_parse(log, 2, s, back), 0);
	ck_assert(!memcmp(keep, back, sizeof(keep)));
	ck_assert_int_eq(crash_keep_parse(log, 2, "3.0.1", back), -EINVAL);
	ck_assert_int_eq(crash_keep_parse(log, 2, "2.0", back), -EINVAL);
	ck_assert_int_eq(crash_keep_parse(log, 2, "2.0.1.", back), -EINVAL);
	ck_assert_int_gt(crash_keep_str(log, 0, NULL, s, sizeof(s)), 0);
	ck_assert_str_eq(s, "-");
	ck_assert_int_eq(crash_keep_parse(log, 0, "-", back), 0);
	crash_log_close(log);
	ck_assert_int_eq(zdev_open(img, ZDEV_EXCL, &dev, NULL, 0), 0);
}
END_TEST

static Suite *crash_suite(void)
{
	const struct {
		const char *name;
		const TTest *t;
	} cases[] = {
		{ "record_counts", test_record_counts },
		{ "record_torn_tail", test_record_torn_tail },
		{ "record_damaged_record", test_record_damaged_record },
		{ "record_not_a_log", test_record_not_a_log },
		{ "record_env", test_record_env },
		{ "record_faulted_flush", test_record_faulted_flush },
		{ "points", test_points },
		{ "states_all_and_sampled", test_states_all_and_sampled },
		{ "build_prefix_per_zone", test_build_prefix_per_zone },
		{ "build_rejects", test_build_rejects },
		{ "keep_tokens", test_keep_tokens },
	};
	Suite *s = suite_create("crash");
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		TCase *tc = tcase_create(cases[i].name);

		tcase_add_checked_fixture(tc, setup, teardown);
		tcase_add_test(tc, cases[i].t);
		suite_add_tcase(s, tc);
	}
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(crash_suite());
	int failed;

	printf("check_crash: the device recording and crash-state rebuilding, on emulator images\n");
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
