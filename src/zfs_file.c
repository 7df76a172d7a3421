// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Open files: open and release, the data entry points (read, write,
 * fsync, sync, lseek, fallocate) and directories (opendir, readdir,
 * fsyncdir), with the atime they keep (relatime).
 *
 * Apart from the namespace (zfs.c) because these work on an inode the
 * kernel already holds, not on names: they check the handle's access,
 * then hand the bytes to the data path (data.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <string.h>
#include <unistd.h>

#include "zfs_i.h"
#include "zonefuse/util.h"

#define ZFS_DAY_NS (86400ll * 1000000000ll)

_Static_assert(!(ZFS_O_EXEC & (O_ACCMODE | O_CREAT | O_EXCL | O_NOCTTY |
			       O_TRUNC | O_APPEND | O_NONBLOCK)),
	       "ZFS_O_EXEC collides with an open(2) flag");

/* ---- open, release ----------------------------------------------------------------------- */

int zfs_open(struct zfs *fs, const struct zfs_ctx *ctx, uint64_t ino,
	     int flags, unsigned int *cachep)
{
	unsigned int cache = 0;
	struct zfs_rt *rt;
	int acc = flags & O_ACCMODE, mask = 0, ret;
	struct zm_inode *in;
	struct stat st;

	/* execve(2) opens for reading but needs only execute permission. */
	if (flags & ZFS_O_EXEC)
		mask |= X_OK;
	else if (acc == O_RDONLY || acc == O_RDWR)
		mask |= R_OK;
	if (acc == O_WRONLY || acc == O_RDWR)
		mask |= W_OK;
	if ((flags & O_TRUNC) && acc == O_RDONLY)
		mask |= W_OK;
	if ((mask & W_OK) && (ret = rec_writable(fs)))
		return ret;
	zlock_wr(&fs->meta_lock, ZLOCK_META);
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
	rt = data_rt_get(fs, in);
	if (!rt) {
		ret = -ENOMEM;
		goto out_unlock;
	}
	if (cachep)
		cache = zfs_cache_mode(in, rt, acc);
	if (acc != O_RDONLY && !in->nopen)
		data_open_write(rt);
	in->nopen++;
	zlock_unrw(&fs->meta_lock);
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
	zlock_unrw(&fs->meta_lock);
	return ret;
}

int zfs_release(struct zfs *fs, uint64_t ino, unsigned int cache)
{
	struct zfs_rt *rt = NULL, *claimed = NULL;
	struct zfs_head *head = NULL;
	struct zm_inode *in;

	zlock_wr(&fs->meta_lock, ZLOCK_META);
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
		data_inode_maybe_free(fs, in);
		rt = NULL;
	}
	/* The last close of a large file gives its zone back. */
	if (rt)
		head = data_release_head(fs, rt);
	zlock_unrw(&fs->meta_lock);
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
		zutil_now_real_ns() - in->atime >= ZFS_DAY_NS);
}

/* meta_lock held exclusive. */
static void zfs_touch_atime(struct zfs *fs, struct zm_inode *in)
{
	int64_t now = zutil_now_real_ns();
	struct zf_rec_setattr rec;

	if (!zfs_atime_due(fs, in))
		return;
	zfs_dattr(in, &rec.attr);
	rec.attr.atime = (int64_t)htole64((uint64_t)now);
	rec.valid = htole32(ZF_ATTR_ATIME);
	rec.reserved = 0;
	rec_log(fs, ZF_REC_SETATTR, &rec, sizeof(rec));
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
	zlock_rd(&fs->meta_lock, ZLOCK_META);
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
	zlock_unrw(&fs->meta_lock);
	if (due) {
		zlock_wr(&fs->meta_lock, ZLOCK_META);
		in = zm_iget(&fs->m, ino);
		if (in && in->rt) {
			zlock_wr(&((struct zfs_rt *)in->rt)->lock, ZLOCK_RT);
			zfs_touch_atime(fs, in);
			zlock_unrw(&((struct zfs_rt *)in->rt)->lock);
		}
		zlock_unrw(&fs->meta_lock);
	}
	return ret;
}

/*
 * What a write of @size bytes at @off of @in must have admitted by
 * space_reserve(): its blocks, and two more for the partial blocks at its
 * edges, less what the file has reserved there (fallocate): a write
 * wholly inside reserved blocks needs nothing more, and so cannot fail
 * with ENOSPC. Caller holds meta_lock and the file's rt lock (the ranges
 * change under both).
 */
static uint64_t zfs_write_need(struct zfs *fs, const struct zm_inode *in,
			       uint64_t off, size_t size)
{
	uint64_t bs = fs->bs, s = ZF_ROUND_DOWN(off, bs);
	uint64_t e = ZF_ROUND_UP(off + size, bs);
	uint64_t covered = in->f.n_pre ? zm_pre_overlap(in, s, e) : 0;

	if (covered == e - s)
		return 0;
	return ZF_ROUND_UP((uint64_t)size, bs) + 2 * bs - covered;
}

ssize_t zfs_write(struct zfs *fs, const struct zfs_ctx *ctx, uint64_t ino,
		  const void *buf, size_t size, off_t off, bool append)
{
	uint64_t admitted = 0, need;
	struct zm_inode *in;
	struct zfs_rt *rt;
	ssize_t ret;

	if (off < 0)
		return -EINVAL;
	ret = rec_writable(fs);
	if (ret)
		return ret;
	if (!size)
		return 0;
	/*
	 * Space and memory first, with no lock held: they may wait. While
	 * files have reserved blocks, what this write needs is known only
	 * under the locks (zfs_write_need()): it is looked at there first,
	 * and the write comes back here for what it lacks.
	 */
	data_throttle(fs);
	need = alloc_prealloc_bytes(fs) ? 0 :
		ZF_ROUND_UP(size, (uint64_t)fs->bs) + 2 * fs->bs;
again:
	if (need > admitted) {
		ret = space_reserve(fs, need - admitted);
		if (ret)
			goto out_unreserve;
		admitted = need;
	}
	zlock_rd(&fs->meta_lock, ZLOCK_META);
	in = zm_iget(&fs->m, ino);
	rt = in ? in->rt : NULL;
	if (!in) {
		ret = -ENOENT;
	} else if (!zm_is_reg(in) || !rt) {
		ret = zm_is_dir(in) ? -EISDIR : -EBADF;
	} else {
		zlock_wr(&rt->lock, ZLOCK_RT);
		if (append)
			off = (off_t)data_vsize(in);
		need = zfs_write_need(fs, in, (uint64_t)off, size);
		if (need > admitted) {
			zlock_unrw(&rt->lock);
			zlock_unrw(&fs->meta_lock);
			goto again;
		}
		if ((uint64_t)off + size > ZFS_MAX_FILE_SIZE) {
			ret = -EFBIG;
		} else {
			uint32_t mode = zfs_kill_suid(ctx, in->gid,
						      in->mode & 07777);

			if (mode != (in->mode & 07777)) {
				struct zf_rec_setattr rec;

				zfs_dattr(in, &rec.attr);
				rec.attr.mode = htole32(mode);
				rec.valid = htole32(ZF_ATTR_MODE);
				rec.reserved = 0;
				ret = rec_log(fs, ZF_REC_SETATTR, &rec,
					      sizeof(rec));
			}
			if (!ret)
				ret = data_write(fs, in, buf, size,
						 (uint64_t)off);
		}
		zlock_unrw(&rt->lock);
	}
	zlock_unrw(&fs->meta_lock);
	if (ret > 0) {
		fs->host_bytes += (uint64_t)ret;
		atomic_store(&fs->last_write_ns, zutil_now_mono_ns());
	}
out_unreserve:
	/* data_write took what it needed from the reservation. */
	if (admitted)
		alloc_unreserve(fs, admitted);
	return ret;
}

int zfs_fsync(struct zfs *fs, uint64_t ino, bool datasync)
{
	uint64_t t0 = zutil_now_mono_ns(), t;
	struct zm_inode *in;
	struct zfs_rt *rt;
	int ret = 0;

	(void)datasync;
	if (fs->rdonly)
		return 0;
	zlock_rd(&fs->meta_lock, ZLOCK_META);
	in = zm_iget(&fs->m, ino);
	rt = in ? in->rt : NULL;
	if (!in)
		ret = -ENOENT;
	zlock_unrw(&fs->meta_lock);
	/*
	 * The rt outlives this window: it is freed only with meta_lock
	 * exclusive when the inode is idle, and the caller holds it open.
	 */
	t = zutil_now_mono_ns();
	if (!ret && rt)
		ret = data_fsync_inode(fs, rt);
	fs->fsync_data_ns += zutil_now_mono_ns() - t;
	if (!ret)
		ret = jrnl_commit(fs->j, UINT64_MAX);
	if (!ret && fs->error)
		ret = -EIO;
	fs->fsyncs++;
	fs->fsync_ns += zutil_now_mono_ns() - t0;
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
	zlock_rd(&fs->meta_lock, ZLOCK_META);
	in = zm_iget(&fs->m, ino);
	rt = in ? in->rt : NULL;
	if (!in || !zm_is_reg(in)) {
		ret = in ? -EINVAL : -ENOENT;
		goto out_unlock;
	}
	if (rt)
		zlock_rd(&rt->lock, ZLOCK_RT);
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
		zlock_unrw(&rt->lock);
out_unlock:
	zlock_unrw(&fs->meta_lock);
	return ret;
}

/*
 * fallocate(2), modes 0 and FALLOC_FL_KEEP_SIZE: a zone is written only
 * at its write pointer, so nothing is written now; the blocks of the range
 * that hold no data are reserved instead (a PREALLOC record): counted as
 * used from now on, so that this call says ENOSPC if they do not fit and
 * a later write into them never does (zfs_write_need()). Staged data is
 * written out first, so that its blocks count as data, not as holes.
 */
int zfs_fallocate(struct zfs *fs, const struct zfs_ctx *ctx, uint64_t ino,
		  int mode, off_t off, off_t len)
{
	uint64_t bs = fs->bs, start, end, admitted = 0, need;
	struct zf_rec_prealloc rec;
	struct zm_inode *in;
	struct zfs_rt *rt;
	int ret;

	(void)ctx; /* the kernel checked the open is writable */
	if (off < 0 || len <= 0)
		return -EINVAL;
	if (mode & ~FALLOC_FL_KEEP_SIZE)
		return -EOPNOTSUPP;
	if ((uint64_t)off > ZFS_MAX_FILE_SIZE ||
	    (uint64_t)len > ZFS_MAX_FILE_SIZE - (uint64_t)off)
		return -EFBIG;
	ret = rec_writable(fs);
	if (ret)
		return ret;
	start = ZF_ROUND_DOWN((uint64_t)off, bs);
	end = ZF_ROUND_UP((uint64_t)off + (uint64_t)len, bs);
	for (;;) {
		zlock_wr(&fs->meta_lock, ZLOCK_META);
		in = zm_iget(&fs->m, ino);
		if (!in || !zm_is_reg(in)) {
			ret = !in ? -ENOENT : zm_is_dir(in) ? -EISDIR : -ENODEV;
			goto out_unlock;
		}
		rt = data_rt_get(fs, in);
		if (!rt) {
			ret = -ENOMEM;
			goto out_unlock;
		}
		if (rt->open || rt->wb_first) {
			/* The rt lives while the caller holds the file open. */
			zlock_unrw(&fs->meta_lock);
			ret = data_flush_inode(fs, rt);
			if (ret)
				goto out_unreserve;
			zlock_wr(&fs->meta_lock, ZLOCK_META);
			in = zm_iget(&fs->m, ino);
			if (!in || in->rt != rt) {
				ret = -ENOENT;
				goto out_unlock;
			}
		}
		need = zm_pre_need(&fs->m, in, start, end);
		if (need <= admitted)
			break;
		zlock_unrw(&fs->meta_lock);
		ret = space_reserve(fs, need - admitted);
		if (ret)
			goto out_unreserve;
		admitted = need;
	}
	memset(&rec, 0, sizeof(rec));
	rec.ino = htole64(ino);
	rec.off = htole64(start);
	rec.len = htole64(end - start);
	if (!(mode & FALLOC_FL_KEEP_SIZE))
		rec.size = htole64((uint64_t)off + (uint64_t)len);
	rec.ctime = (int64_t)htole64((uint64_t)zutil_now_real_ns());
	ret = rec_log(fs, ZF_REC_PREALLOC, &rec, sizeof(rec));
out_unlock:
	zlock_unrw(&fs->meta_lock);
out_unreserve:
	/* The record counts the reserved blocks now: the admission goes. */
	if (admitted)
		alloc_unreserve(fs, admitted);
	return ret;
}

/* ---- directories ------------------------------------------------------------------------------ */

int zfs_opendir(struct zfs *fs, const struct zfs_ctx *ctx, uint64_t ino)
{
	struct zm_inode *in;
	int ret;

	zlock_rd(&fs->meta_lock, ZLOCK_META);
	in = zm_iget(&fs->m, ino);
	if (!in)
		ret = -ENOENT;
	else if (!zm_is_dir(in))
		ret = -ENOTDIR;
	else
		ret = zfs_perm(ctx, in, R_OK);
	zlock_unrw(&fs->meta_lock);
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

	zlock_rd(&fs->meta_lock, ZLOCK_META);
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
	zlock_unrw(&fs->meta_lock);
	/*
	 * Listing a directory reads it: atime as ext4 keeps it (relatime),
	 * once per listing (its first chunk), not per getdents call.
	 */
	if (!ret && due) {
		zlock_wr(&fs->meta_lock, ZLOCK_META);
		dir = zm_iget(&fs->m, ino);
		if (dir && zm_is_dir(dir))
			zfs_touch_atime(fs, dir);
		zlock_unrw(&fs->meta_lock);
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
