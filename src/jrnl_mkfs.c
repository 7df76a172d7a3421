// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A new metadata journal: the zone geometry every open starts from
 * (jrnl_zones_init()), and mkfs: the two super zones and their
 * superblocks, the first chain holding a snapshot of the root, and the
 * anchor that names it (jrnl_mkfs()).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "jrnl_i.h"
#include "zonefuse/util.h"

#define JRNL_MAX_ANCHORS 1024u

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
	/*
	 * Chain generations start at a random value: a conventional zone
	 * keeps old records when reused, and an old file system's records
	 * must never match this one's generation. Not taken from the UUID,
	 * which mkfs --uuid may give the same as the old file system's.
	 */
	if (getrandom(&j->gen, sizeof(j->gen), 0) != sizeof(j->gen) ||
	    (!p->uuid &&
	     getrandom(sb->uuid, sizeof(sb->uuid), 0) != sizeof(sb->uuid))) {
		ret = -EIO;
		zutil_err(err, errlen, "cannot get random bytes for the UUID");
		goto out_free;
	}
	if (p->uuid) {
		memcpy(sb->uuid, p->uuid, sizeof(sb->uuid));
	} else {
		sb->uuid[6] = (uint8_t)((sb->uuid[6] & 0x0f) | 0x40); /* v4 */
		sb->uuid[8] = (uint8_t)((sb->uuid[8] & 0x3f) | 0x80);
	}
	if (p->label)
		strncpy(sb->label, p->label, sizeof(sb->label) - 1);
	sb->dev_size = htole64(g->size);
	sb->zone_size = htole64(g->zone_size);
	sb->nr_zones = htole32(g->nr_zones);
	sb->nr_conv = htole32(g->nr_conv);
	sb->block_size = htole32(g->block_size);
	sb->reserve_zones = htole32(p->reserve_zones);
	if (p->mirror)
		sb->feat_incompat = htole64(ZF_FEATURE_INCOMPAT_MIRROR);
	j->mirror = p->mirror;
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

	/* The first chain: a snapshot of the root, then the anchor. */
	{
		struct jrnl_snap s = { .j = j };
		uint32_t head, mhead;

		ret = zm_snap_encode(m, jrnl_snap_emit, &s);
		/* A new file system is a cleanly unmounted one. */
		if (!ret)
			ret = jrnl_snap_emit(&s, ZF_REC_UNMOUNT, NULL, 0);
		if (!ret)
			ret = jrnl_alloc_zones(j, &head, &mhead);
		if (!ret)
			ret = jrnl_start_zone(j, head, mhead, 0, ZF_NO_ZONE,
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
