// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Reclaim: when free zones run low, move the live data out of mostly-dead
 * zones into the reclaim stream, then reset them.
 *
 * A move is a copy through the device layer followed by an EXTENT_MOVE
 * record, applied under the file's data lock: a reader either sees the
 * extent at its old place (whose data stays valid until the zone is reset)
 * or at its new one, never half. The victim is reset only once the moves
 * are durable, like any zone whose data died. A piece the file stopped
 * mapping while it was copied (overwritten, truncated, deleted) is simply
 * not moved: the record only remaps what still maps the old bytes.
 *
 * Finding a zone's live extents scans every file's extents: zonefuse keeps
 * no reverse map (it would cost DRAM per extent for a rare operation).
 *
 * Wear leveling is the same move with another victim and another head:
 * the least-worn zone whose data has outlived a whole cycle of the pool
 * (cold: configs, a dataset written once), into the most-worn free zone,
 * so that the zone that held it takes its share of resets.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "zfs_i.h"
#include "zonefuse/util.h"

/*
 * Background reclaim starts when writers have no free zone left above
 * their floor (their current zones still have room). Every zone kept free
 * beyond that is taken from the dead bytes reclaim chooses its victims
 * among: near full, that room is a few zones, and each one counts. In
 * the peers suite's near-full phase made three times its free room long
 * (4 GiB of 64 MiB zones, 85-90 % of df), a margin of 2 zones made
 * reclaim copy 2.05-2.43 bytes per byte written, 1 zone 1.49-1.57
 * (bench/reclaim-host.py, 5 seeds each; null_blk in the guest: WA
 * 3.53-3.61 -> 2.73-2.83), and in neither did a writer wait for room. A
 * wider margin only absorbs bursts of zones taken at once, which a
 * writer otherwise waits out (docs/space.md).
 */
#define GC_MARGIN 1u

/*
 * Wear leveling moves no more than 1/GC_WEAR_BUDGET_DIV of the bytes
 * applications wrote since mount: checkpoint rotation then stays within
 * write amplification 1.02 (docs/space.md). When it starts is the
 * victim's rule (alloc_gc_victim()).
 */
#define GC_WEAR_BUDGET_DIV 100u

struct gc_piece {
	uint64_t ino, addr, len;
};

static int gc_piece_cmp(const void *a, const void *b)
{
	const struct gc_piece *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

bool gc_wanted(struct zfs *fs)
{
	uint32_t floor, n = alloc_free_zones(fs, &floor);

	return n < floor + GC_MARGIN;
}

/* The live pieces of zone @zone, by device address. meta_lock shared. */
static int gc_pieces(struct zfs *fs, uint32_t zone, struct gc_piece **out,
		     size_t *nout)
{
	uint64_t zs = fs->m.zones[zone].start, ze = zs + fs->m.zones[zone].cap;
	struct gc_piece *v = NULL;
	size_t n = 0, cap = 0;
	uint32_t b, k;

	for (b = 0; b <= fs->m.imask; b++) {
		struct zm_inode *in;

		for (in = fs->m.itab[b]; in; in = in->hnext) {
			struct zfs_rt *rt = in->rt;

			if (!zm_is_reg(in))
				continue;
			if (rt)
				zlock_rd(&rt->lock, ZLOCK_RT);
			for (k = 0; k < in->f.n_ext; k++) {
				const struct zm_extent *e = &in->f.ext[k];

				if (e->addr >= ze || e->addr + e->len <= zs)
					continue;
				if (n == cap) {
					size_t ncap = cap ? cap * 2 : 64;
					struct gc_piece *nv =
						realloc(v, ncap * sizeof(*nv));

					if (!nv) {
						if (rt)
							zlock_unrw(&rt->lock);
						free(v);
						return -ENOMEM;
					}
					v = nv;
					cap = ncap;
				}
				v[n].ino = in->ino;
				v[n].addr = e->addr;
				v[n].len = e->len;
				n++;
			}
			if (rt)
				zlock_unrw(&rt->lock);
		}
	}
	if (n) /* qsort(NULL, 0, ...) is undefined */
		qsort(v, n, sizeof(*v), gc_piece_cmp);
	*out = v;
	*nout = n;
	return 0;
}

/* Journal that [old, old + len) of @ino now lives at @new. */
static int gc_log_move(struct zfs *fs, uint64_t ino, uint64_t old,
		       uint64_t new, uint64_t len)
{
	struct zf_rec_extent_move rec = {
		.ino = htole64(ino),
		.old_addr = htole64(old),
		.new_addr = htole64(new),
		.len = htole64(len),
	};
	struct zm_inode *in;
	struct zfs_rt *rt;
	int ret = 0;

	zlock_rd(&fs->meta_lock, ZLOCK_META);
	in = zm_iget(&fs->m, ino);
	if (in && zm_is_reg(in)) {
		rt = in->rt;
		if (rt)
			zlock_wr(&rt->lock, ZLOCK_RT);
		ret = rec_log(fs, ZF_REC_EXTENT_MOVE, &rec, sizeof(rec));
		if (rt)
			zlock_unrw(&rt->lock);
	}
	zlock_unrw(&fs->meta_lock);
	return ret;
}

/*
 * Copy one live piece (aligned out to whole blocks: pieces share blocks
 * only with themselves, the rest of a block is padding) to the reclaim
 * stream, and log the move of each part that landed.
 */
static int gc_move(struct zfs *fs, struct zfs_head *head,
		   const struct gc_piece *p, char *buf, size_t bufsz,
		   struct alloc_try *t, uint64_t *copied)
{
	uint32_t bs = fs->bs;
	uint64_t pos = p->addr, end = p->addr + p->len;
	int ret = 0;

	while (pos < end) {
		uint64_t as = ZF_ROUND_DOWN(pos, bs);
		size_t n = (size_t)ZF_MIN(ZF_ROUND_UP(end, bs) - as, (uint64_t)bufsz);
		uint64_t lend = ZF_MIN(as + n, end);
		size_t done = 0;

		ret = zdev_read(fs->dev, buf, n, as);
		if (ret)
			return ret;
		while (done < n) {
			uint64_t addr, from, to;
			size_t wrote;

			ret = alloc_head_write(fs, head, buf + done, n - done,
					       &addr, &wrote, t);
			if (ret)
				return ret;
			fs->gc_bytes += wrote;
			if (copied)
				*copied += wrote;
			if (head->kind == ZFS_HEAD_COLD)
				fs->wear_bytes += wrote;
			/* The file bytes of this part: [from, to) of the old. */
			from = ZF_MAX(as + done, pos);
			to = ZF_MIN(as + done + wrote, lend);
			if (to > from)
				ret = gc_log_move(fs, p->ino, from,
						  addr + (from - (as + done)),
						  to - from);
			alloc_landed(fs, addr, wrote, true);
			if (ret)
				return ret;
			done += wrote;
		}
		pos = lend;
	}
	return 0;
}

/*
 * May wear leveling move @zone's live bytes? What it moved since mount,
 * with these, stays within 1/GC_WEAR_BUDGET_DIV of what applications
 * wrote since mount.
 */
static bool gc_wear_budget(struct zfs *fs, uint32_t zone)
{
	return (fs->wear_bytes + fs->m.zones[zone].valid) * GC_WEAR_BUDGET_DIV <=
	       fs->host_bytes;
}

/*
 * Copies go GC_IO_BYTES at a time, not a chunk: a write that an fsync
 * waits for queues behind the copy ahead of it, and a shorter copy holds
 * it up less. On null_blk each request holds the device's lock for all of
 * its copy; near full, 256 KiB copies took the median p99 fsync from 7.18
 * ms to 6.73 (13 and 17 runs; 128 KiB no better), WA and throughput level
 * (docs/performance.md, "Reclaim's I/O size"). The moves of one piece land
 * side by side and merge into one extent again (zm_extent_set()).
 */
int gc_collect(struct zfs *fs, uint32_t want, enum gc_mode mode,
	       struct alloc_try *t, uint64_t *copied)
{
	struct zfs_head *head = mode == GC_WEAR ? &fs->cold : &fs->gc;
	uint32_t freed = 0;
	size_t bufsz = GC_IO_BYTES;
	char *buf;
	int ret = 0;

	if (fs->rdonly || fs->error)
		return 0;
	buf = zdev_buf_alloc(fs->dev, bufsz);
	if (!buf)
		return -ENOMEM;
	zlock_mutex(&fs->gc_lock, ZLOCK_GC);
	while (freed < want) {
		uint32_t zone = alloc_gc_victim(fs, mode, head);
		struct gc_piece *pieces = NULL;
		size_t n = 0, i;

		if (zone == ZF_NO_ZONE)
			break;
		if (mode == GC_WEAR && !gc_wear_budget(fs, zone)) {
			zlog_debug("zone %u: wear leveling would move %" PRIu64 " bytes: over its budget (%" PRIu64 " moved, %" PRIu64 " written)",
				   zone, fs->m.zones[zone].valid,
				   (uint64_t)fs->wear_bytes, (uint64_t)fs->host_bytes);
			alloc_gc_done(fs, zone);
			break;
		}
		zlock_rd(&fs->meta_lock, ZLOCK_META);
		ret = gc_pieces(fs, zone, &pieces, &n);
		zlock_unrw(&fs->meta_lock);
		zlog_debug("zone %u: %s moves %zu extents (%" PRIu64 " live bytes)",
			   zone, mode == GC_WEAR ? "wear leveling" : "reclaim",
			   n, fs->m.zones[zone].valid);
		for (i = 0; !ret && i < n; i++)
			ret = gc_move(fs, head, &pieces[i], buf, bufsz, t,
				      copied);
		free(pieces);
		alloc_gc_done(fs, zone);
		if (ret == -EAGAIN)
			break;
		if (ret) {
			zlog_err("%s: reclaim of zone %u failed: %s",
				 zdev_path(fs->dev), zone, strerror(-ret));
			break;
		}
		freed++;
	}
	zlock_unmutex(&fs->gc_lock);
	free(buf);
	if (ret == -EAGAIN && freed)
		ret = 0;
	return ret ? ret : (int)freed;
}

/*
 * The journal's chain stays where it is until the log outgrows its
 * snapshot, which on a file system of few files may be never: its zones
 * then kept 0 resets through 40 rounds of a checkpoint rotation while the
 * others reached 6. A roll writes the snapshot into zones taken least-worn
 * first and releases the old chain for its resets; it costs the
 * snapshot's bytes, counted against the budget.
 */
static int gc_wear_journal(struct zfs *fs)
{
	uint32_t chain[128], n = jrnl_chain(fs->j, 0, chain, 64);
	uint64_t snap = fs->snap_bytes;
	uint32_t i;
	int ret;

	n += jrnl_chain(fs->j, 1, chain + n, 64);
	for (i = 0; i < n && !alloc_wear_lags(fs, chain[i]); i++)
		;
	if (i == n || (fs->wear_bytes + snap) * GC_WEAR_BUDGET_DIV > fs->host_bytes)
		return 0;
	zlog_debug("zone %u: wear leveling rolls the journal (%" PRIu64 " bytes)",
		   chain[i], snap);
	ret = jrnl_roll(fs->j);
	if (ret)
		return ret;
	fs->wear_bytes += snap;
	return 1;
}

int gc_wear(struct zfs *fs)
{
	struct alloc_try t = { 0 };
	int ret = gc_wear_journal(fs);

	if (ret)
		return ret;
	ret = gc_collect(fs, 1, GC_WEAR, &t, NULL);
	return ret == -EAGAIN ? 0 : ret;
}
