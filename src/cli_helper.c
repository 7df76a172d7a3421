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
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

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
