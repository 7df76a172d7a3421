// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The helpers util-linux runs for a zonefuse file system, by their names
 * (src/main.c): mount(8) runs /sbin/mount.TYPE for `mount -t zonefuse`
 * and for an fstab line of type zonefuse; for type fuse.zonefuse it runs
 * /sbin/mount.fuse.zonefuse if there is one (else mount.fuse3, which
 * runs `zonefuse SPEC DIR -o OPTS` from $PATH). It looks only in /sbin,
 * /sbin/fs.d and /sbin/fs, never in $PATH: meson installs the helpers as
 * symlinks to zonefuse in sbindir (docs/usage.md says where they must be
 * for mount(8) to find them).
 *
 *   mount.zonefuse SPEC DIR [-sfnv] [-N NS] [-o OPTIONS] [-t TYPE]
 *
 * is libmount's call (its exec_helper()): -s sloppy, -f fake, -n no mtab,
 * -v verbose. The options are `zonefuse mount`'s, checked the same way.
 *
 *   umount.zonefuse DIR [-nlfv] [-t TYPE]
 *
 * is umount(8)'s, for a mount whose utab entry says helper=zonefuse (the
 * mount records it: cli_utab_note()), or, as umount.fuse.zonefuse and
 * umount.fuseblk.zonefuse, whose type in mountinfo says zonefuse. The
 * kernel does not wait for a FUSE daemon at unmount (but for fuseblk's
 * DESTROY), so umount(8) would return while the daemon still writes what
 * it staged; the helper unmounts, then waits for the daemon to exit
 * (docs/usage.md, "Durability").
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <libgen.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cli.h"

/* Daemons of one mount waited for at most (one, but for a fork's child). */
#define HELPER_MAX_DAEMONS 8
/* Seconds of waiting before the helper says what it waits for. */
#define HELPER_WAIT_SAY_S 5

static void helper_mount_usage(FILE *f, const char *prog)
{
	fprintf(f,
		"usage: %s DEVICE DIR [-sfnv] [-o OPTION[,OPTION...]] [-t TYPE]\n"
		"mount(8)'s helper for zonefuse: mounts as `zonefuse mount DEVICE DIR -o\n"
		"OPTIONS` does, in the background (see zonefuse mount --help).\n"
		"  -s   sloppy: drop unknown options with a warning instead of refusing\n"
		"  -f   fake: check everything, mount nothing\n"
		"  -n   accepted (there is no /etc/mtab to write)\n"
		"  -v   say what is mounted where\n"
		"  -t   zonefuse or fuse.zonefuse\n"
		"Exit status (mount(8)'s): 0 mounted, 1 a usage error, 32 the mount failed.\n",
		prog);
}

/* Append @more to the comma-separated list *@list. 0 or -1 (no memory). */
static int helper_add_opts(char **list, const char *more)
{
	size_t len = *list ? strlen(*list) : 0;
	char *n;

	if (!*more)
		return 0;
	n = realloc(*list, len + strlen(more) + 2);
	if (!n)
		return -1;
	if (len)
		n[len++] = ',';
	strcpy(n + len, more);
	*list = n;
	return 0;
}

int cli_mount_helper(int argc, char **argv)
{
	const char *prog = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 :
						    argv[0];
	const char *spec = NULL, *dir = NULL, *type = NULL;
	unsigned int flags = 0;
	char *opts = NULL;
	int i, ret = CLI_MOUNT_EX_USAGE;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			helper_mount_usage(stdout, prog);
			ret = 0;
			goto out;
		}
		if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
			ret = cli_version();
			goto out;
		}
		if (a[0] != '-' || !a[1]) {
			if (!spec) {
				spec = a;
			} else if (!dir) {
				dir = a;
			} else {
				fprintf(stderr, "%s: '%s': one DEVICE and one DIR only\n",
					prog, a);
				goto out;
			}
			continue;
		}
		/* A cluster of flags, the last of which may take a value. */
		for (a++; *a; a++) {
			const char *val;

			if (*a == 's' || *a == 'f' || *a == 'n' || *a == 'v') {
				flags |= *a == 's' ? CLI_MOUNT_SLOPPY :
					 *a == 'f' ? CLI_MOUNT_FAKE :
					 *a == 'v' ? CLI_MOUNT_VERBOSE : 0;
				continue;
			}
			if (*a != 'o' && *a != 't' && *a != 'N') {
				fprintf(stderr, "%s: unknown flag -%c\n", prog, *a);
				helper_mount_usage(stderr, prog);
				goto out;
			}
			val = a[1] ? a + 1 : i + 1 < argc ? argv[++i] : NULL;
			if (!val) {
				fprintf(stderr, "%s: -%c needs a value\n", prog, *a);
				goto out;
			}
			if (*a == 'o' && helper_add_opts(&opts, val)) {
				ret = CLI_MOUNT_EX_FAIL;
				goto out;
			}
			if (*a == 't')
				type = val;
			if (*a == 'N') {
				fprintf(stderr, "%s: -N (another mount namespace) is not supported: run mount(8) in that namespace (nsenter -m)\n",
					prog);
				goto out;
			}
			break;
		}
	}
	if (type && strcmp(type, "zonefuse") && strcmp(type, "fuse.zonefuse")) {
		fprintf(stderr, "%s: -t %s: this helper mounts zonefuse (types zonefuse, fuse.zonefuse)\n",
			prog, type);
		goto out;
	}
	if (!spec || !dir) {
		fprintf(stderr, "%s: expected DEVICE and DIR\n", prog);
		helper_mount_usage(stderr, prog);
		goto out;
	}
	ret = cli_mount_opts(spec, dir, opts, flags);
out:
	free(opts);
	return ret;
}

static void helper_umount_usage(FILE *f, const char *prog)
{
	fprintf(f,
		"usage: %s DIR [-nlfv] [-t TYPE]\n"
		"umount(8)'s helper for zonefuse: unmounts DIR, then waits until the\n"
		"daemon has written everything back and exited.\n"
		"  -l   lazy (MNT_DETACH): detach now, do not wait for the daemon\n"
		"  -f   force (MNT_FORCE)\n"
		"  -n   accepted (there is no /etc/mtab to write)\n"
		"  -v   say what is unmounted and waited for\n"
		"  -t   fuse.zonefuse or fuseblk.zonefuse\n"
		"Exit status (umount(8)'s): 0 unmounted, 1 a usage error, 32 it failed.\n",
		prog);
}

/*
 * The topmost mount on @dir, from mountinfo, into @fs (a reference the
 * caller drops with mnt_unref_fs()). The mount point is never stat'ed: a
 * dead daemon's mount answers ENOTCONN. Tried as given, then with its
 * parent made canonical. 0 or -ENOENT.
 */
static int helper_find_mount(const char *dir, struct libmnt_fs **fs)
{
	char buf[PATH_MAX], parent[PATH_MAX], *d, *b;
	struct libmnt_table *tb = cli_mount_table();
	const char *tries[2] = { dir, NULL };
	struct libmnt_fs *f = NULL;
	int i;

	if (!tb)
		return -ENOENT;
	snprintf(buf, sizeof(buf), "%s", dir);
	d = dirname(buf);
	if (realpath(d, parent)) {
		snprintf(buf, sizeof(buf), "%s", dir);
		b = basename(buf);
		if (strlen(parent) + strlen(b) + 2 <= sizeof(parent)) {
			if (strcmp(parent, "/"))
				strcat(parent, "/");
			strcat(parent, b);
			tries[1] = parent;
		}
	}
	for (i = 0; i < 2 && !f; i++)
		if (tries[i])
			f = mnt_table_find_target(tb, tries[i], MNT_ITER_BACKWARD);
	if (f)
		mnt_ref_fs(f);
	mnt_unref_table(tb);
	*fs = f;
	return f ? 0 : -ENOENT;
}

/* What a daemon holds open: /dev/fuse, and its device or image. */
struct helper_held {
	bool blk;	 /* @src is a block device: match st_rdev */
	struct stat src; /* the mount's source */
	bool has_img;	 /* a loop device's backing file (-o blkdev) */
	struct stat img;
};

static bool helper_same(const struct stat *a, const struct stat *b, bool blk)
{
	if (blk)
		return S_ISBLK(a->st_mode) && a->st_rdev == b->st_rdev;
	return S_ISREG(a->st_mode) && a->st_dev == b->st_dev &&
	       a->st_ino == b->st_ino;
}

/* Does process @pid hold /dev/fuse and what @h says open? */
static bool helper_holds(const char *pid, const struct helper_held *h)
{
	char path[PATH_MAX];
	bool fuse = false, dev = false;
	struct dirent *e;
	struct stat st;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%s/fd", pid);
	d = opendir(path);
	if (!d)
		return false;
	while ((e = readdir(d)) && !(fuse && dev)) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/fd/%s", pid, e->d_name);
		if (stat(path, &st))
			continue;
		if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(10, 229))
			fuse = true; /* /dev/fuse: misc 229 */
		else if (helper_same(&st, &h->src, h->blk) ||
			 (h->has_img && helper_same(&st, &h->img, false)))
			dev = true;
	}
	closedir(d);
	return fuse && dev;
}

/*
 * pidfds of the daemons serving the mount of @src: the processes holding
 * /dev/fuse and @src (for a loop device, the image behind it) open, as a
 * zonefuse daemon does until it has written everything and closed the
 * device. Taken before the unmount, so that a pid reused after the
 * daemon's exit is never waited for. How many, into @fds.
 */
static int helper_daemons(const char *src, int *fds, int max, pid_t *pids)
{
	char img[PATH_MAX];
	struct helper_held h = { 0 };
	struct dirent *e;
	int n = 0, fd;
	DIR *d;

	if (stat(src, &h.src))
		return 0;
	h.blk = S_ISBLK(h.src.st_mode);
	h.has_img = h.blk && !cli_loop_backing(src, img, sizeof(img)) &&
		    !stat(img, &h.img);
	d = opendir("/proc");
	if (!d)
		return 0;
	while (n < max && (e = readdir(d))) {
		pid_t pid = (pid_t)strtol(e->d_name, NULL, 10);

		if (pid <= 0 || pid == getpid() || !helper_holds(e->d_name, &h))
			continue;
		fd = (int)syscall(SYS_pidfd_open, pid, 0);
		if (fd < 0)
			continue; /* gone already */
		pids[n] = pid;
		fds[n++] = fd;
	}
	closedir(d);
	return n;
}

/* Wait until every process of @fds has exited; closes them. */
static void helper_wait(const char *prog, const char *dir, const char *src,
			int *fds, const pid_t *pids, int n)
{
	struct pollfd p[HELPER_MAX_DAEMONS];
	int i, left = n, waited = 0;

	for (i = 0; i < n; i++)
		p[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
	while (left) {
		int r = poll(p, (nfds_t)n, 1000);

		if (r < 0 && errno != EINTR)
			break;
		for (i = 0; r > 0 && i < n; i++) {
			if (p[i].fd < 0 || !p[i].revents)
				continue;
			close(p[i].fd);
			p[i].fd = -1; /* poll() skips it now */
			left--;
		}
		if (r == 0 && ++waited == HELPER_WAIT_SAY_S)
			for (i = 0; i < n; i++)
				if (p[i].fd >= 0)
					fprintf(stderr, "%s: %s: unmounted; waiting for the daemon (pid %d) to finish writing to %s\n",
						prog, dir, (int)pids[i], src);
	}
	for (i = 0; i < n; i++)
		if (p[i].fd >= 0)
			close(p[i].fd);
}

int cli_umount_helper(int argc, char **argv)
{
	const char *prog = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 :
						    argv[0];
	const char *dir = NULL, *type = NULL, *src;
	char *target = NULL;
	int fds[HELPER_MAX_DAEMONS], n = 0, i, flags = 0, verbose = 0;
	pid_t pids[HELPER_MAX_DAEMONS];
	struct libmnt_fs *fs = NULL;
	char *src_copy = NULL;
	int ret = CLI_MOUNT_EX_USAGE;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			helper_umount_usage(stdout, prog);
			return 0;
		}
		if (!strcmp(a, "-V") || !strcmp(a, "--version"))
			return cli_version();
		if (a[0] != '-' || !a[1]) {
			if (dir) {
				fprintf(stderr, "%s: '%s': one DIR only\n", prog, a);
				return CLI_MOUNT_EX_USAGE;
			}
			dir = a;
			continue;
		}
		for (a++; *a; a++) {
			if (*a == 'n')
				continue;
			if (*a == 'l' || *a == 'f' || *a == 'v') {
				flags |= *a == 'l' ? MNT_DETACH :
					 *a == 'f' ? MNT_FORCE : 0;
				verbose |= *a == 'v';
				continue;
			}
			if (*a == 't' && (a[1] || i + 1 < argc)) {
				type = a[1] ? a + 1 : argv[++i];
				break;
			}
			fprintf(stderr, "%s: %s-%c%s\n", prog,
				*a == 'r' ? "" : "unknown flag ", *a,
				*a == 'r' ? ": remounting read-only when the unmount fails is not supported" :
				*a == 'N' ? " (another mount namespace: run umount(8) in it)" : "");
			helper_umount_usage(stderr, prog);
			return CLI_MOUNT_EX_USAGE;
		}
	}
	if (!dir) {
		fprintf(stderr, "%s: expected DIR\n", prog);
		helper_umount_usage(stderr, prog);
		return CLI_MOUNT_EX_USAGE;
	}
	if (type && !cli_is_zonefuse_type(type)) {
		fprintf(stderr, "%s: -t %s: this helper unmounts zonefuse (types fuse.zonefuse, fuseblk.zonefuse)\n",
			prog, type);
		return CLI_MOUNT_EX_USAGE;
	}
	ret = CLI_MOUNT_EX_FAIL;
	if (helper_find_mount(dir, &fs) ||
	    !cli_is_zonefuse_type(mnt_fs_get_fstype(fs))) {
		fprintf(stderr, "%s: %s: not a zonefuse mount (see findmnt %s)\n",
			prog, dir, dir);
		goto out_fs;
	}
	src = mnt_fs_get_source(fs);
	src_copy = strdup(src ? src : "");
	target = strdup(mnt_fs_get_target(fs));
	if (!src_copy || !target)
		goto out_fs;
	/* A lazy unmount lets the mount live on while it is used: no wait. */
	if (!(flags & MNT_DETACH))
		n = helper_daemons(src_copy, fds, HELPER_MAX_DAEMONS, pids);
	if (umount2(target, flags) < 0) {
		fprintf(stderr, "%s: %s: %s\n", prog, target, strerror(errno));
		goto out_fds;
	}
	cli_utab_drop(target); /* libmount's umount(8) does too; by hand, not */
	if (verbose)
		printf("%s: %s (%s) unmounted%s\n", prog, target, src_copy,
		       n ? "; waiting for its daemon to write everything back" :
			   "");
	fflush(stdout);
	helper_wait(prog, target, src_copy, fds, pids, n);
	n = 0;
	ret = 0;
out_fds:
	for (i = 0; i < n; i++)
		close(fds[i]);
out_fs:
	free(src_copy);
	free(target);
	mnt_unref_fs(fs);
	return ret;
}
