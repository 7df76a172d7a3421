#!/usr/bin/python3
"""tests/space/fill.py: ENOSPC comes where df said it would, and goes away.

Writes files of 1.5 zones (1 MiB writes, each file fsynced) until a write
fails, then checks:

- the error is ENOSPC, from write() (fsync and close of what write()
  accepted must not fail: the space was promised);
- it came at the expected point: the bytes written by then are within one
  zone of the free space df (statvfs) and the stats xattr reported before
  the fill;
- every file holds what was written (the one cut short: what its writes
  accepted);
- delete one file, fsync the directory, and a file of the same size can be
  written at once; three times over;
- the same after a remount, and fsck is clean.

Variants: plain (64 zones of 2 MiB) and cap (48 zones of 4 MiB holding
3 MiB, two conventional).
"""
import errno
import os
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spacelib as s  # noqa: E402
from spacelib import e, MiB  # noqa: E402


def df_free(path):
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def write_until_error(path, seed, size):
    """Write data(seed, size) to path in 1 MiB writes, fsync, close.
    Returns (bytes write() accepted, the error or None, where it came)."""
    buf = s.data(seed, size)
    done, err, where = 0, None, None
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        while done < size:
            where = "write"
            done += os.write(fd, buf[done:done + MiB])
        where = "fsync"
        os.fsync(fd)
    except OSError as x:
        err = x
    try:
        os.close(fd)
    except OSError as x:
        err, where = err or x, where if err else "close"
    return done, err, where


def fill(name, geometry, zcap):
    img = e.image(f"{name}.img", *geometry)
    m = e.Mount(img, f"{name}.mnt")
    d = m.path("data")
    os.mkdir(d)
    s.fsync_dir(d)
    before = m.stats()["free_bytes"]
    df_before = df_free(m.dir)
    e.log(f"{name}: before the fill: stats free_bytes {before}, df {df_before}, "
          f"capacity_bytes {m.stats()['capacity_bytes']}, zone capacity {zcap}")
    size = zcap + zcap // 2 + 4321
    t0 = time.time()
    files = {}
    total = 0
    i = 0
    while True:
        p = os.path.join(d, f"f{i:04d}")
        done, err, where = write_until_error(p, i, size)
        files[p] = (i, done)
        total += done
        i += 1
        if err:
            break
        assert total < 2 * df_before, "no ENOSPC at twice the free space"
    elapsed = time.time() - t0
    st = m.stats()
    e.log(f"{name}: {err!r} from {where} after {total} bytes in {i} files; "
          f"stats then: free {st['free_bytes']}, reclaimable "
          f"{st['reclaimable_bytes']}, empty zones {st['zones_empty']}, "
          f"reclaim copied {st['gc_bytes_written']}")
    short = before - total
    s.results_line(f"fill-{name}", {
        "free_before": before, "df_before": df_before,
        "written_at_enospc": total, "short_by": short, "zone_capacity": zcap,
        "capacity_bytes": st["capacity_bytes"], "seconds": round(elapsed, 1),
        "host_bytes": st["host_bytes_written"],
        "device_bytes": st["device_bytes_written"],
        "gc_bytes": st["gc_bytes_written"], "resets_min": st["resets_min"],
        "resets_mean": st["resets_mean"], "resets_max": st["resets_max"],
        "error": errno.errorcode.get(err.errno), "from": where})
    # The files fsynced before the error are intact, whatever the error.
    for p, (seed, n) in list(files.items())[:-1]:
        s.check_file(p, s.data(seed, size)[:n])
    assert err.errno == errno.ENOSPC, f"the fill ended with {err!r}, not ENOSPC"
    assert where == "write", (
        f"ENOSPC came from {where}() of a file whose writes had all been "
        "accepted: space promised to staged data was not there")
    p, (seed, n) = list(files.items())[-1]
    s.check_file(p, s.data(seed, size)[:n])
    # Checked at the end, so that one run shows the rest too.
    late = []
    if abs(total - before) > zcap:
        late.append(f"ENOSPC after {total} bytes; the stats said {before} "
                    f"free before the fill: {short} bytes off, more than a "
                    f"zone ({zcap})")
    if abs(total - df_before) > zcap:
        late.append(f"ENOSPC after {total} bytes; df said {df_before} free "
                    f"before the fill: {df_before - total} bytes off, more "
                    f"than a zone ({zcap})")
    for msg in late:
        e.log(f"FAIL (checked at the end): {msg}")

    # Delete one, write again: at once, three times over.
    names = sorted(p for p, (_, n) in files.items() if n == size)
    for k, victim in enumerate(names[1:4]):
        st0 = m.stats()
        os.unlink(victim)
        del files[victim]
        s.fsync_dir(d)
        st = m.stats()
        free = st["free_bytes"]
        assert free >= size, (
            f"after deleting a {size} byte file the stats say {free} bytes "
            f"free; before the delete: {st0}; after: {st}")
        p = os.path.join(d, f"again{k}")
        done, err, where = write_until_error(p, 1000 + k, size)
        files[p] = (1000 + k, done)
        assert not err, (
            f"rewrite {k}: {err!r} from {where} after {done} of {size} bytes, "
            f"with {free} bytes free after deleting a file of {size} bytes")
    st = m.stats()
    e.log(f"{name}: after 3 deletes and rewrites: free {st['free_bytes']}, "
          f"reclaim copied {st['gc_bytes_written']}")
    m.umount()
    e.fsck(img)
    m.mount()
    for p, (seed, n) in files.items():
        want = s.data(seed, size)[:n]
        s.check_file(p, want)
    m.umount()
    assert not late, "; ".join(late)


def test_plain():
    fill("plain", ("128M", "2M"), 2 * MiB)


def test_cap():
    fill("cap", ("192M", "4M", "--zone-capacity", "3M", "--conventional", "2"),
         3 * MiB)


if __name__ == "__main__":
    e.begin("writing until full: ENOSPC from write() within a zone of the free "
            "space df reported, nothing written is damaged, deleting a file "
            "makes room for a file as large at once")
    e.run_tests([("plain", test_plain), ("cap", test_cap)])
