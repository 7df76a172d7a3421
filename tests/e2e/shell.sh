#!/usr/bin/env bash
# tests/e2e/shell.sh: everyday shell tools on a real zonefuse mount.
#
# Copies a tree (part of /usr/share/doc, the repository's sources, files of
# odd sizes, a 30 MB file, symlinks, hard links) with cp -a, tar and
# rsync -a, and checks each copy with diff -r and sha256sum; then ls, du,
# df, find -newer, mv, ln -s, ln, rm -r; a git repository (commits, gc,
# fsck, clone) and an SQLite database (WAL, VACUUM, integrity_check);
# unmounts, remounts, checks it all
# again and runs fsck. Last, mounts through mount(8) (-t fuse.zonefuse, the
# mount.fuse3 helper) with an fstab-style option string.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

e2e_begin "cp -a, tar, rsync -a, diff -r, sha256sum, ls, du, df, find -newer, mv, ln -s, ln, rm -r, git, SQLite on a mount; all of it again after a remount; fsck clean; mount -t fuse.zonefuse with fstab options"
e2e_need rsync
e2e_need getfattr attr
e2e_need sha256sum coreutils
e2e_need git
repo=$(cd "$here/../.." && pwd -P)

img=$E2E_WORK/img
mnt=$E2E_WORK/mnt
src=$E2E_WORK/src
e2e_image "$img" --size 1G --zone-size 4M
e2e_mount "$img" "$mnt"

# ---- the source tree ----------------------------------------------------
mkdir -p "$src"
cp -a "$repo/src" "$repo/include" "$src/" || e2e_die "cannot copy $repo/src"
mkdir -p "$src/doc"
# Part of /usr/share/doc: real files, gzip, symlinks between packages.
if [ -d /usr/share/doc ]; then
	find /usr/share/doc -mindepth 1 -maxdepth 1 | sort | head -n 60 |
		xargs -r -d '\n' cp -a -t "$src/doc/" 2>/dev/null
fi
mkdir -p "$src/odd/deep/er/still/deeper" "$src/empty dir" "$src/links"
for n in 0 1 2 511 512 513 4095 4096 4097 8191 65535 65536 65537 \
	131073 1048575 1048576 1048577 3000001 4194303 4194304 4194305; do
	head -c "$n" /dev/urandom >"$src/odd/f$n"
done
head -c 777 /dev/urandom >"$src/odd/deep/er/still/deeper/leaf"
printf 'name with spaces\n' >"$src/odd/a file with spaces"
printf 'utf-8\n' >"$src/odd/$(printf 'caf\303\251')"
# The 30 MB file is copied once, by cp -a, beside the tree: in the tree it
# would be most of what every copy and check reads.
head -c $((30 * 1024 * 1024)) /dev/urandom >"$E2E_WORK/big30M"
ln -s ../odd/f4097 "$src/links/rel"
ln -s "$src/odd/f1" "$src/links/abs"
ln -s nowhere "$src/links/dangling"
ln "$src/odd/f65537" "$src/links/hard"
chmod 0640 "$src/odd/f511"
chmod 0755 "$src/odd/f512"
touch -d '2001-02-03 04:05:06.789' "$src/odd/f513"
(cd "$src" && find . -type f -print0 | sort -z | xargs -0 sha256sum) >"$E2E_WORK/src.sha" ||
	e2e_die "cannot checksum the source tree"
nfiles=$(wc -l <"$E2E_WORK/src.sha")
e2e_log "source tree: $nfiles files, $(du -sh "$src" | cut -f1)"

# What ls -l shows of a tree, in a form that can be compared: type, mode,
# owner, size (files), mtime to the nanosecond, symlink target, link count.
tree_meta()
{
	(cd "$1" && find . -mindepth 1 \( -type d -printf '%P %y %m %U %G %T@\n' \) -o \
		\( ! -type d -printf '%P %y %m %U %G %s %T@ %n %l\n' \) | sort)
}

# Checks that copy $1 on the mount is the source tree: diff -r, checksums,
# metadata.
same_tree()
{
	local copy=$1 what=$2

	e2e_check "$what: diff -r against the source" diff -r --no-dereference "$src" "$copy"
	if ! (cd "$copy" && sha256sum --quiet -c "$E2E_WORK/src.sha"); then
		e2e_fail "$what: sha256sum -c against the source's sums"
	fi
	if ! diff <(tree_meta "$src") <(tree_meta "$copy") >"$E2E_WORK/meta.diff"; then
		e2e_fail "$what: modes, owners, sizes, mtimes, links differ from the source: $(head -n 20 "$E2E_WORK/meta.diff")"
	fi
}

df_avail()
{
	df -B1 --output=avail "$1" | tail -n 1 | tr -d ' '
}

df_size()
{
	df -B1 --output=size "$1" | tail -n 1 | tr -d ' '
}

size0=$(df_size "$mnt")
avail0=$(df_avail "$mnt")
e2e_log "df before: size $size0, avail $avail0"
[ "$avail0" -gt $((900 * 1024 * 1024)) ] || e2e_fail "df: only $avail0 bytes available on a fresh 1 GiB device"
[ "$avail0" -le "$size0" ] || e2e_fail "df: avail $avail0 > size $size0"

# ---- cp -a ----------------------------------------------------------------
t0=$SECONDS
cp -a "$src" "$mnt/cp" || e2e_fail "cp -a $src $mnt/cp"
cp -a "$E2E_WORK/big30M" "$mnt/big30M" || e2e_fail "cp -a of a 30 MB file"
sync "$mnt/big30M"
e2e_log "cp -a: $((SECONDS - t0)) s"
same_tree "$mnt/cp" "cp -a"
e2e_check "cp -a of a 30 MB file: cmp" cmp "$E2E_WORK/big30M" "$mnt/big30M"
[ "$(sha256sum <"$E2E_WORK/big30M")" = "$(sha256sum <"$mnt/big30M")" ] ||
	e2e_fail "cp -a of a 30 MB file: sha256sum differs"

# df: the copy takes at least its own size and not much more.
avail1=$(df_avail "$mnt")
srcbytes=$(($(du -s -B1 --apparent-size "$src" | cut -f1) + 30 * 1024 * 1024))
used=$((avail0 - avail1))
e2e_log "df after cp -a: avail $avail1 (used $used for $srcbytes bytes of files)"
[ "$(df_size "$mnt")" -eq "$size0" ] || e2e_fail "df: the size changed from $size0 to $(df_size "$mnt")"
if [ "$used" -lt $((srcbytes * 9 / 10)) ] || [ "$used" -gt $((srcbytes * 2 + 16 * 1024 * 1024)) ]; then
	e2e_fail "df: avail fell by $used bytes for $srcbytes bytes copied"
fi

# ---- tar --------------------------------------------------------------------
mkdir "$mnt/tar"
t0=$SECONDS
# pax keeps the nanoseconds of the times.
if ! tar --format=posix -C "$src" -cf - . | tar -C "$mnt/tar" -xpf -; then
	e2e_fail "tar -c | tar -x into the mount"
fi
e2e_log "tar: $((SECONDS - t0)) s"
same_tree "$mnt/tar" "tar"
# And back out again: a tar of the mount lists the same members.
if ! diff <(tar -C "$src" -cf - . | tar -tvf - | sort) \
	<(tar -C "$mnt/tar" -cf - . | tar -tvf - | sort) >"$E2E_WORK/tar.diff"; then
	e2e_fail "tar of the mount differs from tar of the source: $(head -n 10 "$E2E_WORK/tar.diff")"
fi

# ---- ls -l, du -----------------------------------------------------------------
ls_line=$(ls -l "$mnt/big30M") || e2e_fail "ls -l big30M"
case "$ls_line" in
-rw-r--r--*" root root 31457280 "*big30M) ;;
*) e2e_fail "ls -l big30M: unexpected: $ls_line" ;;
esac
ls_line=$(ls -l "$mnt/cp/links/rel")
case "$ls_line" in
l*"rel -> ../odd/f4097") ;;
*) e2e_fail "ls -l of a symlink: unexpected: $ls_line" ;;
esac
# ls itself is under test here, hence no find.
# shellcheck disable=SC2012
{
	n_mnt=$(ls -1A "$mnt/cp/odd" | wc -l)
	n_src=$(ls -1A "$src/odd" | wc -l)
}
[ "$n_mnt" -eq "$n_src" ] || e2e_fail "ls -A of odd/ lists $n_mnt names, the source $n_src"
du_big=$(du -B1 "$mnt/big30M" | cut -f1)
if [ "$du_big" -lt 31457280 ] || [ "$du_big" -gt $((31457280 + 4 * 1024 * 1024)) ]; then
	e2e_fail "du of a 30 MiB file says $du_big bytes"
fi
du_app=$(du -s -B1 --apparent-size "$mnt/cp" | cut -f1)
du_src=$(du -s -B1 --apparent-size "$src" | cut -f1)
# Directory sizes are the file system's own; files must add up the same.
du_app_f=$(find "$mnt/cp" ! -type d -printf '%s\n' | awk '{s += $1} END {print s}')
du_src_f=$(find "$src" ! -type d -printf '%s\n' | awk '{s += $1} END {print s}')
[ "$du_app_f" -eq "$du_src_f" ] || e2e_fail "sizes of the files add up to $du_app_f on the mount, $du_src_f in the source"
e2e_log "du --apparent-size: mount $du_app, source $du_src"
du_blocks=$(du -s -B1 "$mnt/cp" | cut -f1)
[ "$du_blocks" -ge "$du_src_f" ] || e2e_fail "du: the copy occupies $du_blocks bytes, less than its $du_src_f bytes of data"

# ---- find -newer ---------------------------------------------------------------
mkdir "$mnt/newer"
cp -a "$src/odd/f0" "$src/odd/f1" "$src/odd/f2" "$src/odd/f4097" "$mnt/newer/"
touch -d '2005-01-01' "$mnt/newer/"*
touch -d '2010-01-01' "$mnt/newer/ref"
printf 'x' >>"$mnt/newer/f1"
touch "$mnt/newer/f2"
newer=$(cd "$mnt/newer" && find . -type f -newer ref | sort | tr '\n' ' ')
[ "$newer" = "./f1 ./f2 " ] || e2e_fail "find -newer ref: got '$newer', expected './f1 ./f2 '"
older=$(cd "$mnt/newer" && find . -type f ! -newer ref | sort | tr '\n' ' ')
[ "$older" = "./f0 ./f4097 ./ref " ] || e2e_fail "find ! -newer ref: got '$older'"

# ---- mv ---------------------------------------------------------------------------
mkdir -p "$mnt/mv/a/sub" "$mnt/mv/b"
cp -a "$src/odd/f4097" "$mnt/mv/a/file"
cp -a "$src/include" "$mnt/mv/a/sub/"
mv "$mnt/mv/a/file" "$mnt/mv/b/file.moved" || e2e_fail "mv a file across directories"
mv "$mnt/mv/a/sub" "$mnt/mv/b/" || e2e_fail "mv a directory across directories"
[ ! -e "$mnt/mv/a/file" ] || e2e_fail "mv: the old file name is still there"
[ ! -e "$mnt/mv/a/sub" ] || e2e_fail "mv: the old directory name is still there"
e2e_check "mv: the moved file's data" cmp "$src/odd/f4097" "$mnt/mv/b/file.moved"
e2e_check "mv: the moved directory's contents" diff -r "$src/include" "$mnt/mv/b/sub/include"
[ "$(stat -c %h "$mnt/mv/a")" -eq 2 ] || e2e_fail "mv: a/ has link count $(stat -c %h "$mnt/mv/a"), not 2, after its subdirectory left"
[ "$(stat -c %h "$mnt/mv/b")" -eq 3 ] || e2e_fail "mv: b/ has link count $(stat -c %h "$mnt/mv/b"), not 3, with one subdirectory"
mv "$mnt/mv/b/file.moved" "$mnt/mv/b/file2" || e2e_fail "mv (rename in place)"
cp "$src/odd/f1" "$mnt/mv/b/victim"
mv -f "$mnt/mv/b/file2" "$mnt/mv/b/victim" || e2e_fail "mv over an existing file"
e2e_check "mv over an existing file: the data" cmp "$src/odd/f4097" "$mnt/mv/b/victim"
names=$(cd "$mnt/mv/b" && printf '%s ' *)
[ "$names" = "sub victim " ] || e2e_fail "mv: b/ lists '$names'"

# ---- ln -s, ln -------------------------------------------------------------------------
ln -s ../b/victim "$mnt/mv/a/sym" || e2e_fail "ln -s"
[ "$(readlink "$mnt/mv/a/sym")" = ../b/victim ] || e2e_fail "readlink: $(readlink "$mnt/mv/a/sym")"
e2e_check "reading through a symlink" cmp "$src/odd/f4097" "$mnt/mv/a/sym"
ln "$mnt/mv/b/victim" "$mnt/mv/a/hard" || e2e_fail "ln (hard link)"
[ "$(stat -c %h "$mnt/mv/b/victim")" -eq 2 ] || e2e_fail "ln: link count $(stat -c %h "$mnt/mv/b/victim"), not 2"
[ "$(stat -c %i "$mnt/mv/b/victim")" = "$(stat -c %i "$mnt/mv/a/hard")" ] || e2e_fail "ln: the two names have different inode numbers"
printf 'appended through the other name' >>"$mnt/mv/a/hard"
cmp -s "$mnt/mv/a/hard" "$mnt/mv/b/victim" || e2e_fail "ln: a write through one name is not seen through the other"
rm "$mnt/mv/b/victim"
[ "$(stat -c %h "$mnt/mv/a/hard")" -eq 1 ] || e2e_fail "rm of one hard link: link count $(stat -c %h "$mnt/mv/a/hard"), not 1"
[ "$(tail -c 31 "$mnt/mv/a/hard")" = "appended through the other name" ] || e2e_fail "the remaining hard link lost data"
[ ! -e "$mnt/mv/a/sym" ] || e2e_fail "a symlink to a removed file still resolves"
# The source's hard link pair was copied as a pair by cp -a, tar and rsync.
[ "$(stat -c %i "$mnt/cp/links/hard")" = "$(stat -c %i "$mnt/cp/odd/f65537")" ] ||
	e2e_fail "cp -a did not keep the hard link pair"
[ "$(stat -c %i "$mnt/tar/links/hard")" = "$(stat -c %i "$mnt/tar/odd/f65537")" ] ||
	e2e_fail "tar did not keep the hard link pair"

# ---- rm -r ----------------------------------------------------------------------------------
cp -a "$src/doc" "$mnt/doomed" 2>/dev/null || cp -a "$src/src" "$mnt/doomed"
rm -r "$mnt/doomed" || e2e_fail "rm -r"
[ ! -e "$mnt/doomed" ] || e2e_fail "rm -r left $mnt/doomed"

# ---- rsync -a -----------------------------------------------------------------------------------
t0=$SECONDS
rsync -aH "$src/" "$mnt/rsync/" || e2e_fail "rsync -aH into the mount"
e2e_log "rsync: $((SECONDS - t0)) s"
same_tree "$mnt/rsync" "rsync -aH"
changes=$(rsync -aHc --itemize-changes --dry-run "$src/" "$mnt/rsync/")
[ -z "$changes" ] || e2e_fail "rsync -c after rsync still sees changes: $(printf '%s' "$changes" | head -n 5)"
# An update in place: rsync rewrites a changed file (a new temp file, then
# rename over the old one).
printf 'changed' | dd of="$src/odd/f4096" bs=1 seek=100 conv=notrunc status=none
rsync -aH "$src/" "$mnt/rsync/" || e2e_fail "rsync -aH of a changed file"
e2e_check "rsync: the changed file" cmp "$src/odd/f4096" "$mnt/rsync/odd/f4096"
(cd "$src" && find . -type f -print0 | sort -z | xargs -0 sha256sum) >"$E2E_WORK/src.sha"
cp -a "$src/odd/f4096" "$mnt/cp/odd/f4096"
cp -a "$src/odd/f4096" "$mnt/tar/odd/f4096"

# ---- git and SQLite --------------------------------------------------------------------------------
# Programs that keep their own on-disk structures: git (loose objects,
# packs written then renamed, an index rewritten in place, mmap of the
# packs) and SQLite (small writes in place through read-write opens,
# fsync, a WAL file beside the database, VACUUM rewriting it whole).
gitc() { git -c user.email=e2e@zonefuse -c user.name=e2e "$@"; }
git init -q "$mnt/repo" || e2e_fail "git init"
for i in $(seq 1 30); do
	echo "line $i" >>"$mnt/repo/f.txt"
	cp "$src/odd/f4096" "$mnt/repo/blob$((i % 3))"
	if ! { gitc -C "$mnt/repo" add -A &&
		gitc -C "$mnt/repo" commit -qm "commit $i"; }; then
		e2e_fail "git commit $i"
		break
	fi
done
gitc -C "$mnt/repo" gc -q || e2e_fail "git gc"
e2e_check "git fsck --full after gc" git -C "$mnt/repo" fsck --full --no-progress
git clone -q "$mnt/repo" "$mnt/repo2" || e2e_fail "git clone within the mount"
[ "$(git -C "$mnt/repo2" rev-list --count HEAD)" = 30 ] ||
	e2e_fail "the clone does not have the 30 commits"
# sqlite_check DB write|read: with write, build the database first; then
# check it. Called through e2e_check.
# shellcheck disable=SC2317
sqlite_check()
{
	python3 - "$1" "$2" <<'PY'
import sqlite3, sys
path, step = sys.argv[1], sys.argv[2]
db = sqlite3.connect(path)
if step == "write":
    db.execute("pragma journal_mode=wal")
    db.execute("create table t(k integer primary key, v text)")
    for b in range(40):
        with db:
            db.executemany("insert into t(v) values (?)",
                           [("x" * (b % 7 * 50) + str(i),) for i in range(250)])
    db.close()
    db = sqlite3.connect(path)
    db.execute("pragma journal_mode=delete")
    with db:
        db.execute("delete from t where k % 3 = 0")
    db.execute("vacuum")
ok = db.execute("pragma integrity_check").fetchone()[0]
n = db.execute("select count(*) from t").fetchone()[0]
if ok != "ok" or n != 6667:
    sys.exit(f"integrity_check: {ok}; {n} rows, 6667 expected")
PY
}
e2e_check "SQLite: WAL inserts, deletes, VACUUM, integrity_check" \
	sqlite_check "$mnt/t.db" write

# ---- everything again after a remount --------------------------------------------------------------
(cd "$mnt" && find . -type f -print0 | sort -z | xargs -0 sha256sum) >"$E2E_WORK/mnt.sha"
tree_meta "$mnt" >"$E2E_WORK/mnt.meta"
avail_before=$(df_avail "$mnt")
e2e_umount "$img" "$mnt"
e2e_fsck "$img"
e2e_mount "$img" "$mnt"
if ! (cd "$mnt" && sha256sum --quiet -c "$E2E_WORK/mnt.sha"); then
	e2e_fail "after the remount: some file's sha256sum changed"
fi
if ! diff "$E2E_WORK/mnt.meta" <(tree_meta "$mnt") >"$E2E_WORK/meta2.diff"; then
	e2e_fail "after the remount: metadata changed: $(head -n 20 "$E2E_WORK/meta2.diff")"
fi
# The sums and the metadata above cover all three copies; diff one again.
e2e_check "after the remount: diff -r of the cp -a copy against the source" \
	diff -r --no-dereference "$src" "$mnt/cp"
avail_after=$(df_avail "$mnt")
e2e_log "df avail before the remount $avail_before, after $avail_after"
e2e_check "after the remount: git fsck --full" \
	git -C "$mnt/repo" fsck --full --no-progress
e2e_check "after the remount: SQLite integrity_check" sqlite_check "$mnt/t.db" read
# Freed space may come back after the remount; it may not vanish.
[ "$avail_after" -ge $((avail_before - 8 * 1024 * 1024)) ] ||
	e2e_fail "df: avail fell from $avail_before to $avail_after across a remount"

# ---- df after removing everything: the space comes back -------------------------------------------
rm -r "$mnt/cp" "$mnt/tar" "$mnt/rsync" "$mnt/mv" "$mnt/newer" "$mnt/big30M" \
	"$mnt/repo" "$mnt/repo2" "$mnt/t.db" || e2e_fail "rm -r of the copies"
sync -f "$mnt"
avail_end=0
for ((i = 0; i < 100; i++)); do
	avail_end=$(df_avail "$mnt")
	[ "$avail_end" -ge $((avail0 - 16 * 1024 * 1024)) ] && break
	sleep 0.2
done
e2e_log "df after rm -r of everything: avail $avail_end (at the start $avail0)"
[ "$avail_end" -ge $((avail0 - 16 * 1024 * 1024)) ] ||
	e2e_fail "df: avail is $avail_end after removing everything, $avail0 at the start"
[ -z "$(ls -A "$mnt")" ] || e2e_fail "the root is not empty after rm -r: $(ls -A "$mnt")"
e2e_umount "$img" "$mnt"
e2e_fsck "$img"

# ---- mount(8) and the mount.fuse3 helper, with fstab options ----------------------------------------
# mount(8) runs /sbin/mount.fuse3 with an emptied environment, and that runs
# "zonefuse IMG DIR -o OPTS" through /bin/sh, which then looks in the
# default PATH (/usr/local/sbin first). So for `mount -t fuse.zonefuse` a
# symlink to the binary under test is put in /usr/local/sbin for the
# duration (only if that name is free, and removed on exit). The helper
# itself, called directly, finds zonefuse on PATH: a symlink in a temp dir.

# mounted_as DIR WHAT: the mount on DIR is $img as fuse.zonefuse with the
# fstab flags; write a file on it, unmount.
mounted_as()
{
	local line

	if ! mountpoint -q "$mnt"; then
		e2e_fail "$1: no mount point after it"
		return 1
	fi
	line=$(grep -F " $mnt " /proc/self/mounts)
	e2e_log "$1: $line"
	case "$line" in
	"$img $mnt fuse.zonefuse rw,nosuid,nodev,noatime"*) ;;
	*) e2e_fail "$1: /proc/self/mounts shows '$line', not $img as fuse.zonefuse rw,nosuid,nodev,noatime" ;;
	esac
	printf '%s\n' "$1" >"$mnt/hello" || e2e_fail "$1: cannot write on the mount"
	e2e_umount "$img" "$mnt"
}

fstab_opts=rw,nosuid,nodev,noatime,_netdev,nofail
helper=$(command -v mount.fuse3 || true)
[ -n "$helper" ] || [ ! -x /sbin/mount.fuse3 ] || helper=/sbin/mount.fuse3
if [ -z "$helper" ]; then
	e2e_fail "mount.fuse3 is missing (Debian package fuse3)"
else
	bindir=$E2E_WORK/bin
	mkdir -p "$bindir"
	ln -s "$ZONEFUSE" "$bindir/zonefuse"
	e2e_track "$img" "$mnt"

	# The helper form: mount.fuse3 IMG DIR -t zonefuse -o OPTIONS.
	if ! PATH="$bindir:$PATH" "$helper" "$img" "$mnt" -t zonefuse -o "$fstab_opts"; then
		e2e_fail "mount.fuse3 $img $mnt -t zonefuse -o $fstab_opts"
	else
		mounted_as "mount.fuse3 -t zonefuse -o $fstab_opts"
	fi

	# mount(8): -t fuse.zonefuse, as an fstab line does.
	sbin_link=/usr/local/sbin/zonefuse
	if [ -e "$sbin_link" ] || [ -L "$sbin_link" ]; then
		e2e_log "not checking mount -t fuse.zonefuse: $sbin_link exists and is not ours to replace"
	elif ! mkdir -p /usr/local/sbin || ! ln -s "$ZONEFUSE" "$sbin_link"; then
		e2e_fail "cannot make the symlink $sbin_link for mount -t fuse.zonefuse"
	else
		E2E_REMOVE+=("$sbin_link")
		if ! mount -t fuse.zonefuse -o "$fstab_opts" "$img" "$mnt"; then
			e2e_fail "mount -t fuse.zonefuse -o $fstab_opts $img $mnt"
		else
			mounted_as "mount -t fuse.zonefuse -o $fstab_opts"
		fi
		# Read-only, as in fstab: the file is there, writes fail with EROFS.
		if ! mount -t fuse.zonefuse -o ro,nofail "$img" "$mnt"; then
			e2e_fail "mount -t fuse.zonefuse -o ro,nofail $img $mnt"
		else
			[ "$(cat "$mnt/hello")" = "mount -t fuse.zonefuse -o $fstab_opts" ] ||
				e2e_fail "ro mount: hello has '$(cat "$mnt/hello")'"
			if err=$(touch "$mnt/new" 2>&1); then
				e2e_fail "ro mount: touch of a new file succeeded"
			else
				case "$err" in
				*"Read-only file system"*) ;;
				*) e2e_fail "ro mount: touch failed with '$err', not EROFS" ;;
				esac
			fi
			e2e_umount "$img" "$mnt"
		fi
		rm -f "$sbin_link"
	fi
	e2e_fsck "$img"
fi

e2e_end
