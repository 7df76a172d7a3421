// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The checksums of file data: one CRC32C per device block, kept per zone
 * (struct zm_zone.csum) and set by the records that map the blocks.
 *
 * Keyed by device block rather than by extent, because extents split and
 * move (an overwrite remaps part of one, reclaim copies blocks whole to
 * another zone) while a block's bytes never change until its zone is
 * reset: a checksum set once stays right for as long as anything maps the
 * block. Per block rather than per larger unit, so that a 4 KiB read
 * checks what it read and nothing more. It costs 4 bytes of DRAM per 4 KiB
 * block written (0.1 %), in the snapshot and in each EXTENT record.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "meta_i.h"
#include "zonefuse/crc32c.h"
#include "zonefuse/util.h"

int zm_csum_room(struct zmeta *m, uint32_t zone)
{
	struct zm_zone *z = &m->zones[zone];

	if (z->csum)
		return 0;
	z->csum = calloc(z->len / m->block_size ? z->len / m->block_size : 1,
			 sizeof(*z->csum));
	return z->csum ? 0 : -ENOMEM;
}

void zm_csum_set(struct zmeta *m, uint64_t addr, uint32_t n,
		 const void *csums)
{
	struct zm_zone *z = &m->zones[zm_zone_of(m, addr)];
	uint64_t b = (addr - z->start) / m->block_size;
	const unsigned char *p = csums;
	uint32_t i, v;

	for (i = 0; i < n; i++) {
		memcpy(&v, p + (size_t)i * sizeof(v), sizeof(v));
		z->csum[b + i] = le32toh(v);
	}
}

void zm_csum_copy(struct zmeta *m, uint64_t old, uint64_t new, uint64_t len)
{
	uint32_t bs = m->block_size, n = ZF_CSUMS(old, len, bs), i;
	const struct zm_zone *zo = &m->zones[zm_zone_of(m, old)];
	struct zm_zone *zn = &m->zones[zm_zone_of(m, new)];
	uint64_t bo = (old - zo->start) / bs, bn = (new - zn->start) / bs;

	for (i = 0; i < n; i++)
		zn->csum[bn + i] = zo->csum ? zo->csum[bo + i] : 0;
}

void zm_csum_drop(struct zmeta *m, uint32_t zone)
{
	free(m->zones[zone].csum);
	m->zones[zone].csum = NULL;
}

int zm_csum_check(const struct zmeta *m, uint64_t addr, const void *buf,
		  size_t len, uint64_t *bad)
{
	uint32_t bs = m->block_size;
	const struct zm_zone *z = &m->zones[zm_zone_of(m, addr)];
	const unsigned char *p = buf;
	uint64_t b = (addr - z->start) / bs;
	size_t off;

	for (off = 0; off < len; off += bs, b++) {
		if (!z->csum || crc32c(0, p + off, bs) != z->csum[b]) {
			*bad = addr + off;
			return -EILSEQ;
		}
	}
	return 0;
}
