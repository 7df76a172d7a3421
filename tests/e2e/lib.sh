# shellcheck shell=bash
# tests/e2e/lib.sh: what the end-to-end shell tests share. Sourced, not run.
#
# A test sources this, calls e2e_begin "what it checks", then uses
# e2e_image/e2e_mount/e2e_umount. Every mount made here is undone on exit,
# however the test ends: lazy unmount, then the daemon is killed by its pid.
#
# Environment: ZONEFUSE, the zonefuse binary (meson passes it); TMPDIR.

E2E_NAME=$(basename "$0" .sh)
E2E_WORK=
E2E_MOUNTS=()
E2E_REMOVE=() # symlinks a test made outside $E2E_WORK, removed on exit
E2E_FAILS=0
E2E_WATCHDOG=
# Seconds after which the watchdog ends a hung test (below meson's timeout).
E2E_TIMEOUT=${E2E_TIMEOUT:-240}

e2e_log()
{
	printf '%s: [%3ds] %s\n' "$E2E_NAME" "$SECONDS" "$*"
}

e2e_skip()
{
	printf '%s: SKIP: %s\n' "$E2E_NAME" "$*"
	exit 77
}

# A failed check: say what, and count it; the test goes on (so one run
# shows every broken check) and fails at the end.
e2e_fail()
{
	printf '%s: FAIL: %s\n' "$E2E_NAME" "$*" >&2
	E2E_FAILS=$((E2E_FAILS + 1))
}

# A failure after which nothing else can be checked.
e2e_die()
{
	printf '%s: FATAL: %s\n' "$E2E_NAME" "$*" >&2
	exit 1
}

# e2e_check DESCRIPTION CMD...: run CMD; a non-zero exit is a failure.
e2e_check()
{
	local what=$1

	shift
	if ! "$@"; then
		e2e_fail "$what (command: $*)"
		return 1
	fi
	return 0
}

# The pids of zonefuse daemons whose command line names $1 (an absolute
# path inside this test's private work directory, so nothing else matches;
# "$E2E_WORK/" matches every daemon of this test).
e2e_daemon_pids()
{
	local f pid args state

	# grep reads every cmdline in one process: a loop of forks is slow.
	while read -r f; do
		pid=${f#/proc/}
		pid=${pid%/cmdline}
		[ "$pid" = "$$" ] && continue
		args=$(tr '\0' ' ' 2>/dev/null <"$f") || continue
		# argv[0] is the binary: zonefuse, or a path ending in it, or
		# mount(8)'s helper, which stays to be the daemon.
		case "${args%% *}" in
		zonefuse | */zonefuse | mount.zonefuse | */mount.zonefuse) ;;
		mount.fuse.zonefuse | */mount.fuse.zonefuse) ;;
		*) continue ;;
		esac
		case "$1" in
		*/) case "$args" in
			*" $1"*) ;;
			*) continue ;;
			esac ;;
		*) case "$args" in
			*" $1 "*) ;;
			*) continue ;;
			esac ;;
		esac
		read -r _ _ state _ 2>/dev/null <"/proc/$pid/stat" || continue
		# A zombie has finished: its reaper is not ours to wait for.
		[ "$state" = Z ] && continue
		printf '%s\n' "$pid"
	done < <(grep -alF -- "$1" /proc/[0-9]*/cmdline 2>/dev/null)
}

# Wait up to $2 seconds (default 60) for every daemon on image $1 to exit.
e2e_wait_daemon_gone()
{
	local img=$1 limit=${2:-60} i

	for ((i = 0; i < limit * 10; i++)); do
		[ -z "$(e2e_daemon_pids "$img")" ] && return 0
		sleep 0.1
	done
	return 1
}

# Kill every daemon of this test and lazily unmount its mounts: a hung
# daemon's callers then get ENOTCONN and the test can end. umount -l comes
# first: it also drops the mount's entry in libmount's utab, which a daemon
# killed with -9 could not (fusermount3 leaves it).
e2e_kill_all()
{
	local pid m

	for pid in $(e2e_daemon_pids "$E2E_WORK/"); do
		kill -9 "$pid" 2>/dev/null
	done
	while read -r _ m _; do
		case "$m" in
		"$E2E_WORK"/*) umount -l "$m" 2>/dev/null || fusermount3 -u -z "$m" 2>/dev/null ;;
		esac
	done </proc/self/mounts
}

# Where the daemons of this test are stuck: each thread's zonefuse frames
# (gdb, when there is one).
e2e_backtraces()
{
	local pid

	command -v gdb >/dev/null || return 0
	for pid in $(e2e_daemon_pids "$E2E_WORK/"); do
		printf '%s: the threads of daemon %s, zonefuse frames only:\n' "$E2E_NAME" "$pid" >&2
		timeout 60 gdb -p "$pid" -batch -ex 'thread apply all bt' 2>/dev/null |
			grep -E '^Thread |^#[0-9]+ .* in (zfs|jrnl|alloc|data|meta|gc|fs_ll|zdev|zemu|zbd)_[a-z_]+ ' |
			sed -E 's/^(#[0-9]+) +0x[0-9a-f]+ in /\1 /; s/ \(.*\) at / at /' | head -n 80 >&2
	done
}

# A test that hangs (a deadlocked daemon) is ended here, with a message,
# before meson's timeout kills the shell and its cleanup with it.
e2e_watchdog()
{
	local i

	for ((i = 0; i < E2E_TIMEOUT; i++)); do
		sleep 1
		kill -0 $$ 2>/dev/null || exit 0
	done
	printf '%s: FAIL: still running after %s s: a hung mount? killing its daemons; this is a failure\n' \
		"$E2E_NAME" "$E2E_TIMEOUT" >&2
	touch "$E2E_WORK/.timed-out"
	e2e_backtraces
	e2e_kill_all
}

e2e_cleanup()
{
	local rc=$? m img pid

	trap - EXIT
	[ -n "$E2E_WATCHDOG" ] && kill "$E2E_WATCHDOG" 2>/dev/null
	if [ -e "$E2E_WORK/.timed-out" ]; then
		printf '%s: FAIL: the watchdog ended a hung test after %s s\n' "$E2E_NAME" "$E2E_TIMEOUT" >&2
		[ "$rc" -eq 0 ] && rc=1
	fi
	for m in "${E2E_MOUNTS[@]}"; do
		img=${m%%|*}
		m=${m#*|}
		if mountpoint -q "$m" 2>/dev/null; then
			umount -l "$m" 2>/dev/null || fusermount3 -u -z "$m" 2>/dev/null
		fi
		for pid in $(e2e_daemon_pids "$img"); do
			kill -9 "$pid" 2>/dev/null
		done
	done
	[ -n "$E2E_WORK" ] && e2e_kill_all
	for m in "${E2E_REMOVE[@]}"; do
		[ -L "$m" ] && rm -f "$m"
	done
	if [ -n "$E2E_WORK" ] && [ -d "$E2E_WORK" ]; then
		# Never delete through a mount that could not be undone.
		if grep -qF " $E2E_WORK/" /proc/self/mounts; then
			printf '%s: a mount under %s is still there; not deleting it\n' \
				"$E2E_NAME" "$E2E_WORK" >&2
		else
			rm -rf "$E2E_WORK"
		fi
	fi
	exit "$rc"
}

# e2e_begin "WHAT THIS TEST CHECKS": say it, check what the test needs, make
# the private work directory $E2E_WORK and arm the cleanup.
e2e_begin()
{
	e2e_log "checks: $1"
	[ "$(id -u)" -eq 0 ] || e2e_skip "needs root (FUSE mounts with allow_other, umount)"
	[ -c /dev/fuse ] || e2e_skip "no /dev/fuse"
	command -v fusermount3 >/dev/null || e2e_skip "fusermount3 missing (Debian package fuse3)"
	[ -n "${ZONEFUSE:-}" ] || e2e_skip "ZONEFUSE (the zonefuse binary) is not set; run through meson test"
	[ -x "$ZONEFUSE" ] || e2e_skip "ZONEFUSE=$ZONEFUSE is not executable"
	E2E_WORK=$(mktemp -d "${TMPDIR:-/tmp}/zonefuse-$E2E_NAME.XXXXXX") ||
		e2e_die "cannot make a work directory in ${TMPDIR:-/tmp}"
	E2E_WORK=$(cd "$E2E_WORK" && pwd -P)
	trap e2e_cleanup EXIT
	trap 'exit 130' INT TERM
	e2e_watchdog &
	E2E_WATCHDOG=$!
}

# e2e_need CMD [PACKAGE]: skip when a tool is missing.
e2e_need()
{
	command -v "$1" >/dev/null || e2e_skip "$1 missing (Debian package ${2:-$1})"
}

# e2e_image IMG [emu create options]: a formatted emulated device.
# Default: 256 MiB in 4 MiB zones.
e2e_image()
{
	local img=$1

	shift
	[ $# -gt 0 ] || set -- --size 256M --zone-size 4M
	"$ZONEFUSE" emu create "$img" "$@" >/dev/null ||
		e2e_die "zonefuse emu create $img $* failed"
	"$ZONEFUSE" mkfs "$img" >/dev/null || e2e_die "zonefuse mkfs $img failed"
}

# Remember a mount so that the cleanup undoes it.
e2e_track()
{
	E2E_MOUNTS+=("$1|$2")
}

# e2e_mount IMG DIR [mount options...]: mount (the daemon goes to the
# background) and wait until the mount answers.
e2e_mount()
{
	local img=$1 dir=$2

	shift 2
	mkdir -p "$dir"
	e2e_track "$img" "$dir"
	"$ZONEFUSE" mount "$img" "$dir" "$@" || e2e_die "zonefuse mount $img $dir $* failed"
	mountpoint -q "$dir" || e2e_die "$dir is not a mount point after zonefuse mount"
	stat "$dir" >/dev/null || e2e_die "the mount on $dir does not answer"
}

# e2e_umount IMG DIR: unmount and wait for the daemon to finish writing
# (it flushes and closes the device after the kernel lets go). A umount
# refused as busy is tried again for up to 5 s, saying what held the mount
# (fuser), as e2elib.py's Mount.umount() does: a reference that goes by
# itself on a loaded machine must not fail the test, and must be named.
e2e_umount()
{
	local img=$1 dir=$2 tries=0 err

	until err=$(umount "$dir" 2>&1); do
		case $err in
		*busy*) ;;
		*) e2e_die "umount $dir failed: $err" ;;
		esac
		tries=$((tries + 1))
		[ "$tries" -le 50 ] || e2e_die "umount $dir failed: $err; held by: $(fuser -vm "$dir" 2>&1 | tr '\n' ' ')"
		echo "umount $dir: busy; held by: $(fuser -vm "$dir" 2>&1 | tr '\n' ' '); trying again" >&2
		sleep 0.1
	done
	e2e_wait_daemon_gone "$img" 60 ||
		e2e_die "the daemon of $img did not exit within 60 s of umount"
}

# e2e_fsck IMG: fsck must say clean (exit 0).
e2e_fsck()
{
	local out rc

	out=$("$ZONEFUSE" fsck "$1" 2>&1)
	rc=$?
	if [ "$rc" -ne 0 ]; then
		e2e_fail "fsck $1 exited $rc, not 0: $out"
		return 1
	fi
	e2e_log "fsck: $out"
}

# e2e_json_get JSON KEY: one top-level number of a flat JSON object.
e2e_json_get()
{
	/usr/bin/python3 -c 'import json, sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"
}

# Finish: pass only if no check failed.
e2e_end()
{
	[ -e "$E2E_WORK/.timed-out" ] && E2E_FAILS=$((E2E_FAILS + 1))
	if [ "$E2E_FAILS" -ne 0 ]; then
		e2e_log "$E2E_FAILS check(s) failed"
		exit 1
	fi
	e2e_log "all checks passed"
	exit 0
}
