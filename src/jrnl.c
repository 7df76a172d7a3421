// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The metadata journal in zones (format.h has the bytes, docs/format.md the
 * rules): the writer and the committer. jrnl_mkfs.c makes a new journal,
 * jrnl_replay.c reads one back; jrnl_i.h has what the three share.
 *
 * Why a chain named by anchors rather than a fixed ring of metadata zones:
 * a fixed ring must hold two snapshots and the log between them, so a file
 * system whose metadata outgrows it either loops or fails (ZenFS#293). The
 * chain takes zones from the common pool as it needs them, is as long as
 * the metadata requires, and wears its zones like any data zone. The only
 * fixed zones are the two super zones, which take one small anchor per
 * snapshot.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jrnl_i.h"
#include "zonefuse/crc32c.h"
#include "zonefuse/util.h"

/*
 * Roll to a new snapshot once the log is twice the snapshot and at least
 * two zones' capacity, capped at this: small zones roll sooner, so the
 * chain does not eat the reserve of a small device.
 */
#define JRNL_ROLL_MAX (8ull << 20)
/* Tries again of a write the device refused for a zone limit. */
#define JRNL_RETRY_LIMIT 3
/* Copies of each chain write: the chain and its mirror. */
#define JRNL_COPIES 2
/* The stride at which a snapshot's buffer is faulted in: a page. */
#define JRNL_PAGE 4096

/* Encode one record at @dst (room checked by the caller); returns bytes. */
static size_t jrnl_encode(char *dst, uint16_t type, const void *payload,
			  uint32_t len, uint32_t gen, uint64_t seq)
{
	struct zf_rec_hdr h = {
		.type = htole16(type),
		.len = htole32(len),
		.chain_gen = htole32(gen),
		.seq = htole64(seq),
	};
	size_t total = sizeof(h) + ZF_ROUND_UP(len, ZF_REC_ALIGN);
	uint32_t crc;

	memcpy(dst, &h, sizeof(h));
	if (len)
		memcpy(dst + sizeof(h), payload, len);
	memset(dst + sizeof(h) + len, 0, total - sizeof(h) - len);
	crc = crc32c(0, dst, sizeof(h) + len);
	h.crc = htole32(crc);
	memcpy(dst, &h.crc, sizeof(h.crc));
	return total;
}

static int jrnl_grow(char **buf, size_t *cap, size_t need)
{
	size_t ncap = *cap ? *cap : 64 << 10;
	char *nb;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	nb = realloc(*buf, ncap);
	if (!nb)
		return -ENOMEM;
	*buf = nb;
	*cap = ncap;
	return 0;
}

/* ---- writing ----------------------------------------------------------------- */

/*
 * Without an owner (mkfs) the journal keeps the open limit itself: the
 * device refused a write to @zone for it, so close the other zones it
 * holds open (mkfs writes a super zone and both copies of the chain; a
 * closed zone stays active and is written again later). 0 if any was
 * closed.
 */
static int jrnl_close_others(struct jrnl *j, uint32_t zone)
{
	uint32_t i, n = j->m->nr_zones;
	struct zdev_zone *rep = calloc(n, sizeof(*rep));
	int ret = -ETOOMANYREFS;

	if (!rep)
		return -ENOMEM;
	if (zdev_report(j->dev, 0, n, rep) == (int)n)
		for (i = 0; i < n; i++)
			if (i != zone && (rep[i].cond == ZDEV_COND_IMP_OPEN ||
					  rep[i].cond == ZDEV_COND_EXP_OPEN) &&
			    !zdev_zone_op(j->dev, ZDEV_OP_CLOSE, i))
				ret = 0;
	free(rep);
	return ret;
}

/*
 * Write @len bytes from @src, padded with zeros to the I/O unit, at each of
 * the @nr offsets @offs (one, or a chain zone and its mirror), in chunks of
 * the I/O buffer. The copies of a chunk are in flight together
 * (zdev_submit()): an fsync waits for one write, not one per copy; their
 * order on the device is not kept, and replay takes a record from either.
 * The owner makes room under the device's open limit first (cb->io_begin,
 * which may wait for another write to end). The journal holds one copy's
 * slot while it waits for the other's: no other writer holds a zone while
 * it waits for one, so the wait ends when some write does. If the device
 * still refuses for a zone limit, the owner counts again and the copies
 * not yet written are tried again, a few times: after that the device is
 * not doing what it said, and the journal fails.
 */
static int jrnl_write_copies(struct jrnl *j, const void *src, size_t len,
			     const uint64_t *offs, unsigned int nr)
{
	bool io = j->cb && j->cb->io_begin && j->cb->io_end;
	struct zdev_io ios[JRNL_COPIES], sub[JRNL_COPIES];
	unsigned int i, n, todo[JRNL_COPIES];
	uint32_t zone[JRNL_COPIES];
	uint64_t off[JRNL_COPIES];
	const char *p = src;
	int ret = 0, tries;

	for (i = 0; i < nr; i++) {
		off[i] = offs[i];
		zone[i] = (uint32_t)(off[i] / j->m->zone_size);
	}
	while (len) {
		size_t chunk = ZF_MIN(len, (size_t)JRNL_READ_CHUNK);
		size_t padded = ZF_ROUND_UP(chunk, j->bs);

		memcpy(j->iobuf, p, chunk);
		memset(j->iobuf + chunk, 0, padded - chunk);
		for (i = 0; i < nr; i++)
			ios[i] = (struct zdev_io){ .op = ZDEV_OP_WRITE,
						   .buf = j->iobuf,
						   .len = padded,
						   .off = off[i],
						   .res = -EAGAIN };
		for (tries = 0;; tries++) {
			/* The copies not written yet. */
			for (i = n = 0; i < nr; i++)
				if (ios[i].res)
					todo[n++] = i;
			for (i = 0; i < n; i++) {
				if (io)
					j->cb->io_begin(j->cb_arg,
							zone[todo[i]]);
				sub[i] = ios[todo[i]];
			}
			ret = zdev_submit(j->dev, sub, n);
			for (i = 0; i < n; i++) {
				ios[todo[i]].res = sub[i].res;
				if (io)
					j->cb->io_end(j->cb_arg, zone[todo[i]]);
				/* Not a refusal: that zone is not tried again. */
				if (sub[i].res && !zdev_limit_err(sub[i].res) &&
				    zdev_limit_err(ret))
					ret = sub[i].res;
			}
			if (!zdev_limit_err(ret) || tries == JRNL_RETRY_LIMIT)
				break;
			if (!j->cb) {
				if (ret != -ETOOMANYREFS ||
				    jrnl_close_others(j, zone[todo[0]]))
					break;
				continue;
			}
			if (!j->cb->resync)
				break;
			j->cb->resync(j->cb_arg);
		}
		if (ret)
			return ret;
		j->meta_bytes += padded * nr;
		p += chunk;
		len -= chunk;
		for (i = 0; i < nr; i++)
			off[i] += padded;
	}
	return 0;
}

static int jrnl_write_padded(struct jrnl *j, const void *src, size_t len,
			     uint64_t off)
{
	return jrnl_write_copies(j, src, len, &off, 1);
}

/*
 * A superblock fills its whole ZF_SB_UNIT, whatever the block size: the
 * anchors follow it there, and on a sequential zone with 512-byte blocks
 * a superblock padded only to its block would leave the write pointer
 * short of the first anchor.
 */
int jrnl_write_sb(struct jrnl *j, const struct zf_super *sb, uint64_t off)
{
	char unit[ZF_SB_UNIT] = { 0 };

	memcpy(unit, sb, sizeof(*sb));
	return jrnl_write_padded(j, unit, sizeof(unit), off);
}

int jrnl_chain_push(struct jrnl *j, uint32_t zone, uint32_t mzone)
{
	if (j->chain_len == j->chain_cap) {
		uint32_t ncap = j->chain_cap ? j->chain_cap * 2 : 8;
		uint32_t *nc = realloc(j->chain, ncap * sizeof(*nc));
		uint32_t *nm;

		if (!nc)
			return -ENOMEM;
		j->chain = nc;
		nm = realloc(j->mchain, ncap * sizeof(*nm));
		if (!nm)
			return -ENOMEM;
		j->mchain = nm;
		j->chain_cap = ncap;
	}
	j->mchain[j->chain_len] = mzone;
	j->chain[j->chain_len++] = zone;
	j->m->zones[zone].state = ZM_ZONE_META;
	if (mzone != ZF_NO_ZONE)
		j->m->zones[mzone].state = ZM_ZONE_META;
	return 0;
}

/* Where @off of the chain's last zone is in its mirror. */
static uint64_t jrnl_mirror_off(const struct jrnl *j, uint64_t off)
{
	const struct zm_zone *z = &j->m->zones[j->chain[j->chain_len - 1]];
	const struct zm_zone *mz = &j->m->zones[j->mchain[j->chain_len - 1]];

	return mz->start + (off - z->start);
}

/*
 * Write @len bytes at @off of the chain's last zone and the same bytes at
 * the same offset of its mirror, both at once. Neither is durable before
 * the flush that follows (a commit's, a roll's), so a crash before it may
 * leave either copy with records the other lacks, records no one was told
 * are durable: replay takes them from the copy that has them, or ends the
 * log before them.
 */
static int jrnl_write_chain(struct jrnl *j, const void *src, size_t len,
			    uint64_t off)
{
	uint64_t offs[JRNL_COPIES] = { off };

	if (!j->mirror)
		return jrnl_write_copies(j, src, len, offs, 1);
	offs[1] = jrnl_mirror_off(j, off);
	return jrnl_write_copies(j, src, len, offs, 2);
}

/* Capacity of the chain's last zone: the smaller of its two copies'. */
static uint64_t jrnl_tail_cap(const struct jrnl *j)
{
	uint64_t cap = j->m->zones[j->chain[j->chain_len - 1]].cap;

	if (j->mirror)
		cap = ZF_MIN(cap, j->m->zones[j->mchain[j->chain_len - 1]].cap);
	return cap;
}

static int jrnl_write_header(struct jrnl *j, uint32_t zone, uint32_t peer,
			     uint32_t copy, uint32_t index, uint32_t prev,
			     uint64_t first_seq)
{
	struct zf_mzone h;

	memset(&h, 0, sizeof(h));
	h.magic = htole32(ZF_MZONE_MAGIC);
	memcpy(h.uuid, j->sb.uuid, sizeof(h.uuid));
	h.chain_gen = htole32(j->gen);
	h.index = htole32(index);
	h.prev_zone = htole32(prev);
	h.copy = htole32(copy);
	h.first_seq = htole64(first_seq);
	h.peer_zone = htole32(peer);
	h.crc = htole32(crc32c(0, &h, sizeof(h)));
	return jrnl_write_padded(j, &h, sizeof(h), j->m->zones[zone].start);
}

int jrnl_start_zone(struct jrnl *j, uint32_t zone, uint32_t mzone,
		    uint32_t index, uint32_t prev, uint64_t first_seq)
{
	struct zm_zone *z = &j->m->zones[zone];
	int ret;

	ret = jrnl_write_header(j, zone, mzone, 0, index, prev, first_seq);
	if (!ret && mzone != ZF_NO_ZONE)
		ret = jrnl_write_header(j, mzone, zone, 1, index, prev,
					first_seq);
	if (ret)
		return ret;
	ret = jrnl_chain_push(j, zone, mzone);
	if (ret)
		return ret;
	j->wpos = z->start + j->bs;
	z->wp = j->wpos;
	if (mzone != ZF_NO_ZONE)
		j->m->zones[mzone].wp = j->m->zones[mzone].start + j->bs;
	return 0;
}

/* mkfs: the first (@far: last) empty zone that is not a super zone. */
static int jrnl_alloc_free(struct jrnl *j, bool far, uint32_t *zone)
{
	uint32_t n = j->m->nr_zones, k;

	for (k = 0; k < n; k++) {
		uint32_t i = far ? n - 1 - k : k;
		struct zm_zone *z = &j->m->zones[i];

		if (z->state == ZM_ZONE_FREE && z->wp == z->start &&
		    z->cap >= JRNL_MIN_ZONE_CAP) {
			z->state = ZM_ZONE_META;
			*zone = i;
			return 0;
		}
	}
	return -ENOSPC;
}

int jrnl_alloc_zones(struct jrnl *j, uint32_t *zone, uint32_t *mzone)
{
	bool cb = j->cb && j->cb->zone_alloc;
	int ret;

	*mzone = ZF_NO_ZONE;
	ret = cb ? j->cb->zone_alloc(j->cb_arg, zone) :
		   jrnl_alloc_free(j, false, zone);
	if (ret || !j->mirror)
		return ret;
	/*
	 * The zone the primary took is marked taken (ZM_ZONE_META) by
	 * either path, so the mirror gets another one. Should there be none,
	 * the primary's stays taken until the next mount: the journal is
	 * failing then anyway.
	 */
	return cb ? j->cb->zone_alloc(j->cb_arg, mzone) :
		    jrnl_alloc_free(j, true, mzone);
}

/* Retire a chain zone that is full: a closed zone holds an active slot. */
static void jrnl_finish_zone(struct jrnl *j, uint32_t zone)
{
	struct zm_zone *z = &j->m->zones[zone];

	if (j->cb && j->cb->zone_done) {
		j->cb->zone_done(j->cb_arg, zone);
		return;
	}
	if (z->type == ZDEV_ZONE_SEQ && z->wp > z->start &&
	    z->wp < z->start + z->cap)
		zdev_finish(j->dev, zone);
	z->wp = z->start + z->cap;
}

/* Finish the chain's last zone, and its mirror. */
static void jrnl_finish_tail(struct jrnl *j)
{
	jrnl_finish_zone(j, j->chain[j->chain_len - 1]);
	if (j->mirror)
		jrnl_finish_zone(j, j->mchain[j->chain_len - 1]);
}

/*
 * Append @len bytes of whole records to the chain, moving to a new zone
 * (linked by a NEXT record in the space each zone keeps for it) whenever
 * the next record does not fit.
 */
int jrnl_write_records(struct jrnl *j, const char *buf, size_t len)
{
	uint64_t last_seq = 0;

	while (len) {
		uint32_t tail = j->chain[j->chain_len - 1];
		struct zm_zone *z = &j->m->zones[tail];
		uint64_t end = z->start + jrnl_tail_cap(j), room;
		size_t fit = 0;
		struct zf_rec_next nx;
		char rec[sizeof(struct zf_rec_hdr) + sizeof(nx)];
		uint32_t nz, nmz;
		int ret;

		/* The NEXT record's unit is always kept free at a zone's end. */
		if (j->wpos + j->bs > end)
			return -EIO;
		room = end - j->wpos - j->bs;
		while (fit < len) {
			struct zf_rec_hdr h;
			size_t rl;

			memcpy(&h, buf + fit, sizeof(h));
			rl = sizeof(h) + ZF_ROUND_UP(le32toh(h.len), ZF_REC_ALIGN);
			if (ZF_ROUND_UP(fit + rl, j->bs) > room)
				break;
			last_seq = le64toh(h.seq);
			fit += rl;
		}
		if (fit) {
			ret = jrnl_write_chain(j, buf, fit, j->wpos);
			if (ret)
				return ret;
			j->wpos += ZF_ROUND_UP(fit, j->bs);
			z->wp = j->wpos;
			if (j->mirror)
				j->m->zones[j->mchain[j->chain_len - 1]].wp =
					jrnl_mirror_off(j, j->wpos);
			buf += fit;
			len -= fit;
			if (!len)
				break;
		}
		/* The next record does not fit: continue in a new zone. */
		if (!last_seq) {
			struct zf_rec_hdr h;

			memcpy(&h, buf, sizeof(h));
			last_seq = le64toh(h.seq) - 1;
		}
		ret = jrnl_alloc_zones(j, &nz, &nmz);
		if (ret)
			return ret;
		nx.zone = htole32(nz);
		nx.mirror_zone = htole32(nmz);
		jrnl_encode(rec, ZF_REC_NEXT, &nx, sizeof(nx), j->gen, last_seq);
		ret = jrnl_write_chain(j, rec, sizeof(rec), j->wpos);
		if (ret)
			return ret;
		jrnl_finish_tail(j);
		ret = jrnl_start_zone(j, nz, nmz, j->chain_len, tail,
				      last_seq + 1);
		if (ret)
			return ret;
	}
	return 0;
}

void jrnl_sb_seal(struct zf_super *sb)
{
	sb->crc = 0;
	sb->crc = htole32(crc32c(0, sb, sizeof(*sb)));
}

/*
 * The live super zone can take another anchor: no write of it failed,
 * and it is neither full of anchors nor finished (on a device with few
 * active slots the owner finishes it after each anchor).
 */
static bool jrnl_super_room(struct jrnl *j)
{
	struct zm_zone *z = &j->m->zones[le32toh(j->sb.super_zone[j->sz_cur])];

	return !j->sz_failed[j->sz_cur] &&
	       j->sz_count < le32toh(j->sb.anchors_per_zone) &&
	       !(z->type == ZDEV_ZONE_SEQ && z->wp >= z->start + z->cap);
}

/*
 * A write or reset of super zone @i failed with an I/O error: say so.
 * With @reset (the zone a switch had reset to start over), reset it again
 * if the device lets us, so that it holds no active slot and no half
 * written superblock that a reader could take for a copy. A zone whose
 * anchor write failed keeps what it holds: its superblock and earlier
 * anchors may be the only sound copy if the other zone fails too.
 */
static void jrnl_super_failed(struct jrnl *j, uint32_t i, const char *what,
			      int err, bool reset)
{
	uint32_t zone = le32toh(j->sb.super_zone[i]);
	uint32_t other = le32toh(j->sb.super_zone[i ^ 1]);
	struct zm_zone *z = &j->m->zones[zone];

	j->sz_failed[i] = true;
	zlog_err("%s: writing %s in super zone %u failed (%s): the superblock and anchors are kept in super zone %u alone, and the next writable mount tries zone %u again; run `zonefuse fsck` after unmounting, and replace the device if this comes back",
		 zdev_path(j->dev), what, zone, strerror(-err), other, zone);
	if (reset && z->type == ZDEV_ZONE_SEQ && !zdev_reset(j->dev, zone)) {
		z->resets++;
		z->wp = z->start;
	}
}

/*
 * Go to the other super zone: reset it and write the superblock there,
 * one generation newer. The zone left is finished once an anchor here is
 * durable (jrnl_write_anchor_once()): until then it holds the newest
 * anchor, the only one if this zone's cannot be written. A generation is
 * never used twice, even by a switch that failed: its zone may hold that
 * superblock whatever the device said. 0, or the errno with the live zone
 * unchanged.
 */
static int jrnl_super_switch(struct jrnl *j)
{
	uint32_t to = j->sz_cur ^ 1;
	uint32_t szone = le32toh(j->sb.super_zone[to]);
	struct zm_zone *z = &j->m->zones[szone];
	struct zf_super sb;
	int ret;

	j->sb.sb_gen = htole64(le64toh(j->sb.sb_gen) + 1);
	if (z->type == ZDEV_ZONE_SEQ) {
		ret = zdev_reset(j->dev, szone);
		if (ret)
			return ret;
		z->resets++;
		z->wp = z->start;
	}
	sb = j->sb;
	jrnl_sb_seal(&sb);
	ret = jrnl_write_sb(j, &sb, z->start);
	if (ret)
		return ret;
	j->sz_left = true;
	j->sz_left_wpos = j->sz_wpos;
	j->sz_left_count = j->sz_count;
	j->sz_cur = to;
	j->sz_failed[to] = false;
	j->sz_sb_stale = false;
	z->wp = z->start + ZF_SB_UNIT;
	j->sz_wpos = z->start + ZF_SB_UNIT;
	j->sz_count = 0;
	return 0;
}

/* The switch's first anchor is durable: finish the zone it left. */
static void jrnl_super_left(struct jrnl *j)
{
	uint32_t old = le32toh(j->sb.super_zone[j->sz_cur ^ 1]);

	j->sz_left = false;
	if (j->m->zones[old].type == ZDEV_ZONE_SEQ)
		jrnl_finish_zone(j, old);
}

/*
 * The first anchor after a switch could not be written: back to the zone
 * left, whose superblock is older than the one just written.
 */
static void jrnl_super_back(struct jrnl *j)
{
	j->sz_left = false;
	j->sz_cur ^= 1;
	j->sz_wpos = j->sz_left_wpos;
	j->sz_count = j->sz_left_count;
	j->sz_sb_stale = true;
}

/*
 * One anchor. -EAGAIN: its write failed in the live zone, and a zone
 * that has not failed remains: the caller tries again there.
 */
static int jrnl_write_anchor_once(struct jrnl *j)
{
	bool slot = j->cb && j->cb->super_begin && j->cb->super_end;
	uint32_t other = j->sz_cur ^ 1;
	struct zm_zone *z;
	struct zf_anchor a;
	uint32_t szone;
	bool room;
	int ret = 0;

	if (slot)
		j->cb->super_begin(j->cb_arg);
	room = jrnl_super_room(j);
	/*
	 * Switch super zones when this one has no room, or when replay
	 * found damage in a super zone (j->sz_switches): the switch
	 * rewrites the zone it goes to, and jrnl_write_anchor() makes as
	 * many as it takes. Damage cannot be healed into a zone that failed
	 * this mount: the anchors stay where they are while there is room.
	 * Full, both are tried, the failed one again, before giving up.
	 */
	if (j->sz_switches && room && j->sz_failed[other])
		j->sz_switches = 0;
	if (!room || j->sz_switches) {
		ret = jrnl_super_switch(j);
		if (ret == -EIO) {
			jrnl_super_failed(j, other, "the superblock", ret, true);
			j->sz_sb_stale = true;
			j->sz_switches = 0;
			if (room)
				ret = 0;
		}
		if (ret)
			goto out_slot;
		if (j->sz_switches)
			j->sz_switches--;
	}
	szone = le32toh(j->sb.super_zone[j->sz_cur]);
	z = &j->m->zones[szone];
	memset(&a, 0, sizeof(a));
	a.magic = htole32(ZF_ANCHOR_MAGIC);
	a.seq = htole64(j->anchor_seq + 1);
	memcpy(a.uuid, j->sb.uuid, sizeof(a.uuid));
	a.chain_zone = htole32(j->chain[0]);
	a.chain_gen = htole32(j->gen);
	a.snap_seq = htole64(j->snap_seq);
	a.mirror_zone = htole32(j->mirror ? j->mchain[0] : ZF_NO_ZONE);
	a.flags = htole32(j->sz_failed[j->sz_cur ^ 1] ? ZF_ANCHOR_OTHER_FAILED : 0);
	a.crc = htole32(crc32c(0, &a, sizeof(a)));
	ret = jrnl_write_padded(j, &a, sizeof(a), j->sz_wpos);
	if (ret == -EIO) {
		/*
		 * The zone's write pointer is unknown now: no more anchors
		 * go there. The next try goes back to the zone a switch just
		 * left, or switches, unless the other zone failed too.
		 */
		jrnl_super_failed(j, j->sz_cur, "an anchor", ret, false);
		if (j->sz_left)
			jrnl_super_back(j);
		if (!j->sz_failed[0] || !j->sz_failed[1])
			ret = -EAGAIN;
	}
	if (ret)
		goto out_slot;
	ret = zdev_flush(j->dev);
	if (ret)
		goto out_slot;
	z->wp = j->sz_wpos + j->bs;
	j->sz_wpos += j->bs;
	j->sz_count++;
	j->anchor_seq++;
	if (j->sz_left)
		jrnl_super_left(j);
out_slot:
	if (slot)
		j->cb->super_end(j->cb_arg,
				 le32toh(j->sb.super_zone[j->sz_cur]));
	return ret;
}

/*
 * Write the anchor; after damage in a super zone, again (naming the same
 * chain) until the switches it needs are made, so that both super zones
 * hold a sound superblock and anchor. A super zone that cannot be written
 * costs its copy, not the file system: the anchors go to the other one.
 * A zone whose superblock can be written but not its anchor would take
 * the anchor there and back forever: the tries are bounded.
 */
#define JRNL_ANCHOR_TRIES 3

int jrnl_write_anchor(struct jrnl *j)
{
	int ret, tries = 0;

	do {
		ret = jrnl_write_anchor_once(j);
	} while ((ret == -EAGAIN && ++tries < JRNL_ANCHOR_TRIES) ||
		 (!ret && j->sz_switches));
	return ret == -EAGAIN ? -EIO : ret;
}

/* ---- snapshots ------------------------------------------------------------- */

/*
 * The emit function handed to the snapshot callback. It runs while the
 * caller has stopped all metadata changes; on SNAP_END it seals the
 * snapshot: records appended before it are covered by it and dropped from
 * the pending list, and the journal moves to the new generation.
 */
int jrnl_snap_emit(void *arg, uint16_t type, const void *p, uint32_t len)
{
	struct jrnl_snap *s = arg;
	struct jrnl *j = s->j;
	int ret;

	if (len > ZF_REC_MAX)
		return -EINVAL;
	if (!s->len) {
		pthread_mutex_lock(&j->lock);
		s->first_seq = s->seq = j->next_seq;
		s->gen = j->gen + 1;
		pthread_mutex_unlock(&j->lock);
	}
	ret = jrnl_grow(&s->buf, &s->cap,
			s->len + sizeof(struct zf_rec_hdr) + ZF_REC_MAX);
	if (ret)
		return ret;
	s->len += jrnl_encode(s->buf + s->len, type, p, len, s->gen, s->seq++);
	if (type == ZF_REC_SNAP_END) {
		pthread_mutex_lock(&j->lock);
		j->pend_len = 0;
		j->next_seq = s->seq;
		j->gen = s->gen;
		pthread_mutex_unlock(&j->lock);
		s->sealed = true;
	}
	return 0;
}

/*
 * Make room for a snapshot of about @bytes and touch every page of it, so
 * that the snapshot callback, which stops all metadata changes, does not
 * take the page faults: a fresh 34 MB buffer (the checksums of 32 GiB of
 * data) spent 21 of the 25 ms that stop lasted faulting its pages in, and
 * 4 encoding (docs/performance.md, "The journal's roll").
 */
static int jrnl_snap_prepare(struct jrnl_snap *s, uint64_t bytes)
{
	volatile char *p;
	size_t off;
	int ret;

	if (bytes > SIZE_MAX / 2)
		return -ENOMEM;
	ret = jrnl_grow(&s->buf, &s->cap, (size_t)bytes);
	if (ret)
		return ret;
	p = s->buf;
	for (off = 0; off < (size_t)bytes; off += JRNL_PAGE)
		p[off] = 0;
	return 0;
}

int jrnl_do_roll(struct jrnl *j)
{
	struct jrnl_snap s = { .j = j };
	uint32_t *old = NULL, *mold = NULL, old_len = j->chain_len, i;
	uint64_t end_seq, t0 = zutil_now_mono_ns(), t;
	uint32_t head, mhead;
	int ret;

	if (!j->cb || !j->cb->snapshot)
		return -EINVAL;
	/*
	 * The last snapshot and what was logged since: a record adds at most
	 * its own bytes to the state (a checkpoint's EXTENT records, their
	 * checksums), a tiny fsync's a few hundred to its 4 KiB of log room.
	 * Up to half the snapshot more: the log may be twice the snapshot
	 * when it rolls, and a log of creates and unlinks adds nothing, so
	 * all of it could make a roll touch three times the memory it needs.
	 * A snapshot that outgrows the room is realloc()ed.
	 */
	ret = jrnl_snap_prepare(&s, j->snap_bytes +
					    ZF_MIN(j->log_rec_bytes,
						   j->snap_bytes / 2) +
					    ZF_REC_MAX);
	if (ret)
		goto out_free;
	t = zutil_now_mono_ns();
	ret = j->cb->snapshot(j->cb_arg, jrnl_snap_emit, &s);
	t = zutil_now_mono_ns() - t;
	if (t > j->snap_stop_max_ns)
		j->snap_stop_max_ns = t;
	if (!ret && !s.sealed)
		ret = -EINVAL;
	if (ret)
		goto out_free;
	end_seq = s.seq - 1;

	/* Data the snapshot's extents name must be durable before it is. */
	ret = zdev_flush(j->dev);
	if (ret)
		goto out_free;
	/*
	 * Nothing is appended to the old chain any more: its last zone gives
	 * its active slot to the new chain's first (a device may have only
	 * one for the journal, or two with the mirror). It stays readable,
	 * and named by the anchor, until the new anchor is durable.
	 */
	jrnl_finish_tail(j);
	old = j->chain;
	mold = j->mchain;
	j->chain = j->mchain = NULL;
	j->chain_len = j->chain_cap = 0;
	ret = jrnl_alloc_zones(j, &head, &mhead);
	if (ret)
		goto out_restore;
	ret = jrnl_start_zone(j, head, mhead, 0, ZF_NO_ZONE, s.first_seq);
	if (ret)
		goto out_restore;
	ret = jrnl_write_records(j, s.buf, s.len);
	if (ret)
		goto out_restore;
	ret = zdev_flush(j->dev);
	if (ret)
		goto out_restore;
	j->snap_seq = s.first_seq;
	ret = jrnl_write_anchor(j);
	if (ret)
		goto out_restore;

	j->snap_bytes = s.len;
	j->log_bytes = 0;
	j->log_rec_bytes = 0;
	j->rolls++;
	t = zutil_now_mono_ns() - t0;
	j->roll_ns += t;
	if (t > j->roll_max_ns)
		j->roll_max_ns = t;
	for (i = 0; i < old_len; i++) {
		jrnl_finish_zone(j, old[i]);
		if (j->cb->zone_release)
			j->cb->zone_release(j->cb_arg, old[i]);
		if (!j->mirror)
			continue;
		jrnl_finish_zone(j, mold[i]);
		if (j->cb->zone_release)
			j->cb->zone_release(j->cb_arg, mold[i]);
	}
	free(old);
	free(mold);
	pthread_mutex_lock(&j->lock);
	if (end_seq > j->durable_seq)
		j->durable_seq = end_seq;
	pthread_mutex_unlock(&j->lock);
	free(s.buf);
	return 0;

out_restore:
	/*
	 * The new chain is not named by any anchor; the old one still is.
	 * But the records the snapshot absorbed are gone from the pending
	 * list, so the journal cannot go on: the error is sticky.
	 */
	free(j->chain);
	free(j->mchain);
	j->chain = old;
	j->mchain = mold;
	j->chain_len = j->chain_cap = old_len;
out_free:
	free(s.buf);
	return ret;
}

/* ---- committing ------------------------------------------------------------ */

int jrnl_rec_names(const struct zmeta *m, uint16_t type, const void *p,
		   uint32_t len, uint32_t *zone, uint64_t *end)
{
	uint64_t addr, dlen;

	switch (type) {
	case ZF_REC_CREATE:
	case ZF_REC_LINK:
	case ZF_REC_UNLINK:
	case ZF_REC_RENAME:
	case ZF_REC_SETATTR:
	case ZF_REC_XATTR_SET:
	case ZF_REC_XATTR_DEL:
	case ZF_REC_INODE_FREE:
	case ZF_REC_COUNTERS:
	case ZF_REC_UNMOUNT:
	case ZF_REC_PREALLOC:
		return 0;
	case ZF_REC_EXTENT: {
		struct zf_rec_extent e;

		if (len < sizeof(e))
			return -1;
		memcpy(&e, p, sizeof(e));
		addr = le64toh(e.addr);
		dlen = le64toh(e.len);
		break;
	}
	case ZF_REC_EXTENT_MOVE: {
		struct zf_rec_extent_move mv;

		if (len < sizeof(mv))
			return -1;
		memcpy(&mv, p, sizeof(mv));
		addr = le64toh(mv.new_addr);
		dlen = le64toh(mv.len);
		break;
	}
	default:
		return -1;
	}
	*zone = zm_zone_of(m, addr);
	if (*zone >= m->nr_zones || m->zones[*zone].type != ZDEV_ZONE_SEQ ||
	    dlen > UINT64_MAX - addr)
		return -1;
	*end = addr + dlen;
	return 1;
}

int jrnl_append(struct jrnl *j, uint16_t type, const void *payload,
		uint32_t len, uint64_t *seqp)
{
	uint64_t end;
	uint32_t zone;
	int ret;

	if (len > ZF_REC_MAX)
		return -EINVAL;
	pthread_mutex_lock(&j->lock);
	if (j->rdonly || j->error) {
		ret = -EROFS;
		goto out_unlock;
	}
	ret = jrnl_grow(&j->pend, &j->pend_cap,
			j->pend_len + sizeof(struct zf_rec_hdr) +
				ZF_ROUND_UP(len, ZF_REC_ALIGN));
	if (ret)
		goto out_unlock;
	if (seqp)
		*seqp = j->next_seq;
	if (!j->pend_preflush &&
	    jrnl_rec_names(j->m, type, payload, len, &zone, &end) < 0)
		j->pend_preflush = true;
	j->pend_len += jrnl_encode(j->pend + j->pend_len, type, payload, len,
				   j->gen, j->next_seq++);
out_unlock:
	pthread_mutex_unlock(&j->lock);
	return ret;
}

/*
 * With a mirror, one zone's capacity instead of two: the chain's zones
 * come twice, and on a device of small zones the chain must not take
 * more of the free zones than one copy did (a data writer the space check
 * admitted found no zone, in tests/e2e/stress.py's 2 MiB zones).
 */
static uint64_t jrnl_roll_min(struct jrnl *j)
{
	uint64_t cap = j->chain_len ? j->m->zones[j->chain[0]].cap : JRNL_ROLL_MAX;

	return ZF_MIN(JRNL_ROLL_MAX, (j->mirror ? 1 : 2) * cap);
}

/* The log's room (log_bytes) at which a commit rolls the journal. */
static uint64_t jrnl_roll_at(struct jrnl *j)
{
	return ZF_MAX(jrnl_roll_min(j), 2 * j->snap_bytes);
}

/*
 * Until the roll, a copy of the chain holds the snapshot and up to
 * jrnl_roll_at() of log in zones that lose a block each to their header;
 * one zone more for the commit that crosses that mark and for the room a
 * batch that did not fit left at the end of a zone. The space check keeps
 * these zones from data (alloc_floor()): a chain that took zones the check
 * had counted for data left admitted data with no zone to go to (stress
 * seed 2 with a mirror chain).
 */
void jrnl_set_grow(struct jrnl *j)
{
	uint64_t room;
	uint32_t most, grow = 0;

	if (j->chain_len) {
		room = jrnl_tail_cap(j) - j->bs;
		most = (uint32_t)ZF_MIN(ZF_DIV_ROUND_UP(j->snap_bytes + jrnl_roll_at(j),
							room) + 1,
					UINT32_MAX / 2);
		if (most > j->chain_len)
			grow = (most - j->chain_len) * (j->mirror ? 2 : 1);
	}
	atomic_store(&j->grow_zones, grow);
}

uint32_t jrnl_grow_zones(struct jrnl *j)
{
	return atomic_load(&j->grow_zones);
}

/* A commit's flush, counted and timed (jrnl_get_stats()). */
static int jrnl_timed_flush(struct jrnl *j)
{
	uint64_t t = zutil_now_mono_ns();
	int ret = zdev_flush(j->dev);

	j->flush_ns += zutil_now_mono_ns() - t;
	j->flushes++;
	return ret;
}

/*
 * Mark the first record of a commit's batch @rec: ZF_REC_F_COMMIT, and
 * ZF_REC_F_UNFLUSHED when no flush comes before the batch. Its CRC,
 * which covers the flags, is computed again.
 */
static void jrnl_mark_commit(char *rec, bool unflushed)
{
	struct zf_rec_hdr h;
	uint32_t crc;

	memcpy(&h, rec, sizeof(h));
	h.flags = htole16(ZF_REC_F_COMMIT | (unflushed ? ZF_REC_F_UNFLUSHED : 0));
	h.crc = 0;
	memcpy(rec, &h, sizeof(h));
	crc = crc32c(0, rec, sizeof(h) + le32toh(h.len));
	h.crc = htole32(crc);
	memcpy(rec, &h.crc, sizeof(h.crc));
}

/*
 * One commit, as the committer: write what is pending, flush; roll if
 * the log has grown past the snapshot.
 *
 * The records must not be durable before what they name. A flush before
 * them ensures it, and costs a device flush per fsync: on a drive with a
 * volatile cache it is the larger part of a small fsync's wait. A batch
 * whose records name only file data in sequential zones goes without it
 * (ZF_REC_F_UNFLUSHED): each zone keeps its writes in order, so after a
 * power cut its write pointer says whether the data the records name
 * reached the device, and replay drops the last commit if it did not
 * (jrnl_replay.c). Only the last one can be in that state, because a
 * commit is written only after the flush of the one before returned.
 */
static int jrnl_commit_once(struct jrnl *j)
{
	uint64_t upto, written = j->meta_bytes, t0 = zutil_now_mono_ns();
	char *batch = NULL;
	size_t len, cap;
	bool preflush;
	int ret = 0;

	pthread_mutex_lock(&j->lock);
	batch = j->pend;
	len = j->pend_len;
	cap = j->pend_cap;
	preflush = j->pend_preflush;
	upto = j->next_seq - 1;
	j->pend = NULL;
	j->pend_len = j->pend_cap = 0;
	j->pend_preflush = false;
	pthread_mutex_unlock(&j->lock);

	if (len && !j->need_roll) {
		jrnl_mark_commit(batch, !preflush);
		if (preflush)
			ret = jrnl_timed_flush(j);
		else
			j->unflushed_commits++;
		if (!ret)
			ret = jrnl_write_records(j, batch, len);
	}
	if (!ret && !j->need_roll)
		ret = jrnl_timed_flush(j);
	if (ret)
		goto out;
	/*
	 * The room the log takes in its zones, not its records' bytes: each
	 * commit pads to a block, and an fsync per 4 KiB file made the log
	 * 20 times its records' size, until the chain held 11 of 32 zones
	 * and small files met ENOSPC at half the capacity. One copy's room:
	 * the mirror's is the same.
	 */
	j->log_bytes += (j->meta_bytes - written) / (j->mirror ? 2 : 1);
	j->log_rec_bytes += len;
	j->commits++;
	pthread_mutex_lock(&j->lock);
	if (!j->need_roll && upto > j->durable_seq)
		j->durable_seq = upto;
	pthread_mutex_unlock(&j->lock);
	if (j->need_roll || j->log_bytes >= jrnl_roll_at(j)) {
		ret = jrnl_do_roll(j);
		if (!ret)
			j->need_roll = false;
	}
	jrnl_set_grow(j);
out:
	/* Keep the larger buffer for the next batch. */
	pthread_mutex_lock(&j->lock);
	if (!j->pend) {
		j->pend = batch;
		j->pend_cap = cap;
		batch = NULL;
	}
	pthread_mutex_unlock(&j->lock);
	free(batch);
	j->commit_ns += zutil_now_mono_ns() - t0;
	return ret;
}

/*
 * The journal's owner, when it listens (cb->failed), reports the error
 * with what to do about it; without one (mkfs, the tests) the journal
 * says it itself.
 */
bool jrnl_set_error(struct jrnl *j, int err, const char *what)
{
	j->error = err;
	if (j->cb && j->cb->failed)
		return true;
	zlog_err("metadata journal on %s: %s failed (%s); the file system is now read-only",
		 zdev_path(j->dev), what, strerror(-err));
	return false;
}

int jrnl_commit(struct jrnl *j, uint64_t seq)
{
	bool failed = false;
	int ret = 0;

	pthread_mutex_lock(&j->lock);
	if (seq == UINT64_MAX)
		seq = j->next_seq - 1;
	while (!j->error && j->durable_seq < seq) {
		if (j->rdonly) {
			ret = -EROFS;
			break;
		}
		if (j->busy) {
			uint64_t t = zutil_now_mono_ns();

			pthread_cond_wait(&j->cv, &j->lock);
			j->wait_ns += zutil_now_mono_ns() - t;
			continue;
		}
		j->busy = true;
		pthread_mutex_unlock(&j->lock);
		ret = jrnl_commit_once(j);
		pthread_mutex_lock(&j->lock);
		if (ret && !j->error)
			failed = jrnl_set_error(j, ret, "commit");
		j->busy = false;
		pthread_cond_broadcast(&j->cv);
	}
	if (j->error)
		ret = j->error;
	seq = j->durable_seq;
	pthread_mutex_unlock(&j->lock);
	if (failed)
		j->cb->failed(j->cb_arg, ret);
	if (!ret && j->cb && j->cb->durable)
		j->cb->durable(j->cb_arg, seq);
	return ret;
}

/* Run @fn as the committer (waiting for the current one). */
static int jrnl_as_committer(struct jrnl *j,
			     int (*fn)(struct jrnl *j, const void *arg),
			     const void *arg)
{
	bool failed = false;
	int ret;

	pthread_mutex_lock(&j->lock);
	while (j->busy)
		pthread_cond_wait(&j->cv, &j->lock);
	if (j->error || j->rdonly) {
		ret = j->error ? j->error : -EROFS;
		pthread_mutex_unlock(&j->lock);
		return ret;
	}
	j->busy = true;
	pthread_mutex_unlock(&j->lock);
	ret = fn(j, arg);
	pthread_mutex_lock(&j->lock);
	if (ret && !j->error)
		failed = jrnl_set_error(j, ret, "snapshot");
	j->busy = false;
	pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->lock);
	if (failed)
		j->cb->failed(j->cb_arg, ret);
	return ret;
}

static int jrnl_roll_fn(struct jrnl *j, const void *arg)
{
	(void)arg;
	int ret = jrnl_do_roll(j);

	if (!ret)
		j->need_roll = false;
	jrnl_set_grow(j);
	return ret;
}

int jrnl_roll(struct jrnl *j)
{
	return jrnl_as_committer(j, jrnl_roll_fn, NULL);
}

/*
 * A new label goes into both superblock copies the way a damaged copy is
 * rewritten: two super zone switches, each writing the superblock (with a
 * higher sb_gen) and an anchor naming the same chain into the zone it
 * goes to, after resetting it. At any moment one copy is whole, with the
 * old label or the new, and anchors for the chain: a crash leaves the
 * file system as sound as before, with either label (the reader takes the
 * first sound copy).
 */
static int jrnl_label_fn(struct jrnl *j, const void *arg)
{
	char old[sizeof(j->sb.label)];
	int ret;

	memcpy(old, j->sb.label, sizeof(old));
	memset(j->sb.label, 0, sizeof(j->sb.label));
	strncpy(j->sb.label, arg, sizeof(j->sb.label) - 1);
	j->sz_switches = 2;
	ret = jrnl_write_anchor(j);
	/* A super zone that failed leaves the old label in the live one. */
	if (!ret && j->sz_sb_stale)
		ret = -EIO;
	if (ret)
		memcpy(j->sb.label, old, sizeof(old));
	return ret;
}

int jrnl_set_label(struct jrnl *j, const char *label)
{
	if (strlen(label) >= sizeof(j->sb.label))
		return -ENAMETOOLONG;
	return jrnl_as_committer(j, jrnl_label_fn, label);
}

uint32_t jrnl_super_unwritable(const struct jrnl *j)
{
	uint32_t i;

	for (i = 0; i < 2; i++)
		if (j->sz_failed[i])
			return le32toh(j->sb.super_zone[i]);
	return ZF_NO_ZONE;
}

int jrnl_start(struct jrnl *j)
{
	if (j->rdonly || !j->need_roll)
		return 0;
	return jrnl_roll(j);
}

uint64_t jrnl_last_seq(struct jrnl *j)
{
	uint64_t s;

	pthread_mutex_lock(&j->lock);
	s = j->next_seq - 1;
	pthread_mutex_unlock(&j->lock);
	return s;
}

uint64_t jrnl_durable_seq(struct jrnl *j)
{
	uint64_t s;

	pthread_mutex_lock(&j->lock);
	s = j->durable_seq;
	pthread_mutex_unlock(&j->lock);
	return s;
}

int jrnl_error(struct jrnl *j)
{
	int e;

	pthread_mutex_lock(&j->lock);
	e = j->error;
	pthread_mutex_unlock(&j->lock);
	return e;
}

void jrnl_set_cb(struct jrnl *j, const struct jrnl_cb *cb, void *arg)
{
	j->cb_arg = arg;
	j->cb = cb;
}

void jrnl_get_stats(struct jrnl *j, struct jrnl_stats *st)
{
	pthread_mutex_lock(&j->lock);
	while (j->busy)
		pthread_cond_wait(&j->cv, &j->lock);
	st->meta_bytes = j->meta_bytes;
	st->commits = j->commits;
	st->rolls = j->rolls;
	st->flushes = j->flushes;
	st->unflushed_commits = j->unflushed_commits;
	st->commit_ns = j->commit_ns;
	st->flush_ns = j->flush_ns;
	st->wait_ns = j->wait_ns;
	st->roll_ns = j->roll_ns;
	st->roll_max_ns = j->roll_max_ns;
	st->snap_stop_max_ns = j->snap_stop_max_ns;
	st->chain_zones = j->chain_len;
	st->chain_gen = j->gen;
	st->anchor_seq = j->anchor_seq;
	st->snap_seq = j->snap_seq;
	st->snap_bytes = j->snap_bytes;
	st->log_bytes = j->log_bytes;
	st->super_zone[0] = le32toh(j->sb.super_zone[0]);
	st->super_zone[1] = le32toh(j->sb.super_zone[1]);
	st->cur_zone = j->chain_len ? j->chain[j->chain_len - 1] : ZF_NO_ZONE;
	st->mirror = j->mirror;
	pthread_mutex_unlock(&j->lock);
}

uint32_t jrnl_chain(struct jrnl *j, unsigned int copy, uint32_t *zones,
		    uint32_t max)
{
	uint32_t n;

	pthread_mutex_lock(&j->lock);
	while (j->busy)
		pthread_cond_wait(&j->cv, &j->lock);
	n = copy && !j->mirror ? 0 : ZF_MIN(max, j->chain_len);
	memcpy(zones, copy ? j->mchain : j->chain, n * sizeof(*zones));
	pthread_mutex_unlock(&j->lock);
	return n;
}

void jrnl_free(struct jrnl *j)
{
	if (!j)
		return;
	pthread_mutex_destroy(&j->lock);
	pthread_cond_destroy(&j->cv);
	free(j->pend);
	free(j->chain);
	free(j->mchain);
	free(j->iobuf);
	free(j);
}

int jrnl_close(struct jrnl *j, bool clean)
{
	int ret = 0;

	if (!j)
		return 0;
	if (clean && !j->rdonly && !jrnl_error(j)) {
		ret = jrnl_append(j, ZF_REC_UNMOUNT, NULL, 0, NULL);
		if (!ret)
			ret = jrnl_commit(j, UINT64_MAX);
	}
	jrnl_free(j);
	return ret;
}

struct jrnl *jrnl_alloc(struct zdev *dev, struct zmeta *m, bool rdonly)
{
	struct jrnl *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->dev = dev;
	j->m = m;
	j->bs = zdev_geom(dev)->block_size;
	j->rdonly = rdonly;
	pthread_mutex_init(&j->lock, NULL);
	pthread_cond_init(&j->cv, NULL);
	j->iobuf = zdev_buf_alloc(dev, JRNL_READ_CHUNK);
	if (!j->iobuf) {
		jrnl_free(j);
		return NULL;
	}
	return j;
}
