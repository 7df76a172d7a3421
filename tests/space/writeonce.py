#!/usr/bin/python3
"""tests/space/writeonce.py: data written once is never copied.

A fresh device filled to ENOSPC with files of one size, each created,
written once in 1 MiB writes, fsynced, closed and never touched again (a
dataset copied onto the mount, the shards of checkpoints): 1 MiB, 4 MiB
and 64 MiB files on 2 GiB with 64 MiB zones and 14/14 open/active zones
(as the issue measured them), and 4 KiB files on 256 MiB with 16 MiB
zones (a quarter of a million fsyncs would take minutes). Checked:

- reclaim copies nothing (gc_bytes_written 0) and the data's write
  amplification, (device bytes - journal bytes) / host bytes, is <= 1.01;
- for 1 MiB files and up, with the journal: <= 1.01 (for 4 KiB files, an
  fsync each costs a journal block each: reported, not asserted);
- ENOSPC comes from write(), within a zone of what df said was free
  before the fill (the same number of files fits as the space says);
- fsck is clean, and the first and last files read back.

Before the space policy (issue 21) 1 MiB and 4 MiB files went to write
amplification 2.00: reclaim copied every byte to get back the room of
finished zones.
"""
import errno
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spacelib as s  # noqa: E402
from spacelib import e, KiB, MiB  # noqa: E402

WA_MAX = 1.01


def fill(name, size, geometry, zone):
    img = e.image(f"{name}.img", *geometry, "--max-open", "14",
                  "--max-active", "14")
    m = e.Mount(img, f"{name}.mnt")
    d = m.path("data")
    os.mkdir(d)
    st = os.statvfs(m.dir)
    free_before = st.f_bavail * st.f_frsize
    buf = s.data(size % 100003, min(size, 16 * MiB))
    n = host = 0
    err = where = None
    while err is None:
        p = os.path.join(d, f"f{n:06d}")
        fd = os.open(p, os.O_WRONLY | os.O_CREAT, 0o644)
        done = 0
        try:
            where = "write"
            while done < size:
                k = min(MiB, size - done)
                off = done % len(buf)
                done += os.write(fd, buf[off:off + k])
            where = "fsync"
            os.fsync(fd)
        except OSError as x:
            err = x
        os.close(fd)
        host += done
        if err is None:
            n += 1
    live = m.stats()
    m.umount()
    e.fsck(img)
    st = s.stat_img(img)
    dev, meta = st["device_bytes_written"], st["meta_bytes_written"]
    fig = {"file_size": size, "files": n, "host_bytes": st["host_bytes_written"],
           "device_bytes": dev, "meta_bytes": meta,
           "gc_bytes": st["gc_bytes_written"],
           "wa": round(dev / st["host_bytes_written"], 4),
           "data_wa": round((dev - meta) / st["host_bytes_written"], 4),
           "free_before": free_before, "written": host,
           "journal_zones": st["meta_zones"] - 2}
    s.results_line(f"writeonce-{name}", fig)
    e.log(f"{name}: {n} files of {size} B to ENOSPC ({err!r} from {where}); "
          f"WA {fig['wa']} (data {fig['data_wa']}), reclaim copied "
          f"{fig['gc_bytes']} B; {host} B written of {free_before} free "
          f"before; stats at the end: free {live['free_bytes']}")
    assert err.errno == errno.ENOSPC and where == "write", \
        f"{name}: the fill ended with {err!r} from {where}, not ENOSPC from write"
    assert fig["gc_bytes"] == 0, \
        f"{name}: reclaim copied {fig['gc_bytes']} bytes of write-once data"
    assert fig["data_wa"] <= WA_MAX, \
        f"{name}: data write amplification {fig['data_wa']} > {WA_MAX}"
    if size >= MiB:
        assert fig["wa"] <= WA_MAX, \
            f"{name}: write amplification {fig['wa']} > {WA_MAX}"
    assert abs(host - free_before) <= zone, (
        f"{name}: ENOSPC after {host} bytes; df said {free_before} free "
        f"before the fill: more than a zone ({zone}) apart")
    m.mount()
    for i in (0, n - 1):
        with open(os.path.join(d, f"f{i:06d}"), "rb") as f:
            got = f.read()
        assert len(got) == size and all(
            got[o:o + MiB] == buf[o % len(buf):o % len(buf) + min(MiB, size - o)]
            for o in range(0, size, MiB)), f"{name}: f{i:06d} reads back wrong"
    m.umount()


if __name__ == "__main__":
    e.begin("a write-once fill to ENOSPC (4 KiB, 1 MiB, 4 MiB, 64 MiB files) "
            "copies nothing: reclaim 0 bytes, data WA <= 1.01, ENOSPC from "
            "write() where df said, fsck clean")
    big = ("2G", "64M")
    e.run_tests([
        ("4k", lambda: fill("4k", 4 * KiB, ("256M", "16M"), 16 * MiB)),
        ("1m", lambda: fill("1m", MiB, big, 64 * MiB)),
        ("4m", lambda: fill("4m", 4 * MiB, big, 64 * MiB)),
        ("64m", lambda: fill("64m", 64 * MiB, big, 64 * MiB)),
    ])
