// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Record application: zm_apply(), the one function that changes the
 * in-DRAM metadata, and one zm_apply_<record>() per record type.
 *
 * Records come from two places: the live file system, which has already
 * checked permissions and errnos, and the journal, which may be corrupt.
 * So zm_apply() trusts nothing: every record is checked against the state
 * before anything changes, and a record that does not fit is refused with
 * -EUCLEAN and a reason. Allocation happens before mutation for the same
 * reason: a failed apply leaves the state as it was.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "meta_i.h"
#include "zonefuse/meta.h"
#include "zonefuse/zdev.h"
#include "zonefuse/util.h"

/* ---- record application --------------------------------------------------- */

/* Is @anc an ancestor of (or equal to) directory @d? */
static bool zm_is_ancestor(const struct zmeta *m, uint64_t anc, uint64_t d)
{
	uint64_t depth = 0;

	while (depth++ <= m->nr_inodes) {
		const struct zm_inode *in;

		if (d == anc)
			return true;
		if (d == ZF_ROOT_INO)
			return false;
		in = zm_iget(m, d);
		if (!in)
			return false;
		d = in->parent;
	}
	return true; /* a loop: treat as related, refuse */
}

/*
 * A record about an inode that an earlier record freed: it was made while
 * the file was unlinked but still open (written, reclaimed, chmod-ed), and
 * replay frees such an inode at its last unlink. It changes nothing. An
 * inode number never handed out is damage, not this.
 */
static bool zm_freed_ino(const struct zmeta *m, uint64_t ino)
{
	return ino > ZF_ROOT_INO && ino < m->next_ino && !zm_iget(m, ino);
}

static inline int64_t zm_le_time(int64_t t)
{
	return (int64_t)le64toh((uint64_t)t);
}

static struct zm_inode *zm_dir_get(const struct zmeta *m, uint64_t ino)
{
	struct zm_inode *d = zm_iget(m, ino);

	return d && zm_is_dir(d) ? d : NULL;
}

/*
 * Drop one link of @in (named in @parent); free it if nothing holds it.
 * If only the kernel's inode cache still holds it (its FORGET comes when
 * the kernel gets to it), no one can read the data any more: its space
 * comes back now, as `rm` gives it back on ext4. Replay, where nothing is
 * held, frees the inode outright: the same space either way.
 */
static void zm_drop_link(struct zmeta *m, struct zm_inode *parent,
			 struct zm_inode *in, int64_t time)
{
	if (zm_is_dir(in)) {
		in->nlink = 0;
		parent->nlink--;
	} else {
		in->nlink--;
	}
	in->ctime = time;
	if (in->nlink)
		return;
	if (!zm_inode_busy(in)) {
		zm_inode_free(m, in);
	} else if (zm_is_reg(in) && !in->nopen && !in->npin) {
		zm_drop_extents(m, in);
		in->size = 0;
	}
}

static int zm_apply_create(struct zmeta *m, const void *p, uint32_t len,
			   char *why, size_t wl)
{
	const struct zf_rec_create *r = p;
	struct zm_inode *parent = NULL, *in;
	struct zm_dent *e = NULL;
	const char *name, *target;
	uint16_t nlen, tlen;
	uint64_t ino, pino;

	if (len < sizeof(*r))
		return zm_bad(why, wl, "CREATE record too short");
	nlen = le16toh(r->name_len);
	tlen = le16toh(r->target_len);
	if (len != sizeof(*r) + nlen + tlen)
		return zm_bad(why, wl, "CREATE record length mismatch");
	name = (const char *)(r + 1);
	target = name + nlen;
	ino = le64toh(r->attr.ino);
	pino = le64toh(r->parent);
	if (!zm_mode_valid(le32toh(r->attr.mode)))
		return zm_bad(why, wl, "CREATE of inode %llu: bad mode 0%o",
			      (unsigned long long)ino, le32toh(r->attr.mode));
	if (!ino || zm_iget(m, ino))
		return zm_bad(why, wl, "CREATE of inode %llu, which exists",
			      (unsigned long long)ino);
	if (pino == 0) {
		/* The root, made by mkfs: no name, no parent. */
		if (ino != ZF_ROOT_INO || nlen ||
		    (le32toh(r->attr.mode) & ZM_S_IFMT) != ZM_S_IFDIR)
			return zm_bad(why, wl, "CREATE without a parent");
	} else {
		parent = zm_dir_get(m, pino);
		if (!parent)
			return zm_bad(why, wl,
				      "CREATE in %llu, not a directory",
				      (unsigned long long)pino);
		if (!zm_name_valid(name, nlen) || zm_lookup(parent, name, nlen))
			return zm_bad(why, wl,
				      "CREATE of a bad or existing name in %llu",
				      (unsigned long long)pino);
	}
	if (((le32toh(r->attr.mode) & ZM_S_IFMT) == ZM_S_IFLNK) !=
		    (tlen != 0) ||
	    tlen > ZF_SYMLINK_MAX)
		return zm_bad(why, wl, "CREATE: symlink target mismatch");

	in = zm_inode_new(&r->attr, le32toh(r->rdev));
	if (!in)
		return -ENOMEM;
	if (parent) {
		e = zm_dent_new(name, nlen, ino);
		if (!e || zm_dir_reserve(&parent->d))
			goto out_nomem;
	}
	if (tlen) {
		in->target = malloc(tlen + 1u);
		if (!in->target)
			goto out_nomem;
		memcpy(in->target, target, tlen);
		in->target[tlen] = '\0';
		in->size = tlen;
	}
	if ((m->nr_inodes + 1) * 2 > (uint64_t)m->imask + 1 && zm_itab_grow(m))
		goto out_nomem;

	if (zm_is_dir(in)) {
		in->nlink = 2;
		in->parent = parent ? pino : ino;
		if (parent)
			parent->nlink++;
	} else {
		in->nlink = 1;
	}
	if (!zm_is_lnk(in))
		in->size = 0;
	zm_itab_insert(m, in);
	if (parent) {
		zm_dir_add(&parent->d, e);
		parent->mtime = parent->ctime = in->ctime;
	}
	if (ino >= m->next_ino)
		m->next_ino = ino + 1;
	return 0;

out_nomem:
	free(e);
	zm_inode_release(in);
	return -ENOMEM;
}

static int zm_apply_link(struct zmeta *m, uint16_t type, const void *p,
			 uint32_t len, char *why, size_t wl)
{
	const struct zf_rec_link *r = p;
	struct zm_inode *parent, *in;
	struct zm_dent *e;
	const char *name;
	uint16_t nlen;
	int64_t t;

	if (len < sizeof(*r))
		return zm_bad(why, wl, "LINK/UNLINK record too short");
	nlen = le16toh(r->name_len);
	if (len != sizeof(*r) + nlen)
		return zm_bad(why, wl, "LINK/UNLINK record length mismatch");
	name = (const char *)(r + 1);
	parent = zm_dir_get(m, le64toh(r->parent));
	in = zm_iget(m, le64toh(r->ino));
	t = zm_le_time(r->time);
	if (!parent || !in || !zm_name_valid(name, nlen))
		return zm_bad(why, wl, "LINK/UNLINK of a missing inode %llu",
			      (unsigned long long)le64toh(r->ino));
	e = zm_lookup(parent, name, nlen);
	if (type == ZF_REC_LINK) {
		if (e || zm_is_dir(in) || !in->nlink || in->nlink == UINT32_MAX)
			return zm_bad(why, wl, "LINK of inode %llu refused",
				      (unsigned long long)in->ino);
		e = zm_dent_new(name, nlen, in->ino);
		if (!e || zm_dir_reserve(&parent->d)) {
			free(e);
			return -ENOMEM;
		}
		zm_dir_add(&parent->d, e);
		in->nlink++;
		in->ctime = t;
		parent->mtime = parent->ctime = t;
		return 0;
	}
	if (!e || e->ino != in->ino ||
	    (zm_is_dir(in) && in->d.count))
		return zm_bad(why, wl,
			      "UNLINK of '%.*s' in %llu: no such entry or not empty",
			      (int)nlen, name,
			      (unsigned long long)parent->ino);
	zm_dir_del(&parent->d, e);
	parent->mtime = parent->ctime = t;
	zm_drop_link(m, parent, in, t);
	return 0;
}

static int zm_apply_rename(struct zmeta *m, const void *p, uint32_t len,
			   char *why, size_t wl)
{
	const struct zf_rec_rename *r = p;
	struct zm_inode *sp, *dp, *in, *victim = NULL;
	struct zm_dent *se, *de, *ne = NULL;
	const char *sname, *dname;
	uint16_t slen, dlen;
	uint32_t flags;
	int64_t t;

	if (len < sizeof(*r))
		return zm_bad(why, wl, "RENAME record too short");
	slen = le16toh(r->src_len);
	dlen = le16toh(r->dst_len);
	if (len != sizeof(*r) + slen + dlen)
		return zm_bad(why, wl, "RENAME record length mismatch");
	sname = (const char *)(r + 1);
	dname = sname + slen;
	flags = le32toh(r->flags);
	t = zm_le_time(r->time);
	sp = zm_dir_get(m, le64toh(r->src_parent));
	dp = zm_dir_get(m, le64toh(r->dst_parent));
	in = zm_iget(m, le64toh(r->ino));
	if (!sp || !dp || !in || !zm_name_valid(sname, slen) ||
	    !zm_name_valid(dname, dlen) ||
	    (flags & ~(ZF_RENAME_NOREPLACE | ZF_RENAME_EXCHANGE)))
		return zm_bad(why, wl, "RENAME of inode %llu: bad record",
			      (unsigned long long)le64toh(r->ino));
	se = zm_lookup(sp, sname, slen);
	de = zm_lookup(dp, dname, dlen);
	if (!se || se->ino != in->ino)
		return zm_bad(why, wl, "RENAME: source entry missing");
	if (le64toh(r->victim)) {
		victim = zm_iget(m, le64toh(r->victim));
		if (!victim || !de || de->ino != victim->ino ||
		    victim == in || (flags & ZF_RENAME_NOREPLACE))
			return zm_bad(why, wl, "RENAME: target mismatch");
	} else if (de || (flags & ZF_RENAME_EXCHANGE)) {
		return zm_bad(why, wl, "RENAME: target mismatch");
	}
	/* No directory may move into its own subtree. */
	if (zm_is_dir(in) && sp != dp && zm_is_ancestor(m, in->ino, dp->ino))
		return zm_bad(why, wl, "RENAME of a directory into itself");
	if (victim && (flags & ZF_RENAME_EXCHANGE) && zm_is_dir(victim) &&
	    sp != dp && zm_is_ancestor(m, victim->ino, sp->ino))
		return zm_bad(why, wl, "RENAME of a directory into itself");
	if (victim && !(flags & ZF_RENAME_EXCHANGE)) {
		if (zm_is_dir(in) != zm_is_dir(victim) ||
		    (zm_is_dir(victim) && victim->d.count))
			return zm_bad(why, wl, "RENAME over a bad target");
	}
	if (!de) {
		ne = zm_dent_new(dname, dlen, in->ino);
		if (!ne || zm_dir_reserve(&dp->d)) {
			free(ne);
			return -ENOMEM;
		}
	}

	if (flags & ZF_RENAME_EXCHANGE) {
		se->ino = victim->ino;
		de->ino = in->ino;
		if (sp != dp) {
			if (zm_is_dir(in)) {
				in->parent = dp->ino;
				sp->nlink--;
				dp->nlink++;
			}
			if (zm_is_dir(victim)) {
				victim->parent = sp->ino;
				dp->nlink--;
				sp->nlink++;
			}
		}
		victim->ctime = t;
	} else {
		zm_dir_del(&sp->d, se);
		if (de)
			de->ino = in->ino;
		else
			zm_dir_add(&dp->d, ne);
		if (zm_is_dir(in) && sp != dp) {
			in->parent = dp->ino;
			sp->nlink--;
			dp->nlink++;
		}
		if (victim)
			zm_drop_link(m, dp, victim, t);
	}
	in->ctime = t;
	sp->mtime = sp->ctime = t;
	dp->mtime = dp->ctime = t;
	return 0;
}

/*
 * Truncate @i's mapping to @size bytes. A size not above the current one
 * also releases the reserved blocks from the first one past it, as ext4's
 * truncate frees fallocated blocks past EOF (a cut to the end splits no
 * range: it needs no room).
 */
static int zm_truncate(struct zmeta *m, struct zm_inode *i, uint64_t size)
{
	int ret;

	if (size < i->size && zm_is_reg(i)) {
		ret = zm_extent_reserve(i, 1);
		if (ret)
			return ret;
		zm_punch(m, i, size, UINT64_MAX);
	}
	if (size <= i->size && zm_is_reg(i))
		zm_pre_cut(m, i, ZF_ROUND_UP(size, (uint64_t)m->block_size),
			   UINT64_MAX);
	i->size = size;
	return 0;
}

static int zm_apply_setattr(struct zmeta *m, const void *p, uint32_t len,
			    char *why, size_t wl)
{
	const struct zf_rec_setattr *r = p;
	struct zm_inode *in;
	uint32_t valid;
	int ret;

	if (len != sizeof(*r))
		return zm_bad(why, wl, "SETATTR record length mismatch");
	valid = le32toh(r->valid);
	in = zm_iget(m, le64toh(r->attr.ino));
	if (!in && zm_freed_ino(m, le64toh(r->attr.ino)) &&
	    !(valid & ~ZF_ATTR_ALL))
		return 0;
	if (!in || (valid & ~ZF_ATTR_ALL))
		return zm_bad(why, wl, "SETATTR of missing inode %llu",
			      (unsigned long long)le64toh(r->attr.ino));
	if ((valid & ZF_ATTR_SIZE) && !zm_is_reg(in))
		return zm_bad(why, wl, "SETATTR: size of a non-file");
	if ((valid & ZF_ATTR_MODE) &&
	    (le32toh(r->attr.mode) & ~07777u))
		return zm_bad(why, wl, "SETATTR: bad mode");
	if (valid & ZF_ATTR_SIZE) {
		ret = zm_truncate(m, in, le64toh(r->attr.size));
		if (ret)
			return ret;
	}
	if (valid & ZF_ATTR_MODE)
		in->mode = (in->mode & ZM_S_IFMT) | le32toh(r->attr.mode);
	if (valid & ZF_ATTR_UID)
		in->uid = le32toh(r->attr.uid);
	if (valid & ZF_ATTR_GID)
		in->gid = le32toh(r->attr.gid);
	if (valid & ZF_ATTR_ATIME)
		in->atime = zm_le_time(r->attr.atime);
	if (valid & ZF_ATTR_MTIME)
		in->mtime = zm_le_time(r->attr.mtime);
	if (valid & ZF_ATTR_CTIME)
		in->ctime = zm_le_time(r->attr.ctime);
	return 0;
}

static int zm_apply_xattr(struct zmeta *m, uint16_t type, const void *p,
			  uint32_t len, char *why, size_t wl)
{
	const struct zf_rec_xattr *r = p;
	struct zm_xattr *x, *old;
	struct zm_inode *in;
	uint16_t nlen;
	uint32_t vlen;
	const char *name;

	if (len < sizeof(*r))
		return zm_bad(why, wl, "XATTR record too short");
	nlen = le16toh(r->name_len);
	vlen = le32toh(r->value_len);
	if ((type == ZF_REC_XATTR_DEL && vlen) ||
	    len != sizeof(*r) + nlen + (uint64_t)vlen || !nlen ||
	    nlen > ZF_XATTR_NAME_MAX || vlen > ZF_XATTR_VALUE_MAX)
		return zm_bad(why, wl, "XATTR record length mismatch");
	in = zm_iget(m, le64toh(r->ino));
	if (!in && zm_freed_ino(m, le64toh(r->ino)))
		return 0;
	if (!in)
		return zm_bad(why, wl, "XATTR of missing inode %llu",
			      (unsigned long long)le64toh(r->ino));
	name = (const char *)(r + 1);
	old = zm_xattr_get(in, name, nlen);
	if (type == ZF_REC_XATTR_DEL) {
		if (!old)
			return zm_bad(why, wl, "XATTR_DEL of a missing name");
		zm_xattr_unlink(in, old);
	} else {
		x = zm_xattr_new(name, nlen, name + nlen, vlen);
		if (!x)
			return -ENOMEM;
		if (old)
			zm_xattr_unlink(in, old);
		x->next = in->xattrs;
		in->xattrs = x;
	}
	in->ctime = zm_le_time(r->ctime);
	return 0;
}

static int zm_apply_extent(struct zmeta *m, const void *p, uint32_t len,
			   char *why, size_t wl)
{
	const struct zf_rec_extent *r = p;
	uint64_t foff, addr, elen;
	struct zm_inode *in;
	int ret;

	if (len < sizeof(*r))
		return zm_bad(why, wl, "EXTENT record length mismatch");
	in = zm_iget(m, le64toh(r->ino));
	foff = le64toh(r->foff);
	addr = le64toh(r->addr);
	elen = le64toh(r->len);
	if (addr + elen < addr || !elen ||
	    len != sizeof(*r) + (uint64_t)ZF_CSUMS(addr, elen, m->block_size) *
					sizeof(uint32_t))
		return zm_bad(why, wl,
			      "EXTENT record length mismatch (its block checksums)");
	if (!in && zm_freed_ino(m, le64toh(r->ino)))
		return 0;
	if (!in || !zm_is_reg(in))
		return zm_bad(why, wl, "EXTENT of missing file %llu",
			      (unsigned long long)le64toh(r->ino));
	if (!zm_data_range_ok(m, addr, elen) || foff + elen < foff ||
	    le64toh(r->size) > foff + elen)
		return zm_bad(why, wl,
			      "EXTENT of file %llu at 0x%llx+%llu is outside a data zone",
			      (unsigned long long)in->ino,
			      (unsigned long long)addr,
			      (unsigned long long)elen);
	ret = zm_extent_reserve(in, 2);
	if (!ret)
		ret = zm_pre_reserve(in, 1);
	if (!ret)
		ret = zm_csum_room(m, zm_zone_of(m, addr));
	if (ret)
		return ret;
	zm_csum_set(m, addr, ZF_CSUMS(addr, elen, m->block_size), r + 1);
	zm_extent_set(m, in, foff, addr, elen);
	/* Its blocks are written now: what was reserved for them is used. */
	zm_pre_cut(m, in, ZF_ROUND_DOWN(foff, (uint64_t)m->block_size),
		   ZF_ROUND_UP(foff + elen, (uint64_t)m->block_size));
	if (le64toh(r->size) > in->size)
		in->size = le64toh(r->size);
	in->mtime = in->ctime = zm_le_time(r->mtime);
	return 0;
}

static int zm_apply_prealloc(struct zmeta *m, const void *p, uint32_t len,
			     char *why, size_t wl)
{
	const struct zf_rec_prealloc *r = p;
	uint64_t off, plen, size, bs = m->block_size;
	struct zm_inode *in;
	int ret;

	if (len != sizeof(*r))
		return zm_bad(why, wl, "PREALLOC record length mismatch");
	in = zm_iget(m, le64toh(r->ino));
	off = le64toh(r->off);
	plen = le64toh(r->len);
	size = le64toh(r->size);
	if (!in && zm_freed_ino(m, le64toh(r->ino)))
		return 0;
	if (!in || !zm_is_reg(in))
		return zm_bad(why, wl, "PREALLOC of missing file %llu",
			      (unsigned long long)le64toh(r->ino));
	if (!plen || off % bs || plen % bs || off > ZF_MAX_FILE_SIZE ||
	    plen > ZF_MAX_FILE_SIZE - off || size > ZF_MAX_FILE_SIZE)
		return zm_bad(why, wl,
			      "PREALLOC of file %llu: bad range %llu+%llu or size %llu",
			      (unsigned long long)in->ino,
			      (unsigned long long)off,
			      (unsigned long long)plen,
			      (unsigned long long)size);
	ret = zm_pre_add(m, in, off, off + plen);
	if (ret)
		return ret;
	if (size > in->size)
		in->size = size;
	in->ctime = zm_le_time(r->ctime);
	return 0;
}

/*
 * How many extents more remapping [old, old + len) of @in may take. Each
 * piece of an extent inside the range is remapped on its own
 * (zm_extent_set()): a piece from the middle of its extent splits it and
 * adds itself (two more), a piece at one end of it adds itself (one
 * more), a whole extent is replaced (none). Merges only take extents
 * away. Counted on every extent, not on the two at the edges: a file may
 * map the same device bytes twice (fsck reports it, but a record that
 * does so applies), and each of those is split.
 *
 * The whole move's room is reserved before the first piece moves, so
 * that a failed allocation cannot leave the file half moved.
 */
static uint64_t zm_move_room(const struct zm_inode *in, uint64_t old,
			     uint64_t len)
{
	uint64_t more = 0;
	uint32_t k;

	for (k = 0; k < in->f.n_ext; k++) {
		const struct zm_extent *e = &in->f.ext[k];
		uint64_t s = ZF_MAX(e->addr, old);
		uint64_t end = ZF_MIN(e->addr + e->len, old + len);

		if (s >= end)
			continue;
		more += (s > e->addr) + (end < e->addr + e->len);
	}
	return more;
}

static int zm_apply_extent_move(struct zmeta *m, const void *p, uint32_t len,
				char *why, size_t wl)
{
	const struct zf_rec_extent_move *r = p;
	uint64_t old, new, mlen;
	struct zm_inode *in;
	uint32_t k;
	int ret;

	if (len != sizeof(*r))
		return zm_bad(why, wl, "EXTENT_MOVE record length mismatch");
	in = zm_iget(m, le64toh(r->ino));
	old = le64toh(r->old_addr);
	new = le64toh(r->new_addr);
	mlen = le64toh(r->len);
	if (!in && zm_freed_ino(m, le64toh(r->ino)))
		return 0;
	if (!in || !zm_is_reg(in) || !zm_data_range_ok(m, new, mlen) ||
	    old + mlen < old || !mlen ||
	    zm_zone_of(m, old) >= m->nr_zones ||
	    zm_zone_of(m, old + mlen - 1) != zm_zone_of(m, old) ||
	    old % m->block_size != new % m->block_size)
		return zm_bad(why, wl, "EXTENT_MOVE of file %llu: bad record",
			      (unsigned long long)le64toh(r->ino));
	ret = zm_extent_reserve(in, zm_move_room(in, old, mlen));
	if (!ret)
		ret = zm_csum_room(m, zm_zone_of(m, new));
	if (ret)
		return ret;
	zm_csum_copy(m, old, new, mlen);
	for (k = 0; k < in->f.n_ext; k++) {
		struct zm_extent *e = &in->f.ext[k];
		uint64_t s = ZF_MAX(e->addr, old);
		uint64_t end = ZF_MIN(e->addr + e->len, old + mlen);
		uint64_t foff;

		if (s >= end)
			continue;
		foff = e->foff + (s - e->addr);
		zm_extent_set(m, in, foff, new + (s - old), end - s);
		k = zm_extent_find(in, foff + (end - s)) - 1;
	}
	return 0;
}

static int zm_apply_zone(struct zmeta *m, uint16_t type, const void *p,
			 uint32_t len, char *why, size_t wl)
{
	const struct zf_rec_zone *r = p;
	struct zm_zone *z;

	if (len != sizeof(*r) || le32toh(r->zone) >= m->nr_zones)
		return zm_bad(why, wl, "ZONE record: bad zone");
	z = &m->zones[le32toh(r->zone)];
	/*
	 * A sequential zone's write pointer is the device's to say: at replay
	 * the zone may have been written again since the record. Only a
	 * conventional zone's, which the file system keeps, follows records.
	 */
	if (type == ZF_REC_ZONE_FINISH) {
		if (z->type != ZDEV_ZONE_SEQ)
			z->wp = z->start + z->cap;
		return 0;
	}
	if (z->valid || z->state == ZM_ZONE_SUPER)
		return zm_bad(why, wl,
			      "ZONE_RESET of zone %u, which holds live data",
			      le32toh(r->zone));
	z->resets = le64toh(r->resets);
	zm_csum_drop(m, le32toh(r->zone));
	if (z->type != ZDEV_ZONE_SEQ)
		z->wp = z->start;
	if (z->state == ZM_ZONE_DATA)
		z->state = ZM_ZONE_FREE;
	return 0;
}

int zm_apply(struct zmeta *m, uint16_t type, const void *p, uint32_t len,
	     uint64_t seq, char *why, size_t wl)
{
	const struct zf_rec_counters *c = p;
	const struct zf_rec_ino *ri = p;
	struct zm_inode *in;

	m->cur_seq = seq;
	switch (type) {
	case ZF_REC_CREATE:
		return zm_apply_create(m, p, len, why, wl);
	case ZF_REC_LINK:
	case ZF_REC_UNLINK:
		return zm_apply_link(m, type, p, len, why, wl);
	case ZF_REC_RENAME:
		return zm_apply_rename(m, p, len, why, wl);
	case ZF_REC_SETATTR:
		return zm_apply_setattr(m, p, len, why, wl);
	case ZF_REC_XATTR_SET:
	case ZF_REC_XATTR_DEL:
		return zm_apply_xattr(m, type, p, len, why, wl);
	case ZF_REC_EXTENT:
		return zm_apply_extent(m, p, len, why, wl);
	case ZF_REC_EXTENT_MOVE:
		return zm_apply_extent_move(m, p, len, why, wl);
	case ZF_REC_PREALLOC:
		return zm_apply_prealloc(m, p, len, why, wl);
	case ZF_REC_INODE_FREE:
		if (len != sizeof(*ri))
			return zm_bad(why, wl, "INODE_FREE length mismatch");
		in = zm_iget(m, le64toh(ri->ino));
		if (!in)
			return 0; /* already freed when its last link went */
		if (in->nlink || in->ino == ZF_ROOT_INO)
			return zm_bad(why, wl,
				      "INODE_FREE of linked inode %llu",
				      (unsigned long long)in->ino);
		zm_inode_free(m, in);
		return 0;
	case ZF_REC_ZONE_RESET:
	case ZF_REC_ZONE_FINISH:
		return zm_apply_zone(m, type, p, len, why, wl);
	case ZF_REC_COUNTERS:
		if (len != sizeof(*c))
			return zm_bad(why, wl, "COUNTERS length mismatch");
		m->counters.host_bytes = le64toh(c->host_bytes);
		m->counters.device_bytes = le64toh(c->device_bytes);
		m->counters.gc_bytes = le64toh(c->gc_bytes);
		m->counters.meta_bytes = le64toh(c->meta_bytes);
		return 0;
	default:
		return zm_bad(why, wl, "unknown record type %u", type);
	}
}
