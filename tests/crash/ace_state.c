// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Reading a crash state back through the file-system library, and the
 * oracle: is what was read one of the states the rules allow?
 *
 * The rules (docs/format.md, "Crash safety"; docs/crash-consistency.md):
 *  - Names and xattrs: each namespace operation is one journal record and
 *    the journal is replayed in order up to a point, so after a crash the
 *    names are exactly those after some operation: not older than the
 *    last commit (any fsync, fdatasync, fsyncdir or sync) that returned
 *    before the crash, not newer than the last operation that had started.
 *  - Content: a file fsynced (or fdatasynced, or synced) has at least the
 *    content it had then; no file has a content newer than what its last
 *    started write left; between them, each byte is one some allowed
 *    content has there. A file that a rename put in place of another has
 *    the content it had at the rename, if the rename is seen (rule 3).
 *  - Nothing reads as zeros where an extent maps data no write left as
 *    zeros: that would be an extent naming data that never reached the
 *    media (rule 1).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ace.h"
#include "zonefuse/util.h"

/* ---- reading a state ---------------------------------------------------- */

struct ace_dirent {
	char name[256];
	struct stat st;
};

struct ace_dirbuf {
	struct ace_dirent *e;
	uint32_t n;
};

static int ace_fill(void *arg, const char *name, const struct stat *st,
		    off_t next)
{
	struct ace_dirbuf *b = arg;

	(void)next;
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	b->e = ace_xrealloc(b->e, (b->n + 1) * sizeof(*b->e));
	snprintf(b->e[b->n].name, sizeof(b->e[b->n].name), "%s", name);
	b->e[b->n++].st = *st;
	return 0;
}

static struct ace_sino *ace_state_ino(struct ace_state *st, uint64_t ino)
{
	uint32_t i;

	for (i = 0; i < st->nin; i++)
		if (st->in[i].ino == ino)
			return &st->in[i];
	return NULL;
}

static int ace_read_xattrs(struct zfs *fs, struct ace_sino *si)
{
	char list[4096], *p;
	ssize_t n = zfs_listxattr(fs, si->ino, list, sizeof(list));

	if (n < 0)
		return (int)n;
	for (p = list; p < list + n; p += strlen(p) + 1) {
		struct ace_sxattr x = { 0 };
		ssize_t l;

		if (strlen(p) >= sizeof(x.name))
			return -ENAMETOOLONG;
		memcpy(x.name, p, strlen(p) + 1);
		x.val = ace_xrealloc(NULL, ACE_XVAL_MAX);
		l = zfs_getxattr(fs, NULL, si->ino, p, x.val, ACE_XVAL_MAX);
		if (l < 0) {
			free(x.val);
			return (int)l;
		}
		x.len = (uint32_t)l;
		si->xa = ace_xrealloc(si->xa, (si->nxa + 1) * sizeof(x));
		si->xa[si->nxa++] = x;
	}
	return 0;
}

static int ace_read_file(struct zfs *fs, struct ace_sino *si)
{
	char *text, *line, *save = NULL;
	uint64_t done = 0;
	ssize_t n;
	int ret;

	si->data = ace_xrealloc(NULL, si->size);
	ret = zfs_open(fs, &ace_ctx, si->ino, O_RDONLY, NULL);
	if (ret)
		return ret;
	while (done < si->size) {
		n = zfs_read(fs, si->ino, si->data + done,
			     (size_t)ZF_MIN(si->size - done, 1u << 20),
			     (off_t)done);
		if (n < 0) {
			ret = (int)n;
			break;
		}
		if (!n) { /* short: the size said more than there is */
			ret = -ENODATA;
			break;
		}
		done += (uint64_t)n;
	}
	zfs_release(fs, si->ino, 0);
	if (ret)
		return ret;

	text = ace_xrealloc(NULL, 1 << 20);
	n = zfs_extents_text(fs, si->ino, text, 1 << 20);
	if (n < 0) {
		free(text);
		return (int)n;
	}
	text[n] = '\0';
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		struct ace_extent e;

		if (!ace_extent_parse(line, &e))
			continue;
		si->ext = ace_xrealloc(si->ext,
				       (si->next + 1) * sizeof(*si->ext));
		si->ext[si->next][0] = e.foff;
		si->ext[si->next++][1] = e.len;
	}
	free(text);
	return 0;
}

static int ace_walk(struct zfs *fs, uint64_t dir, const char *prefix,
		    struct ace_state *st, char *err, size_t errlen)
{
	struct ace_dirbuf b = { 0 };
	uint32_t i;
	int ret;

	ret = zfs_readdir(fs, dir, 0, true, ace_fill, &b);
	if (ret) {
		snprintf(err, errlen, "readdir of '%s': %s", prefix,
			 strerror(-ret));
		goto out_free;
	}
	for (i = 0; i < b.n; i++) {
		const struct stat *s = &b.e[i].st;
		struct ace_sfile *f;
		struct ace_sino *si;

		st->f = ace_xrealloc(st->f, (st->nf + 1) * sizeof(*st->f));
		f = &st->f[st->nf++];
		memset(f, 0, sizeof(*f));
		if (strlen(prefix) + strlen(b.e[i].name) + 2 > sizeof(f->path)) {
			snprintf(err, errlen, "a name under '%s' is too long",
				 prefix);
			ret = -ENAMETOOLONG;
			goto out_free;
		}
		{
			size_t pl = strlen(prefix);

			memcpy(f->path, prefix, pl);
			if (pl)
				f->path[pl++] = '/';
			memcpy(f->path + pl, b.e[i].name,
			       strlen(b.e[i].name) + 1);
		}
		f->ino = s->st_ino;
		f->mode = s->st_mode;
		f->size = (uint64_t)s->st_size;
		f->nlink = (uint32_t)s->st_nlink;
		if (S_ISLNK(s->st_mode)) {
			ret = zfs_readlink(fs, s->st_ino, f->target,
					   sizeof(f->target));
			if (ret < 0) {
				snprintf(err, errlen, "readlink '%s': %s",
					 f->path, strerror(-ret));
				goto out_free;
			}
			ret = 0;
		}
		if (!ace_state_ino(st, s->st_ino)) {
			st->in = ace_xrealloc(st->in,
					      (st->nin + 1) * sizeof(*st->in));
			si = &st->in[st->nin++];
			memset(si, 0, sizeof(*si));
			si->ino = s->st_ino;
			si->size = (uint64_t)s->st_size;
			if (S_ISREG(s->st_mode))
				ret = ace_read_file(fs, si);
			if (!ret && !S_ISLNK(s->st_mode))
				ret = ace_read_xattrs(fs, si);
			if (ret) {
				snprintf(err, errlen, "reading '%s': %s",
					 f->path, strerror(-ret));
				goto out_free;
			}
		}
		if (S_ISDIR(s->st_mode)) {
			char path[ACE_PATH_MAX];

			snprintf(path, sizeof(path), "%s", f->path);
			ret = ace_walk(fs, s->st_ino, path, st, err, errlen);
			if (ret)
				goto out_free;
		}
	}
out_free:
	free(b.e);
	return ret;
}

static int ace_sfile_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ace_sfile *)a)->path,
		      ((const struct ace_sfile *)b)->path);
}

int ace_state_read(struct zfs *fs, struct ace_state *st, char *err,
		   size_t errlen)
{
	int ret;

	memset(st, 0, sizeof(*st));
	ret = ace_walk(fs, 1, "", st, err, errlen);
	if (ret)
		ace_state_free(st); /* what was read before the failure */
	else if (st->nf) /* qsort(NULL, 0, ...) is undefined */
		qsort(st->f, st->nf, sizeof(*st->f), ace_sfile_cmp);
	return ret;
}

void ace_state_free(struct ace_state *st)
{
	uint32_t i;

	for (i = 0; i < st->nin; i++) {
		uint32_t j;

		for (j = 0; j < st->in[i].nxa; j++)
			free(st->in[i].xa[j].val);
		free(st->in[i].data);
		free(st->in[i].ext);
		free(st->in[i].xa);
	}
	free(st->in);
	free(st->f);
	memset(st, 0, sizeof(*st));
}

/* ---- the oracle ------------------------------------------------------------ */

struct ace_out {
	char *buf;
	size_t len, size;
	int problems;
};

__attribute__((format(printf, 2, 3))) static void ace_say(struct ace_out *o,
							   const char *fmt,
							   ...)
{
	va_list ap;
	int n;

	if (o->len >= o->size)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->len, o->size - o->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->len = ZF_MIN(o->len + (size_t)n, o->size - 1);
}

static const char *ace_type_name(mode_t type)
{
	switch (type & S_IFMT) {
	case S_IFREG:
		return "file";
	case S_IFDIR:
		return "directory";
	case S_IFLNK:
		return "symlink";
	default:
		return "special file";
	}
}

/* The highest bound at or before @rec, or @dflt. */
static uint32_t ace_bound_at(const struct ace_bound *b, uint32_t n,
			     uint64_t rec, uint32_t dflt)
{
	uint32_t i, v = dflt;

	for (i = 0; i < n; i++)
		if (b[i].seq <= rec && b[i].ver > v)
			v = b[i].ver;
	return v;
}

static bool ace_mapped(const struct ace_sino *si, uint64_t off)
{
	uint32_t i;

	for (i = 0; i < si->next; i++)
		if (off >= si->ext[i][0] && off - si->ext[i][0] < si->ext[i][1])
			return true;
	return false;
}

/* Say why into @why: a reason longer than the buffer is cut, not lost. */
__attribute__((format(printf, 3, 4))) static void
ace_why(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
}

/*
 * Does the state's namespace equal version @ns? Fills @map (id -> inode).
 * On a mismatch, says the first difference in @why.
 */
static bool ace_ns_match(const struct ace_model *m, const struct ace_ns *ns,
			 const struct ace_state *st, uint64_t *map, char *why,
			 size_t whylen)
{
	uint32_t i, j, a = 0, b = 0;

	memset(map, 0, m->nids * sizeof(*map));
	while (a < ns->nents || b < st->nf) {
		int c = a == ns->nents ? 1 :
			b == st->nf    ? -1 :
					 strcmp(ns->ents[a].path, st->f[b].path);
		const struct ace_id *id;

		if (c < 0) {
			ace_why(why, whylen, "'%s' is missing",
				ns->ents[a].path);
			return false;
		}
		if (c > 0) {
			ace_why(why, whylen, "'%s' (%s) should not exist",
				st->f[b].path, ace_type_name(st->f[b].mode));
			return false;
		}
		id = &m->ids[ns->ents[a].id];
		if ((st->f[b].mode & S_IFMT) != id->type) {
			ace_why(why, whylen, "'%s' is a %s, not a %s",
				st->f[b].path, ace_type_name(st->f[b].mode),
				ace_type_name(id->type));
			return false;
		}
		if (id->type == S_IFLNK && strcmp(id->target, st->f[b].target)) {
			ace_why(why, whylen,
				"symlink '%s' points to '%s', not '%s'",
				st->f[b].path, st->f[b].target, id->target);
			return false;
		}
		if (map[ns->ents[a].id] && map[ns->ents[a].id] != st->f[b].ino) {
			ace_why(why, whylen,
				"'%s' should be a hard link of inode %" PRIu64
				", it is inode %" PRIu64,
				st->f[b].path, map[ns->ents[a].id], st->f[b].ino);
			return false;
		}
		map[ns->ents[a].id] = st->f[b].ino;
		a++;
		b++;
	}
	/* Distinct files must be distinct inodes. */
	for (i = 1; i < m->nids; i++)
		for (j = i + 1; map[i] && j < m->nids; j++)
			if (map[i] == map[j]) {
				ace_why(why, whylen,
					"two different files are one inode %" PRIu64,
					map[i]);
				return false;
			}
	/* Xattrs, per file. */
	for (i = 1; i < m->nids; i++) {
		const struct ace_sino *si;
		uint32_t want = 0;

		if (!map[i] || m->ids[i].type == S_IFLNK)
			continue;
		si = ace_state_ino((struct ace_state *)st, map[i]);
		for (j = 0; j < ns->nxa; j++) {
			const struct ace_xattr *x = &ns->xa[j];
			const struct ace_sxattr *y = NULL;
			uint8_t val[ACE_XVAL_MAX];
			uint32_t k;

			if (x->id != i)
				continue;
			want++;
			for (k = 0; si && k < si->nxa; k++)
				if (!strcmp(si->xa[k].name, x->name))
					y = &si->xa[k];
			if (y && y->len == x->len)
				ace_pattern(val, x->len, 0, x->tag);
			if (!y || y->len != x->len ||
			    memcmp(y->val, val, x->len)) {
				ace_why(why, whylen, "xattr %s of inode %" PRIu64
					" is %s", x->name, map[i],
					y ? "not the value set" : "missing");
				return false;
			}
		}
		if (si && si->nxa != want) {
			ace_why(why, whylen,
				"inode %" PRIu64 " has %u xattrs, expected %u",
				map[i], si->nxa, want);
			return false;
		}
	}
	return true;
}

/*
 * What is wrong with byte @off of the file (inode @si) if its allowed
 * contents are versions [lo, hi] of @id: NULL if nothing.
 */
static const char *ace_byte_problem(const struct ace_id *id,
				    const struct ace_sino *si, uint64_t off,
				    uint32_t lo, uint32_t hi)
{
	uint8_t c = si->data[off];
	bool any_zero = false, beyond = false;
	uint32_t k;

	for (k = lo; k <= hi; k++) {
		const struct ace_ver *v = &id->v[k];

		if (off >= v->size) {
			beyond = true;
			continue;
		}
		if (v->data[off] == c)
			return NULL;
		any_zero |= !v->data[off];
	}
	if (c)
		return "hold bytes no allowed content has there";
	if (any_zero)
		return "read as zeros"; /* not reached: a zero matched */
	if (ace_mapped(si, off))
		return "read as zeros where an extent maps data: the extent names data that never reached the media (rule 1)";
	if (beyond)
		return NULL; /* a hole left by an extension seen in part */
	return "are a hole where durable data was: lost data";
}

/*
 * Check the content of file @idn (inode @si) against its allowed
 * versions [lo, hi]. Says each problem; returns how many.
 */
static int ace_check_content(const struct ace_model *m, uint32_t idn,
			     const char *path, const struct ace_sino *si,
			     uint32_t lo, uint32_t hi, const char *lo_why,
			     struct ace_out *o)
{
	const struct ace_id *id = &m->ids[idn];
	uint64_t minsz = UINT64_MAX, maxsz = 0, off = 0;
	uint32_t k;
	int problems = 0;

	/* The usual case: the file is exactly one allowed content. */
	for (k = lo; k <= hi; k++)
		if (id->v[k].size == si->size &&
		    (!si->size || !memcmp(id->v[k].data, si->data, si->size)))
			return 0;
	for (k = lo; k <= hi; k++) {
		minsz = ZF_MIN(minsz, id->v[k].size);
		maxsz = ZF_MAX(maxsz, id->v[k].size);
	}
	if (si->size < minsz || si->size > maxsz) {
		if (lo == hi)
			ace_say(o, "  file '%s' (inode %" PRIu64 "): size %" PRIu64
				", expected exactly %" PRIu64 " (%s)\n",
				path, si->ino, si->size, minsz, lo_why);
		else
			ace_say(o, "  file '%s' (inode %" PRIu64 "): size %" PRIu64
				", allowed %" PRIu64 "..%" PRIu64
				" (contents %u..%u; %s)\n",
				path, si->ino, si->size, minsz, maxsz, lo, hi,
				lo_why);
		problems++;
	}
	while (off < si->size && problems < 4) {
		const char *kind = ace_byte_problem(id, si, off, lo, hi);
		uint64_t from = off;

		if (!kind) {
			off++;
			continue;
		}
		/* A run ends after 64 good bytes (a byte of a wrong
		   content matches the right one 1 time in 256). */
		for (uint64_t good = 0; off < si->size && good < 64; off++) {
			const char *k = ace_byte_problem(id, si, off, lo, hi);

			if (k && k != kind)
				break;
			good = k ? 0 : good + 1;
		}
		while (off > from + 1 && !ace_byte_problem(id, si, off - 1, lo, hi))
			off--;
		ace_say(o, "  file '%s' (inode %" PRIu64 ", %" PRIu64
			" bytes): bytes %" PRIu64 "..%" PRIu64
			" %s (contents %u..%u allowed; %s)\n",
			path, si->ino, si->size, from, off - 1, kind, lo, hi,
			lo_why);
		problems++;
	}
	if (!problems) {
		/* Each byte is allowed, but as a whole it is no content:
		   fine for a crash in the middle of writes. */
		if (lo == hi) {
			ace_say(o, "  file '%s': not its fsynced content\n",
				path);
			problems++;
		}
	}
	return problems;
}

/* Check every file's content under the mapping of namespace version @k. */
static int ace_check_contents(const struct ace_model *m, uint32_t k,
			      const struct ace_state *st, const uint64_t *map,
			      uint64_t rec, struct ace_out *o,
			      unsigned int *classes)
{
	const struct ace_ns *ns = &m->ns[k];
	uint32_t i, j;
	int problems = 0;

	for (i = 1; i < m->nids; i++) {
		const struct ace_id *id = &m->ids[i];
		const struct ace_sino *si;
		const char *path = "?";
		uint32_t lo, hi = 0, flo, nl = 0;
		char why[256];
		int n;

		if (!map[i] || id->type != S_IFREG)
			continue;
		si = ace_state_ino((struct ace_state *)st, map[i]);
		for (j = 0; j < ns->nents; j++)
			if (ns->ents[j].id == i) {
				path = ns->ents[j].path;
				nl++;
			}
		for (j = 0; j < st->nf; j++)
			if (st->f[j].ino == map[i] && st->f[j].nlink != nl) {
				ace_say(o, "  file '%s' (inode %" PRIu64
					"): link count %u, it has %u names\n",
					st->f[j].path, map[i], st->f[j].nlink,
					nl);
				problems++;
				*classes |= ACE_V_OTHER;
				break;
			}
		for (j = 0; j < id->nv; j++)
			if (id->v[j].start < rec)
				hi = j;
		flo = ace_bound_at(id->lo, id->nlo, rec, 0);
		lo = flo;
		snprintf(why, sizeof(why), flo ? "fsynced" : "never fsynced");
		/* A rename over another file, if seen, brings the content. */
		for (j = 0; j <= k; j++)
			if (m->ns[j].has_rb && m->ns[j].rb_id == i &&
			    m->ns[j].rb_ver > lo) {
				lo = m->ns[j].rb_ver;
				snprintf(why, sizeof(why),
					 "the rename '%s' is seen, so the content the file had then is due (rule 3)",
					 m->ns[j].what);
			}
		if (lo > hi)
			lo = hi;
		n = ace_check_content(m, i, path, si, lo, hi, why, o);
		problems += n;
		if (n && lo > flo) {
			/* Would it pass without rule 3's promise? */
			char tmp[1024];
			struct ace_out scratch = { tmp, 0, sizeof(tmp), 0 };

			*classes |= ace_check_content(m, i, path, si,
						      ZF_MIN(flo, hi), hi, why,
						      &scratch) ?
					    ACE_V_OTHER :
					    ACE_V_RENAME_DATA;
		} else if (n) {
			*classes |= ACE_V_OTHER;
		}
	}
	return problems;
}

static void ace_say_ns(struct ace_out *o, const struct ace_model *m,
		       const struct ace_ns *ns)
{
	uint32_t i;

	for (i = 0; i < ns->nents; i++)
		ace_say(o, "%s%s%s", i ? " " : "", ns->ents[i].path,
			m->ids[ns->ents[i].id].type == S_IFDIR ? "/" : "");
}

int ace_check(const struct ace_model *m, const struct ace_state *st,
	      uint64_t rec, char *out, size_t outlen, unsigned int *classes)
{
	unsigned int best_classes = 0;
	struct ace_out o = { out, 0, outlen, 0 };
	uint32_t lo, hi = 0, k;
	uint64_t *map;
	char why[ACE_PATH_MAX + 128] = "";
	char firstbuf[4096];
	bool matched = false;
	int best = -1;

	if (outlen)
		out[0] = '\0';
	map = ace_xrealloc(NULL, m->nids * sizeof(*map));
	for (k = 0; k < m->nns; k++)
		if (m->ns[k].start < rec)
			hi = k;
	lo = ace_bound_at(m->ns_lo, m->nns_lo, rec, 0);
	if (lo > hi)
		lo = hi;

	/* Newest first: the likeliest, and the one to report against. */
	for (k = hi + 1; k-- > lo;) {
		char buf[4096];
		struct ace_out c = { buf, 0, sizeof(buf), 0 };
		int n;

		buf[0] = '\0';
		if (!ace_ns_match(m, &m->ns[k], st, map, why, sizeof(why)))
			continue;
		unsigned int cl = 0;

		matched = true;
		n = ace_check_contents(m, k, st, map, rec, &c, &cl);
		if (!n) {
			free(map);
			*classes = 0;
			return 0;
		}
		if (best < 0 || n < best) {
			best = n;
			best_classes = cl;
			memcpy(firstbuf, buf, c.len + 1);
		}
	}
	if (matched) {
		free(map);
		ace_say(&o, "%s", firstbuf);
		*classes = best_classes;
		return best;
	}
	*classes = ACE_V_OTHER;
	ace_say(&o, "  the names are none of those the operations allow here (after '%s' .. after '%s'):\n",
		m->ns[lo].what, m->ns[hi].what);
	ace_ns_match(m, &m->ns[hi], st, map, why, sizeof(why));
	ace_say(&o, "    against the newest: %s\n", why);
	if (lo != hi) {
		ace_ns_match(m, &m->ns[lo], st, map, why, sizeof(why));
		ace_say(&o, "    against the oldest: %s\n", why);
	}
	free(map);
	ace_say(&o, "    expected at least: ");
	ace_say_ns(&o, m, &m->ns[lo]);
	ace_say(&o, "\n    found: ");
	for (k = 0; k < st->nf; k++)
		ace_say(&o, "%s%s%s", k ? " " : "", st->f[k].path,
			S_ISDIR(st->f[k].mode) ? "/" : "");
	ace_say(&o, "\n");
	return 1;
}
