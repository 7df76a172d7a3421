// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * zonefuse dump DEVICE [PATH]: the namespace with each file's extents, one
 * line per file, for grep and awk.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "zonefuse/format.h"
#include "zonefuse/zfs.h"

static void dump_usage(FILE *f)
{
	fprintf(f,
		"usage: zonefuse dump DEVICE [PATH]\n"
		"Print the namespace under PATH (default /): one line per entry with\n"
		"type, inode, mode, size and path, then one line per extent:\n"
		"  extent zone Z offset O length L file_offset F\n");
}

struct dump_child {
	char *name;
	uint64_t ino;
};

struct dump_list {
	struct dump_child *v;
	size_t n, cap;
};

static int dump_collect(void *arg, const char *name, const struct stat *st,
			off_t next)
{
	struct dump_list *l = arg;

	(void)next;
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	if (l->n == l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 64;
		struct dump_child *nv = realloc(l->v, ncap * sizeof(*nv));

		if (!nv)
			return 1;
		l->v = nv;
		l->cap = ncap;
	}
	l->v[l->n].name = strdup(name);
	l->v[l->n].ino = st->st_ino;
	l->n++;
	return 0;
}

static char dump_type(mode_t m)
{
	return S_ISDIR(m) ? 'd' : S_ISLNK(m) ? 'l' : S_ISREG(m) ? 'f' : 'o';
}

static int dump_node(struct zfs *fs, uint64_t ino, const char *path)
{
	char *ext = NULL, target[ZF_SYMLINK_MAX + 1];
	struct dump_list l = { 0 };
	struct stat st;
	ssize_t n;
	size_t i;
	int ret;

	ret = zfs_getattr(fs, ino, &st);
	if (ret)
		return ret;
	printf("%c %" PRIu64 " %04o %" PRIu64 " %s", dump_type(st.st_mode), ino,
	       (unsigned int)(st.st_mode & 07777), (uint64_t)st.st_size,
	       path);
	if (S_ISLNK(st.st_mode) &&
	    zfs_readlink(fs, ino, target, sizeof(target)) >= 0)
		printf(" -> %s", target);
	putchar('\n');
	if (S_ISREG(st.st_mode)) {
		ext = malloc((1 << 20) + 1);
		if (!ext)
			return -ENOMEM;
		n = zfs_extents_text(fs, ino, ext, 1 << 20);
		if (n > 0) {
			char *line = ext, *nl;

			ext[n] = '\0';
			for (; (nl = strchr(line, '\n')); line = nl + 1) {
				*nl = '\0';
				printf("  extent %s\n", line);
			}
		}
		free(ext);
		return 0;
	}
	if (!S_ISDIR(st.st_mode))
		return 0;
	ret = zfs_readdir(fs, ino, 0, false, dump_collect, &l);
	for (i = 0; i < l.n; i++) {
		size_t plen = strlen(path) + strlen(l.v[i].name) + 2;
		char *child = malloc(plen);

		if (child) {
			snprintf(child, plen, "%s%s%s", path,
				 path[strlen(path) - 1] == '/' ? "" : "/",
				 l.v[i].name);
			if (!ret)
				ret = dump_node(fs, l.v[i].ino, child);
			free(child);
		}
		free(l.v[i].name);
	}
	free(l.v);
	return ret;
}

/* Walk @path from the root, component by component. */
static int dump_resolve(struct zfs *fs, const char *path, uint64_t *ino)
{
	char *copy = strdup(path), *tok, *save = NULL;
	int ret = 0;

	if (!copy)
		return -ENOMEM;
	*ino = ZF_ROOT_INO;
	for (tok = strtok_r(copy, "/", &save); tok;
	     tok = strtok_r(NULL, "/", &save)) {
		struct stat st;

		ret = zfs_lookup(fs, *ino, tok, &st);
		if (ret)
			break;
		*ino = st.st_ino;
	}
	free(copy);
	return ret;
}

int cli_dump(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct zfs_opts o = { .rdonly = true, .no_lock = true,
			      .defer_threads = true };
	const char *path = "/";
	char err[512] = "";
	struct zfs *fs;
	uint64_t ino;
	int c, ret;

	optind = 1;
	while ((c = getopt_long(argc, argv, "hV", opts, NULL)) != -1) {
		if (c == 'V')
			return cli_version();
		if (c == 'h') {
			dump_usage(stdout);
			return 0;
		}
		dump_usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (optind >= argc || argc - optind > 2) {
		cli_error("dump", "expected DEVICE [PATH]");
		dump_usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (argc - optind == 2)
		path = argv[optind + 1];
	ret = zfs_mount(argv[optind], &o, &fs, err, sizeof(err));
	if (ret) {
		cli_error("dump", "%s", err[0] ? err : strerror(-ret));
		return 1;
	}
	ret = dump_resolve(fs, path, &ino);
	if (ret)
		cli_error("dump", "%s: %s", path, strerror(-ret));
	else
		ret = dump_node(fs, ino, path);
	zfs_unmount(fs);
	return ret ? 1 : 0;
}
