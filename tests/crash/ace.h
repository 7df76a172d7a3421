/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The crash-test harness (crash_ace): its model of what a workload did and
 * of what must survive a crash (the oracle), and what it reads back from a
 * crash state. See crash_ace.c for the program and docs/crash-consistency.md
 * for the rules it checks.
 *
 * Times are positions in the device recording (zdev_record_seq()): an
 * operation that started at seq s can have reached the media only at crash
 * points after s; one that returned at seq e is complete at every crash
 * point at or after e.
 */
#ifndef ZONEFUSE_TESTS_ACE_H
#define ZONEFUSE_TESTS_ACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "zonefuse/zfs.h"

#define ACE_PATH_MAX 160
#define ACE_XNAME_MAX 32
#define ACE_XVAL_MAX 16384

/* ---- the model ---------------------------------------------------------- */

/* One content of a regular file, as an operation left it. */
struct ace_ver {
	uint8_t *data;
	uint64_t size;
	uint64_t start; /* seq when the operation that made it started */
};

/* A lower bound: from seq `seq` on, at least version `ver` is durable. */
struct ace_bound {
	uint64_t seq;
	uint32_t ver;
};

/* A file, directory or symlink: an inode, whatever its names. */
struct ace_id {
	mode_t type; /* S_IFREG, S_IFDIR, S_IFLNK */
	char target[ACE_PATH_MAX];
	struct ace_ver *v; /* regular files: contents, oldest first */
	uint32_t nv;
	struct ace_bound *lo; /* fsync, fdatasync, sync of this file */
	uint32_t nlo;
	uint64_t ino; /* in the live file system */
};

struct ace_ent {
	char path[ACE_PATH_MAX]; /* "d/B"; the root is not listed */
	uint32_t id;
};

/* An xattr of the model: its value is ace_pattern(len, offset 0, tag). */
struct ace_xattr {
	uint32_t id;
	char name[ACE_XNAME_MAX];
	uint32_t len;
	uint32_t tag;
};

/* An xattr as read back. */
struct ace_sxattr {
	char name[ACE_XNAME_MAX];
	uint32_t len;
	uint8_t *val;
};

/*
 * One version of the namespace: every name, and the xattrs. Each operation
 * that changes names or xattrs makes a new one. A rename that replaces a
 * file promises that whoever sees the new name sees the content the
 * source had: `rb_id` / `rb_ver` (docs/format.md, rule 3).
 */
struct ace_ns {
	struct ace_ent *ents; /* sorted by path */
	uint32_t nents;
	struct ace_xattr *xa; /* sorted by id, then name */
	uint32_t nxa;
	uint64_t start;
	bool has_rb;
	uint32_t rb_id, rb_ver;
	char what[96]; /* the operation that made it */
};

struct ace_model {
	struct ace_id *ids;
	uint32_t nids;
	struct ace_ns *ns;
	uint32_t nns;
	struct ace_bound *ns_lo; /* any commit: fsync, fsyncdir, sync */
	uint32_t nns_lo;
	uint32_t tag; /* next write's pattern */
	bool dry;     /* sizes only, no contents (checking workloads) */
};

void ace_model_init(struct ace_model *m);
void ace_model_free(struct ace_model *m);
/*
 * Deep copy (the setup's model is copied for each workload); with @dry,
 * without the contents: enough to tell whether operations apply.
 */
void ace_model_copy(struct ace_model *dst, const struct ace_model *src,
		    bool dry);

/* The current namespace. */
static inline struct ace_ns *ace_cur(struct ace_model *m)
{
	return &m->ns[m->nns - 1];
}

/* Entry @path in @ns, or NULL. */
struct ace_ent *ace_ns_find(const struct ace_ns *ns, const char *path);

/* The byte a write with @tag puts at file offset @off: never zero. */
void ace_pattern(uint8_t *buf, size_t len, uint64_t off, uint32_t tag);

/* ---- shared helpers (ace_util.c) ------------------------------------------ */

/* Who the harness acts as: root, umask 022. */
extern const struct zfs_ctx ace_ctx;

/* realloc() that aborts the run when memory runs out. */
void *ace_xrealloc(void *p, size_t n);

/* One extent of zfs_extents_text(): its zone, offset there, length, file offset. */
struct ace_extent {
	unsigned int zone;
	uint64_t off, len, foff;
};

/* Parse one line of zfs_extents_text(); false if it is not an extent. */
bool ace_extent_parse(const char *line, struct ace_extent *e);

/* ---- operations ----------------------------------------------------------- */

/*
 * Run one operation, "verb args" (see crash_ace.c for the language), on
 * the live file system @fs (NULL: only check that it applies to the model)
 * and record it in @m. @dev is the recording device (its seq dates the
 * operation), or NULL. Returns 0, -EINVAL for a line that does not parse
 * or does not apply to the model (a name that is missing, or exists), or
 * the negative errno of the zfs call that failed (said in @err).
 */
int ace_op(struct zfs *fs, struct zdev *dev, struct ace_model *m,
	   const char *line, char *err, size_t errlen);

/* ---- a crash state, as read back -------------------------------------------- */

struct ace_sfile {
	char path[ACE_PATH_MAX];
	uint64_t ino;
	mode_t mode;
	uint64_t size;
	uint32_t nlink;
	char target[ACE_PATH_MAX];
};

struct ace_sino {
	uint64_t ino;
	uint8_t *data; /* regular files: the content */
	uint64_t size;
	/* Extents as file ranges [foff, foff + len), from the extents xattr. */
	uint64_t (*ext)[2];
	uint32_t next;
	struct ace_sxattr *xa;
	uint32_t nxa;
};

struct ace_state {
	struct ace_sfile *f; /* sorted by path */
	uint32_t nf;
	struct ace_sino *in;
	uint32_t nin;
};

/*
 * Read everything a user can see of @fs. 0 or a negative errno (@err),
 * with nothing left to free.
 */
int ace_state_read(struct zfs *fs, struct ace_state *st, char *err,
		   size_t errlen);
void ace_state_free(struct ace_state *st);

/* What kind of rule a violation breaks. */
#define ACE_V_RENAME_DATA 1u /* only rule 3's promise that a rename over a
				file brings the data written before it */
#define ACE_V_OTHER 2u	     /* anything else */

/*
 * Check the crash state @st, taken at a crash point before record @rec,
 * against @m. Every problem found is appended to @out (lines, each
 * starting with two spaces), and *@classes gets the ACE_V_* kinds of
 * rules broken. Returns the number of problems (0: the state is one the
 * rules allow).
 */
int ace_check(const struct ace_model *m, const struct ace_state *st,
	      uint64_t rec, char *out, size_t outlen, unsigned int *classes);

#endif /* ZONEFUSE_TESTS_ACE_H */
