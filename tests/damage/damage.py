#!/usr/bin/python3
"""tests/damage/damage.py: one damaged spot at a time, and what every tool
then does with it.

A populated image (files of recorded content, fsynced, in directories,
unmounted cleanly) is copied, and one spot of it damaged: a 4 KiB block of
each metadata structure (a superblock, the newest anchor, the journal's
zone header, its snapshot, a block in the middle of its log, its last
block; the same in the journal's mirror copy; or one block of the log
in both copies at once) or of file data, with random bytes, with zeros, as
a media error (reads of it fail with EIO, as a drive's) or with a stale
block (a valid block of the same structure from elsewhere: the previous
anchor over the newest, the other copy's zone header, the block before
in the log, another file's data: CRCs hold, only sequence, generation and
position give it away); or a data zone's write pointer lowered. Then:

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
damage without a copy is, and so is a data zone's lowered write pointer;
on a device, a super zone that cannot be written leaves one copy, said by
fsck and scrub) and KNOWN_GAPS (what the code does not do yet: none now).
The suite fails on any other, and on a listed one that no longer shows,
so that the lists stay true.

On an emulator image (the default) the damage is written into the image
file and a media error kept in its header. With --device DEV, a zoned
block device (a null_blk device made through configfs, whose name in
/sys/kernel/config/nullb --configfs gives): wrong bytes are written by
reading the zone's data, resetting the zone and writing it back changed,
a media error is null_blk's badblocks, a lowered write pointer is a reset
and a shorter rewrite; each round starts from the populated state written
back. It destroys what the device holds.

Usage: damage.py [--rounds N] [--seed S] [--json FILE]
                 [--device DEV --configfs NAME] [TARGET ...]
The default suite runs one round per (target, kind); scripts/damage-test.sh
runs more, with other seeds (other blocks of the log and of the data), and
with --vm in a QEMU guest on null_blk.
"""
import argparse
import fcntl
import hashlib
import json
import mmap
import os
import random
import re
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
KINDS = ("random", "zero", "media", "stale")
TARGETS = ("super-a", "super-b", "anchor", "chain-header", "snapshot",
           "log-middle", "log-last", "mirror-header", "mirror-snapshot",
           "mirror-log", "log-both", "data", "wp")

# (target, kind) -> what happens there other than healing: "refused": a
# writable mount is refused, the data safe on the device (no second copy
# of that block to serve instead); "unrepairable": fsck --repair cannot fix
# it either (exit 4); "wrong": file data reads back wrong; "unreported":
# fsck passes it.
EXPECTED = {("log-both", k): {"refused"} for k in KINDS}
# A data zone's write pointer lowered: data has one copy, and the extents
# above the pointer were never there for the device; a writable mount is
# refused (the issue asks for that or -o ro), -o ro serves the rest.
EXPECTED[("wp", "lowered")] = {"refused"}
KNOWN_GAPS = {}
# On a device (--device), a media error is null_blk's badblocks, which
# fail writes as well as reads until they are removed: a block that can be
# written neither. (The emulator's, like a drive that remaps a sector on
# write and erases a zone at reset, go away with a reset or a covering
# write.) A super zone that cannot be written is not rewritten: its
# anchors go to the other zone, which says so in each anchor
# (ZF_ANCHOR_OTHER_FAILED), and the file system goes on read-write with
# one copy of its superblock and anchors. "degraded": the writable mount
# serves every file, and fsck, fsck --repair and a scrub exit 4 naming the
# zone that could not be written (a repair tries it again). A damaged
# anchor is degraded only when the block is where a rewrite puts an anchor
# again, so there it may be seen, not must.
EXPECTED_DEVICE = {
    ("super-a", "media"): {"degraded"},
    ("super-b", "media"): {"degraded"},
    ("online super-a", "media"): {"degraded"},
    ("online super-b", "media"): {"degraded"},
}
ALLOWED_DEVICE = {
    ("anchor", "media"): {"degraded"},
    ("online anchor", "media"): {"degraded"},
}
DEGRADED = re.compile(r"super zone \d+ could not be written|"
                      r"could not be rewritten|still cannot be written")
ALLOWED = {}


def populate(img, rng):
    """Files in directories, each fsynced; a clean unmount. Returns
    {relative path: content}. Half way, commits enough to roll the journal
    once, so that the live super zone holds an older anchor too (a stale
    anchor needs one) and the chain is not the first."""
    m = e.Mount(img, "populate")
    want = {}
    for d in range(4):
        os.makedirs(m.path(f"d{d}"))
    rolls = m.stats()["chain_zones"]
    for i in range(48):
        if i == 24:
            n = 0
            with open(m.path("d0", "churn"), "wb") as f:
                while m.stats()["chain_zones"] == rolls and n < 5000:
                    os.setxattr(m.path("d0", "churn"), "user.n", str(n).encode())
                    os.fsync(f.fileno())
                    n += 1
            assert n < 5000, "the journal did not roll after 5000 commits"
            os.unlink(m.path("d0", "churn"))
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


class ImageStore:
    """The emulator: the device is an image file, a state a copy of it."""

    def __init__(self):
        self.path = os.path.join(e.WORK, "work.img")

    def create(self):
        e.zf("emu", "create", self.path, "--size", "128M", "--zone-size", "4M")

    def save(self, name):
        state = os.path.join(e.WORK, f"{name}.img")
        shutil.copyfile(self.path, state)
        return state

    def load(self, state):
        shutil.copyfile(state, self.path)

    def same(self, state):
        return subprocess.run(["cmp", "-s", self.path, state]).returncode == 0

    def differs(self, state):
        r = subprocess.run(["cmp", self.path, state], capture_output=True, text=True)
        return r.stdout.strip() if r.returncode else ""

    def _data_off(self):
        with open(self.path, "rb") as f:
            f.seek(72)
            return struct.unpack("<Q", f.read(8))[0]

    def read(self, off, n):
        with open(self.path, "rb") as f:
            f.seek(self._data_off() + off)
            return f.read(n)

    def write(self, off, buf):
        """Other bytes at device offset off, behind the emulator's back."""
        at = self._data_off() + off
        with open(self.path, "r+b") as f:
            f.seek(at)
            f.write(buf)

    def media(self, off):
        e.zf("emu", "media-error", self.path, "--offset", str(off),
             "--length", str(BS))

    def lower_wp(self, zone, wp):
        """Lower a zone's write pointer in the emulator's zone table (a
        closed zone; its entry's CRC made good): what a drive reports
        after data never landed."""
        with open(self.path, "r+b") as f:
            at = 4096 + 32 * zone
            f.seek(at)
            ent = bytearray(f.read(32))
            struct.pack_into("<Q", ent, 0, wp)
            ent[24] = 0x4  # closed
            struct.pack_into("<I", ent, 28, crc32c(bytes(ent[:28])))
            f.seek(at)
            f.write(ent)


# A zone's open or closed condition is the device's bookkeeping, not its
# contents (a power cycle closes every zone): the mount closes the zones it
# finds open, and a refused one has still written nothing.
ACTIVE = {"implicit_open": "active", "explicit_open": "active", "closed": "active"}

# <linux/blkzoned.h>: _IOW(0x12, nr, struct blk_zone_range)
BLK_ZONE_IOCTL = {"reset": 0x40101283, "close": 0x40101287,
                  "finish": 0x40101288}


class DeviceStore:
    """A zoned null_blk device. A state is each zone's write pointer,
    condition and written bytes, and the media errors; loading one resets
    and rewrites the zones that differ."""

    def __init__(self, dev, cfs):
        self.path = dev
        self.cfs = os.path.join("/sys/kernel/config/nullb", cfs)
        if not os.path.isfile(os.path.join(self.cfs, "badblocks")):
            sys.exit(f"damage.py: {self.cfs}/badblocks missing: --configfs names "
                     "the configfs directory of a null_blk device made there")
        self.bad = []

    def create(self):
        self.set_bad([])
        for i, z in enumerate(zones(self.path)):
            if z["type"] != "conv" and z["wp"] != z["start"]:
                self._zone_op("reset", z)

    def _zone_op(self, op, z):
        fd = os.open(self.path, os.O_RDWR)
        try:
            fcntl.ioctl(fd, BLK_ZONE_IOCTL[op],
                        struct.pack("<QQ", z["start"] >> 9, z["len"] >> 9))
        finally:
            os.close(fd)

    def set_bad(self, ranges):
        """The device's media errors: byte ranges (off, len)."""
        with open(os.path.join(self.cfs, "badblocks"), "w") as f:
            for off, ln in self.bad:
                f.write(f"-{off >> 9}-{((off + ln) >> 9) - 1}\n")
                f.flush()
        self.bad = []
        for off, ln in ranges:
            with open(os.path.join(self.cfs, "badblocks"), "w") as f:
                f.write(f"+{off >> 9}-{((off + ln) >> 9) - 1}\n")
            self.bad.append((off, ln))

    def _read_zone(self, z, end):
        """The zone's bytes up to end, an unreadable block left zeros."""
        n = end - z["start"]
        if n <= 0:
            return b""
        buf = mmap.mmap(-1, n)
        fd = os.open(self.path, os.O_RDONLY | os.O_DIRECT)
        try:
            try:
                os.preadv(fd, [buf], z["start"])
            except OSError:
                one = mmap.mmap(-1, BS)
                for at in range(0, n, BS):
                    try:
                        os.preadv(fd, [one], z["start"] + at)
                        buf[at:at + BS] = one[:]
                    except OSError:
                        buf[at:at + BS] = bytes(BS)
            return bytes(buf)
        finally:
            os.close(fd)

    def save(self, name=None):
        zs = zones(self.path)
        out = []
        for z in zs:
            end = z["start"] + z["capacity"] if z["type"] == "conv" else z["wp"]
            data = self._read_zone(z, end) if z["type"] == "conv" or \
                z["wp"] != z["start"] else b""
            out.append((ACTIVE.get(z["cond"], z["cond"]), z["wp"], data))
        return {"zones": out, "bad": list(self.bad)}

    def _write_zone(self, z, data):
        if not data:
            return
        buf = mmap.mmap(-1, len(data))
        buf[:] = data
        fd = os.open(self.path, os.O_WRONLY | os.O_DIRECT)
        try:
            os.pwritev(fd, [buf], z["start"])
        finally:
            os.close(fd)

    def _put_zone(self, z, cond, wp, data):
        if z["type"] == "conv":
            self._write_zone(z, data)
            return
        self._zone_op("reset", z)
        self._write_zone(z, data)
        if cond == "full" and z["start"] + len(data) < z["start"] + z["capacity"]:
            self._zone_op("finish", z)
        elif cond in ("active", "closed") and data:
            self._zone_op("close", z)

    def load(self, state):
        self.set_bad([])
        now = self.save()["zones"]
        for z, cur, want in zip(zones(self.path), now, state["zones"]):
            if cur != want:
                self._put_zone(z, *want)
        self.set_bad(state["bad"])

    def same(self, state):
        return not self.differs(state)

    def differs(self, state):
        """What differs between the device and state, or "" if nothing."""
        now = self.save()
        if now["bad"] != state["bad"]:
            return f"media errors {now['bad']} != {state['bad']}"
        for i, (a, b) in enumerate(zip(now["zones"], state["zones"])):
            if a[:2] != b[:2]:
                return f"zone {i}: {a[0]} wp {a[1]:#x}, was {b[0]} wp {b[1]:#x}"
            if a[2] != b[2]:
                at = next(k for k in range(min(len(a[2]), len(b[2])) + 1)
                          if k == min(len(a[2]), len(b[2])) or a[2][k] != b[2][k])
                return f"zone {i}: bytes differ from offset {at:#x}"
        return ""

    def _zone_of(self, off):
        return next(z for z in zones(self.path)
                    if z["start"] <= off < z["start"] + z["len"])

    def read(self, off, n):
        z = self._zone_of(off)
        data = self._read_zone(z, z["wp"] if z["type"] != "conv"
                               else z["start"] + z["capacity"])
        return data[off - z["start"]:off - z["start"] + n]

    def write(self, off, buf):
        """Other bytes at off: the zone read, reset and written back."""
        z = self._zone_of(off)
        cond = z["cond"]
        end = z["wp"] if z["type"] != "conv" else z["start"] + z["capacity"]
        data = bytearray(self._read_zone(z, end))
        at = off - z["start"]
        assert at + len(buf) <= len(data), f"{off:#x} is above zone {z}'s data"
        data[at:at + len(buf)] = buf
        self._put_zone(z, cond, z["wp"], bytes(data))

    def media(self, off):
        self.set_bad(self.bad + [(off, BS)])

    def lower_wp(self, zone, wp):
        z = zones(self.path)[zone]
        data = self._read_zone(z, wp)
        self._put_zone(z, "closed", wp, data)


def zones(img):
    return json.loads(e.zf("zones", img, "--json").stdout)["zones"]


def data_extents(img):
    """(device offset, length, zone) of every file extent."""
    zs = zones(img)
    out = []
    for line in e.zf("dump", img).stdout.splitlines():
        f = line.split()
        if f and f[0] == "extent":
            z, off, ln = int(f[2]), int(f[4]), int(f[6])
            out.append((zs[z]["start"] + off, ln, z))
    return out


def log_start(store, zone):
    """Where the log starts in the chain's head zone: the I/O unit after
    the snapshot's SNAP_END record (the snapshot is one write)."""
    z = zones(store.path)[zone]
    data = store.read(z["start"], z["wp"] - z["start"])
    at = BS
    while at + 24 <= len(data):
        rtype, ln = struct.unpack_from("<H", data, at + 4)[0], \
            struct.unpack_from("<I", data, at + 8)[0]
        if not any(data[at:at + 8]):
            at = (at // BS + 1) * BS
            continue
        at += 24 + (ln + 7) // 8 * 8
        if rtype == 38:  # SNAP_END
            return z["start"] + (at + BS - 1) // BS * BS
    raise AssertionError(f"no SNAP_END in zone {zone}")


def where(store, target, rng):
    """Device offset of the block to damage for target (or the zone whose
    write pointer to lower, for "wp"), on the undamaged image."""
    img = store.path
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
        lo, hi = log_start(store, chain[0]), last["wp"] - 2 * BS
        if len(chain) > 1:
            lo, hi = last["start"] + BS, last["wp"] - 2 * BS
        assert hi > lo, f"the log is too short to damage its middle: {lo}..{hi}"
        at = lo + rng.randrange((hi - lo) // BS + 1) * BS
        if target == "log-middle":
            return at
        # The same block of the mirror: the copies are written in lockstep.
        mlast = zs[st["mirror_zones"][len(chain) - 1]]
        return [at, mlast["start"] + (at - last["start"])]
    extents = data_extents(img)
    if target == "data":
        a, ln, _ = rng.choice([x for x in extents if x[1] >= BS])
        return a + rng.randrange(ln // BS) * BS
    assert target == "wp"
    a, ln, z = rng.choice([x for x in extents if x[1] >= 2 * BS])
    return z, a + (ln // 2) // BS * BS


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def stale_source(img, target, spot, rng):
    """For kind "stale": the device offset of a valid block of the same
    structure to copy over spot, or None where there is none (the
    superblocks: both copies hold the same bytes until a super zone is
    rewritten)."""
    st = json.loads(e.zf("stat", img, "--json").stdout)
    zs = zones(img)
    if target in ("super-a", "super-b"):
        return None
    if target == "anchor":
        z = next(z for z in zs if z["start"] <= spot < z["start"] + z["len"])
        return spot - BS if spot - BS > z["start"] else None
    if target in ("chain-header", "mirror-header"):
        other = st["mirror_zones"] if target == "chain-header" else st["chain_zones"]
        return zs[other[0]]["start"]
    if target in ("snapshot", "mirror-snapshot"):
        return spot + BS
    if target == "data":
        extents = [x for x in data_extents(img) if x[1] >= BS]
        a, ln, _ = rng.choice([x for x in extents if not x[0] <= spot < x[0] + x[1]])
        return a + rng.randrange(ln // BS) * BS
    return spot - BS  # the log: the block before, records of other seqs


def damage(store, target, kind, spot, rng):
    if target == "wp":
        zone, wp = spot
        store.lower_wp(zone, wp)
        return f"zone {zone} write pointer lowered to {wp:#x}"
    if isinstance(spot, list):
        return " and ".join(damage(store, target, kind, s, rng) for s in spot)
    if kind == "media":
        store.media(spot)
        return f"unreadable block at {spot:#x}"
    if kind == "stale":
        src = stale_source(store.path, target, spot, rng)
        store.write(spot, store.read(src, BS))
        return f"the block at {src:#x} over the block at {spot:#x}"
    buf = rng.randbytes(BS) if kind == "random" else bytes(BS)
    store.write(spot, buf)
    return f"{kind} bytes over the block at {spot:#x}"


def degraded(out):
    """The output names a super zone that could not be written."""
    return bool(DEGRADED.search(out))


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


def one_round(store, base, want, target, kind, rng, res):
    img = store.path
    store.load(base)
    spot = where(store, target, rng)
    if kind == "stale" and (target == "wp" or stale_source(
            img, target, spot[0] if isinstance(spot, list) else spot, rng) is None):
        return None
    what = damage(store, target, kind, spot, rng)
    damaged = store.save("damaged")
    r = {"target": target, "kind": kind, "damage": what, "problems": [],
         "gaps": set(), "said": ""}
    bad = r["problems"].append

    # fsck first: it reads, it does not write.
    fk = e.zf("fsck", img, check=False)
    r["fsck"] = fk.returncode
    if fk.returncode not in (0, 4, 8):
        bad(f"fsck exited {fk.returncode}")
    if not store.same(damaged):
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
        if sc.returncode == 4 and degraded(sc.stdout):
            r["gaps"].add("degraded")
        elif not eio_files and sc.returncode != 0:
            bad(f"scrub exited {sc.returncode} on a mount whose files all read: {sc.stdout.strip()[-300:]}")
        m.umount()
        r["mount"] = "rw"
        fa = e.zf("fsck", img, check=False)
        if fa.returncode == 4 and degraded(fa.stdout):
            r["gaps"].add("degraded")
        elif fa.returncode != 0:
            bad(f"fsck after a writable mount took the damage: exit {fa.returncode}: "
                f"{fa.stdout.strip()[-300:]}")
    else:
        r["mount"] = "refused"
        r["said"] = mr.stderr.strip().splitlines()[-1][:160] if mr.stderr.strip() else ""
        if not mr.stderr.strip():
            bad("the writable mount was refused without a message")
        if not store.same(damaged):
            bad(f"the refused writable mount changed the image: {store.differs(damaged)}")
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
    store.load(damaged)
    rp = e.zf("fsck", "--repair", img, check=False)
    r["repair"] = rp.returncode
    if rp.returncode == 0 and not store.same(damaged):
        bad("fsck --repair exited 0 but changed the image")
    if rp.returncode == 0 and fk.returncode != 0:
        bad(f"fsck --repair exited 0 where fsck exited {fk.returncode}")
    if rp.returncode == 4 and degraded(rp.stdout):
        r["gaps"].add("degraded")
    elif rp.returncode == 4:
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


# Damage made under a mounted file system, found by `zonefuse scrub` of
# the mount: every metadata structure, in every copy, and the same log
# block in both; the file system's metadata in memory is whole, so each is
# written anew and nothing is lost, not even where both copies are bad.
ONLINE_TARGETS = ("super-a", "super-b", "anchor", "chain-header", "snapshot",
                  "log-middle", "log-last", "mirror-header", "mirror-snapshot",
                  "mirror-log", "log-both")


def online_round(store, base, want, target, kind, rng, res):
    """Damage under a mount (no commit of its own for an hour, nothing
    written), then scrub the mount: found and rewritten (exit 1), files
    exact, and the device sound after the unmount."""
    img = store.path
    store.load(base)
    spot = where(store, target, rng)
    if kind == "stale" and stale_source(
            img, target, spot[0] if isinstance(spot, list) else spot, rng) is None:
        return None
    r = {"target": "online " + target, "kind": kind, "problems": [],
         "gaps": set(), "said": "", "fsck": None, "repair": None}
    bad = r["problems"].append
    m = e.Mount(img, "online", "commit=3600")
    r["damage"] = damage(store, target, kind, spot, rng)
    sc = e.zf("scrub", m.dir, check=False)
    r["scrub"] = sc.returncode
    r["mount"] = f"scrub {sc.returncode}"
    unwritable = sc.returncode == 4 and degraded(sc.stdout)
    if unwritable:
        r["gaps"].add("degraded")
    elif sc.returncode != 1 or "written anew" not in sc.stdout:
        bad(f"scrub of the mount exited {sc.returncode}, not 1 (rewritten): "
            f"{sc.stdout.strip()[-400:]}")
    sc2 = e.zf("scrub", m.dir, check=False)
    if sc2.returncode != 0 and not unwritable:
        bad(f"a second scrub exited {sc2.returncode}: {sc2.stdout.strip()[-300:]}")
    files = read_all(m.dir, want)
    m.umount()
    r["files"] = tally(files)
    for rel, v in files.items():
        if v != "exact":
            bad(f"{rel} is {v} after the scrub")
    fk = e.zf("fsck", img, check=False)
    r["fsck"] = fk.returncode
    if fk.returncode == 4 and degraded(fk.stdout):
        r["gaps"].add("degraded")
    elif fk.returncode != 0:
        bad(f"fsck after the scrub and unmount exited {fk.returncode}: "
            f"{fk.stdout.strip()[-300:]}")
    res.append(r)
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json")
    ap.add_argument("--device", help="a zoned null_blk device (destroyed)")
    ap.add_argument("--configfs", help="its directory's name in /sys/kernel/config/nullb")
    ap.add_argument("--no-online", action="store_true",
                    help="skip the damage made under a mount")
    ap.add_argument("targets", nargs="*")
    a = ap.parse_args()
    e.begin("one damaged spot at a time: mount, read-only mount, fsck and "
            "fsck --repair never crash, never serve wrong metadata, and agree"
            + (f"; on the zoned device {a.device}" if a.device else ""))
    rng = random.Random(a.seed)
    if a.device:
        EXPECTED.update(EXPECTED_DEVICE)
        ALLOWED.update(ALLOWED_DEVICE)
        if not a.configfs:
            sys.exit("damage.py: --device needs --configfs (its null_blk's name)")
        if subprocess.run(["findmnt", "-S", a.device], capture_output=True).returncode == 0:
            sys.exit(f"damage.py: {a.device} is mounted: it would be destroyed")
        store = DeviceStore(a.device, a.configfs)
    else:
        store = ImageStore()
    store.create()
    e.zf("mkfs", "--force", store.path)
    copies = json.loads(e.zf("stat", store.path, "--json").stdout)["metadata_copies"]
    assert copies == 2, f"mkfs made {copies} copies of the journal; 2 is the default"
    want = populate(store.path, rng)
    base = store.save("base")
    res, failed = [], 0
    t0 = time.time()
    for target in a.targets or TARGETS:
        for kind in (("lowered",) if target == "wp" else KINDS):
            seen = set()
            for n in range(a.rounds):
                r = one_round(store, base, want, target, kind, rng, res)
                if r is None:
                    e.log(f"{target:12} {kind:7} not made: no stale copy of this block exists")
                    seen |= KNOWN_GAPS.get((target, kind), set()) | \
                        EXPECTED.get((target, kind), set())
                    break
                seen |= r["gaps"]
                allowed = KNOWN_GAPS.get((target, kind), set()) | \
                    EXPECTED.get((target, kind), set()) | \
                    ALLOWED.get((target, kind), set())
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
    online_kinds = [k for k in KINDS if k != "media" or isinstance(store, DeviceStore)]
    for target in [] if a.no_online else (
            [t for t in a.targets if t in ONLINE_TARGETS] if a.targets else ONLINE_TARGETS):
        for kind in online_kinds:
            seen = set()
            key = ("online " + target, kind)
            for n in range(a.rounds):
                r = online_round(store, base, want, target, kind, rng, res)
                if r is None:
                    e.log(f"online {target:12} {kind:7} not made: no stale copy of this block exists")
                    break
                unknown = r["gaps"] - KNOWN_GAPS.get(key, set()) - \
                    EXPECTED.get(key, set()) - ALLOWED.get(key, set())
                for g in sorted(unknown):
                    r["problems"].append(f"{g}: not a known gap here")
                seen |= r["gaps"]
                line = (f"online {target:12} {kind:7} scrub {r['scrub']} "
                        f"files {r['files']} fsck {r['fsck']}")
                e.log(line + (f"\n    PROBLEMS: {r['problems']}" if r["problems"] else ""))
                failed += bool(r["problems"])
            else:
                closed = KNOWN_GAPS.get(key, set()) - seen
                if closed and a.rounds:
                    e.log(f"FAIL: online {target}/{kind}: known gap(s) {sorted(closed)} "
                          "no longer seen: update KNOWN_GAPS")
                    failed += 1
                gone = EXPECTED.get(key, set()) - seen
                if gone and a.rounds:
                    e.log(f"FAIL: online {target}/{kind}: expected {sorted(gone)} not seen")
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
