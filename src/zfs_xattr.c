// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Extended attributes: the user.* namespace, kept in the inode's metadata
 * and journaled as any attribute change, and the read-only virtual ones
 * (ZFS_XATTR_EXTENTS, ZFS_XATTR_STATS, ZFS_XATTR_SCRUB) that show a
 * file's extents, the file system's stats and a file's scrub to tools
 * that can only read a file.
 *
 * Apart from zfs.c because they have rules of their own (which names,
 * which inodes, the sticky directory: xattr_permission) and nothing else
 * in the core uses them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zfs_i.h"
#include "zonefuse/util.h"

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
	return !strcmp(name, ZFS_XATTR_EXTENTS) || !strcmp(name, ZFS_XATTR_STATS) ||
	       !strcmp(name, ZFS_XATTR_SCRUB);
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
	ret = rec_writable(fs);
	if (ret)
		return ret;
	nlen = strlen(name);
	rec = malloc(sizeof(*rec) + nlen + size);
	if (!rec)
		return -ENOMEM;
	zlock_wr(&fs->meta_lock, ZLOCK_META);
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
	rec->ctime = (int64_t)htole64((uint64_t)zutil_now_real_ns());
	rec->value_len = htole32((uint32_t)size);
	rec->name_len = htole16((uint16_t)nlen);
	rec->reserved = 0;
	memcpy(rec + 1, name, nlen);
	if (size)
		memcpy((char *)(rec + 1) + nlen, value, size);
	ret = rec_log(fs, ZF_REC_XATTR_SET, rec,
		      (uint32_t)(sizeof(*rec) + nlen + size));
out_unlock:
	zlock_unrw(&fs->meta_lock);
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

/* ZFS_XATTR_SCRUB: the scrub of @ino, as text. */
static ssize_t zfs_scrub_xattr(struct zfs *fs, uint64_t ino, void *value,
			       size_t size)
{
	struct zfs_scrub_file r;
	char buf[128 + ZFS_SCRUB_BAD * 96];
	size_t n = 0;
	uint32_t i;
	int ret = zfs_scrub_file(fs, ino, &r);

	if (ret == -EISDIR || ret == -EBADF)
		return -ENODATA;
	if (ret)
		return ret;
	n += (size_t)snprintf(buf + n, sizeof(buf) - n, "bytes %" PRIu64 "\n",
			      r.bytes);
	for (i = 0; i < r.nbad; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n,
				      "offset %" PRIu64 " length %" PRIu64 " zone %u %s\n",
				      r.bad[i].foff, r.bad[i].len, r.bad[i].zone,
				      r.bad[i].unreadable ? "unreadable" : "checksum");
	if (r.more)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "more\n");
	return zfs_copy_out(buf, n, value, size);
}

struct zfs_text {
	char *buf;
	size_t n, size;
	const char *prefix;
};

static void zfs_text_line(void *arg, const char *line)
{
	struct zfs_text *t = arg;

	if (t->n < t->size)
		t->n += (size_t)snprintf(t->buf + t->n, t->size - t->n, "%s %s\n",
					 t->prefix, line);
	t->n = ZF_MIN(t->n, t->size);
}

/*
 * ZFS_XATTR_SCRUB on the root: the metadata's scrub, as text. Root only:
 * it makes commits wait while it reads (jrnl_scrub()), which no user
 * should be able to repeat at will.
 */
static ssize_t zfs_scrub_meta_xattr(struct zfs *fs, const struct zfs_ctx *ctx,
				    void *value, size_t size)
{
	struct zfs_text t = { .size = 8192 };
	struct jrnl_scrub *r;
	struct jrnl_stats st;
	ssize_t ret;

	if (ctx && ctx->uid)
		return -EPERM;
	r = malloc(sizeof(*r));
	t.buf = malloc(t.size);
	if (!r || !t.buf) {
		ret = -ENOMEM;
		goto out_free;
	}
	ret = zfs_scrub_meta(fs, true, r);
	if (ret)
		goto out_free;
	jrnl_get_stats(fs->j, &st);
	t.n = (size_t)snprintf(t.buf, t.size, "copies %u\n", st.mirror ? 2u : 1u);
	t.prefix = "damage";
	zfs_scrub_meta_say(&r->pass[0], zfs_text_line, &t);
	if (r->rewritten) {
		t.n += (size_t)snprintf(t.buf + t.n, t.size - t.n, "rewritten\n");
		t.prefix = "after";
		zfs_scrub_meta_say(&r->pass[1], zfs_text_line, &t);
	} else if (r->pass[0].damage) {
		t.prefix = "left";
		zfs_text_line(&t, r->rewrite_err == -EROFS && fs->rdonly ?
					  "the file system is mounted read-only" :
					  strerror(-r->rewrite_err));
	}
	ret = zfs_copy_out(t.buf, ZF_MIN(t.n, t.size), value, size);
out_free:
	free(t.buf);
	free(r);
	return ret;
}

ssize_t zfs_getxattr(struct zfs *fs, const struct zfs_ctx *ctx, uint64_t ino,
		     const char *name, void *value, size_t size)
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
	if (!strcmp(name, ZFS_XATTR_SCRUB))
		return ino == ZF_ROOT_INO ? zfs_scrub_meta_xattr(fs, ctx, value, size) :
					    zfs_scrub_xattr(fs, ino, value, size);
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
	zlock_rd(&fs->meta_lock, ZLOCK_META);
	in = zm_iget(&fs->m, ino);
	if (!in) {
		ret = -ENOENT;
	} else if (!zm_is_reg(in) && !zm_is_dir(in)) {
		ret = -ENODATA;
	} else if ((ret = zfs_perm(ctx, in, R_OK)) == 0) {
		x = zm_xattr_get(in, name, strlen(name));
		ret = x ? zfs_copy_out(x->data + x->name_len, x->value_len,
				       value, size) :
			  -ENODATA;
	}
	zlock_unrw(&fs->meta_lock);
	return ret;
}

ssize_t zfs_listxattr(struct zfs *fs, uint64_t ino, char *list, size_t size)
{
	struct zm_inode *in;
	struct zm_xattr *x;
	size_t need = 0;
	ssize_t ret;

	zlock_rd(&fs->meta_lock, ZLOCK_META);
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
	zlock_unrw(&fs->meta_lock);
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
	ret = rec_writable(fs);
	if (ret)
		return ret;
	nlen = strlen(name);
	zlock_wr(&fs->meta_lock, ZLOCK_META);
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
	rec->ctime = (int64_t)htole64((uint64_t)zutil_now_real_ns());
	rec->value_len = 0;
	rec->name_len = htole16((uint16_t)nlen);
	rec->reserved = 0;
	memcpy(rec + 1, name, nlen);
	ret = rec_log(fs, ZF_REC_XATTR_DEL, rec, (uint32_t)(sizeof(*rec) + nlen));
out_unlock:
	zlock_unrw(&fs->meta_lock);
	return ret;
}
