// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The file system's identity: the label and UUID in its superblock, read
 * by the tools, and the label checked (mkfs --label, zonefuse label) and
 * changed.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "zfs_i.h"
#include "zonefuse/jrnl.h"
#include "zonefuse/util.h"
#include "zonefuse/zfs.h"

/*
 * Bytes of the UTF-8 sequence that starts at @s (at most @len bytes), or
 * 0 if none does: no overlong forms, no surrogates, nothing past U+10FFFF.
 */
static size_t ident_utf8_len(const unsigned char *s, size_t len)
{
	uint32_t cp, min;
	size_t n, i;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0) {
		n = 2;
		cp = s[0] & 0x1f;
		min = 0x80;
	} else if ((s[0] & 0xf0) == 0xe0) {
		n = 3;
		cp = s[0] & 0x0f;
		min = 0x800;
	} else if ((s[0] & 0xf8) == 0xf0) {
		n = 4;
		cp = s[0] & 0x07;
		min = 0x10000;
	} else {
		return 0;
	}
	if (n > len)
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/*
 * A label is shown by blkid-style tools and written into fstab lines and
 * udev's /dev/disk/by-label: printable UTF-8, no control characters, and
 * no '/' (it would be a path separator in by-label).
 */
int zfs_label_check(const char *label, char *err, size_t errlen)
{
	const unsigned char *s = (const unsigned char *)label;
	size_t len = strlen(label), i, n;

	if (len > ZFS_LABEL_MAX) {
		zutil_err(err, errlen,
			  "the label '%s' is %zu bytes long: zonefuse keeps up to %u",
			  label, len, ZFS_LABEL_MAX);
		return -ENAMETOOLONG;
	}
	for (i = 0; i < len; i += n) {
		n = ident_utf8_len(s + i, len - i);
		if (!n) {
			zutil_err(err, errlen,
				  "the label is not valid UTF-8 (byte %zu, 0x%02x): give a label of printable UTF-8 text",
				  i, s[i]);
			return -EINVAL;
		}
		if (s[i] < 0x20 || s[i] == 0x7f || s[i] == '/') {
			zutil_err(err, errlen,
				  "the label holds %s (byte %zu): give one without control characters or '/'",
				  s[i] == '/' ? "a '/'" : "a control character",
				  i);
			return -EINVAL;
		}
	}
	return 0;
}

int zfs_read_ident(const char *path, struct zfs_ident *id, char *err,
		   size_t errlen)
{
	struct zf_super sb;
	struct zdev *dev;
	int ret;

	ret = zdev_open(path, ZDEV_RDONLY, &dev, err, errlen);
	if (ret)
		return ret;
	ret = jrnl_read_super(dev, &sb, err, errlen);
	if (!ret) {
		memset(id, 0, sizeof(*id));
		/* NUL-padded on the device, but a full field has no NUL. */
		memcpy(id->label, sb.label, ZFS_LABEL_MAX);
		memcpy(id->uuid, sb.uuid, sizeof(id->uuid));
	}
	zdev_close(dev);
	return ret;
}

int zfs_set_label(struct zfs *fs, const char *label, char *err,
		  size_t errlen)
{
	int ret = zfs_label_check(label, err, errlen);

	if (ret)
		return ret;
	if (fs->rdonly) {
		zutil_err(err, errlen, "%s is mounted read-only",
			  zdev_path(fs->dev));
		return -EROFS;
	}
	ret = jrnl_set_label(fs->j, label);
	if (ret)
		zutil_err(err, errlen,
			  "%s: writing the superblock with the new label failed: %s",
			  zdev_path(fs->dev), strerror(-ret));
	return ret;
}
