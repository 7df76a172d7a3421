// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The harness's model: every operation of a workload is run on the live
 * file system and recorded here, dated by the device recording, so that
 * any crash point can be told what must be there (what an fsync or a
 * commit made durable) and what may be there (anything an operation that
 * had started could have left).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ace.h"
#include "zonefuse/util.h"
#include "zonefuse/zdev.h"

static void *ace_xdup(const void *p, size_t n)
{
	void *q = ace_xrealloc(NULL, n);

	if (n)
		memcpy(q, p, n);
	return q;
}

void ace_pattern(uint8_t *buf, size_t len, uint64_t off, uint32_t tag)
{
	size_t i;

	for (i = 0; i < len; i++) {
		uint64_t o = off + i, z;

		/* splitmix64 of (tag, word), one byte of it per offset. */
		z = ((uint64_t)tag << 40 ^ (o >> 3)) + 0x9e3779b97f4a7c15ull;
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		z ^= z >> 31;
		buf[i] = (uint8_t)(z >> (8 * (o & 7)));
		if (!buf[i])
			buf[i] = (uint8_t)(tag | 1);
	}
}

void ace_model_init(struct ace_model *m)
{
	memset(m, 0, sizeof(*m));
	/* Id 0 is the root; namespace version 0 is empty. */
	m->ids = ace_xrealloc(NULL, sizeof(*m->ids));
	memset(m->ids, 0, sizeof(*m->ids));
	m->ids[0].type = S_IFDIR;
	m->nids = 1;
	m->ns = ace_xrealloc(NULL, sizeof(*m->ns));
	memset(m->ns, 0, sizeof(*m->ns));
	snprintf(m->ns[0].what, sizeof(m->ns[0].what), "(setup)");
	m->nns = 1;
	m->tag = 1;
}

void ace_model_free(struct ace_model *m)
{
	uint32_t i, j;

	for (i = 0; i < m->nids; i++) {
		for (j = 0; j < m->ids[i].nv; j++)
			free(m->ids[i].v[j].data);
		free(m->ids[i].v);
		free(m->ids[i].lo);
	}
	free(m->ids);
	for (i = 0; i < m->nns; i++) {
		free(m->ns[i].ents);
		free(m->ns[i].xa);
	}
	free(m->ns);
	free(m->ns_lo);
	memset(m, 0, sizeof(*m));
}

void ace_model_copy(struct ace_model *d, const struct ace_model *s,
		    bool dry)
{
	uint32_t i, j;

	*d = *s;
	d->dry |= dry;
	d->ids = ace_xdup(s->ids, s->nids * sizeof(*s->ids));
	for (i = 0; i < s->nids; i++) {
		struct ace_id *di = &d->ids[i];
		const struct ace_id *si = &s->ids[i];

		di->v = ace_xdup(si->v, si->nv * sizeof(*si->v));
		for (j = 0; j < si->nv; j++)
			di->v[j].data = d->dry ? NULL :
						 ace_xdup(si->v[j].data,
							  si->v[j].size);
		di->lo = ace_xdup(si->lo, si->nlo * sizeof(*si->lo));
	}
	d->ns = ace_xdup(s->ns, s->nns * sizeof(*s->ns));
	for (i = 0; i < s->nns; i++) {
		d->ns[i].ents = ace_xdup(s->ns[i].ents,
					 s->ns[i].nents * sizeof(*s->ns[i].ents));
		d->ns[i].xa = ace_xdup(s->ns[i].xa,
				       s->ns[i].nxa * sizeof(*s->ns[i].xa));
	}
	d->ns_lo = ace_xdup(s->ns_lo, s->nns_lo * sizeof(*s->ns_lo));
}

struct ace_ent *ace_ns_find(const struct ace_ns *ns, const char *path)
{
	uint32_t i;

	for (i = 0; i < ns->nents; i++)
		if (!strcmp(ns->ents[i].path, path))
			return &ns->ents[i];
	return NULL;
}

static int ace_ent_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ace_ent *)a)->path,
		      ((const struct ace_ent *)b)->path);
}

static int ace_xa_cmp(const void *a, const void *b)
{
	const struct ace_xattr *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* A new namespace version, a copy of the current one, made at @start. */
static struct ace_ns *ace_ns_push(struct ace_model *m, uint64_t start,
				  const char *what)
{
	struct ace_ns *cur, *n;

	m->ns = ace_xrealloc(m->ns, (m->nns + 1) * sizeof(*m->ns));
	cur = &m->ns[m->nns - 1];
	n = &m->ns[m->nns++];
	*n = *cur;
	n->ents = ace_xdup(cur->ents, cur->nents * sizeof(*cur->ents));
	n->xa = ace_xdup(cur->xa, cur->nxa * sizeof(*cur->xa));
	n->start = start;
	n->has_rb = false;
	snprintf(n->what, sizeof(n->what), "%s", what);
	return n;
}

static void ace_ns_add(struct ace_ns *ns, const char *path, uint32_t id)
{
	ns->ents = ace_xrealloc(ns->ents, (ns->nents + 1) * sizeof(*ns->ents));
	memset(&ns->ents[ns->nents], 0, sizeof(ns->ents[0]));
	snprintf(ns->ents[ns->nents].path, ACE_PATH_MAX, "%s", path);
	ns->ents[ns->nents++].id = id;
	qsort(ns->ents, ns->nents, sizeof(*ns->ents), ace_ent_cmp);
}

static void ace_ns_del(struct ace_ns *ns, struct ace_ent *e)
{
	uint32_t i = (uint32_t)(e - ns->ents);

	memmove(e, e + 1, (ns->nents - i - 1) * sizeof(*e));
	ns->nents--;
}

static bool ace_ns_links(const struct ace_ns *ns, uint32_t id)
{
	uint32_t i;

	for (i = 0; i < ns->nents; i++)
		if (ns->ents[i].id == id)
			return true;
	return false;
}

/* Drop the xattrs of ids no name leads to any more. */
static void ace_ns_gc_xattrs(struct ace_ns *ns)
{
	uint32_t i, n = 0;

	for (i = 0; i < ns->nxa; i++)
		if (ace_ns_links(ns, ns->xa[i].id))
			ns->xa[n++] = ns->xa[i];
	ns->nxa = n;
}

static uint32_t ace_id_new(struct ace_model *m, mode_t type, uint64_t start)
{
	struct ace_id *id;

	m->ids = ace_xrealloc(m->ids, (m->nids + 1) * sizeof(*m->ids));
	id = &m->ids[m->nids];
	memset(id, 0, sizeof(*id));
	id->type = type;
	if (type == S_IFREG) {
		id->v = ace_xrealloc(NULL, sizeof(*id->v));
		id->v[0].data = NULL;
		id->v[0].size = 0;
		id->v[0].start = start;
		id->nv = 1;
	}
	return m->nids++;
}

/* A new content of @id, a copy of its current one resized to @size. */
static struct ace_ver *ace_ver_push(struct ace_id *id, uint64_t size,
				    uint64_t start, bool dry)
{
	struct ace_ver *cur, *n;

	id->v = ace_xrealloc(id->v, (id->nv + 1) * sizeof(*id->v));
	cur = &id->v[id->nv - 1];
	n = &id->v[id->nv++];
	n->size = size;
	n->start = start;
	if (dry) {
		n->data = NULL;
		return n;
	}
	n->data = ace_xrealloc(NULL, size);
	memset(n->data, 0, size);
	if (cur->size && size)
		memcpy(n->data, cur->data, ZF_MIN(cur->size, size));
	n->size = size;
	n->start = start;
	return n;
}

static void ace_bound_add(struct ace_bound **b, uint32_t *n, uint64_t seq,
			  uint32_t ver)
{
	*b = ace_xrealloc(*b, (*n + 1) * sizeof(**b));
	(*b)[*n].seq = seq;
	(*b)[(*n)++].ver = ver;
}

/* "d/B" -> "d" and "B"; "A" -> "." and "A". */
static void ace_split(const char *path, char *parent, const char **name)
{
	const char *slash = strrchr(path, '/');

	if (!slash) {
		strcpy(parent, ".");
		*name = path;
		return;
	}
	memcpy(parent, path, (size_t)(slash - path));
	parent[slash - path] = '\0';
	*name = slash + 1;
}

/* The model's id of @path ("." is the root), or -1. */
static int64_t ace_model_id(struct ace_model *m, const char *path)
{
	struct ace_ent *e;

	if (!strcmp(path, "."))
		return 0;
	e = ace_ns_find(ace_cur(m), path);
	return e ? (int64_t)e->id : -1;
}

static mode_t ace_model_type(struct ace_model *m, const char *path)
{
	int64_t id = ace_model_id(m, path);

	return id < 0 ? 0 : m->ids[id].type;
}

static bool ace_dir_empty(struct ace_model *m, const char *path)
{
	struct ace_ns *ns = ace_cur(m);
	size_t l = strlen(path);
	uint32_t i;

	for (i = 0; i < ns->nents; i++)
		if (!strncmp(ns->ents[i].path, path, l) &&
		    ns->ents[i].path[l] == '/')
			return false;
	return true;
}

/* ---- the live file system ---------------------------------------------- */

/*
 * The inode of @path. Lookups are never given back: the harness plays a
 * kernel that keeps every dentry it met, as one does for a short run.
 */
static int ace_live_ino(struct zfs *fs, const char *path, uint64_t *ino)
{
	char buf[ACE_PATH_MAX], *p, *save = NULL;
	uint64_t cur = 1;
	struct stat st;
	int ret;

	if (!strcmp(path, ".")) {
		*ino = 1;
		return 0;
	}
	snprintf(buf, sizeof(buf), "%s", path);
	for (p = strtok_r(buf, "/", &save); p; p = strtok_r(NULL, "/", &save)) {
		ret = zfs_lookup(fs, cur, p, &st);
		if (ret)
			return ret;
		cur = st.st_ino;
	}
	*ino = cur;
	return 0;
}

static int ace_live_parent(struct zfs *fs, const char *path, uint64_t *pino,
			   const char **name)
{
	char parent[ACE_PATH_MAX];

	ace_split(path, parent, name);
	return ace_live_ino(fs, parent, pino);
}

static int ace_live_write(struct zfs *fs, uint64_t ino, const uint8_t *buf,
			  uint64_t off, uint64_t len)
{
	int ret = zfs_open(fs, &ace_ctx, ino, O_WRONLY, NULL);
	uint64_t done = 0;

	if (ret)
		return ret;
	while (done < len) {
		size_t n = (size_t)ZF_MIN(len - done, ZFS_CHUNK);
		ssize_t w = zfs_write(fs, &ace_ctx, ino, buf + done, n,
				      (off_t)(off + done), false);

		if (w < 0) {
			ret = (int)w;
			break;
		}
		if (!w) {
			ret = -EIO;
			break;
		}
		done += (uint64_t)w;
	}
	zfs_release(fs, ino, 0);
	return ret;
}

static int ace_live_fsync(struct zfs *fs, uint64_t ino, bool datasync)
{
	int ret = zfs_open(fs, &ace_ctx, ino, O_RDONLY, NULL);

	if (ret)
		return ret;
	ret = zfs_fsync(fs, ino, datasync);
	zfs_release(fs, ino, 0);
	return ret;
}

/* ---- operations --------------------------------------------------------- */

#define ACE_MAX_ARGS 5

/*
 * The operation language, one operation per line, paths relative to the
 * root ("." is the root):
 *   create P | mkdir P | symlink P TARGET | link P Q
 *   write P OFF|end LEN | trunc P SIZE
 *   rename P Q | unlink P | rmdir P
 *   setxattr P NAME LEN | rmxattr P NAME
 *   fsync P | fdatasync P | fsyncdir P | sync
 */
int ace_op(struct zfs *fs, struct zdev *dev, struct ace_model *m,
	   const char *line, char *err, size_t errlen)
{
	char buf[512], *av[ACE_MAX_ARGS], *save = NULL, parent[ACE_PATH_MAX];
	uint64_t s = dev ? zdev_record_seq(dev) : 0, e, ino = 0, pino = 0;
	const char *name = NULL;
	struct stat st;
	struct ace_ns *ns;
	int ac = 0, ret = 0;
	int64_t id = -1;

	snprintf(buf, sizeof(buf), "%s", line);
	for (char *p = strtok_r(buf, " \t", &save); p && ac < ACE_MAX_ARGS;
	     p = strtok_r(NULL, " \t", &save))
		av[ac++] = p;
	if (!ac)
		goto out_bad;
	if (ac >= 2) {
		if (strlen(av[1]) >= ACE_PATH_MAX - 8)
			goto out_bad;
		id = ace_model_id(m, av[1]);
		ace_split(av[1], parent, &name);
	}

#define ACE_NEED(cond)                                                         \
	do {                                                                   \
		if (!(cond))                                                   \
			goto out_bad;                                          \
	} while (0)
#define ACE_LIVE(call)                                                         \
	do {                                                                   \
		if (fs) {                                                      \
			ret = (call);                                          \
			if (ret < 0)                                           \
				goto out_live;                                 \
		}                                                              \
	} while (0)

	if (!strcmp(av[0], "create") || !strcmp(av[0], "mkdir")) {
		bool dir = av[0][0] == 'm';

		ACE_NEED(ac == 2 && id < 0 &&
			 ace_model_type(m, parent) == S_IFDIR);
		ACE_LIVE(ace_live_parent(fs, av[1], &pino, &name));
		if (dir) {
			ACE_LIVE(zfs_mkdir(fs, &ace_ctx, pino, name, 0755,
					   &st));
		} else {
			ACE_LIVE(zfs_create(fs, &ace_ctx, pino, name,
					    S_IFREG | 0644,
					    O_WRONLY | O_CREAT | O_EXCL, &st, NULL));
			if (fs)
				zfs_release(fs, st.st_ino, 0);
		}
		id = ace_id_new(m, dir ? S_IFDIR : S_IFREG, s);
		ace_ns_add(ace_ns_push(m, s, line), av[1], (uint32_t)id);
	} else if (!strcmp(av[0], "symlink")) {
		ACE_NEED(ac == 3 && id < 0 &&
			 ace_model_type(m, parent) == S_IFDIR &&
			 strlen(av[2]) < ACE_PATH_MAX);
		ACE_LIVE(ace_live_parent(fs, av[1], &pino, &name));
		ACE_LIVE(zfs_symlink(fs, &ace_ctx, pino, name, av[2], &st));
		id = ace_id_new(m, S_IFLNK, s);
		snprintf(m->ids[id].target, ACE_PATH_MAX, "%s", av[2]);
		ace_ns_add(ace_ns_push(m, s, line), av[1], (uint32_t)id);
	} else if (!strcmp(av[0], "link")) {
		char qparent[ACE_PATH_MAX];
		const char *qname;

		ACE_NEED(ac == 3 && id > 0 && m->ids[id].type == S_IFREG &&
			 ace_model_id(m, av[2]) < 0);
		ace_split(av[2], qparent, &qname);
		ACE_NEED(ace_model_type(m, qparent) == S_IFDIR);
		ACE_LIVE(ace_live_ino(fs, av[1], &ino));
		ACE_LIVE(ace_live_parent(fs, av[2], &pino, &qname));
		ACE_LIVE(zfs_link(fs, &ace_ctx, ino, pino, qname, &st));
		ace_ns_add(ace_ns_push(m, s, line), av[2], (uint32_t)id);
	} else if (!strcmp(av[0], "write")) {
		struct ace_id *f;
		struct ace_ver *v;
		uint64_t off, len;

		ACE_NEED(ac == 4 && id > 0 && m->ids[id].type == S_IFREG);
		f = &m->ids[id];
		off = !strcmp(av[2], "end") ? f->v[f->nv - 1].size :
					      strtoull(av[2], NULL, 0);
		len = strtoull(av[3], NULL, 0);
		ACE_NEED(len > 0 && len <= (64u << 20));
		if (fs) {
			ACE_LIVE(ace_live_ino(fs, av[1], &ino));
			ACE_LIVE(zfs_getattr(fs, ino, &st));
			if ((uint64_t)st.st_size != f->v[f->nv - 1].size) {
				snprintf(err, errlen,
					 "%s: the file system says %lld bytes, the model %llu",
					 line, (long long)st.st_size,
					 (unsigned long long)f->v[f->nv - 1].size);
				return -EILSEQ;
			}
		}
		v = ace_ver_push(f, ZF_MAX(f->v[f->nv - 1].size, off + len),
				 s, m->dry);
		m->tag++;
		if (!m->dry)
			ace_pattern(v->data + off, len, off, m->tag - 1);
		ACE_LIVE(ace_live_write(fs, ino, v->data + off, off, len));
	} else if (!strcmp(av[0], "trunc")) {
		uint64_t size;

		ACE_NEED(ac == 3 && id > 0 && m->ids[id].type == S_IFREG);
		size = strtoull(av[2], NULL, 0);
		if (fs) {
			memset(&st, 0, sizeof(st));
			st.st_size = (off_t)size;
			ACE_LIVE(ace_live_ino(fs, av[1], &ino));
			ACE_LIVE(zfs_setattr(fs, &ace_ctx, ino, &st,
					     ZFS_SET_SIZE, &st));
		}
		ace_ver_push(&m->ids[id], size, s, m->dry);
	} else if (!strcmp(av[0], "rename")) {
		char qparent[ACE_PATH_MAX];
		const char *qname;
		int64_t q = ace_model_id(m, av[2]);
		size_t l = strlen(av[1]);
		uint32_t i, rb_ver = 0;
		bool rb = false;

		ACE_NEED(ac == 3 && id > 0 && q != id &&
			 !(!strncmp(av[2], av[1], l) && av[2][l] == '/'));
		ace_split(av[2], qparent, &qname);
		ACE_NEED(ace_model_type(m, qparent) == S_IFDIR);
		if (q >= 0) {
			ACE_NEED((m->ids[q].type == S_IFDIR) ==
				 (m->ids[id].type == S_IFDIR));
			ACE_NEED(m->ids[q].type != S_IFDIR ||
				 ace_dir_empty(m, av[2]));
			/* Rule 3: who sees the new name sees the content. */
			if (m->ids[id].type == S_IFREG) {
				rb = true;
				rb_ver = m->ids[id].nv - 1;
			}
		}
		ACE_LIVE(ace_live_parent(fs, av[1], &pino, &name));
		ACE_LIVE(ace_live_parent(fs, av[2], &ino, &qname));
		ACE_LIVE(zfs_rename(fs, &ace_ctx, pino, name, ino, qname, 0));
		ns = ace_ns_push(m, s, line);
		if (q >= 0)
			ace_ns_del(ns, ace_ns_find(ns, av[2]));
		for (i = 0; i < ns->nents; i++) {
			char *p = ns->ents[i].path;
			char moved[ACE_PATH_MAX * 2];

			if (!strcmp(p, av[1])) {
				snprintf(p, ACE_PATH_MAX, "%s", av[2]);
			} else if (!strncmp(p, av[1], l) && p[l] == '/') {
				snprintf(moved, sizeof(moved), "%s%s", av[2],
					 p + l);
				if (strlen(moved) >= ACE_PATH_MAX)
					goto out_bad;
				memcpy(p, moved, strlen(moved) + 1);
			}
		}
		if (ns->nents) /* qsort(NULL, 0, ...) is undefined */
			qsort(ns->ents, ns->nents, sizeof(*ns->ents),
			      ace_ent_cmp);
		ace_ns_gc_xattrs(ns);
		ns->has_rb = rb;
		ns->rb_id = (uint32_t)id;
		ns->rb_ver = rb_ver;
	} else if (!strcmp(av[0], "unlink") || !strcmp(av[0], "rmdir")) {
		bool dir = av[0][0] == 'r';

		ACE_NEED(ac == 2 && id > 0 &&
			 (m->ids[id].type == S_IFDIR) == dir &&
			 (!dir || ace_dir_empty(m, av[1])));
		ACE_LIVE(ace_live_parent(fs, av[1], &pino, &name));
		ACE_LIVE(dir ? zfs_rmdir(fs, &ace_ctx, pino, name) :
			       zfs_unlink(fs, &ace_ctx, pino, name));
		ns = ace_ns_push(m, s, line);
		ace_ns_del(ns, ace_ns_find(ns, av[1]));
		ace_ns_gc_xattrs(ns);
	} else if (!strcmp(av[0], "setxattr") || !strcmp(av[0], "rmxattr")) {
		bool set = av[0][0] == 's';
		struct ace_xattr x = { 0 };
		uint8_t *val = NULL;
		uint32_t i;

		ACE_NEED(ac == (set ? 4 : 3) && id > 0 &&
			 m->ids[id].type != S_IFLNK &&
			 strlen(av[2]) < ACE_XNAME_MAX);
		x.id = (uint32_t)id;
		snprintf(x.name, sizeof(x.name), "%s", av[2]);
		if (set) {
			x.len = (uint32_t)strtoul(av[3], NULL, 0);
			ACE_NEED(x.len <= ACE_XVAL_MAX);
			x.tag = m->tag++;
			val = ace_xrealloc(NULL, x.len);
			ace_pattern(val, x.len, 0, x.tag);
		}
		ns = ace_cur(m);
		for (i = 0; i < ns->nxa; i++)
			if (ns->xa[i].id == x.id && !strcmp(ns->xa[i].name, x.name))
				break;
		if (!set && i == ns->nxa) {
			free(val);
			goto out_bad;
		}
		if (fs) {
			ret = ace_live_ino(fs, av[1], &ino);
			if (!ret)
				ret = set ? zfs_setxattr(fs, &ace_ctx, ino,
							 x.name, val, x.len, 0) :
					    zfs_removexattr(fs, &ace_ctx, ino,
							    x.name);
			free(val);
			if (ret < 0)
				goto out_live;
		} else {
			free(val);
		}
		ns = ace_ns_push(m, s, line);
		if (i < ns->nxa) {
			memmove(&ns->xa[i], &ns->xa[i + 1],
				(ns->nxa - i - 1) * sizeof(x));
			ns->nxa--;
		}
		if (set) {
			ns->xa = ace_xrealloc(ns->xa,
					      (ns->nxa + 1) * sizeof(x));
			ns->xa[ns->nxa++] = x;
			qsort(ns->xa, ns->nxa, sizeof(x), ace_xa_cmp);
		}
	} else if (!strcmp(av[0], "fsync") || !strcmp(av[0], "fdatasync") ||
		   !strcmp(av[0], "fsyncdir")) {
		bool dir = !strcmp(av[0], "fsyncdir");

		ACE_NEED(ac == 2 && id >= 0 &&
			 (m->ids[id].type == S_IFDIR) == dir);
		ACE_LIVE(ace_live_ino(fs, av[1], &ino));
		ACE_LIVE(dir ? zfs_fsyncdir(fs, ino) :
			       ace_live_fsync(fs, ino, av[0][1] == 'd'));
		e = dev ? zdev_record_seq(dev) : 0;
		/* Any commit makes every earlier record durable (rule 3). */
		ace_bound_add(&m->ns_lo, &m->nns_lo, e, m->nns - 1);
		if (!dir)
			ace_bound_add(&m->ids[id].lo, &m->ids[id].nlo, e,
				      m->ids[id].nv - 1);
	} else if (!strcmp(av[0], "sync")) {
		uint32_t i;

		ACE_NEED(ac == 1);
		ACE_LIVE(zfs_sync(fs));
		e = dev ? zdev_record_seq(dev) : 0;
		ace_bound_add(&m->ns_lo, &m->nns_lo, e, m->nns - 1);
		for (i = 0; i < m->nids; i++)
			if (m->ids[i].type == S_IFREG)
				ace_bound_add(&m->ids[i].lo, &m->ids[i].nlo, e,
					      m->ids[i].nv - 1);
	} else {
		goto out_bad;
	}
#undef ACE_NEED
#undef ACE_LIVE
	return 0;

out_bad:
	snprintf(err, errlen, "'%s' does not apply here", line);
	return -EINVAL;
out_live:
	snprintf(err, errlen, "'%s' failed: %s", line, strerror(-ret));
	return ret;
}
