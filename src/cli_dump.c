// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * zonefuse dump DEVICE [PATH] [--json]: the file system's identity, then
 * the namespace with each file's extents, one line per entry for grep and
 * awk (names escaped as `ls -b` does, so that a newline in a name cannot
 * split its line), or one JSON document.
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
#include "zonefuse/util.h"
#include "zonefuse/zfs.h"
#include "zonefuse/zjson.h"

static void dump_usage(FILE *f)
{
	fprintf(f,
		"usage: zonefuse dump DEVICE [PATH] [--json]\n"
		"Print the file system's identity:\n"
		"  filesystem uuid UUID [label LABEL]\n"
		"then the namespace under PATH (default /): one line per entry with\n"
		"type (d, f, l, o), inode, mode, size and path (and -> target), then\n"
		"one line per extent:\n"
		"  extent zone Z offset O length L file_offset F\n"
		"Names are escaped as ls -b does: \\\\ \\n \\t, and \\ooo for a space and\n"
		"other bytes that are not printable UTF-8, so that each field is one word.\n"
		"\n"
		"  --json     one JSON object: device, uuid, label, path, entries\n");
}

struct dump_child {
	char *name;
	uint64_t ino;
};

struct dump_list {
	struct dump_child *v;
	size_t n, cap;
	bool oom; /* the listing stopped short */
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

		if (!nv) {
			l->oom = true;
			return 1;
		}
		l->v = nv;
		l->cap = ncap;
	}
	l->v[l->n].name = strdup(name);
	if (!l->v[l->n].name) {
		l->oom = true;
		return 1;
	}
	l->v[l->n].ino = st->st_ino;
	l->n++;
	return 0;
}

static char dump_type(mode_t m)
{
	return S_ISDIR(m) ? 'd' : S_ISLNK(m) ? 'l' : S_ISREG(m) ? 'f' : 'o';
}

/* Where the entries go: text lines, or items of a JSON list. */
struct dump_out {
	struct zfs *fs;
	bool json;
	struct zjson_list l;
};

/* @s escaped (ls -b) on stdout. 0 or -ENOMEM. */
static int dump_escaped(const char *s)
{
	size_t len = strlen(s), n = 4 * len + 1;
	char *e = malloc(n);

	if (!e)
		return -ENOMEM;
	zutil_escape(e, n, s, len);
	fputs(e, stdout);
	free(e);
	return 0;
}

static int dump_extent_line(void *arg, const struct zfs_extent *e)
{
	(void)arg;
	printf("  extent zone %u offset %" PRIu64 " length %" PRIu64
	       " file_offset %" PRIu64 "\n",
	       e->zone, e->offset, e->len, e->foff);
	return 0;
}

static int dump_extent_json(void *arg, const struct zfs_extent *e)
{
	json_t *x = json_object();

	if (!x || json_array_append_new(arg, x) ||
	    zjson_set_u64(x, "zone", e->zone) ||
	    zjson_set_u64(x, "offset", e->offset) ||
	    zjson_set_u64(x, "length", e->len) ||
	    zjson_set_u64(x, "file_offset", e->foff))
		return -ENOMEM;
	return 0;
}

/* One entry as a line (and its extents' lines). */
static int dump_entry_text(struct dump_out *o, uint64_t ino,
			   const struct stat *st, const char *path,
			   const char *target)
{
	int ret;

	printf("%c %" PRIu64 " %04o %" PRIu64 " ", dump_type(st->st_mode), ino,
	       (unsigned int)(st->st_mode & 07777), (uint64_t)st->st_size);
	ret = dump_escaped(path);
	if (!ret && target) {
		fputs(" -> ", stdout);
		ret = dump_escaped(target);
	}
	putchar('\n');
	if (!ret && S_ISREG(st->st_mode))
		ret = zfs_extents_each(o->fs, ino, dump_extent_line, NULL);
	return ret;
}

/* One entry as an object of the list. */
static int dump_entry_json(struct dump_out *o, uint64_t ino,
			   const struct stat *st, const char *path,
			   const char *target)
{
	static const char *type[] = { ['d'] = "dir", ['f'] = "file",
				      ['l'] = "symlink", ['o'] = "other" };
	json_t *e = json_object(), *ext = NULL;
	int ret = -ENOMEM;

	if (!e || zjson_set_str(e, "type", type[(int)dump_type(st->st_mode)]) ||
	    zjson_set_u64(e, "inode", ino) ||
	    zjson_set_u64(e, "mode", st->st_mode & 07777) ||
	    zjson_set_u64(e, "size", (uint64_t)st->st_size) ||
	    zjson_set_str(e, "path", path) ||
	    (target && zjson_set_str(e, "target", target)))
		goto out_put;
	if (S_ISREG(st->st_mode)) {
		ext = json_array();
		if (!ext || json_object_set_new(e, "extents", ext))
			goto out_put;
		ret = zfs_extents_each(o->fs, ino, dump_extent_json, ext);
		if (ret)
			goto out_put;
	}
	ret = zjson_list_item(&o->l, e);
out_put:
	json_decref(e);
	return ret;
}

static int dump_node(struct dump_out *o, uint64_t ino, const char *path)
{
	char target[ZF_SYMLINK_MAX + 1];
	struct dump_list l = { 0 };
	bool link = false;
	struct stat st;
	size_t i;
	int ret;

	ret = zfs_getattr(o->fs, ino, &st);
	if (ret)
		return ret;
	if (S_ISLNK(st.st_mode) &&
	    zfs_readlink(o->fs, ino, target, sizeof(target)) >= 0)
		link = true;
	ret = o->json ? dump_entry_json(o, ino, &st, path, link ? target : NULL) :
			dump_entry_text(o, ino, &st, path, link ? target : NULL);
	if (ret || !S_ISDIR(st.st_mode))
		return ret;
	ret = zfs_readdir(o->fs, ino, 0, false, dump_collect, &l);
	if (!ret && l.oom)
		ret = -ENOMEM;
	for (i = 0; i < l.n; i++) {
		size_t plen = strlen(path) + strlen(l.v[i].name) + 2;
		char *child = malloc(plen);

		if (child) {
			snprintf(child, plen, "%s%s%s", path,
				 path[strlen(path) - 1] == '/' ? "" : "/",
				 l.v[i].name);
			if (!ret)
				ret = dump_node(o, l.v[i].ino, child);
			free(child);
		} else if (!ret) {
			ret = -ENOMEM;
		}
		free(l.v[i].name);
	}
	free(l.v);
	return ret;
}

/* The identity: a first line, or the head of the document. */
static int dump_begin(struct dump_out *o, const char *dev, const char *path)
{
	struct zfs_stats st;
	json_t *h = NULL;
	char uuid[37];
	int ret;

	ret = zfs_get_stats(o->fs, &st);
	if (ret)
		return ret;
	zutil_uuid_str(st.uuid, uuid);
	if (!o->json) {
		printf("filesystem uuid %s", uuid);
		if (st.label[0]) {
			fputs(" label ", stdout);
			ret = dump_escaped(st.label);
		}
		putchar('\n');
		return ret;
	}
	h = json_object();
	ret = -ENOMEM;
	if (h && !zjson_set_str(h, "device", dev) &&
	    !zjson_set_str(h, "uuid", uuid) &&
	    !zjson_set_str(h, "label", st.label) &&
	    !zjson_set_str(h, "path", path))
		ret = zjson_list_begin(&o->l, stdout, h, "entries");
	json_decref(h);
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
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct zfs_opts o = { .rdonly = true, .no_lock = true,
			      .defer_threads = true };
	struct dump_out out = { .json = false };
	const char *path = "/";
	char err[512] = "";
	uint64_t ino;
	int c, ret;

	optind = 1;
	while ((c = getopt_long(argc, argv, "hV", opts, NULL)) != -1) {
		switch (c) {
		case 'V':
			return cli_version();
		case 'j':
			out.json = true;
			break;
		case 'h':
			dump_usage(stdout);
			return 0;
		default:
			dump_usage(stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind >= argc || argc - optind > 2) {
		cli_error("dump", "expected DEVICE [PATH]");
		dump_usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (argc - optind == 2)
		path = argv[optind + 1];
	ret = zfs_mount(argv[optind], &o, &out.fs, err, sizeof(err));
	if (ret) {
		cli_error("dump", "%s", err[0] ? err : strerror(-ret));
		return 1;
	}
	ret = dump_resolve(out.fs, path, &ino);
	if (ret) {
		cli_error("dump", "%s: %s", path, strerror(-ret));
		goto out_unmount;
	}
	ret = dump_begin(&out, argv[optind], path);
	if (!ret)
		ret = dump_node(&out, ino, path);
	if (!ret && out.json)
		ret = zjson_list_end(&out.l);
	if (ret)
		cli_error("dump", "%s: %s", argv[optind], strerror(-ret));
out_unmount:
	zfs_unmount(out.fs);
	return ret ? 1 : 0;
}
