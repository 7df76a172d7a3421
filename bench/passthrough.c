// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * passthrough - the FUSE peer of bench/run.sh: a minimal passthrough file
 * system over a backing directory.
 *
 * It exists so that a benchmark can separate what FUSE itself costs from
 * what zonefuse costs. So it does the least a FUSE file system can do, with
 * the FUSE settings zonefuse uses (src/fuse_ll.c, src/cli_mount.c): the
 * low-level API, a multi-threaded session loop of 10 threads, 1 MiB
 * max_write and readahead, no writeback cache, keep_cache on open. Two
 * settings differ, as a passthrough needs them to: entries and attributes
 * are cached for a second (its backing directory may change under it;
 * zonefuse owns its device and caches for a minute), and close(2) sends a
 * FLUSH (a passthrough's close must reach its backing file; zonefuse has
 * no flush operation). With
 * `-o splice` it also splices data between /dev/fuse and the backing files,
 * as libfuse's example/passthrough_ll.c does; zonefuse does not, so the
 * benchmark leaves it off unless asked.
 *
 * Inodes: each inode the kernel knows holds an O_PATH descriptor of the
 * backing file; the FUSE node id is the address of its struct pt_inode.
 * Inodes are found again by (st_dev, st_ino) in a hash, so that hard links
 * and repeated lookups share one node. Files are opened through
 * /proc/self/fd/N, which turns an O_PATH descriptor into a real one.
 *
 * It implements what the benchmark's workloads need and nothing more: no
 * symlinks, hard links, xattrs, mknod or locks (those get ENOSYS). It runs
 * as root over a directory root owns, so it checks no permissions itself.
 */
#define FUSE_USE_VERSION 314

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define PT_TIMEOUT 1.0
#define PT_MAX_WRITE (1u << 20) /* as zonefuse: one staging chunk */
#define PT_THREADS 10 /* as zonefuse's default */
#define PT_HASH_MIN 1024u

struct pt_inode {
	struct pt_inode *next; /* hash chain; protected by pt.lock */
	int fd; /* O_PATH descriptor; immutable */
	dev_t dev; /* immutable */
	ino_t ino; /* immutable */
	uint64_t nlookup; /* protected by pt.lock */
};

struct pt {
	/* The inode hash. A leaf lock: nothing else is taken under it. */
	pthread_mutex_t lock;
	struct pt_inode **tab; /* protected by lock */
	size_t nbuckets; /* protected by lock; a power of two */
	size_t count; /* protected by lock */
	struct pt_inode root; /* FUSE_ROOT_ID; never in the hash */
	int proc_fd; /* /proc/self/fd */
	bool splice;
};

/* An open directory: its stream and where the last readdir stopped. */
struct pt_dir {
	DIR *dp;
	struct dirent *pending; /* read but not yet sent; NULL if none */
	off_t pos; /* cookie after the last entry sent */
};

static struct pt *pt_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static struct pt_inode *pt_inode_of(fuse_req_t req, fuse_ino_t ino)
{
	if (ino == FUSE_ROOT_ID)
		return &pt_of(req)->root;
	return (struct pt_inode *)(uintptr_t)ino;
}

static size_t pt_bucket(const struct pt *pt, dev_t dev, ino_t ino)
{
	uint64_t h = (uint64_t)ino * 0x9e3779b97f4a7c15ull ^ (uint64_t)dev;

	return (size_t)(h >> 20) & (pt->nbuckets - 1);
}

/*
 * Double the hash when it holds more inodes than buckets, so that a lookup
 * stays one or two steps however many files the benchmark creates. A
 * failed allocation leaves the old table: slower, still correct.
 */
static void pt_hash_grow(struct pt *pt)
{
	size_t old = pt->nbuckets, i;
	struct pt_inode **tab = calloc(old * 2, sizeof(*tab));
	struct pt_inode **otab = pt->tab;

	if (!tab)
		return;
	pt->tab = tab;
	pt->nbuckets = old * 2;
	for (i = 0; i < old; i++) {
		struct pt_inode *in = otab[i], *next;

		for (; in; in = next) {
			size_t b = pt_bucket(pt, in->dev, in->ino);

			next = in->next;
			in->next = tab[b];
			tab[b] = in;
		}
	}
	free(otab);
}

/*
 * Find the node of the backing file @fd names and take one lookup
 * reference on it, or make a new node that owns @fd. Takes @fd in every
 * case. Returns 0 and fills @e, or a negative errno.
 */
static int pt_node_get(struct pt *pt, int fd, struct fuse_entry_param *e)
{
	struct pt_inode *in;
	struct stat st;
	size_t b;

	if (fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0) {
		int ret = -errno;

		close(fd);
		return ret;
	}
	pthread_mutex_lock(&pt->lock);
	b = pt_bucket(pt, st.st_dev, st.st_ino);
	for (in = pt->tab[b]; in; in = in->next)
		if (in->dev == st.st_dev && in->ino == st.st_ino)
			break;
	if (in) {
		in->nlookup++;
		close(fd);
	} else {
		in = calloc(1, sizeof(*in));
		if (!in) {
			pthread_mutex_unlock(&pt->lock);
			close(fd);
			return -ENOMEM;
		}
		in->fd = fd;
		in->dev = st.st_dev;
		in->ino = st.st_ino;
		in->nlookup = 1;
		in->next = pt->tab[b];
		pt->tab[b] = in;
		if (++pt->count > pt->nbuckets)
			pt_hash_grow(pt);
	}
	pthread_mutex_unlock(&pt->lock);

	memset(e, 0, sizeof(*e));
	e->ino = (fuse_ino_t)(uintptr_t)in;
	e->attr = st;
	e->attr_timeout = PT_TIMEOUT;
	e->entry_timeout = PT_TIMEOUT;
	return 0;
}

/* Drop @n lookup references; the last one frees the node. */
static void pt_node_put(struct pt *pt, struct pt_inode *in, uint64_t n)
{
	struct pt_inode **p;

	if (in == &pt->root)
		return;
	pthread_mutex_lock(&pt->lock);
	in->nlookup = n < in->nlookup ? in->nlookup - n : 0;
	if (in->nlookup) {
		pthread_mutex_unlock(&pt->lock);
		return;
	}
	p = &pt->tab[pt_bucket(pt, in->dev, in->ino)];
	while (*p != in)
		p = &(*p)->next;
	*p = in->next;
	pt->count--;
	pthread_mutex_unlock(&pt->lock);
	close(in->fd);
	free(in);
}

/* "/proc/self/fd/N" relative to pt->proc_fd: just "N". */
static void pt_fd_name(const struct pt_inode *in, char *buf, size_t len)
{
	snprintf(buf, len, "%d", in->fd);
}

static int pt_do_lookup(struct pt *pt, struct pt_inode *dir, const char *name,
			struct fuse_entry_param *e)
{
	int fd = openat(dir->fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	return pt_node_get(pt, fd, e);
}

static void pt_reply_entry(fuse_req_t req, int ret,
			   const struct fuse_entry_param *e)
{
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_entry(req, e);
}

static void pt_ll_init(void *userdata, struct fuse_conn_info *conn)
{
	struct pt *pt = userdata;

	conn->max_write = PT_MAX_WRITE;
	conn->max_readahead = PT_MAX_WRITE;
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	if (pt->splice) {
		if (conn->capable & FUSE_CAP_SPLICE_WRITE)
			conn->want |= FUSE_CAP_SPLICE_WRITE;
		if (conn->capable & FUSE_CAP_SPLICE_MOVE)
			conn->want |= FUSE_CAP_SPLICE_MOVE;
	} else {
		conn->want &= ~(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE |
				FUSE_CAP_SPLICE_MOVE);
	}
}

static void pt_ll_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	int ret = pt_do_lookup(pt_of(req), pt_inode_of(req, parent), name, &e);

	pt_reply_entry(req, ret, &e);
}

static void pt_ll_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	pt_node_put(pt_of(req), pt_inode_of(req, ino), nlookup);
	fuse_reply_none(req);
}

static void pt_ll_forget_multi(fuse_req_t req, size_t count,
			       struct fuse_forget_data *forgets)
{
	size_t i;

	for (i = 0; i < count; i++)
		pt_node_put(pt_of(req), pt_inode_of(req, forgets[i].ino),
			    forgets[i].nlookup);
	fuse_reply_none(req);
}

static void pt_ll_getattr(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	struct pt_inode *in = pt_inode_of(req, ino);
	struct stat st;

	(void)fi;
	if (fstatat(in->fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
		fuse_reply_err(req, errno);
	else
		fuse_reply_attr(req, &st, PT_TIMEOUT);
}

/*
 * Apply the changes one at a time, as passthrough_ll does: a failure part
 * way leaves the earlier ones made, which a local file system's setattr
 * would not, but no workload here depends on it.
 */
static int pt_do_setattr(struct pt *pt, struct pt_inode *in, struct stat *attr,
			 int set, struct fuse_file_info *fi, struct stat *out)
{
	char name[32];
	int ret;

	pt_fd_name(in, name, sizeof(name));
	if (set & FUSE_SET_ATTR_MODE) {
		ret = fi ? fchmod((int)fi->fh, attr->st_mode) :
			   fchmodat(pt->proc_fd, name, attr->st_mode, 0);
		if (ret < 0)
			return -errno;
	}
	if (set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) {
		uid_t uid = set & FUSE_SET_ATTR_UID ? attr->st_uid : (uid_t)-1;
		gid_t gid = set & FUSE_SET_ATTR_GID ? attr->st_gid : (gid_t)-1;

		if (fchownat(in->fd, "", uid, gid,
			     AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
			return -errno;
	}
	if (set & FUSE_SET_ATTR_SIZE) {
		if (fi) {
			ret = ftruncate((int)fi->fh, attr->st_size);
		} else {
			int fd =
				openat(pt->proc_fd, name, O_WRONLY | O_CLOEXEC);

			if (fd < 0)
				return -errno;
			ret = ftruncate(fd, attr->st_size);
			close(fd);
		}
		if (ret < 0)
			return -errno;
	}
	if (set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME)) {
		struct timespec tv[2] = {{.tv_nsec = UTIME_OMIT},
					 {.tv_nsec = UTIME_OMIT}};

		if (set & FUSE_SET_ATTR_ATIME_NOW)
			tv[0].tv_nsec = UTIME_NOW;
		else if (set & FUSE_SET_ATTR_ATIME)
			tv[0] = attr->st_atim;
		if (set & FUSE_SET_ATTR_MTIME_NOW)
			tv[1].tv_nsec = UTIME_NOW;
		else if (set & FUSE_SET_ATTR_MTIME)
			tv[1] = attr->st_mtim;
		ret = fi ? futimens((int)fi->fh, tv) :
			   utimensat(pt->proc_fd, name, tv, 0);
		if (ret < 0)
			return -errno;
	}
	if (fstatat(in->fd, "", out, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	return 0;
}

static void pt_ll_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
			  int to_set, struct fuse_file_info *fi)
{
	struct stat st;
	int ret = pt_do_setattr(pt_of(req), pt_inode_of(req, ino), attr, to_set,
				fi, &st);

	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_attr(req, &st, PT_TIMEOUT);
}

static void pt_ll_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
			mode_t mode)
{
	struct pt_inode *dir = pt_inode_of(req, parent);
	struct fuse_entry_param e;
	int ret = 0;

	if (mkdirat(dir->fd, name, mode) < 0)
		ret = -errno;
	if (!ret)
		ret = pt_do_lookup(pt_of(req), dir, name, &e);
	pt_reply_entry(req, ret, &e);
}

static void pt_ll_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	int ret = unlinkat(pt_inode_of(req, parent)->fd, name, 0);

	fuse_reply_err(req, ret < 0 ? errno : 0);
}

static void pt_ll_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	int ret = unlinkat(pt_inode_of(req, parent)->fd, name, AT_REMOVEDIR);

	fuse_reply_err(req, ret < 0 ? errno : 0);
}

static void pt_ll_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
			 fuse_ino_t newparent, const char *newname,
			 unsigned int flags)
{
	int ret = renameat2(pt_inode_of(req, parent)->fd, name,
			    pt_inode_of(req, newparent)->fd, newname, flags);

	fuse_reply_err(req, ret < 0 ? errno : 0);
}

static void pt_ll_open(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct pt *pt = pt_of(req);
	char name[32];
	int fd;

	pt_fd_name(pt_inode_of(req, ino), name, sizeof(name));
	fd = openat(pt->proc_fd, name,
		    (fi->flags & ~(O_NOFOLLOW | O_CREAT)) | O_CLOEXEC);
	if (fd < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	fi->fh = (uint64_t)fd;
	fi->keep_cache = 1;
	if (fuse_reply_open(req, fi) == -ENOENT)
		close(fd); /* the caller was interrupted */
}

static void pt_ll_create(fuse_req_t req, fuse_ino_t parent, const char *name,
			 mode_t mode, struct fuse_file_info *fi)
{
	struct pt_inode *dir = pt_inode_of(req, parent);
	struct fuse_entry_param e;
	int fd, ret;

	fd = openat(dir->fd, name,
		    (fi->flags & ~O_NOFOLLOW) | O_CREAT | O_CLOEXEC, mode);
	if (fd < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	ret = pt_do_lookup(pt_of(req), dir, name, &e);
	if (ret) {
		close(fd);
		fuse_reply_err(req, -ret);
		return;
	}
	fi->fh = (uint64_t)fd;
	fi->keep_cache = 1;
	if (fuse_reply_create(req, &e, fi) == -ENOENT) {
		/* The caller was interrupted: undo the open and the lookup. */
		close(fd);
		pt_node_put(pt_of(req), pt_inode_of(req, e.ino), 1);
	}
}

/*
 * With splice, libfuse moves the data from the backing file to /dev/fuse
 * through a pipe. Without, the data is read into a buffer of our own, as
 * zonefuse does: libfuse's own fallback (fuse_reply_data on a descriptor)
 * takes a fresh page-aligned buffer per request, which glibc serves with
 * an mmap and munmap each time, a cost no file system needs to pay.
 */
static void pt_ll_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct fuse_bufvec bv = FUSE_BUFVEC_INIT(size);
	size_t done = 0;
	char *buf;

	(void)ino;
	if (pt_of(req)->splice) {
		bv.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
		bv.buf[0].fd = (int)fi->fh;
		bv.buf[0].pos = off;
		fuse_reply_data(req, &bv, FUSE_BUF_SPLICE_MOVE);
		return;
	}
	buf = malloc(size ? size : 1);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	while (done < size) {
		ssize_t n = pread((int)fi->fh, buf + done, size - done,
				  off + (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fuse_reply_err(req, errno);
			goto out_free;
		}
		if (!n)
			break; /* end of file */
		done += (size_t)n;
	}
	fuse_reply_buf(req, buf, done);
out_free:
	free(buf);
}

static void pt_ll_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
			size_t size, off_t off, struct fuse_file_info *fi)
{
	size_t done = 0;

	(void)ino;
	while (done < size) {
		ssize_t n = pwrite((int)fi->fh, buf + done, size - done,
				   off + (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fuse_reply_err(req, errno);
			return;
		}
		if (!n)
			break;
		done += (size_t)n;
	}
	fuse_reply_write(req, done);
}

/* Only with -o splice: the data comes as a pipe, spliced to the file. */
static void pt_ll_write_buf(fuse_req_t req, fuse_ino_t ino,
			    struct fuse_bufvec *in, off_t off,
			    struct fuse_file_info *fi)
{
	struct fuse_bufvec out = FUSE_BUFVEC_INIT(fuse_buf_size(in));
	ssize_t n;

	(void)ino;
	out.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	out.buf[0].fd = (int)fi->fh;
	out.buf[0].pos = off;
	n = fuse_buf_copy(&out, in, 0);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_write(req, (size_t)n);
}

/* As zonefuse's: close() has nothing to write back on a local file. */
static void pt_ll_flush(fuse_req_t req, fuse_ino_t ino,
			struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

static void pt_ll_release(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	(void)ino;
	close((int)fi->fh);
	fuse_reply_err(req, 0);
}

static void pt_ll_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
			struct fuse_file_info *fi)
{
	int fd = (int)fi->fh;
	int ret;

	(void)ino;
	ret = datasync ? fdatasync(fd) : fsync(fd);
	fuse_reply_err(req, ret < 0 ? errno : 0);
}

static int pt_do_opendir(struct pt_inode *in, struct fuse_file_info *fi)
{
	struct pt_dir *d = calloc(1, sizeof(*d));
	int fd, ret;

	if (!d)
		return -ENOMEM;
	fd = openat(in->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		goto out_free;
	}
	d->dp = fdopendir(fd);
	if (!d->dp) {
		ret = -errno;
		goto out_close;
	}
	fi->fh = (uint64_t)(uintptr_t)d;
	return 0;

out_close:
	close(fd);
out_free:
	free(d);
	return ret;
}

static void pt_ll_opendir(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	int ret = pt_do_opendir(pt_inode_of(req, ino), fi);
	struct pt_dir *d;

	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	if (fuse_reply_open(req, fi) == -ENOENT) {
		/* The caller was interrupted: no releasedir will come. */
		d = (struct pt_dir *)(uintptr_t)fi->fh;
		closedir(d->dp);
		free(d);
	}
}

/*
 * Fill @buf with entries from cookie @off. An entry that does not fit is
 * kept for the next call, which the kernel makes at the cookie before it.
 * Returns the bytes filled, or a negative errno.
 */
static ssize_t pt_do_readdir(fuse_req_t req, struct pt_dir *d, char *buf,
			     size_t size, off_t off)
{
	size_t len = 0;

	if (off != d->pos) {
		seekdir(d->dp, off);
		d->pending = NULL;
		d->pos = off;
	}
	for (;;) {
		struct dirent *de = d->pending;
		struct stat st;
		size_t n;

		if (!de) {
			errno = 0;
			de = readdir(d->dp);
			if (!de) {
				if (errno && !len)
					return -errno;
				break;
			}
		}
		memset(&st, 0, sizeof(st));
		st.st_ino = de->d_ino;
		st.st_mode = (mode_t)de->d_type << 12;
		n = fuse_add_direntry(req, buf + len, size - len, de->d_name,
				      &st, de->d_off);
		if (n > size - len) {
			d->pending = de;
			break;
		}
		d->pending = NULL;
		d->pos = de->d_off;
		len += n;
	}
	return (ssize_t)len;
}

static void pt_ll_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
			  off_t off, struct fuse_file_info *fi)
{
	struct pt_dir *d = (struct pt_dir *)(uintptr_t)fi->fh;
	char *buf = malloc(size ? size : 1);
	ssize_t ret;

	(void)ino;
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	ret = pt_do_readdir(req, d, buf, size, off);
	if (ret < 0)
		fuse_reply_err(req, (int)-ret);
	else
		fuse_reply_buf(req, buf, (size_t)ret);
	free(buf);
}

static void pt_ll_releasedir(fuse_req_t req, fuse_ino_t ino,
			     struct fuse_file_info *fi)
{
	struct pt_dir *d = (struct pt_dir *)(uintptr_t)fi->fh;

	(void)ino;
	closedir(d->dp);
	free(d);
	fuse_reply_err(req, 0);
}

static void pt_ll_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs st;

	if (fstatvfs(pt_inode_of(req, ino)->fd, &st) < 0)
		fuse_reply_err(req, errno);
	else
		fuse_reply_statfs(req, &st);
}

static const struct fuse_lowlevel_ops pt_ll_ops = {
	.init = pt_ll_init,
	.lookup = pt_ll_lookup,
	.forget = pt_ll_forget,
	.forget_multi = pt_ll_forget_multi,
	.getattr = pt_ll_getattr,
	.setattr = pt_ll_setattr,
	.mkdir = pt_ll_mkdir,
	.unlink = pt_ll_unlink,
	.rmdir = pt_ll_rmdir,
	.rename = pt_ll_rename,
	.open = pt_ll_open,
	.create = pt_ll_create,
	.read = pt_ll_read,
	.write = pt_ll_write,
	.write_buf = pt_ll_write_buf,
	.flush = pt_ll_flush,
	.release = pt_ll_release,
	.fsync = pt_ll_fsync,
	.opendir = pt_ll_opendir,
	.readdir = pt_ll_readdir,
	.releasedir = pt_ll_releasedir,
	.statfs = pt_ll_statfs,
};

struct pt_cfg {
	unsigned int threads;
	int splice;
	int foreground;
	int help;
};

static const struct fuse_opt pt_opts[] = {
	{"threads=%u", offsetof(struct pt_cfg, threads), 0},
	{"splice", offsetof(struct pt_cfg, splice), 1},
	FUSE_OPT_KEY("-f", 'f'),
	FUSE_OPT_KEY("-h", 'h'),
	FUSE_OPT_KEY("--help", 'h'),
	FUSE_OPT_END,
};

struct pt_args {
	struct pt_cfg *cfg;
	const char *paths[2];
	int npaths;
};

static int pt_opt_proc(void *data, const char *arg, int key,
		       struct fuse_args *outargs)
{
	struct pt_args *a = data;

	(void)outargs;
	switch (key) {
	case 'f':
		a->cfg->foreground = 1;
		return 0;
	case 'h':
		a->cfg->help = 1;
		return 0;
	case FUSE_OPT_KEY_NONOPT:
		if (a->npaths >= 2)
			return -1;
		a->paths[a->npaths++] = arg;
		return 0;
	default:
		return 1; /* a FUSE option: keep it */
	}
}

static void pt_usage(FILE *f)
{
	fprintf(f,
		"usage: passthrough BACKDIR MOUNTPOINT [-f] [-o OPTION[,OPTION...]]\n"
		"Mount BACKDIR at MOUNTPOINT through FUSE, with zonefuse's FUSE settings.\n"
		"Unmount with `umount MOUNTPOINT`. For benchmarks (bench/run.sh).\n"
		"\n"
		"  -f            stay in the foreground\n"
		"  -o threads=N  FUSE request threads (default 10, as zonefuse)\n"
		"  -o splice     splice data to and from /dev/fuse (zonefuse does not)\n"
		"Other -o options are FUSE's (see mount.fuse3(8)).\n");
}

/* Build the "-ofsname=...,subtype=passthrough" argument. */
static char *pt_fsname_arg(const char *backdir)
{
	size_t len = 2 * strlen(backdir) + 48;
	char *s = malloc(len), *q;

	if (!s)
		return NULL;
	q = s + snprintf(s, len, "-ofsname=");
	for (; *backdir; backdir++) {
		if (*backdir == ',' || *backdir == '\\')
			*q++ = '\\';
		*q++ = *backdir;
	}
	strcpy(q, ",subtype=passthrough");
	return s;
}

/*
 * One O_PATH descriptor per inode the kernel holds: the metadata workload
 * alone holds 20,000 files, as many as this machine's default limit. Raise
 * the limit to the kernel's maximum (root may), else to the hard limit, as
 * libfuse's passthrough_ll does. Failing that (a container without
 * CAP_SYS_RESOURCE keeps the hard limit), more inodes than the limit give
 * EMFILE: bench/run.sh then records the step as failed.
 */
static void pt_raise_nofile(void)
{
	struct rlimit rl = {0};
	unsigned long max = 0;
	FILE *f = fopen("/proc/sys/fs/nr_open", "r");

	if (f) {
		if (fscanf(f, "%lu", &max) != 1)
			max = 0;
		fclose(f);
	}
	if (max) {
		rl.rlim_cur = rl.rlim_max = (rlim_t)max;
		if (!setrlimit(RLIMIT_NOFILE, &rl))
			return;
	}
	if (getrlimit(RLIMIT_NOFILE, &rl))
		return;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		fprintf(stderr,
			"passthrough: cannot raise the open file limit: %s\n",
			strerror(errno));
}

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct pt_cfg cfg = {.threads = PT_THREADS};
	struct pt_args a = {.cfg = &cfg};
	struct fuse_lowlevel_ops ops = pt_ll_ops;
	struct fuse_loop_config *loop;
	struct fuse_session *se;
	char *fsname = NULL;
	struct pt pt = {0};
	int ret = 1;

	if (fuse_opt_parse(&args, &a, pt_opts, pt_opt_proc) < 0) {
		fprintf(stderr, "passthrough: bad arguments (see --help)\n");
		goto out_args;
	}
	if (cfg.help) {
		pt_usage(stdout);
		ret = 0;
		goto out_args;
	}
	if (a.npaths != 2 || !cfg.threads) {
		pt_usage(stderr);
		goto out_args;
	}
	pt_raise_nofile();
	pt.splice = cfg.splice;
	if (!pt.splice)
		ops.write_buf = NULL; /* libfuse enables splice with it */
	pthread_mutex_init(&pt.lock, NULL);
	pt.nbuckets = PT_HASH_MIN;
	pt.tab = calloc(pt.nbuckets, sizeof(*pt.tab));
	if (!pt.tab)
		goto out_args;
	pt.root.fd = open(a.paths[0], O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (pt.root.fd < 0) {
		fprintf(stderr,
			"passthrough: %s: %s (BACKDIR must be a directory)\n",
			a.paths[0], strerror(errno));
		goto out_tab;
	}
	fsname = pt_fsname_arg(a.paths[0]);
	if (!fsname || fuse_opt_add_arg(&args, fsname))
		goto out_root;

	se = fuse_session_new(&args, &ops, sizeof(ops), &pt);
	if (!se) {
		fprintf(stderr,
			"passthrough: cannot start the FUSE session (an unknown -o option?)\n");
		goto out_root;
	}
	if (fuse_set_signal_handlers(se))
		goto out_session;
	if (fuse_session_mount(se, a.paths[1])) {
		fprintf(stderr,
			"passthrough: %s: mounting failed (is /dev/fuse there, and are you root?)\n",
			a.paths[1]);
		goto out_signals;
	}
	if (fuse_daemonize(cfg.foreground))
		goto out_unmount;
	/* After the fork: "self" is resolved when it is opened. */
	pt.proc_fd = open("/proc/self/fd", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (pt.proc_fd < 0) {
		fprintf(stderr,
			"passthrough: /proc/self/fd: %s (is /proc mounted?)\n",
			strerror(errno));
		goto out_unmount;
	}
	loop = fuse_loop_cfg_create();
	if (!loop)
		goto out_proc;
	fuse_loop_cfg_set_max_threads(loop, cfg.threads);
	ret = fuse_session_loop_mt(se, loop) ? 1 : 0;
	fuse_loop_cfg_destroy(loop);
out_proc:
	close(pt.proc_fd);
out_unmount:
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out_session:
	fuse_session_destroy(se);
out_root:
	close(pt.root.fd);
out_tab:
	/* Nodes the kernel still held at unmount die with the process. */
	free(pt.tab);
	pthread_mutex_destroy(&pt.lock);
out_args:
	free(fsname);
	fuse_opt_free_args(&args);
	return ret;
}
