#!/bin/bash
# zoned-vm.sh - run a command as root in a throw-away QEMU guest that has
# real zoned block devices: a zoned null_blk (/dev/nullb0) and, with
# --nvme-zns, an emulated NVMe ZNS namespace (/dev/nvme0n1).
#
# usage: scripts/zoned-vm.sh [options] -- COMMAND [ARGS...]
#   --nullb PARAMS   null_blk module parameters (default: $ZVM_NULLB below);
#                    "none" for no null_blk
#   --nvme-zns       also attach an NVMe ZNS namespace
#   --zns PARAMS     nvme-ns zoned properties (default: $ZVM_ZNS below)
#   --zns-size SIZE  size of the namespace's backing file (default 2G, sparse)
#   --nvme-conv SIZE with --nvme-zns: a second, conventional namespace of
#                    SIZE on the same controller (/dev/nvme0n2), for a file
#                    system that keeps its metadata off the zones (F2FS)
#   --timeout SECS   limit for the whole run (default 900); exit 124 past it
#   --mem MB         guest memory (default: null_blk size + 1536)
#   --smp N          guest CPUs (default: the host's, at most 4)
#   --prealloc       the host allocates all of the guest's memory before it
#                    boots (QEMU -mem-prealloc), so that nothing measured in
#                    the guest pays the host's first touch of a guest page
#   -v               show the guest's console
#
# Why a guest: the kernels we develop on have no zoned block support, but
# Debian's own kernel (linux-image-amd64) has it, with null_blk and NVMe as
# modules, and Debian's QEMU emulates ZNS. The guest boots that kernel with
# a tiny busybox initramfs, mounts the host's root file system read-only
# over 9p (so host-built binaries and their libraries run unchanged) and the
# current directory read-write at the same path, and runs COMMAND there.
# No KVM is needed (TCG); the guest is ready in about 10 s.
#
# Exit status: COMMAND's; 124 timeout; 125 the guest could not be set up.
# In the guest: ZONEFUSE_VM=1, ZONEFUSE_NULLB=/dev/nullb0 (if any),
# ZONEFUSE_ZNS=/dev/nvme0n1 (with --nvme-zns), ZONEFUSE_NVME_CONV=/dev/nvme0n2
# (with --nvme-conv).
set -euo pipefail

ZVM_NULLB="zoned=1 gb=2 bs=4096 zone_size=64 zone_capacity=64 zone_nr_conv=0 zone_max_open=0 zone_max_active=0 memory_backed=1"
ZVM_ZNS="logical_block_size=4096,physical_block_size=4096,zoned.zone_size=64M,zoned.zone_capacity=48M,zoned.max_open=14,zoned.max_active=14"
CACHE=${ZVM_CACHE:-/var/cache/zonefuse-vm}

nullb=$ZVM_NULLB zns=$ZVM_ZNS nvme=0 zns_size=2G conv_size='' tmo=900 mem='' smp='' prealloc=0 verbose=0
die() { echo "zoned-vm: $*" >&2; exit 125; }
while [ $# -gt 0 ]; do
	case $1 in
	--nullb) nullb=$2; shift ;;
	--nvme-zns) nvme=1 ;;
	--zns) zns=$2; shift ;;
	--zns-size) zns_size=$2; shift ;;
	--nvme-conv) conv_size=$2; shift ;;
	--timeout) tmo=$2; shift ;;
	--mem) mem=$2; shift ;;
	--smp) smp=$2; shift ;;
	--prealloc) prealloc=1 ;;
	-v) verbose=1 ;;
	--) shift; break ;;
	*) die "unknown option '$1' (usage: $0 [--nullb PARAMS] [--nvme-zns] -- COMMAND...)" ;;
	esac
	shift
done
[ $# -gt 0 ] || die "no COMMAND (usage: $0 [--nullb PARAMS] [--nvme-zns] -- COMMAND...)"
[ "$(id -u)" = 0 ] || die "must run as root (it installs packages and reads /boot)"
[ "$nullb" = none ] && nullb=
[ -z "$conv_size" ] || [ "$nvme" = 1 ] || die "--nvme-conv needs --nvme-zns (it is a second namespace of that controller)"
[ -z "$smp" ] || [[ $smp =~ ^[1-9][0-9]*$ ]] || die "--smp takes a number of CPUs, not '$smp'"

# ---- packages, from Debian only ------------------------------------------
need=()
for p in qemu-system-x86 busybox-static cpio kmod; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || need+=("$p")
done
compgen -G '/boot/vmlinuz-*-amd64' >/dev/null || need+=(linux-image-amd64)
if [ ${#need[@]} -gt 0 ]; then
	echo "zoned-vm: installing ${need[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	{ apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends "${need[@]}" ||
	  { apt-get -o DPkg::Lock::Timeout=300 update -q &&
	    apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends "${need[@]}"; }
	} >&2 || die "apt-get install ${need[*]} failed"
fi

# The newest Debian kernel with zoned block support and null_blk.
kver=
for v in $(find /boot -maxdepth 1 -name 'vmlinuz-*-amd64' -printf '%f\n' | sed 's/^vmlinuz-//' | sort -V -r); do
	if grep -q '^CONFIG_BLK_DEV_ZONED=y' "/boot/config-$v" 2>/dev/null &&
	   [ -d "/lib/modules/$v/kernel/drivers/block/null_blk" ]; then
		kver=$v
		break
	fi
done
[ -n "$kver" ] || die "no /boot/vmlinuz-*-amd64 with CONFIG_BLK_DEV_ZONED=y and null_blk modules"

# ---- the initramfs: busybox and the 9p modules, cached per kernel --------
mkdir -p "$CACHE"
initrd=$CACHE/initrd-$kver-$(sha1sum "$0" | cut -c1-10).gz
exec 9>"$CACHE/.lock"
flock 9
if [ ! -s "$initrd" ]; then
	root=$(mktemp -d)
	mkdir -p "$root"/{bin,mods,proc,sys,dev,host}
	cp /bin/busybox "$root/bin/busybox"
	n=0
	for m in virtio_pci 9pnet_virtio 9p; do
		modprobe -S "$kver" --show-depends "$m"
	done | awk '$1 == "insmod" && !seen[$2]++ { print $2 }' | while read -r ko; do
		n=$((n + 1))
		dst=$root/mods/$(printf '%02d' "$n")-$(basename "${ko%%.ko*}").ko
		case $ko in
		*.xz) xz -dc "$ko" >"$dst" ;;
		*.zst) zstd -qdc "$ko" >"$dst" ;;
		*) cp "$ko" "$dst" ;;
		esac
	done
	cat >"$root/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
fail() { echo "zoned-vm init: $*" >/dev/ttyS0; poweroff -f; }
for m in /mods/*.ko; do insmod "$m" || fail "insmod $m"; done
o=trans=virtio,version=9p2000.L,msize=262144
for _ in 1 2 3 4 5 6 7 8 9 10; do
	mount -t 9p -o ro,$o,cache=loose hostroot /host 2>/dev/null && break
	sleep 0.3
done
[ -x /host/bin/bash ] || fail "cannot mount the host root"
mount -t tmpfs -o mode=755 tmpfs /host/run || fail "tmpfs /run"
mkdir -p /host/run/zvm
mount -t 9p -o rw,$o,cache=none zvmrun /host/run/zvm || fail "mount the run directory"
mount -t proc proc /host/proc
mount -t sysfs sysfs /host/sys
mount -t devtmpfs devtmpfs /host/dev
chroot /host /bin/bash /run/zvm/stage2.sh
# A file system that hung in the kernel (a task in D state) would hang
# sync, and poweroff's own sync, for ever: give sync 30 s, then go.
sync & s=$!
n=0
while kill -0 $s 2>/dev/null && [ $n -lt 300 ]; do sleep 0.1; n=$((n + 1)); done
poweroff -n -f
EOF
	chmod 755 "$root/init"
	(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$initrd.tmp"
	mv "$initrd.tmp" "$initrd"
	rm -rf "$root"
fi
flock -u 9

# ---- the run directory, shared with the guest -----------------------------
run=$(mktemp -d /var/tmp/zoned-vm.XXXXXX)
qpid='' tpid=''
# shellcheck disable=SC2317 # run by the traps
cleanup() {
	[ -n "$qpid" ] && kill "$qpid" 2>/dev/null && wait "$qpid" 2>/dev/null
	[ -n "$tpid" ] && kill "$tpid" 2>/dev/null
	rm -rf "$run"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

cwd=$(pwd -P)
{
	printf 'cwd=%q\n' "$cwd"
	printf 'nullb=%q\n' "$nullb"
	printf 'nvme=%q\n' "$nvme"
	printf 'conv=%q\n' "$conv_size"
	printf 'hostpath=%q\n' "$PATH"
	printf 'cmd=('
	printf '%q ' "$@"
	printf ')\n'
} >"$run/config.sh"
cat >"$run/stage2.sh" <<'EOF'
# Stage 2, in the guest, chrooted into the host's root (read-only).
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
. /run/zvm/config.sh
say() { echo "zoned-vm: $*" >/dev/ttyS0; }
fail() { say "setup failed: $*"; echo 125 >/run/zvm/status; exit 125; }
for d in /tmp /var/tmp; do mount -t tmpfs -o mode=1777 tmpfs "$d"; done
mkdir -p /dev/shm /dev/pts
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
[ -e /dev/stdin ] || ln -s /proc/self/fd/0 /dev/stdin
[ -e /dev/stdout ] || ln -s /proc/self/fd/1 /dev/stdout
[ -e /dev/stderr ] || ln -s /proc/self/fd/2 /dev/stderr
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /var/cache 2>/dev/null
mkdir -p "$cwd" 2>/dev/null
mount -t 9p -o rw,trans=virtio,version=9p2000.L,msize=262144,cache=mmap cwd "$cwd" || fail "mount $cwd"
modprobe fuse || fail "modprobe fuse"
if [ -n "$nullb" ]; then
	# shellcheck disable=SC2086
	modprobe null_blk nr_devices=1 $nullb || fail "modprobe null_blk $nullb"
	[ -b /dev/nullb0 ] || fail "no /dev/nullb0"
	export ZONEFUSE_NULLB=/dev/nullb0
fi
if [ "$nvme" = 1 ]; then
	modprobe nvme || fail "modprobe nvme"
	for _ in $(seq 100); do [ -b /dev/nvme0n1 ] && break; sleep 0.1; done
	[ -b /dev/nvme0n1 ] || fail "no /dev/nvme0n1"
	# Writes to a zone must reach the drive in order: mq-deadline keeps it.
	echo mq-deadline >/sys/block/nvme0n1/queue/scheduler || fail "mq-deadline on nvme0n1"
	export ZONEFUSE_ZNS=/dev/nvme0n1
	if [ -n "$conv" ]; then
		for _ in $(seq 100); do [ -b /dev/nvme0n2 ] && break; sleep 0.1; done
		[ -b /dev/nvme0n2 ] || fail "no /dev/nvme0n2"
		export ZONEFUSE_NVME_CONV=/dev/nvme0n2
	fi
fi
cd "$cwd" || fail "cd $cwd"
export PATH=$hostpath HOME=/root TERM=dumb LANG=C.UTF-8 ZONEFUSE_VM=1
say "ready after $(cut -d' ' -f1 /proc/uptime)s"
"${cmd[@]}" </dev/null >>/run/zvm/output 2>&1
echo $? >/run/zvm/status
# Bounded, as in init: a hung file system must not hang the guest.
sync & s=$!
for _ in $(seq 300); do kill -0 $s 2>/dev/null || break; sleep 0.1; done
EOF

gb=0
[[ $nullb =~ gb=([0-9]+) ]] && gb=${BASH_REMATCH[1]}
[ -n "$mem" ] || mem=$((gb * 1024 + 1536))
if [ -z "$smp" ]; then
	smp=$(nproc)
	[ "$smp" -gt 4 ] && smp=4
fi
# shellcheck disable=SC2054 # the commas are QEMU's
accel=(-accel tcg,thread=multi,tb-size=256 -cpu max)
if [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo; then
	accel=(-accel kvm -cpu host)
fi
# no_timer_check: at boot the kernel checks that the IO-APIC timer ticks
# within a busy loop; under TCG on a loaded host it can miss them and
# panics ("IO-APIC + timer doesn't work", seen beside stress-ng --cpu 2).
# Distributions boot virtual machines with it for that reason.
# shellcheck disable=SC2054
qemu=(qemu-system-x86_64 -nodefaults -no-user-config -M pc "${accel[@]}"
	-smp "$smp" -m "$mem" -display none -no-reboot
	-kernel "/boot/vmlinuz-$kver" -initrd "$initrd"
	-append "console=ttyS0 quiet loglevel=4 panic=-1 mitigations=off no_timer_check rdinit=/init"
	-serial "file:$run/console.log"
	-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap
	-virtfs "local,path=$run,mount_tag=zvmrun,security_model=none"
	-virtfs "local,path=$cwd,mount_tag=cwd,security_model=none,multidevs=remap")
# Under TCG the host backs a guest page when the guest first touches it,
# on the vCPU's thread: a guest's first pass over fresh memory ran at half
# speed, and a file system measured there looked slower than it is
# (docs/performance.md, "The first near-full phase of a guest, explained").
[ "$prealloc" = 1 ] && qemu+=(-mem-prealloc)
if [ "$nvme" = 1 ]; then
	truncate -s "$zns_size" "$run/zns.img"
	# shellcheck disable=SC2054
	qemu+=(-drive "file=$run/zns.img,if=none,id=zns0,format=raw,cache=unsafe"
		-device nvme,serial=zonefuse0,id=nvme0
		-device "nvme-ns,drive=zns0,bus=nvme0,nsid=1,zoned=true,$zns")
	if [ -n "$conv_size" ]; then
		truncate -s "$conv_size" "$run/conv.img"
		# shellcheck disable=SC2054
		qemu+=(-drive "file=$run/conv.img,if=none,id=conv0,format=raw,cache=unsafe"
			-device "nvme-ns,drive=conv0,bus=nvme0,nsid=2,logical_block_size=4096,physical_block_size=4096")
	fi
fi

: >"$run/output"
: >"$run/console.log"
start=$(date +%s)
set +e
timeout -k 10 "$tmo" "${qemu[@]}" </dev/null >"$run/qemu.err" 2>&1 &
qpid=$!
tail -s 0.2 -n +1 -f --pid=$qpid "$run/output" &
tpid=$!
[ "$verbose" = 1 ] && tail -s 0.2 -n +1 -f --pid=$qpid "$run/console.log" >&2 &
wait $qpid
qrc=$?
qpid=
wait $tpid
tpid=
set -e
echo "zoned-vm: guest ran $(($(date +%s) - start)) s ($kver)" >&2
if [ $qrc = 124 ] || [ $qrc = 137 ]; then
	echo "zoned-vm: timed out after ${tmo}s; console:" >&2
	tail -n 30 "$run/console.log" >&2
	exit 124
fi
if [ ! -s "$run/status" ]; then
	echo "zoned-vm: the guest did not run the command (qemu exit $qrc):" >&2
	cat "$run/qemu.err" >&2
	tail -n 40 "$run/console.log" >&2
	exit 125
fi
rc=$(cat "$run/status")
[ "$rc" = 125 ] && tail -n 40 "$run/console.log" >&2
exit "$rc"
