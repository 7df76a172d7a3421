#!/usr/bin/env python3
"""A file fsynced after each write, on a real zoned device: the fsync's
fixed path with nothing else running.

For each loop, for each zonefuse binary in turn: `mkfs --force DEVICE`,
mount, write a 1 MiB file and fsync it, then COUNT times overwrite 64 KiB
of it at a random 4 KiB-aligned offset and fsync; then unmount. Each
mount's fsync p50, p99 and mean as the program saw them, and per fsync
from the daemon's counters (user.zonefuse.stats, taken around the loop):
its whole time, the part on the file's data, the journal commit's, and
the writes sent to the device at once (writes_sent_at_once). The
binaries alternate, so that the guest's drifting speed falls on each
alike. docs/performance.md ("Writes sent at once for the fsync
expected") uses it.

usage: scripts/zoned-vm.sh ... -- python3 bench/fsync-loop.py DEVICE OUT.json LOOPS COUNT ZONEFUSE...
DEVICE is formatted (its data is lost). Run from the source tree, whose
directory the guest mounts read-write, so that OUT.json can be written.
"""
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

MIB = 1 << 20
PIECE = 64 * 1024


def one(zf, dev, count, seed):
    """One mount of @zf on @dev: the latencies (ms) and the daemon's
    counters over the loop."""
    subprocess.run([zf, "mkfs", "--force", dev], check=True,
                   capture_output=True)
    mnt = tempfile.mkdtemp(prefix="fsync-loop.", dir="/tmp")
    subprocess.run([zf, "mount", dev, mnt], check=True)
    try:
        rng = random.Random(seed)
        buf = os.urandom(MIB)
        fd = os.open(os.path.join(mnt, "f"), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            os.write(fd, buf)
            os.fsync(fd)
            st0 = json.loads(os.getxattr(mnt, "user.zonefuse.stats"))
            lat = []
            for i in range(count):
                off = rng.randrange(0, MIB - PIECE + 1, 4096)
                src = (i % 16) * 4096
                os.pwrite(fd, buf[src:src + PIECE], off)
                t = time.perf_counter()
                os.fsync(fd)
                lat.append((time.perf_counter() - t) * 1e3)
            st1 = json.loads(os.getxattr(mnt, "user.zonefuse.stats"))
        finally:
            os.close(fd)
    finally:
        subprocess.run(["umount", mnt], check=False)
        os.rmdir(mnt)
    return sorted(lat), {k: st1[k] - st0[k] for k in st1
                         if isinstance(st1[k], int) and k in st0}


def main():
    if len(sys.argv) < 6:
        sys.exit(__doc__.split("\n\n")[-1])
    dev, out = sys.argv[1], sys.argv[2]
    loops, count = int(sys.argv[3]), int(sys.argv[4])
    rows = []
    for lp in range(loops):
        for zf in sys.argv[5:]:
            lat, d = one(zf, dev, count, lp)
            n = max(1, d["fsyncs"])
            r = {"binary": zf, "loop": lp, "fsyncs": len(lat),
                 "p50_ms": lat[len(lat) // 2],
                 "p99_ms": lat[len(lat) * 99 // 100],
                 "mean_ms": statistics.mean(lat),
                 "daemon_ms": d["fsync_ns"] / n / 1e6,
                 "data_ms": d["fsync_data_ns"] / n / 1e6,
                 "commit_ms": d["journal_commit_ns"]
                 / max(1, d["journal_commits"]) / 1e6,
                 "sent_at_once": d.get("writes_sent_at_once", 0)}
            print("%s loop %d: p50 %.2f p99 %.2f mean %.2f ms; daemon %.2f, "
                  "data %.2f, commit %.2f; %d sent at once" % (
                      zf, lp, r["p50_ms"], r["p99_ms"], r["mean_ms"],
                      r["daemon_ms"], r["data_ms"], r["commit_ms"],
                      r["sent_at_once"]), flush=True)
            rows.append(r)
    with open(out, "w") as f:
        json.dump({"device": dev, "count": count,
                   "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                   "kernel": os.uname().release, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
