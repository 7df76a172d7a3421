#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# nullblk.sh - make (or remove) a zoned null_blk device through configfs,
# to run zonefuse and its tests on a real zoned block device:
#
#   dev=$(scripts/nullblk.sh --size 1024 --zone-size 16 --max-open 4 --max-active 6)
#   ZONEFUSE_TEST_ZBD=$dev meson test -C build zdev-real
#   scripts/nullblk.sh --remove "$dev"
#
# The device is memory backed (memory_backed=1): it holds its data in RAM,
# as much of it as is written, until it is removed.
#
# Exit status:
#   0   done; the device path (/dev/nullbN) is the one line on stdout
#   1   failed (the kernel refused the parameters, a write to configfs failed)
#   2   bad usage
#   77  this machine cannot make one: not root, no null_blk module, no
#       configfs, or a kernel without zoned block device support
#       (CONFIG_BLK_DEV_ZONED). 77 is what meson reports as SKIP, so a test
#       script can exit with our status as is.
# Every failure says why on stderr, in one line.

set -u

CFS=/sys/kernel/config
NULLB=$CFS/nullb
prog=${0##*/}

usage() {
	cat <<EOF
usage: $prog [options]             make a zoned null_blk device, print its path
       $prog --remove DEVICE|NAME  remove one made through configfs
Sizes are in MiB, as null_blk takes them.
  --size MB            device size (default 1024)
  --zone-size MB       zone size, a power of two (default 64)
  --zone-capacity MB   writable MiB per zone, <= zone size (default: zone size)
  --max-open N         open zone limit, 0 = none (default 0)
  --max-active N       active zone limit, 0 = none (default 0)
  --conv N             conventional zones at the start (default 0)
  --bs BYTES           logical block size, 512 or 4096 (default 4096)
  --name NAME          configfs directory name (default: nullbN, the first free N;
                       recent kernels name the disk after it: /dev/NAME)
Exit status: 0 done, 1 failed, 2 bad usage, 77 cannot be done on this machine.
EOF
}

die() {
	echo "$prog: $*" >&2
	exit 1
}

skip() {
	echo "$prog: $*" >&2
	exit 77
}

bad_usage() {
	echo "$prog: $*" >&2
	usage >&2
	exit 2
}

# $1 option name, $2 value: a decimal number.
num() {
	case $2 in
	'' | *[!0-9]*) bad_usage "$1 takes a number, not '$2'" ;;
	esac
}

# Is kernel option $1 known to be off? (Unknown counts as on.)
kconfig_off() {
	local cfg

	cfg=/boot/config-$(uname -r)
	if [ -r /proc/config.gz ]; then
		! zcat /proc/config.gz | grep -Eq "^$1=(y|m)"
	elif [ -r "$cfg" ]; then
		! grep -Eq "^$1=(y|m)" "$cfg"
	else
		return 1
	fi
}

# Make /sys/kernel/config/nullb appear: null_blk loaded, configfs mounted.
need_configfs() {
	local k missing=()

	k="this kernel ($(uname -r))"
	[ "$(id -u)" = 0 ] || skip "must run as root to make a null_blk device"
	kconfig_off CONFIG_BLK_DEV_NULL_BLK && missing+=("null_blk (CONFIG_BLK_DEV_NULL_BLK)")
	kconfig_off CONFIG_BLK_DEV_ZONED && missing+=("zoned block devices (CONFIG_BLK_DEV_ZONED)")
	kconfig_off CONFIG_CONFIGFS_FS && missing+=("configfs (CONFIG_CONFIGFS_FS)")
	if [ ${#missing[@]} -gt 0 ]; then
		local IFS=,
		skip "$k cannot make a zoned null_blk device, it lacks:${missing[*]/#/ }"
	fi
	[ -d "$NULLB" ] && return
	if [ ! -d /sys/module/null_blk ]; then
		modprobe null_blk nr_devices=0 2>/dev/null ||
			skip "$k has no null_blk module (modprobe null_blk failed)"
	fi
	if [ ! -d "$NULLB" ] && ! grep -q " $CFS configfs " /proc/mounts; then
		modprobe configfs 2>/dev/null
		[ -d $CFS ] || skip "$k has no configfs ($CFS is missing)"
		mount -t configfs configfs $CFS 2>/dev/null ||
			skip "cannot mount configfs on $CFS"
	fi
	[ -d "$NULLB" ] ||
		skip "null_blk is loaded but $NULLB is missing: this null_blk cannot be configured through configfs"
}

# $1 attribute, $2 value
set_attr() {
	if ! echo "$2" >"$dir/$1" 2>/dev/null; then
		rmdir "$dir" 2>/dev/null
		die "null_blk refused $1=$2 (see dmesg)"
	fi
}

# The disk of configfs directory $1: recent kernels (6.1 does) name it after
# the directory, older ones nullb<index>.
disk_of() {
	if [ -e "/sys/block/${1##*/}" ]; then
		echo "${1##*/}"
	else
		echo "nullb$(cat "$1/index")"
	fi
}

remove() {
	local base=${1#/dev/} d found=

	need_configfs
	case $base in
	'' | */* | .*) ;;
	*)
		for d in "$NULLB"/*/; do
			d=${d%/}
			[ -r "$d/power" ] || continue
			if [ "${d##*/}" = "$base" ] ||
				{ [ "$(cat "$d/power")" = 1 ] && [ "$(disk_of "$d")" = "$base" ]; }; then
				found=$d
				break
			fi
		done
		;;
	esac
	[ -n "$found" ] ||
		die "$1 was not made through $NULLB (devices made by 'modprobe null_blk nr_devices=N' go with 'rmmod null_blk')"
	if [ "$(cat "$found/power")" = 1 ]; then
		echo 0 >"$found/power" 2>/dev/null ||
			die "cannot power off $found (is the device in use?)"
	fi
	rmdir "$found" || die "cannot remove $found"
}

size=1024 zone_size=64 zone_cap=0 max_open=0 max_active=0 conv=0 bs=4096 name=
while [ $# -gt 0 ]; do
	case $1 in
	--remove)
		[ $# = 2 ] || bad_usage "--remove takes one device or name"
		remove "$2"
		exit 0
		;;
	--size | --zone-size | --zone-capacity | --max-open | --max-active | --conv | --bs | --name)
		[ $# -ge 2 ] || bad_usage "$1 needs a value"
		case $1 in
		--size) size=$2 ;;
		--zone-size) zone_size=$2 ;;
		--zone-capacity) zone_cap=$2 ;;
		--max-open) max_open=$2 ;;
		--max-active) max_active=$2 ;;
		--conv) conv=$2 ;;
		--bs) bs=$2 ;;
		--name) name=$2 ;;
		esac
		[ "$1" = --name ] || num "$1" "$2"
		shift
		;;
	-h | --help)
		usage
		exit 0
		;;
	*) bad_usage "unknown argument '$1'" ;;
	esac
	shift
done

[ "$size" -gt 0 ] || bad_usage "--size must not be 0"
if [ "$zone_size" = 0 ] || [ $((zone_size & (zone_size - 1))) != 0 ]; then
	bad_usage "--zone-size $zone_size is not a power of two"
fi
[ "$zone_cap" -le "$zone_size" ] ||
	bad_usage "--zone-capacity $zone_cap is larger than the zone size $zone_size"
[ "$bs" = 512 ] || [ "$bs" = 4096 ] || bad_usage "--bs must be 512 or 4096"
[ "$max_active" = 0 ] || [ "$max_open" -le "$max_active" ] ||
	bad_usage "--max-open $max_open is larger than --max-active $max_active"
case $name in
*/* | .*) bad_usage "--name '$name' is not a plain name" ;;
esac

need_configfs

# Named nullbN, so that the disk is /dev/nullbN whichever way the kernel
# names it (after the directory, or nullb<index>, see disk_of()).
if [ -z "$name" ]; then
	i=0
	while [ -e "$NULLB/nullb$i" ] || [ -e "/sys/block/nullb$i" ] ||
		[ -e "/dev/nullb$i" ]; do
		i=$((i + 1))
	done
	name=nullb$i
fi
dir=$NULLB/$name
[ -e "$dir" ] && die "$dir already exists: pick another --name, or remove it first"
mkdir "$dir" || die "cannot create $dir"

set_attr size "$size"
set_attr blocksize "$bs"
set_attr memory_backed 1
set_attr zoned 1
set_attr zone_size "$zone_size"
set_attr zone_capacity "$zone_cap"
set_attr zone_nr_conv "$conv"
set_attr zone_max_open "$max_open"
set_attr zone_max_active "$max_active"
if ! echo 1 >"$dir/power" 2>/dev/null; then
	rmdir "$dir" 2>/dev/null
	if dmesg 2>/dev/null | tail -n 5 | grep -q 'CONFIG_BLK_DEV_ZONED'; then
		skip "this kernel has no zoned block device support (CONFIG_BLK_DEV_ZONED)"
	fi
	die "null_blk refused a zoned device of ${size} MiB, ${zone_size} MiB zones (capacity $zone_cap), $conv conventional, max open $max_open, max active $max_active, block size $bs (see dmesg)"
fi

dev=/dev/$(disk_of "$dir")
blk=/sys/block/${dev#/dev/}
for _ in $(seq 50); do
	[ -b "$dev" ] && break
	sleep 0.1
done
if [ ! -b "$dev" ]; then
	echo 0 >"$dir/power"
	rmdir "$dir"
	die "$dev did not appear (is devtmpfs or udev running?)"
fi
if [ "$(cat "$blk/queue/zoned" 2>/dev/null)" != host-managed ]; then
	echo 0 >"$dir/power"
	rmdir "$dir"
	skip "null_blk made $dev, but not as a zoned device: this kernel lacks zoned block device support"
fi
echo "$dev"
