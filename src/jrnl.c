// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The metadata journal in zones (format.h has the bytes, docs/format.md the
 * rules).
 *
 * Why a chain named by anchors rather than a fixed ring of metadata zones:
 * a fixed ring must hold two snapshots and the log between them, so a file
 * system whose metadata outgrows it either loops or fails (ZenFS#293). The
 * chain takes zones from the common pool as it needs them, is as long as
 * the metadata requires, and wears its zones like any data zone. The only
 * fixed zones are the two super zones, which take one small anchor per
 * snapshot.
 *
 * Replay trusts nothing it reads: every structure is checked (magic, CRC,
 * uuid, generation, sequence) and the first record that fails ends the log.
 * Records after a torn tail would never be replayed, so a writable mount
 * that finds one starts a fresh chain before appending (jrnl_start()).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "zonefuse/crc32c.h"
#include "zonefuse/jrnl.h"
#include "zonefuse/util.h"

/*
 * Roll to a new snapshot once the log is twice the snapshot and at least
 * two zones' capacity, capped at this: small zones roll sooner, so the
 * chain does not eat the reserve of a small device.
 */
#define JRNL_ROLL_MAX (8ull << 20)
#define JRNL_MAX_ANCHORS 1024u
#define JRNL_SB_SCAN_ZONES 16u
#define JRNL_READ_CHUNK (1u << 20)
/* Tries of a write the device refuses to open a zone for, 1 ms apart. */
#define JRNL_RETRY_OPEN 1000

struct jrnl {
	struct zdev *dev;
	struct zmeta *m; /* zone geometry, chain zone states */
	struct zf_super sb;
	uint32_t bs;
	bool rdonly;

	pthread_mutex_t lock; /* protects pend*, next_seq, durable_seq, gen,
				 busy, error */
	pthread_cond_t cv;    /* busy cleared or durable_seq moved */
	char *pend;	      /* encoded records not yet written */
	size_t pend_len, pend_cap;
	uint64_t next_seq;
	uint64_t durable_seq;
	uint32_t gen;
	bool busy; /* a committer runs: it alone touches the state below */
	int error; /* sticky */

	/* Committer state. */
	uint32_t *chain;
	uint32_t chain_len, chain_cap;
	uint64_t wpos; /* next write position in the chain's last zone */
	char *iobuf;   /* aligned, JRNL_READ_CHUNK bytes */
	uint64_t snap_seq, snap_bytes, log_bytes;
	bool need_roll;
	uint32_t sz_cur;     /* index into sb.super_zone of the live one */
	uint64_t sz_wpos;    /* next anchor position */
	uint32_t sz_count;   /* anchors in the live super zone */
	uint64_t anchor_seq; /* last anchor written */

	_Atomic uint64_t meta_bytes, commits, rolls;

	const struct jrnl_cb *cb;
	void *cb_arg;
};

/* Snapshot being encoded into memory during a roll. */
struct jrnl_snap {
	struct jrnl *j;
	char *buf;
	size_t len, cap;
	uint64_t first_seq, seq;
	uint32_t gen;
	bool sealed;
};

static bool jrnl_zero(const void *p, size_t n)
{
	const unsigned char *c = p;

	while (n--)
		if (*c++)
			return false;
	return true;
}

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

/* Write @len bytes at @off from @src, padded with zeros to the I/O unit. */
static int jrnl_write_padded(struct jrnl *j, const void *src, size_t len,
			     uint64_t off)
{
	const char *p = src;
	int tries;

	while (len) {
		size_t n = ZF_MIN(len, (size_t)JRNL_READ_CHUNK);
		size_t padded = ZF_ROUND_UP(n, j->bs);
		int ret;

		memcpy(j->iobuf, p, n);
		memset(j->iobuf + n, 0, padded - n);
		ret = zdev_write(j->dev, j->iobuf, padded, off);
		/*
		 * Every open zone is busy with a write: the device closes
		 * one as soon as it can, if the active limit leaves it a slot
		 * to do that (the allocator keeps one spare, and gives one
		 * back when asked). Retry, as the data path does: a failed
		 * journal write turns the file system read-only.
		 */
		for (tries = 0; ret == -ETOOMANYREFS && tries < JRNL_RETRY_OPEN;
		     tries++) {
			struct timespec ts = { 0, 1000000 };

			if (!j->cb || !j->cb->make_room ||
			    !j->cb->make_room(j->cb_arg))
				nanosleep(&ts, NULL);
			ret = zdev_write(j->dev, j->iobuf, padded, off);
		}
		if (ret)
			return ret;
		j->meta_bytes += padded;
		p += n;
		len -= n;
		off += padded;
	}
	return 0;
}

/*
 * A superblock fills its whole ZF_SB_UNIT, whatever the block size: the
 * anchors follow it there, and on a sequential zone with 512-byte blocks
 * a superblock padded only to its block would leave the write pointer
 * short of the first anchor.
 */
static int jrnl_write_sb(struct jrnl *j, const struct zf_super *sb,
			 uint64_t off)
{
	char unit[ZF_SB_UNIT] = { 0 };

	memcpy(unit, sb, sizeof(*sb));
	return jrnl_write_padded(j, unit, sizeof(unit), off);
}

static int jrnl_chain_push(struct jrnl *j, uint32_t zone)
{
	if (j->chain_len == j->chain_cap) {
		uint32_t ncap = j->chain_cap ? j->chain_cap * 2 : 8;
		uint32_t *nc = realloc(j->chain, ncap * sizeof(*nc));

		if (!nc)
			return -ENOMEM;
		j->chain = nc;
		j->chain_cap = ncap;
	}
	j->chain[j->chain_len++] = zone;
	j->m->zones[zone].state = ZM_ZONE_META;
	return 0;
}

/* Write the header of chain zone @zone (index @index) and start it. */
static int jrnl_start_zone(struct jrnl *j, uint32_t zone, uint32_t index,
			   uint32_t prev, uint64_t first_seq)
{
	struct zm_zone *z = &j->m->zones[zone];
	struct zf_mzone h;
	int ret;

	memset(&h, 0, sizeof(h));
	h.magic = htole32(ZF_MZONE_MAGIC);
	memcpy(h.uuid, j->sb.uuid, sizeof(h.uuid));
	h.chain_gen = htole32(j->gen);
	h.index = htole32(index);
	h.prev_zone = htole32(prev);
	h.first_seq = htole64(first_seq);
	h.crc = htole32(crc32c(0, &h, sizeof(h)));
	ret = jrnl_write_padded(j, &h, sizeof(h), z->start);
	if (ret)
		return ret;
	ret = jrnl_chain_push(j, zone);
	if (ret)
		return ret;
	j->wpos = z->start + j->bs;
	z->wp = j->wpos;
	return 0;
}

static int jrnl_alloc_zone(struct jrnl *j, uint32_t *zone)
{
	uint32_t i;

	if (j->cb && j->cb->zone_alloc)
		return j->cb->zone_alloc(j->cb_arg, zone);
	/* mkfs: the first empty zone that is not a super zone. */
	for (i = 0; i < j->m->nr_zones; i++) {
		struct zm_zone *z = &j->m->zones[i];

		if (z->state == ZM_ZONE_FREE && z->wp == z->start &&
		    z->cap >= JRNL_MIN_ZONE_CAP) {
			*zone = i;
			return 0;
		}
	}
	return -ENOSPC;
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

/*
 * Append @len bytes of whole records to the chain, moving to a new zone
 * (linked by a NEXT record in the space each zone keeps for it) whenever
 * the next record does not fit.
 */
static int jrnl_write_records(struct jrnl *j, const char *buf, size_t len)
{
	uint64_t last_seq = 0;

	while (len) {
		uint32_t tail = j->chain[j->chain_len - 1];
		struct zm_zone *z = &j->m->zones[tail];
		uint64_t room;

		/* The NEXT record's unit is always kept free at a zone's end. */
		if (j->wpos + j->bs > z->start + z->cap)
			return -EIO;
		room = z->start + z->cap - j->wpos - j->bs;
		size_t fit = 0;
		struct zf_rec_next nx;
		char rec[sizeof(struct zf_rec_hdr) + sizeof(nx)];
		uint32_t nz;
		int ret;

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
			ret = jrnl_write_padded(j, buf, fit, j->wpos);
			if (ret)
				return ret;
			j->wpos += ZF_ROUND_UP(fit, j->bs);
			z->wp = j->wpos;
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
		ret = jrnl_alloc_zone(j, &nz);
		if (ret)
			return ret;
		nx.zone = htole32(nz);
		nx.reserved = 0;
		jrnl_encode(rec, ZF_REC_NEXT, &nx, sizeof(nx), j->gen, last_seq);
		ret = jrnl_write_padded(j, rec, sizeof(rec), j->wpos);
		if (ret)
			return ret;
		jrnl_finish_zone(j, tail);
		ret = jrnl_start_zone(j, nz, j->chain_len, tail, last_seq + 1);
		if (ret)
			return ret;
	}
	return 0;
}

static void jrnl_sb_seal(struct zf_super *sb)
{
	sb->crc = 0;
	sb->crc = htole32(crc32c(0, sb, sizeof(*sb)));
}

/* Write an anchor naming the current chain; durable when this returns. */
static int jrnl_write_anchor(struct jrnl *j)
{
	struct zf_anchor a;
	uint32_t szone = le32toh(j->sb.super_zone[j->sz_cur]);
	int ret;

	if (j->sz_count >= le32toh(j->sb.anchors_per_zone)) {
		/* Switch super zones: the other one starts over. */
		uint32_t old = szone;
		struct zf_super sb = j->sb;
		struct zm_zone *z;

		j->sz_cur ^= 1;
		szone = le32toh(j->sb.super_zone[j->sz_cur]);
		z = &j->m->zones[szone];
		if (z->type == ZDEV_ZONE_SEQ) {
			ret = zdev_reset(j->dev, szone);
			if (ret)
				return ret;
			z->resets++;
		}
		j->sb.sb_gen = htole64(le64toh(j->sb.sb_gen) + 1);
		sb = j->sb;
		jrnl_sb_seal(&sb);
		ret = jrnl_write_sb(j, &sb, z->start);
		if (ret)
			return ret;
		j->sz_wpos = z->start + ZF_SB_UNIT;
		j->sz_count = 0;
		if (j->m->zones[old].type == ZDEV_ZONE_SEQ)
			zdev_finish(j->dev, old);
	}
	memset(&a, 0, sizeof(a));
	a.magic = htole32(ZF_ANCHOR_MAGIC);
	a.seq = htole64(j->anchor_seq + 1);
	memcpy(a.uuid, j->sb.uuid, sizeof(a.uuid));
	a.chain_zone = htole32(j->chain[0]);
	a.chain_gen = htole32(j->gen);
	a.snap_seq = htole64(j->snap_seq);
	a.crc = htole32(crc32c(0, &a, sizeof(a)));
	ret = jrnl_write_padded(j, &a, sizeof(a), j->sz_wpos);
	if (ret)
		return ret;
	ret = zdev_flush(j->dev);
	if (ret)
		return ret;
	j->m->zones[szone].wp = j->sz_wpos + j->bs;
	j->sz_wpos += j->bs;
	j->sz_count++;
	j->anchor_seq++;
	return 0;
}

/* ---- snapshots ------------------------------------------------------------- */

/*
 * The emit function handed to the snapshot callback. It runs while the
 * caller has stopped all metadata changes; on SNAP_END it seals the
 * snapshot: records appended before it are covered by it and dropped from
 * the pending list, and the journal moves to the new generation.
 */
static int jrnl_snap_emit(void *arg, uint16_t type, const void *p,
			  uint32_t len)
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
 * Write a new chain headed by a fresh snapshot, then the anchor that names
 * it, then release the old chain. Runs as the committer.
 */
static int jrnl_do_roll(struct jrnl *j)
{
	struct jrnl_snap s = { .j = j };
	uint32_t *old = NULL, old_len = j->chain_len, i, head;
	uint64_t end_seq;
	int ret;

	if (!j->cb || !j->cb->snapshot)
		return -EINVAL;
	ret = j->cb->snapshot(j->cb_arg, jrnl_snap_emit, &s);
	if (!ret && !s.sealed)
		ret = -EINVAL;
	if (ret)
		goto out_free;
	end_seq = s.seq - 1;

	/* Data the snapshot's extents name must be durable before it is. */
	ret = zdev_flush(j->dev);
	if (ret)
		goto out_free;
	old = j->chain;
	j->chain = NULL;
	j->chain_len = j->chain_cap = 0;
	ret = jrnl_alloc_zone(j, &head);
	if (ret)
		goto out_restore;
	ret = jrnl_start_zone(j, head, 0, ZF_NO_ZONE, s.first_seq);
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
	j->rolls++;
	for (i = 0; i < old_len; i++) {
		jrnl_finish_zone(j, old[i]);
		if (j->cb->zone_release)
			j->cb->zone_release(j->cb_arg, old[i]);
	}
	free(old);
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
	j->chain = old;
	j->chain_len = j->chain_cap = old_len;
out_free:
	free(s.buf);
	return ret;
}

/* ---- committing ------------------------------------------------------------ */

int jrnl_append(struct jrnl *j, uint16_t type, const void *payload,
		uint32_t len, uint64_t *seqp)
{
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
	j->pend_len += jrnl_encode(j->pend + j->pend_len, type, payload, len,
				   j->gen, j->next_seq++);
out_unlock:
	pthread_mutex_unlock(&j->lock);
	return ret;
}

static uint64_t jrnl_roll_min(struct jrnl *j)
{
	uint64_t cap = j->chain_len ? j->m->zones[j->chain[0]].cap : JRNL_ROLL_MAX;

	return ZF_MIN(JRNL_ROLL_MAX, 2 * cap);
}

/*
 * One commit, as the committer: flush the data, write what is pending,
 * flush again; roll if the log has grown past the snapshot.
 */
static int jrnl_commit_once(struct jrnl *j)
{
	char *batch = NULL;
	size_t len, cap;
	uint64_t upto;
	int ret;

	pthread_mutex_lock(&j->lock);
	batch = j->pend;
	len = j->pend_len;
	cap = j->pend_cap;
	upto = j->next_seq - 1;
	j->pend = NULL;
	j->pend_len = j->pend_cap = 0;
	pthread_mutex_unlock(&j->lock);

	ret = j->need_roll ? 0 : zdev_flush(j->dev);
	if (!ret && len && !j->need_roll)
		ret = jrnl_write_records(j, batch, len);
	if (!ret && !j->need_roll)
		ret = zdev_flush(j->dev);
	if (ret)
		goto out;
	j->log_bytes += len;
	j->commits++;
	pthread_mutex_lock(&j->lock);
	if (!j->need_roll && upto > j->durable_seq)
		j->durable_seq = upto;
	pthread_mutex_unlock(&j->lock);
	if (j->need_roll ||
	    j->log_bytes >= ZF_MAX(jrnl_roll_min(j), 2 * j->snap_bytes)) {
		ret = jrnl_do_roll(j);
		if (!ret)
			j->need_roll = false;
	}
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
	return ret;
}

/*
 * The sticky error, with j->lock held. The journal's owner, when it
 * listens (cb->failed), reports it with what to do about it; without one
 * (mkfs, the tests) the journal says it itself. Returns whether the
 * caller must call cb->failed once it has dropped the lock.
 */
static bool jrnl_set_error(struct jrnl *j, int err, const char *what)
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
			pthread_cond_wait(&j->cv, &j->lock);
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
static int jrnl_as_committer(struct jrnl *j, int (*fn)(struct jrnl *j))
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
	ret = fn(j);
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

static int jrnl_roll_fn(struct jrnl *j)
{
	int ret = jrnl_do_roll(j);

	if (!ret)
		j->need_roll = false;
	return ret;
}

int jrnl_roll(struct jrnl *j)
{
	return jrnl_as_committer(j, jrnl_roll_fn);
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
	st->chain_zones = j->chain_len;
	st->chain_gen = j->gen;
	st->anchor_seq = j->anchor_seq;
	st->snap_seq = j->snap_seq;
	st->snap_bytes = j->snap_bytes;
	st->log_bytes = j->log_bytes;
	st->super_zone[0] = le32toh(j->sb.super_zone[0]);
	st->super_zone[1] = le32toh(j->sb.super_zone[1]);
	st->cur_zone = j->chain_len ? j->chain[j->chain_len - 1] : ZF_NO_ZONE;
	pthread_mutex_unlock(&j->lock);
}

uint32_t jrnl_chain(struct jrnl *j, uint32_t *zones, uint32_t max)
{
	uint32_t n;

	pthread_mutex_lock(&j->lock);
	while (j->busy)
		pthread_cond_wait(&j->cv, &j->lock);
	n = ZF_MIN(max, j->chain_len);
	memcpy(zones, j->chain, n * sizeof(*zones));
	pthread_mutex_unlock(&j->lock);
	return n;
}

static void jrnl_free(struct jrnl *j)
{
	if (!j)
		return;
	pthread_mutex_destroy(&j->lock);
	pthread_cond_destroy(&j->cv);
	free(j->pend);
	free(j->chain);
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

static struct jrnl *jrnl_alloc(struct zdev *dev, struct zmeta *m, bool rdonly)
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

/* ---- zone geometry ---------------------------------------------------------- */

int jrnl_zones_init(struct zdev *dev, struct zmeta *m, char *err,
			   size_t errlen)
{
	const struct zdev_geom *g = zdev_geom(dev);
	struct zdev_zone *rep;
	uint32_t i;
	int ret;

	ret = zm_init(m, g->nr_zones, g->zone_size, g->block_size);
	if (ret)
		return ret;
	rep = calloc(g->nr_zones, sizeof(*rep));
	if (!rep) {
		zm_destroy(m);
		return -ENOMEM;
	}
	ret = zdev_report(dev, 0, g->nr_zones, rep);
	if (ret >= 0 && (uint32_t)ret != g->nr_zones)
		ret = -EIO;
	if (ret < 0) {
		zutil_err(err, errlen, "%s: zone report failed: %s",
			  zdev_path(dev), strerror(-ret));
		free(rep);
		zm_destroy(m);
		return ret;
	}
	for (i = 0; i < g->nr_zones; i++) {
		struct zm_zone *z = &m->zones[i];

		z->start = rep[i].start;
		z->len = rep[i].len;
		z->cap = rep[i].capacity;
		z->type = rep[i].type;
		z->cond = rep[i].cond;
		if (rep[i].resets != ZDEV_RESETS_UNKNOWN)
			z->resets = rep[i].resets;
		if (z->type == ZDEV_ZONE_CONV)
			z->wp = z->start; /* the file system's, from replay */
		else if (z->cond == ZDEV_COND_FULL)
			z->wp = z->start + z->cap;
		else
			z->wp = rep[i].wp;
		if (z->cond == ZDEV_COND_READONLY ||
		    z->cond == ZDEV_COND_OFFLINE || z->cap < g->block_size ||
		    z->start % g->block_size)
			z->state = ZM_ZONE_BAD;
	}
	free(rep);
	return 0;
}

/* ---- mkfs ------------------------------------------------------------------- */

int jrnl_mkfs(struct zdev *dev, const struct jrnl_mkfs_params *p,
	      struct zmeta *m, struct zf_super *sbp, char *err, size_t errlen)
{
	const struct zdev_geom *g = zdev_geom(dev);
	struct jrnl *j;
	struct zf_super *sb;
	uint32_t i, found = 0;
	int ret;

	j = jrnl_alloc(dev, m, false);
	if (!j)
		return -ENOMEM;
	sb = &j->sb;
	memset(sb, 0, sizeof(*sb));
	memcpy(sb->magic, ZF_SB_MAGIC, sizeof(sb->magic));
	sb->version = htole32(ZF_FORMAT_VERSION);
	sb->sb_size = htole32(sizeof(*sb));
	if (getrandom(sb->uuid, sizeof(sb->uuid), 0) != sizeof(sb->uuid)) {
		ret = -EIO;
		zutil_err(err, errlen, "cannot get random bytes for the UUID");
		goto out_free;
	}
	sb->uuid[6] = (uint8_t)((sb->uuid[6] & 0x0f) | 0x40); /* version 4 */
	sb->uuid[8] = (uint8_t)((sb->uuid[8] & 0x3f) | 0x80);
	if (p->label)
		strncpy(sb->label, p->label, sizeof(sb->label) - 1);
	sb->dev_size = htole64(g->size);
	sb->zone_size = htole64(g->zone_size);
	sb->nr_zones = htole32(g->nr_zones);
	sb->nr_conv = htole32(g->nr_conv);
	sb->block_size = htole32(g->block_size);
	sb->reserve_zones = htole32(p->reserve_zones);
	sb->mkfs_time = (int64_t)htole64((uint64_t)p->time);
	for (i = 0; i < g->nr_zones && i < JRNL_SB_SCAN_ZONES && found < 2; i++) {
		struct zm_zone *z = &m->zones[i];

		if (z->state == ZM_ZONE_BAD || z->cap < JRNL_MIN_ZONE_CAP)
			continue;
		sb->super_zone[found++] = htole32(i);
		z->state = ZM_ZONE_SUPER;
	}
	if (found < 2) {
		ret = -ENOSPC;
		zutil_err(err, errlen,
			  "%s: no two usable zones of at least 1 MiB among the first %u for the superblock",
			  zdev_path(dev), JRNL_SB_SCAN_ZONES);
		goto out_free;
	}
	sb->anchors_per_zone = htole32(ZF_MIN(JRNL_MAX_ANCHORS,
		(uint32_t)((m->zones[le32toh(sb->super_zone[0])].cap - ZF_SB_UNIT) /
			   g->block_size)));

	/* Both superblocks; anchors start in the first super zone. */
	for (i = 0; i < 2; i++) {
		struct zf_super copy = *sb;
		struct zm_zone *z = &m->zones[le32toh(sb->super_zone[i])];

		jrnl_sb_seal(&copy);
		ret = jrnl_write_sb(j, &copy, z->start);
		if (ret)
			goto out_io;
		z->wp = z->start + ZF_SB_UNIT;
		/*
		 * The second copy is only read: finish its zone, so that it
		 * does not hold an active zone slot until the switch (which
		 * resets it first).
		 */
		if (i == 1 && z->type == ZDEV_ZONE_SEQ) {
			ret = zdev_finish(dev, le32toh(sb->super_zone[1]));
			if (ret)
				goto out_io;
			z->wp = z->start + z->cap;
		}
	}
	j->sz_cur = 0;
	j->sz_wpos = m->zones[le32toh(sb->super_zone[0])].start + ZF_SB_UNIT;
	j->next_seq = 1;
	/*
	 * Chain generations start at a random value: a conventional zone
	 * keeps old records when reused, and an old file system's records
	 * must never match this one's generation.
	 */
	memcpy(&j->gen, sb->uuid + 4, sizeof(j->gen));

	/* The first chain: a snapshot of the root, then the anchor. */
	{
		struct jrnl_snap s = { .j = j };
		uint32_t head;

		ret = zm_snap_encode(m, jrnl_snap_emit, &s);
		/* A new file system is a cleanly unmounted one. */
		if (!ret)
			ret = jrnl_snap_emit(&s, ZF_REC_UNMOUNT, NULL, 0);
		if (!ret)
			ret = jrnl_alloc_zone(j, &head);
		if (!ret)
			ret = jrnl_start_zone(j, head, 0, ZF_NO_ZONE,
					      s.first_seq);
		if (!ret)
			ret = jrnl_write_records(j, s.buf, s.len);
		free(s.buf);
		if (ret == -ENOSPC) {
			zutil_err(err, errlen,
				  "%s: no zone left for the metadata journal",
				  zdev_path(dev));
			goto out_free;
		}
		if (ret)
			goto out_io;
		j->snap_seq = s.first_seq;
	}
	ret = zdev_flush(dev);
	if (!ret)
		ret = jrnl_write_anchor(j);
	if (ret)
		goto out_io;
	*sbp = *sb;
	jrnl_free(j);
	return 0;

out_io:
	zutil_err(err, errlen, "%s: writing the file system failed: %s",
		  zdev_path(dev), strerror(-ret));
out_free:
	jrnl_free(j);
	return ret;
}

/* ---- reading ---------------------------------------------------------------- */

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

/* Newest valid anchor in either super zone. */
static int jrnl_find_anchor(struct jrnl *j, struct zf_anchor *best,
			    char *err, size_t errlen)
{
	uint32_t per = le32toh(j->sb.anchors_per_zone), k, i;
	size_t len = ZF_SB_UNIT + (size_t)per * j->bs;
	char *buf = zdev_buf_alloc(j->dev, len);
	bool found = false;
	int ret;

	if (!buf)
		return -ENOMEM;
	for (i = 0; i < 2; i++) {
		uint32_t zone = le32toh(j->sb.super_zone[i]);
		struct zm_zone *z = &j->m->zones[zone];
		uint64_t used = z->type == ZDEV_ZONE_CONV ? len : z->wp - z->start;
		struct zf_super sb;
		uint32_t count = 0;
		bool sb_ok;

		z->state = ZM_ZONE_SUPER;
		used = ZF_MIN(used, len);
		if (used < ZF_SB_UNIT + j->bs)
			continue;
		ret = zdev_read(j->dev, buf, ZF_ROUND_UP(used, j->bs), z->start);
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
		for (k = 0; k < per && ZF_SB_UNIT + (k + 1) * (uint64_t)j->bs <= used;
		     k++) {
			struct zf_anchor a, c;

			memcpy(&a, buf + ZF_SB_UNIT + (size_t)k * j->bs,
			       sizeof(a));
			c = a;
			c.crc = 0;
			if (le32toh(a.magic) != ZF_ANCHOR_MAGIC ||
			    le32toh(a.crc) != crc32c(0, &c, sizeof(c)) ||
			    memcmp(a.uuid, j->sb.uuid, sizeof(a.uuid)) ||
			    le32toh(a.chain_zone) >= j->m->nr_zones)
				break;
			count++;
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
	}
	free(buf);
	if (!found) {
		zutil_err(err, errlen,
			  "%s: the superblock is there but no valid anchor names the metadata (damaged super zones); fsck cannot repair this",
			  zdev_path(j->dev));
		return -EUCLEAN;
	}
	return 0;
}

/* Sequential reader over the used part of one chain zone. */
struct jrnl_reader {
	struct jrnl *j;
	uint32_t zone;
	uint64_t pos, end; /* absolute */
	char *buf;	   /* aligned, JRNL_READ_CHUNK * 2 */
	uint64_t boff;	   /* device offset of buf[0] */
	size_t blen;
};

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
	if (ret)
		return ret;
	r->boff = start;
	r->blen = len;
	*p = r->buf + (off - start);
	return 0;
}

/*
 * Open chain zone @zone for reading; checks its header.
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
 */
static int jrnl_rd_zone(struct jrnl_reader *r, uint32_t zone, uint32_t index,
			uint32_t prev, uint64_t first_seq, uint32_t gen,
			char *why, size_t wl)
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
	r->end = z->type == ZDEV_ZONE_CONV ? z->start + z->cap : z->wp;
	r->blen = 0;
	r->boff = 0;
	ret = jrnl_rd(r, z->start, sizeof(h), &p);
	if (ret == -ENODATA) {
		snprintf(why, wl, "chain zone %u is empty", zone);
		return -ENOENT;
	}
	if (ret)
		return ret;
	memcpy(&h, p, sizeof(h));
	c = h;
	c.crc = 0;
	if (le32toh(h.magic) != ZF_MZONE_MAGIC ||
	    le32toh(h.crc) != crc32c(0, &c, sizeof(c)) ||
	    memcmp(h.uuid, j->sb.uuid, sizeof(h.uuid)) ||
	    le32toh(h.chain_gen) != gen || le32toh(h.index) != index ||
	    le32toh(h.prev_zone) != prev || le64toh(h.first_seq) != first_seq) {
		snprintf(why, wl, "chain zone %u has no valid header for index %u",
			 zone, index);
		return -ENOENT;
	}
	if (z->state == ZM_ZONE_DATA) {
		/* The reset no record tells of (see the comment above). */
		z->state = ZM_ZONE_FREE;
		z->resets++;
	}
	r->pos = z->start + j->bs;
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
 * Replay the chain named by @a into j->m. Stops at the first record that
 * does not hold; fails only when the snapshot is incomplete or a record
 * that holds does not apply.
 */
static int jrnl_replay(struct jrnl *j, const struct zf_anchor *a, bool salvage,
		       struct jrnl_replay_info *info, char *err, size_t errlen)
{
	struct jrnl_reader r = { .j = j };
	uint64_t expect = le64toh(a->snap_seq);
	uint32_t gen = le32toh(a->chain_gen);
	bool in_snap = true, last_unmount = false;
	char why[sizeof(info->stop)] = "";
	uint64_t good_end; /* just after the last record accepted */
	int ret;

	r.buf = zdev_buf_alloc(j->dev, (size_t)JRNL_READ_CHUNK * 2);
	if (!r.buf)
		return -ENOMEM;
	ret = jrnl_rd_zone(&r, le32toh(a->chain_zone), 0, ZF_NO_ZONE, expect,
			   gen, why, sizeof(why));
	if (ret)
		goto out_snap;
	good_end = r.pos;
	ret = jrnl_chain_push(j, r.zone);
	if (ret)
		goto out_free;

	for (;;) {
		struct zf_rec_hdr h, hc;
		const char *p;
		uint32_t len, crc;
		uint16_t type;
		uint64_t blk_end = ZF_ROUND_UP(r.pos + 1, j->bs);

		ret = jrnl_rd(&r, r.pos, 8, &p);
		if (ret == -ENODATA) {
			snprintf(why, sizeof(why), "end of data in zone %u",
				 r.zone);
			break;
		}
		if (ret)
			goto out_io;
		if (jrnl_zero(p, 8)) {
			/* Padding to the end of the I/O unit. */
			r.pos = blk_end;
			continue;
		}
		ret = jrnl_rd(&r, r.pos, sizeof(h), &p);
		if (ret == -ENODATA) {
			snprintf(why, sizeof(why), "torn record header at 0x%" PRIx64, r.pos);
			break;
		}
		if (ret)
			goto out_io;
		memcpy(&h, p, sizeof(h));
		len = le32toh(h.len);
		type = le16toh(h.type);
		if (len > ZF_REC_MAX || le32toh(h.chain_gen) != gen ||
		    (type == ZF_REC_NEXT ? le64toh(h.seq) != expect - 1 :
					   le64toh(h.seq) != expect)) {
			snprintf(why, sizeof(why),
				 "record at 0x%" PRIx64 " is not the next one (seq %" PRIu64 ", expected %" PRIu64 ")",
				 r.pos, le64toh(h.seq), expect);
			break;
		}
		ret = jrnl_rd(&r, r.pos, sizeof(h) + len, &p);
		if (ret == -ENODATA) {
			snprintf(why, sizeof(why), "torn record at 0x%" PRIx64, r.pos);
			break;
		}
		if (ret)
			goto out_io;
		hc = h;
		hc.crc = 0;
		crc = crc32c(0, &hc, sizeof(hc));
		crc = crc32c(crc, p + sizeof(h), len);
		if (crc != le32toh(h.crc)) {
			snprintf(why, sizeof(why),
				 "record seq %" PRIu64 " at 0x%" PRIx64 " fails its CRC",
				 expect, r.pos);
			break;
		}
		p += sizeof(h);
		r.pos += sizeof(h) + ZF_ROUND_UP(len, ZF_REC_ALIGN);
		good_end = r.pos;
		last_unmount = false;

		if (type == ZF_REC_NEXT) {
			struct zf_rec_next nx;
			uint32_t prev = r.zone;

			if (len != sizeof(nx)) {
				snprintf(why, sizeof(why), "bad NEXT record");
				break;
			}
			memcpy(&nx, p, sizeof(nx));
			ret = jrnl_rd_zone(&r, le32toh(nx.zone), j->chain_len,
					   prev, expect, gen, why, sizeof(why));
			if (ret == -ENOENT) {
				/* Crashed before the new zone was started. */
				r.end = r.pos = 0;
				r.zone = prev;
				ret = 0;
				break;
			}
			if (ret)
				goto out_bad;
			ret = jrnl_chain_push(j, r.zone);
			if (ret)
				goto out_free;
			good_end = r.pos;
			continue;
		}
		if (in_snap) {
			ret = zm_snap_load(j->m, type, p, len, why, sizeof(why));
			if (ret)
				goto out_bad;
			info->snap_bytes += sizeof(h) + ZF_ROUND_UP(len, ZF_REC_ALIGN);
			if (type == ZF_REC_SNAP_END)
				in_snap = false;
		} else if (type == ZF_REC_UNMOUNT) {
			last_unmount = true;
		} else {
			ret = zm_apply(j->m, type, p, len, expect, why,
				       sizeof(why));
			if (ret == -EUCLEAN && salvage) {
				char w2[sizeof(why)];

				snprintf(w2, sizeof(w2),
					 "record seq %" PRIu64 " does not apply (%.120s): dropped with all after it",
					 expect, why);
				memcpy(why, w2, sizeof(why));
				info->salvaged = true;
				last_unmount = false;
				break;
			}
			if (ret)
				goto out_bad;
			info->log_records++;
			info->log_bytes += sizeof(h) + ZF_ROUND_UP(len, ZF_REC_ALIGN);
		}
		expect++;
	}
	if (in_snap) {
		ret = -EUCLEAN;
		goto out_snap;
	}
	snprintf(info->stop, sizeof(info->stop), "%s", why);
	info->last_seq = expect - 1;
	if (r.pos && r.pos < r.end)
		jrnl_scan_beyond(&r, gen, expect, info);
	/*
	 * Clean: the last record was UNMOUNT and nothing follows it but
	 * padding, so appending right after it keeps the log readable. On a
	 * conventional zone the zeros after it read as padding up to the
	 * zone's end: the tail is where the last record ended, not where
	 * the reading stopped.
	 */
	{
		struct zm_zone *z = &j->m->zones[r.zone];
		uint64_t tail = ZF_ROUND_UP(good_end, j->bs);

		info->clean = last_unmount && r.pos &&
			      tail + j->bs <= z->start + z->cap &&
			      (z->type == ZDEV_ZONE_CONV || tail == z->wp);
		j->wpos = info->clean ? tail : 0;
		if (info->clean)
			z->wp = tail;
	}
	j->next_seq = expect;
	j->durable_seq = expect - 1;
	j->snap_seq = le64toh(a->snap_seq);
	j->snap_bytes = info->snap_bytes;
	j->log_bytes = info->log_bytes;
	j->need_roll = !info->clean;
	ret = 0;
	goto out_free;

out_snap:
	zutil_err(err, errlen,
		  "%s: the metadata snapshot in zone %u is incomplete (%s); the file system cannot be mounted",
		  zdev_path(j->dev), le32toh(a->chain_zone), why);
	ret = -EUCLEAN;
	goto out_free;
out_bad:
	zutil_err(err, errlen,
		  "%s: journal record seq %" PRIu64 " in zone %u does not apply: %s",
		  zdev_path(j->dev), expect, r.zone, why);
	if (ret != -ENOMEM)
		ret = -EUCLEAN;
	goto out_free;
out_io:
	zutil_err(err, errlen, "%s: reading the journal in zone %u failed: %s",
		  zdev_path(j->dev), r.zone, strerror(-ret));
out_free:
	free(r.buf);
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
	ret = jrnl_find_anchor(j, &a, err, errlen);
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
