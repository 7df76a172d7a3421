/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fsprobe - what else a device holds: the signatures libblkid knows (file
 * systems, swap, RAID and LVM members, partition tables), looked for in
 * the device bytes before mkfs overwrites them, as mkfs.ext4 and
 * mkfs.f2fs look. zonefuse's own superblock is not among them: libblkid
 * does not know it (jrnl_read_super() finds it).
 */
#ifndef ZONEFUSE_FSPROBE_H
#define ZONEFUSE_FSPROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zonefuse/zdev.h"

/* Signatures fsprobe_scan() returns at most. */
#define FSPROBE_MAX 8

struct fsprobe_sig {
	char type[32];	/* libblkid's name: "btrfs", "ext4", "f2fs", "swap",
			   or a partition table's: "dos", "gpt" */
	bool table;	/* a partition table, not a file system */
	char label[128]; /* "" when it has none */
	char uuid[64];	 /* "" when it has none */
	uint64_t off;	 /* device offset of its magic bytes */
	bool wiped;	 /* erased by fsprobe_scan(@wipe) */
};

/*
 * Probe the device bytes of @dev (for an emulator image, those after its
 * header) and fill @sigs with up to @max signatures found. With @wipe,
 * erase the magic bytes of each found in a conventional zone (as wipefs
 * does); one in a sequential zone is left to the zone reset mkfs makes
 * before it writes. Returns how many were found, or a negative errno
 * with @err saying why the device could not be probed.
 */
int fsprobe_scan(struct zdev *dev, bool wipe, struct fsprobe_sig *sigs,
		 unsigned int max, char *err, size_t errlen);

/*
 * "a btrfs file system (label 'x', UUID y)" or "a dos partition table"
 * into @buf; returns @buf.
 */
char *fsprobe_describe(const struct fsprobe_sig *sig, char *buf, size_t len);

#endif /* ZONEFUSE_FSPROBE_H */
