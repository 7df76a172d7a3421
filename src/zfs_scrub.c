// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Scrub: read every block of file data from the device and check it
 * against its checksum (meta_csum.c), so that damage is found before a
 * reader meets it, and said with the file, offset and zone.
 *
 * One file at a time, one piece (at most ZFS_CHUNK) at a time, each under
 * the locks a read takes: a mounted file system goes on around it, and a
 * file changed meanwhile is scrubbed as it is when each piece is read.
 * The same zfs_scrub_file() serves the offline walk (zfs_scrub_all(),
 * `zonefuse scrub DEVICE`, `fsck --data`) and the mounted one (the
 * user.zonefuse.scrub attribute the CLI reads file by file).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zfs_i.h"
#include "zonefuse/util.h"

/* Add the damaged block at file offset @foff to @r, joining its neighbour. */
static void zfs_scrub_note(struct zfs_scrub_file *r, uint64_t foff,
			   uint64_t len, uint32_t zone, bool unreadable)
{
	struct zfs_scrub_bad *last = r->nbad ? &r->bad[r->nbad - 1] : NULL;

	if (last && last->zone == zone && last->unreadable == unreadable &&
	    last->foff + last->len == foff) {
		last->len += len;
		return;
	}
	if (r->nbad == ZFS_SCRUB_BAD) {
		r->more = true;
		return;
	}
	r->bad[r->nbad++] = (struct zfs_scrub_bad){ foff, len, zone, unreadable };
}

/*
 * Check the @n bytes at device address @as (whole blocks) of extent @e,
 * read into @buf, or read again block by block when the device failed the
 * whole read.
 */
static void zfs_scrub_piece(struct zfs *fs, const struct zm_extent *e,
			    uint64_t as, char *buf, size_t n, bool failed,
			    struct zfs_scrub_file *r)
{
	uint32_t bs = fs->bs, zone = zm_zone_of(&fs->m, as);
	size_t off;
	uint64_t bad;

	for (off = 0; off < n; off += bs) {
		uint64_t a = as + off;
		uint64_t foff = e->foff + (a > e->addr ? a - e->addr : 0);
		bool unreadable = failed && zdev_read(fs->dev, buf + off, bs, a);

		if (unreadable ||
		    zm_csum_check(&fs->m, a, buf + off, bs, &bad)) {
			if (!unreadable)
				atomic_fetch_add(&fs->csum_errors, 1);
			zfs_scrub_note(r, foff, bs - (foff - ZF_ROUND_DOWN(foff, (uint64_t)bs)),
				       zone, unreadable);
		}
	}
}

int zfs_scrub_file(struct zfs *fs, uint64_t ino, struct zfs_scrub_file *r)
{
	static const struct zfs_ctx root = { 0 };
	uint32_t bs = fs->bs;
	uint64_t pos = 0;
	char *buf;
	int ret;

	memset(r, 0, sizeof(*r));
	zlock_rd(&fs->meta_lock, ZLOCK_META);
	{
		const struct zm_inode *in = zm_iget(&fs->m, ino);

		ret = !in ? -ENOENT : !zm_is_reg(in) ? -EISDIR : 0;
	}
	zlock_unrw(&fs->meta_lock);
	if (!ret)
		ret = zfs_open(fs, &root, ino, O_RDONLY, NULL);
	if (ret)
		return ret;
	buf = zdev_buf_alloc(fs->dev, ZFS_CHUNK);
	if (!buf) {
		zfs_release(fs, ino, 0);
		return -ENOMEM;
	}
	for (;;) {
		struct zm_inode *in;
		struct zfs_rt *rt;
		const struct zm_extent *e;
		uint64_t s, a, as, end;
		uint32_t k;
		size_t n;
		int rr;

		zlock_rd(&fs->meta_lock, ZLOCK_META);
		in = zm_iget(&fs->m, ino);
		rt = in ? in->rt : NULL;
		if (!rt) {
			zlock_unrw(&fs->meta_lock);
			break;
		}
		zlock_rd(&rt->lock, ZLOCK_RT);
		k = zm_extent_find(in, pos);
		if (k == in->f.n_ext) {
			zlock_unrw(&rt->lock);
			zlock_unrw(&fs->meta_lock);
			break;
		}
		e = &in->f.ext[k];
		s = ZF_MAX(e->foff, pos);
		a = e->addr + (s - e->foff);
		as = ZF_ROUND_DOWN(a, (uint64_t)bs);
		end = ZF_ROUND_UP(e->addr + e->len, (uint64_t)bs);
		n = (size_t)ZF_MIN(end - as, (uint64_t)ZFS_CHUNK);
		rr = zdev_read(fs->dev, buf, n, as);
		zfs_scrub_piece(fs, e, as, buf, n, rr != 0, r);
		r->bytes += n;
		pos = e->foff + (as + n - e->addr);
		zlock_unrw(&rt->lock);
		zlock_unrw(&fs->meta_lock);
	}
	free(buf);
	zfs_release(fs, ino, 0);
	return 0;
}

/*
 * A path to @ino, found from the root (depth first, under meta_lock):
 * damage is rare, so no reverse map is kept for it. "?" when @ino has no
 * name any more (unlinked while open, or removed since).
 */
static void zfs_scrub_path(struct zfs *fs, uint64_t ino, char *path,
			   size_t size)
{
	struct {
		uint64_t dir, after;
		size_t len;
	} stack[64];
	uint32_t depth = 0;
	size_t len = 0;

	snprintf(path, size, "?");
	zlock_rd(&fs->meta_lock, ZLOCK_META);
	stack[0].dir = ZF_ROOT_INO;
	stack[0].after = 0;
	stack[0].len = 0;
	for (;;) {
		struct zm_inode *d = zm_iget(&fs->m, stack[depth].dir), *c;
		struct zm_dent *de = d ? zm_dir_next(d, stack[depth].after) : NULL;

		if (!de) {
			if (!depth--)
				break;
			continue;
		}
		stack[depth].after = de->cookie;
		len = stack[depth].len;
		if (len + 1 + de->name_len + 1 > size)
			continue;
		path[len] = '/';
		memcpy(path + len + 1, de->name, de->name_len + 1u);
		if (de->ino == ino)
			goto out;
		c = zm_iget(&fs->m, de->ino);
		if (c && zm_is_dir(c) && depth + 1 < ZF_ARRAY_SIZE(stack)) {
			depth++;
			stack[depth].dir = c->ino;
			stack[depth].after = 0;
			stack[depth].len = len + 1 + de->name_len;
		}
	}
	snprintf(path, size, "?");
out:
	zlock_unrw(&fs->meta_lock);
}

int zfs_scrub_all(struct zfs *fs,
		  void (*found)(void *arg, const char *path, uint64_t ino,
				const struct zfs_scrub_file *r),
		  void (*progress)(void *arg, const struct zfs_scrub_total *t),
		  void *arg, struct zfs_scrub_total *tot)
{
	uint64_t *inos = NULL, n = 0, cap = 0, i;
	struct zfs_scrub_file *r;
	char path[4096];
	uint32_t b;
	int ret = 0;

	memset(tot, 0, sizeof(*tot));
	r = malloc(sizeof(*r));
	if (!r)
		return -ENOMEM;
	/* The files as they are now; each is looked up again when its turn comes. */
	zlock_rd(&fs->meta_lock, ZLOCK_META);
	for (b = 0; b <= fs->m.imask && !ret; b++) {
		const struct zm_inode *in;

		for (in = fs->m.itab[b]; in; in = in->hnext) {
			if (!zm_is_reg(in) || !in->f.n_ext)
				continue;
			if (n == cap) {
				uint64_t ncap = cap ? cap * 2 : 1024;
				uint64_t *ni = realloc(inos, ncap * sizeof(*ni));

				if (!ni) {
					ret = -ENOMEM;
					break;
				}
				inos = ni;
				cap = ncap;
			}
			inos[n++] = in->ino;
		}
	}
	zlock_unrw(&fs->meta_lock);
	tot->files_total = n;
	if (progress && !ret)
		progress(arg, tot);
	for (i = 0; i < n && !ret; i++) {
		ret = zfs_scrub_file(fs, inos[i], r);
		if (ret == -ENOENT) {
			ret = 0; /* deleted meanwhile */
			continue;
		}
		if (ret)
			break;
		tot->files++;
		tot->bytes += r->bytes;
		if (r->nbad) {
			tot->damaged_files++;
			tot->damaged_ranges += r->nbad;
			zfs_scrub_path(fs, inos[i], path, sizeof(path));
			if (found)
				found(arg, path, inos[i], r);
		}
		if (progress)
			progress(arg, tot);
	}
	free(inos);
	free(r);
	return ret;
}

/* ---- the metadata ---------------------------------------------------------------------------------- */

void zfs_scrub_meta_say(const struct jrnl_scrub_pass *p,
			void (*say)(void *arg, const char *line), void *arg)
{
	const struct jrnl_replay_info *ri = &p->info;
	char line[sizeof(ri->stop) + 128]; /* the longest says ri->stop whole */

	if (p->read_err) {
		snprintf(line, sizeof(line),
			 "the metadata does not read back from the device (%s): the next mount would refuse it",
			 p->err);
		say(arg, line);
		return;
	}
	if (ri->super_damaged) {
		snprintf(line, sizeof(line), "%s is damaged (the other copy holds)",
			 ri->super_bad);
		say(arg, line);
	}
	if (ri->anchor_damaged) {
		snprintf(line, sizeof(line), "%s is damaged (%s)", ri->anchor_bad,
			 ri->anchor_scanned ? "the chain it named was found by its head zone" :
					      "a valid anchor names the metadata");
		say(arg, line);
	}
	if (ri->super_unwritable) {
		snprintf(line, sizeof(line),
			 "super zone %u could not be written: one copy of the superblock and anchors",
			 ri->super_unwritable_zone);
		say(arg, line);
	}
	if (ri->copy_damaged) {
		snprintf(line, sizeof(line),
			 "%s is damaged (%u block%s of one copy; the other copy holds)",
			 ri->copy_bad, ri->copy_bad_count,
			 ri->copy_bad_count > 1 ? "s" : "");
		say(arg, line);
	}
	if (ri->damaged) {
		snprintf(line, sizeof(line),
			 "the journal is damaged in every copy: it reads back only up to %s",
			 ri->stop);
		say(arg, line);
	}
	if (p->short_log) {
		snprintf(line, sizeof(line),
			 "the journal reads back to record %" PRIu64 ", but records up to %" PRIu64 " were made durable: the next mount would not see them",
			 ri->last_seq, p->durable_seq);
		say(arg, line);
	}
}

static void zfs_scrub_meta_log(void *arg, const char *line)
{
	zlog_warn("%s: scrub: %s", (const char *)arg, line);
}

/*
 * The repair is the journal's roll, asked of it only when something was
 * found: the metadata in memory is what every copy must hold, so writing
 * it anew mends damage of any extent (jrnl_scrub.c says why). Every
 * finding goes to the log, with what became of it, for the operator who
 * did not run the scrub.
 */
int zfs_scrub_meta(struct zfs *fs, bool repair, struct jrnl_scrub *r)
{
	const char *path = zdev_path(fs->dev);
	int ret;

	ret = jrnl_scrub(fs->j, repair, r);
	if (ret) {
		zlog_err("%s: scrub: reading the metadata back failed: %s", path,
			 strerror(-ret));
		return ret;
	}
	if (!r->pass[0].damage)
		return 0;
	zfs_scrub_meta_say(&r->pass[0], zfs_scrub_meta_log, (void *)path);
	if (!r->rewritten) {
		zlog_warn("%s: scrub: the damaged metadata was not rewritten (%s): unmount and run `zonefuse fsck --repair %s`",
			  path, strerror(-r->rewrite_err), path);
		return 0;
	}
	if (r->pass[1].damage) {
		zlog_err("%s: scrub: the metadata was written anew from memory, but reading it back still finds damage (below): the device may be failing; copy the files out",
			 path);
		zfs_scrub_meta_say(&r->pass[1], zfs_scrub_meta_log, (void *)path);
		return 0;
	}
	zlog_warn("%s: scrub: the metadata was written anew from memory, every copy, and reads back whole",
		  path);
	return 0;
}
