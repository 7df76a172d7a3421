/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The zonefuse on-device format. docs/format.md describes the same bytes in
 * prose, with the crash-safety rules; change both together.
 *
 * All fields are little-endian and fixed-width; every structure carries a
 * CRC32C computed with its crc field zeroed. Device addresses and lengths
 * are in bytes. Times are signed nanoseconds since the Unix epoch.
 *
 * Layout:
 *   super zones (2)  zone-sized rings holding, each: the superblock at
 *                    offset 0 (one 4 KiB unit), then anchors, one per
 *                    I/O unit (the device's logical block). The newest
 *                    valid anchor of either zone names the metadata chain.
 *   metadata chain   zones taken from the common pool, linked by NEXT
 *                    records: a zone header, then records. The head zone
 *                    starts with a snapshot of all metadata; the records
 *                    after it are the log of changes since.
 *   data zones       file data only, written sequentially at the write
 *                    pointer. Data never moves because metadata changed.
 *                    The CRC32C of each of its blocks is in the metadata
 *                    (EXTENT, SNAP_CSUMS), checked by every read.
 */
#ifndef ZONEFUSE_FORMAT_H
#define ZONEFUSE_FORMAT_H

#include <stdint.h>

#define ZF_SB_MAGIC "ZONEFUSE"
/*
 * 2: EXTENT records carry the CRC32C of each data block, and snapshots
 * the checksums of every data zone (SNAP_CSUMS). 1 had no data checksums:
 * a version 1 file system is refused.
 */
#define ZF_FORMAT_VERSION 2u
#define ZF_SB_UNIT 4096u /* bytes the superblock occupies in its zone */

/*
 * Feature masks: a mount refuses bits it does not know.
 *
 * MIRROR: the metadata chain has a second copy (the mirror chain), written
 * in lockstep with it: the same bytes at the same offset of zones of its
 * own, so that any one damaged or unreadable block of the chain is read
 * from the other copy. Incompatible: a zonefuse that did not know it would
 * write one copy and leave the mirror behind, stale.
 */
#define ZF_FEATURE_INCOMPAT_MIRROR (1ull << 0)
#define ZF_FEATURE_INCOMPAT_SUPP ZF_FEATURE_INCOMPAT_MIRROR
#define ZF_FEATURE_COMPAT_SUPP 0ull

#define ZF_ROOT_INO 1ull
#define ZF_NAME_MAX 255u
#define ZF_SYMLINK_MAX 4095u
#define ZF_XATTR_NAME_MAX 255u
#define ZF_XATTR_VALUE_MAX 65536u
#define ZF_NO_ZONE UINT32_MAX

/* Superblock: written by mkfs at the start of each super zone. */
struct zf_super {
	char magic[8];		  /* 0: "ZONEFUSE" */
	uint32_t version;	  /* 8: ZF_FORMAT_VERSION */
	uint32_t sb_size;	  /* 12: sizeof(struct zf_super) */
	uint64_t feat_incompat;	  /* 16 */
	uint64_t feat_compat;	  /* 24 */
	uint8_t uuid[16];	  /* 32 */
	char label[64];		  /* 48: NUL-padded */
	uint64_t dev_size;	  /* 112: geometry mkfs saw ... */
	uint64_t zone_size;	  /* 120 */
	uint32_t nr_zones;	  /* 128 */
	uint32_t nr_conv;	  /* 132 */
	uint32_t block_size;	  /* 136: I/O unit of every metadata write */
	uint32_t reserve_zones;	  /* 140: kept free for reclaim */
	uint32_t super_zone[2];	  /* 144: the two super zones */
	uint32_t anchors_per_zone; /* 152: before switching super zone */
	uint32_t reserved0;	  /* 156 */
	int64_t mkfs_time;	  /* 160 */
	uint64_t sb_gen;	  /* 168: bumped each time a super zone is
				     rewritten; the copies differ only here
				     (and in label, between the two
				     rewrites of a label change) */
	uint8_t reserved[332];	  /* 176 */
	uint32_t crc;		  /* 508 */
};
_Static_assert(sizeof(struct zf_super) == 512, "zf_super size");

#define ZF_ANCHOR_MAGIC 0x4e41465au /* "ZFAN" */

/*
 * Anchor: names the metadata chain to replay. Written after the chain's
 * snapshot is durable; the newest valid one (highest seq) wins.
 */
struct zf_anchor {
	uint32_t magic;	     /* 0: ZF_ANCHOR_MAGIC */
	uint32_t crc;	     /* 4 */
	uint64_t seq;	     /* 8: anchor sequence, over both super zones */
	uint8_t uuid[16];    /* 16: the file system's */
	uint32_t chain_zone; /* 32: head zone of the chain */
	uint32_t chain_gen;  /* 36: generation of that chain */
	uint64_t snap_seq;   /* 40: record seq of the chain's SNAP_BEGIN */
	uint32_t mirror_zone; /* 48: head zone of the mirror chain
				 (ZF_NO_ZONE without MIRROR) */
	uint32_t flags;	      /* 52: ZF_ANCHOR_* */
	uint8_t reserved[8];  /* 56: zero */
};
_Static_assert(sizeof(struct zf_anchor) == 64, "zf_anchor size");

/*
 * The other super zone could not be written (a write or reset of it
 * failed) when this anchor was: the file system has one copy of its
 * superblock and anchors, this zone's. The next writable mount tries the
 * other zone again; fsck reports it until one succeeds.
 */
#define ZF_ANCHOR_OTHER_FAILED (1u << 0)
#define ZF_ANCHOR_FLAGS ZF_ANCHOR_OTHER_FAILED /* all that are known */

#define ZF_MZONE_MAGIC 0x5a4d465au /* "ZFMZ" */

/*
 * Header of each metadata chain zone, at its start (one I/O unit). The
 * two copies of a mirrored chain's zone differ here only in @copy and
 * @peer_zone; @prev_zone is the primary chain's in both, so that the
 * reader checks either copy against what the one NEXT record says.
 */
struct zf_mzone {
	uint32_t magic;	    /* 0: ZF_MZONE_MAGIC */
	uint32_t crc;	    /* 4 */
	uint8_t uuid[16];   /* 8 */
	uint32_t chain_gen; /* 24 */
	uint32_t index;	    /* 28: 0 for the head zone */
	uint32_t prev_zone; /* 32: ZF_NO_ZONE for the head */
	uint32_t copy;	    /* 36: 0 the primary chain, 1 the mirror */
	uint64_t first_seq; /* 40: seq of the first record in this zone */
	uint32_t peer_zone; /* 48: the other copy's zone (ZF_NO_ZONE: none) */
	uint8_t reserved[12]; /* 52 */
};
_Static_assert(sizeof(struct zf_mzone) == 64, "zf_mzone size");

/*
 * Record header. Records follow each other 8-byte aligned. A header of all
 * zeros is padding: the reader skips to the next I/O unit. A record is
 * accepted only if its CRC holds, its chain_gen is the chain's and its seq
 * is exactly one more than the previous record's; the first record that
 * fails ends the log (a torn or stale tail).
 */
struct zf_rec_hdr {
	uint32_t crc;	    /* 0: over header (crc zeroed) and payload */
	uint16_t type;	    /* 4: enum zf_rec_type */
	uint16_t flags;	    /* 6: ZF_REC_F_* */
	uint32_t len;	    /* 8: payload bytes, <= ZF_REC_MAX */
	uint32_t chain_gen; /* 12 */
	uint64_t seq;	    /* 16 */
};
_Static_assert(sizeof(struct zf_rec_hdr) == 24, "zf_rec_hdr size");

/*
 * The first record of each commit (one write of the log, made durable by
 * the flush after it) carries ZF_REC_F_COMMIT: a record with it proves
 * that the commit before it was durable, data and records, since the
 * journal writes a commit only after the previous one's flush returned.
 * ZF_REC_F_UNFLUSHED (with ZF_REC_F_COMMIT) says that no flush came
 * between the data that the commit's records name and the records: the
 * commit holds only records that name nothing written before them, and
 * EXTENT and EXTENT_MOVE records whose data is in sequential zones, where
 * the write pointer says whether it reached the device. Replay keeps such
 * a commit aside until the next commit starts; if it is the last one and
 * its data ends above a write pointer, the power went before its flush
 * returned: nobody was told it was durable, and it is not replayed.
 * Snapshot records carry no flag; unknown flags are refused.
 */
#define ZF_REC_F_COMMIT (1u << 0)
#define ZF_REC_F_UNFLUSHED (1u << 1)
#define ZF_REC_FLAGS (ZF_REC_F_COMMIT | ZF_REC_F_UNFLUSHED)

#define ZF_REC_ALIGN 8u
/* Largest payload: a 64 KiB xattr value with its name fits in one. */
#define ZF_REC_MAX (72u << 10)

enum zf_rec_type {
	ZF_REC_CREATE = 1,	/* struct zf_rec_create + name + target */
	ZF_REC_LINK = 2,	/* struct zf_rec_link + name */
	ZF_REC_UNLINK = 3,	/* struct zf_rec_link + name (unlink, rmdir) */
	ZF_REC_RENAME = 4,	/* struct zf_rec_rename + names */
	ZF_REC_SETATTR = 5,	/* struct zf_rec_setattr */
	ZF_REC_XATTR_SET = 6,	/* struct zf_rec_xattr + name + value */
	ZF_REC_XATTR_DEL = 7,	/* struct zf_rec_xattr + name */
	ZF_REC_EXTENT = 8,	/* struct zf_rec_extent + block CRCs */
	ZF_REC_INODE_FREE = 9,	/* struct zf_rec_ino: last close of an
				   unlinked inode */
	ZF_REC_ZONE_RESET = 10, /* struct zf_rec_zone */
	ZF_REC_ZONE_FINISH = 11, /* struct zf_rec_zone */
	ZF_REC_COUNTERS = 12,	/* struct zf_rec_counters */
	ZF_REC_NEXT = 13,	/* struct zf_rec_next: chain continues */
	ZF_REC_UNMOUNT = 14,	/* empty: clean unmount */
	ZF_REC_EXTENT_MOVE = 15, /* struct zf_rec_extent_move (reclaim) */
	ZF_REC_PREALLOC = 16,	/* struct zf_rec_prealloc (fallocate) */

	ZF_REC_SNAP_BEGIN = 32, /* struct zf_rec_snap_begin */
	ZF_REC_SNAP_INODE = 33, /* struct zf_rec_snap_inode + symlink */
	ZF_REC_SNAP_DENTS = 34, /* struct zf_rec_snap_list + dents */
	ZF_REC_SNAP_EXTENTS = 35, /* struct zf_rec_snap_list + extents */
	ZF_REC_SNAP_XATTRS = 36, /* struct zf_rec_snap_list + xattrs */
	ZF_REC_SNAP_ZONES = 37, /* struct zf_rec_snap_zones + zones */
	ZF_REC_SNAP_END = 38,	/* struct zf_rec_snap_end */
	ZF_REC_SNAP_CSUMS = 39, /* struct zf_rec_snap_csums + block CRCs */
	ZF_REC_SNAP_PREALLOC = 40, /* struct zf_rec_snap_list + ranges */
};

/* Inode attributes as every record that carries them spells them. */
struct zf_dattr {
	uint64_t ino;	/* 0 */
	uint32_t mode;	/* 8: type and permission bits, as st_mode */
	uint32_t uid;	/* 12 */
	uint32_t gid;	/* 16 */
	uint32_t nlink; /* 20 */
	uint64_t size;	/* 24 */
	int64_t atime;	/* 32 */
	int64_t mtime;	/* 40 */
	int64_t ctime;	/* 48 */
	int64_t btime;	/* 56: creation */
};
_Static_assert(sizeof(struct zf_dattr) == 64, "zf_dattr size");

/*
 * CREATE: a new inode @attr.ino (regular file, directory, symlink, fifo or
 * socket) named @name in @parent; @attr.ctime is also the parent's new
 * mtime and ctime. Followed by name (name_len bytes) and, for a symlink,
 * the target (target_len bytes).
 */
struct zf_rec_create {
	uint64_t parent;     /* 0 */
	struct zf_dattr attr; /* 8 */
	uint32_t rdev;	     /* 72 */
	uint16_t name_len;   /* 76 */
	uint16_t target_len; /* 78 */
};
_Static_assert(sizeof(struct zf_rec_create) == 80, "zf_rec_create size");

/*
 * LINK adds name -> @ino in @parent; UNLINK removes it (@ino is what the
 * name must point to). @time is the new ctime of @ino and the new mtime
 * and ctime of @parent. An inode whose link count drops to zero is freed
 * at replay (no one can have it open then).
 */
struct zf_rec_link {
	uint64_t parent;   /* 0 */
	uint64_t ino;	   /* 8 */
	int64_t time;	   /* 16 */
	uint16_t name_len; /* 24 */
	uint8_t reserved[6]; /* 26 */
};
_Static_assert(sizeof(struct zf_rec_link) == 32, "zf_rec_link size");

#define ZF_RENAME_NOREPLACE (1u << 0)
#define ZF_RENAME_EXCHANGE (1u << 1)

/*
 * RENAME: @src_name in @src_parent (inode @ino) becomes @dst_name in
 * @dst_parent. @victim is the inode @dst_name named before (0 if none): with
 * EXCHANGE it takes @src_name; otherwise it loses a link. One record, so a
 * rename is all or nothing. Followed by src name then dst name.
 */
struct zf_rec_rename {
	uint64_t src_parent; /* 0 */
	uint64_t dst_parent; /* 8 */
	uint64_t ino;	     /* 16 */
	uint64_t victim;     /* 24 */
	int64_t time;	     /* 32 */
	uint32_t flags;	     /* 40: ZF_RENAME_* */
	uint16_t src_len;    /* 44 */
	uint16_t dst_len;    /* 46 */
};
_Static_assert(sizeof(struct zf_rec_rename) == 48, "zf_rec_rename size");

#define ZF_ATTR_MODE (1u << 0)
#define ZF_ATTR_UID (1u << 1)
#define ZF_ATTR_GID (1u << 2)
#define ZF_ATTR_SIZE (1u << 3)
#define ZF_ATTR_ATIME (1u << 4)
#define ZF_ATTR_MTIME (1u << 5)
#define ZF_ATTR_CTIME (1u << 6)
#define ZF_ATTR_ALL ((1u << 7) - 1)

/*
 * SETATTR: set the fields of @attr that @valid names (ZF_ATTR_*). A
 * smaller size drops the extents (and parts) above it; a larger one leaves
 * a hole.
 */
struct zf_rec_setattr {
	struct zf_dattr attr; /* 0: attr.ino names the inode */
	uint32_t valid;	      /* 64 */
	uint32_t reserved;    /* 68 */
};
_Static_assert(sizeof(struct zf_rec_setattr) == 72, "zf_rec_setattr size");

/* XATTR_SET / XATTR_DEL, followed by name, then (SET) value. */
struct zf_rec_xattr {
	uint64_t ino;	    /* 0 */
	int64_t ctime;	    /* 8 */
	uint32_t value_len; /* 16 */
	uint16_t name_len;  /* 20 */
	uint16_t reserved;  /* 22 */
};
_Static_assert(sizeof(struct zf_rec_xattr) == 24, "zf_rec_xattr size");

/*
 * EXTENT: @len bytes of @ino from file offset @foff are on the device at
 * @addr (one zone; padded there to a block). Replaces whatever the range
 * mapped to. The size becomes max(size, @size); @mtime is the file's.
 * Written only after the data itself is durable. Followed by the CRC32C
 * (le32) of each device block the range touches, from the block holding
 * @addr: ZF_CSUMS(@addr, @len, block size) of them, each over the whole
 * block as written (padding included).
 */
struct zf_rec_extent {
	uint64_t ino;  /* 0 */
	uint64_t foff; /* 8 */
	uint64_t addr; /* 16 */
	uint64_t len;  /* 24 */
	uint64_t size; /* 32 */
	int64_t mtime; /* 40 */
};
_Static_assert(sizeof(struct zf_rec_extent) == 48, "zf_rec_extent size");

/* Blocks of @bs bytes that [@addr, @addr + @len) touches. */
#define ZF_CSUMS(addr, len, bs)                                               \
	((uint32_t)((((addr) + (len) + (bs)-1) / (bs)) - (addr) / (bs)))

/*
 * EXTENT_MOVE copies blocks whole (reclaim reads and writes whole blocks,
 * and both addresses sit at the same offset in a block), so the copy's
 * checksums are the original's: the record carries none.
 */

/*
 * EXTENT_MOVE: reclaim copied @len bytes from @old_addr to @new_addr. Every
 * extent piece of @ino that still maps @old_addr.. now maps the copy; a
 * piece the file no longer maps is left alone.
 */
struct zf_rec_extent_move {
	uint64_t ino;	   /* 0 */
	uint64_t old_addr; /* 8 */
	uint64_t new_addr; /* 16 */
	uint64_t len;	   /* 24 */
};
_Static_assert(sizeof(struct zf_rec_extent_move) == 32,
	       "zf_rec_extent_move size");

/* The largest file: offsets and sizes beyond it are refused (EFBIG). */
#define ZF_MAX_FILE_SIZE (1ull << 50)

/*
 * PREALLOC (fallocate): the blocks of [@off, @off + @len) of @ino that no
 * extent maps and no earlier PREALLOC reserved are reserved: counted as
 * used space, yet unwritten (they read as zeros). @off and @len are
 * multiples of the block size, @off + @len <= ZF_MAX_FILE_SIZE. The size
 * becomes max(size, @size); @ctime is the file's. A reserved block stops
 * being reserved when an EXTENT maps any byte of it, when a SETATTR cuts
 * the size to at most its start (a size not above the file's current
 * one: ext4's truncate releases blocks past EOF), and with its inode.
 */
struct zf_rec_prealloc {
	uint64_t ino;  /* 0 */
	uint64_t off;  /* 8 */
	uint64_t len;  /* 16 */
	uint64_t size; /* 24 */
	int64_t ctime; /* 32 */
};
_Static_assert(sizeof(struct zf_rec_prealloc) == 40, "zf_rec_prealloc size");

struct zf_rec_ino {
	uint64_t ino; /* 0 */
};
_Static_assert(sizeof(struct zf_rec_ino) == 8, "zf_rec_ino size");

/* ZONE_RESET (the zone was reset: @resets is its new count), ZONE_FINISH. */
struct zf_rec_zone {
	uint32_t zone;	   /* 0 */
	uint32_t reserved; /* 4 */
	uint64_t resets;   /* 8 */
};
_Static_assert(sizeof(struct zf_rec_zone) == 16, "zf_rec_zone size");

/* Lifetime counters, absolute: the last one replayed wins. */
struct zf_rec_counters {
	uint64_t host_bytes;   /* 0: bytes applications wrote */
	uint64_t device_bytes; /* 8: bytes written to the device, all kinds */
	uint64_t gc_bytes;     /* 16: bytes reclaim copied */
	uint64_t meta_bytes;   /* 24: metadata bytes written */
};
_Static_assert(sizeof(struct zf_rec_counters) == 32, "zf_rec_counters size");

/*
 * NEXT: the chain continues in @zone (whose header has index + 1), its
 * mirror in @mirror_zone (ZF_NO_ZONE without MIRROR).
 */
struct zf_rec_next {
	uint32_t zone;	      /* 0 */
	uint32_t mirror_zone; /* 4 */
};
_Static_assert(sizeof(struct zf_rec_next) == 8, "zf_rec_next size");

/* ---- snapshot records -------------------------------------------------- */

struct zf_rec_snap_begin {
	uint64_t next_ino;   /* 0: next inode number to hand out */
	uint64_t nr_inodes;  /* 8 */
	uint32_t nr_zones;   /* 16 */
	uint32_t reserved;   /* 20 */
	struct zf_rec_counters counters; /* 24 */
};
_Static_assert(sizeof(struct zf_rec_snap_begin) == 56,
	       "zf_rec_snap_begin size");

/* One inode. Followed by the symlink target (target_len bytes). */
struct zf_rec_snap_inode {
	struct zf_dattr attr; /* 0 */
	uint64_t parent;      /* 64: a directory's parent (itself for root) */
	uint32_t rdev;	      /* 72 */
	uint16_t target_len;  /* 76 */
	uint16_t reserved;    /* 78 */
};
_Static_assert(sizeof(struct zf_rec_snap_inode) == 80,
	       "zf_rec_snap_inode size");

/*
 * Header of SNAP_DENTS, SNAP_EXTENTS, SNAP_XATTRS, SNAP_PREALLOC: @count
 * items follow.
 */
struct zf_rec_snap_list {
	uint64_t ino;	/* 0 */
	uint32_t count; /* 8 */
	uint32_t reserved; /* 12 */
};
_Static_assert(sizeof(struct zf_rec_snap_list) == 16, "zf_rec_snap_list size");

/* SNAP_DENTS item, followed by the name, then padding to 8 bytes. */
struct zf_snap_dent {
	uint64_t ino;	   /* 0 */
	uint16_t name_len; /* 8 */
	uint8_t reserved[6]; /* 10 */
};
_Static_assert(sizeof(struct zf_snap_dent) == 16, "zf_snap_dent size");

/* SNAP_EXTENTS item. */
struct zf_snap_extent {
	uint64_t foff; /* 0 */
	uint64_t addr; /* 8 */
	uint64_t len;  /* 16 */
};
_Static_assert(sizeof(struct zf_snap_extent) == 24, "zf_snap_extent size");

/*
 * SNAP_PREALLOC item: a reserved range of the file (PREALLOC), block
 * aligned; a file's ranges are sorted, disjoint and not adjacent.
 */
struct zf_snap_range {
	uint64_t off; /* 0 */
	uint64_t len; /* 8 */
};
_Static_assert(sizeof(struct zf_snap_range) == 16, "zf_snap_range size");

/* SNAP_XATTRS item, followed by name and value, then padding to 8. */
struct zf_snap_xattr {
	uint32_t value_len; /* 0 */
	uint16_t name_len;  /* 4 */
	uint16_t reserved;  /* 6 */
};
_Static_assert(sizeof(struct zf_snap_xattr) == 8, "zf_snap_xattr size");

/* SNAP_ZONES: @count zones from @first, one item each. */
struct zf_rec_snap_zones {
	uint32_t first; /* 0 */
	uint32_t count; /* 4 */
};
_Static_assert(sizeof(struct zf_rec_snap_zones) == 8,
	       "zf_rec_snap_zones size");

struct zf_snap_zone {
	uint64_t resets; /* 0 */
};
_Static_assert(sizeof(struct zf_snap_zone) == 8, "zf_snap_zone size");

/*
 * SNAP_CSUMS: the CRC32C (le32) of @count blocks of zone @zone from its
 * block @first: the checksums of the zone's written blocks. Written for
 * every zone that holds file data, after SNAP_ZONES.
 */
struct zf_rec_snap_csums {
	uint32_t zone;	   /* 0 */
	uint32_t first;	   /* 4: block index in the zone */
	uint32_t count;	   /* 8 */
	uint32_t reserved; /* 12 */
};
_Static_assert(sizeof(struct zf_rec_snap_csums) == 16,
	       "zf_rec_snap_csums size");

/* SNAP_END: closes a snapshot; @nr_records counts SNAP_BEGIN..SNAP_END. */
struct zf_rec_snap_end {
	uint64_t nr_records; /* 0 */
};
_Static_assert(sizeof(struct zf_rec_snap_end) == 8, "zf_rec_snap_end size");

#endif /* ZONEFUSE_FORMAT_H */
