// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * crash_ace: the exhaustive crash-test harness (docs/crash-consistency.md).
 *
 * Workloads are short sequences of file-system operations (Ace-style: one
 * to three core operations, each maybe followed by a persistence point,
 * plus the checkpoint patterns of torch.save, DCP and HF Trainer). Each
 * runs on the file-system library over a small emulator image whose device
 * is recorded (zdev_record(), through ZONEFUSE_RECORD around zfs_mount, so
 * the mount's own writes are in the log too), while a model dates every
 * operation by its position in the recording. Then the file system stops
 * as a power cut would (zfs_crash()), and for every crash point of the
 * recording and every state the device could be in there (crash.h: each
 * zone keeps a prefix of its unflushed writes; all combinations when few,
 * a seeded sample with both extremes when many), the harness builds the
 * device, and checks:
 *   - fsck finds nothing wrong (before and after the mount's recovery);
 *   - the mount succeeds;
 *   - what the mount shows is a state the rules allow (ace_state.c):
 *     fsynced files byte for byte, names all-or-nothing, nothing garbage.
 *
 * Usage:
 *   crash_ace [--quick | --full] [-j JOBS] [--seed N] [-v]
 *   crash_ace --list [--quick | --full]
 *   crash_ace --setup ace|ckpt --workload 'op; op; ...' [--point P
 *             [--keep K]] [--save DIR] [-v]
 *   crash_ace replay | writer | verify ...   (the kill tests: crash_kill.c)
 * Every violation is printed with the command line that reproduces it.
 * Exit status: 0 if no violation, 1 if any, 2 on a harness error.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ace.h"
#include "crash_ace.h"
#include "zonefuse/crash.h"
#include "zonefuse/util.h"
#include "zonefuse/zdev.h"
#include "zonefuse/zemu.h"

/* ---- setups: the file system a workload starts from ------------------------ */

struct ace_setup {
	const char *name;
	const char *const *ops;
	/* Generated instead: @nfiles files "fNN" of @fsize bytes. */
	uint32_t nfiles;
	uint64_t fsize;
	bool reclaim; /* workloads run with the reclaim thread */
};

static const char *const ace_setup_ace[] = {
	"create A", "write A 0 12000", "setxattr A user.a 16",
	"create C", "write C 0 1572987",
	"mkdir d", "create d/B", "write d/B 0 5000", "mkdir d/e",
	NULL
};

static const char *const ace_setup_ckpt[] = {
	"mkdir ck", "create ck/latest", "write ck/latest 0 2097153",
	"mkdir ck/checkpoint-1",
	"create ck/checkpoint-1/model.bin",
	"write ck/checkpoint-1/model.bin 0 1572864",
	"create ck/checkpoint-1/optimizer.pt",
	"write ck/checkpoint-1/optimizer.pt 0 300000",
	"create ck/checkpoint-1/trainer_state.json",
	"write ck/checkpoint-1/trainer_state.json 0 700",
	"mkdir ck/checkpoint-2",
	"create ck/checkpoint-2/model.bin",
	"write ck/checkpoint-2/model.bin 0 1572864",
	"create ck/checkpoint-2/optimizer.pt",
	"write ck/checkpoint-2/optimizer.pt 0 300000",
	"create ck/checkpoint-2/trainer_state.json",
	"write ck/checkpoint-2/trainer_state.json 0 700",
	"mkdir ck/dcp", "create ck/dcp/__0_0.distcp",
	"write ck/dcp/__0_0.distcp 0 400000", "create ck/dcp/.metadata",
	"write ck/dcp/.metadata 0 1500",
	NULL
};

static const char *const ace_setup_none[] = { NULL };

/*
 * "full": the image about 80% full of files smaller than a chunk, which
 * share zones: deleting every other one leaves zones half dead, which
 * reclaim must copy out before it can reset them.
 */
static const struct ace_setup ace_setups[] = {
	{ "ace", ace_setup_ace, 0, 0, false },
	{ "ckpt", ace_setup_ckpt, 0, 0, false },
	{ "full", ace_setup_none, 48, 700000, true },
};

/* The image every workload runs on: small, so a crash state is cheap. */
#define ACE_ZONES 48
#define ACE_ZONE_SIZE (1ull << 20)

/* ---- workloads ----------------------------------------------------------------- */

struct ace_wl {
	char name[48];
	const char *setup;
	char *ops; /* operations separated by "; " */
};

struct ace_wls {
	struct ace_wl *w;
	uint32_t n;
};

/* How many workloads: --lite, --quick, --full. */
enum { ACE_LITE, ACE_QUICK, ACE_FULL };

/* The core operations of the "ace" setup, with what they touch. */
struct ace_core {
	const char *op;
	const char *target; /* what a persistence point after it syncs */
};

static const struct ace_core ace_core[] = {
	{ "create N", "N" },
	{ "create d/N", "d/N" },
	{ "mkdir M", "M" },
	{ "mkdir d/M", "d/M" },
	{ "symlink S A", "S" },
	{ "link A d/L", "d/L" },
	{ "write A end 5000", "A" },
	{ "write A 4096 3000", "A" },
	{ "write A 20000 6000", "A" },
	{ "write C 1048000 100000", "C" },
	{ "write C end 1048576", "C" },
	{ "write d/B 0 5000", "d/B" },
	{ "write N 0 70000", "N" },
	{ "trunc A 3000", "A" },
	{ "trunc A 40000", "A" },
	{ "trunc C 0", "C" },
	{ "rename A A2", "A2" },
	{ "rename A d/B", "d/B" },
	{ "rename d d2", "d2" },
	{ "rename d/B B2", "B2" },
	{ "rename C A", "A" },
	{ "unlink A", "." },
	{ "unlink d/B", "d" },
	{ "rmdir d/e", "d" },
	{ "setxattr A user.k 100", "A" },
	{ "setxattr d user.k 40", "d" },
	{ "rmxattr A user.a", "A" },
};

/* Persistence points after an operation. */
enum ace_persist {
	ACE_P_NONE,
	ACE_P_FSYNC,	 /* fsync the target (fsyncdir if a directory) */
	ACE_P_FDATASYNC, /* fdatasync the target (files only) */
	ACE_P_PARENT,	 /* fsyncdir the target's directory */
	ACE_P_SYNC,
	ACE_P_COUNT,
};

/*
 * The persistence operation @p after @core in model @m (after the core
 * operation ran), into @out; false if it does not apply.
 */
static bool ace_persist_op(struct ace_model *m, const struct ace_core *core,
			   enum ace_persist p, char *out, size_t len)
{
	const char *t = core->target, *slash = strrchr(t, '/');
	struct ace_ent *e = strcmp(t, ".") ? ace_ns_find(ace_cur(m), t) : NULL;
	mode_t type = e ? m->ids[e->id].type : (!strcmp(t, ".") ? S_IFDIR : 0);

	switch (p) {
	case ACE_P_NONE:
		out[0] = '\0';
		return true;
	case ACE_P_FSYNC:
		if (type == S_IFREG)
			snprintf(out, len, "fsync %s", t);
		else if (type == S_IFDIR)
			snprintf(out, len, "fsyncdir %s", t);
		else
			return false;
		return true;
	case ACE_P_FDATASYNC:
		if (type != S_IFREG)
			return false;
		snprintf(out, len, "fdatasync %s", t);
		return true;
	case ACE_P_PARENT:
		if (!strcmp(t, "."))
			return false;
		if (slash)
			snprintf(out, len, "fsyncdir %.*s", (int)(slash - t), t);
		else
			snprintf(out, len, "fsyncdir .");
		return true;
	case ACE_P_SYNC:
		snprintf(out, len, "sync");
		return true;
	default:
		return false;
	}
}

static void ace_wls_add(struct ace_wls *ws, const char *setup,
			const char *name, const char *ops)
{
	struct ace_wl *w;

	ws->w = realloc(ws->w, (ws->n + 1) * sizeof(*ws->w));
	if (!ws->w)
		abort();
	w = &ws->w[ws->n++];
	snprintf(w->name, sizeof(w->name), "%s", name);
	w->setup = setup;
	w->ops = strdup(ops);
	if (!w->ops)
		abort();
}

/* Append "; op" to @ops (nothing for an empty op). */
static void ace_cat(char *ops, size_t len, const char *op)
{
	size_t l = strlen(ops);

	if (!*op)
		return;
	snprintf(ops + l, len - l, "%s%s", l ? "; " : "", op);
}

/*
 * Try a sequence of core operations (@idx, @n of them) each followed by
 * its persistence point @p[i] on the model @base; add it as a workload if
 * every operation applies.
 */
static bool ace_try_seq(struct ace_wls *ws, const struct ace_model *base,
			const uint32_t *idx, const enum ace_persist *p,
			uint32_t n, const char *name)
{
	struct ace_model m;
	char ops[2048] = "", pop[ACE_PATH_MAX + 16], err[256];
	uint32_t i;
	bool ok = true;

	ace_model_copy(&m, base, true);
	for (i = 0; i < n && ok; i++) {
		const struct ace_core *c = &ace_core[idx[i]];

		ok = !ace_op(NULL, NULL, &m, c->op, err, sizeof(err));
		ace_cat(ops, sizeof(ops), c->op);
		if (ok)
			ok = ace_persist_op(&m, c, p[i], pop, sizeof(pop));
		if (ok && *pop)
			ok = !ace_op(NULL, NULL, &m, pop, err, sizeof(err));
		ace_cat(ops, sizeof(ops), pop);
	}
	ace_model_free(&m);
	if (ok)
		ace_wls_add(ws, "ace", name, ops);
	return ok;
}

/* The checkpoint patterns of the mission, on the "ckpt" setup. */
static void ace_gen_ckpt(struct ace_wls *ws)
{
	static const struct {
		const char *name, *ops;
	} ck[] = {
		/* torch.save to a temporary file, renamed over `latest`. */
		{ "torch-norename-sync",
		  "create ck/latest.tmp; write ck/latest.tmp 0 3145805" },
		{ "torch-rename",
		  "create ck/latest.tmp; write ck/latest.tmp 0 3145805; rename ck/latest.tmp ck/latest" },
		{ "torch-rename-dirsync",
		  "create ck/latest.tmp; write ck/latest.tmp 0 3145805; rename ck/latest.tmp ck/latest; fsyncdir ck" },
		{ "torch-fsync-rename-dirsync",
		  "create ck/latest.tmp; write ck/latest.tmp 0 3145805; fsync ck/latest.tmp; rename ck/latest.tmp ck/latest; fsyncdir ck" },
		{ "torch-rename-sync",
		  "create ck/latest.tmp; write ck/latest.tmp 0 3145805; rename ck/latest.tmp ck/latest; sync" },
		{ "torch-rename-otherfsync",
		  "create ck/latest.tmp; write ck/latest.tmp 0 3145805; rename ck/latest.tmp ck/latest; create ck/log.txt; write ck/log.txt 0 300; fsync ck/log.txt" },
		{ "torch-small-rename-dirsync",
		  "create ck/latest.tmp; write ck/latest.tmp 0 100003; rename ck/latest.tmp ck/latest; fsyncdir ck" },
		{ "torch-small-fsync-rename-dirsync",
		  "create ck/latest.tmp; write ck/latest.tmp 0 100003; fsync ck/latest.tmp; rename ck/latest.tmp ck/latest; fsyncdir ck" },
		/* DCP: shards fsynced, then .metadata.tmp renamed to .metadata. */
		{ "dcp2-new",
		  "mkdir ck/step2; create ck/step2/__0_0.distcp; write ck/step2/__0_0.distcp 0 1258291; fsync ck/step2/__0_0.distcp; create ck/step2/__1_0.distcp; write ck/step2/__1_0.distcp 0 307200; fsync ck/step2/__1_0.distcp; create ck/step2/.metadata.tmp; write ck/step2/.metadata.tmp 0 3000; fsync ck/step2/.metadata.tmp; rename ck/step2/.metadata.tmp ck/step2/.metadata; fsyncdir ck/step2" },
		{ "dcp4-new",
		  "mkdir ck/step2; create ck/step2/__0_0.distcp; write ck/step2/__0_0.distcp 0 700000; fsync ck/step2/__0_0.distcp; create ck/step2/__1_0.distcp; write ck/step2/__1_0.distcp 0 700000; fsync ck/step2/__1_0.distcp; create ck/step2/__2_0.distcp; write ck/step2/__2_0.distcp 0 65536; fsync ck/step2/__2_0.distcp; create ck/step2/__3_0.distcp; write ck/step2/__3_0.distcp 0 4097; fsync ck/step2/__3_0.distcp; create ck/step2/.metadata.tmp; write ck/step2/.metadata.tmp 0 3000; fsync ck/step2/.metadata.tmp; rename ck/step2/.metadata.tmp ck/step2/.metadata; fsyncdir ck/step2" },
		{ "dcp2-replace",
		  "create ck/dcp/__0_0.distcp.new; write ck/dcp/__0_0.distcp.new 0 500000; fsync ck/dcp/__0_0.distcp.new; create ck/dcp/.metadata.tmp; write ck/dcp/.metadata.tmp 0 2000; fsync ck/dcp/.metadata.tmp; rename ck/dcp/.metadata.tmp ck/dcp/.metadata; fsyncdir ck/dcp" },
		{ "dcp2-nosync",
		  "mkdir ck/step2; create ck/step2/__0_0.distcp; write ck/step2/__0_0.distcp 0 1258291; create ck/step2/__1_0.distcp; write ck/step2/__1_0.distcp 0 307200; create ck/step2/.metadata.tmp; write ck/step2/.metadata.tmp 0 3000; rename ck/step2/.metadata.tmp ck/step2/.metadata; fsyncdir ck/step2" },
		/* HF Trainer: save checkpoint-3, delete the oldest. */
		{ "hf-rotate",
		  "mkdir ck/checkpoint-3; create ck/checkpoint-3/model.bin; write ck/checkpoint-3/model.bin 0 1572864; fsync ck/checkpoint-3/model.bin; create ck/checkpoint-3/optimizer.pt; write ck/checkpoint-3/optimizer.pt 0 300000; fsync ck/checkpoint-3/optimizer.pt; create ck/checkpoint-3/trainer_state.json; write ck/checkpoint-3/trainer_state.json 0 700; fsync ck/checkpoint-3/trainer_state.json; fsyncdir ck/checkpoint-3; unlink ck/checkpoint-1/model.bin; unlink ck/checkpoint-1/optimizer.pt; unlink ck/checkpoint-1/trainer_state.json; rmdir ck/checkpoint-1; fsyncdir ck" },
		{ "hf-rotate-nosync",
		  "mkdir ck/checkpoint-3; create ck/checkpoint-3/model.bin; write ck/checkpoint-3/model.bin 0 1572864; create ck/checkpoint-3/optimizer.pt; write ck/checkpoint-3/optimizer.pt 0 300000; create ck/checkpoint-3/trainer_state.json; write ck/checkpoint-3/trainer_state.json 0 700; unlink ck/checkpoint-1/model.bin; unlink ck/checkpoint-1/optimizer.pt; unlink ck/checkpoint-1/trainer_state.json; rmdir ck/checkpoint-1; sync" },
		{ "hf-delete-only",
		  "unlink ck/checkpoint-1/model.bin; unlink ck/checkpoint-1/optimizer.pt; unlink ck/checkpoint-1/trainer_state.json; rmdir ck/checkpoint-1; fsyncdir ck" },
		{ "hf-delete-then-write",
		  "unlink ck/checkpoint-1/model.bin; unlink ck/checkpoint-1/optimizer.pt; unlink ck/checkpoint-1/trainer_state.json; rmdir ck/checkpoint-1; create ck/latest.new; write ck/latest.new 0 2097152; fsync ck/latest.new" },
	};
	uint32_t i;

	for (i = 0; i < ZF_ARRAY_SIZE(ck); i++) {
		ace_wls_add(ws, "ckpt", ck[i].name, ck[i].ops);
	}
}

/* A growing op string. */
struct ace_sb {
	char *s;
	size_t len, cap;
};

__attribute__((format(printf, 2, 3))) static void ace_sb_op(struct ace_sb *b,
							     const char *fmt,
							     ...)
{
	char op[512];
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(op, sizeof(op), fmt, ap);
	va_end(ap);
	n = strlen(op);
	if (b->len + n + 3 > b->cap) {
		b->cap = (b->len + n + 3) * 2;
		b->s = realloc(b->s, b->cap);
		if (!b->s)
			abort();
	}
	if (b->len) {
		memcpy(b->s + b->len, "; ", 2);
		b->len += 2;
	}
	memcpy(b->s + b->len, op, n + 1);
	b->len += n;
}

/*
 * Long workloads: reclaim (GC) on the "full" setup, and a metadata
 * snapshot roll (the journal grows past 8 MiB of records) on "ace".
 */
static void ace_gen_long(struct ace_wls *ws, bool full)
{
	struct ace_sb b = { 0 };
	uint32_t i, step;

	/*
	 * Delete every other file, then write new ones: reclaim runs. Each
	 * writes what fits: the 24 files left hold 16 MiB of the about
	 * 36 MiB the device gives to data with two copies of the journal
	 * (gc-large wrote 30 files of over 1 MiB once, nearly 48 MiB in all:
	 * ENOSPC at the 24th; 22 of them, ENOSPC at the 20th once the
	 * journal's mirror and its growth were kept from data).
	 */
	for (step = 0; step < (full ? 2u : 1u); step++) {
		b.len = 0;
		for (i = 1; i < 48; i += 2)
			ace_sb_op(&b, "unlink f%02u", i);
		ace_sb_op(&b, "fsyncdir .");
		for (i = 0; i < (step ? 17u : 22u); i++) {
			ace_sb_op(&b, "create g%02u", i);
			ace_sb_op(&b, "write g%02u 0 %u", i,
				  step ? 1048576u + 4096u * i : 700000u);
			ace_sb_op(&b, "fsync g%02u", i);
		}
		ace_wls_add(ws, "full", step ? "gc-large" : "gc-churn", b.s);
	}
	/* Overwrite in place: each overwrite kills a piece of a zone. */
	if (full) {
		b.len = 0;
		for (i = 0; i < 48; i++) {
			ace_sb_op(&b, "write f%02u 0 700000", (i * 7) % 48);
			if (i % 4 == 3)
				ace_sb_op(&b, "fsync f%02u", (i * 7) % 48);
		}
		ace_wls_add(ws, "full", "gc-overwrite", b.s);
	}
	/* 4 KB xattrs until the log outgrows 8 MiB; a commit every 50. */
	b.len = 0;
	for (i = 0; i < 2400; i++) {
		ace_sb_op(&b, "setxattr %s user.r%u 4000",
			  i % 2 ? "A" : "d/B", i % 8);
		if (i % 50 == 49)
			ace_sb_op(&b, "fsyncdir .");
	}
	ace_sb_op(&b, "rename A A2");
	ace_sb_op(&b, "fsyncdir .");
	ace_wls_add(ws, "ace", "roll-xattrs", b.s);
	free(b.s);
}

/* splitmix64, for the seeded sample of three-operation workloads. */
static uint64_t ace_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A seeded sample of @n sequences of @len core operations. */
static void ace_gen_sample(struct ace_wls *ws, const struct ace_model *base,
			   uint32_t len, uint32_t n, uint64_t *rng,
			   bool random_persist)
{
	const uint32_t nc = ZF_ARRAY_SIZE(ace_core);
	enum ace_persist p[3];
	uint32_t idx[3], i, k, tries;
	char name[48];

	for (i = 0; i < n; i++) {
		for (tries = 0; tries < 1000; tries++) {
			for (k = 0; k < len; k++) {
				idx[k] = (uint32_t)(ace_rand(rng) % nc);
				p[k] = random_persist ?
					       (enum ace_persist)(ace_rand(rng) %
								  ACE_P_COUNT) :
					       ACE_P_FSYNC;
			}
			snprintf(name, sizeof(name), "s%u-r%u", len, i);
			if (ace_try_seq(ws, base, idx, p, len, name))
				break;
		}
	}
}

/*
 * The workload list. Quick: every core operation with every persistence
 * point, every checkpoint pattern, and a seeded sample of pairs and
 * triples. Full: the same, with every ordered pair of core operations
 * three ways (an fsync after each; nothing after the first and an fsync
 * after the second; nothing, then one sync at the end) and a larger
 * sample of triples with random persistence points.
 */
static void ace_generate(struct ace_wls *ws, const struct ace_model *ace_base,
			 int level, uint64_t seed, uint32_t n3)
{
	bool full = level == ACE_FULL;
	static const enum ace_persist pairs[][2] = {
		{ ACE_P_FSYNC, ACE_P_FSYNC },
		{ ACE_P_NONE, ACE_P_FSYNC },
		{ ACE_P_NONE, ACE_P_SYNC },
	};
	const uint32_t nc = ZF_ARRAY_SIZE(ace_core);
	enum ace_persist p[3];
	uint32_t idx[3], a, b, i;
	char name[48];
	uint64_t rng = seed;

	for (a = 0; a < nc; a++) {
		for (i = 0; i < ACE_P_COUNT; i++) {
			idx[0] = a;
			p[0] = (enum ace_persist)i;
			if (level == ACE_LITE && i != ACE_P_FSYNC &&
			    i != ACE_P_PARENT)
				continue;
			snprintf(name, sizeof(name), "s1-%02u-p%u", a, i);
			ace_try_seq(ws, ace_base, idx, p, 1, name);
		}
	}
	ace_gen_ckpt(ws);
	if (level == ACE_LITE)
		return;
	ace_gen_long(ws, full);
	if (!full) {
		ace_gen_sample(ws, ace_base, 2, 100, &rng, true);
		ace_gen_sample(ws, ace_base, 3, 60, &rng, true);
		return;
	}
	for (a = 0; a < nc; a++) {
		for (b = 0; b < nc; b++) {
			for (i = 0; i < ZF_ARRAY_SIZE(pairs); i++) {
				idx[0] = a;
				idx[1] = b;
				p[0] = pairs[i][0];
				p[1] = pairs[i][1];
				snprintf(name, sizeof(name), "s2-%02u-%02u-%u",
					 a, b, i);
				if (ace_try_seq(ws, ace_base, idx, p, 2, name) ||
				    i)
					continue;
				/* An fsync that does not apply (the target
				   is gone): its directory's instead. */
				p[0] = ACE_P_PARENT;
				p[1] = ACE_P_PARENT;
				ace_try_seq(ws, ace_base, idx, p, 2, name);
			}
		}
	}
	ace_gen_sample(ws, ace_base, 3, n3, &rng, true);
}

/* ---- running a workload and checking its crash states ------------------------ */

struct ace_counts {
	uint64_t workloads, states, points, violations, errors;
	uint64_t violating_workloads;
	uint64_t known; /* violations of a kind --known names */
};

struct ace_cfg {
	const char *work;   /* scratch directory */
	uint64_t max_all;   /* all states of a point up to this many */
	uint32_t sample;    /* else this many */
	uint64_t seed;
	uint32_t max_points; /* per workload, 0: all */
	int64_t only_point; /* -1: every point */
	unsigned int known; /* ACE_V_* kinds reported, not counted as new */
	const char *only_keep;
	const char *save;   /* keep the images of violations here */
	bool verbose;
	const char *self;   /* argv[0], for reproduction lines */
	int level;	    /* the list, for reproduction lines */
	const char *workload_file; /* the workload came from this file */
	uint32_t triples;
};

/*
 * A path under the work directory into @dst (PATH_MAX): -ENAMETOOLONG
 * rather than a cut path, which would name another file.
 */
__attribute__((format(printf, 3, 4))) static int
ace_path(char *dst, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(dst, len, fmt, ap);
	va_end(ap);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

struct ace_setup_img {
	const char *name;
	bool reclaim;
	char img[PATH_MAX];
	struct ace_model model;
};

static struct ace_setup_img ace_imgs[ZF_ARRAY_SIZE(ace_setups)];

/*
 * A recording with more than this written is long: each of its crash
 * states replays it all, so only a spread of its points is checked.
 */
#define ACE_LONG_LOG (64ull << 20)
#define ACE_LONG_POINTS 24u

/* What a violation says: the whole block goes out in one write(). */
static void ace_report(const char *fmt, ...)
{
	char buf[16384];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > 0 && write(STDOUT_FILENO, buf,
			   (size_t)ZF_MIN((size_t)n, sizeof(buf) - 1)) < 0)
		return;
}

static const struct zfs_opts ace_mount_opts = {
	.commit_ms = 3600u * 1000u, /* commits only when the workload asks */
	.no_reclaim_thread = true,
};

int ace_make_image(const char *img, uint32_t zones, uint64_t zone_size,
		   char *err, size_t errlen)
{
	struct zemu_params p = { 0 };
	struct zfs_mkfs_opts mo = { 0 };
	struct zfs_mkfs_info info;
	int ret;

	p.zone_size = zone_size;
	p.size = zones * zone_size;
	p.block_size = 4096;
	unlink(img);
	ret = zemu_check_params(&p, err, errlen);
	if (!ret)
		ret = zemu_create(img, &p, err, errlen);
	if (!ret) {
		mo.reserve_pct = -1;
		ret = zfs_mkfs(img, &mo, &info, err, errlen);
	}
	return ret;
}

/*
 * Make the setup's image: mkfs, run its operations, unmount cleanly. The
 * model is then collapsed to one version of everything: the state every
 * workload starts from, durable.
 */
static int ace_make_setup(const struct ace_setup *s, const char *dir,
			  struct ace_setup_img *si)
{
	struct ace_model m;
	struct zfs *fs;
	char err[512];
	uint32_t i;
	int ret;

	si->name = s->name;
	si->reclaim = s->reclaim;
	ret = ace_path(si->img, sizeof(si->img), "%s/setup-%s.img", dir,
		       s->name);
	if (ret) {
		snprintf(err, sizeof(err), "the work directory's path is too long");
		goto out_err;
	}
	ret = ace_make_image(si->img, ACE_ZONES, ACE_ZONE_SIZE, err,
			     sizeof(err));
	if (ret)
		goto out_err;
	ret = zfs_mount(si->img, &ace_mount_opts, &fs, err, sizeof(err));
	if (ret)
		goto out_err;
	ace_model_init(&m);
	for (i = 0; s->ops[i] && !ret; i++)
		ret = ace_op(fs, NULL, &m, s->ops[i], err, sizeof(err));
	for (i = 0; i < s->nfiles && !ret; i++) {
		char op[64];

		snprintf(op, sizeof(op), "create f%02u", i);
		ret = ace_op(fs, NULL, &m, op, err, sizeof(err));
		snprintf(op, sizeof(op), "write f%02u 0 %" PRIu64, i, s->fsize);
		if (!ret)
			ret = ace_op(fs, NULL, &m, op, err, sizeof(err));
	}
	if (ret) {
		zfs_crash(fs);
		ace_model_free(&m);
		goto out_err;
	}
	ret = zfs_unmount(fs);
	if (ret) {
		snprintf(err, sizeof(err), "unmount: %s", strerror(-ret));
		ace_model_free(&m);
		goto out_err;
	}
	/* Collapse: the last namespace and contents are version 0. */
	ace_model_init(&si->model);
	si->model.tag = m.tag;
	free(si->model.ids);
	si->model.ids = m.ids;
	si->model.nids = m.nids;
	for (i = 0; i < m.nids; i++) {
		struct ace_id *id = &si->model.ids[i];

		if (id->nv > 1) {
			uint32_t k;

			for (k = 0; k + 1 < id->nv; k++)
				free(id->v[k].data);
			id->v[0] = id->v[id->nv - 1];
			id->nv = 1;
		}
		if (id->nv)
			id->v[0].start = 0;
		free(id->lo);
		id->lo = NULL;
		id->nlo = 0;
	}
	free(si->model.ns[0].ents);
	free(si->model.ns[0].xa);
	si->model.ns[0] = m.ns[m.nns - 1];
	si->model.ns[0].start = 0;
	snprintf(si->model.ns[0].what, sizeof(si->model.ns[0].what),
		 "(setup %s)", s->name);
	for (i = 0; i + 1 < m.nns; i++) {
		free(m.ns[i].ents);
		free(m.ns[i].xa);
	}
	free(m.ns);
	free(m.ns_lo);
	return 0;

out_err:
	fprintf(stderr, "crash_ace: making the '%s' setup: %s\n", s->name,
		err);
	return ret ? ret : -EIO;
}

static struct ace_setup_img *ace_setup_find(const char *name)
{
	uint32_t i;

	for (i = 0; i < ZF_ARRAY_SIZE(ace_imgs); i++)
		if (ace_imgs[i].name && !strcmp(ace_imgs[i].name, name))
			return &ace_imgs[i];
	return NULL;
}

struct ace_say_buf {
	char *buf;
	size_t len, size;
};

static void ace_fsck_say(void *arg, const struct zfs_finding *f)
{
	struct ace_say_buf *b = arg;
	int n;

	if (b->len >= b->size)
		return;
	n = snprintf(b->buf + b->len, b->size - b->len, "    fsck: %s\n",
		     f->text);
	if (n > 0)
		b->len = ZF_MIN(b->len + (size_t)n, b->size - 1);
}

/* fsck @img; 0 if clean, else 1 with what it said in @out. */
static int ace_fsck(const char *img, const char *when, char *out, size_t len)
{
	char fsay[4096] = "", err[512] = "";
	struct ace_say_buf b = { fsay, 0, sizeof(fsay) };
	struct zfs_fsck_result res;
	int ret;

	ret = zfs_fsck(img, false, ace_fsck_say, &b, &res, err, sizeof(err));
	if (ret == ZFS_FSCK_OK)
		return 0;
	snprintf(out, len, "  fsck %s: exit %d, %u errors%s%s\n%s", when, ret,
		 res.errors, err[0] ? ": " : "", err, fsay);
	return 1;
}

/*
 * Check one crash state (point @idx, @keep): build it, fsck it, mount it,
 * compare with the model, unmount, fsck again. Returns the problems found
 * (their description in @out), or -1 if the state could not be built.
 */
static int ace_verify_image(const char *img, const struct ace_model *m,
			    uint64_t rec, char *out, size_t outlen,
			    unsigned int *classes)
{
	struct ace_state st;
	struct zfs *fs;
	char err[512];
	size_t l;
	int ret, problems = 0;

	out[0] = '\0';
	*classes = 0;
	problems += ace_fsck(img, "of the crash state", out, outlen);
	l = strlen(out);
	if (problems)
		*classes |= ACE_V_OTHER;
	ret = zfs_mount(img, &ace_mount_opts, &fs, err, sizeof(err));
	if (ret) {
		snprintf(out + l, outlen - l, "  mount failed: %s (%s)\n", err,
			 strerror(-ret));
		*classes |= ACE_V_OTHER;
		return problems + 1;
	}
	ret = ace_state_read(fs, &st, err, sizeof(err));
	if (ret) {
		snprintf(out + l, outlen - l, "  reading it back failed: %s\n",
			 err);
		problems++;
		*classes |= ACE_V_OTHER;
	} else {
		unsigned int cl = 0;

		problems += ace_check(m, &st, rec, out + l, outlen - l, &cl);
		*classes |= cl;
		ace_state_free(&st);
	}
	l = strlen(out);
	ret = zfs_unmount(fs);
	if (ret) {
		snprintf(out + l, outlen - l,
			 "  unmount after recovery failed: %s\n",
			 strerror(-ret));
		problems++;
		*classes |= ACE_V_OTHER;
		l = strlen(out);
	}
	ret = ace_fsck(img, "after the mount's recovery", out + l, outlen - l);
	if (ret)
		*classes |= ACE_V_OTHER;
	return problems + ret;
}

/*
 * Check one crash state (point @idx, @keep): build it, then fsck it,
 * mount it, compare with the model, unmount, fsck again. Returns the
 * problems found (their description in @out), or -1 if the state could
 * not be built.
 */
static int ace_check_state(const struct crash_log *log, const char *base,
			   const struct ace_model *m, uint32_t idx,
			   const uint32_t *keep, const char *img, char *out,
			   size_t outlen, unsigned int *classes)
{
	struct crash_point pt;
	char err[512];
	int ret;

	out[0] = '\0';
	crash_point(log, idx, &pt);
	ret = crash_build(log, base, img, idx, keep, err, sizeof(err));
	if (ret) {
		snprintf(out, outlen, "  cannot build the crash state: %s\n",
			 err);
		return -1;
	}
	return ace_verify_image(img, m, pt.rec, out, outlen, classes);
}

static const char *const ace_level_opt[] = { "--lite", "--quick", "--full" };

/* The shell-quoted reproduction command of a workload. */
static void ace_repro(const struct ace_cfg *cfg, const struct ace_wl *w,
		      char *buf, size_t len)
{
	if (cfg->workload_file)
		snprintf(buf, len, "%s --setup %s --workload-file %s",
			 cfg->self, w->setup, cfg->workload_file);
	else if (strlen(w->ops) < 1500 || !strcmp(w->name, "cli"))
		snprintf(buf, len, "%s --setup %s --workload '%s'", cfg->self,
			 w->setup, w->ops);
	else
		snprintf(buf, len, "%s %s --seed %" PRIu64 " --triples %u --only %s",
			 cfg->self, ace_level_opt[cfg->level], cfg->seed,
			 cfg->triples, w->name);
}

/*
 * Record workload @w: copy its setup, mount it with recording, run its
 * operations into the model @m, crash, open the recording into *@logp.
 * An operation the file system fails stops the workload there: its
 * negative errno goes to *@op_ret and what failed to @op_err, and the
 * crash states of what was done are still there to check (a failure
 * must not damage what was durable). Returns 0, or a negative errno with
 * the reason in @err (nothing to free then).
 */
static int ace_record(const struct ace_cfg *cfg, const struct ace_wl *w,
		      struct ace_model *m, struct crash_log **logp, char *err,
		      size_t errlen, int *op_ret, char *op_err, size_t op_errlen)
{
	struct ace_setup_img *si = ace_setup_find(w->setup);
	char img[PATH_MAX], logp_path[PATH_MAX], *ops, *op, *save = NULL;
	struct zfs_opts mo;
	struct zfs *fs;
	int ret;

	snprintf(img, sizeof(img), "%s/work.img", cfg->work);
	snprintf(logp_path, sizeof(logp_path), "%s/work.log", cfg->work);
	ret = crash_copy_sparse(si->img, img);
	if (ret) {
		snprintf(err, errlen, "copying the setup: %s", strerror(-ret));
		return ret;
	}
	ace_model_copy(m, &si->model, false);
	mo = ace_mount_opts;
	mo.no_reclaim_thread = !si->reclaim;
	setenv(ZDEV_RECORD_ENV, logp_path, 1);
	ret = zfs_mount(img, &mo, &fs, err, errlen);
	unsetenv(ZDEV_RECORD_ENV);
	if (ret)
		goto out_model;
	ops = strdup(w->ops);
	if (!ops)
		abort();
	*op_ret = 0;
	for (op = strtok_r(ops, ";", &save); op && !*op_ret;
	     op = strtok_r(NULL, ";", &save)) {
		while (*op == ' ')
			op++;
		*op_ret = ace_op(fs, zfs_dev(fs), m, op, op_err, op_errlen);
	}
	free(ops);
	if (cfg->verbose) {
		struct zfs_stats zs;

		zfs_get_stats(fs, &zs);
		fprintf(stderr,
			"%s: host %" PRIu64 " B, device %" PRIu64
			" B, reclaim copied %" PRIu64 " B, %" PRIu64
			" resets, %u metadata zones, %u empty zones\n",
			w->name, zs.host_bytes_written,
			zs.device_bytes_written, zs.gc_bytes_written,
			zs.resets_total, zs.meta_zones, zs.zones_empty);
	}
	zfs_crash(fs);
	if (*op_ret == -EINVAL) {
		/* Not the file system's doing: the workload is wrong. */
		snprintf(err, errlen, "%s", op_err);
		ret = -EINVAL;
		goto out_model;
	}
	ret = crash_log_open(logp_path, logp, err, errlen);
	if (ret)
		goto out_model;
	unlink(img);
	if (cfg->save) {
		/* The recording and its base, for `crash_ace replay`. */
		char dst[PATH_MAX];

		snprintf(dst, sizeof(dst), "%s/%s.log", cfg->save, w->name);
		crash_copy_sparse(logp_path, dst);
		snprintf(dst, sizeof(dst), "%s/%s.base.img", cfg->save,
			 w->name);
		crash_copy_sparse(si->img, dst);
	}
	/* The mapping stays valid once the file is gone. */
	unlink(logp_path);
	return 0;

out_model:
	ace_model_free(m);
	unlink(img);
	unlink(logp_path);
	return ret;
}

/*
 * Run workload @w and check every crash state of its recording. Counts
 * go to @c.
 */
static int ace_run(const struct ace_cfg *cfg, const struct ace_wl *w,
		   struct ace_counts *c)
{
	struct ace_setup_img *si = ace_setup_find(w->setup);
	char state[PATH_MAX], err[512], repro[4096];
	static char out[65536];
	struct crash_log *log = NULL;
	struct crash_log_info li;
	struct ace_model m;
	uint64_t bad_before = c->violations + c->known;
	char op_err[512] = "";
	uint8_t *pick;
	uint32_t idx;
	int ret, op_ret;

	c->workloads++;
	ace_repro(cfg, w, repro, sizeof(repro));
	snprintf(state, sizeof(state), "%s/state.img", cfg->work);
	ret = ace_record(cfg, w, &m, &log, err, sizeof(err), &op_ret, op_err,
			 sizeof(op_err));
	if (ret)
		goto out_error;
	if (op_ret) {
		/*
		 * On a healthy device, EIO or EROFS is the file system's
		 * failure; ENOSPC may be the workload's (it is said, not
		 * counted as a violation).
		 */
		bool bad = op_ret != -ENOSPC;

		if (bad)
			c->violations++;
		else
			c->errors++;
		ace_report("%s %s [%s] %.1500s\n  an operation failed on a healthy device: %s\n  reproduce: %s\n",
			   bad ? "VIOLATION" : "WORKLOAD ERROR", w->name,
			   w->setup, w->ops, op_err, repro);
	}
	crash_log_info(log, &li);
	if (cfg->verbose)
		fprintf(stderr,
			"%s: %" PRIu64 " records (%" PRIu64 " writes, %" PRIu64
			" flushes, %" PRIu64 " resets), %u crash points\n",
			w->name, li.records, li.writes, li.flushes, li.resets,
			li.nr_points);
	/*
	 * Every crash point, unless the recording is long: each state
	 * replays the whole history, so a long one gets a spread of points.
	 */
	pick = malloc(li.nr_points);
	if (!pick)
		abort();
	crash_pick_points(log,
			  li.write_bytes > ACE_LONG_LOG ? ACE_LONG_POINTS :
							  cfg->max_points,
			  pick);
	if (li.write_bytes > ACE_LONG_LOG)
		ace_report("NOTE %s: a long recording (%" PRIu64
			   " MiB written): %u of its %u crash points checked\n",
			   w->name, li.write_bytes >> 20,
			   ZF_MIN(li.nr_points, (uint32_t)ACE_LONG_POINTS),
			   li.nr_points);

	for (idx = 0; idx < li.nr_points; idx++) {
		uint32_t *keeps = NULL, nr = 0, k;
		struct crash_point pt;

		if (cfg->only_point >= 0 ? idx != (uint32_t)cfg->only_point :
					   !pick[idx])
			continue;
		crash_point(log, idx, &pt);
		if (cfg->only_keep) {
			keeps = calloc(pt.nr_streams + 1, sizeof(*keeps));
			if (!keeps ||
			    crash_keep_parse(log, idx, cfg->only_keep, keeps)) {
				fprintf(stderr,
					"crash_ace: --keep %s does not fit crash point %u (%u streams)\n",
					cfg->only_keep, idx, pt.nr_streams);
				free(keeps);
				c->errors++;
				break;
			}
			nr = 1;
		} else if (crash_states(log, idx, cfg->max_all, cfg->sample,
					cfg->seed, &keeps, &nr)) {
			c->errors++;
			break;
		}
		c->points++;
		for (k = 0; k < nr; k++) {
			const uint32_t *keep = &keeps[(size_t)k * pt.nr_streams];
			char desc[1024], ktok[256];
			unsigned int cl = 0;
			const char *what;
			int problems;

			c->states++;
			problems = ace_check_state(log, si->img, &m, idx,
						   keep, state, out,
						   sizeof(out), &cl);
			if (!problems)
				continue;
			crash_state_str(log, idx, keep, desc, sizeof(desc));
			crash_keep_str(log, idx, keep, ktok, sizeof(ktok));
			if (problems < 0) {
				c->errors++;
				what = "HARNESS ERROR";
			} else if (cl && !(cl & ~cfg->known)) {
				c->known++;
				what = "KNOWN VIOLATION";
			} else {
				c->violations++;
				what = "VIOLATION";
			}
			ace_report("%s %s [%s] %.1500s\n  at %s\n%s  reproduce: %s --point %u --keep %s\n",
				   what, w->name, w->setup, w->ops, desc, out,
				   repro, idx, ktok);
			if (cfg->save && problems > 0) {
				char dst[PATH_MAX];

				snprintf(dst, sizeof(dst), "%s/%s-p%u-%s.img",
					 cfg->save, w->name, idx, ktok);
				crash_build(log, si->img, dst, idx, keep, err,
					    sizeof(err));
			}
		}
		free(keeps);
	}
	if (c->violations + c->known > bad_before)
		c->violating_workloads++;
	free(pick);
	crash_log_close(log);
	ace_model_free(&m);
	unlink(state);
	return 0;

out_error:
	c->errors++;
	ace_report("HARNESS ERROR %s [%s] %.1500s\n  %s\n  reproduce: %s\n",
		   w->name, w->setup, w->ops, err, repro);
	return ret;
}

/* ---- the oracle's own test ----------------------------------------------------- */

/*
 * Does the oracle catch what it should? Each case records a workload and
 * then checks a state that is wrong on purpose: the start state claimed as
 * the end (what an fsync made durable is missing), the end state claimed
 * as the start (newer than anything allowed), or the end state with a data
 * block zeroed or scribbled on behind the emulator (an extent naming data
 * that is not there). Each must be reported, with the words expected.
 */
enum ace_lie { ACE_LIE_START_AS_END, ACE_LIE_END_AS_START, ACE_LIE_ZERO,
	       ACE_LIE_SCRIBBLE };

struct ace_selfcase {
	const char *ops;
	enum ace_lie lie;
	const char *expect;
};

static const struct ace_selfcase ace_selfcases[] = {
	{ "write A end 5000; fsync A", ACE_LIE_START_AS_END,
	  "size 12000, expected exactly 17000" },
	{ "write A 4096 3000; fdatasync A", ACE_LIE_START_AS_END,
	  "hold bytes no allowed content" },
	{ "create N; fsyncdir .", ACE_LIE_START_AS_END, "'N' is missing" },
	{ "rename A A2; fsync A2", ACE_LIE_START_AS_END,
	  "names are none of those" },
	{ "setxattr A user.k 100; fsync A", ACE_LIE_START_AS_END,
	  "xattr user.k" },
	{ "unlink d/B; sync", ACE_LIE_START_AS_END, "should not exist" },
	{ "write A end 5000; fsync A", ACE_LIE_END_AS_START,
	  "expected exactly 12000" },
	/*
	 * Data damaged behind the emulator fails its checksum: the read is
	 * refused (EIO) before the oracle could compare the bytes.
	 */
	{ "write A end 5000; fsync A", ACE_LIE_ZERO,
	  "reading 'A': Input/output error" },
	{ "write A end 5000; fsync A", ACE_LIE_SCRIBBLE,
	  "reading 'A': Input/output error" },
};

/* Damage the 4 KiB block holding file offset 12288 of "A" in @img. */
static int ace_damage(const char *img, bool zero, char *err, size_t errlen)
{
	char text[4096], *line, *save = NULL;
	uint64_t data_off = 0, zone_size, addr = UINT64_MAX;
	uint8_t blk[4096];
	struct stat st;
	struct zfs *fs;
	ssize_t n;
	int fd, ret;

	ret = zfs_mount(img, &ace_mount_opts, &fs, err, errlen);
	if (ret)
		return ret;
	zone_size = zdev_geom(zfs_dev(fs))->zone_size;
	ret = zfs_lookup(fs, 1, "A", &st);
	n = ret ? ret : zfs_extents_text(fs, st.st_ino, text, sizeof(text) - 1);
	zfs_unmount(fs);
	if (n < 0) {
		snprintf(err, errlen, "extents of A: %s", strerror((int)-n));
		return (int)n;
	}
	text[n] = '\0';
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		struct ace_extent e;

		if (ace_extent_parse(line, &e) && e.foff <= 12288 &&
		    12288 - e.foff < e.len)
			addr = e.zone * zone_size + e.off + (12288 - e.foff);
	}
	if (addr == UINT64_MAX) {
		snprintf(err, errlen, "no extent of A holds offset 12288");
		return -ENOENT;
	}
	fd = open(img, O_RDWR);
	if (fd < 0 || pread(fd, &data_off, 8, 72) != 8) {
		/* The image's name, cut to leave the reason room. */
		snprintf(err, errlen, "%.256s: %s", img, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -EIO;
	}
	data_off = le64toh(data_off);
	if (zero)
		memset(blk, 0, sizeof(blk));
	else
		for (size_t i = 0; i < sizeof(blk); i++)
			blk[i] = (uint8_t)(i * 131 + 7);
	n = pwrite(fd, blk, sizeof(blk), (off_t)(data_off + addr));
	close(fd);
	return n == (ssize_t)sizeof(blk) ? 0 : -EIO;
}

/* Returns the number of cases the oracle missed (0: all caught). */
static int ace_selftest(const struct ace_cfg *cfg)
{
	static char out[65536];
	char img[PATH_MAX], err[512];
	uint32_t i, caught = 0, n = ZF_ARRAY_SIZE(ace_selfcases);

	if (ace_path(img, sizeof(img), "%s/self.img", cfg->work)) {
		printf("crash_ace: selftest: the work directory's path is too long\n");
		return (int)n;
	}
	for (i = 0; i < n; i++) {
		const struct ace_selfcase *sc = &ace_selfcases[i];
		struct ace_wl w = { .setup = "ace", .ops = (char *)sc->ops };
		struct crash_log_info li;
		struct crash_log *log;
		struct ace_model m;
		unsigned int cl;
		uint32_t idx;
		uint64_t rec;
		int ret;

		snprintf(w.name, sizeof(w.name), "selftest-%u", i);
		int op_ret;

		ret = ace_record(cfg, &w, &m, &log, err, sizeof(err), &op_ret,
				 err, sizeof(err));
		if (!ret && op_ret) {
			crash_log_close(log);
			ace_model_free(&m);
			ret = op_ret;
		}
		if (ret) {
			printf("crash_ace: selftest %u: %s\n", i, err);
			continue;
		}
		crash_log_info(log, &li);
		idx = sc->lie == ACE_LIE_START_AS_END ? 0 : li.nr_points - 1;
		rec = sc->lie == ACE_LIE_END_AS_START ? 0 : li.records;
		ret = crash_build(log, ace_setup_find("ace")->img, img, idx,
				  NULL, err, sizeof(err));
		if (!ret && (sc->lie == ACE_LIE_ZERO ||
			     sc->lie == ACE_LIE_SCRIBBLE))
			ret = ace_damage(img, sc->lie == ACE_LIE_ZERO, err,
					 sizeof(err));
		if (!ret &&
		    ace_verify_image(img, &m, rec, out, sizeof(out), &cl) > 0 &&
		    strstr(out, sc->expect)) {
			caught++;
			if (cfg->verbose)
				printf("crash_ace: selftest caught '%s' (lie %d):\n%s",
				       sc->ops, sc->lie, out);
		} else {
			printf("crash_ace: selftest MISSED: '%s' (lie %d): expected a report with '%s'%s%s, got:\n%s",
			       sc->ops, sc->lie, sc->expect, ret ? "; " : "",
			       ret ? err : "", out);
		}
		crash_log_close(log);
		ace_model_free(&m);
		unlink(img);
	}
	printf("crash_ace: selftest: the oracle caught %u of %u wrong states\n",
	       caught, n);
	return (int)(n - caught);
}

/* ---- the driver ------------------------------------------------------------------ */

static int ace_make_setups(const char *dir)
{
	uint32_t i;
	int ret;

	for (i = 0; i < ZF_ARRAY_SIZE(ace_setups); i++) {
		ret = ace_make_setup(&ace_setups[i], dir, &ace_imgs[i]);
		if (ret)
			return ret;
	}
	return 0;
}

/* Run workloads @first, @first + @step, ... in this process. */
static void ace_run_share(const struct ace_cfg *cfg, const struct ace_wls *ws,
			  uint32_t first, uint32_t step, struct ace_counts *c)
{
	uint32_t i;

	for (i = first; i < ws->n; i += step) {
		uint64_t t0 = zutil_now_mono_ns();

		ace_run(cfg, &ws->w[i], c);
		if (cfg->verbose)
			fprintf(stderr, "%s: done in %.2f s\n", ws->w[i].name,
				(double)(zutil_now_mono_ns() - t0) / 1e9);
	}
}

/*
 * Run the list in @jobs processes, each with its own scratch directory,
 * each taking every jobs-th workload; counts come back through a pipe.
 */
static int ace_run_all(struct ace_cfg *cfg, const struct ace_wls *ws,
		       unsigned int jobs, struct ace_counts *total)
{
	int fds[64][2];
	pid_t pids[64];
	unsigned int j;
	int ret = 0;

	if (jobs < 1)
		jobs = 1;
	if (jobs > 64)
		jobs = 64;
	memset(total, 0, sizeof(*total));
	if (jobs == 1) {
		ace_run_share(cfg, ws, 0, 1, total);
		return 0;
	}
	for (j = 0; j < jobs; j++) {
		if (pipe(fds[j]) < 0)
			return -errno;
		fflush(NULL);
		pids[j] = fork();
		if (pids[j] < 0)
			return -errno;
		if (!pids[j]) {
			struct ace_counts c = { 0 };
			char dir[PATH_MAX];
			struct ace_cfg my = *cfg;

			close(fds[j][0]);
			if (ace_path(dir, sizeof(dir), "%s/job%u", cfg->work,
				     j))
				_exit(2);
			mkdir(dir, 0755);
			my.work = dir;
			ace_run_share(&my, ws, j, jobs, &c);
			if (write(fds[j][1], &c, sizeof(c)) != sizeof(c))
				_exit(2);
			rmdir(dir);
			_exit(0);
		}
		close(fds[j][1]);
	}
	for (j = 0; j < jobs; j++) {
		struct ace_counts c;
		int status;

		if (read(fds[j][0], &c, sizeof(c)) != sizeof(c)) {
			fprintf(stderr, "crash_ace: job %u died\n", j);
			total->errors++;
			ret = -EIO;
		} else {
			total->workloads += c.workloads;
			total->states += c.states;
			total->points += c.points;
			total->violations += c.violations;
			total->errors += c.errors;
			total->violating_workloads += c.violating_workloads;
			total->known += c.known;
		}
		close(fds[j][0]);
		waitpid(pids[j], &status, 0);
	}
	return ret;
}

/* The whole file @path, NUL-terminated, newlines as "; ". */
static char *ace_read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	char *s = NULL;
	size_t len = 0;
	ssize_t n;

	if (!f)
		return NULL;
	n = getdelim(&s, &len, '\0', f);
	fclose(f);
	if (n < 0) {
		free(s);
		return NULL;
	}
	/* One operation a line; lines starting with '#' are comments. */
	{
		char *in = s, *out = s;
		bool first = true;

		while (*in) {
			char *nl = strchr(in, '\n');
			size_t l = nl ? (size_t)(nl - in) : strlen(in);

			if (l && in[0] != '#') {
				if (!first)
					*out++ = ';';
				memmove(out, in, l);
				out += l;
				first = false;
			}
			in += l + (nl ? 1 : 0);
		}
		*out = '\0';
	}
	return s;
}

static void ace_usage(FILE *f)
{
	fprintf(f,
		"usage: crash_ace [--lite | --quick | --full] [-j JOBS] [--seed N] [--work DIR] [-v]\n"
		"       crash_ace --list [--lite | --quick | --full]\n"
		"       crash_ace --setup ace|ckpt|full --workload 'OP; OP; ...' [--point P [--keep K]]\n"
		"       crash_ace --setup ace|ckpt|full --workload-file FILE ...\n"
		"                 [--save DIR] [-v]\n"
		"       crash_ace replay|writer|verify ...   (kill tests; crash_ace replay --help)\n"
		"Runs crash-consistency workloads on the zonefuse library over a recorded\n"
		"emulator image and checks every crash state (docs/crash-consistency.md).\n"
		"  --quick           a bounded subset (the test suite's; the default)\n"
		"  --lite            a smaller one (the test suite's, with sanitizers)\n"
		"  --selftest        first check that the oracle catches wrong states\n"
		"  --full            every workload (scripts/crash-test.sh)\n"
		"  -j JOBS           processes (default 1)\n"
		"  --seed N          seed of the sampled workloads and states (default 1)\n"
		"  --max-all N       check every state of a crash point up to N (default 64)\n"
		"  --sample N        else this many, both extremes included (default 24)\n"
		"  --points N        crash points per workload, 0 for all (default 0; a\n"
		"                    recording of more than 64 MiB gets 24)\n"
		"  --triples N       sampled three-operation workloads in --full (default 3000)\n"
		"  --work DIR        scratch directory (default $TMPDIR or /tmp)\n"
		"  --save DIR        keep the image of each violating state there\n"
		"  --known rename-data  report violations of only rule 3's promise that a\n"
		"                    rename over a file brings the data written before it\n"
		"                    as KNOWN, and do not fail for them\n"
		"Operations: create P | mkdir P | symlink P T | link P Q | write P OFF|end LEN\n"
		"  | trunc P SIZE | rename P Q | unlink P | rmdir P | setxattr P NAME LEN\n"
		"  | rmxattr P NAME | fsync P | fdatasync P | fsyncdir P | sync\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "quick", no_argument, NULL, 'q' },
		{ "lite", no_argument, NULL, 'L' },
		{ "full", no_argument, NULL, 'F' },
		{ "list", no_argument, NULL, 'l' },
		{ "jobs", required_argument, NULL, 'j' },
		{ "seed", required_argument, NULL, 's' },
		{ "max-all", required_argument, NULL, 'A' },
		{ "sample", required_argument, NULL, 'S' },
		{ "points", required_argument, NULL, 'P' },
		{ "triples", required_argument, NULL, 'T' },
		{ "work", required_argument, NULL, 'w' },
		{ "save", required_argument, NULL, 'k' },
		{ "setup", required_argument, NULL, 'u' },
		{ "workload", required_argument, NULL, 'W' },
		{ "only", required_argument, NULL, 'o' },
		{ "workload-file", required_argument, NULL, 'f' },
		{ "selftest", no_argument, NULL, 't' },
		{ "known", required_argument, NULL, 'n' },
		{ "point", required_argument, NULL, 'p' },
		{ "keep", required_argument, NULL, 'K' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct ace_cfg cfg = { .max_all = 64, .sample = 24, .seed = 1,
			       .only_point = -1 };
	const char *setup = NULL, *workload = NULL, *only = NULL, *tmp;
	char *file_text = NULL; /* --workload-file's text */
	bool list = false, selftest = false;
	int level = ACE_QUICK;
	unsigned int jobs = 1;
	uint32_t triples = 3000, i;
	struct ace_counts c = { 0 };
	struct ace_wls ws = { 0 };
	char work[PATH_MAX];
	uint64_t t0 = zutil_now_mono_ns();
	double secs;
	int opt, ret;

	if (argc > 1 && (!strcmp(argv[1], "replay") ||
			 !strcmp(argv[1], "writer") ||
			 !strcmp(argv[1], "verify")))
		return crash_kill_main(argc - 1, argv + 1);

	cfg.self = argv[0];
	while ((opt = getopt_long(argc, argv, "j:vh", lo, NULL)) != -1) {
		switch (opt) {
		case 'q':
			level = ACE_QUICK;
			break;
		case 'L':
			level = ACE_LITE;
			break;
		case 'F':
			level = ACE_FULL;
			break;
		case 'l':
			list = true;
			break;
		case 'j':
			jobs = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 's':
			cfg.seed = strtoull(optarg, NULL, 0);
			break;
		case 'A':
			cfg.max_all = strtoull(optarg, NULL, 0);
			break;
		case 'S':
			cfg.sample = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'P':
			cfg.max_points = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'T':
			triples = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'w':
			cfg.work = optarg;
			break;
		case 'k':
			cfg.save = optarg;
			break;
		case 'u':
			setup = optarg;
			break;
		case 'W':
			workload = optarg;
			break;
		case 'f':
			cfg.workload_file = optarg;
			break;
		case 'o':
			only = optarg;
			break;
		case 't':
			selftest = true;
			break;
		case 'n':
			if (strcmp(optarg, "rename-data")) {
				fprintf(stderr, "crash_ace: --known takes rename-data\n");
				return 2;
			}
			cfg.known |= ACE_V_RENAME_DATA;
			break;
		case 'p':
			cfg.only_point = strtoll(optarg, NULL, 0);
			break;
		case 'K':
			cfg.only_keep = optarg;
			break;
		case 'v':
			cfg.verbose = true;
			break;
		case 'h':
			ace_usage(stdout);
			return 0;
		default:
			ace_usage(stderr);
			return 2;
		}
	}
	cfg.level = level;
	cfg.triples = triples;
	if (optind < argc || ((workload || cfg.workload_file) && !setup) ||
	    (cfg.only_keep && cfg.only_point < 0)) {
		ace_usage(stderr);
		return 2;
	}
	if (!cfg.verbose)
		zlog_set_level(ZLOG_WARN);
	unsetenv(ZDEV_RECORD_ENV);

	tmp = getenv("TMPDIR");
	snprintf(work, sizeof(work), "%s/crash_ace.XXXXXX",
		 cfg.work ? cfg.work : tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(work)) {
		fprintf(stderr, "crash_ace: cannot make a scratch directory %s: %s\n",
			work, strerror(errno));
		return 2;
	}
	cfg.work = work;
	if (cfg.workload_file) {
		workload = file_text = ace_read_file(cfg.workload_file);
		if (!file_text) {
			ret = -errno;
			fprintf(stderr, "crash_ace: %s: %s\n",
				cfg.workload_file, strerror(-ret));
			goto out_rm;
		}
	}
	ret = ace_make_setups(work);
	if (ret)
		goto out_rm;

	if (workload) {
		if (!ace_setup_find(setup)) {
			fprintf(stderr, "crash_ace: no setup '%s' (ace, ckpt)\n",
				setup);
			ret = -EINVAL;
			goto out_rm;
		}
		ace_wls_add(&ws, setup, "cli", workload);
	} else {
		ace_generate(&ws, &ace_setup_find("ace")->model, level,
			     cfg.seed, triples);
	}
	if (only) {
		uint32_t n = 0;

		for (i = 0; i < ws.n; i++) {
			if (strcmp(ws.w[i].name, only)) {
				free(ws.w[i].ops);
				continue;
			}
			ws.w[n++] = ws.w[i];
		}
		ws.n = n;
		if (!n) {
			fprintf(stderr, "crash_ace: no workload named '%s' in this list (see --list)\n",
				only);
			ret = -EINVAL;
			goto out_rm;
		}
	}
	if (list) {
		for (i = 0; i < ws.n; i++)
			printf("%s [%s] %s\n", ws.w[i].name, ws.w[i].setup,
			       ws.w[i].ops);
		printf("%u workloads\n", ws.n);
		ret = 0;
		goto out_rm;
	}
	if (selftest && ace_selftest(&cfg)) {
		c.errors++;
		goto out_rm;
	}
	printf("crash_ace: %u workloads (%s), %u job%s, seed %" PRIu64
	       ", all states of a point up to %" PRIu64 " else %u sampled\n",
	       ws.n, workload ? "given" : ace_level_opt[level] + 2, jobs,
	       jobs == 1 ? "" : "s", cfg.seed, cfg.max_all, cfg.sample);
	fflush(stdout);
	ret = ace_run_all(&cfg, &ws, jobs, &c);
	secs = (double)(zutil_now_mono_ns() - t0) / 1e9;
	printf("crash_ace: %" PRIu64 " workloads, %" PRIu64
	       " crash points, %" PRIu64 " crash states checked, %" PRIu64
	       " violations (in %" PRIu64 " workloads), %" PRIu64
	       " known violations, %" PRIu64 " harness errors, %.1f s\n",
	       c.workloads, c.points, c.states, c.violations + c.known,
	       c.violating_workloads, c.known, c.errors, secs);
out_rm:
	for (i = 0; i < ws.n; i++)
		free(ws.w[i].ops);
	free(ws.w);
	free(file_text);
	for (i = 0; i < ZF_ARRAY_SIZE(ace_imgs); i++) {
		if (ace_imgs[i].name) {
			unlink(ace_imgs[i].img);
			ace_model_free(&ace_imgs[i].model);
		}
	}
	rmdir(work);
	if (ret)
		return 2;
	return c.errors ? 2 : c.violations ? 1 : 0;
}
