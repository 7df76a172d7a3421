# shellcheck shell=bash
# The ZF_* arrays are used by the scripts that source this file.
# shellcheck disable=SC2034
# Helpers shared by scripts/run.sh and scripts/test.sh. Source it; it does
# nothing by itself. Every function prints what it does and why it fails.

# The Debian 12 packages that building zonefuse needs.
ZF_BUILD_PKGS=(gcc pkg-config meson ninja-build libfuse3-dev fuse3
	libzbd-dev liburing-dev libblkid-dev libmount-dev libjansson-dev check)
# What running and testing it needs on top (setfattr/getfattr, blkzone
# tools, the format check and the script lint, fuser to name what holds a
# busy mount, PyTorch and NumPy for the training workloads of tests/train,
# and other file systems' mkfs for the signatures mkfs must refuse, with
# util-linux's fsck(8), in tests/e2e/tools.sh; man(1), groff and
# bash-completion for the manual pages' and the completion's checks in
# tests/man.sh).
ZF_TEST_PKGS=(attr zbd-utils clang-format shellcheck rsync git python3 gdb
	psmisc python3-torch python3-numpy btrfs-progs f2fs-tools e2fsprogs
	util-linux man-db groff-base bash-completion)
# What bench/run.sh needs on top of the build: fio for the I/O workloads,
# getfattr for the stats, PyTorch for torch.save/load, matplotlib for the
# chart, gdb for the stacks of a hung daemon.
ZF_BENCH_PKGS=(fio attr python3 python3-torch python3-numpy
	python3-matplotlib gdb)
# Options of every build: warnings are errors here and in CI, not in
# meson.build (a user's newer compiler may warn where ours does not).
ZF_BUILD_OPTS=(-Dwerror=true)

zf_log()
{
	printf '==> %s\n' "$*"
}

zf_warn()
{
	printf 'warning: %s\n' "$*" >&2
}

zf_die()
{
	printf 'error: %s\n' "$*" >&2
	exit 1
}

# Print the repository's root, from where this file is.
zf_repo_root()
{
	local here

	here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P) || return 1
	(cd "$here/.." && pwd -P)
}

# Microseconds since the epoch (bash 5's EPOCHREALTIME, whatever the
# locale's decimal point).
zf_now_us()
{
	local t=${EPOCHREALTIME//[!0-9]/}

	printf '%s\n' "$t"
}

# Seconds between two zf_now_us readings, with one decimal.
zf_elapsed()
{
	local us=$(($2 - $1))

	printf '%d.%d\n' $((us / 1000000)) $((us % 1000000 / 100000))
}

zf_pkg_installed()
{
	[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" = installed ]
}

zf_apt_lists_empty()
{
	! compgen -G '/var/lib/apt/lists/*_Packages*' >/dev/null
}

# Install the packages among "$@" that are not installed. The package
# lists are refreshed only when they are empty or an install fails (an old
# list names package versions the mirror no longer has).
zf_install_pkgs()
{
	local missing=() p sudo=()
	local apt=(apt-get -y -q --no-install-recommends
		-o DPkg::Lock::Timeout=600)

	for p in "$@"; do
		zf_pkg_installed "$p" || missing+=("$p")
	done
	if [ ${#missing[@]} -eq 0 ]; then
		zf_log "packages: all ${#} needed are installed"
		return 0
	fi
	zf_log "packages: installing ${missing[*]}"
	if [ "$(id -u)" -ne 0 ]; then
		if ! command -v sudo >/dev/null; then
			printf 'error: %s\n' "missing packages: ${missing[*]}; run this script as root, or install them with apt-get" >&2
			return 1
		fi
		sudo=(sudo)
	fi
	export DEBIAN_FRONTEND=noninteractive
	if zf_apt_lists_empty; then
		"${sudo[@]}" apt-get -q -o DPkg::Lock::Timeout=600 update || return 1
	fi
	if ! "${sudo[@]}" "${apt[@]}" install "${missing[@]}"; then
		zf_log "packages: install failed; refreshing the package lists and retrying"
		"${sudo[@]}" apt-get -q -o DPkg::Lock::Timeout=600 update || return 1
		"${sudo[@]}" "${apt[@]}" install "${missing[@]}" || return 1
	fi
}

# A Python for reading meson's JSON: the system one, which meson runs on.
zf_python()
{
	if [ -x /usr/bin/python3 ]; then
		/usr/bin/python3 "$@"
	else
		python3 "$@"
	fi
}

# True if build directory $1 is configured with every -Dname=value in
# "${@:2}" (values as meson prints them: true, address,undefined...).
zf_meson_opts_match()
{
	local dir=$1

	shift
	zf_python - "$dir/meson-info/intro-buildoptions.json" "$@" <<'EOF'
import json, sys

try:
    with open(sys.argv[1]) as f:
        cur = {o["name"]: o["value"] for o in json.load(f)}
except (OSError, ValueError):
    sys.exit(1)
for arg in sys.argv[2:]:
    name, want = arg[2:].split("=", 1)
    have = cur.get(name)
    if isinstance(have, bool):
        have = "true" if have else "false"
    elif isinstance(have, list):
        have = ",".join(have)
    if str(have) != want:
        sys.exit(1)
EOF
}

# Configure build directory $1 with options "${@:2}" (set it up, or change
# the options that differ), then compile it.
zf_build()
{
	local dir=$1

	shift
	if [ ! -f "$dir/meson-private/coredata.dat" ]; then
		zf_log "meson setup $dir $*"
		meson setup "$dir" "$@" || return 1
	elif ! zf_meson_opts_match "$dir" "$@"; then
		zf_log "meson configure $dir $*"
		# A directory from another meson version cannot be
		# reconfigured: start it again.
		meson configure "$dir" "$@" ||
			meson setup --wipe "$dir" "$@" || return 1
	fi
	zf_log "meson compile -C $dir"
	meson compile -C "$dir"
}

# FUSE-over-io_uring (Linux 6.14+): zonefuse serves its requests on
# io_uring queues when the fuse module allows it, and the module ships
# with it off. The daemon never changes a kernel setting; the scripts turn
# it on, and say so, when it is off and root may write it. Nothing happens
# on a kernel without it (the QEMU guests' 6.1): mounts use /dev/fuse.
zf_enable_fuse_uring()
{
	local p=/sys/module/fuse/parameters/enable_uring v

	[ -e "$p" ] || modprobe fuse 2>/dev/null || true
	if [ ! -e "$p" ]; then
		zf_log "this kernel has no FUSE-over-io_uring ($p is missing): mounts use /dev/fuse"
		return 0
	fi
	v=$(<"$p")
	case $v in
	Y | 1) return 0 ;;
	esac
	if [ -w "$p" ] && echo 1 >"$p" 2>/dev/null; then
		zf_log "turned FUSE-over-io_uring on (echo 1 > $p; it was $v): zonefuse mounts use io_uring queues"
	else
		zf_warn "$p is $v and cannot be written here: zonefuse mounts use /dev/fuse"
	fi
}
