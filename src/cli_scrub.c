// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * zonefuse scrub MOUNTPOINT|DEVICE [--json]
 *
 * Read every block of file data and check it against its checksum, and
 * say which files are damaged where. On a mount point it first asks the
 * daemon to read the metadata back from the device (ZFS_XATTR_SCRUB on
 * the root: every superblock, anchor and journal copy, rewritten from
 * memory when one does not hold), then walks the tree and asks it to
 * scrub each file: the file system stays mounted and in use. On an
 * unmounted device it is `fsck --data`, and then a writable mount
 * rewrites any metadata block that only a copy covered.
 *
 * Exit status as fsck's: 0 nothing damaged, 1 damage found and all of it
 * rewritten from a copy, 4 damage left, 8 the scrub could not run.
 */
#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "zonefuse/zfs.h"

static void scrub_usage(FILE *f)
{
	fprintf(f,
		"usage: zonefuse scrub MOUNTPOINT|DEVICE [--json]\n"
		"Read the metadata and every block of file data back from the device,\n"
		"check every checksum and say what is damaged where. On a mount point\n"
		"the file system stays in use (the metadata part needs root: commits\n"
		"wait while it reads) and damaged metadata is written anew from memory;\n"
		"on an unmounted device it is `fsck --data`, then damaged metadata\n"
		"copies are rewritten from the good ones.\n"
		"\n"
		"  --json     print the result as one JSON object\n"
		"\n"
		"Exit status: 0 nothing damaged, 1 damage rewritten from a copy, 4 damage\n"
		"left (the files listed), 8 the scrub could not run, 16 usage.\n");
}

/* The walk of a mount point (nftw has no argument for its callback). */
static struct {
	bool json, tty;
	json_t *problems; /* with json */
	bool short_mem;	  /* a finding could not be kept */
	uint64_t files, bytes, damaged, errors;
	unsigned int meta_copies, meta_damage; /* 0 copies: not scrubbed */
	bool meta_rewritten, meta_left;
	time_t last;
} sw;

static void scrub_find(const struct zfs_finding *f)
{
	if (sw.json) {
		if (cli_json_finding(sw.problems, f))
			sw.short_mem = true;
	} else {
		if (sw.tty)
			fprintf(stderr, "\r\033[K");
		printf("%s\n", f->text);
		fflush(stdout);
	}
}

/* A finding of @code (an error unless @sev says) whose text is @line. */
static void scrub_line(const char *code, enum zfs_severity sev,
		       const char *line)
{
	scrub_find(&(struct zfs_finding){
		.code = code, .severity = sev, .text = line });
}

static void scrub_progress(bool last)
{
	time_t now = time(NULL);

	if (!sw.tty || (!last && now == sw.last))
		return;
	sw.last = now;
	fprintf(stderr, "\r\033[Kscrub: %" PRIu64 " files, %" PRIu64 " MiB read, %" PRIu64 " damaged%s",
		sw.files, sw.bytes >> 20, sw.damaged, last ? "\n" : "");
}

/* Scrub one file through the daemon and say what it found. */
static int scrub_walk_one(const char *path, const struct stat *st, int type,
			  struct FTW *ftw)
{
	char buf[8192], line[4608], *p, *save = NULL;
	bool bad = false;
	ssize_t n;

	(void)ftw;
	if (type != FTW_F || !S_ISREG(st->st_mode))
		return 0;
	n = getxattr(path, ZFS_XATTR_SCRUB, buf, sizeof(buf) - 1);
	if (n < 0) {
		if (errno == ENOENT)
			return 0; /* removed meanwhile */
		snprintf(line, sizeof(line), "%s: scrub failed: %s", path,
			 strerror(errno));
		scrub_find(&(struct zfs_finding){ .code = "scrub-failed",
						   .has = ZFS_FIND_PATH,
						   .path = path,
						   .text = line });
		sw.errors++;
		return errno == ENODATA || errno == EOPNOTSUPP ? 1 : 0;
	}
	buf[n] = '\0';
	sw.files++;
	for (p = strtok_r(buf, "\n", &save); p; p = strtok_r(NULL, "\n", &save)) {
		uint64_t off, len;
		unsigned int zone;
		char what[16];

		if (sscanf(p, "bytes %" SCNu64, &off) == 1) {
			sw.bytes += off;
		} else if (sscanf(p, "offset %" SCNu64 " length %" SCNu64 " zone %u %15s",
				  &off, &len, &zone, what) == 4) {
			snprintf(line, sizeof(line),
				 "data: %s: %" PRIu64 " bytes at file offset %" PRIu64 " (zone %u) %s: reads of them give EIO; restore the file from a copy",
				 path, len, off, zone,
				 strcmp(what, "unreadable") ? "fail their checksum" :
							      "cannot be read");
			scrub_find(&(struct zfs_finding){
				.code = "data-damaged",
				.has = ZFS_FIND_INO | ZFS_FIND_PATH |
				       ZFS_FIND_ZONE | ZFS_FIND_RANGE,
				.ino = (uint64_t)st->st_ino,
				.path = path,
				.zone = zone,
				.foff = off,
				.len = len,
				.text = line });
			bad = true;
		} else if (!strcmp(p, "more")) {
			snprintf(line, sizeof(line),
				 "data: %s: more damaged ranges than listed", path);
			scrub_find(&(struct zfs_finding){
				.code = "data-damaged-more",
				.severity = ZFS_SEV_NOTE,
				.has = ZFS_FIND_INO | ZFS_FIND_PATH,
				.ino = (uint64_t)st->st_ino,
				.path = path,
				.text = line });
		}
	}
	sw.damaged += bad;
	scrub_progress(false);
	return 0;
}

/*
 * The metadata, through the daemon: root only (others are told, and the
 * files are still scrubbed). Its lines: "copies N", "damage TEXT" per
 * finding, then "rewritten" and "after TEXT" per finding left after the
 * rewrite, or "left TEXT" (why nothing was rewritten).
 */
static void scrub_meta(const char *dir)
{
	char buf[8192], line[8300], *p, *save = NULL;
	ssize_t n;

	n = getxattr(dir, ZFS_XATTR_SCRUB, buf, sizeof(buf) - 1);
	if (n < 0) {
		snprintf(line, sizeof(line), "metadata: not scrubbed: %s",
			 errno == EPERM ? "only root may (commits wait while it reads)" :
					  strerror(errno));
		scrub_line("metadata-not-scrubbed",
			   errno == EPERM ? ZFS_SEV_NOTE : ZFS_SEV_ERROR, line);
		if (errno != EPERM)
			sw.errors++;
		return;
	}
	buf[n] = '\0';
	for (p = strtok_r(buf, "\n", &save); p; p = strtok_r(NULL, "\n", &save)) {
		const char *text = strchr(p, ' ') ? strchr(p, ' ') + 1 : "";
		const char *code;

		if (sscanf(p, "copies %u", &sw.meta_copies) == 1)
			continue;
		if (!strcmp(p, "rewritten")) {
			sw.meta_rewritten = true;
			continue;
		}
		if (!strncmp(p, "damage ", 7)) {
			sw.meta_damage++;
			code = "metadata-damaged";
			snprintf(line, sizeof(line), "metadata: %s", text);
		} else if (!strncmp(p, "left ", 5)) {
			sw.meta_left = true;
			code = "metadata-not-rewritten";
			snprintf(line, sizeof(line),
				 "metadata: not rewritten (%s): unmount and run `zonefuse fsck --repair`",
				 text);
		} else if (!strncmp(p, "after ", 6)) {
			sw.meta_left = true;
			code = "metadata-still-damaged";
			snprintf(line, sizeof(line),
				 "metadata: written anew from memory, but still: %s; the device may be failing: copy the files out",
				 text);
		} else {
			continue;
		}
		scrub_line(code, ZFS_SEV_ERROR, line);
	}
	if (sw.meta_rewritten && !sw.meta_left)
		scrub_line("metadata-rewritten", ZFS_SEV_NOTE,
			   "metadata: written anew from the metadata in memory, every copy, and read back whole");
}

/* The result of a scrub of a mount point as one object. */
static int scrub_json_mounted(const char *dir, int ret)
{
	json_t *o = json_object(), *m = NULL;

	if (!o || sw.short_mem || zjson_set_str(o, "target", dir) ||
	    json_object_set_new(o, "mounted", json_true()) ||
	    json_object_set(o, "problems", sw.problems) ||
	    zjson_set_u64(o, "files", sw.files) ||
	    zjson_set_u64(o, "data_bytes", sw.bytes) ||
	    zjson_set_u64(o, "damaged_files", sw.damaged) ||
	    zjson_set_u64(o, "errors", sw.errors))
		goto out_fail;
	if (sw.meta_copies) {
		m = json_object();
		if (!m || json_object_set_new(o, "metadata", m) ||
		    zjson_set_u64(m, "copies", sw.meta_copies) ||
		    zjson_set_u64(m, "damage", sw.meta_damage) ||
		    json_object_set_new(m, "rewritten",
					json_boolean(sw.meta_rewritten)) ||
		    json_object_set_new(m, "left", json_boolean(sw.meta_left)))
			goto out_fail;
	}
	if (json_object_set_new(o, "exit", json_integer(ret)) ||
	    zjson_print(stdout, o))
		goto out_fail;
	json_decref(o);
	return ret;
out_fail:
	json_decref(o);
	cli_error("scrub", "%s: writing the JSON result failed", dir);
	return ZFS_FSCK_OPERROR;
}

static int scrub_mounted(const char *dir, bool json)
{
	char probe[64];
	int ret;

	sw.json = json;
	sw.tty = !json && isatty(STDERR_FILENO);
	if (getxattr(dir, ZFS_XATTR_STATS, probe, sizeof(probe)) < 0 &&
	    errno != ERANGE) {
		cli_error("scrub", "%s: not a zonefuse mount (no %s): %s", dir,
			  ZFS_XATTR_STATS, strerror(errno));
		return ZFS_FSCK_OPERROR;
	}
	scrub_meta(dir);
	if (nftw(dir, scrub_walk_one, 64, FTW_PHYS | FTW_MOUNT) < 0) {
		cli_error("scrub", "%s: walking the tree failed: %s", dir,
			  strerror(errno));
		return ZFS_FSCK_OPERROR;
	}
	scrub_progress(true);
	if (sw.errors)
		ret = ZFS_FSCK_OPERROR;
	else if (sw.damaged || sw.meta_left)
		ret = ZFS_FSCK_UNFIXED;
	else
		ret = sw.meta_rewritten ? ZFS_FSCK_FIXED : ZFS_FSCK_OK;
	if (json)
		return scrub_json_mounted(dir, ret);
	if (sw.meta_copies)
		printf("%s: metadata: %u cop%s read back, %u problem%s%s; ", dir,
		       sw.meta_copies, sw.meta_copies > 1 ? "ies" : "y",
		       sw.meta_damage, sw.meta_damage == 1 ? "" : "s",
		       sw.meta_damage ? (sw.meta_left ? " left" : " rewritten") : "");
	else
		printf("%s: metadata: not scrubbed; ", dir);
	printf("files: %" PRIu64 ", %" PRIu64 " bytes read and checked, %" PRIu64 " damaged\n",
	       sw.files, sw.bytes, sw.damaged);
	return ret;
}

static void scrub_say(void *arg, const struct zfs_finding *f)
{
	(void)arg;
	scrub_find(f);
}

/* The result of a scrub of an unmounted device as one object. */
static int scrub_json_device(const char *dev, const struct zfs_fsck_result *res,
			     int ret, const char *err)
{
	json_t *o = json_object();

	if (ret == ZFS_FSCK_UNFIXED && err[0])
		scrub_line("metadata-unreplayable", ZFS_SEV_ERROR, err);
	if (!o || sw.short_mem || zjson_set_str(o, "target", dev) ||
	    json_object_set_new(o, "mounted", json_false()) ||
	    json_object_set(o, "problems", sw.problems) ||
	    zjson_set_u64(o, "files", res->data_files) ||
	    zjson_set_u64(o, "data_bytes", res->data_bytes) ||
	    zjson_set_u64(o, "damaged_files", res->damaged_files) ||
	    zjson_set_u64(o, "errors", res->errors) ||
	    json_object_set_new(o, "exit", json_integer(ret)) ||
	    (ret == ZFS_FSCK_OPERROR && err[0] &&
	     zjson_set_str(o, "error", err)) ||
	    zjson_print(stdout, o)) {
		json_decref(o);
		cli_error("scrub", "%s: writing the JSON result failed", dev);
		return ZFS_FSCK_OPERROR;
	}
	json_decref(o);
	return ret;
}

static int scrub_device(const char *dev, bool json)
{
	struct zfs_fsck_result res;
	char err[512] = "";
	int ret;

	sw.json = json;
	if (cli_refuse_mounted("scrub", dev))
		return ZFS_FSCK_OPERROR;
	cli_wait_released(dev);
	ret = zfs_fsck(dev, ZFS_FSCK_DATA, scrub_say, NULL, &res, err,
		       sizeof(err));
	/* Damage only a copy covered: a writable mount rewrites it. */
	if (ret == ZFS_FSCK_UNFIXED && res.errors == res.copies_bad) {
		struct zfs_opts o = { .defer_threads = true, .wait_busy = true };
		struct zfs *fs;

		if (!zfs_mount(dev, &o, &fs, err, sizeof(err)) && !zfs_unmount(fs)) {
			char line[128];

			snprintf(line, sizeof(line),
				 "metadata: %u damaged block%s rewritten from %s copy",
				 res.copies_bad, res.copies_bad > 1 ? "s" : "",
				 res.copies_bad > 1 ? "their" : "its");
			scrub_find(&(struct zfs_finding){
				.code = "metadata-copy-rewritten",
				.severity = ZFS_SEV_NOTE,
				.fixed = true,
				.text = line });
			ret = ZFS_FSCK_FIXED;
		}
	}
	if (json)
		return scrub_json_device(dev, &res, ret, err);
	if (err[0])
		cli_error("scrub", "%s", err);
	if (ret != ZFS_FSCK_OPERROR)
		printf("%s: %" PRIu64 " files, %" PRIu64 " bytes read and checked, %" PRIu64 " damaged; %u problems%s\n",
		       dev, res.data_files, res.data_bytes, res.damaged_files,
		       res.errors, ret == ZFS_FSCK_FIXED ? ", all rewritten from copies" : "");
	return ret;
}

int cli_scrub(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	bool json = false;
	struct stat st;
	int c, ret;

	optind = 1;
	while ((c = getopt_long(argc, argv, "hV", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'V':
			return cli_version();
		case 'h':
			scrub_usage(stdout);
			return 0;
		default:
			scrub_usage(stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind + 1 != argc) {
		cli_error("scrub", "expected one MOUNTPOINT or DEVICE");
		scrub_usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (stat(argv[optind], &st)) {
		cli_error("scrub", "%s: %s", argv[optind], strerror(errno));
		return ZFS_FSCK_OPERROR;
	}
	if (json && !(sw.problems = json_array())) {
		cli_error("scrub", "out of memory");
		return ZFS_FSCK_OPERROR;
	}
	ret = S_ISDIR(st.st_mode) ? scrub_mounted(argv[optind], json) :
				    scrub_device(argv[optind], json);
	json_decref(sw.problems);
	return ret;
}
