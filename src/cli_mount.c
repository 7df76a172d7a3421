// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * zonefuse mount DEVICE DIR [-f] [-o OPTIONS], and the form mount.fuse3
 * uses for `mount -t fuse.zonefuse` and fstab: zonefuse DEVICE DIR -o OPTS.
 *
 * The file system is mounted (journal replayed) before the daemon goes to
 * the background, so that a bad device is reported on the terminal with a
 * non-zero exit, not in syslog after a "successful" mount.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "fuse_ll.h"
#include "zonefuse/util.h"
#include "zonefuse/zfs.h"

struct mount_cfg {
	unsigned int commit;	/* seconds */
	unsigned int stage_mb;
	unsigned int wb_threads;
	unsigned int threads;
	int ro, debug, foreground, help, version;
};

enum {
	MOUNT_KEY_RO,
	MOUNT_KEY_DISCARD,
	MOUNT_KEY_FG,
};

#define MOUNT_OPT(t, p) { t, offsetof(struct mount_cfg, p), 1 }

static const struct fuse_opt mount_opts[] = {
	{ "commit=%u", offsetof(struct mount_cfg, commit), 0 },
	{ "stage_mb=%u", offsetof(struct mount_cfg, stage_mb), 0 },
	{ "writeback_threads=%u", offsetof(struct mount_cfg, wb_threads), 0 },
	{ "threads=%u", offsetof(struct mount_cfg, threads), 0 },
	MOUNT_OPT("debug", debug),
	MOUNT_OPT("-h", help),
	MOUNT_OPT("--help", help),
	MOUNT_OPT("-V", version),
	MOUNT_OPT("--version", version),
	FUSE_OPT_KEY("ro", MOUNT_KEY_RO),
	FUSE_OPT_KEY("-f", MOUNT_KEY_FG),
	FUSE_OPT_KEY("-d", MOUNT_KEY_FG),
	/* mount(8) and fstab options that mean nothing to a FUSE mount. */
	FUSE_OPT_KEY("_netdev", MOUNT_KEY_DISCARD),
	FUSE_OPT_KEY("nofail", MOUNT_KEY_DISCARD),
	FUSE_OPT_KEY("auto", MOUNT_KEY_DISCARD),
	FUSE_OPT_KEY("noauto", MOUNT_KEY_DISCARD),
	FUSE_OPT_KEY("defaults", MOUNT_KEY_DISCARD),
	FUSE_OPT_KEY("user", MOUNT_KEY_DISCARD),
	FUSE_OPT_KEY("users", MOUNT_KEY_DISCARD),
	FUSE_OPT_KEY("nouser", MOUNT_KEY_DISCARD),
	FUSE_OPT_END
};

static int mount_opt_proc(void *data, const char *arg, int key,
			  struct fuse_args *outargs)
{
	struct mount_cfg *c = data;

	(void)arg;
	(void)outargs;
	switch (key) {
	case MOUNT_KEY_RO:
		c->ro = 1;
		return 1; /* the kernel needs it too */
	case MOUNT_KEY_FG:
		c->foreground = 1;
		return 0;
	case MOUNT_KEY_DISCARD:
		return 0;
	default:
		return 1;
	}
}

static void mount_usage(FILE *f)
{
	fprintf(f,
		"usage: zonefuse mount DEVICE DIR [-f] [-o OPTION[,OPTION...]]\n"
		"       zonefuse DEVICE DIR -o OPTIONS     (the form mount.fuse3 uses)\n"
		"Mount the zonefuse file system on DEVICE (a zoned block device or an\n"
		"emulator image) at DIR. Unmount with `umount DIR` or `fusermount3 -u DIR`.\n"
		"\n"
		"  -f                     stay in the foreground, log to stderr\n"
		"  -o ro                  read-only\n"
		"  -o allow_other         let other users in (see /etc/fuse.conf)\n"
		"  -o default_permissions let the kernel check permissions too\n"
		"  -o commit=SECONDS      journal commit interval (default 5)\n"
		"  -o stage_mb=MB         DRAM for staged writes (default 256)\n"
		"  -o writeback_threads=N threads writing staged data to zones (default 2)\n"
		"  -o threads=N           FUSE request threads (default 10)\n"
		"  -o debug               log every operation\n"
		"Other -o options are FUSE's (see mount.fuse3(8)).\n");
}

int cli_mount(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_loop_config *loop = NULL;
	struct mount_cfg cfg = { 0 };
	struct zfs_opts zo = { 0 };
	struct fuse_session *se = NULL;
	const char *dev = NULL, *dir = NULL;
	char err[512] = "", *fsname = NULL, real[PATH_MAX];
	struct zfs *fs = NULL;
	struct stat st;
	int i, ret = 1;

	/* Positional DEVICE and DIR; everything else is an option. */
	fuse_opt_add_arg(&args, "zonefuse");
	for (i = 1; i < argc; i++) {
		if (argv[i][0] != '-' && !dev) {
			dev = argv[i];
		} else if (argv[i][0] != '-' && !dir) {
			dir = argv[i];
		} else {
			fuse_opt_add_arg(&args, argv[i]);
			if (!strcmp(argv[i], "-o") && i + 1 < argc)
				fuse_opt_add_arg(&args, argv[++i]);
		}
	}
	if (fuse_opt_parse(&args, &cfg, mount_opts, mount_opt_proc) < 0) {
		cli_error("mount", "bad options (see zonefuse mount --help)");
		goto out_args;
	}
	if (cfg.help) {
		mount_usage(stdout);
		ret = 0;
		goto out_args;
	}
	if (cfg.version) {
		printf("zonefuse %s\n", ZONEFUSE_VERSION);
		ret = 0;
		goto out_args;
	}
	if (!dev || !dir) {
		cli_error("mount", "expected DEVICE and DIR");
		mount_usage(stderr);
		ret = CLI_EXIT_USAGE;
		goto out_args;
	}
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		cli_error("mount", "%s: not a directory to mount on", dir);
		goto out_args;
	}
	if (cfg.debug)
		zlog_set_level(ZLOG_DEBUG);
	if (cli_refuse_mounted("mount", dev))
		goto out_args;

	/*
	 * Show as "DEVICE on DIR type fuse.zonefuse" in mount(8), with the
	 * device's absolute path: the tools find mounts by it.
	 */
	if (!realpath(dev, real)) {
		cli_error("mount", "%s: %s", dev, strerror(errno));
		goto out_args;
	}
	/* A comma would end the option: FUSE takes it escaped. */
	fsname = malloc(2 * strlen(real) + 32);
	if (!fsname)
		goto out_args;
	strcpy(fsname, "-ofsname=");
	for (const char *p = real, *e = fsname + strlen(fsname); *p; p++) {
		char *q = (char *)e;

		if (*p == ',' || *p == '\\')
			*q++ = '\\';
		*q++ = *p;
		*q = '\0';
		e = q;
	}
	strcat(fsname, ",subtype=zonefuse");
	fuse_opt_add_arg(&args, fsname);

	zo.rdonly = cfg.ro;
	zo.commit_ms = cfg.commit ? cfg.commit * 1000u : 0;
	zo.stage_bytes = (uint64_t)cfg.stage_mb << 20;
	zo.wb_threads = cfg.wb_threads;
	zo.defer_threads = true;
	zo.wait_busy = true;
	ret = zfs_mount(dev, &zo, &fs, err, sizeof(err));
	if (ret) {
		cli_error("mount", "%s", err[0] ? err : strerror(-ret));
		ret = 1;
		goto out_args;
	}
	ret = 1;
	se = fuse_session_new(&args, &fs_ll_ops, sizeof(fs_ll_ops), fs);
	if (!se) {
		cli_error("mount", "cannot start the FUSE session (an unknown -o option?)");
		goto out_fs;
	}
	if (fuse_set_signal_handlers(se)) {
		cli_error("mount", "cannot set signal handlers");
		goto out_session;
	}
	if (fuse_session_mount(se, dir)) {
		cli_error("mount", "%s: mounting failed (is /dev/fuse there, and are you allowed to mount?)",
			  dir);
		goto out_signals;
	}
	if (fuse_daemonize(cfg.foreground)) {
		cli_error("mount", "cannot go to the background");
		goto out_unmount;
	}
	if (!cfg.foreground)
		zlog_to_syslog("zonefuse");
	ret = zfs_start(fs);
	if (ret) {
		zlog_err("%s: cannot start threads: %s", dev, strerror(-ret));
		ret = 1;
		goto out_unmount;
	}
	zlog_info("%s mounted on %s%s", dev, dir, cfg.ro ? " (read-only)" : "");
	loop = fuse_loop_cfg_create();
	fuse_loop_cfg_set_max_threads(loop, cfg.threads ? cfg.threads : 10);
	/*
	 * The loop returns the signal that ended it (libfuse's handlers:
	 * SIGTERM, SIGINT, SIGHUP): an asked-for stop, as umount is.
	 */
	ret = fuse_session_loop_mt(se, loop);
	ret = ret == SIGTERM || ret == SIGINT || ret == SIGHUP ? 0 : !!ret;
	fuse_loop_cfg_destroy(loop);
out_unmount:
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out_session:
	fuse_session_destroy(se);
out_fs:
	i = zfs_unmount(fs);
	if (i) {
		zlog_err("%s: unmount did not complete cleanly: %s; run `zonefuse fsck %s`",
			 dev, strerror(-i), dev);
		ret = 1;
	} else if (se) {
		zlog_info("%s unmounted cleanly", dev);
	}
out_args:
	free(fsname);
	fuse_opt_free_args(&args);
	return ret;
}
