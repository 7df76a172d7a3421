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
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cli.h"
#include "fuse_ll.h"
#include "xport.h"
#include "zonefuse/fsfind.h"
#include "zonefuse/util.h"
#include "zonefuse/zfs.h"

/*
 * The kernel gives a FUSE mount 128 KiB of readahead, an eighth of one
 * 1 MiB read request. 4 MiB keeps four requests in flight for the
 * request threads to serve side by side: a cold 2 GiB read on a RAM
 * image went from 1.6 to 3.8 GB/s (median of 5). Random read(2)s are
 * not read ahead whatever the value.
 */
#define MOUNT_DEFAULT_RA_KB 4096u
#define MOUNT_MAX_RA_KB 65536u

struct mount_cfg {
	uint32_t commit;	/* seconds */
	uint32_t stage_mb;
	uint32_t wb_threads;
	uint32_t threads;
	uint32_t readahead_kb;
	char *transport; /* -o transport=, else $ZONEFUSE_TRANSPORT, else auto */
	char *uring_sched; /* -o uring_sched=auto|normal */
	int ro, debug, foreground, help, version;
	int shared; /* allow_other or allow_root */
	int blkdev; /* a fuseblk mount: sync(1) and umount reach the daemon */
	char *refused; /* options neither zonefuse nor libfuse takes, "a,b" */
	char *own;     /* options zonefuse sets itself and refuses, "a,b" */
};

enum {
	MOUNT_KEY_RO,
	MOUNT_KEY_RW,
	MOUNT_KEY_BLKDEV,
	MOUNT_KEY_DISCARD,
	MOUNT_KEY_FG,
	MOUNT_KEY_SHARED,
	MOUNT_KEY_OWN,
	MOUNT_KEY_NUM, /* + the field's offset in struct mount_cfg */
};

#define MOUNT_OPT(t, p) { t, offsetof(struct mount_cfg, p), 1 }
/*
 * Numbers are parsed by mount_opt_proc(), strictly: fuse_opt's "%u"
 * would take "stage_mb=4G" as 4.
 */
#define MOUNT_NUM(t, p) \
	FUSE_OPT_KEY(t "=", MOUNT_KEY_NUM + (int)offsetof(struct mount_cfg, p))

static const struct fuse_opt mount_opts[] = {
	MOUNT_NUM("commit", commit),
	MOUNT_NUM("stage_mb", stage_mb),
	MOUNT_NUM("writeback_threads", wb_threads),
	MOUNT_NUM("threads", threads),
	MOUNT_NUM("readahead_kb", readahead_kb),
	{ "transport=%s", offsetof(struct mount_cfg, transport), 0 },
	{ "uring_sched=%s", offsetof(struct mount_cfg, uring_sched), 0 },
	MOUNT_OPT("debug", debug),
	MOUNT_OPT("-h", help),
	MOUNT_OPT("--help", help),
	MOUNT_OPT("-V", version),
	MOUNT_OPT("--version", version),
	FUSE_OPT_KEY("ro", MOUNT_KEY_RO),
	FUSE_OPT_KEY("rw", MOUNT_KEY_RW),
	FUSE_OPT_KEY("blkdev", MOUNT_KEY_BLKDEV),
	FUSE_OPT_KEY("-f", MOUNT_KEY_FG),
	FUSE_OPT_KEY("-d", MOUNT_KEY_FG),
	FUSE_OPT_KEY("allow_other", MOUNT_KEY_SHARED),
	FUSE_OPT_KEY("allow_root", MOUNT_KEY_SHARED),
	/* The tools find a mount by its source and type: they are ours. */
	FUSE_OPT_KEY("fsname=", MOUNT_KEY_OWN),
	FUSE_OPT_KEY("subtype=", MOUNT_KEY_OWN),
	/* Ours too, in libmount's utab (cli_utab_note()); mount(8) passes it. */
	FUSE_OPT_KEY("helper=zonefuse", MOUNT_KEY_DISCARD),
	/*
	 * mount(8) and fstab options that mean nothing to a FUSE mount, as
	 * mount.fuse3 drops them (and libmount keeps from helpers: x-* and
	 * comment=, taken in mount_opt_proc(), when given by hand).
	 */
	FUSE_OPT_KEY("_netdev", MOUNT_KEY_DISCARD),
	FUSE_OPT_KEY("nofail", MOUNT_KEY_DISCARD),
	FUSE_OPT_KEY("auto", MOUNT_KEY_DISCARD),
	FUSE_OPT_KEY("noauto", MOUNT_KEY_DISCARD),
	FUSE_OPT_KEY("defaults", MOUNT_KEY_DISCARD),
	FUSE_OPT_KEY("user", MOUNT_KEY_DISCARD),
	FUSE_OPT_KEY("users", MOUNT_KEY_DISCARD),
	FUSE_OPT_KEY("nouser", MOUNT_KEY_DISCARD),
	FUSE_OPT_KEY("owner", MOUNT_KEY_DISCARD),
	FUSE_OPT_KEY("noowner", MOUNT_KEY_DISCARD),
	FUSE_OPT_KEY("group", MOUNT_KEY_DISCARD),
	FUSE_OPT_KEY("nogroup", MOUNT_KEY_DISCARD),
	FUSE_OPT_KEY("comment=", MOUNT_KEY_DISCARD),
	/*
	 * The atime flags libfuse 3.14 does not know (it takes atime and
	 * noatime). The kernel leaves a FUSE mount's atimes to the daemon,
	 * which keeps them as relatime does whatever these say.
	 */
	FUSE_OPT_KEY("relatime", MOUNT_KEY_DISCARD),
	FUSE_OPT_KEY("norelatime", MOUNT_KEY_DISCARD),
	FUSE_OPT_KEY("strictatime", MOUNT_KEY_DISCARD),
	FUSE_OPT_KEY("nostrictatime", MOUNT_KEY_DISCARD),
	FUSE_OPT_KEY("lazytime", MOUNT_KEY_DISCARD),
	FUSE_OPT_KEY("nolazytime", MOUNT_KEY_DISCARD),
	FUSE_OPT_KEY("diratime", MOUNT_KEY_DISCARD),
	FUSE_OPT_KEY("nodiratime", MOUNT_KEY_DISCARD),
	FUSE_OPT_END
};

static void mount_log_quiet(enum fuse_log_level level, const char *fmt,
			    va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
}

/*
 * Does libfuse take @opt (an -o option, or an argument such as "-s")?
 * libfuse is the authority on its own options, but it looks at them only
 * in fuse_session_new(), which needs the device's path (fsname=) and
 * comes after the journal was replayed. A session made with @opt alone
 * and dropped at once asks it before anything touches the device. Its
 * complaint is kept quiet: the caller names every refused option at once.
 */
static bool mount_fuse_takes(const char *opt)
{
	static const struct fuse_lowlevel_ops no_ops;
	char *argv[] = { "zonefuse", "-o", (char *)opt, NULL };
	struct fuse_args a = FUSE_ARGS_INIT(3, argv);
	struct fuse_session *se;

	if (opt[0] == '-') {
		argv[1] = (char *)opt;
		argv[2] = NULL;
		a.argc = 2;
	}
	fuse_set_log_func(mount_log_quiet);
	se = fuse_session_new(&a, &no_ops, sizeof(no_ops), NULL);
	fuse_set_log_func(NULL);
	fuse_opt_free_args(&a);
	if (!se)
		return false;
	fuse_session_destroy(se);
	return true;
}

static int mount_opt_proc(void *data, const char *arg, int key,
			  struct fuse_args *outargs)
{
	struct mount_cfg *c = data;

	(void)outargs;
	if (key >= MOUNT_KEY_NUM) {
		char *field = (char *)c + (key - MOUNT_KEY_NUM);

		if (cli_u32_arg("mount", arg, strchr(arg, '=') + 1,
				(uint32_t *)field))
			return -1;
		return 0;
	}
	switch (key) {
	case MOUNT_KEY_RO:
		c->ro = 1;
		return 1; /* the kernel needs it too */
	case MOUNT_KEY_RW:
		c->ro = 0; /* the last one counts, as for mount(8) */
		return 1;
	case MOUNT_KEY_BLKDEV:
		c->blkdev = 1;
		return 1; /* libfuse's: it mounts type fuseblk */
	case MOUNT_KEY_FG:
		c->foreground = 1;
		return 0;
	case MOUNT_KEY_SHARED:
		c->shared = 1;
		return 1; /* for FUSE */
	case MOUNT_KEY_DISCARD:
		return 0;
	case MOUNT_KEY_OWN:
		return fuse_opt_add_opt(&c->own, arg) ? -1 : 0;
	case FUSE_OPT_KEY_OPT:
		/* Userspace options of fstab (x-systemd.automount, X-mount.mkdir) */
		if (!strncmp(arg, "x-", 2) || !strncmp(arg, "X-", 2))
			return 0;
		if (mount_fuse_takes(arg))
			return 1;
		return fuse_opt_add_opt(&c->refused, arg) ? -1 : 0;
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
		"  -o allow_other         let other users in (see /etc/fuse.conf); the\n"
		"                         kernel then checks permissions too\n"
		"  -o default_permissions let the kernel check permissions too\n"
		"  -o commit=SECONDS      journal commit interval (default 5)\n"
		"  -o stage_mb=MB         DRAM for staged writes (default 64)\n"
		"  -o writeback_threads=N threads writing staged data to zones (default 2)\n"
		"  -o threads=N           FUSE request threads (default 10)\n"
		"  -o readahead_kb=KB     kernel readahead of the mount (default 4096)\n"
		"  -o transport=auto|uring|dev\n"
		"                         how FUSE requests arrive: io_uring queues when the\n"
		"                         kernel has them on (auto, the default), or /dev/fuse\n"
		"  -o uring_sched=auto|normal\n"
		"                         auto (the default): the io_uring queue threads run\n"
		"                         SCHED_IDLE while CPUs are idle, so that a reader\n"
		"                         stays on its CPU; normal: always SCHED_OTHER\n"
		"  -o blkdev              mount as fuseblk (root only): sync(1) and umount then\n"
		"                         wait for the daemon to make everything durable; an\n"
		"                         image gets a loop device to stand for it\n"
		"  -o debug               log every operation\n"
		"Other -o options are FUSE's (see mount.fuse3(8)): rw, nodev, nosuid,\n"
		"noexec, ... go to the kernel. mount(8)'s and fstab's generic options\n"
		"(defaults, auto, noauto, nofail, user, users, _netdev, x-*, comment=,\n"
		"relatime, ...) are taken and mean nothing here. An unknown option is\n"
		"refused before DEVICE is opened.\n"
		"DEVICE may be UUID=... or LABEL=... of a zoned block device (an image is\n"
		"named by its path).\n"
		"Exit status (mount(8)'s): 0 mounted, 1 a usage error, 32 the mount failed.\n");
}

/*
 * The FUSE mount's bdi, "MAJ:MIN", from the last mount on @dir (a real
 * path) in mountinfo: the daemon cannot stat its own mount before it has
 * answered INIT. libmount undoes mountinfo's escapes ("\040").
 */
static int mount_bdi(const char *dir, char *bdi, size_t len)
{
	struct libmnt_table *tb = cli_mount_table();
	struct libmnt_iter *itr;
	struct libmnt_fs *fs;
	int ret = -ENOENT;

	if (!tb)
		return errno ? -errno : -ENOMEM;
	itr = mnt_new_iter(MNT_ITER_BACKWARD);
	if (!itr) {
		ret = -ENOMEM;
		goto out_table;
	}
	while (!mnt_table_next_fs(tb, itr, &fs)) {
		const char *type = mnt_fs_get_fstype(fs);
		const char *target = mnt_fs_get_target(fs);
		dev_t devno = mnt_fs_get_devno(fs);

		if (!type || strncmp(type, "fuse", 4) || !target ||
		    strcmp(target, dir))
			continue;
		snprintf(bdi, len, "%u:%u", major(devno), minor(devno));
		ret = 0;
		break;
	}
	mnt_free_iter(itr);
out_table:
	mnt_unref_table(tb);
	return ret;
}

/*
 * Raise the mount's readahead before INIT is answered: the kernel then
 * keeps min(read_ahead_kb, the reply's max_readahead) (fuse_ll.h).
 */
static int mount_set_readahead(const char *dir, unsigned int kb)
{
	char bdi[32], path[96];
	FILE *f;
	int ret;

	ret = mount_bdi(dir, bdi, sizeof(bdi));
	if (ret)
		return ret;
	snprintf(path, sizeof(path), "/sys/class/bdi/%s/read_ahead_kb", bdi);
	f = fopen(path, "we");
	if (!f)
		return -errno;
	fprintf(f, "%u\n", kb);
	return fclose(f) ? -errno : 0; /* a refused write shows here */
}

/*
 * A fuseblk mount names a block device, which the kernel holds for the
 * mount's life but never reads. An image file gets a loop device over it
 * for that (read-write: the kernel opens a fuseblk mount's device for
 * writing, though it writes nothing to it), detached by itself
 * (autoclear) once the mount lets it go. Returns an fd holding it, to
 * close once mounted, or -errno; its path in @path.
 */
static int mount_loop_attach(const char *image, char *path, size_t len)
{
	struct loop_config lc = { 0 };
	int ctl, nr, fd = -1, lfd, ret;

	ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0)
		return -errno;
	lfd = open(image, O_RDWR | O_CLOEXEC);
	if (lfd < 0) {
		ret = -errno;
		goto out_ctl;
	}
	for (;;) {
		nr = ioctl(ctl, LOOP_CTL_GET_FREE);
		if (nr < 0) {
			ret = -errno;
			goto out_image;
		}
		snprintf(path, len, "/dev/loop%d", nr);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			ret = -errno;
			goto out_image;
		}
		lc.fd = (uint32_t)lfd;
		lc.info.lo_flags = LO_FLAGS_AUTOCLEAR;
		if (!ioctl(fd, LOOP_CONFIGURE, &lc))
			break;
		ret = -errno;
		close(fd);
		fd = -1;
		if (ret != -EBUSY) /* another attach took it: take the next */
			goto out_image;
	}
	ret = fd;
out_image:
	close(lfd);
out_ctl:
	close(ctl);
	return ret;
}

/*
 * Mount @spec on @dir with the options in @args (argv[0] and options,
 * parsed here). Every check that can refuse the mount on its words alone
 * (options, DIR, the device already mounted) comes before the device is
 * opened: a refused mount leaves it byte for byte as it was. Returns the
 * exit status: 0, CLI_MOUNT_EX_USAGE or CLI_MOUNT_EX_FAIL.
 */
static int mount_main(const char *spec, const char *dir,
		      struct fuse_args *args, unsigned int flags)
{
	struct fuse_loop_config *loop = NULL;
	struct mount_cfg cfg = { .readahead_kb = MOUNT_DEFAULT_RA_KB };
	struct fs_ll ll = { 0 };
	struct zfs_opts zo = { 0 };
	struct fuse_session *se = NULL;
	char loopdev[32];
	int loop_fd = -1;
	enum xp_choice xc = XP_AUTO;
	struct xp *xp = NULL;
	const char *dev = spec, *tr;
	struct fsfind_tag tag;
	char *found = NULL;
	bool utab = false;
	char err[512] = "", *fsname = NULL, real[PATH_MAX], dir_real[PATH_MAX];
	struct zfs *fs = NULL;
	struct stat st;
	int i, ret = CLI_MOUNT_EX_USAGE;

	if (fuse_opt_parse(args, &cfg, mount_opts, mount_opt_proc) < 0) {
		cli_error("mount", "bad options (see zonefuse mount --help)");
		goto out_args;
	}
	if (cfg.help) {
		mount_usage(stdout);
		ret = 0;
		goto out_args;
	}
	if (cfg.version) {
		ret = cli_version();
		goto out_args;
	}
	if (cfg.own) {
		cli_error("mount", "-o %s: zonefuse sets the mount's source (the device's path) and type itself, by which mount(8) and the tools find it; leave it out",
			  cfg.own);
		goto out_args;
	}
	if (cfg.refused && (flags & CLI_MOUNT_SLOPPY)) {
		zlog_warn("mount: ignoring the unknown option(s) %s (sloppy: -s)",
			  cfg.refused);
	} else if (cfg.refused) {
		cli_error("mount", "unknown option(s) %s: nothing was mounted and %s was not opened (see zonefuse mount --help)",
			  cfg.refused, spec ? spec : "the device");
		goto out_args;
	}
	if (!spec || !dir) {
		cli_error("mount", "expected DEVICE and DIR");
		mount_usage(stderr);
		goto out_args;
	}
	if (cfg.readahead_kb > MOUNT_MAX_RA_KB) {
		cli_error("mount", "readahead_kb=%u: at most %u",
			  cfg.readahead_kb, MOUNT_MAX_RA_KB);
		goto out_args;
	}
	tr = cfg.transport ? cfg.transport : getenv("ZONEFUSE_TRANSPORT");
	if (tr && *tr && xp_parse(tr, &xc)) {
		cli_error("mount", "transport=%s: expected auto, uring or dev", tr);
		goto out_args;
	}
	if (cfg.uring_sched && strcmp(cfg.uring_sched, "auto") &&
	    strcmp(cfg.uring_sched, "normal")) {
		cli_error("mount", "uring_sched=%s: expected auto or normal",
			  cfg.uring_sched);
		goto out_args;
	}
	if (fsfind_parse(spec, &tag, err, sizeof(err))) {
		cli_error("mount", "%s", err);
		goto out_args;
	}
	ret = CLI_MOUNT_EX_FAIL;
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode) ||
	    !realpath(dir, dir_real)) {
		cli_error("mount", "%s: not a directory to mount on", dir);
		goto out_args;
	}
	if (cfg.debug)
		zlog_set_level(ZLOG_DEBUG);
	/* UUID= and LABEL= (docs/usage.md): the device that holds it. */
	i = fsfind_resolve(spec, &found, err, sizeof(err));
	if (i) {
		cli_error("mount", "%s", err[0] ? err : strerror(-i));
		goto out_args;
	}
	err[0] = '\0';
	dev = found;
	if (cli_refuse_mounted("mount", dev))
		goto out_args;

	/*
	 * Show as "DEVICE on DIR type fuse.zonefuse" in mount(8), with the
	 * device's absolute path: the tools find mounts by it, and so does
	 * mount -a, which skips an fstab line whose source and target are
	 * mounted already (it compares canonical paths).
	 */
	if (!realpath(dev, real)) {
		cli_error("mount", "%s: %s", dev, strerror(errno));
		goto out_args;
	}
	if (flags & CLI_MOUNT_VERBOSE)
		printf("zonefuse mount: %s%s%s on %s%s\n",
		       tag.kind == FSFIND_PATH ? "" : spec,
		       tag.kind == FSFIND_PATH ? "" : " is ", real, dir_real,
		       flags & CLI_MOUNT_FAKE ? " (fake: not mounted)" : "");
	fflush(stdout); /* the parent leaves through _exit() when it forks */
	if (flags & CLI_MOUNT_FAKE) {
		ret = 0;
		goto out_args;
	}
	if (cfg.blkdev && stat(real, &st) == 0 && !S_ISBLK(st.st_mode)) {
		loop_fd = mount_loop_attach(real, loopdev, sizeof(loopdev));
		if (loop_fd < 0) {
			cli_error("mount", "%s: -o blkdev needs a block device and none could be attached over this image: %s",
				  dev, strerror(-loop_fd));
			goto out_args;
		}
		snprintf(real, sizeof(real), "%s", loopdev);
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
	fuse_opt_add_arg(args, fsname);
	/*
	 * A mount other users may enter has the kernel check permissions
	 * on every access, cached names included (docs/design.md,
	 * "Permissions"); a private one has one user and the daemon's checks.
	 */
	if (cfg.shared)
		fuse_opt_add_arg(args, "-odefault_permissions");

	zo.rdonly = cfg.ro;
	zo.commit_ms = cfg.commit ? cfg.commit * 1000u : 0;
	zo.stage_bytes = (uint64_t)cfg.stage_mb << 20;
	zo.wb_threads = cfg.wb_threads;
	zo.defer_threads = true;
	zo.wait_busy = true;
	ret = zfs_mount(dev, &zo, &fs, err, sizeof(err));
	if (ret) {
		cli_error("mount", "%s", err[0] ? err : strerror(-ret));
		ret = CLI_MOUNT_EX_FAIL;
		goto out_args;
	}
	ret = CLI_MOUNT_EX_FAIL;
	ll.fs = fs;
	ll.readahead = cfg.readahead_kb << 10;
	se = fuse_session_new(args, &fs_ll_ops, sizeof(fs_ll_ops), &ll);
	if (!se) {
		/* The options were checked: no memory, or a libfuse bug. */
		cli_error("mount", "cannot start the FUSE session");
		goto out_fs;
	}
	i = xp_create(se, fs, xc, &xp, err, sizeof(err));
	if (i) {
		cli_error("mount", "%s", i == -EOPNOTSUPP ? err : strerror(-i));
		goto out_session;
	}
	ll.xp = xp;
	xp_set_idle(xp, !cfg.uring_sched || !strcmp(cfg.uring_sched, "auto"));
	if (fuse_set_signal_handlers(se)) {
		cli_error("mount", "cannot set signal handlers");
		goto out_session;
	}
	if (fuse_session_mount(se, dir)) {
		cli_error("mount", "%s: mounting failed (is /dev/fuse there, and are you allowed to mount?)",
			  dir);
		goto out_signals;
	}
	if (loop_fd >= 0) {
		close(loop_fd); /* the mount holds it now */
		loop_fd = -1;
	}
	/*
	 * So that umount waits for this daemon (umount.zonefuse). What utab
	 * still says of this directory is of a mount gone without a word (a
	 * daemon killed with -9, then fusermount3 -u): dropped first.
	 */
	if (geteuid() == 0) {
		cli_utab_drop(dir_real);
		i = cli_utab_note(real, dir_real,
				  cfg.blkdev ? "fuseblk.zonefuse" : "fuse.zonefuse");
		if (i)
			zlog_warn("%s: cannot record the mount in libmount's utab (%s): umount %s will return before this daemon has written everything back",
				  dir, strerror(-i), dir);
		else
			utab = true;
	}
	if (xp_attach(xp)) {
		cli_error("mount", "%s: cannot take over the FUSE session's I/O", dir);
		goto out_unmount;
	}
	/* Not fatal: without it reads are slower, not wrong. */
	i = mount_set_readahead(dir_real, cfg.readahead_kb);
	if (i)
		zlog_warn("%s: readahead stays at most the kernel's 128 KiB: %s",
			  dir, strerror(-i));
	if (fuse_daemonize(cfg.foreground)) {
		cli_error("mount", "cannot go to the background");
		goto out_unmount;
	}
	if (!cfg.foreground)
		zlog_to_syslog("zonefuse");
	ret = zfs_start(fs);
	if (ret) {
		zlog_err("%s: cannot start threads: %s", dev, strerror(-ret));
		ret = CLI_MOUNT_EX_FAIL;
		goto out_unmount;
	}
	zlog_info("%s mounted on %s%s", dev, dir, cfg.ro ? " (read-only)" : "");
	loop = fuse_loop_cfg_create();
	fuse_loop_cfg_set_max_threads(loop, cfg.threads ? cfg.threads : 10);
	/*
	 * The loop returns the signal that ended it (libfuse's handlers:
	 * SIGTERM, SIGINT, SIGHUP): an asked-for stop, as umount is.
	 */
	ret = xp_loop(xp, loop);
	ret = ret == SIGTERM || ret == SIGINT || ret == SIGHUP ? 0 :
	      ret ? CLI_MOUNT_EX_FAIL : 0;
	fuse_loop_cfg_destroy(loop);
out_unmount:
	fuse_session_unmount(se);
	/*
	 * Before the device is let go: a mount of it on the same directory,
	 * waiting for it, then records itself after this is dropped.
	 */
	if (utab)
		cli_utab_drop(dir_real);
out_signals:
	fuse_remove_signal_handlers(se);
out_session:
	fuse_session_destroy(se);
	xp_destroy(xp);
out_fs:
	i = zfs_unmount(fs);
	if (i) {
		zlog_err("%s: unmount did not complete cleanly: %s; run `zonefuse fsck %s`",
			 dev, strerror(-i), dev);
		ret = CLI_MOUNT_EX_FAIL;
	} else if (se) {
		zlog_info("%s unmounted cleanly", dev);
	}
out_args:
	if (loop_fd >= 0)
		close(loop_fd);
	free(cfg.transport);
	free(cfg.uring_sched);
	free(cfg.refused);
	free(cfg.own);
	free(fsname);
	free(found);
	return ret;
}

int cli_mount(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	const char *spec = NULL, *dir = NULL;
	int i, ret;

	/* Positional DEVICE and DIR; everything else is an option. */
	if (fuse_opt_add_arg(&args, "zonefuse"))
		return CLI_MOUNT_EX_FAIL;
	for (i = 1; i < argc; i++) {
		if (argv[i][0] != '-' && !spec) {
			spec = argv[i];
		} else if (argv[i][0] != '-' && !dir) {
			dir = argv[i];
		} else if (argv[i][0] != '-') {
			cli_error("mount", "'%s': one DEVICE and one DIR only (see zonefuse mount --help)",
				  argv[i]);
			fuse_opt_free_args(&args);
			return CLI_MOUNT_EX_USAGE;
		} else {
			fuse_opt_add_arg(&args, argv[i]);
			if (!strcmp(argv[i], "-o") && i + 1 < argc)
				fuse_opt_add_arg(&args, argv[++i]);
		}
	}
	ret = mount_main(spec, dir, &args, 0);
	fuse_opt_free_args(&args);
	return ret;
}

int cli_mount_opts(const char *spec, const char *dir, const char *opts,
		   unsigned int flags)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	int ret;

	if (fuse_opt_add_arg(&args, "zonefuse") ||
	    (opts && *opts && (fuse_opt_add_arg(&args, "-o") ||
			       fuse_opt_add_arg(&args, opts)))) {
		fuse_opt_free_args(&args);
		return CLI_MOUNT_EX_FAIL;
	}
	ret = mount_main(spec, dir, &args, flags);
	fuse_opt_free_args(&args);
	return ret;
}
