#!/bin/bash
# tests/train/example.sh: examples/train_ckpt.py as a user runs it: it
# mounts the device itself, trains and checkpoints every step with
# rotation; kill -9 of the Python process mid-run; run again: it must
# resume from the newest complete checkpoint on the device and end with
# exactly the weights of an uninterrupted run.
#
# Run by meson (ZONEFUSE set).
# shellcheck source-path=SCRIPTDIR source=../e2e/lib.sh
. "$(dirname "$0")/../e2e/lib.sh"

PY=/usr/bin/python3
EXAMPLE=$(cd "$(dirname "$0")/../../examples" && pwd -P)/train_ckpt.py
# The run must still be going when the loop below sees step KILL_AFTER's
# checkpoint: with 12 steps of 0.08 s that left 0.6 s, which the polling
# (a sed and a tail every 50 ms) missed beside stress-ng (a fresh-clone
# run, 2026-12-04). 40 steps leave about 3 s.
STEPS=40
# Checkpoints of ~3 MiB (the example's default is ~13): quick, still chunks.
ARGS=(--steps "$STEPS" --hidden 512)
KILL_AFTER=5 # kill once this step's checkpoint is reported: mostly mid-save

e2e_begin "examples/train_ckpt.py: checkpoints every step, kill -9, resume from the last complete one"
[ -x "$PY" ] || e2e_skip "$PY missing (Debian package python3)"
"$PY" -c 'import torch' 2>/dev/null || e2e_skip "torch missing for $PY (Debian package python3-torch)"

IMG=$E2E_WORK/example.img
MNT=$E2E_WORK/mnt
e2e_image "$IMG" --size 512M --zone-size 8M --max-open 14 --max-active 14
# The example mounts the device itself; the cleanup must know the mount.
e2e_track "$IMG" "$MNT"
export ZONEFUSE

# The last value of "KEY N" in a log.
last_num()
{
	sed -n "s/.*$2 \([0-9][0-9]*\).*/\1/p" "$1" | tail -n 1
}

# The digest on the line of a log matching a pattern.
digest_of()
{
	grep -E "$2" "$1" | tail -n 1 | sed -n 's/.*digest \([0-9a-f]*\).*/\1/p'
}

e2e_log "an uninterrupted run: the reference"
"$PY" "$EXAMPLE" --mount "$IMG" "${ARGS[@]}" "$MNT/ref" >"$E2E_WORK/ref.log" 2>&1 ||
	e2e_die "the reference run failed: $(tail -n 5 "$E2E_WORK/ref.log")"
mountpoint -q "$MNT" || e2e_die "train_ckpt.py --mount did not mount $IMG on $MNT"
REF=$(digest_of "$E2E_WORK/ref.log" '^done')
[ -n "$REF" ] || e2e_die "no final digest in the reference run: $(tail -n 3 "$E2E_WORK/ref.log")"

e2e_log "a run killed with SIGKILL after step $KILL_AFTER's checkpoint"
# exec: $! is the Python process itself, not a shell around it.
(exec "$PY" "$EXAMPLE" "${ARGS[@]}" "$MNT/run" >"$E2E_WORK/run1.log" 2>&1) &
PID=$!
for ((i = 0; i < 600; i++)); do
	n=$(last_num "$E2E_WORK/run1.log" 'checkpoint step')
	[ -n "$n" ] && [ "$n" -ge $KILL_AFTER ] && break
	kill -0 $PID 2>/dev/null || break
	sleep 0.05
done
kill -9 $PID 2>/dev/null || e2e_die "the run ended before it could be killed: $(tail -n 3 "$E2E_WORK/run1.log")"
wait $PID 2>/dev/null
PRINTED=$(last_num "$E2E_WORK/run1.log" 'checkpoint step')
# The newest checkpoint the device holds: the one the next run must take.
ONDISK=$(find "$MNT/run" -maxdepth 1 -name 'ckpt-*.pt' -printf '%f\n' | sort | tail -n 1 |
	sed -n 's/ckpt-0*\([0-9][0-9]*\)\.pt/\1/p')
e2e_log "killed: last checkpoint reported $PRINTED, newest on the device $ONDISK"
e2e_check "a checkpoint whose save was reported is on the device" \
	test "${ONDISK:-0}" -ge "$PRINTED"
e2e_check "no checkpoint beyond the step being saved when killed" \
	test "${ONDISK:-0}" -le $((PRINTED + 1))

e2e_log "the same command again: resume"
"$PY" "$EXAMPLE" "${ARGS[@]}" "$MNT/run" >"$E2E_WORK/run2.log" 2>&1 ||
	e2e_die "the resumed run failed: $(tail -n 5 "$E2E_WORK/run2.log")"
RESUMED=$(last_num "$E2E_WORK/run2.log" 'resumed from step')
e2e_check "resumed from the newest complete checkpoint ($ONDISK), not $RESUMED" \
	test "$RESUMED" = "$ONDISK"
if [ "$RESUMED" = "$PRINTED" ]; then
	e2e_check "the resumed weights are those saved at step $PRINTED" \
		test "$(digest_of "$E2E_WORK/run2.log" '^resumed')" = \
		"$(digest_of "$E2E_WORK/run1.log" "^checkpoint step $PRINTED ")"
fi
e2e_check "the resumed run ends with the reference weights" \
	test "$(digest_of "$E2E_WORK/run2.log" '^done')" = "$REF"
KEPT=$(find "$MNT/run" -maxdepth 1 -printf '%f\n' | grep -v '^run$' | sort | tr '\n' ' ')
e2e_check "the last 3 checkpoints are kept, nothing else: $KEPT" \
	test "$KEPT" = "$(printf 'ckpt-%06d.pt ' $((STEPS - 2)) $((STEPS - 1)) "$STEPS")"
sed 's/^/  run1: /' "$E2E_WORK/run1.log" | tail -n 3
sed 's/^/  run2: /' "$E2E_WORK/run2.log" | head -n 3

e2e_umount "$IMG" "$MNT"
e2e_fsck "$IMG"
e2e_end
