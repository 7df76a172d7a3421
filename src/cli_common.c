// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "zonefuse/util.h"

int cli_version(void)
{
	printf("zonefuse %s\n", ZONEFUSE_VERSION);
	return 0;
}

void cli_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "zonefuse %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int cli_open_dev(const char *cmd, const char *path, unsigned int flags,
		 struct zdev **devp)
{
	char err[512] = "";
	int ret = zdev_open(path, flags, devp, err, sizeof(err));

	if (ret)
		cli_error(cmd, "%s", err[0] ? err : "cannot open the device");
	return ret;
}

int cli_size_arg(const char *cmd, const char *opt, const char *val,
		 uint64_t *out)
{
	if (zutil_parse_size(val, out)) {
		cli_error(cmd,
			  "%s: '%s' is not a size (use a number with an optional K, M, G or T suffix)",
			  opt, val ? val : "");
		return -EINVAL;
	}
	return 0;
}

int cli_u32_arg(const char *cmd, const char *opt, const char *val,
		uint32_t *out)
{
	if (zutil_parse_u32(val, out)) {
		cli_error(cmd, "%s: '%s' is not a number", opt,
			  val ? val : "");
		return -EINVAL;
	}
	return 0;
}

int cli_json_finding(json_t *list, const struct zfs_finding *f)
{
	static const char *sev[] = { "error", "warning", "note" };
	json_t *o = json_object(), *inos = NULL;
	unsigned int h = f->has;
	uint32_t i;

	if (!o || json_array_append_new(list, o) ||
	    zjson_set_str(o, "code", f->code) ||
	    zjson_set_str(o, "severity", sev[f->severity]) ||
	    json_object_set_new(o, "fixed", json_boolean(f->fixed)))
		return -ENOMEM;
	if (((h & ZFS_FIND_INO) && zjson_set_u64(o, "inode", f->ino)) ||
	    ((h & ZFS_FIND_DIR) &&
	     (zjson_set_u64(o, "directory", f->dir) ||
	      zjson_set_str(o, "name", f->name))) ||
	    ((h & ZFS_FIND_PATH) && zjson_set_str(o, "path", f->path)) ||
	    ((h & ZFS_FIND_ZONE) && zjson_set_u64(o, "zone", f->zone)) ||
	    ((h & ZFS_FIND_ADDR) && zjson_set_u64(o, "address", f->addr)) ||
	    ((h & ZFS_FIND_RANGE) &&
	     (zjson_set_u64(o, "file_offset", f->foff) ||
	      zjson_set_u64(o, "length", f->len))) ||
	    ((h & ZFS_FIND_SEQ) && zjson_set_u64(o, "seq", f->seq)))
		return -ENOMEM;
	if (h & ZFS_FIND_INOS) {
		inos = json_array();
		if (!inos || json_object_set_new(o, "inodes", inos))
			return -ENOMEM;
		for (i = 0; i < f->n_inos; i++)
			if (json_array_append_new(inos, json_integer((json_int_t)f->inos[i])))
				return -ENOMEM;
	}
	return zjson_set_str(o, "text", f->text);
}

int cli_loop_backing(const char *dev, char *buf, size_t len)
{
	char path[PATH_MAX];
	int ret;

	if (strncmp(dev, "/dev/loop", 9) || strchr(dev + 9, '/'))
		return -ENOENT;
	snprintf(path, sizeof(path), "/sys/block/%s/loop/backing_file",
		 dev + 5);
	ret = zutil_read_line(path, buf, len);
	if (ret)
		return ret;
	return buf[0] ? 0 : -ENOENT;
}

struct libmnt_table *cli_mount_table(void)
{
	return mnt_new_table_from_file("/proc/self/mountinfo");
}

bool cli_is_zonefuse_type(const char *type)
{
	return type && (!strcmp(type, "fuse.zonefuse") ||
			!strcmp(type, "fuseblk.zonefuse"));
}

/*
 * The mount point of a zonefuse mount of @path, or NULL. A mount shows
 * the device's absolute path as its source (the daemon's fsname=), or,
 * mounted with -o blkdev over an image, the loop device standing for it.
 * libmount reads mountinfo and undoes its escapes ("\040" for a space).
 */
char *cli_mounted_on(const char *path)
{
	char real[PATH_MAX], backing[PATH_MAX];
	struct libmnt_table *tb;
	struct libmnt_iter *itr;
	struct libmnt_fs *fs;
	char *dir = NULL;

	if (!realpath(path, real))
		return NULL;
	tb = cli_mount_table();
	if (!tb)
		return NULL;
	itr = mnt_new_iter(MNT_ITER_FORWARD);
	if (!itr)
		goto out_table;
	while (!dir && !mnt_table_next_fs(tb, itr, &fs)) {
		const char *src = mnt_fs_get_source(fs);

		if (!src || !cli_is_zonefuse_type(mnt_fs_get_fstype(fs)))
			continue;
		if (!strcmp(src, real) ||
		    (!cli_loop_backing(src, backing, sizeof(backing)) &&
		     !strcmp(backing, real)))
			dir = strdup(mnt_fs_get_target(fs));
	}
	mnt_free_iter(itr);
out_table:
	mnt_unref_table(tb);
	return dir;
}

/*
 * libmount keeps the userspace options of a mount (the ones the kernel
 * does not take) in its utab (/run/mount/utab), merged with mountinfo when
 * it reads the mount table. umount(8) reads them back; as root and for a
 * mount with none, it takes the mount's type from statfs(2) instead,
 * which says "fuse" without the subtype, and looks for umount.fuse: no
 * zonefuse helper would run. helper=zonefuse (mount(8): "the umount(8)
 * command calls /sbin/umount.TYPE for this mount, even for root") is what
 * makes it run umount.zonefuse.
 */
int cli_utab_note(const char *src, const char *target, const char *type)
{
	struct libmnt_update *upd = mnt_new_update();
	struct libmnt_fs *fs = mnt_new_fs();
	int ret = -ENOMEM;

	if (!upd || !fs)
		goto out_free;
	ret = mnt_fs_set_source(fs, src);
	if (!ret)
		ret = mnt_fs_set_target(fs, target);
	if (!ret)
		ret = mnt_fs_set_fstype(fs, type);
	if (!ret)
		ret = mnt_fs_set_options(fs, CLI_UTAB_OPTS);
	if (!ret)
		ret = mnt_update_set_fs(upd, 0, NULL, fs);
	if (!ret)
		ret = mnt_update_table(upd, NULL);
	else if (ret > 0)
		ret = -ENOTSUP; /* libmount keeps no utab here */
out_free:
	mnt_free_update(upd);
	mnt_unref_fs(fs);
	return ret;
}

int cli_utab_drop(const char *target)
{
	struct libmnt_update *upd = mnt_new_update();
	int ret = -ENOMEM;

	if (!upd)
		return ret;
	ret = mnt_update_set_fs(upd, 0, target, NULL);
	if (!ret)
		ret = mnt_update_table(upd, NULL);
	mnt_free_update(upd);
	return ret < 0 ? ret : 0;
}

int cli_refuse_mounted(const char *cmd, const char *path)
{
	char *dir = cli_mounted_on(path);

	if (!dir)
		return 0;
	/* Quoted for the shell when it has to be: a mount point may hold spaces. */
	if (dir[strcspn(dir, " \t\n'\"\\$`!*?[]{}()<>;&|#~")])
		cli_error(cmd, "%s is mounted on %s: unmount it first (umount '%s')",
			  path, dir, dir);
	else
		cli_error(cmd, "%s is mounted on %s: unmount it first (umount %s)",
			  path, dir, dir);
	free(dir);
	return -EBUSY;
}

void cli_wait_released(const char *path)
{
	struct zdev *dev;

	if (!zdev_open(path, ZDEV_RDONLY | ZDEV_EXCL | ZDEV_WAIT, &dev, NULL, 0))
		zdev_close(dev);
}
