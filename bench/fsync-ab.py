#!/usr/bin/env python3
"""bench/fsync-ab.py: fsync latency of two (or more) zonefuse builds, run
alternately on the same emulated device.

Each round, for each binary in turn: a fresh emulator image of 4 GiB in
64 MiB zones in DIR (a disk-backed directory such as /var/tmp makes the
device's flush cost what the disk's fdatasync costs; /dev/shm makes it
nearly free), mkfs, mount; then COUNT times: write a file of 4-256 KiB
(200 files rewritten in turn, the same sizes for every binary) and fsync
it. It prints the fsync p50 and p99 of each round with the daemon's own
counts (commits, flushes), then the median of each binary's rounds.
Alternating rounds make a busy or drifting machine slow every build alike.

Usage (as root):
    bench/fsync-ab.py [--dir DIR] [--count N] [--rounds R] [--json FILE] ZONEFUSE...
e.g. bench/fsync-ab.py --dir /var/tmp build-old/src/zonefuse build-rel/src/zonefuse
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        sys.exit("fsync-ab: %s failed (exit %d): %s"
                 % (" ".join(cmd), r.returncode, r.stderr.strip()))


def one(zf, img, mnt, count):
    """One mount of @zf: the fsync latencies (ms, sorted) and its stats."""
    run([zf, "emu", "create", img, "--size", "4G", "--zone-size", "64M",
         "--max-open", "14", "--max-active", "14"])
    run([zf, "mkfs", img])
    run([zf, "mount", img, mnt])
    try:
        rng = random.Random(1)
        buf = os.urandom(1 << 20)
        os.mkdir(mnt + "/hot")
        lat = []
        for i in range(count):
            sz = rng.randrange(4096, 256 * 1024 + 1, 4096)
            fd = os.open("%s/hot/%05d" % (mnt, i % 200),
                         os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                os.pwrite(fd, buf[:sz], 0)
                t = time.perf_counter()
                os.fsync(fd)
                lat.append((time.perf_counter() - t) * 1e3)
            finally:
                os.close(fd)
        st = json.loads(os.getxattr(mnt, "user.zonefuse.stats"))
    finally:
        subprocess.run(["umount", mnt], check=False)
        os.unlink(img)
    lat.sort()
    return lat, st


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default="/var/tmp",
                    help="where the emulator images go (default /var/tmp)")
    ap.add_argument("--count", type=int, default=1000,
                    help="fsyncs per mount (default 1000)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="rounds, each running every binary once (default 3)")
    ap.add_argument("--json", help="write every round's figures here")
    ap.add_argument("zonefuse", nargs="+", help="zonefuse binaries")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("fsync-ab: needs root (it mounts)")
    if a.count < 100:
        sys.exit("fsync-ab: --count must be 100 or more for a p99")
    work = tempfile.mkdtemp(prefix="zf-fsync-ab.", dir=a.dir)
    mnt = tempfile.mkdtemp(prefix="zf-fsync-ab-mnt.")
    rows = []
    try:
        for rnd in range(a.rounds):
            for zf in a.zonefuse:
                lat, st = one(zf, work + "/img", mnt, a.count)
                row = {
                    "binary": zf, "round": rnd + 1,
                    "p50_ms": lat[len(lat) // 2],
                    "p99_ms": lat[len(lat) * 99 // 100],
                    "fsyncs": st["fsyncs"],
                    "commits": st["journal_commits"],
                    "flushes": st.get("journal_flushes"),
                    "checksum_impl": st.get("checksum_impl"),
                }
                rows.append(row)
                print("%s round %d: fsync p50 %.3f p99 %.3f ms; %d fsyncs, "
                      "%d commits, %s flushes" % (
                          zf, rnd + 1, row["p50_ms"], row["p99_ms"],
                          row["fsyncs"], row["commits"],
                          row["flushes"] if row["flushes"] is not None
                          else "(not counted)"), flush=True)
    finally:
        os.rmdir(mnt)
        os.rmdir(work)
    print("medians of %d rounds, %d fsyncs each, images in %s:"
          % (a.rounds, a.count, a.dir))
    for zf in a.zonefuse:
        mine = [r for r in rows if r["binary"] == zf]
        print("  %s: p50 %.3f ms, p99 %.3f ms" % (
            zf, statistics.median(r["p50_ms"] for r in mine),
            statistics.median(r["p99_ms"] for r in mine)))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"date": time.strftime("%Y-%m-%d %H:%M UTC",
                                             time.gmtime()),
                       "dir": a.dir, "count": a.count, "rounds": rows}, f,
                      indent=1)


if __name__ == "__main__":
    main()
