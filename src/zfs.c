// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The file system core: mount and unmount, the namespace, attributes,
 * permissions, extended attributes, statfs and the background thread.
 * The data path is in data.c, zones and space in alloc.c.
 *
 * Every change follows one pattern: check (permissions, errnos) under the
 * locks, build the journal record, then zfs_log() it, which applies it to
 * the in-memory metadata with zm_apply() and appends it to the journal.
 * The permission and attribute rules are ext4's (fs/attr.c, fs/namei.c):
 * users compare.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "zfs_i.h"
#include "zonefuse/util.h"

#define ZFS_MAX_FILE_SIZE (1ull << 50)
#define ZFS_DAY_NS (86400ll * 1000000000ll)

int64_t zfs_now(void)
{
	return zutil_now_real_ns();
}

void zfs_fail(struct zfs *fs, int err, const char *what)
{
	int expected = 0;

	if (atomic_compare_exchange_strong(&fs->error, &expected, err ? err : -EIO))
		zlog_err("%s: %s failed (%s): the file system is now read-only; unmount it and run `zonefuse fsck %s`",
			 zdev_path(fs->dev), what, strerror(err ? -err : EIO),
			 zdev_path(fs->dev));
}

int zfs_check_writable(struct zfs *fs)
{
	if (fs->rdonly || fs->error)
		return -EROFS;
	return 0;
}

int zfs_log(struct zfs *fs, uint16_t type, const void *rec, uint32_t len)
{
	char why[200] = "";
	uint64_t seq;
	int ret;

	ret = zfs_check_writable(fs);
	if (ret)
		return ret;
	pthread_mutex_lock(&fs->alloc_lock);
	seq = jrnl_last_seq(fs->j) + 1;
	ret = zm_apply(&fs->m, type, rec, len, seq, why, sizeof(why));
	if (ret) {
		pthread_mutex_unlock(&fs->alloc_lock);
		if (ret != -ENOMEM) {
			zlog_err("%s: internal error: record type %u refused: %s",
				 zdev_path(fs->dev), type, why);
			zfs_fail(fs, -EIO, "a metadata update");
			return -EIO;
		}
		return ret;
	}
	ret = jrnl_append(fs->j, type, rec, len, NULL);
	pthread_mutex_unlock(&fs->alloc_lock);
	if (ret) {
		/* Applied but not logged: the state is ahead of the log. */
		zfs_fail(fs, ret, "appending to the metadata journal");
		return -EIO;
	}
	return 0;
}

struct zdev *zfs_dev(struct zfs *fs)
{
	return fs->dev;
}

/* ---- runtime state of inodes --------------------------------------------------- */

struct zfs_rt *zfs_rt_get(struct zfs *fs, struct zm_inode *in)
{
	struct zfs_rt *rt = in->rt;

	(void)fs;
	if (rt)
		return rt;
	rt = calloc(1, sizeof(*rt));
	if (!rt)
		return NULL;
	pthread_rwlock_init(&rt->lock, NULL);
	pthread_cond_init(&rt->wb_done, NULL);
	rt->ino = in->ino;
	rt->inode = in;
	in->rt = rt;
	return rt;
}

/*
 * The caching of a handle about to be opened on @in (zfs.h, ZFS_OPEN_*),
 * before in->nopen counts it. A write-only open goes uncached only when
 * the file is not open: a handle already open may be caching pages, or
 * mapping them shared, which uncached writes would leave stale, and the
 * kernel does not drop cached pages for a write that bypasses them. Caller
 * holds meta_lock exclusive.
 */
static unsigned int zfs_cache_mode(struct zm_inode *in, struct zfs_rt *rt,
				   int acc)
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

	pthread_mutex_lock(&fs->wb_lock);
	idle = !rt->open && !rt->wb_first &&
	       !rt->wb_queued && !rt->wb_busy && !rt->dirty && !rt->head;
	pthread_mutex_unlock(&fs->wb_lock);
	return idle;
}

static void zfs_rt_free(struct zm_inode *in)
{
	struct zfs_rt *rt = in->rt;

	if (!rt)
		return;
	pthread_rwlock_destroy(&rt->lock);
	pthread_cond_destroy(&rt->wb_done);
	free(rt);
	in->rt = NULL;
}

/*
 * An unlinked inode that neither the kernel nor an open file uses is freed,
 * and the INODE_FREE record says so (replay frees it at its last unlink).
 */
void zfs_inode_maybe_free(struct zfs *fs, struct zm_inode *in)
{
	struct zf_rec_ino rec;
	struct zfs_rt *rt = in->rt;

	if (in->nlink || zm_inode_busy(in) || in->ino == ZF_ROOT_INO)
		return;
	data_lost_forget(fs, in->ino);
	if (rt) {
		data_rt_free(fs, rt);
		zfs_rt_free(in);
	}
	rec.ino = htole64(in->ino);
	if (zfs_log(fs, ZF_REC_INODE_FREE, &rec, sizeof(rec)) &&
	    !zfs_check_writable(fs))
		zlog_err("%s: freeing inode %" PRIu64 " failed",
			 zdev_path(fs->dev), in->ino);
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

/* Caller holds meta_lock; takes the rt lock to read data fields. */
void zfs_fill_stat(struct zfs *fs, const struct zm_inode *in, struct stat *st)
{
	struct zfs_rt *rt = in->rt;
	uint64_t bytes = 0;
	uint32_t k;
	struct zfs_chunk *c;

	if (rt)
		pthread_rwlock_rdlock(&rt->lock);
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
		if (rt) {
			for (c = rt->open; c; c = c->next)
				bytes += c->alloc;
			for (c = rt->wb_first; c; c = c->next)
				bytes += c->alloc;
		}
	} else if (zm_is_dir(in)) {
		bytes = 4096;
		st->st_size = 4096; /* as ext4 shows an empty directory */
	}
	st->st_blocks = (blkcnt_t)(ZF_ROUND_UP(bytes, 4096u) / 512);
	if (rt)
		pthread_rwlock_unlock(&rt->lock);
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
static int zfs_perm(const struct zfs_ctx *ctx, const struct zm_inode *in,
		    int mask)
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

static void zfs_dattr(const struct zm_inode *in, struct zf_dattr *a)
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
static int zfs_get_dir(struct zfs *fs, uint64_t ino, struct zm_inode **dp)
{
	struct zm_inode *d = zm_iget(&fs->m, ino);

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

	pthread_rwlock_rdlock(&fs->meta_lock);
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
	pthread_rwlock_unlock(&fs->meta_lock);
	return ret;
}

void zfs_forget(struct zfs *fs, uint64_t ino, uint64_t nlookup)
{
	struct zm_inode *in;

	pthread_rwlock_rdlock(&fs->meta_lock);
	in = zm_iget(&fs->m, ino);
	if (!in || __atomic_sub_fetch(&in->nlookup,
				      ZF_MIN(nlookup, in->nlookup),
				      __ATOMIC_RELAXED) ||
	    in->nopen) {
		pthread_rwlock_unlock(&fs->meta_lock);
		return;
	}
	pthread_rwlock_unlock(&fs->meta_lock);

	/* Last reference: free an unlinked inode, drop idle runtime state. */
	pthread_rwlock_wrlock(&fs->meta_lock);
	in = zm_iget(&fs->m, ino);
	if (in && !zm_inode_busy(in)) {
		if (!in->nlink)
			zfs_inode_maybe_free(fs, in);
		else if (in->rt && zfs_rt_idle(fs, in->rt))
			zfs_rt_free(in);
	}
	pthread_rwlock_unlock(&fs->meta_lock);
}

int zfs_getattr(struct zfs *fs, uint64_t ino, struct stat *st)
{
	struct zm_inode *in;
	int ret = 0;

	pthread_rwlock_rdlock(&fs->meta_lock);
	in = zm_iget(&fs->m, ino);
	if (in)
		zfs_fill_stat(fs, in, st);
	else
		ret = -ENOENT;
	pthread_rwlock_unlock(&fs->meta_lock);
	return ret;
}

int zfs_access(struct zfs *fs, const struct zfs_ctx *ctx, uint64_t ino,
	       int mask)
{
	struct zm_inode *in;
	int ret;

	pthread_rwlock_rdlock(&fs->meta_lock);
	in = zm_iget(&fs->m, ino);
	ret = in ? zfs_perm(ctx, in, mask) : -ENOENT;
	if (!ret && (mask & W_OK) && fs->rdonly)
		ret = -EROFS;
	pthread_rwlock_unlock(&fs->meta_lock);
	return ret;
}

/* ---- setattr ---------------------------------------------------------------------- */

/* Remove set-user-ID and set-group-ID as a write or truncate by a user does. */
static uint32_t zfs_kill_suid(const struct zfs_ctx *ctx, uint32_t mode)
{
	if (ctx && ctx->uid == 0)
		return mode;
	mode &= ~(uint32_t)S_ISUID;
	if ((mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP))
		mode &= ~(uint32_t)S_ISGID;
	return mode;
}

#define ZFS_TOUCH                                                            \
	(ZFS_SET_ATIME | ZFS_SET_ATIME_NOW | ZFS_SET_MTIME | ZFS_SET_MTIME_NOW)

static int zfs_setattr_check(const struct zfs_ctx *ctx, struct zm_inode *in,
			     const struct stat *a, unsigned int set)
{
	int ret;

	if ((set & ZFS_SET_MODE) && !zfs_is_owner(ctx, in))
		return -EPERM;
	if ((set & ZFS_SET_UID) && a->st_uid != in->uid && ctx && ctx->uid)
		return -EPERM;
	if ((set & ZFS_SET_GID) && a->st_gid != in->gid && ctx && ctx->uid &&
	    (ctx->uid != in->uid || !zfs_in_group(ctx, a->st_gid)))
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
	int64_t now = zfs_now();
	int ret;

	ret = zfs_check_writable(fs);
	if (ret)
		return ret;
	pthread_rwlock_wrlock(&fs->meta_lock);
	in = zm_iget(&fs->m, ino);
	if (!in) {
		ret = -ENOENT;
		goto out_unlock;
	}
	ret = zfs_setattr_check(ctx, in, a, set);
	if (ret)
		goto out_unlock;
	if (set & ZFS_SET_SIZE) {
		rt = zfs_rt_get(fs, in);
		if (!rt) {
			ret = -ENOMEM;
			goto out_unlock;
		}
		pthread_rwlock_wrlock(&rt->lock);
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
		/* chown of a non-directory clears set-ID bits, root's too. */
		if (!zm_is_dir(in) && ((set & ZFS_SET_UID && a->st_uid != in->uid) ||
				       (set & ZFS_SET_GID && a->st_gid != in->gid) ||
				       (ctx && ctx->uid))) {
			uint32_t m2 = mode & ~(uint32_t)S_ISUID;

			if (mode & S_IXGRP)
				m2 &= ~(uint32_t)S_ISGID;
			if (m2 != mode) {
				mode = m2;
				valid |= ZF_ATTR_MODE;
			}
		}
	}
	if (set & ZFS_SET_SIZE) {
		uint32_t m2 = zfs_kill_suid(ctx, mode);

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
	ret = zfs_log(fs, ZF_REC_SETATTR, &rec, sizeof(rec));
	if (rt)
		pthread_rwlock_unlock(&rt->lock);
	if (!ret)
		zfs_fill_stat(fs, in, st);
out_unlock:
	pthread_rwlock_unlock(&fs->meta_lock);
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
	int64_t now = zfs_now();
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
	ret = zfs_log(fs, ZF_REC_CREATE, rec,
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
	ret = zfs_check_writable(fs);
	if (ret)
		return ret;
	pthread_rwlock_wrlock(&fs->meta_lock);
	ret = zfs_get_dir(fs, parent, &dir);
	if (ret)
		goto out_unlock;
	e = zm_lookup(dir, name, len);
	if (e && open && !(flags & O_EXCL)) {
		/* create(2) of an existing file: an open of it. */
		pthread_rwlock_unlock(&fs->meta_lock);
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
		struct zfs_rt *rt = zfs_rt_get(fs, in);

		if (!rt) {
			/* The file exists but cannot be opened. */
			ret = -ENOMEM;
			goto out_unlock;
		}
		rt->group = parent;
		rt->seal_on_close = true;
		if (cachep)
			*cachep = zfs_cache_mode(in, rt, flags & O_ACCMODE);
	}
	__atomic_add_fetch(&in->nlookup, 1, __ATOMIC_RELAXED);
	if (open)
		in->nopen++;
	zfs_fill_stat(fs, in, st);
out_unlock:
	pthread_rwlock_unlock(&fs->meta_lock);
	return ret;
}

int zfs_mknod(struct zfs *fs, const struct zfs_ctx *ctx, uint64_t parent,
	      const char *name, mode_t mode, dev_t rdev, struct stat *st)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
	case S_IFIFO:
	case S_IFSOCK:
		break;
	case S_IFCHR:
	case S_IFBLK:
		/* Device nodes on a zoned data store: refused on purpose. */
		return -EPERM;
	default:
		return -EINVAL;
	}
	(void)rdev;
	return zfs_create_common(fs, ctx, parent, name, (uint32_t)mode & 0177777,
				 0, NULL, 0, false, NULL, st);
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
	ret = zfs_check_writable(fs);
	if (ret)
		return ret;
	pthread_rwlock_wrlock(&fs->meta_lock);
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
	rec->time = (int64_t)htole64((uint64_t)zfs_now());
	rec->name_len = htole16((uint16_t)len);
	memcpy(rec + 1, newname, len);
	ret = zfs_log(fs, ZF_REC_LINK, rec, (uint32_t)(sizeof(*rec) + len));
	if (ret)
		goto out_unlock;
	__atomic_add_fetch(&in->nlookup, 1, __ATOMIC_RELAXED);
	zfs_fill_stat(fs, in, st);
out_unlock:
	pthread_rwlock_unlock(&fs->meta_lock);
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
		zfs_rt_free(in);
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
	ret = zfs_check_writable(fs);
	if (ret)
		return ret;
	pthread_rwlock_wrlock(&fs->meta_lock);
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
	rec->time = (int64_t)htole64((uint64_t)zfs_now());
	rec->name_len = htole16((uint16_t)len);
	memcpy(rec + 1, name, len);
	zfs_last_link(fs, in);
	ret = zfs_log(fs, ZF_REC_UNLINK, rec, (uint32_t)(sizeof(*rec) + len));
out_unlock:
	pthread_rwlock_unlock(&fs->meta_lock);
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

	pthread_rwlock_rdlock(&fs->meta_lock);
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
	pthread_rwlock_unlock(&fs->meta_lock);
	if (!rt)
		return 0;
	ret = data_flush_inode(fs, rt);
	pthread_rwlock_wrlock(&fs->meta_lock);
	__atomic_sub_fetch(&in->npin, 1, __ATOMIC_RELAXED);
	if (!in->nlink && !zm_inode_busy(in))
		zfs_inode_maybe_free(fs, in); /* unlinked meanwhile */
	pthread_rwlock_unlock(&fs->meta_lock);
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
	ret = zfs_check_writable(fs);
	if (!ret && !(flags & ZFS_RENAME_NOREPLACE))
		ret = zfs_rename_flush(fs, parent, name, newparent, newname);
	if (ret)
		return ret;
	pthread_rwlock_wrlock(&fs->meta_lock);
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
	rec->time = (int64_t)htole64((uint64_t)zfs_now());
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
	ret = zfs_log(fs, ZF_REC_RENAME, rec,
		      (uint32_t)(sizeof(*rec) + slen + dlen));
out_unlock:
	pthread_rwlock_unlock(&fs->meta_lock);
	return ret;
}

int zfs_readlink(struct zfs *fs, uint64_t ino, char *buf, size_t size)
{
	struct zm_inode *in;
	int ret;

	pthread_rwlock_rdlock(&fs->meta_lock);
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
	pthread_rwlock_unlock(&fs->meta_lock);
	return ret;
}

/* ---- open, release ----------------------------------------------------------------------- */

int zfs_open(struct zfs *fs, const struct zfs_ctx *ctx, uint64_t ino,
	     int flags, unsigned int *cachep)
{
	unsigned int cache = 0;
	struct zfs_rt *rt;
	int acc = flags & O_ACCMODE, mask = 0, ret;
	struct zm_inode *in;
	struct stat st;

	if (acc == O_RDONLY || acc == O_RDWR)
		mask |= R_OK;
	if (acc == O_WRONLY || acc == O_RDWR)
		mask |= W_OK;
	if ((flags & O_TRUNC) && acc == O_RDONLY)
		mask |= W_OK;
	if ((mask & W_OK) && (ret = zfs_check_writable(fs)))
		return ret;
	pthread_rwlock_wrlock(&fs->meta_lock);
	in = zm_iget(&fs->m, ino);
	if (!in) {
		ret = -ENOENT;
		goto out_unlock;
	}
	if (zm_is_dir(in) && (mask & W_OK)) {
		ret = -EISDIR;
		goto out_unlock;
	}
	ret = zfs_perm(ctx, in, mask);
	if (ret)
		goto out_unlock;
	rt = zfs_rt_get(fs, in);
	if (!rt) {
		ret = -ENOMEM;
		goto out_unlock;
	}
	if (cachep)
		cache = zfs_cache_mode(in, rt, acc);
	in->nopen++;
	pthread_rwlock_unlock(&fs->meta_lock);
	if ((flags & O_TRUNC) && zm_is_reg(in)) {
		struct stat a = { .st_size = 0 };

		ret = zfs_setattr(fs, ctx, ino, &a,
				  ZFS_SET_SIZE | ZFS_SET_HAVE_FH, &st);
		if (ret) {
			zfs_release(fs, ino, cache);
			return ret;
		}
	}
	if (cachep)
		*cachep = cache;
	return 0;
out_unlock:
	pthread_rwlock_unlock(&fs->meta_lock);
	return ret;
}

int zfs_release(struct zfs *fs, uint64_t ino, unsigned int cache)
{
	struct zfs_rt *rt = NULL, *claimed = NULL;
	struct zfs_head *head = NULL;
	struct zm_inode *in;

	pthread_rwlock_wrlock(&fs->meta_lock);
	in = zm_iget(&fs->m, ino);
	if (in && in->nopen) {
		struct zfs_rt *irt = in->rt;

		if ((cache & ZFS_OPEN_NOCACHE) && irt && irt->nocache)
			irt->nocache--;
		in->nopen--;
		if (!in->nopen)
			rt = in->rt;
	}
	/*
	 * The last close of an unlinked file: its staged data will never be
	 * read, so it is dropped rather than written (which also unpins the
	 * inode, so that it is freed now, not when the data is written).
	 */
	if (rt && !in->nlink)
		data_discard(fs, rt);
	else if (rt && data_close_inode(fs, rt))
		claimed = rt; /* pinned: outlives meta_lock */
	if (in && !zm_inode_busy(in) && !in->nlink) {
		zfs_inode_maybe_free(fs, in);
		rt = NULL;
	}
	/* The last close of a large file gives its zone back. */
	if (rt)
		head = data_release_head(fs, rt);
	pthread_rwlock_unlock(&fs->meta_lock);
	if (head)
		alloc_put_head(fs, head);
	if (claimed)
		data_write_claimed(fs, claimed);
	return 0;
}

/* ---- data entry points -------------------------------------------------------------------- */

/*
 * relatime: atime is updated only if older than the last change or a day
 * old. Asked under meta_lock shared first, so that readers take the lock
 * exclusive about once a day per file, not once per read.
 */
static bool zfs_atime_due(struct zfs *fs, const struct zm_inode *in)
{
	return !fs->rdonly && !fs->error &&
	       (in->atime < in->mtime || in->atime < in->ctime ||
		zfs_now() - in->atime >= ZFS_DAY_NS);
}

/* meta_lock held exclusive. */
static void zfs_touch_atime(struct zfs *fs, struct zm_inode *in)
{
	int64_t now = zfs_now();
	struct zf_rec_setattr rec;

	if (!zfs_atime_due(fs, in))
		return;
	zfs_dattr(in, &rec.attr);
	rec.attr.atime = (int64_t)htole64((uint64_t)now);
	rec.valid = htole32(ZF_ATTR_ATIME);
	rec.reserved = 0;
	zfs_log(fs, ZF_REC_SETATTR, &rec, sizeof(rec));
}

void *zfs_read_buf(struct zfs *fs, size_t size)
{
	return data_read_buf(fs, size);
}

void zfs_read_buf_put(struct zfs *fs, void *buf, size_t size)
{
	data_read_buf_put(fs, buf, size);
}

ssize_t zfs_read(struct zfs *fs, uint64_t ino, void *buf, size_t size,
		 off_t off)
{
	struct zm_inode *in;
	bool due = false;
	ssize_t ret;

	if (off < 0)
		return -EINVAL;
	pthread_rwlock_rdlock(&fs->meta_lock);
	in = zm_iget(&fs->m, ino);
	if (!in)
		ret = -ENOENT;
	else if (zm_is_dir(in))
		ret = -EISDIR;
	else if (!zm_is_reg(in) || !in->rt)
		ret = -EBADF;
	else
		ret = data_read(fs, in, buf, size, (uint64_t)off);
	if (ret >= 0)
		due = zfs_atime_due(fs, in);
	pthread_rwlock_unlock(&fs->meta_lock);
	if (due) {
		pthread_rwlock_wrlock(&fs->meta_lock);
		in = zm_iget(&fs->m, ino);
		if (in && in->rt) {
			pthread_rwlock_wrlock(&((struct zfs_rt *)in->rt)->lock);
			zfs_touch_atime(fs, in);
			pthread_rwlock_unlock(&((struct zfs_rt *)in->rt)->lock);
		}
		pthread_rwlock_unlock(&fs->meta_lock);
	}
	return ret;
}

ssize_t zfs_write(struct zfs *fs, const struct zfs_ctx *ctx, uint64_t ino,
		  const void *buf, size_t size, off_t off, bool append)
{
	struct zm_inode *in;
	struct zfs_rt *rt;
	ssize_t ret;

	if (off < 0)
		return -EINVAL;
	ret = zfs_check_writable(fs);
	if (ret)
		return ret;
	if (!size)
		return 0;
	/* Space and memory first, with no lock held: they may wait. */
	data_throttle(fs);
	ret = alloc_reserve(fs, ZF_ROUND_UP(size, (uint64_t)fs->bs) + 2 * fs->bs);
	if (ret)
		return ret;
	pthread_rwlock_rdlock(&fs->meta_lock);
	in = zm_iget(&fs->m, ino);
	rt = in ? in->rt : NULL;
	if (!in) {
		ret = -ENOENT;
	} else if (!zm_is_reg(in) || !rt) {
		ret = zm_is_dir(in) ? -EISDIR : -EBADF;
	} else {
		pthread_rwlock_wrlock(&rt->lock);
		if (append)
			off = (off_t)data_vsize(in);
		if ((uint64_t)off + size > ZFS_MAX_FILE_SIZE) {
			ret = -EFBIG;
		} else {
			uint32_t mode = zfs_kill_suid(ctx, in->mode & 07777);

			if (mode != (in->mode & 07777)) {
				struct zf_rec_setattr rec;

				zfs_dattr(in, &rec.attr);
				rec.attr.mode = htole32(mode);
				rec.valid = htole32(ZF_ATTR_MODE);
				rec.reserved = 0;
				ret = zfs_log(fs, ZF_REC_SETATTR, &rec,
					      sizeof(rec));
			}
			if (!ret)
				ret = data_write(fs, in, buf, size,
						 (uint64_t)off);
		}
		pthread_rwlock_unlock(&rt->lock);
	}
	pthread_rwlock_unlock(&fs->meta_lock);
	/* data_write took what it needed from the reservation. */
	alloc_unreserve(fs, ZF_ROUND_UP(size, (uint64_t)fs->bs) + 2 * fs->bs);
	if (ret > 0)
		fs->host_bytes += (uint64_t)ret;
	return ret;
}

int zfs_fsync(struct zfs *fs, uint64_t ino, bool datasync)
{
	struct zm_inode *in;
	struct zfs_rt *rt;
	int ret = 0;

	(void)datasync;
	if (fs->rdonly)
		return 0;
	pthread_rwlock_rdlock(&fs->meta_lock);
	in = zm_iget(&fs->m, ino);
	rt = in ? in->rt : NULL;
	if (!in)
		ret = -ENOENT;
	pthread_rwlock_unlock(&fs->meta_lock);
	/*
	 * The rt outlives this window: it is freed only with meta_lock
	 * exclusive when the inode is idle, and the caller holds it open.
	 */
	if (!ret && rt)
		ret = data_flush_inode(fs, rt);
	if (!ret)
		ret = jrnl_commit(fs->j, UINT64_MAX);
	if (!ret && fs->error)
		ret = -EIO;
	return ret;
}

int zfs_sync(struct zfs *fs)
{
	int ret;

	if (fs->rdonly)
		return 0;
	ret = data_flush_all(fs);
	if (!ret)
		ret = jrnl_commit(fs->j, UINT64_MAX);
	return ret;
}

int zfs_lseek(struct zfs *fs, uint64_t ino, off_t off, int whence, off_t *res)
{
	struct zm_inode *in;
	struct zfs_rt *rt;
	int ret = 0;

	if (whence != SEEK_DATA && whence != SEEK_HOLE)
		return -EINVAL;
	if (off < 0)
		return -ENXIO;
	pthread_rwlock_rdlock(&fs->meta_lock);
	in = zm_iget(&fs->m, ino);
	rt = in ? in->rt : NULL;
	if (!in || !zm_is_reg(in)) {
		ret = in ? -EINVAL : -ENOENT;
		goto out_unlock;
	}
	if (rt)
		pthread_rwlock_rdlock(&rt->lock);
	if ((uint64_t)off >= data_vsize(in)) {
		ret = -ENXIO;
	} else {
		uint64_t vsize = data_vsize(in);
		/*
		 * Data is what extents and staged chunks cover; the rest is
		 * hole. Staged chunks are flushed by an fsync, so here they
		 * count as data wherever they are.
		 */
		uint64_t pos = (uint64_t)off, best_data = UINT64_MAX;
		uint32_t k = zm_extent_find(in, pos);
		struct zfs_chunk *c;
		bool in_data = false;

		if (k < in->f.n_ext && in->f.ext[k].foff <= pos)
			in_data = true;
		if (k < in->f.n_ext)
			best_data = ZF_MAX(in->f.ext[k].foff, pos);
		for (c = rt ? rt->open : NULL; c; c = c->next) {
			uint32_t i;

			for (i = 0; i < c->nr; i++) {
				uint64_t s = c->foff + c->fill[i].s;
				uint64_t e = c->foff + c->fill[i].e;

				if (e <= pos)
					continue;
				if (s <= pos)
					in_data = true;
				best_data = ZF_MIN(best_data, ZF_MAX(s, pos));
			}
		}
		if (whence == SEEK_DATA) {
			if (in_data)
				*res = off;
			else if (best_data < vsize)
				*res = (off_t)best_data;
			else
				ret = -ENXIO;
		} else {
			/*
			 * The end of the run of data at pos: walk extents
			 * while they touch. Staged data is conservatively
			 * counted up to the end of its chunk.
			 */
			uint64_t end = pos;
			bool moved = true;

			while (moved) {
				moved = false;
				k = zm_extent_find(in, end);
				if (k < in->f.n_ext && in->f.ext[k].foff <= end) {
					end = in->f.ext[k].foff + in->f.ext[k].len;
					moved = true;
				}
				for (c = rt ? rt->open : NULL; c; c = c->next) {
					uint32_t i;

					for (i = 0; i < c->nr; i++) {
						uint64_t s = c->foff + c->fill[i].s;
						uint64_t e = c->foff + c->fill[i].e;

						if (s <= end && e > end) {
							end = e;
							moved = true;
						}
					}
				}
			}
			*res = (off_t)ZF_MIN(end, vsize);
		}
	}
	if (rt)
		pthread_rwlock_unlock(&rt->lock);
out_unlock:
	pthread_rwlock_unlock(&fs->meta_lock);
	return ret;
}

int zfs_fallocate(struct zfs *fs, const struct zfs_ctx *ctx, uint64_t ino,
		  int mode, off_t off, off_t len)
{
	struct stat a, st;
	int ret;

	if (off < 0 || len <= 0)
		return -EINVAL;
	if (mode & ~FALLOC_FL_KEEP_SIZE)
		return -EOPNOTSUPP;
	/*
	 * Space cannot be preallocated in a zone (it is written only at the
	 * write pointer): fallocate extends the size, the blocks come when
	 * the data is written.
	 */
	if (mode & FALLOC_FL_KEEP_SIZE)
		return 0;
	ret = zfs_getattr(fs, ino, &st);
	if (ret)
		return ret;
	if (!S_ISREG(st.st_mode))
		return S_ISDIR(st.st_mode) ? -EISDIR : -ENODEV;
	if (off + len <= st.st_size)
		return 0;
	memset(&a, 0, sizeof(a));
	a.st_size = off + len;
	return zfs_setattr(fs, ctx, ino, &a, ZFS_SET_SIZE | ZFS_SET_HAVE_FH,
			   &st);
}

/* ---- directories ------------------------------------------------------------------------------ */

int zfs_opendir(struct zfs *fs, const struct zfs_ctx *ctx, uint64_t ino)
{
	struct zm_inode *in;
	int ret;

	pthread_rwlock_rdlock(&fs->meta_lock);
	in = zm_iget(&fs->m, ino);
	if (!in)
		ret = -ENOENT;
	else if (!zm_is_dir(in))
		ret = -ENOTDIR;
	else
		ret = zfs_perm(ctx, in, R_OK);
	pthread_rwlock_unlock(&fs->meta_lock);
	return ret;
}

int zfs_readdir(struct zfs *fs, uint64_t ino, off_t off, bool plus,
		zfs_fill_fn fill, void *arg)
{
	struct zm_inode *dir, *in;
	struct zm_dent *e;
	struct stat st;
	bool first = off < 1, due = false;
	int ret;

	pthread_rwlock_rdlock(&fs->meta_lock);
	ret = zfs_get_dir(fs, ino, &dir);
	if (ret)
		goto out_unlock;
	if (off < 1) {
		memset(&st, 0, sizeof(st));
		st.st_ino = dir->ino;
		st.st_mode = dir->mode;
		if (plus)
			zfs_fill_stat(fs, dir, &st);
		if (fill(arg, ".", &st, 1))
			goto out_unlock;
		off = 1;
	}
	if (off < 2) {
		/* A damaged parent pointer (fsck repairs it): show the dir. */
		in = zm_iget(&fs->m, dir->parent);
		if (!in)
			in = dir;
		memset(&st, 0, sizeof(st));
		st.st_ino = in->ino;
		st.st_mode = in->mode;
		if (plus)
			zfs_fill_stat(fs, in, &st);
		if (fill(arg, "..", &st, 2))
			goto out_unlock;
		off = 2;
	}
	for (e = zm_dir_next(dir, (uint64_t)off); e;
	     e = zm_dir_next(dir, e->cookie)) {
		in = zm_iget(&fs->m, e->ino);
		if (!in)
			continue; /* an entry naming no inode: fsck's to repair */
		memset(&st, 0, sizeof(st));
		st.st_ino = in->ino;
		st.st_mode = in->mode;
		if (plus)
			zfs_fill_stat(fs, in, &st);
		if (fill(arg, e->name, &st, (off_t)e->cookie))
			break;
		/* The kernel keeps what readdirplus returned. */
		if (plus)
			__atomic_add_fetch(&in->nlookup, 1, __ATOMIC_RELAXED);
	}
	due = first && zfs_atime_due(fs, dir);
out_unlock:
	pthread_rwlock_unlock(&fs->meta_lock);
	/*
	 * Listing a directory reads it: atime as ext4 keeps it (relatime),
	 * once per listing (its first chunk), not per getdents call.
	 */
	if (!ret && due) {
		pthread_rwlock_wrlock(&fs->meta_lock);
		dir = zm_iget(&fs->m, ino);
		if (dir && zm_is_dir(dir))
			zfs_touch_atime(fs, dir);
		pthread_rwlock_unlock(&fs->meta_lock);
	}
	return ret;
}

int zfs_fsyncdir(struct zfs *fs, uint64_t ino)
{
	(void)ino;
	if (fs->rdonly)
		return 0;
	return jrnl_commit(fs->j, UINT64_MAX);
}

/* ---- extended attributes -------------------------------------------------------------------------- */

static int zfs_xattr_ns(const char *name)
{
	if (strncmp(name, "user.", 5))
		return -EOPNOTSUPP;
	if (!name[5])
		return -EINVAL;
	if (strlen(name) > ZF_XATTR_NAME_MAX)
		return -ERANGE;
	return 0;
}

static bool zfs_xattr_virtual(const char *name)
{
	return !strcmp(name, ZFS_XATTR_EXTENTS) || !strcmp(name, ZFS_XATTR_STATS);
}

/* user.* xattrs live on files and directories only (xattr_permission). */
static int zfs_xattr_perm(const struct zfs_ctx *ctx, struct zm_inode *in,
			  int mask)
{
	if (!zm_is_reg(in) && !zm_is_dir(in))
		return mask & W_OK ? -EPERM : -ENODATA;
	if (zm_is_dir(in) && (in->mode & S_ISVTX) && (mask & W_OK) && ctx &&
	    ctx->uid && ctx->uid != in->uid)
		return -EPERM;
	return zfs_perm(ctx, in, mask);
}

int zfs_setxattr(struct zfs *fs, const struct zfs_ctx *ctx, uint64_t ino,
		 const char *name, const void *value, size_t size, int flags)
{
	struct zf_rec_xattr *rec;
	struct zm_inode *in;
	struct zm_xattr *x;
	size_t nlen;
	int ret;

	ret = zfs_xattr_ns(name);
	if (ret)
		return ret;
	if (zfs_xattr_virtual(name))
		return -EPERM;
	if (size > ZF_XATTR_VALUE_MAX)
		return -E2BIG;
	if (flags & ~(ZFS_XATTR_CREATE | ZFS_XATTR_REPLACE))
		return -EINVAL;
	ret = zfs_check_writable(fs);
	if (ret)
		return ret;
	nlen = strlen(name);
	rec = malloc(sizeof(*rec) + nlen + size);
	if (!rec)
		return -ENOMEM;
	pthread_rwlock_wrlock(&fs->meta_lock);
	in = zm_iget(&fs->m, ino);
	if (!in) {
		ret = -ENOENT;
		goto out_unlock;
	}
	ret = zfs_xattr_perm(ctx, in, W_OK);
	if (ret)
		goto out_unlock;
	x = zm_xattr_get(in, name, nlen);
	if (x && (flags & ZFS_XATTR_CREATE)) {
		ret = -EEXIST;
		goto out_unlock;
	}
	if (!x && (flags & ZFS_XATTR_REPLACE)) {
		ret = -ENODATA;
		goto out_unlock;
	}
	rec->ino = htole64(ino);
	rec->ctime = (int64_t)htole64((uint64_t)zfs_now());
	rec->value_len = htole32((uint32_t)size);
	rec->name_len = htole16((uint16_t)nlen);
	rec->reserved = 0;
	memcpy(rec + 1, name, nlen);
	if (size)
		memcpy((char *)(rec + 1) + nlen, value, size);
	ret = zfs_log(fs, ZF_REC_XATTR_SET, rec,
		      (uint32_t)(sizeof(*rec) + nlen + size));
out_unlock:
	pthread_rwlock_unlock(&fs->meta_lock);
	free(rec);
	return ret;
}

static ssize_t zfs_copy_out(const char *src, size_t len, void *dst,
			    size_t size)
{
	if (!size)
		return (ssize_t)len;
	if (size < len)
		return -ERANGE;
	memcpy(dst, src, len);
	return (ssize_t)len;
}

ssize_t zfs_getxattr(struct zfs *fs, uint64_t ino, const char *name,
		     void *value, size_t size)
{
	struct zm_inode *in;
	struct zm_xattr *x;
	ssize_t ret;

	ret = zfs_xattr_ns(name);
	if (ret)
		return ret;
	if (!strcmp(name, ZFS_XATTR_EXTENTS)) {
		char *buf = malloc(1 << 20);

		if (!buf)
			return -ENOMEM;
		ret = zfs_extents_text(fs, ino, buf, 1 << 20);
		if (ret >= 0)
			ret = zfs_copy_out(buf, (size_t)ret, value, size);
		free(buf);
		return ret;
	}
	if (!strcmp(name, ZFS_XATTR_STATS)) {
		struct zfs_stats st;
		char buf[4096];

		if (ino != ZF_ROOT_INO)
			return -ENODATA;
		ret = zfs_get_stats(fs, &st);
		if (!ret)
			ret = zfs_stats_json(&st, buf, sizeof(buf));
		if (ret >= 0)
			ret = zfs_copy_out(buf, (size_t)ret, value, size);
		return ret;
	}
	pthread_rwlock_rdlock(&fs->meta_lock);
	in = zm_iget(&fs->m, ino);
	if (!in) {
		ret = -ENOENT;
	} else if (!zm_is_reg(in) && !zm_is_dir(in)) {
		ret = -ENODATA;
	} else {
		x = zm_xattr_get(in, name, strlen(name));
		ret = x ? zfs_copy_out(x->data + x->name_len, x->value_len,
				       value, size) :
			  -ENODATA;
	}
	pthread_rwlock_unlock(&fs->meta_lock);
	return ret;
}

ssize_t zfs_listxattr(struct zfs *fs, uint64_t ino, char *list, size_t size)
{
	struct zm_inode *in;
	struct zm_xattr *x;
	size_t need = 0;
	ssize_t ret;

	pthread_rwlock_rdlock(&fs->meta_lock);
	in = zm_iget(&fs->m, ino);
	if (!in) {
		ret = -ENOENT;
		goto out_unlock;
	}
	for (x = in->xattrs; x; x = x->next)
		need += x->name_len + 1u;
	ret = (ssize_t)need;
	if (size && size < need) {
		ret = -ERANGE;
	} else if (size) {
		char *p = list;

		for (x = in->xattrs; x; x = x->next) {
			memcpy(p, x->data, x->name_len);
			p[x->name_len] = '\0';
			p += x->name_len + 1;
		}
	}
out_unlock:
	pthread_rwlock_unlock(&fs->meta_lock);
	return ret;
}

int zfs_removexattr(struct zfs *fs, const struct zfs_ctx *ctx, uint64_t ino,
		    const char *name)
{
	char buf[sizeof(struct zf_rec_xattr) + ZF_XATTR_NAME_MAX];
	struct zf_rec_xattr *rec = (void *)buf;
	struct zm_inode *in;
	size_t nlen;
	int ret;

	ret = zfs_xattr_ns(name);
	if (ret)
		return ret;
	if (zfs_xattr_virtual(name))
		return -EPERM;
	ret = zfs_check_writable(fs);
	if (ret)
		return ret;
	nlen = strlen(name);
	pthread_rwlock_wrlock(&fs->meta_lock);
	in = zm_iget(&fs->m, ino);
	if (!in) {
		ret = -ENOENT;
		goto out_unlock;
	}
	ret = zfs_xattr_perm(ctx, in, W_OK);
	if (ret)
		goto out_unlock;
	if (!zm_xattr_get(in, name, nlen)) {
		ret = -ENODATA;
		goto out_unlock;
	}
	rec->ino = htole64(ino);
	rec->ctime = (int64_t)htole64((uint64_t)zfs_now());
	rec->value_len = 0;
	rec->name_len = htole16((uint16_t)nlen);
	rec->reserved = 0;
	memcpy(rec + 1, name, nlen);
	ret = zfs_log(fs, ZF_REC_XATTR_DEL, rec, (uint32_t)(sizeof(*rec) + nlen));
out_unlock:
	pthread_rwlock_unlock(&fs->meta_lock);
	return ret;
}

/* ---- statistics ------------------------------------------------------------------------------------- */

int zfs_statfs(struct zfs *fs, struct statvfs *st)
{
	uint64_t cap, free, used, recl;

	alloc_space(fs, &cap, &free, &used, &recl);
	memset(st, 0, sizeof(*st));
	st->f_bsize = 4096;
	st->f_frsize = 4096;
	st->f_blocks = cap / 4096;
	st->f_bfree = ZF_MIN(free, cap) / 4096;
	st->f_bavail = st->f_bfree;
	pthread_rwlock_rdlock(&fs->meta_lock);
	/* No inode table to run out of: each new file costs a block or so. */
	st->f_ffree = st->f_bfree;
	st->f_files = fs->m.nr_inodes + st->f_ffree;
	pthread_rwlock_unlock(&fs->meta_lock);
	st->f_favail = st->f_ffree;
	st->f_namemax = ZF_NAME_MAX;
	st->f_fsid = le64toh(*(uint64_t *)fs->sb.uuid);
	if (fs->rdonly || fs->error)
		st->f_flag |= ST_RDONLY;
	return 0;
}

int zfs_get_stats(struct zfs *fs, struct zfs_stats *s)
{
	struct zdev_stats ds;
	struct jrnl_stats js;
	uint64_t sum = 0, n = 0;
	uint32_t i;

	memset(s, 0, sizeof(*s));
	alloc_space(fs, &s->capacity_bytes, &s->free_bytes, &s->used_bytes,
		    &s->reclaimable_bytes);
	jrnl_get_stats(fs->j, &js);
	zdev_get_stats(fs->dev, &ds);
	pthread_rwlock_rdlock(&fs->meta_lock);
	s->files = fs->m.nr_files;
	s->directories = fs->m.nr_dirs;
	pthread_mutex_lock(&fs->alloc_lock);
	s->zones_total = fs->m.nr_zones;
	s->resets_min = UINT64_MAX;
	for (i = 0; i < fs->m.nr_zones; i++) {
		struct zm_zone *z = &fs->m.zones[i];

		switch (z->state) {
		case ZM_ZONE_SUPER:
			s->zones_super++;
			s->meta_resets_max = ZF_MAX(s->meta_resets_max, z->resets);
			continue;
		case ZM_ZONE_META:
			/*
			 * The journal's zones come from the pool but are not
			 * reset while it uses them: count them with the
			 * metadata, not in the data zones' wear.
			 */
			s->zones_meta++;
			s->meta_resets_max = ZF_MAX(s->meta_resets_max, z->resets);
			continue;
		case ZM_ZONE_BAD:
			s->zones_bad++;
			continue;
		default:
			if (z->wp == z->start)
				s->zones_empty++;
			else if (z->wp >= z->start + z->cap)
				s->zones_full++;
			else if (z->flags & ZFS_ZF_HEAD)
				s->zones_open++;
			else
				s->zones_closed++;
			break;
		}
		/* Data and chain zones share the pool: their wear counts. */
		sum += z->resets;
		n++;
		s->resets_min = ZF_MIN(s->resets_min, z->resets);
		s->resets_max = ZF_MAX(s->resets_max, z->resets);
	}
	s->active_zones = fs->nr_active;
	pthread_mutex_unlock(&fs->alloc_lock);
	s->host_bytes_written = fs->base_host_bytes + fs->host_bytes;
	pthread_rwlock_unlock(&fs->meta_lock);
	if (!n)
		s->resets_min = 0;
	s->resets_total = sum;
	s->resets_mean = n ? (double)sum / (double)n : 0;
	s->meta_zones = s->zones_meta + s->zones_super;
	s->open_zones = s->zones_open;
	s->snap_seq = js.snap_seq;
	s->last_seq = jrnl_last_seq(fs->j);
	s->durable_seq = jrnl_durable_seq(fs->j);
	s->device_bytes_written = fs->base_device_bytes + ds.bytes_written;
	s->gc_bytes_written = fs->base_gc_bytes + fs->gc_bytes;
	s->meta_bytes_written = fs->base_meta_bytes + js.meta_bytes;
	s->device_bytes_read = ds.bytes_read;
	s->write_amplification =
		s->host_bytes_written ?
			(double)s->device_bytes_written /
				(double)s->host_bytes_written :
			-1;
	s->max_open = zdev_geom(fs->dev)->max_open;
	s->max_active = zdev_geom(fs->dev)->max_active;
	s->read_only = fs->rdonly || fs->error;
	s->error = fs->error;
	return 0;
}

int zfs_stats_json(const struct zfs_stats *s, char *buf, size_t size)
{
	char wa[32];
	int n;

	if (s->write_amplification < 0)
		snprintf(wa, sizeof(wa), "null");
	else
		snprintf(wa, sizeof(wa), "%.4f", s->write_amplification);
	n = snprintf(buf, size,
		     "{\"capacity_bytes\": %" PRIu64 ", \"used_bytes\": %" PRIu64
		     ", \"free_bytes\": %" PRIu64 ", \"reclaimable_bytes\": %" PRIu64
		     ", \"files\": %" PRIu64 ", \"directories\": %" PRIu64
		     ", \"zones_total\": %u, \"zones_empty\": %u, \"zones_open\": %u"
		     ", \"zones_closed\": %u, \"zones_full\": %u, \"meta_zones\": %u"
		     ", \"zones_bad\": %u, \"snapshot_seq\": %" PRIu64
		     ", \"last_seq\": %" PRIu64
		     ", \"host_bytes_written\": %" PRIu64
		     ", \"device_bytes_written\": %" PRIu64
		     ", \"gc_bytes_written\": %" PRIu64
		     ", \"meta_bytes_written\": %" PRIu64
		     ", \"device_bytes_read\": %" PRIu64
		     ", \"write_amplification\": %s"
		     ", \"resets_total\": %" PRIu64 ", \"resets_min\": %" PRIu64
		     ", \"resets_max\": %" PRIu64 ", \"resets_mean\": %.3f"
		     ", \"resets_spread\": %" PRIu64
		     ", \"meta_resets_max\": %" PRIu64
		     ", \"open_zones\": %u, \"active_zones\": %u"
		     ", \"max_open\": %u, \"max_active\": %u"
		     ", \"read_only\": %s}",
		     s->capacity_bytes, s->used_bytes, s->free_bytes,
		     s->reclaimable_bytes, s->files, s->directories,
		     s->zones_total, s->zones_empty, s->zones_open,
		     s->zones_closed, s->zones_full, s->meta_zones,
		     s->zones_bad, s->snap_seq, s->last_seq,
		     s->host_bytes_written, s->device_bytes_written,
		     s->gc_bytes_written, s->meta_bytes_written,
		     s->device_bytes_read, wa,
		     s->resets_total, s->resets_min, s->resets_max,
		     s->resets_mean, s->resets_max - s->resets_min,
		     s->meta_resets_max, s->open_zones,
		     s->active_zones, s->max_open, s->max_active,
		     s->read_only ? "true" : "false");
	if (n < 0 || (size_t)n >= size)
		return -ERANGE;
	return n;
}

ssize_t zfs_extents_text(struct zfs *fs, uint64_t ino, char *buf, size_t size)
{
	struct zm_inode *in;
	ssize_t ret = 0;
	size_t off = 0;
	uint32_t k;

	pthread_rwlock_rdlock(&fs->meta_lock);
	in = zm_iget(&fs->m, ino);
	if (!in) {
		ret = -ENOENT;
		goto out_unlock;
	}
	if (!zm_is_reg(in))
		goto out_unlock;
	if (in->rt)
		pthread_rwlock_rdlock(&((struct zfs_rt *)in->rt)->lock);
	for (k = 0; k < in->f.n_ext; k++) {
		const struct zm_extent *e = &in->f.ext[k];
		uint32_t z = zm_zone_of(&fs->m, e->addr);
		int n = snprintf(buf + off, size - off,
				 "zone %u offset %" PRIu64 " length %" PRIu64
				 " file_offset %" PRIu64 "\n",
				 z, e->addr - fs->m.zones[z].start, e->len,
				 e->foff);

		if (n < 0 || (size_t)n >= size - off) {
			ret = -E2BIG;
			break;
		}
		off += (size_t)n;
	}
	if (in->rt)
		pthread_rwlock_unlock(&((struct zfs_rt *)in->rt)->lock);
	if (!ret)
		ret = (ssize_t)off;
out_unlock:
	pthread_rwlock_unlock(&fs->meta_lock);
	return ret;
}

int zfs_reclaim_now(struct zfs *fs)
{
	return alloc_reclaim(fs);
}

/* ---- background: commit timer and reclaim ------------------------------------------------------ */

static int zfs_log_counters(struct zfs *fs)
{
	struct zf_rec_counters rec;
	struct jrnl_stats js;
	struct zdev_stats ds;
	int ret;

	/* Before meta_lock: the journal's committer may be waiting for it. */
	jrnl_get_stats(fs->j, &js);
	zdev_get_stats(fs->dev, &ds);
	pthread_rwlock_rdlock(&fs->meta_lock);
	rec.host_bytes = htole64(fs->base_host_bytes + fs->host_bytes);
	rec.device_bytes = htole64(fs->base_device_bytes + ds.bytes_written);
	rec.gc_bytes = htole64(fs->base_gc_bytes + fs->gc_bytes);
	rec.meta_bytes = htole64(fs->base_meta_bytes + js.meta_bytes);
	if (le64toh(rec.host_bytes) == fs->m.counters.host_bytes &&
	    le64toh(rec.device_bytes) == fs->m.counters.device_bytes) {
		pthread_rwlock_unlock(&fs->meta_lock);
		return 0;
	}
	ret = zfs_log(fs, ZF_REC_COUNTERS, &rec, sizeof(rec));
	pthread_rwlock_unlock(&fs->meta_lock);
	return ret;
}

static void *zfs_bg_main(void *arg)
{
	struct zfs *fs = arg;
	uint64_t interval = (uint64_t)fs->opts.commit_ms * 1000000ull;
	uint64_t next = zutil_now_mono_ns() + interval;

	pthread_mutex_lock(&fs->bg_lock);
	while (!fs->bg_stop) {
		struct timespec ts;
		uint64_t now = zutil_now_mono_ns();
		bool kick, dead;

		if (fs->opts.no_reclaim_thread)
			fs->bg_dead = false;
		if (!fs->bg_kick && !fs->bg_dead && now < next) {
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += (time_t)((next - now) / 1000000000ull);
			ts.tv_nsec += (long)((next - now) % 1000000000ull);
			if (ts.tv_nsec >= 1000000000l) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000l;
			}
			pthread_cond_timedwait(&fs->bg_cv, &fs->bg_lock, &ts);
			continue;
		}
		kick = fs->bg_kick;
		dead = fs->bg_dead;
		fs->bg_kick = fs->bg_dead = false;
		pthread_mutex_unlock(&fs->bg_lock);
		if (!fs->error) {
			if (zutil_now_mono_ns() >= next) {
				data_seal_idle(fs, interval / 2);
				data_pool_trim(fs);
				zfs_log_counters(fs);
				jrnl_commit(fs->j, UINT64_MAX);
				next = zutil_now_mono_ns() + interval;
			} else if (dead) {
				/* Group commit: one for a whole rm -r. */
				jrnl_commit(fs->j, UINT64_MAX);
			}
			if (!fs->opts.no_reclaim_thread || kick)
				alloc_reclaim(fs);
			/*
			 * Free zones low: empty one zone, commit the moves
			 * (the commit kicks this thread again to reset it).
			 */
			fs->space_low = gc_wanted(fs);
			if (!fs->opts.no_reclaim_thread && fs->space_low &&
			    gc_collect(fs, 1, false) > 0)
				jrnl_commit(fs->j, UINT64_MAX);
		}
		pthread_mutex_lock(&fs->bg_lock);
	}
	pthread_mutex_unlock(&fs->bg_lock);
	return NULL;
}

/* ---- mount, unmount ------------------------------------------------------------------------------------ */

static void zfs_free(struct zfs *fs)
{
	uint32_t i;

	if (fs->m.itab) {
		for (i = 0; i <= fs->m.imask; i++) {
			struct zm_inode *in;

			for (in = fs->m.itab[i]; in; in = in->hnext)
				if (in->rt) {
					data_rt_free(fs, in->rt);
					zfs_rt_free(in);
				}
		}
	}
	data_pool_free(fs);
	alloc_destroy(fs);
	zm_destroy(&fs->m);
	pthread_rwlock_destroy(&fs->meta_lock);
	pthread_mutex_destroy(&fs->alloc_lock);
	pthread_cond_destroy(&fs->alloc_cv);
	pthread_mutex_destroy(&fs->wb_lock);
	pthread_cond_destroy(&fs->wb_cv);
	pthread_cond_destroy(&fs->stage_cv);
	pthread_mutex_destroy(&fs->bg_lock);
	pthread_cond_destroy(&fs->bg_cv);
	pthread_mutex_destroy(&fs->gc_lock);
	pthread_mutex_destroy(&fs->lost_lock);
	free(fs->lost);
	free(fs);
}

int zfs_mount(const char *path, const struct zfs_opts *opts,
	      struct zfs **fsp, char *err, size_t errlen)
{
	struct jrnl_replay_info info;
	struct zfs *fs;
	int ret;

	fs = calloc(1, sizeof(*fs));
	if (!fs)
		return -ENOMEM;
	if (opts)
		fs->opts = *opts;
	if (!fs->opts.commit_ms)
		fs->opts.commit_ms = ZFS_DEFAULT_COMMIT_MS;
	if (!fs->opts.stage_bytes)
		fs->opts.stage_bytes = ZFS_DEFAULT_STAGE_BYTES;
	fs->rdonly = fs->opts.rdonly;
	pthread_rwlock_init(&fs->meta_lock, NULL);
	pthread_mutex_init(&fs->alloc_lock, NULL);
	pthread_cond_init(&fs->alloc_cv, NULL);
	pthread_mutex_init(&fs->wb_lock, NULL);
	pthread_cond_init(&fs->wb_cv, NULL);
	pthread_cond_init(&fs->stage_cv, NULL);
	pthread_mutex_init(&fs->bg_lock, NULL);
	pthread_mutex_init(&fs->lost_lock, NULL);
	pthread_cond_init(&fs->bg_cv, NULL);
	pthread_mutex_init(&fs->gc_lock, NULL);

	ret = zdev_open(path,
			(fs->rdonly ? ZDEV_RDONLY |
					      (fs->opts.no_lock ? 0 : ZDEV_EXCL) :
				      ZDEV_EXCL) |
				(fs->opts.wait_busy ? ZDEV_WAIT : 0),
			&fs->dev, err, errlen);
	if (ret)
		goto out_free;
	fs->bs = zdev_geom(fs->dev)->block_size;
	ret = jrnl_open(fs->dev,
			(fs->rdonly ? JRNL_RDONLY : 0) |
				(fs->opts.salvage ? JRNL_SALVAGE : 0),
			&fs->m, &fs->j, &fs->sb, &info, err, errlen);
	if (ret)
		goto out_close;
	jrnl_set_cb(fs->j, &alloc_jrnl_cb, fs);
	fs->replay = info;
	fs->base_host_bytes = fs->m.counters.host_bytes;
	fs->base_device_bytes = fs->m.counters.device_bytes;
	fs->base_gc_bytes = fs->m.counters.gc_bytes;
	fs->base_meta_bytes = fs->m.counters.meta_bytes;
	ret = alloc_init(fs);
	if (ret)
		goto out_jrnl;
	if (!fs->rdonly) {
		if (info.damaged)
			zlog_err("%s: the metadata journal is damaged: replay stopped at %s, and records up to seq %" PRIu64 " after it are lost; run `zonefuse fsck %s`",
				 path, info.stop, info.damaged_seq, path);
		else if (!info.clean)
			zlog_info("%s: the last session did not unmount cleanly (%s); starting a new metadata snapshot",
				  path, info.stop);
		ret = jrnl_start(fs->j);
		if (ret) {
			zutil_err(err, errlen,
				  "%s: writing the metadata snapshot failed: %s",
				  path, strerror(-ret));
			goto out_alloc;
		}
	}
	if (!fs->opts.defer_threads) {
		ret = zfs_start(fs);
		if (ret)
			goto out_alloc;
	}
	*fsp = fs;
	return 0;

out_alloc:
	alloc_destroy(fs);
out_jrnl:
	jrnl_close(fs->j, false);
	fs->j = NULL;
	zm_destroy(&fs->m);
out_close:
	zdev_close(fs->dev);
out_free:
	fs->m.itab = NULL;
	zfs_free(fs);
	return ret;
}

int zfs_start(struct zfs *fs)
{
	int ret;

	ret = data_init(fs);
	if (ret || fs->rdonly)
		return ret;
	ret = pthread_create(&fs->bg_thread, NULL, zfs_bg_main, fs);
	if (ret) {
		data_stop(fs);
		return -ret;
	}
	fs->bg_started = true;
	return 0;
}

static void zfs_bg_stop(struct zfs *fs)
{
	if (!fs->bg_started)
		return;
	pthread_mutex_lock(&fs->bg_lock);
	fs->bg_stop = true;
	pthread_cond_signal(&fs->bg_cv);
	pthread_mutex_unlock(&fs->bg_lock);
	pthread_join(fs->bg_thread, NULL);
	fs->bg_started = false;
}

int zfs_unmount(struct zfs *fs)
{
	int ret = 0, r;

	if (!fs->rdonly && !fs->error) {
		ret = data_flush_all(fs);
		zfs_bg_stop(fs);
		/*
		 * Zones whose data was deleted leave empty: the heads let go
		 * of theirs, the freeing records are made durable, and then
		 * the resets can be journaled before the last commit.
		 */
		alloc_release_heads(fs);
		if (!ret)
			ret = jrnl_commit(fs->j, UINT64_MAX);
		alloc_reclaim(fs);
		if (!ret)
			ret = zfs_log_counters(fs);
	} else {
		zfs_bg_stop(fs);
	}
	data_stop(fs);
	r = jrnl_close(fs->j, !fs->rdonly && !fs->error && !ret);
	if (!ret)
		ret = r;
	if (!ret && fs->error)
		ret = fs->error;
	fs->j = NULL;
	if (!fs->rdonly) {
		r = zdev_flush(fs->dev);
		if (!ret)
			ret = r;
	}
	zdev_close(fs->dev);
	zfs_free(fs);
	return ret;
}

void zfs_crash(struct zfs *fs)
{
	/* Nothing more reaches the device: stop threads, drop everything. */
	atomic_store(&fs->error, -ESHUTDOWN);
	zfs_bg_stop(fs);
	data_stop(fs);
	jrnl_close(fs->j, false);
	fs->j = NULL;
	zdev_close(fs->dev);
	zfs_free(fs);
}
