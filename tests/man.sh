#!/usr/bin/env bash
# tests/man.sh pages|completion: the manual pages and the bash completion
# say what the commands do, and cannot drift from them.
#
# pages:
# - every page (docs/man, as meson configured it) renders with man(1) at
#   80 columns and with groff -ww without one warning (lintian's check);
#   the aliases fsck.fuse.zonefuse(8) and mount.fuse.zonefuse(8) lead to
#   their pages; meson installs every page in mandir/man8;
# - every option each command's --help prints is documented: in
#   zonefuse(8) as a tagged paragraph of that command's subsection
#   ("zonefuse CMD"), in mkfs.zonefuse(8) and fsck.zonefuse(8) as a tagged
#   paragraph, and every `-o NAME` of `zonefuse mount --help` likewise in
#   zonefuse(8) and mount.zonefuse(8); every command `zonefuse --help`
#   lists has its subsection;
# - that check fails on a page with an option taken out (so a passing run
#   means something).
# completion (scripts/bash-completion/zonefuse, loaded the way
# bash-completion loads it, by command name):
# - `zonefuse m<TAB>` gives mkfs and mount, `zonefuse <TAB>` every command
#   of `zonefuse --help`;
# - `zonefuse CMD -<TAB>`, `mkfs.zonefuse -<TAB>`, `fsck.zonefuse -<TAB>`
#   offer every option of that command's --help, and mount -o every -o;
# - devices (zoned ones from sysfs, image files), directories for mount,
#   zonefuse mount points for scrub.
#
# Environment (meson passes them): ZONEFUSE, the zonefuse binary;
# ZONEFUSE_BUILD_ROOT, the build directory.
set -uo pipefail

what=${1:-}
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P) || exit 1
name="man-$what"
fails=0

log()
{
	printf '%s: %s\n' "$name" "$*"
}

fail()
{
	printf '%s: FAIL: %s\n' "$name" "$*" >&2
	fails=$((fails + 1))
}

skip()
{
	printf '%s: SKIP: %s\n' "$name" "$*"
	exit 77
}

die()
{
	printf '%s: error: %s\n' "$name" "$*" >&2
	exit 1
}

case $what in
pages | completion) ;;
*) die "usage: tests/man.sh pages|completion" ;;
esac
[ -x "${ZONEFUSE:-}" ] || die "ZONEFUSE (the zonefuse binary) is not set or not executable; run through meson test"
[ -d "${ZONEFUSE_BUILD_ROOT:-}" ] || die "ZONEFUSE_BUILD_ROOT (the meson build directory) is not set; run through meson test"

work=$(mktemp -d "${TMPDIR:-/tmp}/zonefuse-man.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT

# The helpers are the binary under other names (src/main.c).
mkdir -p "$work/bin"
for h in mkfs.zonefuse fsck.zonefuse fsck.fuse.zonefuse mount.zonefuse; do
	ln -s "$ZONEFUSE" "$work/bin/$h"
done

# Print the --help of command "$@" (its exit status must be 0).
help_of()
{
	local out

	out=$("$@" --help 2>&1) || {
		fail "'$* --help' exits non-zero: $out"
		return 1
	}
	[ -n "$out" ] || fail "'$* --help' prints nothing"
	printf '%s\n' "$out"
}

# Print the options on stdin's help text, one a line: with "listed", only
# those of the usage lines and of the option list (lines starting with an
# option), not the ones prose mentions ("fusermount3 -u DIR"); with "all",
# every one. A cluster of short options (-sfnv) gives each.
help_opts()
{
	local o

	if [ "$1" = listed ]; then
		grep -E '^(usage:|[[:space:]]+(-|\[|zonefuse ))'
	else
		cat
	fi | grep -oE '(^|[][[:space:]|,(])--?[A-Za-z][A-Za-z0-9-]*' |
		sed -E 's/^[^-]+//' | sort -u |
		while read -r o; do
			if [[ $o =~ ^-[A-Za-z]{2,}$ ]]; then
				grep -o '[A-Za-z]' <<<"${o#-}" | sed 's/^/-/'
			else
				printf '%s\n' "$o"
			fi
		done | sort -u
}

# Print the mount options the help text on stdin lists (`-o NAME`, with
# its '=' when it takes a value), one a line.
help_mount_opts()
{
	grep -oE '^[[:space:]]+-o [a-z_]+=?' | sed -E 's/^[[:space:]]+-o //' |
		sort -u
}

# --- pages --------------------------------------------------------------

# Render man page $1 as plain text with lines that do not wrap (a 2000
# column line, no hyphenation), for grep.
render()
{
	groff -man -Tascii -rLL=2000n -rHY=0 -P-cbou "$1" 2>/dev/null
}

# The subsections of zonefuse(8) (text on stdin) whose title is
# "zonefuse $1" or starts with it ("zonefuse emu create").
subsection()
{
	awk -v cmd="$1" '
		/^[^ ]/ || /^   [^ ]/ {
			t = $0; sub(/^ */, "", t)
			insec = (t == "zonefuse " cmd || index(t, "zonefuse " cmd " ") == 1)
		}
		insec'
}

# Check that each option in "${@:3}" is the tag of a paragraph (.TP) of
# text file $1 ("-f, --force", "--size SIZE", "-C FD"), saying so as
# label $2. Returns how many are not.
check_tags()
{
	local file=$1 label=$2 o n=0

	shift 2
	for o in "$@"; do
		grep -qE -- "^ {7}(-[^ ,]+( [A-Za-z]+)?, )*$o( |,|$)" "$file" && continue
		fail "$label: $o is not documented (no paragraph tagged with it)"
		n=$((n + 1))
	done
	return "$n"
}

# The same for mount options "${@:3}" ("ro", "commit=").
check_mount_tags()
{
	local file=$1 label=$2 o n=0 end

	shift 2
	for o in "$@"; do
		end='( |,|=|\||$)'
		[[ $o == *= ]] && end=''
		grep -qE -- "^ {7}([^ ,]+, )*$o$end" "$file" && continue
		fail "$label: mount option $o is not documented (no paragraph tagged with it)"
		n=$((n + 1))
	done
	return "$n"
}

# Check that each option in "${@:3}" appears as a word anywhere in $1.
check_words()
{
	local file=$1 label=$2 o n=0

	shift 2
	for o in "$@"; do
		grep -qE -- "(^|[^A-Za-z0-9_-])$o([^A-Za-z0-9_-]|$)" "$file" && continue
		fail "$label: $o is not mentioned"
		n=$((n + 1))
	done
	return "$n"
}

# Render with man(1) as lintian does, and with groff's every warning:
# any message is a failure.
lint_page()
{
	local p=$1 out

	out=$(LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 \
		man --warnings -E UTF-8 -l -Tutf8 -Z "$p" 2>&1 >/dev/null)
	[ -z "$out" ] || fail "man -l $p warns: $out"
	out=$(groff -man -Tutf8 -ww -z "$p" 2>&1)
	[ -z "$out" ] || fail "groff -man -ww $p warns: $out"
	grep -qE '@[A-Z_]+@' "$p" && fail "$p: a @VARIABLE@ meson did not replace"
	[ -n "$(render "$p")" ] || fail "$p renders as nothing"
}

pages()
{
	local mandir=$ZONEFUSE_BUILD_ROOT/docs/man p n t alias target
	local pages=(zonefuse mkfs.zonefuse fsck.zonefuse mount.zonefuse)
	local aliases=(fsck.fuse.zonefuse:fsck.zonefuse
		mount.fuse.zonefuse:mount.zonefuse)
	local cmds=() opts=() mopts=() help

	command -v man >/dev/null || skip "man(1) (Debian package man-db) is missing"
	command -v groff >/dev/null || skip "groff (Debian package groff-base) is missing"
	log "the pages render without a warning, document every option of the commands' --help, and are installed"

	# Lint every page, and the aliases through a man tree of their own.
	mkdir -p "$work/man/man8"
	for p in "${pages[@]}"; do
		[ -f "$mandir/$p.8" ] || die "$mandir/$p.8 is missing: is docs/man in the build (meson setup)?"
		lint_page "$mandir/$p.8"
		cp "$mandir/$p.8" "$work/man/man8/"
		render "$mandir/$p.8" >"$work/$p.txt"
	done
	for alias in "${aliases[@]}"; do
		target=${alias#*:}
		alias=${alias%%:*}
		cp "$src/docs/man/$alias.8" "$work/man/man8/"
		t=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -M "$work/man" 8 "$alias" 2>"$work/err")
		[ -s "$work/err" ] && fail "man $alias warns: $(cat "$work/err")"
		grep -qE "^ *${target},[[:space:]]+${alias}[[:space:]]" <<<"$t" ||
			fail "man 8 $alias does not show $target(8) naming it"
	done

	# meson installs every page in mandir/man8.
	for p in "${pages[@]}" "${aliases[@]%%:*}"; do
		grep -qF "/man8/$p.8\"" "$ZONEFUSE_BUILD_ROOT/meson-info/intro-installed.json" ||
			fail "meson does not install $p.8 in a man8 directory (docs/man/meson.build)"
	done

	# zonefuse(8): the top level, then each command's subsection.
	help=$(help_of "$ZONEFUSE") || return
	mapfile -t opts < <(help_opts all <<<"$help")
	check_words "$work/zonefuse.txt" "zonefuse(8)" "${opts[@]}"
	mapfile -t cmds < <(sed -nE 's/^  ([a-z][a-z-]*)  .*/\1/p' <<<"$help")
	[ ${#cmds[@]} -ge 9 ] || fail "zonefuse --help lists ${#cmds[@]} commands: ${cmds[*]}"
	for n in "${cmds[@]}"; do
		subsection "$n" <"$work/zonefuse.txt" >"$work/sec-$n.txt"
		if [ ! -s "$work/sec-$n.txt" ]; then
			fail "zonefuse(8) has no subsection 'zonefuse $n'"
			continue
		fi
		help=$(help_of "$ZONEFUSE" "$n") || continue
		# -V, --version, -h, --help: once for all, above.
		mapfile -t opts < <(help_opts listed <<<"$help" |
			grep -vxE -- '-V|--version|-h|--help')
		check_tags "$work/sec-$n.txt" "zonefuse(8), zonefuse $n" "${opts[@]}"
		if [ "$n" = mount ]; then
			mapfile -t mopts < <(help_mount_opts <<<"$help")
			[ ${#mopts[@]} -ge 5 ] || fail "zonefuse mount --help lists ${#mopts[@]} -o options"
			check_mount_tags "$work/sec-$n.txt" "zonefuse(8), zonefuse mount" "${mopts[@]}"
		fi
	done

	# The helpers' pages.
	for p in mkfs.zonefuse fsck.zonefuse; do
		help=$(help_of "$work/bin/$p") || continue
		mapfile -t opts < <(help_opts listed <<<"$help")
		check_tags "$work/$p.txt" "$p(8)" "${opts[@]}"
	done
	check_mount_tags "$work/mount.zonefuse.txt" "mount.zonefuse(8)" "${mopts[@]}"
	# The mount helper's own options, once it has a --help of its own
	# (a separate program in the build, or the binary by that name).
	t=''
	for p in "$ZONEFUSE_BUILD_ROOT/src/mount.zonefuse" "$work/bin/mount.zonefuse"; do
		[ -x "$p" ] || continue
		help=$(timeout 10 "$p" --help 2>&1) || continue
		grep -q 'mount\.zonefuse' <<<"$help" || continue
		log "checking mount.zonefuse(8) against $p --help"
		mapfile -t opts < <(help_opts listed <<<"$help")
		check_tags "$work/mount.zonefuse.txt" "mount.zonefuse(8)" "${opts[@]}"
		mapfile -t opts < <(help_mount_opts <<<"$help")
		check_mount_tags "$work/mount.zonefuse.txt" "mount.zonefuse(8)" "${opts[@]}"
		t=checked
		break
	done
	[ -n "$t" ] ||
		log "note: no mount.zonefuse --help yet: its page is checked against zonefuse mount's -o options only"

	# The check can fail: a page without one of its options must not
	# pass. (In a subshell: these failures are the expected ones.)
	grep -vE '^ {7}--reserve' "$work/mkfs.zonefuse.txt" >"$work/broken.txt"
	(check_tags "$work/broken.txt" "self-check" --reserve) 2>/dev/null &&
		fail "self-check: mkfs.zonefuse(8) without --reserve passed the check"
	grep -vE '^ {7}commit=' "$work/sec-mount.txt" >"$work/broken.txt"
	(check_mount_tags "$work/broken.txt" "self-check" commit=) 2>/dev/null &&
		fail "self-check: zonefuse(8) without commit= passed the check"
	grep -vE '^   zonefuse stat' "$work/zonefuse.txt" | subsection stat >"$work/broken.txt"
	[ -s "$work/broken.txt" ] &&
		fail "self-check: zonefuse(8) without its 'zonefuse stat' title still has that subsection"
	return 0
}

# --- completion ---------------------------------------------------------

completion()
{
	local bc=/usr/share/bash-completion/bash_completion
	local comp=$src/scripts/bash-completion/zonefuse
	local dir=$work/share/bash-completion/completions h

	[ -r "$bc" ] || skip "bash-completion (Debian package bash-completion) is missing"
	log "bash completion of zonefuse and its helpers: commands, every --help option, devices, directories, mount points"

	# Load it as bash-completion does: by command name, from
	# $XDG_DATA_DIRS/bash-completion/completions, inside a function.
	mkdir -p "$dir" "$work/user"
	cp "$comp" "$dir/zonefuse"
	for h in mkfs.zonefuse fsck.zonefuse fsck.fuse.zonefuse; do
		ln -s zonefuse "$dir/$h"
	done
	grep -qF "/bash-completion/completions/zonefuse\"" "$ZONEFUSE_BUILD_ROOT/meson-info/intro-installed.json" ||
		fail "meson does not install the completion in a bash-completion/completions directory"

	# What each command's completion must offer.
	help_of "$ZONEFUSE" | sed -nE 's/^  ([a-z][a-z-]*)  .*/\1/p' >"$work/cmds"
	while read -r h; do
		help_of "$ZONEFUSE" "$h" | help_opts listed >"$work/opts-$h"
	done <"$work/cmds"
	help_of "$ZONEFUSE" mount | help_mount_opts >"$work/mopts"

	# A fake sysfs with one zoned device (a real node in /dev) and one
	# that is not; a fake mountinfo with a zonefuse mount (a space in its
	# path) and an ext4 one.
	local zdev='' b
	for b in /sys/block/*; do
		[ -b "/dev/${b##*/}" ] && zdev=${b##*/} && break
	done
	mkdir -p "$work/sys/plain/queue"
	echo none >"$work/sys/plain/queue/zoned"
	if [ -n "$zdev" ]; then
		mkdir -p "$work/sys/$zdev/queue"
		echo host-managed >"$work/sys/$zdev/queue/zoned"
	fi
	printf '%s\n' \
		"36 25 0:45 / $work/mp/zf\\040ckpt rw,nosuid,nodev - fuse.zonefuse /dev/nvme0n2 rw" \
		"37 25 8:1 / $work/mp/ext rw - ext4 /dev/sda1 rw" >"$work/mountinfo"
	mkdir -p "$work/d/sub"
	: >"$work/d/zns.img"

	(
		set +u
		export XDG_DATA_DIRS=$work/share BASH_COMPLETION_USER_DIR=$work/user
		_zonefuse_sysblock=$work/sys
		_zonefuse_mountinfo=$work/mountinfo
		# shellcheck source=/dev/null
		. "$bc"
		cfails=0
		cfail()
		{
			printf '%s: FAIL: %s\n' "$name" "$*" >&2
			cfails=$((cfails + 1))
		}
		# Complete the command line "$@" (the last word is the one
		# completed), as bash does on TAB; print COMPREPLY a line each.
		# Each command's completion function, as bash-completion
		# loads it on the first TAB.
		declare -A fns=()
		for c in zonefuse mkfs.zonefuse fsck.zonefuse fsck.fuse.zonefuse; do
			__load_completion "$c" &&
				fns[$c]=$(complete -p "$c" 2>/dev/null |
					sed -nE 's/.*-F ([^ ]+).*/\1/p')
			[ -n "${fns[$c]}" ] ||
				cfail "bash-completion loads no completion function for $c from $dir"
		done
		comp()
		{
			local fn=${fns[$1]-}
			[ -n "$fn" ] || return
			COMP_WORDS=("$@")
			COMP_CWORD=$(($# - 1))
			COMP_LINE="$*"
			COMP_POINT=${#COMP_LINE}
			COMPREPLY=()
			"$fn" "$1" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
			printf '%s\n' "${COMPREPLY[@]}" | sort -u | sed '/^$/d'
		}
		# The completion of "${@:2}" must be exactly the words of $1.
		expect_eq()
		{
			local want=$1 got
			shift
			got=$(comp "$@" | tr '\n' ' ')
			want=$(tr ' ' '\n' <<<"$want" | sort -u | sed '/^$/d' | tr '\n' ' ')
			[ "$got" = "$want" ] || cfail "'$*<TAB>' gives [$got], not [$want]"
		}
		# The completion of "${@:2}" must hold every line of file $1.
		expect_has()
		{
			local file=$1 got w
			shift
			got=$(comp "$@")
			while read -r w; do
				grep -qxF -- "$w" <<<"$got" ||
					cfail "'$*<TAB>' does not offer $w (got: $(tr '\n' ' ' <<<"$got"))"
			done <"$file"
		}

		expect_eq "mkfs mount" zonefuse m
		expect_eq "$(cat "$work/cmds")" zonefuse ''
		expect_eq "-V --version -h --help" zonefuse -
		while read -r c; do
			if [ "$c" = emu ]; then
				{ comp zonefuse emu create -; comp zonefuse emu media-error -; comp zonefuse emu ''; } |
					sort -u >"$work/got-emu"
				while read -r w; do
					grep -qxF -- "$w" "$work/got-emu" ||
						cfail "zonefuse emu create/media-error: $w is not offered"
				done <"$work/opts-emu"
				continue
			fi
			expect_has "$work/opts-$c" zonefuse "$c" -
		done <"$work/cmds"
		grep -- '^--' "$work/opts-mkfs" >"$work/long-mkfs"
		expect_has "$work/long-mkfs" zonefuse mkfs --
		[ "$(comp zonefuse mkfs -- | grep -vc '^--')" = 0 ] ||
			cfail "'zonefuse mkfs --<TAB>' offers words that do not start with --"
		expect_has "$work/opts-mkfs" mkfs.zonefuse -
		expect_has "$work/opts-fsck" fsck.zonefuse -
		expect_has "$work/opts-fsck" fsck.fuse.zonefuse -

		# mount -o: each option of `zonefuse mount --help`, and the last
		# of a comma-separated list.
		comp zonefuse mount img dir -o '' >"$work/got-o"
		while read -r w; do
			grep -q -- "^$w" "$work/got-o" ||
				cfail "'zonefuse mount -o <TAB>' does not offer $w"
		done <"$work/mopts"
		expect_eq "ro,commit=" zonefuse mount img dir -o ro,comm
		expect_eq "transport=auto transport=uring transport=dev" \
			zonefuse mount img dir -o tr

		# Devices, files and directories.
		expect_eq "$work/d/zns.img" zonefuse mkfs "$work/d/z"
		expect_eq "$work/d/zns.img" mkfs.zonefuse -L x "$work/d/z"
		expect_eq "$work/d/sub" zonefuse mount "$work/d/zns.img" "$work/d/s"
		expect_eq "1 2" zonefuse mkfs --metadata-copies ''
		if [ -n "$zdev" ]; then
			comp zonefuse zones /dev/ >"$work/got-dev"
			grep -qxF "/dev/$zdev" "$work/got-dev" ||
				cfail "'zonefuse zones /dev/<TAB>' does not offer /dev/$zdev, zoned in $work/sys"
			grep -qxF /dev/plain "$work/got-dev" &&
				cfail "'zonefuse zones /dev/<TAB>' offers /dev/plain, which is not zoned"
			grep -qxF /dev/null "$work/got-dev" &&
				cfail "'zonefuse zones /dev/<TAB>' offers /dev/null, a device node not zoned"
		else
			printf '%s: note: no block device in /dev: zoned device completion not checked\n' "$name"
		fi
		got=$(comp zonefuse scrub "$work/mp/")
		[ "$got" = "$work/mp/zf ckpt" ] ||
			cfail "'zonefuse scrub $work/mp/<TAB>' gives [$got], not the mount point [$work/mp/zf ckpt]"
		exit "$cfails"
	)
	fails=$((fails + $?))
}

case $what in
pages) pages ;;
completion) completion ;;
esac
if [ "$fails" -gt 0 ]; then
	log "$fails check(s) failed"
	exit 1
fi
log "all checks passed"
exit 0
