"""What the space tests share: data that names itself, figures from the
image, wear over the zones data cycles through.

The mounts, images, watchdog and cleanup are tests/e2e/e2elib.py's: a
space test is an end-to-end test that asserts on the space figures
(`zonefuse stat --json`, `zonefuse zones --json`, the stats xattr).

Data: every 4 KiB block a test writes starts with (seed, block offset),
the rest comes from a random pool, so a block that lands in the wrong
file or at the wrong offset is caught, not only a torn one.
"""
import json
import os
import random
import struct
import sys
import threading
import time

sys.dont_write_bytecode = True     # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "e2e"))
import e2elib as e  # noqa: E402,F401  (re-exported for the tests)

KiB = 1 << 10
MiB = 1 << 20
_POOL = random.Random(0x5ace).randbytes(32 * MiB)


def data(seed, n):
    """n bytes of file data for seed: block k starts with (seed, k*4096)."""
    assert n <= len(_POOL) // 2
    start = (seed * 7919 * 4096) % (len(_POOL) - n)
    b = bytearray(_POOL[start:start + n])
    for off in range(0, n - 15, 4096):
        b[off:off + 16] = struct.pack("<QQ", seed, off)
    return b


def write_file(path, buf, fsync=True, chunk=MiB):
    """Write buf to path in chunk-sized writes (as a saver streams)."""
    with open(path, "wb", buffering=0) as f:
        view = memoryview(buf)
        for off in range(0, len(buf), chunk):
            f.write(view[off:off + chunk])
        if fsync:
            os.fsync(f.fileno())


def fsync_dir(path):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def check_file(path, want):
    """path must hold exactly want (bytes, or a (seed, size) pair)."""
    if isinstance(want, tuple):
        want = data(*want)
    with open(path, "rb") as f:
        got = f.read()
    if got == want:
        return
    if len(got) != len(want):
        raise AssertionError(f"{path}: {len(got)} bytes, expected {len(want)}")
    i = next(i for i in range(len(got)) if got[i] != want[i])
    blk = i - i % 4096
    seed, off = struct.unpack("<QQ", got[blk:blk + 16])
    raise AssertionError(f"{path}: first wrong byte at {i}; the block at {blk} "
                         f"starts with (seed {seed}, offset {off}), expected "
                         f"{struct.unpack('<QQ', bytes(want[blk:blk + 16]))}")


def stat_img(img):
    """`zonefuse stat IMG --json` of an unmounted image: final figures."""
    return json.loads(e.zf("stat", img, "--json").stdout)


def zones_img(img):
    return json.loads(e.zf("zones", img, "--json").stdout)


def extent_zones(img):
    """Zone -> the files (path, size) holding an extent in it, from
    `zonefuse dump`."""
    out = {}
    cur = None
    for line in e.zf("dump", img).stdout.splitlines():
        f = line.split()
        if f and f[0] == "f":
            cur = (f[4], int(f[3]))
        elif f and f[0] == "extent":
            out.setdefault(int(f[2]), set()).add(cur)
    return out


def wear(img, apart=lambda files: False):
    """Reset counts of the zones data cycles through, on an unmounted image.

    The device's own counts (`zones --json`) of sequential zones, without
    the two superblock zones and without the zones the journal holds.
    Journal zones are those written, holding no file extent: after a clean
    unmount dead data zones are reset, so there are exactly stat's
    meta_zones less the superblocks of them; more are reported as stray
    (zones left dead without a reset) and counted with the rest. Zones
    whose files make apart(files) true are reported apart too. Returns
    (counts by zone, journal zones, counts of the zones set apart, stray
    zones)."""
    st = stat_img(img)
    zs = zones_img(img)["zones"]
    live = extent_zones(img)
    seq = [z for z in zs if z["type"] == "seq"]
    supers = [z["index"] for z in zs[:2]]
    written = [z["index"] for z in seq if z["index"] not in supers
               and z["wp"] != z["start"] and z["index"] not in live]
    nmeta = st["meta_zones"] - len(supers)
    journal, stray = set(), []
    if len(written) <= nmeta:
        journal = set(written)
    else:
        stray = written
    counts, other = {}, {}
    for z in seq:
        i = z["index"]
        if i in supers or i in journal:
            continue
        (other if apart(live.get(i, ())) else counts)[i] = z["resets"]
    return counts, journal, other, stray


def spread_report(counts):
    v = sorted(counts.values())
    mean = sum(v) / len(v)
    return {"min": v[0], "max": v[-1], "mean": round(mean, 2),
            "spread": v[-1] - v[0],
            "lowest": sorted(counts, key=counts.get)[:4]}


class Sampler:
    """Reads the stats xattr of a mount every `every` seconds in a thread
    and keeps the highest active_zones seen."""

    def __init__(self, mount, every=0.02):
        self.mount = mount
        self.every = every
        self.max_active = 0
        self.samples = 0
        self.errors = []
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self):
        while not self._stop.is_set():
            try:
                s = self.mount.stats()
            except OSError as err:
                self.errors.append(err)
            else:
                self.samples += 1
                self.max_active = max(self.max_active, s["active_zones"])
            time.sleep(self.every)

    def stop(self):
        self._stop.set()
        self._t.join()


def results_line(name, figures):
    """One line of figures a test prints (bench/space.sh collects them)."""
    e.log(f"figures {name}: {json.dumps(figures, sort_keys=True)}")
