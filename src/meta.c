// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The in-DRAM metadata and the one function that changes it, zm_apply().
 *
 * Records come from two places: the live file system, which has already
 * checked permissions and errnos, and the journal, which may be corrupt.
 * So zm_apply() trusts nothing: every record is checked against the state
 * before anything changes, and a record that does not fit is refused with
 * -EUCLEAN and a reason. Allocation happens before mutation for the same
 * reason: a failed apply leaves the state as it was.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zonefuse/meta.h"
#include "zonefuse/zdev.h"
#include "zonefuse/util.h"

#define ZM_S_IFMT 0170000u
#define ZM_S_IFDIR 0040000u
#define ZM_S_IFREG 0100000u
#define ZM_S_IFLNK 0120000u
#define ZM_S_IFIFO 0010000u
#define ZM_S_IFSOCK 0140000u
#define ZM_S_IFCHR 0020000u
#define ZM_S_IFBLK 0060000u

__attribute__((format(printf, 3, 4))) static int zm_bad(char *why, size_t len,
							const char *fmt, ...)
{
	va_list ap;

	if (why && len) {
		va_start(ap, fmt);
		vsnprintf(why, len, fmt, ap);
		va_end(ap);
	}
	return -EUCLEAN;
}

/* ---- inode table ----------------------------------------------------------- */

static uint32_t zm_ino_hash(uint64_t ino)
{
	return (uint32_t)((ino * 0x9e3779b97f4a7c15ull) >> 32);
}

static int zm_itab_grow(struct zmeta *m)
{
	uint32_t nsize = (m->imask + 1) * 2, i;
	struct zm_inode **nt = calloc(nsize, sizeof(*nt));

	if (!nt)
		return -ENOMEM;
	for (i = 0; i <= m->imask; i++) {
		struct zm_inode *in = m->itab[i], *next;

		for (; in; in = next) {
			uint32_t h = zm_ino_hash(in->ino) & (nsize - 1);

			next = in->hnext;
			in->hnext = nt[h];
			nt[h] = in;
		}
	}
	free(m->itab);
	m->itab = nt;
	m->imask = nsize - 1;
	return 0;
}

struct zm_inode *zm_iget(const struct zmeta *m, uint64_t ino)
{
	struct zm_inode *in = m->itab[zm_ino_hash(ino) & m->imask];

	while (in && in->ino != ino)
		in = in->hnext;
	return in;
}

static void zm_itab_insert(struct zmeta *m, struct zm_inode *in)
{
	uint32_t h = zm_ino_hash(in->ino) & m->imask;

	in->hnext = m->itab[h];
	m->itab[h] = in;
	m->nr_inodes++;
	if (zm_is_dir(in))
		m->nr_dirs++;
	else
		m->nr_files++;
}

static void zm_itab_remove(struct zmeta *m, struct zm_inode *in)
{
	struct zm_inode **pp = &m->itab[zm_ino_hash(in->ino) & m->imask];

	while (*pp != in)
		pp = &(*pp)->hnext;
	*pp = in->hnext;
	m->nr_inodes--;
	if (zm_is_dir(in))
		m->nr_dirs--;
	else
		m->nr_files--;
}

int zm_init(struct zmeta *m, uint32_t nr_zones, uint64_t zone_size,
	    uint32_t block_size)
{
	memset(m, 0, sizeof(*m));
	m->imask = 1023;
	m->itab = calloc(m->imask + 1, sizeof(*m->itab));
	m->zones = calloc(nr_zones, sizeof(*m->zones));
	if (!m->itab || !m->zones) {
		free(m->itab);
		free(m->zones);
		return -ENOMEM;
	}
	m->nr_zones = nr_zones;
	m->zone_size = zone_size;
	m->block_size = block_size;
	m->next_ino = ZF_ROOT_INO + 1;
	return 0;
}

static void zm_inode_release(struct zm_inode *in);

void zm_destroy(struct zmeta *m)
{
	uint32_t i;

	if (!m->itab)
		return;
	for (i = 0; i <= m->imask; i++) {
		struct zm_inode *in = m->itab[i], *next;

		for (; in; in = next) {
			next = in->hnext;
			zm_inode_release(in);
		}
	}
	free(m->itab);
	free(m->zones);
	memset(m, 0, sizeof(*m));
}

/* ---- directories ----------------------------------------------------------- */

static uint32_t zm_name_hash(const char *name, size_t len)
{
	uint32_t h = 2166136261u;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= (unsigned char)name[i];
		h *= 16777619u;
	}
	return h ^ (h >> 15);
}

static int zm_dir_init(struct zm_dir *d)
{
	memset(d, 0, sizeof(*d));
	d->hmask = 7;
	d->htab = calloc(d->hmask + 1, sizeof(*d->htab));
	d->next_cookie = 3; /* 1 and 2 are "." and ".." */
	return d->htab ? 0 : -ENOMEM;
}

struct zm_dent *zm_lookup(const struct zm_inode *dir, const char *name,
			  size_t len)
{
	uint32_t h = zm_name_hash(name, len);
	struct zm_dent *d = dir->d.htab[h & dir->d.hmask];

	for (; d; d = d->hnext)
		if (d->hash == h && d->name_len == len &&
		    !memcmp(d->name, name, len))
			return d;
	return NULL;
}

/* Make room for one more entry in @d (tables), so adding cannot fail. */
static int zm_dir_reserve(struct zm_dir *d)
{
	if (d->count + 1 > (d->hmask + 1)) {
		uint32_t nsize = (d->hmask + 1) * 2, i;
		struct zm_dent **nt = calloc(nsize, sizeof(*nt));

		if (!nt)
			return -ENOMEM;
		for (i = 0; i <= d->hmask; i++) {
			struct zm_dent *e = d->htab[i], *next;

			for (; e; e = next) {
				next = e->hnext;
				e->hnext = nt[e->hash & (nsize - 1)];
				nt[e->hash & (nsize - 1)] = e;
			}
		}
		free(d->htab);
		d->htab = nt;
		d->hmask = nsize - 1;
	}
	if (d->olen == d->ocap && d->holes > d->olen / 2) {
		/* Compact: cookies stay, so readdir positions stay valid. */
		uint32_t i, j = 0;

		for (i = 0; i < d->olen; i++)
			if (d->order[i].d)
				d->order[j++] = d->order[i];
		d->olen = j;
		d->holes = 0;
	}
	if (d->olen == d->ocap) {
		uint32_t ncap = d->ocap ? d->ocap * 2 : 8;
		struct zm_dslot *no = realloc(d->order, ncap * sizeof(*no));

		if (!no)
			return -ENOMEM;
		d->order = no;
		d->ocap = ncap;
	}
	return 0;
}

static struct zm_dent *zm_dent_new(const char *name, size_t len, uint64_t ino)
{
	struct zm_dent *e = malloc(sizeof(*e) + len + 1);

	if (!e)
		return NULL;
	e->ino = ino;
	e->hash = zm_name_hash(name, len);
	e->name_len = (uint16_t)len;
	memcpy(e->name, name, len);
	e->name[len] = '\0';
	return e;
}

/* Add @e to @d; zm_dir_reserve() must have succeeded. */
static void zm_dir_add(struct zm_dir *d, struct zm_dent *e)
{
	uint32_t h = e->hash & d->hmask;

	e->cookie = d->next_cookie++;
	e->hnext = d->htab[h];
	d->htab[h] = e;
	d->order[d->olen].cookie = e->cookie;
	d->order[d->olen].d = e;
	d->olen++;
	d->count++;
}

static uint32_t zm_dir_slot(const struct zm_dir *d, uint64_t cookie)
{
	uint32_t lo = 0, hi = d->olen;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (d->order[mid].cookie < cookie)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Unlink @e from @d and free it. */
static void zm_dir_del(struct zm_dir *d, struct zm_dent *e)
{
	struct zm_dent **pp = &d->htab[e->hash & d->hmask];
	uint32_t s;

	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	s = zm_dir_slot(d, e->cookie);
	d->order[s].d = NULL;
	d->holes++;
	d->count--;
	free(e);
}

int zm_dent_add(struct zm_inode *dir, const char *name, uint64_t ino)
{
	size_t len = strlen(name);
	struct zm_dent *e;

	if (zm_lookup(dir, name, len))
		return -EEXIST;
	e = zm_dent_new(name, len, ino);
	if (!e || zm_dir_reserve(&dir->d)) {
		free(e);
		return -ENOMEM;
	}
	zm_dir_add(&dir->d, e);
	return 0;
}

void zm_dent_del(struct zm_inode *dir, struct zm_dent *e)
{
	zm_dir_del(&dir->d, e);
}

struct zm_dent *zm_dir_next(const struct zm_inode *dir, uint64_t after)
{
	const struct zm_dir *d = &dir->d;
	uint32_t s = zm_dir_slot(d, after + 1);

	for (; s < d->olen; s++)
		if (d->order[s].d)
			return d->order[s].d;
	return NULL;
}

static void zm_dir_free(struct zm_dir *d)
{
	uint32_t i;

	for (i = 0; i < d->olen; i++)
		free(d->order[i].d);
	free(d->order);
	free(d->htab);
}

/* ---- extents --------------------------------------------------------------- */

/*
 * A zone's live bytes count whole blocks: an extent of 10,000 bytes takes
 * three 4 KiB blocks of its zone. Counting bytes would make a zone full of
 * padded tails look partly dead, and reclaim would move it again and again
 * for nothing (the copy carries the same padding).
 */
static uint64_t zm_fp(const struct zmeta *m, uint64_t len)
{
	return ZF_ROUND_UP(len, (uint64_t)m->block_size);
}

/* @len bytes of footprint leave the zone of @addr. */
static void zm_zone_sub(struct zmeta *m, uint64_t addr, uint64_t len)
{
	struct zm_zone *z = &m->zones[zm_zone_of(m, addr)];

	if (!len)
		return;
	z->valid -= len;
	m->live_bytes -= len;
	if (!z->valid && m->zone_dead)
		m->zone_dead(m->zone_dead_arg, zm_zone_of(m, addr), m->cur_seq);
}

/* A failed zone (zm_zone_failed()) keeps its data but stays out of use. */
static void zm_zone_add(struct zmeta *m, uint64_t addr, uint64_t len)
{
	struct zm_zone *z = &m->zones[zm_zone_of(m, addr)];

	z->valid += len;
	m->live_bytes += len;
	if (z->state == ZM_ZONE_FREE)
		z->state = ZM_ZONE_DATA;
}

uint32_t zm_extent_find(const struct zm_inode *i, uint64_t foff)
{
	uint32_t lo = 0, hi = i->f.n_ext;

	/* First extent whose end is above @foff. */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct zm_extent *e = &i->f.ext[mid];

		if (e->foff + e->len <= foff)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int zm_extent_reserve(struct zm_inode *i, uint32_t more)
{
	uint32_t need = i->f.n_ext + more, ncap;
	struct zm_extent *ne;

	if (need <= i->f.cap_ext)
		return 0;
	ncap = ZF_MAX(need, i->f.cap_ext ? i->f.cap_ext * 2 : 2);
	ne = realloc(i->f.ext, ncap * sizeof(*ne));
	if (!ne)
		return -ENOMEM;
	i->f.ext = ne;
	i->f.cap_ext = ncap;
	return 0;
}

/*
 * Drop the mapping of [start, end) from @i, splitting extents at the
 * edges. Needs room for one more extent (a split in the middle): the
 * caller reserves it.
 */
static void zm_punch(struct zmeta *m, struct zm_inode *i, uint64_t start,
		     uint64_t end)
{
	uint32_t k = zm_extent_find(i, start);

	while (k < i->f.n_ext && i->f.ext[k].foff < end) {
		struct zm_extent *e = &i->f.ext[k];
		uint64_t estart = e->foff, eend = e->foff + e->len;
		uint64_t cut_s = ZF_MAX(estart, start), cut_e = ZF_MIN(eend, end);

		uint64_t before = zm_fp(m, e->len);

		if (cut_s > estart && cut_e < eend) {
			/* Middle: split into two. */
			memmove(&i->f.ext[k + 2], &i->f.ext[k + 1],
				(i->f.n_ext - k - 1) * sizeof(*e));
			i->f.ext[k + 1].foff = cut_e;
			i->f.ext[k + 1].addr = e->addr + (cut_e - estart);
			i->f.ext[k + 1].len = eend - cut_e;
			e->len = cut_s - estart;
			i->f.n_ext++;
			zm_zone_sub(m, e->addr, before - zm_fp(m, e->len) -
							zm_fp(m, eend - cut_e));
			return;
		}
		if (cut_s > estart) {
			/* Tail cut. */
			e->len = cut_s - estart;
			zm_zone_sub(m, e->addr, before - zm_fp(m, e->len));
			k++;
			continue;
		}
		if (cut_e < eend) {
			/* Head cut. */
			uint64_t d = cut_e - estart;

			e->foff += d;
			e->addr += d;
			e->len -= d;
			zm_zone_sub(m, e->addr, before - zm_fp(m, e->len));
			return;
		}
		/* Whole extent. */
		zm_zone_sub(m, e->addr, before);
		memmove(e, e + 1, (i->f.n_ext - k - 1) * sizeof(*e));
		i->f.n_ext--;
	}
}

int zm_unmap(struct zmeta *m, struct zm_inode *i, uint64_t start,
	     uint64_t end)
{
	if (!zm_is_reg(i) || start >= end)
		return 0;
	if (zm_extent_reserve(i, 1))
		return -ENOMEM;
	zm_punch(m, i, start, end);
	return 0;
}

/* Map [foff, foff + len) of @i to @addr; room reserved for 2 extents. */
static void zm_extent_set(struct zmeta *m, struct zm_inode *i, uint64_t foff,
			  uint64_t addr, uint64_t len)
{
	uint32_t k;
	struct zm_extent *p;

	zm_punch(m, i, foff, foff + len);
	k = zm_extent_find(i, foff);
	zm_zone_add(m, addr, zm_fp(m, len));
	if (k > 0) {
		p = &i->f.ext[k - 1];
		if (p->foff + p->len == foff && p->addr + p->len == addr &&
		    zm_zone_of(m, p->addr) == zm_zone_of(m, addr)) {
			p->len += len;
			return;
		}
	}
	memmove(&i->f.ext[k + 1], &i->f.ext[k],
		(i->f.n_ext - k) * sizeof(*i->f.ext));
	i->f.ext[k].foff = foff;
	i->f.ext[k].addr = addr;
	i->f.ext[k].len = len;
	i->f.n_ext++;
}

/* ---- inodes ---------------------------------------------------------------- */

static void zm_xattrs_free(struct zm_xattr *x)
{
	while (x) {
		struct zm_xattr *next = x->next;

		free(x);
		x = next;
	}
}

/* Free an inode's memory (not its zone accounting). */
static void zm_inode_release(struct zm_inode *in)
{
	zm_xattrs_free(in->xattrs);
	if (zm_is_dir(in))
		zm_dir_free(&in->d);
	else if (zm_is_lnk(in))
		free(in->target);
	else if (zm_is_reg(in))
		free(in->f.ext);
	free(in);
}

/* Give back the zone space of @in's data: it has no extents after. */
static void zm_drop_extents(struct zmeta *m, struct zm_inode *in)
{
	uint32_t k;

	if (!zm_is_reg(in))
		return;
	for (k = 0; k < in->f.n_ext; k++)
		zm_zone_sub(m, in->f.ext[k].addr, zm_fp(m, in->f.ext[k].len));
	in->f.n_ext = 0;
}

void zm_inode_free(struct zmeta *m, struct zm_inode *in)
{
	zm_drop_extents(m, in);
	zm_itab_remove(m, in);
	zm_inode_release(in);
}

static bool zm_mode_valid(uint32_t mode)
{
	switch (mode & ZM_S_IFMT) {
	case ZM_S_IFREG:
	case ZM_S_IFDIR:
	case ZM_S_IFLNK:
	case ZM_S_IFIFO:
	case ZM_S_IFSOCK:
	case ZM_S_IFCHR:
	case ZM_S_IFBLK:
		return !(mode & ~(ZM_S_IFMT | 07777u));
	default:
		return false;
	}
}

static bool zm_name_valid(const char *name, size_t len)
{
	if (!len || len > ZF_NAME_MAX || memchr(name, '/', len) ||
	    memchr(name, '\0', len))
		return false;
	if ((len == 1 && name[0] == '.') ||
	    (len == 2 && name[0] == '.' && name[1] == '.'))
		return false;
	return true;
}

static struct zm_inode *zm_inode_new(const struct zf_dattr *a, uint32_t rdev)
{
	struct zm_inode *in = calloc(1, sizeof(*in));

	if (!in)
		return NULL;
	in->ino = le64toh(a->ino);
	in->mode = le32toh(a->mode);
	in->uid = le32toh(a->uid);
	in->gid = le32toh(a->gid);
	in->nlink = le32toh(a->nlink);
	in->size = le64toh(a->size);
	in->atime = (int64_t)le64toh((uint64_t)a->atime);
	in->mtime = (int64_t)le64toh((uint64_t)a->mtime);
	in->ctime = (int64_t)le64toh((uint64_t)a->ctime);
	in->btime = (int64_t)le64toh((uint64_t)a->btime);
	in->rdev = rdev;
	if (zm_is_dir(in) && zm_dir_init(&in->d)) {
		free(in);
		return NULL;
	}
	return in;
}

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

/* ---- record application --------------------------------------------------- */

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

/* Truncate @i's mapping to @size bytes. */
static int zm_truncate(struct zmeta *m, struct zm_inode *i, uint64_t size)
{
	int ret;

	if (size < i->size && zm_is_reg(i)) {
		ret = zm_extent_reserve(i, 1);
		if (ret)
			return ret;
		zm_punch(m, i, size, UINT64_MAX);
	}
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

struct zm_xattr *zm_xattr_get(const struct zm_inode *i, const char *name,
			      size_t len)
{
	struct zm_xattr *x;

	for (x = i->xattrs; x; x = x->next)
		if (x->name_len == len && !memcmp(x->data, name, len))
			return x;
	return NULL;
}

static void zm_xattr_unlink(struct zm_inode *i, struct zm_xattr *x)
{
	struct zm_xattr **pp = &i->xattrs;

	while (*pp != x)
		pp = &(*pp)->next;
	*pp = x->next;
	free(x);
}

static struct zm_xattr *zm_xattr_new(const char *name, uint16_t nlen,
				     const void *value, uint32_t vlen)
{
	struct zm_xattr *x = malloc(sizeof(*x) + nlen + vlen);

	if (!x)
		return NULL;
	x->next = NULL;
	x->name_len = nlen;
	x->value_len = vlen;
	memcpy(x->data, name, nlen);
	memcpy(x->data + nlen, value, vlen);
	return x;
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

bool zm_zone_failed(const struct zm_zone *z)
{
	return z->state == ZM_ZONE_BAD && z->type == ZDEV_ZONE_SEQ &&
	       (z->cond == ZDEV_COND_READONLY || z->cond == ZDEV_COND_OFFLINE);
}

/*
 * Does [addr, addr + len) lie in one zone that may hold data? A zone the
 * device has since made read-only or offline did when the record was
 * written: its extents stay (read-only data reads, offline data gives EIO)
 * rather than the whole file system failing to mount over one lost zone.
 * Its capacity is not to be trusted any more (a drive need not report one
 * for an offline zone): the zone's length bounds the extent.
 */
static bool zm_data_range_ok(const struct zmeta *m, uint64_t addr,
			     uint64_t len)
{
	uint32_t z = zm_zone_of(m, addr);
	const struct zm_zone *zone;
	uint64_t room;

	if (!len || z >= m->nr_zones || addr % m->block_size)
		return false;
	zone = &m->zones[z];
	if (zm_zone_failed(zone))
		room = zone->len;
	else if (zone->state == ZM_ZONE_FREE || zone->state == ZM_ZONE_DATA)
		room = zone->cap;
	else
		return false;
	return addr >= zone->start && len <= room &&
	       addr - zone->start <= room - len;
}

static int zm_apply_extent(struct zmeta *m, const void *p, uint32_t len,
			   char *why, size_t wl)
{
	const struct zf_rec_extent *r = p;
	uint64_t foff, addr, elen;
	struct zm_inode *in;
	int ret;

	if (len != sizeof(*r))
		return zm_bad(why, wl, "EXTENT record length mismatch");
	in = zm_iget(m, le64toh(r->ino));
	foff = le64toh(r->foff);
	addr = le64toh(r->addr);
	elen = le64toh(r->len);
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
	if (ret)
		return ret;
	zm_extent_set(m, in, foff, addr, elen);
	if (le64toh(r->size) > in->size)
		in->size = le64toh(r->size);
	in->mtime = in->ctime = zm_le_time(r->mtime);
	return 0;
}

static int zm_apply_extent_move(struct zmeta *m, const void *p, uint32_t len,
				char *why, size_t wl)
{
	const struct zf_rec_extent_move *r = p;
	uint64_t old, new, mlen;
	struct zm_inode *in;
	uint32_t k;

	if (len != sizeof(*r))
		return zm_bad(why, wl, "EXTENT_MOVE record length mismatch");
	in = zm_iget(m, le64toh(r->ino));
	old = le64toh(r->old_addr);
	new = le64toh(r->new_addr);
	mlen = le64toh(r->len);
	if (!in && zm_freed_ino(m, le64toh(r->ino)))
		return 0;
	if (!in || !zm_is_reg(in) || !zm_data_range_ok(m, new, mlen) ||
	    old + mlen < old)
		return zm_bad(why, wl, "EXTENT_MOVE of file %llu: bad record",
			      (unsigned long long)le64toh(r->ino));
	/*
	 * Each extent piece inside [old, old + mlen) is remapped; one that
	 * straddles an edge is split, so up to two more extents per edge.
	 */
	if (zm_extent_reserve(in, 2))
		return -ENOMEM;
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
		if (zm_extent_reserve(in, 2))
			return -ENOMEM;
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

/* ---- snapshots ------------------------------------------------------------- */

struct zm_snap_buf {
	char buf[ZF_REC_MAX];
	char item[sizeof(struct zf_snap_xattr) + ZF_XATTR_NAME_MAX +
		  ZF_XATTR_VALUE_MAX];
	uint32_t len;
	uint16_t type;
	uint32_t count;
	uint32_t count_off; /* where the list header's count is */
	zm_emit_fn emit;    /* the caller's, counted by zm_snap_emit() */
	void *arg;
	uint64_t records;
};

static int zm_snap_emit(void *arg, uint16_t type, const void *p, uint32_t len)
{
	struct zm_snap_buf *b = arg;

	b->records++;
	return b->emit(b->arg, type, p, len);
}

static int zm_snap_flush(struct zm_snap_buf *b, zm_emit_fn emit, void *arg)
{
	uint32_t cnt = htole32(b->count);
	int ret;

	if (!b->count)
		return 0;
	memcpy(b->buf + b->count_off, &cnt, sizeof(cnt));
	ret = emit(arg, b->type, b->buf, b->len);
	b->len = 0;
	b->count = 0;
	return ret;
}

static void zm_snap_list_start(struct zm_snap_buf *b, uint16_t type,
			       uint64_t ino)
{
	struct zf_rec_snap_list h = { .ino = htole64(ino) };

	memcpy(b->buf, &h, sizeof(h));
	b->len = sizeof(h);
	b->type = type;
	b->count = 0;
	b->count_off = offsetof(struct zf_rec_snap_list, count);
}

/* Append an item of @len bytes (8-aligned) to a list record. */
static int zm_snap_item(struct zm_snap_buf *b, const void *item, uint32_t len,
			uint64_t ino, zm_emit_fn emit, void *arg)
{
	uint32_t alen = ZF_ROUND_UP(len, 8u);
	int ret;

	if (b->len + alen > sizeof(b->buf)) {
		uint16_t type = b->type;

		ret = zm_snap_flush(b, emit, arg);
		if (ret)
			return ret;
		zm_snap_list_start(b, type, ino);
	}
	memcpy(b->buf + b->len, item, len);
	memset(b->buf + b->len + len, 0, alen - len);
	b->len += alen;
	b->count++;
	return 0;
}

static void zm_dattr_encode(const struct zm_inode *in, struct zf_dattr *a)
{
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

static int zm_snap_inode(const struct zm_inode *in, struct zm_snap_buf *b,
			 zm_emit_fn emit, void *arg)
{
	struct zf_rec_snap_inode *r = (void *)b->buf;
	uint16_t tlen = zm_is_lnk(in) ? (uint16_t)strlen(in->target) : 0;
	const struct zm_xattr *x;
	uint32_t k;
	int ret;

	memset(r, 0, sizeof(*r));
	zm_dattr_encode(in, &r->attr);
	r->parent = htole64(in->parent);
	r->rdev = htole32(in->rdev);
	r->target_len = htole16(tlen);
	if (tlen)
		memcpy(r + 1, in->target, tlen);
	ret = emit(arg, ZF_REC_SNAP_INODE, r, sizeof(*r) + tlen);
	if (ret)
		return ret;

	if (zm_is_reg(in) && in->f.n_ext) {
		zm_snap_list_start(b, ZF_REC_SNAP_EXTENTS, in->ino);
		for (k = 0; k < in->f.n_ext; k++) {
			struct zf_snap_extent e = {
				.foff = htole64(in->f.ext[k].foff),
				.addr = htole64(in->f.ext[k].addr),
				.len = htole64(in->f.ext[k].len),
			};

			ret = zm_snap_item(b, &e, sizeof(e), in->ino, emit, arg);
			if (ret)
				return ret;
		}
		ret = zm_snap_flush(b, emit, arg);
		if (ret)
			return ret;
	}
	if (in->xattrs) {
		zm_snap_list_start(b, ZF_REC_SNAP_XATTRS, in->ino);
		for (x = in->xattrs; x; x = x->next) {
			struct zf_snap_xattr h = {
				.value_len = htole32(x->value_len),
				.name_len = htole16(x->name_len),
			};
			uint32_t ilen = (uint32_t)sizeof(h) + x->name_len +
					x->value_len;

			memcpy(b->item, &h, sizeof(h));
			memcpy(b->item + sizeof(h), x->data,
			       x->name_len + x->value_len);
			ret = zm_snap_item(b, b->item, ilen, in->ino, emit,
					   arg);
			if (ret)
				return ret;
		}
		ret = zm_snap_flush(b, emit, arg);
		if (ret)
			return ret;
	}
	return 0;
}

static int zm_snap_dents(const struct zm_inode *in, struct zm_snap_buf *b,
			 zm_emit_fn emit, void *arg)
{
	const struct zm_dent *e;
	char item[sizeof(struct zf_snap_dent) + ZF_NAME_MAX];
	uint64_t after = 0;
	int ret;

	zm_snap_list_start(b, ZF_REC_SNAP_DENTS, in->ino);
	while ((e = zm_dir_next(in, after))) {
		struct zf_snap_dent h = {
			.ino = htole64(e->ino),
			.name_len = htole16(e->name_len),
		};

		memcpy(item, &h, sizeof(h));
		memcpy(item + sizeof(h), e->name, e->name_len);
		ret = zm_snap_item(b, item,
				   (uint32_t)sizeof(h) + e->name_len, in->ino,
				   emit, arg);
		if (ret)
			return ret;
		after = e->cookie;
	}
	return zm_snap_flush(b, emit, arg);
}

int zm_snap_encode(const struct zmeta *m, zm_emit_fn user_emit,
		   void *user_arg)
{
	struct zf_rec_snap_begin sb = { 0 };
	struct zf_rec_snap_end se;
	struct zm_snap_buf *b;
	zm_emit_fn emit = zm_snap_emit;
	void *arg;
	uint32_t i, z;
	int ret;

	b = malloc(sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->emit = user_emit;
	b->arg = user_arg;
	b->records = 0;
	arg = b;
	sb.next_ino = htole64(m->next_ino);
	sb.nr_inodes = htole64(m->nr_inodes);
	sb.nr_zones = htole32(m->nr_zones);
	sb.counters.host_bytes = htole64(m->counters.host_bytes);
	sb.counters.device_bytes = htole64(m->counters.device_bytes);
	sb.counters.gc_bytes = htole64(m->counters.gc_bytes);
	sb.counters.meta_bytes = htole64(m->counters.meta_bytes);
	ret = emit(arg, ZF_REC_SNAP_BEGIN, &sb, sizeof(sb));
	if (ret)
		goto out_free;

	/* Inodes first, so that every directory entry loads onto a target. */
	for (i = 0; i <= m->imask; i++) {
		const struct zm_inode *in;

		for (in = m->itab[i]; in; in = in->hnext) {
			ret = zm_snap_inode(in, b, emit, arg);
			if (ret)
				goto out_free;
		}
	}
	for (i = 0; i <= m->imask; i++) {
		const struct zm_inode *in;

		for (in = m->itab[i]; in; in = in->hnext) {
			if (!zm_is_dir(in) || !in->d.count)
				continue;
			ret = zm_snap_dents(in, b, emit, arg);
			if (ret)
				goto out_free;
		}
	}
	for (z = 0; z < m->nr_zones;) {
		struct zf_rec_snap_zones *h = (void *)b->buf;
		struct zf_snap_zone *item = (void *)(h + 1);
		uint32_t n = ZF_MIN(m->nr_zones - z,
				    (uint32_t)((sizeof(b->buf) - sizeof(*h)) /
					       sizeof(*item)));

		h->first = htole32(z);
		h->count = htole32(n);
		for (i = 0; i < n; i++)
			item[i].resets = htole64(m->zones[z + i].resets);
		ret = emit(arg, ZF_REC_SNAP_ZONES, b->buf,
			   (uint32_t)(sizeof(*h) + n * sizeof(*item)));
		if (ret)
			goto out_free;
		z += n;
	}
	se.nr_records = htole64(b->records + 1);
	ret = emit(arg, ZF_REC_SNAP_END, &se, sizeof(se));
out_free:
	free(b);
	return ret;
}

/* ---- snapshot loading ------------------------------------------------------ */

static int zm_load_inode(struct zmeta *m, const void *p, uint32_t len,
			 char *why, size_t wl)
{
	const struct zf_rec_snap_inode *r = p;
	struct zm_inode *in;
	uint16_t tlen;
	uint64_t ino;

	if (len < sizeof(*r))
		return zm_bad(why, wl, "SNAP_INODE too short");
	tlen = le16toh(r->target_len);
	ino = le64toh(r->attr.ino);
	if (len != sizeof(*r) + tlen)
		return zm_bad(why, wl, "SNAP_INODE length mismatch");
	if (!ino || ino >= m->next_ino || zm_iget(m, ino) ||
	    !zm_mode_valid(le32toh(r->attr.mode)) || tlen > ZF_SYMLINK_MAX ||
	    (((le32toh(r->attr.mode) & ZM_S_IFMT) == ZM_S_IFLNK) != (tlen != 0)))
		return zm_bad(why, wl, "SNAP_INODE %llu is inconsistent",
			      (unsigned long long)ino);
	if (m->nr_inodes >= m->load_inodes)
		return zm_bad(why, wl, "snapshot has more inodes than announced");
	in = zm_inode_new(&r->attr, le32toh(r->rdev));
	if (!in)
		return -ENOMEM;
	in->parent = le64toh(r->parent);
	if (tlen) {
		in->target = malloc(tlen + 1u);
		if (!in->target) {
			zm_inode_release(in);
			return -ENOMEM;
		}
		memcpy(in->target, r + 1, tlen);
		in->target[tlen] = '\0';
	}
	if ((m->nr_inodes + 1) * 2 > (uint64_t)m->imask + 1 &&
	    zm_itab_grow(m)) {
		zm_inode_release(in);
		return -ENOMEM;
	}
	zm_itab_insert(m, in);
	return 0;
}

static int zm_load_extents(struct zmeta *m, struct zm_inode *in,
			   const void *items, uint32_t count, uint32_t len,
			   char *why, size_t wl)
{
	const struct zf_snap_extent *e = items;
	uint32_t k;

	if (!zm_is_reg(in) || len != count * sizeof(*e))
		return zm_bad(why, wl, "SNAP_EXTENTS of %llu: bad list",
			      (unsigned long long)in->ino);
	if (zm_extent_reserve(in, count))
		return -ENOMEM;
	for (k = 0; k < count; k++) {
		uint64_t foff = le64toh(e[k].foff), addr = le64toh(e[k].addr);
		uint64_t elen = le64toh(e[k].len);
		const struct zm_extent *last =
			in->f.n_ext ? &in->f.ext[in->f.n_ext - 1] : NULL;

		if (!zm_data_range_ok(m, addr, elen) || foff + elen < foff ||
		    (last && last->foff + last->len > foff))
			return zm_bad(why, wl,
				      "SNAP_EXTENTS of %llu: extent at %llu is bad",
				      (unsigned long long)in->ino,
				      (unsigned long long)foff);
		in->f.ext[in->f.n_ext].foff = foff;
		in->f.ext[in->f.n_ext].addr = addr;
		in->f.ext[in->f.n_ext].len = elen;
		in->f.n_ext++;
		zm_zone_add(m, addr, zm_fp(m, elen));
	}
	return 0;
}

static int zm_load_xattrs(struct zm_inode *in, const char *p, uint32_t count,
			  uint32_t len, char *why, size_t wl)
{
	uint32_t k, off = 0;

	for (k = 0; k < count; k++) {
		struct zf_snap_xattr h;
		struct zm_xattr *x;
		uint16_t nlen;
		uint32_t vlen;
		uint64_t ilen;

		if (len - off < sizeof(h))
			return zm_bad(why, wl, "SNAP_XATTRS: truncated item");
		memcpy(&h, p + off, sizeof(h));
		nlen = le16toh(h.name_len);
		vlen = le32toh(h.value_len);
		ilen = sizeof(h) + (uint64_t)nlen + vlen;
		if (!nlen || nlen > ZF_XATTR_NAME_MAX ||
		    vlen > ZF_XATTR_VALUE_MAX || ilen > len - off ||
		    zm_xattr_get(in, p + off + sizeof(h), nlen))
			return zm_bad(why, wl, "SNAP_XATTRS: bad item");
		x = zm_xattr_new(p + off + sizeof(h), nlen,
				 p + off + sizeof(h) + nlen, vlen);
		if (!x)
			return -ENOMEM;
		x->next = in->xattrs;
		in->xattrs = x;
		off += (uint32_t)ZF_ROUND_UP(ilen, 8u);
		if (off > len)
			off = len;
	}
	return off == len ? 0 : zm_bad(why, wl, "SNAP_XATTRS: trailing bytes");
}

static int zm_load_dents(struct zmeta *m, struct zm_inode *dir, const char *p,
			 uint32_t count, uint32_t len, char *why, size_t wl)
{
	uint32_t k, off = 0;

	if (!zm_is_dir(dir))
		return zm_bad(why, wl, "SNAP_DENTS of a non-directory");
	for (k = 0; k < count; k++) {
		struct zf_snap_dent h;
		struct zm_dent *e;
		const char *name;
		uint16_t nlen;

		if (len - off < sizeof(h))
			return zm_bad(why, wl, "SNAP_DENTS: truncated item");
		memcpy(&h, p + off, sizeof(h));
		nlen = le16toh(h.name_len);
		name = p + off + sizeof(h);
		if (sizeof(h) + nlen > len - off || !zm_name_valid(name, nlen) ||
		    !zm_iget(m, le64toh(h.ino)) ||
		    zm_lookup(dir, name, nlen) ||
		    le64toh(h.ino) == ZF_ROOT_INO)
			return zm_bad(why, wl,
				      "SNAP_DENTS of %llu: bad entry",
				      (unsigned long long)dir->ino);
		e = zm_dent_new(name, nlen, le64toh(h.ino));
		if (!e || zm_dir_reserve(&dir->d)) {
			free(e);
			return -ENOMEM;
		}
		zm_dir_add(&dir->d, e);
		off += (uint32_t)ZF_ROUND_UP(sizeof(h) + nlen, 8u);
		if (off > len)
			off = len;
	}
	return off == len ? 0 : zm_bad(why, wl, "SNAP_DENTS: trailing bytes");
}

static int zm_load_list(struct zmeta *m, uint16_t type, const void *p,
			uint32_t len, char *why, size_t wl)
{
	const struct zf_rec_snap_list *h = p;
	struct zm_inode *in;
	uint32_t count;

	if (len < sizeof(*h))
		return zm_bad(why, wl, "snapshot list too short");
	in = zm_iget(m, le64toh(h->ino));
	count = le32toh(h->count);
	if (!in)
		return zm_bad(why, wl, "snapshot list of missing inode %llu",
			      (unsigned long long)le64toh(h->ino));
	len -= (uint32_t)sizeof(*h);
	switch (type) {
	case ZF_REC_SNAP_EXTENTS:
		return zm_load_extents(m, in, h + 1, count, len, why, wl);
	case ZF_REC_SNAP_XATTRS:
		return zm_load_xattrs(in, (const char *)(h + 1), count, len,
				      why, wl);
	default:
		return zm_load_dents(m, in, (const char *)(h + 1), count, len,
				     why, wl);
	}
}

static int zm_u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Free the orphans: inodes unlinked while open when the snapshot was
 * taken. An inode with no link that an entry still names is not one (its
 * count is wrong, which fsck repairs): freeing it would leave the entry
 * naming nothing. So the link-less inodes are listed, those some entry
 * names are kept, and the rest go.
 */
static int zm_load_orphans(struct zmeta *m)
{
	uint64_t *cand = NULL, n = 0, cap = 0, k;
	bool *named;
	uint32_t i;

	for (i = 0; i <= m->imask; i++) {
		const struct zm_inode *in;

		for (in = m->itab[i]; in; in = in->hnext) {
			if (in->nlink || in->ino == ZF_ROOT_INO ||
			    (zm_is_dir(in) && in->d.count))
				continue;
			if (n == cap) {
				uint64_t *nc;

				cap = cap ? cap * 2 : 16;
				nc = realloc(cand, cap * sizeof(*cand));
				if (!nc) {
					free(cand);
					return -ENOMEM;
				}
				cand = nc;
			}
			cand[n++] = in->ino;
		}
	}
	if (!n)
		return 0;
	named = calloc(n, sizeof(*named));
	if (!named) {
		free(cand);
		return -ENOMEM;
	}
	qsort(cand, n, sizeof(*cand), zm_u64_cmp);
	for (i = 0; i <= m->imask; i++) {
		const struct zm_inode *d;

		for (d = m->itab[i]; d; d = d->hnext) {
			const struct zm_dent *e;

			if (!zm_is_dir(d))
				continue;
			for (e = zm_dir_next(d, 0); e;
			     e = zm_dir_next(d, e->cookie)) {
				uint64_t *hit = bsearch(&e->ino, cand, n,
							sizeof(*cand),
							zm_u64_cmp);

				if (hit)
					named[hit - cand] = true;
			}
		}
	}
	for (k = 0; k < n; k++)
		if (!named[k])
			zm_inode_free(m, zm_iget(m, cand[k]));
	free(named);
	free(cand);
	return 0;
}

static int zm_load_end(struct zmeta *m, const void *p, uint32_t len,
		       char *why, size_t wl)
{
	const struct zf_rec_snap_end *r = p;
	struct zm_inode *root;
	int ret;

	if (len != sizeof(*r) || le64toh(r->nr_records) != m->load_records)
		return zm_bad(why, wl, "snapshot record count mismatch");
	if (m->nr_inodes != m->load_inodes)
		return zm_bad(why, wl, "snapshot inode count mismatch");
	root = zm_iget(m, ZF_ROOT_INO);
	if (!root || !zm_is_dir(root))
		return zm_bad(why, wl, "snapshot has no root directory");
	ret = zm_load_orphans(m);
	if (ret)
		return ret;
	m->load_inodes = 0;
	return 0;
}

int zm_snap_load(struct zmeta *m, uint16_t type, const void *p, uint32_t len,
		 char *why, size_t wl)
{
	const struct zf_rec_snap_begin *sb = p;
	const struct zf_rec_snap_zones *sz = p;
	uint32_t i, first, count;

	m->load_records++;
	switch (type) {
	case ZF_REC_SNAP_BEGIN:
		if (len != sizeof(*sb) || m->nr_inodes ||
		    le32toh(sb->nr_zones) != m->nr_zones ||
		    le64toh(sb->next_ino) <= ZF_ROOT_INO)
			return zm_bad(why, wl, "SNAP_BEGIN does not fit");
		m->load_records = 1;
		m->next_ino = le64toh(sb->next_ino);
		m->load_inodes = le64toh(sb->nr_inodes);
		m->counters.host_bytes = le64toh(sb->counters.host_bytes);
		m->counters.device_bytes = le64toh(sb->counters.device_bytes);
		m->counters.gc_bytes = le64toh(sb->counters.gc_bytes);
		m->counters.meta_bytes = le64toh(sb->counters.meta_bytes);
		return 0;
	case ZF_REC_SNAP_INODE:
		return zm_load_inode(m, p, len, why, wl);
	case ZF_REC_SNAP_DENTS:
	case ZF_REC_SNAP_EXTENTS:
	case ZF_REC_SNAP_XATTRS:
		return zm_load_list(m, type, p, len, why, wl);
	case ZF_REC_SNAP_ZONES:
		if (len < sizeof(*sz))
			return zm_bad(why, wl, "SNAP_ZONES too short");
		first = le32toh(sz->first);
		count = le32toh(sz->count);
		if (first > m->nr_zones || count > m->nr_zones - first ||
		    len != sizeof(*sz) + count * sizeof(struct zf_snap_zone))
			return zm_bad(why, wl, "SNAP_ZONES out of range");
		for (i = 0; i < count; i++) {
			const struct zf_snap_zone *item =
				(const void *)((const char *)(sz + 1) +
					       i * sizeof(*item));

			m->zones[first + i].resets = le64toh(item->resets);
		}
		return 0;
	case ZF_REC_SNAP_END:
		return zm_load_end(m, p, len, why, wl);
	default:
		return zm_bad(why, wl, "record type %u inside a snapshot",
			      type);
	}
}
