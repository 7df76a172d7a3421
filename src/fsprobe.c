// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * fsprobe: libblkid over the device bytes. libblkid reads the file it is
 * given through its own descriptor, at an offset: the device's path opened
 * again (buffered: the device layer's descriptor may be O_DIRECT), at
 * zdev_file_offset(), for the device's size.
 */
#include <blkid/blkid.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zonefuse/fsprobe.h"
#include "zonefuse/util.h"

static void fsprobe_value(blkid_probe pr, const char *name, char *buf,
			  size_t len)
{
	const char *v;

	if (blkid_probe_lookup_value(pr, name, &v, NULL))
		v = "";
	snprintf(buf, len, "%s", v);
}

/* The signature libblkid just found, into @s. */
static void fsprobe_take(blkid_probe pr, struct fsprobe_sig *s)
{
	char off[32];

	memset(s, 0, sizeof(*s));
	fsprobe_value(pr, "TYPE", s->type, sizeof(s->type));
	if (!s->type[0]) {
		s->table = true;
		fsprobe_value(pr, "PTTYPE", s->type, sizeof(s->type));
		fsprobe_value(pr, "PTUUID", s->uuid, sizeof(s->uuid));
		fsprobe_value(pr, "PTMAGIC_OFFSET", off, sizeof(off));
	} else {
		fsprobe_value(pr, "LABEL", s->label, sizeof(s->label));
		fsprobe_value(pr, "UUID", s->uuid, sizeof(s->uuid));
		fsprobe_value(pr, "SBMAGIC_OFFSET", off, sizeof(off));
	}
	s->off = strtoull(off, NULL, 10);
}

int fsprobe_scan(struct zdev *dev, bool wipe, struct fsprobe_sig *sigs,
		 unsigned int max, char *err, size_t errlen)
{
	const struct zdev_geom *g = zdev_geom(dev);
	const char *path = zdev_path(dev);
	unsigned int n = 0;
	blkid_probe pr;
	int fd, r, ret;

	fd = open(path, (wipe ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		zutil_err(err, errlen, "%s: cannot open it to look for other file systems: %s",
			  path, strerror(errno));
		return ret;
	}
	pr = blkid_new_probe();
	if (!pr) {
		ret = -ENOMEM;
		goto out_close;
	}
	if (blkid_probe_set_device(pr, fd, (blkid_loff_t)zdev_file_offset(dev),
				   (blkid_loff_t)g->size)) {
		ret = -EIO;
		zutil_err(err, errlen, "%s: libblkid cannot probe it", path);
		goto out_free;
	}
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE |
					  BLKID_SUBLKS_LABEL |
					  BLKID_SUBLKS_UUID |
					  BLKID_SUBLKS_MAGIC);
	blkid_probe_enable_partitions(pr, 1);
	blkid_probe_set_partitions_flags(pr, BLKID_PARTS_MAGIC);
	/* Every signature, one at a time, as wipefs lists them. */
	while (n < max && !(r = blkid_do_probe(pr))) {
		struct fsprobe_sig *s = &sigs[n++];
		struct zdev_zone z;

		fsprobe_take(pr, s);
		if (!wipe || s->off >= g->size ||
		    zdev_report(dev, zdev_zone_of(dev, s->off), 1, &z) != 1 ||
		    z.type != ZDEV_ZONE_CONV)
			continue;
		if (blkid_do_wipe(pr, 0)) {
			ret = -EIO;
			zutil_err(err, errlen,
				  "%s: erasing the %s signature at %" PRIu64 " failed",
				  path, s->type, s->off);
			goto out_free;
		}
		s->wiped = true;
	}
	if (n < max && r < 0) {
		ret = -EIO;
		zutil_err(err, errlen,
			  "%s: reading it to look for other file systems failed (libblkid)",
			  path);
		goto out_free;
	}
	ret = (int)n;
	if (wipe && fsync(fd) < 0) {
		ret = -errno;
		zutil_err(err, errlen, "%s: %s", path, strerror(errno));
	}
out_free:
	blkid_free_probe(pr);
out_close:
	close(fd);
	return ret;
}

char *fsprobe_describe(const struct fsprobe_sig *sig, char *buf, size_t len)
{
	if (sig->table) {
		snprintf(buf, len, "a %s partition table", sig->type);
		return buf;
	}
	/* e2fsprogs's words: "a ext4 file system", "a swap file system". */
	snprintf(buf, len, "a %s file system%s%s%s%s%s%s%s", sig->type,
		 sig->label[0] || sig->uuid[0] ? " (" : "",
		 sig->label[0] ? "label '" : "", sig->label,
		 sig->label[0] ? "'" : "",
		 sig->label[0] && sig->uuid[0] ? ", UUID " :
		 sig->uuid[0] ? "UUID " : "",
		 sig->uuid, sig->label[0] || sig->uuid[0] ? ")" : "");
	return buf;
}
