// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Tests of fsfind.c: UUID= and LABEL= parsed and matched, and the device
 * picked among candidates, which here are emulator images (the zoned block
 * devices fsfind_resolve() scans are not on the machines we test on: the
 * scan itself runs in tests/e2e/tools.sh and, with ZONEFUSE_TEST_ZBD, on
 * a real device).
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "zonefuse/fsfind.h"
#include "zonefuse/util.h"
#include "zonefuse/zfs.h"

#define UUID_A "0123abcd-89ab-4def-8123-456789abcdef"
#define UUID_B "fedcba98-7654-4321-8fed-cba987654321"

static void mkfs_as(const char *path, const char *label, const char *uuid)
{
	struct zemu_params p = {
		.size = 32 * TU_MIB,
		.zone_size = TU_MIB,
		.block_size = 4096,
	};
	struct zfs_mkfs_opts o = { .reserve_pct = -1, .label = label };
	uint8_t u[16];
	char err[256] = "";

	TU_OK(zutil_uuid_parse(uuid, u));
	o.uuid = u;
	tu_make_image(path, &p);
	ck_assert_msg(!zfs_mkfs(path, &o, NULL, err, sizeof(err)),
		      "mkfs %s: %s", path, err);
}

/* A path is a path; UUID= of either case and quoted; LABEL= quoted or not. */
START_TEST(test_parse)
{
	struct fsfind_tag t;
	uint8_t a[16];
	char err[256];

	TU_OK(zutil_uuid_parse(UUID_A, a));
	TU_OK(fsfind_parse("/dev/nvme0n2", &t, err, sizeof(err)));
	ck_assert_int_eq(t.kind, FSFIND_PATH);
	TU_OK(fsfind_parse("./UUID=x", &t, err, sizeof(err)));
	ck_assert_int_eq(t.kind, FSFIND_PATH);
	TU_OK(fsfind_parse("UUID=" UUID_A, &t, err, sizeof(err)));
	ck_assert_int_eq(t.kind, FSFIND_UUID);
	ck_assert_mem_eq(t.uuid, a, 16);
	TU_OK(fsfind_parse("UUID=\"0123ABCD-89AB-4DEF-8123-456789ABCDEF\"", &t,
			   err, sizeof(err)));
	ck_assert_mem_eq(t.uuid, a, 16);
	TU_OK(fsfind_parse("LABEL=ckpt store", &t, err, sizeof(err)));
	ck_assert_int_eq(t.kind, FSFIND_LABEL);
	ck_assert_str_eq(t.value, "ckpt store");
	TU_OK(fsfind_parse("LABEL='ckpt'", &t, err, sizeof(err)));
	ck_assert_str_eq(t.value, "ckpt");
}
END_TEST

/* A tag that names no zonefuse file system: -EINVAL, saying why. */
START_TEST(test_parse_bad)
{
	struct fsfind_tag t;
	char err[256], big[80];

	err[0] = '\0';
	ck_assert_int_eq(fsfind_parse("UUID=0123abcd", &t, err, sizeof(err)),
			 -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "not a UUID"));
	ck_assert_int_eq(fsfind_parse("UUID=0123abcd-89ab-4def-8123-456789abcdeg",
				      &t, err, sizeof(err)),
			 -EINVAL);
	ck_assert_int_eq(fsfind_parse("UUID=", &t, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(fsfind_parse("LABEL=", &t, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "empty"));
	ck_assert_int_eq(fsfind_parse("LABEL=\"\"", &t, err, sizeof(err)),
			 -EINVAL);
	memcpy(big, "LABEL=", 6);
	memset(big + 6, 'x', ZFS_LABEL_MAX + 1);
	big[6 + ZFS_LABEL_MAX + 1] = '\0';
	ck_assert_int_eq(fsfind_parse(big, &t, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "too long"));
	big[6 + ZFS_LABEL_MAX] = '\0';
	TU_OK(fsfind_parse(big, &t, err, sizeof(err)));
}
END_TEST

START_TEST(test_match)
{
	struct zfs_ident id = { .label = "ckpt" };
	struct fsfind_tag t;
	char err[256];

	TU_OK(zutil_uuid_parse(UUID_A, id.uuid));
	TU_OK(fsfind_parse("UUID=" UUID_A, &t, err, sizeof(err)));
	ck_assert(fsfind_match(&t, &id));
	TU_OK(fsfind_parse("UUID=" UUID_B, &t, err, sizeof(err)));
	ck_assert(!fsfind_match(&t, &id));
	TU_OK(fsfind_parse("LABEL=ckpt", &t, err, sizeof(err)));
	ck_assert(fsfind_match(&t, &id));
	TU_OK(fsfind_parse("LABEL=ckp", &t, err, sizeof(err)));
	ck_assert(!fsfind_match(&t, &id));
	TU_OK(fsfind_parse("LABEL=CKPT", &t, err, sizeof(err)));
	ck_assert(!fsfind_match(&t, &id));
	TU_OK(fsfind_parse("/dev/x", &t, err, sizeof(err)));
	ck_assert(!fsfind_match(&t, &id));
}
END_TEST

/*
 * The one candidate carrying the tag is picked, past ones that are not
 * there or hold no file system; none: -ENOENT; two: -ENOTUNIQ, named.
 */
START_TEST(test_pick)
{
	char a[PATH_MAX], b[PATH_MAX], c[PATH_MAX], blank[PATH_MAX];
	char missing[PATH_MAX], err[512], *path = NULL;
	struct zemu_params p = {
		.size = 32 * TU_MIB, .zone_size = TU_MIB, .block_size = 4096
	};
	struct fsfind_tag t;

	tu_path(a, sizeof(a), tu_dir, "a.img");
	tu_path(b, sizeof(b), tu_dir, "b.img");
	tu_path(c, sizeof(c), tu_dir, "c.img");
	tu_path(blank, sizeof(blank), tu_dir, "blank.img");
	tu_path(missing, sizeof(missing), tu_dir, "missing.img");
	mkfs_as(a, "alpha", UUID_A);
	mkfs_as(b, "beta", UUID_B);
	mkfs_as(c, "beta", "11111111-2222-4333-8444-555555555555");
	tu_make_image(blank, &p);
	const char *cands[] = { missing, blank, a, b, c };

	TU_OK(fsfind_parse("UUID=" UUID_B, &t, err, sizeof(err)));
	TU_OK(fsfind_pick(&t, cands, 5, &path, err, sizeof(err)));
	ck_assert_str_eq(path, b);
	free(path);
	path = NULL;
	TU_OK(fsfind_parse("LABEL=alpha", &t, err, sizeof(err)));
	TU_OK(fsfind_pick(&t, cands, 5, &path, err, sizeof(err)));
	ck_assert_str_eq(path, a);
	free(path);
	path = NULL;

	TU_OK(fsfind_parse("LABEL=beta", &t, err, sizeof(err)));
	ck_assert_int_eq(fsfind_pick(&t, cands, 5, &path, err, sizeof(err)),
			 -ENOTUNIQ);
	ck_assert_ptr_null(path);
	ck_assert_ptr_nonnull(strstr(err, b));
	ck_assert_ptr_nonnull(strstr(err, c));
	TU_OK(fsfind_pick(&t, cands, 4, &path, err, sizeof(err)));
	ck_assert_str_eq(path, b);
	free(path);
	path = NULL;

	TU_OK(fsfind_parse("LABEL=gamma", &t, err, sizeof(err)));
	ck_assert_int_eq(fsfind_pick(&t, cands, 5, &path, err, sizeof(err)),
			 -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "no zonefuse file system with LABEL=gamma"));
	ck_assert_int_eq(fsfind_pick(&t, cands, 0, &path, err, sizeof(err)),
			 -ENOENT);
	ck_assert_ptr_null(path);
}
END_TEST

/*
 * A path resolves to itself; a tag nothing carries is -ENOENT (no zoned
 * block device here holds this UUID, and libblkid knows no zonefuse).
 */
START_TEST(test_resolve)
{
	char err[512], *path = NULL;

	TU_OK(fsfind_resolve("/some/image", &path, err, sizeof(err)));
	ck_assert_str_eq(path, "/some/image");
	free(path);
	path = NULL;
	ck_assert_int_eq(fsfind_resolve("UUID=5a1e0000-0000-4000-8000-00000000f5f1",
					&path, err, sizeof(err)),
			 -ENOENT);
	ck_assert_ptr_null(path);
	ck_assert_int_eq(fsfind_resolve("UUID=nope", &path, err, sizeof(err)),
			 -EINVAL);
}
END_TEST

static Suite *fsfind_suite(void)
{
	Suite *s = suite_create("fsfind");

	tu_add_case(s, "parse", test_parse, NULL, NULL, 30);
	tu_add_case(s, "parse_bad", test_parse_bad, NULL, NULL, 30);
	tu_add_case(s, "match", test_match, NULL, NULL, 30);
	tu_add_case(s, "pick", test_pick, tu_img_setup, tu_img_teardown, 60);
	tu_add_case(s, "resolve", test_resolve, NULL, NULL, 60);
	return s;
}

int main(void)
{
	return tu_run(fsfind_suite());
}
