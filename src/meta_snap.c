// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Snapshots of the in-DRAM metadata: zm_snap_encode() writes the whole
 * state as SNAP_* records (inodes first, then directory entries, then
 * zone reset counts), and zm_snap_load() builds a state from them,
 * checking every record as zm_apply() does, then frees the orphans.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "meta_i.h"
#include "zonefuse/meta.h"
#include "zonefuse/util.h"

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
	if (zm_is_reg(in) && in->f.n_pre) {
		zm_snap_list_start(b, ZF_REC_SNAP_PREALLOC, in->ino);
		for (k = 0; k < in->f.n_pre; k++) {
			struct zf_snap_range r = {
				.off = htole64(in->f.pre[k].off),
				.len = htole64(in->f.pre[k].len),
			};

			ret = zm_snap_item(b, &r, sizeof(r), in->ino, emit, arg);
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


/*
 * The checksums of every zone that holds file data, up to its last block
 * that has one (what follows is zero in memory, and loads as zero).
 */
static int zm_snap_csums(const struct zmeta *m, struct zm_snap_buf *b,
			 zm_emit_fn emit, void *arg)
{
	struct zf_rec_snap_csums *h = (void *)b->buf;
	uint32_t max = (uint32_t)((sizeof(b->buf) - sizeof(*h)) / sizeof(uint32_t));
	uint32_t z, i;
	int ret;

	for (z = 0; z < m->nr_zones; z++) {
		const struct zm_zone *zn = &m->zones[z];
		uint32_t n = (uint32_t)(zn->len / m->block_size), first;

		if (!zn->csum || !zn->valid)
			continue;
		while (n && !zn->csum[n - 1])
			n--;
		for (first = 0; first < n; first += max) {
			uint32_t cnt = ZF_MIN(n - first, max);
			uint32_t *item = (void *)(h + 1);

			h->zone = htole32(z);
			h->first = htole32(first);
			h->count = htole32(cnt);
			h->reserved = 0;
			for (i = 0; i < cnt; i++)
				item[i] = htole32(zn->csum[first + i]);
			ret = emit(arg, ZF_REC_SNAP_CSUMS, b->buf,
				   (uint32_t)(sizeof(*h) + cnt * sizeof(*item)));
			if (ret)
				return ret;
		}
	}
	return 0;
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
	ret = zm_snap_csums(m, b, emit, arg);
	if (ret)
		goto out_free;
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

/*
 * A file's reserved ranges, in one list or several in a row: block
 * aligned, each after the one before with a gap between. That none
 * touches an extent's blocks zm_verify() checks, over the whole state.
 */
static int zm_load_prealloc(struct zmeta *m, struct zm_inode *in,
			    const void *items, uint32_t count, uint32_t len,
			    char *why, size_t wl)
{
	const struct zf_snap_range *r = items;
	uint64_t bs = m->block_size;
	uint32_t k;

	if (!zm_is_reg(in) || len != count * sizeof(*r))
		return zm_bad(why, wl, "SNAP_PREALLOC of %llu: bad list",
			      (unsigned long long)in->ino);
	if (zm_pre_reserve(in, count))
		return -ENOMEM;
	for (k = 0; k < count; k++) {
		uint64_t off = le64toh(r[k].off), rlen = le64toh(r[k].len);
		const struct zm_range *last =
			in->f.n_pre ? &in->f.pre[in->f.n_pre - 1] : NULL;

		if (!rlen || off % bs || rlen % bs || off > ZF_MAX_FILE_SIZE ||
		    rlen > ZF_MAX_FILE_SIZE - off ||
		    (last && last->off + last->len >= off))
			return zm_bad(why, wl,
				      "SNAP_PREALLOC of %llu: range at %llu is bad",
				      (unsigned long long)in->ino,
				      (unsigned long long)off);
		in->f.pre[in->f.n_pre].off = off;
		in->f.pre[in->f.n_pre].len = rlen;
		in->f.n_pre++;
		m->prealloc_bytes += rlen;
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
	case ZF_REC_SNAP_PREALLOC:
		return zm_load_prealloc(m, in, h + 1, count, len, why, wl);
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

static int zm_load_csums(struct zmeta *m, const void *p, uint32_t len,
			 char *why, size_t wl)
{
	const struct zf_rec_snap_csums *h = p;
	uint32_t zone, first, count;
	int ret;

	if (len < sizeof(*h))
		return zm_bad(why, wl, "SNAP_CSUMS too short");
	zone = le32toh(h->zone);
	first = le32toh(h->first);
	count = le32toh(h->count);
	if (zone >= m->nr_zones ||
	    first > m->zones[zone].len / m->block_size ||
	    count > m->zones[zone].len / m->block_size - first ||
	    len != sizeof(*h) + (uint64_t)count * sizeof(uint32_t))
		return zm_bad(why, wl, "SNAP_CSUMS out of range");
	ret = zm_csum_room(m, zone);
	if (ret)
		return ret;
	zm_csum_set(m, m->zones[zone].start + (uint64_t)first * m->block_size,
		    count, h + 1);
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
	case ZF_REC_SNAP_PREALLOC:
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
	case ZF_REC_SNAP_CSUMS:
		return zm_load_csums(m, p, len, why, wl);
	case ZF_REC_SNAP_END:
		return zm_load_end(m, p, len, why, wl);
	default:
		return zm_bad(why, wl, "record type %u inside a snapshot",
			      type);
	}
}
