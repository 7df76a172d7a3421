#!/usr/bin/python3
"""tests/space/mixed.py: a device kept 90% full under random overwrites.

Medium files (256 KiB to 3 MiB) are created until their bytes reach 90% of
the capacity `zonefuse stat` reports; then, at that level, random
overwrites inside them (4 KiB to 512 KiB, aligned or not), deletes and
creates, for several times the capacity in writes. Overwrites leave dead
bytes in every zone, so free zones run out and reclaim must copy live data
out of mostly dead zones while the writers go on. Checked:

- no write fails (no ENOSPC below the capacity: the space the overwritten
  bytes held is space);
- every file holds what was written, byte for byte, live, after a remount,
  and fsck says clean.

It prints its write amplification and the bytes reclaim copied (figures,
not assertions). `mixed.py SEED` replays one seed. `mixed.py --device DEV
[SEED]` runs on a zoned block device instead of an emulator image (it is
formatted: tests/real/run.sh, in a guest), writing its capacity over once
instead of three times: with null_blk's 16 MiB zones reclaim copied up to
seven bytes for each one written, and a guest without KVM took 300 s for
three turnovers.
"""
import errno
import os
import random
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spacelib as s  # noqa: E402
from spacelib import e, KiB, MiB  # noqa: E402

FILL = 0.90
# Writes in all, as a multiple of the capacity.
TURNOVER = 3


def rand_buf(rng, n):
    off = rng.randrange(0, len(s._POOL) - n)
    return s._POOL[off:off + n]


class Files:
    """Files on the mount and their expected contents."""

    def __init__(self, m, rng, cap):
        self.m = m
        self.rng = rng
        self.cap = cap
        self.enospc = []
        self.model = {}
        self.live = 0
        self.written = 0
        self.serial = 0

    def _write(self, name, data, off):
        """pwrite data at off, whole or until the first error; the model
        follows what was written. Returns the error, or None."""
        fd = os.open(self.m.path(name), os.O_WRONLY | os.O_CREAT, 0o644)
        done, err = 0, None
        try:
            while done < len(data):
                n = os.pwrite(fd, data[done:done + MiB], off + done)
                done += n
            if self.rng.random() < 0.1:
                os.fsync(fd)
        except OSError as x:
            err = x
        finally:
            os.close(fd)
        buf = self.model.setdefault(name, bytearray())
        end = off + done
        if end > len(buf):
            self.live += end - len(buf)
            buf.extend(bytes(end - len(buf)))
        buf[off:end] = data[:done]
        self.written += done
        return err

    def _failed(self, what, name, err):
        if err.errno != errno.ENOSPC:
            raise err
        st = self.m.stats()
        self.enospc.append(
            f"{what} {name}: ENOSPC with {self.live} bytes in files "
            f"({100 * self.live / self.cap:.1f}% of capacity {self.cap}); "
            f"stats: free {st['free_bytes']} reclaimable "
            f"{st['reclaimable_bytes']} empty zones {st['zones_empty']} "
            f"journal zones {st['meta_zones'] - 2} reclaim copied "
            f"{st['gc_bytes_written']}")
        e.log(f"FAIL (going on): {self.enospc[-1]}")
        # Going on shows what else breaks; space may come back later.
        time.sleep(0.5)

    def create(self, size):
        self.serial += 1
        name = f"d{self.serial % 7}/f{self.serial:05d}"
        os.makedirs(self.m.path(os.path.dirname(name)), exist_ok=True)
        err = self._write(name, rand_buf(self.rng, size), 0)
        if err:
            self._failed("create", name, err)

    def overwrite(self):
        name = self.rng.choice(list(self.model))
        buf = self.model[name]
        n = self.rng.choice([4 * KiB, 64 * KiB, 512 * KiB,
                             self.rng.randint(1, 512 * KiB)])
        n = min(n, len(buf))
        off = self.rng.randrange(0, len(buf) - n + 1)
        if self.rng.random() < 0.5:
            off -= off % (4 * KiB)
        err = self._write(name, rand_buf(self.rng, n), off)
        if err:
            self._failed("overwrite", name, err)

    def delete(self):
        name = self.rng.choice(list(self.model))
        os.unlink(self.m.path(name))
        self.live -= len(self.model.pop(name))

    def verify(self):
        for name, buf in self.model.items():
            s.check_file(self.m.path(name), buf)


def workload(f, rng, target, ops, turnover):
    """Fill to target, then churn at that level; returns the peak."""
    def size():
        return rng.randint(256 * KiB, 3 * MiB)

    def top_up():
        n = size()
        while f.live + n <= target:
            f.create(n)
            ops["create"] += 1
            n = size()

    top_up()
    e.log(f"filled: {len(f.model)} files, {f.live} bytes = "
          f"{100 * f.live / f.cap:.1f}% of capacity {f.cap}")
    peak = f.live
    while f.written < turnover * f.cap:
        r = rng.random()
        if r < 0.75:
            f.overwrite()
            ops["overwrite"] += 1
        else:
            if r < 0.87 or f.live + 3 * MiB > target:
                f.delete()
                ops["delete"] += 1
            top_up()
        peak = max(peak, f.live)
    return peak


def run(seed, device=None):
    rng = random.Random(seed)
    e.log(f"seed {seed}")
    if device:
        img = device
        e.zf("mkfs", "--force", img)
    else:
        img = e.image("mixed.img", "128M", "2M")
    m = e.Mount(img, "mnt")
    cap = m.stats()["capacity_bytes"]
    f = Files(m, rng, cap)
    ops = {"create": 0, "overwrite": 0, "delete": 0}
    fatal = None
    peak = 0
    t0 = time.time()
    try:
        peak = workload(f, rng, int(cap * FILL), ops,
                        1 if device else TURNOVER)
    except OSError as err:
        # Not ENOSPC (EROFS, EIO): what was written must still be there.
        fatal = err
        e.log(f"FAIL: the workload stopped: {err!r}")
    elapsed = time.time() - t0
    live = m.stats()
    e.log(f"done: {ops}; {len(f.model)} files, {f.live} bytes "
          f"({100 * f.live / cap:.1f}% of capacity, peak "
          f"{100 * peak / cap:.1f}%); live WA {live['write_amplification']}, "
          f"reclaim {live['gc_bytes_written']} B, reclaimable "
          f"{live['reclaimable_bytes']} B, free {live['free_bytes']} B, "
          f"journal zones {live['meta_zones'] - 2}, read-only "
          f"{live['read_only']}")
    f.verify()
    m.umount()
    e.fsck(img)
    st = s.stat_img(img)
    wa = st["device_bytes_written"] / st["host_bytes_written"]
    e.log(f"host {st['host_bytes_written']} B, device "
          f"{st['device_bytes_written']} B, WA {wa:.3f}, reclaim copied "
          f"{st['gc_bytes_written']} B, resets min {st['resets_min']} mean "
          f"{st['resets_mean']} max {st['resets_max']}")
    s.results_line("mixed", {
        "seed": seed, "capacity_bytes": cap, "fill": FILL,
        "seconds": round(elapsed, 1),
        "peak_fill": round(peak / cap, 4), "ops": ops,
        "enospc": len(f.enospc), "stopped": repr(fatal) if fatal else None,
        "host_bytes": st["host_bytes_written"],
        "device_bytes": st["device_bytes_written"],
        "wa": round(wa, 4), "gc_bytes": st["gc_bytes_written"],
        "resets_min": st["resets_min"], "resets_mean": st["resets_mean"],
        "resets_max": st["resets_max"]})
    assert st["files"] == len(f.model), \
        f"the image holds {st['files']} files, {len(f.model)} expected"
    m.mount()
    f.verify()
    m.umount()
    assert not fatal, f"the workload stopped at {100 * f.live / cap:.1f}% of " \
        f"the capacity: {fatal!r}"
    assert not f.enospc, (
        f"{len(f.enospc)} writes failed with ENOSPC below {int(FILL * 100)}% "
        f"of the capacity; the first: {f.enospc[0]}")


if __name__ == "__main__":
    e.begin(f"random overwrites, creates and deletes at {int(FILL * 100)}% of "
            "the capacity: no ENOSPC, reclaim keeps up, every byte verified "
            "live and after a remount, fsck clean")
    args = sys.argv[1:]
    device = None
    if args[:1] == ["--device"] and len(args) > 1:
        device = args[1]
        args = args[2:]
    seed = int(args[0]) if args else 6
    e.run_tests([("mixed", lambda: run(seed, device))], picked=[])
