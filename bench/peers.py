#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""zonefuse against btrfs and F2FS on one zoned device (issue 26).

  peers.py run --device DEV [--meta-device DEV2] --out DIR [--smoke] [--reps N]
               [--systems limit,btrfs,f2fs,zonefuse]
               [--workloads rotation,concurrent,mixed,reads]
  peers.py step --device DEV --system S --workload W [--rep N] [--smoke]
  peers.py report DIR [--png]

`run` is what bench/zoned-peers.sh runs inside the QEMU guest: on DEV,
reformatted for each system and each workload, it measures every workload
REPS times (the runs are the outer loop, so that a slow spell of the
machine spreads over every system) and appends every figure to
DIR/samples.jsonl, and the guest's versions to DIR/meta.json; first, on
each boot, what the device charges for a zone reset and a write, from
bench/zone-costs.py on 2 zones, to DIR/device-costs.jsonl (one line per
boot, with the systems it ran: a gauge of the host's speed then). `report`
prints the table (medians of the runs with min..max, and zonefuse's ratio
to each other system: above 1, zonefuse is ahead) and writes
DIR/results.json, DIR/results.md and, with matplotlib, DIR/results.png.

The systems:
  limit     fio zonemode=zbd straight on DEV (O_DIRECT, psync, 1 MiB
            sequential writes, 4 KiB random reads): what the device gives
  btrfs     mkfs.btrfs (it finds the zoned device itself), default options
  f2fs      mkfs.f2fs -m, default options (its metadata on DEV's
            conventional zones; with --meta-device, a device without
            conventional zones, as an NVMe ZNS namespace, gets F2FS's
            metadata on DEV2, a small regular disk, as the first device
            of the volume: mkfs.f2fs -m -c DEV DEV2, mounted from DEV2)
  zonefuse  zonefuse mkfs, default options; zonefuse mount

The workloads (sizes in SIZES below; a checkpoint is SHARDS files):
  rotation    ROUNDS rounds of: write a checkpoint directory of SHARDS
              shards (1 MiB writes, fsync each shard), keep the last KEEP,
              `rm -rf` the oldest; per round the write throughput, the time
              rm takes to return, and the time until the space is back,
              as df sees it and as zones (seq zones EMPTY again), polled
              every 50 ms up to SPACE_WAIT s (the last round up to
              FINAL_WAIT s); the device's write amplification over all
              rounds and the unmount
  concurrent  WRITERS shards written at once by as many threads, each
              fsynced; the throughput until the last fsync returns, WA
  mixed       filled to 85 % of the system's own df (large cold files to
              70 %, small files to 85 %), unmounted and mounted again,
              then create / overwrite in place / append / delete of small
              files, an fsync after each write, kept between 80 and 90 %
              full, until MIXED_MB were written: WA, throughput, fsync
              latency p50/p99/max. With FILL_MB, the percentages are of
              FILL_MB MiB instead of each df: every system holds the
              same bytes. Kept beside them: each fsync's latency and its
              time into the phase (the report says where the slowest
              fell), the device's reads and writes with their time in
              it, and the guest's memory reclaim in the phase
  reads       a READ_MB file written, unmounted and mounted, caches
              dropped, then fio 4 KiB psync random reads for READ_SECS s
              with 1 and with 4 threads (caches dropped before each)

Write amplification is the sectors the device took (/sys/block/DEV/stat,
sectors written, x512, and DEV2's with --meta-device, whatever system
wrote them), from just after the mount to after the unmount
(and, for zonefuse, after its daemon let go of the device), over the
bytes the program wrote. It is exact and does not depend on the
emulation's speed; throughput and latency in the TCG guest do.
"""

import argparse
import errno
import fcntl
import json
import os
import random
import shutil
import statistics
import struct
import subprocess
import sys
import threading
import time

MIB = 1 << 20
SYSTEMS = ["limit", "btrfs", "f2fs", "zonefuse"]
WORKLOADS = ["rotation", "concurrent", "mixed", "reads"]
ZONEFUSE = os.environ.get("ZONEFUSE", "build-rel/src/zonefuse")
# Options of zonefuse's mkfs beyond --force (e.g. --metadata-copies 1).
ZONEFUSE_MKFS = os.environ.get("PEERS_ZF_MKFS", "").split()

# Sizes for the full run (4 GiB null_blk, 64 MiB zones) and the smoke.
SIZES = {
    "full": dict(SHARDS=4, SHARD_MB=24, KEEP=2, ROUNDS=30, SPACE_WAIT=3,
                 FINAL_WAIT=60, WRITERS=8, WRITER_MB=32, MIXED_MB=256,
                 READ_MB=256, READ_SECS=5, MIXED_SECS=900, FILL_PCT=85,
                 FILL_MB=0),
    "smoke": dict(SHARDS=2, SHARD_MB=32, KEEP=1, ROUNDS=3, SPACE_WAIT=3,
                  FINAL_WAIT=10, WRITERS=8, WRITER_MB=8, MIXED_MB=16,
                  READ_MB=64, READ_SECS=1, MIXED_SECS=120, FILL_PCT=6,
                  FILL_MB=0),
}

# One metric: (workload, name, label, unit, better).
HI, LO = "higher", "lower"
METRICS = [
    ("rotation", "write_MBps", "checkpoint write (median round)", "MB/s", HI),
    ("rotation", "rm_s", "rm -rf of a checkpoint returns", "s", LO),
    ("rotation", "df_back_s", "space back in df after rm", "s", LO),
    ("rotation", "zones_back_s", "zones EMPTY again after rm", "s", LO),
    ("rotation", "last_zones_back_s", "last rm: zones EMPTY again", "s", LO),
    ("rotation", "wa", "write amplification", "x", LO),
    ("concurrent", "write_MBps", "8 shards at once, fsync each", "MB/s", HI),
    ("concurrent", "wa", "write amplification", "x", LO),
    ("mixed", "fill_pct", "filled to (% of its own df)", "%", HI),
    ("mixed", "write_MBps", "small files near full: writes", "MB/s", HI),
    ("mixed", "wa", "write amplification", "x", LO),
    ("mixed", "fsync_p50_ms", "fsync latency p50", "ms", LO),
    ("mixed", "fsync_p99_ms", "fsync latency p99", "ms", LO),
    ("mixed", "fsync_max_ms", "fsync latency max", "ms", LO),
    ("mixed", "enospc", "ENOSPC errors in the phase", "n", LO),
    ("reads", "iops_1t", "4 KiB random reads, 1 thread, cold", "IOPS", HI),
    ("reads", "iops_4t", "4 KiB random reads, 4 threads, cold", "IOPS", HI),
]


def log(msg):
    print("peers: " + msg, file=sys.stderr, flush=True)


def sh(*cmd, timeout=600, check=True):
    """Run cmd; its output, or an exception naming it and its stderr."""
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (
            " ".join(cmd), r.returncode,
            (r.stderr.strip() + " " + r.stdout.strip()[-300:])[-600:]))
    return r.stdout


def drop_caches():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


# The guest's memory counters (/proc/vmstat) read around the mixed phase:
# whether its fsyncs met the kernel reclaiming memory (null_blk's pages and
# the page cache share the guest's RAM).
VMSTAT = ("allocstall_normal", "allocstall_movable", "pgscan_direct",
          "pgscan_kswapd", "pgsteal_direct", "compact_stall",
          "workingset_refault_file", "nr_free_pages")


def vmstat():
    out = {}
    with open("/proc/vmstat") as f:
        for ln in f:
            k, v = ln.split()
            if k in VMSTAT:
                out[k] = int(v)
    return out


# ---- the device --------------------------------------------------------------

class Dev:
    # _IOWR(0x12, 130, struct blk_zone_report), a 16-byte header.
    BLKREPORTZONE = 0xC0101282

    def __init__(self, path, meta=None):
        self.path = path
        self.name = os.path.basename(os.path.realpath(path))
        # A regular disk beside a device without conventional zones, for
        # a system that needs one (F2FS's metadata); None: no such disk.
        self.meta = meta
        self.meta_name = meta and os.path.basename(os.path.realpath(meta))
        q = "/sys/block/%s/queue/" % self.name
        self.nr_zones = int(open(q + "nr_zones").read())
        self.zone_bytes = int(open(q + "chunk_sectors").read()) * 512
        self.zones0 = self.report()
        self.nr_conv = sum(1 for z in self.zones0 if z[0] == 1)
        self.zone_cap = max(z[3] for z in self.zones0 if z[0] != 1)

    @staticmethod
    def _written(name):
        with open("/sys/block/%s/stat" % name) as f:
            return int(f.read().split()[6])

    def io_stat(self):
        """The device's reads and writes completed and the milliseconds
        they spent in it (/sys/block/DEV/stat)."""
        with open("/sys/block/%s/stat" % self.name) as f:
            v = [int(x) for x in f.read().split()]
        return {"reads": v[0], "read_ms": v[3], "writes": v[4],
                "write_ms": v[7]}

    def meta_sectors(self):
        return self._written(self.meta_name) if self.meta else 0

    def write_sectors(self):
        """Sectors written to the device and to the meta device."""
        return self._written(self.name) + self.meta_sectors()

    def report(self):
        """(type, cond, wp offset in bytes, capacity in bytes) per zone."""
        fd = os.open(self.path, os.O_RDONLY)
        try:
            buf = bytearray(16 + 64 * self.nr_zones)
            struct.pack_into("QII", buf, 0, 0, self.nr_zones, 0)
            fcntl.ioctl(fd, self.BLKREPORTZONE, buf, True)
        finally:
            os.close(fd)
        n = struct.unpack_from("QII", buf)[1]
        out = []
        for i in range(n):
            start, _ln, wp, typ, cond = struct.unpack_from("QQQBB", buf,
                                                           16 + 64 * i)
            cap = struct.unpack_from("Q", buf, 16 + 64 * i + 32)[0]
            out.append((typ, cond, (wp - start) * 512, cap * 512))
        return out

    def empty_zones(self):
        return sum(1 for z in self.report() if z[0] != 1 and z[1] == 1)

    def reset(self):
        sh("blkzone", "reset", self.path)

    def wait_released(self, timeout=120):
        """Wait until nothing holds the device open exclusively (zonefuse's
        daemon opens it O_EXCL and goes on writing after umount returns)."""
        end = time.monotonic() + timeout
        while True:
            try:
                os.close(os.open(self.path, os.O_RDONLY | os.O_EXCL))
                return
            except OSError as e:
                if e.errno != errno.EBUSY or time.monotonic() > end:
                    raise RuntimeError("%s still busy %d s after unmount"
                                       % (self.path, timeout))
                time.sleep(0.05)


# ---- formatting and mounting ---------------------------------------------------

class Fs:
    """One system on the device, formatted anew and mounted on mnt."""

    def __init__(self, system, dev, mnt):
        self.system, self.dev, self.mnt = system, dev, mnt
        self.mounted = False

    def mkfs(self):
        self.dev.reset()
        d = self.dev.path
        if self.system == "btrfs":
            sh("mkfs.btrfs", "-f", d)
        elif self.system == "f2fs" and self.dev.meta:
            sh("mkfs.f2fs", "-f", "-m", "-c", d, self.dev.meta)
        elif self.system == "f2fs":
            sh("mkfs.f2fs", "-f", "-m", d)
        elif self.system == "zonefuse":
            sh(ZONEFUSE, "mkfs", "--force", *ZONEFUSE_MKFS, d)

    def mount(self):
        d = self.dev.path
        if self.system == "zonefuse":
            sh(ZONEFUSE, "mount", d, self.mnt)
        elif self.system == "f2fs" and self.dev.meta:
            sh("mount", "-t", "f2fs", self.dev.meta, self.mnt)
        else:
            sh("mount", "-t", self.system, d, self.mnt)
        self.mounted = True

    def umount(self):
        if not self.mounted:
            return
        sh("umount", self.mnt, timeout=300)
        self.mounted = False
        self.dev.wait_released()

    def avail(self):
        st = os.statvfs(self.mnt)
        return st.f_bavail * st.f_frsize

    def stat(self, key):
        """One field of zonefuse's stats (None for the others, or a
        daemon without it)."""
        if self.system != "zonefuse":
            return None
        return json.loads(os.getxattr(self.mnt,
                                      "user.zonefuse.stats")).get(key)

    def counters(self):
        """zonefuse's own counters since the mount (its stats attribute):
        where its device writes went, and where its fsyncs' time went
        (those of a daemon too old to count them are left out). None for
        the others."""
        if self.system != "zonefuse":
            return None
        st = json.loads(os.getxattr(self.mnt, "user.zonefuse.stats"))
        return {k: st[k] for k in ("host_bytes_written",
                                   "device_bytes_written",
                                   "gc_bytes_written", "meta_bytes_written",
                                   "fsyncs", "fsync_ns", "fsync_data_ns",
                                   "journal_commits", "journal_commit_ns",
                                   "journal_flush_ns", "journal_wait_ns",
                                   "journal_flushes",
                                   "journal_unflushed_commits",
                                   "checksums_at_write",
                                   "checksums_at_writeback",
                                   "writes_sent_at_once",
                                   "space_stall_ns", "gc_bytes_by_writers",
                                   "journal_rolls", "journal_roll_max_ns",
                                   "journal_snapshot_stop_max_ns",
                                   "journal_snapshot_bytes")
                if k in st}


# zonefuse's stats that are a maximum or a size since the mount, not a count.
GAUGES = ("journal_roll_max_ns", "journal_snapshot_stop_max_ns",
          "journal_snapshot_bytes")


# ---- writing ---------------------------------------------------------------------

class Data:
    """Incompressible data, not the same block twice in a row: slices of a
    random pool at random offsets (no system compresses or dedups by
    default, but none should be able to)."""

    def __init__(self, rng, size=8 * MIB):
        self.pool = os.urandom(size)
        self.view = memoryview(self.pool)
        self.rng = rng

    def get(self, n):
        off = self.rng.randrange(0, len(self.pool) - n + 1, 4096)
        return self.view[off:off + n]


def write_file(path, size, data, chunk=MIB):
    """Write size bytes to a new file in chunk writes, fsync, close: what
    torch.save then an fsync does. Returns the fsync's seconds."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        left = size
        while left:
            n = min(chunk, left)
            left -= os.write(fd, data.get(n))
        t = time.perf_counter()
        os.fsync(fd)
        return time.perf_counter() - t
    finally:
        os.close(fd)


# ---- the workloads ---------------------------------------------------------------

def p99(xs):
    """The 99th percentile of a sorted list (0 for an empty one)."""
    return xs[min(len(xs) - 1, len(xs) * 99 // 100)] if xs else 0.0


def wa_of(dev, s0, nbytes):
    return (dev.write_sectors() - s0) * 512 / nbytes


def rotation(fs, sz, rng, detail):
    dev, mnt = fs.dev, fs.mnt
    data = Data(rng)
    ckpt = sz["SHARDS"] * sz["SHARD_MB"] * MIB
    zone_goal = max(1, ckpt // dev.zone_cap - 1)
    s0 = dev.write_sectors()
    wrote = 0
    rounds = []
    for r in range(sz["ROUNDS"]):
        d = os.path.join(mnt, "ckpt-%03d" % r)
        os.mkdir(d)
        t0 = time.perf_counter()
        for i in range(sz["SHARDS"]):
            write_file(os.path.join(d, "shard-%02d.pt" % i),
                       sz["SHARD_MB"] * MIB, data)
        t1 = time.perf_counter()
        wrote += ckpt
        rd = {"round": r, "write_MBps": ckpt / (t1 - t0) / 1e6}
        if r >= sz["KEEP"]:
            last = r == sz["ROUNDS"] - 1
            wait = sz["FINAL_WAIT"] if last else sz["SPACE_WAIT"]
            old = os.path.join(mnt, "ckpt-%03d" % (r - sz["KEEP"]))
            av0, e0 = fs.avail(), dev.empty_zones()
            t2 = time.perf_counter()
            subprocess.run(["rm", "-rf", old], check=True)
            t3 = time.perf_counter()
            rd["rm_s"] = t3 - t2
            df_t = z_t = None
            while True:
                now = time.perf_counter() - t2
                if df_t is None and fs.avail() >= av0 + 0.9 * ckpt:
                    df_t = now
                if z_t is None and dev.empty_zones() >= e0 + zone_goal:
                    z_t = now
                if (df_t is not None and z_t is not None) or now > wait:
                    break
                time.sleep(0.05)
            rd.update(df_back_s=df_t, zones_back_s=z_t, wait_s=wait,
                      last=last)
        rounds.append(rd)
        log("  round %d: %.1f MB/s%s" % (
            r, rd["write_MBps"],
            "" if "rm_s" not in rd else
            ", rm %.2f s, df back %s, zones back %s" % (
                rd["rm_s"], fmt_t(rd["df_back_s"]),
                fmt_t(rd["zones_back_s"]))))
    fs.umount()
    detail["rounds"] = rounds
    detail["zone_goal"] = zone_goal
    out = {"write_MBps": statistics.median(x["write_MBps"] for x in rounds),
           "wa": wa_of(dev, s0, wrote)}
    dels = [x for x in rounds if "rm_s" in x]
    mid = [x for x in dels if not x["last"]] or dels
    out["rm_s"] = statistics.median(x["rm_s"] for x in dels)
    for k in ("df_back_s", "zones_back_s"):
        # A round whose space was not back within its wait counts as the
        # wait, and the figure is then censored ("> wait").
        vals = [x[k] if x[k] is not None else x["wait_s"] for x in mid]
        out[k] = statistics.median(vals)
        out[k + ":censored"] = sum(1 for x in mid if x[k] is None) * 2 > len(mid)
        detail[k + "_not_back"] = sum(1 for x in mid if x[k] is None)
    lastr = dels[-1]
    out["last_zones_back_s"] = (lastr["zones_back_s"]
                                if lastr["zones_back_s"] is not None
                                else lastr["wait_s"])
    out["last_zones_back_s:censored"] = lastr["zones_back_s"] is None
    return out


def fmt_t(t):
    return "-" if t is None else "%.2f s" % t


def concurrent(fs, sz, rng, detail):
    dev, mnt = fs.dev, fs.mnt
    n, size = sz["WRITERS"], sz["WRITER_MB"] * MIB
    datas = [Data(random.Random(rng.random()), 4 * MIB) for _ in range(n)]
    errs = []
    go = threading.Barrier(n + 1)

    def writer(i):
        go.wait()
        try:
            write_file(os.path.join(mnt, "shard-%02d.pt" % i), size, datas[i])
        except OSError as e:
            errs.append(e)

    ths = [threading.Thread(target=writer, args=(i,)) for i in range(n)]
    for t in ths:
        t.start()
    s0 = dev.write_sectors()
    go.wait()
    t0 = time.perf_counter()
    for t in ths:
        t.join()
    el = time.perf_counter() - t0
    if errs:
        raise errs[0]
    fs.umount()
    return {"write_MBps": n * size / el / 1e6, "wa": wa_of(dev, s0, n * size)}


def mixed(fs, sz, rng, detail, after_fill=None):
    dev, mnt = fs.dev, fs.mnt
    data = Data(rng)
    avail0 = fs.avail()
    # The band is a share of what the system's own df offers or, with
    # FILL_MB, of that many MiB for every system: the same bytes held.
    ref = sz["FILL_MB"] * MIB if sz["FILL_MB"] else avail0
    fill = sz["FILL_PCT"] / 100
    lo, hi = (fill - 0.05) * ref, (fill + 0.05) * ref
    live = 0
    os.mkdir(os.path.join(mnt, "cold"))
    os.mkdir(os.path.join(mnt, "hot"))
    i = 0
    path = None
    hot = {}  # name -> size
    seq = 0

    def small():
        return rng.randrange(64 * 1024, MIB + 1, 4096)

    # A system that cannot hold 85 % of what its df offers says so here:
    # that is a finding (the fill level it reached), not a failure of the
    # suite, and there is no mixed phase to measure on it.
    t_fill = time.monotonic()
    step = [0.0]

    def progress(what):
        if live >= step[0] + 0.1 * avail0:
            step[0] = live
            log("  %s: %.0f%% of df, %.0f s" % (
                what, 100 * live / avail0, time.monotonic() - t_fill))
        if time.monotonic() - t_fill > sz["MIXED_SECS"]:
            raise TimeoutError("filling took more than %d s" % sz["MIXED_SECS"])

    try:
        while live < (fill - 0.15) * ref:
            progress("filling")
            n = int(min(64 * MIB, (fill - 0.15) * ref - live)) // 4096 * 4096 + 4096
            path = os.path.join(mnt, "cold", "%05d" % i)
            write_file(path, n, data)
            live += n
            i += 1
        while live < fill * ref:
            progress("filling")
            n = small()
            path = os.path.join(mnt, "hot", "%06d" % seq)
            write_file(path, n, data)
            hot["%06d" % seq] = n
            live += n
            seq += 1
    except (OSError, TimeoutError) as e:
        if not isinstance(e, TimeoutError) and e.errno != errno.ENOSPC:
            raise
        why = "ENOSPC" if isinstance(e, OSError) else str(e)
        log("  %s filling at %.1f%% of df (%d MiB of %d)" % (
            why, 100 * live / avail0, live // MIB, avail0 // MIB))
        # Within the band, ENOSPC is where this system's df overstates
        # what it holds: the phase runs at the fullness it reached (its
        # ENOSPCs counted), as a user near full would. Below it there is
        # nothing to compare.
        if isinstance(e, TimeoutError) or live < lo:
            detail.update(avail0=avail0, fill_bytes=live, cold_files=i,
                          hot_files=len(hot), fill_failed=why)
            fs.umount()
            return {"fill_pct": 100 * live / avail0}
        try:
            os.unlink(path)
        except OSError:
            pass
        detail["fill_enospc"] = True
    detail.update(avail0=avail0, fill_bytes=live, cold_files=i,
                  hot_files=len(hot), fill_s=time.monotonic() - t_fill)
    # bench/reclaim-host.py's variants change the filled system here.
    if after_fill:
        after_fill(mnt, i)
    # The measured phase starts from a clean mount: nothing of the fill
    # still in flight on any system.
    fs.umount()
    fs.mount()
    s0 = dev.write_sectors()
    c0 = fs.counters()
    v0 = vmstat()
    io0 = dev.io_stat()
    volume = sz["MIXED_MB"] * MIB
    wrote = 0
    lat = []
    # Each fsync's end (seconds into the phase), latency, operation and
    # bytes written: where in the phase the slow ones fall (a warm-up
    # cluster at the start, or spread), and which writes they follow.
    trace = []
    ops = {"create": 0, "overwrite": 0, "append": 0, "delete": 0}
    enospc = 0
    t0 = time.perf_counter()
    t_log = t0
    timed_out = False
    while wrote < volume:
        now = time.perf_counter()
        if now - t0 > sz["MIXED_SECS"]:
            log("  phase stopped after %d s, %d MiB of %d written" % (
                sz["MIXED_SECS"], wrote // MIB, volume // MIB))
            timed_out = True
            break
        if now - t_log > 30:
            t_log = now
            log("  phase: %d MiB of %d, %.0f%% full, %.0f s" % (
                wrote // MIB, volume // MIB, 100 * live / avail0, now - t0))
        op = rng.choices(["overwrite", "append", "create", "delete"],
                         [35, 20, 25, 20])[0]
        if live > hi and op in ("create", "append"):
            op = "delete"
        if (live < lo or len(hot) < 16) and op == "delete":
            op = "create"
        try:
            if op == "delete":
                name = rng.choice(sorted(hot))
                os.unlink(os.path.join(mnt, "hot", name))
                live -= hot.pop(name)
            elif op == "create":
                name = "%06d" % seq
                seq += 1
                n = small()
                try:
                    lat.append(write_file(os.path.join(mnt, "hot", name), n,
                                          data))
                    trace.append((time.perf_counter() - t0, lat[-1], op, n))
                except OSError:
                    # Not created, or created short: not one of the set.
                    try:
                        os.unlink(os.path.join(mnt, "hot", name))
                    except OSError:
                        pass
                    raise
                hot[name] = n
                live += n
                wrote += n
            else:
                name = rng.choice(sorted(hot))
                size = hot[name]
                n = min(rng.randrange(4096, 256 * 1024 + 1, 4096),
                        max(size, 4096))
                if op == "overwrite":
                    off = rng.randrange(0, max(size - n, 0) + 1, 4096)
                else:
                    off = size
                fd = os.open(os.path.join(mnt, "hot", name), os.O_WRONLY)
                try:
                    os.pwrite(fd, data.get(n), off)
                    t = time.perf_counter()
                    os.fsync(fd)
                    lat.append(time.perf_counter() - t)
                    trace.append((time.perf_counter() - t0, lat[-1], op, n))
                finally:
                    os.close(fd)
                if off + n > size:
                    live += off + n - size
                    hot[name] = off + n
                wrote += n
            ops[op] += 1
        except OSError as e:
            if e.errno != errno.ENOSPC:
                raise
            enospc += 1
            if enospc > 100:
                log("  ENOSPC 100 times at %.0f%% of df: phase ended"
                    % (100 * live / avail0))
                break
            for name in rng.sample(sorted(hot), min(4, len(hot))):
                os.unlink(os.path.join(mnt, "hot", name))
                live -= hot.pop(name)
    el = time.perf_counter() - t0
    v1 = vmstat()
    io1 = dev.io_stat()
    detail["device_io"] = {k: io1[k] - io0[k] for k in io0}
    detail["vmstat"] = {k: v1[k] if k == "nr_free_pages" else v1[k] - v0[k]
                        for k in v0}
    detail["vmstat"]["nr_free_pages_at_start"] = v0.get("nr_free_pages", 0)
    c1 = fs.counters()
    if c0 and c1:
        # Maxima and sizes as they are at the end; the rest as deltas.
        detail["counters"] = {k: c1[k] if k in GAUGES else c1[k] - c0[k]
                              for k in c0}
        detail["checksum_impl"] = fs.stat("checksum_impl")
    fs.umount()
    lat.sort()
    detail.update(ops=ops, enospc=enospc, fsyncs=len(lat),
                  fsync_mean_ms=1e3 * sum(lat) / max(1, len(lat)),
                  end_fill=live / avail0, phase_timed_out=timed_out,
                  phase_bytes=wrote, phase_s=el,
                  fsync_trace=[(round(t, 4), round(1e3 * x, 3), op, n)
                               for t, x, op, n in trace])
    return {"fill_pct": 100 * detail["fill_bytes"] / avail0,
            "write_MBps": wrote / el / 1e6, "wa": wa_of(dev, s0, wrote),
            "fsync_p50_ms": 1e3 * lat[len(lat) // 2],
            "fsync_p99_ms": 1e3 * p99(lat),
            "fsync_max_ms": 1e3 * lat[-1], "enospc": enospc}


def fio(*args, timeout=900):
    out = sh("fio", "--output-format=json", *args, timeout=timeout)
    # fio may print warnings before its JSON.
    return json.loads(out[out.index("{"):])["jobs"][0]


def fio_rand(filename, size, secs, jobs, extra=()):
    drop_caches()
    j = fio("--name=rand", "--filename=" + filename, "--rw=randread",
            "--bs=4k", "--ioengine=psync", "--numjobs=%d" % jobs,
            "--group_reporting", "--size=%d" % size, "--runtime=%d" % secs,
            "--time_based", *extra)
    return j["read"]["iops"]


def reads(fs, sz, rng, detail):
    data = Data(rng)
    size = sz["READ_MB"] * MIB
    f = os.path.join(fs.mnt, "data.bin")
    write_file(f, size, data)
    fs.umount()
    fs.mount()
    out = {"iops_1t": fio_rand(f, size, sz["READ_SECS"], 1),
           "iops_4t": fio_rand(f, size, sz["READ_SECS"], 4)}
    fs.umount()
    return out


def limit(dev, sz, workload, detail):
    """The device alone, through fio zonemode=zbd from the first sequential
    zone on: a single stream for rotation, WRITERS streams (one zone each
    at least) for concurrent, random reads over what was written for
    reads. No file system, so WA is 1 by construction (measured anyway,
    over the bytes fio wrote: in zbd mode it writes a zone's capacity, not
    its size, so a size asked for is not what it writes)."""
    base = ["--filename=" + dev.path, "--zonemode=zbd", "--direct=1",
            "--ioengine=psync", "--offset=%d" % (dev.nr_conv * dev.zone_bytes)]
    dev.reset()
    s0 = dev.write_sectors()
    if workload == "rotation":
        size = sz["SHARDS"] * sz["SHARD_MB"] * MIB * 4
        j = fio("--name=seq", *base, "--rw=write", "--bs=1M",
                "--size=%d" % size, "--end_fsync=1")
        return {"write_MBps": j["write"]["bw_bytes"] / 1e6,
                "wa": wa_of(dev, s0, j["write"]["io_bytes"])}
    if workload == "concurrent":
        # fio's zbd mode rounds a job's size down to whole zones: each
        # writer fills whole zones, at least WRITER_MB.
        per = -(-sz["WRITER_MB"] * MIB // dev.zone_bytes) * dev.zone_bytes
        j = fio("--name=conc", *base, "--rw=write", "--bs=1M",
                "--numjobs=%d" % sz["WRITERS"], "--group_reporting",
                "--size=%d" % per, "--offset_increment=%d" % per,
                "--end_fsync=1")
        return {"write_MBps": j["write"]["bw_bytes"] / 1e6,
                "wa": wa_of(dev, s0, j["write"]["io_bytes"])}
    if workload == "reads":
        size = sz["READ_MB"] * MIB
        fio("--name=fill", *base, "--rw=write", "--bs=1M",
            "--size=%d" % size)
        return {"iops_1t": fio_rand(dev.path, size, sz["READ_SECS"], 1,
                                    base[1:]),
                "iops_4t": fio_rand(dev.path, size, sz["READ_SECS"], 4,
                                    base[1:])}
    return None


RUNNERS = {"rotation": rotation, "concurrent": concurrent, "mixed": mixed,
           "reads": reads}


# ---- run ---------------------------------------------------------------------------

def versions(dev):
    def first(*cmd):
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
            return (r.stdout + r.stderr).strip().splitlines()[0]
        except (OSError, IndexError, subprocess.TimeoutExpired):
            return "?"
    q = "/sys/block/%s/queue/" % dev.name
    return {
        "guest_kernel": os.uname().release,
        "btrfs_progs": first("mkfs.btrfs", "--version"),
        "f2fs_tools": first("mkfs.f2fs", "-V"),
        "fio": first("fio", "--version"),
        "zonefuse": first(ZONEFUSE, "-V"),
        "device": {"path": dev.path, "nr_zones": dev.nr_zones,
                   "zone_bytes": dev.zone_bytes, "zone_cap": dev.zone_cap,
                   "nr_conv": dev.nr_conv,
                   "max_open": int(open(q + "max_open_zones").read()),
                   "max_active": int(open(q + "max_active_zones").read()),
                   "block": int(open(q + "logical_block_size").read()),
                   "bytes": dev.nr_zones * dev.zone_bytes},
        "meta_device": dev.meta and {
            "path": dev.meta,
            "bytes": int(open("/sys/block/%s/size" % dev.meta_name).read())
            * 512},
        "mem_total_kb": int(open("/proc/meminfo").readline().split()[1]),
        "cpus": os.cpu_count(),
    }


def sizes_of(a):
    sz = dict(SIZES["smoke" if a.smoke else "full"])
    for k in sz:
        if os.environ.get("PEERS_" + k):
            sz[k] = int(os.environ["PEERS_" + k])
    return sz


def cmd_step(a):
    """One workload on one system, freshly formatted: what `run` starts in
    a child process, so that a system that hangs in the kernel hangs the
    child, not the run. Prints its result as one JSON line, last."""
    sz = sizes_of(a)
    dev = Dev(a.device, a.meta_device)
    mnt = "/tmp/peers-mnt"
    os.makedirs(mnt, exist_ok=True)
    rng = random.Random(1000 * a.rep + WORKLOADS.index(a.workload))
    detail = {}
    fs = None
    try:
        if a.system == "limit":
            res = limit(dev, sz, a.workload, detail) or {}
        else:
            fs = Fs(a.system, dev, mnt)
            fs.mkfs()
            fs.mount()
            detail["avail_bytes"] = fs.avail()
            m0 = dev.meta_sectors()
            res = RUNNERS[a.workload](fs, sz, rng, detail)
            if dev.meta:
                # How much of the system's writes went to the regular
                # disk rather than the zones: reported beside the WA.
                detail["meta_device_MiB"] = (dev.meta_sectors() - m0) \
                    * 512 / MIB
        err = None
    except (OSError, RuntimeError, subprocess.SubprocessError,
            ValueError, KeyError) as e:
        res, err = {}, "%s: %s" % (type(e).__name__, e)
        if fs is not None and fs.mounted:
            subprocess.run(["umount", "-l", mnt], check=False,
                           capture_output=True)
            try:
                dev.wait_released(30)
            except RuntimeError:
                pass
    print(json.dumps({"results": res, "detail": detail, "error": err}),
          flush=True)
    return 0


def kernel_stacks():
    """The blocked tasks' stacks (sysrq w), for the record of a hang."""
    try:
        with open("/proc/sysrq-trigger", "w") as f:
            f.write("w\n")
        time.sleep(1)
        out = sh("dmesg", check=False)
        i = out.rfind("sysrq: Show Blocked State")
        return out[i:][-6000:] if i >= 0 else out[-3000:]
    except (OSError, RuntimeError):
        return "?"


def device_costs(dev, a):
    """bench/zone-costs.py on 2 of DEV's zones, before any system has it:
    appended to DIR/device-costs.jsonl and logged. A failure is logged,
    not fatal: the gauge is beside the figures, not one of them."""
    tmp = os.path.join(a.out, ".device-costs.json")
    tool = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "zone-costs.py")
    r = subprocess.run([sys.executable, tool, dev.path, "2", tmp],
                       capture_output=True, text=True, timeout=300,
                       check=False)
    if r.returncode or not os.path.exists(tmp):
        log("zone-costs failed (%d): %s" % (r.returncode,
                                            r.stderr.strip()[-300:]))
        return
    with open(tmp) as f:
        rec = json.load(f)
    os.unlink(tmp)
    rec.update(systems=a.systems, time=time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                     time.gmtime()))
    with open(os.path.join(a.out, "device-costs.jsonl"), "a") as f:
        f.write(json.dumps(rec) + "\n")
    z = rec["zones"]
    log("the device, one operation at a time: reset of a full zone %s ms,"
        " write of 4 KiB %s ms, of 1 MiB %s ms" % tuple(
            "/".join("%.2f" % zc[k] for zc in z)
            for k in ("reset_full_ms", "write_4k_ms", "write_1m_ms")))


def cmd_run(a):
    sz = sizes_of(a)
    dev = Dev(a.device, a.meta_device)
    os.makedirs(a.out, exist_ok=True)
    for m in ("btrfs", "f2fs"):
        subprocess.run(["modprobe", m], check=False)
    meta = versions(dev)
    meta.update(sizes=sz, smoke=a.smoke, reps=a.reps, tag=a.tag,
                workloads=a.workloads)
    mp = os.path.join(a.out, "meta.json")
    if not os.path.exists(mp):
        with open(mp, "w") as f:
            json.dump(meta, f, indent=1)
    log("%s: %d zones of %d MiB (capacity %d MiB), %d conventional; %s"
        % (dev.path, dev.nr_zones, dev.zone_bytes // MIB,
           dev.zone_cap // MIB, dev.nr_conv, json.dumps(sz)))
    device_costs(dev, a)
    samples = open(os.path.join(a.out, "samples.jsonl"), "a")
    failed = 0
    hung = set()
    # A step's limit: generous, as TCG is slow and a machine may be busy;
    # past it the system is taken as hung in the kernel (a task in D
    # state: nothing can unmount it, so nothing more runs on it).
    budget = {"rotation": 120 + 30 * sz["ROUNDS"] + sz["FINAL_WAIT"],
              "concurrent": 600, "mixed": 600 + 3 * sz["MIXED_SECS"],
              "reads": 600}
    for rep in range(a.reps):
        for system in a.systems:
            for w in a.workloads:
                if system in hung:
                    continue
                if system == "limit" and w == "mixed":
                    continue
                t0 = time.monotonic()
                cmd = [sys.executable, os.path.abspath(__file__), "step",
                       "--device", a.device, "--system", system,
                       "--workload", w, "--rep", str(rep)]
                if a.meta_device:
                    cmd += ["--meta-device", a.meta_device]
                if a.smoke:
                    cmd.append("--smoke")
                try:
                    r = subprocess.run(cmd, stdout=subprocess.PIPE, text=True,
                                       timeout=budget[w])
                    lines = r.stdout.strip().splitlines()
                    for ln in lines[:-1]:
                        print(ln, flush=True)
                    try:
                        rec = json.loads(lines[-1])
                    except (IndexError, ValueError):
                        rec = {"results": {}, "detail": {},
                               "error": "the step died (exit %d) with no "
                                        "result" % r.returncode}
                except subprocess.TimeoutExpired as e:
                    out = e.stdout or ""
                    if isinstance(out, bytes):
                        out = out.decode(errors="replace")
                    print(out, end="", flush=True)
                    hung.add(system)
                    rec = {"results": {}, "detail": {
                        "kernel_stacks": kernel_stacks()},
                        "error": "hung: no result after %d s; nothing more "
                                 "runs on %s in this guest" % (budget[w],
                                                               system)}
                el = time.monotonic() - t0
                failed += bool(rec["error"])
                rec.update(tag=a.tag, rep=rep, system=system, workload=w,
                           seconds=el, load1=os.getloadavg()[0])
                samples.write(json.dumps(rec) + "\n")
                samples.flush()
                res = rec["results"]
                log("run %d %-8s %-10s %s (%.0f s)" % (
                    rep + 1, system, w,
                    "FAILED: " + rec["error"] if rec["error"] else
                    ", ".join("%s %.3g" % (k, v) for k, v in res.items()
                              if not k.endswith(":censored")), el))
    samples.close()
    return 1 if failed else 0


# ---- report ------------------------------------------------------------------------

def stats(vals):
    return {"median": statistics.median(vals), "min": min(vals),
            "max": max(vals), "n": len(vals)}


def fmt(v, unit):
    if v is None:
        return "-"
    if unit == "x":
        return "%.3f" % v
    if abs(v) >= 100:
        return "%.0f" % v
    if abs(v) >= 10:
        return "%.1f" % v
    return "%.2f" % v


def tail_where(d, parts=10):
    """Where in the mixed phase its slowest fsyncs (those above the run's
    p99) fell, by tenths of the phase, and the p99 of the first tenth
    against the rest's; with traces that say so, which writes they
    followed (runs before the operation was traced have none)."""
    tr = d["fsync_trace"]
    span = d.get("phase_s") or tr[-1][0]
    top = p99(sorted(e[1] for e in tr))
    counts = [0] * parts
    for e in tr:
        if e[1] > top:
            counts[min(parts - 1, int(parts * e[0] / span))] += 1
    first = sorted(e[1] for e in tr if e[0] < span / parts)
    rest = sorted(e[1] for e in tr if e[0] >= span / parts)
    out = ("the %d fsyncs slower than its p99 (%.2f ms) by tenth of the "
           "phase: %s; p99 %.2f ms in the first tenth (%d fsyncs), %.2f in "
           "the rest" % (sum(counts), top, " ".join(map(str, counts)),
                         p99(first), len(first), p99(rest)))
    slow = [e for e in tr if e[1] > top and len(e) >= 4]
    if slow:
        out += "; they followed %s" % ", ".join(
            "%s of %d KiB" % (e[2], e[3] // 1024) for e in slow)
    return out


def cmd_report(a):
    recs = [json.loads(ln) for ln in open(os.path.join(a.dir, "samples.jsonl"))]
    meta = json.load(open(os.path.join(a.dir, "meta.json")))
    try:
        meta.update(json.load(open(os.path.join(a.dir, "host.json"))))
    except OSError:
        pass
    systems = [s for s in SYSTEMS if any(r["system"] == s for r in recs)]
    peers = [s for s in systems if s != "zonefuse"]
    table = []
    for w, m, label, unit, better in METRICS:
        row = {"workload": w, "metric": m, "label": label, "unit": unit,
               "better": better, "systems": {}, "ratios": {}}
        for s in systems:
            vals = [r["results"][m] for r in recs
                    if r["system"] == s and r["workload"] == w
                    and m in r["results"]]
            cens = [r["results"].get(m + ":censored", False) for r in recs
                    if r["system"] == s and r["workload"] == w
                    and m in r["results"]]
            if vals:
                st = stats(vals)
                # The median is censored ("> x") if most runs were.
                st["censored"] = sum(cens) * 2 > len(cens)
                row["systems"][s] = st
        z = row["systems"].get("zonefuse")
        for p in peers:
            ps = row["systems"].get(p)
            if not z or not ps or (m == "wa" and p == "limit"):
                continue
            a_, b_ = z["median"], ps["median"]
            if better == LO:
                a_, b_ = b_, a_
            if b_ > 0 and a_ > 0:
                row["ratios"][p] = a_ / b_
            elif b_ == 0 and a_ == 0:
                row["ratios"][p] = 1.0
            # Against a censored figure ("> wait"), the ratio is a bound:
            # at least this much for zonefuse if the peer's is censored,
            # at most if zonefuse's is.
            if p in row["ratios"] and (ps.get("censored") or z.get("censored")):
                row["ratio_bound"] = row.get("ratio_bound", {})
                row["ratio_bound"][p] = ">" if ps.get("censored") else "<"
        if row["systems"]:
            table.append(row)
    fails = [r for r in recs if r["error"]]
    lines = []
    hdr = ["workload", "figure", "unit"] + systems + \
        ["zf/" + p for p in peers]
    lines.append("| " + " | ".join(hdr) + " |")
    lines.append("|" + " --- |" * len(hdr))
    for row in table:
        cells = [row["workload"], row["label"], row["unit"]]
        for s in systems:
            st = row["systems"].get(s)
            if not st:
                cells.append("-")
                continue
            c = (">" if st["censored"] else "") + fmt(st["median"], row["unit"])
            if st["n"] > 1:
                c += " (%s..%s)" % (fmt(st["min"], row["unit"]),
                                   fmt(st["max"], row["unit"]))
            cells.append(c)
        for p in peers:
            r = row["ratios"].get(p)
            cells.append("-" if r is None else "%s%.2f" % (
                row.get("ratio_bound", {}).get(p, ""), r))
        lines.append("| " + " | ".join(cells) + " |")
    dv = meta.get("device", {})
    head = ("%s: %s, %d zones of %d MiB (capacity %d MiB), %d conventional, "
            "max open %s / active %s; guest %s, %s, %s, %s; %s; runs: %d"
            % (meta.get("tag", "?"), dv.get("path"), dv.get("nr_zones", 0),
               dv.get("zone_bytes", 0) // MIB, dv.get("zone_cap", 0) // MIB,
               dv.get("nr_conv", 0), dv.get("max_open"),
               dv.get("max_active"), meta.get("guest_kernel"),
               meta.get("btrfs_progs"), meta.get("f2fs_tools"),
               meta.get("fio"), meta.get("zonefuse"),
               len({r["rep"] for r in recs})))
    avail = {}
    for r in recs:
        if "avail_bytes" in r["detail"]:
            avail.setdefault(r["system"], r["detail"]["avail_bytes"])
    notes = ["df available after mkfs: " + ", ".join(
        "%s %d MiB" % (s, v // MIB) for s, v in avail.items())]
    md = meta.get("meta_device")
    if md:
        notes.append("a regular disk beside the device, %s (%d MiB): F2FS's "
                     "metadata (its first device); its writes count in "
                     "every system's WA" % (md["path"], md["bytes"] // MIB))
    for r in recs:
        d = r["detail"]
        if d.get("meta_device_MiB"):
            notes.append("run %d %s %s: %.0f MiB written to the regular disk"
                         % (r["rep"] + 1, r["system"], r["workload"],
                            d["meta_device_MiB"]))
        if r["workload"] == "rotation" and "rounds" in d:
            notes.append("run %d %s rotation: df not back within the wait in "
                         "%d rounds, zones in %d" % (
                             r["rep"] + 1, r["system"],
                             d.get("df_back_s_not_back", 0),
                             d.get("zones_back_s_not_back", 0)))
        if r["workload"] == "mixed" and "ops" in d:
            notes.append("run %d %s mixed: filled to %.0f%% of %d MiB, ops %s,"
                         " ENOSPC %d, ended %.0f%% full" % (
                             r["rep"] + 1, r["system"],
                             100 * d["fill_bytes"] / d["avail0"],
                             d["avail0"] // MIB, d["ops"], d["enospc"],
                             100 * d["end_fill"]))
            c = d.get("counters")
            if c and c["host_bytes_written"]:
                h = c["host_bytes_written"]
                notes.append("run %d %s mixed: per byte written, the "
                             "daemon wrote %.3f to data zones, of it %.3f "
                             "reclaim's copies, and %.3f of metadata" % (
                                 r["rep"] + 1, r["system"],
                                 (c["device_bytes_written"]
                                  - c["meta_bytes_written"]) / h,
                                 c["gc_bytes_written"] / h,
                                 c["meta_bytes_written"] / h))
            if c and c.get("fsyncs") and c.get("journal_commits"):
                n, nc = c["fsyncs"], c["journal_commits"]
                inside = c["fsync_ns"] / n / 1e6
                notes.append(
                    "run %d %s mixed: an fsync took %.2f ms on average as "
                    "the program saw it, %.2f in the daemon: %.2f on its "
                    "file's data, %.2f on the journal (of it %.2f waiting "
                    "for a commit another thread ran); %d commits for %d "
                    "fsyncs, %.2f ms each, of it %.2f in their %s; "
                    "the other %.2f ms are FUSE's round trip and "
                    "scheduling; checksums with %s" % (
                        r["rep"] + 1, r["system"], d["fsync_mean_ms"], inside,
                        c["fsync_data_ns"] / n / 1e6,
                        (c["fsync_ns"] - c["fsync_data_ns"]) / n / 1e6,
                        c["journal_wait_ns"] / n / 1e6, nc, n,
                        c["journal_commit_ns"] / nc / 1e6,
                        c["journal_flush_ns"] / nc / 1e6,
                        ("%.2f flushes each (%d of the commits needed no "
                         "flush before their records)" % (
                             c["journal_flushes"] / nc,
                             c.get("journal_unflushed_commits", 0))
                         if "journal_flushes" in c else "two flushes"),
                        d["fsync_mean_ms"] - inside,
                        d.get("checksum_impl") or "(not said)"))
            if c and "journal_rolls" in c:
                notes.append("run %d %s mixed: the journal rolled %d times, "
                             "the longest %.1f ms, metadata stopped at most "
                             "%.1f ms for its snapshot; the snapshot is "
                             "%.2f MB" % (
                                 r["rep"] + 1, r["system"], c["journal_rolls"],
                                 c["journal_roll_max_ns"] / 1e6,
                                 c["journal_snapshot_stop_max_ns"] / 1e6,
                                 c["journal_snapshot_bytes"] / 1e6))
            if c and "checksums_at_write" in c:
                taken = c["checksums_at_write"] + c["checksums_at_writeback"]
                notes.append("run %d %s mixed: of %d blocks' checksums, %d "
                             "taken by their write(), %d by the writeback" % (
                                 r["rep"] + 1, r["system"], taken,
                                 c["checksums_at_write"],
                                 c["checksums_at_writeback"]))
            if c and "writes_sent_at_once" in c:
                notes.append("run %d %s mixed: %d writes sent to the device "
                             "at once, for the fsync expected after them, "
                             "of %d fsyncs" % (
                                 r["rep"] + 1, r["system"],
                                 c["writes_sent_at_once"], c["fsyncs"]))
            if c and "space_stall_ns" in c:
                notes.append("run %d %s mixed: callers that found no room "
                             "spent %.0f ms making it, %.3f ms per fsync; "
                             "of reclaim's copies, %.3f per byte written on "
                             "their path, the rest on the background "
                             "thread" % (
                                 r["rep"] + 1, r["system"],
                                 c["space_stall_ns"] / 1e6,
                                 c["space_stall_ns"] / max(1, c["fsyncs"])
                                 / 1e6,
                                 c["gc_bytes_by_writers"]
                                 / max(1, c["host_bytes_written"])))
            v = d.get("vmstat")
            if v:
                notes.append("run %d %s mixed: the guest's memory in the "
                             "phase: %d direct reclaim stalls, %d pages "
                             "scanned by them and %d by kswapd, %d "
                             "compaction stalls; free %d MiB at its start, "
                             "%d at its end" % (
                                 r["rep"] + 1, r["system"],
                                 v.get("allocstall_normal", 0)
                                 + v.get("allocstall_movable", 0),
                                 v.get("pgscan_direct", 0),
                                 v.get("pgscan_kswapd", 0),
                                 v.get("compact_stall", 0),
                                 v.get("nr_free_pages_at_start", 0) * 4096
                                 // MIB,
                                 v.get("nr_free_pages", 0) * 4096 // MIB))
            io = d.get("device_io")
            if io:
                notes.append("run %d %s mixed: the device in the phase: %d "
                             "writes, %.2f ms each on average, %d reads, "
                             "%.2f ms each" % (
                                 r["rep"] + 1, r["system"], io["writes"],
                                 io["write_ms"] / max(1, io["writes"]),
                                 io["reads"],
                                 io["read_ms"] / max(1, io["reads"])))
            if d.get("fsync_trace"):
                notes.append("run %d %s mixed: %s" % (
                    r["rep"] + 1, r["system"], tail_where(d)))
            if d.get("fill_enospc"):
                notes.append("run %d %s mixed: ENOSPC while filling, at %.1f%%"
                             " of its df: the phase ran from there" % (
                                 r["rep"] + 1, r["system"],
                                 100 * d["fill_bytes"] / d["avail0"]))
            if d.get("phase_timed_out"):
                notes.append("run %d %s mixed: phase stopped at its time "
                             "limit after %d MiB" % (r["rep"] + 1, r["system"],
                                                     d["phase_bytes"] // MIB))
        if r["workload"] == "mixed" and d.get("fill_failed"):
            notes.append("run %d %s mixed: %s while filling, at %.1f%% "
                         "of its df (%d MiB): no mixed phase" % (
                             r["rep"] + 1, r["system"], d["fill_failed"],
                             100 * d["fill_bytes"] / d["avail0"],
                             d["fill_bytes"] // MIB))
    try:
        loads = [float(ln.split()[1]) for ln in
                 open(os.path.join(a.dir, "hostload.txt"))]
        notes.append("the host's load average (1 min) while the guests "
                     "ran: %.1f..%.1f, median %.1f (hostload.txt)" % (
                         min(loads), max(loads), statistics.median(loads)))
    except (OSError, ValueError, IndexError):
        pass
    for r in fails:
        notes.append("run %d %s %s FAILED: %s" % (r["rep"] + 1, r["system"],
                                                  r["workload"], r["error"]))
    md = "\n".join([head, ""] + lines + [""] + ["- " + n for n in notes])
    print(md)
    with open(os.path.join(a.dir, "results.md"), "w") as f:
        f.write(md + "\n")
    # The per-fsync traces stay in samples.jsonl: the notes say what they
    # show, and results.json is what a doc's commit carries.
    slim = [dict(r, detail={k: v for k, v in r["detail"].items()
                            if k != "fsync_trace"}) for r in recs]
    with open(os.path.join(a.dir, "results.json"), "w") as f:
        json.dump({"meta": meta, "table": table, "notes": notes,
                   "samples": slim}, f, indent=1)
    if a.png:
        chart(a.dir, table, peers)
    return 1 if fails else 0


def chart(d, table, peers):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("no matplotlib: no chart")
        return
    rows = [r for r in table if r["ratios"]]
    fig, ax = plt.subplots(figsize=(10, 0.4 * len(rows) + 1.5))
    h = 0.8 / max(1, len(peers))
    for i, p in enumerate(peers):
        ys = [j + i * h for j in range(len(rows))]
        xs = [r["ratios"].get(p, 0) for r in rows]
        ax.barh(ys, xs, height=h, label="zonefuse / " + p)
    ax.axvline(1, color="k", lw=0.8)
    ax.set_xscale("log")
    ax.set_yticks([j + 0.4 - h / 2 for j in range(len(rows))])
    ax.set_yticklabels(["%s: %s" % (r["workload"], r["label"]) for r in rows],
                       fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("ratio (>1: zonefuse ahead)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(d, "results.png"), dpi=100)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--device", required=True)
    r.add_argument("--meta-device")
    r.add_argument("--out", required=True)
    r.add_argument("--tag", default="nullb")
    r.add_argument("--smoke", action="store_true")
    r.add_argument("--reps", type=int, default=3)
    r.add_argument("--systems", type=lambda s: s.split(","), default=SYSTEMS)
    r.add_argument("--workloads", type=lambda s: s.split(","),
                   default=WORKLOADS)
    st = sub.add_parser("step")
    st.add_argument("--device", required=True)
    st.add_argument("--meta-device")
    st.add_argument("--system", required=True, choices=SYSTEMS)
    st.add_argument("--workload", required=True, choices=WORKLOADS)
    st.add_argument("--rep", type=int, default=0)
    st.add_argument("--smoke", action="store_true")
    p = sub.add_parser("report")
    p.add_argument("dir")
    p.add_argument("--png", action="store_true")
    a = ap.parse_args()
    for lst, ok in ((getattr(a, "systems", []), SYSTEMS),
                    (getattr(a, "workloads", []), WORKLOADS)):
        bad = [x for x in lst if x not in ok]
        if bad:
            ap.error("unknown %s (known: %s)" % (",".join(bad), ",".join(ok)))
    sys.exit({"run": cmd_run, "step": cmd_step,
              "report": cmd_report}[a.cmd](a))


if __name__ == "__main__":
    main()
