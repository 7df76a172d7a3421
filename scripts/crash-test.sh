#!/usr/bin/env bash
# scripts/crash-test.sh: the full crash-consistency run (issue 7,
# docs/crash-consistency.md).
#
# 1. crash_ace --full: every generated workload on the library over a
#    recorded emulator image, every crash point of every recording, every
#    state of a point (a seeded sample past 64), each checked: fsck, mount,
#    the oracle, fsck after recovery. The oracle's own test runs first.
#    Then the long workloads kept as files (tests/crash/workloads/*.wl, on
#    the 'full' setup), every crash point.
# 2. check_fault: device errors under a mounted file system.
# 3. kill-record.sh (as root, with /dev/fuse): a recording daemon killed
#    with SIGKILL at random moments while it writes, reclaims and rolls
#    its journal, KILL_ROUNDS rounds each, and the crash states of each
#    recording.
# Then one summary: workloads, crash states checked, violations, the kill
# rounds, and how long it all took.
#
# Usage: scripts/crash-test.sh [-j JOBS] [--seed N] [--no-kill]
# Environment: CRASH_BUILD (build directory, default build/, configured if
# missing), KILL_ROUNDS (default 6), TMPDIR (default /dev/shm), and
# CRASH_LOG (the full output, default $TMPDIR/crash-test.log).
# Exit status: 0 if nothing new failed, 1 otherwise.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P) || exit 1
cd "$root" || exit 1

jobs=2
seed=1
kill=1
while [ $# -gt 0 ]; do
	case $1 in
	-j) jobs=$2; shift ;;
	-j*) jobs=${1#-j} ;;
	--seed) seed=$2; shift ;;
	--no-kill) kill=0 ;;
	-h | --help)
		sed -n '2,/^set -uo/p' "$0" | sed '$d;s/^# \{0,1\}//'
		exit 0 ;;
	*) echo "crash-test.sh: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done

if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ]; then
	export TMPDIR=/dev/shm
fi
build=${CRASH_BUILD:-build}
log=${CRASH_LOG:-${TMPDIR:-/tmp}/crash-test.log}
t0=$SECONDS
say() { printf 'crash-test: [%4ds] %s\n' "$((SECONDS - t0))" "$*"; }

if [ ! -f "$build/build.ninja" ]; then
	meson setup "$build" >/dev/null || exit 1
fi
ninja -C "$build" src/zonefuse tests/crash/crash_ace tests/crash/check_fault >/dev/null || {
	echo "crash-test.sh: the build failed (ninja -C $build)" >&2
	exit 1
}
ace=$build/tests/crash/crash_ace
: >"$log"
say "full output in $log"

# ---- 1. the exhaustive library run --------------------------------------------
say "crash_ace --full -j $jobs --seed $seed"
t1=$SECONDS
"$ace" --full --selftest -j "$jobs" --seed "$seed" >>"$log" 2>&1
ace_rc=$?
ace_secs=$((SECONDS - t1))
summary=$(grep -E '^crash_ace: [0-9]+ workloads,' "$log" | tail -1)
selftest=$(grep -E '^crash_ace: selftest:' "$log" | tail -1)
say "${selftest#crash_ace: }"
say "${summary#crash_ace: }"
workloads=$(sed -n 's/^crash_ace: \([0-9]*\) workloads,.*/\1/p' <<<"$summary")
states=$(sed -n 's/.* \([0-9]*\) crash states checked.*/\1/p' <<<"$summary")
viol=$(sed -n 's/.* \([0-9]*\) violations (in.*/\1/p' <<<"$summary")
herr=$(sed -n 's/.* \([0-9]*\) harness errors.*/\1/p' <<<"$summary")
# Each violating workload, once.
grep -E '^(VIOLATION|HARNESS ERROR|WORKLOAD ERROR)' "$log" | awk '{print "  " $0}' |
	cut -c1-160 | sort -u | head -20

# The long workloads kept as files: every crash point of each.
wl_summary=""
wl_rc=0
for wl in tests/crash/workloads/*.wl; do
	say "crash_ace --setup full --workload-file $wl -j $jobs"
	"$ace" --setup full --workload-file "$wl" -j "$jobs" >>"$log" 2>&1
	rc=$?
	line=$(grep -E '^crash_ace: [0-9]+ workloads,' "$log" | tail -1)
	wl_states=$(sed -n 's/.* \([0-9]*\) crash states checked.*/\1/p' <<<"$line")
	if [ "$rc" = 0 ]; then
		wl_summary+="$(basename "$wl" .wl) ${wl_states:-?} states passed; "
	else
		wl_rc=1
		wl_summary+="$(basename "$wl" .wl) FAILED; "
		say "${line#crash_ace: }"
	fi
done

# ---- 2. fault injection ------------------------------------------------------------
say "check_fault"
"$build/tests/crash/check_fault" >>"$log" 2>&1
fault_rc=$?
fault_line=$(grep -E '^[0-9]+%: Checks' "$log" | tail -1)
say "fault injection: $fault_line"
grep -E '^\.\./tests/crash/check_fault.c:[0-9]+:F' "$log" | sed 's/^[^:]*:[0-9]*:F:[^:]*:/  /' | cut -c1-200

# ---- 3. kill tests --------------------------------------------------------------------
kill_summary="not run (--no-kill)"
kill_rc=0
if [ "$kill" = 1 ]; then
	if [ "$(id -u)" != 0 ] || [ ! -c /dev/fuse ]; then
		kill_summary="skipped: needs root and /dev/fuse"
	else
		kill_summary=""
		for m in files meta gc; do
			say "kill-record.sh, $m, ${KILL_ROUNDS:-6} rounds"
			ZONEFUSE=$build/src/zonefuse CRASH_ACE=$ace KILL_MODES=$m \
				KILL_ROUNDS=${KILL_ROUNDS:-6} KILL_POINTS=${KILL_POINTS:-24} \
				tests/crash/kill-record.sh >>"$log" 2>&1
			rc=$?
			states_m=$(grep -E '^crash_ace replay: [0-9]+ crash points' "$log" |
				awk '{s += $6} END {print s + 0}')
			if [ "$rc" = 0 ]; then
				kill_summary+="$m passed; "
			else
				kill_rc=1
				kill_summary+="$m FAILED; "
				grep -E '^kill-record: FAIL' "$log" | tail -3 | sed 's/^/  /'
			fi
		done
		kill_summary+="$states_m crash states of daemon recordings checked"
	fi
fi
say "kill tests: $kill_summary"

# ---- summary ------------------------------------------------------------------------------
echo
echo "crash-test summary (seed $seed, $jobs jobs, $((SECONDS - t0)) s in all):"
printf '  library workloads: %s, crash states checked: %s, in %d s\n' \
	"${workloads:-?}" "${states:-?}" "$ace_secs"
printf '  violations: %s, harness errors: %s\n' "${viol:-?}" "${herr:-?}"
wl_summary=${wl_summary%; }
printf '  workload files: %s\n' "${wl_summary:-none}"
printf '  fault injection: %s\n' "${fault_line:-?}"
printf '  kill tests: %s\n' "$kill_summary"
[ "$ace_rc" = 0 ] && [ "$wl_rc" = 0 ] && [ "$fault_rc" = 0 ] && [ "$kill_rc" = 0 ]
