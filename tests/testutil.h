/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Helpers shared by the Check suites: scratch directories, emulator images,
 * data patterns and the exit-77 convention for what this machine lacks.
 * Every helper asserts on failure (ck_assert), so a test reads as its rule.
 */
#ifndef ZONEFUSE_TESTUTIL_H
#define ZONEFUSE_TESTUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zonefuse/zdev.h"
#include "zonefuse/zemu.h"

/* The exit status meson reports as SKIP. */
#define TU_EXIT_SKIP 77

/*
 * Make a fresh scratch directory under $TMPDIR (or /tmp) into @dir
 * (PATH_MAX bytes); tu_rmtree() removes it and what it holds.
 */
void tu_mkdtemp(char *dir, size_t len);
void tu_rmtree(const char *dir);

/*
 * For main(), around srunner_run_all(): make one scratch directory and
 * point $TMPDIR at it, so that the tests' directories go inside it; then
 * remove it all. A failed test ends its process before its teardown, so
 * this is what cleans up after it.
 */
void tu_scratch_begin(void);
void tu_scratch_end(void);

/* "@dir/@name" into @path. */
void tu_path(char *path, size_t len, const char *dir, const char *name);

/* Create an emulator image at @path with @p; asserts it worked. */
void tu_make_image(const char *path, const struct zemu_params *p);

/*
 * Parse an emulator geometry "zones=16 zone_size=1M zone_capacity=768K
 * bs=4096 max_open=0 max_active=0 nr_conv=0" (any subset, spaces or
 * commas) over @p. Returns 0 or -EINVAL.
 */
int tu_parse_geom(const char *s, struct zemu_params *p);

/*
 * A data pattern that names its zone and byte offset, so a block that
 * lands in the wrong place is caught: tu_fill() writes it, tu_check()
 * returns the offset of the first wrong byte in @buf, or -1.
 */
void tu_fill(void *buf, size_t len, uint64_t dev_off, uint32_t seed);
long tu_check(const void *buf, size_t len, uint64_t dev_off, uint32_t seed);

/* True if @len bytes at @buf are all zero. */
bool tu_is_zero(const void *buf, size_t len);

/* Report one zone into @z; asserts the report worked. */
void tu_report1(struct zdev *dev, uint32_t zone, struct zdev_zone *z);

/* Print one line saying why a test is skipped (the test then passes). */
__attribute__((format(printf, 1, 2))) void tu_skip(const char *fmt, ...);

#endif /* ZONEFUSE_TESTUTIL_H */
