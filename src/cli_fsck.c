// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * zonefuse fsck DEVICE [--repair] [--data] [--json], also run as
 * fsck.zonefuse and fsck.fuse.zonefuse by fsck(8): e2fsck's flags
 * (-p/-a, -n, -y, -f, -C FD, -v, -V) and its exit codes.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "zonefuse/zfs.h"

static void fsck_usage(FILE *f)
{
	fprintf(f,
		"usage: zonefuse fsck [-p|-a|-n|-y] [-f] [-v] [-C FD] [--data] [--json]\n"
		"                     DEVICE\n"
		"Replay the journal and check every invariant of the file system.\n"
		"Installed as fsck.zonefuse and fsck.fuse.zonefuse for fsck(8).\n"
		"\n"
		"  -y, --repair  fix what can be fixed without losing data that can\n"
		"                be proven good, and say what was dropped\n"
		"  -p, -a        preen: the same repair, asking nothing (zonefuse\n"
		"                never asks)\n"
		"  -n            check only, write nothing (the default)\n"
		"  -f            force: accepted; a check always runs in full\n"
		"  -v            accepted; every finding is always printed\n"
		"  -C FD         report progress as e2fsck does: lines \"PASS DONE TOTAL\n"
		"                DEVICE\" on descriptor FD (pass 1 the metadata, 2 the\n"
		"                data), or with FD 0 a line on a terminal's stdout\n"
		"  --data        also read every block of file data and check its\n"
		"                checksum (zonefuse scrub does this on a mounted one)\n"
		"  --json        print the result as one JSON object\n"
		"  -V, --version print the version\n"
		"\n"
		"Exit status as fsck(8): 0 clean, 1 errors fixed, 4 errors left,\n"
		"8 the check could not run, 16 usage.\n");
}

struct fsck_out {
	bool json;
	json_t *problems; /* with json */
	bool short_mem;	  /* a finding could not be kept */
	/* -C: e2fsck's progress, as fsck(8) reads it (misc/fsck.c). */
	int progress_fd; /* -1: none; 0: a line on stdout; else lines
			    "PASS DONE TOTAL DEVICE" to it */
	const char *dev;
	unsigned int pass; /* of the last report */
	int permille;	   /* of the last report: reports are made only when
			      it changes */
	bool drawn;	   /* a progress line is on the terminal */
};

/* Clear the terminal's progress line before anything else is printed. */
static void fsck_progress_clear(struct fsck_out *o)
{
	if (o->drawn)
		printf("\r%*s\r", 79, "");
	o->drawn = false;
}

static void fsck_progress(void *arg, unsigned int pass, uint64_t done,
			  uint64_t total)
{
	struct fsck_out *o = arg;
	int permille = total ? (int)(done * 1000 / total) : 0;

	if (pass == o->pass && permille == o->permille)
		return;
	o->pass = pass;
	o->permille = permille;
	if (o->progress_fd > 0) {
		/* Like e2fsck: a reader that went away does not stop fsck. */
		if (dprintf(o->progress_fd, "%u %" PRIu64 " %" PRIu64 " %s\n",
			    pass, done, total, o->dev) < 0)
			o->progress_fd = -1;
		return;
	}
	printf("\r%s: %s %3d.%d%%", o->dev, pass == 1 ? "metadata" : "data",
	       permille / 10, permille % 10);
	fflush(stdout);
	o->drawn = true;
}

static void fsck_say(void *arg, const struct zfs_finding *f)
{
	struct fsck_out *o = arg;

	if (o->json) {
		if (cli_json_finding(o->problems, f))
			o->short_mem = true;
		return;
	}
	fsck_progress_clear(o);
	printf("%s\n", f->text);
}

/*
 * The result as one object: the device, the findings, the counts. Metadata
 * that does not replay at all is a finding too (metadata-unreplayable);
 * "error" is why the check could not run.
 */
static int fsck_json(const char *dev, unsigned int flags,
		     const struct zfs_fsck_result *res, int ret,
		     const char *err, struct fsck_out *out)
{
	json_t *o = json_object();
	int r = -ENOMEM;

	if (ret == ZFS_FSCK_UNFIXED && err[0] &&
	    cli_json_finding(out->problems,
			     &(struct zfs_finding){
				     .code = "metadata-unreplayable",
				     .text = err }))
		goto out_put;
	if (!o || out->short_mem || zjson_set_str(o, "device", dev) ||
	    json_object_set(o, "problems", out->problems) ||
	    zjson_set_u64(o, "errors", res->errors) ||
	    zjson_set_u64(o, "fixed", res->fixed) ||
	    zjson_set_u64(o, "warnings", res->warnings) ||
	    zjson_set_u64(o, "inodes", res->inodes) ||
	    zjson_set_u64(o, "directories", res->dirs) ||
	    zjson_set_u64(o, "extents", res->extents) ||
	    zjson_set_u64(o, "log_records", res->log_records) ||
	    json_object_set_new(o, "clean", json_boolean(res->clean_tail)) ||
	    json_object_set_new(o, "exit", json_integer(ret)))
		goto out_put;
	if ((flags & ZFS_FSCK_DATA) &&
	    (zjson_set_u64(o, "data_bytes", res->data_bytes) ||
	     zjson_set_u64(o, "data_files", res->data_files) ||
	     zjson_set_u64(o, "damaged_files", res->damaged_files)))
		goto out_put;
	if (ret == ZFS_FSCK_OPERROR && err[0] && zjson_set_str(o, "error", err))
		goto out_put;
	r = zjson_print(stdout, o);
out_put:
	json_decref(o);
	return r;
}

int cli_fsck(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "repair", no_argument, NULL, 'r' },
		{ "data", no_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct zfs_fsck_result res;
	struct fsck_out out = { .progress_fd = -1, .pass = 0, .permille = -1 };
	unsigned int flags = 0;
	char err[512] = "";
	/* The last of -p/-a, -n, -y given, as e2fsck takes at most one. */
	int mode = 0, c, ret;
	uint32_t fd;

	optind = 1;
	while ((c = getopt_long(argc, argv, "rypanfvC:Vh", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
		case 'y':
		case 'p':
		case 'a':
		case 'n':
			/* --repair is -y; -a is -p, as in e2fsck. */
			c = c == 'r' ? 'y' : c == 'a' ? 'p' : c;
			if (mode && mode != c) {
				cli_error("fsck",
					  "give only one of -p/-a, -n and -y (--repair)");
				return ZFS_FSCK_USAGE;
			}
			mode = c;
			if (c != 'n')
				flags |= ZFS_FSCK_REPAIR;
			break;
		case 'f':
		case 'v':
			break;
		case 'C':
			/* fsck(8) passes "-C FD" or "-C0": a descriptor. */
			if (cli_u32_arg("fsck", "-C", optarg, &fd))
				return ZFS_FSCK_USAGE;
			if (fd > 0 && (fd > INT32_MAX ||
				       fcntl((int)fd, F_GETFL) < 0)) {
				cli_error("fsck",
					  "-C %s: descriptor %s is not open (give one open for writing, or 0 for a progress line on the terminal)",
					  optarg, optarg);
				return ZFS_FSCK_USAGE;
			}
			out.progress_fd = (int)fd;
			break;
		case 'V':
			return cli_version();
		case 'd':
			flags |= ZFS_FSCK_DATA;
			break;
		case 'j':
			out.json = true;
			break;
		case 'h':
			fsck_usage(stdout);
			return 0;
		default:
			fsck_usage(stderr);
			return ZFS_FSCK_USAGE;
		}
	}
	if (optind + 1 != argc) {
		cli_error("fsck", "expected one DEVICE");
		fsck_usage(stderr);
		return ZFS_FSCK_USAGE;
	}
	if (cli_refuse_mounted("fsck", argv[optind]))
		return ZFS_FSCK_OPERROR;
	if (out.json) {
		out.problems = json_array();
		if (!out.problems) {
			cli_error("fsck", "out of memory");
			return ZFS_FSCK_OPERROR;
		}
	}
	cli_wait_released(argv[optind]);
	/* A progress line would break the JSON, or a file stdout is. */
	if (out.progress_fd == 0 && (out.json || !isatty(STDOUT_FILENO)))
		out.progress_fd = -1;
	out.dev = argv[optind];
	ret = zfs_fsck_progress(argv[optind], flags, fsck_say,
				out.progress_fd >= 0 ? fsck_progress : NULL,
				&out, &res, err, sizeof(err));
	fsck_progress_clear(&out);
	if (out.json) {
		if (fsck_json(argv[optind], flags, &res, ret, err, &out)) {
			cli_error("fsck", "%s: writing the JSON result failed",
				  argv[optind]);
			ret = ZFS_FSCK_OPERROR;
		}
		json_decref(out.problems);
		return ret;
	}
	if (err[0])
		cli_error("fsck", "%s", err);
	if (ret == ZFS_FSCK_OPERROR)
		return ret;
	if (flags & ZFS_FSCK_DATA)
		printf("data: %" PRIu64 " files, %" PRIu64 " bytes read and checked, %" PRIu64 " damaged\n",
		       res.data_files, res.data_bytes, res.damaged_files);
	printf("%s: %" PRIu64 " inodes, %" PRIu64 " directories, %" PRIu64 " extents, %" PRIu64 " journal records replayed; ",
	       argv[optind], res.inodes, res.dirs, res.extents,
	       res.log_records);
	if (!res.errors)
		printf("clean%s\n", res.warnings ? " (with the warnings above)" : "");
	else
		printf("%u problems, %u fixed%s\n", res.errors, res.fixed,
		       res.fixed < res.errors && !(flags & ZFS_FSCK_REPAIR) ?
			       " (run with --repair to fix what can be)" :
			       "");
	return ret;
}
