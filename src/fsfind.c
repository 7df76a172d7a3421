// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * fsfind: mount(8)'s UUID= and LABEL= for zonefuse (zonefuse/fsfind.h).
 */
#include <blkid/blkid.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "zonefuse/fsfind.h"
#include "zonefuse/util.h"

int fsfind_parse(const char *spec, struct fsfind_tag *t, char *err,
		 size_t errlen)
{
	const char *v;
	size_t len;

	memset(t, 0, sizeof(*t));
	if (!strncmp(spec, "UUID=", 5)) {
		t->kind = FSFIND_UUID;
		v = spec + 5;
	} else if (!strncmp(spec, "LABEL=", 6)) {
		t->kind = FSFIND_LABEL;
		v = spec + 6;
	} else {
		t->kind = FSFIND_PATH;
		return 0;
	}
	/* fstab may quote the value, as blkid -o export does. */
	len = strlen(v);
	if (len >= 2 && (v[0] == '"' || v[0] == '\'') && v[len - 1] == v[0]) {
		v++;
		len -= 2;
	}
	if (t->kind == FSFIND_UUID) {
		if (len == ZUTIL_UUID_STR_LEN) {
			memcpy(t->value, v, len);
			if (!zutil_uuid_parse(t->value, t->uuid))
				return 0;
		}
		zutil_err(err, errlen,
			  "%s: not a UUID (8-4-4-4-12 hex digits, as zonefuse mkfs prints it)",
			  spec);
		return -EINVAL;
	}
	if (!len || len > ZFS_LABEL_MAX) {
		zutil_err(err, errlen,
			  "%s: the label is %s; a zonefuse label has 1 to %u bytes",
			  spec, len ? "too long" : "empty", ZFS_LABEL_MAX);
		return -EINVAL;
	}
	memcpy(t->value, v, len);
	return 0;
}

bool fsfind_match(const struct fsfind_tag *t, const struct zfs_ident *id)
{
	switch (t->kind) {
	case FSFIND_UUID:
		return !memcmp(t->uuid, id->uuid, sizeof(t->uuid));
	case FSFIND_LABEL:
		return !strcmp(t->value, id->label);
	default:
		return false;
	}
}

int fsfind_pick(const struct fsfind_tag *t, const char *const *cands, size_t n,
		char **path, char *err, size_t errlen)
{
	const char *found = NULL;
	const char *name = t->kind == FSFIND_UUID ? "UUID" : "LABEL";
	struct zfs_ident id;
	size_t i;

	for (i = 0; i < n; i++) {
		if (zfs_read_ident(cands[i], &id, NULL, 0) ||
		    !fsfind_match(t, &id))
			continue;
		if (found) {
			zutil_err(err, errlen,
				  "%s=%s is on both %s and %s: name the device by its path, or give one of them another %s",
				  name, t->value, found, cands[i],
				  t->kind == FSFIND_UUID ?
					  "UUID (zonefuse mkfs -U)" :
					  "label (zonefuse label)");
			return -ENOTUNIQ;
		}
		found = cands[i];
	}
	if (!found) {
		zutil_err(err, errlen,
			  "no zonefuse file system with %s=%s on the %zu zoned block device(s) here (libblkid does not know zonefuse; an emulator image is found only by its path)",
			  name, t->value, n);
		return -ENOENT;
	}
	*path = strdup(found);
	return *path ? 0 : -ENOMEM;
}

/*
 * Is /sys/class/block/@name a zoned block device (host-managed or
 * host-aware)? A partition has no queue/ of its own: zoned devices are
 * not partitioned.
 */
static bool fsfind_is_zoned(const char *name)
{
	char p[512], model[32];

	snprintf(p, sizeof(p), "/sys/class/block/%s/queue/zoned", name);
	if (zutil_read_line(p, model, sizeof(model)))
		return false;
	return !strncmp(model, "host-managed", 12) ||
	       !strncmp(model, "host-aware", 10);
}

static int fsfind_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The zoned block devices, "/dev/NAME", sorted (so that a clash is named
 * the same way each time) into *@list. Their count, or -errno.
 */
static int fsfind_zoned_devices(char ***list)
{
	char **l = NULL, **nl, p[512];
	struct dirent *e;
	struct stat st;
	int n = 0, ret;
	DIR *d;

	*list = NULL;
	d = opendir("/sys/class/block");
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || !fsfind_is_zoned(e->d_name))
			continue;
		snprintf(p, sizeof(p), "/dev/%s", e->d_name);
		if (stat(p, &st) || !S_ISBLK(st.st_mode))
			continue;
		nl = realloc(l, (size_t)(n + 1) * sizeof(*l));
		if (!nl || !(nl[n] = strdup(p))) {
			l = nl ? nl : l;
			ret = -ENOMEM;
			goto out_free;
		}
		l = nl;
		n++;
	}
	closedir(d);
	if (n)
		qsort(l, (size_t)n, sizeof(*l), fsfind_cmp);
	*list = l;
	return n;
out_free:
	closedir(d);
	while (n--)
		free(l[n]);
	free(l);
	return ret;
}

int fsfind_resolve(const char *spec, char **path, char *err, size_t errlen)
{
	struct fsfind_tag t;
	struct zfs_ident id;
	char **devs, *dev;
	int n, ret;

	ret = fsfind_parse(spec, &t, err, errlen);
	if (ret)
		return ret;
	if (t.kind == FSFIND_PATH) {
		*path = strdup(spec);
		return *path ? 0 : -ENOMEM;
	}
	/*
	 * What libblkid says is trusted only if it holds that zonefuse file
	 * system: another file system with that label is not this one.
	 */
	dev = blkid_evaluate_tag(t.kind == FSFIND_UUID ? "UUID" : "LABEL",
				 t.value, NULL);
	if (dev && !zfs_read_ident(dev, &id, NULL, 0) &&
	    fsfind_match(&t, &id)) {
		*path = dev;
		return 0;
	}
	free(dev);
	n = fsfind_zoned_devices(&devs);
	if (n < 0) {
		zutil_err(err, errlen,
			  "%s: cannot list the block devices (/sys/class/block): %s",
			  spec, strerror(-n));
		return n;
	}
	ret = fsfind_pick(&t, (const char *const *)devs, (size_t)n, path, err,
			  errlen);
	while (n--)
		free(devs[n]);
	free(devs);
	return ret;
}
