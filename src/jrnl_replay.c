// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Reading the metadata journal back: the superblock, the newest anchor in
 * the super zones, and the chain it names, replayed into the metadata
 * (jrnl_open()); jrnl_read_super() for the tools.
 *
 * Replay trusts nothing it reads: every structure is checked (magic, CRC,
 * uuid, generation, sequence) and the first record that fails ends the log.
 * Records after a torn tail would never be replayed, so a writable mount
 * that finds one starts a fresh chain before appending (jrnl_start()).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jrnl_i.h"
#include "zonefuse/crc32c.h"
#include "zonefuse/util.h"

static bool jrnl_zero(const void *p, size_t n)
{
	const unsigned char *c = p;

	while (n--)
		if (*c++)
			return false;
	return true;
}

static int jrnl_check_super(const struct zf_super *sb, const struct zdev *dev,
			    char *err, size_t errlen)
{
	const struct zdev_geom *g = zdev_geom(dev);
	struct zf_super c = *sb;

	c.crc = 0;
	if (memcmp(sb->magic, ZF_SB_MAGIC, sizeof(sb->magic)))
		return -EMEDIUMTYPE;
	if (le32toh(sb->crc) != crc32c(0, &c, sizeof(c))) {
		zutil_err(err, errlen, "%s: the superblock is damaged (CRC mismatch)",
			  zdev_path(dev));
		return -EUCLEAN;
	}
	if (le32toh(sb->version) < ZF_FORMAT_VERSION &&
	    le32toh(sb->sb_size) == sizeof(*sb)) {
		zutil_err(err, errlen,
			  "%s: zonefuse format version %u, made by an older zonefuse: this one reads format %u (with data checksums) only; copy the files out with the zonefuse that made it, then `zonefuse mkfs` (docs/format.md)",
			  zdev_path(dev), le32toh(sb->version),
			  ZF_FORMAT_VERSION);
		return -ENOTSUP;
	}
	if (le32toh(sb->version) != ZF_FORMAT_VERSION ||
	    le32toh(sb->sb_size) != sizeof(*sb) ||
	    (le64toh(sb->feat_incompat) & ~ZF_FEATURE_INCOMPAT_SUPP)) {
		zutil_err(err, errlen,
			  "%s: zonefuse format version %u (incompatible features 0x%llx) is not supported by this zonefuse (format %u); use a newer zonefuse",
			  zdev_path(dev), le32toh(sb->version),
			  (unsigned long long)le64toh(sb->feat_incompat),
			  ZF_FORMAT_VERSION);
		return -ENOTSUP;
	}
	if (le64toh(sb->zone_size) != g->zone_size ||
	    le32toh(sb->nr_zones) != g->nr_zones ||
	    le32toh(sb->block_size) != g->block_size ||
	    le64toh(sb->dev_size) != g->size) {
		zutil_err(err, errlen,
			  "%s: the file system was made for another geometry (%u zones of %llu bytes, block %u); run mkfs again to use this device",
			  zdev_path(dev), le32toh(sb->nr_zones),
			  (unsigned long long)le64toh(sb->zone_size),
			  le32toh(sb->block_size));
		return -EINVAL;
	}
	if (le32toh(sb->super_zone[0]) >= g->nr_zones ||
	    le32toh(sb->super_zone[1]) >= g->nr_zones ||
	    sb->super_zone[0] == sb->super_zone[1] ||
	    !le32toh(sb->anchors_per_zone)) {
		zutil_err(err, errlen, "%s: the superblock is inconsistent",
			  zdev_path(dev));
		return -EUCLEAN;
	}
	return 0;
}

/* Read the first @len bytes of zone @zone into @buf (aligned). */
static int jrnl_read_zone_head(struct zdev *dev, uint32_t zone, void *buf,
			       size_t len)
{
	return zdev_read(dev, buf, len, zdev_zone_start(dev, zone));
}

int jrnl_read_super(struct zdev *dev, struct zf_super *sb, char *err,
		    size_t errlen)
{
	const struct zdev_geom *g = zdev_geom(dev);
	char *buf = zdev_buf_alloc(dev, ZF_SB_UNIT);
	uint32_t i, n = ZF_MIN(g->nr_zones, JRNL_SB_SCAN_ZONES);
	int ret = -EMEDIUMTYPE, r;

	if (!buf)
		return -ENOMEM;
	if (g->zone_size < ZF_SB_UNIT)
		n = 0;
	for (i = 0; i < n; i++) {
		struct zdev_zone z;

		if (zdev_report(dev, i, 1, &z) != 1)
			continue;
		if (z.cond == ZDEV_COND_OFFLINE ||
		    (z.type == ZDEV_ZONE_SEQ && z.cond != ZDEV_COND_FULL &&
		     z.wp - z.start < ZF_SB_UNIT))
			continue;
		if (jrnl_read_zone_head(dev, i, buf, ZF_SB_UNIT))
			continue;
		memcpy(sb, buf, sizeof(*sb));
		r = jrnl_check_super(sb, dev, err, errlen);
		if (r == -EMEDIUMTYPE || r == -EUCLEAN) {
			/* Maybe the other copy is good. */
			if (r == -EUCLEAN)
				ret = r;
			continue;
		}
		ret = r;
		break;
	}
	free(buf);
	if (ret == -EMEDIUMTYPE)
		zutil_err(err, errlen,
			  "%s: no zonefuse file system found (make one with `zonefuse mkfs %s`)",
			  zdev_path(dev), zdev_path(dev));
	return ret;
}

/*
 * Does @z's write pointer say where the chain's writes end? In a
 * sequential zone that is not full, yes: the zone was empty when the
 * chain took it, so every byte below the pointer is this chain's records
 * or their padding. A full zone may have been finished, its pointer then
 * at the zone's end whatever was written; a conventional zone has none.
 */
static bool jrnl_wp_is_end(const struct zm_zone *z)
{
	return z->type == ZDEV_ZONE_SEQ && z->cond != ZDEV_COND_FULL;
}

/*
 * Read @len bytes of super zone @zone into @buf. A media error in it does
 * not cost the anchors beside it: the zone is read again unit by unit,
 * and a unit that cannot be read is left zero (it is no anchor). Returns
 * 0 (*@unreadable: how many units failed) or another errno.
 */
static int jrnl_read_super_zone(struct jrnl *j, const struct zm_zone *z,
				char *buf, size_t len, uint32_t *unreadable)
{
	size_t off;
	int ret;

	*unreadable = 0;
	ret = zdev_read(j->dev, buf, len, z->start);
	if (ret != -EIO)
		return ret;
	for (off = 0; off < len; off += j->bs) {
		ret = zdev_read(j->dev, buf + off, j->bs, z->start + off);
		if (ret == -EIO) {
			memset(buf + off, 0, j->bs);
			(*unreadable)++;
		} else if (ret) {
			return ret;
		}
	}
	return 0;
}

/*
 * The newest chain whose head zone says it is ours, of a generation after
 * @gen (of any, with @any: no anchor was valid): what the newest anchor
 * named when that anchor is damaged. Generations count up from a random
 * start, so "after" is the signed distance. Chain
 * zones name themselves (struct zf_mzone: uuid, generation, index, the
 * seq of their first record), so the anchor is only a shortcut to the
 * head. One unit read per written zone, so only after damage. Returns 1
 * with *@a made up for that chain, 0 when there is none, or an errno.
 */
static int jrnl_scan_heads(struct jrnl *j, bool any, uint32_t gen,
			   struct zf_anchor *a)
{
	char *buf = zdev_buf_alloc(j->dev, j->bs);
	uint32_t z, best_gen = gen, best_pair[2] = { 0, 0 };
	bool tie = false;
	int found = 0;

	if (!buf)
		return -ENOMEM;
	for (z = 0; z < j->m->nr_zones; z++) {
		const struct zm_zone *mz = &j->m->zones[z];
		struct zf_mzone h, hc;
		uint32_t pair[2], copy;

		if (mz->state == ZM_ZONE_SUPER || mz->state == ZM_ZONE_BAD ||
		    (mz->type == ZDEV_ZONE_SEQ && mz->wp < mz->start + j->bs) ||
		    zdev_read(j->dev, buf, j->bs, mz->start))
			continue;
		memcpy(&h, buf, sizeof(h));
		hc = h;
		hc.crc = 0;
		copy = le32toh(h.copy);
		if (le32toh(h.magic) != ZF_MZONE_MAGIC ||
		    le32toh(h.crc) != crc32c(0, &hc, sizeof(hc)) ||
		    memcmp(h.uuid, j->sb.uuid, sizeof(h.uuid)) || h.index ||
		    le32toh(h.prev_zone) != ZF_NO_ZONE ||
		    (j->mirror ? copy > 1 ||
				 le32toh(h.peer_zone) >= j->m->nr_zones ||
				 le32toh(h.peer_zone) == z :
				 copy != 0))
			continue;
		/*
		 * A mirrored chain's head is found twice, once by each
		 * copy: the pair (primary, mirror) is the chain.
		 */
		pair[copy] = z;
		pair[copy ^ 1] = j->mirror ? le32toh(h.peer_zone) : ZF_NO_ZONE;
		if (found && le32toh(h.chain_gen) == best_gen) {
			if (pair[0] != best_pair[0] || pair[1] != best_pair[1])
				tie = true;
			continue;
		}
		if ((found || !any) &&
		    (int32_t)(le32toh(h.chain_gen) - best_gen) <= 0)
			continue;
		tie = false;
		best_gen = le32toh(h.chain_gen);
		best_pair[0] = pair[0];
		best_pair[1] = pair[1];
		a->chain_zone = htole32(pair[0]);
		a->mirror_zone = htole32(pair[1]);
		a->chain_gen = h.chain_gen;
		a->snap_seq = h.first_seq;
		if (!found)
			a->seq = htole64(le64toh(a->seq) + 1);
		found = 1;
	}
	free(buf);
	/*
	 * Two heads of the newest generation: a roll the crash cut before
	 * its anchor left one, and the next mount's roll, of the same
	 * generation, the other. Which one the damaged anchor named cannot
	 * be told: none is taken.
	 */
	return tie ? 0 : found;
}

/*
 * Newest valid anchor in either super zone. A super zone whose write
 * pointer says where its writes end (jrnl_wp_is_end()) holds nothing but
 * the superblock and anchors below it, so a unit there that is no anchor
 * is damage: the anchors after it are still read, and if none after it
 * is valid, the damaged one may have been the newest, and the chain heads
 * are searched for a newer chain (jrnl_scan_heads()). Elsewhere (a full
 * or conventional super zone) the anchors end at the first that is not
 * one, but for the first of a full zone, which must be one. Damage is
 * said in @info; the next anchor then goes to the other super zone, and
 * back (j->sz_switches), rewriting the damaged one.
 */
static int jrnl_find_anchor(struct jrnl *j, struct zf_anchor *best,
			    struct jrnl_replay_info *info, char *err,
			    size_t errlen)
{
	uint32_t per = le32toh(j->sb.anchors_per_zone), k, i, gen;
	size_t len = ZF_SB_UNIT + (size_t)per * j->bs;
	char *buf = zdev_buf_alloc(j->dev, len);
	bool found = false, newest_bad = false, bad_zone[2] = { false, false };
	bool bad_last_zone[2] = { false, false };
	uint64_t sb_gen[2] = { 0, 0 }, bad_wpos[2] = { 0, 0 };
	uint32_t bad_count[2] = { 0, 0 };
	int ret;

	if (!buf)
		return -ENOMEM;
	for (i = 0; i < 2; i++) {
		uint32_t zone = le32toh(j->sb.super_zone[i]);
		struct zm_zone *z = &j->m->zones[zone];
		uint64_t used = z->type == ZDEV_ZONE_CONV ? len : z->wp - z->start;
		bool wp_end = jrnl_wp_is_end(z), bad_last = false;
		bool full_seq = z->type == ZDEV_ZONE_SEQ && !wp_end;
		struct zf_super sb;
		uint32_t count = 0, unreadable;
		uint64_t prev_seq = 0;
		bool sb_ok;

		z->state = ZM_ZONE_SUPER;
		used = ZF_MIN(used, len);
		if (used < ZF_SB_UNIT + j->bs)
			continue;
		ret = jrnl_read_super_zone(j, z, buf, ZF_ROUND_UP(used, j->bs),
					   &unreadable);
		if (ret) {
			zutil_err(err, errlen, "%s: reading super zone %u failed: %s",
				  zdev_path(j->dev), zone, strerror(-ret));
			free(buf);
			return ret;
		}
		/*
		 * A valid superblock of another file system: its anchors are
		 * not ours. A damaged one (a bad sector) does not make the
		 * anchors after it bad: each is checked on its own (CRC, our
		 * uuid), and the other copy gave us the superblock. Skipping
		 * them would lose the file system to one bad block.
		 */
		memcpy(&sb, buf, sizeof(sb));
		sb_ok = !jrnl_check_super(&sb, j->dev, NULL, 0);
		if (sb_ok && memcmp(sb.uuid, j->sb.uuid, sizeof(sb.uuid)))
			continue;
		if (!sb_ok) {
			snprintf(info->super_bad, sizeof(info->super_bad),
				 "the superblock at 0x%" PRIx64 " in super zone %u",
				 z->start, zone);
			info->super_damaged = true;
			bad_zone[i] = true;
		} else {
			sb_gen[i] = le64toh(sb.sb_gen);
		}
		for (k = 0; k < per && ZF_SB_UNIT + (k + 1) * (uint64_t)j->bs <= used;
		     k++) {
			uint64_t at = ZF_SB_UNIT + (uint64_t)k * j->bs;
			struct zf_anchor a, c;

			memcpy(&a, buf + at, sizeof(a));
			c = a;
			c.crc = 0;
			/*
			 * A zone's anchors are written in increasing seq:
			 * one that holds but is not newer than the one
			 * before it is a stale block (a lost or misdirected
			 * write left an older anchor there), as damaged as
			 * any other. Taken as the newest, it would name a
			 * chain since let go: a mount refused, or worse, one
			 * that replays older metadata.
			 */
			if (le32toh(a.magic) != ZF_ANCHOR_MAGIC ||
			    le32toh(a.crc) != crc32c(0, &c, sizeof(c)) ||
			    memcmp(a.uuid, j->sb.uuid, sizeof(a.uuid)) ||
			    le32toh(a.chain_zone) >= j->m->nr_zones ||
			    (j->mirror &&
			     (le32toh(a.mirror_zone) >= j->m->nr_zones ||
			      a.mirror_zone == a.chain_zone)) ||
			    (le32toh(a.flags) & ~ZF_ANCHOR_FLAGS) ||
			    (count && le64toh(a.seq) <= prev_seq)) {
				/*
				 * A full zone a switch rewrote (its superblock
				 * of a later generation than mkfs's 0) was
				 * finished after its first anchor at least: a
				 * switch writes the superblock, then an anchor,
				 * and only a later one finishes it. No anchor
				 * there is damage. (mkfs finishes the second
				 * zone with its superblock alone.) Past the
				 * first, a full zone's end is not known.
				 */
				if (!wp_end && !(k == 0 && full_seq && sb_ok &&
						 le64toh(sb.sb_gen)))
					break;
				if (!info->anchor_damaged)
					snprintf(info->anchor_bad,
						 sizeof(info->anchor_bad),
						 "the anchor at 0x%" PRIx64 " in super zone %u",
						 z->start + at, zone);
				info->anchor_damaged = true;
				bad_zone[i] = true;
				bad_last = true;
				count++;
				continue;
			}
			bad_last = false;
			count++;
			prev_seq = le64toh(a.seq);
			if (!found || le64toh(a.seq) > le64toh(best->seq)) {
				*best = a;
				found = true;
				j->sz_cur = i;
				j->sz_count = count;
				j->sz_wpos = z->start + ZF_SB_UNIT +
					     (uint64_t)(k + 1) * j->bs;
				if (sb_ok &&
				    le64toh(sb.sb_gen) > le64toh(j->sb.sb_gen))
					j->sb.sb_gen = sb.sb_gen;
			}
		}
		if (bad_last) {
			bad_last_zone[i] = true;
			bad_count[i] = count;
			bad_wpos[i] = z->start + used;
		}
	}
	/*
	 * A damaged last unit was the newest anchor of all if its zone is
	 * the live one: the one not full (a switch finishes the other), or,
	 * both being full (few active zones: each is finished after its
	 * anchor), the one whose superblock is the newer.
	 */
	for (i = 0; i < 2; i++) {
		uint32_t o = i ^ 1;
		bool live = jrnl_wp_is_end(&j->m->zones[le32toh(j->sb.super_zone[i])]) ||
			    !sb_gen[o] || sb_gen[i] > sb_gen[o];

		if (!bad_last_zone[i] || !live)
			continue;
		newest_bad = true;
		j->sz_cur = i;
		j->sz_count = bad_count[i];
		j->sz_wpos = bad_wpos[i];
	}
	/* Away from the live zone and back, or into the other one. */
	j->sz_switches = bad_zone[j->sz_cur] ? 2 : bad_zone[j->sz_cur ^ 1];
	/* The last writable mount could not write the other zone: again. */
	if (found && !newest_bad &&
	    (le32toh(best->flags) & ZF_ANCHOR_OTHER_FAILED)) {
		info->super_unwritable = true;
		info->super_unwritable_zone =
			le32toh(j->sb.super_zone[j->sz_cur ^ 1]);
		if (!j->sz_switches)
			j->sz_switches = 1;
	}
	gen = found ? le32toh(best->chain_gen) : 0;
	if (newest_bad) {
		if (!found)
			memset(best, 0, sizeof(*best));
		ret = jrnl_scan_heads(j, !found, gen, best);
		if (ret < 0) {
			free(buf);
			return ret;
		}
		/*
		 * With no newer head, the anchor replayed is the newest
		 * whose chain is left: the damaged one named it again, or a
		 * chain whose head is gone too.
		 */
		if (ret) {
			found = true;
			info->anchor_scanned = true;
		}
	}
	free(buf);
	if (!found) {
		zutil_err(err, errlen,
			  "%s: the superblock is there but no valid anchor names the metadata, and no chain of it was found (damaged super zones)",
			  zdev_path(j->dev));
		return -EUCLEAN;
	}
	return 0;
}

/*
 * Sequential reader over the used part of one chain zone: of the primary
 * chain, or of its mirror. Both readers of a replay stand at the same
 * offset of their zones (the copies are written in lockstep).
 */
struct jrnl_reader {
	struct jrnl *j;
	uint32_t zone;
	bool ok;	   /* the zone's header held: its records may be read
			      (else end is the zone's start: nothing is) */
	uint64_t pos, end; /* absolute */
	char *buf;	   /* aligned, JRNL_READ_CHUNK * 2 */
	uint64_t boff;	   /* device offset of buf[0] */
	size_t blen;
};

/* The reader's position as an offset into its zone. */
static uint64_t jrnl_rel(const struct jrnl_reader *r)
{
	return r->pos - r->j->m->zones[r->zone].start;
}

/* Put @r at offset @rel of its zone. */
static void jrnl_seek(struct jrnl_reader *r, uint64_t rel)
{
	r->pos = r->j->m->zones[r->zone].start + rel;
}

/* Make [off, off + n) available; -ENODATA past the end of the data. */
static int jrnl_rd(struct jrnl_reader *r, uint64_t off, size_t n,
		   const char **p)
{
	uint64_t start;
	size_t len;
	int ret;

	if (off + n > r->end)
		return -ENODATA;
	if (off >= r->boff && off + n <= r->boff + r->blen) {
		*p = r->buf + (off - r->boff);
		return 0;
	}
	start = ZF_ROUND_DOWN(off, r->j->bs);
	len = (size_t)ZF_MIN((uint64_t)JRNL_READ_CHUNK * 2,
			     ZF_ROUND_UP(r->end, r->j->bs) - start);
	ret = zdev_read(r->j->dev, r->buf, len, start);
	if (ret == -EIO) {
		/*
		 * A media error somewhere in the chunk: read just the blocks
		 * asked for, so that the records before a bad block still
		 * replay and the log ends where the damage is.
		 */
		len = (size_t)(ZF_ROUND_UP(off + n, r->j->bs) - start);
		ret = zdev_read(r->j->dev, r->buf, len, start);
	}
	if (ret) {
		r->blen = 0;
		return ret;
	}
	r->boff = start;
	r->blen = len;
	*p = r->buf + (off - start);
	return 0;
}

/*
 * What a chain zone's header must say: struct zf_mzone's fields, for copy
 * @copy of a chain that has (@mirror) or has not a mirror.
 */
struct jrnl_zone_want {
	uint32_t index, prev, gen, copy, peer;
	uint64_t first_seq;
	bool mirror;
};

/*
 * Open chain zone @zone for reading with @r; checks its header.
 *
 * The zone may be a data zone left without live data by the records
 * replayed so far. When the journal needs a zone and none is free, the
 * allocator resets a dead one on the spot (alloc_reset_now()), and the
 * journal, being the committer, cannot log that ZONE_RESET. That is sound:
 * the reset waited for the record that freed the zone to be durable, so
 * that record comes before this NEXT in the log, and nothing can map the
 * zone after it. Once the header proves the zone is this chain's, the
 * reset is taken as done, its count one more (the next snapshot writes
 * the device's count). A zone with live data is never a chain zone.
 *
 * Returns 0 (r->ok), -ENODATA (nothing written in it: the writer had not
 * started it), -ENOENT (a header that does not hold), -EIO (unreadable),
 * -EUCLEAN (a zone the chain cannot have) or another errno; @why says
 * which. On all but -EUCLEAN the reader is in the zone, after where its
 * header is, with nothing to read unless r->ok.
 */
static int jrnl_rd_zone(struct jrnl_reader *r, uint32_t zone,
			const struct jrnl_zone_want *w, char *why, size_t wl)
{
	struct jrnl *j = r->j;
	struct zm_zone *z;
	struct zf_mzone h, c;
	const char *p;
	int ret;

	if (zone >= j->m->nr_zones) {
		snprintf(why, wl, "chain names zone %u, past the device", zone);
		return -EUCLEAN;
	}
	z = &j->m->zones[zone];
	if ((z->state != ZM_ZONE_FREE && z->state != ZM_ZONE_DATA) ||
	    z->valid) {
		snprintf(why, wl, "chain zone %u is also a %s zone", zone,
			 z->state == ZM_ZONE_SUPER ? "super" :
			 z->state == ZM_ZONE_BAD   ? "bad" :
			 z->state == ZM_ZONE_META  ? "chain" :
						     "data");
		return -EUCLEAN;
	}
	r->zone = zone;
	r->ok = false;
	r->end = z->type == ZDEV_ZONE_CONV ? z->start + z->cap : z->wp;
	r->blen = 0;
	r->boff = 0;
	r->pos = z->start + j->bs;
	ret = jrnl_rd(r, z->start, sizeof(h), &p);
	if (ret == -ENODATA) {
		snprintf(why, wl, "chain zone %u is empty", zone);
	} else if (ret) {
		snprintf(why, wl, "reading the header of chain zone %u failed: %s",
			 zone, strerror(-ret));
	} else {
		memcpy(&h, p, sizeof(h));
		c = h;
		c.crc = 0;
		if (le32toh(h.magic) != ZF_MZONE_MAGIC ||
		    le32toh(h.crc) != crc32c(0, &c, sizeof(c)) ||
		    memcmp(h.uuid, j->sb.uuid, sizeof(h.uuid)) ||
		    le32toh(h.chain_gen) != w->gen ||
		    le32toh(h.index) != w->index ||
		    le32toh(h.prev_zone) != w->prev ||
		    le64toh(h.first_seq) != w->first_seq ||
		    (w->mirror && (le32toh(h.copy) != w->copy ||
				   le32toh(h.peer_zone) != w->peer))) {
			snprintf(why, wl,
				 "chain zone %u has no valid header for index %u",
				 zone, w->index);
			ret = -ENOENT;
		}
	}
	if (ret) {
		r->end = z->start;
		return ret;
	}
	if (z->state == ZM_ZONE_DATA) {
		/* The reset no record tells of (see the comment above). */
		z->state = ZM_ZONE_FREE;
		z->resets++;
	}
	r->ok = true;
	return 0;
}

/*
 * Replay stopped at a record that does not hold. A torn tail (the commit
 * being written when the power went) has nothing valid after it; damage
 * in the middle of the log (a bad block) has: records of this chain with
 * later sequence numbers. Look for them in the rest of the zone, so that
 * the difference is reported (fsck counts it as an error) rather than
 * silently dropping acknowledged commits.
 */
static void jrnl_scan_beyond(struct jrnl_reader *r, uint32_t gen,
			     uint64_t expect, struct jrnl_replay_info *info)
{
	uint64_t pos;

	for (pos = ZF_ROUND_UP(r->pos + 1, ZF_REC_ALIGN);
	     pos + sizeof(struct zf_rec_hdr) <= r->end; pos += ZF_REC_ALIGN) {
		struct zf_rec_hdr h, hc;
		const char *p;
		uint32_t len, crc;

		if (jrnl_rd(r, pos, sizeof(h), &p))
			return;
		memcpy(&h, p, sizeof(h));
		len = le32toh(h.len);
		if (le32toh(h.chain_gen) != gen || len > ZF_REC_MAX ||
		    le64toh(h.seq) < expect || !le16toh(h.type) ||
		    jrnl_rd(r, pos, sizeof(h) + len, &p))
			continue;
		hc = h;
		hc.crc = 0;
		crc = crc32c(0, &hc, sizeof(hc));
		crc = crc32c(crc, p + sizeof(h), len);
		if (crc != le32toh(h.crc))
			continue;
		info->damaged = true;
		info->damaged_seq = ZF_MAX(info->damaged_seq, le64toh(h.seq));
		pos += sizeof(h) + ZF_ROUND_UP(len, ZF_REC_ALIGN) - ZF_REC_ALIGN;
	}
}

/*
 * Where replay is in the chain; jrnl_replay() and its helpers share it.
 * why: why replay stopped (it becomes info->stop) or what did not
 * apply.
 */
struct jrnl_replayer {
	struct jrnl *j;
	struct jrnl_reader r;  /* the primary chain */
	struct jrnl_reader mr; /* its mirror (j->mirror) */
	struct jrnl_replay_info *info;
	bool salvage;	   /* JRNL_SALVAGE */
	uint32_t gen;	   /* the chain's generation, from the anchor */
	uint64_t expect;   /* the seq the next record must have */
	uint64_t good_end; /* just after the last record accepted */
	bool in_snap;	   /* still in the snapshot that heads the chain */
	bool last_unmount; /* the last record accepted was UNMOUNT */
	bool bad;	   /* the log ended at a record that is there whole
			      (below the end of the zone's data) but does
			      not hold: not a torn tail */
	bool one_copy;	   /* something replayed was read from one copy
			      only: the chain must be written anew before
			      it is appended to */
	uint64_t mpend;	   /* with mirror: offset + 1 of a record whose
			      mirror copy differs, in a zone whose write
			      pointer does not tell damage from a torn
			      tail (0: none); a later record that matches
			      in the same zone proves it damage */
	uint64_t last_bad; /* 1 + the device block last found bad (in
			      either copy): a block holds several records */
	/*
	 * A commit written without a flush before it (ZF_REC_F_UNFLUSHED),
	 * kept aside until the next commit starts (which proves it durable)
	 * or the log ends (jrnl_held_end()): each record as a struct
	 * jrnl_held_rec, then the record as read.
	 */
	bool held;
	char *hbuf;
	size_t hlen, hcap;
	uint64_t hfirst;   /* seq of its first record */
	uint32_t at_zone;  /* zone of the record being applied */
	char why[sizeof(((struct jrnl_replay_info *)0)->stop)];
};

/* What a held record was read from. */
struct jrnl_held_rec {
	uint32_t zone;
	uint32_t pad;
};

/* A block of copy @copy did not hold where the other's did. */
static void jrnl_copy_bad(struct jrnl_replayer *s, unsigned int copy,
			  uint32_t zone, uint64_t off, const char *what)
{
	struct jrnl_replay_info *info = s->info;
	uint64_t block = off / s->j->bs + 1;

	info->copy_damaged = true;
	if (block == s->last_bad)
		return;
	s->last_bad = block;
	if (!info->copy_bad_count++)
		snprintf(info->copy_bad, sizeof(info->copy_bad),
			 "the %s copy of the metadata chain at 0x%" PRIx64 " in zone %u (%.120s)",
			 copy ? "mirror" : "primary", off, zone, what);
}

/*
 * Read the record at @r's position, past any padding, and check it: the
 * next seq of this chain's generation, whole, its CRC right. Any of these
 * failing is how a torn tail looks, so it ends the log rather than the
 * replay. Returns 1 with *@h and *@payload (valid until @r reads again)
 * and @r past the record, 0 when the log ends here in this copy (@why
 * says why; *@bad when the record is there whole but does not hold), or
 * an I/O errno.
 */
static int jrnl_rd_rec(struct jrnl_replayer *s, struct jrnl_reader *r,
		       struct zf_rec_hdr *h, const char **payload, bool *bad,
		       char *why, size_t wl)
{
	struct zf_rec_hdr hc;
	const char *p;
	uint32_t len, crc;
	uint16_t type;
	int ret;

	*bad = false;
	for (;;) {
		ret = jrnl_rd(r, r->pos, 8, &p);
		if (ret == -ENODATA) {
			snprintf(why, wl, "end of data in zone %u", r->zone);
			return 0;
		}
		if (ret)
			return ret;
		if (!jrnl_zero(p, 8))
			break;
		/*
		 * Padding to the end of the I/O unit. Every write of the
		 * journal starts a unit with a record, so in a sequential
		 * zone (nothing but this chain's writes below its write
		 * pointer) zeros at the start of a unit are a zeroed block,
		 * not padding (jrnl_replay_stop()).
		 */
		if (r->pos % s->j->bs == 0 &&
		    jrnl_wp_is_end(&s->j->m->zones[r->zone])) {
			snprintf(why, wl,
				 "a block of zeros at 0x%" PRIx64 " in zone %u, below its write pointer",
				 r->pos, r->zone);
			*bad = true;
			return 0;
		}
		r->pos = ZF_ROUND_UP(r->pos + 1, s->j->bs);
	}
	ret = jrnl_rd(r, r->pos, sizeof(*h), &p);
	if (ret == -ENODATA) {
		snprintf(why, wl, "torn record header at 0x%" PRIx64, r->pos);
		return 0;
	}
	if (ret)
		return ret;
	memcpy(h, p, sizeof(*h));
	len = le32toh(h->len);
	type = le16toh(h->type);
	if (len > ZF_REC_MAX || le32toh(h->chain_gen) != s->gen ||
	    (type == ZF_REC_NEXT ? le64toh(h->seq) != s->expect - 1 :
				   le64toh(h->seq) != s->expect)) {
		snprintf(why, wl,
			 "record at 0x%" PRIx64 " is not the next one (seq %" PRIu64 ", expected %" PRIu64 ")",
			 r->pos, le64toh(h->seq), s->expect);
		*bad = true;
		return 0;
	}
	ret = jrnl_rd(r, r->pos, sizeof(*h) + len, &p);
	if (ret == -ENODATA) {
		snprintf(why, wl, "torn record at 0x%" PRIx64, r->pos);
		return 0;
	}
	if (ret)
		return ret;
	hc = *h;
	hc.crc = 0;
	crc = crc32c(0, &hc, sizeof(hc));
	crc = crc32c(crc, p + sizeof(*h), len);
	if (crc != le32toh(h->crc)) {
		snprintf(why, wl,
			 "record seq %" PRIu64 " at 0x%" PRIx64 " fails its CRC",
			 s->expect, r->pos);
		*bad = true;
		return 0;
	}
	*payload = p + sizeof(*h);
	r->pos += sizeof(*h) + ZF_ROUND_UP(len, ZF_REC_ALIGN);
	return 1;
}

/*
 * Is what one copy's reader met damage (a block below the zone's written
 * end that is unreadable or does not hold), rather than the end of what
 * was written?
 */
static bool jrnl_copy_damage(const struct jrnl_replayer *s,
			     const struct jrnl_reader *r, int ret, bool bad)
{
	return ret == -EIO ||
	       (bad && jrnl_wp_is_end(&s->j->m->zones[r->zone]));
}

/*
 * The primary's record @rec (@n bytes from offset @rel of its zone) held:
 * does the mirror hold the same bytes? Where it holds none (its write
 * pointer is below), the writer had not written them when the power went:
 * no damage. Where it differs in a zone whose write pointer says where
 * its writes end, it is damage; elsewhere (a full or conventional zone)
 * only a later record that matches proves it (s->mpend). Either way the
 * record was read from one copy.
 */
static void jrnl_mirror_check(struct jrnl_replayer *s, uint64_t rel,
			      const char *rec, size_t n)
{
	struct jrnl_reader *m = &s->mr;
	const struct zm_zone *mz = &s->j->m->zones[m->zone];
	const char *p;
	int ret;

	if (!m->ok) {
		s->one_copy = true;
		return;
	}
	ret = jrnl_rd(m, mz->start + rel, n, &p);
	if (!ret && !memcmp(p, rec, n)) {
		if (s->mpend) {
			jrnl_copy_bad(s, 1, m->zone, mz->start + s->mpend - 1,
				      "it differs, and records after it match");
			s->mpend = 0;
		}
		return;
	}
	s->one_copy = true;
	if (ret == -ENODATA || (ret && ret != -EIO))
		return;
	if (jrnl_wp_is_end(mz) || ret == -EIO)
		jrnl_copy_bad(s, 1, m->zone, mz->start + rel,
			      ret ? "it cannot be read" :
				    "it differs from the primary's");
	else if (!s->mpend)
		s->mpend = rel + 1;
}

/*
 * The next record of the log, from either copy: the primary's if it holds
 * (the mirror's bytes are checked against it), else the mirror's at the
 * same offset. Returns like jrnl_rd_rec(); 0 only when neither copy has
 * it. Damage in both copies at the same record is damage of the log
 * (info->damaged); one copy ending where the other is damaged is the end
 * of what was written, as a crash between the two copies leaves it.
 */
static int jrnl_next_rec(struct jrnl_replayer *s, struct zf_rec_hdr *h,
			 const char **payload)
{
	struct jrnl_reader *r = &s->r, *m = &s->mr;
	char mwhy[sizeof(s->why)];
	uint64_t rel = jrnl_rel(r);
	bool pbad, mbad, pdam, mdam;
	int ret, mret;

	ret = r->ok ? jrnl_rd_rec(s, r, h, payload, &pbad, s->why,
				  sizeof(s->why)) :
		      (pbad = false, 0);
	if (!s->j->mirror) {
		s->bad = pbad;
		return ret;
	}
	if (ret == 1) {
		size_t n = sizeof(*h) + ZF_ROUND_UP(le32toh(h->len), ZF_REC_ALIGN);
		char *rec = (char *)*payload - sizeof(*h);

		jrnl_mirror_check(s, jrnl_rel(r) - n, rec, n);
		jrnl_seek(m, jrnl_rel(r));
		return 1;
	}
	if (ret < 0 && ret != -EIO)
		return ret;
	if (!r->ok)
		snprintf(s->why, sizeof(s->why), "no primary copy in zone %u",
			 r->zone);
	jrnl_seek(m, rel);
	mret = m->ok ? jrnl_rd_rec(s, m, h, payload, &mbad, mwhy,
				   sizeof(mwhy)) :
		       (mbad = false, 0);
	if (mret < 0 && mret != -EIO)
		return mret;
	pdam = r->ok && jrnl_copy_damage(s, r, ret, pbad);
	mdam = m->ok && jrnl_copy_damage(s, m, mret, mbad);
	if (mret == 1) {
		if (pdam)
			jrnl_copy_bad(s, 0, r->zone, r->pos,
				      ret ? "it cannot be read" : s->why);
		s->one_copy = true;
		jrnl_seek(r, jrnl_rel(m));
		return 1;
	}
	s->bad = false;
	if (pdam && mdam) {
		s->bad = true;
		s->info->damaged = true;
		if (ret == -EIO && mret == -EIO)
			return -EIO;
		if (ret == -EIO)
			memcpy(s->why, mwhy, sizeof(s->why));
		return 0;
	}
	/* The end in one copy at least: what the other holds is torn. */
	if (pdam || (!r->ok && m->ok))
		memcpy(s->why, mwhy, sizeof(s->why));
	if (pdam || mdam)
		s->one_copy = true;
	return 0;
}

/*
 * Open the chain's zone @zone and its mirror @mzone (ZF_NO_ZONE without
 * mirror), index @index after @prev, for reading. Without mirror, as
 * jrnl_rd_zone(), but an empty zone or a header that does not hold is
 * -ENOENT. With it, one copy that holds is enough; the other's damage
 * is noted (a copy the writer had not started is not damage). Neither:
 * -ENOENT, and info->damaged if both are damaged.
 */
static int jrnl_rd_zones(struct jrnl_replayer *s, uint32_t zone,
			 uint32_t mzone, uint32_t index, uint32_t prev)
{
	struct jrnl_zone_want w = {
		.index = index,
		.prev = prev,
		.gen = s->gen,
		.copy = 0,
		.peer = mzone,
		.first_seq = s->expect,
		.mirror = s->j->mirror,
	};
	char mwhy[sizeof(s->why)];
	int ret, mret;

	ret = jrnl_rd_zone(&s->r, zone, &w, s->why, sizeof(s->why));
	if (!s->j->mirror)
		return ret == -ENODATA ? -ENOENT : ret;
	if (ret == -EUCLEAN || (ret && ret != -ENODATA && ret != -ENOENT &&
				ret != -EIO))
		return ret;
	if (mzone == zone) {
		snprintf(s->why, sizeof(s->why),
			 "chain zone %u is its own mirror", zone);
		return -EUCLEAN;
	}
	w.copy = 1;
	w.peer = zone;
	mret = jrnl_rd_zone(&s->mr, mzone, &w, mwhy, sizeof(mwhy));
	if (mret == -EUCLEAN || (mret && mret != -ENODATA &&
				 mret != -ENOENT && mret != -EIO)) {
		memcpy(s->why, mwhy, sizeof(s->why));
		return mret;
	}
	if (!ret && !mret)
		return 0;
	s->one_copy = true;
	if (!ret || !mret) {
		if (ret && ret != -ENODATA)
			jrnl_copy_bad(s, 0, zone, s->j->m->zones[zone].start,
				      s->why);
		if (mret && mret != -ENODATA)
			jrnl_copy_bad(s, 1, mzone, s->j->m->zones[mzone].start,
				      mwhy);
		return 0;
	}
	if (ret != -ENODATA && mret != -ENODATA) {
		s->info->damaged = true;
		snprintf(s->why + strlen(s->why), sizeof(s->why) - strlen(s->why),
			 ", nor its mirror %u", mzone);
	}
	return -ENOENT;
}

/* Zone @zone holds live data (it may be past the device). */
static bool jrnl_zone_live(const struct zmeta *m, uint32_t zone)
{
	return zone < m->nr_zones && m->zones[zone].state == ZM_ZONE_DATA &&
	       m->zones[zone].valid;
}

static int jrnl_held_apply(struct jrnl_replayer *s);

/*
 * Follow a NEXT record (@p, @len) into the zones it names. The writer
 * links a zone before it starts it (jrnl_write_records()), so a crash in
 * between leaves a NEXT whose zone has no header of ours: the log ends at
 * that NEXT, in the zone that holds it. Returns 1 with the readers at the
 * start of the new zones (the caller adds them to the chain), 0 when the
 * log ends here (s->why says why), or -EUCLEAN (the chain names a zone it
 * cannot have) or an I/O errno.
 */
static int jrnl_rd_next(struct jrnl_replayer *s, const char *p, uint32_t len)
{
	struct jrnl_reader *r = &s->r, *m = &s->mr;
	struct jrnl_reader rsave = *r, msave = *m;
	struct zf_rec_next nx;
	int ret;

	if (len != sizeof(nx)) {
		snprintf(s->why, sizeof(s->why), "bad NEXT record");
		s->bad = true;
		return 0;
	}
	memcpy(&nx, p, sizeof(nx));
	/*
	 * A zone with live data is never a chain zone: the allocator resets
	 * a dead one for the chain only once the record that freed it is
	 * durable. That record may be in the commit held aside
	 * (ZF_REC_F_UNFLUSHED), when this NEXT opens the next commit before
	 * its first record: the NEXT proves that commit durable, so it is
	 * applied first.
	 */
	if (s->held && (jrnl_zone_live(s->j->m, le32toh(nx.zone)) ||
			(s->j->mirror &&
			 jrnl_zone_live(s->j->m, le32toh(nx.mirror_zone))))) {
		ret = jrnl_held_apply(s);
		if (ret <= 0)
			return ret;
	}
	ret = jrnl_rd_zones(s, le32toh(nx.zone),
			    s->j->mirror ? le32toh(nx.mirror_zone) : ZF_NO_ZONE,
			    s->j->chain_len, rsave.zone);
	if (ret == -ENOENT) {
		/* Crashed before the new zone was started. */
		*r = rsave;
		*m = msave;
		r->blen = m->blen = 0;
		r->end = r->pos = 0;
		return 0;
	}
	if (ret)
		return ret;
	s->mpend = 0;
	return 1;
}

/*
 * Apply one record that holds, other than NEXT: the snapshot's records
 * load the metadata, an UNMOUNT only marks where a clean unmount was, and
 * the log's records go through zm_apply(), the live file system's own
 * path. A record that holds but does not apply is a bug or damage the
 * CRC missed: it fails the open, unless JRNL_SALVAGE (fsck --repair)
 * drops it and all after it. Returns 1 when applied, 0 when salvage ends
 * the log here, or -EUCLEAN (s->why says why) or -ENOMEM.
 */
static int jrnl_apply_rec(struct jrnl_replayer *s, uint16_t type, const char *p,
			  uint32_t len)
{
	struct jrnl_replay_info *info = s->info;
	uint64_t size =
		sizeof(struct zf_rec_hdr) + ZF_ROUND_UP(len, ZF_REC_ALIGN);
	int ret;

	if (s->in_snap) {
		ret = zm_snap_load(s->j->m, type, p, len, s->why,
				   sizeof(s->why));
		if (ret)
			return ret;
		info->snap_bytes += size;
		if (type == ZF_REC_SNAP_END)
			s->in_snap = false;
		return 1;
	}
	if (type == ZF_REC_UNMOUNT) {
		s->last_unmount = true;
		return 1;
	}
	ret = zm_apply(s->j->m, type, p, len, s->expect, s->why,
		       sizeof(s->why));
	if (ret == -EUCLEAN && s->salvage) {
		char w2[sizeof(s->why)];

		snprintf(w2, sizeof(w2),
			 "record seq %" PRIu64 " does not apply (%.120s): dropped with all after it",
			 s->expect, s->why);
		memcpy(s->why, w2, sizeof(s->why));
		info->salvaged = true;
		s->last_unmount = false;
		return 0;
	}
	if (ret)
		return ret;
	info->log_records++;
	info->log_bytes += size;
	return 1;
}

/* Keep record @h (@p its payload, read from zone @zone) aside. */
static int jrnl_held_add(struct jrnl_replayer *s, const struct zf_rec_hdr *h,
			 const char *p, uint32_t zone)
{
	uint32_t len = le32toh(h->len);
	size_t need = sizeof(struct jrnl_held_rec) + sizeof(*h) +
		      ZF_ROUND_UP(len, ZF_REC_ALIGN);
	struct jrnl_held_rec hr = { .zone = zone };

	if (s->hlen + need > s->hcap) {
		size_t cap = ZF_MAX(s->hcap * 2, s->hlen + need);
		char *nb = realloc(s->hbuf, cap);

		if (!nb)
			return -ENOMEM;
		s->hbuf = nb;
		s->hcap = cap;
	}
	memcpy(s->hbuf + s->hlen, &hr, sizeof(hr));
	memcpy(s->hbuf + s->hlen + sizeof(hr), h, sizeof(*h));
	memcpy(s->hbuf + s->hlen + sizeof(hr) + sizeof(*h), p, len);
	s->hlen += need;
	return 1;
}

/*
 * Apply the held commit, in order: the next commit started (so this one's
 * flush had returned), or its data proved on the device. Each record is
 * applied under its own seq. Returns as jrnl_apply_rec(); on 0 or an
 * error, s->expect is the seq of the record that stopped it.
 */
static int jrnl_held_apply(struct jrnl_replayer *s)
{
	uint64_t expect = s->expect;
	size_t off = 0;
	int ret;

	if (!s->held)
		return 1;
	s->held = false;
	while (off < s->hlen) {
		struct jrnl_held_rec hr;
		struct zf_rec_hdr h;
		uint32_t len;

		memcpy(&hr, s->hbuf + off, sizeof(hr));
		memcpy(&h, s->hbuf + off + sizeof(hr), sizeof(h));
		len = le32toh(h.len);
		s->expect = le64toh(h.seq);
		s->at_zone = hr.zone;
		ret = jrnl_apply_rec(s, le16toh(h.type),
				     s->hbuf + off + sizeof(hr) + sizeof(h), len);
		if (ret <= 0)
			return ret;
		off += sizeof(hr) + sizeof(h) + ZF_ROUND_UP(len, ZF_REC_ALIGN);
	}
	s->hlen = 0;
	s->expect = expect;
	return 1;
}

/*
 * A record that holds, other than NEXT: applied, or kept aside while it
 * belongs to a commit written without a flush before it. The first
 * record of a commit (ZF_REC_F_COMMIT) proves that the commit before it
 * was durable: the journal writes a commit only after the flush of the
 * one before returned. Returns as jrnl_apply_rec().
 */
static int jrnl_take_rec(struct jrnl_replayer *s, const struct zf_rec_hdr *h,
			 const char *p)
{
	uint16_t flags = le16toh(h->flags);
	int ret;

	if ((flags & ~ZF_REC_FLAGS) || (flags && s->in_snap) ||
	    ((flags & ZF_REC_F_UNFLUSHED) && !(flags & ZF_REC_F_COMMIT))) {
		snprintf(s->why, sizeof(s->why),
			 "flags 0x%x that this zonefuse does not know%s%s",
			 flags, s->in_snap ? " in the snapshot" : "",
			 s->salvage ? ": record dropped with all after it" : "");
		if (!s->salvage)
			return -EUCLEAN;
		s->info->salvaged = true;
		s->last_unmount = false;
		return 0;
	}
	if (flags & ZF_REC_F_COMMIT) {
		ret = jrnl_held_apply(s);
		if (ret <= 0)
			return ret;
		if (flags & ZF_REC_F_UNFLUSHED) {
			s->held = true;
			s->hfirst = le64toh(h->seq);
		}
	}
	if (s->held)
		return jrnl_held_add(s, h, p, s->r.zone);
	return jrnl_apply_rec(s, le16toh(h->type), p, le32toh(h->len));
}

/*
 * The log ended in a held commit. Its flush may not have returned: if
 * any data its records name ends above its zone's write pointer (which
 * keeps a zone's writes in order, and which the device reports as it is
 * after the power cut), that flush never returned, no one was told the
 * commit was durable, and it is dropped as a torn commit is, which
 * s->why and info->unflushed_dropped say. Otherwise it is applied.
 * Returns as jrnl_held_apply().
 */
static int jrnl_held_end(struct jrnl_replayer *s)
{
	const struct zmeta *m = s->j->m;
	size_t off = 0;

	if (!s->held)
		return 1;
	while (off < s->hlen) {
		const char *rec = s->hbuf + off + sizeof(struct jrnl_held_rec);
		const struct zm_zone *z;
		struct zf_rec_hdr h;
		uint64_t end;
		uint32_t zone, len;
		char w2[sizeof(s->why)];

		memcpy(&h, rec, sizeof(h));
		len = le32toh(h.len);
		off += sizeof(struct jrnl_held_rec) + sizeof(h) +
		       ZF_ROUND_UP(len, ZF_REC_ALIGN);
		if (jrnl_rec_names(m, le16toh(h.type), rec + sizeof(h), len,
				   &zone, &end) <= 0)
			continue;
		z = &m->zones[zone];
		if (z->state == ZM_ZONE_BAD || end <= z->wp)
			continue;
		s->info->unflushed_dropped = s->expect - s->hfirst;
		snprintf(w2, sizeof(w2),
			 "the last commit (records %" PRIu64 "-%" PRIu64 ") was not replayed: record %" PRIu64 " names data up to 0x%" PRIx64 " in zone %u, above its write pointer 0x%" PRIx64 "; the power went before that commit's flush returned. The log ended: %.100s",
			 s->hfirst, s->expect - 1, le64toh(h.seq), end, zone,
			 z->wp, s->why);
		memcpy(s->why, w2, sizeof(s->why));
		s->held = false;
		s->hlen = 0;
		s->expect = s->hfirst;
		s->last_unmount = false;
		return 1;
	}
	return jrnl_held_apply(s);
}

/*
 * The room the log takes in the chain's zones (what the committer counts
 * to decide when to roll, jrnl_commit_once()): the chain's zones up to
 * @end in the last one, less the snapshot at its head.
 */
static uint64_t jrnl_replay_log_room(struct jrnl *j, uint64_t end)
{
	const struct zm_zone *last = &j->m->zones[j->chain[j->chain_len - 1]];
	uint64_t used = ZF_ROUND_UP(end - last->start, (uint64_t)j->bs);
	uint32_t i;

	for (i = 0; i + 1 < j->chain_len; i++)
		used += j->m->zones[j->chain[i]].cap;
	return used > j->snap_bytes ? used - j->snap_bytes : 0;
}

/*
 * The log ended. Say why, and tell a torn tail from damage: when the
 * reader stopped short of the zone's data, look past the bad record for
 * later ones of this chain (jrnl_scan_beyond()). Where the write pointer
 * says where the writes end (jrnl_wp_is_end()) that is not even needed: a
 * torn commit ends above the write pointer (the reader meets the end of
 * the data inside a record), so a record there whole that does not hold
 * is damage, even the last one, which holds the newest changes. A full or
 * conventional zone may hold other bytes after the tail (zeros after a
 * finish, an older chain's records), so only later records prove damage
 * there. With a mirror, jrnl_next_rec() has decided already whether both
 * copies are damaged; the primary is still searched for later records.
 */
static void jrnl_replay_stop(struct jrnl_replayer *s)
{
	struct jrnl_replay_info *info = s->info;
	const struct zm_zone *z = &s->j->m->zones[s->r.zone];

	snprintf(info->stop, sizeof(info->stop), "%s", s->why);
	info->last_seq = s->expect - 1;
	if (s->r.pos && s->r.pos < s->r.end) {
		jrnl_scan_beyond(&s->r, s->gen, s->expect, info);
		if (s->bad && jrnl_wp_is_end(z))
			info->damaged = true;
	}
}

/*
 * Does the unit after @tail in zone @z end its writes, with room for more
 * (a NEXT's unit at least)?
 */
static bool jrnl_tail_ok(const struct jrnl *j, const struct zm_zone *z,
			 uint64_t tail, uint64_t cap)
{
	return tail + j->bs <= z->start + cap &&
	       (z->type == ZDEV_ZONE_CONV || tail == z->wp);
}

/*
 * Clean: the last record was UNMOUNT and nothing follows it but
 * padding, so appending right after it keeps the log readable. On a
 * conventional zone the zeros after it read as padding up to the
 * zone's end: the tail is where the last record ended, not where
 * the reading stopped. With a mirror, both copies must end there, and
 * every record must have come from both. Otherwise the journal appends
 * nowhere in this chain (j->wpos 0): jrnl_start() writes a new one first.
 */
static void jrnl_replay_clean(struct jrnl_replayer *s)
{
	struct jrnl *j = s->j;
	struct jrnl_replay_info *info = s->info;
	struct zm_zone *z = &j->m->zones[s->r.zone];
	struct zm_zone *mz = j->mirror ? &j->m->zones[s->mr.zone] : NULL;
	uint64_t tail = ZF_ROUND_UP(s->good_end, j->bs);
	uint64_t cap = mz ? ZF_MIN(z->cap, mz->cap) : z->cap;

	info->clean = s->last_unmount && s->r.pos && jrnl_tail_ok(j, z, tail, cap);
	if (info->clean && mz)
		info->clean = !s->one_copy && !s->mpend && s->r.ok && s->mr.ok &&
			      jrnl_tail_ok(j, mz, mz->start + (tail - z->start), cap);
	j->wpos = info->clean ? tail : 0;
	if (!info->clean)
		return;
	z->wp = tail;
	if (mz)
		mz->wp = mz->start + (tail - z->start);
}

/*
 * Replay the chain named by @a into j->m. Stops at the first record that
 * does not hold (in both copies, with a mirror); fails only when the
 * snapshot is incomplete or a record that holds does not apply.
 */
static int jrnl_replay(struct jrnl *j, const struct zf_anchor *a, bool salvage,
		       struct jrnl_replay_info *info, char *err, size_t errlen)
{
	struct jrnl_replayer s = {
		.j = j,
		.r = { .j = j },
		.mr = { .j = j },
		.info = info,
		.salvage = salvage,
		.gen = le32toh(a->chain_gen),
		.expect = le64toh(a->snap_seq),
		.in_snap = true,
	};
	struct jrnl_reader *r = &s.r;
	struct zf_rec_hdr h;
	const char *p;
	int ret;

	r->buf = zdev_buf_alloc(j->dev, (size_t)JRNL_READ_CHUNK * 2);
	if (j->mirror)
		s.mr.buf = zdev_buf_alloc(j->dev, (size_t)JRNL_READ_CHUNK * 2);
	if (!r->buf || (j->mirror && !s.mr.buf)) {
		ret = -ENOMEM;
		goto out_free;
	}
	ret = jrnl_rd_zones(&s, le32toh(a->chain_zone),
			    j->mirror ? le32toh(a->mirror_zone) : ZF_NO_ZONE,
			    0, ZF_NO_ZONE);
	if (ret)
		goto out_snap;
	s.good_end = r->pos;
	ret = jrnl_chain_push(j, r->zone, j->mirror ? s.mr.zone : ZF_NO_ZONE);
	if (ret)
		goto out_free;

	for (;;) {
		ret = jrnl_next_rec(&s, &h, &p);
		if (ret == -EIO && !s.in_snap) {
			/*
			 * An unreadable block in the log: what it held, and
			 * anything after it, cannot be known. Damage, as a
			 * bad record with records behind it is.
			 */
			snprintf(s.why, sizeof(s.why),
				 "reading the log in zone %u at 0x%" PRIx64 " failed (a media error)",
				 r->zone, r->pos);
			info->damaged = true;
			break;
		}
		if (ret < 0)
			goto out_io;
		if (!ret)
			break;
		s.good_end = r->pos;
		s.last_unmount = false;
		s.at_zone = r->zone;

		if (le16toh(h.type) == ZF_REC_NEXT) {
			ret = jrnl_rd_next(&s, p, le32toh(h.len));
			if (ret < 0)
				goto out_bad;
			if (!ret)
				break;
			ret = jrnl_chain_push(j, r->zone,
					      j->mirror ? s.mr.zone : ZF_NO_ZONE);
			if (ret)
				goto out_free;
			s.good_end = r->pos;
			continue;
		}
		ret = jrnl_take_rec(&s, &h, p);
		if (ret < 0)
			goto out_bad;
		if (!ret)
			break;
		s.expect++;
	}
	if (s.in_snap) {
		ret = -EUCLEAN;
		goto out_snap;
	}
	jrnl_replay_stop(&s);
	ret = jrnl_held_end(&s);
	if (ret < 0)
		goto out_bad;
	if (s.info->unflushed_dropped || !ret) {
		snprintf(info->stop, sizeof(info->stop), "%s", s.why);
		info->last_seq = s.expect - 1;
	}
	jrnl_replay_clean(&s);
	j->next_seq = s.expect;
	j->durable_seq = s.expect - 1;
	j->snap_seq = le64toh(a->snap_seq);
	j->snap_bytes = info->snap_bytes;
	j->log_bytes = jrnl_replay_log_room(j, s.good_end);
	j->log_rec_bytes = info->log_bytes;
	j->need_roll = !info->clean || j->sz_switches || info->copy_damaged;
	jrnl_set_grow(j);
	ret = 0;
	goto out_free;

out_snap:
	zutil_err(err, errlen,
		  "%s: the metadata snapshot in zone %u is incomplete (%s); the file system cannot be mounted",
		  zdev_path(j->dev), le32toh(a->chain_zone), s.why);
	ret = ret == -ENOMEM ? ret : -EUCLEAN;
	goto out_free;
out_bad:
	zutil_err(err, errlen,
		  "%s: journal record seq %" PRIu64 " in zone %u does not apply: %s",
		  zdev_path(j->dev), s.expect, s.at_zone, s.why);
	if (ret != -ENOMEM)
		ret = -EUCLEAN;
	goto out_free;
out_io:
	zutil_err(err, errlen, "%s: reading the journal in zone %u failed: %s",
		  zdev_path(j->dev), r->zone, strerror(-ret));
	/*
	 * A media error in the snapshot is damage like a bad CRC there:
	 * fsck reports it as a problem left (exit 4), not as a check that
	 * could not run.
	 */
	if (ret == -EIO)
		ret = -EUCLEAN;
out_free:
	free(r->buf);
	free(s.mr.buf);
	free(s.hbuf);
	return ret;
}

int jrnl_open(struct zdev *dev, unsigned int flags, struct zmeta *m,
	      struct jrnl **jp, struct zf_super *sb,
	      struct jrnl_replay_info *info, char *err, size_t errlen)
{
	bool rdonly = flags & JRNL_RDONLY;
	struct zf_anchor a = { 0 }; /* gcc -O2 cannot see find_anchor set it */
	struct jrnl *j;
	int ret;

	memset(info, 0, sizeof(*info));
	ret = jrnl_zones_init(dev, m, err, errlen);
	if (ret)
		return ret;
	j = jrnl_alloc(dev, m, rdonly);
	if (!j) {
		zm_destroy(m);
		return -ENOMEM;
	}
	ret = jrnl_read_super(dev, &j->sb, err, errlen);
	if (ret)
		goto out_free;
	j->mirror = le64toh(j->sb.feat_incompat) & ZF_FEATURE_INCOMPAT_MIRROR;
	info->mirrored = j->mirror;
	ret = jrnl_find_anchor(j, &a, info, err, errlen);
	if (ret)
		goto out_free;
	j->gen = le32toh(a.chain_gen);
	j->anchor_seq = le64toh(a.seq);
	ret = jrnl_replay(j, &a, flags & JRNL_SALVAGE, info, err, errlen);
	if (ret)
		goto out_free;
	info->snap_seq = j->snap_seq;
	info->chain_zones = j->chain_len;
	info->chain_gen = j->gen;
	info->anchor_seq = j->anchor_seq;
	*sb = j->sb;
	*jp = j;
	return 0;

out_free:
	jrnl_free(j);
	zm_destroy(m);
	return ret;
}
