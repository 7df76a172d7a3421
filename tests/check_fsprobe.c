// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Tests of fsprobe.c: the signatures libblkid finds in the device bytes of
 * an emulator image (after its header), what mkfs does with them, and the
 * erasing of those in conventional zones. The foreign file system is a
 * minimal ext2 superblock written into the image; tests/e2e/tools.sh
 * makes real btrfs, f2fs and ext4 ones.
 */
#include <check.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "zonefuse/fsprobe.h"
#include "zonefuse/zfs.h"

#define EXT2_SB_OFF 1024u
#define EXT2_MAGIC_OFF (EXT2_SB_OFF + 0x38)

/*
 * An ext2 superblock as libblkid needs it: the magic, a UUID and a volume
 * name (ext2: no journal, no features), at device offset @at.
 */
static void put_ext2(uint64_t at)
{
	static const unsigned char uuid[16] = { 0x11, 0x22, 0x33, 0x44, 0x55,
						0x66, 0x47, 0x88, 0x99, 0xaa,
						0xbb, 0xcc, 0xdd, 0xee, 0xff,
						0x00 };
	unsigned char sb[1024];

	memset(sb, 0, sizeof(sb));
	sb[0x38] = 0x53; /* s_magic 0xef53 */
	sb[0x39] = 0xef;
	sb[0x4c] = 1; /* s_rev_level: dynamic */
	memcpy(sb + 0x68, uuid, sizeof(uuid));
	memcpy(sb + 0x78, "old data", 8); /* s_volume_name */
	tu_image_write(tu_img, at, sb, sizeof(sb));
}

static void make_image(uint32_t nr_conv)
{
	struct zemu_params p = {
		.size = 32 * TU_MIB,
		.zone_size = TU_MIB,
		.block_size = 4096,
		.nr_conv = nr_conv,
	};

	tu_make_image(tu_img, &p);
}

static int scan(bool wipe, struct fsprobe_sig *sigs)
{
	char err[256] = "";
	struct zdev *dev;
	int n;

	TU_OK(zdev_open(tu_img, wipe ? 0 : ZDEV_RDONLY, &dev, err, sizeof(err)));
	n = fsprobe_scan(dev, wipe, sigs, FSPROBE_MAX, err, sizeof(err));
	ck_assert_msg(n >= 0, "fsprobe_scan: %d (%s)", n, err);
	zdev_close(dev);
	return n;
}

/* A blank image, and one zonefuse made, hold nothing libblkid knows. */
START_TEST(test_scan_blank)
{
	struct fsprobe_sig sigs[FSPROBE_MAX];
	struct zfs_mkfs_opts o = { .reserve_pct = -1, .label = "zf" };
	char err[256];

	make_image(0);
	ck_assert_int_eq(scan(false, sigs), 0);
	TU_OK(zfs_mkfs(tu_img, &o, NULL, err, sizeof(err)));
	ck_assert_int_eq(scan(false, sigs), 0);
}
END_TEST

/*
 * An ext2 superblock in the device bytes is found with its label, UUID and
 * offset (counted from device byte 0, not from the image's start).
 */
START_TEST(test_scan_finds)
{
	struct fsprobe_sig sigs[FSPROBE_MAX];
	char what[256];

	make_image(0);
	put_ext2(EXT2_SB_OFF);
	ck_assert_int_eq(scan(false, sigs), 1);
	ck_assert_str_eq(sigs[0].type, "ext2");
	ck_assert(!sigs[0].table);
	ck_assert_str_eq(sigs[0].label, "old data");
	ck_assert_str_eq(sigs[0].uuid, "11223344-5566-4788-99aa-bbccddeeff00");
	ck_assert_uint_eq(sigs[0].off, EXT2_MAGIC_OFF);
	ck_assert_str_eq(fsprobe_describe(&sigs[0], what, sizeof(what)),
			 "a ext2 file system (label 'old data', UUID 11223344-5566-4788-99aa-bbccddeeff00)");
}
END_TEST

/*
 * mkfs refuses a device holding another file system, naming it, and
 * writes nothing; with --force it makes the file system, and the old
 * signature is gone (its sequential zone was reset).
 */
START_TEST(test_mkfs_refuses)
{
	struct zfs_mkfs_opts o = { .reserve_pct = -1 };
	struct fsprobe_sig sigs[FSPROBE_MAX];
	struct zfs_ident id;
	char err[512] = "";

	make_image(0);
	put_ext2(EXT2_SB_OFF);
	ck_assert_int_eq(zfs_mkfs(tu_img, &o, NULL, err, sizeof(err)), -EEXIST);
	ck_assert_msg(strstr(err, "holds a ext2 file system (label 'old data', UUID 11223344-5566-4788-99aa-bbccddeeff00); use --force to overwrite it"),
		      "%s", err);
	ck_assert_int_eq(zfs_read_ident(tu_img, &id, err, sizeof(err)),
			 -EMEDIUMTYPE);
	ck_assert_int_eq(scan(false, sigs), 1);
	o.force = true;
	TU_OK(zfs_mkfs(tu_img, &o, NULL, err, sizeof(err)));
	ck_assert_int_eq(scan(false, sigs), 0);
}
END_TEST

/*
 * With wipe, a signature in a conventional zone is erased (no zone reset
 * would clear it); one in a sequential zone is left to mkfs's reset.
 */
START_TEST(test_wipe_conv)
{
	struct fsprobe_sig sigs[FSPROBE_MAX];

	make_image(2);
	put_ext2(EXT2_SB_OFF);
	ck_assert_int_eq(scan(true, sigs), 1);
	ck_assert(sigs[0].wiped);
	ck_assert_int_eq(scan(false, sigs), 0);

	unlink(tu_img);
	make_image(0);
	put_ext2(EXT2_SB_OFF);
	ck_assert_int_eq(scan(true, sigs), 1);
	ck_assert(!sigs[0].wiped);
	ck_assert_int_eq(scan(false, sigs), 1);
}
END_TEST

static Suite *fsprobe_suite(void)
{
	Suite *s = suite_create("fsprobe");

	tu_add_case(s, "scan_blank", test_scan_blank, tu_img_setup,
		    tu_img_teardown, 60);
	tu_add_case(s, "scan_finds", test_scan_finds, tu_img_setup,
		    tu_img_teardown, 60);
	tu_add_case(s, "mkfs_refuses", test_mkfs_refuses, tu_img_setup,
		    tu_img_teardown, 60);
	tu_add_case(s, "wipe_conv", test_wipe_conv, tu_img_setup,
		    tu_img_teardown, 60);
	return s;
}

int main(void)
{
	return tu_run(fsprobe_suite());
}
