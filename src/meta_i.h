/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * meta_i - what the three parts of the metadata module share and the rest
 * of the code does not see: the table primitives of meta.c, used by the
 * record application (meta_apply.c) and the snapshot loader (meta_snap.c).
 *
 * The primitives check nothing: their callers have checked the record.
 * Those that allocate return 0 or -ENOMEM (or NULL) and change nothing
 * but the room they make; those that change the state return void and
 * cannot fail once the room they need is reserved.
 */
#ifndef ZONEFUSE_META_I_H
#define ZONEFUSE_META_I_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zonefuse/format.h"
#include "zonefuse/meta.h"

#define ZM_S_IFMT 0170000u
#define ZM_S_IFDIR 0040000u
#define ZM_S_IFREG 0100000u
#define ZM_S_IFLNK 0120000u
#define ZM_S_IFIFO 0010000u
#define ZM_S_IFSOCK 0140000u
#define ZM_S_IFCHR 0020000u
#define ZM_S_IFBLK 0060000u

/* Format a refusal into @why (if any); returns -EUCLEAN. */
__attribute__((format(printf, 3, 4))) int zm_bad(char *why, size_t len,
						 const char *fmt, ...);

/* Double the inode table. 0 or -ENOMEM (the table is as it was). */
int zm_itab_grow(struct zmeta *m);
/* Put @in in the table and count it; no allocation. */
void zm_itab_insert(struct zmeta *m, struct zm_inode *in);

/*
 * Make room for one more entry in @d (tables), so adding cannot fail.
 * 0, or -ENOMEM with the directory as it was.
 */
int zm_dir_reserve(struct zm_dir *d);
/* A new entry for @name (not in any directory yet), or NULL. */
struct zm_dent *zm_dent_new(const char *name, size_t len, uint64_t ino);
/* Add @e to @d; zm_dir_reserve() must have succeeded. */
void zm_dir_add(struct zm_dir *d, struct zm_dent *e);
/* Unlink @e from @d and free it. */
void zm_dir_del(struct zm_dir *d, struct zm_dent *e);

/* The bytes of its zone an extent of @len bytes counts as live. */
uint64_t zm_fp(const struct zmeta *m, uint64_t len);
/* @len bytes of footprint join the zone of @addr (and live_bytes). */
void zm_zone_add(struct zmeta *m, uint64_t addr, uint64_t len);
/* Room for @more extents in @i beyond its current ones. 0 or -ENOMEM. */
int zm_extent_reserve(struct zm_inode *i, uint64_t more);
/*
 * Drop the mapping of [start, end) from @i, splitting extents at the
 * edges. Needs room for one more extent (a split in the middle): the
 * caller reserves it.
 */
void zm_punch(struct zmeta *m, struct zm_inode *i, uint64_t start,
	      uint64_t end);
/*
 * Map [foff, foff + len) of @i to @addr. Needs room for two more extents
 * when the range lies inside one extent (split around it), else for one.
 */
void zm_extent_set(struct zmeta *m, struct zm_inode *i, uint64_t foff,
		   uint64_t addr, uint64_t len);
/*
 * Reserved ranges. zm_pre_cut() releases [@off, @end) of @i's ranges;
 * it splits at most one range, for which zm_pre_reserve(@i, 1) must have
 * made room (a cut to the end needs none). zm_pre_add() reserves what
 * zm_pre_need() counts; it builds the new ranges aside, so a failure
 * (-ENOMEM) leaves @i as it was.
 */
int zm_pre_reserve(struct zm_inode *i, uint32_t more);
void zm_pre_cut(struct zmeta *m, struct zm_inode *i, uint64_t off,
		uint64_t end);
int zm_pre_add(struct zmeta *m, struct zm_inode *i, uint64_t off,
	       uint64_t end);

/* Does [addr, addr + len) lie in one zone that may hold data? */
bool zm_data_range_ok(const struct zmeta *m, uint64_t addr, uint64_t len);

/* Free an inode's memory (not its zone accounting). */
void zm_inode_release(struct zm_inode *in);
/*
 * Give back the zone space of @in's data and its reserved ranges: it has
 * no extents and no ranges after.
 */
void zm_drop_extents(struct zmeta *m, struct zm_inode *in);
bool zm_mode_valid(uint32_t mode);
/* A name a directory may hold: not empty, ".", ".."; no '/' or NUL. */
bool zm_name_valid(const char *name, size_t len);
/* A new inode from @a (not in the table yet), or NULL. */
struct zm_inode *zm_inode_new(const struct zf_dattr *a, uint32_t rdev);
/* A new xattr (not on any inode yet), or NULL. */
struct zm_xattr *zm_xattr_new(const char *name, uint16_t nlen,
			      const void *value, uint32_t vlen);
/* Take @x off @i and free it. */
void zm_xattr_unlink(struct zm_inode *i, struct zm_xattr *x);

/* meta_csum.c: the data blocks' checksums (struct zm_zone.csum). */

/* The checksum table of @zone, made if there is none. 0 or -ENOMEM. */
int zm_csum_room(struct zmeta *m, uint32_t zone);
/*
 * Set the checksums of @n blocks from the one holding @addr to @csums
 * (le32, as records carry them). zm_csum_room() must have succeeded.
 */
void zm_csum_set(struct zmeta *m, uint64_t addr, uint32_t n,
		 const void *csums);
/*
 * The blocks [@old, @old + @len) touch were copied whole to @new (same
 * offset in a block): their checksums go with them. zm_csum_room() of
 * @new's zone must have succeeded.
 */
void zm_csum_copy(struct zmeta *m, uint64_t old, uint64_t new, uint64_t len);
/* Zone @zone was reset: its checksums go. */
void zm_csum_drop(struct zmeta *m, uint32_t zone);

#endif /* ZONEFUSE_META_I_H */
