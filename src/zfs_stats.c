// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What the file system reports about itself: statfs, the stats (space,
 * zone states and wear, the journal's and the device's counters) and
 * their JSON, a file's extents as text, and reclaim on demand (the
 * tests call it).
 *
 * Apart from zfs.c because they read the state and change nothing in it;
 * zfs_reclaim_now() only hands the work to alloc.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "zfs_i.h"
#include "zonefuse/crc32c.h"
#include "zonefuse/util.h"
#include "zonefuse/zjson.h"

/* ---- statistics ------------------------------------------------------------------------------------- */

int zfs_statfs(struct zfs *fs, struct statvfs *st)
{
	uint64_t cap, free, used, recl;

	alloc_space(fs, &cap, &free, &used, &recl);
	memset(st, 0, sizeof(*st));
	st->f_bsize = 4096;
	st->f_frsize = 4096;
	st->f_blocks = cap / 4096;
	st->f_bfree = ZF_MIN(free, cap) / 4096;
	st->f_bavail = st->f_bfree;
	zlock_rd(&fs->meta_lock, ZLOCK_META);
	/* No inode table to run out of: each new file costs a block or so. */
	st->f_ffree = st->f_bfree;
	st->f_files = fs->m.nr_inodes + st->f_ffree;
	zlock_unrw(&fs->meta_lock);
	st->f_favail = st->f_ffree;
	st->f_namemax = ZF_NAME_MAX;
	st->f_fsid = le64toh(*(uint64_t *)fs->sb.uuid);
	if (fs->rdonly || fs->error)
		st->f_flag |= ST_RDONLY;
	return 0;
}

int zfs_get_stats(struct zfs *fs, struct zfs_stats *s)
{
	struct zdev_stats ds;
	struct jrnl_stats js;
	const char *tr;
	uint64_t sum = 0, n = 0;
	uint32_t i;

	memset(s, 0, sizeof(*s));
	memcpy(s->uuid, fs->sb.uuid, sizeof(s->uuid));
	memcpy(s->label, fs->sb.label, ZF_MIN(sizeof(fs->sb.label), sizeof(s->label) - 1));
	alloc_space(fs, &s->capacity_bytes, &s->free_bytes, &s->used_bytes,
		    &s->reclaimable_bytes);
	jrnl_get_stats(fs->j, &js);
	zdev_get_stats(fs->dev, &ds);
	zlock_rd(&fs->meta_lock, ZLOCK_META);
	s->files = fs->m.nr_files;
	s->directories = fs->m.nr_dirs;
	zlock_mutex(&fs->alloc_lock, ZLOCK_ALLOC);
	s->zones_total = fs->m.nr_zones;
	s->resets_min = UINT64_MAX;
	for (i = 0; i < fs->m.nr_zones; i++) {
		struct zm_zone *z = &fs->m.zones[i];

		switch (z->state) {
		case ZM_ZONE_SUPER:
			s->zones_super++;
			s->meta_resets_max = ZF_MAX(s->meta_resets_max, z->resets);
			continue;
		case ZM_ZONE_META:
			/*
			 * The journal's zones come from the pool but are not
			 * reset while it uses them: count them with the
			 * metadata, not in the data zones' wear.
			 */
			s->zones_meta++;
			s->meta_resets_max = ZF_MAX(s->meta_resets_max, z->resets);
			continue;
		case ZM_ZONE_BAD:
			s->zones_bad++;
			continue;
		default:
			if (z->wp == z->start)
				s->zones_empty++;
			else if (z->wp >= z->start + z->cap)
				s->zones_full++;
			else if (z->flags & ZFS_ZF_HEAD)
				s->zones_open++;
			else
				s->zones_closed++;
			break;
		}
		/* Data and chain zones share the pool: their wear counts. */
		sum += z->resets;
		n++;
		s->resets_min = ZF_MIN(s->resets_min, z->resets);
		s->resets_max = ZF_MAX(s->resets_max, z->resets);
	}
	/*
	 * Slots held: the data zones counted active, the journal's chain's,
	 * and the super zone's while it keeps one (or writes an anchor).
	 */
	s->active_zones = fs->nr_active + (fs->rdonly ? 0 : fs->jrnl_slots) +
			  (!fs->rdonly && (fs->super_slot || fs->super_busy));
	zlock_unmutex(&fs->alloc_lock);
	s->host_bytes_written = fs->base_host_bytes + fs->host_bytes;
	zlock_unrw(&fs->meta_lock);
	if (!n)
		s->resets_min = 0;
	s->resets_total = sum;
	s->resets_mean = n ? (double)sum / (double)n : 0;
	s->meta_zones = s->zones_meta + s->zones_super;
	s->open_zones = s->zones_open;
	s->snap_seq = js.snap_seq;
	s->last_seq = jrnl_last_seq(fs->j);
	s->durable_seq = jrnl_durable_seq(fs->j);
	s->device_bytes_written = fs->base_device_bytes + ds.bytes_written;
	s->gc_bytes_written = fs->base_gc_bytes + fs->gc_bytes;
	s->meta_bytes_written = fs->base_meta_bytes + js.meta_bytes;
	s->device_bytes_read = ds.bytes_read;
	s->checksum_errors = atomic_load(&fs->csum_errors);
	s->checksums_at_write = atomic_load(&fs->csum_at_write);
	s->checksums_at_writeback = atomic_load(&fs->csum_at_writeback);
	s->writes_sent_at_once = atomic_load(&fs->sent_at_once);
	s->fsyncs = atomic_load(&fs->fsyncs);
	s->fsync_ns = atomic_load(&fs->fsync_ns);
	s->fsync_data_ns = atomic_load(&fs->fsync_data_ns);
	s->space_stall_ns = atomic_load(&fs->space_stall_ns);
	s->gc_bytes_by_writers = atomic_load(&fs->gc_bytes_by_writers);
	s->journal_commits = js.commits;
	s->journal_commit_ns = js.commit_ns;
	s->journal_flush_ns = js.flush_ns;
	s->journal_flushes = js.flushes;
	s->journal_unflushed_commits = js.unflushed_commits;
	s->journal_wait_ns = js.wait_ns;
	s->journal_rolls = js.rolls;
	s->journal_roll_ns = js.roll_ns;
	s->journal_roll_max_ns = js.roll_max_ns;
	s->journal_snapshot_stop_max_ns = js.snap_stop_max_ns;
	s->journal_snapshot_bytes = js.snap_bytes;
	s->write_amplification =
		s->host_bytes_written ?
			(double)s->device_bytes_written /
				(double)s->host_bytes_written :
			-1;
	s->max_open = zdev_geom(fs->dev)->max_open;
	s->max_active = zdev_geom(fs->dev)->max_active;
	s->super_zone[0] = js.super_zone[0];
	s->super_zone[1] = js.super_zone[1];
	s->nr_chain = ZF_MAX(js.chain_zones,
			     jrnl_chain(fs->j, 0, s->chain, ZFS_STATS_CHAIN));
	s->metadata_copies =
		jrnl_chain(fs->j, 1, s->mirror_chain, ZFS_STATS_CHAIN) ? 2 : 1;
	s->read_only = fs->rdonly || fs->error;
	s->error = fs->error;
	tr = atomic_load(&fs->transport);
	snprintf(s->transport, sizeof(s->transport), "%s", tr ? tr : "none");
	snprintf(s->checksum_impl, sizeof(s->checksum_impl), "%s",
		 crc32c_impl() == CRC32C_SSE42 ? "sse4.2" : "tables");
	return 0;
}

void zfs_set_transport(struct zfs *fs, const char *name)
{
	atomic_store(&fs->transport, name);
}

/*
 * The stats as one JSON object: `zonefuse stat --json` and the stats
 * xattr. The members the hand-written output had keep their order
 * (scripts read them), after the identity (uuid, label); jansson writes
 * the reals with the digits they need (1.0 rather than 1.0000).
 */
int zfs_stats_json(const struct zfs_stats *s, char *buf, size_t size)
{
	uint32_t nchain = ZF_MIN(s->nr_chain, ZFS_STATS_CHAIN);
	json_t *o = json_object();
	int ret = -ENOMEM;
	char uuid[37];

	if (!o)
		return -ENOMEM;
	if (zjson_set_str(o, "uuid", zutil_uuid_str(s->uuid, uuid)) ||
	    zjson_set_str(o, "label", s->label) ||
	    zjson_set_u64(o, "capacity_bytes", s->capacity_bytes) ||
	    zjson_set_u64(o, "used_bytes", s->used_bytes) ||
	    zjson_set_u64(o, "free_bytes", s->free_bytes) ||
	    zjson_set_u64(o, "reclaimable_bytes", s->reclaimable_bytes) ||
	    zjson_set_u64(o, "files", s->files) ||
	    zjson_set_u64(o, "directories", s->directories) ||
	    zjson_set_u64(o, "zones_total", s->zones_total) ||
	    zjson_set_u64(o, "zones_empty", s->zones_empty) ||
	    zjson_set_u64(o, "zones_open", s->zones_open) ||
	    zjson_set_u64(o, "zones_closed", s->zones_closed) ||
	    zjson_set_u64(o, "zones_full", s->zones_full) ||
	    zjson_set_u64(o, "meta_zones", s->meta_zones) ||
	    zjson_set_u64(o, "zones_bad", s->zones_bad) ||
	    zjson_set_u64(o, "snapshot_seq", s->snap_seq) ||
	    zjson_set_u64(o, "last_seq", s->last_seq) ||
	    zjson_set_u64(o, "host_bytes_written", s->host_bytes_written) ||
	    zjson_set_u64(o, "device_bytes_written", s->device_bytes_written) ||
	    zjson_set_u64(o, "gc_bytes_written", s->gc_bytes_written) ||
	    zjson_set_u64(o, "meta_bytes_written", s->meta_bytes_written) ||
	    zjson_set_u64(o, "device_bytes_read", s->device_bytes_read) ||
	    zjson_set_u64(o, "checksum_errors", s->checksum_errors) ||
	    zjson_set_u64(o, "checksums_at_write", s->checksums_at_write) ||
	    zjson_set_u64(o, "checksums_at_writeback",
			  s->checksums_at_writeback) ||
	    zjson_set_u64(o, "writes_sent_at_once", s->writes_sent_at_once) ||
	    zjson_set_u64(o, "fsyncs", s->fsyncs) ||
	    zjson_set_u64(o, "fsync_ns", s->fsync_ns) ||
	    zjson_set_u64(o, "fsync_data_ns", s->fsync_data_ns) ||
	    zjson_set_u64(o, "journal_commits", s->journal_commits) ||
	    zjson_set_u64(o, "journal_commit_ns", s->journal_commit_ns) ||
	    zjson_set_u64(o, "journal_flush_ns", s->journal_flush_ns) ||
	    zjson_set_u64(o, "journal_flushes", s->journal_flushes) ||
	    zjson_set_u64(o, "journal_unflushed_commits",
			  s->journal_unflushed_commits) ||
	    zjson_set_u64(o, "journal_wait_ns", s->journal_wait_ns) ||
	    zjson_set_u64(o, "journal_rolls", s->journal_rolls) ||
	    zjson_set_u64(o, "journal_roll_ns", s->journal_roll_ns) ||
	    zjson_set_u64(o, "journal_roll_max_ns", s->journal_roll_max_ns) ||
	    zjson_set_u64(o, "journal_snapshot_stop_max_ns",
			  s->journal_snapshot_stop_max_ns) ||
	    zjson_set_u64(o, "journal_snapshot_bytes",
			  s->journal_snapshot_bytes) ||
	    zjson_set_u64(o, "space_stall_ns", s->space_stall_ns) ||
	    zjson_set_u64(o, "gc_bytes_by_writers", s->gc_bytes_by_writers))
		goto out_put;
	if (s->write_amplification < 0 ?
		    json_object_set_new(o, "write_amplification", json_null()) :
		    zjson_set_real(o, "write_amplification",
				   s->write_amplification, 4))
		goto out_put;
	if (zjson_set_u64(o, "resets_total", s->resets_total) ||
	    zjson_set_u64(o, "resets_min", s->resets_min) ||
	    zjson_set_u64(o, "resets_max", s->resets_max) ||
	    zjson_set_real(o, "resets_mean", s->resets_mean, 3) ||
	    zjson_set_u64(o, "resets_spread", s->resets_max - s->resets_min) ||
	    zjson_set_u64(o, "meta_resets_max", s->meta_resets_max) ||
	    zjson_set_u64(o, "open_zones", s->open_zones) ||
	    zjson_set_u64(o, "active_zones", s->active_zones) ||
	    zjson_set_u64(o, "max_open", s->max_open) ||
	    zjson_set_u64(o, "max_active", s->max_active) ||
	    zjson_set_u32s(o, "super_zones", s->super_zone, 2) ||
	    zjson_set_u32s(o, "chain_zones", s->chain, nchain) ||
	    zjson_set_u64(o, "chain_length", s->nr_chain) ||
	    zjson_set_u64(o, "metadata_copies", s->metadata_copies) ||
	    zjson_set_u32s(o, "mirror_zones", s->mirror_chain,
			   s->metadata_copies > 1 ? nchain : 0) ||
	    json_object_set_new(o, "read_only", json_boolean(s->read_only)) ||
	    zjson_set_str(o, "transport", s->transport) ||
	    zjson_set_str(o, "checksum_impl", s->checksum_impl))
		goto out_put;
	ret = (int)zjson_dumpb(o, buf, size);
out_put:
	json_decref(o);
	return ret;
}

int zfs_extents_each(struct zfs *fs, uint64_t ino,
		     int (*fn)(void *arg, const struct zfs_extent *e),
		     void *arg)
{
	struct zm_inode *in;
	int ret = 0;
	uint32_t k;

	zlock_rd(&fs->meta_lock, ZLOCK_META);
	in = zm_iget(&fs->m, ino);
	if (!in) {
		ret = -ENOENT;
		goto out_unlock;
	}
	if (!zm_is_reg(in))
		goto out_unlock;
	if (in->rt)
		zlock_rd(&((struct zfs_rt *)in->rt)->lock, ZLOCK_RT);
	for (k = 0; !ret && k < in->f.n_ext; k++) {
		const struct zm_extent *e = &in->f.ext[k];
		struct zfs_extent x = { .zone = zm_zone_of(&fs->m, e->addr),
					.len = e->len,
					.foff = e->foff };

		x.offset = e->addr - fs->m.zones[x.zone].start;
		ret = fn(arg, &x);
	}
	if (in->rt)
		zlock_unrw(&((struct zfs_rt *)in->rt)->lock);
out_unlock:
	zlock_unrw(&fs->meta_lock);
	return ret;
}

struct zfs_extents_buf {
	char *buf;
	size_t size, off;
};

static int zfs_extent_line(void *arg, const struct zfs_extent *e)
{
	struct zfs_extents_buf *b = arg;
	int n = snprintf(b->buf + b->off, b->size - b->off,
			 "zone %u offset %" PRIu64 " length %" PRIu64
			 " file_offset %" PRIu64 "\n",
			 e->zone, e->offset, e->len, e->foff);

	if (n < 0 || (size_t)n >= b->size - b->off)
		return -E2BIG;
	b->off += (size_t)n;
	return 0;
}

ssize_t zfs_extents_text(struct zfs *fs, uint64_t ino, char *buf, size_t size)
{
	struct zfs_extents_buf b = { .buf = buf, .size = size };
	int ret = zfs_extents_each(fs, ino, zfs_extent_line, &b);

	return ret ? ret : (ssize_t)b.off;
}

int zfs_reclaim_now(struct zfs *fs)
{
	return alloc_reclaim(fs);
}
