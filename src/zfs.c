// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The file system core: the namespace (lookup, create, link, remove,
 * rename), attributes and permissions.
 * Open files, data and directories are in zfs_file.c, extended
 * attributes in zfs_xattr.c, statfs and the stats in zfs_stats.c, mount,
 * unmount and the background thread in zfs_mount.c. The data path is in
 * data.c (which also keeps the inodes' runtime state), zones and space
 * in alloc.c and the space policy in space.c; the record operation,
 * rec_log(), in rec.c.
 *
 * Every change follows one pattern: check (permissions, errnos) under the
 * locks, build the journal record, then rec_log() it, which applies it to
 * the in-memory metadata with zm_apply() and appends it to the journal.
 * The permission and attribute rules are ext4's (fs/attr.c, fs/namei.c):
 * users compare.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "zfs_i.h"
#include "zonefuse/util.h"

struct zdev *zfs_dev(struct zfs *fs)
{
	return fs->dev;
}

/* ---- runtime state of inodes --------------------------------------------------- */

/*
 * The caching of a handle about to be opened on @in (zfs.h, ZFS_OPEN_*),
 * before in->nopen counts it. A write-only open goes uncached only when
 * the file is not open: a handle already open may be caching pages, or
 * mapping them shared, which uncached writes would leave stale, and the
 * kernel does not drop cached pages for a write that bypasses them. Caller
 * holds meta_lock exclusive.
 */
unsigned int zfs_cache_mode(struct zm_inode *in, struct zfs_rt *rt, int acc)
{
	if (!zm_is_reg(in))
		return 0;
	if (rt->nocache || (acc == O_WRONLY && !in->nopen)) {
		rt->nocache++;
		rt->cache_stale = true;
		return ZFS_OPEN_NOCACHE;
	}
	if (rt->cache_stale) {
		rt->cache_stale = false;
		return ZFS_OPEN_DROPCACHE;
	}
	return 0;
}

/* Can @rt go? Nothing staged, queued or open. Caller: meta_lock excl. */
static bool zfs_rt_idle(struct zfs *fs, struct zfs_rt *rt)
{
	bool idle;

	ZLOCK_HELD_EXCL(&fs->meta_lock);

	zlock_mutex(&fs->wb_lock, ZLOCK_WB);
	idle = !rt->open && !rt->wb_first &&
	       !rt->wb_queued && !rt->wb_busy && !rt->dirty && !rt->head;
	zlock_unmutex(&fs->wb_lock);
	return idle;
}

/* ---- attributes ------------------------------------------------------------------ */

static struct timespec zfs_ts(int64_t ns)
{
	struct timespec ts;

	ts.tv_sec = (time_t)(ns / 1000000000ll);
	ts.tv_nsec = (long)(ns % 1000000000ll);
	if (ts.tv_nsec < 0) {
		ts.tv_sec--;
		ts.tv_nsec += 1000000000l;
	}
	return ts;
}

/* The bytes staged chunk @c of @in takes beyond what @in has reserved. */
static uint64_t zfs_staged_bytes(const struct zm_inode *in,
				 const struct zfs_chunk *c)
{
	uint64_t pre = in->f.n_pre ? zm_pre_overlap(in, c->foff,
						    c->foff + ZFS_CHUNK) :
				     0;

	return c->alloc > pre ? c->alloc - pre : 0;
}

/* Caller holds meta_lock; takes the rt lock to read data fields. */
void zfs_fill_stat(struct zfs *fs, const struct zm_inode *in, struct stat *st)
{
	struct zfs_rt *rt = in->rt;
	uint64_t bytes = 0;
	uint32_t k;
	struct zfs_chunk *c;

	if (rt)
		zlock_rd(&rt->lock, ZLOCK_RT);
	memset(st, 0, sizeof(*st));
	st->st_ino = in->ino;
	st->st_mode = in->mode;
	st->st_nlink = in->nlink;
	st->st_uid = in->uid;
	st->st_gid = in->gid;
	st->st_rdev = in->rdev;
	st->st_size = (off_t)data_vsize(in);
	st->st_blksize = ZFS_CHUNK;
	st->st_atim = zfs_ts(in->atime);
	st->st_mtim = zfs_ts(in->mtime);
	st->st_ctim = zfs_ts(in->ctime);
	if (zm_is_reg(in)) {
		for (k = 0; k < in->f.n_ext; k++)
			bytes += ZF_ROUND_UP(in->f.ext[k].len, (uint64_t)fs->bs);
		/*
		 * Reserved blocks count, as ext4's unwritten extents do;
		 * staged data only where it is not already reserved.
		 */
		bytes += zm_pre_bytes(in);
		if (rt) {
			for (c = rt->open; c; c = c->next)
				bytes += zfs_staged_bytes(in, c);
			for (c = rt->wb_first; c; c = c->next)
				bytes += zfs_staged_bytes(in, c);
		}
	} else if (zm_is_dir(in)) {
		bytes = 4096;
		st->st_size = 4096; /* as ext4 shows an empty directory */
	}
	st->st_blocks = (blkcnt_t)(ZF_ROUND_UP(bytes, 4096u) / 512);
	if (rt)
		zlock_unrw(&rt->lock);
}

static bool zfs_in_group(const struct zfs_ctx *ctx, uint32_t gid)
{
	uint32_t i;

	if (ctx->gid == gid)
		return true;
	for (i = 0; i < ctx->ngroups && i < ZF_ARRAY_SIZE(ctx->groups); i++)
		if (ctx->groups[i] == gid)
			return true;
	return false;
}

/* access(2) rules: owner, group, others; root passes but for exec. */
int zfs_perm(const struct zfs_ctx *ctx, const struct zm_inode *in, int mask)
{
	uint32_t bits;

	if (!ctx)
		return 0;
	if (ctx->uid == 0) {
		if ((mask & X_OK) && !zm_is_dir(in) && !(in->mode & 0111))
			return -EACCES;
		return 0;
	}
	if (ctx->uid == in->uid)
		bits = (in->mode >> 6) & 7;
	else if (zfs_in_group(ctx, in->gid))
		bits = (in->mode >> 3) & 7;
	else
		bits = in->mode & 7;
	if (((mask & R_OK) && !(bits & 4)) || ((mask & W_OK) && !(bits & 2)) ||
	    ((mask & X_OK) && !(bits & 1)))
		return -EACCES;
	return 0;
}

static bool zfs_is_owner(const struct zfs_ctx *ctx, const struct zm_inode *in)
{
	return !ctx || ctx->uid == 0 || ctx->uid == in->uid;
}

/* The sticky-directory rule for removing or replacing @victim in @dir. */
static int zfs_sticky(const struct zfs_ctx *ctx, const struct zm_inode *dir,
		      const struct zm_inode *victim)
{
	if (!(dir->mode & S_ISVTX) || !ctx || ctx->uid == 0 ||
	    ctx->uid == dir->uid || ctx->uid == victim->uid)
		return 0;
	return -EPERM;
}

void zfs_dattr(const struct zm_inode *in, struct zf_dattr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = htole64(in->ino);
	a->mode = htole32(in->mode);
	a->uid = htole32(in->uid);
	a->gid = htole32(in->gid);
	a->nlink = htole32(in->nlink);
	a->size = htole64(in->size);
	a->atime = (int64_t)htole64((uint64_t)in->atime);
	a->mtime = (int64_t)htole64((uint64_t)in->mtime);
	a->ctime = (int64_t)htole64((uint64_t)in->ctime);
	a->btime = (int64_t)htole64((uint64_t)in->btime);
}

static int zfs_check_name(const char *name, size_t *len)
{
	*len = strlen(name);
	if (!*len)
		return -ENOENT;
	if (*len > ZF_NAME_MAX)
		return -ENAMETOOLONG;
	return 0;
}

/* The directory @ino, or the errno for why not. Caller holds meta_lock. */
int zfs_get_dir(struct zfs *fs, uint64_t ino, struct zm_inode **dp)
{
	struct zm_inode *d = zm_iget(&fs->m, ino);

	ZLOCK_HELD(&fs->meta_lock);

	if (!d)
		return -ENOENT;
	if (!zm_is_dir(d))
		return -ENOTDIR;
	if (!d->nlink)
		return -ENOENT; /* removed while the kernel held it */
	*dp = d;
	return 0;
}

/* ---- lookup and forget ---------------------------------------------------------- */

int zfs_lookup(struct zfs *fs, uint64_t parent, const char *name,
	       struct stat *st)
{
	struct zm_inode *dir, *in = NULL;
	struct zm_dent *e;
	size_t len;
	int ret;

	zlock_rd(&fs->meta_lock, ZLOCK_META);
	ret = zfs_get_dir(fs, parent, &dir);
	if (ret)
		goto out_unlock;
	len = strlen(name);
	if (len > ZF_NAME_MAX) {
		ret = -ENAMETOOLONG;
		goto out_unlock;
	}
	if (!strcmp(name, "."))
		in = dir;
	else if (!strcmp(name, ".."))
		in = zm_iget(&fs->m, dir->parent);
	else if ((e = zm_lookup(dir, name, len)))
		in = zm_iget(&fs->m, e->ino);
	if (!in) {
		ret = -ENOENT;
		goto out_unlock;
	}
	__atomic_add_fetch(&in->nlookup, 1, __ATOMIC_RELAXED);
	zfs_fill_stat(fs, in, st);
out_unlock:
	zlock_unrw(&fs->meta_lock);
	return ret;
}

void zfs_forget(struct zfs *fs, uint64_t ino, uint64_t nlookup)
{
	struct zm_inode *in;

	zlock_rd(&fs->meta_lock, ZLOCK_META);
	in = zm_iget(&fs->m, ino);
	if (!in || __atomic_sub_fetch(&in->nlookup,
				      ZF_MIN(nlookup, in->nlookup),
				      __ATOMIC_RELAXED) ||
	    in->nopen) {
		zlock_unrw(&fs->meta_lock);
		return;
	}
	zlock_unrw(&fs->meta_lock);

	/* Last reference: free an unlinked inode, drop idle runtime state. */
	zlock_wr(&fs->meta_lock, ZLOCK_META);
	in = zm_iget(&fs->m, ino);
	if (in && !zm_inode_busy(in)) {
		if (!in->nlink)
			data_inode_maybe_free(fs, in);
		else if (in->rt && zfs_rt_idle(fs, in->rt))
			data_rt_destroy(in);
	}
	zlock_unrw(&fs->meta_lock);
}

int zfs_getattr(struct zfs *fs, uint64_t ino, struct stat *st)
{
	struct zm_inode *in;
	int ret = 0;

	zlock_rd(&fs->meta_lock, ZLOCK_META);
	in = zm_iget(&fs->m, ino);
	if (in)
		zfs_fill_stat(fs, in, st);
	else
		ret = -ENOENT;
	zlock_unrw(&fs->meta_lock);
	return ret;
}

int zfs_access(struct zfs *fs, const struct zfs_ctx *ctx, uint64_t ino,
	       int mask)
{
	struct zm_inode *in;
	int ret;

	zlock_rd(&fs->meta_lock, ZLOCK_META);
	in = zm_iget(&fs->m, ino);
	ret = in ? zfs_perm(ctx, in, mask) : -ENOENT;
	if (!ret && (mask & W_OK) && fs->rdonly)
		ret = -EROFS;
	zlock_unrw(&fs->meta_lock);
	return ret;
}

/* ---- setattr ---------------------------------------------------------------------- */

/*
 * Remove set-user-ID and set-group-ID as a write or truncate by a user
 * does (setattr_should_drop_suidgid()): root keeps them; anyone else
 * loses set-user-ID, and set-group-ID when it means "execute as the
 * group" or the writer is not in the file's group.
 */
uint32_t zfs_kill_suid(const struct zfs_ctx *ctx, uint32_t gid, uint32_t mode)
{
	if (!ctx || ctx->uid == 0)
		return mode;
	mode &= ~(uint32_t)S_ISUID;
	if ((mode & S_IXGRP) || !zfs_in_group(ctx, gid))
		mode &= ~(uint32_t)S_ISGID;
	return mode;
}

#define ZFS_TOUCH                                                            \
	(ZFS_SET_ATIME | ZFS_SET_ATIME_NOW | ZFS_SET_MTIME | ZFS_SET_MTIME_NOW)

static int zfs_setattr_check(const struct zfs_ctx *ctx, struct zm_inode *in,
			     const struct stat *a, unsigned int set)
{
	int ret;

	/*
	 * A kernel that was not given FUSE_HANDLE_KILLPRIV_V2 (xport.c)
	 * clears set-ID bits before a write with a SETATTR of the mode on
	 * the writer's behalf (fuse_setattr(), ATTR_KILL_SUID), whoever
	 * owns the file: a mode change that only takes set-ID bits
	 * away is what a write would do anyway, and needs what a write needs.
	 */
	if ((set & ZFS_SET_MODE) && !zfs_is_owner(ctx, in)) {
		uint32_t m = a->st_mode & 07777, cur = in->mode & 07777;

		if ((set & ~(ZFS_SET_MODE | ZFS_SET_CTIME)) || m == cur ||
		    (m | S_ISUID | S_ISGID) != (cur | S_ISUID | S_ISGID))
			return -EPERM;
		ret = zfs_perm(ctx, in, W_OK);
		if (ret)
			return ret;
	}
	/*
	 * chown_ok()/chgrp_ok(): only root gives a file away; the owner may
	 * "change" the owner to itself and the group to one of its own. A
	 * non-owner may not even restate the current values.
	 */
	if ((set & ZFS_SET_UID) && ctx && ctx->uid &&
	    (ctx->uid != in->uid || a->st_uid != in->uid))
		return -EPERM;
	if ((set & ZFS_SET_GID) && ctx && ctx->uid &&
	    (ctx->uid != in->uid ||
	     (a->st_gid != in->gid && !zfs_in_group(ctx, a->st_gid))))
		return -EPERM;
	/*
	 * Both times "now" (utimes(NULL), touch): the owner, or anyone who
	 * may write. Anything else (an explicit time, or one time "now" and
	 * the other left alone) is for the owner only, as the VFS rules it
	 * (ATTR_TOUCH against ATTR_TIMES_SET in setattr_prepare).
	 */
	if ((set & (ZFS_SET_ATIME | ZFS_SET_MTIME)) && !zfs_is_owner(ctx, in)) {
		if ((set & ZFS_TOUCH) != ZFS_TOUCH)
			return -EPERM;
		ret = zfs_perm(ctx, in, W_OK);
		if (ret)
			return ret;
	}
	if (set & ZFS_SET_SIZE) {
		if (zm_is_dir(in))
			return -EISDIR;
		if (!zm_is_reg(in))
			return -EINVAL;
		if ((uint64_t)a->st_size > ZFS_MAX_FILE_SIZE || a->st_size < 0)
			return a->st_size < 0 ? -EINVAL : -EFBIG;
		if (!(set & ZFS_SET_HAVE_FH)) {
			ret = zfs_perm(ctx, in, W_OK);
			if (ret)
				return ret;
		}
	}
	return 0;
}

int zfs_setattr(struct zfs *fs, const struct zfs_ctx *ctx, uint64_t ino,
		const struct stat *a, unsigned int set, struct stat *st)
{
	struct zf_rec_setattr rec;
	struct zm_inode *in;
	struct zfs_rt *rt = NULL;
	uint32_t valid = ZF_ATTR_CTIME, mode;
	int64_t now = zutil_now_real_ns();
	int ret;

	ret = rec_writable(fs);
	if (ret)
		return ret;
	zlock_wr(&fs->meta_lock, ZLOCK_META);
	in = zm_iget(&fs->m, ino);
	if (!in) {
		ret = -ENOENT;
		goto out_unlock;
	}
	ret = zfs_setattr_check(ctx, in, a, set);
	if (ret)
		goto out_unlock;
	if (set & ZFS_SET_SIZE) {
		rt = data_rt_get(fs, in);
		if (!rt) {
			ret = -ENOMEM;
			goto out_unlock;
		}
		zlock_wr(&rt->lock, ZLOCK_RT);
	}
	zfs_dattr(in, &rec.attr);
	mode = in->mode & 07777;
	if (set & ZFS_SET_MODE) {
		mode = a->st_mode & 07777;
		/* Non-members cannot keep set-group-ID (setattr_prepare). */
		if (ctx && ctx->uid && !zfs_in_group(ctx, in->gid) &&
		    !((set & ZFS_SET_GID) && zfs_in_group(ctx, a->st_gid)))
			mode &= ~(uint32_t)S_ISGID;
		valid |= ZF_ATTR_MODE;
	}
	if (set & (ZFS_SET_UID | ZFS_SET_GID)) {
		if (set & ZFS_SET_UID) {
			rec.attr.uid = htole32(a->st_uid);
			valid |= ZF_ATTR_UID;
		}
		if (set & ZFS_SET_GID) {
			rec.attr.gid = htole32(a->st_gid);
			valid |= ZF_ATTR_GID;
		}
		/*
		 * chown of a non-directory clears set-user-ID, root's too, and
		 * set-group-ID when it means "execute as the group" or the
		 * caller is not in the group (chown_common(),
		 * setattr_should_drop_sgid()).
		 */
		if (!zm_is_dir(in)) {
			uint32_t m2 = mode & ~(uint32_t)S_ISUID;

			if ((mode & S_IXGRP) ||
			    (ctx && ctx->uid && !zfs_in_group(ctx, in->gid)))
				m2 &= ~(uint32_t)S_ISGID;
			if (m2 != mode) {
				mode = m2;
				valid |= ZF_ATTR_MODE;
			}
		}
	}
	if (set & ZFS_SET_SIZE) {
		uint32_t m2 = zfs_kill_suid(ctx, in->gid, mode);

		rec.attr.size = htole64((uint64_t)a->st_size);
		valid |= ZF_ATTR_SIZE;
		if (m2 != mode) {
			mode = m2;
			valid |= ZF_ATTR_MODE;
		}
		/* A size change is a data change. */
		if ((uint64_t)a->st_size != data_vsize(in)) {
			rec.attr.mtime = (int64_t)htole64((uint64_t)now);
			valid |= ZF_ATTR_MTIME;
		}
	}
	if (set & ZFS_SET_ATIME) {
		rec.attr.atime = (int64_t)htole64((uint64_t)(
			(set & ZFS_SET_ATIME_NOW) ?
				now :
				(int64_t)a->st_atim.tv_sec * 1000000000ll +
					a->st_atim.tv_nsec));
		valid |= ZF_ATTR_ATIME;
	}
	if (set & ZFS_SET_MTIME) {
		rec.attr.mtime = (int64_t)htole64((uint64_t)(
			(set & ZFS_SET_MTIME_NOW) ?
				now :
				(int64_t)a->st_mtim.tv_sec * 1000000000ll +
					a->st_mtim.tv_nsec));
		valid |= ZF_ATTR_MTIME;
	}
	rec.attr.mode = htole32(mode);
	rec.attr.ctime = (int64_t)htole64((uint64_t)now);
	rec.valid = htole32(valid);
	rec.reserved = 0;
	if (rt) {
		data_truncate_staged(fs, rt, (uint64_t)a->st_size);
		if (!a->st_size && in->size)
			rt->seal_on_close = true;
	}
	ret = rec_log(fs, ZF_REC_SETATTR, &rec, sizeof(rec));
	if (rt)
		zlock_unrw(&rt->lock);
	if (!ret)
		zfs_fill_stat(fs, in, st);
out_unlock:
	zlock_unrw(&fs->meta_lock);
	return ret;
}

/* ---- creating ------------------------------------------------------------------------ */

/*
 * Make inode @mode named @name in @parent (meta_lock held exclusive):
 * owner from the caller, group from a set-group-ID parent (which a new
 * directory also inherits), as inode_init_owner() does.
 */
static int zfs_make(struct zfs *fs, const struct zfs_ctx *ctx,
		    struct zm_inode *dir, const char *name, size_t len,
		    uint32_t mode, uint32_t rdev, const char *target,
		    struct zm_inode **out)
{
	size_t tlen = target ? strlen(target) : 0;
	char buf[sizeof(struct zf_rec_create) + ZF_NAME_MAX + ZF_SYMLINK_MAX];
	struct zf_rec_create *rec = (void *)buf;
	int64_t now = zutil_now_real_ns();
	uint32_t gid = ctx ? ctx->gid : 0;
	uint64_t ino;
	int ret;

	ret = zfs_perm(ctx, dir, W_OK | X_OK);
	if (ret)
		return ret;
	if (zm_lookup(dir, name, len))
		return -EEXIST;
	if (tlen > ZF_SYMLINK_MAX)
		return -ENAMETOOLONG;
	if (dir->mode & S_ISGID) {
		gid = dir->gid;
		if ((mode & S_IFMT) == S_IFDIR)
			mode |= S_ISGID;
		else if ((mode & S_ISGID) && (mode & S_IXGRP) && ctx &&
			 ctx->uid && !zfs_in_group(ctx, gid))
			mode &= ~(uint32_t)S_ISGID;
	}
	if (ctx)
		mode &= ~(ctx->umask & 0777);
	ino = fs->m.next_ino;
	memset(rec, 0, sizeof(*rec));
	rec->parent = htole64(dir->ino);
	rec->attr.ino = htole64(ino);
	rec->attr.mode = htole32(mode);
	rec->attr.uid = htole32(ctx ? ctx->uid : 0);
	rec->attr.gid = htole32(gid);
	rec->attr.atime = rec->attr.mtime = rec->attr.ctime =
		rec->attr.btime = (int64_t)htole64((uint64_t)now);
	rec->rdev = htole32(rdev);
	rec->name_len = htole16((uint16_t)len);
	rec->target_len = htole16((uint16_t)tlen);
	memcpy(rec + 1, name, len);
	if (tlen)
		memcpy((char *)(rec + 1) + len, target, tlen);
	ret = rec_log(fs, ZF_REC_CREATE, rec,
		      (uint32_t)(sizeof(*rec) + len + tlen));
	if (ret)
		return ret;
	*out = zm_iget(&fs->m, ino);
	return 0;
}

/*
 * @open: create(2), which opens the file (@cachep as for zfs_open(), and
 * may be NULL); otherwise mknod, mkdir or symlink.
 */
static int zfs_create_common(struct zfs *fs, const struct zfs_ctx *ctx,
			     uint64_t parent, const char *name, uint32_t mode,
			     uint32_t rdev, const char *target, int flags,
			     bool open, unsigned int *cachep, struct stat *st)
{
	struct zm_inode *dir, *in;
	struct zm_dent *e;
	size_t len;
	int ret;

	ret = zfs_check_name(name, &len);
	if (ret)
		return ret;
	ret = rec_writable(fs);
	if (ret)
		return ret;
	zlock_wr(&fs->meta_lock, ZLOCK_META);
	ret = zfs_get_dir(fs, parent, &dir);
	if (ret)
		goto out_unlock;
	e = zm_lookup(dir, name, len);
	if (e && open && !(flags & O_EXCL)) {
		/* create(2) of an existing file: an open of it. */
		zlock_unrw(&fs->meta_lock);
		ret = zfs_lookup(fs, parent, name, st);
		if (ret)
			return ret;
		ret = zfs_open(fs, ctx, (uint64_t)st->st_ino, flags, cachep);
		if (ret) {
			zfs_forget(fs, (uint64_t)st->st_ino, 1);
			return ret;
		}
		return zfs_getattr(fs, (uint64_t)st->st_ino, st);
	}
	ret = zfs_make(fs, ctx, dir, name, len, mode, rdev, target, &in);
	if (ret)
		goto out_unlock;
	if (open) {
		struct zfs_rt *rt = data_rt_get(fs, in);

		if (!rt) {
			/* The file exists but cannot be opened. */
			ret = -ENOMEM;
			goto out_unlock;
		}
		rt->group = parent;
		rt->seal_on_close = true;
		if ((flags & O_ACCMODE) != O_RDONLY)
			data_open_write(rt);
		if (cachep)
			*cachep = zfs_cache_mode(in, rt, flags & O_ACCMODE);
	}
	__atomic_add_fetch(&in->nlookup, 1, __ATOMIC_RELAXED);
	if (open)
		in->nopen++;
	zfs_fill_stat(fs, in, st);
out_unlock:
	zlock_unrw(&fs->meta_lock);
	return ret;
}

int zfs_mknod(struct zfs *fs, const struct zfs_ctx *ctx, uint64_t parent,
	      const char *name, mode_t mode, dev_t rdev, struct stat *st)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
	case S_IFIFO:
	case S_IFSOCK:
		rdev = 0;
		break;
	case S_IFCHR:
	case S_IFBLK:
		/*
		 * Stored like a fifo, with its device number; only root makes
		 * one (CAP_MKNOD). Opening it is the kernel's business: FUSE
		 * mounts are nodev unless the mount says dev.
		 */
		if (ctx && ctx->uid)
			return -EPERM;
		if ((uint64_t)rdev > UINT32_MAX)
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}
	return zfs_create_common(fs, ctx, parent, name, (uint32_t)mode & 0177777,
				 (uint32_t)rdev, NULL, 0, false, NULL, st);
}

int zfs_mkdir(struct zfs *fs, const struct zfs_ctx *ctx, uint64_t parent,
	      const char *name, mode_t mode, struct stat *st)
{
	return zfs_create_common(fs, ctx, parent, name,
				 S_IFDIR | ((uint32_t)mode & 07777), 0, NULL,
				 0, false, NULL, st);
}

int zfs_symlink(struct zfs *fs, const struct zfs_ctx *ctx, uint64_t parent,
		const char *name, const char *target, struct stat *st)
{
	struct zfs_ctx c;

	if (!target[0])
		return -ENOENT;
	if (strlen(target) > ZF_SYMLINK_MAX)
		return -ENAMETOOLONG;
	/* Symlinks are 0777 whatever the umask. */
	if (ctx) {
		c = *ctx;
		c.umask = 0;
		ctx = &c;
	}
	return zfs_create_common(fs, ctx, parent, name, S_IFLNK | 0777, 0,
				 target, 0, false, NULL, st);
}

int zfs_create(struct zfs *fs, const struct zfs_ctx *ctx, uint64_t parent,
	       const char *name, mode_t mode, int flags, struct stat *st,
	       unsigned int *cachep)
{
	return zfs_create_common(fs, ctx, parent, name,
				 S_IFREG | ((uint32_t)mode & 07777), 0, NULL,
				 flags, true, cachep, st);
}

int zfs_link(struct zfs *fs, const struct zfs_ctx *ctx, uint64_t ino,
	     uint64_t newparent, const char *newname, struct stat *st)
{
	char buf[sizeof(struct zf_rec_link) + ZF_NAME_MAX];
	struct zf_rec_link *rec = (void *)buf;
	struct zm_inode *dir, *in;
	size_t len;
	int ret;

	ret = zfs_check_name(newname, &len);
	if (ret)
		return ret;
	ret = rec_writable(fs);
	if (ret)
		return ret;
	zlock_wr(&fs->meta_lock, ZLOCK_META);
	ret = zfs_get_dir(fs, newparent, &dir);
	if (ret)
		goto out_unlock;
	in = zm_iget(&fs->m, ino);
	if (!in) {
		ret = -ENOENT;
		goto out_unlock;
	}
	if (zm_is_dir(in)) {
		ret = -EPERM;
		goto out_unlock;
	}
	if (!in->nlink) {
		ret = -ENOENT;
		goto out_unlock;
	}
	if (in->nlink >= 65000) {
		ret = -EMLINK;
		goto out_unlock;
	}
	ret = zfs_perm(ctx, dir, W_OK | X_OK);
	if (ret)
		goto out_unlock;
	if (zm_lookup(dir, newname, len)) {
		ret = -EEXIST;
		goto out_unlock;
	}
	memset(rec, 0, sizeof(*rec));
	rec->parent = htole64(newparent);
	rec->ino = htole64(ino);
	rec->time = (int64_t)htole64((uint64_t)zutil_now_real_ns());
	rec->name_len = htole16((uint16_t)len);
	memcpy(rec + 1, newname, len);
	ret = rec_log(fs, ZF_REC_LINK, rec, (uint32_t)(sizeof(*rec) + len));
	if (ret)
		goto out_unlock;
	__atomic_add_fetch(&in->nlookup, 1, __ATOMIC_RELAXED);
	zfs_fill_stat(fs, in, st);
out_unlock:
	zlock_unrw(&fs->meta_lock);
	return ret;
}

/* ---- removing --------------------------------------------------------------------------- */

/*
 * @in is about to lose a link. If it is the last one and no file is open on
 * it, its staged data will never be read: drop it rather than write it.
 * If nothing then holds the inode, the record about to be logged frees it
 * (zm_apply), so its runtime state goes first. That record (UNLINK, or a
 * RENAME over @in) allocates nothing, so it is refused only once the file
 * system has failed. meta_lock held exclusive.
 */
static void zfs_last_link(struct zfs *fs, struct zm_inode *in)
{
	if (!zm_is_dir(in) && in->nlink > 1)
		return;
	if (in->rt && !in->nopen)
		data_discard(fs, in->rt);
	if (!zm_inode_busy(in))
		data_lost_forget(fs, in->ino);
	if (in->rt && !zm_inode_busy(in)) {
		data_rt_free(fs, in->rt);
		data_rt_destroy(in);
	}
}

static int zfs_remove(struct zfs *fs, const struct zfs_ctx *ctx,
		      uint64_t parent, const char *name, bool dir_wanted)
{
	char buf[sizeof(struct zf_rec_link) + ZF_NAME_MAX];
	struct zf_rec_link *rec = (void *)buf;
	struct zm_inode *dir, *in;
	struct zm_dent *e;
	size_t len;
	int ret;

	ret = zfs_check_name(name, &len);
	if (ret)
		return ret;
	ret = rec_writable(fs);
	if (ret)
		return ret;
	zlock_wr(&fs->meta_lock, ZLOCK_META);
	ret = zfs_get_dir(fs, parent, &dir);
	if (ret)
		goto out_unlock;
	if (!strcmp(name, ".")) {
		ret = -EINVAL;
		goto out_unlock;
	}
	if (!strcmp(name, "..")) {
		ret = -ENOTEMPTY;
		goto out_unlock;
	}
	e = zm_lookup(dir, name, len);
	if (!e) {
		ret = -ENOENT;
		goto out_unlock;
	}
	in = zm_iget(&fs->m, e->ino);
	ret = zfs_perm(ctx, dir, W_OK | X_OK);
	if (!ret)
		ret = zfs_sticky(ctx, dir, in);
	if (ret)
		goto out_unlock;
	if (dir_wanted && !zm_is_dir(in)) {
		ret = -ENOTDIR;
		goto out_unlock;
	}
	if (!dir_wanted && zm_is_dir(in)) {
		ret = -EISDIR;
		goto out_unlock;
	}
	if (dir_wanted && in->d.count) {
		ret = -ENOTEMPTY;
		goto out_unlock;
	}
	memset(rec, 0, sizeof(*rec));
	rec->parent = htole64(parent);
	rec->ino = htole64(in->ino);
	rec->time = (int64_t)htole64((uint64_t)zutil_now_real_ns());
	rec->name_len = htole16((uint16_t)len);
	memcpy(rec + 1, name, len);
	zfs_last_link(fs, in);
	ret = rec_log(fs, ZF_REC_UNLINK, rec, (uint32_t)(sizeof(*rec) + len));
out_unlock:
	zlock_unrw(&fs->meta_lock);
	return ret;
}

int zfs_unlink(struct zfs *fs, const struct zfs_ctx *ctx, uint64_t parent,
	       const char *name)
{
	return zfs_remove(fs, ctx, parent, name, false);
}

int zfs_rmdir(struct zfs *fs, const struct zfs_ctx *ctx, uint64_t parent,
	      const char *name)
{
	return zfs_remove(fs, ctx, parent, name, true);
}

/* Is directory @anc @d or above it? (meta_lock held) */
static bool zfs_is_ancestor(struct zfs *fs, uint64_t anc, uint64_t d)
{
	uint64_t n = 0;

	while (n++ <= fs->m.nr_inodes) {
		struct zm_inode *in;

		if (d == anc)
			return true;
		if (d == ZF_ROOT_INO)
			return false;
		in = zm_iget(&fs->m, d);
		if (!in)
			return false;
		d = in->parent;
	}
	return true;
}

/*
 * Replacing a file (write a temporary file, rename it over the old one: the
 * idiom of torch.save wrappers, DeepSpeed's `latest`, editors): the new
 * file's staged data is written, and its extents logged, before the rename
 * record, so that a crash shows the old file or the new one, never the new
 * name on a file cut at its last written chunk. ext4 calls this
 * auto_da_alloc; as the journal here commits on its own schedule, the
 * rename waits for the writes (not for a commit).
 */
static int zfs_rename_flush(struct zfs *fs, uint64_t parent, const char *name,
			    uint64_t newparent, const char *newname)
{
	struct zm_inode *sd, *dd, *in = NULL;
	struct zm_dent *se;
	struct zfs_rt *rt = NULL;
	int ret;

	zlock_rd(&fs->meta_lock, ZLOCK_META);
	ret = zfs_get_dir(fs, parent, &sd);
	if (!ret)
		ret = zfs_get_dir(fs, newparent, &dd);
	se = ret ? NULL : zm_lookup(sd, name, strlen(name));
	if (se && zm_lookup(dd, newname, strlen(newname))) {
		in = zm_iget(&fs->m, se->ino);
		rt = in && zm_is_reg(in) ? in->rt : NULL;
	}
	/* The pin keeps the inode and its rt while meta_lock is let go. */
	if (rt)
		__atomic_add_fetch(&in->npin, 1, __ATOMIC_RELAXED);
	zlock_unrw(&fs->meta_lock);
	if (!rt)
		return 0;
	ret = data_flush_inode(fs, rt);
	zlock_wr(&fs->meta_lock, ZLOCK_META);
	__atomic_sub_fetch(&in->npin, 1, __ATOMIC_RELAXED);
	if (!in->nlink && !zm_inode_busy(in))
		data_inode_maybe_free(fs, in); /* unlinked meanwhile */
	zlock_unrw(&fs->meta_lock);
	return ret;
}

int zfs_rename(struct zfs *fs, const struct zfs_ctx *ctx, uint64_t parent,
	       const char *name, uint64_t newparent, const char *newname,
	       unsigned int flags)
{
	char buf[sizeof(struct zf_rec_rename) + 2 * ZF_NAME_MAX];
	struct zf_rec_rename *rec = (void *)buf;
	struct zm_inode *sd, *dd, *in, *victim = NULL;
	struct zm_dent *se, *de;
	size_t slen, dlen;
	int ret;

	if (flags & ~(ZFS_RENAME_NOREPLACE | ZFS_RENAME_EXCHANGE) ||
	    ((flags & ZFS_RENAME_NOREPLACE) && (flags & ZFS_RENAME_EXCHANGE)))
		return -EINVAL;
	ret = zfs_check_name(name, &slen);
	if (!ret)
		ret = zfs_check_name(newname, &dlen);
	if (ret)
		return ret;
	ret = rec_writable(fs);
	if (!ret && !(flags & ZFS_RENAME_NOREPLACE))
		ret = zfs_rename_flush(fs, parent, name, newparent, newname);
	if (ret)
		return ret;
	zlock_wr(&fs->meta_lock, ZLOCK_META);
	ret = zfs_get_dir(fs, parent, &sd);
	if (!ret)
		ret = zfs_get_dir(fs, newparent, &dd);
	if (ret)
		goto out_unlock;
	if (!strcmp(name, ".") || !strcmp(name, "..") ||
	    !strcmp(newname, ".") || !strcmp(newname, "..")) {
		ret = -EINVAL;
		goto out_unlock;
	}
	se = zm_lookup(sd, name, slen);
	if (!se) {
		ret = -ENOENT;
		goto out_unlock;
	}
	in = zm_iget(&fs->m, se->ino);
	de = zm_lookup(dd, newname, dlen);
	if (de)
		victim = zm_iget(&fs->m, de->ino);
	ret = zfs_perm(ctx, sd, W_OK | X_OK);
	if (!ret)
		ret = zfs_perm(ctx, dd, W_OK | X_OK);
	if (!ret)
		ret = zfs_sticky(ctx, sd, in);
	if (!ret && victim)
		ret = zfs_sticky(ctx, dd, victim);
	if (ret)
		goto out_unlock;
	if ((flags & ZFS_RENAME_EXCHANGE) && !victim) {
		ret = -ENOENT;
		goto out_unlock;
	}
	if (victim == in) {
		/* Two names of one file: rename does nothing (POSIX). */
		ret = 0;
		goto out_unlock;
	}
	if (victim && (flags & ZFS_RENAME_NOREPLACE)) {
		ret = -EEXIST;
		goto out_unlock;
	}
	/* A directory may not move below itself. */
	if (zm_is_dir(in) && zfs_is_ancestor(fs, in->ino, dd->ino)) {
		ret = -EINVAL;
		goto out_unlock;
	}
	if (victim && (flags & ZFS_RENAME_EXCHANGE) && zm_is_dir(victim) &&
	    zfs_is_ancestor(fs, victim->ino, sd->ino)) {
		ret = -EINVAL;
		goto out_unlock;
	}
	/* Moving a directory rewrites its "..": it must be writable. */
	if (zm_is_dir(in) && sd != dd) {
		ret = zfs_perm(ctx, in, W_OK);
		if (ret)
			goto out_unlock;
	}
	if (victim && !(flags & ZFS_RENAME_EXCHANGE)) {
		if (zm_is_dir(in) && !zm_is_dir(victim)) {
			ret = -ENOTDIR;
			goto out_unlock;
		}
		if (!zm_is_dir(in) && zm_is_dir(victim)) {
			ret = -EISDIR;
			goto out_unlock;
		}
		if (zm_is_dir(victim) && victim->d.count) {
			ret = -ENOTEMPTY;
			goto out_unlock;
		}
	}
	memset(rec, 0, sizeof(*rec));
	rec->src_parent = htole64(parent);
	rec->dst_parent = htole64(newparent);
	rec->ino = htole64(in->ino);
	rec->victim = htole64(victim ? victim->ino : 0);
	rec->time = (int64_t)htole64((uint64_t)zutil_now_real_ns());
	rec->flags = htole32(((flags & ZFS_RENAME_NOREPLACE) ?
				      ZF_RENAME_NOREPLACE :
				      0) |
			     ((flags & ZFS_RENAME_EXCHANGE) ?
				      ZF_RENAME_EXCHANGE :
				      0));
	rec->src_len = htole16((uint16_t)slen);
	rec->dst_len = htole16((uint16_t)dlen);
	memcpy(rec + 1, name, slen);
	memcpy((char *)(rec + 1) + slen, newname, dlen);
	if (victim && !(flags & ZFS_RENAME_EXCHANGE))
		zfs_last_link(fs, victim);
	ret = rec_log(fs, ZF_REC_RENAME, rec,
		      (uint32_t)(sizeof(*rec) + slen + dlen));
out_unlock:
	zlock_unrw(&fs->meta_lock);
	return ret;
}

int zfs_readlink(struct zfs *fs, uint64_t ino, char *buf, size_t size)
{
	struct zm_inode *in;
	int ret;

	zlock_rd(&fs->meta_lock, ZLOCK_META);
	in = zm_iget(&fs->m, ino);
	if (!in) {
		ret = -ENOENT;
	} else if (!zm_is_lnk(in)) {
		ret = -EINVAL;
	} else {
		size_t len = strlen(in->target);

		if (size) {
			size_t n = ZF_MIN(len, size - 1);

			memcpy(buf, in->target, n);
			buf[n] = '\0';
		}
		ret = (int)len;
	}
	zlock_unrw(&fs->meta_lock);
	return ret;
}
