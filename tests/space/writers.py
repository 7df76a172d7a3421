#!/usr/bin/python3
"""tests/space/writers.py: more writers than the device has zones to give.

8, 16 and 64 threads at once, each: open a new file, write 2 MiB in 1 MiB
writes, fsync, close; on devices of 4 MiB zones that allow 2/2, 3/3 and
14/14 open/active zones (the journal, reclaim and every data writer share
what there is). Checked, for each of the nine:

- every write and fsync succeeds (a writer that finds no zone waits for
  one or shares a head; nothing is dropped or turned into EIO);
- the daemon logs no error (no "that data is lost"), and never more zones
  are active on the device than it allows (`zonefuse zones --json` after
  the unmount);
- fsck is clean and every file reads back bit-exact after a remount.

Figures (fsync latency p50/p99/max, seconds) go to the results line for
bench/space.sh and docs/space.md; they are not asserted.
"""
import hashlib
import os
import sys
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spacelib as s  # noqa: E402
from spacelib import e, MiB  # noqa: E402

SIZE = 2 * MiB
LIMITS = ((2, 2), (3, 3), (14, 14))
WRITERS = (8, 16, 64)


def content(i):
    """2 MiB that name their writer."""
    return hashlib.sha256(f"writer {i}".encode()).digest() * (SIZE // 32)


def writer(path, buf, lat, errors, i):
    try:
        with open(path, "wb") as f:
            for off in range(0, len(buf), MiB):
                f.write(buf[off:off + MiB])
            f.flush()
            t0 = time.monotonic()
            os.fsync(f.fileno())
            lat[i] = time.monotonic() - t0
    except OSError as x:
        errors.append(f"{path}: {x!r}")


def pct(v, p):
    return v[min(len(v) - 1, int(p * len(v)))]


def run(mo, ma, n):
    name = f"w{mo}-{ma}-{n}"
    img = e.image(f"{name}.img", "256M", "4M", "--max-open", str(mo),
                  "--max-active", str(ma))
    m = e.Mount(img, f"{name}.mnt", foreground=True)
    bufs = [content(i) for i in range(n)]
    lat = [None] * n
    errors = []
    threads = [threading.Thread(target=writer,
                                args=(m.path(f"f{i}"), bufs[i], lat, errors, i))
               for i in range(n)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.monotonic() - t0
    m.umount()
    lines = [x for x in open(m.log.name).read().splitlines() if "error" in x]
    zs = s.zones_img(img)["zones"]
    active = [z["index"] for z in zs
              if z["cond"] in ("imp_open", "exp_open", "closed")]
    e.fsck(img)
    m.mount(foreground=True)
    for i in range(n):
        s.check_file(m.path(f"f{i}"), bufs[i])
    m.umount()
    v = sorted(x for x in lat if x is not None)
    fig = {"writers": n, "max_open": mo, "max_active": ma,
           "seconds": round(seconds, 2)}
    if v:
        fig.update({"fsync_p50_ms": round(pct(v, 0.5) * 1000, 1),
                    "fsync_p99_ms": round(pct(v, 0.99) * 1000, 1),
                    "fsync_max_ms": round(v[-1] * 1000, 1)})
    s.results_line(f"writers-{mo}-{ma}-{n}", fig)
    e.log(f"{name}: {n} writers done in {seconds:.2f} s, {len(errors)} failed; "
          f"fsync p50/p99/max {fig.get('fsync_p50_ms')}/"
          f"{fig.get('fsync_p99_ms')}/{fig.get('fsync_max_ms')} ms; "
          f"{len(active)} zones active after the unmount")
    assert not errors, f"{name}: {len(errors)} writers failed: {errors[:3]}"
    assert not lines, f"{name}: the daemon logged errors: {lines[:3]}"
    assert len(active) <= ma, \
        f"{name}: {len(active)} zones active on the device ({active}); it allows {ma}"


def test(mo, ma):
    return lambda: [run(mo, ma, n) for n in WRITERS]


if __name__ == "__main__":
    e.begin("8, 16 and 64 writers of 2 MiB with fsync on devices of 2/2, 3/3 "
            "and 14/14 open/active zones: none fails, nothing logged as "
            "lost, no more active zones than allowed, fsck clean, every "
            "file bit-exact after a remount")
    e.run_tests([(f"limits-{mo}-{ma}", test(mo, ma)) for mo, ma in LIMITS])
