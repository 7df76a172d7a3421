#!/usr/bin/python3
"""tests/space/concurrent.py: more writers than the device has open zones.

A device that allows 4 open and 6 active zones; 12 threads each write a
file of 1 to 3 zones at once (1 MiB or 128 KiB writes, then fsync), some
in one directory, some in directories of their own; five rounds, half the
files deleted after each. Checked:

- every write and fsync succeeds: writers share zones or wait, none fails;
- the stats xattr, read every few milliseconds while they write, never
  shows more active zones than the device allows, and after the unmount
  the device holds no more than that either (`zonefuse zones --json`);
- every file holds what was written, live and after a remount; fsck clean.

And first, deterministically ("held"): 8 files, one per directory, held
open at once and written in turns (1 MiB each, then a tail of 777 bytes),
so that every open zone the device allows holds a writer's data; then
each is fsynced: no write or fsync fails.
"""
import os
import random
import sys
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spacelib as s  # noqa: E402
from spacelib import e, KiB, MiB  # noqa: E402

MAX_OPEN = 4
MAX_ACTIVE = 6
WRITERS = 12
ROUNDS = 5
ZONE = 2 * MiB


def writer(path, seed, size, chunk, errors):
    try:
        s.write_file(path, s.data(seed, size), fsync=True, chunk=chunk)
    except Exception as x:  # report every writer's failure
        errors.append((path, f"{path}: {x!r}"))


def test_concurrent():
    rng = random.Random(6)
    img = e.image("conc.img", "128M", "2M", "--max-open", str(MAX_OPEN),
                  "--max-active", str(MAX_ACTIVE))
    m = e.Mount(img, "mnt")
    files = {}
    sampler = s.Sampler(m, every=0.005)
    errors = []
    try:
        for r in range(ROUNDS):
            threads = []
            for w in range(WRITERS):
                # A third share one directory, the rest have their own.
                d = m.path("shared" if w % 3 == 0 else f"r{r}w{w}")
                os.makedirs(d, exist_ok=True)
                seed = r * 100 + w
                size = rng.randint(ZONE, 3 * ZONE) + rng.randint(0, 4095)
                p = os.path.join(d, f"f{seed}")
                files[p] = (seed, size)
                threads.append(threading.Thread(
                    target=writer,
                    args=(p, seed, size, rng.choice([MiB, 128 * KiB]), errors)))
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            st = m.stats()
            e.log(f"round {r}: {len(threads)} writers done, {len(errors)} "
                  f"failed; active zones now {st['active_zones']}, highest "
                  f"seen {sampler.max_active} ({sampler.samples} samples), "
                  f"reclaim copied {st['gc_bytes_written']}")
            for _, x in errors:
                e.log(f"FAIL: writer {x}")
            for p, _ in errors:
                files.pop(p, None)
            # What the writers that succeeded wrote must be there.
            for p, want in files.items():
                s.check_file(p, want)
            if errors:
                break
            for p in rng.sample(sorted(files), len(files) // 2):
                os.unlink(p)
                del files[p]
            s.fsync_dir(m.dir)
    finally:
        sampler.stop()
    if errors:
        # Whatever else holds, this is the failure; the files that were
        # written must still be there after a remount.
        m.umount()
        m.mount()
        for p, want in files.items():
            s.check_file(p, want)
        m.umount()
        raise AssertionError(f"{len(errors)} writers failed: "
                             f"{[x for _, x in errors[:3]]}")
    assert sampler.samples > 10 and not sampler.errors, \
        f"the stats xattr: {sampler.samples} samples, errors {sampler.errors[:3]}"
    assert sampler.max_active <= MAX_ACTIVE, (
        f"the stats showed {sampler.max_active} active zones; the device "
        f"allows {MAX_ACTIVE}")
    m.umount()
    e.fsck(img)
    zs = s.zones_img(img)["zones"]
    active = [z["index"] for z in zs
              if z["cond"] in ("imp_open", "exp_open", "closed")]
    e.log(f"after the unmount: zones {active} active on the device")
    assert len(active) <= MAX_ACTIVE, \
        f"{len(active)} zones active on the device: {active}"
    m.mount()
    for p, want in files.items():
        s.check_file(p, want)
    m.umount()
    st = s.stat_img(img)
    s.results_line("concurrent", {
        "writers": WRITERS, "max_open": MAX_OPEN, "max_active": MAX_ACTIVE,
        "max_active_seen": sampler.max_active,
        "host_bytes": st["host_bytes_written"],
        "device_bytes": st["device_bytes_written"],
        "gc_bytes": st["gc_bytes_written"]})


def test_held():
    """Ranks of a job each write a shard, all open at once, then fsync:
    more files held open than the device has open zones, and the commit
    of the first fsync comes while the writers' zones are open."""
    img = e.image("held.img", "128M", "2M", "--max-open", str(MAX_OPEN),
                  "--max-active", str(MAX_ACTIVE))
    m = e.Mount(img, "held")
    nfiles, size = 2 * MAX_OPEN, MiB + 777
    bufs = [s.data(900 + i, size) for i in range(nfiles)]
    fds = []
    for i in range(nfiles):
        os.mkdir(m.path(f"rank{i}"))
        fds.append(os.open(m.path(f"rank{i}", "shard"),
                           os.O_WRONLY | os.O_CREAT, 0o644))
    errors = []
    good = set(range(nfiles))
    for off in range(0, size, MiB):
        for i, fd in enumerate(fds):
            try:
                os.pwrite(fd, bufs[i][off:off + MiB], off)
            except OSError as x:
                errors.append(f"rank{i}: write at {off}: {x!r}")
                good.discard(i)
    # Let the writeback put the whole chunks in their zones (each writer's
    # zone open on the device) before the first fsync commits.
    t0 = time.time()
    while (m.stats()["device_bytes_written"] < nfiles * (size - size % MiB)
           and time.time() - t0 < 20):
        time.sleep(0.05)
    for i, fd in enumerate(fds):
        try:
            os.fsync(fd)
        except OSError as x:
            errors.append(f"rank{i}: fsync: {x!r}")
            good.discard(i)
        os.close(fd)
    st = m.stats()
    e.log(f"held: {len(errors)} errors; read-only {st['read_only']}, active "
          f"zones {st['active_zones']}")
    for x in errors:
        e.log(f"FAIL: {x}")
    # The shards whose fsync succeeded must be there, whatever failed.
    for i in sorted(good):
        s.check_file(m.path(f"rank{i}", "shard"), bufs[i])
    m.umount()
    e.fsck(img)
    m.mount()
    for i in sorted(good):
        s.check_file(m.path(f"rank{i}", "shard"), bufs[i])
    m.umount()
    assert not errors, f"{len(errors)} writes or fsyncs failed: {errors[:3]}"


if __name__ == "__main__":
    e.begin(f"{WRITERS} writers at once on a device of {MAX_OPEN} open and "
            f"{MAX_ACTIVE} active zones: none fails, never more active zones "
            "than allowed, data verified after a remount, fsck clean")
    e.run_tests([("held", test_held), ("concurrent", test_concurrent)])
