/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The FUSE low-level operations over the zfs library (fuse_ll.c). */
#ifndef ZONEFUSE_FUSE_LL_H
#define ZONEFUSE_FUSE_LL_H

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 314
#endif
#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <stdint.h>

struct xp;
struct zfs;

/* Session userdata: what the operations work on, set before the mount. */
struct fs_ll {
	struct zfs *fs;
	/*
	 * Readahead the INIT reply asks for, in bytes: the kernel keeps the
	 * smaller of this and the bdi's read_ahead_kb at that moment, so
	 * the mount raises read_ahead_kb before the session answers INIT.
	 * Where it cannot, the kernel's 128 KiB stays, or less if asked.
	 */
	uint32_t readahead;
	struct xp *xp; /* the transport (xport.h): its hooks find it here */
};

extern const struct fuse_lowlevel_ops fs_ll_ops;

#endif /* ZONEFUSE_FUSE_LL_H */
