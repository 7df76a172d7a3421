#!/usr/bin/env bash
# bench/run.sh: zonefuse side by side with the limit of its backing store,
# the kernel's own file system and a passthrough FUSE file system, in one
# run on one machine. docs/performance.md says what each figure means.
#
# For each backing store (RAM: /dev/shm; disk: /var/tmp) it measures
#   limit     the store itself: O_DIRECT fio/dd on a file there; torch.save
#             to /dev/null (the serializer alone)
#   emu       the emulator's raw sequential path: bench/zraw writes and
#             reads an image on the store through zonefuse's device layer
#   kernel    a plain directory on the store (tmpfs, the disk's ext4)
#   peer      bench/passthrough (FUSE, zonefuse's FUSE settings) over a
#             directory on the store
#   zonefuse  zonefuse mounted on an emulator image on the store
# and writes every sample to bench/results/samples.jsonl, then
# bench/report.py prints the table and writes results.json and
# results.png there.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
top=$(dirname "$here")
# shellcheck source=scripts/lib.sh
. "$top/scripts/lib.sh"

usage()
{
	cat <<EOF
usage: bench/run.sh [--quick] [-h]

Runs every workload on every system, REPS times, and reports the median,
min and max of each figure and its ratios. As root (it mounts, and drops
the page cache). The default sizes are the issue's: 41 minutes on a
quiet 2-core VM, half of them (SEQ_MB=2048 TORCH_MB=1024 RAND_MB=1024
RAND_SECS=2) 23 minutes. --quick (or QUICK=1) is one run of small
sizes, to try the suite in about five minutes (noisy).
Settings come from the environment:

  QUICK=1            as --quick
  REPS=N             runs of each workload (default 3; QUICK: 1)
  SEQ_MB=N           sequential file size in MiB (default 4096; QUICK: 512)
  RAND_MB=N          random-read region in MiB (default 2048; QUICK: 256)
  RAND_SECS=N        seconds per random-read run (default 3; QUICK: 1)
  TORCH_MB=N         torch state dict size in MiB (default 2048; QUICK: 256)
  META_FILES=N       files of the metadata workload (default 20000; QUICK: 2000)
  MOUNT_FILES=N      files of the mount-time workload (default 100000;
                     QUICK: 10000)
  STORES="ram disk"  which backing stores
  SYSTEMS="limit emu kernel peer zonefuse zonefuse-dev"
                     (zonefuse: its default transport, io_uring where the
                     kernel has it on; zonefuse-dev: -o transport=dev)
  ONLY="write read rand torch meta delete mount"  workload groups to run
  RAM_DIR=/dev/shm   DISK_DIR=/var/tmp   where the stores are
  ZONE_MB=64         zone size of the emulator images
  ZF_OPTS="-o ..."   extra options for zonefuse mount
  PEER_OPTS="-o ..." extra options for bench/passthrough (e.g. -o splice)
  FUSE_RA_KB=N       both FUSE mounts' readahead (default 4096, zonefuse's
                     own; zonefuse gets -o readahead_kb, the peer's bdi is set
                     after its mount, else the kernel keeps it at 128 KiB)
  BUILD=DIR          build directory (default build-rel, release, made here)
  RESULTS=DIR        where results go (default bench/results)
  STEP_TIMEOUT=N     seconds before one step counts as hung (default 900)
EOF
}

for arg in "$@"; do
	case $arg in
	-h | --help)
		usage
		exit 0
		;;
	--quick) QUICK=1 ;;
	*)
		usage >&2
		exit 16
		;;
	esac
done

quick=${QUICK:-0}
if [ "$quick" = 1 ]; then
	d_reps=1 d_seq=512 d_rand=256 d_rsecs=1 d_torch=256 d_meta=2000
	d_mount=10000
else
	d_reps=3 d_seq=4096 d_rand=2048 d_rsecs=3 d_torch=2048 d_meta=20000
	d_mount=100000
fi
reps=${REPS:-$d_reps}
seq_mb=${SEQ_MB:-$d_seq}
rand_mb=${RAND_MB:-$d_rand}
rand_secs=${RAND_SECS:-$d_rsecs}
torch_mb=${TORCH_MB:-$d_torch}
meta_files=${META_FILES:-$d_meta}
mount_files=${MOUNT_FILES:-$d_mount}
stores=${STORES:-ram disk}
systems=${SYSTEMS:-limit emu kernel peer zonefuse zonefuse-dev}
groups=${ONLY:-write read rand torch meta delete mount}
ram_dir=${RAM_DIR:-/dev/shm}
disk_dir=${DISK_DIR:-/var/tmp}
zone_mb=${ZONE_MB:-64}
read -r -a zf_opts <<<"${ZF_OPTS:-}"
read -r -a peer_opts <<<"${PEER_OPTS:-}"
fuse_ra_kb=${FUSE_RA_KB:-4096}
zf_opts+=(-o "readahead_kb=$fuse_ra_kb")
build=${BUILD:-$top/build-rel}
results=${RESULTS:-$here/results}
step_timeout=${STEP_TIMEOUT:-900}

py=/usr/bin/python3
helpers=$here/helpers.py
zf=$build/src/zonefuse
passthrough=$build/bench/passthrough
metabench=$build/bench/metabench
zraw=$build/bench/zraw

for v in reps seq_mb rand_mb rand_secs torch_mb meta_files mount_files \
	zone_mb step_timeout; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || zf_die "$v=${!v}: expected a positive integer"
done
[ "$rand_mb" -le "$seq_mb" ] ||
	zf_die "RAND_MB ($rand_mb) must not exceed SEQ_MB ($seq_mb): the random reads use the sequential file"
[ "$((seq_mb % 8))" -eq 0 ] || zf_die "SEQ_MB must be a multiple of 8 (it is split into 4 and 8 files)"

# An emulator image holds one sequential file or one checkpoint at a
# time, the mount workload's files, the journal and the reserve. It is
# made four times that big (it is sparse: the size costs nothing) because
# zonefuse resets a deleted file's zones only after the next journal
# commit (5 s): on an image barely bigger than two files, the write after
# a delete waits for that commit (measured: 1 s stalls), which is
# bench/space.sh's subject, not this suite's. A real device is much bigger
# than one checkpoint.
img_mb=$((4 * (seq_mb > torch_mb ? seq_mb : torch_mb)))
[ "$img_mb" -ge 4096 ] || img_mb=4096
img_mb=$(((img_mb + 2048 + zone_mb - 1) / zone_mb * zone_mb))

samples=$results/samples.jsonl
logf=$results/run.log
declare -A store_root=()
# Daemons this script started and where they are mounted, to clean up.
declare -A daemon_of=()

log()
{
	printf '%s %s\n' "$(date +%T)" "$*" | tee -a "$logf" >&2
}

cleanup()
{
	local mnt

	for mnt in "${!daemon_of[@]}"; do
		umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true
		kill "${daemon_of[$mnt]}" 2>/dev/null || true
	done
	for mnt in "${store_root[@]}"; do
		rm -rf -- "$mnt"
	done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- checks and build ------------------------------------------------------

[ "$(id -u)" -eq 0 ] || zf_die "run as root: the suite mounts and drops the page cache"
[ -c /dev/fuse ] || zf_die "/dev/fuse is missing: load the fuse module"
zf_install_pkgs "${ZF_BUILD_PKGS[@]}" "${ZF_BENCH_PKGS[@]}" >&2 ||
	zf_die "cannot install the packages the suite needs"
# Release build, without the tests: timings of a debug build say little.
zf_build "$build" --buildtype=release -Dtests=false >&2 ||
	zf_die "cannot build $build (if the tree is in the middle of a change, build a \`git archive HEAD\` copy and set BUILD)"
for b in "$zf" "$passthrough" "$metabench" "$zraw"; do
	[ -x "$b" ] || zf_die "$b was not built"
done

# The FUSE peer holds a descriptor per inode the kernel knows: more
# metadata files than its open file limit fail with EMFILE. Raise the
# limit for everything started from here (a container without
# CAP_SYS_RESOURCE cannot raise the hard limit: then say so).
nofile=$(ulimit -Sn)
if [[ " $groups " == *" meta "* && "$nofile" != unlimited ]] &&
	[ "$((meta_files + 200))" -gt "$nofile" ] &&
	! ulimit -n $((meta_files + 1000)) 2>/dev/null; then
	zf_warn "the open file limit is $nofile and cannot be raised: the FUSE peer will fail the metadata workload of $meta_files files (set META_FILES=$((nofile - 2000)))"
fi

mkdir -p "$results"
: >"$samples"
: >"$logf"

mem_avail_mb()
{
	awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo
}

disk_avail_mb()
{
	df -Pm "$1" | awk 'NR == 2 { print $4 }'
}

# What one system holds at its peak: the sequential file, and for FUSE the
# page cache over it as well.
need_mb=$((2 * (seq_mb > torch_mb ? seq_mb : torch_mb) + 1024))
for s in $stores; do
	case $s in
	ram)
		[ "$(mem_avail_mb)" -ge "$need_mb" ] ||
			zf_die "ram: $(mem_avail_mb) MiB available, the workloads need about $need_mb MiB: set smaller SEQ_MB/TORCH_MB"
		store_root[ram]=$(mktemp -d "$ram_dir/zfbench.XXXXXX")
		;;
	disk)
		[ "$(disk_avail_mb "$disk_dir")" -ge "$need_mb" ] ||
			zf_die "disk: $disk_dir has less than $need_mb MiB free: set smaller SEQ_MB/TORCH_MB or DISK_DIR"
		store_root[disk]=$(mktemp -d "$disk_dir/zfbench.XXXXXX")
		;;
	*)
		zf_die "unknown store $s (ram or disk)"
		;;
	esac
done

# ---- samples -----------------------------------------------------------------

# The machine's 1-minute load average: the noise other work adds (2
# cores: above 2, something else competes for them).
load1()
{
	cut -d ' ' -f 1 /proc/loadavg
}

# record STORE SYSTEM WORKLOAD VALUE: one sample. The units and the
# meaning of each workload are in bench/report.py.
record()
{
	printf '{"store": "%s", "system": "%s", "workload": "%s", "rep": %d, "value": %s, "load1": %s}\n' \
		"$1" "$2" "$3" "$rep" "$4" "$(load1)" >>"$samples"
	log "$1 $2 rep $rep: $3 = $4"
}

record_fail()
{
	printf '{"store": "%s", "system": "%s", "workload": "%s", "rep": %d, "failed": "%s"}\n' \
		"$1" "$2" "$3" "$rep" "${4//\"/\'}" >>"$samples"
	log "$1 $2 rep $rep: $3 FAILED: $4"
}

json_get()
{
	$py -c 'import json, sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"
}

drop_caches()
{
	sync
	echo 3 >/proc/sys/vm/drop_caches
}

# ---- systems -----------------------------------------------------------------

# The current system: where its files go (wdir), its daemon (dpid), its
# mount point (mnt), its image (img). A step that fails or hangs leaves
# $broken_flag: the rest of the system's workloads in this run are
# skipped (steps run in subshells, so a variable would not do).
wdir='' dpid='' mnt='' img=''
broken_flag=$results/broken

# Where a hung daemon is stuck, for the report.
dump_daemon()
{
	local out=$results/stuck-$1-$2-rep$rep.txt

	[ -n "$dpid" ] && [ -d "/proc/$dpid" ] || return 0
	gdb -p "$dpid" -batch -ex 'thread apply all bt' >"$out" 2>&1 || true
	log "the daemon's threads are in $out"
}

# step STORE SYSTEM WORKLOAD CMD...: run the program CMD with a time
# limit, its stdout to ours. A failure or a hang is recorded, and the rest
# of the system's workloads in this run are skipped.
step()
{
	local s=$1 sys=$2 w=$3 rc=0 errf=$results/step.err

	shift 3
	[ ! -e "$broken_flag" ] || return 1
	timeout --kill-after=10 "$step_timeout" "$@" 2>"$errf" || rc=$?
	if [ "$rc" -ne 0 ]; then
		[ "$rc" -eq 124 ] && dump_daemon "$s" "$sys"
		record_fail "$s" "$sys" "$w" "exit $rc: $(tail -n 3 "$errf" | tr '\n' ' ')"
		touch "$broken_flag"
		return 1
	fi
}

# Wait for daemon $1 to exit. A daemon is its own session leader, a child
# of init, which may take a second or two to reap it: a zombie has exited.
wait_gone()
{
	local pid=$1 i st

	for ((i = 0; i < 6000; i++)); do
		st=$(cut -d ' ' -f 3 "/proc/$pid/stat" 2>/dev/null) || return 0
		[ "$st" != Z ] || return 0
		sleep 0.01
	done
	log "daemon $pid still runs 60 s after its unmount"
	return 1
}

fuse_umount()
{
	[ -n "$mnt" ] || return 0
	if ! umount "$mnt"; then
		log "umount $mnt failed; detaching it"
		umount -l "$mnt" || true
	fi
	if [ -n "$dpid" ] && ! wait_gone "$dpid"; then
		kill "$dpid" 2>/dev/null || true
	fi
	unset "daemon_of[$mnt]"
	dpid='' mnt=''
}

# zonefuse mount of $img on $mnt; it returns once the file system is
# mounted. zf_daemon then finds the daemon. zf_sys_opts: the system's own
# options (zonefuse-dev's transport).
zf_sys_opts=()
zf_mount()
{
	"$zf" mount "$img" "$mnt" "${zf_opts[@]}" "${zf_sys_opts[@]}"
}

zf_daemon()
{
	dpid=$($py "$helpers" pid-of "$zf" mount "$img" "$mnt" "${zf_opts[@]}" \
		"${zf_sys_opts[@]}") || return 1
	daemon_of[$mnt]=$dpid
}

# FUSE_RA_KB: the readahead of the peer's mount on $mnt, through its bdi.
peer_set_ra()
{
	echo "$fuse_ra_kb" >"/sys/class/bdi/$(mountpoint -d "$mnt")/read_ahead_kb"
}

# zonefuse on either transport.
is_zf()
{
	[ "$1" = zonefuse ] || [ "$1" = zonefuse-dev ]
}

setup_system()
{
	local s=$1 sys=$2 root=${store_root[$1]}
	local cmd

	rm -f "$broken_flag"
	dpid='' mnt='' img=''
	wdir=$root/$sys
	mkdir -p "$wdir"
	case $sys in
	peer)
		mnt=$root/peer-mnt
		mkdir -p "$mnt"
		cmd=("$passthrough" "$wdir" "$mnt" "${peer_opts[@]}")
		"${cmd[@]}" || return 1
		dpid=$($py "$helpers" pid-of "${cmd[@]}") || return 1
		daemon_of[$mnt]=$dpid
		peer_set_ra || return 1
		wdir=$mnt
		;;
	zonefuse | zonefuse-dev | emu)
		zf_sys_opts=()
		[ "$sys" != zonefuse-dev ] || zf_sys_opts=(-o transport=dev)
		img=$root/$sys.img
		"$zf" emu create "$img" --size "${img_mb}M" \
			--zone-size "${zone_mb}M" --max-open 14 \
			--max-active 14 >/dev/null || return 1
		[ "$sys" = emu ] && return 0
		"$zf" mkfs "$img" >/dev/null || return 1
		mnt=$root/zf-mnt
		mkdir -p "$mnt"
		zf_mount || return 1
		zf_daemon || return 1
		wdir=$mnt
		;;
	esac
}

teardown_system()
{
	local s=$1 sys=$2 root=${store_root[$1]}

	fuse_umount
	rm -rf -- "${root:?}/$sys" "$root/$sys.img"
}

# ---- workloads ---------------------------------------------------------------

has_group()
{
	[[ " $groups " == *" $1 "* ]]
}

# fio_step STORE SYSTEM WORKLOAD METRIC ARGS...: fio ARGS with the options
# every job here shares, as a step; records METRIC (write_mbs, read_mbs,
# read_iops) of its output as WORKLOAD.
fio_step()
{
	local s=$1 sys=$2 w=$3 metric=$4 out=$results/fio.json v

	shift 4
	step "$s" "$sys" "$w" fio --output-format=json --output="$out" \
		--group_reporting --fallocate=none --thread "$@" || return 1
	if ! v=$($py "$helpers" fio "$metric" "$out" 2>"$results/step.err"); then
		record_fail "$s" "$sys" "$w" "$(cat "$results/step.err")"
		return 1
	fi
	record "$s" "$sys" "$w" "$v"
}

# The options that make the limit the store's own: O_DIRECT, several I/Os
# in flight.
direct_opts()
{
	if [ "$1" = limit ]; then
		printf '%s\n' --direct=1 --ioengine=io_uring --iodepth=8
	else
		printf '%s\n' --ioengine=psync
	fi
}

# step_json STORE SYSTEM WORKLOAD CMD...: a step whose output is one JSON
# object; prints it.
step_json()
{
	local out

	out=$(step "$@") || return 1
	printf '%s\n' "$out"
}

# Sequential: one file of SEQ_MB written, read cold and cached, then
# used for the random reads, then deleted.
wl_seq()
{
	local s=$1 sys=$2 f=$wdir/seq.0 o
	local -a dopt

	mapfile -t dopt < <(direct_opts "$sys")
	fio_step "$s" "$sys" write_fio write_mbs --name=seqw --filename="$f" \
		--rw=write --bs=1M --size="${seq_mb}M" --end_fsync=1 \
		"${dopt[@]}" || return 0
	if has_group read; then
		drop_caches
		fio_step "$s" "$sys" read_cold read_mbs --name=seqr \
			--filename="$f" --rw=read --bs=1M --size="${seq_mb}M" \
			"${dopt[@]}" || return 0
		if [ "$sys" != limit ]; then
			fio_step "$s" "$sys" read_cached read_mbs --name=seqr \
				--filename="$f" --rw=read --bs=1M \
				--size="${seq_mb}M" --invalidate=0 \
				"${dopt[@]}" || return 0
		fi
	fi
	if has_group rand; then
		wl_rand "$s" "$sys" "$f" || return 0
	fi
	if ! has_group delete; then
		rm -f -- "$f"
		return 0
	fi
	if is_zf "$sys"; then
		o=$(step_json "$s" "$sys" rm $py "$helpers" delete "$f" "$mnt" \
			$((zone_mb << 20))) || return 0
		record "$s" "$sys" rm_reset "$(json_get "$o" reset_ms)"
	else
		o=$(step_json "$s" "$sys" rm $py "$helpers" delete "$f") ||
			return 0
	fi
	record "$s" "$sys" rm "$(json_get "$o" rm_ms)"
}

# Random reads from the first RAND_MB of file $3: 4 KiB and 512 B, one
# and four threads, psync and io_uring (16 in flight per thread). The
# page cache is dropped first: a dataloader's first epoch.
wl_rand()
{
	local s=$1 sys=$2 f=$3 bs eng t
	local -a extra

	for bs in 4k 512; do
		for eng in psync io_uring; do
			for t in 1 4; do
				extra=(--ioengine="$eng")
				[ "$eng" = psync ] || extra+=(--iodepth=16)
				[ "$sys" != limit ] || extra+=(--direct=1)
				drop_caches
				fio_step "$s" "$sys" "rand_${bs}_${eng}_${t}t" \
					read_iops --name=rand --filename="$f" \
					--size="${rand_mb}M" --rw=randread \
					--bs="$bs" --numjobs="$t" --time_based \
					--runtime="$rand_secs" --norandommap \
					--randrepeat=0 "${extra[@]}" || return 1
			done
		done
	done
}

# dd of SEQ_MB with conv=fsync (the limit: oflag=direct), then the file is
# deleted as a checkpoint is, written and never read, and its directory
# fsynced: on zonefuse that makes the freeing durable at once, so the zones
# are reset without waiting for a commit. (The seq file of wl_seq is
# deleted after it was read, with its pages in the page cache.)
wl_dd()
{
	local s=$1 sys=$2 f=$wdir/dd.0 t0 t1 o
	local -a oflag=()

	[ "$sys" != limit ] || oflag=(oflag=direct)
	t0=$(zf_now_us)
	step "$s" "$sys" write_dd dd if=/dev/zero of="$f" bs=1M \
		count="$seq_mb" conv=fsync status=none "${oflag[@]}" ||
		return 0
	t1=$(zf_now_us)
	record "$s" "$sys" write_dd "$((seq_mb * 1048576 / (t1 - t0)))"
	if has_group delete; then
		if is_zf "$sys"; then
			o=$(step_json "$s" "$sys" rm_fsync $py "$helpers" delete \
				"$f" "$mnt" $((zone_mb << 20)) --fsync-dir) ||
				return 0
			record "$s" "$sys" rm_fsync_reset \
				"$(json_get "$o" reset_ms)"
		else
			o=$(step_json "$s" "$sys" rm_fsync $py "$helpers" delete \
				"$f" --fsync-dir) || return 0
		fi
		record "$s" "$sys" rm_written "$(json_get "$o" rm_ms)"
	fi
	rm -f -- "$f"
}

# SEQ_MB split over N files written at once (a sharded checkpoint); the
# 4-file set is also read back cold, all at once.
wl_shards()
{
	local s=$1 sys=$2 n
	local -a dopt

	mapfile -t dopt < <(direct_opts "$sys")
	for n in 4 8; do
		fio_step "$s" "$sys" "write_${n}files" write_mbs --name=shard \
			--directory="$wdir" --filename_format="shard$n.\$jobnum" \
			--numjobs="$n" --rw=write --bs=1M \
			--size="$((seq_mb / n))M" --end_fsync=1 "${dopt[@]}" ||
			return 0
		if [ "$n" = 4 ] && has_group read; then
			drop_caches
			fio_step "$s" "$sys" read_cold_4files read_mbs \
				--name=shard --directory="$wdir" \
				--filename_format="shard$n.\$jobnum" \
				--numjobs="$n" --rw=read --bs=1M \
				--size="$((seq_mb / n))M" "${dopt[@]}" || return 0
		fi
		rm -f -- "$wdir"/shard"$n".*
	done
}

wl_torch()
{
	local s=$1 sys=$2 o k

	if [ "$sys" = limit ]; then
		o=$(step_json "$s" "$sys" torch_save $py "$helpers" torch-null \
			"$torch_mb") || return 0
		record "$s" "$sys" torch_save "$(json_get "$o" save_mbs)"
		return 0
	fi
	o=$(step_json "$s" "$sys" torch $py "$helpers" torch "$wdir" \
		"$torch_mb" --cold-load) || return 0
	for k in save save_fsync load_first load_cached; do
		record "$s" "$sys" "torch_$k" "$(json_get "$o" "${k}_mbs")"
	done
}

wl_meta()
{
	local s=$1 sys=$2 phase o

	mkdir -p "$wdir/meta"
	for phase in create stat unlink; do
		o=$(step_json "$s" "$sys" "meta_$phase" "$metabench" "$phase" \
			"$wdir/meta" "$meta_files") || return 0
		record "$s" "$sys" "meta_$phase" "$(json_get "$o" ops_per_s)"
	done
	rmdir "$wdir/meta"
}

wl_emu()
{
	local s=$1 sys=$2 o

	o=$(step_json "$s" "$sys" write_fio "$zraw" write "$img" \
		"${seq_mb}M") || return 0
	record "$s" "$sys" write_fio "$(json_get "$o" mb_per_s)"
	if has_group read; then
		drop_caches
		o=$(step_json "$s" "$sys" read_cold "$zraw" read "$img" \
			"${seq_mb}M") || return 0
		record "$s" "$sys" read_cold "$(json_get "$o" mb_per_s)"
	fi
}

run_system()
{
	local s=$1 sys=$2

	log "== $s / $sys, run $rep of $reps"
	if ! setup_system "$s" "$sys"; then
		record_fail "$s" "$sys" setup "could not set up $sys on $s"
		teardown_system "$s" "$sys"
		return 0
	fi
	if [ "$sys" = emu ]; then
		if has_group write || has_group read; then
			wl_emu "$s" "$sys"
		fi
		teardown_system "$s" "$sys"
		return 0
	fi
	if has_group write || has_group read || has_group rand ||
		has_group delete; then
		wl_seq "$s" "$sys"
	fi
	if has_group write || has_group delete; then
		wl_dd "$s" "$sys"
	fi
	if has_group write; then
		wl_shards "$s" "$sys"
	fi
	if has_group torch; then
		wl_torch "$s" "$sys"
	fi
	if has_group meta && [ "$sys" != limit ]; then
		wl_meta "$s" "$sys"
	fi
	teardown_system "$s" "$sys"
}

# Mount time and daemon memory with MOUNT_FILES files of 4 KiB (one
# extent each), zonefuse only: mount an empty file system, fill it, then
# unmount and mount it again REPS times. The mount time runs from the
# mount command to the first file stat'ed through the new mount.
wl_mount()
{
	local s=$1 sys=zonefuse rss0 rss1 t0 t1 o n=$mount_files

	rep=0
	log "== $s / mount with $n files"
	if ! setup_system "$s" $sys; then
		record_fail "$s" $sys setup "could not set up zonefuse on $s"
		teardown_system "$s" $sys
		return 0
	fi
	rss0=$($py "$helpers" rss "$dpid")
	record "$s" $sys rss_empty "$rss0"
	mkdir -p "$wdir/m"
	if ! o=$(step_json "$s" $sys mount_create "$metabench" create \
		"$wdir/m" "$n" 4096 1000); then
		teardown_system "$s" $sys
		return 0
	fi
	record "$s" $sys mount_create "$(json_get "$o" ops_per_s)"
	rss1=$($py "$helpers" rss "$dpid")
	record "$s" $sys rss_per_file_live "$(((rss1 - rss0) / n))"
	for ((rep = 1; rep <= reps; rep++)); do
		t0=$(zf_now_us)
		fuse_umount
		t1=$(zf_now_us)
		record "$s" $sys umount_ms "$(((t1 - t0) / 1000))"
		mnt=${store_root[$s]}/zf-mnt
		t0=$(zf_now_us)
		if ! zf_mount || ! stat "$mnt/m/d00000/f0000000" >/dev/null; then
			record_fail "$s" $sys mount_ms "zonefuse mount of $n files failed"
			break
		fi
		t1=$(zf_now_us)
		zf_daemon || break
		record "$s" $sys mount_ms "$(((t1 - t0) / 1000))"
		record "$s" $sys rss_per_file \
			"$((($($py "$helpers" rss "$dpid") - rss0) / n))"
	done
	teardown_system "$s" $sys
}

# ---- the run -----------------------------------------------------------------

git_rev=$(git -C "$top" describe --always --dirty 2>/dev/null || echo unknown)
start_us=$(zf_now_us)
$py - "$results/meta.json" <<EOF
import json, os, platform, subprocess, sys

def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True,
                              text=True).stdout.strip()
    except OSError:
        return ""

meta = {
    "date": sh("date -Is"),
    "host": platform.node(),
    "cpu": sh("lscpu | sed -n 's/^Model name: *//p'"),
    "cpus": os.cpu_count(),
    "mem_total_mb": int(sh("awk '/MemTotal/ {print int(\$2/1024)}' /proc/meminfo") or 0),
    "kernel": platform.release(),
    "disk": sh("findmnt -no SOURCE,FSTYPE,OPTIONS -T '$disk_dir'"),
    "disk_model": sh("lsblk -dno MODEL,ROTA \$(findmnt -no SOURCE -T '$disk_dir' | sed 's/[0-9]*$//') 2>/dev/null"),
    "zonefuse": "$git_rev",
    "libfuse": sh("pkg-config --modversion fuse3"),
    "fio": sh("fio --version"),
    "torch": sh("/usr/bin/python3 -c 'import torch; print(torch.__version__)'"),
    "load_start": os.getloadavg(),
    "quick": "$quick" == "1",
    "reps": $reps, "seq_mb": $seq_mb, "rand_mb": $rand_mb,
    "rand_secs": $rand_secs, "torch_mb": $torch_mb,
    "meta_files": $meta_files, "mount_files": $mount_files,
    "zone_mb": $zone_mb, "img_mb": $img_mb,
    "zf_opts": "${ZF_OPTS:-}", "peer_opts": "${PEER_OPTS:-}",
    "fuse_ra_kb": "$fuse_ra_kb",
    "stores": {"ram": "$ram_dir", "disk": "$disk_dir"},
}
json.dump(meta, open(sys.argv[1], "w"), indent=1)
EOF
log "zonefuse $git_rev; sizes: sequential ${seq_mb} MiB, random ${rand_mb} MiB x ${rand_secs} s, torch ${torch_mb} MiB, metadata ${meta_files} files, mount ${mount_files} files; $reps runs"
[ "$quick" = 1 ] && log "QUICK: one run, small sizes: for trying the suite, not for figures"

# The mount workload first (it has its own runs): if a long run is cut
# short, the samples so far still hold it, and report.py reports them.
if has_group mount && [[ " $systems " == *" zonefuse "* ]]; then
	for s in $stores; do
		wl_mount "$s"
	done
fi
# Runs outermost, so that a slow spell of the machine spreads over every
# system instead of falling on one.
for ((rep = 1; rep <= reps; rep++)); do
	for s in $stores; do
		for sys in $systems; do
			run_system "$s" "$sys"
		done
	done
done

elapsed=$(zf_elapsed "$start_us" "$(zf_now_us)")
$py - "$results/meta.json" "$elapsed" <<'EOF'
import json, os, sys
m = json.load(open(sys.argv[1]))
m["load_end"] = os.getloadavg()
m["elapsed_s"] = float(sys.argv[2])
json.dump(m, open(sys.argv[1], "w"), indent=1)
EOF
rm -f "$results/fio.json" "$results/step.err" "$broken_flag"
log "done in ${elapsed} s"
$py "$here/report.py" "$results"
