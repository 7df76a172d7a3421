#!/usr/bin/env python3
"""bench/sync-beside.py: a dataloader's reads beside a checkpoint's fsync,
on the same CPU, for each FUSE transport.

Each round, for each transport in turn: a fresh emulator image (16 GiB in
256 MiB zones) in DIR, mkfs, mount with -o transport=T; a 256 MiB file
written and fsynced; then a reader pinned to CPU 0 reads random 4 KiB
blocks of it with O_DIRECT, one every millisecond, while a writer pinned
to CPU 0 writes a checkpoint of CKPT_MB (1 MiB writes) and fsyncs it.
With io_uring each CPU's requests go to that CPU's queue, so the reads
wait for whatever holds the queue's thread. It prints the reader's p50,
p99 and max over the writer's time, and how long the checkpoint took,
then each transport's median over the rounds.

Usage (as root):
    bench/sync-beside.py [--dir DIR] [--ckpt-mb N] [--rounds R]
                         [--transports uring,dev] [--json FILE] ZONEFUSE
e.g. bench/sync-beside.py --dir /var/tmp build-rel/src/zonefuse
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

READER = r"""
import mmap, os, random, sys, time
path, secs = sys.argv[1], float(sys.argv[2])
os.sched_setaffinity(0, {0})
fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
buf = mmap.mmap(-1, 4096)
blocks = os.fstat(fd).st_size // 4096
rng = random.Random(1)
lat = []
end = time.monotonic() + secs
while time.monotonic() < end:
    off = rng.randrange(blocks) * 4096
    t = time.perf_counter_ns()
    os.preadv(fd, [buf], off)
    lat.append((time.perf_counter_ns() - t) / 1e6)
    time.sleep(0.001)
print(" ".join("%.4f" % x for x in lat))
"""


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        sys.exit("sync-beside: %s failed (exit %d): %s"
                 % (" ".join(cmd), r.returncode, r.stderr.strip()))


def pct(s, p):
    return s[min(len(s) - 1, int(len(s) * p))]


def one(zf, transport, img, mnt, ckpt_mb):
    run([zf, "emu", "create", img, "--size", "16G", "--zone-size", "256M"])
    run([zf, "mkfs", img])
    run([zf, "mount", "-o", "transport=" + transport, img, mnt])
    try:
        got = json.loads(os.getxattr(mnt, "user.zonefuse.stats"))["transport"]
        if got != transport:
            sys.exit("sync-beside: asked for transport=%s, the mount has %s"
                     % (transport, got))
        data = mnt + "/data"
        with open(data, "wb") as f:
            for _ in range(256):
                f.write(os.urandom(1 << 20))
            os.fsync(f.fileno())
        # The reader runs a little past the writer, which starts after it.
        secs = 1.0 + ckpt_mb / 512.0 + 5.0
        rd = subprocess.Popen([sys.executable, "-c", READER, data, str(secs)],
                              stdout=subprocess.PIPE, text=True)
        time.sleep(0.5)
        os.sched_setaffinity(0, {0})
        chunk = os.urandom(1 << 20)
        t0 = time.monotonic()
        fd = os.open(mnt + "/ckpt", os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            for _ in range(ckpt_mb):
                os.write(fd, chunk)
            os.fsync(fd)
        finally:
            os.close(fd)
        took = time.monotonic() - t0
        os.sched_setaffinity(0, range(os.cpu_count()))
        out, _ = rd.communicate()
        if rd.returncode:
            sys.exit("sync-beside: the reader failed")
        lat = sorted(float(x) for x in out.split())
        return {"reads": len(lat), "p50_ms": pct(lat, 0.5),
                "p99_ms": pct(lat, 0.99), "max_ms": lat[-1],
                "ckpt_s": took}
    finally:
        subprocess.run(["umount", mnt], check=False)
        os.unlink(img)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default="/var/tmp")
    ap.add_argument("--ckpt-mb", type=int, default=2048)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--transports", default="uring,dev")
    ap.add_argument("--json")
    ap.add_argument("zonefuse")
    a = ap.parse_args()
    if os.geteuid():
        sys.exit("sync-beside: run as root (it mounts)")
    ts = a.transports.split(",")
    res = {t: [] for t in ts}
    with tempfile.TemporaryDirectory(dir=a.dir) as d:
        img, mnt = d + "/img", d + "/mnt"
        os.mkdir(mnt)
        for r in range(a.rounds):
            for t in ts:
                x = one(a.zonefuse, t, img, mnt, a.ckpt_mb)
                res[t].append(x)
                print("round %d %-5s reads %5d  p50 %.3f  p99 %.3f  max %.1f ms"
                      "  checkpoint %d MiB + fsync %.2f s"
                      % (r + 1, t, x["reads"], x["p50_ms"], x["p99_ms"],
                         x["max_ms"], a.ckpt_mb, x["ckpt_s"]), flush=True)
    print("median of %d rounds:" % a.rounds)
    summary = {}
    for t in ts:
        summary[t] = {k: statistics.median(x[k] for x in res[t])
                      for k in ("p50_ms", "p99_ms", "max_ms", "ckpt_s")}
        print("%-5s p50 %.3f  p99 %.3f  max %.1f ms  checkpoint %.2f s"
              % (t, summary[t]["p50_ms"], summary[t]["p99_ms"],
                 summary[t]["max_ms"], summary[t]["ckpt_s"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                       "zonefuse": a.zonefuse, "ckpt_mb": a.ckpt_mb,
                       "rounds": res, "median": summary}, f, indent=1)


if __name__ == "__main__":
    main()
