#!/usr/bin/env bash
# scripts/damage-test.sh: the long damage run (issue 22,
# docs/crash-consistency.md): tests/damage/damage.py, ROUNDS rounds of every
# (target, kind) for each of SEEDS seeds. Each round damages one spot of a
# freshly populated image (other log and data blocks each round, and each
# seed makes its own file system, with its own random chain generation)
# and checks the mount, a read-only mount, fsck and fsck --repair against
# each other. The default suite runs one round per case with seed 1.
#
# With --vm the same runs in a QEMU guest (scripts/zoned-vm.sh, Debian's
# kernel under TCG: 5-15 times slower) on a real zoned block device: a
# null_blk device of the emulator image's geometry (128 MiB, 4 MiB zones,
# no limits), made through configfs so that its badblocks give the media
# errors (damage.py --device). --nullblk does that part where a zoned
# null_blk can be made (the guest).
#
# Usage: scripts/damage-test.sh [--rounds N] [--seeds "S1 S2 ..."] [--vm] [TARGET ...]
# Environment: DAMAGE_BUILD (build directory, default build/, configured if
# missing), TMPDIR (default /dev/shm), DAMAGE_LOG (the full output, default
# $TMPDIR/damage-test.log).
# Exit status: 0 if every round passed, 1 otherwise. Needs root and
# /dev/fuse.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P) || exit 1
cd "$root" || exit 1

rounds=4
seeds=(1 2 3 4 5)
targets=()
vm=0
nullblk=0
args=("$@")
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) rounds=$2; shift ;;
	--seeds) read -r -a seeds <<<"$2"; shift ;;
	--vm) vm=1 ;;
	--nullblk) nullblk=1 ;;
	-h | --help)
		sed -n '2,/^set -uo/p' "$0" | sed '$d;s/^# \{0,1\}//'
		exit 0 ;;
	-*) echo "damage-test.sh: unknown argument $1" >&2; exit 2 ;;
	*) targets+=("$1") ;;
	esac
	shift
done

if [ "$vm" = 1 ]; then
	rest=()
	for a in "${args[@]}"; do
		[ "$a" = --vm ] || rest+=("$a")
	done
	# The guest's own build directory: the host's is used as is (same
	# userland over 9p), so build it here first.
	ninja -C "${DAMAGE_BUILD:-build}" src/zonefuse >/dev/null || exit 1
	exec scripts/zoned-vm.sh --nullb none --timeout $((3600 * ${#seeds[@]})) -- \
		env DAMAGE_BUILD="${DAMAGE_BUILD:-build}" bash scripts/damage-test.sh --nullblk "${rest[@]}"
fi
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ]; then
	export TMPDIR=/dev/shm
fi
build=${DAMAGE_BUILD:-build}
log=${DAMAGE_LOG:-${TMPDIR:-/tmp}/damage-test.log}

t0=$SECONDS
say() { printf 'damage-test: [%4ds] %s\n' "$((SECONDS - t0))" "$*"; }

if [ "$(id -u)" != 0 ] || [ ! -c /dev/fuse ]; then
	echo "damage-test.sh: needs root and /dev/fuse (real mounts)" >&2
	exit 1
fi
if [ ! -f "$build/build.ninja" ]; then
	meson setup "$build" >/dev/null || exit 1
fi
ninja -C "$build" src/zonefuse >/dev/null || {
	echo "damage-test.sh: the build failed (ninja -C $build)" >&2
	exit 1
}
device=()
if [ "$nullblk" = 1 ]; then
	dev=$(scripts/nullblk.sh --size 128 --zone-size 4 --name zfdamage) || {
		echo "damage-test.sh: cannot make a zoned null_blk device (scripts/nullblk.sh)" >&2
		exit 1
	}
	trap 'scripts/nullblk.sh --remove zfdamage >/dev/null' EXIT
	device=(--device "$dev" --configfs zfdamage)
fi
: >"$log"
say "full output in $log${device[*]:+; on $dev, Linux $(uname -r)}"
rc=0
total=0
failed=0
for s in "${seeds[@]}"; do
	say "seed $s, $rounds rounds of each case"
	json=$TMPDIR/damage-seed-$s.json
	# A guest runs 5-15 times slower than this machine.
	ZONEFUSE=$build/src/zonefuse E2E_TIMEOUT=$(((600 + 60 * rounds) * (nullblk ? 15 : 1))) \
		/usr/bin/python3 tests/damage/damage.py --rounds "$rounds" --seed "$s" \
		--json "$json" "${device[@]}" "${targets[@]}" >>"$log" 2>&1 || rc=1
	if [ -f "$json" ]; then
		read -r n f < <(/usr/bin/python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["summary"]; print(s["rounds"], s["failed"])' "$json")
		total=$((total + n))
		failed=$((failed + f))
		say "seed $s: $n rounds, $f failed"
	else
		say "seed $s: no result (see $log)"
	fi
done
grep -E 'PROBLEMS|FAIL' "$log" | sort | uniq -c | sort -rn | head -20
# A guest's log goes with it: its rounds that failed, whole, on stdout.
if [ "$nullblk" = 1 ]; then
	grep -B4 -E 'PROBLEMS|FAIL' "$log"
fi
# The outcome of each case, over every seed and round.
/usr/bin/python3 - "$TMPDIR" "${seeds[@]}" <<'PY'
import collections, json, os, sys
d, seeds = sys.argv[1], sys.argv[2:]
out = collections.defaultdict(collections.Counter)
for s in seeds:
    p = os.path.join(d, f"damage-seed-{s}.json")
    if not os.path.exists(p):
        continue
    for r in json.load(open(p))["rounds"]:
        key = f"{r['target']:12} {r['kind']:7}"
        out[key][f"mount {r['mount']}, fsck {r['fsck']}, repair {r['repair']}"] += 1
for k in sorted(out):
    print("  " + k + "  " + "; ".join(f"{n}x {v}" for v, n in out[k].most_common()))
PY
say "damage: $total rounds, $failed failed, $((SECONDS - t0)) s"
exit $rc
