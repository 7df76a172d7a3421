#!/usr/bin/env bash
# tests/e2e/kill.sh: kill -9 of the daemon loses nothing that was fsynced.
#
# Several rounds: mount, write files (fsync some, and only after fsync
# returns count them as durable; others not, plus churn: appends, renames,
# removals), kill -9 the daemon at a random moment, clean up the dead mount.
# Then fsck of the crashed image must be clean, the image must mount, and
# every file counted durable in any round so far must be there byte for
# byte. fsck again after the last round. Last, with -o commit=1, files left
# alone for 3 s (no fsync) must survive a kill too.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

e2e_begin "kill -9 of the daemon at random moments while writing: the image mounts again, fsck is clean, every fsynced file is there byte for byte"

rounds=${E2E_KILL_ROUNDS:-10}
seed=${E2E_SEED:-$$}
RANDOM=$seed
e2e_log "seed $seed (E2E_SEED=$seed replays the same choices, not the same timing)"
img=$E2E_WORK/img
mnt=$E2E_WORK/mnt
src=$E2E_WORK/src
durable=$E2E_WORK/durable
e2e_image "$img" --size 512M --zone-size 4M
: >"$durable"

# Source files of assorted sizes, written to the mount again and again.
mkdir -p "$src"
sizes=(0 1 100 4095 4096 4097 65536 100001 1048576 1048583 3000000 5242880 9000001)
for i in "${!sizes[@]}"; do
	head -c "${sizes[$i]}" /dev/urandom >"$src/s$i"
done
nsrc=${#sizes[@]}

# The writer: runs until the mount dies under it. A file is recorded in
# $durable only after its fsync (sync FILE) returned success.
writer()
{
	local r=$1 i=0 s name avail blocks

	mkdir -p "$mnt/r$r" || return
	while :; do
		# Rounds add up: past half of the device, stop adding files, so
		# that the commit=1 test at the end has room on any machine.
		read -r avail blocks < <(stat -f -c '%a %b' "$mnt" 2>/dev/null) || return
		[ $((avail * 2)) -lt "$blocks" ] && return
		s=$((RANDOM % nsrc))
		name=r$r/f$i
		cp "$src/s$s" "$mnt/$name" 2>/dev/null || return
		case $((i % 4)) in
		0 | 1)
			sync "$mnt/$name" 2>/dev/null || return
			printf '%s s%s\n' "$name" "$s" >>"$durable"
			;;
		2)
			# Not fsynced: may or may not survive; churn it.
			head -c $((RANDOM * 7)) /dev/urandom >>"$mnt/$name" 2>/dev/null || return
			mv "$mnt/$name" "$mnt/$name.moved" 2>/dev/null || return
			;;
		3)
			rm -f "$mnt/r$r/f$((i - 1)).moved" 2>/dev/null || return
			;;
		esac
		i=$((i + 1))
	done
}

check_durable()
{
	local name s bad=0 n=0

	while read -r name s; do
		n=$((n + 1))
		if [ ! -e "$mnt/$name" ]; then
			e2e_fail "$1: fsynced file $name is missing"
			bad=$((bad + 1))
		elif ! cmp -s "$src/$s" "$mnt/$name"; then
			e2e_fail "$1: fsynced file $name differs from its source ($(stat -c %s "$mnt/$name") bytes, source $(stat -c %s "$src/$s"))"
			bad=$((bad + 1))
		fi
		[ "$bad" -ge 10 ] && { e2e_fail "$1: more than 10 bad, not checking further"; break; }
	done <"$durable"
	e2e_log "$1: $n fsynced files checked, $bad bad"
}

for ((r = 1; r <= rounds; r++)); do
	e2e_mount "$img" "$mnt"
	pids=$(e2e_daemon_pids "$img")
	[ "$(wc -w <<<"$pids")" -eq 1 ] || e2e_die "round $r: expected one daemon for $img, found '$pids'"
	if [ "$r" -gt 1 ]; then
		check_durable "round $r, after the remount"
	fi
	writer "$r" &
	wpid=$!
	# A random moment: 0.3 to 3.2 s into the writing.
	sleep "$((RANDOM % 3)).$((RANDOM % 10))"
	sleep 0.3
	before=$(wc -l <"$durable")
	kill -9 "$pids" || e2e_fail "round $r: kill -9 $pids"
	wait "$wpid" 2>/dev/null
	e2e_wait_daemon_gone "$img" 10 || e2e_die "round $r: the killed daemon is still there"
	umount -l "$mnt" 2>/dev/null || fusermount3 -u -z "$mnt" || e2e_fail "round $r: cannot clean up the dead mount"
	mountpoint -q "$mnt" && e2e_die "round $r: $mnt is still a mount point after umount -l"
	e2e_log "round $r: killed the daemon with $before fsynced files in all"
	# The crashed image: fsck replays the journal and finds nothing wrong.
	e2e_fsck "$img"
done

e2e_mount "$img" "$mnt"
check_durable "after the last kill"
e2e_umount "$img" "$mnt"
e2e_fsck "$img"

# Without fsync, the periodic commit (-o commit=1) makes data durable too:
# files written, closed and left alone for 3 commit intervals survive.
e2e_mount "$img" "$mnt" -o commit=1
e2e_log "before the commit=1 kill: $(df -B1 --output=used,avail "$mnt" | tail -1) bytes used, available"
mkdir -p "$mnt/timed" || e2e_fail "mkdir timed"
for s in 0 3 6 8 10 11; do
	cp "$src/s$s" "$mnt/timed/s$s" || e2e_fail "cp to timed/s$s"
done
sleep 3
pids=$(e2e_daemon_pids "$img")
kill -9 "$pids" || e2e_fail "kill -9 $pids"
e2e_wait_daemon_gone "$img" 10 || e2e_die "the killed daemon is still there"
umount -l "$mnt" 2>/dev/null || fusermount3 -u -z "$mnt"
e2e_fsck "$img"
e2e_mount "$img" "$mnt"
for s in 0 3 6 8 10 11; do
	if [ ! -e "$mnt/timed/s$s" ]; then
		e2e_fail "commit=1: timed/s$s, written 3 s before the kill, is missing"
	elif ! cmp -s "$src/s$s" "$mnt/timed/s$s"; then
		e2e_fail "commit=1: timed/s$s, written 3 s before the kill, differs ($(stat -c %s "$mnt/timed/s$s") bytes, source $(stat -c %s "$src/s$s"))"
	fi
done
check_durable "after the commit=1 kill"
e2e_umount "$img" "$mnt"
e2e_fsck "$img"
e2e_end
