// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The FUSE edge: each low-level operation is a thin fs_ll_<op>() that
 * calls the library (zfs.h) and sends exactly one reply. This is the only
 * place where a negative errno becomes the positive one FUSE replies take.
 *
 * Round trips are what a FUSE file system costs (each is two context
 * switches), so the kernel is asked as little as it allows:
 * - Every change reaches the file system through this kernel mount (the
 *   device is locked to one daemon, and nothing the daemon does on its
 *   own, such as reclaim, changes what stat shows), so the kernel's caches
 *   cannot go stale behind its back: entries and attributes are cached for
 *   a minute (FS_LL_TIMEOUT), and so are names that are not there (a
 *   negative entry, as ext4's dentry cache keeps them): a program probing
 *   for a file, or an import scanning its path, asks once. The kernel
 *   itself drops what an operation changes (sizes after a write, atime
 *   after a read, link counts) and turns a negative entry into the file
 *   created, linked or renamed onto its name. An rm then needs no lookup
 *   first.
 * - There is no flush operation: close(2) has nothing to do here (data is
 *   staged at write, and the last close is release), and the kernel stops
 *   sending FLUSH once it is told the operation does not exist.
 * - The page cache is kept across opens (keep_cache) so that a dataloader
 *   re-reading a file reads memory, except where zfs_open() says otherwise
 *   (ZFS_OPEN_* in zfs.h). A write-only open of a file no one has open
 *   bypasses it (direct_io). Through the page cache, each 1 MiB write
 *   was copied into it by the writer before the daemon copied it out, and
 *   each write(2) cost a GETXATTR of security.capability (the kernel's
 *   set-ID check, which the uncached path leaves to the daemon, as
 *   zfs_write() does; the cached path has since lost it too, xport.c's
 *   FUSE_HANDLE_KILLPRIV_V2). Without them, dd went 1.4-1.6 -> 1.9-3.1 GB/s,
 *   torch.save 1.2-1.3 -> 1.5-1.9 GB/s, create+write+close 5,300-5,700 ->
 *   6,000-6,400 files/s, and the rm of a 2 GiB checkpoint 90 ms -> under
 *   10 ms (it had the kernel drop the written pages).
 * - The caching chosen at open rides in the handle (fi->fh) to release.
 */
#define FUSE_USE_VERSION 314

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <fuse_lowlevel.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuse_ll.h"
#include "xport.h"
#include "zonefuse/util.h"
#include "zonefuse/zfs.h"

#define FS_LL_TIMEOUT 60.0 /* seconds: see the top of the file */

static struct zfs *fs_of(fuse_req_t req)
{
	return ((struct fs_ll *)fuse_req_userdata(req))->fs;
}

/*
 * The caller's identity. Its supplementary groups cost a read of
 * /proc/PID/task/TID/status (fuse_req_getgroups): only the operations that
 * check permissions against a group ask for them.
 */
static void fs_ctx_ids(fuse_req_t req, struct zfs_ctx *c)
{
	const struct fuse_ctx *fc = fuse_req_ctx(req);

	memset(c, 0, sizeof(*c));
	c->uid = fc->uid;
	c->gid = fc->gid;
	/* The kernel applied the umask already (no FUSE_CAP_DONT_MASK). */
	c->umask = 0;
}

static void fs_ctx(fuse_req_t req, struct zfs_ctx *c)
{
	gid_t groups[ZF_ARRAY_SIZE(c->groups)];
	int n, i;

	fs_ctx_ids(req, c);
	if (!c->uid)
		return; /* root passes group checks anyway */
	n = fuse_req_getgroups(req, (int)ZF_ARRAY_SIZE(groups), groups);
	for (i = 0; i < n && i < (int)ZF_ARRAY_SIZE(groups); i++)
		c->groups[c->ngroups++] = groups[i];
}

static void fs_trace(const char *op, uint64_t ino, const char *name, int ret)
{
	if (ret < 0)
		zlog_debug("%s ino=%" PRIu64 "%s%s -> %s", op, ino,
			   name ? " name=" : "", name ? name : "",
			   strerror(-ret));
	else
		zlog_debug("%s ino=%" PRIu64 "%s%s -> %d", op, ino,
			   name ? " name=" : "", name ? name : "", ret);
}

static void fs_reply_entry(fuse_req_t req, int ret, const struct stat *st)
{
	struct fuse_entry_param e;

	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = st->st_ino;
	e.attr = *st;
	e.attr_timeout = FS_LL_TIMEOUT;
	e.entry_timeout = FS_LL_TIMEOUT;
	fuse_reply_entry(req, &e);
}

static void fs_ll_init(void *userdata, struct fuse_conn_info *conn)
{
	const struct fs_ll *ll = userdata;

	/* 1 MiB requests: one staging chunk per write. */
	conn->max_write = ZFS_CHUNK;
	/*
	 * libfuse has already lowered max_readahead to the kernel's offer
	 * (the bdi's 128 KiB); asking for more is how the raised
	 * read_ahead_kb survives the INIT reply (fuse_ll.h).
	 */
	conn->max_readahead = ll->readahead;
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	if (conn->capable & FUSE_CAP_EXPORT_SUPPORT)
		conn->want |= FUSE_CAP_EXPORT_SUPPORT;
	/* A symlink's target never changes: the kernel may keep it. */
	if (conn->capable & FUSE_CAP_CACHE_SYMLINKS)
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	/*
	 * An O_DIRECT write through a cached handle drops the written range
	 * from the page cache again once it completes, but only if it
	 * completes within the syscall: asynchronous direct I/O (io_uring,
	 * libaio) left pages a reader brought in meanwhile, with the old
	 * bytes (docs/design.md, "The page cache").
	 */
	conn->want &= ~FUSE_CAP_ASYNC_DIO;
}

static void fs_ll_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct zfs_ctx c;
	struct stat st;
	int ret = 0;

	/*
	 * Without default_permissions the kernel checks nothing on a path
	 * walk: searching a directory needs its execute bit (root passes).
	 */
	fs_ctx(req, &c);
	if (c.uid)
		ret = zfs_access(fs_of(req), &c, parent, X_OK);
	if (!ret)
		ret = zfs_lookup(fs_of(req), parent, name, &st);

	fs_trace("lookup", parent, name, ret);
	if (ret == -ENOENT) {
		/* A negative entry: the kernel caches the absence (top). */
		struct fuse_entry_param e = { .entry_timeout = FS_LL_TIMEOUT };

		fuse_reply_entry(req, &e);
		return;
	}
	fs_reply_entry(req, ret, &st);
}

static void fs_ll_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	zfs_forget(fs_of(req), ino, nlookup);
	fuse_reply_none(req);
}

static void fs_ll_forget_multi(fuse_req_t req, size_t count,
			       struct fuse_forget_data *forgets)
{
	size_t i;

	for (i = 0; i < count; i++)
		zfs_forget(fs_of(req), forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void fs_ll_getattr(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	struct stat st;
	int ret = zfs_getattr(fs_of(req), ino, &st);

	(void)fi;
	fs_trace("getattr", ino, NULL, ret);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_attr(req, &st, FS_LL_TIMEOUT);
}

static void fs_ll_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
			  int to_set, struct fuse_file_info *fi)
{
	struct zfs_ctx c;
	struct stat st;
	unsigned int set = (unsigned int)to_set &
			   (ZFS_SET_MODE | ZFS_SET_UID | ZFS_SET_GID |
			    ZFS_SET_SIZE | ZFS_SET_ATIME | ZFS_SET_MTIME |
			    ZFS_SET_ATIME_NOW | ZFS_SET_MTIME_NOW |
			    ZFS_SET_CTIME);
	int ret;

	fs_ctx(req, &c);
	if (fi)
		set |= ZFS_SET_HAVE_FH;
	ret = zfs_setattr(fs_of(req), &c, ino, attr, set, &st);
	fs_trace("setattr", ino, NULL, ret);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_attr(req, &st, FS_LL_TIMEOUT);
}

static void fs_ll_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char buf[4097];
	int ret = zfs_readlink(fs_of(req), ino, buf, sizeof(buf));

	fs_trace("readlink", ino, NULL, ret);
	if (ret < 0)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_readlink(req, buf);
}

static void fs_ll_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
			mode_t mode, dev_t rdev)
{
	struct zfs_ctx c;
	struct stat st;
	int ret;

	fs_ctx(req, &c);
	ret = zfs_mknod(fs_of(req), &c, parent, name, mode, rdev, &st);
	fs_trace("mknod", parent, name, ret);
	fs_reply_entry(req, ret, &st);
}

static void fs_ll_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
			mode_t mode)
{
	struct zfs_ctx c;
	struct stat st;
	int ret;

	fs_ctx(req, &c);
	ret = zfs_mkdir(fs_of(req), &c, parent, name, mode, &st);
	fs_trace("mkdir", parent, name, ret);
	fs_reply_entry(req, ret, &st);
}

static void fs_ll_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct zfs_ctx c;
	int ret;

	fs_ctx(req, &c);
	ret = zfs_unlink(fs_of(req), &c, parent, name);
	fs_trace("unlink", parent, name, ret);
	fuse_reply_err(req, -ret);
}

static void fs_ll_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct zfs_ctx c;
	int ret;

	fs_ctx(req, &c);
	ret = zfs_rmdir(fs_of(req), &c, parent, name);
	fs_trace("rmdir", parent, name, ret);
	fuse_reply_err(req, -ret);
}

static void fs_ll_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
			  const char *name)
{
	struct zfs_ctx c;
	struct stat st;
	int ret;

	fs_ctx(req, &c);
	ret = zfs_symlink(fs_of(req), &c, parent, name, link, &st);
	fs_trace("symlink", parent, name, ret);
	fs_reply_entry(req, ret, &st);
}

static void fs_ll_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
			 fuse_ino_t newparent, const char *newname,
			 unsigned int flags)
{
	struct zfs_ctx c;
	int ret;

	fs_ctx(req, &c);
	ret = zfs_rename(fs_of(req), &c, parent, name, newparent, newname,
			 flags);
	fs_trace("rename", parent, name, ret);
	fuse_reply_err(req, -ret);
}

static void fs_ll_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		       const char *newname)
{
	struct zfs_ctx c;
	struct stat st;
	int ret;

	fs_ctx(req, &c);
	ret = zfs_link(fs_of(req), &c, ino, newparent, newname, &st);
	fs_trace("link", ino, newname, ret);
	fs_reply_entry(req, ret, &st);
}

/* What the kernel is told of the caching zfs_open() chose (ZFS_OPEN_*). */
static void fs_set_cache(struct fuse_file_info *fi, unsigned int cache)
{
	fi->direct_io = (cache & ZFS_OPEN_NOCACHE) != 0;
	fi->keep_cache = (cache & ZFS_OPEN_DROPCACHE) == 0;
	fi->fh = cache;
}

static void fs_ll_open(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	unsigned int cache;
	struct zfs_ctx c;
	int ret;

	fs_ctx(req, &c);
	ret = zfs_open(fs_of(req), &c, ino, fi->flags, &cache);
	fs_trace("open", ino, NULL, ret);
	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	fs_set_cache(fi, cache);
	if (fuse_reply_open(req, fi) == -ENOENT)
		zfs_release(fs_of(req), ino, cache); /* interrupted */
}

static void fs_ll_create(fuse_req_t req, fuse_ino_t parent, const char *name,
			 mode_t mode, struct fuse_file_info *fi)
{
	struct fuse_entry_param e;
	unsigned int cache;
	struct zfs_ctx c;
	int ret;

	fs_ctx(req, &c);
	memset(&e, 0, sizeof(e));
	ret = zfs_create(fs_of(req), &c, parent, name, mode, fi->flags,
			 &e.attr, &cache);
	fs_trace("create", parent, name, ret);
	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	e.ino = e.attr.st_ino;
	e.attr_timeout = FS_LL_TIMEOUT;
	e.entry_timeout = FS_LL_TIMEOUT;
	fs_set_cache(fi, cache);
	if (fuse_reply_create(req, &e, fi) == -ENOENT) {
		/* The caller was interrupted: undo the open and the lookup. */
		zfs_release(fs_of(req), e.ino, cache);
		zfs_forget(fs_of(req), e.ino, 1);
	}
}

/*
 * On the io_uring transport the data is read straight into the ring
 * entry's payload buffer, where the reply goes: no copy of it in the
 * daemon (xp_reply_buf()).
 */
static void fs_ll_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct zfs *fs = fs_of(req); /* the reply frees req */
	char *ring = xp_reply_buf(size);
	char *buf = ring ? ring : zfs_read_buf(fs, size);
	ssize_t ret;

	(void)fi;
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	ret = zfs_read(fs, ino, buf, size, off);
	if (ret < 0) {
		fs_trace("read", ino, NULL, (int)ret);
		fuse_reply_err(req, (int)-ret);
	} else {
		fuse_reply_buf(req, buf, (size_t)ret);
	}
	if (!ring)
		zfs_read_buf_put(fs, buf, size);
}

static void fs_ll_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
			size_t size, off_t off, struct fuse_file_info *fi)
{
	struct zfs_ctx c;
	ssize_t ret;

	fs_ctx_ids(req, &c); /* only the uid matters: set-ID clearing */
	ret = zfs_write(fs_of(req), &c, ino, buf, size, off,
			(fi->flags & O_APPEND) != 0);
	if (ret < 0) {
		fs_trace("write", ino, NULL, (int)ret);
		fuse_reply_err(req, (int)-ret);
	} else {
		fuse_reply_write(req, (size_t)ret);
	}
}

static void fs_ll_release(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	fuse_reply_err(req, -zfs_release(fs_of(req), ino, (unsigned int)fi->fh));
}

static void fs_ll_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
			struct fuse_file_info *fi)
{
	int ret = zfs_fsync(fs_of(req), ino, datasync != 0);

	(void)fi;
	fs_trace("fsync", ino, NULL, ret);
	fuse_reply_err(req, -ret);
}

static void fs_ll_opendir(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	struct zfs_ctx c;
	int ret;

	fs_ctx(req, &c);
	ret = zfs_opendir(fs_of(req), &c, ino);
	fs_trace("opendir", ino, NULL, ret);
	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	/*
	 * The kernel keeps the listing and serves the next opendir from it
	 * while the directory's change counter and mtime are those it was
	 * read at: every change comes through this mount (top).
	 */
	fi->cache_readdir = 1;
	fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

struct fs_dirbuf {
	fuse_req_t req;
	char *buf;
	size_t size, len;
	bool plus;
};

static int fs_dir_fill(void *arg, const char *name, const struct stat *st,
		       off_t next)
{
	struct fs_dirbuf *d = arg;
	size_t n;

	if (d->plus) {
		struct fuse_entry_param e;

		memset(&e, 0, sizeof(e));
		e.ino = st->st_ino;
		e.attr = *st;
		e.attr_timeout = FS_LL_TIMEOUT;
		e.entry_timeout = FS_LL_TIMEOUT;
		n = fuse_add_direntry_plus(d->req, d->buf + d->len,
					   d->size - d->len, name, &e, next);
	} else {
		n = fuse_add_direntry(d->req, d->buf + d->len, d->size - d->len,
				      name, st, next);
	}
	if (n > d->size - d->len)
		return 1; /* full: this entry is not in the buffer */
	d->len += n;
	return 0;
}

static void fs_readdir_common(fuse_req_t req, fuse_ino_t ino, size_t size,
			      off_t off, bool plus)
{
	struct fs_dirbuf d = { .req = req, .size = size, .plus = plus };
	int ret;

	d.buf = malloc(size);
	if (!d.buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	ret = zfs_readdir(fs_of(req), ino, off, plus, fs_dir_fill, &d);
	fs_trace(plus ? "readdirplus" : "readdir", ino, NULL, ret);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_buf(req, d.buf, d.len);
	free(d.buf);
}

static void fs_ll_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
			  off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	fs_readdir_common(req, ino, size, off, false);
}

static void fs_ll_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
			      off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	fs_readdir_common(req, ino, size, off, true);
}

static void fs_ll_releasedir(fuse_req_t req, fuse_ino_t ino,
			     struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

static void fs_ll_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
			   struct fuse_file_info *fi)
{
	(void)datasync;
	(void)fi;
	fuse_reply_err(req, -zfs_fsyncdir(fs_of(req), ino));
}

static void fs_ll_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs st;
	int ret = zfs_statfs(fs_of(req), &st);

	(void)ino;
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_statfs(req, &st);
}

static void fs_ll_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			   const char *value, size_t size, int flags)
{
	struct zfs_ctx c;
	int ret;

	fs_ctx(req, &c);
	ret = zfs_setxattr(fs_of(req), &c, ino, name, value, size, flags);
	fs_trace("setxattr", ino, name, ret);
	fuse_reply_err(req, -ret);
}

static void fs_ll_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			   size_t size)
{
	char *buf = size ? malloc(size) : NULL;
	struct zfs_ctx c;
	ssize_t ret;

	if (size && !buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	fs_ctx(req, &c);
	ret = zfs_getxattr(fs_of(req), &c, ino, name, buf, size);
	fs_trace("getxattr", ino, name, ret < 0 ? (int)ret : 0);
	if (ret < 0)
		fuse_reply_err(req, (int)-ret);
	else if (!size)
		fuse_reply_xattr(req, (size_t)ret);
	else
		fuse_reply_buf(req, buf, (size_t)ret);
	free(buf);
}

static void fs_ll_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	char *buf = size ? malloc(size) : NULL;
	ssize_t ret;

	if (size && !buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	ret = zfs_listxattr(fs_of(req), ino, buf, size);
	if (ret < 0)
		fuse_reply_err(req, (int)-ret);
	else if (!size)
		fuse_reply_xattr(req, (size_t)ret);
	else
		fuse_reply_buf(req, buf, (size_t)ret);
	free(buf);
}

static void fs_ll_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct zfs_ctx c;
	int ret;

	fs_ctx(req, &c);
	ret = zfs_removexattr(fs_of(req), &c, ino, name);
	fs_trace("removexattr", ino, name, ret);
	fuse_reply_err(req, -ret);
}

static void fs_ll_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	struct zfs_ctx c;

	fs_ctx(req, &c);
	fuse_reply_err(req, -zfs_access(fs_of(req), &c, ino, mask));
}

static void fs_ll_fallocate(fuse_req_t req, fuse_ino_t ino, int mode,
			    off_t off, off_t len, struct fuse_file_info *fi)
{
	struct zfs_ctx c;
	int ret;

	(void)fi;
	fs_ctx(req, &c);
	ret = zfs_fallocate(fs_of(req), &c, ino, mode, off, len);
	fs_trace("fallocate", ino, NULL, ret);
	fuse_reply_err(req, -ret);
}

static void fs_ll_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
			struct fuse_file_info *fi)
{
	off_t res;
	int ret;

	(void)fi;
	ret = zfs_lseek(fs_of(req), ino, off, whence, &res);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_lseek(req, res);
}

const struct fuse_lowlevel_ops fs_ll_ops = {
	.init = fs_ll_init,
	.lookup = fs_ll_lookup,
	.forget = fs_ll_forget,
	.forget_multi = fs_ll_forget_multi,
	.getattr = fs_ll_getattr,
	.setattr = fs_ll_setattr,
	.readlink = fs_ll_readlink,
	.mknod = fs_ll_mknod,
	.mkdir = fs_ll_mkdir,
	.unlink = fs_ll_unlink,
	.rmdir = fs_ll_rmdir,
	.symlink = fs_ll_symlink,
	.rename = fs_ll_rename,
	.link = fs_ll_link,
	.open = fs_ll_open,
	.create = fs_ll_create,
	.read = fs_ll_read,
	.write = fs_ll_write,
	.release = fs_ll_release,
	.fsync = fs_ll_fsync,
	.opendir = fs_ll_opendir,
	.readdir = fs_ll_readdir,
	.readdirplus = fs_ll_readdirplus,
	.releasedir = fs_ll_releasedir,
	.fsyncdir = fs_ll_fsyncdir,
	.statfs = fs_ll_statfs,
	.setxattr = fs_ll_setxattr,
	.getxattr = fs_ll_getxattr,
	.listxattr = fs_ll_listxattr,
	.removexattr = fs_ll_removexattr,
	.access = fs_ll_access,
	.fallocate = fs_ll_fallocate,
	.lseek = fs_ll_lseek,
};
