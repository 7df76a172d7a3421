#!/usr/bin/env bash
# bench/zoned-peers.sh: zonefuse against the kernel's zoned file systems,
# btrfs and F2FS, and against the device itself (fio zonemode=zbd), on one
# real zoned device in a QEMU guest (scripts/zoned-vm.sh), reformatted
# between systems (issue 26). bench/peers.py does the measuring in the
# guest and the report here; its header says what each workload does.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
top=$(dirname "$here")
# shellcheck source=scripts/lib.sh
. "$top/scripts/lib.sh"

# The devices. null_blk: 4 GiB in RAM, 64 MiB zones, 14 open and active,
# and the 2 conventional zones F2FS needs for its metadata on one zoned
# device (every system gets the same device; F2FS also needs the 4 GiB:
# its reserve is counted in sections: about 2 GiB of 64 MiB sections).
# The smoke uses the same device with small sizes (memory_backed: only
# what is written takes the guest's memory). Not smaller zones: on 8 MiB
# zones Debian 6.1's btrfs hangs (ordered extents that never complete)
# writing a 64 MiB file.
ZNS="logical_block_size=4096,physical_block_size=4096,zoned.zone_size=64M,zoned.zone_capacity=48M,zoned.max_open=14,zoned.max_active=14"
NULLB="zoned=1 gb=4 bs=4096 zone_size=64 zone_capacity=64 zone_nr_conv=2 zone_max_open=14 zone_max_active=14 memory_backed=1"

usage()
{
	cat <<EOF
usage: bench/zoned-peers.sh [--smoke] [--reps N] [--timeout S] [-h]

As root. Boots a QEMU guest (Debian's kernel, TCG) with a zoned null_blk
for each system, the limit (fio zonemode=zbd), btrfs, F2FS and zonefuse,
and runs the workloads of bench/peers.py on it REPS times (one guest per
system: a kernel file system that hangs in D state takes its guest down
with it, not the others' runs; each guest's memory allocated by the
host before it boots: zoned-vm.sh --prealloc); then prints
the table and writes bench/results/peers-TAG/ (samples.jsonl, meta.json,
device-costs.jsonl: a reset's and a write's cost on each guest's device,
results.json, results.md, results.png) and bench/results/peers-TAG.json
(results.json, to commit with a doc that quotes it).

  --smoke      one small run of each workload, every system in one guest,
               a few minutes (scripts/test.sh runs it); exits non-zero if
               any workload failed on any system
  --zns        on QEMU's emulated NVMe ZNS namespace instead (4 GiB, 64 MiB
               zones of 48 MiB capacity, 14 open and active; results in
               peers-zns). F2FS keeps its metadata on a second, regular
               namespace of the same controller (ZNS has no conventional
               zones) of PEERS_CONV_SIZE (default 128M: mkfs.f2fs needs
               more than one 64 MiB zone there)
  --reps N     runs of every workload on every system (default 3)
  --timeout S  limit for the guest (default 10800; smoke 1200)

Environment: PEERS_SYSTEMS=limit,btrfs,f2fs,zonefuse and
PEERS_WORKLOADS=rotation,concurrent,mixed,reads choose; PEERS_NULLB=PARAMS
replaces the null_blk parameters; PEERS_TAG=NAME names the results
(default nullb: bench/results/peers-nullb/); PEERS_ROUNDS, PEERS_SHARDS,
PEERS_SHARD_MB, PEERS_KEEP, PEERS_SPACE_WAIT, PEERS_FINAL_WAIT,
PEERS_WRITERS, PEERS_WRITER_MB, PEERS_MIXED_MB, PEERS_READ_MB,
PEERS_READ_SECS, PEERS_FILL_PCT, PEERS_FILL_MB override the sizes
(bench/peers.py, SIZES; PEERS_FILL_MB=N fills every system to
PEERS_FILL_PCT % of N MiB instead of its own df); PEERS_ZF_MKFS="OPTS"
adds options to zonefuse's mkfs (e.g. --metadata-copies 1: name the
results with PEERS_TAG); PEERS_SMP=N gives the guests N CPUs (default: the
host's, at most 4); BUILD=DIR the release build (default build-rel).
EOF
}

cmdline="$0 $*"
smoke=0 reps=3 tmo='' zns=0
while [ $# -gt 0 ]; do
	case $1 in
	--smoke) smoke=1 ;;
	--zns) zns=1 ;;
	--reps)
		reps=$2
		shift
		;;
	--timeout)
		tmo=$2
		shift
		;;
	-h | --help)
		usage
		exit 0
		;;
	*)
		usage >&2
		exit 16
		;;
	esac
	shift
done

[ "$(id -u)" = 0 ] || zf_die "zoned-peers.sh must run as root (it boots a guest that formats and mounts)"
cd "$top"
# The guest runs the host's own root file system: the peers' mkfs tools
# come from the host's packages.
zf_install_pkgs "${ZF_BUILD_PKGS[@]}" "${ZF_BENCH_PKGS[@]}" btrfs-progs f2fs-tools ||
	zf_die "cannot install the packages the suite needs"
for t in mkfs.btrfs mkfs.f2fs; do
	command -v "$t" >/dev/null || zf_die "$t is not installed: install btrfs-progs and f2fs-tools"
done

nullb=${PEERS_NULLB:-$NULLB}
systems=${PEERS_SYSTEMS:-limit,btrfs,f2fs,zonefuse}
dev=/dev/nullb0 devargs=(--nullb "$nullb") tagdev=nullb metadev=()
if [ "$zns" = 1 ]; then
	nullb=none dev=/dev/nvme0n1 tagdev=zns
	devargs=(--nullb none --nvme-zns --zns-size 4G --zns "$ZNS"
		--nvme-conv "${PEERS_CONV_SIZE:-128M}")
	metadev=(--meta-device /dev/nvme0n2)
fi
if [ "$smoke" = 1 ]; then
	tag=$tagdev-smoke reps=1 tmo=${tmo:-1200} mem=2048 smoke_arg=(--smoke)
	guests=("$systems")
else
	tag=${PEERS_TAG:-$tagdev} tmo=${tmo:-10800} mem='' smoke_arg=()
	IFS=, read -r -a guests <<<"$systems"
fi
build=${BUILD:-build-rel}
zf_build "$build" -Dbuildtype=release >/dev/null || zf_die "the release build in $build failed"

out=bench/results/peers-$tag
mkdir -p "$out"
rm -f "$out/samples.jsonl" "$out/meta.json" "$out/results."* "$out/hostload.txt" \
	"$out/device-costs.jsonl"
# The commit the daemon was built from: BUILD may be another checkout's.
src=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["directories"]["source"])' \
	"$build/meson-info/meson-info.json" 2>/dev/null || echo .)
commit=$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$src" diff --quiet HEAD 2>/dev/null || commit="$commit+changes"
zf_python - "$out/host.json" "$commit" "$cmdline" "$nullb" "${PEERS_ZF_MKFS:-}" <<'EOF'
import json, os, sys, time
json.dump({"date": time.strftime("%Y-%m-%d %H:%M %Z"), "commit": sys.argv[2],
           "command": sys.argv[3], "nullb": sys.argv[4],
           "zonefuse_mkfs_options": sys.argv[5],
           "host_kernel": os.uname().release, "host_cpus": os.cpu_count(),
           "host_load1_at_start": os.getloadavg()[0]},
          open(sys.argv[1], "w"), indent=1)
EOF

# The guest gets the sizes' overrides through env: zoned-vm.sh passes
# only the command line.
envs=(ZONEFUSE="$build/src/zonefuse")
while IFS='=' read -r k v; do
	case $k in
	PEERS_SYSTEMS | PEERS_WORKLOADS | PEERS_NULLB | PEERS_TAG | PEERS_CONV_SIZE | PEERS_SMP) ;;
	PEERS_*) envs+=("$k=$v") ;;
	esac
done < <(env)
sel=()
[ -n "${PEERS_WORKLOADS:-}" ] && sel+=(--workloads "$PEERS_WORKLOADS")

# Every guest's memory is the host's before it boots: else the first
# workload to take fresh guest memory pays the host's first touch of it
# (a first near-full phase with a p99 three times the later ones').
vm=(scripts/zoned-vm.sh --timeout "$tmo" --prealloc "${devargs[@]}")
[ -n "$mem" ] && vm+=(--mem "$mem")
[ -n "${PEERS_SMP:-}" ] && vm+=(--smp "$PEERS_SMP")
# The host's load while the guests run: another job on the host slows
# the emulation, and the report should say when it did.
(while :; do
	printf '%s %s\n' "$(date +%H:%M:%S)" "$(cut -d' ' -f1-3 /proc/loadavg)"
	sleep 30
done) >>"$out/hostload.txt" &
loadpid=$!
trap 'kill "$loadpid" 2>/dev/null' EXIT
rc=0
for g in "${guests[@]}"; do
	zf_log "guest for $g: null_blk $nullb; $reps run(s); results in $out"
	grc=0
	"${vm[@]}" -- env "${envs[@]}" python3 bench/peers.py run \
		--device "$dev" "${metadev[@]}" --out "$out" --tag "$tag" --reps "$reps" \
		--systems "$g" "${smoke_arg[@]}" "${sel[@]}" || grc=$?
	if [ "$grc" -ge 124 ]; then
		zf_warn "the guest for $g did not finish (exit $grc): the report covers what it measured"
	fi
	[ "$rc" -ne 0 ] || rc=$grc
done
if [ -s "$out/samples.jsonl" ]; then
	png=(--png)
	zf_python -c 'import matplotlib' 2>/dev/null || png=()
	zf_python bench/peers.py report "$out" "${png[@]}" || { [ "$rc" -ne 0 ] || rc=1; }
	[ "$smoke" = 1 ] || cp "$out/results.json" "bench/results/peers-$tag.json"
else
	zf_warn "no samples in $out/samples.jsonl"
	[ "$rc" -ne 0 ] || rc=1
fi
exit "$rc"
