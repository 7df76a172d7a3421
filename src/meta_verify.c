// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The invariants of the in-DRAM metadata, checked over the whole set:
 * zm_verify(), for mount, fsck and checking builds. It reads the
 * tables and changes nothing; each rule is the one the code that keeps it
 * uses, so that a state zm_apply() builds from sound records passes.
 */
#include <errno.h>
#include <stdlib.h>

#include "meta_i.h"
#include "zonefuse/meta.h"
#include "zonefuse/util.h"

/*
 * One regular file's extents: non-empty, sorted by file offset and
 * disjoint (zm_extent_find() searches them), each inside one zone that
 * exists (zm_data_range_ok() when it was mapped; zm_zone_add() indexes
 * the zone by the extent's address), and none past the file size (the
 * rule of fsck_extents(): data there cannot be read and is not meant to
 * be kept). The file system's EXTENT records keep the last one, their
 * size being their end; zm_apply() would take one whose size field stops
 * short of its end, and this reports the state it leaves.
 */
static int zm_verify_extents(const struct zmeta *m, const struct zm_inode *in,
			     char *why, size_t wl)
{
	unsigned long long ino = (unsigned long long)in->ino;
	uint32_t k;

	for (k = 0; k < in->f.n_ext; k++) {
		const struct zm_extent *e = &in->f.ext[k];
		unsigned long long foff = (unsigned long long)e->foff;

		if (!e->len || e->foff + e->len < e->foff ||
		    e->addr + e->len < e->addr)
			return zm_bad(why, wl,
				      "inode %llu: extent %u at file offset %llu is empty or wraps",
				      ino, k, foff);
		if (k && in->f.ext[k - 1].foff + in->f.ext[k - 1].len > e->foff)
			return zm_bad(why, wl,
				      "inode %llu: extent %u at file offset %llu overlaps or precedes the one before it",
				      ino, k, foff);
		if (zm_zone_of(m, e->addr) >= m->nr_zones)
			return zm_bad(why, wl,
				      "inode %llu: extent %u at file offset %llu maps device address 0x%llx, past the last zone",
				      ino, k, foff,
				      (unsigned long long)e->addr);
		if (zm_zone_of(m, e->addr + e->len - 1) !=
		    zm_zone_of(m, e->addr))
			return zm_bad(why, wl,
				      "inode %llu: extent %u at file offset %llu crosses the end of zone %u",
				      ino, k, foff, zm_zone_of(m, e->addr));
		if (e->foff + e->len > in->size)
			return zm_bad(why, wl,
				      "inode %llu: extent %u at file offset %llu reaches past the file size %llu",
				      ino, k, foff,
				      (unsigned long long)in->size);
	}
	return 0;
}

/*
 * One regular file's reserved ranges: block aligned, sorted, apart (a
 * gap between each two: zm_pre_add() joins ranges that touch), within the
 * largest file, and on no block an extent touches (the EXTENT that maps a
 * block releases its reservation). Ranges may lie past the size
 * (fallocate with FALLOC_FL_KEEP_SIZE).
 */
static int zm_verify_prealloc(const struct zmeta *m,
			      const struct zm_inode *in, char *why, size_t wl)
{
	unsigned long long ino = (unsigned long long)in->ino;
	uint64_t bs = m->block_size;
	uint32_t k, e = 0;

	for (k = 0; k < in->f.n_pre; k++) {
		const struct zm_range *r = &in->f.pre[k];

		if (!r->len || r->off % bs || r->len % bs ||
		    r->off > ZF_MAX_FILE_SIZE ||
		    r->len > ZF_MAX_FILE_SIZE - r->off)
			return zm_bad(why, wl,
				      "inode %llu: reserved range %u at %llu is empty, unaligned or too far",
				      ino, k, (unsigned long long)r->off);
		if (k && in->f.pre[k - 1].off + in->f.pre[k - 1].len >= r->off)
			return zm_bad(why, wl,
				      "inode %llu: reserved range %u at %llu overlaps or touches the one before it",
				      ino, k, (unsigned long long)r->off);
		while (e < in->f.n_ext &&
		       ZF_ROUND_UP(in->f.ext[e].foff + in->f.ext[e].len, bs) <=
			       r->off)
			e++;
		if (e < in->f.n_ext &&
		    ZF_ROUND_DOWN(in->f.ext[e].foff, bs) < r->off + r->len)
			return zm_bad(why, wl,
				      "inode %llu: reserved range %u at %llu covers a block extent %u maps",
				      ino, k, (unsigned long long)r->off, e);
	}
	return 0;
}

/*
 * The zone counts are added up again from the extents, each counted in
 * whole blocks (zm_fp()), as zm_zone_add() and zm_zone_sub() count them.
 * Every inode in the table counts, linked or not: an unlinked file that
 * is still open keeps its data and its zones' bytes.
 */
int zm_verify(const struct zmeta *m, char *why, size_t wl)
{
	uint64_t *valid, live = 0, pre = 0;
	uint32_t b, z;
	int ret = 0;

	valid = calloc(m->nr_zones ? m->nr_zones : 1, sizeof(*valid));
	if (!valid)
		return -ENOMEM;
	for (b = 0; b <= m->imask; b++) {
		const struct zm_inode *in;

		for (in = m->itab[b]; in; in = in->hnext) {
			uint32_t k;

			if (!zm_is_reg(in))
				continue;
			ret = zm_verify_extents(m, in, why, wl);
			if (!ret)
				ret = zm_verify_prealloc(m, in, why, wl);
			if (ret)
				goto out_free;
			pre += zm_pre_bytes(in);
			for (k = 0; k < in->f.n_ext; k++)
				valid[zm_zone_of(m, in->f.ext[k].addr)] +=
					zm_fp(m, in->f.ext[k].len);
		}
	}
	for (z = 0; z < m->nr_zones; z++) {
		if (m->zones[z].valid != valid[z]) {
			ret = zm_bad(why, wl,
				     "zone %u counts %llu live bytes, its extents hold %llu",
				     z, (unsigned long long)m->zones[z].valid,
				     (unsigned long long)valid[z]);
			goto out_free;
		}
		live += valid[z];
	}
	if (m->live_bytes != live)
		ret = zm_bad(why, wl,
			     "live_bytes is %llu, the zones' live bytes add up to %llu",
			     (unsigned long long)m->live_bytes,
			     (unsigned long long)live);
	else if (m->prealloc_bytes != pre)
		ret = zm_bad(why, wl,
			     "prealloc_bytes is %llu, the files' reserved ranges add up to %llu",
			     (unsigned long long)m->prealloc_bytes,
			     (unsigned long long)pre);
out_free:
	free(valid);
	return ret;
}
