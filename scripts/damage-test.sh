#!/usr/bin/env bash
# scripts/damage-test.sh: the long damage run (issue 22,
# docs/crash-consistency.md): tests/damage/damage.py, ROUNDS rounds of every
# (target, kind) for each of SEEDS seeds. Each round damages one spot of a
# freshly populated image (other log and data blocks each round, and each
# seed makes its own file system, with its own random chain generation)
# and checks the mount, a read-only mount, fsck and fsck --repair against
# each other. The default suite runs one round per case with seed 1.
#
# Usage: scripts/damage-test.sh [--rounds N] [--seeds "S1 S2 ..."] [TARGET ...]
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
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) rounds=$2; shift ;;
	--seeds) read -r -a seeds <<<"$2"; shift ;;
	-h | --help)
		sed -n '2,/^set -uo/p' "$0" | sed '$d;s/^# \{0,1\}//'
		exit 0 ;;
	-*) echo "damage-test.sh: unknown argument $1" >&2; exit 2 ;;
	*) targets+=("$1") ;;
	esac
	shift
done

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
: >"$log"
say "full output in $log"
rc=0
total=0
failed=0
for s in "${seeds[@]}"; do
	say "seed $s, $rounds rounds of each case"
	json=$TMPDIR/damage-seed-$s.json
	ZONEFUSE=$build/src/zonefuse E2E_TIMEOUT=$((600 + 60 * rounds)) \
		/usr/bin/python3 tests/damage/damage.py --rounds "$rounds" --seed "$s" \
		--json "$json" "${targets[@]}" >>"$log" 2>&1 || rc=1
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
