#!/usr/bin/env bash
# bench/space.sh: the space figures of zonefuse (docs/space.md), measured.
#
# Runs the workloads of tests/space on real FUSE mounts over emulated
# devices: checkpoint rotation (three ways), the mixed workload with
# random overwrites at 90% full, the fill to ENOSPC, writers at the zone
# limits (with their fsync latencies), the write-once fill and wear
# leveling under rotation. Prints a table of
# what they measured (host and device bytes, write amplification, bytes
# copied by reclaim, resets per zone, where ENOSPC came against the
# capacity, seconds) and writes it as JSON to bench/results/space.json.
# These are figures to read, not assertions: a workload whose test fails
# still gives its figures, and its failure is listed.
#
# Usage: bench/space.sh [WORKLOAD...]   (default: all; see WORKLOADS below)
# Environment: ZONEFUSE (default build/src/zonefuse), TMPDIR (default
# /dev/shm when it exists: images there cost no disk). Needs root and
# /dev/fuse, as the tests do.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
py=/usr/bin/python3
tests=$root/tests/space
results=$root/bench/results
export ZONEFUSE=${ZONEFUSE:-$root/build/src/zonefuse}
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ]; then
	export TMPDIR=/dev/shm
fi
export E2E_TIMEOUT=${E2E_TIMEOUT:-300}

# name: the test script and its arguments
declare -A WORKLOADS=(
	[rotation-hf]="rotation.py hf"
	[rotation-flat]="rotation.py flat"
	[rotation-cap]="rotation.py cap"
	[mixed]="mixed.py"
	[fill]="fill.py"
	[writers]="writers.py"
	[writeonce]="writeonce.py"
	[wear]="wear.py"
)
ORDER=(rotation-hf rotation-flat rotation-cap mixed fill writers writeonce wear)

die()
{
	printf 'space.sh: %s\n' "$*" >&2
	exit 1
}

[ -x "$py" ] || die "$py is missing (Debian package python3)"
[ -x "$ZONEFUSE" ] || die "no zonefuse binary at $ZONEFUSE: build it (ninja -C build) or set ZONEFUSE"
[ "$(id -u)" -eq 0 ] || die "needs root (FUSE mounts)"

picked=("$@")
[ ${#picked[@]} -gt 0 ] || picked=("${ORDER[@]}")
for w in "${picked[@]}"; do
	[ -n "${WORKLOADS[$w]:-}" ] || die "unknown workload $w (known: ${ORDER[*]})"
done

mkdir -p "$results"
log=$results/space.log
: >"$log"
status=$results/space.status
: >"$status"

for w in "${picked[@]}"; do
	read -r -a cmd <<<"${WORKLOADS[$w]}"
	printf 'space.sh: %s ...\n' "$w"
	start=$SECONDS
	"$py" "$tests/${cmd[0]}" "${cmd[@]:1}" >>"$log" 2>&1
	rc=$?
	printf '%s %s %s\n' "$w" "$rc" "$((SECONDS - start))" >>"$status"
	[ "$rc" -eq 0 ] || printf 'space.sh: %s: its test failed (exit %s); the figures it gave are kept, see %s\n' "$w" "$rc" "$log"
done

commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
"$py" - "$log" "$status" "$results/space.json" "$commit" "$ZONEFUSE" <<'EOF'
import json
import re
import sys
import time

log, status, out, commit, zonefuse = sys.argv[1:6]
figures = {}
for line in open(log, errors="replace"):
    m = re.match(r"^\S+: figures (\S+): (\{.*\})$", line.strip())
    if m:
        figures[m.group(1)] = json.loads(m.group(2))
runs = {}
for line in open(status):
    name, rc, secs = line.split()
    runs[name] = {"exit": int(rc), "seconds": int(secs)}
doc = {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "commit": commit,
       "zonefuse": zonefuse, "runs": runs, "figures": figures}
with open(out, "w") as f:
    json.dump(doc, f, indent=1, sort_keys=True)
    f.write("\n")


def mib(n):
    return "-" if n is None else f"{n / 2**20:.1f}"


def num(v, fmt="{:.3f}"):
    return "-" if v is None else fmt.format(v)


head = ("workload", "host MiB", "device MiB", "WA", "GC MiB",
        "resets min/mean/max", "ENOSPC at / free before / capacity (MiB)", "s")
rows = []
for key, f in figures.items():
    enospc = "-"
    if "written_at_enospc" in f:
        enospc = (f"{mib(f['written_at_enospc'])} / {mib(f['free_before'])} / "
                  f"{mib(f['capacity_bytes'])}")
    elif "enospc" in f:
        enospc = f"{f['enospc']} ENOSPC below {int(f['fill'] * 100)}% full"
    wa = f.get("wa")
    if wa is None and f.get("host_bytes"):
        wa = f["device_bytes"] / f["host_bytes"]
    rows.append((key, mib(f.get("host_bytes")), mib(f.get("device_bytes")),
                 num(wa, "{:.4f}"), mib(f.get("gc_bytes")),
                 f"{f.get('resets_min', '-')}/{f.get('resets_mean', '-')}/"
                 f"{f.get('resets_max', '-')}", enospc,
                 num(f.get("seconds"), "{:.1f}")))
widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
for r in [head] + rows:
    print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())
lat = [(k, f) for k, f in figures.items() if "fsync_p50_ms" in f]
if lat:
    print()
    print("writers: fsync latency ms (p50 / p99 / max), seconds for all")
    for k, f in lat:
        print(f"  {k}: {f['fsync_p50_ms']} / {f['fsync_p99_ms']} / "
              f"{f['fsync_max_ms']}, {f['seconds']} s")
failed = [n for n, r in runs.items() if r["exit"]]
if failed:
    print(f"tests that failed (figures above are still what they measured): "
          f"{' '.join(failed)}")
print(f"written: {out}")
EOF
