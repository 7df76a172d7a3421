// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests of the in-DRAM metadata (meta*.c): zm_apply() for every record
 * type, the refusal of every inconsistent record (-EUCLEAN, a reason, and
 * the state exactly as it was), every allocation of every record type
 * failing in turn (-ENOMEM, and the state as it was), and snapshot encode
 * -> load round trips, from a handful of inodes to records chunked by the
 * thousand.
 *
 * No device: a struct zmeta with a made-up geometry (NZ zones of ZS bytes;
 * zones 0 and 1 are super zones, 2 is in the metadata chain, the last one
 * is bad, the rest may hold data). Records are built here byte by byte, as
 * the journal would hand them to replay.
 */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "meta_i.h"
#include "testutil.h"
#include "zonefuse/crc32c.h"
#include "zonefuse/meta.h"
#include "zonefuse/util.h"

#define NZ 16u
#define ZS (64ull << 20)
#define BS 4096u
#define Z(n) ((uint64_t)(n) * ZS) /* first byte of zone n */
#define ROOT ZF_ROOT_INO

#define S_DIR (S_IFDIR | 0755)
#define S_REG (S_IFREG | 0644)
#define S_LNK (S_IFLNK | 0777)

static struct zmeta m;
static uint64_t seq;   /* seq of the last record applied */
static int64_t clock_; /* time of the last record built */
static char why[256];

/* zone_dead callbacks seen: zone and seq of each. */
static uint32_t dead_zone[64];
static uint64_t dead_seq[64];
static uint32_t n_dead;

/* A record being built; payloads are read through struct pointers. */
static _Alignas(8) char rb[ZF_REC_MAX + 4096];

/*
 * check_meta is linked with --wrap=malloc,calloc,realloc (tests/meson.build),
 * so every allocation of the library, of this file and of Check (linked
 * statically) comes through these. Armed (nomem_at != 0), the nomem_at-th
 * allocation since arming fails. It is armed only around one zm_apply(),
 * so the allocations of Check and libc (fork, printf) are not counted;
 * on_dead(), which runs inside zm_apply(), disarms it around its assert.
 */
void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t size);

static unsigned nomem_at;    /* 0: off; UINT_MAX: count only */
static unsigned nomem_count; /* allocations since armed */
static bool nomem_hit;	     /* the armed failure happened */

static bool nomem_now(void)
{
	if (!nomem_at || ++nomem_count != nomem_at)
		return false;
	nomem_hit = true;
	return true;
}

void *__wrap_malloc(size_t size)
{
	return nomem_now() ? NULL : __real_malloc(size);
}

void *__wrap_calloc(size_t n, size_t size)
{
	return nomem_now() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t size)
{
	return nomem_now() ? NULL : __real_realloc(p, size);
}

static void on_dead(void *arg, uint32_t zone, uint64_t s)
{
	/* Check allocates to note even a passing assert: not the record's. */
	unsigned armed = nomem_at;

	(void)arg;
	nomem_at = 0;
	ck_assert_uint_lt(n_dead, ZF_ARRAY_SIZE(dead_zone));
	nomem_at = armed;
	dead_zone[n_dead] = zone;
	dead_seq[n_dead] = s;
	n_dead++;
}

static void geom_init(struct zmeta *mm)
{
	uint32_t i;

	ck_assert_int_eq(zm_init(mm, NZ, ZS, BS), 0);
	for (i = 0; i < NZ; i++) {
		struct zm_zone *z = &mm->zones[i];

		z->start = z->wp = Z(i);
		z->len = z->cap = ZS;
		z->type = ZDEV_ZONE_SEQ;
		z->state = ZM_ZONE_FREE;
	}
	mm->zones[0].state = mm->zones[1].state = ZM_ZONE_SUPER;
	mm->zones[2].state = ZM_ZONE_META;
	mm->zones[NZ - 1].state = ZM_ZONE_BAD;
}

static bool build_only; /* NOMEM(): build the record, do not apply it */
static uint16_t built_type;
static uint32_t built_len;

static int apply(uint16_t type, const void *p, uint32_t len)
{
	if (build_only) {
		built_type = type;
		built_len = len;
		return 0;
	}
	why[0] = '\0';
	return zm_apply(&m, type, p, len, ++seq, why, sizeof(why));
}

static int64_t tick(void)
{
	return clock_ += 1000;
}

/* ---- record builders: each applies one record and returns zm_apply's --- */

static uint32_t b_create(uint64_t parent, uint64_t ino, uint32_t mode,
			 const char *name, const char *target)
{
	struct zf_rec_create *r = (void *)rb;
	size_t nl = name ? strlen(name) : 0, tl = target ? strlen(target) : 0;
	int64_t t = tick();

	memset(r, 0, sizeof(*r));
	r->parent = htole64(parent);
	r->attr.ino = htole64(ino);
	r->attr.mode = htole32(mode);
	r->attr.uid = htole32(1000);
	r->attr.gid = htole32(100);
	r->attr.nlink = htole32(7); /* ignored: a new inode has 1 (2) */
	r->attr.size = htole64(12345); /* ignored too */
	r->attr.atime = r->attr.mtime = r->attr.ctime = r->attr.btime =
		(int64_t)htole64((uint64_t)t);
	r->rdev = htole32(0);
	r->name_len = htole16((uint16_t)nl);
	r->target_len = htole16((uint16_t)tl);
	if (nl)
		memcpy(r + 1, name, nl);
	if (tl)
		memcpy((char *)(r + 1) + nl, target, tl);
	return (uint32_t)(sizeof(*r) + nl + tl);
}

static int mk(uint64_t parent, uint64_t ino, uint32_t mode, const char *name,
	      const char *target)
{
	uint32_t len = b_create(parent, ino, mode, name, target);

	return apply(ZF_REC_CREATE, rb, len);
}

static uint32_t b_link(uint64_t parent, uint64_t ino, const char *name)
{
	struct zf_rec_link *r = (void *)rb;
	size_t nl = strlen(name);

	memset(r, 0, sizeof(*r));
	r->parent = htole64(parent);
	r->ino = htole64(ino);
	r->time = (int64_t)htole64((uint64_t)tick());
	r->name_len = htole16((uint16_t)nl);
	memcpy(r + 1, name, nl);
	return (uint32_t)(sizeof(*r) + nl);
}

static int lnk(uint64_t parent, uint64_t ino, const char *name)
{
	uint32_t len = b_link(parent, ino, name);

	return apply(ZF_REC_LINK, rb, len);
}

static int unl(uint64_t parent, uint64_t ino, const char *name)
{
	uint32_t len = b_link(parent, ino, name);

	return apply(ZF_REC_UNLINK, rb, len);
}

static uint32_t b_rename(uint64_t sp, const char *sname, uint64_t dp,
			 const char *dname, uint64_t ino, uint64_t victim,
			 uint32_t flags)
{
	struct zf_rec_rename *r = (void *)rb;
	size_t sl = strlen(sname), dl = strlen(dname);

	memset(r, 0, sizeof(*r));
	r->src_parent = htole64(sp);
	r->dst_parent = htole64(dp);
	r->ino = htole64(ino);
	r->victim = htole64(victim);
	r->time = (int64_t)htole64((uint64_t)tick());
	r->flags = htole32(flags);
	r->src_len = htole16((uint16_t)sl);
	r->dst_len = htole16((uint16_t)dl);
	memcpy(r + 1, sname, sl);
	memcpy((char *)(r + 1) + sl, dname, dl);
	return (uint32_t)(sizeof(*r) + sl + dl);
}

static int ren(uint64_t sp, const char *sname, uint64_t dp, const char *dname,
	       uint64_t ino, uint64_t victim, uint32_t flags)
{
	uint32_t len = b_rename(sp, sname, dp, dname, ino, victim, flags);

	return apply(ZF_REC_RENAME, rb, len);
}

/* SETATTR of the fields @valid names, from @a (host order). */
static int setattr(uint64_t ino, uint32_t valid, const struct zf_dattr *a)
{
	struct zf_rec_setattr *r = (void *)rb;

	memset(r, 0, sizeof(*r));
	r->attr.ino = htole64(ino);
	r->attr.mode = htole32(a->mode);
	r->attr.uid = htole32(a->uid);
	r->attr.gid = htole32(a->gid);
	r->attr.size = htole64(a->size);
	r->attr.atime = (int64_t)htole64((uint64_t)a->atime);
	r->attr.mtime = (int64_t)htole64((uint64_t)a->mtime);
	r->attr.ctime = (int64_t)htole64((uint64_t)a->ctime);
	r->valid = htole32(valid);
	return apply(ZF_REC_SETATTR, rb, sizeof(*r));
}

static int trunc_to(uint64_t ino, uint64_t size)
{
	struct zf_dattr a = { .size = size };

	return setattr(ino, ZF_ATTR_SIZE, &a);
}

static uint32_t b_xattr(uint64_t ino, const char *name, const void *value,
			uint32_t vlen)
{
	struct zf_rec_xattr *r = (void *)rb;
	size_t nl = strlen(name);

	memset(r, 0, sizeof(*r));
	r->ino = htole64(ino);
	r->ctime = (int64_t)htole64((uint64_t)tick());
	r->value_len = htole32(vlen);
	r->name_len = htole16((uint16_t)nl);
	memcpy(r + 1, name, nl);
	if (vlen)
		memcpy((char *)(r + 1) + nl, value, vlen);
	return (uint32_t)(sizeof(*r) + nl + vlen);
}

static int xset(uint64_t ino, const char *name, const void *value,
		uint32_t vlen)
{
	uint32_t len = b_xattr(ino, name, value, vlen);

	return apply(ZF_REC_XATTR_SET, rb, len);
}

static int xdel(uint64_t ino, const char *name)
{
	uint32_t len = b_xattr(ino, name, NULL, 0);

	return apply(ZF_REC_XATTR_DEL, rb, len);
}

/*
 * The data block at device address @a, as the tests write it: its bytes
 * name it, so that each block has its own checksum.
 */
static void blk(uint64_t a, unsigned char *b)
{
	memset(b, (int)(a / 4096 % 251), 4096);
	memcpy(b, &a, sizeof(a));
}

static uint32_t blk_csum(uint64_t a)
{
	unsigned char b[4096];

	blk(a, b);
	return crc32c(0, b, sizeof(b));
}

/* An EXTENT record in rb, with the checksums of blk(): its length. */
static uint32_t b_ext(uint64_t ino, uint64_t foff, uint64_t addr,
		      uint64_t len, uint64_t size)
{
	struct zf_rec_extent *r = (void *)rb;
	uint32_t n = len && addr + len > addr ? ZF_CSUMS(addr, len, 4096) : 0;
	uint32_t i, v;

	r->ino = htole64(ino);
	r->foff = htole64(foff);
	r->addr = htole64(addr);
	r->len = htole64(len);
	r->size = htole64(size);
	r->mtime = (int64_t)htole64((uint64_t)tick());
	if (n > 1024)
		n = 0; /* a record the test means to be refused anyway */
	for (i = 0; i < n; i++) {
		v = htole32(blk_csum(ZF_ROUND_DOWN(addr, 4096) + i * 4096ull));
		memcpy(rb + sizeof(*r) + i * sizeof(v), &v, sizeof(v));
	}
	return (uint32_t)(sizeof(*r) + n * sizeof(v));
}

static int ext_sz(uint64_t ino, uint64_t foff, uint64_t addr, uint64_t len,
		  uint64_t size)
{
	return apply(ZF_REC_EXTENT, rb, b_ext(ino, foff, addr, len, size));
}

/* An EXTENT whose size is its end: a write at the end of the file. */
static int ext(uint64_t ino, uint64_t foff, uint64_t addr, uint64_t len)
{
	return ext_sz(ino, foff, addr, len, foff + len);
}

static int mv(uint64_t ino, uint64_t old, uint64_t new, uint64_t len)
{
	struct zf_rec_extent_move *r = (void *)rb;

	r->ino = htole64(ino);
	r->old_addr = htole64(old);
	r->new_addr = htole64(new);
	r->len = htole64(len);
	return apply(ZF_REC_EXTENT_MOVE, rb, sizeof(*r));
}

/* PREALLOC of [@off, @off + @len) of @ino; @size 0 keeps the size. */
static int pre(uint64_t ino, uint64_t off, uint64_t len, uint64_t size)
{
	struct zf_rec_prealloc *r = (void *)rb;

	r->ino = htole64(ino);
	r->off = htole64(off);
	r->len = htole64(len);
	r->size = htole64(size);
	r->ctime = (int64_t)htole64((uint64_t)tick());
	return apply(ZF_REC_PREALLOC, rb, sizeof(*r));
}

/* @ino's reserved ranges are exactly the pairs given. */
#define PRE_IS(ino, ...)                                                      \
	do {                                                                  \
		const struct zm_range w_[] = { __VA_ARGS__ };                 \
		const struct zm_inode *i_ = zm_iget(&m, (ino));               \
		uint32_t k_;                                                  \
		ck_assert_ptr_nonnull(i_);                                    \
		ck_assert_uint_eq(i_->f.n_pre, ZF_ARRAY_SIZE(w_));            \
		for (k_ = 0; k_ < ZF_ARRAY_SIZE(w_); k_++) {                  \
			ck_assert_uint_eq(i_->f.pre[k_].off, w_[k_].off);     \
			ck_assert_uint_eq(i_->f.pre[k_].len, w_[k_].len);     \
		}                                                             \
	} while (0)

static int ifree(uint64_t ino)
{
	struct zf_rec_ino *r = (void *)rb;

	r->ino = htole64(ino);
	return apply(ZF_REC_INODE_FREE, rb, sizeof(*r));
}

static int zrec(uint16_t type, uint32_t zone, uint64_t resets)
{
	struct zf_rec_zone *r = (void *)rb;

	r->zone = htole32(zone);
	r->reserved = 0;
	r->resets = htole64(resets);
	return apply(type, rb, sizeof(*r));
}

/* ---- looking at the state ------------------------------------------------ */

static struct zm_inode *iget(uint64_t ino)
{
	struct zm_inode *in = zm_iget(&m, ino);

	ck_assert_msg(in, "inode %llu is missing", (unsigned long long)ino);
	return in;
}

/* The inode @name in directory @dir names, or 0. */
static uint64_t child(uint64_t dir, const char *name)
{
	struct zm_dent *e = zm_lookup(iget(dir), name, strlen(name));

	return e ? e->ino : 0;
}

/* @in maps exactly the @n extents of @want, in order. */
static void ext_is(uint64_t ino, const struct zm_extent *want, uint32_t n)
{
	struct zm_inode *in = iget(ino);
	uint32_t k;

	ck_assert_msg(in->f.n_ext == n, "inode %llu has %u extents, not %u",
		      (unsigned long long)ino, in->f.n_ext, n);
	for (k = 0; k < n; k++)
		ck_assert_msg(in->f.ext[k].foff == want[k].foff &&
				      in->f.ext[k].addr == want[k].addr &&
				      in->f.ext[k].len == want[k].len,
			      "extent %u: {%llu, 0x%llx, %llu}, not {%llu, 0x%llx, %llu}",
			      k, (unsigned long long)in->f.ext[k].foff,
			      (unsigned long long)in->f.ext[k].addr,
			      (unsigned long long)in->f.ext[k].len,
			      (unsigned long long)want[k].foff,
			      (unsigned long long)want[k].addr,
			      (unsigned long long)want[k].len);
}

#define EXT_IS(ino, ...)                                                      \
	do {                                                                  \
		const struct zm_extent w_[] = { __VA_ARGS__ };                \
		ext_is(ino, w_, ZF_ARRAY_SIZE(w_));                           \
	} while (0)

/*
 * Every zone's live byte count is what the extents of all files add up to,
 * each counted in whole blocks; and zm_verify() agrees.
 */
static void valid_consistent(const struct zmeta *mm)
{
	uint64_t sum[NZ] = { 0 };
	char vwhy[256] = "";
	uint32_t b, k;

	ck_assert_msg(zm_verify(mm, vwhy, sizeof(vwhy)) == 0,
		      "zm_verify() refuses a state zm_apply() built: %s", vwhy);

	for (b = 0; b <= mm->imask; b++) {
		const struct zm_inode *in;

		for (in = mm->itab[b]; in; in = in->hnext) {
			if (!zm_is_reg(in))
				continue;
			for (k = 0; k < in->f.n_ext; k++)
				sum[zm_zone_of(mm, in->f.ext[k].addr)] +=
					ZF_ROUND_UP(in->f.ext[k].len,
						    (uint64_t)mm->block_size);
		}
	}
	for (k = 0; k < NZ; k++)
		ck_assert_msg(mm->zones[k].valid == sum[k],
			      "zone %u counts %llu live bytes, its extents %llu",
			      k, (unsigned long long)mm->zones[k].valid,
			      (unsigned long long)sum[k]);
}

/* ---- fingerprints: "the state is unchanged" ------------------------------ */

struct fp {
	char *b;
	size_t len, cap;
};

static void fp_put(struct fp *f, const void *p, size_t len)
{
	if (f->len + len > f->cap) {
		f->cap = (f->len + len) * 2;
		f->b = realloc(f->b, f->cap);
		ck_assert_ptr_nonnull(f->b);
	}
	memcpy(f->b + f->len, p, len);
	f->len += len;
}

static int fp_emit(void *arg, uint16_t type, const void *p, uint32_t len)
{
	fp_put(arg, &type, sizeof(type));
	fp_put(arg, &len, sizeof(len));
	fp_put(arg, p, len);
	return 0;
}

/*
 * Everything the state holds: a snapshot of it (inodes, names in readdir
 * order, extents, xattrs in list order, reset counts) plus what a snapshot
 * leaves out (zone live bytes and their sum, write pointers and states,
 * directory cookies, counts, the zone_dead calls made).
 */
static void fp_take(const struct zmeta *mm, struct fp *f)
{
	uint32_t b, i;

	memset(f, 0, sizeof(*f));
	ck_assert_int_eq(zm_snap_encode(mm, fp_emit, f), 0);
	for (i = 0; i < mm->nr_zones; i++) {
		fp_put(f, &mm->zones[i].valid, sizeof(uint64_t));
		fp_put(f, &mm->zones[i].wp, sizeof(uint64_t));
		fp_put(f, &mm->zones[i].state, 1);
	}
	fp_put(f, &mm->live_bytes, sizeof(mm->live_bytes));
	fp_put(f, &mm->prealloc_bytes, sizeof(mm->prealloc_bytes));
	fp_put(f, &mm->next_ino, sizeof(mm->next_ino));
	fp_put(f, &mm->nr_inodes, sizeof(mm->nr_inodes));
	fp_put(f, &mm->nr_dirs, sizeof(mm->nr_dirs));
	fp_put(f, &mm->nr_files, sizeof(mm->nr_files));
	fp_put(f, &n_dead, sizeof(n_dead));
	for (b = 0; b <= mm->imask; b++) {
		const struct zm_inode *in;

		for (in = mm->itab[b]; in; in = in->hnext) {
			fp_put(f, &in->ino, sizeof(in->ino));
			if (zm_is_dir(in)) {
				fp_put(f, &in->d.count, sizeof(in->d.count));
			}
		}
	}
}

/*
 * @expr must be refused with -EUCLEAN, say why, and leave the state as it
 * was, to the byte.
 */
#define REFUSED(expr)                                                         \
	do {                                                                  \
		struct fp b_, a_;                                             \
		int r_;                                                       \
		fp_take(&m, &b_);                                             \
		r_ = (expr);                                                  \
		ck_assert_msg(r_ == -EUCLEAN, "%s returned %d, not -EUCLEAN", \
			      #expr, r_);                                     \
		ck_assert_msg(why[0], "%s: refused without a reason", #expr); \
		fp_take(&m, &a_);                                             \
		ck_assert_msg(a_.len == b_.len && !memcmp(a_.b, b_.b, a_.len), \
			      "%s (refused: %s) changed the state", #expr,    \
			      why);                                           \
		free(a_.b);                                                   \
		free(b_.b);                                                   \
	} while (0)

/* ---- fixture ------------------------------------------------------------- */

static void setup(void)
{
	geom_init(&m);
	m.zone_dead = on_dead;
	seq = 0;
	clock_ = 1000000000;
	n_dead = 0;
	ck_assert_int_eq(mk(0, ROOT, S_DIR, NULL, NULL), 0);
}

static void teardown(void)
{
	zm_destroy(&m);
}

/* ---- CREATE -------------------------------------------------------------- */

START_TEST(test_create)
{
	struct zm_inode *root = iget(ROOT), *d, *f, *s;
	int64_t t;

	ck_assert(zm_is_dir(root));
	ck_assert_uint_eq(root->nlink, 2);
	ck_assert_uint_eq(root->parent, ROOT);
	ck_assert_uint_eq(m.next_ino, ROOT + 1);
	ck_assert_uint_eq(m.nr_inodes, 1);

	ck_assert_int_eq(mk(ROOT, 2, S_DIR, "d", NULL), 0);
	t = clock_;
	d = iget(2);
	ck_assert_uint_eq(d->nlink, 2);
	ck_assert_uint_eq(d->parent, ROOT);
	ck_assert_uint_eq(d->size, 0);
	ck_assert_uint_eq(d->uid, 1000);
	ck_assert_uint_eq(d->gid, 100);
	ck_assert_int_eq(d->btime, t);
	ck_assert_uint_eq(root->nlink, 3);
	ck_assert_int_eq(root->mtime, t);
	ck_assert_int_eq(root->ctime, t);
	ck_assert_uint_eq(child(ROOT, "d"), 2);

	ck_assert_int_eq(mk(2, 3, S_REG, "f", NULL), 0);
	f = iget(3);
	ck_assert(zm_is_reg(f));
	ck_assert_uint_eq(f->nlink, 1);
	ck_assert_uint_eq(f->size, 0); /* the record's size is ignored */
	ck_assert_uint_eq(f->f.n_ext, 0);
	ck_assert_uint_eq(d->nlink, 2); /* a file is not a subdirectory */
	ck_assert_int_eq(d->mtime, clock_);

	ck_assert_int_eq(mk(2, 4, S_LNK, "s", "../some/target"), 0);
	s = iget(4);
	ck_assert(zm_is_lnk(s));
	ck_assert_str_eq(s->target, "../some/target");
	ck_assert_uint_eq(s->size, strlen("../some/target"));

	ck_assert_int_eq(mk(2, 5, S_IFIFO | 0600, "fifo", NULL), 0);
	ck_assert_int_eq(mk(2, 6, S_IFSOCK | 0600, "sock", NULL), 0);

	/* Inode numbers need not be dense: next_ino follows the highest. */
	ck_assert_int_eq(mk(ROOT, 100, S_REG, "far", NULL), 0);
	ck_assert_uint_eq(m.next_ino, 101);
	ck_assert_int_eq(mk(ROOT, 7, S_REG, "near", NULL), 0);
	ck_assert_uint_eq(m.next_ino, 101);

	ck_assert_uint_eq(m.nr_inodes, 8);
	ck_assert_uint_eq(m.nr_dirs, 2);
	ck_assert_uint_eq(m.nr_files, 6);
	ck_assert_uint_eq(iget(2)->d.count, 4);
}
END_TEST

START_TEST(test_create_refused)
{
	char name[ZF_NAME_MAX + 2];
	uint32_t len;

	ck_assert_int_eq(mk(ROOT, 2, S_DIR, "d", NULL), 0);
	ck_assert_int_eq(mk(2, 3, S_REG, "f", NULL), 0);

	REFUSED(mk(ROOT, 3, S_REG, "again", NULL));   /* inode exists */
	REFUSED(mk(ROOT, 0, S_REG, "zero", NULL));    /* inode 0 */
	REFUSED(mk(2, 9, S_REG, "f", NULL));	      /* name exists */
	REFUSED(mk(3, 9, S_REG, "x", NULL));	      /* parent a file */
	REFUSED(mk(42, 9, S_REG, "x", NULL));	      /* parent missing */
	REFUSED(mk(0, 9, S_DIR, NULL, NULL));	      /* a second root */
	REFUSED(mk(0, ROOT, S_DIR, NULL, NULL));      /* root again */
	REFUSED(mk(ROOT, 9, 0170000 | 0644, "x", NULL)); /* no such type */
	REFUSED(mk(ROOT, 9, S_IFREG | 010000, "x", NULL)); /* stray bits */
	REFUSED(mk(ROOT, 9, S_LNK, "x", NULL));	      /* link, no target */
	REFUSED(mk(ROOT, 9, S_REG, "x", "t"));	      /* target, no link */
	REFUSED(mk(ROOT, 9, S_REG, "", NULL));
	REFUSED(mk(ROOT, 9, S_REG, ".", NULL));
	REFUSED(mk(ROOT, 9, S_REG, "..", NULL));
	REFUSED(mk(ROOT, 9, S_REG, "a/b", NULL));
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	REFUSED(mk(ROOT, 9, S_REG, name, NULL)); /* 256 bytes */

	/* A NUL inside the name. */
	len = b_create(ROOT, 9, S_REG, "ab", NULL);
	((char *)rb)[sizeof(struct zf_rec_create) + 1] = '\0';
	REFUSED(apply(ZF_REC_CREATE, rb, len));
	/* Lengths that do not add up. */
	len = b_create(ROOT, 9, S_REG, "ok", NULL);
	REFUSED(apply(ZF_REC_CREATE, rb, len - 1));
	len = b_create(ROOT, 9, S_REG, "ok", NULL);
	REFUSED(apply(ZF_REC_CREATE, rb, len + 8));
	REFUSED(apply(ZF_REC_CREATE, rb, sizeof(struct zf_rec_create) - 1));
	REFUSED(apply(ZF_REC_CREATE, rb, 0));

	/* The same record, well formed, does apply. */
	ck_assert_int_eq(mk(ROOT, 9, S_REG, "ok", NULL), 0);
}
END_TEST

/* ---- LINK, UNLINK (and rmdir) -------------------------------------------- */

START_TEST(test_link_unlink)
{
	struct zm_inode *f, *d;
	int64_t t;

	ck_assert_int_eq(mk(ROOT, 2, S_DIR, "d", NULL), 0);
	ck_assert_int_eq(mk(ROOT, 3, S_REG, "f", NULL), 0);
	ck_assert_int_eq(ext(3, 0, Z(4), 8192), 0);

	ck_assert_int_eq(lnk(2, 3, "g"), 0);
	t = clock_;
	f = iget(3);
	d = iget(2);
	ck_assert_uint_eq(f->nlink, 2);
	ck_assert_int_eq(f->ctime, t);
	ck_assert_int_eq(d->mtime, t);
	ck_assert_int_eq(d->ctime, t);
	ck_assert_uint_eq(d->nlink, 2);
	ck_assert_uint_eq(child(2, "g"), 3);

	ck_assert_int_eq(unl(ROOT, 3, "f"), 0);
	ck_assert_uint_eq(child(ROOT, "f"), 0);
	ck_assert_uint_eq(iget(3)->nlink, 1);
	ck_assert_int_eq(iget(ROOT)->mtime, clock_);
	ck_assert_uint_eq(n_dead, 0);

	/* The last link: the inode and its extents go, the zone is dead. */
	ck_assert_int_eq(unl(2, 3, "g"), 0);
	ck_assert_ptr_null(zm_iget(&m, 3));
	ck_assert_uint_eq(m.zones[4].valid, 0);
	ck_assert_uint_eq(n_dead, 1);
	ck_assert_uint_eq(dead_zone[0], 4);
	ck_assert_uint_eq(dead_seq[0], seq);

	/* rmdir: an empty directory; its parent loses the ".." link. */
	ck_assert_uint_eq(iget(ROOT)->nlink, 3);
	ck_assert_int_eq(unl(ROOT, 2, "d"), 0);
	ck_assert_ptr_null(zm_iget(&m, 2));
	ck_assert_uint_eq(iget(ROOT)->nlink, 2);
	ck_assert_uint_eq(m.nr_inodes, 1);
	ck_assert_uint_eq(m.nr_dirs, 1);
	ck_assert_uint_eq(m.nr_files, 0);
}
END_TEST

/* An unlinked inode that is open stays, with no link, until INODE_FREE. */
START_TEST(test_unlink_busy)
{
	ck_assert_int_eq(mk(ROOT, 2, S_REG, "f", NULL), 0);
	ck_assert_int_eq(ext(2, 0, Z(5), 4096), 0);
	iget(2)->nopen = 1;
	ck_assert_int_eq(unl(ROOT, 2, "f"), 0);
	ck_assert_uint_eq(iget(2)->nlink, 0);
	ck_assert_uint_eq(m.zones[5].valid, 4096);
	/* Still writable while open. */
	ck_assert_int_eq(ext(2, 4096, Z(5) + 4096, 4096), 0);
	ck_assert_uint_eq(m.zones[5].valid, 8192);
	/* But it cannot get a name back. */
	REFUSED(lnk(ROOT, 2, "back"));
	iget(2)->nopen = 0;
	ck_assert_int_eq(ifree(2), 0);
	ck_assert_ptr_null(zm_iget(&m, 2));
	ck_assert_uint_eq(m.zones[5].valid, 0);
	ck_assert_uint_eq(n_dead, 1);
	/* Replay meets INODE_FREE of an inode its last unlink freed: fine. */
	ck_assert_int_eq(ifree(2), 0);
}
END_TEST

START_TEST(test_link_refused)
{
	uint32_t len;

	ck_assert_int_eq(mk(ROOT, 2, S_DIR, "d", NULL), 0);
	ck_assert_int_eq(mk(2, 3, S_REG, "f", NULL), 0);
	ck_assert_int_eq(mk(ROOT, 4, S_REG, "g", NULL), 0);

	REFUSED(lnk(ROOT, 2, "dirlink"));    /* hard link to a directory */
	REFUSED(lnk(ROOT, 3, "g"));	     /* name taken */
	REFUSED(lnk(ROOT, 99, "x"));	     /* no such inode */
	REFUSED(lnk(99, 3, "x"));	     /* no such directory */
	REFUSED(lnk(4, 3, "x"));	     /* parent is a file */
	REFUSED(lnk(ROOT, 3, ".."));
	REFUSED(lnk(ROOT, 3, "a/b"));
	REFUSED(unl(ROOT, 3, "f"));	     /* not in that directory */
	REFUSED(unl(ROOT, 3, "g"));	     /* names another inode */
	REFUSED(unl(ROOT, 2, "missing"));
	REFUSED(unl(ROOT, 2, "d"));	     /* directory not empty */
	REFUSED(unl(ROOT, ROOT, "."));
	len = b_link(ROOT, 4, "g");
	REFUSED(apply(ZF_REC_UNLINK, rb, len - 1));
	REFUSED(apply(ZF_REC_LINK, rb, sizeof(struct zf_rec_link) - 8));
	iget(4)->nlink = UINT32_MAX;
	REFUSED(lnk(2, 4, "overflow"));
	iget(4)->nlink = 1;
	ck_assert_int_eq(unl(ROOT, 4, "g"), 0);
}
END_TEST

/* ---- RENAME -------------------------------------------------------------- */

START_TEST(test_rename_move)
{
	struct zm_inode *root, *a, *b, *sub;
	int64_t t;

	ck_assert_int_eq(mk(ROOT, 2, S_DIR, "a", NULL), 0);
	ck_assert_int_eq(mk(ROOT, 3, S_DIR, "b", NULL), 0);
	ck_assert_int_eq(mk(2, 4, S_REG, "f", NULL), 0);
	ck_assert_int_eq(mk(2, 5, S_DIR, "sub", NULL), 0);
	ck_assert_int_eq(mk(5, 6, S_REG, "deep", NULL), 0);
	root = iget(ROOT);
	a = iget(2);
	b = iget(3);
	sub = iget(5);

	/* A file, within a directory. */
	ck_assert_int_eq(ren(2, "f", 2, "f2", 4, 0, 0), 0);
	t = clock_;
	ck_assert_uint_eq(child(2, "f"), 0);
	ck_assert_uint_eq(child(2, "f2"), 4);
	ck_assert_int_eq(iget(4)->ctime, t);
	ck_assert_int_eq(a->mtime, t);
	ck_assert_uint_eq(iget(4)->nlink, 1);

	/* A file, across directories. */
	ck_assert_int_eq(ren(2, "f2", 3, "f", 4, 0, 0), 0);
	ck_assert_uint_eq(child(3, "f"), 4);
	ck_assert_uint_eq(a->d.count, 1);
	ck_assert_uint_eq(b->d.count, 1);
	ck_assert_int_eq(a->mtime, clock_);
	ck_assert_int_eq(b->mtime, clock_);
	ck_assert_uint_eq(a->nlink, 3);
	ck_assert_uint_eq(b->nlink, 2);

	/* A directory, across parents: its ".." and both link counts. */
	ck_assert_int_eq(ren(2, "sub", 3, "sub", 5, 0, 0), 0);
	ck_assert_uint_eq(sub->parent, 3);
	ck_assert_uint_eq(a->nlink, 2);
	ck_assert_uint_eq(b->nlink, 3);
	ck_assert_uint_eq(child(5, "deep"), 6);
	ck_assert_uint_eq(root->nlink, 4);

	/* NOREPLACE with nothing in the way is a plain rename. */
	ck_assert_int_eq(ren(3, "sub", ROOT, "top", 5, 0, ZF_RENAME_NOREPLACE),
			 0);
	ck_assert_uint_eq(sub->parent, ROOT);
	ck_assert_uint_eq(root->nlink, 5);
	ck_assert_uint_eq(b->nlink, 2);
	ck_assert_uint_eq(m.nr_inodes, 6);
}
END_TEST

START_TEST(test_rename_replace)
{
	ck_assert_int_eq(mk(ROOT, 2, S_REG, "f", NULL), 0);
	ck_assert_int_eq(mk(ROOT, 3, S_REG, "g", NULL), 0);
	ck_assert_int_eq(ext(3, 0, Z(6), 4096), 0);
	ck_assert_int_eq(mk(ROOT, 4, S_REG, "h", NULL), 0);
	ck_assert_int_eq(lnk(ROOT, 4, "h2"), 0);
	ck_assert_int_eq(mk(ROOT, 5, S_DIR, "d", NULL), 0);
	ck_assert_int_eq(mk(ROOT, 6, S_DIR, "e", NULL), 0);
	ck_assert_int_eq(mk(6, 7, S_REG, "x", NULL), 0);

	/* Over a file with one link: it goes, with its data. */
	ck_assert_int_eq(ren(ROOT, "f", ROOT, "g", 2, 3, 0), 0);
	ck_assert_uint_eq(child(ROOT, "g"), 2);
	ck_assert_uint_eq(child(ROOT, "f"), 0);
	ck_assert_ptr_null(zm_iget(&m, 3));
	ck_assert_uint_eq(m.zones[6].valid, 0);
	ck_assert_uint_eq(n_dead, 1);

	/* Over a file with two links: it loses one. */
	ck_assert_int_eq(ren(ROOT, "g", ROOT, "h", 2, 4, 0), 0);
	ck_assert_uint_eq(iget(4)->nlink, 1);
	ck_assert_int_eq(iget(4)->ctime, clock_);
	ck_assert_uint_eq(child(ROOT, "h2"), 4);

	/* A directory over an empty one (same parent, so no count moves). */
	ck_assert_uint_eq(iget(ROOT)->nlink, 4);
	ck_assert_int_eq(mk(5, 8, S_REG, "keep", NULL), 0);
	ck_assert_int_eq(unl(6, 7, "x"), 0);
	ck_assert_int_eq(ren(ROOT, "d", ROOT, "e", 5, 6, 0), 0);
	ck_assert_ptr_null(zm_iget(&m, 6));
	ck_assert_uint_eq(child(ROOT, "e"), 5);
	ck_assert_uint_eq(child(5, "keep"), 8);
	ck_assert_uint_eq(iget(ROOT)->nlink, 3);
	ck_assert_uint_eq(iget(5)->parent, ROOT);
	valid_consistent(&m);
}
END_TEST

START_TEST(test_rename_exchange)
{
	struct zm_inode *a, *b, *f, *d;

	ck_assert_int_eq(mk(ROOT, 2, S_DIR, "a", NULL), 0);
	ck_assert_int_eq(mk(ROOT, 3, S_DIR, "b", NULL), 0);
	ck_assert_int_eq(mk(2, 4, S_REG, "f", NULL), 0);
	ck_assert_int_eq(mk(3, 5, S_DIR, "d", NULL), 0);
	a = iget(2);
	b = iget(3);
	f = iget(4);
	d = iget(5);
	ck_assert_uint_eq(a->nlink, 2);
	ck_assert_uint_eq(b->nlink, 3);

	/* A file and a directory trade places across parents. */
	ck_assert_int_eq(ren(2, "f", 3, "d", 4, 5, ZF_RENAME_EXCHANGE), 0);
	ck_assert_uint_eq(child(2, "f"), 5);
	ck_assert_uint_eq(child(3, "d"), 4);
	ck_assert_uint_eq(d->parent, 2);
	ck_assert_uint_eq(a->nlink, 3);
	ck_assert_uint_eq(b->nlink, 2);
	ck_assert_uint_eq(f->nlink, 1);
	ck_assert_uint_eq(d->nlink, 2);
	ck_assert_int_eq(f->ctime, clock_);
	ck_assert_int_eq(d->ctime, clock_);

	/* Two names in one directory swap; nothing else moves. */
	ck_assert_int_eq(mk(2, 6, S_REG, "g", NULL), 0);
	ck_assert_int_eq(ren(2, "f", 2, "g", 5, 6, ZF_RENAME_EXCHANGE), 0);
	ck_assert_uint_eq(child(2, "f"), 6);
	ck_assert_uint_eq(child(2, "g"), 5);
	ck_assert_uint_eq(a->nlink, 3);
	ck_assert_uint_eq(d->parent, 2);
	ck_assert_uint_eq(m.nr_inodes, 6);
}
END_TEST

START_TEST(test_rename_refused)
{
	uint32_t len;

	ck_assert_int_eq(mk(ROOT, 2, S_DIR, "a", NULL), 0);
	ck_assert_int_eq(mk(2, 3, S_DIR, "b", NULL), 0);
	ck_assert_int_eq(mk(3, 4, S_DIR, "c", NULL), 0);
	ck_assert_int_eq(mk(ROOT, 5, S_REG, "f", NULL), 0);
	ck_assert_int_eq(mk(ROOT, 6, S_REG, "g", NULL), 0);
	ck_assert_int_eq(mk(ROOT, 7, S_DIR, "e", NULL), 0);
	ck_assert_int_eq(mk(ROOT, 8, S_DIR, "full", NULL), 0);
	ck_assert_int_eq(mk(8, 9, S_REG, "x", NULL), 0);

	/* Into its own subtree: child, grandchild, itself. */
	REFUSED(ren(ROOT, "a", 2, "a", 2, 0, 0));
	REFUSED(ren(ROOT, "a", 3, "a", 2, 0, 0));
	REFUSED(ren(ROOT, "a", 4, "a", 2, 0, 0));
	/* EXCHANGE that would put either side below itself. */
	REFUSED(ren(ROOT, "a", 3, "c", 2, 4, ZF_RENAME_EXCHANGE));
	REFUSED(ren(3, "c", ROOT, "a", 4, 2, ZF_RENAME_EXCHANGE));
	/* Source and target not what the record says. */
	REFUSED(ren(ROOT, "missing", ROOT, "x", 5, 0, 0));
	REFUSED(ren(ROOT, "f", ROOT, "x", 6, 0, 0));	 /* wrong ino */
	REFUSED(ren(ROOT, "f", ROOT, "g", 5, 0, 0));	 /* target exists */
	REFUSED(ren(ROOT, "f", ROOT, "x", 5, 6, 0));	 /* no target */
	REFUSED(ren(ROOT, "f", ROOT, "e", 5, 6, 0));	 /* other target */
	REFUSED(ren(ROOT, "f", ROOT, "f", 5, 5, 0));	 /* victim == ino */
	REFUSED(ren(ROOT, "f", ROOT, "f", 5, 0, 0));	 /* onto itself */
	REFUSED(ren(ROOT, "f", ROOT, "g", 5, 6, ZF_RENAME_NOREPLACE));
	REFUSED(ren(ROOT, "f", ROOT, "x", 5, 0, ZF_RENAME_EXCHANGE));
	REFUSED(ren(ROOT, "f", ROOT, "g", 5, 6, 4)); /* unknown flag */
	REFUSED(ren(ROOT, "f", ROOT, "g", 5, 6,
		    ZF_RENAME_EXCHANGE | ZF_RENAME_NOREPLACE));
	REFUSED(ren(ROOT, "f", 99, "x", 5, 0, 0));	 /* no such dir */
	REFUSED(ren(ROOT, "f", 6, "x", 5, 0, 0));	 /* dst is a file */
	/* Types that cannot replace each other. */
	REFUSED(ren(ROOT, "f", ROOT, "e", 5, 7, 0));	 /* file over dir */
	REFUSED(ren(ROOT, "e", ROOT, "f", 7, 5, 0));	 /* dir over file */
	REFUSED(ren(ROOT, "e", ROOT, "full", 7, 8, 0)); /* over non-empty */
	REFUSED(ren(ROOT, "f", ROOT, "..", 5, 0, 0));
	REFUSED(ren(ROOT, "f", ROOT, "a/b", 5, 0, 0));
	len = b_rename(ROOT, "f", ROOT, "h", 5, 0, 0);
	REFUSED(apply(ZF_REC_RENAME, rb, len + 1));
	REFUSED(apply(ZF_REC_RENAME, rb, 40));
	/* The well-formed versions apply. */
	ck_assert_int_eq(ren(ROOT, "a", 7, "a", 2, 0, 0), 0);
	ck_assert_int_eq(ren(ROOT, "f", ROOT, "g", 5, 6, 0), 0);
}
END_TEST

/* ---- SETATTR -------------------------------------------------------------- */

START_TEST(test_setattr)
{
	struct zf_dattr a = {
		.mode = 04711, .uid = 7, .gid = 8, .size = 99,
		.atime = 11, .mtime = 22, .ctime = 33,
	};
	struct zm_inode *f;

	ck_assert_int_eq(mk(ROOT, 2, S_REG, "f", NULL), 0);
	f = iget(2);
	ck_assert_int_eq(setattr(2, ZF_ATTR_MODE | ZF_ATTR_UID, &a), 0);
	ck_assert_uint_eq(f->mode, S_IFREG | 04711); /* the type stays */
	ck_assert_uint_eq(f->uid, 7);
	ck_assert_uint_eq(f->gid, 100);		     /* not named: kept */
	ck_assert_uint_eq(f->size, 0);
	ck_assert_int_eq(setattr(2, ZF_ATTR_GID | ZF_ATTR_ATIME |
					    ZF_ATTR_MTIME | ZF_ATTR_CTIME,
				 &a),
			 0);
	ck_assert_uint_eq(f->gid, 8);
	ck_assert_int_eq(f->atime, 11);
	ck_assert_int_eq(f->mtime, 22);
	ck_assert_int_eq(f->ctime, 33);
	ck_assert_uint_eq(f->mode, S_IFREG | 04711);
	/* A directory's attributes too. */
	ck_assert_int_eq(setattr(ROOT, ZF_ATTR_MODE, &a), 0);
	ck_assert_uint_eq(iget(ROOT)->mode, S_IFDIR | 04711);
}
END_TEST

/* A smaller size drops extents and parts of them; a larger one is a hole. */
START_TEST(test_setattr_truncate)
{
	struct zm_inode *f;

	ck_assert_int_eq(mk(ROOT, 2, S_REG, "f", NULL), 0);
	f = iget(2);
	ck_assert_int_eq(ext(2, 0, Z(4), 8192), 0);
	ck_assert_int_eq(ext(2, 8192, Z(5), 8192), 0);
	ck_assert_int_eq(ext(2, 16384, Z(6), 4096), 0);
	ck_assert_uint_eq(f->size, 20480);

	/* Grow: size only. */
	ck_assert_int_eq(trunc_to(2, 1 << 20), 0);
	ck_assert_uint_eq(f->size, 1 << 20);
	ck_assert_uint_eq(f->f.n_ext, 3);

	/* Into the middle of the second extent: the third goes. */
	ck_assert_int_eq(trunc_to(2, 10000), 0);
	ck_assert_uint_eq(f->size, 10000);
	EXT_IS(2, { 0, Z(4), 8192 }, { 8192, Z(5), 10000 - 8192 });
	/* Live bytes count whole blocks: the padded tail takes its block. */
	ck_assert_uint_eq(m.zones[5].valid, 4096);
	ck_assert_uint_eq(m.zones[6].valid, 0);
	ck_assert_uint_eq(n_dead, 1);
	ck_assert_uint_eq(dead_zone[0], 6);
	ck_assert_uint_eq(dead_seq[0], seq);

	/* To zero: nothing left. */
	ck_assert_int_eq(trunc_to(2, 0), 0);
	ck_assert_uint_eq(f->f.n_ext, 0);
	ck_assert_uint_eq(m.zones[4].valid, 0);
	ck_assert_uint_eq(m.zones[5].valid, 0);
	ck_assert_uint_eq(n_dead, 3);
	valid_consistent(&m);
}
END_TEST

START_TEST(test_setattr_refused)
{
	struct zf_dattr a = { .mode = 0644, .size = 0 };

	ck_assert_int_eq(mk(ROOT, 2, S_REG, "f", NULL), 0);
	ck_assert_int_eq(mk(ROOT, 3, S_LNK, "l", "t"), 0);
	ck_assert_int_eq(ext(2, 0, Z(4), 4096), 0);
	REFUSED(setattr(99, ZF_ATTR_MODE, &a));
	REFUSED(setattr(2, ZF_ATTR_ALL + 1, &a));
	REFUSED(setattr(2, 1u << 31, &a));
	REFUSED(setattr(ROOT, ZF_ATTR_SIZE, &a));  /* size of a directory */
	REFUSED(setattr(3, ZF_ATTR_SIZE, &a));	   /* of a symlink */
	a.mode = S_IFDIR | 0755;		   /* a type change */
	REFUSED(setattr(2, ZF_ATTR_MODE, &a));
	/* A bad field refuses the whole record: the size stays too. */
	REFUSED(setattr(2, ZF_ATTR_MODE | ZF_ATTR_SIZE, &a));
	REFUSED(apply(ZF_REC_SETATTR, rb, sizeof(struct zf_rec_setattr) - 1));
	REFUSED(apply(ZF_REC_SETATTR, rb, sizeof(struct zf_rec_setattr) + 8));
}
END_TEST

/* ---- XATTR_SET, XATTR_DEL ------------------------------------------------- */

START_TEST(test_xattr)
{
	static char big[ZF_XATTR_VALUE_MAX];
	struct zm_xattr *x;
	struct zm_inode *f;

	ck_assert_int_eq(mk(ROOT, 2, S_REG, "f", NULL), 0);
	f = iget(2);
	ck_assert_int_eq(xset(2, "user.a", "one", 3), 0);
	ck_assert_int_eq(f->ctime, clock_);
	x = zm_xattr_get(f, "user.a", 6);
	ck_assert_ptr_nonnull(x);
	ck_assert_uint_eq(x->value_len, 3);
	ck_assert_int_eq(memcmp(x->data + 6, "one", 3), 0);
	ck_assert_ptr_null(zm_xattr_get(f, "user.", 5));

	/* Set again: replaced, not duplicated. */
	ck_assert_int_eq(xset(2, "user.a", "second", 6), 0);
	x = zm_xattr_get(f, "user.a", 6);
	ck_assert_uint_eq(x->value_len, 6);
	ck_assert_int_eq(memcmp(x->data + 6, "second", 6), 0);
	ck_assert_ptr_null(x->next);

	/* Empty and largest values; directories have them too. */
	ck_assert_int_eq(xset(2, "user.empty", "", 0), 0);
	ck_assert_uint_eq(zm_xattr_get(f, "user.empty", 10)->value_len, 0);
	tu_random(big, sizeof(big), 1);
	ck_assert_int_eq(xset(ROOT, "user.big", big, sizeof(big)), 0);
	x = zm_xattr_get(iget(ROOT), "user.big", 8);
	ck_assert_uint_eq(x->value_len, sizeof(big));
	ck_assert_int_eq(memcmp(x->data + 8, big, sizeof(big)), 0);

	ck_assert_int_eq(xdel(2, "user.a"), 0);
	ck_assert_ptr_null(zm_xattr_get(f, "user.a", 6));
	ck_assert_ptr_nonnull(zm_xattr_get(f, "user.empty", 10));
	ck_assert_int_eq(f->ctime, clock_);
}
END_TEST

START_TEST(test_xattr_refused)
{
	static char big[ZF_XATTR_VALUE_MAX + 1];
	char name[ZF_XATTR_NAME_MAX + 2];
	struct zf_rec_xattr *r = (void *)rb;
	uint32_t len;

	ck_assert_int_eq(mk(ROOT, 2, S_REG, "f", NULL), 0);
	ck_assert_int_eq(xset(2, "user.a", "v", 1), 0);
	REFUSED(xset(99, "user.a", "v", 1));
	REFUSED(xdel(99, "user.a"));
	REFUSED(xdel(2, "user.missing"));
	REFUSED(xset(2, "", "v", 1));
	REFUSED(xset(2, "user.big", big, sizeof(big)));
	memset(name, 'x', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	REFUSED(xset(2, name, "v", 1));
	/* A DEL with a value. */
	len = b_xattr(2, "user.a", "v", 1);
	REFUSED(apply(ZF_REC_XATTR_DEL, rb, len));
	/* Lengths. */
	len = b_xattr(2, "user.a", "vv", 2);
	REFUSED(apply(ZF_REC_XATTR_SET, rb, len - 1));
	REFUSED(apply(ZF_REC_XATTR_SET, rb, len + 1));
	REFUSED(apply(ZF_REC_XATTR_SET, rb, sizeof(*r) - 1));
	/* A value_len whose sum with the name wraps 32 bits. */
	len = b_xattr(2, "user.a", "vv", 2);
	r->value_len = htole32(UINT32_MAX - 5);
	REFUSED(apply(ZF_REC_XATTR_SET, rb, len));
}
END_TEST

/* ---- EXTENT ---------------------------------------------------------------- */

START_TEST(test_extent_add)
{
	struct zm_inode *f;

	ck_assert_int_eq(mk(ROOT, 2, S_REG, "f", NULL), 0);
	f = iget(2);

	ck_assert_int_eq(ext(2, 0, Z(4), 8192), 0);
	EXT_IS(2, { 0, Z(4), 8192 });
	ck_assert_uint_eq(f->size, 8192);
	ck_assert_int_eq(f->mtime, clock_);
	ck_assert_int_eq(f->ctime, clock_);
	ck_assert_uint_eq(m.zones[4].valid, 8192);
	ck_assert_uint_eq(m.zones[4].state, ZM_ZONE_DATA);

	/* Contiguous in the file and on the device, same zone: merged. */
	ck_assert_int_eq(ext(2, 8192, Z(4) + 8192, 4096), 0);
	EXT_IS(2, { 0, Z(4), 12288 });
	ck_assert_uint_eq(f->size, 12288);

	/* Overwrite the middle: split in three. The size does not shrink. */
	ck_assert_int_eq(ext_sz(2, 4096, Z(5), 4096, 8192), 0);
	EXT_IS(2, { 0, Z(4), 4096 }, { 4096, Z(5), 4096 },
	       { 8192, Z(4) + 8192, 4096 });
	ck_assert_uint_eq(f->size, 12288);
	ck_assert_uint_eq(m.zones[4].valid, 8192);
	ck_assert_uint_eq(m.zones[5].valid, 4096);

	/* Append after the last piece: merged with it. */
	ck_assert_int_eq(ext(2, 12288, Z(4) + 12288, 4096), 0);
	EXT_IS(2, { 0, Z(4), 4096 }, { 4096, Z(5), 4096 },
	       { 8192, Z(4) + 8192, 8192 });
	ck_assert_uint_eq(f->size, 16384);

	/* Overwrite the head of a piece: it is cut at the front. */
	ck_assert_int_eq(ext_sz(2, 8192, Z(6), 4096, 0), 0);
	EXT_IS(2, { 0, Z(4), 4096 }, { 4096, Z(5), 4096 },
	       { 8192, Z(6), 4096 }, { 12288, Z(4) + 12288, 4096 });
	ck_assert_uint_eq(m.zones[4].valid, 8192);

	/* Cover two pieces whole: both go, their zones die. */
	ck_assert_int_eq(ext_sz(2, 4096, Z(7), 8192, 0), 0);
	EXT_IS(2, { 0, Z(4), 4096 }, { 4096, Z(7), 8192 },
	       { 12288, Z(4) + 12288, 4096 });
	ck_assert_uint_eq(m.zones[5].valid, 0);
	ck_assert_uint_eq(m.zones[6].valid, 0);
	ck_assert_uint_eq(n_dead, 2);
	ck_assert_uint_eq(dead_zone[0], 5);
	ck_assert_uint_eq(dead_zone[1], 6);
	ck_assert_uint_eq(dead_seq[0], seq);
	ck_assert_uint_eq(dead_seq[1], seq);

	/* Straddle two pieces: a tail cut and a head cut (not block-sized). */
	ck_assert_int_eq(ext_sz(2, 2048, Z(8), 4096, 0), 0);
	EXT_IS(2, { 0, Z(4), 2048 }, { 2048, Z(8), 4096 },
	       { 6144, Z(7) + 2048, 6144 }, { 12288, Z(4) + 12288, 4096 });
	/* Blocks: the cut pieces still take the blocks they touch. */
	ck_assert_uint_eq(m.zones[4].valid, 4096 + 4096);
	ck_assert_uint_eq(m.zones[7].valid, 8192);
	ck_assert_uint_eq(m.zones[8].valid, 4096);

	/* A write past the end leaves a hole. */
	ck_assert_int_eq(ext(2, 1 << 20, Z(9), 4096), 0);
	ck_assert_uint_eq(f->size, (1 << 20) + 4096);
	ck_assert_uint_eq(f->f.n_ext, 5);

	/* Device-contiguous across a zone boundary: never merged. */
	ck_assert_int_eq(mk(ROOT, 3, S_REG, "g", NULL), 0);
	ck_assert_int_eq(ext(3, 0, Z(10) - 4096, 4096), 0);
	ck_assert_int_eq(ext(3, 4096, Z(10), 4096), 0);
	EXT_IS(3, { 0, Z(10) - 4096, 4096 }, { 4096, Z(10), 4096 });

	/* Written out of order: both pieces kept, in file order. */
	ck_assert_int_eq(mk(ROOT, 4, S_REG, "h", NULL), 0);
	ck_assert_int_eq(ext(4, 8192, Z(11) + 8192, 4096), 0);
	ck_assert_int_eq(ext(4, 0, Z(11), 4096), 0);
	EXT_IS(4, { 0, Z(11), 4096 }, { 8192, Z(11) + 8192, 4096 });
	valid_consistent(&m);
}
END_TEST

START_TEST(test_extent_refused)
{
	ck_assert_int_eq(mk(ROOT, 2, S_REG, "f", NULL), 0);
	ck_assert_int_eq(mk(ROOT, 3, S_DIR, "d", NULL), 0);
	ck_assert_int_eq(mk(ROOT, 4, S_LNK, "l", "t"), 0);
	ck_assert_int_eq(ext(2, 0, Z(4), 4096), 0);

	REFUSED(ext(99, 0, Z(4), 4096));	    /* no such inode */
	REFUSED(ext(3, 0, Z(4) + 4096, 4096));	    /* a directory */
	REFUSED(ext(4, 0, Z(4) + 4096, 4096));	    /* a symlink */
	REFUSED(ext(2, 0, Z(0) + 8192, 4096));	    /* a super zone */
	REFUSED(ext(2, 0, Z(2) + 8192, 4096));	    /* the journal's */
	REFUSED(ext(2, 0, Z(NZ - 1), 4096));	    /* a bad zone */
	REFUSED(ext(2, 0, Z(NZ), 4096));	    /* past the device */
	REFUSED(ext(2, 0, Z(4) + 100, 4096));	    /* unaligned */
	REFUSED(ext(2, 0, Z(4), 0));		    /* empty */
	REFUSED(ext(2, 0, Z(5) - 4096, 8192));	    /* crosses a zone */
	REFUSED(ext(2, 0, Z(5), ZS + 4096));	    /* longer than a zone */
	REFUSED(ext_sz(2, 0, Z(5), 4096, 4097));    /* size past the end */
	REFUSED(ext(2, UINT64_MAX - 100, Z(5), 4096)); /* file offset wraps */
	REFUSED(ext(2, 0, UINT64_MAX - 4095, 4096));
	REFUSED(apply(ZF_REC_EXTENT, rb, sizeof(struct zf_rec_extent) - 8));
	ck_assert_int_eq(iget(2)->f.n_ext, 1);
}
END_TEST

/* ---- EXTENT_MOVE ----------------------------------------------------------- */

START_TEST(test_extent_move)
{
	ck_assert_int_eq(mk(ROOT, 2, S_REG, "f", NULL), 0);
	ck_assert_int_eq(ext(2, 0, Z(4), 12288), 0);
	ck_assert_int_eq(mk(ROOT, 3, S_REG, "g", NULL), 0);
	ck_assert_int_eq(ext(3, 0, Z(4) + 65536, 4096), 0);

	/* The middle of a piece moves: it splits around the copy. */
	ck_assert_int_eq(mv(2, Z(4) + 4096, Z(5), 4096), 0);
	EXT_IS(2, { 0, Z(4), 4096 }, { 4096, Z(5), 4096 },
	       { 8192, Z(4) + 8192, 4096 });
	ck_assert_uint_eq(m.zones[4].valid, 8192 + 4096);
	ck_assert_uint_eq(m.zones[5].valid, 4096);
	ck_assert_uint_eq(iget(2)->size, 12288);

	/* A range covering both remaining pieces (and a gap) moves both. */
	ck_assert_int_eq(mv(2, Z(4), Z(6), 16384), 0);
	EXT_IS(2, { 0, Z(6), 4096 }, { 4096, Z(5), 4096 },
	       { 8192, Z(6) + 8192, 4096 });
	/* g's data in zone 4 is untouched, so zone 4 is not dead. */
	ck_assert_uint_eq(m.zones[4].valid, 4096);
	ck_assert_uint_eq(n_dead, 0);
	EXT_IS(3, { 0, Z(4) + 65536, 4096 });

	/* A range the file no longer maps: nothing happens. */
	ck_assert_int_eq(mv(2, Z(4), Z(7), 4096), 0);
	EXT_IS(2, { 0, Z(6), 4096 }, { 4096, Z(5), 4096 },
	       { 8192, Z(6) + 8192, 4096 });
	ck_assert_uint_eq(m.zones[7].valid, 0);

	/* The last piece leaves zone 4: it dies. */
	ck_assert_int_eq(mv(3, Z(4) + 65536, Z(7), 4096), 0);
	EXT_IS(3, { 0, Z(7), 4096 });
	ck_assert_uint_eq(m.zones[4].valid, 0);
	ck_assert_uint_eq(n_dead, 1);
	ck_assert_uint_eq(dead_zone[0], 4);
	valid_consistent(&m);
}
END_TEST

/*
 * Data checksums: an EXTENT sets those of its blocks (the record must
 * carry one per block), a move takes them along, a reset drops them, and
 * zm_csum_check() passes the blocks as written and nothing else.
 */
START_TEST(test_csums)
{
	unsigned char buf[3 * 4096];
	uint64_t bad = 0;
	uint32_t len, i;

	ck_assert_int_eq(mk(ROOT, 2, S_REG, "f", NULL), 0);
	ck_assert_int_eq(ext(2, 0, Z(4), 12288), 0);
	for (i = 0; i < 3; i++) {
		ck_assert_uint_eq(m.zones[4].csum[i], blk_csum(Z(4) + i * 4096ull));
		blk(Z(4) + i * 4096ull, buf + i * 4096);
	}
	ck_assert_int_eq(zm_csum_check(&m, Z(4), buf, sizeof(buf), &bad), 0);
	buf[4096 + 77] ^= 1;
	ck_assert_int_eq(zm_csum_check(&m, Z(4), buf, sizeof(buf), &bad), -EILSEQ);
	ck_assert_uint_eq(bad, Z(4) + 4096);
	/* A zone no record wrote: nothing passes. */
	ck_assert_int_eq(zm_csum_check(&m, Z(8), buf, 4096, &bad), -EILSEQ);
	ck_assert_uint_eq(bad, Z(8));

	/* One checksum too few or too many: refused, nothing changes. */
	len = b_ext(2, 12288, Z(4) + 12288, 8192, 20480);
	REFUSED(apply(ZF_REC_EXTENT, rb, len - 4));
	REFUSED(apply(ZF_REC_EXTENT, rb, len + 4));
	ck_assert_uint_eq(iget(2)->size, 12288);
	ck_assert_uint_eq(m.zones[4].csum[3], 0);
	/* An unaligned piece still counts every block it touches. */
	ck_assert_int_eq(mk(ROOT, 3, S_REG, "g", NULL), 0);
	len = b_ext(3, 0, Z(6) + 4000, 200, 200);
	ck_assert_uint_eq(len, sizeof(struct zf_rec_extent) + 2 * 4);

	/* A move takes the checksums along. */
	ck_assert_int_eq(mv(2, Z(4) + 4096, Z(5) + 8192, 4096), 0);
	ck_assert_uint_eq(m.zones[5].csum[2], blk_csum(Z(4) + 4096));
	blk(Z(4) + 4096, buf);
	ck_assert_int_eq(zm_csum_check(&m, Z(5) + 8192, buf, 4096, &bad), 0);
	REFUSED(mv(2, Z(4), Z(5) + 100, 4096)); /* another offset in a block */

	/* A reset drops them. */
	ck_assert_int_eq(mv(2, Z(4), Z(6), 12288), 0);
	ck_assert_uint_eq(m.zones[4].valid, 0);
	ck_assert_int_eq(zrec(ZF_REC_ZONE_RESET, 4, 1), 0);
	ck_assert_ptr_null(m.zones[4].csum);
	ck_assert_uint_eq(m.zones[6].csum[0], blk_csum(Z(4)));
}
END_TEST

START_TEST(test_extent_move_refused)
{
	ck_assert_int_eq(mk(ROOT, 2, S_REG, "f", NULL), 0);
	ck_assert_int_eq(ext(2, 0, Z(4), 8192), 0);
	REFUSED(mv(99, Z(4), Z(5), 4096));
	REFUSED(mv(ROOT, Z(4), Z(5), 4096));
	REFUSED(mv(2, Z(4), Z(0) + 8192, 4096));     /* into a super zone */
	REFUSED(mv(2, Z(4), Z(2) + 8192, 4096));     /* into the journal */
	REFUSED(mv(2, Z(4), Z(6) - 4096, 8192));     /* across a zone */
	REFUSED(mv(2, Z(4), Z(5) + 1, 4096));	     /* unaligned */
	REFUSED(mv(2, UINT64_MAX - 10, Z(5), 4096)); /* old range wraps */
	REFUSED(apply(ZF_REC_EXTENT_MOVE, rb, 8));
}
END_TEST

/* ---- INODE_FREE, ZONE_RESET, ZONE_FINISH, COUNTERS -------------------------- */

START_TEST(test_inode_free)
{
	ck_assert_int_eq(mk(ROOT, 2, S_REG, "f", NULL), 0);
	ck_assert_int_eq(ext(2, 0, Z(4), 4096), 0);
	REFUSED(ifree(2)); /* still linked */
	REFUSED(ifree(ROOT));
	REFUSED(apply(ZF_REC_INODE_FREE, rb, 4));
	iget(2)->nlookup = 1;
	ck_assert_int_eq(unl(ROOT, 2, "f"), 0);
	ck_assert_ptr_nonnull(zm_iget(&m, 2));
	ck_assert_int_eq(ifree(2), 0);
	ck_assert_ptr_null(zm_iget(&m, 2));
	ck_assert_uint_eq(m.zones[4].valid, 0);
	ck_assert_uint_eq(m.nr_files, 0);
	ck_assert_int_eq(ifree(12345), 0); /* long gone: nothing to do */
}
END_TEST

/*
 * ZONE_RESET: the new reset count, and the zone is free again. The write
 * pointer of a sequential zone is the device's to report (replay may meet
 * the record after the zone was written again), so only a conventional
 * zone's, which the file system keeps, is checked here.
 */
START_TEST(test_zone_reset)
{
	ck_assert_int_eq(mk(ROOT, 2, S_REG, "f", NULL), 0);
	ck_assert_int_eq(ext(2, 0, Z(4), 4096), 0);
	m.zones[4].wp = Z(4) + 8192;
	m.zones[5].wp = Z(5) + 4096;
	m.zones[5].state = ZM_ZONE_DATA;
	m.zones[6].type = ZDEV_ZONE_CONV;
	m.zones[6].wp = Z(6) + 4096;
	m.zones[6].state = ZM_ZONE_DATA;

	REFUSED(zrec(ZF_REC_ZONE_RESET, 4, 1));	 /* live data */
	REFUSED(zrec(ZF_REC_ZONE_RESET, 0, 1));	 /* a super zone */
	REFUSED(zrec(ZF_REC_ZONE_RESET, NZ, 1)); /* no such zone */
	REFUSED(zrec(ZF_REC_ZONE_FINISH, NZ, 1));
	REFUSED(apply(ZF_REC_ZONE_RESET, rb, 8));

	ck_assert_int_eq(zrec(ZF_REC_ZONE_RESET, 5, 17), 0);
	ck_assert_uint_eq(m.zones[5].resets, 17);
	ck_assert_uint_eq(m.zones[5].state, ZM_ZONE_FREE);

	/* Data gone, then the reset. */
	ck_assert_int_eq(trunc_to(2, 0), 0);
	ck_assert_int_eq(zrec(ZF_REC_ZONE_RESET, 4, 3), 0);
	ck_assert_uint_eq(m.zones[4].resets, 3);
	ck_assert_uint_eq(m.zones[4].state, ZM_ZONE_FREE);

	/* A conventional zone: the records move its write pointer. */
	ck_assert_int_eq(zrec(ZF_REC_ZONE_FINISH, 6, 0), 0);
	ck_assert_uint_eq(m.zones[6].wp, Z(6) + ZS);
	ck_assert_uint_eq(m.zones[6].resets, 0);
	ck_assert_int_eq(zrec(ZF_REC_ZONE_RESET, 6, 1), 0);
	ck_assert_uint_eq(m.zones[6].wp, Z(6));
	ck_assert_uint_eq(m.zones[6].resets, 1);
	ck_assert_uint_eq(m.zones[6].state, ZM_ZONE_FREE);
}
END_TEST

START_TEST(test_counters_and_unknown)
{
	struct zf_rec_counters c = {
		.host_bytes = htole64(1), .device_bytes = htole64(2),
		.gc_bytes = htole64(3), .meta_bytes = htole64(4),
	};

	ck_assert_int_eq(apply(ZF_REC_COUNTERS, &c, sizeof(c)), 0);
	ck_assert_uint_eq(m.counters.host_bytes, 1);
	ck_assert_uint_eq(m.counters.device_bytes, 2);
	ck_assert_uint_eq(m.counters.gc_bytes, 3);
	ck_assert_uint_eq(m.counters.meta_bytes, 4);
	REFUSED(apply(ZF_REC_COUNTERS, &c, sizeof(c) - 8));
	/* Not log records: unknown ones, snapshot ones, chain ones. */
	REFUSED(apply(0, &c, 8));
	REFUSED(apply(99, &c, 8));
	REFUSED(apply(ZF_REC_SNAP_BEGIN, &c, 8));
	REFUSED(apply(ZF_REC_NEXT, &c, 8));
	REFUSED(apply(ZF_REC_UNMOUNT, NULL, 0));
}
END_TEST

/* ---- snapshots ------------------------------------------------------------ */

/* A snapshot held in memory, record by record (8-byte aligned payloads). */
struct snap {
	char *b;
	size_t len, cap;
	uint32_t n;	       /* records */
	uint32_t of_type[64];  /* records per type - ZF_REC_SNAP_BEGIN */
	uint32_t max_len;      /* largest payload */
};

struct snap_hdr {
	uint16_t type;
	uint16_t pad;
	uint32_t len;
};

static int snap_emit(void *arg, uint16_t type, const void *p, uint32_t len)
{
	struct snap *s = arg;
	size_t need = sizeof(struct snap_hdr) + ZF_ROUND_UP(len, 8u);
	struct snap_hdr h = { .type = type, .len = len };

	ck_assert_uint_le(len, ZF_REC_MAX);
	ck_assert_uint_ge(type, ZF_REC_SNAP_BEGIN);
	ck_assert_uint_le(type, ZF_REC_SNAP_PREALLOC);
	if (s->len + need > s->cap) {
		s->cap = (s->len + need) * 2;
		s->b = realloc(s->b, s->cap);
		ck_assert_ptr_nonnull(s->b);
	}
	memcpy(s->b + s->len, &h, sizeof(h));
	memcpy(s->b + s->len + sizeof(h), p, len);
	s->len += need;
	s->n++;
	s->of_type[type - ZF_REC_SNAP_BEGIN]++;
	if (len > s->max_len)
		s->max_len = len;
	return 0;
}

static void snap_take(const struct zmeta *mm, struct snap *s)
{
	memset(s, 0, sizeof(*s));
	ck_assert_int_eq(zm_snap_encode(mm, snap_emit, s), 0);
	ck_assert_uint_eq(s->of_type[0], 1);
	ck_assert_uint_eq(s->of_type[ZF_REC_SNAP_END - ZF_REC_SNAP_BEGIN], 1);
}

/*
 * Feed @s to zm_snap_load() on a fresh @mm with the test geometry.
 * Returns the first failure (with why), or 0.
 */
static int snap_load(struct zmeta *mm, const struct snap *s)
{
	size_t off = 0;

	geom_init(mm);
	while (off < s->len) {
		struct snap_hdr h;
		int ret;

		memcpy(&h, s->b + off, sizeof(h));
		why[0] = '\0';
		ret = zm_snap_load(mm, h.type, s->b + off + sizeof(h), h.len,
				   why, sizeof(why));
		if (ret)
			return ret;
		off += sizeof(h) + ZF_ROUND_UP(h.len, 8u);
	}
	return 0;
}

/* @b holds what @a holds: inode by inode, name by name, byte by byte. */
static void meta_same(const struct zmeta *a, const struct zmeta *b)
{
	uint32_t i;

	ck_assert_uint_eq(a->nr_inodes, b->nr_inodes);
	ck_assert_uint_eq(a->nr_dirs, b->nr_dirs);
	ck_assert_uint_eq(a->nr_files, b->nr_files);
	ck_assert_uint_eq(a->next_ino, b->next_ino);
	ck_assert_int_eq(memcmp(&a->counters, &b->counters,
				sizeof(a->counters)), 0);
	for (i = 0; i < a->nr_zones; i++) {
		const struct zm_zone *za = &a->zones[i], *zb = &b->zones[i];
		uint64_t k;

		ck_assert_uint_eq(za->resets, zb->resets);
		ck_assert_uint_eq(za->valid, zb->valid);
		/* The checksums of a zone with live data come along. */
		if (!za->valid)
			continue;
		ck_assert_ptr_nonnull(zb->csum);
		for (k = 0; k < za->len / a->block_size; k++)
			ck_assert_uint_eq(za->csum ? za->csum[k] : 0, zb->csum[k]);
	}
	for (i = 0; i <= a->imask; i++) {
		const struct zm_inode *x, *y;

		for (x = a->itab[i]; x; x = x->hnext) {
			const struct zm_xattr *xa;
			uint32_t nx = 0, ny = 0, k;

			y = zm_iget(b, x->ino);
			ck_assert_msg(y, "inode %llu was lost",
				      (unsigned long long)x->ino);
			ck_assert_uint_eq(x->mode, y->mode);
			ck_assert_uint_eq(x->uid, y->uid);
			ck_assert_uint_eq(x->gid, y->gid);
			ck_assert_uint_eq(x->nlink, y->nlink);
			ck_assert_uint_eq(x->rdev, y->rdev);
			ck_assert_uint_eq(x->size, y->size);
			ck_assert_int_eq(x->atime, y->atime);
			ck_assert_int_eq(x->mtime, y->mtime);
			ck_assert_int_eq(x->ctime, y->ctime);
			ck_assert_int_eq(x->btime, y->btime);
			ck_assert_uint_eq(x->parent, y->parent);
			if (zm_is_reg(x)) {
				ck_assert_uint_eq(x->f.n_ext, y->f.n_ext);
				for (k = 0; k < x->f.n_ext; k++)
					ck_assert(!memcmp(&x->f.ext[k],
							  &y->f.ext[k],
							  sizeof(x->f.ext[k])));
			} else if (zm_is_lnk(x)) {
				ck_assert_str_eq(x->target, y->target);
			} else if (zm_is_dir(x)) {
				const struct zm_dent *ex = zm_dir_next(x, 0);
				const struct zm_dent *ey = zm_dir_next(y, 0);

				ck_assert_uint_eq(x->d.count, y->d.count);
				/* Same names, same targets, same order. */
				while (ex && ey) {
					ck_assert_str_eq(ex->name, ey->name);
					ck_assert_uint_eq(ex->ino, ey->ino);
					ex = zm_dir_next(x, ex->cookie);
					ey = zm_dir_next(y, ey->cookie);
				}
				ck_assert(!ex && !ey);
			}
			/* Xattrs: the same set (list order is not kept). */
			for (xa = x->xattrs; xa; xa = xa->next) {
				const struct zm_xattr *xb = zm_xattr_get(
					y, xa->data, xa->name_len);

				ck_assert_ptr_nonnull(xb);
				ck_assert_uint_eq(xa->value_len, xb->value_len);
				ck_assert(!memcmp(xa->data + xa->name_len,
						  xb->data + xb->name_len,
						  xa->value_len));
				nx++;
			}
			for (xa = y->xattrs; xa; xa = xa->next)
				ny++;
			ck_assert_uint_eq(nx, ny);
		}
	}
}

/* A bit of everything, each kind of inode, with holes in a directory. */
static void populate_small(void)
{
	struct zf_rec_counters c = {
		.host_bytes = htole64(111), .device_bytes = htole64(222),
		.gc_bytes = htole64(333), .meta_bytes = htole64(444),
	};
	struct zf_dattr a = { .mode = 02750, .uid = 5, .gid = 6,
			      .atime = -5, .mtime = 1 };
	char v[3000];
	int i;

	ck_assert_int_eq(mk(ROOT, 2, S_DIR, "a", NULL), 0);
	ck_assert_int_eq(mk(2, 3, S_DIR, "b", NULL), 0);
	ck_assert_int_eq(mk(3, 4, S_DIR, "c", NULL), 0);
	ck_assert_int_eq(mk(4, 5, S_REG, "f", NULL), 0);
	ck_assert_int_eq(ext(5, 0, Z(4), 8192), 0);
	ck_assert_int_eq(ext(5, 8192, Z(5), 4096), 0);
	ck_assert_int_eq(ext(5, 65536, Z(4) + 16384, 4096), 0);
	ck_assert_int_eq(trunc_to(5, 100000), 0);
	ck_assert_int_eq(lnk(ROOT, 5, "hard"), 0);
	ck_assert_int_eq(mk(ROOT, 6, S_LNK, "sym", "a/b/c/f"), 0);
	ck_assert_int_eq(mk(2, 7, S_IFIFO | 0600, "fifo", NULL), 0);
	ck_assert_int_eq(mk(2, 8, S_IFSOCK | 0600, "sock", NULL), 0);
	ck_assert_int_eq(setattr(2, ZF_ATTR_ALL & ~ZF_ATTR_SIZE, &a), 0);
	tu_random(v, sizeof(v), 7);
	ck_assert_int_eq(xset(5, "user.one", "1", 1), 0);
	ck_assert_int_eq(xset(5, "user.two", v, sizeof(v)), 0);
	ck_assert_int_eq(xset(5, "user.empty", "", 0), 0);
	ck_assert_int_eq(xset(ROOT, "user.root", "r", 1), 0);
	ck_assert_int_eq(xset(6, "user.onlink", "l", 1), 0);
	/* A directory with removed entries: readdir order has holes. */
	for (i = 0; i < 40; i++) {
		char n[16];

		snprintf(n, sizeof(n), "e%02d", i);
		ck_assert_int_eq(mk(3, 100 + (uint64_t)i, S_REG, n, NULL), 0);
	}
	for (i = 0; i < 40; i += 3) {
		char n[16];

		snprintf(n, sizeof(n), "e%02d", i);
		ck_assert_int_eq(unl(3, 100 + (uint64_t)i, n), 0);
	}
	ck_assert_int_eq(ren(3, "e01", 3, "z-last", 101, 0, 0), 0);
	/* The highest inode is gone: next_ino must not go back. */
	ck_assert_int_eq(mk(ROOT, 500, S_REG, "gone", NULL), 0);
	ck_assert_int_eq(unl(ROOT, 500, "gone"), 0);
	ck_assert_int_eq(zrec(ZF_REC_ZONE_RESET, 9, 5), 0);
	ck_assert_int_eq(zrec(ZF_REC_ZONE_RESET, 10, 1234567), 0);
	ck_assert_int_eq(apply(ZF_REC_COUNTERS, &c, sizeof(c)), 0);
	m.zones[3].resets = 77; /* learned from the device at mount */
}

START_TEST(test_snap_roundtrip)
{
	struct zmeta b, c;
	struct snap s, s2;

	populate_small();
	snap_take(&m, &s);
	ck_assert_int_eq(snap_load(&b, &s), 0);
	meta_same(&m, &b);
	ck_assert_uint_eq(b.next_ino, 501);
	valid_consistent(&b);
	/* A second generation is the same again. */
	snap_take(&b, &s2);
	ck_assert_int_eq(snap_load(&c, &s2), 0);
	meta_same(&m, &c);
	/* And the loaded state takes records as the original does. */
	ck_assert_int_eq(mk(ROOT, 501, S_REG, "new", NULL), 0);
	ck_assert_int_eq(zm_apply(&b, ZF_REC_CREATE, rb,
				  b_create(ROOT, 501, S_REG, "new", NULL), 1,
				  why, sizeof(why)),
			 0);
	zm_destroy(&b);
	zm_destroy(&c);
	free(s.b);
	free(s2.b);
}
END_TEST

/*
 * A snapshot big enough that every list is cut into many records: a
 * directory of 10,000 names, a file of 5,000 extents, xattrs of 64 KiB.
 */
START_TEST(test_snap_large)
{
	static char v[ZF_XATTR_VALUE_MAX];
	struct zmeta b;
	struct snap s;
	uint32_t i;

	ck_assert_int_eq(mk(ROOT, 2, S_DIR, "big", NULL), 0);
	for (i = 0; i < 10000; i++) {
		char n[64];

		snprintf(n, sizeof(n), "file-with-a-longish-name-%06u", i);
		ck_assert_int_eq(mk(2, 10 + (uint64_t)i, S_REG, n, NULL), 0);
	}
	ck_assert_int_eq(mk(ROOT, 3, S_REG, "fragmented", NULL), 0);
	/* 4 KiB every 8 KiB of device: nothing merges. */
	for (i = 0; i < 5000; i++)
		ck_assert_int_eq(ext(3, (uint64_t)i * 4096,
				     Z(4 + i / 4096) + (uint64_t)(i % 4096) * 8192,
				     4096),
				 0);
	ck_assert_uint_eq(iget(3)->f.n_ext, 5000);
	for (i = 0; i < 4; i++) {
		char n[32];

		snprintf(n, sizeof(n), "user.big%u", i);
		tu_random(v, sizeof(v), i);
		ck_assert_int_eq(xset(3, n, v, sizeof(v)), 0);
	}
	snap_take(&m, &s);
	/* 10,000 names of 48 bytes each need several 72 KiB records. */
	ck_assert_uint_ge(s.of_type[ZF_REC_SNAP_DENTS - ZF_REC_SNAP_BEGIN], 6);
	ck_assert_uint_ge(s.of_type[ZF_REC_SNAP_EXTENTS - ZF_REC_SNAP_BEGIN],
			  2);
	ck_assert_uint_ge(s.of_type[ZF_REC_SNAP_XATTRS - ZF_REC_SNAP_BEGIN],
			  4);
	ck_assert_uint_eq(s.of_type[ZF_REC_SNAP_INODE - ZF_REC_SNAP_BEGIN],
			  10003);
	ck_assert_uint_le(s.max_len, ZF_REC_MAX);
	ck_assert_int_eq(snap_load(&b, &s), 0);
	meta_same(&m, &b);
	valid_consistent(&b);
	ck_assert_uint_eq(iget(2)->d.count, 10000);
	zm_destroy(&b);
	free(s.b);
}
END_TEST

/*
 * An inode unlinked while open is in the snapshot; loading frees it. One
 * with no link that an entry still names (a wrong count) is kept: freeing
 * it would leave the entry naming nothing.
 */
START_TEST(test_snap_orphan)
{
	struct zmeta b;
	struct snap s;

	ck_assert_int_eq(mk(ROOT, 2, S_REG, "open", NULL), 0);
	ck_assert_int_eq(ext(2, 0, Z(4), 8192), 0);
	ck_assert_int_eq(mk(ROOT, 3, S_REG, "kept", NULL), 0);
	ck_assert_int_eq(ext(3, 0, Z(4) + 8192, 4096), 0);
	ck_assert_int_eq(mk(ROOT, 4, S_REG, "miscounted", NULL), 0);
	ck_assert_int_eq(ext(4, 0, Z(5), 4096), 0);
	iget(2)->nopen = 1;
	ck_assert_int_eq(unl(ROOT, 2, "open"), 0);
	iget(4)->nlink = 0;
	snap_take(&m, &s);
	ck_assert_uint_eq(s.of_type[ZF_REC_SNAP_INODE - ZF_REC_SNAP_BEGIN], 4);
	ck_assert_int_eq(snap_load(&b, &s), 0);
	ck_assert_ptr_null(zm_iget(&b, 2));
	ck_assert_ptr_nonnull(zm_iget(&b, 3));
	ck_assert_ptr_nonnull(zm_iget(&b, 4));
	ck_assert_uint_eq(zm_iget(&b, 4)->nlink, 0);
	ck_assert_uint_eq(b.nr_inodes, 3);
	ck_assert_uint_eq(b.zones[4].valid, 4096);
	ck_assert_uint_eq(b.zones[5].valid, 4096);
	valid_consistent(&b);
	zm_destroy(&b);
	free(s.b);
}
END_TEST

/* Find the @nth record of @type in @s (payload pointer and length). */
static char *snap_find(struct snap *s, uint16_t type, uint32_t nth,
		       uint32_t **lenp)
{
	size_t off = 0;

	while (off < s->len) {
		struct snap_hdr *h = (void *)(s->b + off);

		if (h->type == type && !nth--) {
			if (lenp)
				*lenp = &h->len;
			return s->b + off + sizeof(*h);
		}
		off += sizeof(*h) + ZF_ROUND_UP(h->len, 8u);
	}
	ck_abort_msg("no record of type %u", type);
	return NULL;
}

/* Damage one field of a good snapshot; the load must say no, not crash. */
static void load_refused(void (*damage)(struct snap *s), const char *what)
{
	struct zmeta b;
	struct snap s;
	int ret;

	snap_take(&m, &s);
	damage(&s);
	ret = snap_load(&b, &s);
	ck_assert_msg(ret == -EUCLEAN, "%s: load returned %d", what, ret);
	ck_assert_msg(why[0], "%s: no reason", what);
	zm_destroy(&b);
	free(s.b);
}

static void dmg_zones(struct snap *s)
{
	struct zf_rec_snap_begin *b = (void *)snap_find(s, ZF_REC_SNAP_BEGIN,
							0, NULL);

	b->nr_zones = htole32(NZ + 1);
}

static void dmg_fewer_inodes(struct snap *s)
{
	struct zf_rec_snap_begin *b = (void *)snap_find(s, ZF_REC_SNAP_BEGIN,
							0, NULL);

	b->nr_inodes = htole64(le64toh(b->nr_inodes) - 1);
}

static void dmg_more_inodes(struct snap *s)
{
	struct zf_rec_snap_begin *b = (void *)snap_find(s, ZF_REC_SNAP_BEGIN,
							0, NULL);

	b->nr_inodes = htole64(le64toh(b->nr_inodes) + 1);
}

static void dmg_next_ino(struct snap *s)
{
	struct zf_rec_snap_begin *b = (void *)snap_find(s, ZF_REC_SNAP_BEGIN,
							0, NULL);

	b->next_ino = htole64(3);
}

static void dmg_end_count(struct snap *s)
{
	struct zf_rec_snap_end *e = (void *)snap_find(s, ZF_REC_SNAP_END, 0,
						      NULL);

	e->nr_records = htole64(le64toh(e->nr_records) + 1);
}

static void dmg_dup_inode(struct snap *s)
{
	struct zf_rec_snap_inode *a = (void *)snap_find(s, ZF_REC_SNAP_INODE,
							1, NULL);
	struct zf_rec_snap_inode *b = (void *)snap_find(s, ZF_REC_SNAP_INODE,
							2, NULL);

	b->attr.ino = a->attr.ino;
}

static void dmg_inode_mode(struct snap *s)
{
	struct zf_rec_snap_inode *a = (void *)snap_find(s, ZF_REC_SNAP_INODE,
							1, NULL);

	a->attr.mode = htole32(0170777);
}

static void dmg_target_len(struct snap *s)
{
	uint32_t *len;
	struct zf_rec_snap_inode *a = (void *)snap_find(s, ZF_REC_SNAP_INODE,
							0, &len);
	uint32_t i = 0;

	/* Find the symlink: its target_len must match the record length. */
	while (!le16toh(a->target_len))
		a = (void *)snap_find(s, ZF_REC_SNAP_INODE, ++i, &len);
	a->target_len = htole16((uint16_t)(le16toh(a->target_len) + 1));
}

static void dmg_dent_ino(struct snap *s)
{
	char *p = snap_find(s, ZF_REC_SNAP_DENTS, 0, NULL);
	struct zf_snap_dent *d = (void *)(p + sizeof(struct zf_rec_snap_list));

	d->ino = htole64(99999);
}

static void dmg_dent_name(struct snap *s)
{
	char *p = snap_find(s, ZF_REC_SNAP_DENTS, 0, NULL);
	struct zf_snap_dent *d = (void *)(p + sizeof(struct zf_rec_snap_list));

	((char *)(d + 1))[0] = '/';
}

static void dmg_dent_count(struct snap *s)
{
	struct zf_rec_snap_list *l = (void *)snap_find(s, ZF_REC_SNAP_DENTS,
						       0, NULL);

	l->count = htole32(le32toh(l->count) + 1);
}

static void dmg_dent_namelen(struct snap *s)
{
	char *p = snap_find(s, ZF_REC_SNAP_DENTS, 0, NULL);
	struct zf_snap_dent *d = (void *)(p + sizeof(struct zf_rec_snap_list));

	d->name_len = htole16(60000);
}

static void dmg_list_ino(struct snap *s)
{
	struct zf_rec_snap_list *l = (void *)snap_find(s, ZF_REC_SNAP_EXTENTS,
						       0, NULL);

	l->ino = htole64(424242);
}

static void dmg_extent_addr(struct snap *s)
{
	char *p = snap_find(s, ZF_REC_SNAP_EXTENTS, 0, NULL);
	struct zf_snap_extent *e =
		(void *)(p + sizeof(struct zf_rec_snap_list));

	e->addr = htole64(Z(0) + 8192); /* a super zone */
}

static void dmg_extent_order(struct snap *s)
{
	char *p = snap_find(s, ZF_REC_SNAP_EXTENTS, 0, NULL);
	struct zf_snap_extent *e =
		(void *)(p + sizeof(struct zf_rec_snap_list));

	e[1].foff = e[0].foff; /* overlaps the first */
}

static void dmg_extent_count(struct snap *s)
{
	struct zf_rec_snap_list *l = (void *)snap_find(s, ZF_REC_SNAP_EXTENTS,
						       0, NULL);

	l->count = htole32(UINT32_MAX);
}

static void dmg_xattr_len(struct snap *s)
{
	char *p = snap_find(s, ZF_REC_SNAP_XATTRS, 0, NULL);
	struct zf_snap_xattr *x = (void *)(p + sizeof(struct zf_rec_snap_list));

	x->value_len = htole32(UINT32_MAX - 2);
}

static void dmg_zone_range(struct snap *s)
{
	struct zf_rec_snap_zones *z = (void *)snap_find(s, ZF_REC_SNAP_ZONES,
							0, NULL);

	z->first = htole32(1);
}

static void dmg_csum_zone(struct snap *s)
{
	struct zf_rec_snap_csums *h = (void *)snap_find(s, ZF_REC_SNAP_CSUMS,
							0, NULL);

	h->zone = htole32(NZ);
}

static void dmg_csum_count(struct snap *s)
{
	struct zf_rec_snap_csums *h = (void *)snap_find(s, ZF_REC_SNAP_CSUMS,
							0, NULL);

	h->count = htole32(le32toh(h->count) + 1);
}

static void dmg_no_root(struct snap *s)
{
	uint32_t i = 0;
	struct zf_rec_snap_inode *a;

	do
		a = (void *)snap_find(s, ZF_REC_SNAP_INODE, i++, NULL);
	while (le64toh(a->attr.ino) != ROOT);
	a->attr.mode = htole32(S_REG);
}

static void dmg_unknown_type(struct snap *s)
{
	struct snap_hdr *h = (void *)s->b;

	/* The record after BEGIN becomes a log record. */
	h = (void *)(s->b + sizeof(*h) +
		     ZF_ROUND_UP(sizeof(struct zf_rec_snap_begin), 8u));
	h->type = ZF_REC_CREATE;
}

START_TEST(test_snap_load_refused)
{
	static const struct {
		void (*fn)(struct snap *s);
		const char *what;
	} dmg[] = {
		{ dmg_zones, "other zone count" },
		{ dmg_fewer_inodes, "more inodes than announced" },
		{ dmg_more_inodes, "fewer inodes than announced" },
		{ dmg_next_ino, "inode at or past next_ino" },
		{ dmg_end_count, "record count" },
		{ dmg_dup_inode, "an inode twice" },
		{ dmg_inode_mode, "bad mode" },
		{ dmg_target_len, "symlink length" },
		{ dmg_dent_ino, "entry naming no inode" },
		{ dmg_dent_name, "entry name with a slash" },
		{ dmg_dent_count, "entry count past the record" },
		{ dmg_dent_namelen, "entry name past the record" },
		{ dmg_list_ino, "list of a missing inode" },
		{ dmg_extent_addr, "extent in a super zone" },
		{ dmg_extent_order, "overlapping extents" },
		{ dmg_extent_count, "extent count" },
		{ dmg_xattr_len, "xattr length" },
		{ dmg_zone_range, "zones past the device" },
		{ dmg_csum_zone, "checksums of a zone past the device" },
		{ dmg_csum_count, "checksum count past the record" },
		{ dmg_no_root, "no root directory" },
		{ dmg_unknown_type, "a log record inside" },
	};
	uint32_t i;

	populate_small();
	for (i = 0; i < ZF_ARRAY_SIZE(dmg); i++)
		load_refused(dmg[i].fn, dmg[i].what);
}
END_TEST

/* ---- allocation failures: zm_apply() is all-or-nothing ------------------- */

/*
 * NOMEM(builder call): build the record the builder would apply, then
 * apply it with its 1st, 2nd, 3rd... allocation failing, until it applies
 * without meeting the failure. Every failed attempt must return -ENOMEM
 * and leave the state as it was, to the byte (fp_take(): the snapshot
 * plus zone counts, live bytes, zone_dead calls). The value is how many
 * allocations the record made.
 *
 * Each attempt runs in a child process, on the very state the parent
 * holds: a failed attempt may keep room it made (a grown table), and the
 * next attempt, made on that state, would skip the allocation it no
 * longer needs and never fail the one after it. The child reports
 * through a pipe and _exit()s; the parent asserts and, once an attempt
 * gets through, applies the record itself.
 */
struct nomem_res {
	int ret;
	bool hit, same;
	char why[sizeof(why)];
};

static struct nomem_res nomem_try(uint16_t type, const void *rec, uint32_t len,
				  unsigned n)
{
	struct nomem_res res = { 0 };
	int fd[2], status;
	pid_t pid;

	ck_assert_int_eq(pipe(fd), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		struct fp before, after;

		close(fd[0]);
		fp_take(&m, &before);
		why[0] = '\0';
		nomem_count = 0;
		nomem_hit = false;
		nomem_at = n;
		res.ret =
			zm_apply(&m, type, rec, len, seq + 1, why, sizeof(why));
		nomem_at = 0;
		res.hit = nomem_hit;
		fp_take(&m, &after);
		res.same = after.len == before.len &&
			   !memcmp(after.b, before.b, after.len);
		memcpy(res.why, why, sizeof(why));
		_exit(write(fd[1], &res, sizeof(res)) == sizeof(res) ? 0 : 1);
	}
	close(fd[1]);
	ck_assert_int_eq(read(fd[0], &res, sizeof(res)), sizeof(res));
	close(fd[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && !WEXITSTATUS(status));
	return res;
}

static unsigned nomem_sweep(void)
{
	static _Alignas(8) char rec[sizeof(rb)];
	uint16_t type = built_type;
	uint32_t len = built_len;
	struct nomem_res res;
	unsigned n;
	int ret;

	memcpy(rec, rb, len);
	for (n = 1;; n++) {
		ck_assert_uint_lt(n, 64);
		res = nomem_try(type, rec, len, n);
		if (!res.hit)
			break;
		ck_assert_msg(res.ret == -ENOMEM,
			      "record type %u with allocation %u failing returned %d (%s), not -ENOMEM",
			      type, n, res.ret, res.why);
		ck_assert_msg(res.same,
			      "record type %u with allocation %u failing changed the state",
			      type, n);
	}
	ck_assert_msg(res.ret == 0, "record type %u: %d (%s)", type, res.ret,
		      res.why);
	/* Now for real, counting: the same allocations as the children. */
	nomem_count = 0;
	nomem_at = UINT_MAX;
	ret = zm_apply(&m, type, rec, len, ++seq, why, sizeof(why));
	nomem_at = 0;
	ck_assert_int_eq(ret, 0);
	ck_assert_uint_eq(nomem_count, n - 1);
	return n - 1;
}

static unsigned nomem_built(int ret)
{
	build_only = false;
	ck_assert_int_eq(ret, 0);
	return nomem_sweep();
}

#define NOMEM(expr) (build_only = true, nomem_built(expr))

/* Reload @m from its own snapshot: arrays come back exactly full. */
static void reload(void)
{
	struct snap s;

	snap_take(&m, &s);
	zm_destroy(&m);
	ck_assert_int_eq(snap_load(&m, &s), 0);
	m.zone_dead = on_dead;
	free(s.b);
}

/* Directory @dir gets @n files, inodes @ino...: its tables are then full. */
static void fill_dir(uint64_t dir, uint64_t ino, uint32_t n)
{
	char name[32];
	uint32_t k;

	for (k = 0; k < n; k++) {
		snprintf(name, sizeof(name), "n%u", k);
		ck_assert_int_eq(mk(dir, ino + k, S_REG, name, NULL), 0);
	}
}

/*
 * CREATE: the inode, its directory table, its entry, the parent's hash
 * table, a symlink's target, the inode table. Directory 2 holds
 * 8 names (its hash table of 8 is full) and the inode
 * table of 1024 holds 512 inodes (the next one doubles it).
 */
START_TEST(test_nomem_create)
{
	ck_assert_int_eq(mk(ROOT, 2, S_DIR, "d", NULL), 0);
	fill_dir(2, 3, 8);
	fill_dir(ROOT, 11, 502);
	ck_assert_uint_eq(m.nr_inodes, 512);
	ck_assert_uint_eq(m.imask, 1023);

	/* inode, entry, hash, target, inode table */
	ck_assert_uint_ge(NOMEM(mk(2, 600, S_LNK, "s", "target")), 5);
	ck_assert_uint_eq(m.imask, 2047);
	ck_assert_str_eq(iget(600)->target, "target");
	ck_assert_uint_eq(child(2, "s"), 600);
	/* inode, its directory's hash, entry */
	ck_assert_uint_ge(NOMEM(mk(2, 601, S_DIR, "sub", NULL)), 3);
	ck_assert_uint_eq(iget(2)->nlink, 3);
	ck_assert_uint_ge(NOMEM(mk(601, 602, S_REG, "f", NULL)), 2);
	ck_assert_uint_eq(m.nr_inodes, 515);
}
END_TEST

/* LINK and UNLINK; RENAME to a new name, over a victim, and EXCHANGE. */
START_TEST(test_nomem_names)
{
	unsigned xchg;

	ck_assert_int_eq(mk(ROOT, 2, S_DIR, "d", NULL), 0);
	fill_dir(2, 3, 8);
	ck_assert_int_eq(mk(ROOT, 20, S_REG, "f", NULL), 0);
	ck_assert_int_eq(mk(ROOT, 21, S_REG, "g", NULL), 0);
	ck_assert_int_eq(mk(ROOT, 22, S_DIR, "e", NULL), 0);
	fill_dir(22, 30, 8);

	/* entry, hash */
	ck_assert_uint_ge(NOMEM(lnk(2, 20, "link")), 2);
	ck_assert_uint_eq(iget(20)->nlink, 2);
	ck_assert_uint_eq(NOMEM(unl(2, 20, "link")), 0);
	ck_assert_uint_eq(iget(20)->nlink, 1);

	/* Into a full directory, and inside one: entry, hash. */
	ck_assert_uint_ge(NOMEM(ren(ROOT, "g", 22, "g2", 21, 0, 0)), 2);
	ck_assert_uint_eq(child(22, "g2"), 21);
	ck_assert_uint_eq(child(ROOT, "g"), 0);
	ck_assert_int_eq(mk(ROOT, 23, S_DIR, "h", NULL), 0);
	fill_dir(23, 40, 8);
	ck_assert_uint_ge(NOMEM(ren(23, "n0", 23, "renamed", 40, 0, 0)), 2);
	ck_assert_uint_eq(child(23, "renamed"), 40);

	/* Over a victim, and an exchange: no entry is made. */
	ck_assert_uint_eq(NOMEM(ren(2, "n0", 2, "n1", 3, 4, 0)), 0);
	ck_assert_ptr_null(zm_iget(&m, 4));
	xchg = NOMEM(ren(2, "n1", ROOT, "f", 3, 20, ZF_RENAME_EXCHANGE));
	ck_assert_uint_eq(xchg, 0);
	ck_assert_uint_eq(child(ROOT, "f"), 3);

}
END_TEST

/*
 * SETATTR's truncate and EXTENT: the extent array. Loaded from a snapshot,
 * a file's array is exactly full, so even a truncate that cuts an extent
 * short has to grow it (it reserves room for a split).
 */
START_TEST(test_nomem_extent)
{
	uint32_t valid = ZF_ATTR_SIZE | ZF_ATTR_MODE | ZF_ATTR_UID;
	struct zf_dattr a = { .mode = 0600, .uid = 5, .size = 6144 };

	ck_assert_int_eq(mk(ROOT, 2, S_REG, "f", NULL), 0);
	ck_assert_int_eq(ext(2, 0, Z(4), 4096), 0);
	ck_assert_int_eq(ext(2, 4096, Z(5), 4096), 0);
	ck_assert_int_eq(ext(2, 8192, Z(6), 4096), 0);
	ck_assert_int_eq(mk(ROOT, 3, S_REG, "g", NULL), 0);
	ck_assert_int_eq(ext(3, 0, Z(7), 16384), 0);
	reload();
	ck_assert_uint_eq(iget(2)->f.cap_ext, 3);
	ck_assert_uint_eq(iget(3)->f.cap_ext, 2);

	ck_assert_uint_ge(NOMEM(setattr(2, valid, &a)), 1);
	EXT_IS(2, { 0, Z(4), 4096 }, { 4096, Z(5), 2048 });
	ck_assert_uint_eq(iget(2)->uid, 5);
	ck_assert_uint_eq(m.zones[6].valid, 0);

	/* A write into the middle of g's one extent: split in three. */
	ck_assert_uint_ge(NOMEM(ext_sz(3, 4096, Z(8), 4096, 0)), 1);
	EXT_IS(3, { 0, Z(7), 4096 }, { 4096, Z(8), 4096 },
	       { 8192, Z(7) + 8192, 8192 });
	valid_consistent(&m);
}
END_TEST

/*
 * EXTENT_MOVE: one record remaps every piece of the file in the old range,
 * splitting those that straddle its edges. f's 6 extents of 8 KiB lie in
 * zone 4 in reverse file order; the move takes the tail of one, four
 * whole, and the head of another (two more extents). It used to find room
 * one piece at a time, and an allocation failing after the first piece
 * left that piece moved.
 */
START_TEST(test_nomem_extent_move)
{
	uint64_t k;

	ck_assert_int_eq(mk(ROOT, 2, S_REG, "f", NULL), 0);
	for (k = 0; k < 6; k++)
		ck_assert_int_eq(ext(2, k * 8192, Z(4) + (5 - k) * 8192, 8192),
				 0);
	ck_assert_uint_eq(iget(2)->f.n_ext, 6);
	ck_assert_uint_eq(iget(2)->f.cap_ext, 8);
	NOMEM(mv(2, Z(4) + 4096, Z(5), 40960));
	EXT_IS(2, { 0, Z(5) + 36864, 4096 }, { 4096, Z(4) + 44 * 1024, 4096 },
	       { 8192, Z(5) + 28672, 8192 }, { 16384, Z(5) + 20480, 8192 },
	       { 24576, Z(5) + 12288, 8192 }, { 32768, Z(5) + 4096, 8192 },
	       { 40960, Z(4), 4096 }, { 45056, Z(5), 4096 });
	valid_consistent(&m);

	/* The same with the array one short: it grows before anything moves. */
	ck_assert_int_eq(mk(ROOT, 3, S_REG, "g", NULL), 0);
	for (k = 0; k < 7; k++)
		ck_assert_int_eq(ext(3, k * 8192, Z(6) + (6 - k) * 8192, 8192),
				 0);
	ck_assert_uint_eq(iget(3)->f.cap_ext, 8);
	ck_assert_uint_ge(NOMEM(mv(3, Z(6) + 4096, Z(7), 40960)), 1);
	ck_assert_uint_eq(iget(3)->f.n_ext, 9);
	valid_consistent(&m);

	/*
	 * Three extents of one file on the same device bytes (fsck reports
	 * it; zm_apply() takes it): a move inside them splits all three.
	 */
	ck_assert_int_eq(mk(ROOT, 4, S_REG, "h", NULL), 0);
	for (k = 0; k < 3; k++)
		ck_assert_int_eq(ext(4, k << 20, Z(8), 65536), 0);
	ck_assert_uint_ge(NOMEM(mv(4, Z(8) + 16384, Z(9), 16384)), 1);
	ck_assert_uint_eq(iget(4)->f.n_ext, 9);
	ck_assert_uint_eq(m.zones[9].valid, 3 * 16384);
	valid_consistent(&m);
}
END_TEST

/* XATTR_SET (new and replacing), XATTR_DEL. */
START_TEST(test_nomem_xattr)
{
	ck_assert_int_eq(mk(ROOT, 2, S_REG, "f", NULL), 0);
	ck_assert_uint_ge(NOMEM(xset(2, "user.a", "one", 3)), 1);
	ck_assert_uint_ge(NOMEM(xset(2, "user.a", "three", 5)), 1);
	ck_assert_uint_eq(zm_xattr_get(iget(2), "user.a", 6)->value_len, 5);
	ck_assert_uint_eq(NOMEM(xdel(2, "user.a")), 0);
	ck_assert_ptr_null(iget(2)->xattrs);
}
END_TEST

/*
 * PREALLOC builds its new ranges aside (one allocation each for the gaps
 * and the merged list); an EXTENT inside a range needs room to split it.
 * Loaded from a snapshot, the range list is exactly full.
 */
START_TEST(test_nomem_prealloc)
{
	ck_assert_int_eq(mk(ROOT, 2, S_REG, "f", NULL), 0);
	ck_assert_int_eq(ext(2, 0, Z(4), BS), 0);
	ck_assert_int_eq(ext(2, 4 * BS, Z(4) + BS, BS), 0);
	ck_assert_uint_ge(NOMEM(pre(2, 0, 8 * BS, 0)), 2);
	PRE_IS(2, { BS, 3 * BS }, { 5 * BS, 3 * BS });
	reload();
	ck_assert_uint_eq(iget(2)->f.cap_pre, 2);
	ck_assert_uint_ge(NOMEM(ext(2, 6 * BS, Z(5), BS)), 1);
	PRE_IS(2, { BS, 3 * BS }, { 5 * BS, BS }, { 7 * BS, BS });
	ck_assert_uint_eq(m.prealloc_bytes, 5 * BS);
	valid_consistent(&m);
}
END_TEST

/* The records that allocate nothing: they cannot fail for memory. */
START_TEST(test_nomem_none)
{
	struct zf_rec_counters *c = (void *)rb;

	ck_assert_int_eq(mk(ROOT, 2, S_REG, "f", NULL), 0);
	ck_assert_int_eq(ext(2, 0, Z(4), 4096), 0);
	iget(2)->nlookup = 1;
	ck_assert_uint_eq(NOMEM(unl(ROOT, 2, "f")), 0);
	ck_assert_uint_eq(NOMEM(ifree(2)), 0);
	ck_assert_uint_eq(n_dead, 1);
	ck_assert_uint_eq(NOMEM(zrec(ZF_REC_ZONE_RESET, 4, 1)), 0);
	ck_assert_uint_eq(NOMEM(zrec(ZF_REC_ZONE_FINISH, 4, 0)), 0);
	memset(c, 0, sizeof(*c));
	c->host_bytes = htole64(42);
	built_type = ZF_REC_COUNTERS;
	built_len = sizeof(*c);
	ck_assert_uint_eq(nomem_sweep(), 0);
	ck_assert_uint_eq(m.counters.host_bytes, 42);
}
END_TEST

/* ---- zm_verify() ----------------------------------------------------------- */

static void verify_ok(void)
{
	why[0] = '\0';
	ck_assert_msg(zm_verify(&m, why, sizeof(why)) == 0,
		      "zm_verify() refuses a state zm_apply() built: %s", why);
}

/* States as records build them: every step passes. */
START_TEST(test_verify_accepts)
{
	verify_ok(); /* the root alone */
	populate_small();
	verify_ok();

	ck_assert_int_eq(mk(ROOT, 600, S_REG, "v", NULL), 0);
	ck_assert_int_eq(ext(600, 0, Z(6), 10000), 0); /* a partial block */
	verify_ok();
	ck_assert_int_eq(ext(600, 16384, Z(6) + 16384, 8192), 0);
	ck_assert_int_eq(ext(600, 8192, Z(7), 4096), 0); /* out of order */
	verify_ok();
	ck_assert_int_eq(ext_sz(600, 2048, Z(8), 20000, 0), 0); /* straddles */
	verify_ok();
	ck_assert_int_eq(mv(600, Z(6), Z(9), 65536), 0);
	verify_ok();
	ck_assert_int_eq(mv(600, Z(8) + 4096, Z(11), 4096), 0); /* a middle */
	verify_ok();
	ck_assert_int_eq(trunc_to(600, 15000), 0);
	verify_ok();
	ck_assert_int_eq(trunc_to(600, 1 << 20), 0);
	ck_assert_int_eq(ext(600, 1 << 20, Z(10) - 4096, 4096), 0);
	ck_assert_int_eq(ext(600, (1 << 20) + 4096, Z(10), 4096), 0);
	verify_ok();

	/* Unlinked but open: its extents still count until INODE_FREE. */
	iget(600)->nopen = 1;
	ck_assert_int_eq(unl(ROOT, 600, "v"), 0);
	ck_assert_int_eq(ext(600, 0, Z(12), 4096), 0);
	verify_ok();
	iget(600)->nopen = 0;
	ck_assert_int_eq(ifree(600), 0);
	verify_ok();
	ck_assert_int_eq(trunc_to(5, 0), 0);
	ck_assert_int_eq(zrec(ZF_REC_ZONE_RESET, 4, 1), 0);
	verify_ok();
	reload();
	verify_ok();
}
END_TEST

/* File 600 of the damage below: 3 extents in zones 6 and 7, 20 KiB. */
static struct zm_extent *vext(struct zmeta *b, uint32_t k)
{
	struct zm_inode *in = zm_iget(b, 600);

	ck_assert_ptr_nonnull(in);
	ck_assert_uint_lt(k, in->f.n_ext);
	return &in->f.ext[k];
}

static void vd_valid_up(struct zmeta *b)
{
	b->zones[6].valid += 4096;
	b->live_bytes += 4096;
}

static void vd_valid_down(struct zmeta *b)
{
	b->zones[7].valid -= 4096;
	b->live_bytes -= 4096;
}

static void vd_live(struct zmeta *b)
{
	b->live_bytes += 4096;
}

static void vd_overlap(struct zmeta *b)
{
	vext(b, 1)->foff = 4096; /* into extent 0's [0, 8192) */
}

static void vd_order(struct zmeta *b)
{
	struct zm_extent t = *vext(b, 0);

	*vext(b, 0) = *vext(b, 1);
	*vext(b, 1) = t;
}

static void vd_size(struct zmeta *b)
{
	zm_iget(b, 600)->size = 20479;
}

static void vd_cross(struct zmeta *b)
{
	vext(b, 1)->addr = Z(8) - 2048;
}

static void vd_no_zone(struct zmeta *b)
{
	vext(b, 2)->addr = Z(NZ);
}

static void vd_empty(struct zmeta *b)
{
	vext(b, 1)->len = 0;
}

static void vd_wrap(struct zmeta *b)
{
	vext(b, 2)->foff = UINT64_MAX - 100;
}

static void vd_pre_on_extent(struct zmeta *b)
{
	zm_iget(b, 600)->f.pre[0].off = 8192;
}

static void vd_pre_bytes(struct zmeta *b)
{
	b->prealloc_bytes += 4096;
}

/*
 * Each damage, done to a copy of the state (through its snapshot, which
 * zm_verify() accepts first): refused with -EUCLEAN and a reason that
 * names where.
 */
START_TEST(test_verify_rejects)
{
	static const struct {
		void (*fn)(struct zmeta *b);
		const char *names;
	} dmg[] = {
		{ vd_valid_up, "zone 6 " }, { vd_valid_down, "zone 7 " },
		{ vd_live, "live_bytes" },  { vd_overlap, "inode 600:" },
		{ vd_order, "inode 600:" }, { vd_size, "inode 600:" },
		{ vd_cross, "inode 600:" }, { vd_no_zone, "inode 600:" },
		{ vd_empty, "inode 600:" }, { vd_wrap, "inode 600:" },
		{ vd_pre_on_extent, "inode 600: reserved range" },
		{ vd_pre_bytes, "prealloc_bytes" },
	};
	char bwhy[256];
	uint32_t i;

	populate_small();
	ck_assert_int_eq(mk(ROOT, 600, S_REG, "v", NULL), 0);
	ck_assert_int_eq(ext(600, 0, Z(6), 8192), 0);
	ck_assert_int_eq(ext(600, 8192, Z(7), 4096), 0);
	ck_assert_int_eq(ext(600, 16384, Z(6) + 8192, 4096), 0);
	ck_assert_int_eq(pre(600, 12288, 4096, 0), 0);
	verify_ok();
	for (i = 0; i < ZF_ARRAY_SIZE(dmg); i++) {
		struct zmeta b;
		struct snap s;

		snap_take(&m, &s);
		ck_assert_int_eq(snap_load(&b, &s), 0);
		ck_assert_int_eq(zm_verify(&b, bwhy, sizeof(bwhy)), 0);
		dmg[i].fn(&b);
		bwhy[0] = '\0';
		ck_assert_msg(zm_verify(&b, bwhy, sizeof(bwhy)) == -EUCLEAN,
			      "damage %u not refused", i);
		ck_assert_msg(strstr(bwhy, dmg[i].names),
			      "damage %u refused with '%s', which does not name '%s'",
			      i, bwhy, dmg[i].names);
		zm_destroy(&b);
		free(s.b);
	}
	verify_ok(); /* the original is untouched */
}
END_TEST

/*
 * readdir positions come from the names: increasing along the walk,
 * through table growth; a name removed and made again gets its old
 * position; entries of one hash are numbered by the first free number.
 */
START_TEST(test_dir_positions)
{
	struct zm_inode *d;
	struct zm_dent *e, *x[3];
	uint64_t last = 0, was;
	uint32_t n = 0, i;

	ck_assert_int_eq(mk(ROOT, 2, S_DIR, "d", NULL), 0);
	fill_dir(2, 100, 1000);
	d = iget(2);
	for (e = zm_dir_next(d, 0); e; e = zm_dir_next(d, e->cookie)) {
		ck_assert_uint_gt(e->cookie, last);
		ck_assert_uint_ge(e->cookie, 3);
		ck_assert_uint_lt(e->cookie, 1ull << 63);
		last = e->cookie;
		n++;
	}
	ck_assert_uint_eq(n, 1000);
	was = zm_lookup(d, "n500", 4)->cookie;
	ck_assert_int_eq(unl(2, 600, "n500"), 0);
	ck_assert_int_eq(mk(2, 2000, S_REG, "n500", NULL), 0);
	ck_assert_uint_eq(zm_lookup(d, "n500", 4)->cookie, was);
	/* Past the last position there is nothing; before the first, all. */
	ck_assert_ptr_null(zm_dir_next(d, last));
	ck_assert_ptr_null(zm_dir_next(d, UINT64_MAX));

	/* Three names of one hash (forced): numbered 0, 1, 2; 0 is reused. */
	for (i = 0; i < 3; i++) {
		char name[8];

		snprintf(name, sizeof(name), "h%u", i);
		x[i] = zm_dent_new(name, strlen(name), 3000 + i);
		ck_assert_ptr_nonnull(x[i]);
		x[i]->hash = 0x12345678u;
		ck_assert_int_eq(zm_dir_reserve(&d->d), 0);
		zm_dir_add(&d->d, x[i]);
		ck_assert_uint_eq(x[i]->cookie, ZM_COOKIE(0x12345678u, i));
	}
	zm_dir_del(&d->d, x[0]);
	x[0] = zm_dent_new("h9", 2, 3009);
	ck_assert_ptr_nonnull(x[0]);
	x[0]->hash = 0x12345678u;
	ck_assert_int_eq(zm_dir_reserve(&d->d), 0);
	zm_dir_add(&d->d, x[0]);
	ck_assert_uint_eq(x[0]->cookie, ZM_COOKIE(0x12345678u, 0));
	ck_assert_ptr_eq(zm_dir_next(d, ZM_COOKIE(0x12345678u, 0)), x[1]);
	for (i = 0; i < 3; i++)
		zm_dir_del(&d->d, x[i]);
}
END_TEST

/*
 * PREALLOC reserves the blocks of its range that no extent touches and
 * no range holds (again: nothing more), sets a larger size unless asked
 * not to; an EXTENT takes the blocks it writes out of the ranges (a
 * range splits around them); a truncate to at most the size releases
 * what lies past it, one beyond the size keeps it; a snapshot keeps the
 * ranges; the inode's end releases them all.
 */
START_TEST(test_prealloc)
{
	struct zf_dattr a = { 0 };
	uint64_t size;

	ck_assert_int_eq(mk(ROOT, 2, S_REG, "f", NULL), 0);
	ck_assert_int_eq(ext(2, 0, Z(4), 6144), 0); /* blocks 0 and 1 */
	ck_assert_int_eq(pre(2, 0, 8 * BS, 8 * BS), 0);
	PRE_IS(2, { 2 * BS, 6 * BS });
	ck_assert_uint_eq(m.prealloc_bytes, 6 * BS);
	ck_assert_uint_eq(iget(2)->size, 8 * BS);
	ck_assert_uint_eq(zm_pre_need(&m, iget(2), 0, 8 * BS), 0);
	ck_assert_int_eq(pre(2, 0, 8 * BS, 0), 0);
	ck_assert_uint_eq(m.prealloc_bytes, 6 * BS);

	/* 100 bytes written in block 4: the range splits around it. */
	ck_assert_int_eq(ext_sz(2, 4 * BS + 10, Z(5), 100, 0), 0);
	PRE_IS(2, { 2 * BS, 2 * BS }, { 5 * BS, 3 * BS });
	ck_assert_uint_eq(m.prealloc_bytes, 5 * BS);
	ck_assert_uint_eq(zm_pre_overlap(iget(2), 0, 8 * BS), 5 * BS);

	/* Past the end, keeping the size; joined with a range it touches. */
	ck_assert_int_eq(pre(2, 8 * BS, 8 * BS, 0), 0);
	PRE_IS(2, { 2 * BS, 2 * BS }, { 5 * BS, 11 * BS });
	ck_assert_uint_eq(iget(2)->size, 8 * BS);
	valid_consistent(&m);
	reload();
	PRE_IS(2, { 2 * BS, 2 * BS }, { 5 * BS, 11 * BS });
	ck_assert_uint_eq(m.prealloc_bytes, 13 * BS);

	/* A larger size keeps them; the same size drops what is past it. */
	size = 10 * BS;
	a.size = size;
	ck_assert_int_eq(setattr(2, ZF_ATTR_SIZE, &a), 0);
	PRE_IS(2, { 2 * BS, 2 * BS }, { 5 * BS, 11 * BS });
	a.size = size - 100;
	ck_assert_int_eq(setattr(2, ZF_ATTR_SIZE, &a), 0);
	PRE_IS(2, { 2 * BS, 2 * BS }, { 5 * BS, 5 * BS });
	ck_assert_uint_eq(m.prealloc_bytes, 7 * BS);
	a.size = 3 * BS;
	ck_assert_int_eq(setattr(2, ZF_ATTR_SIZE, &a), 0);
	PRE_IS(2, { 2 * BS, BS });
	valid_consistent(&m);

	/* The file's end gives everything back. */
	ck_assert_int_eq(mk(ROOT, 3, S_REG, "g", NULL), 0);
	ck_assert_int_eq(pre(3, 0, 4 * BS, 0), 0);
	ck_assert_uint_eq(m.prealloc_bytes, 5 * BS);
	ck_assert_int_eq(unl(ROOT, 2, "f"), 0);
	ck_assert_uint_eq(m.prealloc_bytes, 4 * BS);
	ck_assert_int_eq(unl(ROOT, 3, "g"), 0);
	ck_assert_uint_eq(m.prealloc_bytes, 0);
	verify_ok();
}
END_TEST

/* A PREALLOC that does not fit changes nothing. */
START_TEST(test_prealloc_refused)
{
	ck_assert_int_eq(mk(ROOT, 2, S_REG, "f", NULL), 0);
	ck_assert_int_eq(mk(ROOT, 3, S_DIR, "d", NULL), 0);
	REFUSED(pre(2, 100, BS, 0));
	REFUSED(pre(2, 0, BS + 1, 0));
	REFUSED(pre(2, 0, 0, 0));
	REFUSED(pre(2, ZF_MAX_FILE_SIZE, BS, 0));
	REFUSED(pre(2, 0, BS, ZF_MAX_FILE_SIZE + 1));
	REFUSED(pre(3, 0, BS, 0));
	REFUSED(pre(77, 0, BS, 0));
	REFUSED(apply(ZF_REC_PREALLOC, rb, 8));
}
END_TEST

/* ---- the suite ------------------------------------------------------------ */

static void add(Suite *s, const char *name, const TTest *t)
{
	tu_add_case(s, name, t, setup, teardown, 60);
}

/* One case of several tests: one rule, checked on several states. */
static void add_case(Suite *s, const char *name, const TTest *const *t,
		     size_t n)
{
	TCase *tc = tcase_create(name);
	size_t i;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	for (i = 0; i < n; i++)
		tcase_add_test(tc, t[i]);
	suite_add_tcase(s, tc);
}

static Suite *meta_suite(void)
{
	const TTest *const nomem_tests[] = {
		test_nomem_create,	test_nomem_names, test_nomem_extent,
		test_nomem_extent_move, test_nomem_xattr, test_nomem_prealloc,
		test_nomem_none,
	};
	const TTest *const verify_tests[] = {
		test_verify_accepts,
		test_verify_rejects,
	};
	Suite *s = suite_create("meta");

	add(s, "create", test_create);
	add(s, "create_refused", test_create_refused);
	add(s, "dir_positions", test_dir_positions);
	add(s, "link_unlink", test_link_unlink);
	add(s, "unlink_busy", test_unlink_busy);
	add(s, "link_refused", test_link_refused);
	add(s, "rename_move", test_rename_move);
	add(s, "rename_replace", test_rename_replace);
	add(s, "rename_exchange", test_rename_exchange);
	add(s, "rename_refused", test_rename_refused);
	add(s, "setattr", test_setattr);
	add(s, "setattr_truncate", test_setattr_truncate);
	add(s, "setattr_refused", test_setattr_refused);
	add(s, "xattr", test_xattr);
	add(s, "xattr_refused", test_xattr_refused);
	add(s, "extent_add", test_extent_add);
	add(s, "extent_refused", test_extent_refused);
	add(s, "extent_move", test_extent_move);
	add(s, "csums", test_csums);
	add(s, "extent_move_refused", test_extent_move_refused);
	add(s, "inode_free", test_inode_free);
	add(s, "zone_reset", test_zone_reset);
	add(s, "counters_and_unknown", test_counters_and_unknown);
	add(s, "prealloc", test_prealloc);
	add(s, "prealloc_refused", test_prealloc_refused);
	add(s, "snap_roundtrip", test_snap_roundtrip);
	add(s, "snap_large", test_snap_large);
	add(s, "snap_orphan", test_snap_orphan);
	add(s, "snap_load_refused", test_snap_load_refused);
	add_case(s, "apply_nomem", nomem_tests, ZF_ARRAY_SIZE(nomem_tests));
	add_case(s, "verify", verify_tests, ZF_ARRAY_SIZE(verify_tests));
	return s;
}

int main(void)
{
	printf("check_meta: zm_apply() of every record type, refusals, snapshot round trips (no device)\n");
	return tu_run(meta_suite());
}
