#!/usr/bin/env bash
# tests/e2e/tools.sh: zonefuse as util-linux's fsck(8), mkfs(8) and
# mount(8) see it.
#
# Installs zonefuse with `meson install --destdir` into a scratch root.
# mount(8) looks for its helpers (mount.TYPE) in /sbin, /sbin/fs.d and
# /sbin/fs only, never in $PATH, so a helper in the scratch root is found
# only where the real /sbin shows it. The test runs in a mount namespace
# of its own (unshare -m, made below), and there an overlay puts the
# scratch root's sbin over the real /sbin (on Debian, /usr/sbin): mount(8),
# umount(8) and fsck(8) then find the helpers exactly as on a system where
# zonefuse was installed with --prefix=/usr, while the real /sbin, and
# every other process's view of it, is left alone. Every mount the test
# makes lives in that namespace and ends with it. The scratch sbin is
# also first on PATH, where mkfs(8) and, last, fsck(8) look. Then:
# - fsck -t zonefuse -n/-p/-a/-y/-f, and fsck of an fstab line of type
#   fuse.zonefuse (fsck.fuse.zonefuse), on a clean and on a damaged image
#   (one superblock copy overwritten): fsck(8)'s exit codes 0, 1, 4, 8, 16;
#   fsck.zonefuse -C FD's progress lines (fsck(8) passes -C to ext* only);
# - mkfs -t zonefuse refuses an image holding btrfs, f2fs or ext4 (made
#   by their own mkfs into the image's device bytes), naming it, and with
#   --force makes zonefuse, after which blkid finds nothing;
# - -V and --version on every command and helper;
# - zonefuse mount: an unknown option refused (exit 1) with the image left
#   byte for byte; mount(8)'s exit codes (1 usage, 32 failure); mount(8)'s
#   generic options accepted;
# - mount -t zonefuse and -t fuse.zonefuse run mount.zonefuse and
#   mount.fuse.zonefuse, with their exit codes, -s and -f; UUID= and LABEL=
#   malformed (exit 1) and of an image (not found, 32); an fstab file
#   mounted by mount -a -T twice, the second skipping what is mounted;
# - umount returns only once the daemon has written back 150 MiB it staged
#   and exited (umount.zonefuse), for each way of mounting;
# - zonefuse label: set, read back, refused while mounted on a mount point
#   with a space (mountinfo's "\040"), which the message names;
# - zonefuse probe: blkid(8)'s line and exit codes (0, 2 for nothing, 1),
#   udev's properties encoded as udev's blkid builtin encodes them, and the
#   installed udev rule naming the installed binary (tests/real/udev.sh
#   runs the rule under systemd-udevd on a zoned null_blk).
set -uo pipefail

# Into a mount namespace of its own (above), when this machine lets root
# make one; e2e_begin below skips the test without root.
if [ -z "${ZONEFUSE_TOOLS_NS:-}" ] && [ "$(id -u)" -eq 0 ] &&
	command -v unshare >/dev/null && unshare --mount true 2>/dev/null; then
	ZONEFUSE_TOOLS_NS=1 exec unshare --mount --propagation private -- "$BASH" "$0" "$@"
fi

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

e2e_begin "fsck(8), mkfs(8), mount(8) and umount(8) run the installed helpers with their flags and exit codes; mkfs refuses other file systems' signatures; mount refuses unknown options untouched; fstab and mount -a; umount waits for the daemon; -V everywhere; label"
e2e_need fsck util-linux
e2e_need mkfs util-linux
e2e_need blkid util-linux
e2e_need meson meson
e2e_need findmnt util-linux
[ -n "${ZONEFUSE_BUILD_ROOT:-}" ] || e2e_skip "ZONEFUSE_BUILD_ROOT (the meson build directory) is not set; run through meson test"
[ -n "${ZONEFUSE_TOOLS_NS:-}" ] || e2e_skip "cannot make a mount namespace (unshare --mount, util-linux) for mount(8) to find the installed helpers in /sbin"

root=$E2E_WORK/root
meson install -C "$ZONEFUSE_BUILD_ROOT" --no-rebuild --destdir "$root" >"$E2E_WORK/install.log" 2>&1 ||
	e2e_die "meson install --destdir $root failed: $(tail -n 5 "$E2E_WORK/install.log")"
# The binary, not the bash completion of the same name.
sbin=$(dirname "$(find "$root" -name zonefuse -type f -perm -u+x | head -n 1)")
Z=$sbin/zonefuse
[ -x "$Z" ] || e2e_die "meson install put no zonefuse binary under $root"
helpers=(mkfs.zonefuse fsck.zonefuse fsck.fuse.zonefuse mount.zonefuse mount.fuse.zonefuse
	umount.zonefuse umount.fuse.zonefuse umount.fuseblk.zonefuse)
for h in "${helpers[@]}"; do
	[ "$(readlink "$sbin/$h")" = zonefuse ] ||
		e2e_fail "$sbin/$h is not the symlink to zonefuse that meson install should make"
done
export PATH="$sbin:$PATH"
# The overlay of the header: the scratch sbin over the real one, in this
# namespace only (lower layers only: it is read-only, and writes nothing).
real_sbin=$(readlink -f /sbin)
mount -t overlay zonefuse-tools -o "lowerdir=$sbin:$real_sbin" "$real_sbin" ||
	e2e_skip "cannot mount an overlay of $sbin over $real_sbin in the test's namespace (overlayfs)"
if [ "$(readlink -f /sbin/mount.zonefuse)" != "$real_sbin/zonefuse" ] || ! cmp -s /sbin/zonefuse "$Z"; then
	e2e_die "/sbin/mount.zonefuse is not the zonefuse just installed after the overlay"
fi
# libmount's utab (/run/mount/utab), which the mounts write to, private to
# the namespace as well.
if ! mkdir -p /run/mount || ! mount -t tmpfs zonefuse-tools-utab /run/mount; then
	e2e_skip "cannot mount a tmpfs on /run/mount in the test's namespace"
fi

# The offset of device byte 0 in an emulator image (its header's data_off).
data_off()
{
	od -An -t u8 -j 72 -N 8 "$1" | tr -d ' '
}

# Mark the first $2 zones of emulator image $1 written full, as the other
# file system copied into their bytes would have left them on a zoned
# drive (bytes above a write pointer are not the device's: the emulator
# keeps them zero, and mkfs resets only zones that are not empty).
zones_full()
{
	/usr/bin/python3 - "$1" "$2" <<'PY'
import struct, sys
path, n = sys.argv[1], int(sys.argv[2])

def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF

with open(path, "r+b") as f:
    zone_size = struct.unpack_from("<Q", f.read(64), 24)[0]
    for z in range(n):
        at = 4096 + 32 * z  # the zone table: struct zemu_disk_zone
        f.seek(at)
        ent = bytearray(f.read(32))
        if ent[25] != 2:  # conventional: no write pointer
            continue
        cap = struct.unpack_from("<Q", ent, 16)[0]
        struct.pack_into("<Q", ent, 0, z * zone_size + cap)
        ent[24] = 0xE  # full
        struct.pack_into("<I", ent, 28, crc32c(bytes(ent[:28])))
        f.seek(at)
        f.write(ent)
PY
}

# A fresh formatted image at $1.
fresh()
{
	rm -f "$1"
	e2e_image "$1"
}

# Overwrite the superblock copy at the start of the device with random
# bytes: damage fsck reports (exit 4) and repairs from the other copy.
damage_super()
{
	head -c 512 /dev/urandom |
		dd of="$1" bs=1 seek="$(data_off "$1")" conv=notrunc status=none
}

# expect_rc WANT DESCRIPTION CMD...: run CMD (output in $out), check its
# exit status.
out=
expect_rc()
{
	local want=$1 what=$2 rc

	shift 2
	out=$("$@" 2>&1)
	rc=$?
	[ "$rc" -eq "$want" ] || e2e_fail "$what: exit $rc, want $want (command: $*; output: $out)"
}

# ---- -V and --version ------------------------------------------------------

e2e_log "-V and --version on every command and helper"
want=$("$Z" --version)
case $want in
"zonefuse "[0-9]*) ;;
*) e2e_fail "zonefuse --version printed '$want'" ;;
esac
for cmd in "" emu "emu create" "emu media-error" zones mkfs mount fsck label probe scrub stat dump; do
	for v in -V --version; do
		# shellcheck disable=SC2086 # $cmd is one or two words
		got=$("$Z" $cmd $v 2>&1)
		rc=$?
		if [ "$rc" -ne 0 ] || [ "$got" != "$want" ]; then
			e2e_fail "zonefuse $cmd $v: exit $rc, printed '$got'; want 0 and '$want'"
		fi
	done
done
for h in "${helpers[@]}"; do
	for v in -V --version; do
		got=$("$h" $v 2>&1)
		rc=$?
		if [ "$rc" -ne 0 ] || [ "$got" != "$want" ]; then
			e2e_fail "$h $v: exit $rc, printed '$got'; want 0 and '$want'"
		fi
	done
done

# ---- fsck(8) ---------------------------------------------------------------

e2e_log "fsck -t zonefuse on a clean image: 0 with every flag"
img=$E2E_WORK/fsck.img
fresh "$img"
for flags in -n -p -a -y "-f -n" "-f -p" "-C0 -p" "-v -n"; do
	# shellcheck disable=SC2086 # $flags is one or two options
	expect_rc 0 "fsck -t zonefuse $flags (clean)" fsck -t zonefuse $flags "$img"
	case $out in
	*"$img:"*clean*) ;;
	*) e2e_fail "fsck -t zonefuse $flags: zonefuse's summary line is missing (was the helper run?): $out" ;;
	esac
done

e2e_log "fsck of an fstab line of type fuse.zonefuse runs fsck.fuse.zonefuse"
printf '%s /mnt/zonefuse-tools-test fuse.zonefuse defaults 0 2\n' "$img" >"$E2E_WORK/fstab"
expect_rc 0 "fsck -V -n with the fstab line" env LIBMOUNT_FSTAB="$E2E_WORK/fstab" fsck -V -n "$img"
case $out in
*fsck.fuse.zonefuse*"$img:"*clean*) ;;
*) e2e_fail "fsck of an fstab line of type fuse.zonefuse did not run fsck.fuse.zonefuse: $out" ;;
esac

e2e_log "fsck on a damaged superblock copy: -n 4 and writes nothing, -p 1, then 0; -y 1; -t fuse.zonefuse -a 1"
damage_super "$img"
cp "$img" "$E2E_WORK/before"
expect_rc 4 "fsck -t zonefuse -n (damaged)" fsck -t zonefuse -n "$img"
cmp -s "$img" "$E2E_WORK/before" || e2e_fail "fsck -n changed the image"
expect_rc 1 "fsck -t zonefuse -p (damaged)" fsck -t zonefuse -p "$img"
expect_rc 0 "fsck -t zonefuse -n (after -p)" fsck -t zonefuse -n "$img"
damage_super "$img"
expect_rc 1 "fsck -t zonefuse -y (damaged)" fsck -t zonefuse -y "$img"
damage_super "$img"
expect_rc 1 "fsck -t fuse.zonefuse -a (damaged)" fsck -t fuse.zonefuse -a "$img"
expect_rc 0 "fsck -t zonefuse -f -n (after -a)" fsck -t zonefuse -f -n "$img"

e2e_log "fsck usage errors exit 16, a check that cannot run 8"
expect_rc 16 "fsck -t zonefuse -n -y" fsck -t zonefuse -n -y "$img"
expect_rc 16 "fsck -t zonefuse -p -y" fsck -t zonefuse -p -y "$img"
expect_rc 16 "fsck -t zonefuse -C x" fsck -t zonefuse -C x "$img"
expect_rc 8 "fsck -t zonefuse -n on a missing device" fsck -t zonefuse -n "$E2E_WORK/missing.img"

e2e_log "fsck.zonefuse -C FD: e2fsck's progress lines, pass 1 the metadata and 2 the data; -C 0 off a terminal adds nothing; a descriptor not open is a usage error"
pmnt=$E2E_WORK/progress-mnt
mkdir -p "$pmnt"
e2e_mount "$img" "$pmnt"
for i in 1 2 3; do head -c $((i * 70000)) /dev/urandom >"$pmnt/f$i"; done
e2e_umount "$img" "$pmnt"
expect_rc 0 "fsck.zonefuse -C 3 --data" fsck.zonefuse -C 3 --data "$img" 3>"$E2E_WORK/progress"
want="1 0 1 $img
1 1 1 $img
2 0 3 $img
2 1 3 $img
2 2 3 $img
2 3 3 $img"
[ "$(cat "$E2E_WORK/progress")" = "$want" ] ||
	e2e_fail "fsck.zonefuse -C 3 --data wrote '$(cat "$E2E_WORK/progress")', want '$want'"
expect_rc 0 "fsck.zonefuse -n" fsck.zonefuse -n "$img"
plain=$out
expect_rc 0 "fsck.zonefuse -C 0 -n, stdout not a terminal" fsck.zonefuse -C 0 -n "$img"
[ "$out" = "$plain" ] || e2e_fail "fsck.zonefuse -C 0 printed '$out' off a terminal, want '$plain'"
expect_rc 16 "fsck.zonefuse -C 9 (not open)" fsck.zonefuse -C 9 -n "$img"
case $out in
*"-C 9: descriptor 9 is not open"*) ;;
*) e2e_fail "fsck.zonefuse -C 9 did not say why: $out" ;;
esac

# ---- mkfs(8) and other file systems' signatures ----------------------------

e2e_log "mkfs -t zonefuse refuses btrfs, f2fs and ext4, naming them; --force overwrites"
declare -A mkfs_of=([btrfs]="mkfs.btrfs -q -f -L" [f2fs]="mkfs.f2fs -q -f -l" [ext4]="mkfs.ext4 -q -F -L")
declare -A pkg_of=([btrfs]=btrfs-progs [f2fs]=f2fs-tools [ext4]=e2fsprogs)
[ -x /usr/bin/python3 ] || e2e_skip "/usr/bin/python3 missing (Debian package python3), used to edit the emulator's zone table"
tried=0
# Each file system on sequential zones (the reset clears it), and btrfs,
# whose signature is at 64 KiB, past what zonefuse writes, on conventional
# zones too (mkfs --force erases it there).
for case in btrfs f2fs ext4 btrfs:conv; do
	fs=${case%%:*}
	read -r tool _ <<<"${mkfs_of[$fs]}"
	if ! command -v "$tool" >/dev/null; then
		e2e_log "no $tool (Debian package ${pkg_of[$fs]}): $case not tried"
		continue
	fi
	tried=$((tried + 1))
	img=$E2E_WORK/${case/:/-}.img
	conv=()
	[ "$case" = "$fs" ] || conv=(--conventional 60)
	rm -f "$img"
	"$Z" emu create "$img" --size 256M --zone-size 4M "${conv[@]}" >/dev/null ||
		e2e_die "emu create $img failed"
	off=$(data_off "$img")
	rm -f "$E2E_WORK/other"
	truncate -s 200M "$E2E_WORK/other"
	# shellcheck disable=SC2086 # the mkfs command and its label option
	${mkfs_of[$fs]} "old-$fs" "$E2E_WORK/other" >/dev/null 2>&1 || e2e_die "$tool on a scratch file failed"
	dd if="$E2E_WORK/other" of="$img" bs=1M seek=$((off >> 20)) conv=notrunc status=none ||
		e2e_die "copying the $fs image into $img failed"
	zones_full "$img" 50 || e2e_die "marking the zones of $img full failed"
	[ "$(blkid -p -O "$off" -s TYPE -o value "$img")" = "$fs" ] ||
		e2e_die "blkid does not see the $fs file system copied into $img"

	expect_rc 1 "mkfs -t zonefuse on $case" mkfs -t zonefuse "$img"
	case $out in
	*"$img holds a $fs file system (label 'old-$fs', UUID "*"); use --force to overwrite it"*) ;;
	*) e2e_fail "mkfs -t zonefuse on $case did not name it: $out" ;;
	esac
	[ "$(blkid -p -O "$off" -s TYPE -o value "$img")" = "$fs" ] ||
		e2e_fail "the refused mkfs changed the $case file system"
	expect_rc 1 "mkfs.zonefuse on $case" mkfs.zonefuse "$img"
	expect_rc 0 "mkfs -t zonefuse --force on $case" mkfs -t zonefuse --force "$img"
	blkid -p -O "$off" "$img" >/dev/null 2>&1
	[ $? -eq 2 ] || e2e_fail "blkid still finds a signature after mkfs --force over $case: $(blkid -p -O "$off" "$img")"
	expect_rc 0 "fsck.zonefuse -n after mkfs --force over $case" fsck.zonefuse -n "$img"
	expect_rc 1 "mkfs -t zonefuse again (now zonefuse)" mkfs -t zonefuse "$img"
done
[ "$tried" -gt 0 ] || e2e_fail "none of mkfs.btrfs, mkfs.f2fs, mkfs.ext4 is installed (Debian packages btrfs-progs, f2fs-tools, e2fsprogs): no signature tried"

# ---- zonefuse mount: options and exit status ------------------------------

e2e_log "zonefuse mount: an unknown option is refused (exit 1) before the image is opened; usage 1, failure 32; generic options accepted"
img=$E2E_WORK/opts.img
mnt=$E2E_WORK/mnt-opts
fresh "$img"
mkdir -p "$mnt"
e2e_track "$img" "$mnt"
cp "$img" "$E2E_WORK/before"
# Before the check moved up front, libfuse refused such an option only
# after the journal was replayed, and the image had changed.
for opts in rw,bogus stage_mb=4G transport=carrier-pigeon fsname=/other subtype=x; do
	expect_rc 1 "zonefuse mount -o $opts" "$Z" mount "$img" "$mnt" -o "$opts"
	mountpoint -q "$mnt" && e2e_fail "zonefuse mount -o $opts mounted"
	cmp -s "$img" "$E2E_WORK/before" || e2e_fail "zonefuse mount -o $opts changed the image"
done
expect_rc 1 "zonefuse mount -o rw,bogus,noway" "$Z" mount "$img" "$mnt" -o rw,bogus,noway
case $out in
*"unknown option(s) bogus,noway: nothing was mounted and $img was not opened"*) ;;
*) e2e_fail "zonefuse mount -o rw,bogus,noway did not name the refused options: $out" ;;
esac
expect_rc 1 "zonefuse mount without DIR" "$Z" mount "$img"
expect_rc 1 "zonefuse mount with an extra argument" "$Z" mount "$img" "$mnt" extra
cmp -s "$img" "$E2E_WORK/before" || e2e_fail "a refused zonefuse mount changed the image"
expect_rc 32 "zonefuse mount of a missing image" "$Z" mount "$E2E_WORK/missing.img" "$mnt"
expect_rc 32 "zonefuse mount on a missing directory" "$Z" mount "$img" "$E2E_WORK/no-such-dir"
rm -f "$E2E_WORK/blank.img"
"$Z" emu create "$E2E_WORK/blank.img" --size 64M --zone-size 4M >/dev/null || e2e_die "emu create blank.img failed"
expect_rc 32 "zonefuse mount of an image holding no file system" "$Z" mount "$E2E_WORK/blank.img" "$mnt"
generic=defaults,auto,nofail,_netdev,user,users,x-systemd.automount,X-mount.mkdir,comment=hi,relatime,lazytime,nodiratime,noatime,nodev,nosuid,noexec,rw
expect_rc 0 "zonefuse mount -o $generic" "$Z" mount "$img" "$mnt" -o "$generic"
mountpoint -q "$mnt" || e2e_fail "zonefuse mount -o $generic did not mount"
case ",$(findmnt -n -o VFS-OPTIONS --mountpoint "$mnt")," in
*,noexec,*) ;;
*) e2e_fail "noexec did not reach the kernel: $(findmnt -n -o VFS-OPTIONS --mountpoint "$mnt")" ;;
esac
expect_rc 32 "zonefuse mount of a mounted image" "$Z" mount "$img" "$E2E_WORK"
case $out in
*"is mounted on $mnt"*) ;;
*) e2e_fail "a second zonefuse mount did not say where the image is mounted: $out" ;;
esac
e2e_umount "$img" "$mnt"

# ---- mount(8) and fstab ----------------------------------------------------

# The command line of the daemon of image $1 (its pid's argv, spaces for NULs).
daemon_cmdline()
{
	local pid

	pid=$(e2e_daemon_pids "$1" | head -n 1)
	[ -n "$pid" ] && tr '\0' ' ' <"/proc/$pid/cmdline"
}

e2e_log "mount -t zonefuse and -t fuse.zonefuse run the installed helpers; their exit codes; -s, -f"
img=$E2E_WORK/m8.img
mnt=$E2E_WORK/mnt-m8
fresh "$img"
mkdir -p "$mnt"
e2e_track "$img" "$mnt"
# Without mount.zonefuse, mount(8) would take zonefuse for a kernel type
# and fail: a mount is the helper's work.
expect_rc 0 "mount -t zonefuse IMG DIR" mount -t zonefuse "$img" "$mnt"
[ "$(findmnt -n -o SOURCE,FSTYPE --mountpoint "$mnt")" = "$img fuse.zonefuse" ] ||
	e2e_fail "mount -t zonefuse: findmnt shows '$(findmnt -n -o SOURCE,FSTYPE --mountpoint "$mnt")', want '$img fuse.zonefuse'"
case $(daemon_cmdline "$img") in
/sbin/mount.zonefuse" $img $mnt"*) ;;
*) e2e_fail "the daemon of mount -t zonefuse is not /sbin/mount.zonefuse: $(daemon_cmdline "$img")" ;;
esac
echo data >"$mnt/f" || e2e_fail "cannot write to the mount made by mount -t zonefuse"
e2e_umount "$img" "$mnt"
# Without mount.fuse.zonefuse, mount(8) would run mount.fuse3, which runs
# `zonefuse IMG DIR -o ...`: the daemon's name tells which ran.
expect_rc 0 "mount -t fuse.zonefuse -o ro IMG DIR" mount -t fuse.zonefuse -o ro "$img" "$mnt"
case $(daemon_cmdline "$img") in
/sbin/mount.fuse.zonefuse" $img $mnt"*) ;;
*) e2e_fail "the daemon of mount -t fuse.zonefuse is not /sbin/mount.fuse.zonefuse: $(daemon_cmdline "$img")" ;;
esac
[ "$(cat "$mnt/f" 2>&1)" = data ] || e2e_fail "mount -t fuse.zonefuse: the file reads '$(cat "$mnt/f" 2>&1)'"
case ",$(findmnt -n -o VFS-OPTIONS --mountpoint "$mnt")," in
*,ro,*) ;;
*) e2e_fail "mount -t fuse.zonefuse -o ro is not read-only: $(findmnt -n -o VFS-OPTIONS --mountpoint "$mnt")" ;;
esac
e2e_umount "$img" "$mnt"

cp "$img" "$E2E_WORK/before"
expect_rc 1 "mount -t zonefuse -o bogus" mount -t zonefuse -o rw,bogus "$img" "$mnt"
case $out in
*"unknown option(s) bogus"*) ;;
*) e2e_fail "mount -t zonefuse -o rw,bogus did not name the option: $out" ;;
esac
mountpoint -q "$mnt" && e2e_fail "mount -t zonefuse -o bogus mounted"
cmp -s "$img" "$E2E_WORK/before" || e2e_fail "mount -t zonefuse -o bogus changed the image"
expect_rc 1 "mount -t fuse.zonefuse -o stage_mb=x" mount -t fuse.zonefuse -o stage_mb=x "$img" "$mnt"
cmp -s "$img" "$E2E_WORK/before" || e2e_fail "mount -t fuse.zonefuse -o stage_mb=x changed the image"
expect_rc 32 "mount -t zonefuse of a missing image" mount -t zonefuse "$E2E_WORK/missing.img" "$mnt"
expect_rc 32 "mount -t zonefuse of an image holding no file system" mount -t zonefuse "$E2E_WORK/blank.img" "$mnt"
expect_rc 1 "mount.zonefuse without DIR" mount.zonefuse "$img"
expect_rc 1 "mount.zonefuse -t ext4" mount.zonefuse "$img" "$mnt" -t ext4
expect_rc 1 "mount.zonefuse -x" mount.zonefuse "$img" "$mnt" -x
expect_rc 0 "mount.zonefuse -f (fake)" mount.zonefuse "$img" "$mnt" -f -o rw
mountpoint -q "$mnt" && e2e_fail "mount.zonefuse -f mounted"
cmp -s "$img" "$E2E_WORK/before" || e2e_fail "mount.zonefuse -f changed the image"
expect_rc 0 "mount -s -t zonefuse -o bogus (sloppy)" mount -s -t zonefuse -o bogus "$img" "$mnt"
case $out in
*"ignoring the unknown option(s) bogus"*) ;;
*) e2e_fail "mount -s -o bogus did not say it ignored bogus: $out" ;;
esac
mountpoint -q "$mnt" || e2e_fail "mount -s -t zonefuse -o bogus did not mount"
e2e_umount "$img" "$mnt"

e2e_log "UUID= and LABEL=: malformed is a usage error (1); an image's are not found (32), saying it is named by path"
# Zoned block devices are found by their UUID and label (tests/real/mount.sh
# mounts null_blk and ZNS devices so in the QEMU guest); an image is a file,
# which nothing scans for.
"$Z" label "$img" "m8 label" >/dev/null || e2e_die "zonefuse label $img failed"
uuid=$("$Z" dump "$img" | sed -n 's/^filesystem uuid \([0-9a-f-]*\).*/\1/p')
[ ${#uuid} -eq 36 ] || e2e_die "no UUID in zonefuse dump $img: '$uuid'"
expect_rc 1 "zonefuse mount UUID=not-a-uuid" "$Z" mount UUID=not-a-uuid "$mnt"
expect_rc 1 "mount.zonefuse LABEL=" mount.zonefuse LABEL= "$mnt"
for spec in "UUID=$uuid" "LABEL=m8 label"; do
	expect_rc 32 "zonefuse mount $spec (of an image)" "$Z" mount "$spec" "$mnt"
	case $out in
	*"no zonefuse file system with $spec on the "*"zoned block device(s) here"*"an emulator image is found only by its path"*) ;;
	*) e2e_fail "zonefuse mount $spec of an image did not say why it was not found: $out" ;;
	esac
	expect_rc 32 "mount.zonefuse $spec (of an image)" mount.zonefuse "$spec" "$mnt"
done
mountpoint -q "$mnt" && e2e_fail "a mount by UUID= or LABEL= of an image mounted"

e2e_log "fstab: mount -a -T FILE mounts each zonefuse line, and a second mount -a skips them (exit 0)"
img2=$E2E_WORK/m8-second.img
mnt2="$E2E_WORK/mnt fstab 2"
fresh "$img2"
mkdir -p "$mnt2"
e2e_track "$img2" "$mnt2"
# The second line names its image by a path that is not canonical and its
# mount point with fstab's escape for a space.
{
	printf '# zonefuse lines as in /etc/fstab\n'
	printf '%s %s zonefuse defaults,nofail,x-systemd.automount,comment=e2e 0 0\n' "$img" "$mnt"
	printf '%s %s fuse.zonefuse rw,noatime,_netdev 0 0\n' "$E2E_WORK/./m8-second.img" "${mnt2// /\\040}"
} >"$E2E_WORK/fstab.mount"
expect_rc 0 "mount -a -T fstab (first)" mount -a -T "$E2E_WORK/fstab.mount"
mountpoint -q "$mnt" || e2e_fail "mount -a did not mount $mnt"
mountpoint -q "$mnt2" || e2e_fail "mount -a did not mount $mnt2"
[ "$(findmnt -n -o SOURCE --mountpoint "$mnt2")" = "$img2" ] ||
	e2e_fail "the second fstab line is mounted from '$(findmnt -n -o SOURCE --mountpoint "$mnt2")', want $img2"
pids=$(e2e_daemon_pids "$E2E_WORK/" | sort)
expect_rc 0 "mount -a -T fstab (second)" mount -a -v -T "$E2E_WORK/fstab.mount"
case $out in
*"$mnt"*"already mounted"*"$mnt2"*"already mounted"*) ;;
*) e2e_fail "the second mount -a did not skip both lines as already mounted: $out" ;;
esac
[ "$(e2e_daemon_pids "$E2E_WORK/" | sort)" = "$pids" ] ||
	e2e_fail "the second mount -a started daemons: before '$pids', after '$(e2e_daemon_pids "$E2E_WORK/" | sort | tr '\n' ' ')'"
[ "$(findmnt -n --mountpoint "$mnt" | wc -l)" -eq 1 ] || e2e_fail "$mnt is mounted more than once after the second mount -a"
e2e_umount "$img" "$mnt"
e2e_umount "$img2" "$mnt2"

# ---- umount(8) waits for the daemon ----------------------------------------

# Write $2 MiB into $1 through a read-write descriptor (staged in the
# daemon's DRAM, not written around it as a write-only one is), no fsync.
stage_mib()
{
	/usr/bin/python3 - "$1" "$2" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
block = os.urandom(1 << 20)
for _ in range(int(sys.argv[2])):
    os.write(fd, block)
os.close(fd)
PY
}

# Is image $1 free: no daemon of it left, and nothing holding its lock?
image_free()
{
	[ -z "$(e2e_daemon_pids "$1")" ] && flock -n -x "$1" true
}

e2e_log "umount returns once the daemon has written back what it staged and exited (umount.zonefuse, run for helper=zonefuse in utab)"
img=$E2E_WORK/wait.img
mnt=$E2E_WORK/mnt-wait
fresh "$img"
mkdir -p "$mnt"
e2e_track "$img" "$mnt"
for how in "zonefuse mount" "mount -t zonefuse" "zonefuse mount -o blkdev"; do
	case $how in
	"zonefuse mount") "$Z" mount "$img" "$mnt" -o stage_mb=256,commit=60 ;;
	"mount -t zonefuse") mount -t zonefuse -o stage_mb=256,commit=60 "$img" "$mnt" ;;
	*) "$Z" mount "$img" "$mnt" -o blkdev,stage_mb=256,commit=60 ;;
	esac || e2e_die "$how $img $mnt failed"
	grep -q "OPTS=helper=zonefuse" /run/mount/utab ||
		e2e_fail "$how: no helper=zonefuse in libmount's utab: $(cat /run/mount/utab 2>&1)"
	stage_mib "$mnt/staged" 150 || e2e_die "writing 150 MiB to $mnt failed"
	expect_rc 0 "umount after $how" umount "$mnt"
	# Checked at once: umount must not have returned before the daemon.
	image_free "$img" || e2e_fail "$how: umount returned while the daemon of $img still ran (pids $(e2e_daemon_pids "$img" | tr '\n' ' '))"
	e2e_wait_daemon_gone "$img" 60 || e2e_die "the daemon of $img did not exit after umount"
	grep -q "$mnt" /run/mount/utab 2>/dev/null && e2e_fail "$how: the utab entry of $mnt outlived the umount"
	expect_rc 0 "fsck.zonefuse -n after umount of $how" fsck.zonefuse -n "$img"
done
# The same without the helper (umount -i): the kernel does not wait for a
# FUSE daemon. Only logged: how long writing back takes is the machine's.
"$Z" mount "$img" "$mnt" -o stage_mb=256,commit=60 || e2e_die "zonefuse mount $img $mnt failed"
stage_mib "$mnt/staged" 150 || e2e_die "writing 150 MiB to $mnt failed"
umount -i "$mnt" || e2e_die "umount -i $mnt failed"
if image_free "$img"; then
	e2e_log "umount -i (no helper): the daemon had already finished"
else
	e2e_log "umount -i (no helper): the daemon was still writing when umount returned, as the helper prevents"
fi
e2e_wait_daemon_gone "$img" 60 || e2e_die "the daemon of $img did not exit after umount -i"
expect_rc 1 "umount.zonefuse without DIR" umount.zonefuse
expect_rc 1 "umount.zonefuse -r" umount.zonefuse "$mnt" -r
expect_rc 32 "umount.zonefuse of a directory that is no zonefuse mount" umount.zonefuse "$E2E_WORK"
"$Z" mount "$img" "$mnt" || e2e_die "zonefuse mount $img $mnt failed"
expect_rc 0 "umount -l" umount -l "$mnt"
mountpoint -q "$mnt" && e2e_fail "umount -l left $mnt mounted"
e2e_wait_daemon_gone "$img" 60 || e2e_die "the daemon of $img did not exit after umount -l"

# ---- label -----------------------------------------------------------------

e2e_log "label: set, read back, refused while mounted (on a mount point with a space, named right)"
img=$E2E_WORK/label.img
mnt="$E2E_WORK/mnt with space"
fresh "$img"
expect_rc 0 "zonefuse label (none)" "$Z" label "$img"
[ "$out" = "" ] || e2e_fail "a new file system's label is '$out', want ''"
expect_rc 0 "zonefuse label IMG 'ckpt data'" "$Z" label "$img" "ckpt data"
expect_rc 0 "zonefuse label (read back)" "$Z" label "$img"
[ "$out" = "ckpt data" ] || e2e_fail "the label read back is '$out', want 'ckpt data'"
expect_rc 0 "fsck.zonefuse -n after the label change" fsck.zonefuse -n "$img"
expect_rc 16 "zonefuse label with a control character" "$Z" label "$img" "$(printf 'a\tb')"
expect_rc 16 "zonefuse label of 64 bytes" "$Z" label "$img" "$(printf '%064d' 0)"
e2e_mount "$img" "$mnt"
expect_rc 1 "zonefuse label while mounted" "$Z" label "$img" other
case $out in
*"is mounted on $mnt: unmount it first (umount '$mnt')") ;;
*) e2e_fail "zonefuse label while mounted did not say where: $out" ;;
esac
expect_rc 0 "zonefuse label (read while mounted)" "$Z" label "$img"
[ "$out" = "ckpt data" ] || e2e_fail "the label read while mounted is '$out'"
e2e_umount "$img" "$mnt"
expect_rc 0 "zonefuse label (after the refused change)" "$Z" label "$img"
[ "$out" = "ckpt data" ] || e2e_fail "the refused change changed the label to '$out'"
expect_rc 0 "mkfs -L/-U" "$Z" mkfs --force -L given -U 01234567-89ab-4def-8123-456789abcdef "$img"
case $out in
*"uuid         01234567-89ab-4def-8123-456789abcdef"*"label        given"*) ;;
*) e2e_fail "mkfs -L given -U ... did not print them: $out" ;;
esac
expect_rc 16 "mkfs -U not-a-uuid" "$Z" mkfs --force -U not-a-uuid "$img"

# ---- probe -------------------------------------------------------------------

e2e_log "probe: blkid's line and exit codes, udev's properties, the installed udev rule"
uuid=01234567-89ab-4def-8123-456789abcdef
expect_rc 0 "mkfs for probe" "$Z" mkfs --force -L 'a "q" b' -U "$uuid" "$img"
expect_rc 0 "zonefuse probe" "$Z" probe "$img"
[ "$out" = "$img: UUID=\"$uuid\" LABEL=\"a \\\"q\\\" b\" TYPE=\"zonefuse\"" ] ||
	e2e_fail "zonefuse probe printed '$out'"
expect_rc 0 "zonefuse probe --udev" "$Z" probe --udev "$img"
want="ID_FS_TYPE=zonefuse
ID_FS_USAGE=filesystem
ID_FS_UUID=$uuid
ID_FS_UUID_ENC=$uuid
ID_FS_LABEL=a_\"q\"_b
ID_FS_LABEL_ENC=a\\x20\\x22q\\x22\\x20b"
[ "$out" = "$want" ] || e2e_fail "zonefuse probe --udev printed '$out', want '$want'"
expect_rc 0 "mkfs with no label" "$Z" mkfs --force -U "$uuid" "$img"
expect_rc 0 "zonefuse probe --udev (no label)" "$Z" probe --udev "$img"
case $out in
*LABEL*) e2e_fail "probe --udev of a file system with no label printed a label: $out" ;;
esac
blank=$E2E_WORK/probe-blank.img
out=$("$Z" emu create "$blank" --size 64M --zone-size 4M 2>&1) || e2e_die "emu create $blank failed: $out"
expect_rc 2 "zonefuse probe of an image with no file system" "$Z" probe "$blank"
[ -z "$out" ] || e2e_fail "zonefuse probe of a blank image printed '$out'"
head -c 1M /dev/zero >"$E2E_WORK/zeros"
expect_rc 2 "zonefuse probe of a file of zeros" "$Z" probe "$E2E_WORK/zeros"
expect_rc 1 "zonefuse probe of a missing path" "$Z" probe "$E2E_WORK/none"
case $out in
*"$E2E_WORK/none: No such file or directory"*) ;;
*) e2e_fail "zonefuse probe of a missing path said '$out'" ;;
esac
expect_rc 16 "zonefuse probe with no device" "$Z" probe
expect_rc 16 "zonefuse probe --no-such-option" "$Z" probe --no-such-option "$img"
rules=$(find "$root" -name 64-zonefuse.rules)
[ -n "$rules" ] || e2e_fail "meson install put no 64-zonefuse.rules under $root"
want="IMPORT{program}=\"${Z#"$root"} probe --udev \$devnode\""
grep -qxF "$want" "$rules" || e2e_fail "$rules does not run the installed binary: no line '$want'"

e2e_end
