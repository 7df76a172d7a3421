// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The in-DRAM metadata's tables and their primitives: the inode table,
 * directories (name hash plus readdir order), extents and the zone byte
 * counts they drive, inodes and their xattrs.
 *
 * Nothing here checks a record: the primitives trust their callers, the
 * record application (meta_apply.c) and the snapshot loader
 * (meta_snap.c), which check everything before they call them. Those that
 * can fail only allocate; those that change the state cannot fail once
 * their room is reserved (meta_i.h says which is which).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meta_i.h"
#include "zonefuse/meta.h"
#include "zonefuse/zdev.h"
#include "zonefuse/util.h"

int zm_bad(char *why, size_t len, const char *fmt, ...)
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

int zm_itab_grow(struct zmeta *m)
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

void zm_itab_insert(struct zmeta *m, struct zm_inode *in)
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
	for (i = 0; i < m->nr_zones; i++)
		free(m->zones[i].csum);
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

/*
 * Both tables are allocated before either is touched, so that a failure
 * leaves the directory as it was. A full order table that is more than
 * half holes is compacted instead of grown (cookies stay, so readdir
 * positions stay valid); that needs no memory and comes last.
 */
int zm_dir_reserve(struct zm_dir *d)
{
	bool compact = d->olen == d->ocap && d->holes > d->olen / 2;
	struct zm_dent **nt = NULL;
	uint32_t nsize = 0, i, j;

	if (d->count + 1 > (d->hmask + 1)) {
		nsize = (d->hmask + 1) * 2;
		nt = calloc(nsize, sizeof(*nt));
		if (!nt)
			return -ENOMEM;
	}
	if (d->olen == d->ocap && !compact) {
		uint32_t ncap = d->ocap ? d->ocap * 2 : 8;
		struct zm_dslot *no = realloc(d->order, ncap * sizeof(*no));

		if (!no) {
			free(nt);
			return -ENOMEM;
		}
		d->order = no;
		d->ocap = ncap;
	}
	if (nt) {
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
	if (compact) {
		for (i = 0, j = 0; i < d->olen; i++)
			if (d->order[i].d)
				d->order[j++] = d->order[i];
		d->olen = j;
		d->holes = 0;
	}
	return 0;
}

struct zm_dent *zm_dent_new(const char *name, size_t len, uint64_t ino)
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

void zm_dir_add(struct zm_dir *d, struct zm_dent *e)
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

void zm_dir_del(struct zm_dir *d, struct zm_dent *e)
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
uint64_t zm_fp(const struct zmeta *m, uint64_t len)
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
void zm_zone_add(struct zmeta *m, uint64_t addr, uint64_t len)
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

/*
 * Counted in 64 bits: a move may ask for two more per extent it touches,
 * and an array past UINT32_MAX extents is memory the machine does not
 * have anyway.
 */
int zm_extent_reserve(struct zm_inode *i, uint64_t more)
{
	uint64_t need = (uint64_t)i->f.n_ext + more, ncap;
	struct zm_extent *ne;

	if (need <= i->f.cap_ext)
		return 0;
	if (need > UINT32_MAX)
		return -ENOMEM;
	ncap = ZF_MAX(need, i->f.cap_ext ? (uint64_t)i->f.cap_ext * 2 : 2);
	ncap = ZF_MIN(ncap, (uint64_t)UINT32_MAX);
	ne = realloc(i->f.ext, ncap * sizeof(*ne));
	if (!ne)
		return -ENOMEM;
	i->f.ext = ne;
	i->f.cap_ext = (uint32_t)ncap;
	return 0;
}

void zm_punch(struct zmeta *m, struct zm_inode *i, uint64_t start,
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

void zm_extent_set(struct zmeta *m, struct zm_inode *i, uint64_t foff,
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
bool zm_data_range_ok(const struct zmeta *m, uint64_t addr, uint64_t len)
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

/* ---- inodes ---------------------------------------------------------------- */

static void zm_xattrs_free(struct zm_xattr *x)
{
	while (x) {
		struct zm_xattr *next = x->next;

		free(x);
		x = next;
	}
}

void zm_inode_release(struct zm_inode *in)
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

void zm_drop_extents(struct zmeta *m, struct zm_inode *in)
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

bool zm_mode_valid(uint32_t mode)
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

bool zm_name_valid(const char *name, size_t len)
{
	if (!len || len > ZF_NAME_MAX || memchr(name, '/', len) ||
	    memchr(name, '\0', len))
		return false;
	if ((len == 1 && name[0] == '.') ||
	    (len == 2 && name[0] == '.' && name[1] == '.'))
		return false;
	return true;
}

struct zm_inode *zm_inode_new(const struct zf_dattr *a, uint32_t rdev)
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

struct zm_xattr *zm_xattr_get(const struct zm_inode *i, const char *name,
			      size_t len)
{
	struct zm_xattr *x;

	for (x = i->xattrs; x; x = x->next)
		if (x->name_len == len && !memcmp(x->data, name, len))
			return x;
	return NULL;
}

void zm_xattr_unlink(struct zm_inode *i, struct zm_xattr *x)
{
	struct zm_xattr **pp = &i->xattrs;

	while (*pp != x)
		pp = &(*pp)->next;
	*pp = x->next;
	free(x);
}

struct zm_xattr *zm_xattr_new(const char *name, uint16_t nlen,
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
