/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * meta - the file system's metadata, all of it, in DRAM.
 *
 * Every change to it is a journal record (format.h), and every change is
 * made by zm_apply() on that record: the live file system builds a record,
 * applies it and appends it to the journal; replay applies the same records
 * in the same order. So the state after replay is, by construction, the
 * state the records describe.
 *
 * Size (x86-64): an inode is 168 bytes plus 8-16 in the inode table, a
 * directory entry 32 bytes plus its name plus 24-32 in its directory's
 * tables, an extent 24 bytes. A 1 GiB checkpoint file in 256 MiB zones:
 * about 350 bytes in all. Nothing is per block (docs/format.md).
 *
 * Locking: struct zmeta has none of its own; the file system core (zfs.c)
 * says which of its locks protects what.
 */
#ifndef ZONEFUSE_META_H
#define ZONEFUSE_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zonefuse/format.h"

struct zm_extent {
	uint64_t foff; /* file offset */
	uint64_t addr; /* device address */
	uint64_t len;  /* bytes; never crosses a zone */
};

/* A reserved (fallocated, unwritten) range of a file: block aligned. */
struct zm_range {
	uint64_t off, len;
};

struct zm_xattr {
	struct zm_xattr *next;
	uint32_t value_len;
	uint16_t name_len;
	char data[]; /* name (not NUL-terminated), then value */
};

struct zm_dent {
	struct zm_dent *hnext; /* hash chain, by increasing cookie */
	uint64_t ino;
	/*
	 * readdir position, from the name: ZM_COOKIE(hash, n) with n the
	 * lowest number no other entry of the same hash has. A name removed
	 * and made again (renamed away and back) gets its old position, so
	 * a listing that has passed it does not meet it again (ext4's
	 * hash-ordered readdir does the same).
	 */
	uint64_t cookie;
	uint32_t hash;
	uint16_t name_len;
	char name[]; /* NUL-terminated */
};

/* Positions 1 and 2 are "." and ".."; entries' start at 3, below 2^63. */
#define ZM_COOKIE(hash, n) \
	((((uint64_t)((hash) >> 1) << 32) | (uint64_t)(n)) + 3)

/*
 * A directory's names: a hash table indexed by the top bits of the hash
 * (so bucket order is cookie order), each chain sorted by cookie; readdir
 * walks buckets in order and needs no other index.
 */
struct zm_dir {
	struct zm_dent **htab;
	uint32_t hbits; /* the table has 1 << hbits buckets */
	uint32_t count; /* live entries */
};

struct zm_inode {
	uint64_t ino;
	uint32_t mode, uid, gid, nlink, rdev;
	uint64_t size;
	int64_t atime, mtime, ctime, btime;
	uint64_t parent; /* directories: the parent directory */
	struct zm_xattr *xattrs;
	union {
		struct {
			struct zm_extent *ext; /* sorted, disjoint */
			uint32_t n_ext, cap_ext;
			/*
			 * Reserved ranges (PREALLOC): sorted, disjoint, not
			 * adjacent, on blocks no extent touches.
			 */
			struct zm_range *pre;
			uint32_t n_pre, cap_pre;
		} f;
		struct zm_dir d;
		char *target; /* symlinks */
	};
	struct zm_inode *hnext; /* inode table chain */

	/*
	 * Runtime state, not persisted. The kernel's lookup count and the
	 * open handles keep an unlinked inode alive (zm_inode_busy()).
	 */
	uint64_t nlookup;
	uint32_t nopen;
	uint32_t npin; /* staged data not yet written */
	void *rt;      /* the file system core's per-inode state */
};

/* What the file system does with a zone. Not persisted: derived. */
enum zm_zone_state {
	ZM_ZONE_FREE = 0, /* no live data; needs a reset if wp > start */
	ZM_ZONE_SUPER,	  /* one of the two super zones */
	ZM_ZONE_META,	  /* in the metadata chain */
	ZM_ZONE_DATA,	  /* holds (or is taking) file data */
	ZM_ZONE_BAD,	  /* read-only, offline, or too small to use */
};

struct zm_zone {
	uint64_t start, len, cap;
	uint64_t wp;	 /* next write position: device write pointer for
			    sequential zones, the file system's for
			    conventional ones */
	uint64_t valid;	 /* bytes of live extents */
	uint64_t resets; /* lifetime, as journaled */
	int64_t mtime;	 /* last data write, for reclaim's age */
	uint64_t free_seq; /* seq of the record that left it without live
			      data; it may be reset once that is durable */
	uint8_t type;	 /* enum zdev_zone_type */
	uint8_t state;	 /* enum zm_zone_state */
	uint8_t cond;	 /* device condition at mount */
	uint8_t flags;	 /* owned by the allocator */
	uint64_t owner;	 /* allocator: the placement group of a parked zone,
			    0 for none */
	uint64_t pending; /* allocator: bytes written to the zone whose extent
			     is not applied yet; the zone is not dead while
			     any are */
	/*
	 * The CRC32C of each block of the zone that file data was written
	 * to (len / block_size entries, or NULL until the first): set when
	 * the record that maps the block applies (EXTENT, EXTENT_MOVE, a
	 * snapshot's SNAP_CSUMS), dropped at ZONE_RESET. Changed under the
	 * record order (rec.c); a reader of a block holds the lock that
	 * keeps the extent mapping it alive (the file's data lock), which
	 * the record that set it held too.
	 */
	uint32_t *csum;
};

/*
 * Did the device take @z away after it held data (reported read-only or
 * offline at mount)? Such a zone is ZM_ZONE_BAD, yet extents may map it:
 * read-only data can still be read, offline data reads as EIO. Nothing is
 * written to it or reset in it again.
 */
bool zm_zone_failed(const struct zm_zone *z);

struct zm_counters {
	uint64_t host_bytes, device_bytes, gc_bytes, meta_bytes;
};

struct zmeta;

/*
 * Called when a zone's live bytes drop to zero (@seq is the record that did
 * it): the allocator may reset the zone once @seq is durable.
 */
typedef void (*zm_zone_dead_fn)(void *arg, uint32_t zone, uint64_t seq);

struct zmeta {
	struct zm_inode **itab; /* inode table, chained */
	uint32_t imask;
	uint64_t nr_inodes;
	uint64_t nr_dirs, nr_files; /* directories; everything else */
	uint64_t next_ino;
	uint32_t block_size; /* device I/O unit */
	uint32_t nr_zones;
	struct zm_zone *zones;
	uint64_t zone_size;
	uint64_t live_bytes; /* the sum of every zone's valid bytes */
	uint64_t prealloc_bytes; /* the sum of every file's reserved ranges */
	struct zm_counters counters;
	uint64_t cur_seq; /* seq of the record being applied */
	/* Snapshot being loaded: records so far, inodes announced. */
	uint64_t load_records, load_inodes;
	zm_zone_dead_fn zone_dead;
	void *zone_dead_arg;
};

/* An empty metadata set for a device of @nr_zones zones. */
int zm_init(struct zmeta *m, uint32_t nr_zones, uint64_t zone_size,
	    uint32_t block_size);
void zm_destroy(struct zmeta *m);

struct zm_inode *zm_iget(const struct zmeta *m, uint64_t ino);
/* Look @name up in directory @dir. NULL if absent. */
struct zm_dent *zm_lookup(const struct zm_inode *dir, const char *name,
			  size_t len);
/* First entry of @dir with cookie > @after, or NULL. */
struct zm_dent *zm_dir_next(const struct zm_inode *dir, uint64_t after);

static inline bool zm_is_dir(const struct zm_inode *i)
{
	return (i->mode & 0170000) == 0040000;
}

static inline bool zm_is_reg(const struct zm_inode *i)
{
	return (i->mode & 0170000) == 0100000;
}

static inline bool zm_is_lnk(const struct zm_inode *i)
{
	return (i->mode & 0170000) == 0120000;
}

/* An unlinked inode is kept while the kernel or an open file uses it. */
static inline bool zm_inode_busy(const struct zm_inode *i)
{
	return i->nlookup || i->nopen || i->npin;
}

/*
 * Apply one record. Checks that it makes sense against the current state
 * (names exist or not, types match, zones exist, ...). Returns 0, -ENOMEM,
 * or -EUCLEAN (with a reason in @why) for a record that cannot be applied:
 * a corrupt journal or a bug.
 *
 * On failure, of any kind, the state is unchanged: every allocation a
 * record needs is made before the first change, and every check before
 * the first allocation. (A table may keep room it grew for the record;
 * nothing it holds differs, and no zone_dead call was made.) So a caller
 * may treat -ENOMEM as "not applied" and carry on.
 */
int zm_apply(struct zmeta *m, uint16_t type, const void *payload,
	     uint32_t len, uint64_t seq, char *why, size_t whylen);

/*
 * Check the invariants of the whole of @m, without changing it: every
 * regular file's extents are non-empty, sorted by file offset, disjoint,
 * inside one zone that exists and not past the file size; every zone's
 * valid is what the extents in it take, in whole blocks; live_bytes is
 * the sum of every zone's valid. Mount and fsck run it (zfs_check()),
 * and a checking build again at unmount. Returns 0,
 * -EUCLEAN with the first broken rule in @why (naming the inode or the
 * zone), or -ENOMEM (it keeps a count per zone).
 */
int zm_verify(const struct zmeta *m, char *why, size_t whylen);

/*
 * Check @len bytes read from device address @addr (whole blocks: @addr
 * and @len multiples of the block size, inside one zone) against the
 * checksums the records gave their blocks. Returns 0, or -EILSEQ with
 * *@bad the address of the first block that does not match (also when
 * the zone has no checksums: a bug or damage, never passed off as good).
 */
int zm_csum_check(const struct zmeta *m, uint64_t addr, const void *buf,
		  size_t len, uint64_t *bad);

/* Index of the extent containing or after @foff in @i (regular file). */
uint32_t zm_extent_find(const struct zm_inode *i, uint64_t foff);

/*
 * Reserved ranges (fallocate). zm_pre_bytes(): what @i has reserved.
 * zm_pre_need(): what a PREALLOC of [@off, @end) (block aligned) would
 * add, the blocks in it that neither an extent touches nor a range holds.
 * zm_pre_overlap(): bytes of [@off, @end) that @i's ranges hold.
 */
uint64_t zm_pre_bytes(const struct zm_inode *i);
uint64_t zm_pre_need(const struct zmeta *m, const struct zm_inode *i,
		     uint64_t off, uint64_t end);
uint64_t zm_pre_overlap(const struct zm_inode *i, uint64_t off,
			uint64_t end);

/*
 * Repair helpers for fsck, which fixes the state in memory and then writes
 * it out as a new snapshot. zm_unmap() drops the mapping of [start, end) of
 * a regular file (zone byte counts follow); zm_dent_add() names @ino in
 * @dir without touching link counts or times. 0 or -ENOMEM / -EEXIST.
 */
int zm_unmap(struct zmeta *m, struct zm_inode *i, uint64_t start,
	     uint64_t end);
int zm_dent_add(struct zm_inode *dir, const char *name, uint64_t ino);
/* Remove entry @e from @dir (the inode it names is untouched). */
void zm_dent_del(struct zm_inode *dir, struct zm_dent *e);

/* Free an unlinked inode that is no longer busy (INODE_FREE's effect). */
void zm_inode_free(struct zmeta *m, struct zm_inode *i);

/* Find an xattr by name, or NULL. */
struct zm_xattr *zm_xattr_get(const struct zm_inode *i, const char *name,
			      size_t len);

/*
 * Snapshots. zm_snap_encode() calls @emit for every record of a snapshot
 * of @m (SNAP_BEGIN ... SNAP_END) in order; it stops at the first non-zero
 * return and returns it. A decoder is fed the same records in order.
 */
typedef int (*zm_emit_fn)(void *arg, uint16_t type, const void *payload,
			  uint32_t len);
int zm_snap_encode(const struct zmeta *m, zm_emit_fn emit, void *arg);

/*
 * Load a snapshot: feed each SNAP_* record to zm_snap_load() from
 * SNAP_BEGIN (on an empty zmeta) to SNAP_END, which finishes it (frees
 * orphans, checks counts). -EUCLEAN with @why on anything inconsistent.
 */
int zm_snap_load(struct zmeta *m, uint16_t type, const void *payload,
		 uint32_t len, char *why, size_t whylen);

/* Zone of device address @addr. */
static inline uint32_t zm_zone_of(const struct zmeta *m, uint64_t addr)
{
	return (uint32_t)(addr / m->zone_size);
}

#endif /* ZONEFUSE_META_H */
