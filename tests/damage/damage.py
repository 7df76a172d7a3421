#!/usr/bin/python3
"""tests/damage/damage.py: one damaged spot at a time, and what every tool
then does with it.

A populated image (files of recorded content, fsynced, in directories,
unmounted cleanly) is copied, and one spot of it damaged: a 4 KiB block of
each metadata structure (a superblock, the newest anchor, the journal's
zone header, its snapshot, a block in the middle of its log, its last
block; the same in the journal's mirror copy; or one block of the log
in both copies at once) or of file data, with random bytes, with zeros or as a media error
(the emulator's unreadable block: reads of it fail with EIO, as a drive's);
or a data zone's write pointer lowered in the device's zone table. Then:

1. a writable mount: it either succeeds, and then every file reads back
   bit-exact or fails with EIO (never wrong bytes, never missing), or it is
   refused with a message on stderr, and the image is not changed;
2. if refused, a read-only mount (`-o ro`): what it serves is bit-exact or
   EIO; files may be missing only after its warning said the metadata is
   damaged;
3. fsck (run first: it writes nothing): it agrees with the mount (what
   the mount refused, fsck reports); `fsck --data` reports damaged file
   data, and `zonefuse scrub` of a writable mount names every file that
   reads EIO;
4. fsck --repair: exit 0 leaves the image as it was, exit 1 leaves it
   sound (fsck 0 after, and a writable mount works); files exact or EIO,
   or gone where the repair said it gave changes up.

Outcomes that are not the healed one are listed in EXPECTED (by design:
the same block bad in both copies of the journal is refused, as any
damage without a copy is) and KNOWN_GAPS (what the code does not do yet).
The suite fails on any other, and on a listed one that no longer shows,
so that the lists stay true.

Usage: damage.py [--rounds N] [--seed S] [--json FILE] [TARGET ...]
The default suite runs one round per (target, kind); scripts/damage-test.sh
runs more, with other seeds (other blocks of the log and of the data).
"""
import argparse
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "e2e"))
import e2elib as e  # noqa: E402

KiB, MiB = 1 << 10, 1 << 20
BS = 4096
KINDS = ("random", "zero", "media")
TARGETS = ("super-a", "super-b", "anchor", "chain-header", "snapshot",
           "log-middle", "log-last", "mirror-header", "mirror-snapshot",
           "mirror-log", "log-both", "data", "wp")

# (target, kind) -> what happens there other than healing: "refused": a
# writable mount is refused, the data safe on the device (no second copy
# of that block to serve instead); "unrepairable": fsck --repair cannot fix
# it either (exit 4); "wrong": file data reads back wrong; "unreported":
# fsck passes it.
EXPECTED = {("log-both", k): {"refused"} for k in KINDS}
KNOWN_GAPS = {
    # A data zone's write pointer: data has one copy (its checksums find
    # wrong bytes; this is data that was never there).
    ("wp", "lowered"): {"refused"},
}


def populate(img, rng):
    """Files in directories, each fsynced; a clean unmount. Returns
    {relative path: content}."""
    m = e.Mount(img, "populate")
    want = {}
    for d in range(4):
        os.makedirs(m.path(f"d{d}"))
    for i in range(48):
        n = rng.choice([700, 5000, 40 * KiB, 300 * KiB, MiB + 123, 3 * MiB])
        rel = f"d{i % 4}/f{i:03d}"
        buf = rng.randbytes(n)
        with open(m.path(rel), "wb") as f:
            f.write(buf)
            f.flush()
            os.fsync(f.fileno())
        want[rel] = buf
    m.umount()
    return want


def data_off(img):
    with open(img, "rb") as f:
        f.seek(72)
        return struct.unpack("<Q", f.read(8))[0]


def zones(img):
    return json.loads(e.zf("zones", img, "--json").stdout)["zones"]


def where(img, target, rng):
    """Device offset of the block to damage for target (or the zone whose
    write pointer to lower, for "wp"), on the undamaged image."""
    st = json.loads(e.zf("stat", img, "--json").stdout)
    zs = zones(img)
    sa, sb = st["super_zones"]
    if target == "super-a":
        return zs[sa]["start"]
    if target == "super-b":
        return zs[sb]["start"]
    if target == "anchor":
        # The live super zone is the one holding more than its superblock
        # and not finished; its newest anchor is the unit below its wp.
        live = [z for z in (zs[sa], zs[sb])
                if z["cond"] != "full" and z["wp"] > z["start"] + BS]
        z = live[0] if live else max((zs[sa], zs[sb]), key=lambda z: z["wp"])
        return z["wp"] - BS
    chain = st["chain_zones"]
    if target.startswith("mirror-"):
        assert st["metadata_copies"] == 2, "the journal has no mirror"
        chain = st["mirror_zones"]
        target = {"mirror-header": "chain-header", "mirror-snapshot": "snapshot",
                  "mirror-log": "log-middle"}[target]
    head, last = zs[chain[0]], zs[chain[-1]]
    if target == "chain-header":
        return head["start"]
    if target == "snapshot":
        return head["start"] + BS
    if target == "log-last":
        return last["wp"] - BS
    if target in ("log-middle", "log-both"):
        lo, hi = head["start"] + 2 * BS, last["wp"] - 2 * BS
        if len(chain) > 1:
            lo, hi = last["start"] + BS, last["wp"] - 2 * BS
        assert hi > lo, f"the log is too short to damage its middle: {lo}..{hi}"
        at = lo + rng.randrange((hi - lo) // BS + 1) * BS
        if target == "log-middle":
            return at
        # The same block of the mirror: the copies are written in lockstep.
        mlast = zs[st["mirror_zones"][len(chain) - 1]]
        return [at, mlast["start"] + (at - last["start"])]
    extents = []
    for line in e.zf("dump", img).stdout.splitlines():
        f = line.split()
        if f and f[0] == "extent":
            z, off, ln = int(f[2]), int(f[4]), int(f[6])
            extents.append((zs[z]["start"] + off, ln, z))
    if target == "data":
        a, ln, _ = rng.choice([x for x in extents if x[1] >= BS])
        return a + rng.randrange(ln // BS) * BS
    assert target == "wp"
    a, ln, z = rng.choice([x for x in extents if x[1] >= 2 * BS])
    return z, a + (ln // 2) // BS * BS


def set_wp(img, zone, wp):
    """Lower a zone's write pointer in the emulator's zone table (a closed
    zone; its entry's CRC made good): what a drive reports after data
    never landed."""
    with open(img, "r+b") as f:
        at = 4096 + 32 * zone
        f.seek(at)
        ent = bytearray(f.read(32))
        struct.pack_into("<Q", ent, 0, wp)
        ent[24] = 0x4  # closed
        struct.pack_into("<I", ent, 28, crc32c(bytes(ent[:28])))
        f.seek(at)
        f.write(ent)


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def damage(img, target, kind, spot, rng):
    if target == "wp":
        zone, wp = spot
        set_wp(img, zone, wp)
        return f"zone {zone} write pointer lowered to {wp:#x}"
    if isinstance(spot, list):
        return " and ".join(damage(img, target, kind, s, rng) for s in spot)
    if kind == "media":
        e.zf("emu", "media-error", img, "--offset", str(spot), "--length", str(BS))
        return f"unreadable block at {spot:#x}"
    buf = rng.randbytes(BS) if kind == "random" else bytes(BS)
    with open(img, "r+b") as f:
        f.seek(data_off(img) + spot)
        f.write(buf)
    return f"{kind} bytes over the block at {spot:#x}"


def read_all(root, want):
    """Each file: 'exact', 'eio', 'missing', 'short' (a true prefix: a
    file a repair cut where its data stopped) or 'wrong'."""
    out = {}
    for rel, buf in want.items():
        try:
            with open(os.path.join(root, rel), "rb") as f:
                got = f.read()
        except FileNotFoundError:
            out[rel] = "missing"
            continue
        except OSError as x:
            out[rel] = "eio" if x.errno == 5 else f"errno {x.errno}"
            continue
        out[rel] = "exact" if got == buf else \
            "short" if len(got) < len(buf) and buf.startswith(got) else "wrong"
    return out


def tally(files):
    t = {}
    for v in files.values():
        t[v] = t.get(v, 0) + 1
    return t


def try_mount(img, name, ro=False):
    """(Mount or None, CompletedProcess of the attempt)."""
    return e.try_mount(img, name, "ro" if ro else None)


def same_bytes(a, b):
    """The two images hold the same bytes (cmp)."""
    return subprocess.run(["cmp", "-s", a, b]).returncode == 0


def one_round(base, want, target, kind, rng, res):
    img = os.path.join(e.WORK, "work.img")
    damaged = os.path.join(e.WORK, "damaged.img")
    before = os.path.join(e.WORK, "before.img")
    shutil.copyfile(base, img)
    spot = where(img, target, rng)
    what = damage(img, target, kind, spot, rng)
    shutil.copyfile(img, damaged)
    r = {"target": target, "kind": kind, "damage": what, "problems": [],
         "gaps": set(), "said": ""}
    bad = r["problems"].append

    # fsck first: it reads, it does not write.
    fk = e.zf("fsck", img, check=False)
    r["fsck"] = fk.returncode
    if fk.returncode not in (0, 4, 8):
        bad(f"fsck exited {fk.returncode}")
    if not same_bytes(img, damaged):
        bad("fsck without --repair changed the image")
    if fk.returncode == 0 and target != "data":
        r["gaps"].add("unreported")
    # fsck --data reads the file data too: damage there is reported.
    fd = e.zf("fsck", "--data", img, check=False)
    r["fsck_data"] = fd.returncode
    if target == "data" and fd.returncode != 4:
        bad(f"fsck --data exited {fd.returncode} over damaged data: {fd.stdout.strip()[-300:]}")
    if fk.returncode == 0 and fd.returncode != 0 and target != "data":
        bad(f"fsck --data exited {fd.returncode} where fsck passed")

    m, mr = try_mount(img, "rw")
    if mr.returncode < 0:
        bad(f"mount died of signal {-mr.returncode}")
    if m:
        files = read_all(m.dir, want)
        sc = e.zf("scrub", m.dir, check=False)
        r["scrub"] = sc.returncode
        eio_files = {rel for rel, v in files.items() if v == "eio"}
        if eio_files and sc.returncode != 4:
            bad(f"scrub of the mount exited {sc.returncode} with files reading EIO")
        for rel in eio_files:
            if rel not in sc.stdout:
                bad(f"scrub did not name {rel}, which reads EIO")
        if not eio_files and sc.returncode != 0:
            bad(f"scrub exited {sc.returncode} on a mount whose files all read: {sc.stdout.strip()[-300:]}")
        m.umount()
        r["mount"] = "rw"
        after = e.zf("fsck", img, check=False).returncode
        if after != 0:
            bad(f"fsck after a writable mount took the damage: exit {after}")
    else:
        r["mount"] = "refused"
        r["said"] = mr.stderr.strip().splitlines()[-1][:160] if mr.stderr.strip() else ""
        if not mr.stderr.strip():
            bad("the writable mount was refused without a message")
        if not same_bytes(img, damaged):
            bad("the refused writable mount changed the image")
        if fk.returncode == 0:
            bad("fsck passes what the mount refused")
        m, rr = try_mount(img, "ro", ro=True)
        if m:
            files = read_all(m.dir, want)
            m.umount()
            r["mount"] = "refused, ro served"
            if any(v == "missing" for v in files.values()) and \
                    "read-only despite" not in rr.stderr:
                bad("files missing from a read-only mount that gave no warning")
        else:
            files = {}
            r["mount"] = "refused, ro refused"
            if not rr.stderr.strip():
                bad("the read-only mount was refused without a message")
        r["gaps"].add("refused")
    r["files"] = tally(files)
    for rel, v in files.items():
        if v == "wrong":
            r["gaps"].add("wrong")
        elif v == "missing" and r["mount"] == "rw":
            bad(f"{rel} is missing from a writable mount")
        elif v == "short":
            bad(f"{rel} reads short before any repair")
        elif v not in ("exact", "eio", "missing"):
            bad(f"{rel}: {v}")

    # The repair, on the damaged image as it was.
    shutil.copyfile(damaged, img)
    rp = e.zf("fsck", "--repair", img, check=False)
    r["repair"] = rp.returncode
    if rp.returncode == 0 and not same_bytes(img, damaged):
        bad("fsck --repair exited 0 but changed the image")
    if rp.returncode == 0 and fk.returncode != 0:
        bad(f"fsck --repair exited 0 where fsck exited {fk.returncode}")
    if rp.returncode == 4:
        r["gaps"].add("unrepairable")
    elif rp.returncode not in (0, 1):
        bad(f"fsck --repair exited {rp.returncode}: {rp.stderr.strip()}")
    if rp.returncode in (0, 1):
        after = e.zf("fsck", img, check=False).returncode
        r["fsck_after"] = after
        if after != 0:
            bad(f"fsck after a repair that exited {rp.returncode}: {after}")
        m, mr = try_mount(img, "after")
        if not m:
            bad(f"no writable mount after the repair: {mr.stderr.strip()}")
        else:
            files = read_all(m.dir, want)
            m.umount()
            r["files_after"] = tally(files)
            for rel, v in files.items():
                if v == "wrong":
                    r["gaps"].add("wrong")
                elif v in ("missing", "short") and "given up" not in rp.stdout:
                    bad(f"{rel} is {v} after a repair that gave nothing up")
    res.append(r)
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json")
    ap.add_argument("targets", nargs="*")
    a = ap.parse_args()
    e.begin("one damaged spot at a time: mount, read-only mount, fsck and "
            "fsck --repair never crash, never serve wrong metadata, and agree")
    rng = random.Random(a.seed)
    base = os.path.join(e.WORK, "base.img")
    e.zf("emu", "create", base, "--size", "128M", "--zone-size", "4M")
    e.zf("mkfs", base)
    copies = json.loads(e.zf("stat", base, "--json").stdout)["metadata_copies"]
    assert copies == 2, f"mkfs made {copies} copies of the journal; 2 is the default"
    want = populate(base, rng)
    res, failed = [], 0
    t0 = time.time()
    for target in a.targets or TARGETS:
        for kind in (("lowered",) if target == "wp" else KINDS):
            seen = set()
            for n in range(a.rounds):
                r = one_round(base, want, target, kind, rng, res)
                seen |= r["gaps"]
                allowed = KNOWN_GAPS.get((target, kind), set()) | \
                    EXPECTED.get((target, kind), set())
                unknown = r["gaps"] - allowed
                for g in sorted(unknown):
                    r["problems"].append(f"{g}: not a known gap here")
                line = (f"{target:12} {kind:7} mount {r['mount']:20} "
                        f"files {r['files']} fsck {r['fsck']} repair {r['repair']}"
                        f"{' after ' + str(r.get('files_after')) if 'files_after' in r else ''}")
                if r["said"]:
                    line += f"\n    refused: {r['said']}"
                e.log(line + (f"\n    PROBLEMS: {r['problems']}" if r["problems"] else ""))
                failed += bool(r["problems"])
            closed = KNOWN_GAPS.get((target, kind), set()) - seen
            gone = EXPECTED.get((target, kind), set()) - seen
            if closed and a.rounds:
                e.log(f"FAIL: {target}/{kind}: known gap(s) {sorted(closed)} no longer seen: "
                      "update KNOWN_GAPS")
                failed += 1
            if gone and a.rounds:
                e.log(f"FAIL: {target}/{kind}: expected {sorted(gone)} not seen")
                failed += 1
    summary = {"rounds": len(res), "failed": failed,
               "seconds": round(time.time() - t0, 1)}
    e.log(f"damage: {summary['rounds']} rounds, {failed} failed, "
          f"{summary['seconds']} s")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"summary": summary,
                       "rounds": [dict(r, gaps=sorted(r["gaps"])) for r in res]},
                      f, indent=1)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
