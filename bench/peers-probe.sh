#!/bin/bash
# bench/peers-probe.sh: can the QEMU guest format and mount each system of
# bench/zoned-peers.sh on its zoned null_blk? Run it in the guest:
#
#   scripts/zoned-vm.sh --nullb "zoned=1 gb=4 bs=4096 zone_size=64 \
#       zone_capacity=64 zone_nr_conv=2 zone_max_open=14 zone_max_active=14 \
#       memory_backed=1" -- bench/peers-probe.sh
#
# The guest's stage 2 runs chrooted in the host's root, so modprobe finds
# Debian's btrfs and f2fs modules in the host's /lib/modules: zoned-vm.sh
# needs no module of its own for them. F2FS needs 2 conventional zones
# (zone_nr_conv=2) for its metadata on one zoned device, and, with 64 MiB
# sections, about 4 GiB of device: mkfs.f2fs keeps (2 * (100 / overprovision
# + 1) + 6) sections in reserve, and refuses a 2 GiB device.
set -uo pipefail

dev=${1:-${ZONEFUSE_NULLB:-}}
Z=${ZONEFUSE:-build/src/zonefuse}
[ -n "$dev" ] || { echo "peers-probe: no device (run it in zoned-vm.sh)"; exit 77; }
mnt=$(mktemp -d)
bad=0
echo "peers-probe: $(uname -r), $dev: $(cat "/sys/block/${dev#/dev/}/queue/nr_zones") zones"
for fs in btrfs f2fs; do
	modprobe "$fs" || { echo "  $fs: modprobe failed"; bad=1; }
done
for fs in btrfs f2fs zonefuse; do
	blkzone reset "$dev"
	case $fs in
	btrfs) mkfs.btrfs -f "$dev" >/dev/null && mount -t btrfs "$dev" "$mnt" ;;
	f2fs) mkfs.f2fs -f -m "$dev" >/dev/null && mount -t f2fs "$dev" "$mnt" ;;
	zonefuse) "$Z" mkfs --force "$dev" >/dev/null && "$Z" mount "$dev" "$mnt" ;;
	esac || { echo "  $fs: mkfs or mount FAILED"; bad=1; continue; }
	if head -c 1M /dev/urandom >"$mnt/f" && sync -f "$mnt/f"; then
		echo "  $fs: mounted, $(df -B1M --output=size,avail "$mnt" | tail -n 1 | awk '{print $1 " MiB, " $2 " MiB available"}')"
	else
		echo "  $fs: write FAILED"
		bad=1
	fi
	umount "$mnt"
done
rmdir "$mnt"
exit $bad
