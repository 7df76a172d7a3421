// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Conformance tests of the zdev.h contract: the rules every zoned device
 * obeys, checked the same way on the emulator and on a real device.
 *
 * By default each test runs on a fresh emulator image whose geometry comes
 * from $ZONEFUSE_TEST_EMU (see tu_parse_geom()). When $ZONEFUSE_TEST_ZBD
 * names a zoned block device (/dev/nullb0, /dev/nvme0n1), the tests run on
 * it instead: each resets every zone first, and adapts to the device's
 * geometry; a test that needs a limit the device lacks says so and passes.
 * With --real the device is required: without one the program exits 77.
 *
 * Where null_blk and NVMe ZNS legitimately differ (which zone the device
 * closes to open another, the write pointer of a zone written full), the
 * tests check only what both guarantee; the comments say which.
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "testutil.h"
#include "zonefuse/util.h"

static const char *zbd_path; /* non-NULL: test this device */
static struct zemu_params emu_base = {
	.size = 24ull << 20,
	.zone_size = 1ull << 20,
	.zone_capacity = 768ull << 10,
	.block_size = 4096,
};

/* Per test (set up in the forked child). */
static char tmpdir[PATH_MAX];
static char dev_path[PATH_MAX];
static struct zdev *dev;
static const struct zdev_geom *g;
static uint32_t bs;
static uint32_t *seq, nr_seq;	/* usable sequential zones, in LBA order */
static uint32_t *conv, nr_conv; /* conventional zones */
static uint32_t *bad, nr_bad;	/* read-only and offline zones */
static size_t chunk;		/* the largest write the tests issue */
static struct zdev_stats st0;	/* the counters after the fixture's resets */

/* ---- fixtures ------------------------------------------------------------ */

/* What a TCase needs of an emulator image beyond the base geometry. */
enum want { WANT_NONE, WANT_OPEN_LIMIT, WANT_ACTIVE_LIMIT, WANT_CONV };

static void emu_params(enum want w, struct zemu_params *p)
{
	*p = emu_base;
	switch (w) {
	case WANT_OPEN_LIMIT:
		if (!p->max_open)
			p->max_open = 3;
		if (p->max_active && p->max_active < p->max_open)
			p->max_active = 0;
		break;
	case WANT_ACTIVE_LIMIT:
		if (!p->max_active)
			p->max_active = 4;
		if (p->max_open > p->max_active)
			p->max_open = 0;
		break;
	case WANT_CONV:
		if (!p->nr_conv)
			p->nr_conv = 2;
		break;
	case WANT_NONE:
		break;
	}
}

/*
 * Bring every sequential zone back to empty, so that a test starts with
 * all open and active resources free whatever the previous one left.
 */
static void reset_all(void)
{
	struct zdev_zone *z = calloc(g->nr_zones, sizeof(*z));
	uint32_t i;
	int ret;

	ck_assert_ptr_nonnull(z);
	ret = zdev_report(dev, 0, g->nr_zones, z);
	ck_assert_int_eq(ret, (int)g->nr_zones);
	nr_seq = nr_conv = nr_bad = 0;
	for (i = 0; i < g->nr_zones; i++) {
		if (z[i].type == ZDEV_ZONE_CONV) {
			conv[nr_conv++] = i;
			continue;
		}
		if (z[i].cond == ZDEV_COND_READONLY ||
		    z[i].cond == ZDEV_COND_OFFLINE) {
			bad[nr_bad++] = i;
			continue;
		}
		if (z[i].cond != ZDEV_COND_EMPTY) {
			ret = zdev_reset(dev, i);
			ck_assert_msg(ret == 0, "reset of zone %u: %d", i, ret);
		}
		seq[nr_seq++] = i;
	}
	free(z);
}

static void setup_want(enum want w)
{
	char err[256] = "";
	int ret;

	if (zbd_path) {
		snprintf(dev_path, sizeof(dev_path), "%s", zbd_path);
	} else {
		struct zemu_params p;

		emu_params(w, &p);
		tu_mkdtemp(tmpdir, sizeof(tmpdir));
		tu_path(dev_path, sizeof(dev_path), tmpdir, "dev.img");
		tu_make_image(dev_path, &p);
	}
	ret = zdev_open(dev_path, ZDEV_EXCL, &dev, err, sizeof(err));
	ck_assert_msg(ret == 0, "open %s: %d (%s)", dev_path, ret, err);
	g = zdev_geom(dev);
	bs = g->block_size;
	chunk = ZF_MIN((size_t)g->max_io, (size_t)4 << 20);
	seq = calloc(g->nr_zones, sizeof(*seq));
	conv = calloc(g->nr_zones, sizeof(*conv));
	bad = calloc(g->nr_zones, sizeof(*bad));
	ck_assert(seq && conv && bad);
	reset_all();
	zdev_get_stats(dev, &st0);
}

static void setup(void)
{
	setup_want(WANT_NONE);
}

static void setup_open_limit(void)
{
	setup_want(WANT_OPEN_LIMIT);
}

static void setup_active_limit(void)
{
	setup_want(WANT_ACTIVE_LIMIT);
}

static void setup_conv(void)
{
	setup_want(WANT_CONV);
}

static void teardown(void)
{
	zdev_close(dev);
	dev = NULL;
	free(seq);
	free(conv);
	free(bad);
	if (!zbd_path)
		tu_rmtree(tmpdir);
}

/* ---- helpers ------------------------------------------------------------- */

/* The device counters, counting from the start of the test. */
static void stats(struct zdev_stats *st)
{
	zdev_get_stats(dev, st);
	st->bytes_written -= st0.bytes_written;
	st->bytes_read -= st0.bytes_read;
	st->writes -= st0.writes;
	st->reads -= st0.reads;
	st->flushes -= st0.flushes;
	st->resets -= st0.resets;
}

/* The @k-th usable sequential zone; the test is skipped if there is none. */
static uint32_t seqz(uint32_t k)
{
	ck_assert_msg(k < nr_seq, "the device has only %u usable sequential zones",
		      nr_seq);
	return seq[k];
}

/* Two adjacent sequential zones, or false. */
static bool seq_pair(uint32_t *a)
{
	uint32_t i;

	for (i = 0; i + 1 < nr_seq; i++) {
		if (seq[i + 1] == seq[i] + 1) {
			*a = seq[i];
			return true;
		}
	}
	return false;
}

static struct zdev_zone rep(uint32_t zone)
{
	struct zdev_zone z;

	tu_report1(dev, zone, &z);
	return z;
}

/* Assert zone @zone's condition and write pointer (relative to its start). */
#define expect_zone(zone, c, rel)                                              \
	do {                                                                   \
		struct zdev_zone z_ = rep(zone);                               \
		ck_assert_msg(z_.cond == (c),                                  \
			      "zone %u is %s, expected %s", (zone),            \
			      zdev_cond_name(z_.cond), zdev_cond_name(c));     \
		ck_assert_msg(z_.wp == z_.start + (rel),                       \
			      "zone %u wp is start+%llu, expected +%llu",      \
			      (zone), (unsigned long long)(z_.wp - z_.start),  \
			      (unsigned long long)(rel));                      \
	} while (0)

/*
 * A zone written up to its capacity is full. null_blk then reports its
 * write pointer at start + capacity, NVMe at start + len (the kernel's
 * nvme_zone_parse_entry); both are accepted.
 */
static void expect_written_full(uint32_t zone)
{
	struct zdev_zone z = rep(zone);

	ck_assert_msg(z.cond == ZDEV_COND_FULL, "zone %u is %s, expected full",
		      zone, zdev_cond_name(z.cond));
	ck_assert_msg(z.wp == z.start + z.capacity || z.wp == z.start + z.len,
		      "full zone %u has wp start+%llu", zone,
		      (unsigned long long)(z.wp - z.start));
}

/* Write @len bytes of pattern @seed at @off, in chunks; first error or 0. */
static int write_pat(uint64_t off, size_t len, uint32_t seed)
{
	void *buf = zdev_buf_alloc(dev, ZF_MIN(len, chunk));
	int ret = 0;

	ck_assert_ptr_nonnull(buf);
	while (len && !ret) {
		size_t n = ZF_MIN(len, chunk);

		tu_fill(buf, n, off, seed);
		ret = zdev_write(dev, buf, n, off);
		off += n;
		len -= n;
	}
	free(buf);
	return ret;
}

/* Append @len bytes of pattern @seed at zone @zone's write pointer. */
static void append(uint32_t zone, size_t len, uint32_t seed)
{
	struct zdev_zone z = rep(zone);
	int ret = write_pat(z.wp, len, seed);

	ck_assert_msg(ret == 0, "write of %zu bytes at zone %u wp: %d", len,
		      zone, ret);
}

/* Read @len bytes at @off: they must be pattern @seed. */
static void expect_pat(uint64_t off, size_t len, uint32_t seed)
{
	void *buf = zdev_buf_alloc(dev, chunk);

	ck_assert_ptr_nonnull(buf);
	while (len) {
		size_t n = ZF_MIN(len, chunk);
		long bad;

		ck_assert_int_eq(zdev_read(dev, buf, n, off), 0);
		bad = tu_check(buf, n, off, seed);
		ck_assert_msg(bad < 0, "wrong data at byte %llu",
			      (unsigned long long)(off + (uint64_t)bad));
		off += n;
		len -= n;
	}
	free(buf);
}

/*
 * What a block that was never written since the last reset reads as. The
 * contract (zdev.h) says zeros, and the emulator gives zeros; so does NVMe
 * ZNS under QEMU. But null_blk fills such reads with 0xff (null_transfer()
 * -> nullb_fill_pattern()), so on a real device either is accepted, as long
 * as it is the whole block: never stale data.
 */
static bool unwritten_block(const unsigned char *p)
{
	if (tu_is_zero(p, bs))
		return true;
	return zbd_path && p[0] == 0xff && !memcmp(p, p + 1, bs - 1);
}

static bool unwritten(const void *buf, size_t len)
{
	const unsigned char *p = buf;
	size_t i;

	for (i = 0; i < len; i += bs)
		if (!unwritten_block(p + i))
			return false;
	return true;
}

/* Read @len bytes at @off: they must be unwritten blocks. */
static void expect_unwritten(uint64_t off, size_t len)
{
	void *buf = zdev_buf_alloc(dev, chunk);

	ck_assert_ptr_nonnull(buf);
	while (len) {
		size_t n = ZF_MIN(len, chunk);

		memset(buf, 0xa5, n);
		ck_assert_int_eq(zdev_read(dev, buf, n, off), 0);
		ck_assert_msg(unwritten(buf, n),
			      "%zu bytes at %llu are not unwritten blocks", n,
			      (unsigned long long)off);
		off += n;
		len -= n;
	}
	free(buf);
}

static uint32_t count_cond(uint8_t cond)
{
	struct zdev_zone *z = calloc(g->nr_zones, sizeof(*z));
	uint32_t i, n = 0;

	ck_assert_ptr_nonnull(z);
	ck_assert_int_eq(zdev_report(dev, 0, g->nr_zones, z), (int)g->nr_zones);
	for (i = 0; i < g->nr_zones; i++)
		n += z[i].cond == cond;
	free(z);
	return n;
}

/* ---- geometry and report ------------------------------------------------- */

START_TEST(test_geometry)
{
	struct zdev_zone *z = calloc(g->nr_zones, sizeof(*z));
	uint32_t i, got = 0, nconv = 0;
	int ret;

	ck_assert_ptr_nonnull(z);
	ck_assert_msg(bs == 512 || bs == 4096, "block size %u", bs);
	ck_assert_uint_gt(g->nr_zones, 0);
	ck_assert_uint_eq(g->zone_size % bs, 0);
	ck_assert_uint_gt(g->size, (uint64_t)(g->nr_zones - 1) * g->zone_size);
	ck_assert_uint_le(g->size, (uint64_t)g->nr_zones * g->zone_size);
	ck_assert(!g->max_open || !g->max_active ||
		  g->max_open <= g->max_active);
	ck_assert_uint_ge(g->max_io, bs);
	ck_assert_uint_eq(g->max_io % bs, 0);
	ck_assert_str_eq(zdev_path(dev), dev_path);
	ck_assert_str_eq(zdev_backend(dev), zbd_path ? "zbd" : "emulator");
	ck_assert(zemu_is(dev) == !zbd_path);

	/* In pieces, so that a report that stops early is caught. */
	while (got < g->nr_zones) {
		ret = zdev_report(dev, got, 7, z + got);
		ck_assert_int_eq(ret, (int)ZF_MIN(7u, g->nr_zones - got));
		got += (uint32_t)ret;
	}
	for (i = 0; i < g->nr_zones; i++) {
		ck_assert_uint_eq(z[i].start, (uint64_t)i * g->zone_size);
		ck_assert_uint_eq(zdev_zone_start(dev, i), z[i].start);
		ck_assert_uint_eq(zdev_zone_of(dev, z[i].start), i);
		ck_assert_uint_eq(zdev_zone_of(dev, z[i].start + z[i].len - 1),
				  i);
		if (i + 1 < g->nr_zones)
			ck_assert_uint_eq(z[i].len, g->zone_size);
		ck_assert_uint_gt(z[i].capacity, 0);
		ck_assert_uint_le(z[i].capacity, z[i].len);
		ck_assert_uint_eq(z[i].capacity % bs, 0);
		ck_assert_uint_eq(z[i].resets == ZDEV_RESETS_UNKNOWN,
				  zbd_path != NULL);
		if (z[i].type == ZDEV_ZONE_CONV) {
			nconv++;
			ck_assert_uint_eq(z[i].cond, ZDEV_COND_NOT_WP);
			ck_assert_uint_eq(z[i].wp, z[i].start + z[i].len);
			continue;
		}
		ck_assert_uint_eq(z[i].type, ZDEV_ZONE_SEQ);
		if (z[i].cond == ZDEV_COND_READONLY ||
		    z[i].cond == ZDEV_COND_OFFLINE)
			continue;
		/* The fixture reset it. */
		ck_assert_uint_eq(z[i].cond, ZDEV_COND_EMPTY);
		ck_assert_uint_eq(z[i].wp, z[i].start);
	}
	ck_assert_uint_eq(nconv, g->nr_conv);
	ck_assert_uint_eq(g->size, z[g->nr_zones - 1].start +
					   z[g->nr_zones - 1].len);
	free(z);
}
END_TEST

/* ---- writes -------------------------------------------------------------- */

START_TEST(test_write_at_wp)
{
	uint32_t zone = seqz(0);
	struct zdev_zone z = rep(zone);
	size_t big = ZF_MIN(chunk, (size_t)z.capacity - 4 * bs);
	struct zdev_stats st;

	ck_assert_int_eq(write_pat(z.start, bs, 1), 0);
	expect_zone(zone, ZDEV_COND_IMP_OPEN, bs);
	ck_assert_int_eq(write_pat(z.start + bs, 3 * bs, 1), 0);
	expect_zone(zone, ZDEV_COND_IMP_OPEN, 4 * bs);
	/* A single write of the largest size the device takes. */
	ck_assert_int_eq(write_pat(z.start + 4 * bs, big, 1), 0);
	expect_pat(z.start, 4 * bs + big, 1);
	stats(&st);
	ck_assert_uint_eq(st.writes, 3);
	ck_assert_uint_eq(st.bytes_written, 4 * bs + big);
}
END_TEST

START_TEST(test_write_not_at_wp)
{
	uint32_t zone = seqz(0);
	struct zdev_zone z = rep(zone);
	struct zdev_stats st;

	/* Ahead of the write pointer of an empty zone: nothing changes. */
	ck_assert_int_eq(write_pat(z.start + bs, bs, 2), -EIO);
	ck_assert_int_eq(write_pat(z.start + z.capacity - bs, bs, 2), -EIO);
	expect_zone(zone, ZDEV_COND_EMPTY, 0);

	ck_assert_int_eq(write_pat(z.start, 2 * bs, 2), 0);
	/* Behind it (a rewrite), and ahead of it. */
	ck_assert_int_eq(write_pat(z.start, bs, 3), -EIO);
	ck_assert_int_eq(write_pat(z.start + bs, bs, 3), -EIO);
	ck_assert_int_eq(write_pat(z.start + 3 * bs, bs, 3), -EIO);
	expect_zone(zone, ZDEV_COND_IMP_OPEN, 2 * bs);
	expect_pat(z.start, 2 * bs, 2);
	stats(&st);
	ck_assert_uint_eq(st.writes, 1);
	ck_assert_uint_eq(st.bytes_written, 2 * bs);
}
END_TEST

START_TEST(test_unaligned)
{
	uint32_t zone = seqz(0);
	struct zdev_zone z = rep(zone);
	char *buf = zdev_buf_alloc(dev, 4 * bs);
	struct zdev_io io[2];

	ck_assert_ptr_nonnull(buf);
	memset(buf, 0x5a, 4 * bs);
	/* Offset. */
	ck_assert_int_eq(zdev_write(dev, buf, bs, z.start + 1), -EINVAL);
	ck_assert_int_eq(zdev_write(dev, buf, bs, z.start + bs / 2), -EINVAL);
	ck_assert_int_eq(zdev_read(dev, buf, bs, z.start + 1), -EINVAL);
	ck_assert_int_eq(zdev_read(dev, buf, bs, z.start + bs / 2), -EINVAL);
	/* Length, including none at all. */
	ck_assert_int_eq(zdev_write(dev, buf, bs / 2, z.start), -EINVAL);
	ck_assert_int_eq(zdev_write(dev, buf, bs + 1, z.start), -EINVAL);
	ck_assert_int_eq(zdev_write(dev, buf, 0, z.start), -EINVAL);
	ck_assert_int_eq(zdev_read(dev, buf, bs / 2, z.start), -EINVAL);
	ck_assert_int_eq(zdev_read(dev, buf, 2 * bs - 1, z.start), -EINVAL);
	ck_assert_int_eq(zdev_read(dev, buf, 0, z.start), -EINVAL);
	/* Buffer. */
	ck_assert_int_eq(zdev_write(dev, buf + 1, bs, z.start), -EINVAL);
	ck_assert_int_eq(zdev_write(dev, buf + bs / 2, bs, z.start), -EINVAL);
	ck_assert_int_eq(zdev_read(dev, buf + 1, bs, z.start), -EINVAL);
	ck_assert_int_eq(zdev_read(dev, buf + bs / 2, bs, z.start), -EINVAL);
	/* A batch with one bad I/O issues none of them. */
	io[0] = (struct zdev_io){ .op = ZDEV_OP_WRITE, .buf = buf,
				  .len = bs, .off = z.start };
	io[1] = (struct zdev_io){ .op = ZDEV_OP_READ, .buf = buf + 1,
				  .len = bs, .off = z.start };
	ck_assert_int_eq(zdev_submit(dev, io, 2), -EINVAL);
	expect_zone(zone, ZDEV_COND_EMPTY, 0);
	free(buf);
}
END_TEST

START_TEST(test_cross_capacity)
{
	uint32_t zone, next;
	struct zdev_zone z;
	size_t half;

	/*
	 * With adjacent zones, a write crossing a capacity equal to the zone
	 * size also runs into the next (empty) zone at its write pointer:
	 * the write must still fail as a whole.
	 */
	if (!seq_pair(&zone))
		zone = seqz(0);
	next = zone + 1;
	z = rep(zone);

	/*
	 * A large write, which the block layer splits into several: none of
	 * it may land (on a device, the pieces below the capacity would).
	 */
	half = ZF_ROUND_DOWN(ZF_MIN(chunk, (size_t)z.capacity) / 2, bs);
	append(zone, z.capacity - half, 4);
	ck_assert_int_eq(write_pat(z.start + z.capacity - half, 2 * half, 5),
			 -EIO);
	expect_zone(zone, ZDEV_COND_IMP_OPEN, z.capacity - half);

	/* By one block. */
	append(zone, half - bs, 4);
	expect_zone(zone, ZDEV_COND_IMP_OPEN, z.capacity - bs);
	ck_assert_int_eq(write_pat(z.start + z.capacity - bs, 2 * bs, 5),
			 -EIO);
	expect_zone(zone, ZDEV_COND_IMP_OPEN, z.capacity - bs);
	if (next < g->nr_zones && rep(next).type == ZDEV_ZONE_SEQ)
		expect_zone(next, ZDEV_COND_EMPTY, 0);
	ck_assert_int_eq(write_pat(z.start + z.capacity - bs, bs, 4), 0);
	expect_written_full(zone);
	expect_pat(z.start + z.capacity - 2 * half, 2 * half, 4);
}
END_TEST

START_TEST(test_write_full)
{
	uint32_t a = seqz(0), b = seqz(1);
	struct zdev_zone za = rep(a), zb = rep(b);

	/* Full by a finish. */
	ck_assert_int_eq(zdev_finish(dev, a), 0);
	ck_assert_int_eq(write_pat(za.start, bs, 6), -EIO);
	expect_zone(a, ZDEV_COND_FULL, za.len);

	/* Full by writing its capacity. */
	append(b, zb.capacity, 7);
	expect_written_full(b);
	ck_assert_int_eq(write_pat(zb.start, bs, 8), -EIO);
	if (zb.capacity < zb.len)
		ck_assert_int_eq(write_pat(zb.start + zb.capacity, bs, 8),
				 -EIO);
	expect_written_full(b);
	expect_pat(zb.start + zb.capacity - bs, bs, 7);
}
END_TEST

/* ---- reads --------------------------------------------------------------- */

START_TEST(test_read)
{
	uint32_t a = seqz(0), b = seqz(1), pair;
	struct zdev_zone za = rep(a), zb = rep(b);

	append(a, 3 * bs, 9);
	/* Below the write pointer the data, above it unwritten blocks. */
	expect_pat(za.start, 3 * bs, 9);
	expect_unwritten(za.start + 3 * bs, 5 * bs);
	expect_unwritten(za.start + 8 * bs, bs);
	/* One read across the write pointer. */
	{
		char *buf = zdev_buf_alloc(dev, 6 * bs);

		ck_assert_ptr_nonnull(buf);
		memset(buf, 0xa5, 6 * bs);
		ck_assert_int_eq(zdev_read(dev, buf, 6 * bs, za.start), 0);
		ck_assert_int_eq(tu_check(buf, 3 * bs, za.start, 9), -1);
		ck_assert(unwritten(buf + 3 * bs, 3 * bs));
		free(buf);
	}
	/* An empty zone reads as unwritten blocks. */
	expect_unwritten(zb.start, ZF_MIN(zb.len, (uint64_t)chunk));

	/* A finished zone: the data, then unwritten blocks up to its end. */
	ck_assert_int_eq(zdev_finish(dev, a), 0);
	expect_pat(za.start, 3 * bs, 9);
	expect_unwritten(za.start + 3 * bs, za.len - 3 * bs);

	/* One read across a zone boundary. */
	if (seq_pair(&pair)) {
		uint64_t s = zdev_zone_start(dev, pair + 1);
		char *buf = zdev_buf_alloc(dev, 4 * bs);

		ck_assert_ptr_nonnull(buf);
		if (pair == a || pair + 1 == a) {
			ck_assert_int_eq(zdev_reset(dev, a), 0);
		}
		append(pair, bs, 10);
		append(pair + 1, bs, 11);
		memset(buf, 0xa5, 4 * bs);
		ck_assert_int_eq(zdev_read(dev, buf, 4 * bs, s - 2 * bs), 0);
		ck_assert(unwritten(buf, 2 * bs));
		ck_assert_int_eq(tu_check(buf + 2 * bs, bs, s, 11), -1);
		ck_assert(unwritten(buf + 3 * bs, bs));
		free(buf);
	} else {
		tu_skip("read across zones: no two adjacent sequential zones");
	}
}
END_TEST

/* ---- zone management ----------------------------------------------------- */

START_TEST(test_reset)
{
	uint32_t a = seqz(0), b = seqz(1), c = seqz(2), d = seqz(3);
	struct zdev_zone za = rep(a);
	struct zdev_stats st;
	uint64_t resets = za.resets;

	append(a, 4 * bs, 12);
	ck_assert_int_eq(zdev_reset(dev, a), 0);
	expect_zone(a, ZDEV_COND_EMPTY, 0);
	expect_unwritten(za.start, 4 * bs);
	if (resets != ZDEV_RESETS_UNKNOWN)
		ck_assert_uint_eq(rep(a).resets, resets + 1);
	/* Written again from the start, without the old data. */
	append(a, bs, 13);
	expect_pat(za.start, bs, 13);
	expect_unwritten(za.start + bs, 3 * bs);

	/* From every condition. */
	ck_assert_int_eq(zdev_reset(dev, a), 0); /* implicit open */
	expect_zone(a, ZDEV_COND_EMPTY, 0);
	ck_assert_int_eq(zdev_reset(dev, a), 0); /* empty: no-op */
	expect_zone(a, ZDEV_COND_EMPTY, 0);
	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_OPEN, b), 0);
	ck_assert_int_eq(zdev_reset(dev, b), 0); /* explicit open */
	expect_zone(b, ZDEV_COND_EMPTY, 0);
	append(c, bs, 14);
	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_CLOSE, c), 0);
	expect_zone(c, ZDEV_COND_CLOSED, bs);
	ck_assert_int_eq(zdev_reset(dev, c), 0); /* closed */
	expect_zone(c, ZDEV_COND_EMPTY, 0);
	ck_assert_int_eq(zdev_finish(dev, d), 0);
	ck_assert_int_eq(zdev_reset(dev, d), 0); /* full */
	expect_zone(d, ZDEV_COND_EMPTY, 0);
	stats(&st);
	ck_assert_uint_eq(st.resets, 6);
}
END_TEST

START_TEST(test_finish)
{
	uint32_t a = seqz(0), b = seqz(1), c = seqz(2), d = seqz(3);
	struct zdev_zone zb = rep(b);

	ck_assert_int_eq(zdev_finish(dev, a), 0); /* empty */
	expect_zone(a, ZDEV_COND_FULL, rep(a).len);
	ck_assert_int_eq(zdev_finish(dev, a), 0); /* full: no-op */
	expect_zone(a, ZDEV_COND_FULL, rep(a).len);

	append(b, 2 * bs, 15);
	ck_assert_int_eq(zdev_finish(dev, b), 0); /* implicit open */
	expect_zone(b, ZDEV_COND_FULL, zb.len);
	expect_pat(zb.start, 2 * bs, 15);
	expect_unwritten(zb.start + 2 * bs, 2 * bs);

	append(c, bs, 16);
	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_CLOSE, c), 0);
	ck_assert_int_eq(zdev_finish(dev, c), 0); /* closed */
	expect_zone(c, ZDEV_COND_FULL, rep(c).len);

	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_OPEN, d), 0);
	ck_assert_int_eq(zdev_finish(dev, d), 0); /* explicit open */
	expect_zone(d, ZDEV_COND_FULL, rep(d).len);
	ck_assert_uint_eq(count_cond(ZDEV_COND_IMP_OPEN) +
				  count_cond(ZDEV_COND_EXP_OPEN) +
				  count_cond(ZDEV_COND_CLOSED),
			  0);
}
END_TEST

START_TEST(test_open_close)
{
	uint32_t a = seqz(0), b = seqz(1);

	/* empty -> explicit open -> (written) -> closed -> ... -> full. */
	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_OPEN, a), 0);
	expect_zone(a, ZDEV_COND_EXP_OPEN, 0);
	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_OPEN, a), 0);
	expect_zone(a, ZDEV_COND_EXP_OPEN, 0);
	append(a, bs, 17);
	expect_zone(a, ZDEV_COND_EXP_OPEN, bs); /* a write keeps it explicit */
	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_CLOSE, a), 0);
	expect_zone(a, ZDEV_COND_CLOSED, bs);
	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_CLOSE, a), 0);
	expect_zone(a, ZDEV_COND_CLOSED, bs);
	append(a, bs, 17);
	expect_zone(a, ZDEV_COND_IMP_OPEN, 2 * bs); /* a write reopens it */
	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_OPEN, a), 0);
	expect_zone(a, ZDEV_COND_EXP_OPEN, 2 * bs);
	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_CLOSE, a), 0);
	expect_zone(a, ZDEV_COND_CLOSED, 2 * bs);
	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_OPEN, a), 0);
	expect_zone(a, ZDEV_COND_EXP_OPEN, 2 * bs);
	ck_assert_int_eq(zdev_finish(dev, a), 0);
	expect_zone(a, ZDEV_COND_FULL, rep(a).len);
	expect_pat(rep(a).start, 2 * bs, 17);

	/* implicit open -> closed -> explicit open. */
	append(b, bs, 18);
	expect_zone(b, ZDEV_COND_IMP_OPEN, bs);
	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_CLOSE, b), 0);
	expect_zone(b, ZDEV_COND_CLOSED, bs);
	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_OPEN, b), 0);
	expect_zone(b, ZDEV_COND_EXP_OPEN, bs);
	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_CLOSE, b), 0);
	expect_zone(b, ZDEV_COND_CLOSED, bs);
}
END_TEST

/*
 * Closing an explicitly opened zone that was never written: null_blk (and
 * the emulator, which follows it) makes it empty again; NVMe ZNS (QEMU)
 * leaves it closed, still holding an active resource. Either way its write
 * pointer is at the start and it takes a write there.
 */
START_TEST(test_close_unwritten)
{
	uint32_t a = seqz(0);
	struct zdev_zone z;

	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_OPEN, a), 0);
	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_CLOSE, a), 0);
	z = rep(a);
	ck_assert_uint_eq(z.wp, z.start);
	if (zbd_path)
		ck_assert_msg(z.cond == ZDEV_COND_EMPTY ||
				      z.cond == ZDEV_COND_CLOSED,
			      "zone %u is %s", a, zdev_cond_name(z.cond));
	else
		ck_assert_uint_eq(z.cond, ZDEV_COND_EMPTY);
	append(a, bs, 19);
	expect_zone(a, ZDEV_COND_IMP_OPEN, bs);
	ck_assert_int_eq(zdev_reset(dev, a), 0);
	expect_zone(a, ZDEV_COND_EMPTY, 0);
}
END_TEST

START_TEST(test_close_empty)
{
	uint32_t a = seqz(0);

	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_CLOSE, a), -EIO);
	expect_zone(a, ZDEV_COND_EMPTY, 0);
}
END_TEST

START_TEST(test_close_full)
{
	uint32_t a = seqz(0);

	ck_assert_int_eq(zdev_finish(dev, a), 0);
	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_CLOSE, a), -EIO);
	expect_zone(a, ZDEV_COND_FULL, rep(a).len);
}
END_TEST

START_TEST(test_open_full)
{
	uint32_t a = seqz(0), b = seqz(1);
	struct zdev_zone zb = rep(b);

	ck_assert_int_eq(zdev_finish(dev, a), 0);
	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_OPEN, a), -EIO);
	expect_zone(a, ZDEV_COND_FULL, rep(a).len);
	append(b, zb.capacity, 20);
	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_OPEN, b), -EIO);
	expect_written_full(b);
}
END_TEST

/* ---- open and active limits ---------------------------------------------- */

/*
 * Writes to more zones than the open limit all succeed: the device closes
 * an implicitly open zone to open the next one. Which one it closes is the
 * device's choice (null_blk round-robin, ZNS oldest first).
 */
START_TEST(test_max_open_implicit)
{
	uint32_t n, i;

	if (!g->max_open) {
		tu_skip("max_open_implicit: %s has no open zone limit",
			dev_path);
		return;
	}
	n = g->max_open + 2;
	if (g->max_active)
		n = ZF_MIN(n, g->max_active);
	if (n <= g->max_open) {
		tu_skip("max_open_implicit: max_active (%u) = max_open on %s: the device never closes a zone",
			g->max_active, dev_path);
		return;
	}
	if (n > nr_seq) {
		tu_skip("max_open_implicit: %u sequential zones, need %u",
			nr_seq, n);
		return;
	}
	for (i = 0; i < n; i++)
		append(seqz(i), bs, 21);
	ck_assert_uint_le(count_cond(ZDEV_COND_IMP_OPEN), g->max_open);
	ck_assert_uint_eq(count_cond(ZDEV_COND_IMP_OPEN) +
				  count_cond(ZDEV_COND_CLOSED),
			  n);
	/*
	 * Writing the closed ones again reopens them. null_blk refuses to
	 * close a zone for that when the active limit is reached (although
	 * a closed zone is already active), so only below it.
	 */
	if (!g->max_active || n < g->max_active) {
		for (i = 0; i < n; i++)
			append(seqz(i), bs, 21);
		ck_assert_uint_le(count_cond(ZDEV_COND_IMP_OPEN), g->max_open);
	}
	for (i = 0; i < n; i++) {
		struct zdev_zone z = rep(seqz(i));

		ck_assert(z.cond == ZDEV_COND_IMP_OPEN ||
			  z.cond == ZDEV_COND_CLOSED);
		expect_pat(z.start, z.wp - z.start, 21);
	}
}
END_TEST

/*
 * With max_open zones explicitly open, the device may close none of them:
 * a further explicit open or a write to another zone fails.
 */
START_TEST(test_max_open_explicit)
{
	uint32_t mo = g->max_open, i, extra;
	int want;

	if (!mo) {
		tu_skip("max_open_explicit: %s has no open zone limit",
			dev_path);
		return;
	}
	if (mo + 2 > nr_seq) {
		tu_skip("max_open_explicit: %u sequential zones, need %u",
			nr_seq, mo + 2);
		return;
	}
	for (i = 0; i < mo; i++)
		ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_OPEN, seqz(i)), 0);
	ck_assert_uint_eq(count_cond(ZDEV_COND_EXP_OPEN), mo);
	extra = seqz(mo);
	/* An empty zone needs an active resource first: it may run out. */
	want = g->max_active && g->max_active <= mo ? -EOVERFLOW :
						       -ETOOMANYREFS;
	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_OPEN, extra), want);
	expect_zone(extra, ZDEV_COND_EMPTY, 0);
	ck_assert_int_eq(write_pat(rep(extra).start, bs, 22), want);
	expect_zone(extra, ZDEV_COND_EMPTY, 0);
	/* The open zones themselves still take writes. */
	for (i = 0; i < mo; i++)
		append(seqz(i), bs, 22);
	ck_assert_uint_eq(count_cond(ZDEV_COND_EXP_OPEN), mo);

	/* Freeing one makes room. */
	ck_assert_int_eq(zdev_reset(dev, seqz(0)), 0);
	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_OPEN, extra), 0);
	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_OPEN, seqz(0)), want);

	/* A closed zone needs only an open resource: -ETOOMANYREFS. */
	if (g->max_active && g->max_active < mo + 1) {
		tu_skip("max_open_explicit: max_active %u leaves no room for a closed zone next to %u open ones",
			g->max_active, mo);
		return;
	}
	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_CLOSE, seqz(1)), 0);
	expect_zone(seqz(1), ZDEV_COND_CLOSED, bs);
	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_OPEN, seqz(0)), 0);
	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_OPEN, seqz(1)),
			 -ETOOMANYREFS);
	ck_assert_int_eq(write_pat(rep(seqz(1)).start + bs, bs, 22),
			 -ETOOMANYREFS);
	expect_zone(seqz(1), ZDEV_COND_CLOSED, bs);
}
END_TEST

/* Writes that would activate one zone too many fail with -EOVERFLOW. */
START_TEST(test_max_active_write)
{
	uint32_t ma = g->max_active, i, extra;

	if (!ma) {
		tu_skip("max_active_write: %s has no active zone limit",
			dev_path);
		return;
	}
	if (ma + 2 > nr_seq) {
		tu_skip("max_active_write: %u sequential zones, need %u",
			nr_seq, ma + 2);
		return;
	}
	for (i = 0; i < ma; i++)
		append(seqz(i), bs, 23);
	extra = seqz(ma);
	ck_assert_int_eq(write_pat(rep(extra).start, bs, 23), -EOVERFLOW);
	expect_zone(extra, ZDEV_COND_EMPTY, 0);
	/*
	 * (Finishing an empty zone here fails on null_blk, which activates it
	 * on the way, and succeeds on ZNS, which goes straight to full: not
	 * tested.)
	 */

	/* A reset frees one. */
	ck_assert_int_eq(zdev_reset(dev, seqz(0)), 0);
	append(extra, bs, 23);
	ck_assert_int_eq(write_pat(rep(seqz(0)).start, bs, 23), -EOVERFLOW);

	/* So does finishing an open zone (the last written is open). */
	ck_assert_int_eq(zdev_finish(dev, extra), 0);
	append(seqz(0), bs, 23);
	ck_assert_int_eq(write_pat(rep(seqz(ma + 1)).start, bs, 23),
			 -EOVERFLOW);
	expect_zone(seqz(ma + 1), ZDEV_COND_EMPTY, 0);
}
END_TEST

START_TEST(test_max_active_open)
{
	uint32_t ma = g->max_active, i, extra, nopen;

	if (!ma) {
		tu_skip("max_active_open: %s has no active zone limit",
			dev_path);
		return;
	}
	if (ma + 1 > nr_seq) {
		tu_skip("max_active_open: %u sequential zones, need %u",
			nr_seq, ma + 1);
		return;
	}
	/* Active zones left closed by writes ... */
	for (i = 0; i < ma; i++) {
		append(seqz(i), bs, 24);
		ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_CLOSE, seqz(i)), 0);
	}
	ck_assert_uint_eq(count_cond(ZDEV_COND_CLOSED), ma);
	extra = seqz(ma);
	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_OPEN, extra), -EOVERFLOW);
	expect_zone(extra, ZDEV_COND_EMPTY, 0);
	/*
	 * ... or explicitly opened (as many as the open limit allows, the
	 * rest closed first: with every open zone explicit, the device could
	 * not open one for a write).
	 */
	for (i = 0; i < ma; i++)
		ck_assert_int_eq(zdev_reset(dev, seqz(i)), 0);
	nopen = g->max_open ? ZF_MIN(g->max_open, ma) : ma;
	for (i = 0; i < ma - nopen; i++) {
		append(seqz(i), bs, 24);
		ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_CLOSE, seqz(i)), 0);
	}
	for (; i < ma; i++)
		ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_OPEN, seqz(i)), 0);
	ck_assert_uint_eq(count_cond(ZDEV_COND_EXP_OPEN), nopen);
	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_OPEN, extra), -EOVERFLOW);
	expect_zone(extra, ZDEV_COND_EMPTY, 0);
	ck_assert_int_eq(write_pat(rep(extra).start, bs, 24), -EOVERFLOW);
	expect_zone(extra, ZDEV_COND_EMPTY, 0);
	/* Resetting an explicitly open zone frees its resource. */
	ck_assert_int_eq(zdev_reset(dev, seqz(ma - 1)), 0);
	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_OPEN, extra), 0);
}
END_TEST

/*
 * Read-only and offline zones (worn or failed): a read-only zone can only be
 * read, an offline one not even that. A real device has them only if it was
 * made so (null_blk: echo SECTOR > /sys/kernel/config/nullb/NAME/zone_readonly
 * or zone_offline); on the emulator the test makes them.
 */
START_TEST(test_forced_conditions)
{
	static const enum zdev_op ops[] = { ZDEV_OP_RESET, ZDEV_OP_FINISH,
					    ZDEV_OP_OPEN, ZDEV_OP_CLOSE };
	char *buf = zdev_buf_alloc(dev, bs);
	uint32_t i, k;

	ck_assert_ptr_nonnull(buf);
	if (!zbd_path) {
		append(seqz(1), 2 * bs, 34);
		ck_assert_int_eq(zemu_set_cond(dev, seqz(1), ZDEV_COND_READONLY),
				 0);
		ck_assert_int_eq(zemu_set_cond(dev, seqz(2), ZDEV_COND_OFFLINE),
				 0);
		bad[nr_bad++] = seqz(1);
		bad[nr_bad++] = seqz(2);
	}
	if (!nr_bad) {
		tu_skip("forced_conditions: %s has no read-only or offline zone",
			dev_path);
		free(buf);
		return;
	}
	for (k = 0; k < nr_bad; k++) {
		struct zdev_zone z = rep(bad[k]);
		int want_read = z.cond == ZDEV_COND_OFFLINE ? -EIO : 0;

		ck_assert_int_eq(zdev_read(dev, buf, bs, z.start), want_read);
		ck_assert_int_eq(zdev_read(dev, buf, bs, z.start + z.len - bs),
				 want_read);
		ck_assert_int_eq(zdev_write(dev, buf, bs, z.start), -EIO);
		ck_assert_int_eq(zdev_write(dev, buf, bs, z.start + bs), -EIO);
		for (i = 0; i < ZF_ARRAY_SIZE(ops); i++)
			ck_assert_int_eq(zdev_zone_op(dev, ops[i], bad[k]),
					 -EIO);
		ck_assert_uint_eq(rep(bad[k]).cond, z.cond);
		/* No valid write pointer: reported as start + len. */
		ck_assert_uint_eq(z.wp, z.start + z.len);
	}
	if (!zbd_path)
		expect_pat(rep(seqz(1)).start, 2 * bs, 34);
	free(buf);
}
END_TEST

/* ---- conventional zones, ranges ------------------------------------------ */

START_TEST(test_conv)
{
	static const enum zdev_op ops[] = { ZDEV_OP_RESET, ZDEV_OP_FINISH,
					    ZDEV_OP_OPEN, ZDEV_OP_CLOSE };
	uint32_t cz, i;
	uint64_t s;

	if (!nr_conv) {
		tu_skip("conv: %s has no conventional zones", dev_path);
		return;
	}
	cz = conv[nr_conv - 1];
	s = zdev_zone_start(dev, cz);
	for (i = 0; i < ZF_ARRAY_SIZE(ops); i++)
		ck_assert_int_eq(zdev_zone_op(dev, ops[i], cz), -EIO);
	expect_zone(cz, ZDEV_COND_NOT_WP, rep(cz).len);
	/* Written anywhere, in any order, overwritten. */
	ck_assert_int_eq(write_pat(s + 4 * bs, 2 * bs, 25), 0);
	ck_assert_int_eq(write_pat(s, bs, 25), 0);
	ck_assert_int_eq(write_pat(s + 5 * bs, bs, 26), 0);
	expect_pat(s, bs, 25);
	expect_pat(s + 4 * bs, bs, 25);
	expect_pat(s + 5 * bs, bs, 26);
	expect_zone(cz, ZDEV_COND_NOT_WP, rep(cz).len);

	/* One write may span conventional zones ... */
	if (nr_conv > 1 && conv[nr_conv - 2] + 1 == cz) {
		ck_assert_int_eq(write_pat(s - bs, 2 * bs, 27), 0);
		expect_pat(s - bs, 2 * bs, 27);
	}
	/* ... but not run on into a sequential zone, even at its wp. */
	if (cz + 1 < g->nr_zones && rep(cz + 1).type == ZDEV_ZONE_SEQ &&
	    rep(cz + 1).cond == ZDEV_COND_EMPTY) {
		uint64_t next = zdev_zone_start(dev, cz + 1);

		ck_assert_int_eq(write_pat(next - bs, 2 * bs, 28), -EIO);
		expect_zone(cz + 1, ZDEV_COND_EMPTY, 0);
	}
}
END_TEST

START_TEST(test_out_of_range)
{
	static const enum zdev_op ops[] = { ZDEV_OP_RESET, ZDEV_OP_FINISH,
					    ZDEV_OP_OPEN, ZDEV_OP_CLOSE };
	static const enum zdev_op not_zone_ops[] = { ZDEV_OP_READ,
						     ZDEV_OP_WRITE,
						     ZDEV_OP_FLUSH,
						     ZDEV_OP_REPORT };
	struct zdev_zone z[2];
	char *buf = zdev_buf_alloc(dev, 2 * bs);
	uint32_t i;

	ck_assert_ptr_nonnull(buf);
	memset(buf, 0, 2 * bs);
	for (i = 0; i < ZF_ARRAY_SIZE(ops); i++) {
		ck_assert_int_eq(zdev_zone_op(dev, ops[i], g->nr_zones),
				 -EINVAL);
		ck_assert_int_eq(zdev_zone_op(dev, ops[i], UINT32_MAX),
				 -EINVAL);
	}
	for (i = 0; i < ZF_ARRAY_SIZE(not_zone_ops); i++)
		ck_assert_int_eq(zdev_zone_op(dev, not_zone_ops[i], seqz(0)),
				 -EINVAL);
	ck_assert_int_eq(zdev_report(dev, g->nr_zones, 1, z), -EINVAL);
	ck_assert_int_eq(zdev_report(dev, UINT32_MAX, 1, z), -EINVAL);
	ck_assert_int_eq(zdev_report(dev, g->nr_zones - 1, 2, z), 1);
	ck_assert_int_eq(zdev_report(dev, 0, 0, z), 0);
	/* I/O outside the device. */
	ck_assert_int_eq(zdev_read(dev, buf, bs, g->size), -EINVAL);
	ck_assert_int_eq(zdev_read(dev, buf, 2 * bs, g->size - bs), -EINVAL);
	ck_assert_int_eq(zdev_read(dev, buf, bs, UINT64_MAX - bs + 1),
			 -EINVAL);
	ck_assert_int_eq(zdev_write(dev, buf, bs, g->size), -EINVAL);
	ck_assert_int_eq(zdev_write(dev, buf, 2 * bs, g->size - bs), -EINVAL);
	free(buf);
}
END_TEST

/* ---- batches ------------------------------------------------------------- */

/* How many zones a batch may write: each write opens a zone. */
static uint32_t batch_zones(void)
{
	uint32_t n = ZF_MIN(4u, nr_seq);

	if (g->max_active)
		n = ZF_MIN(n, g->max_active);
	return n;
}

START_TEST(test_submit_writes)
{
	uint32_t n = batch_zones(), i;
	struct zdev_io io[4];

	ck_assert_uint_ge(n, 1);
	for (i = 0; i < n; i++) {
		io[i] = (struct zdev_io){ .op = ZDEV_OP_WRITE,
					  .len = (i + 1) * bs,
					  .off = rep(seqz(i)).start,
					  .res = 12345 };
		io[i].buf = zdev_buf_alloc(dev, io[i].len);
		ck_assert_ptr_nonnull(io[i].buf);
		tu_fill(io[i].buf, io[i].len, io[i].off, 27);
	}
	ck_assert_int_eq(zdev_submit(dev, io, n), 0);
	for (i = 0; i < n; i++) {
		ck_assert_int_eq(io[i].res, 0);
		expect_zone(seqz(i), rep(seqz(i)).cond, (i + 1) * bs);
		expect_pat(io[i].off, io[i].len, 27);
		free(io[i].buf);
	}
	ck_assert_int_eq(zdev_submit(dev, io, 0), 0);
}
END_TEST

START_TEST(test_submit_reads)
{
	uint32_t a = seqz(0), i;
	struct zdev_zone z = rep(a);
	struct zdev_io io[16];
	struct zdev_stats st;

	append(a, 8 * bs, 28);
	/* Overlapping, out of order, and one above the write pointer. */
	for (i = 0; i < 16; i++) {
		uint32_t blk = (i * 5) % 9;

		io[i] = (struct zdev_io){ .op = ZDEV_OP_READ,
					  .len = (blk == 8 ? 1 : 8 - blk) * bs,
					  .off = z.start + blk * bs,
					  .res = 12345 };
		io[i].buf = zdev_buf_alloc(dev, io[i].len);
		ck_assert_ptr_nonnull(io[i].buf);
		memset(io[i].buf, 0xa5, io[i].len);
	}
	ck_assert_int_eq(zdev_submit(dev, io, 16), 0);
	for (i = 0; i < 16; i++) {
		ck_assert_int_eq(io[i].res, 0);
		if (io[i].off == z.start + 8 * bs)
			ck_assert(unwritten(io[i].buf, io[i].len));
		else
			ck_assert_int_eq(tu_check(io[i].buf, io[i].len,
						  io[i].off, 28),
					 -1);
		free(io[i].buf);
	}
	stats(&st);
	ck_assert_uint_eq(st.reads, 16);
}
END_TEST

/* One failing I/O fails only itself; its index says which. */
START_TEST(test_submit_errors)
{
	uint32_t n = batch_zones(), i, bad;
	struct zdev_io io[4];

	if (n < 2) {
		tu_skip("submit_errors: needs 2 zones open at once");
		return;
	}
	bad = n - 1;
	for (i = 0; i < n; i++) {
		io[i] = (struct zdev_io){ .op = ZDEV_OP_WRITE, .len = bs,
					  .off = rep(seqz(i)).start };
		if (i == bad)
			io[i].off += bs; /* not at the write pointer */
		io[i].buf = zdev_buf_alloc(dev, bs);
		ck_assert_ptr_nonnull(io[i].buf);
		tu_fill(io[i].buf, bs, io[i].off, 29);
	}
	ck_assert_int_eq(zdev_submit(dev, io, n), -EIO);
	for (i = 0; i < n; i++) {
		ck_assert_int_eq(io[i].res, i == bad ? -EIO : 0);
		if (i == bad)
			expect_zone(seqz(i), ZDEV_COND_EMPTY, 0);
		else
			expect_pat(io[i].off, bs, 29);
		free(io[i].buf);
	}
}
END_TEST

/* ---- fault injection ----------------------------------------------------- */

struct fault {
	enum zdev_op op;
	uint32_t zone;
	int err;
	unsigned int calls, hits;
	enum zdev_op last_op;
	uint32_t last_zone;
	uint64_t last_off;
	size_t last_len;
};

static int fault_hook(void *arg, enum zdev_op op, uint32_t zone, uint64_t off,
		      size_t len)
{
	struct fault *f = arg;

	f->calls++;
	f->last_op = op;
	f->last_zone = zone;
	f->last_off = off;
	f->last_len = len;
	if (op != f->op || zone != f->zone)
		return 0;
	f->hits++;
	return f->err;
}

START_TEST(test_fault)
{
	uint32_t a = seqz(0), b = seqz(1);
	struct zdev_zone za = rep(a), zb = rep(b);
	struct fault f = { .op = ZDEV_OP_WRITE, .zone = a, .err = -ENOLINK };
	struct zdev_stats st;
	struct zdev_zone zz;
	char *buf = zdev_buf_alloc(dev, 2 * bs);

	ck_assert_ptr_nonnull(buf);
	append(a, bs, 30);
	zdev_set_fault(dev, fault_hook, &f);

	/* A write: fails, device untouched, the hook saw its arguments. */
	ck_assert_int_eq(write_pat(za.start + bs, 2 * bs, 30), -ENOLINK);
	ck_assert_uint_eq(f.hits, 1);
	ck_assert_uint_eq(f.last_op, ZDEV_OP_WRITE);
	ck_assert_uint_eq(f.last_zone, a);
	ck_assert_uint_eq(f.last_off, za.start + bs);
	ck_assert_uint_eq(f.last_len, 2 * bs);
	expect_zone(a, ZDEV_COND_IMP_OPEN, bs);
	append(b, bs, 30); /* other zones are not affected */

	/* A read. */
	f.op = ZDEV_OP_READ;
	ck_assert_int_eq(zdev_read(dev, buf, bs, za.start), -ENOLINK);
	expect_pat(zb.start, bs, 30);

	/* Zone operations: a faulted reset or finish changes nothing. */
	f.op = ZDEV_OP_RESET;
	ck_assert_int_eq(zdev_reset(dev, a), -ENOLINK);
	ck_assert_uint_eq(f.last_off, za.start);
	f.op = ZDEV_OP_FINISH;
	ck_assert_int_eq(zdev_finish(dev, a), -ENOLINK);
	f.op = ZDEV_OP_CLOSE;
	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_CLOSE, a), -ENOLINK);
	f.op = ZDEV_OP_OPEN;
	ck_assert_int_eq(zdev_zone_op(dev, ZDEV_OP_OPEN, a), -ENOLINK);
	f.op = ZDEV_OP_REPORT;
	ck_assert_int_eq(zdev_report(dev, a, 1, &zz), -ENOLINK);
	f.op = ZDEV_OP_FLUSH;
	f.zone = UINT32_MAX;
	ck_assert_int_eq(zdev_flush(dev), -ENOLINK);
	ck_assert_uint_eq(f.last_zone, UINT32_MAX);
	f.zone = a;
	f.op = ZDEV_OP_WRITE;
	ck_assert_uint_eq(f.hits, 8);
	stats(&st);
	ck_assert_uint_eq(st.flushes, 0);
	ck_assert_uint_eq(st.resets, 0);
	ck_assert_uint_eq(st.writes, 2);
	ck_assert_uint_eq(st.reads, 1);

	zdev_set_fault(dev, NULL, NULL);
	expect_zone(a, ZDEV_COND_IMP_OPEN, bs);
	expect_pat(za.start, bs, 30);
	append(a, bs, 30);
	ck_assert_int_eq(zdev_flush(dev), 0);
	ck_assert_uint_eq(f.hits, 8);
	free(buf);
}
END_TEST

/* A faulted I/O in a batch fails alone, and the batch keeps its order. */
START_TEST(test_fault_submit)
{
	uint32_t n = batch_zones(), i;
	struct fault f = { .op = ZDEV_OP_WRITE, .err = -ENOLINK };
	struct zdev_io io[4];

	if (n < 3) {
		tu_skip("fault_submit: needs 3 zones open at once");
		return;
	}
	f.zone = seqz(0);
	for (i = 0; i < n; i++) {
		io[i] = (struct zdev_io){ .op = ZDEV_OP_WRITE, .len = bs,
					  .off = rep(seqz(i)).start };
		io[i].buf = zdev_buf_alloc(dev, bs);
		ck_assert_ptr_nonnull(io[i].buf);
		tu_fill(io[i].buf, bs, io[i].off, 31);
	}
	zdev_set_fault(dev, fault_hook, &f);
	ck_assert_int_eq(zdev_submit(dev, io, n), -ENOLINK);
	for (i = 0; i < n; i++) {
		ck_assert_uint_eq(io[i].off, rep(seqz(i)).start);
		ck_assert_int_eq(io[i].res, i == 0 ? -ENOLINK : 0);
		if (i == 0)
			expect_zone(seqz(i), ZDEV_COND_EMPTY, 0);
		else
			expect_pat(io[i].off, bs, 31);
		free(io[i].buf);
	}
	zdev_set_fault(dev, NULL, NULL);
}
END_TEST

/* ---- opening ------------------------------------------------------------- */

START_TEST(test_exclusive)
{
	struct zdev *d2 = NULL;
	char err[256] = "";
	char *buf = zdev_buf_alloc(dev, bs);
	uint32_t a = seqz(0);
	uint64_t s = rep(a).start;

	ck_assert_ptr_nonnull(buf);
	append(a, bs, 32);
	ck_assert_int_eq(zdev_flush(dev), 0);
	ck_assert_int_eq(zdev_open(dev_path, ZDEV_EXCL, &d2, err, sizeof(err)),
			 -EBUSY);
	ck_assert_msg(strstr(err, dev_path), "no path in \"%s\"", err);
	ck_assert_int_eq(zdev_open(dev_path, 0, &d2, err, sizeof(err)),
			 -EBUSY);
	/* A reader that does not ask for exclusivity may look. */
	ck_assert_int_eq(zdev_open(dev_path, ZDEV_RDONLY, &d2, err,
				   sizeof(err)),
			 0);
	ck_assert_int_eq(zdev_read(d2, buf, bs, s), 0);
	ck_assert_int_eq(tu_check(buf, bs, s, 32), -1);
	ck_assert_int_eq(zdev_write(d2, buf, bs, s + bs), -EROFS);
	ck_assert_int_eq(zdev_reset(d2, a), -EROFS);
	ck_assert_int_eq(zdev_zone_op(d2, ZDEV_OP_OPEN, a), -EROFS);
	ck_assert_int_eq(zdev_flush(d2), 0);
	zdev_close(d2);
	expect_zone(a, ZDEV_COND_IMP_OPEN, bs);
	free(buf);
}
END_TEST

START_TEST(test_open_errors)
{
	struct zdev *d2 = NULL;
	char err[256] = "";

	ck_assert_int_eq(zdev_open("/nonexistent/zonefuse", 0, &d2, err,
				   sizeof(err)),
			 -ENOENT);
	ck_assert(strstr(err, "/nonexistent/zonefuse"));
	ck_assert_int_eq(zdev_open("/", 0, &d2, err, sizeof(err)), -ENODEV);
	ck_assert_int_eq(zdev_open("/dev/null", 0, &d2, err, sizeof(err)),
			 -ENODEV);
	ck_assert_ptr_null(d2);
}
END_TEST

START_TEST(test_flush)
{
	struct zdev_stats st;

	append(seqz(0), bs, 33);
	ck_assert_int_eq(zdev_flush(dev), 0);
	ck_assert_int_eq(zdev_flush(dev), 0);
	stats(&st);
	ck_assert_uint_eq(st.flushes, 2);
}
END_TEST

/*
 * A block device's write cache is what the kernel says at open: flushes
 * are sent only to a volatile one. The emulator always has one (its write
 * pointers persist only at flush). On a real device the kernel's setting
 * is flipped, the device opened again, and the setting put back.
 */
static int wc_read(const char *attr, char *val, size_t len)
{
	FILE *f = fopen(attr, "r");
	int ret = -errno;

	if (!f)
		return ret;
	ret = fgets(val, (int)len, f) ? 0 : -EIO;
	fclose(f);
	return ret;
}

static int wc_write(const char *attr, const char *val)
{
	FILE *f = fopen(attr, "w");
	int ret;

	if (!f)
		return -errno;
	ret = fputs(val, f) < 0 ? -EIO : 0;
	if (fclose(f) && !ret)
		ret = -errno;
	return ret;
}

static bool wc_reopened(void)
{
	struct zdev *d2 = NULL;
	char err[256] = "";
	bool v;

	ck_assert_int_eq(zdev_open(dev_path, ZDEV_RDONLY, &d2, err,
				   sizeof(err)),
			 0);
	v = zdev_geom(d2)->volatile_cache;
	zdev_close(d2);
	return v;
}

START_TEST(test_write_cache)
{
	char attr[PATH_MAX], val[32] = "", *other;
	const char *name;
	bool was, flipped;
	int ret;

	append(seqz(0), bs, 34);
	ck_assert_int_eq(zdev_flush(dev), 0);
	if (!zbd_path) {
		ck_assert(g->volatile_cache);
		return;
	}
	name = strrchr(zbd_path, '/');
	snprintf(attr, sizeof(attr), "/sys/block/%s/queue/write_cache",
		 name ? name + 1 : zbd_path);
	ck_assert_int_eq(wc_read(attr, val, sizeof(val)), 0);
	was = strncmp(val, "write through", 13) != 0;
	ck_assert_msg(g->volatile_cache == was, "%s says %s", attr, val);
	other = was ? "write through" : "write back";
	ret = wc_write(attr, other);
	if (ret) {
		printf("check_zdev: write_cache: the kernel refused \"%s\" in %s (%s): only the detected setting was checked\n",
		       other, attr, strerror(-ret));
		return;
	}
	flipped = wc_reopened();
	/* Put back before any assertion can end the test. */
	ck_assert_int_eq(wc_write(attr, was ? "write back" : "write through"),
			 0);
	ck_assert(flipped == !was);
	ck_assert(wc_reopened() == was);
	append(seqz(0), bs, 35);
	ck_assert_int_eq(zdev_flush(dev), 0);
}
END_TEST

/* ---- the suite ----------------------------------------------------------- */

static void add(Suite *s, const char *name, const TTest *t,
		void (*fixture)(void))
{
	tu_add_case(s, name, t, fixture, teardown, zbd_path ? 300 : 30);
}

static Suite *zdev_suite(void)
{
	Suite *s = suite_create("zdev");

	add(s, "geometry", test_geometry, setup);
	add(s, "write_at_wp", test_write_at_wp, setup);
	add(s, "write_not_at_wp", test_write_not_at_wp, setup);
	add(s, "unaligned", test_unaligned, setup);
	add(s, "cross_capacity", test_cross_capacity, setup);
	add(s, "write_full", test_write_full, setup);
	add(s, "read", test_read, setup);
	add(s, "reset", test_reset, setup);
	add(s, "finish", test_finish, setup);
	add(s, "open_close", test_open_close, setup);
	add(s, "close_unwritten", test_close_unwritten, setup);
	add(s, "close_empty", test_close_empty, setup);
	add(s, "close_full", test_close_full, setup);
	add(s, "open_full", test_open_full, setup);
	add(s, "max_open_implicit", test_max_open_implicit, setup_open_limit);
	add(s, "max_open_explicit", test_max_open_explicit, setup_open_limit);
	add(s, "max_active_write", test_max_active_write, setup_active_limit);
	add(s, "max_active_open", test_max_active_open, setup_active_limit);
	add(s, "forced_conditions", test_forced_conditions, setup);
	add(s, "conv", test_conv, setup_conv);
	add(s, "out_of_range", test_out_of_range, setup);
	add(s, "submit_writes", test_submit_writes, setup);
	add(s, "submit_reads", test_submit_reads, setup);
	add(s, "submit_errors", test_submit_errors, setup);
	add(s, "fault", test_fault, setup);
	add(s, "fault_submit", test_fault_submit, setup);
	add(s, "exclusive", test_exclusive, setup);
	add(s, "open_errors", test_open_errors, setup);
	add(s, "flush", test_flush, setup);
	add(s, "write_cache", test_write_cache, setup);
	return s;
}

static void describe(void)
{
	struct zemu_params p;
	char a[32], b[32];

	if (zbd_path) {
		printf("check_zdev: the zdev contract on the zoned block device %s\n",
		       zbd_path);
		return;
	}
	p = emu_base;
	printf("check_zdev: the zdev contract on emulator images: %" PRIu64
	       " zones of %s (capacity %s), block size %u, max open %u, max active %u, %u conventional\n",
	       p.size / p.zone_size, zutil_size_str(p.zone_size, a, sizeof(a)),
	       zutil_size_str(p.zone_capacity ? p.zone_capacity : p.zone_size,
			      b, sizeof(b)),
	       p.block_size, p.max_open, p.max_active, p.nr_conv);
}

int main(int argc, char **argv)
{
	bool need_real = argc > 1 && !strcmp(argv[1], "--real");
	const char *env = getenv("ZONEFUSE_TEST_ZBD");
	const char *geom = getenv("ZONEFUSE_TEST_EMU");

	if (env && *env) {
		struct stat st;

		if (stat(env, &st) < 0 || !S_ISBLK(st.st_mode)) {
			fprintf(stderr,
				"check_zdev: ZONEFUSE_TEST_ZBD=%s is not a block device\n",
				env);
			return EXIT_FAILURE;
		}
		zbd_path = env;
	} else if (need_real) {
		printf("check_zdev: SKIP: ZONEFUSE_TEST_ZBD is not set, so there is no zoned block device to test (set it to e.g. /dev/nullb0, made by scripts/nullblk.sh)\n");
		return TU_EXIT_SKIP;
	}
	if (geom && *geom) {
		struct zemu_params p = emu_base;
		char err[256];

		if (tu_parse_geom(geom, &p) ||
		    zemu_check_params(&p, err, sizeof(err))) {
			fprintf(stderr,
				"check_zdev: bad ZONEFUSE_TEST_EMU \"%s\"\n",
				geom);
			return EXIT_FAILURE;
		}
		emu_base = p;
	}
	describe();
	return tu_run(zdev_suite());
}
