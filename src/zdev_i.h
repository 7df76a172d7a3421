/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Inside the device layer: the backend method table and the common part of
 * every device. Only src/zdev*.c and src/zemu.c include this.
 */
#ifndef ZONEFUSE_ZDEV_I_H
#define ZONEFUSE_ZDEV_I_H

#include <pthread.h>
#include <stdatomic.h>

#include "zonefuse/zdev.h"

/*
 * What a backend implements. The wrappers in zdev.c have already checked
 * alignment and bounds, counted the operation and run the fault hook, so a
 * backend only applies its device's rules.
 */
struct zdev_ops {
	const char *name;
	int (*report)(struct zdev *dev, uint32_t first, uint32_t nr,
		      struct zdev_zone *zones);
	int (*read)(struct zdev *dev, void *buf, size_t len, uint64_t off);
	int (*write)(struct zdev *dev, const void *buf, size_t len,
		     uint64_t off);
	int (*flush)(struct zdev *dev);
	int (*zone_op)(struct zdev *dev, enum zdev_op op, uint32_t zone);
	/* Optional: NULL means the wrapper issues the I/Os one by one. */
	int (*submit)(struct zdev *dev, struct zdev_io *ios, unsigned int nr);
	void (*close)(struct zdev *dev);
};

struct zdev {
	const struct zdev_ops *ops;
	struct zdev_geom geom;
	char *path;
	unsigned int flags; /* enum zdev_open_flags */
	uint64_t file_off;  /* where device byte 0 is in the file at @path:
			       an emulator image's header comes first */

	/* Fault hook: @fault_arg is set before @fault is published. */
	_Atomic(zdev_fault_fn) fault;
	void *fault_arg;

	/* Recording (zdev_record()): NULL unless recording. Set before
	   other threads use the device, freed by zdev_close(). */
	struct zdev_rec *_Atomic rec;

	/* Counters: updated atomically by the wrappers. */
	_Atomic uint64_t st_bytes_written;
	_Atomic uint64_t st_bytes_read;
	_Atomic uint64_t st_writes;
	_Atomic uint64_t st_reads;
	_Atomic uint64_t st_flushes;
	_Atomic uint64_t st_resets;
};

/* Backend constructors: fill *devp (allocated by the backend). */
int zemu_open_dev(const char *path, unsigned int flags, struct zdev **devp,
		  char *err, size_t errlen);
int zbd_open_dev(const char *path, unsigned int flags, struct zdev **devp,
		 char *err, size_t errlen);

/* Common part of a backend's constructor and destructor. */
int zdev_init_common(struct zdev *dev, const struct zdev_ops *ops,
		     const char *path, unsigned int flags);
void zdev_free_common(struct zdev *dev);

#endif /* ZONEFUSE_ZDEV_I_H */
