#!/usr/bin/env python3
"""zoned-peers' mixed near-full phase, zonefuse only, on an emulated device
on this host: a quick way to compare reclaim policies by what they copy.

usage: bench/reclaim-host.py [--mb MB] [--seeds 1,2] [--zone-cap MB]
                             [--touch-cold PCT] [--json OUT]

The device has the peers suite's null_blk geometry (4 GiB, 64 MiB zones, 2
conventional, 14 open/active; --zone-cap 48 for its variant with 48 MiB of
each zone writable), as an emulator image in /dev/shm. The phase
is bench/peers.py's mixed(): filled to 85 % of df (cold large files to
70 %, small files to 85 %), then small files created, overwritten,
appended and deleted, an fsync after each write, until MB MiB were written
(default 1536: three times the free room above the floors, the steady
state). With --touch-cold PCT, PCT % of each cold file is overwritten
before the remount that starts the phase: zones from before the mount
with a little of them dead, as a dataset that had a few records
rewritten before the daemon restarted. Reported per seed: the daemon's write amplification (its own
device_bytes_written over the bytes the program wrote), reclaim's copies
per byte written, and the host's fsync p50/p99 (the host's figures, not
the guest's: use them to compare two builds on the same host, nothing
else). ZONEFUSE names the binary (default build-rel/src/zonefuse).
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402


class EmuDev:
    """What mixed() asks of a device, for an emulator image: the device's
    own counters do not exist, the daemon's stand in (see Fs.counters)."""

    def __init__(self, path):
        self.path = path

    def write_sectors(self):
        return 0

    def io_stat(self):
        return {"reads": 0, "read_ms": 0, "writes": 0, "write_ms": 0}


def touch_cold(pct, rng):
    """Overwrite pct % of each cold file, in one piece, and fsync it."""
    def touch(mnt, nr_cold):
        for k in range(nr_cold):
            path = os.path.join(mnt, "cold", "%05d" % k)
            size = os.path.getsize(path)
            n = size * pct // 100 // 4096 * 4096
            if not n:
                continue
            off = rng.randrange(0, size - n + 1, 4096)
            fd = os.open(path, os.O_WRONLY)
            try:
                os.pwrite(fd, os.urandom(n), off)
                os.fsync(fd)
            finally:
                os.close(fd)
    return touch


def run(seed, mb, zonefuse, zone_cap, touch_pct):
    shm = tempfile.mkdtemp(prefix="zf-reclaim-", dir="/dev/shm")
    img = os.path.join(shm, "dev.img")
    mnt = tempfile.mkdtemp(prefix="zf-reclaim-")
    try:
        subprocess.run([zonefuse, "emu", "create", img, "--size", "4G",
                        "--zone-size", "64M", "--conventional", "2",
                        "--max-open", "14", "--max-active", "14",
                        "--zone-capacity", "%dM" % zone_cap],
                       check=True, stdout=subprocess.DEVNULL)
        subprocess.run([zonefuse, "mkfs", "--force", img], check=True,
                       stdout=subprocess.DEVNULL)
        fs = peers.Fs("zonefuse", EmuDev(img), mnt)
        fs.dev.wait_released = lambda timeout=120: None
        fs.mount()
        sz = dict(peers.SIZES["full"], MIXED_MB=mb)
        detail = {}
        r = peers.mixed(fs, sz, random.Random(seed), detail,
                        touch_cold(touch_pct, random.Random(seed + 1000))
                        if touch_pct else None)
        c = detail["counters"]
        lat = sorted(e[1] for e in detail["fsync_trace"])
        return {"seed": seed, "mb": mb, "zone_cap_mb": zone_cap,
                "touch_cold_pct": touch_pct,
                "phase_s": round(detail["phase_s"], 1),
                "wa": round(c["device_bytes_written"] / detail["phase_bytes"], 3),
                "copied_per_byte": round(c["gc_bytes_written"] /
                                         detail["phase_bytes"], 3),
                "meta_per_byte": round(c["meta_bytes_written"] /
                                       detail["phase_bytes"], 4),
                "gc_by_writers": c["gc_bytes_by_writers"],
                "space_stall_ms": round(c["space_stall_ns"] / 1e6, 1),
                "enospc": r["enospc"], "end_fill": round(detail["end_fill"], 3),
                "fsync_p50_ms": lat[len(lat) // 2],
                "fsync_p99_ms": lat[int(len(lat) * 0.99)]}
    finally:
        subprocess.run(["umount", mnt], stderr=subprocess.DEVNULL)
        os.rmdir(mnt)
        if os.path.exists(img):
            os.unlink(img)
        os.rmdir(shm)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=int, default=1536)
    ap.add_argument("--seeds", default="1,2")
    ap.add_argument("--zone-cap", type=int, default=64)
    ap.add_argument("--touch-cold", type=int, default=0)
    ap.add_argument("--json")
    a = ap.parse_args()
    zonefuse = os.environ.get("ZONEFUSE", "build-rel/src/zonefuse")
    peers.ZONEFUSE = zonefuse
    out = []
    for s in (int(x) for x in a.seeds.split(",")):
        r = run(s, a.mb, zonefuse, a.zone_cap, a.touch_cold)
        print(json.dumps(r), flush=True)
        out.append(r)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"zonefuse": zonefuse, "runs": out}, f, indent=1)


if __name__ == "__main__":
    main()
