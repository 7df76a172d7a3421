#!/usr/bin/env bash
# tests/e2e/zones.sh: a deleted file's zones are reset and its space comes
# back.
#
# Writes a 30 MB file on 4 MiB zones, checks that user.zonefuse.extents
# names the zones it is in (and that those hold exactly its bytes), removes
# it, syncs, and checks live (the stats xattr, df) and after unmounting
# (zonefuse zones --json: condition, write pointer, reset count) that every
# zone of the file is empty again and the space is free again; with
# -o commit=1, without any sync.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

e2e_begin "a 30 MB file's zones (user.zonefuse.extents) are reset after rm and sync: empty in the stats xattr, df and zonefuse zones --json"
e2e_need getfattr attr

img=$E2E_WORK/img
mnt=$E2E_WORK/mnt
e2e_image "$img" --size 256M --zone-size 4M
e2e_mount "$img" "$mnt"

py=/usr/bin/python3
[ -x "$py" ] || e2e_skip "/usr/bin/python3 missing (Debian package python3), used to read JSON"

stat_of()
{
	getfattr --absolute-names --only-values -n user.zonefuse.stats "$mnt"
}

df_avail()
{
	df -B1 --output=avail "$mnt" | tail -n 1 | tr -d ' '
}

sync "$mnt"
avail0=$(df_avail)
empty0=$(e2e_json_get "$(stat_of)" zones_empty)
e2e_log "before: df avail $avail0, $empty0 empty zones"

size=$((30 * 1024 * 1024))
head -c "$size" /dev/urandom >"$E2E_WORK/big"
cp "$E2E_WORK/big" "$mnt/big" || e2e_die "cp of 30 MB onto the mount"
sync "$mnt/big" || e2e_fail "sync (fsync) of the file"

# ---- its extents ------------------------------------------------------------
ext=$(getfattr --absolute-names --only-values -n user.zonefuse.extents "$mnt/big") ||
	e2e_die "getfattr -n user.zonefuse.extents failed"
printf '%s\n' "$ext" >"$E2E_WORK/extents"
e2e_log "extents: $(tr '\n' ';' <"$E2E_WORK/extents")"
# Lines: zone Z offset O length L file_offset F
zones=$(awk '$1 == "zone" {print $2}' "$E2E_WORK/extents" | sort -n -u | tr '\n' ' ')
nzones=$(wc -w <<<"$zones")
total=$(awk '$1 == "zone" {s += $6} END {print s + 0}' "$E2E_WORK/extents")
[ "$total" -eq "$size" ] || e2e_fail "the extents add up to $total bytes, the file has $size"
[ "$nzones" -ge 8 ] || e2e_fail "30 MiB in $nzones zones of 4 MiB: at least 8 expected (zones: $zones)"
[ "$nzones" -le 10 ] || e2e_fail "30 MiB spread over $nzones zones of 4 MiB (zones: $zones)"
# The extents are where the bytes are: read each back from the image
# after unmounting, below. File offsets must cover 0..size without gaps.
if ! awk -v size="$size" '$1 == "zone" {print $8, $6}' "$E2E_WORK/extents" | sort -n |
	awk -v size="$size" 'BEGIN {next_off = 0}
		{ if ($1 != next_off) exit 1; next_off = $1 + $2 }
		END { if (next_off != size) exit 1 }'; then
	e2e_fail "the extents' file offsets do not cover the file without gaps or overlaps"
fi
avail1=$(df_avail)
e2e_log "with the file: df avail $avail1, $(e2e_json_get "$(stat_of)" zones_empty) empty zones, zones $zones"
[ $((avail0 - avail1)) -ge $((size - 4 * 1024 * 1024)) ] ||
	e2e_fail "df: avail fell by $((avail0 - avail1)) bytes for a $size byte file"

# The extents, checked against the image itself: unmount, read the zones.
e2e_umount "$img" "$mnt"
zone_size=$((4 * 1024 * 1024))
# Device offset X is at data_off + X in the emulator's image (docs/emulator.md).
data_off=$(od -An -t u8 -j 72 -N 8 "$img" | tr -d ' ')
extents_hold_file()
{
	local z off len foff

	while read -r _ z _ off _ len _ foff; do
		cmp -s <(dd if="$img" bs=4096 iflag=skip_bytes,count_bytes status=none \
			skip=$((data_off + z * zone_size + off)) count="$len") \
			<(dd if="$E2E_WORK/big" bs=4096 iflag=skip_bytes,count_bytes status=none \
				skip="$foff" count="$len") || return 1
	done <"$E2E_WORK/extents"
}
extents_hold_file || e2e_fail "an extent's bytes on the image are not the file's bytes at its file_offset"
"$ZONEFUSE" zones "$img" --json >"$E2E_WORK/zones-before.json" || e2e_fail "zonefuse zones --json"
e2e_mount "$img" "$mnt"
cmp -s "$E2E_WORK/big" "$mnt/big" || e2e_fail "the file read back after a remount differs"

# ---- rm, sync: the zones come back -----------------------------------------------
rm "$mnt/big" || e2e_fail "rm"
t0=$SECONDS
# fsync of the directory commits (sync -f: FUSE has no syncfs).
sync "$mnt" || e2e_fail "sync (fsync) of the mount's root"
empty=0
avail=0
for ((i = 0; i < 150; i++)); do
	empty=$(e2e_json_get "$(stat_of)" zones_empty)
	avail=$(df_avail)
	if [ "$empty" -ge "$empty0" ] && [ "$avail" -ge $((avail0 - 4 * 1024 * 1024)) ]; then
		break
	fi
	sleep 0.1
done
e2e_log "after rm and sync: $empty empty zones (before the file: $empty0), df avail $avail (before: $avail0), after $((SECONDS - t0)) s"
[ "$empty" -ge "$empty0" ] ||
	e2e_fail "stats xattr: $empty empty zones 15 s after rm and sync, $empty0 before the file was written"
[ "$avail" -ge $((avail0 - 4 * 1024 * 1024)) ] ||
	e2e_fail "df: avail $avail 15 s after rm and sync, $avail0 before the file was written"
reclaimable=$(e2e_json_get "$(stat_of)" reclaimable_bytes)
[ "$reclaimable" -lt $((4 * 1024 * 1024)) ] ||
	e2e_fail "stats xattr: $reclaimable bytes still reclaimable after the reset"

# ---- and on the device, after unmounting ------------------------------------------------
e2e_umount "$img" "$mnt"
"$ZONEFUSE" zones "$img" --json >"$E2E_WORK/zones.json" || e2e_fail "zonefuse zones --json"
if ! out=$("$py" - "$E2E_WORK/zones-before.json" "$E2E_WORK/zones.json" "$zones" <<'EOF'
import json, sys

before = {z["index"]: z for z in json.load(open(sys.argv[1]))["zones"]}
after = {z["index"]: z for z in json.load(open(sys.argv[2]))["zones"]}
bad = []
for i in map(int, sys.argv[3].split()):
    b, a = before[i], after[i]
    if b["wp"] == b["start"]:
        bad.append(f"zone {i} was empty while it held the file: {b}")
    if a["cond"] != "empty" or a["wp"] != a["start"]:
        bad.append(f"zone {i} is {a['cond']} with wp {a['wp']} (start {a['start']}), not empty")
    if a.get("resets", 1) <= b.get("resets", 0):
        bad.append(f"zone {i} was not reset: {b.get('resets')} resets before, {a.get('resets')} after")
print("\n".join(bad))
sys.exit(1 if bad else 0)
EOF
); then
	e2e_fail "zonefuse zones --json after rm: $out"
fi
e2e_fsck "$img"

# The space is still there after a remount; and with -o commit=1 no sync
# is needed: the periodic commit makes the rm durable and the zones follow.
e2e_mount "$img" "$mnt" -o commit=1
avail2=$(df_avail)
[ "$avail2" -ge $((avail0 - 4 * 1024 * 1024)) ] ||
	e2e_fail "df after a remount: avail $avail2, $avail0 before the file was written"
cp "$E2E_WORK/big" "$mnt/big2" || e2e_fail "cp of the file again"
sleep 2
used=$(e2e_json_get "$(stat_of)" zones_empty)
rm "$mnt/big2"
t0=$SECONDS
for ((i = 0; i < 100; i++)); do
	empty=$(e2e_json_get "$(stat_of)" zones_empty)
	[ "$empty" -ge "$empty0" ] && break
	sleep 0.1
done
e2e_log "commit=1, no sync: $used empty zones with the file, $empty $((SECONDS - t0)) s after rm"
[ "$empty" -ge "$empty0" ] ||
	e2e_fail "commit=1: $empty empty zones 10 s after rm without sync, $empty0 before"
e2e_umount "$img" "$mnt"
e2e_fsck "$img"

e2e_end
