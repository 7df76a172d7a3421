#!/usr/bin/env bash
# tests/crash/kill-record.sh: kill -9 of a recorded daemon, then every
# crash state of its recording.
#
# Three workloads, each on its own emulator image: "files" (write, fsync,
# rename into place), "gc" (the device kept 88% full while files are
# deleted and written: reclaim copies and resets zones) and "meta" (4 KB
# xattrs and small files: the journal rolls to new snapshots). For each,
# several rounds: copy the image (the base), mount it with the daemon
# recording its device (ZONEFUSE_RECORD), check what earlier rounds made
# durable, run the writer, kill -9 the daemon at a random moment (for gc,
# once reclaim is busy), clean up the dead mount; then fsck of the image
# must be clean, and every crash state rebuilt from the round's recording
# and base must be (crash_ace replay). Last, a clean mount must show every
# file the writers fsynced, byte for byte.
#
# Environment: ZONEFUSE and CRASH_ACE (meson passes them); KILL_ROUNDS
# (rounds per workload, default 2); KILL_POINTS, KILL_STATES (crash points
# per round and states per point checked from each recording, default 16
# and 4); KILL_SEED (replays the same choices, not the same timing);
# KILL_MODES (default "files gc meta"); TMPDIR.
# Needs root and /dev/fuse: exits 77 (SKIP) without them.
set -uo pipefail

name=kill-record
log() { printf '%s: [%3ds] %s\n' "$name" "$SECONDS" "$*"; }
fails=0
fail() { printf '%s: FAIL: %s\n' "$name" "$*" >&2; fails=$((fails + 1)); }
die() { printf '%s: FATAL: %s\n' "$name" "$*" >&2; exit 1; }
skip() { printf '%s: SKIP: %s\n' "$name" "$*"; exit 77; }

ZONEFUSE=${ZONEFUSE:?set ZONEFUSE to the zonefuse binary}
CRASH_ACE=${CRASH_ACE:?set CRASH_ACE to the crash_ace binary}
rounds=${KILL_ROUNDS:-2}
points=${KILL_POINTS:-16}
states=${KILL_STATES:-4}
modes=${KILL_MODES:-files gc meta}
seed=${KILL_SEED:-$$}
RANDOM=$seed

log "kill -9 of a daemon recording its device, at random moments while it writes, reclaims and rolls its journal: fsck clean, every crash state of the recording clean, every fsynced file there byte for byte"
[ "$(id -u)" = 0 ] || skip "needs root for FUSE mounts"
[ -c /dev/fuse ] || skip "no /dev/fuse"
command -v fusermount3 >/dev/null || skip "no fusermount3 (Debian package fuse3)"
log "seed $seed (KILL_SEED=$seed replays the same choices, not the same timing)"

work=$(mktemp -d "${TMPDIR:-/tmp}/kill-record.XXXXXX") || die "mktemp"
mnt=$work/mnt
mkdir -p "$mnt"
daemon=
writer=

cleanup()
{
	if mountpoint -q "$mnt"; then
		umount -l "$mnt" 2>/dev/null || fusermount3 -u -z "$mnt" 2>/dev/null
	fi
	[ -n "$writer" ] && kill -9 "$writer" 2>/dev/null
	[ -n "$daemon" ] && kill -9 "$daemon" 2>/dev/null
	wait 2>/dev/null
	if [ "$fails" -eq 0 ] || [ -z "${KILL_KEEP:-}" ]; then
		rm -rf "$work"
	else
		log "kept $work for a look (KILL_KEEP)"
	fi
}
trap cleanup EXIT

# mount_daemon IMAGE [RECORDING]: the daemon in the foreground, in the
# background of this shell; returns once the mount is up, or 1 (said) if
# it does not come up.
mount_daemon()
{
	local i

	if [ -n "${2:-}" ]; then
		ZONEFUSE_RECORD=$2 "$ZONEFUSE" mount "$1" "$mnt" -f 2>>"$work/daemon.log" &
	else
		"$ZONEFUSE" mount "$1" "$mnt" -f 2>>"$work/daemon.log" &
	fi
	daemon=$!
	for ((i = 0; i < 200; i++)); do
		mountpoint -q "$mnt" && return 0
		kill -0 "$daemon" 2>/dev/null || break
		sleep 0.05
	done
	tail -3 "$work/daemon.log" >&2
	kill -9 "$daemon" 2>/dev/null
	wait "$daemon" 2>/dev/null
	daemon=
	fail "the daemon did not mount $1"
	return 1
}

umount_daemon()
{
	fusermount3 -u "$mnt" || fail "fusermount3 -u $mnt"
	wait "$daemon" || fail "the daemon exited with status $?"
	daemon=
}

# Kill the daemon, then let the writer stop on the dead mount (every call
# there fails, ENOTCONN) before the mount is detached: once detached, the
# writer's next files would go to the directory underneath, for ever, and
# into the manifest as fsynced.
kill_daemon()
{
	local i

	kill -9 "$daemon" || fail "kill -9 $daemon"
	wait "$daemon" 2>/dev/null
	daemon=
	if [ -n "$writer" ]; then
		for ((i = 0; i < 300; i++)); do
			kill -0 "$writer" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$writer" 2>/dev/null; then
			kill -9 "$writer"
			fail "the writer did not stop on the dead mount"
		fi
		wait "$writer" 2>/dev/null
		writer=
	fi
	umount -l "$mnt" 2>/dev/null || fusermount3 -u -z "$mnt" || fail "cannot clean up the dead mount"
	mountpoint -q "$mnt" && die "$mnt is still a mount point after the kill"
}

# The file system's counters, from the stats xattr of the root.
stats()
{
	getfattr -n user.zonefuse.stats --only-values "$mnt" 2>/dev/null |
		tr ',{}' '\n' | grep -E '"(gc_bytes_written|snapshot_seq|resets_total|used_bytes)"' | tr '\n' ' '
}

run_mode()
{
	local mode=$1 zones=$2 img=$work/$1.img man=$work/$1.manifest r wait_s

	log "$mode: a $zones MiB image of 1 MiB zones"
	"$ZONEFUSE" emu create "$img" --size "${zones}M" --zone-size 1M >/dev/null || die "emu create"
	"$ZONEFUSE" mkfs "$img" >/dev/null || die "mkfs"
	: >"$man"
	for ((r = 1; r <= rounds; r++)); do
		local base=$work/$mode.base$r rec=$work/$mode.rec$r phase=$work/$mode.phase

		cp --sparse=always "$img" "$base" || die "cp"
		rm -f "$phase"
		mount_daemon "$img" "$rec" || {
			fail "$mode round $r: the image of the last round does not mount: giving up on $mode"
			KILL_KEEP=1
			return
		}
		if [ "$r" -gt 1 ]; then
			"$CRASH_ACE" verify "$mnt" --manifest "$man" || fail "$mode round $r: after the remount, the files of earlier rounds are not all there"
		fi
		"$CRASH_ACE" writer "$mnt" --mode "$mode" --manifest "$man" \
			--seed "$((seed + r))" --phase "$phase" >"$work/writer.out" 2>&1 &
		writer=$!
		if [ "$mode" = gc ]; then
			# Kill while reclaim works: after the fill, well into the churn.
			for ((wait_s = 0; wait_s < 1200; wait_s++)); do
				[ -e "$phase" ] && break
				kill -0 "$writer" 2>/dev/null || break
				sleep 0.1
			done
			[ -e "$phase" ] || fail "gc round $r: the writer never filled the device"
			sleep "$((1 + RANDOM % 3)).$((RANDOM % 10))"
		else
			sleep "$((RANDOM % 3)).$((RANDOM % 10))"
			sleep 0.3
		fi
		log "$mode round $r: killing the daemon; $(stats)"
		kill_daemon
		cat "$work/writer.out"
		"$ZONEFUSE" fsck "$img" >"$work/fsck.out" 2>&1 || {
			cat "$work/fsck.out"
			fail "$mode round $r: fsck of the crashed image is not clean"
		}
		# Every crash state of this round's recording.
		if ! TMPDIR=$work "$CRASH_ACE" replay --log "$rec" --base "$base" \
			--points "$points" --max-all "$states" --sample "$states" \
			--seed "$((seed + r))"; then
			fail "$mode round $r: crash states of the recording are not all clean (kept: $rec, $base)"
			KILL_KEEP=1
		else
			rm -f "$rec" "$base"
		fi
	done
	mount_daemon "$img" || {
		fail "$mode: the image does not mount after the last kill"
		KILL_KEEP=1
		return
	}
	"$CRASH_ACE" verify "$mnt" --manifest "$man" || fail "$mode: after the last kill, the fsynced files are not all there"
	log "$mode: at the end: $(stats)"
	umount_daemon
	"$ZONEFUSE" fsck "$img" >"$work/fsck.out" 2>&1 || {
		cat "$work/fsck.out"
		fail "$mode: fsck after the clean unmount"
	}
	rm -f "$img"
}

for m in $modes; do
	case $m in
	files) run_mode files 128 ;;
	gc) run_mode gc 96 ;;
	meta) run_mode meta 48 ;;
	*) die "unknown mode $m" ;;
	esac
done
if [ "$fails" -gt 0 ]; then
	log "$fails failures"
	exit 1
fi
log "passed"
