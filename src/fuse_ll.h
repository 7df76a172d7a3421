/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The FUSE low-level operations over the zfs library (fuse_ll.c). */
#ifndef ZONEFUSE_FUSE_LL_H
#define ZONEFUSE_FUSE_LL_H

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 314
#endif
#include <fuse_lowlevel.h>
#include <stdbool.h>

/* Session userdata: the struct zfs * the operations work on. */
extern const struct fuse_lowlevel_ops fs_ll_ops;

#endif /* ZONEFUSE_FUSE_LL_H */
