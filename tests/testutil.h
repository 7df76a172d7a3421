/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Helpers shared by the Check suites: scratch directories, emulator images,
 * data patterns and the exit-77 convention for what this machine lacks.
 * Every helper asserts on failure (ck_assert), so a test reads as its rule.
 */
#ifndef ZONEFUSE_TESTUTIL_H
#define ZONEFUSE_TESTUTIL_H

#include <check.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "zonefuse/zdev.h"
#include "zonefuse/zemu.h"
#include "zonefuse/zfs.h"

/* The exit status meson reports as SKIP. */
#define TU_EXIT_SKIP 77

#define TU_MIB (1ull << 20)

/* @expr must be 0; otherwise the test fails with the negative errno it was. */
#define TU_OK(expr)                                                           \
	do {                                                                  \
		int r_ = (int)(expr);                                         \
		ck_assert_msg(r_ == 0, "%s: %d (%s)", #expr, r_,              \
			      strerror(r_ < 0 ? -r_ : 0));                    \
	} while (0)

/*
 * Make a fresh scratch directory under $TMPDIR (or /tmp) into @dir
 * (PATH_MAX bytes); tu_rmtree() removes it and what it holds.
 */
void tu_mkdtemp(char *dir, size_t len);
void tu_rmtree(const char *dir);

/*
 * The fixture of the suites that format one image per test: a fresh
 * scratch directory in tu_dir and the image's path, inside it, in tu_img.
 */
extern char tu_dir[PATH_MAX], tu_img[PATH_MAX];
void tu_img_setup(void);
void tu_img_teardown(void);

/*
 * For main(), around srunner_run_all(): make one scratch directory and
 * point $TMPDIR at it, so that the tests' directories go inside it; then
 * remove it all. A failed test ends its process before its teardown, so
 * this is what cleans up after it.
 */
void tu_scratch_begin(void);
void tu_scratch_end(void);

/* Add a case @name to @s: @t between @setup and @teardown, @timeout s. */
void tu_add_case(Suite *s, const char *name, const TTest *t,
		 void (*setup)(void), void (*teardown)(void), int timeout);
/*
 * Run every case of @s (which it frees) inside a scratch directory, as
 * tu_scratch_begin() makes; the exit status: EXIT_SUCCESS if all passed.
 */
int tu_run(Suite *s);

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

/* ---- file-system images (zfs.h) ---------------------------------------- */

/*
 * Create an emulator image at @path with @p and make a file system on it
 * (zfs_mkfs, default reserve); asserts both worked.
 */
void tu_mkfs_image(const char *path, const struct zemu_params *p);
/* The same with @copies copies of the metadata chain (0: mkfs's default). */
void tu_mkfs_image_copies(const char *path, const struct zemu_params *p,
			  unsigned int copies);

/* File offset of device byte 0 in the emulator image @path (its data_off). */
uint64_t tu_image_data_off(const char *path);

/*
 * Overwrite @len bytes of the image @path at device offset @dev_off, behind
 * the emulator's back (the write pointers do not move): corruption as a
 * bad sector or a stray writer would leave it. tu_image_read() reads them.
 */
void tu_image_write(const char *path, uint64_t dev_off, const void *buf,
		    size_t len);
void tu_image_read(const char *path, uint64_t dev_off, void *buf, size_t len);
/*
 * Set zone @zone's write pointer in the emulator image's zone table (its
 * entry's CRC made good): what a drive would report after a write that
 * never landed. The image must not be open.
 */
void tu_image_set_wp(const char *path, uint32_t zone, uint64_t wp);

/* Flip (xor 0xff) the byte at device offset @dev_off of the image @path. */
void tu_image_flip(const char *path, uint64_t dev_off);

/* Copy the file @from to @to (which is replaced). */
void tu_copy_file(const char *from, const char *to);
/* Same length and bytes (a hole reads as zeros). */
bool tu_files_equal(const char *a, const char *b);

/* @len pseudo-random bytes from @seed (xorshift: the same on every run). */
void tu_random(void *buf, size_t len, uint64_t seed);

/* ---- driving a mounted file system (zfs.h), without FUSE ---------------- */

/* Who the helpers below act as: root, umask 022. */
extern const struct zfs_ctx tu_root_ctx;

/*
 * Mount the file system on @img (read-only with @rdonly) with a commit
 * interval of an hour and no reclaim thread, so that nothing is committed
 * or reset behind the test's back; asserts it worked.
 */
struct zfs *tu_mount(const char *img, bool rdonly);
/*
 * A writable mount of @img is refused: -EUCLEAN, a message naming -o ro
 * and fsck --repair, and the image's bytes the same after.
 */
void tu_mount_refused(const char *img);
/* zfs_unmount(), asserting it returned 0. */
void tu_unmount(struct zfs *fs);

/*
 * Wait (up to 10 s) until inode @ino is gone from the table; true if it
 * went. A writeback thread still working on an unlinked file keeps it
 * pinned, and frees it when it lets go: not at unlink, but soon after.
 */
bool tu_wait_freed(struct zfs *fs, uint64_t ino);

/* The inode at absolute @path ("/a/b"), or a negative errno. */
int64_t tu_ino(struct zfs *fs, const char *path);

/*
 * Namespace operations on absolute paths. Each returns what the zfs_ call
 * returned (0 or a negative errno), and holds no lookup or open afterwards.
 */
int tu_mkdir(struct zfs *fs, const char *path, unsigned int mode);
int tu_symlink(struct zfs *fs, const char *path, const char *target);
int tu_link(struct zfs *fs, const char *from, const char *to);
int tu_rename(struct zfs *fs, const char *from, const char *to,
	      unsigned int flags);
int tu_unlink(struct zfs *fs, const char *path);
int tu_rmdir(struct zfs *fs, const char *path);
int tu_setxattr(struct zfs *fs, const char *path, const char *name,
		const void *value, size_t len);
int tu_removexattr(struct zfs *fs, const char *path, const char *name);
int tu_truncate(struct zfs *fs, const char *path, uint64_t size);
int tu_chmod(struct zfs *fs, const char *path, unsigned int mode);

/*
 * Write @len bytes of the tu_fill() pattern (@seed, named by file offset)
 * at @off (a multiple of 8) of @path, creating the file if it does not
 * exist. Not synced. Each byte depends only on its offset and @seed.
 */
int tu_write(struct zfs *fs, const char *path, uint64_t off, size_t len,
	     uint32_t seed);
/*
 * Read @len bytes at @off of @path and compare them with the pattern
 * (@seed); a @seed of 0 means zeros (a hole). Returns 0, the negative
 * errno of a failed call, or -EILSEQ on a mismatch (said on stderr).
 */
int tu_verify(struct zfs *fs, const char *path, uint64_t off, size_t len,
	      uint32_t seed);

/*
 * Everything a user can see of the file system, as text (one line per
 * name, depth first, names sorted): type, permissions, owner, link count,
 * size, a CRC of the data, symlink targets and xattrs. Times and inode
 * numbers are left out: two file systems that went through the same
 * changes have the same digest. free() the result.
 */
char *tu_digest(struct zfs *fs);

/* Print one line saying why a test is skipped (the test then passes). */
__attribute__((format(printf, 1, 2))) void tu_skip(const char *fmt, ...);

#endif /* ZONEFUSE_TESTUTIL_H */
