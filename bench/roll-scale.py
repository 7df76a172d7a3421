#!/usr/bin/env python3
"""bench/roll-scale.py: what the journal's roll costs as the data held grows.

A roll writes a new snapshot of the metadata, and the snapshot holds every
data block's CRC32C (4 bytes per 4 KiB), so it grows with the data: the
roll comes once the log reaches twice the snapshot, and the commit that
finds it there, and every metadata change while the snapshot is encoded,
wait for it. For each size in GIB (0 allowed): a fresh emulator image in
DIR (sparse; 256 MiB zones; as large as the data needs), mkfs, mount,
GIB files of 1 GiB written and fsynced, then COUNT fsyncs of 4 KiB files
(500 names in turn) while a second process creates and unlinks empty
files in another directory. It prints the fsyncs' p50/p99/max, the
creates' p99/max, and the daemon's roll counters (journal_rolls,
journal_roll_max_ns, journal_snapshot_stop_max_ns) and snapshot size.

Usage (as root):
    bench/roll-scale.py [--dir DIR] [--count N] [--json FILE] ZONEFUSE GIB...
e.g. bench/roll-scale.py --dir /var/tmp build-rel/src/zonefuse 0 8 32
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

SIDE = r"""
import os, sys, time
d, stop = sys.argv[1], sys.argv[2]
os.makedirs(d, exist_ok=True)
lat = []
i = 0
while not os.path.exists(stop):
    p = os.path.join(d, "c%d" % (i % 100))
    i += 1
    t = time.perf_counter_ns()
    os.close(os.open(p, os.O_WRONLY | os.O_CREAT, 0o644))
    os.unlink(p)
    lat.append((time.perf_counter_ns() - t) / 1e6)
print(" ".join("%.4f" % x for x in lat))
"""


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        sys.exit("roll-scale: %s failed (exit %d): %s"
                 % (" ".join(cmd), r.returncode, r.stderr.strip()))


def pct(s, p):
    return s[min(len(s) - 1, int(len(s) * p))]


def one(zf, d, gib, count):
    img, mnt = d + "/img", d + "/mnt"
    size = max(4, (gib * 5 // 4 + 3) // 4 * 4)
    run([zf, "emu", "create", img, "--size", "%dG" % size,
         "--zone-size", "256M"])
    run([zf, "mkfs", img])
    run([zf, "mount", img, mnt])
    try:
        os.mkdir(mnt + "/data")
        chunk = os.urandom(1 << 20)
        t0 = time.monotonic()
        for i in range(gib):
            fd = os.open("%s/data/ck%03d" % (mnt, i), os.O_WRONLY | os.O_CREAT,
                         0o644)
            try:
                for _ in range(1024):
                    os.write(fd, chunk)
                os.fsync(fd)
            finally:
                os.close(fd)
        fill_s = time.monotonic() - t0
        stop = d + "/stop"
        side = subprocess.Popen([sys.executable, "-c", SIDE, mnt + "/side",
                                 stop], stdout=subprocess.PIPE, text=True)
        os.mkdir(mnt + "/small")
        buf = os.urandom(4096)
        lat = []
        for i in range(count):
            fd = os.open("%s/small/f%d" % (mnt, i % 500),
                         os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.write(fd, buf)
                t = time.perf_counter_ns()
                os.fsync(fd)
                lat.append((time.perf_counter_ns() - t) / 1e6)
            finally:
                os.close(fd)
        open(stop, "w").close()
        out, _ = side.communicate()
        os.unlink(stop)
        side_lat = sorted(float(x) for x in out.split())
        st = json.loads(os.getxattr(mnt, "user.zonefuse.stats"))
    finally:
        subprocess.run(["umount", mnt], check=False)
        os.unlink(img)
    lat.sort()
    return {"gib": gib, "fill_s": fill_s, "fsyncs": len(lat),
            "fsync_p50_ms": pct(lat, 0.5), "fsync_p99_ms": pct(lat, 0.99),
            "fsync_max_ms": lat[-1], "creates": len(side_lat),
            "create_p99_ms": pct(side_lat, 0.99) if side_lat else None,
            "create_max_ms": side_lat[-1] if side_lat else None,
            "rolls": st["journal_rolls"],
            "roll_max_ms": st["journal_roll_max_ns"] / 1e6,
            "snapshot_stop_max_ms": st["journal_snapshot_stop_max_ns"] / 1e6,
            "snapshot_bytes": st["journal_snapshot_bytes"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default="/var/tmp")
    ap.add_argument("--count", type=int, default=20000)
    ap.add_argument("--json")
    ap.add_argument("zonefuse")
    ap.add_argument("gib", type=int, nargs="+")
    a = ap.parse_args()
    if os.geteuid():
        sys.exit("roll-scale: run as root (it mounts)")
    res = []
    with tempfile.TemporaryDirectory(dir=a.dir) as d:
        os.mkdir(d + "/mnt")
        for g in a.gib:
            x = one(a.zonefuse, d, g, a.count)
            res.append(x)
            print("%3d GiB held: %d fsyncs p50 %.3f p99 %.3f max %.1f ms;"
                  " creates beside p99 %.3f max %.1f ms; %d rolls, longest"
                  " %.1f ms, metadata stopped at most %.1f ms; snapshot"
                  " %.1f MB"
                  % (g, x["fsyncs"], x["fsync_p50_ms"], x["fsync_p99_ms"],
                     x["fsync_max_ms"], x["create_p99_ms"] or 0,
                     x["create_max_ms"] or 0, x["rolls"], x["roll_max_ms"],
                     x["snapshot_stop_max_ms"], x["snapshot_bytes"] / 1e6),
                  flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                       "zonefuse": a.zonefuse, "count": a.count,
                       "results": res}, f, indent=1)


if __name__ == "__main__":
    main()
