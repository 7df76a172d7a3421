#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""What scrubbing the metadata of a mounted file system costs the writers.

`zonefuse scrub MOUNTPOINT` reads the metadata back from the device as the
journal's committer: commits wait meanwhile. For each file count N this
makes a 4 GiB emulator image of 64 MiB zones in /dev/shm (mkfs's default
of two journal copies), mounts it, creates N files of 4 KiB in
directories of 1,000, then times REPS scrubs of the metadata (the
user.zonefuse.scrub attribute of the root, what the command reads) while
a writer loops create + 4 KiB write + fsync, and prints one line per N:
the scrub's median and range, and the writer's latency without and
during the scrubs.

Usage (root): bench/scrub-meta.py [--build DIR] [--reps R] N [N ...]
  --build DIR   the build whose src/zonefuse to use (default build-rel,
                made with `meson setup build-rel --buildtype=release`)
"""
import argparse
import json
import os
import subprocess
import sys
import threading
import time

KIB = 1 << 10


def pct(v, p):
    return v[min(len(v) - 1, int(len(v) * p))] * 1000


def one(z, n, reps):
    img, mnt = f"/dev/shm/zonefuse-scrub-bench-{os.getpid()}.img", \
        f"/tmp/zonefuse-scrub-bench-{os.getpid()}"
    subprocess.run([z, "emu", "create", img, "--size", "4G", "--zone-size",
                    "64M", "--max-open", "14", "--max-active", "14"],
                   check=True, capture_output=True)
    subprocess.run([z, "mkfs", img], check=True, capture_output=True)
    os.makedirs(mnt, exist_ok=True)
    subprocess.run([z, "mount", img, mnt], check=True)
    try:
        dirs = max(1, n // 1000)
        for d in range(dirs):
            os.makedirs(f"{mnt}/d{d}", exist_ok=True)
        buf = os.urandom(4 * KIB)
        for i in range(n):
            with open(f"{mnt}/d{i % dirs}/f{i}", "wb") as f:
                f.write(buf)
        os.sync()

        def commit(path):
            t0 = time.perf_counter()
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.write(fd, buf)
            os.fsync(fd)
            os.close(fd)
            return time.perf_counter() - t0

        base = sorted(commit(f"{mnt}/b") for _ in range(200))
        stop, during = False, []

        def writer():
            i = 0
            while not stop:
                during.append(commit(f"{mnt}/w{i % 50}"))
                i += 1

        th = threading.Thread(target=writer)
        th.start()
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            said = os.getxattr(mnt, "user.zonefuse.scrub").decode()
            times.append(time.perf_counter() - t0)
            time.sleep(0.2)
        stop = True
        th.join()
        times.sort()
        during.sort()
        stats = json.loads(os.getxattr(mnt, "user.zonefuse.stats"))
        print(f"files {n}: metadata scrub median {pct(times, 0.5):.1f} ms "
              f"({pct(times, 0):.1f}-{times[-1] * 1000:.1f}); writer's "
              f"create+fsync p50/max {pct(base, 0.5):.2f}/{base[-1] * 1000:.2f} ms "
              f"without a scrub, {pct(during, 0.5):.2f}/{during[-1] * 1000:.2f} ms "
              f"during them; copies {stats.get('metadata_copies')}, "
              f"chain zones {stats.get('chain_length')}; the scrub said "
              f"{said.strip()!r}", flush=True)
    finally:
        subprocess.run(["umount", mnt])
        for _ in range(50):
            if subprocess.run(["fuser", "-s", img],
                              stderr=subprocess.DEVNULL).returncode:
                break
            time.sleep(0.1)
        os.unlink(img)
        os.rmdir(mnt)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build-rel")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("files", type=int, nargs="+")
    a = ap.parse_args()
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    z = os.path.join(root, a.build, "src", "zonefuse")
    if not os.access(z, os.X_OK):
        sys.exit(f"scrub-meta.py: no {z}: build it first (see --help)")
    for n in a.files:
        one(z, n, a.reps)


if __name__ == "__main__":
    main()
