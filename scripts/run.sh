#!/usr/bin/env bash
# scripts/run.sh: build zonefuse and bring up a zoned device to use it on.
#
# Installs what is missing (Debian 12, as root), builds build/, creates an
# emulated zoned device image (or reuses the one there), prints its zone
# summary, and -- once the file system exists -- formats and mounts it.
# Running it again reuses the image and never formats one that holds data.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$root"
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

usage()
{
	cat <<EOF
usage: scripts/run.sh [options] [IMAGE]

Build zonefuse, create the emulated zoned device IMAGE if it does not exist
(a sparse file shaped like a small ZNS drive), format it if it is blank,
and mount the file system on it at the mount point.

  IMAGE                   default \$ZONEFUSE_IMAGE or /var/tmp/zonefuse.img
  --size SIZE             device size (default 8G)
  --zone-size SIZE        zone size (default 64M)
  --zone-capacity SIZE    writable bytes per zone (default: the zone size)
  --max-open N            open zone limit (default 14)
  --max-active N          active zone limit (default 14)
                          (a limit >= the number of sequential zones means none)
  --mountpoint DIR        where to mount (default /mnt/zonefuse)
  --no-mount              stop after creating the image (and formatting it)
  -h, --help              this help

The geometry options apply only when the image is created; an existing
image keeps its geometry (remove it to start again). Each option can also
be set in the environment: ZONEFUSE_SIZE, ZONEFUSE_ZONE_SIZE,
ZONEFUSE_ZONE_CAPACITY, ZONEFUSE_MAX_OPEN, ZONEFUSE_MAX_ACTIVE,
ZONEFUSE_MNT; options win over the environment.
EOF
}

image=${ZONEFUSE_IMAGE:-/var/tmp/zonefuse.img}
size=${ZONEFUSE_SIZE:-8G}
zone_size=${ZONEFUSE_ZONE_SIZE:-64M}
zone_cap=${ZONEFUSE_ZONE_CAPACITY:-}
max_open=${ZONEFUSE_MAX_OPEN:-14}
max_active=${ZONEFUSE_MAX_ACTIVE:-14}
mnt=${ZONEFUSE_MNT:-/mnt/zonefuse}
do_mount=1
geometry_given=0
created=0

need_arg()
{
	[ $# -ge 2 ] || { usage >&2; zf_die "$1 needs a value"; }
}

while [ $# -gt 0 ]; do
	case $1 in
	--size) need_arg "$@"; size=$2; geometry_given=1; shift 2 ;;
	--zone-size) need_arg "$@"; zone_size=$2; geometry_given=1; shift 2 ;;
	--zone-capacity) need_arg "$@"; zone_cap=$2; geometry_given=1; shift 2 ;;
	--max-open) need_arg "$@"; max_open=$2; geometry_given=1; shift 2 ;;
	--max-active) need_arg "$@"; max_active=$2; geometry_given=1; shift 2 ;;
	--mountpoint) need_arg "$@"; mnt=$2; shift 2 ;;
	--no-mount) do_mount=0; shift ;;
	-h | --help) usage; exit 0 ;;
	-*) usage >&2; zf_die "unknown option $1" ;;
	*) image=$1; shift ;;
	esac
done

zf_install_pkgs "${ZF_BUILD_PKGS[@]}" || zf_die "cannot install the packages zonefuse needs"
zf_build build "${ZF_BUILD_OPTS[@]}" || zf_die "the build failed (see above)"
zf=$root/build/src/zonefuse

# ---- the device ------------------------------------------------------------

if [ -e "$image" ]; then
	# `zones` checks the header and every zone entry: a damaged or
	# foreign file stops here instead of being overwritten.
	"$zf" zones "$image" >/dev/null ||
		zf_die "$image exists but is not a usable emulator image; move it away or pass another IMAGE"
	zf_log "reusing the emulated zoned device $image"
	if [ "$geometry_given" = 1 ]; then
		zf_warn "$image exists: its geometry is kept and the geometry options are ignored (remove it to create a new one)"
	fi
else
	mkdir -p "$(dirname "$image")"
	args=(emu create "$image" --size "$size" --zone-size "$zone_size"
		--max-open "$max_open" --max-active "$max_active")
	if [ -n "$zone_cap" ]; then
		args+=(--zone-capacity "$zone_cap")
	fi
	zf_log "zonefuse ${args[*]}"
	"$zf" "${args[@]}"
	created=1
	if ! "$zf" zones "$image" >/dev/null; then
		rm -f "$image"
		zf_die "zonefuse created $image but cannot open it (see above); it was removed"
	fi
fi

# One line per kind of zone, from the JSON report.
zone_summary()
{
	"$zf" zones --json "$image" | zf_python -c '
import json, sys

r = json.load(sys.stdin)
zones = r["zones"]
seq = [z for z in zones if z["type"] == "seq"]
conds = {}
for z in seq:
    conds[z["cond"]] = conds.get(z["cond"], 0) + 1
written = sum(min(z["wp"], z["start"] + z["capacity"]) - z["start"]
              for z in seq)
cap = sum(z["capacity"] for z in seq)
resets = sum(z["resets"] or 0 for z in zones)
gib = 1 << 30
lim = lambda n: str(n) if n else "none"
print("  %s: %d zones of %d MiB, block size %d, max open %s, max active %s"
      % (r["device"], r["nr_zones"], r["zone_size"] >> 20, r["block_size"],
         lim(r["max_open"]), lim(r["max_active"])))
print("  %d conventional, %d sequential: %s" % (
    len(zones) - len(seq), len(seq),
    ", ".join("%d %s" % (n, c) for c, n in sorted(conds.items()))))
print("  %.2f GiB written of %.2f GiB sequential capacity, %d zone resets"
      % (written / gib, cap / gib, resets))
print("NONEMPTY=%d" % sum(1 for z in seq if z["cond"] != "empty"))
print("NR_CONV=%d" % (len(zones) - len(seq)))
'
}

summary=$(zone_summary)
zf_log "zone summary (as last flushed):"
grep -v '^[A-Z_]*=' <<<"$summary"
nonempty=$(sed -n 's/^NONEMPTY=//p' <<<"$summary")
nr_conv=$(sed -n 's/^NR_CONV=//p' <<<"$summary")

# ---- the file system ---------------------------------------------------------

has_cmd()
{
	"$zf" "$1" --help >/dev/null 2>&1
}

if ! has_cmd mkfs || ! has_cmd mount; then
	cat <<EOF

The file system is not built yet (this zonefuse has no mkfs and mount
commands), so nothing was formatted or mounted.
The emulated zoned device is ready at $image. Look at it with:
  $zf zones $image
  $zf zones --json $image
When mkfs and mount exist, run scripts/run.sh again: it will format this
image and mount it at $mnt.
EOF
	exit 0
fi

if [ "$do_mount" = 1 ] && mountpoint -q "$mnt"; then
	zf_log "$mnt is already a mount point:"
	findmnt "$mnt" || true
	echo "unmount it first to mount $image there: fusermount3 -u $mnt"
	exit 0
fi
# The emulator holds an exclusive flock on an image opened for writing.
if ! flock --nonblock --shared "$image" true; then
	zf_die "$image is in use by another process (mounted elsewhere?): not formatting or mounting it"
fi

# Format only an image that certainly holds nothing: one created just now,
# or one whose zones are all sequential and empty. An image with data is
# taken to hold a file system, and one with conventional zones cannot be
# told apart from a formatted one by its zone report.
if [ "$created" = 1 ] || { [ "$nonempty" -eq 0 ] && [ "$nr_conv" -eq 0 ]; }; then
	zf_log "zonefuse mkfs $image"
	"$zf" mkfs "$image"
elif [ "$nonempty" -gt 0 ]; then
	zf_log "$image already holds data ($nonempty zones not empty): not formatting it (remove it to start again)"
else
	zf_warn "$image has conventional zones, so whether it is formatted cannot be told here: not formatting it (if it is not, run: $zf mkfs $image)"
fi

if [ "$do_mount" = 0 ]; then
	echo "not mounting (--no-mount). Mount it with: $zf mount $image $mnt"
	exit 0
fi
[ -c /dev/fuse ] || modprobe fuse 2>/dev/null || true
[ -c /dev/fuse ] || zf_die "/dev/fuse does not exist: load the fuse module (modprobe fuse) or, in a container, pass the device in"
zf_enable_fuse_uring
mkdir -p "$mnt" || zf_die "cannot create the mount point $mnt; choose another with --mountpoint DIR"
zf_log "zonefuse mount $image $mnt"
"$zf" mount "$image" "$mnt"
mountpoint -q "$mnt" || zf_die "zonefuse mount returned but $mnt is not mounted"
findmnt "$mnt" || true
cat <<EOF

zonefuse is mounted at $mnt, on $image. Use it like any directory; see
the zones fill with: $zf zones $image
Unmount with: fusermount3 -u $mnt
EOF
