// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The in-DRAM metadata's tables and their primitives: the inode table,
 * directories (hash tables in readdir order), extents and the zone byte
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

#define ZM_DIR_MIN_BITS 3

/* The bucket of hash @h (or of cookie key @h >> 1) in a table of @bits. */
static uint32_t zm_dir_bucket(uint32_t h, uint32_t bits)
{
	return (h >> 1) >> (31 - bits);
}

static int zm_dir_init(struct zm_dir *d)
{
	memset(d, 0, sizeof(*d));
	d->hbits = ZM_DIR_MIN_BITS;
	d->htab = calloc(1u << d->hbits, sizeof(*d->htab));
	return d->htab ? 0 : -ENOMEM;
}

struct zm_dent *zm_lookup(const struct zm_inode *dir, const char *name,
			  size_t len)
{
	uint32_t h = zm_name_hash(name, len);
	struct zm_dent *d = dir->d.htab[zm_dir_bucket(h, dir->d.hbits)];

	for (; d; d = d->hnext)
		if (d->hash == h && d->name_len == len &&
		    !memcmp(d->name, name, len))
			return d;
	return NULL;
}

/*
 * The table doubles before an add would take it past one entry per
 * bucket; that is the only allocation, made before anything is touched,
 * so a failure leaves the directory as it was. Doubling splits bucket b
 * into 2b and 2b + 1 by the next bit of the hash: walking each old chain
 * in order and appending keeps the new chains sorted.
 */
int zm_dir_reserve(struct zm_dir *d)
{
	uint32_t nbits = d->hbits + 1, i;
	struct zm_dent **nt, **tail[2];

	if (d->count + 1 <= (1u << d->hbits) || d->hbits >= 31)
		return 0;
	nt = calloc(1u << nbits, sizeof(*nt));
	if (!nt)
		return -ENOMEM;
	for (i = 0; i < (1u << d->hbits); i++) {
		struct zm_dent *e = d->htab[i], *next;

		tail[0] = &nt[2 * i];
		tail[1] = &nt[2 * i + 1];
		for (; e; e = next) {
			uint32_t half = zm_dir_bucket(e->hash, nbits) & 1;

			next = e->hnext;
			e->hnext = NULL;
			*tail[half] = e;
			tail[half] = &e->hnext;
		}
	}
	free(d->htab);
	d->htab = nt;
	d->hbits = nbits;
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

/*
 * Entries of one hash are next to each other in their chain, by
 * increasing number: the first gap in the numbers is @e's, and where it
 * goes in the chain.
 */
void zm_dir_add(struct zm_dir *d, struct zm_dent *e)
{
	struct zm_dent **pp = &d->htab[zm_dir_bucket(e->hash, d->hbits)];
	uint64_t want = ZM_COOKIE(e->hash, 0);

	while (*pp && (*pp)->cookie < want)
		pp = &(*pp)->hnext;
	while (*pp && (*pp)->cookie == want) {
		pp = &(*pp)->hnext;
		want++;
	}
	e->cookie = want;
	e->hnext = *pp;
	*pp = e;
	d->count++;
}

void zm_dir_del(struct zm_dir *d, struct zm_dent *e)
{
	struct zm_dent **pp = &d->htab[zm_dir_bucket(e->hash, d->hbits)];

	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
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
	uint32_t b = 0, n = 1u << d->hbits;
	struct zm_dent *e;

	if (after >= 3) {
		uint32_t key = (uint32_t)((after - 3) >> 32);

		if (key >> 31)
			return NULL; /* past every position */
		b = key >> (31 - d->hbits);
		for (e = d->htab[b]; e; e = e->hnext)
			if (e->cookie > after)
				return e;
		b++;
	}
	for (; b < n; b++)
		if (d->htab[b])
			return d->htab[b];
	return NULL;
}

static void zm_dir_free(struct zm_dir *d)
{
	uint32_t i;

	for (i = 0; d->htab && i < (1u << d->hbits); i++) {
		struct zm_dent *e = d->htab[i], *next;

		for (; e; e = next) {
			next = e->hnext;
			free(e);
		}
	}
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
	if (zm_is_dir(in)) {
		zm_dir_free(&in->d);
	} else if (zm_is_lnk(in)) {
		free(in->target);
	} else if (zm_is_reg(in)) {
		free(in->f.ext);
		free(in->f.pre);
	}
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
	m->prealloc_bytes -= ZF_MIN(m->prealloc_bytes, zm_pre_bytes(in));
	in->f.n_pre = 0;
}

/* ---- reserved ranges (fallocate) ------------------------------------------------ */

uint64_t zm_pre_bytes(const struct zm_inode *i)
{
	uint64_t sum = 0;
	uint32_t k;

	for (k = 0; k < i->f.n_pre; k++)
		sum += i->f.pre[k].len;
	return sum;
}

/* Index of the first range of @i that ends after @off. */
static uint32_t zm_pre_find(const struct zm_inode *i, uint64_t off)
{
	uint32_t lo = 0, hi = i->f.n_pre;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (i->f.pre[mid].off + i->f.pre[mid].len <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

uint64_t zm_pre_overlap(const struct zm_inode *i, uint64_t off, uint64_t end)
{
	uint64_t sum = 0;
	uint32_t k;

	for (k = zm_pre_find(i, off);
	     k < i->f.n_pre && i->f.pre[k].off < end; k++)
		sum += ZF_MIN(end, i->f.pre[k].off + i->f.pre[k].len) -
		       ZF_MAX(off, i->f.pre[k].off);
	return sum;
}

/*
 * The gaps of [@off, @end) (block aligned): blocks that no extent touches
 * (an extent's blocks are whole on the device) and no range holds. Walks
 * the extents and the ranges together, both sorted. Stores the gaps in
 * @out when given; returns their bytes, and their count in *@n.
 */
static uint64_t zm_pre_gaps(const struct zmeta *m, const struct zm_inode *i,
			    uint64_t off, uint64_t end, struct zm_range *out,
			    uint32_t *n)
{
	uint64_t bs = m->block_size, pos = off, total = 0;
	uint32_t k = zm_extent_find(i, off), p = zm_pre_find(i, off);

	*n = 0;
	while (pos < end) {
		uint64_t cs = UINT64_MAX, ce = 0, gap_end;
		bool ext = false;

		if (k < i->f.n_ext) {
			const struct zm_extent *e = &i->f.ext[k];

			cs = ZF_ROUND_DOWN(e->foff, bs);
			ce = ZF_ROUND_UP(e->foff + e->len, bs);
			ext = true;
		}
		if (p < i->f.n_pre && i->f.pre[p].off < cs) {
			cs = i->f.pre[p].off;
			ce = cs + i->f.pre[p].len;
			ext = false;
		}
		gap_end = ZF_MIN(cs, end);
		if (gap_end > pos) {
			if (out)
				out[*n] = (struct zm_range){ pos, gap_end - pos };
			(*n)++;
			total += gap_end - pos;
		}
		if (cs >= end)
			break;
		pos = ZF_MAX(pos, ce);
		if (ext)
			k++;
		else
			p++;
	}
	return total;
}

uint64_t zm_pre_need(const struct zmeta *m, const struct zm_inode *i,
		     uint64_t off, uint64_t end)
{
	uint32_t n;

	return zm_pre_gaps(m, i, off, end, NULL, &n);
}

int zm_pre_reserve(struct zm_inode *i, uint32_t more)
{
	uint64_t need = (uint64_t)i->f.n_pre + more, ncap;
	struct zm_range *nr;

	if (need <= i->f.cap_pre)
		return 0;
	if (need > UINT32_MAX)
		return -ENOMEM;
	ncap = ZF_MAX(need, i->f.cap_pre ? (uint64_t)i->f.cap_pre * 2 : 2);
	ncap = ZF_MIN(ncap, (uint64_t)UINT32_MAX);
	nr = realloc(i->f.pre, ncap * sizeof(*nr));
	if (!nr)
		return -ENOMEM;
	i->f.pre = nr;
	i->f.cap_pre = (uint32_t)ncap;
	return 0;
}

void zm_pre_cut(struct zmeta *m, struct zm_inode *i, uint64_t off,
		uint64_t end)
{
	struct zm_range *r = i->f.pre;
	uint32_t n = i->f.n_pre, k = zm_pre_find(i, off), j;
	uint64_t cut = 0;

	if (off >= end || k == n || r[k].off >= end)
		return;
	if (r[k].off < off && r[k].off + r[k].len > end) {
		/* Inside one range: it splits (room reserved). */
		memmove(&r[k + 2], &r[k + 1], (n - k - 1) * sizeof(*r));
		r[k + 1].off = end;
		r[k + 1].len = r[k].off + r[k].len - end;
		r[k].len = off - r[k].off;
		i->f.n_pre = n + 1;
		m->prealloc_bytes -= end - off;
		return;
	}
	if (r[k].off < off) {
		cut += r[k].off + r[k].len - off;
		r[k].len = off - r[k].off;
		k++;
	}
	for (j = k; j < n && r[j].off + r[j].len <= end; j++)
		cut += r[j].len;
	if (j < n && r[j].off < end) {
		cut += end - r[j].off;
		r[j].len -= end - r[j].off;
		r[j].off = end;
	}
	memmove(&r[k], &r[j], (n - j) * sizeof(*r));
	i->f.n_pre = n - (j - k);
	m->prealloc_bytes -= ZF_MIN(m->prealloc_bytes, cut);
}

int zm_pre_add(struct zmeta *m, struct zm_inode *i, uint64_t off,
	       uint64_t end)
{
	struct zm_range *gaps, *nr;
	uint32_t ng, a = 0, b = 0, n = 0, cap;
	uint64_t add = zm_pre_gaps(m, i, off, end, NULL, &ng);

	if (!ng)
		return 0;
	if ((uint64_t)i->f.n_pre + ng > UINT32_MAX)
		return -ENOMEM;
	cap = i->f.n_pre + ng;
	gaps = malloc(ng * sizeof(*gaps));
	nr = malloc(cap * sizeof(*nr));
	if (!gaps || !nr) {
		free(gaps);
		free(nr);
		return -ENOMEM;
	}
	zm_pre_gaps(m, i, off, end, gaps, &ng);
	/* Merge the two sorted lists; ranges that touch become one. */
	while (a < i->f.n_pre || b < ng) {
		struct zm_range next;

		if (b == ng || (a < i->f.n_pre && i->f.pre[a].off < gaps[b].off))
			next = i->f.pre[a++];
		else
			next = gaps[b++];
		if (n && nr[n - 1].off + nr[n - 1].len == next.off)
			nr[n - 1].len += next.len;
		else
			nr[n++] = next;
	}
	free(gaps);
	free(i->f.pre);
	i->f.pre = nr;
	i->f.n_pre = n;
	i->f.cap_pre = cap;
	m->prealloc_bytes += add;
	return 0;
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
