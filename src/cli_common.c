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

/*
 * The mount point of a zonefuse mount of @path, from mountinfo (the mount
 * shows the device's absolute path as its source), or NULL.
 */
char *cli_mounted_on(const char *path)
{
	char real[PATH_MAX], line[8192], *dir = NULL;
	FILE *f;

	if (!realpath(path, real))
		return NULL;
	f = fopen("/proc/self/mountinfo", "r");
	if (!f)
		return NULL;
	while (!dir && fgets(line, sizeof(line), f)) {
		char mnt[4096], type[256], src[4096];
		char *sep = strstr(line, " - ");

		if (!sep || sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1 ||
		    sscanf(sep + 3, "%255s %4095s", type, src) != 2)
			continue;
		if (!strcmp(type, "fuse.zonefuse") && !strcmp(src, real))
			dir = strdup(mnt);
	}
	fclose(f);
	return dir;
}

int cli_refuse_mounted(const char *cmd, const char *path)
{
	char *dir = cli_mounted_on(path);

	if (!dir)
		return 0;
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
