#!/bin/bash
# bench/perm-cost.sh: what the kernel's permission checks cost.
#
# A mount other users may enter (-o allow_other) gets default_permissions
# (docs/design.md, "Permissions"): the kernel then asks for the parent
# directory's attributes before each create and unlink. This measures it
# as bench/run.sh's metadata workload does (bench/metabench: create, stat,
# unlink of FILES files of 4 KiB, 200 per directory, on an emulator image
# in RAM), on a private mount and on an allow_other one, in PAIRS pairs
# run alternately so that a busy machine slows both alike, and prints the
# median rate of each and the median of the pairs' ratios. It also counts
# the requests each mount took (the daemon's debug log, one small extra
# run) so the round trips added are exact whatever the timing noise.
#
# Usage: bench/perm-cost.sh [FILES [PAIRS]]   (as root; default 5000 7)
#   BUILD=DIR  a build with bench/metabench (default build-rel, release,
#              made here as bench/run.sh makes it)
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib.sh
. "$top/scripts/lib.sh"
files=${1:-5000}
pairs=${2:-7}
build=${BUILD:-$top/build-rel}

if [ "$(id -u)" != 0 ] || [ ! -c /dev/fuse ]; then
	echo "perm-cost.sh: needs root and /dev/fuse" >&2
	exit 1
fi
zf_build "$build" --buildtype=release -Dtests=false >&2 ||
	{ echo "perm-cost.sh: the build failed" >&2; exit 1; }
zf=$build/src/zonefuse
mb=$build/bench/metabench
work=$(mktemp -d /dev/shm/zf-permcost.XXXXXX)
mnt=$work/mnt
mkdir -p "$mnt"
cleanup()
{
	umount "$mnt" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

# mount_fresh OPTS: a new image mounted on $mnt with OPTS.
mount_fresh()
{
	umount "$mnt" 2>/dev/null || true
	rm -f "$work/img"
	"$zf" emu create "$work/img" --size 4G --zone-size 64M >/dev/null
	"$zf" mkfs "$work/img" >/dev/null
	"$zf" mount "$work/img" "$mnt" ${1:+-o "$1"}
	mkdir "$mnt/t"
}

rate() { sed -n 's/.*"ops_per_s": *\([0-9.]*\).*/\1/p'; }

declare -A r
for ((p = 1; p <= pairs; p++)); do
	for mode in private shared; do
		opts=""
		[ "$mode" = shared ] && opts=allow_other
		mount_fresh "$opts"
		for phase in create stat unlink; do
			r[$mode.$phase]+="$("$mb" "$phase" "$mnt/t" "$files" | rate) "
		done
	done
	echo "pair $p of $pairs done" >&2
done
umount "$mnt"

median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "metadata rates, $files files, $pairs pairs (median ops/s; ratio: median of shared/private per pair)"
printf '%-8s %12s %12s %8s\n' phase private allow_other ratio
for phase in create stat unlink; do
	read -r -a a <<<"${r[private.$phase]}"
	read -r -a b <<<"${r[shared.$phase]}"
	ratios=""
	for ((i = 0; i < ${#a[@]}; i++)); do
		ratios+="$(awk -v x="${b[$i]}" -v y="${a[$i]}" 'BEGIN {printf "%.3f", x / y}') "
	done
	printf '%-8s %12s %12s %8s\n' "$phase" \
		"$(echo "${r[private.$phase]}" | median)" \
		"$(echo "${r[shared.$phase]}" | median)" \
		"$(echo "$ratios" | median)"
done

# The round trips: 1000 creates, stats and unlinks with the daemon logging
# each request.
echo "requests for 1000 files (daemon debug log):"
for mode in private shared; do
	opts=debug
	[ "$mode" = shared ] && opts=debug,allow_other
	umount "$mnt" 2>/dev/null || true
	rm -f "$work/img"
	"$zf" emu create "$work/img" --size 1G --zone-size 64M >/dev/null
	"$zf" mkfs "$work/img" >/dev/null
	"$zf" mount "$work/img" "$mnt" -f -o "$opts" >"$work/$mode.log" 2>&1 &
	for _ in $(seq 100); do mountpoint -q "$mnt" && break; sleep 0.05; done
	mkdir "$mnt/t"
	line="  $mode:"
	for phase in create stat unlink; do
		n0=$(grep -c 'debug:' "$work/$mode.log" || true)
		g0=$(grep -c 'debug: getattr' "$work/$mode.log" || true)
		"$mb" "$phase" "$mnt/t" 1000 >/dev/null
		n1=$(grep -c 'debug:' "$work/$mode.log" || true)
		g1=$(grep -c 'debug: getattr' "$work/$mode.log" || true)
		line+=" $phase $((n1 - n0)) ($((g1 - g0)) getattr)"
	done
	echo "$line"
	umount "$mnt"
	wait
done
