#!/bin/bash
# udev.sh DEVICE - the udev rule (scripts/udev/64-zonefuse.rules.in) on a
# zoned block device, with systemd-udevd running: after mkfs the device
# has its /dev/disk/by-uuid and by-label links and `lsblk -f` names
# zonefuse; a label change is seen when `zonefuse label` closes the
# device (the rule's watch); the device is mounted through the by-uuid
# link, and by UUID= in fstab and LABEL= through mount(8) and the
# mount.zonefuse helper; a device wiped of zonefuse loses its links.
# Run by tests/real/run.sh in the QEMU guest, where /run is a tmpfs and
# no udevd runs yet: the rule goes to /run/udev/rules.d with the path of
# the binary under test. It destroys what DEVICE holds.
set -euo pipefail

Z=$(readlink -f "${ZONEFUSE:-build/src/zonefuse}")
dev=$(readlink -f "${1:?usage: udev.sh DEVICE}")
name=$(basename "$dev")
rule=$(dirname "$0")/../../scripts/udev/64-zonefuse.rules.in
echo "udev.sh: the udev rule on $dev: by-uuid/by-label links, lsblk -f, watch, mount by link"

fail() { echo "udev.sh: FAILED on $dev: $*" >&2; exit 1; }
[ -b "$dev" ] || fail "not a block device"
udevd=
for p in /lib/systemd/systemd-udevd /usr/lib/systemd/systemd-udevd; do
	[ -x "$p" ] && udevd=$p && break
done
[ -n "$udevd" ] || { echo "udev.sh: no systemd-udevd here: skipped"; exit 77; }
if [ -S /run/udev/control ]; then
	echo "udev.sh: a udevd already runs here; this test starts its own: skipped"
	exit 77
fi

# The guest runs the suites chrooted into the host's root: udevadm would
# ignore trigger and settle there.
export SYSTEMD_IGNORE_CHROOT=1

work=$(mktemp -d)
mnt=$work/mnt
mkdir -p "$mnt" /run/udev/rules.d
cleanup()
{
	mountpoint -q "$mnt" && umount "$mnt"
	[ -n "${sbin:-}" ] && mountpoint -q "$sbin" && umount "$sbin"
	udevadm control --exit 2>/dev/null || true
	rm -f /run/udev/rules.d/64-zonefuse.rules
	rm -rf "$work"
}
trap cleanup EXIT

sed "s|@SBINDIR@/zonefuse|$Z|" "$rule" >/run/udev/rules.d/64-zonefuse.rules
"$udevd" --daemon || fail "start $udevd"
for _ in $(seq 100); do [ -S /run/udev/control ] && break; sleep 0.1; done
[ -S /run/udev/control ] || fail "$udevd made no /run/udev/control"

# event: make udevd process $dev again and wait for it.
event()
{
	udevadm trigger --action=change "/sys/block/$name"
	udevadm settle --timeout=60 || fail "udevadm settle timed out"
}
# link_is PATH: PATH is a link to $dev.
link_is()
{
	[ "$(readlink -f "$1" 2>/dev/null)" = "$dev" ] ||
		fail "$1 does not lead to $dev (links: $(find /dev/disk/by-uuid /dev/disk/by-label -type l -printf '%p -> %l ' 2>&1))"
}
# prop KEY: the value udev keeps for $dev.
prop() { udevadm info --query=property --name="$dev" | sed -n "s/^$1=//p"; }

uuid=$(python3 -c 'import uuid; print(uuid.uuid4())')
label="ckpt $$"
"$Z" mkfs --force -L "$label" -U "$uuid" "$dev" >/dev/null || fail "mkfs"
# mkfs closed the device it wrote, but the watch is set only by the first
# event the rule sees: this one.
event
link_is "/dev/disk/by-uuid/$uuid"
link_is "/dev/disk/by-label/ckpt\\x20$$"
[ "$(prop ID_FS_TYPE)" = zonefuse ] || fail "ID_FS_TYPE is '$(prop ID_FS_TYPE)'"
[ "$(prop ID_FS_LABEL)" = "ckpt_$$" ] || fail "ID_FS_LABEL is '$(prop ID_FS_LABEL)'"
sched=$(cat "/sys/block/$name/queue/scheduler")
if [ "$(cat "/sys/block/$name/queue/zoned")" = host-managed ]; then
	[[ $sched == *"[mq-deadline]"* ]] || fail "scheduler is $sched"
fi
# lsblk reads udev's database: the same three fields blkid(8) would give.
got=$(lsblk -n -d -o FSTYPE,UUID,LABEL "$dev" | tr -s ' ')
[ "$got" = "zonefuse $uuid ckpt $$" ] || fail "lsblk -f says '$got'"
echo "udev.sh: after mkfs: links, ID_FS_*, lsblk -f ($got), scheduler $sched"

# A label change closes the device after writing it: the watch makes
# udevd look again, with no trigger.
"$Z" label "$dev" "renamed-$$" || fail "zonefuse label"
udevadm settle --timeout=60 || fail "udevadm settle timed out"
for _ in $(seq 100); do
	[ -e "/dev/disk/by-label/renamed-$$" ] && break
	sleep 0.1
done
link_is "/dev/disk/by-label/renamed-$$"
[ ! -e "/dev/disk/by-label/ckpt\\x20$$" ] || fail "the old label's link stayed"
echo "udev.sh: the label change was seen by the watch"

# The by-uuid link is a path mount(8), fstab and zonefuse mount take.
"$Z" mount "/dev/disk/by-uuid/$uuid" "$mnt" || fail "mount by the by-uuid link"
echo data >"$mnt/f"
[ "$(findmnt -n -o SOURCE --mountpoint "$mnt")" = "$dev" ] ||
	fail "mounted $(findmnt -n -o SOURCE --mountpoint "$mnt")"
# Probed while mounted (the rule runs on any event): the same answer.
[ "$("$Z" probe "$dev" | sed 's/.*TYPE=//')" = '"zonefuse"' ] || fail "probe of the mounted device"
umount "$mnt"
echo "udev.sh: mounted through /dev/disk/by-uuid/$uuid"

# libblkid takes udev's links for UUID= and LABEL= (it does not probe
# what they lead to), so findfs, and mount(8) and fstab, which resolve a
# tag through it before they run the helper, find the device. mount(8)
# looks for mount.zonefuse in /sbin only: an overlay (lower layers only,
# read-only) shows the helpers there, pointing at the binary under test.
[ "$(findfs "UUID=$uuid")" = "$dev" ] || fail "findfs UUID=$uuid says '$(findfs "UUID=$uuid" 2>&1)'"
[ "$(findfs "LABEL=renamed-$$")" = "$dev" ] || fail "findfs LABEL=renamed-$$ says '$(findfs "LABEL=renamed-$$" 2>&1)'"
sbin=$(readlink -f /sbin)
mkdir "$work/sbin"
for h in mount.zonefuse umount.zonefuse; do ln -s "$Z" "$work/sbin/$h"; done
modprobe overlay 2>/dev/null || true
mount -t overlay zonefuse-udev -o "lowerdir=$work/sbin:$sbin" "$sbin" ||
	fail "cannot put an overlay of $work/sbin over $sbin"
printf 'UUID=%s %s zonefuse defaults 0 0\n' "$uuid" "$mnt" >"$work/fstab"
mount -a -T "$work/fstab" || fail "mount -a of an fstab line UUID=$uuid"
[ "$(findmnt -n -o SOURCE --mountpoint "$mnt")" = "$dev" ] ||
	fail "fstab's UUID= mounted $(findmnt -n -o SOURCE --mountpoint "$mnt")"
[ "$(cat "$mnt/f")" = data ] || fail "the file written through the link is not there"
umount "$mnt" || fail "umount after the fstab mount"
mount -t zonefuse "LABEL=renamed-$$" "$mnt" || fail "mount -t zonefuse LABEL=renamed-$$"
umount "$mnt" || fail "umount after mount LABEL="
umount "$sbin" || fail "umount the overlay on $sbin"
echo "udev.sh: findfs, an fstab line UUID= and mount LABEL= found $dev"

# No zonefuse any more, and the links go: every sequential zone reset,
# and every conventional zone (a reset leaves them as they are) zeroed.
blkzone reset "$dev" || fail "blkzone reset"
blkzone report "$dev" |
	sed -n 's/.*start: 0x\([0-9a-f]*\), len 0x\([0-9a-f]*\),.*CONVENTIONAL.*/\1 \2/p' |
	while read -r start len; do
		dd if=/dev/zero of="$dev" bs=512 seek=$((16#$start)) count=$((16#$len)) \
			oflag=direct status=none || fail "zeroing the conventional zone at sector $((16#$start))"
	done
event
[ ! -e "/dev/disk/by-uuid/$uuid" ] || fail "the by-uuid link outlived the file system"
[ -z "$(prop ID_FS_TYPE)" ] || fail "ID_FS_TYPE is still '$(prop ID_FS_TYPE)'"
echo "udev.sh: $dev passed"
