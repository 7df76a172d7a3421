/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The `zonefuse` command: one binary, one subcommand per file (cli_*.c).
 * Each returns the process exit status. Tools use only the interfaces the
 * daemon uses.
 */
#ifndef ZONEFUSE_CLI_H
#define ZONEFUSE_CLI_H

#include <libmount/libmount.h>
#include <stdbool.h>
#include <stdint.h>

#include "zonefuse/zdev.h"
#include "zonefuse/zfs.h"
#include "zonefuse/zjson.h"

/* Exit status for a command-line mistake (as fsck(8) and mkfs use). */
#define CLI_EXIT_USAGE 16

int cli_emu(int argc, char **argv);
int cli_zones(int argc, char **argv);
int cli_mkfs(int argc, char **argv);
int cli_fsck(int argc, char **argv);
int cli_stat(int argc, char **argv);
int cli_dump(int argc, char **argv);
int cli_scrub(int argc, char **argv);
int cli_mount(int argc, char **argv);

/*
 * mount(8)'s exit status, which `zonefuse mount` and the mount.zonefuse
 * helper give: 1 for a mistake on the command line (an unknown option,
 * a missing argument), 32 when the mount failed (docs/usage.md).
 */
#define CLI_MOUNT_EX_USAGE 1
#define CLI_MOUNT_EX_FAIL 32

/* How cli_mount_opts() mounts: mount(8)'s flags to its helpers. */
#define CLI_MOUNT_SLOPPY 0x1u  /* -s: drop unknown options, with a warning */
#define CLI_MOUNT_FAKE 0x2u    /* -f: check everything, mount nothing */
#define CLI_MOUNT_VERBOSE 0x4u /* -v: say what is mounted where */

/*
 * Mount @spec on @dir with @opts (a -o list, NULL for none), in the
 * background, as `zonefuse mount SPEC DIR -o OPTS` does. Returns the exit
 * status: 0, CLI_MOUNT_EX_USAGE or CLI_MOUNT_EX_FAIL.
 */
int cli_mount_opts(const char *spec, const char *dir, const char *opts,
		   unsigned int flags);

/*
 * mount.zonefuse SPEC DIR [-sfnv] [-o OPTS] [-t TYPE], as mount(8) runs it
 * (cli_helper.c). Returns the exit status, as cli_mount_opts().
 */
int cli_mount_helper(int argc, char **argv);

/*
 * umount.zonefuse DIR [-nlfv] [-t TYPE], as umount(8) runs it for a mount
 * of type fuse.zonefuse or fuseblk.zonefuse: unmount, then wait until the
 * daemon has written everything and exited (cli_helper.c). Exit status
 * 0, CLI_MOUNT_EX_USAGE or CLI_MOUNT_EX_FAIL.
 */
int cli_umount_helper(int argc, char **argv);
int cli_label(int argc, char **argv);

/*
 * zonefuse probe [--udev] DEVICE (cli_probe.c): exit 0 when DEVICE holds
 * a zonefuse file system, 2 when it holds none, 1 when it cannot be read.
 */
int cli_probe(int argc, char **argv);

/* Print "zonefuse VERSION" on stdout, as every -V/--version does; 0. */
int cli_version(void);

/* "zonefuse CMD: " followed by the message, on stderr. */
__attribute__((format(printf, 2, 3))) void cli_error(const char *cmd,
						     const char *fmt, ...);

/* Open @path, printing the device layer's reason on failure. */
int cli_open_dev(const char *cmd, const char *path, unsigned int flags,
		 struct zdev **devp);

/* Parse a size option, printing what is wrong. 0 or -EINVAL. */
int cli_size_arg(const char *cmd, const char *opt, const char *val,
		 uint64_t *out);
int cli_u32_arg(const char *cmd, const char *opt, const char *val,
		uint32_t *out);

/*
 * Refuse (-EBUSY, with a message) a device that is mounted: tools would
 * otherwise wait for the mount's lock, as they do for a daemon finishing
 * its unmount.
 */
int cli_refuse_mounted(const char *cmd, const char *path);
/*
 * Where a zonefuse file system on @path (an image or a device) is
 * mounted, malloc'ed, or NULL when it is not (or on no memory).
 */
char *cli_mounted_on(const char *path);
/* /proc/self/mountinfo read by libmount (paths unescaped), or NULL. */
struct libmnt_table *cli_mount_table(void);
/* Is @type (mountinfo's) that of a zonefuse mount, fuse or fuseblk? */
bool cli_is_zonefuse_type(const char *type);
/*
 * The image a loop device @dev ("/dev/loopN") reads, into @buf: what a
 * fuseblk mount of an image (-o blkdev) shows as its source instead of
 * the image. -errno when @dev is not a loop device with a backing file.
 */
int cli_loop_backing(const char *dev, char *buf, size_t len);

/* The userspace options of a zonefuse mount in libmount's utab. */
#define CLI_UTAB_OPTS "helper=zonefuse"

/*
 * Record the mount of @src on @target (mountinfo's @type) in libmount's
 * utab with CLI_UTAB_OPTS, so that umount(8) runs umount.zonefuse for it
 * (cli_common.c says why). 0 or a negative errno: -ENOTSUP when libmount
 * keeps no utab, -EACCES when not root.
 */
int cli_utab_note(const char *src, const char *target, const char *type);
/* Drop what libmount's utab keeps for @target. 0 or a negative errno. */
int cli_utab_drop(const char *target);
/*
 * Wait (up to 30 s) until no other process holds @path: a daemon still
 * finishing its unmount. Errors are left to the real open that follows.
 */
void cli_wait_released(const char *path);

/*
 * Append @f to the JSON array @list as an object: code, severity, fixed,
 * the objects it concerns, text (docs/usage.md, "JSON"). 0 or -ENOMEM.
 */
int cli_json_finding(json_t *list, const struct zfs_finding *f);

#endif /* ZONEFUSE_CLI_H */
