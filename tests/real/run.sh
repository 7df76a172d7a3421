#!/bin/bash
# run.sh - the real-device suite, run inside the QEMU guest by
# scripts/zoned-vm.sh (see scripts/test.sh): the device-layer conformance
# tests and the end-to-end mount test on every zoned device the guest has
# ($ZONEFUSE_NULLB, $ZONEFUSE_ZNS), or on the devices named as arguments;
# the mixed space workload (random overwrites at 90% full, every byte
# checked) on a null_blk device with an active limit; the stress workload
# on each device with both an open and an active limit; the udev rule on
# null_blk; then the page-cache tests of e2e-ops on the guest's kernel.
# ZONEFUSE_REAL_ONCE=1 adds what one guest is enough for: the udev rule
# and asynchronous O_DIRECT writes beside readers.
set -uo pipefail

B=${ZONEFUSE_BUILD:-build}
devs=("$@")
[ ${#devs[@]} -gt 0 ] || devs=(${ZONEFUSE_NULLB:+"$ZONEFUSE_NULLB"} ${ZONEFUSE_ZNS:+"$ZONEFUSE_ZNS"})
if [ ${#devs[@]} -eq 0 ]; then
	echo "run.sh: no zoned device (set ZONEFUSE_NULLB/ZONEFUSE_ZNS or name one)"
	exit 77
fi
failed=0

# check WHAT LOG COMMAND...: run COMMAND, its output in LOG; say whether
# WHAT passed (with what `note LOG` prints, if given as NOTE) or failed
# (with the end of LOG).
check()
{
	local what=$1 log=$2
	shift 2
	if "$@" >"$log" 2>&1; then
		echo "  $what: passed${NOTE:+ ($("$NOTE" "$log"))}"
	else
		echo "  $what: FAILED"
		tail -n 30 "$log"
		failed=1
	fi
}
# Notes, called through NOTE (shellcheck cannot see that).
# shellcheck disable=SC2317
skips() { echo "$(grep -c '^SKIP' "$1") skips"; }
# shellcheck disable=SC2317
last_wa() { grep -o 'WA [0-9.]*' "$1" | tail -n 1; }
# shellcheck disable=SC2317
stress_note()
{
	echo "$(sed -n 's/.* round [0-9]*: \([0-9]*\) steps.*(df: \([0-9.]*\) MiB free).*/\1 steps, \2 MiB free/p' "$1" | tail -n 1), $(grep -o 'write amplification [0-9.]*' "$1" | sed 's/write amplification/WA/' | tail -n 1)"
}

for d in "${devs[@]}"; do
	echo "== $d: $(cat "/sys/block/$(basename "$d")/queue/zoned") $(cat "/sys/block/$(basename "$d")/queue/logical_block_size")-byte blocks, max open $(cat "/sys/block/$(basename "$d")/queue/max_open_zones"), max active $(cat "/sys/block/$(basename "$d")/queue/max_active_zones")"
	NOTE=skips check "device layer conformance" /tmp/zdev.log \
		env ZONEFUSE_TEST_ZBD="$d" "$B/tests/check_zdev" --real
	check "mount end to end" /tmp/mount.log \
		env ZONEFUSE="$B/src/zonefuse" bash tests/real/mount.sh "$d"
done
# The udev rule (by-uuid/by-label links, lsblk -f, its watch) under the
# host's systemd-udevd, on the null_blk device: in one guest of the three
# scripts/test.sh boots (ZONEFUSE_REAL_ONCE=1; it takes about 40 s).
if [ -n "${ZONEFUSE_NULLB:-}" ] && [ "${ZONEFUSE_REAL_ONCE:-0}" = 1 ]; then
	check "udev rule on $ZONEFUSE_NULLB" /tmp/udev.log \
		env ZONEFUSE="$B/src/zonefuse" bash tests/real/udev.sh "$ZONEFUSE_NULLB"
fi
# Reclaim and placement near full under the device's own zone rules: on a
# null_blk with an active limit (the tightest of the geometries), where
# private heads must share zones; about 40 s for 1 GiB under TCG.
nullb_active=0
[ -n "${ZONEFUSE_NULLB:-}" ] &&
	nullb_active=$(cat "/sys/block/$(basename "$ZONEFUSE_NULLB")/queue/max_active_zones")
if [ "$nullb_active" -gt 0 ]; then
	NOTE=last_wa check "mixed space workload at 90% full on $ZONEFUSE_NULLB" /tmp/mixed.log \
		env ZONEFUSE="$B/src/zonefuse" E2E_TIMEOUT=600 python3 tests/space/mixed.py \
		--device "$ZONEFUSE_NULLB"
fi
# Many writers, renames and journal rolls on a device with both an open
# and an active limit: it closes zones itself and, at its active limit,
# refuses to reopen one, which once turned the file system read-only
# (a969931). tests/e2e/stress.py for 30 s on each such device, near full
# (its ballast file).
for d in "${devs[@]}"; do
	q=/sys/block/$(basename "$d")/queue
	if [ "$(cat "$q/max_open_zones")" -eq 0 ] || [ "$(cat "$q/max_active_zones")" -eq 0 ]; then
		continue
	fi
	NOTE=stress_note check "stress (threads changing files and directories) on $d" /tmp/stress.log \
		env ZONEFUSE="$B/src/zonefuse" E2E_STRESS_SECONDS=30 python3 tests/e2e/stress.py \
		--device "$d"
done
# The FUSE edge on this guest's kernel (Debian's 6.1): its page-cache rules
# (6.1 drops no cached pages for an uncached write, as kernels from 6.6 on
# do, so only here can the test catch a rule that is missing) and the
# readahead the mount raises around the INIT handshake, and its caching of
# names that are not there, of listings and of symlinks.
check "page cache, uncached writers, readahead and the kernel's caches on $(uname -r)" \
	/tmp/ops.log env ZONEFUSE="$B/src/zonefuse" python3 tests/e2e/ops.py uncached_writer \
	mount_options negative_lookup readdir_cache symlink_cache
# Asynchronous O_DIRECT writes beside buffered readers (issue 23, item 6):
# 6.1 under TCG is where it failed (1 round in 4); in one guest
# (ZONEFUSE_REAL_ONCE, scripts/test.sh), 8 rounds of about 8 s.
if [ "${ZONEFUSE_REAL_ONCE:-0}" = 1 ]; then
	check "asynchronous O_DIRECT writes beside buffered readers on $(uname -r)" \
		/tmp/dio.log env ZONEFUSE="$B/src/zonefuse" E2E_DIO_ROUNDS=8 \
		python3 tests/e2e/ops.py async_direct_write
fi
exit $failed
