/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * zfs - the file system, as a library: mount a device, then operate on it
 * by inode number, as the FUSE low-level API does. The FUSE edge
 * (fuse_ll.c) is a thin layer over this; the tools and the crash tests
 * drive it directly, without a mount.
 *
 * Every function returns 0 (or a byte count) or a negative errno, with the
 * errno a POSIX file system gives for the case.
 */
#ifndef ZONEFUSE_ZFS_H
#define ZONEFUSE_ZFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>

#include "zonefuse/jrnl.h"
#include "zonefuse/zdev.h"

struct zfs;

struct zfs_opts {
	bool rdonly;
	uint32_t commit_ms;	 /* journal commit interval (0: default 5 s) */
	uint64_t stage_bytes;	 /* DRAM for staged writes (0: default) */
	uint32_t wb_threads;	 /* device writers (0: default) */
	bool no_reclaim_thread;	 /* tests: reset dead zones only on demand */
	bool no_lock;		 /* read-only tools: do not lock the device
				    (see the state as last committed) */
	bool defer_threads;	 /* start threads with zfs_start() (a daemon
				    forks after mounting) */
	bool salvage;		 /* fsck --repair: see JRNL_SALVAGE */
	bool no_check;		 /* fsck: mount what replays, damaged or not,
				    and let the caller run zfs_check() (a
				    mount refuses damage, or with rdonly
				    serves it with a warning) */
	bool wait_busy;		 /* wait for a device another process is
				    releasing (ZDEV_WAIT): the tools' way */
};

#define ZFS_DEFAULT_COMMIT_MS 5000u
/* DRAM for staged writes when not given: docs/design.md says why 64 MiB. */
#define ZFS_DEFAULT_STAGE_BYTES (64ull << 20)
#define ZFS_CHUNK (1u << 20) /* staging chunk: also the largest write */

/* Who is asking: from the FUSE request, or made up by a tool. */
struct zfs_ctx {
	uint32_t uid, gid;
	uint32_t umask;
	uint32_t ngroups;
	uint32_t groups[32];
};

/* ---- making and checking ---------------------------------------------- */

struct zfs_mkfs_opts {
	const char *label; /* NULL or "": none */
	const uint8_t *uuid; /* 16 bytes; NULL: a random (version 4) one */
	int reserve_pct; /* share of zones kept free; < 0: the default */
	bool force;	 /* overwrite an existing file system: zonefuse's,
			    or another that libblkid finds (fsprobe.h) */
	bool wait_busy;	 /* see zfs_opts.wait_busy */
	/*
	 * Copies of the metadata chain: 2 (a mirror chain), 1, or 0 for the
	 * default: 2, or 1 on a device that allows fewer than 3 active or
	 * open zones.
	 */
	unsigned int copies;
	/* Called while zones are reset (done of total); may be NULL. */
	void (*progress)(void *arg, uint32_t done, uint32_t total);
	void *arg;
};

/* Default reserve: 1% of the zones, at least ZFS_MIN_RESERVE. */
#define ZFS_MIN_RESERVE 3u
#define ZFS_MIN_ZONES 8u

struct zfs_mkfs_info {
	uint32_t nr_zones, nr_conv, block_size, reserve_zones;
	uint64_t zone_size, zone_capacity; /* capacity of the first seq zone */
	uint64_t usable_bytes;
	uint32_t super_zone[2];
	uint32_t copies; /* of the metadata chain */
	uint8_t uuid[16];
};

/*
 * Make a file system on @path: refuses one that already holds zonefuse
 * or another file system, a swap area, a RAID or LVM member or a
 * partition table that libblkid knows (-EEXIST naming it, unless force), a device too small or with zones too small
 * (-ENOSPC), or whose zone limits are too tight (-ENOTSUP: one active
 * zone, or two with copies 2); -EINVAL for copies other than 0-2, and
 * zfs_label_check()'s errors for the label; resets every written zone, writes the superblocks, the root
 * directory and the first journal chain.
 */
int zfs_mkfs(const char *path, const struct zfs_mkfs_opts *o,
	     struct zfs_mkfs_info *info, char *err, size_t errlen);

/* ---- identity ----------------------------------------------------------- */

/* Bytes of a label: the superblock's field less its NUL. */
#define ZFS_LABEL_MAX 63u

struct zfs_ident {
	char label[ZFS_LABEL_MAX + 1]; /* NUL-terminated; "" for none */
	uint8_t uuid[16];
};

/*
 * Is @label one zonefuse takes (mkfs --label, zfs_set_label())? Up to
 * ZFS_LABEL_MAX bytes (-ENAMETOOLONG), valid UTF-8 with no control
 * character and no '/' (-EINVAL); "" clears it. @err says what is wrong.
 */
int zfs_label_check(const char *label, char *err, size_t errlen);

/*
 * The label and UUID of the file system on @path, from its superblock,
 * without a lock (a mounted one's too). jrnl_read_super()'s errors:
 * -EMEDIUMTYPE when it holds none.
 */
int zfs_read_ident(const char *path, struct zfs_ident *id, char *err,
		   size_t errlen);

/*
 * Change the label of a writably mounted file system: both superblock
 * copies, each rewritten whole with its anchor (jrnl_set_label()). The
 * checks of zfs_label_check(); -EROFS when read-only; an I/O errno, then
 * sticky as any failed metadata write.
 */
int zfs_set_label(struct zfs *fs, const char *label, char *err,
		  size_t errlen);

/* fsck(8) exit codes. */
#define ZFS_FSCK_OK 0
#define ZFS_FSCK_FIXED 1
#define ZFS_FSCK_UNFIXED 4
#define ZFS_FSCK_OPERROR 8
#define ZFS_FSCK_USAGE 16

/* zfs_fsck() flags. */
#define ZFS_FSCK_REPAIR 1u /* fix what can be fixed */
#define ZFS_FSCK_DATA 2u   /* also read every data block (zfs_scrub_all()) */

struct zfs_fsck_result {
	uint32_t errors;   /* problems found */
	uint32_t fixed;	   /* of them repaired */
	uint32_t copies_bad; /* of them, metadata blocks a copy covers (a
				superblock copy, an anchor): a writable mount
				rewrites them */
	uint64_t data_bytes; /* ZFS_FSCK_DATA: device bytes read and checked */
	uint64_t data_files, damaged_files;
	uint32_t warnings; /* findings that are not errors: data the device
			      lost or froze (a read-only or offline zone) */
	uint64_t inodes, dirs, extents;
	uint64_t log_records;
	bool clean_tail;
	char stop[512];	   /* where the log ended and why */
};

enum zfs_severity {
	ZFS_SEV_ERROR,	 /* a problem: counts in errors (and fixed) */
	ZFS_SEV_WARNING, /* counts in warnings: the device lost or froze data */
	ZFS_SEV_NOTE,	 /* neither: normal, or more about one before */
};

/* Which of struct zfs_finding's objects are set. */
#define ZFS_FIND_INO 0x01u   /* ino */
#define ZFS_FIND_INOS 0x02u  /* inos[0..n_inos) */
#define ZFS_FIND_DIR 0x04u   /* dir and name: an entry */
#define ZFS_FIND_PATH 0x08u  /* path */
#define ZFS_FIND_ZONE 0x10u  /* zone */
#define ZFS_FIND_ADDR 0x20u  /* addr */
#define ZFS_FIND_RANGE 0x40u /* foff and len */
#define ZFS_FIND_SEQ 0x80u   /* seq */

/*
 * One finding of fsck or scrub: a stable @code (docs/usage.md lists them
 * all: a finding's code never changes, a new kind of finding gets a new
 * one), what it concerns (the members @has names) and the line a person
 * reads (@text, no newline). Strings are the caller's for the call only.
 */
struct zfs_finding {
	const char *code;
	enum zfs_severity severity;
	bool fixed; /* a problem a repair fixed */
	unsigned int has;
	uint64_t ino;	      /* the inode */
	const uint64_t *inos; /* several inodes (the first few) */
	uint32_t n_inos;
	uint64_t dir;	  /* the directory holding the entry @name */
	const char *name; /* bytes, not always UTF-8 */
	const char *path; /* from the root (or a mount point): bytes */
	uint32_t zone;
	uint64_t addr;	    /* a byte address on the device */
	uint64_t foff, len; /* a range of the file's bytes */
	uint64_t seq;	    /* a journal record's sequence number */
	const char *text;
};

typedef void zfs_finding_fn(void *arg, const struct zfs_finding *f);

/*
 * Check the file system on @path; with ZFS_FSCK_REPAIR, fix what can be
 * fixed without losing data that can be proven good, and say what was
 * dropped; with ZFS_FSCK_DATA, read every data block too and report the
 * damaged files (no copy to repair them from: errors left). Each finding
 * goes to @say. Returns an fsck(8) exit code; ZFS_FSCK_OPERROR with @err
 * when the check could not run.
 */
int zfs_fsck(const char *path, unsigned int flags, zfs_finding_fn *say,
	     void *arg, struct zfs_fsck_result *res, char *err, size_t errlen);

/*
 * How far a check has come, as e2fsck -C reports it: @pass 1 is the
 * metadata (replay and check: @done 0, then 1 of @total 1), pass 2 the
 * data (ZFS_FSCK_DATA: files read of the files that have data). A repair
 * that needs a second run starts again at pass 1.
 */
typedef void zfs_progress_fn(void *arg, unsigned int pass, uint64_t done,
			     uint64_t total);

/* zfs_fsck() that also reports its progress to @progress (with @arg). */
int zfs_fsck_progress(const char *path, unsigned int flags,
		      zfs_finding_fn *say, zfs_progress_fn *progress, void *arg,
		      struct zfs_fsck_result *res, char *err, size_t errlen);

/*
 * Open a device (zdev_open) and mount the file system on it. The replayed
 * metadata goes through the check fsck runs; damage (a journal damaged in
 * the middle, a problem fsck would report) fails a writable mount with
 * -EUCLEAN and the problems logged, and is served with a warning by a
 * read-only one (unless opts.no_check).
 */
int zfs_mount(const char *path, const struct zfs_opts *opts,
	      struct zfs **fsp, char *err, size_t errlen);

/* Start the writeback and background threads (opts.defer_threads). */
int zfs_start(struct zfs *fs);

/*
 * Write everything out, commit, mark the journal clean and close.
 * Returns the first error met (the device is closed anyway).
 */
int zfs_unmount(struct zfs *fs);

/*
 * Tests: stop as a crash would, writing nothing more: staged data and
 * uncommitted records are lost, the device is closed without a flush.
 */
void zfs_crash(struct zfs *fs);

/* The device under the file system. */
struct zdev *zfs_dev(struct zfs *fs);

/* ---- namespace (inode numbers are the kernel's node ids) ------------- */

/* Fills *@st; counts a kernel lookup (zfs_forget() gives it back). */
int zfs_lookup(struct zfs *fs, uint64_t parent, const char *name,
	       struct stat *st);
void zfs_forget(struct zfs *fs, uint64_t ino, uint64_t nlookup);
int zfs_getattr(struct zfs *fs, uint64_t ino, struct stat *st);

/* What zfs_setattr() changes (FUSE_SET_ATTR_* equivalents). */
#define ZFS_SET_MODE (1u << 0)
#define ZFS_SET_UID (1u << 1)
#define ZFS_SET_GID (1u << 2)
#define ZFS_SET_SIZE (1u << 3)
#define ZFS_SET_ATIME (1u << 4)
#define ZFS_SET_MTIME (1u << 5)
#define ZFS_SET_ATIME_NOW (1u << 7)
#define ZFS_SET_MTIME_NOW (1u << 8)
#define ZFS_SET_CTIME (1u << 10)
/* Truncate through an open file: no write permission check. */
#define ZFS_SET_HAVE_FH (1u << 16)

int zfs_setattr(struct zfs *fs, const struct zfs_ctx *ctx, uint64_t ino,
		const struct stat *attr, unsigned int to_set,
		struct stat *st);

/*
 * Create a regular file, fifo, socket or (root only, else -EPERM) a
 * device node with @rdev, the kernel's 32-bit encoding (FUSE's).
 */
int zfs_mknod(struct zfs *fs, const struct zfs_ctx *ctx, uint64_t parent,
	      const char *name, mode_t mode, dev_t rdev, struct stat *st);
int zfs_mkdir(struct zfs *fs, const struct zfs_ctx *ctx, uint64_t parent,
	      const char *name, mode_t mode, struct stat *st);
int zfs_symlink(struct zfs *fs, const struct zfs_ctx *ctx, uint64_t parent,
		const char *name, const char *target, struct stat *st);
int zfs_link(struct zfs *fs, const struct zfs_ctx *ctx, uint64_t ino,
	     uint64_t newparent, const char *newname, struct stat *st);
int zfs_unlink(struct zfs *fs, const struct zfs_ctx *ctx, uint64_t parent,
	       const char *name);
int zfs_rmdir(struct zfs *fs, const struct zfs_ctx *ctx, uint64_t parent,
	      const char *name);

#define ZFS_RENAME_NOREPLACE (1u << 0)
#define ZFS_RENAME_EXCHANGE (1u << 1)
int zfs_rename(struct zfs *fs, const struct zfs_ctx *ctx, uint64_t parent,
	       const char *name, uint64_t newparent, const char *newname,
	       unsigned int flags);
/* Copies the target (NUL-terminated) into @buf; returns its length. */
int zfs_readlink(struct zfs *fs, uint64_t ino, char *buf, size_t size);

/* Permission check as access(2) (mask of R_OK, W_OK, X_OK). */
int zfs_access(struct zfs *fs, const struct zfs_ctx *ctx, uint64_t ino,
	       int mask);

/* ---- files ----------------------------------------------------------- */

/*
 * How the kernel may cache the data of a file it opens, decided by
 * zfs_open() and zfs_create() for a caller that has a page cache (the FUSE
 * edge), and handed back to zfs_release() with the handle:
 * - ZFS_OPEN_NOCACHE: the handle bypasses the page cache (FUSE's
 *   FOPEN_DIRECT_IO). A write-only open of a file no one else has open
 *   gets it: a checkpoint streams from the writer's memory to the staging
 *   buffers with one copy fewer, is not cached on its way to the device,
 *   and an rm of it has no cached pages to drop. While such a handle is
 *   open, every other open of the file gets it too, so that no cached copy
 *   of the file exists beside the uncached writes.
 * - ZFS_OPEN_DROPCACHE: the page cache may hold data that uncached writes
 *   have since replaced; the kernel must drop it at this open.
 * Neither: the page cache is kept across opens (a dataloader re-reading a
 * file reads memory).
 */
#define ZFS_OPEN_NOCACHE (1u << 0)
#define ZFS_OPEN_DROPCACHE (1u << 1)

/*
 * In zfs_open()'s flags: the open is execve(2)'s (the kernel's
 * __FMODE_EXEC, which FUSE passes in OPEN's flags; open(2) cannot set it).
 * It needs execute permission, not read.
 */
#define ZFS_O_EXEC 040

/*
 * Open @ino with open(2) @flags (O_TRUNC truncates; permissions are
 * checked). With @cachep, *@cachep gets the ZFS_OPEN_* caching of the
 * handle; without, the caller keeps no page cache and the handle counts
 * as cached. Every open is paired with zfs_release() and that caching.
 */
int zfs_open(struct zfs *fs, const struct zfs_ctx *ctx, uint64_t ino,
	     int flags, unsigned int *cachep);
/* Create and open @name in @parent (O_EXCL honoured); @cachep as above. */
int zfs_create(struct zfs *fs, const struct zfs_ctx *ctx, uint64_t parent,
	       const char *name, mode_t mode, int flags, struct stat *st,
	       unsigned int *cachep);
int zfs_release(struct zfs *fs, uint64_t ino, unsigned int cache);

/*
 * Read up to @size bytes at @off into @buf; returns the count (0: EOF).
 * Any buffer will do; one from zfs_read_buf() saves a copy (the device
 * reads straight into it).
 */
ssize_t zfs_read(struct zfs *fs, uint64_t ino, void *buf, size_t size,
		 off_t off);
/*
 * A buffer of @size bytes aligned for the device, or NULL (ENOMEM). Large
 * ones are reused from one read to the next, so give it back with
 * zfs_read_buf_put() and the same @size, never free().
 */
void *zfs_read_buf(struct zfs *fs, size_t size);
void zfs_read_buf_put(struct zfs *fs, void *buf, size_t size);
/*
 * Write @size bytes at @off (@append: at the end, O_APPEND). Returns the
 * count; *@newoff (if not NULL) gets the offset after the write.
 */
ssize_t zfs_write(struct zfs *fs, const struct zfs_ctx *ctx, uint64_t ino,
		  const void *buf, size_t size, off_t off, bool append);
/* Make @ino's data and metadata durable. */
int zfs_fsync(struct zfs *fs, uint64_t ino, bool datasync);
/* Make everything durable. */
int zfs_sync(struct zfs *fs);

/* lseek for SEEK_DATA / SEEK_HOLE; *@res gets the offset. */
int zfs_lseek(struct zfs *fs, uint64_t ino, off_t off, int whence,
	      off_t *res);
/* fallocate: mode 0 and FALLOC_FL_KEEP_SIZE; others -EOPNOTSUPP. */
int zfs_fallocate(struct zfs *fs, const struct zfs_ctx *ctx, uint64_t ino,
		  int mode, off_t off, off_t len);

/* ---- directories ------------------------------------------------------ */

/*
 * Call @fill for each entry after position @off ("." is 1, ".." 2, then
 * each entry's cookie, stable while entries come and go). @fill returns
 * non-zero to stop (the buffer is full). With @plus, each entry found is
 * also looked up (the kernel keeps a reference).
 */
typedef int (*zfs_fill_fn)(void *arg, const char *name, const struct stat *st,
			   off_t next);
int zfs_readdir(struct zfs *fs, uint64_t ino, off_t off, bool plus,
		zfs_fill_fn fill, void *arg);
int zfs_opendir(struct zfs *fs, const struct zfs_ctx *ctx, uint64_t ino);
int zfs_fsyncdir(struct zfs *fs, uint64_t ino);

/* ---- extended attributes (user.* only) -------------------------------- */

#define ZFS_XATTR_CREATE 1
#define ZFS_XATTR_REPLACE 2
int zfs_setxattr(struct zfs *fs, const struct zfs_ctx *ctx, uint64_t ino,
		 const char *name, const void *value, size_t size, int flags);
/*
 * Returns the value size; with @size 0 only the size. -ERANGE if small.
 * @ctx: who asks (NULL: the file system itself).
 */
ssize_t zfs_getxattr(struct zfs *fs, const struct zfs_ctx *ctx, uint64_t ino,
		     const char *name, void *value, size_t size);
ssize_t zfs_listxattr(struct zfs *fs, uint64_t ino, char *list, size_t size);
int zfs_removexattr(struct zfs *fs, const struct zfs_ctx *ctx, uint64_t ino,
		    const char *name);

/* The virtual attributes: not listed, not settable. */
#define ZFS_XATTR_EXTENTS "user.zonefuse.extents"
#define ZFS_XATTR_STATS "user.zonefuse.stats"
/*
 * Reading it scrubs the file (zfs_scrub_file()): "bytes N" then one line
 * per damaged range, "offset O length L zone Z checksum|unreadable", and
 * "more" when there were more than ZFS_SCRUB_BAD. On the root directory,
 * root reading it scrubs the metadata (zfs_scrub_meta()): "copies N",
 * then a "damage TEXT" line per finding, then "rewritten" and "after TEXT"
 * per finding left after the rewrite, or "left TEXT" (why nothing was
 * rewritten); others get EPERM there.
 */
#define ZFS_XATTR_SCRUB "user.zonefuse.scrub"

/* ---- the whole file system ------------------------------------------- */

int zfs_statfs(struct zfs *fs, struct statvfs *st);

#define ZFS_STATS_CHAIN 16u

struct zfs_stats {
	uint8_t uuid[16]; /* the file system's identity (superblock) */
	char label[ZFS_LABEL_MAX + 1]; /* bytes, NUL-terminated; "" for none */
	uint64_t capacity_bytes, used_bytes, free_bytes, reclaimable_bytes;
	uint64_t files, directories;
	uint32_t zones_total, zones_empty, zones_open, zones_closed;
	uint32_t zones_full, zones_meta, zones_super, zones_bad;
	uint32_t meta_zones;
	uint64_t snap_seq, last_seq, durable_seq;
	uint64_t host_bytes_written, device_bytes_written, gc_bytes_written;
	uint64_t meta_bytes_written;
	uint64_t device_bytes_read; /* by this mount (data, journal, reclaim) */
	uint64_t checksum_errors;   /* data blocks read that failed their
				       checksum, by this mount */
	/*
	 * Data blocks written by this mount whose checksum their write()
	 * took (the bytes in the cache, off the fsync's path) / the
	 * writeback took.
	 */
	uint64_t checksums_at_write, checksums_at_writeback;
	/*
	 * Writes whose data went to the device at once, for the fsync
	 * expected after them: the file's last fsync followed a single
	 * write, or the first write after an open, under 960 KiB (larger
	 * ones are likely pieces the kernel cut from a larger write), while
	 * the files opened lately were fsynced after their first write.
	 */
	uint64_t writes_sent_at_once;
	/*
	 * Where fsync's time goes, in the daemon, since mount (ns): fsyncs
	 * answered, their time, the part spent on their files' data, and
	 * the journal's commits (count, time, of it the device flushes) and
	 * callers' waits for a commit another thread was running; the
	 * commits' flushes and the commits that needed no flush before their
	 * records (ZF_REC_F_UNFLUSHED).
	 */
	uint64_t fsyncs, fsync_ns, fsync_data_ns;
	uint64_t journal_commits, journal_commit_ns, journal_flush_ns;
	uint64_t journal_flushes, journal_unflushed_commits;
	uint64_t journal_wait_ns;
	/*
	 * The journal's rolls since mount: how many, their time, the longest,
	 * and the longest a roll's snapshot kept metadata changes stopped
	 * (ns). A roll is part of the commit that found the log past its
	 * snapshot, so its time is also in journal_commit_ns.
	 */
	uint64_t journal_rolls, journal_roll_ns, journal_roll_max_ns;
	uint64_t journal_snapshot_stop_max_ns;
	uint64_t journal_snapshot_bytes; /* the live chain's snapshot */
	/*
	 * Since mount: the time writes, fsyncs' data and write()'s space
	 * check spent making room (waiting for a zone or a slot, committing
	 * to free zones, reclaiming), in ns, and the bytes reclaim copied on
	 * such a caller's path rather than on the background thread.
	 */
	uint64_t space_stall_ns, gc_bytes_by_writers;
	double write_amplification; /* < 0 while nothing was written */
	uint64_t resets_total, resets_min, resets_max; /* pool zones not in
							   the journal now */
	double resets_mean;
	uint64_t meta_resets_max;
	uint32_t open_zones;
	uint32_t active_zones; /* slots held: data zones, the journal's, the
				  super zone's when it keeps one */
	uint32_t max_open, max_active;
	uint32_t super_zone[2];		  /* where the metadata starts */
	uint32_t chain[ZFS_STATS_CHAIN]; /* the journal's zones, in order */
	uint32_t nr_chain;		  /* all of them (chain[] has the
					     first ZFS_STATS_CHAIN) */
	uint32_t mirror_chain[ZFS_STATS_CHAIN]; /* their mirrors */
	uint32_t metadata_copies;	  /* 2 with the mirror chain, else 1 */
	bool read_only;
	int error; /* the sticky error, 0 if healthy */
	char transport[8]; /* "uring", "dev", or "none" without a mount */
	/*
	 * The CRC32C the daemon computes checksums with, chosen at load as
	 * the faster on this CPU (crc32c.h): "sse4.2" or "tables".
	 */
	char checksum_impl[8];
};
int zfs_get_stats(struct zfs *fs, struct zfs_stats *st);
/*
 * What carries the mount's FUSE requests, for the stats: @name ("uring",
 * "dev") must outlive @fs (a string literal). The daemon sets it; the
 * library only reports it.
 */
void zfs_set_transport(struct zfs *fs, const char *name);
/* The stats as the flat JSON object `zonefuse stat --json` prints. */
int zfs_stats_json(const struct zfs_stats *st, char *buf, size_t size);
/* One extent of a file: @len bytes at @offset in @zone hold file bytes @foff. */
struct zfs_extent {
	uint32_t zone;
	uint64_t offset, len, foff;
};

/*
 * Call @fn on each extent of @ino in file order, under the metadata's
 * read lock (@fn must not call into @fs); stops at @fn's first non-zero
 * return and returns it. 0 for a file without extents or not a regular
 * file, -ENOENT.
 */
int zfs_extents_each(struct zfs *fs, uint64_t ino,
		     int (*fn)(void *arg, const struct zfs_extent *e),
		     void *arg);
/* The extents of @ino, one "zone offset length" line each. */
ssize_t zfs_extents_text(struct zfs *fs, uint64_t ino, char *buf,
			 size_t size);

/* ---- scrub --------------------------------------------------------------- */

#define ZFS_SCRUB_BAD 16u /* damaged ranges reported per file */

struct zfs_scrub_bad {
	uint64_t foff, len; /* file bytes whose blocks fail */
	uint32_t zone;
	bool unreadable;    /* the device failed the read (else: the
			       checksum did not match) */
};

struct zfs_scrub_file {
	uint64_t bytes;	    /* device bytes read and checked */
	uint32_t nbad;
	bool more;	    /* more damaged ranges than bad[] holds */
	struct zfs_scrub_bad bad[ZFS_SCRUB_BAD];
};

/*
 * Read every block of file @ino's extents from the device and check it
 * against its checksum, in pieces of at most ZFS_CHUNK, each under the
 * file's data lock like a read (a mounted file system goes on). Data still
 * staged in DRAM is not on the device yet and is not read. Damaged blocks
 * are reported in @r, the scrub goes on past them. 0, -ENOENT, -EISDIR
 * (not a regular file: nothing to scrub), -ENOMEM.
 */
int zfs_scrub_file(struct zfs *fs, uint64_t ino, struct zfs_scrub_file *r);

struct zfs_scrub_total {
	uint64_t files, bytes;
	uint64_t damaged_files, damaged_ranges;
	uint64_t files_total; /* the files with data when the scrub began */
};

/*
 * zfs_scrub_file() of every regular file. @found gets each damaged one,
 * with a path to it; @progress (may be NULL) the running totals before
 * the first file and after each. 0 or an errno (the scrub could not go
 * on).
 */
int zfs_scrub_all(struct zfs *fs,
		  void (*found)(void *arg, const char *path, uint64_t ino,
				const struct zfs_scrub_file *r),
		  void (*progress)(void *arg, const struct zfs_scrub_total *t),
		  void *arg, struct zfs_scrub_total *tot);

/*
 * Scrub the metadata of a mounted file system (jrnl_scrub()): read the
 * superblocks, anchors and every copy of the journal back as a mount
 * would, and when anything does not hold, write them anew from the
 * metadata in memory (when writable and @repair). Findings go to the log
 * (daemon) and to @r. 0, -ENOMEM or an I/O errno of the read-back.
 */
int zfs_scrub_meta(struct zfs *fs, bool repair, struct jrnl_scrub *r);

/*
 * What one read-back of zfs_scrub_meta() found, a sentence per finding,
 * to @say (none when it found nothing).
 */
void zfs_scrub_meta_say(const struct jrnl_scrub_pass *p,
			void (*say)(void *arg, const char *line), void *arg);

/*
 * Reset every zone whose data is all dead and whose freeing record is
 * durable, now. Returns how many (the background thread does it too).
 */
int zfs_reclaim_now(struct zfs *fs);

#endif /* ZONEFUSE_ZFS_H */
