#!/bin/bash
# mount.sh DEVICE - the file system end to end on one zoned device: mkfs,
# mount (a block device by LABEL=, remounted by UUID=), copy a tree and a file of several zones, rename, unmount, fsck,
# remount and compare, delete the large file and see its zones reset.
# Run by tests/real/run.sh inside the QEMU guest on null_blk and NVMe ZNS;
# it works as well on an emulator image or a real drive (it destroys what
# DEVICE holds).
set -euo pipefail

Z=${ZONEFUSE:-build/src/zonefuse}
PY=/usr/bin/python3
dev=${1:?usage: mount.sh DEVICE}
echo "mount.sh: mkfs, copy, rename, remount, delete -> zones reset, fsck on $dev"

work=$(mktemp -d)
mnt=$work/mnt
mkdir -p "$mnt" "$work/src"
cleanup()
{
	if mountpoint -q "$mnt"; then
		umount "$mnt" 2>/dev/null || umount -l "$mnt"
	fi
	rm -rf "$work"
}
trap cleanup EXIT

fail() { echo "mount.sh: FAILED on $dev: $*" >&2; exit 1; }

# The test data: a source tree, odd-sized files, and a file of ~2.5 zones.
cap=$("$Z" zones "$dev" --json | $PY -c 'import json,sys; z=json.load(sys.stdin)["zones"]; print(max(x["capacity"] for x in z if x["type"]=="seq"))')
cp -a src "$work/src/code"
for n in 1 511 4096 4097 65537 1000001; do
	head -c "$n" /dev/urandom >"$work/src/odd-$n"
done
head -c $((cap * 5 / 2 + 12345)) /dev/urandom >"$work/big"

# A block device is mounted by LABEL= and remounted by UUID=, which find it
# among the zoned block devices (libblkid does not know zonefuse); an
# image is found only by its path.
label=real-$$
uuid=$($PY -c 'import uuid; print(uuid.uuid4())')
spec1=$dev spec2=$dev
if [ -b "$dev" ]; then
	spec1=LABEL=$label spec2=UUID=$uuid
fi
# mount_spec SPEC: mount SPEC on $mnt; it must be $dev that is mounted.
mount_spec()
{
	"$Z" mount "$1" "$mnt" || fail "mount $1"
	[ "$(findmnt -n -o SOURCE --mountpoint "$mnt")" = "$(readlink -f "$dev")" ] ||
		fail "mount $1 mounted $(findmnt -n -o SOURCE --mountpoint "$mnt"), not $dev"
}

"$Z" mkfs --force -L "$label" -U "$uuid" "$dev" >/dev/null || fail "mkfs"
mount_spec "$spec1"
cp -a "$work/src" "$mnt/tree" || fail "cp -a"
cp "$work/big" "$mnt/big" || fail "cp big"
$PY -c 'import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd)' "$mnt/big"
diff -r "$work/src" "$mnt/tree" || fail "tree differs after copy"
cmp "$work/big" "$mnt/big" || fail "big differs after copy"
mv "$mnt/tree" "$mnt/tree2" || fail "rename"
mkdir "$mnt/sub"
mv "$mnt/tree2/odd-4097" "$mnt/sub/moved" || fail "rename across directories"
mapfile -t zones < <(getfattr --absolute-names --only-values -n user.zonefuse.extents "$mnt/big" | awk '{print $2}' | sort -un)
[ ${#zones[@]} -ge 3 ] || fail "big is not in 3 zones or more: ${zones[*]}"

umount "$mnt"
"$Z" fsck "$dev" || fail "fsck after unmount (exit $?)"
mount_spec "$spec2"
mv "$mnt/sub/moved" "$mnt/tree2/odd-4097"
diff -r "$work/src" "$mnt/tree2" || fail "tree differs after remount"
cmp "$work/big" "$mnt/big" || fail "big differs after remount"

rm "$mnt/big"
$PY -c 'import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd)' "$mnt"
# The resets run in the background once the unlink is durable.
for _ in $(seq 100); do
	left=$(getfattr --absolute-names --only-values -n user.zonefuse.stats "$mnt" |
		$PY -c 'import json,sys; print(json.load(sys.stdin)["reclaimable_bytes"])')
	[ "$left" = 0 ] && break
	sleep 0.1
done
umount "$mnt"
"$Z" fsck "$dev" || fail "fsck at the end (exit $?)"
"$Z" zones "$dev" --json | $PY -c '
import json, sys
want = [int(x) for x in sys.argv[1:]]
z = json.load(sys.stdin)["zones"]
# Conventional zones (not_wp) have no write pointer to reset.
bad = [i for i in want if z[i]["cond"] not in ("empty", "not_wp")]
if bad:
    sys.exit("zones of the deleted file not reset: %s" % [(i, z[i]["cond"]) for i in bad])
' "${zones[@]}" || fail "zones not reset"
echo "mount.sh: $dev passed (the large file was in zones ${zones[*]})"
