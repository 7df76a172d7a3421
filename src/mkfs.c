// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * mkfs: reset what the device holds, then write a new file system through
 * the journal (which writes the superblocks, the first snapshot holding
 * the root directory, and the anchor naming it).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "zfs_i.h"
#include "zonefuse/fsprobe.h"
#include "zonefuse/jrnl.h"
#include "zonefuse/util.h"
#include "zonefuse/zfs.h"

static int mkfs_root(struct zmeta *m)
{
	struct zf_rec_create rec;
	int64_t now = zutil_now_real_ns();
	char why[128];

	memset(&rec, 0, sizeof(rec));
	rec.parent = 0;
	rec.attr.ino = htole64(ZF_ROOT_INO);
	rec.attr.mode = htole32(0040755);
	rec.attr.uid = htole32((uint32_t)getuid());
	rec.attr.gid = htole32((uint32_t)getgid());
	rec.attr.atime = rec.attr.mtime = rec.attr.ctime = rec.attr.btime =
		(int64_t)htole64((uint64_t)now);
	return zm_apply(m, ZF_REC_CREATE, &rec, sizeof(rec), 0, why,
			sizeof(why));
}

/* Reset every sequential zone that is not empty. */
static int mkfs_reset(struct zdev *dev, const struct zfs_mkfs_opts *o,
		      char *err, size_t errlen)
{
	const struct zdev_geom *g = zdev_geom(dev);
	struct zdev_zone z;
	uint32_t i;
	int ret;

	for (i = 0; i < g->nr_zones; i++) {
		if (o->progress && (i % 64 == 0 || i + 1 == g->nr_zones))
			o->progress(o->arg, i + 1, g->nr_zones);
		ret = zdev_report(dev, i, 1, &z);
		if (ret != 1) {
			ret = ret < 0 ? ret : -EIO;
			zutil_err(err, errlen, "%s: zone report failed: %s",
				  zdev_path(dev), strerror(-ret));
			return ret;
		}
		if (z.type != ZDEV_ZONE_SEQ || z.cond == ZDEV_COND_EMPTY ||
		    z.cond == ZDEV_COND_READONLY || z.cond == ZDEV_COND_OFFLINE)
			continue;
		ret = zdev_reset(dev, i);
		if (ret) {
			zutil_err(err, errlen, "%s: reset of zone %u failed: %s",
				  zdev_path(dev), i, strerror(-ret));
			return ret;
		}
	}
	return 0;
}

/*
 * Another file system's signature on the device: refuse it (-EEXIST)
 * naming what it is, as mkfs.ext4 does; with --force, erase those in
 * conventional zones (the reset that follows clears the others), so that
 * blkid and mount(8) do not find the old file system beside the new.
 * With --force a device that cannot be probed is made anyway.
 */
static int mkfs_check_others(struct zdev *dev, const struct zfs_mkfs_opts *o,
			     char *err, size_t errlen)
{
	struct fsprobe_sig sigs[FSPROBE_MAX];
	char what[256];
	size_t at;
	int n, i;

	n = fsprobe_scan(dev, o->force, sigs, FSPROBE_MAX, err, errlen);
	if (n < 0 && o->force) {
		err[0] = '\0';
		return 0;
	}
	if (n <= 0)
		return n;
	if (o->force)
		return 0;
	at = (size_t)snprintf(err, errlen, "%s holds ", zdev_path(dev));
	for (i = 0; i < n && at < errlen; i++)
		at += (size_t)snprintf(err + at, errlen - at, "%s%s",
				       i == 0 ? "" : i + 1 < n ? ", " : " and ",
				       fsprobe_describe(&sigs[i], what,
							sizeof(what)));
	if (at < errlen)
		snprintf(err + at, errlen - at, "; use --force to overwrite %s",
			 n > 1 ? "them" : "it");
	return -EEXIST;
}

/*
 * Two copies of the metadata chain unless the device's limits leave no zone
 * for data beside them: one bad block of metadata then costs nothing.
 */
static unsigned int mkfs_default_copies(const struct zdev_geom *g)
{
	bool tight = (g->max_active && g->max_active < 3) ||
		     (g->max_open && g->max_open < 3);

	return tight ? 1 : 2;
}

int zfs_mkfs(const char *path, const struct zfs_mkfs_opts *o,
	     struct zfs_mkfs_info *info, char *err, size_t errlen)
{
	struct jrnl_mkfs_params jp = { 0 };
	const struct zdev_geom *g;
	struct zf_super sb;
	struct zdev *dev;
	struct zmeta m;
	uint32_t i, usable = 0, copies;
	uint64_t cap = 0, ucap = 0;
	char e2[256];
	int ret;

	ret = zdev_open(path, ZDEV_EXCL | (o->wait_busy ? ZDEV_WAIT : 0), &dev,
			err, errlen);
	if (ret)
		return ret;
	g = zdev_geom(dev);
	if (o->label) {
		ret = zfs_label_check(o->label, err, errlen);
		if (ret)
			goto out_close;
	}
	if (o->copies > 2) {
		zutil_err(err, errlen,
			  "--metadata-copies %u: zonefuse keeps 1 or 2 copies of the metadata",
			  o->copies);
		ret = -EINVAL;
		goto out_close;
	}
	copies = o->copies ? o->copies : mkfs_default_copies(g);
	ret = alloc_check_limits(dev, copies, err, errlen);
	if (ret)
		goto out_close;
	ret = jrnl_read_super(dev, &sb, e2, sizeof(e2));
	if (ret != -EMEDIUMTYPE && !o->force) {
		zutil_err(err, errlen,
			  "%s already holds a zonefuse file system%s%s (or a damaged one); use --force to overwrite it",
			  path, sb.label[0] && !ret ? " labelled " : "",
			  sb.label[0] && !ret ? sb.label : "");
		ret = -EEXIST;
		goto out_close;
	}

	/* Zones big enough to hold the journal and data. */
	ret = jrnl_zones_init(dev, &m, err, errlen);
	if (ret)
		goto out_close;
	for (i = 0; i < m.nr_zones; i++) {
		if (m.zones[i].state == ZM_ZONE_BAD ||
		    m.zones[i].cap < JRNL_MIN_ZONE_CAP)
			continue;
		if (!cap && m.zones[i].type == ZDEV_ZONE_SEQ)
			cap = m.zones[i].cap;
		usable++;
		ucap += m.zones[i].cap;
	}
	for (i = 0; !cap && i < m.nr_zones; i++)
		if (m.zones[i].state != ZM_ZONE_BAD)
			cap = m.zones[i].cap;
	zm_destroy(&m);
	jp.reserve_zones = o->reserve_pct < 0 ?
				   ZF_MAX(ZFS_MIN_RESERVE, ZF_DIV_ROUND_UP(usable, 100)) :
				   ZF_MAX(ZFS_MIN_RESERVE,
					  ZF_DIV_ROUND_UP(usable * (uint32_t)o->reserve_pct, 100));
	if (usable < ZFS_MIN_ZONES || usable < jp.reserve_zones + 4 + copies) {
		zutil_err(err, errlen,
			  "%s: too small: %u usable zones of at least 1 MiB capacity, zonefuse needs %u (2 superblock zones, the journal's %u, %u reserved, data)",
			  path, usable,
			  ZF_MAX(ZFS_MIN_ZONES, jp.reserve_zones + 4 + copies),
			  copies, jp.reserve_zones);
		ret = -ENOSPC;
		goto out_close;
	}

	ret = mkfs_check_others(dev, o, err, errlen);
	if (ret)
		goto out_close;
	ret = mkfs_reset(dev, o, err, errlen);
	if (ret)
		goto out_close;
	ret = jrnl_zones_init(dev, &m, err, errlen);
	if (ret)
		goto out_close;
	ret = mkfs_root(&m);
	if (ret) {
		zutil_err(err, errlen, "cannot make the root directory");
		goto out_meta;
	}
	jp.label = o->label;
	jp.uuid = o->uuid;
	jp.mirror = copies == 2;
	jp.time = zutil_now_real_ns();
	ret = jrnl_mkfs(dev, &jp, &m, &sb, err, errlen);
	if (ret)
		goto out_meta;
	ret = zdev_flush(dev);
	if (ret) {
		zutil_err(err, errlen, "%s: flush failed: %s", path,
			  strerror(-ret));
		goto out_meta;
	}
	if (info) {
		memset(info, 0, sizeof(*info));
		info->nr_zones = g->nr_zones;
		info->nr_conv = g->nr_conv;
		info->block_size = g->block_size;
		info->zone_size = g->zone_size;
		info->zone_capacity = cap;
		info->reserve_zones = jp.reserve_zones;
		/* Less the super zones, the journal's zones and the reserve. */
		info->usable_bytes =
			ucap - (uint64_t)(2 + copies + jp.reserve_zones) * cap;
		info->copies = copies;
		info->super_zone[0] = le32toh(sb.super_zone[0]);
		info->super_zone[1] = le32toh(sb.super_zone[1]);
		memcpy(info->uuid, sb.uuid, sizeof(info->uuid));
	}
out_meta:
	zm_destroy(&m);
out_close:
	zdev_close(dev);
	return ret;
}
