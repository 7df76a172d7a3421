// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Rebuilding power-cut states from a device recording (zdev_record()).
 * The model and the contract are in include/zonefuse/crash.h; the log
 * format in include/zonefuse/crashlog.h.
 *
 * The log is mapped and indexed once: one small entry per record, the
 * crash points, and for each flush whether and where it completed. The
 * streams of a point (what may be lost) are worked out when asked, from
 * the window between its barrier and the point; windows are short (the
 * file system flushes at every commit), so this costs little.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zonefuse/crash.h"
#include "zonefuse/crashlog.h"
#include "zonefuse/crc32c.h"
#include "zonefuse/util.h"
#include "zonefuse/zdev.h"

/* One record, as indexed. */
struct crash_rec {
	uint64_t off;	   /* device offset (WRITE, RESET, FINISH) */
	uint64_t data;	   /* WRITE: offset of its data in the log file */
	uint32_t len;	   /* WRITE: bytes */
	uint32_t zone;	   /* WRITE, RESET, FINISH */
	uint64_t done;	   /* FLUSH: seq of its FLUSH_DONE, or UINT64_MAX */
	uint8_t type;	   /* enum crashlog_type */
};

struct crash_pt {
	uint64_t rec;
	uint64_t durable;
	enum crash_point_kind kind;
};

struct crash_log {
	const uint8_t *map;
	size_t map_len;
	struct crash_log_info info;
	struct crash_rec *recs;
	struct crash_pt *pts;
	uint8_t *zone_seq; /* per zone: 1 for a sequential zone */
};

/*
 * The streams of one crash point: for each write of its window (records
 * [durable, rec)), which stream it belongs to and its place there, or
 * CRASH_SETTLED for a write a later reset or finish of its zone settled.
 */
#define CRASH_SETTLED UINT32_MAX

struct crash_win {
	uint64_t first;	    /* = pt.durable */
	uint64_t n;	    /* records in the window */
	uint32_t *stream;   /* per window record (writes only meaningful) */
	uint32_t *pos;	    /* place in its stream */
	uint32_t nr_streams;
	uint32_t *len;	    /* per stream: its writes */
	uint32_t *zone;	    /* per stream: its zone */
	uint64_t *first_rec; /* per stream: its first write's seq */
};

static void crash_win_free(struct crash_win *w)
{
	free(w->stream);
	free(w->pos);
	free(w->len);
	free(w->zone);
	free(w->first_rec);
	memset(w, 0, sizeof(*w));
}

/*
 * Sort the window's writes into streams. A zone's open stream is closed
 * (its writes settled) by a reset or finish of the zone; its next write
 * opens a new one. Settled streams are then dropped and the rest numbered
 * in order of their first write.
 */
static int crash_win_build(const struct crash_log *log,
			   const struct crash_pt *pt, struct crash_win *w)
{
	uint32_t nz = log->info.nr_zones, ns = 0, i, *cur, *map;
	bool *settled;
	uint64_t r;
	int ret = -ENOMEM;

	memset(w, 0, sizeof(*w));
	w->first = pt->durable;
	w->n = pt->rec - pt->durable;
	cur = malloc(nz * sizeof(*cur));
	w->stream = calloc(w->n + 1, sizeof(*w->stream));
	w->pos = calloc(w->n + 1, sizeof(*w->pos));
	/* At most one stream per write. */
	w->len = calloc(w->n + 1, sizeof(*w->len));
	w->zone = calloc(w->n + 1, sizeof(*w->zone));
	w->first_rec = calloc(w->n + 1, sizeof(*w->first_rec));
	settled = calloc(w->n + 1, sizeof(*settled));
	map = calloc(w->n + 1, sizeof(*map));
	if (!cur || !w->stream || !w->pos || !w->len || !w->zone ||
	    !w->first_rec || !settled || !map)
		goto out_free;
	for (i = 0; i < nz; i++)
		cur[i] = UINT32_MAX;

	for (r = 0; r < w->n; r++) {
		const struct crash_rec *c = &log->recs[w->first + r];
		uint32_t s;

		w->stream[r] = CRASH_SETTLED;
		if (c->type == CRASHLOG_RESET || c->type == CRASHLOG_FINISH) {
			if (cur[c->zone] != UINT32_MAX)
				settled[cur[c->zone]] = true;
			cur[c->zone] = UINT32_MAX;
			continue;
		}
		if (c->type != CRASHLOG_WRITE)
			continue;
		if (!log->zone_seq[c->zone] || cur[c->zone] == UINT32_MAX) {
			s = ns++;
			w->zone[s] = c->zone;
			w->first_rec[s] = w->first + r;
			if (log->zone_seq[c->zone])
				cur[c->zone] = s;
		} else {
			s = cur[c->zone];
		}
		w->stream[r] = s;
		w->pos[r] = w->len[s]++;
	}

	/* Renumber the streams that stayed open. */
	w->nr_streams = 0;
	for (i = 0; i < ns; i++) {
		if (settled[i]) {
			map[i] = CRASH_SETTLED;
			continue;
		}
		map[i] = w->nr_streams;
		w->len[w->nr_streams] = w->len[i];
		w->zone[w->nr_streams] = w->zone[i];
		w->first_rec[w->nr_streams] = w->first_rec[i];
		w->nr_streams++;
	}
	for (r = 0; r < w->n; r++)
		if (w->stream[r] != CRASH_SETTLED)
			w->stream[r] = map[w->stream[r]];
	ret = 0;
out_free:
	free(cur);
	free(settled);
	free(map);
	if (ret)
		crash_win_free(w);
	return ret;
}

/* ---- opening a log ---------------------------------------------------- */

static int crash_check_hdr(struct crash_log *log, const char *path,
			   char *err, size_t errlen)
{
	struct crashlog_hdr h;
	struct crash_log_info *in = &log->info;

	if (log->map_len < sizeof(h) ||
	    memcmp(log->map, CRASHLOG_MAGIC, sizeof(h.magic))) {
		zutil_err(err, errlen, "%s: not a zonefuse device recording",
			  path);
		return -EMEDIUMTYPE;
	}
	memcpy(&h, log->map, sizeof(h));
	if (le32toh(h.version) != CRASHLOG_VERSION) {
		zutil_err(err, errlen,
			  "%s: recording version %u, this build reads %u",
			  path, le32toh(h.version), CRASHLOG_VERSION);
		return -ENOTSUP;
	}
	if (le32toh(h.crc) !=
	    crc32c(0, &h, offsetof(struct crashlog_hdr, crc))) {
		zutil_err(err, errlen, "%s: the recording's header is damaged (bad CRC)",
			  path);
		return -EUCLEAN;
	}
	in->dev_size = le64toh(h.dev_size);
	in->zone_size = le64toh(h.zone_size);
	in->nr_zones = le32toh(h.nr_zones);
	in->nr_conv = le32toh(h.nr_conv);
	in->block_size = le32toh(h.block_size);
	if (le32toh(h.hdr_size) != sizeof(h) ||
	    le32toh(h.rec_size) != sizeof(struct crashlog_rec) ||
	    !in->zone_size || !in->nr_zones || !in->block_size ||
	    in->zone_size % in->block_size || in->nr_conv > in->nr_zones ||
	    in->dev_size > (uint64_t)in->nr_zones * in->zone_size ||
	    in->dev_size <= (uint64_t)(in->nr_zones - 1) * in->zone_size) {
		zutil_err(err, errlen,
			  "%s: the recording's header describes no possible device",
			  path);
		return -EUCLEAN;
	}
	return 0;
}

/*
 * Check one record head at @pos (seq @seq expected). Returns 1 if it is a
 * whole, valid record, 0 if the log ends here (cut or torn), -EUCLEAN if
 * it is valid but names something the device does not have.
 */
static int crash_check_rec(struct crash_log *log, size_t pos, uint64_t seq,
			   struct crash_rec *out, const char *path, char *err,
			   size_t errlen)
{
	const struct crash_log_info *in = &log->info;
	struct crashlog_rec h;
	uint32_t crc;

	if (log->map_len - pos < sizeof(h))
		return 0;
	memcpy(&h, log->map + pos, sizeof(h));
	if (le32toh(h.magic) != CRASHLOG_REC_MAGIC || le64toh(h.seq) != seq)
		return 0;
	out->off = le64toh(h.off);
	out->len = le32toh(h.len);
	out->zone = le32toh(h.zone);
	out->type = (uint8_t)le16toh(h.type);
	out->data = pos + sizeof(h);
	out->done = UINT64_MAX;
	if (log->map_len - out->data < out->len)
		return 0;
	crc = le32toh(h.crc);
	h.crc = 0;
	if (crc != crc32c(crc32c(0, log->map + out->data, out->len), &h,
			  sizeof(h)))
		return 0;

	switch (out->type) {
	case CRASHLOG_WRITE:
		if (!out->len || out->len % in->block_size ||
		    out->off % in->block_size || out->off >= in->dev_size ||
		    out->len > in->dev_size - out->off ||
		    out->zone != out->off / in->zone_size)
			goto out_bad;
		return 1;
	case CRASHLOG_RESET:
	case CRASHLOG_FINISH:
		if (out->len || out->zone >= in->nr_zones ||
		    out->off != (uint64_t)out->zone * in->zone_size ||
		    !log->zone_seq[out->zone])
			goto out_bad;
		return 1;
	case CRASHLOG_FLUSH:
		if (out->len)
			goto out_bad;
		return 1;
	case CRASHLOG_FLUSH_DONE:
	case CRASHLOG_FLUSH_FAILED:
		if (out->len || out->off >= seq ||
		    log->recs[out->off].type != CRASHLOG_FLUSH ||
		    log->recs[out->off].done != UINT64_MAX)
			goto out_bad;
		return 1;
	default:
		goto out_bad;
	}
out_bad:
	zutil_err(err, errlen,
		  "%s: record %" PRIu64 " (type %u, offset %" PRIu64
		  ", %u bytes) does not fit the device",
		  path, seq, out->type, out->off, out->len);
	return -EUCLEAN;
}

/* A FLUSH that completes is marked with the seq of its FLUSH_DONE. */
static void crash_note_flush_end(struct crash_log *log, uint64_t seq)
{
	const struct crash_rec *c = &log->recs[seq];

	if (c->type == CRASHLOG_FLUSH_DONE) {
		log->recs[c->off].done = seq;
		log->info.flushes++;
	} else {
		/* A failed flush never becomes a barrier: done stays at max,
		   but it must not be ended twice either. */
		log->recs[c->off].done = UINT64_MAX - 1;
		log->info.flushes_failed++;
	}
}

/*
 * The crash points: the positions before each record that can change
 * what a crash leaves (a flush's start or end, a reset, a finish), the
 * start and the end; a position is dropped when nothing but flush starts
 * (or failed ends) lies between it and the last one kept. Each point's
 * barrier is the latest flush that had completed before it.
 */
static int crash_index_points(struct crash_log *log)
{
	uint64_t n = log->info.records, r, durable = 0, last = 0;
	uint32_t np = 0;
	bool changed = false;

	log->pts = calloc(n + 2, sizeof(*log->pts));
	if (!log->pts)
		return -ENOMEM;
	log->pts[np++] = (struct crash_pt){ 0, 0, CRASH_AT_START };
	for (r = 0; r <= n; r++) {
		const struct crash_rec *c = r < n ? &log->recs[r] : NULL;
		enum crash_point_kind kind = CRASH_AT_END;

		if (c) {
			switch (c->type) {
			case CRASHLOG_FLUSH:
				kind = CRASH_AT_FLUSH;
				break;
			case CRASHLOG_FLUSH_DONE:
				kind = CRASH_AT_FLUSH_DONE;
				break;
			case CRASHLOG_RESET:
				kind = CRASH_AT_RESET;
				break;
			case CRASHLOG_FINISH:
				kind = CRASH_AT_FINISH;
				break;
			default:
				kind = CRASH_AT_START; /* not a point */
			}
		}
		if (kind != CRASH_AT_START && changed && r > last) {
			log->pts[np++] =
				(struct crash_pt){ r, durable, kind };
			last = r;
			changed = false;
		}
		if (!c)
			break;
		if (c->type == CRASHLOG_WRITE || c->type == CRASHLOG_RESET ||
		    c->type == CRASHLOG_FINISH)
			changed = true;
		if (c->type == CRASHLOG_FLUSH_DONE) {
			durable = ZF_MAX(durable, c->off);
			changed = true;
		}
	}
	log->info.nr_points = np;
	return 0;
}

int crash_log_open(const char *path, struct crash_log **logp, char *err,
		   size_t errlen)
{
	struct crash_log *log;
	struct stat st;
	size_t pos, cap = 0;
	uint64_t seq;
	uint32_t i;
	int fd, ret;

	log = calloc(1, sizeof(*log));
	if (!log)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		ret = -errno;
		zutil_err(err, errlen, "%s: %s", path, strerror(errno));
		goto out_close;
	}
	log->map_len = (size_t)st.st_size;
	if (log->map_len) {
		void *m = mmap(NULL, log->map_len, PROT_READ, MAP_PRIVATE, fd,
			       0);

		if (m == MAP_FAILED) {
			ret = -errno;
			zutil_err(err, errlen, "%s: cannot map it: %s", path,
				  strerror(errno));
			goto out_close;
		}
		log->map = m;
	}
	ret = crash_check_hdr(log, path, err, errlen);
	if (ret)
		goto out_close;

	log->zone_seq = calloc(log->info.nr_zones, 1);
	if (!log->zone_seq) {
		ret = -ENOMEM;
		goto out_close;
	}
	for (i = log->info.nr_conv; i < log->info.nr_zones; i++)
		log->zone_seq[i] = 1;

	pos = sizeof(struct crashlog_hdr);
	for (seq = 0;; seq++) {
		struct crash_rec c;

		if (seq == cap) {
			struct crash_rec *n;

			cap = cap ? cap * 2 : 1024;
			n = realloc(log->recs, cap * sizeof(*n));
			if (!n) {
				ret = -ENOMEM;
				goto out_close;
			}
			log->recs = n;
		}
		ret = crash_check_rec(log, pos, seq, &c, path, err, errlen);
		if (ret < 0)
			goto out_close;
		if (!ret) {
			log->info.torn = pos != log->map_len;
			break;
		}
		log->recs[seq] = c;
		log->info.records = seq + 1;
		switch (c.type) {
		case CRASHLOG_WRITE:
			log->info.writes++;
			log->info.write_bytes += c.len;
			break;
		case CRASHLOG_RESET:
			log->info.resets++;
			break;
		case CRASHLOG_FINISH:
			log->info.finishes++;
			break;
		case CRASHLOG_FLUSH_DONE:
		case CRASHLOG_FLUSH_FAILED:
			crash_note_flush_end(log, seq);
			break;
		}
		pos = c.data + c.len;
	}
	ret = crash_index_points(log);
	if (ret)
		goto out_close;
	close(fd);
	*logp = log;
	return 0;

out_close:
	if (fd >= 0)
		close(fd);
	crash_log_close(log);
	return ret;
}

void crash_log_close(struct crash_log *log)
{
	if (!log)
		return;
	if (log->map)
		munmap((void *)log->map, log->map_len);
	free(log->recs);
	free(log->pts);
	free(log->zone_seq);
	free(log);
}

void crash_log_info(const struct crash_log *log, struct crash_log_info *info)
{
	*info = log->info;
}

/* ---- crash points and states --------------------------------------------- */

int crash_point(const struct crash_log *log, uint32_t idx,
		struct crash_point *pt)
{
	const struct crash_pt *p;
	struct crash_win w;
	uint32_t s;
	int ret;

	if (idx >= log->info.nr_points)
		return -EINVAL;
	p = &log->pts[idx];
	ret = crash_win_build(log, p, &w);
	if (ret)
		return ret;
	memset(pt, 0, sizeof(*pt));
	pt->rec = p->rec;
	pt->durable = p->durable;
	pt->kind = p->kind;
	pt->nr_streams = w.nr_streams;
	pt->nr_states = 1;
	for (s = 0; s < w.nr_streams; s++) {
		uint64_t m = (uint64_t)w.len[s] + 1;

		pt->lost_max += w.len[s];
		if (pt->nr_states > UINT64_MAX / m)
			pt->nr_states = UINT64_MAX;
		else
			pt->nr_states *= m;
	}
	crash_win_free(&w);
	return 0;
}

void crash_pick_points(const struct crash_log *log, uint32_t max,
		       uint8_t *pick)
{
	uint32_t n = log->info.nr_points, half, rest, j;

	if (!max || n <= max) {
		memset(pick, 1, n);
		return;
	}
	memset(pick, 0, n);
	half = max / 2;
	rest = n - half;
	for (j = rest; j < n; j++)
		pick[j] = 1;
	for (j = 0; j < max - half; j++)
		pick[(uint64_t)j * rest / (max - half)] = 1;
}

/* splitmix64: a small, good, seedable generator. */
static uint64_t crash_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static bool crash_state_seen(const uint32_t *keeps, uint32_t nr,
			     const uint32_t *k, uint32_t ns)
{
	uint32_t i;

	for (i = 0; i < nr; i++)
		if (!memcmp(&keeps[(size_t)i * ns], k, ns * sizeof(*k)))
			return true;
	return false;
}

int crash_states(const struct crash_log *log, uint32_t idx, uint64_t max_all,
		 uint32_t nr_sample, uint64_t seed, uint32_t **keeps,
		 uint32_t *nr)
{
	struct crash_point pt;
	struct crash_win w;
	uint32_t ns, n = 0, s, *out = NULL, *k;
	uint64_t total, tries, rng;
	int ret;

	ret = crash_point(log, idx, &pt);
	if (ret)
		return ret;
	ret = crash_win_build(log, &log->pts[idx], &w);
	if (ret)
		return ret;
	ns = w.nr_streams;
	if (nr_sample < 2)
		nr_sample = 2;
	total = pt.nr_states <= max_all ? pt.nr_states : nr_sample;
	out = calloc((size_t)total * ns + 1, sizeof(*out));
	if (!out) {
		ret = -ENOMEM;
		goto out_win;
	}

	if (pt.nr_states <= max_all) {
		/* Mixed-radix count, stream 0 the lowest digit. */
		for (n = 0; n < total; n++) {
			uint64_t v = n;

			k = &out[(size_t)n * ns];
			for (s = 0; s < ns; s++) {
				k[s] = (uint32_t)(v % (w.len[s] + 1));
				v /= w.len[s] + 1;
			}
		}
		goto out_done;
	}

	/* Everything lost, nothing lost. */
	k = &out[0];
	n = 1;
	k = &out[(size_t)n * ns];
	for (s = 0; s < ns; s++)
		k[s] = w.len[s];
	n++;
	/* Each stream alone losing all its writes. */
	for (s = 0; s < ns && n < total; s++) {
		k = &out[(size_t)n * ns];
		memcpy(k, &out[ns], ns * sizeof(*k));
		k[s] = 0;
		if (!crash_state_seen(out, n, k, ns))
			n++;
	}
	/* Random states, each stream's count uniform in [0, len]. */
	rng = seed ^ ((uint64_t)idx * 0xd1b54a32d192ed03ull);
	for (tries = 0; n < total && tries < 64ull * total; tries++) {
		k = &out[(size_t)n * ns];
		for (s = 0; s < ns; s++)
			k[s] = (uint32_t)(crash_rand(&rng) % (w.len[s] + 1));
		if (!crash_state_seen(out, n, k, ns))
			n++;
	}
out_done:
	*keeps = out;
	*nr = n;
	ret = 0;
out_win:
	crash_win_free(&w);
	return ret;
}

/* ---- building a state ------------------------------------------------------ */

int crash_copy_sparse(const char *from, const char *to)
{
	struct stat st;
	int in, out = -1, ret = 0;
	off_t data = 0, hole;
	char *buf = NULL;

	in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	if (fstat(in, &st) < 0)
		goto out_errno;
	unlink(to);
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0 || ftruncate(out, st.st_size) < 0)
		goto out_errno;
	for (;;) {
		data = lseek(in, data, SEEK_DATA);
		if (data < 0) {
			if (errno == ENXIO)
				break; /* no data after: the rest is a hole */
			goto out_errno;
		}
		hole = lseek(in, data, SEEK_HOLE);
		if (hole < 0)
			goto out_errno;
		while (data < hole) {
			off_t o_in = data, o_out = data;
			ssize_t n = copy_file_range(in, &o_in, out, &o_out,
						    (size_t)(hole - data), 0);

			if (n < 0 && (errno == EXDEV || errno == ENOSYS ||
				      errno == EINVAL || errno == EOPNOTSUPP)) {
				size_t len = (size_t)ZF_MIN(hole - data,
							    1 << 20);

				if (!buf && !(buf = malloc(1 << 20))) {
					ret = -ENOMEM;
					goto out_close;
				}
				n = pread(in, buf, len, data);
				if (n > 0 && pwrite(out, buf, (size_t)n, data) !=
						     n)
					n = -1;
			}
			if (n < 0) {
				if (errno == EINTR)
					continue;
				goto out_errno;
			}
			if (!n)
				break; /* the file shrank under us */
			data += n;
		}
		data = hole;
	}
	goto out_close;
out_errno:
	ret = -errno;
out_close:
	free(buf);
	if (out >= 0 && close(out) < 0 && !ret)
		ret = -errno;
	close(in);
	return ret;
}

static const char *crash_type_name(uint8_t type)
{
	switch (type) {
	case CRASHLOG_WRITE:
		return "write";
	case CRASHLOG_FLUSH:
		return "flush";
	case CRASHLOG_RESET:
		return "reset";
	case CRASHLOG_FINISH:
		return "finish";
	case CRASHLOG_FLUSH_DONE:
		return "flush end";
	case CRASHLOG_FLUSH_FAILED:
		return "failed flush end";
	default:
		return "?";
	}
}

/*
 * Replay onto a fresh copy of the base: a write below the barrier always,
 * one in the window if a reset or finish settled it or its stream keeps
 * it; zone operations always. The writes go through zdev, so the emulator
 * checks each against its zone's write pointer: a replay it refuses means
 * the log is not this base's history.
 */
int crash_build(const struct crash_log *log, const char *base,
		const char *out, uint32_t idx, const uint32_t *keep, char *err,
		size_t errlen)
{
	const struct crash_log_info *in = &log->info;
	const struct zdev_geom *g;
	const struct crash_pt *p;
	struct zdev *dev = NULL;
	struct crash_win w;
	uint64_t r;
	uint32_t s;
	void *buf = NULL;
	int ret;

	if (idx >= in->nr_points)
		return -EINVAL;
	p = &log->pts[idx];
	ret = crash_win_build(log, p, &w);
	if (ret)
		return ret;
	for (s = 0; keep && s < w.nr_streams; s++) {
		if (keep[s] > w.len[s]) {
			zutil_err(err, errlen,
				  "crash point %u: stream %u has %u writes, cannot keep %u",
				  idx, s, w.len[s], keep[s]);
			ret = -EINVAL;
			goto out_win;
		}
	}
	ret = crash_copy_sparse(base, out);
	if (ret) {
		zutil_err(err, errlen, "copying %s to %s: %s", base, out,
			  strerror(-ret));
		goto out_win;
	}
	ret = zdev_open(out, ZDEV_EXCL | ZDEV_NORECORD, &dev, err, errlen);
	if (ret)
		goto out_win;
	g = zdev_geom(dev);
	if (g->size != in->dev_size || g->zone_size != in->zone_size ||
	    g->nr_zones != in->nr_zones || g->block_size != in->block_size ||
	    g->nr_conv != in->nr_conv) {
		zutil_err(err, errlen,
			  "%s: its geometry is not the recorded device's: not the recording's base image",
			  base);
		ret = -EINVAL;
		goto out_close;
	}
	buf = zdev_buf_alloc(dev, ZF_MAX(g->max_io, g->zone_size));
	if (!buf) {
		ret = -ENOMEM;
		goto out_close;
	}
	for (r = 0; r < p->rec; r++) {
		const struct crash_rec *c = &log->recs[r];

		switch (c->type) {
		case CRASHLOG_WRITE:
			if (r >= w.first) {
				uint32_t st = w.stream[r - w.first];

				if (st != CRASH_SETTLED &&
				    w.pos[r - w.first] >= (keep ? keep[st] :
								  w.len[st]))
					continue;
			}
			memcpy(buf, log->map + c->data, c->len);
			ret = zdev_write(dev, buf, c->len, c->off);
			break;
		case CRASHLOG_RESET:
			ret = zdev_reset(dev, c->zone);
			break;
		case CRASHLOG_FINISH:
			ret = zdev_finish(dev, c->zone);
			break;
		default:
			continue;
		}
		if (ret) {
			zutil_err(err, errlen,
				  "%s: replaying record %" PRIu64 " (%s of zone %u at %" PRIu64
				  ", %u bytes) failed: %s; is %s the recording's base image?",
				  out, r, crash_type_name(c->type), c->zone,
				  c->off, c->len, strerror(-ret), base);
			ret = -EUCLEAN;
			goto out_close;
		}
	}
	ret = zdev_flush(dev);
	if (ret)
		zutil_err(err, errlen, "%s: flush: %s", out, strerror(-ret));
out_close:
	free(buf);
	zdev_close(dev);
out_win:
	crash_win_free(&w);
	return ret;
}

/* ---- describing -------------------------------------------------------------- */

static const char *crash_kind_name(enum crash_point_kind kind)
{
	switch (kind) {
	case CRASH_AT_START:
		return "before anything";
	case CRASH_AT_FLUSH:
		return "before a flush";
	case CRASH_AT_FLUSH_DONE:
		return "while a flush runs";
	case CRASH_AT_RESET:
		return "before a reset";
	case CRASH_AT_FINISH:
		return "before a finish";
	default:
		return "at the end";
	}
}

int crash_state_str(const struct crash_log *log, uint32_t idx,
		    const uint32_t *keep, char *buf, size_t size)
{
	const struct crash_pt *p;
	struct crash_win w;
	size_t n = 0;
	uint32_t s;
	int ret;

#define CRASH_PUT(...)                                                         \
	do {                                                                   \
		int m_ = snprintf(buf + ZF_MIN(n, size),                       \
				  size - ZF_MIN(n, size), __VA_ARGS__);        \
		if (m_ > 0)                                                    \
			n += (size_t)m_;                                       \
	} while (0)

	if (!size)
		buf = NULL;
	if (idx >= log->info.nr_points)
		return snprintf(buf, size, "crash point %u: no such point",
				idx);
	p = &log->pts[idx];
	ret = crash_win_build(log, p, &w);
	if (ret)
		return snprintf(buf, size, "crash point %u: %s", idx,
				strerror(-ret));
	CRASH_PUT("crash point %u (%s, before record %" PRIu64
		  "): durable below record %" PRIu64,
		  idx, crash_kind_name(p->kind), p->rec, p->durable);
	if (!w.nr_streams)
		CRASH_PUT(", no write can be lost");
	for (s = 0; s < w.nr_streams; s++) {
		uint32_t k = keep ? keep[s] : w.len[s];

		if (s == 8) {
			CRASH_PUT(", ... (%u streams)", w.nr_streams);
			break;
		}
		CRASH_PUT("%s %szone %u (from record %" PRIu64
			  ") keeps %u of %u writes",
			  s ? "," : ";", log->zone_seq[w.zone[s]] ? "" : "conv ",
			  w.zone[s], w.first_rec[s], k, w.len[s]);
	}
#undef CRASH_PUT
	crash_win_free(&w);
	return (int)ZF_MIN(n, (size_t)INT32_MAX);
}

int crash_keep_str(const struct crash_log *log, uint32_t idx,
		   const uint32_t *keep, char *buf, size_t size)
{
	struct crash_point pt;
	size_t n = 0;
	uint32_t s;
	int ret;

	ret = crash_point(log, idx, &pt);
	if (ret)
		return ret;
	if (!pt.nr_streams)
		return snprintf(buf, size, "-");
	if (size)
		buf[0] = '\0';
	for (s = 0; s < pt.nr_streams; s++) {
		int m = snprintf(buf + ZF_MIN(n, size), size - ZF_MIN(n, size),
				 "%s%u", s ? "." : "", keep[s]);

		if (m > 0)
			n += (size_t)m;
	}
	return (int)n;
}

int crash_keep_parse(const struct crash_log *log, uint32_t idx,
		     const char *str, uint32_t *keep)
{
	struct crash_win w;
	const char *p = str;
	uint32_t s;
	int ret;

	if (idx >= log->info.nr_points)
		return -EINVAL;
	ret = crash_win_build(log, &log->pts[idx], &w);
	if (ret)
		return ret;
	ret = -EINVAL;
	if (!w.nr_streams) {
		if (!strcmp(str, "-") || !*str)
			ret = 0;
		goto out_win;
	}
	for (s = 0; s < w.nr_streams; s++) {
		char *end;
		unsigned long v;

		if (*p < '0' || *p > '9')
			goto out_win;
		v = strtoul(p, &end, 10);
		if (v > w.len[s])
			goto out_win;
		keep[s] = (uint32_t)v;
		p = end;
		if (s + 1 < w.nr_streams && *p++ != '.')
			goto out_win;
	}
	if (!*p)
		ret = 0;
out_win:
	crash_win_free(&w);
	return ret;
}
