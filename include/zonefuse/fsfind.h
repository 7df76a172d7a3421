/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fsfind - a zonefuse file system named as mount(8) names one, by a path
 * or by a tag, UUID=... or LABEL=..., to the device that holds it.
 *
 * libblkid resolves tags for the file systems it knows (through udev's
 * /dev/disk/by-uuid and by-label links, or by probing); it does not know
 * zonefuse. So a tag it cannot resolve to a device holding that zonefuse
 * file system is looked for on the zoned block devices themselves, the
 * devices zonefuse can be on: each one's superblock is read. An emulator
 * image is a file, which no scan can find: it is named by its path.
 */
#ifndef ZONEFUSE_FSFIND_H
#define ZONEFUSE_FSFIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zonefuse/zfs.h"

enum fsfind_kind {
	FSFIND_PATH,  /* anything else: a path */
	FSFIND_UUID,  /* UUID=01234567-89ab-cdef-0123-456789abcdef */
	FSFIND_LABEL, /* LABEL=name, LABEL="name" */
};

struct fsfind_tag {
	enum fsfind_kind kind;
	uint8_t uuid[16];		/* FSFIND_UUID */
	char value[ZFS_LABEL_MAX + 1];	/* the tag's value, unquoted */
};

/*
 * Parse @spec into @t. 0, or -EINVAL (with @err) for a tag whose value
 * names no zonefuse file system: a UUID that is not 8-4-4-4-12 hex
 * digits, an empty label or one longer than ZFS_LABEL_MAX bytes.
 */
int fsfind_parse(const char *spec, struct fsfind_tag *t, char *err,
		 size_t errlen);

/* Does the identity @id (a superblock's) carry the tag @t? */
bool fsfind_match(const struct fsfind_tag *t, const struct zfs_ident *id);

/*
 * Of the @n devices (or images) @cands, the one holding a zonefuse file
 * system that carries @t, into *@path (malloc'ed). Candidates that cannot
 * be read or hold no zonefuse file system are passed over. -ENOENT when
 * none carries it, -ENOTUNIQ (naming two) when more than one does,
 * -ENOMEM; @err says which.
 */
int fsfind_pick(const struct fsfind_tag *t, const char *const *cands, size_t n,
		char **path, char *err, size_t errlen);

/*
 * The device @spec names, into *@path (malloc'ed): @spec itself when it is
 * a path; for a tag, the device libblkid resolves it to if that holds a
 * zonefuse file system carrying the tag, else fsfind_pick() over the
 * zoned block devices of /sys/class/block. fsfind_parse()'s and
 * fsfind_pick()'s errors.
 */
int fsfind_resolve(const char *spec, char **path, char *err, size_t errlen);

#endif /* ZONEFUSE_FSFIND_H */
