// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The rules of zfs.c, tested directly through the library, without FUSE:
 * permissions (owner, group, supplementary groups, others, root),
 * ownership, times and truncation by owners and others, set-ID bits,
 * sticky directories, creation in set-group-ID directories, rename,
 * links, device nodes and extended attributes. Every refusal asserts the
 * errno ext4 gives for the same call (fs/namei.c, fs/attr.c), which is
 * what the end-to-end test tests/e2e/perms.py measures on the host.
 *
 * The FUSE edge adds what the library cannot see (LOOKUP's search
 * permission, the kernel's own checks on shared mounts): perms.py tests
 * those through a real mount.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "testutil.h"
#include "zonefuse/crc32c.h"
#include "zonefuse/format.h"
#include "zonefuse/util.h"
#include "zonefuse/zfs.h"

/* Users and groups of the tests: none of them root, none the same. */
#define ALICE 1001
#define BOB 1002
#define CAROL 1003
#define STAFF 2001
#define OTHERS 2002

static struct zfs *fs;

static void setup(void)
{
	struct zemu_params p = {
		.size = 16 * TU_MIB,
		.zone_size = TU_MIB,
		.block_size = 4096,
	};

	tu_img_setup();
	tu_mkfs_image(tu_img, &p);
	fs = tu_mount(tu_img, false);
}

static void teardown(void)
{
	if (fs)
		tu_unmount(fs);
	fs = NULL;
	tu_img_teardown();
}

/* A caller @uid:@gid with @n supplementary groups after them. */
static struct zfs_ctx who(uint32_t uid, uint32_t gid, unsigned int n, ...)
{
	struct zfs_ctx c = { .uid = uid, .gid = gid };
	va_list ap;

	va_start(ap, n);
	while (n--)
		c.groups[c.ngroups++] = va_arg(ap, uint32_t);
	va_end(ap);
	return c;
}

static uint64_t ino_of(const char *path)
{
	int64_t ino = tu_ino(fs, path);

	ck_assert_msg(ino > 0, "%s: %lld", path, (long long)ino);
	return (uint64_t)ino;
}

static struct stat stat_of(const char *path)
{
	struct stat st;

	TU_OK(zfs_getattr(fs, ino_of(path), &st));
	return st;
}

/* Give @path owner @uid:@gid and @mode, as root. */
static void own(const char *path, uint32_t uid, uint32_t gid, uint32_t mode)
{
	struct stat a = { .st_uid = uid, .st_gid = gid, .st_mode = mode }, st;

	TU_OK(zfs_setattr(fs, &tu_root_ctx, ino_of(path), &a,
			  ZFS_SET_UID | ZFS_SET_GID, &st));
	TU_OK(zfs_setattr(fs, &tu_root_ctx, ino_of(path), &a, ZFS_SET_MODE,
			  &st));
}

/* A file (with a byte in it) or a directory at @path, owned as given. */
static void mkfile(const char *path, uint32_t uid, uint32_t gid, uint32_t mode)
{
	TU_OK(tu_write(fs, path, 0, 8, 1));
	own(path, uid, gid, mode);
}

static void mkdir_as(const char *path, uint32_t uid, uint32_t gid,
		     uint32_t mode)
{
	TU_OK(tu_mkdir(fs, path, 0755));
	own(path, uid, gid, mode);
}

/* zfs_open() then zfs_release(): the errno of the open. */
static int try_open(const struct zfs_ctx *c, const char *path, int flags)
{
	unsigned int cache;
	uint64_t ino = ino_of(path);
	int ret = zfs_open(fs, c, ino, flags, &cache);

	if (!ret)
		zfs_release(fs, ino, cache);
	return ret;
}

static int set(const struct zfs_ctx *c, const char *path, struct stat a,
	       unsigned int what)
{
	struct stat st;

	return zfs_setattr(fs, c, ino_of(path), &a, what, &st);
}

static int create_in(const struct zfs_ctx *c, const char *dir,
		     const char *name, mode_t mode, struct stat *st)
{
	unsigned int cache;
	int ret = zfs_create(fs, c, ino_of(dir), name, mode, O_WRONLY | O_EXCL,
			     st, &cache);

	if (!ret) {
		zfs_release(fs, (uint64_t)st->st_ino, cache);
		zfs_forget(fs, (uint64_t)st->st_ino, 1);
	}
	return ret;
}

/* The owner's, the group's (primary or supplementary) or the others' bits. */
START_TEST(test_perm_classes)
{
	struct zfs_ctx alice = who(ALICE, OTHERS, 0);
	struct zfs_ctx bob = who(BOB, STAFF, 0);
	struct zfs_ctx bob2 = who(BOB, OTHERS, 1, STAFF);
	struct zfs_ctx carol = who(CAROL, OTHERS, 0);

	mkfile("/f", ALICE, STAFF, 0640);
	TU_OK(zfs_access(fs, &alice, ino_of("/f"), R_OK | W_OK));
	ck_assert_int_eq(zfs_access(fs, &alice, ino_of("/f"), X_OK), -EACCES);
	TU_OK(zfs_access(fs, &bob, ino_of("/f"), R_OK));
	ck_assert_int_eq(zfs_access(fs, &bob, ino_of("/f"), W_OK), -EACCES);
	TU_OK(zfs_access(fs, &bob2, ino_of("/f"), R_OK));
	ck_assert_int_eq(zfs_access(fs, &carol, ino_of("/f"), R_OK), -EACCES);
	/* The owner's class decides even when the group's would allow. */
	own("/f", ALICE, STAFF, 0070);
	alice = who(ALICE, STAFF, 0);
	ck_assert_int_eq(zfs_access(fs, &alice, ino_of("/f"), R_OK), -EACCES);
	TU_OK(zfs_access(fs, &bob, ino_of("/f"), R_OK | W_OK | X_OK));
	ck_assert_int_eq(try_open(&alice, "/f", O_RDONLY), -EACCES);
	ck_assert_int_eq(try_open(&carol, "/f", O_WRONLY), -EACCES);
	TU_OK(try_open(&bob, "/f", O_RDWR));
}
END_TEST

/* Root reads and writes anything, executes only what has an x bit. */
START_TEST(test_perm_root)
{
	mkfile("/f", ALICE, STAFF, 0);
	TU_OK(zfs_access(fs, &tu_root_ctx, ino_of("/f"), R_OK | W_OK));
	ck_assert_int_eq(zfs_access(fs, &tu_root_ctx, ino_of("/f"), X_OK),
			 -EACCES);
	own("/f", ALICE, STAFF, 0001);
	TU_OK(zfs_access(fs, &tu_root_ctx, ino_of("/f"), X_OK));
	mkdir_as("/d", ALICE, STAFF, 0);
	TU_OK(zfs_access(fs, &tu_root_ctx, ino_of("/d"), R_OK | W_OK | X_OK));
}
END_TEST

/* execve's open needs x, not r (item 5 of issue 23); open(2)'s needs r. */
START_TEST(test_open_exec)
{
	struct zfs_ctx bob = who(BOB, OTHERS, 0);

	mkfile("/prog", 0, 0, 0711);
	TU_OK(try_open(&bob, "/prog", O_RDONLY | ZFS_O_EXEC));
	ck_assert_int_eq(try_open(&bob, "/prog", O_RDONLY), -EACCES);
	own("/prog", 0, 0, 0744);
	ck_assert_int_eq(try_open(&bob, "/prog", O_RDONLY | ZFS_O_EXEC),
			 -EACCES);
	TU_OK(try_open(&bob, "/prog", O_RDONLY));
	/* O_TRUNC needs write permission even on a read-only open. */
	ck_assert_int_eq(try_open(&bob, "/prog", O_RDONLY | O_TRUNC), -EACCES);
}
END_TEST

/* chmod: the owner or root; a non-member loses set-group-ID. */
START_TEST(test_chmod_owner)
{
	struct zfs_ctx alice = who(ALICE, OTHERS, 0);
	struct zfs_ctx bob = who(BOB, STAFF, 0);

	mkfile("/f", ALICE, STAFF, 0666);
	ck_assert_int_eq(set(&bob, "/f", (struct stat){ .st_mode = 0777 },
			     ZFS_SET_MODE),
			 -EPERM);
	ck_assert_uint_eq(stat_of("/f").st_mode & 07777, 0666);
	TU_OK(set(&alice, "/f", (struct stat){ .st_mode = 02755 },
		  ZFS_SET_MODE));
	ck_assert_uint_eq(stat_of("/f").st_mode & 07777, 0755);
	alice = who(ALICE, OTHERS, 1, STAFF);
	TU_OK(set(&alice, "/f", (struct stat){ .st_mode = 02755 },
		  ZFS_SET_MODE));
	ck_assert_uint_eq(stat_of("/f").st_mode & 07777, 02755);
	TU_OK(set(&tu_root_ctx, "/f", (struct stat){ .st_mode = 04700 },
		  ZFS_SET_MODE));
	ck_assert_uint_eq(stat_of("/f").st_mode & 07777, 04700);
}
END_TEST

/*
 * chown: only root gives a file away; the owner may set its own uid and
 * a group it is in; a non-owner may not even restate the current owner
 * (item 3 of issue 23).
 */
START_TEST(test_chown_rules)
{
	struct zfs_ctx alice = who(ALICE, OTHERS, 1, STAFF);
	struct zfs_ctx bob = who(BOB, STAFF, 0);

	mkfile("/f", ALICE, OTHERS, 0644);
	ck_assert_int_eq(set(&bob, "/f",
			     (struct stat){ .st_uid = ALICE, .st_gid = OTHERS },
			     ZFS_SET_UID | ZFS_SET_GID),
			 -EPERM);
	ck_assert_int_eq(set(&bob, "/f", (struct stat){ .st_gid = OTHERS },
			     ZFS_SET_GID),
			 -EPERM);
	ck_assert_int_eq(set(&alice, "/f", (struct stat){ .st_uid = BOB },
			     ZFS_SET_UID),
			 -EPERM);
	TU_OK(set(&alice, "/f", (struct stat){ .st_uid = ALICE }, ZFS_SET_UID));
	ck_assert_int_eq(set(&alice, "/f", (struct stat){ .st_gid = CAROL },
			     ZFS_SET_GID),
			 -EPERM);
	TU_OK(set(&alice, "/f", (struct stat){ .st_gid = STAFF }, ZFS_SET_GID));
	ck_assert_uint_eq(stat_of("/f").st_gid, STAFF);
	TU_OK(set(&tu_root_ctx, "/f", (struct stat){ .st_uid = BOB },
		  ZFS_SET_UID));
	ck_assert_uint_eq(stat_of("/f").st_uid, BOB);
}
END_TEST

/*
 * chown of a non-directory clears set-user-ID (root's chown too) and an
 * executable set-group-ID; a directory keeps both.
 */
START_TEST(test_chown_kills_setid)
{
	mkfile("/f", ALICE, STAFF, 06755);
	TU_OK(set(&tu_root_ctx, "/f", (struct stat){ .st_uid = ALICE },
		  ZFS_SET_UID));
	ck_assert_uint_eq(stat_of("/f").st_mode & 07777, 0755);
	own("/f", ALICE, STAFF, 06745);
	TU_OK(set(&tu_root_ctx, "/f", (struct stat){ .st_gid = OTHERS },
		  ZFS_SET_GID));
	/* Group not executable: set-group-ID is mandatory locking, kept. */
	ck_assert_uint_eq(stat_of("/f").st_mode & 07777, 02745);
	mkdir_as("/d", ALICE, STAFF, 06755);
	TU_OK(set(&tu_root_ctx, "/d", (struct stat){ .st_uid = BOB },
		  ZFS_SET_UID));
	ck_assert_uint_eq(stat_of("/d").st_mode & 07777, 06755);
}
END_TEST

/*
 * utimes: setting both times to now needs ownership or write permission;
 * any explicit time needs ownership.
 */
START_TEST(test_utimes_rules)
{
	struct zfs_ctx bob = who(BOB, STAFF, 0);
	struct zfs_ctx carol = who(CAROL, OTHERS, 0);
	const unsigned int now = ZFS_SET_ATIME | ZFS_SET_ATIME_NOW |
				 ZFS_SET_MTIME | ZFS_SET_MTIME_NOW;
	struct stat t = { .st_mtim = { .tv_sec = 1000 },
			  .st_atim = { .tv_sec = 1000 } };

	mkfile("/f", ALICE, STAFF, 0664);
	TU_OK(set(&bob, "/f", t, now));
	ck_assert_int_eq(set(&carol, "/f", t, now), -EACCES);
	ck_assert_int_eq(set(&bob, "/f", t, ZFS_SET_ATIME | ZFS_SET_MTIME),
			 -EPERM);
	ck_assert_int_eq(set(&bob, "/f", t, ZFS_SET_MTIME | ZFS_SET_MTIME_NOW),
			 -EPERM);
	TU_OK(set(&tu_root_ctx, "/f", t, ZFS_SET_ATIME | ZFS_SET_MTIME));
	ck_assert_int_eq(stat_of("/f").st_mtim.tv_sec, 1000);
}
END_TEST

/*
 * truncate by path needs write permission, through an open handle none;
 * it clears set-ID bits for everyone but root; only regular files.
 */
START_TEST(test_truncate_rules)
{
	struct zfs_ctx bob = who(BOB, STAFF, 0);
	struct zfs_ctx carol = who(CAROL, OTHERS, 0);

	mkfile("/f", ALICE, STAFF, 06775);
	ck_assert_int_eq(set(&carol, "/f", (struct stat){ .st_size = 4 },
			     ZFS_SET_SIZE),
			 -EACCES);
	TU_OK(set(&carol, "/f", (struct stat){ .st_size = 4 },
		  ZFS_SET_SIZE | ZFS_SET_HAVE_FH));
	ck_assert_uint_eq(stat_of("/f").st_mode & 07777, 0775);
	own("/f", ALICE, STAFF, 06775);
	TU_OK(set(&bob, "/f", (struct stat){ .st_size = 2 }, ZFS_SET_SIZE));
	ck_assert_int_eq(stat_of("/f").st_size, 2);
	ck_assert_uint_eq(stat_of("/f").st_mode & 07777, 0775);
	own("/f", ALICE, STAFF, 06775);
	TU_OK(set(&tu_root_ctx, "/f", (struct stat){ .st_size = 1 },
		  ZFS_SET_SIZE));
	ck_assert_uint_eq(stat_of("/f").st_mode & 07777, 06775);
	ck_assert_int_eq(set(&tu_root_ctx, "/f", (struct stat){ .st_size = -1 },
			     ZFS_SET_SIZE),
			 -EINVAL);
	mkdir_as("/d", ALICE, STAFF, 0777);
	ck_assert_int_eq(set(&tu_root_ctx, "/d", (struct stat){ .st_size = 0 },
			     ZFS_SET_SIZE),
			 -EISDIR);
}
END_TEST

/*
 * A write by anyone but root clears set-user-ID and an executable
 * set-group-ID, and succeeds (item 4 of issue 23: the daemon does it,
 * FUSE_CAP_HANDLE_KILLPRIV).
 */
START_TEST(test_write_kills_setid)
{
	struct zfs_ctx bob = who(BOB, OTHERS, 0);
	struct zfs_ctx member = who(CAROL, OTHERS, 1, STAFF);
	unsigned int cache;
	uint64_t ino;

	mkfile("/f", ALICE, STAFF, 02777);
	ino = ino_of("/f");
	TU_OK(zfs_open(fs, &bob, ino, O_RDWR, &cache));
	ck_assert_int_eq(zfs_write(fs, &bob, ino, "x", 1, 0, false), 1);
	ck_assert_uint_eq(stat_of("/f").st_mode & 07777, 0777);
	/* Not executable by the group: kept for a member of the group... */
	own("/f", ALICE, STAFF, 06767);
	ck_assert_int_eq(zfs_write(fs, &member, ino, "x", 1, 0, false), 1);
	ck_assert_uint_eq(stat_of("/f").st_mode & 07777, 02767);
	/* ...but not for a writer outside it. */
	ck_assert_int_eq(zfs_write(fs, &bob, ino, "x", 1, 0, false), 1);
	ck_assert_uint_eq(stat_of("/f").st_mode & 07777, 0767);
	own("/f", ALICE, STAFF, 06777);
	ck_assert_int_eq(zfs_write(fs, &tu_root_ctx, ino, "x", 1, 0, false),
			 1);
	ck_assert_uint_eq(stat_of("/f").st_mode & 07777, 06777);
	TU_OK(zfs_release(fs, ino, cache));
}
END_TEST

/*
 * The kernel's SETATTR that clears set-ID bits before a write, sent on a
 * non-owner writer's behalf: allowed to one who may write, when it only
 * takes set-ID bits away; any other mode change by a non-owner is EPERM.
 */
START_TEST(test_kill_setid_setattr)
{
	struct zfs_ctx bob = who(BOB, OTHERS, 0);

	mkfile("/f", ALICE, STAFF, 06776);
	ck_assert_int_eq(set(&bob, "/f", (struct stat){ .st_mode = 0777 },
			     ZFS_SET_MODE),
			 -EPERM);
	ck_assert_int_eq(set(&bob, "/f", (struct stat){ .st_mode = 06776 },
			     ZFS_SET_MODE),
			 -EPERM);
	TU_OK(set(&bob, "/f", (struct stat){ .st_mode = 02776 }, ZFS_SET_MODE));
	/* Outside the file's group, set-group-ID goes too (setattr_copy()). */
	ck_assert_uint_eq(stat_of("/f").st_mode & 07777, 0776);
	own("/f", ALICE, STAFF, 06774);
	ck_assert_int_eq(set(&bob, "/f", (struct stat){ .st_mode = 0774 },
			     ZFS_SET_MODE),
			 -EACCES);
}
END_TEST

/*
 * Creating needs write and search permission on the directory; a
 * set-group-ID directory gives its group, and its bit to directories.
 */
START_TEST(test_create_rules)
{
	struct zfs_ctx bob = who(BOB, OTHERS, 0);
	struct zfs_ctx alice = who(ALICE, OTHERS, 0);
	struct stat st;

	mkdir_as("/d", ALICE, STAFF, 0755);
	ck_assert_int_eq(create_in(&bob, "/d", "f", S_IFREG | 0644, &st),
			 -EACCES);
	own("/d", ALICE, STAFF, 0776);
	ck_assert_int_eq(create_in(&bob, "/d", "f", S_IFREG | 0644, &st),
			 -EACCES);
	own("/d", ALICE, STAFF, 02777);
	TU_OK(create_in(&bob, "/d", "f", S_IFREG | 0644, &st));
	ck_assert_uint_eq(st.st_uid, BOB);
	ck_assert_uint_eq(st.st_gid, STAFF);
	TU_OK(zfs_mkdir(fs, &alice, ino_of("/d"), "sub", 0755, &st));
	zfs_forget(fs, (uint64_t)st.st_ino, 1);
	ck_assert_uint_eq(st.st_gid, STAFF);
	ck_assert_uint_eq(st.st_mode & 07777, 02755);
	/* A non-member's executable set-group-ID file loses the bit. */
	TU_OK(create_in(&bob, "/d", "g", S_IFREG | 02755, &st));
	ck_assert_uint_eq(st.st_mode & 07777, 0755);
	ck_assert_int_eq(create_in(&bob, "/d", "f", S_IFREG | 0644, &st),
			 -EEXIST);
}
END_TEST

/*
 * In a sticky directory only the file's owner, the directory's owner
 * or root removes or renames a name; write permission is not enough.
 */
START_TEST(test_sticky_dir)
{
	struct zfs_ctx alice = who(ALICE, OTHERS, 0);
	struct zfs_ctx bob = who(BOB, OTHERS, 0);
	struct zfs_ctx carol = who(CAROL, OTHERS, 0);
	uint64_t d;

	mkdir_as("/t", CAROL, STAFF, 01777);
	d = ino_of("/t");
	mkfile("/t/a", ALICE, STAFF, 0666);
	mkfile("/t/b", ALICE, STAFF, 0666);
	mkfile("/t/c", ALICE, STAFF, 0666);
	ck_assert_int_eq(zfs_unlink(fs, &bob, d, "a"), -EPERM);
	ck_assert_int_eq(zfs_rename(fs, &bob, d, "a", d, "z", 0), -EPERM);
	mkfile("/t/mine", BOB, STAFF, 0666);
	ck_assert_int_eq(zfs_rename(fs, &bob, d, "mine", d, "a", 0), -EPERM);
	TU_OK(zfs_unlink(fs, &alice, d, "a"));
	TU_OK(zfs_unlink(fs, &carol, d, "b"));
	TU_OK(zfs_rename(fs, &tu_root_ctx, d, "c", d, "z", 0));
	own("/t", CAROL, STAFF, 0777);
	TU_OK(zfs_unlink(fs, &bob, d, "z"));
}
END_TEST

/*
 * Removing and renaming need write and search permission on both
 * directories; moving a directory to another parent also needs write
 * permission on it (its ".." changes).
 */
START_TEST(test_rename_rules)
{
	struct zfs_ctx bob = who(BOB, OTHERS, 0);

	mkdir_as("/a", BOB, OTHERS, 0755);
	mkdir_as("/b", ALICE, OTHERS, 0755);
	mkfile("/a/f", BOB, OTHERS, 0644);
	ck_assert_int_eq(zfs_rename(fs, &bob, ino_of("/a"), "f", ino_of("/b"),
				    "f", 0),
			 -EACCES);
	mkfile("/b/g", BOB, OTHERS, 0644);
	ck_assert_int_eq(zfs_unlink(fs, &bob, ino_of("/b"), "g"), -EACCES);
	/* A name that is not there: ENOENT before any permission. */
	ck_assert_int_eq(zfs_unlink(fs, &bob, ino_of("/b"), "nothing"),
			 -ENOENT);
	own("/b", ALICE, OTHERS, 0777);
	TU_OK(zfs_rename(fs, &bob, ino_of("/a"), "f", ino_of("/b"), "f", 0));
	mkdir_as("/a/sub", ALICE, OTHERS, 0555);
	ck_assert_int_eq(zfs_rename(fs, &bob, ino_of("/a"), "sub",
				    ino_of("/b"), "sub", 0),
			 -EACCES);
	/* Within one directory ".." stays: no write on it needed. */
	TU_OK(zfs_rename(fs, &bob, ino_of("/a"), "sub", ino_of("/a"), "s2", 0));
	ck_assert_int_eq(zfs_rename(fs, &tu_root_ctx, ino_of("/a"), "s2",
				    ino_of("/a/s2"), "x", 0),
			 -EINVAL);
	mkfile("/a/g", BOB, OTHERS, 0644);
	ck_assert_int_eq(zfs_rename(fs, &tu_root_ctx, ino_of("/a"), "g",
				    ino_of("/a"), "s2", 0),
			 -EISDIR);
	ck_assert_int_eq(zfs_rename(fs, &tu_root_ctx, ino_of("/a"), "s2",
				    ino_of("/a"), "g", 0),
			 -ENOTDIR);
	ck_assert_int_eq(zfs_rename(fs, &tu_root_ctx, ino_of("/a"), "g",
				    ino_of("/b"), "f", ZFS_RENAME_NOREPLACE),
			 -EEXIST);
	mkfile("/a/s2/x", BOB, OTHERS, 0644);
	mkdir_as("/b/full", BOB, OTHERS, 0755);
	mkfile("/b/full/y", BOB, OTHERS, 0644);
	ck_assert_int_eq(zfs_rename(fs, &tu_root_ctx, ino_of("/a"), "s2",
				    ino_of("/b"), "full", 0),
			 -ENOTEMPTY);
}
END_TEST

/*
 * A hard link needs write and search permission on the new directory; a
 * directory cannot be linked.
 */
START_TEST(test_link_rules)
{
	struct zfs_ctx bob = who(BOB, OTHERS, 0);
	struct stat st;

	mkdir_as("/d", ALICE, OTHERS, 0755);
	mkfile("/f", ALICE, OTHERS, 0644);
	ck_assert_int_eq(zfs_link(fs, &bob, ino_of("/f"), ino_of("/d"), "l",
				  &st),
			 -EACCES);
	own("/d", ALICE, OTHERS, 0777);
	TU_OK(zfs_link(fs, &bob, ino_of("/f"), ino_of("/d"), "l", &st));
	zfs_forget(fs, (uint64_t)st.st_ino, 1);
	ck_assert_uint_eq(stat_of("/f").st_nlink, 2);
	ck_assert_int_eq(zfs_link(fs, &tu_root_ctx, ino_of("/d"), ino_of("/"),
				  "dl", &st),
			 -EPERM);
}
END_TEST

/*
 * Device nodes: root makes them, with their device number (item 8 of
 * issue 23); others get EPERM; a mode of no known type is EINVAL.
 */
START_TEST(test_mknod_device)
{
	struct zfs_ctx bob = who(BOB, OTHERS, 0);
	uint64_t root = ino_of("/");
	struct stat st;

	TU_OK(zfs_mknod(fs, &tu_root_ctx, root, "null", S_IFCHR | 0666,
			makedev(1, 3), &st));
	zfs_forget(fs, (uint64_t)st.st_ino, 1);
	TU_OK(zfs_mknod(fs, &tu_root_ctx, root, "loop", S_IFBLK | 0660,
			makedev(7, 0), &st));
	zfs_forget(fs, (uint64_t)st.st_ino, 1);
	ck_assert_int_eq(zfs_mknod(fs, &bob, root, "x", S_IFCHR | 0666,
				   makedev(1, 3), &st),
			 -EPERM);
	ck_assert_int_eq(zfs_mknod(fs, &tu_root_ctx, root, "y", 0170000 | 0666,
				   0, &st),
			 -EINVAL);
	ck_assert_int_eq(zfs_mknod(fs, &bob, root, "fifo", S_IFIFO | 0644, 0,
				   &st),
			 -EACCES);
	TU_OK(zfs_mknod(fs, &tu_root_ctx, root, "fifo", S_IFIFO | 0644,
			makedev(1, 3), &st));
	zfs_forget(fs, (uint64_t)st.st_ino, 1);
	/* A device number survives the journal and a remount. */
	tu_unmount(fs);
	fs = tu_mount(tu_img, false);
	st = stat_of("/null");
	ck_assert(S_ISCHR(st.st_mode));
	ck_assert_uint_eq(major(st.st_rdev), 1);
	ck_assert_uint_eq(minor(st.st_rdev), 3);
	st = stat_of("/loop");
	ck_assert(S_ISBLK(st.st_mode));
	ck_assert_uint_eq(st.st_rdev, makedev(7, 0));
	ck_assert_uint_eq(stat_of("/fifo").st_rdev, 0);
}
END_TEST

/*
 * user.* attributes: reading needs read permission, changing needs
 * write permission; on anything but a file or directory they are
 * refused (EPERM) as ext4 does; other namespaces are not supported.
 */
START_TEST(test_xattr_rules)
{
	struct zfs_ctx bob = who(BOB, OTHERS, 0);
	char v[16];

	mkfile("/f", ALICE, STAFF, 0640);
	TU_OK(zfs_setxattr(fs, &tu_root_ctx, ino_of("/f"), "user.k", "v", 1,
			   0));
	ck_assert_int_eq(zfs_getxattr(fs, &bob, ino_of("/f"), "user.k", v,
				      sizeof(v)),
			 -EACCES);
	ck_assert_int_eq(zfs_setxattr(fs, &bob, ino_of("/f"), "user.k", "w", 1,
				      0),
			 -EACCES);
	ck_assert_int_eq(zfs_removexattr(fs, &bob, ino_of("/f"), "user.k"),
			 -EACCES);
	own("/f", ALICE, STAFF, 0646);
	ck_assert_int_eq(zfs_getxattr(fs, &bob, ino_of("/f"), "user.k", v,
				      sizeof(v)),
			 1);
	TU_OK(zfs_setxattr(fs, &bob, ino_of("/f"), "user.k", "w", 1,
			   ZFS_XATTR_REPLACE));
	ck_assert_int_eq(zfs_setxattr(fs, &bob, ino_of("/f"), "user.k", "w", 1,
				      ZFS_XATTR_CREATE),
			 -EEXIST);
	TU_OK(tu_symlink(fs, "/l", "f"));
	ck_assert_int_eq(zfs_setxattr(fs, &tu_root_ctx, ino_of("/l"),
				      "user.k", "v", 1, 0),
			 -EPERM);
	ck_assert_int_eq(zfs_setxattr(fs, &tu_root_ctx, ino_of("/f"),
				      "trusted.k", "v", 1, 0),
			 -EOPNOTSUPP);
}
END_TEST

/* Listing a directory needs read permission on it. */
START_TEST(test_opendir_rules)
{
	struct zfs_ctx bob = who(BOB, OTHERS, 0);

	mkdir_as("/d", ALICE, OTHERS, 0711);
	ck_assert_int_eq(zfs_opendir(fs, &bob, ino_of("/d")), -EACCES);
	own("/d", ALICE, OTHERS, 0744);
	TU_OK(zfs_opendir(fs, &bob, ino_of("/d")));
}
END_TEST

/* ---- identity: label and UUID ------------------------------------------ */

/* What zfs_label_check() refuses, with its errno; "" and UTF-8 pass. */
START_TEST(test_label_check)
{
	char err[256], big[ZFS_LABEL_MAX + 2];

	TU_OK(zfs_label_check("", err, sizeof(err)));
	TU_OK(zfs_label_check("data 1", err, sizeof(err)));
	TU_OK(zfs_label_check("d\xc3\xa9j\xc3\xa0-vu \xe2\x9c\x93", err,
			      sizeof(err)));
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ck_assert_int_eq(zfs_label_check(big, err, sizeof(err)), -ENAMETOOLONG);
	ck_assert_ptr_nonnull(strstr(err, "64 bytes"));
	big[ZFS_LABEL_MAX] = '\0';
	TU_OK(zfs_label_check(big, err, sizeof(err)));
	ck_assert_int_eq(zfs_label_check("a\tb", err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(zfs_label_check("a\x7f", err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(zfs_label_check("a/b", err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(zfs_label_check("\xff", err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(zfs_label_check("\xc3", err, sizeof(err)), -EINVAL);
	/* Overlong "/" and a UTF-16 surrogate. */
	ck_assert_int_eq(zfs_label_check("\xc0\xaf", err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(zfs_label_check("\xed\xa0\x80", err, sizeof(err)),
			 -EINVAL);
}
END_TEST

/* The superblock copy at the start of zone @zone, its CRC checked. */
static void label_sb_copy(uint32_t zone, struct zf_super *sb)
{
	struct zf_super c;

	tu_image_read(tu_img, (uint64_t)zone * TU_MIB, sb, sizeof(*sb));
	c = *sb;
	c.crc = 0;
	ck_assert_mem_eq(sb->magic, ZF_SB_MAGIC, sizeof(sb->magic));
	ck_assert_uint_eq(le32toh(sb->crc), crc32c(0, &c, sizeof(c)));
}

/*
 * A new label is in both superblock copies (each sound, of a later
 * generation), read back by zfs_read_ident(), and the file system mounts
 * and checks clean after it; the UUID does not change. Read-only: -EROFS.
 */
START_TEST(test_label_set)
{
	struct zfs_ident before, after;
	struct zfs_fsck_result res;
	struct zf_super sb0, sb1;
	char err[256];
	struct zfs *ro;

	TU_OK(zfs_read_ident(tu_img, &before, err, sizeof(err)));
	ck_assert_str_eq(before.label, "test"); /* tu_mkfs_image()'s */
	TU_OK(zfs_set_label(fs, "scratch \xc3\xa9t\xc3\xa9", err, sizeof(err)));
	ck_assert_int_eq(zfs_set_label(fs, "a/b", err, sizeof(err)), -EINVAL);
	tu_unmount(fs);
	fs = NULL;

	TU_OK(zfs_read_ident(tu_img, &after, err, sizeof(err)));
	ck_assert_str_eq(after.label, "scratch \xc3\xa9t\xc3\xa9");
	ck_assert_mem_eq(after.uuid, before.uuid, 16);
	label_sb_copy(0, &sb0);
	label_sb_copy(le32toh(sb0.super_zone[1]), &sb1);
	ck_assert_str_eq(sb0.label, "scratch \xc3\xa9t\xc3\xa9");
	ck_assert_str_eq(sb1.label, "scratch \xc3\xa9t\xc3\xa9");
	ck_assert_uint_gt(le64toh(sb0.sb_gen), 0);
	ck_assert_uint_gt(le64toh(sb1.sb_gen), 0);
	ck_assert_int_eq(zfs_fsck(tu_img, 0, NULL, NULL, &res, err, sizeof(err)),
			 ZFS_FSCK_OK);

	ro = tu_mount(tu_img, true);
	ck_assert_int_eq(zfs_set_label(ro, "x", err, sizeof(err)), -EROFS);
	tu_unmount(ro);
	/* Cleared, and the file system is writable as before. */
	fs = tu_mount(tu_img, false);
	TU_OK(zfs_set_label(fs, "", err, sizeof(err)));
	TU_OK(zfs_set_label(fs, "again", err, sizeof(err)));
	tu_unmount(fs);
	fs = NULL;
	TU_OK(zfs_read_ident(tu_img, &after, err, sizeof(err)));
	ck_assert_str_eq(after.label, "again");
	ck_assert_int_eq(zfs_fsck(tu_img, 0, NULL, NULL, &res, err, sizeof(err)),
			 ZFS_FSCK_OK);
}
END_TEST

/*
 * mkfs takes a UUID and a label; the same UUID again on the same device
 * (mkfs --force --uuid) makes a sound file system; a bad label is refused
 * before anything is written.
 */
START_TEST(test_mkfs_uuid)
{
	static const uint8_t want[16] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4,
					  5, 6, 7, 8, 9, 10, 11, 12 };
	struct zfs_mkfs_opts o = { .force = true, .reserve_pct = -1,
				   .uuid = want, .label = "given" };
	struct zfs_fsck_result res;
	struct zfs_mkfs_info info;
	struct zfs_ident id;
	char err[256];
	int i;

	tu_unmount(fs);
	fs = NULL;
	for (i = 0; i < 2; i++) {
		TU_OK(zfs_mkfs(tu_img, &o, &info, err, sizeof(err)));
		ck_assert_mem_eq(info.uuid, want, 16);
		TU_OK(zfs_read_ident(tu_img, &id, err, sizeof(err)));
		ck_assert_mem_eq(id.uuid, want, 16);
		ck_assert_str_eq(id.label, "given");
		ck_assert_int_eq(zfs_fsck(tu_img, 0, NULL, NULL, &res, err,
					  sizeof(err)),
				 ZFS_FSCK_OK);
	}
	o.label = "bad\n";
	ck_assert_int_eq(zfs_mkfs(tu_img, &o, &info, err, sizeof(err)), -EINVAL);
	TU_OK(zfs_read_ident(tu_img, &id, err, sizeof(err)));
	ck_assert_str_eq(id.label, "given");
}
END_TEST

/*
 * The stats carry the file system's identity (the label mkfs was given,
 * the UUID it made), and their JSON has both, first.
 */
START_TEST(test_stats_identity)
{
	static const uint8_t zero[16];
	struct zfs_stats st;
	char buf[4096], uuid[37], want[128];

	TU_OK(zfs_get_stats(fs, &st));
	ck_assert_str_eq(st.label, "test");
	ck_assert_mem_ne(st.uuid, zero, sizeof(zero));
	ck_assert_uint_eq(st.uuid[6] >> 4, 4); /* a version 4 UUID */
	ck_assert_int_gt(zfs_stats_json(&st, buf, sizeof(buf)), 0);
	snprintf(want, sizeof(want), "{\"uuid\": \"%s\", \"label\": \"test\", ",
		 zutil_uuid_str(st.uuid, uuid));
	ck_assert_msg(!strncmp(buf, want, strlen(want)), "%s", buf);
}
END_TEST

/*
 * The stats say where fsync's time went: each fsync answered is counted,
 * its time includes its data's, each commit's includes its flushes', and
 * the JSON carries them.
 */
START_TEST(test_stats_fsync)
{
	struct zfs_stats st0, st;
	unsigned int cache;
	char buf[4096], path[64];
	uint64_t ino;
	int i;

	TU_OK(zfs_get_stats(fs, &st0));
	for (i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "/s%d", i);
		mkfile(path, ALICE, STAFF, 0644);
		ino = ino_of(path);
		TU_OK(zfs_open(fs, &tu_root_ctx, ino, O_RDWR, &cache));
		ck_assert_int_eq(zfs_write(fs, &tu_root_ctx, ino, "data", 4, 0,
					   false),
				 4);
		TU_OK(zfs_fsync(fs, ino, false));
		TU_OK(zfs_release(fs, ino, cache));
	}
	TU_OK(zfs_get_stats(fs, &st));
	ck_assert_uint_eq(st.fsyncs - st0.fsyncs, 3);
	ck_assert_uint_gt(st.fsync_data_ns, st0.fsync_data_ns);
	ck_assert_uint_ge(st.fsync_ns - st0.fsync_ns,
			  st.fsync_data_ns - st0.fsync_data_ns);
	/* Each fsync had records of its own to commit. */
	ck_assert_uint_ge(st.journal_commits - st0.journal_commits, 3);
	ck_assert_uint_gt(st.journal_flush_ns, st0.journal_flush_ns);
	ck_assert_uint_ge(st.journal_commit_ns - st0.journal_commit_ns,
			  st.journal_flush_ns - st0.journal_flush_ns);
	/*
	 * Records naming data in sequential zones: no flush before them,
	 * one after (the emulator here has no conventional zone).
	 */
	ck_assert_uint_eq(st.journal_flushes - st0.journal_flushes,
			  st.journal_commits - st0.journal_commits);
	ck_assert_uint_eq(st.journal_unflushed_commits -
				  st0.journal_unflushed_commits,
			  st.journal_commits - st0.journal_commits);
	ck_assert_int_gt(zfs_stats_json(&st, buf, sizeof(buf)), 0);
	snprintf(path, sizeof(path), "\"fsyncs\": %u", (unsigned int)st.fsyncs);
	ck_assert_msg(strstr(buf, path), "%s", buf);
	ck_assert_msg(strstr(buf, "\"journal_wait_ns\": "), "%s", buf);
	ck_assert_msg(strstr(buf, "\"journal_unflushed_commits\": "), "%s",
		      buf);
	snprintf(path, sizeof(path), "\"checksums_at_write\": %llu",
		 (unsigned long long)st.checksums_at_write);
	ck_assert_msg(strstr(buf, path), "%s", buf);
	ck_assert_msg(strstr(buf, "\"checksums_at_writeback\": "), "%s", buf);
	ck_assert_msg(strstr(buf, "\"checksum_impl\": \"sse4.2\"") ||
			      strstr(buf, "\"checksum_impl\": \"tables\""),
		      "%s", buf);
}
END_TEST

static Suite *zfs_suite(void)
{
	Suite *s = suite_create("zfs");

	tu_add_case(s, "perm_classes", test_perm_classes, setup, teardown, 60);
	tu_add_case(s, "stats_identity", test_stats_identity, setup, teardown, 60);
	tu_add_case(s, "stats_fsync", test_stats_fsync, setup, teardown, 60);
	tu_add_case(s, "perm_root", test_perm_root, setup, teardown, 60);
	tu_add_case(s, "open_exec", test_open_exec, setup, teardown, 60);
	tu_add_case(s, "chmod_owner", test_chmod_owner, setup, teardown, 60);
	tu_add_case(s, "chown_rules", test_chown_rules, setup, teardown, 60);
	tu_add_case(s, "chown_kills_setid", test_chown_kills_setid, setup, teardown, 60);
	tu_add_case(s, "utimes_rules", test_utimes_rules, setup, teardown, 60);
	tu_add_case(s, "truncate_rules", test_truncate_rules, setup, teardown, 60);
	tu_add_case(s, "write_kills_setid", test_write_kills_setid, setup, teardown, 60);
	tu_add_case(s, "kill_setid_setattr", test_kill_setid_setattr, setup,
		    teardown, 60);
	tu_add_case(s, "create_rules", test_create_rules, setup, teardown, 60);
	tu_add_case(s, "sticky_dir", test_sticky_dir, setup, teardown, 60);
	tu_add_case(s, "rename_rules", test_rename_rules, setup, teardown, 60);
	tu_add_case(s, "link_rules", test_link_rules, setup, teardown, 60);
	tu_add_case(s, "mknod_device", test_mknod_device, setup, teardown, 60);
	tu_add_case(s, "xattr_rules", test_xattr_rules, setup, teardown, 60);
	tu_add_case(s, "opendir_rules", test_opendir_rules, setup, teardown, 60);
	tu_add_case(s, "label_check", test_label_check, setup, teardown, 60);
	tu_add_case(s, "label_set", test_label_set, setup, teardown, 60);
	tu_add_case(s, "mkfs_uuid", test_mkfs_uuid, setup, teardown, 60);
	return s;
}

int main(void)
{
	return tu_run(zfs_suite());
}
