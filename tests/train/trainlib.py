"""What the training-workload tests share: torch, devices, the figures.

These tests build on tests/e2e/e2elib.py (work directory, real mounts,
cleanup, watchdog, run_tests) and add what a checkpoint or dataloader test
asks of the file system afterwards: the data exact, fsck clean, write
amplification and reclaim from `zonefuse stat --json`, and the zones of a
deleted checkpoint back to empty.

A test calls begin("what it checks"); it exits 77 (SKIP) with one line when
root, /dev/fuse, torch or numpy is missing. Figures a test measures but does
not assert (throughput, read amplification) are printed as lines starting
with "figure:", for the reader and for bench scripts to collect.
"""
import json
import os
import shutil
import sys
import time

sys.dont_write_bytecode = True     # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "e2e"))
import e2elib as e  # noqa: E402

MiB = 1 << 20
# TRAIN_SCALE scales the big data sets (meson sets 0.5 in sanitizer builds,
# where the daemon is several times slower): the same checks, less data.
SCALE = float(os.environ.get("TRAIN_SCALE", "1"))
# The geometry of the test devices: a small ZNS drive's limits, zones small
# enough that a checkpoint of a few tens of MiB spans several of them.
MAX_OPEN = "14"
MAX_ACTIVE = "14"

torch = None
np = None


def mib(n):
    """n MiB scaled by TRAIN_SCALE, in bytes (at least 1 MiB)."""
    return max(1, int(n * SCALE)) * MiB


def begin(what):
    """Say what the test checks, skip without torch or numpy, make WORK."""
    global torch, np
    e.begin(what)
    try:
        import numpy
        import torch as t
    except ImportError as err:
        e.skip(f"{err.name} is missing for {sys.executable} "
               "(Debian packages python3-torch python3-numpy)")
    torch, np = t, numpy
    # Two cores shared with other work: do not let torch take them all.
    torch.set_num_threads(2)


def log(msg):
    e.log(msg)


def figure(what, **kv):
    """A measured figure: printed, never asserted."""
    e.log("figure: " + what + " " +
          " ".join(f"{k}={v}" for k, v in kv.items()))


def device(name, size="1G", zone_size="8M"):
    """A formatted emulated zoned device with a ZNS drive's open and active
    limits; returns its path."""
    return e.image(name, size, zone_size,
                   "--max-open", MAX_OPEN, "--max-active", MAX_ACTIVE)


def mount(img, name="mnt", opts=None):
    return e.Mount(img, name, opts)


def fsync_path(path):
    """fsync a file or directory by name (what `sync FILE` would do: sync(1)
    does not reach FUSE with Debian 12's libfuse)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def stat(img):
    """`zonefuse stat IMG --json`: after unmount, or as of the last commit."""
    return json.loads(e.zf("stat", img, "--json").stdout)


def zones(img):
    """`zonefuse zones IMG --json`: the device's zones."""
    return json.loads(e.zf("zones", img, "--json").stdout)["zones"]


def file_zones(path):
    """The zones holding a file's data (fsync it first: staged data has no
    extent yet)."""
    out = os.getxattr(path, "user.zonefuse.extents").decode()
    return {int(line.split()[1]) for line in out.splitlines() if line.strip()}


def tree_zones(top):
    """The zones holding the data of every file under top."""
    zs = set()
    for d, _, files in os.walk(top):
        for f in files:
            zs |= file_zones(os.path.join(d, f))
    return zs


def tree_bytes(top):
    return sum(os.path.getsize(os.path.join(d, f))
               for d, _, files in os.walk(top) for f in files)


def check_fsck(img):
    log("fsck: " + e.fsck(img))


def check_wa(img, what, expect_one=True):
    """The figures of `zonefuse stat --json` (device unmounted): printed;
    with expect_one, write amplification must be 1.00 +- 0.01 and reclaim
    must have copied nothing."""
    s = stat(img)
    wa = s["write_amplification"]
    figure(f"{what}:", write_amplification=wa,
           gc_bytes_written=s["gc_bytes_written"],
           host_bytes_written=s["host_bytes_written"],
           device_bytes_written=s["device_bytes_written"],
           meta_bytes_written=s["meta_bytes_written"],
           reclaimable_bytes=s["reclaimable_bytes"],
           resets_total=s["resets_total"], resets_max=s["resets_max"])
    if expect_one:
        assert wa is not None and abs(wa - 1.0) <= 0.01, \
            (f"{what}: write amplification {wa}, expected 1.00 +- 0.01 "
             f"(host {s['host_bytes_written']} B, device "
             f"{s['device_bytes_written']} B, of which metadata "
             f"{s['meta_bytes_written']} B and reclaim {s['gc_bytes_written']} B)")
        assert s["gc_bytes_written"] == 0, \
            (f"{what}: reclaim copied {s['gc_bytes_written']} B; a workload "
             "that only appends and deletes whole files should need none")
    return s


def _zones_left(img, zs, before):
    now = zone_report(img)
    return now, sorted(z for z in zs if now[z]["cond"] != "empty"
                       and now[z]["resets"] <= before[z]["resets"])


def wait_zones_reset(img, zs, before, what, limit=15, fail=True):
    """Each zone of zs must come back empty, or have been reset since the
    zone report `before` (then written again by later data), within limit
    seconds. Polls `zonefuse zones`, which shows the device as of its last
    flush. Returns the zones left (fail=False) or raises."""
    t0 = time.time()
    while True:
        now, left = _zones_left(img, zs, before)
        if not left or time.time() - t0 > limit:
            break
        time.sleep(0.2)
    if left and fail:
        raise AssertionError(
            f"{what}: zones {left} still hold data, {limit} s later: "
            + "; ".join(f"zone {z} {now[z]['cond']}, {now[z]['wp'] - now[z]['start']} "
                        f"B written, resets {now[z]['resets']}" for z in left[:8]))
    return left


def delete_checkpoint(m, img, path):
    """Delete a checkpoint (a file or a directory tree) on mount m and
    fsync its directory: every zone that only it used must be reset.

    The design makes one exception: the small-file head's zone is reset only
    once the head has moved on. So a zone the checkpoint shared with that
    head (its small files) may stay; when one is left, a probe file tells
    whether it is the head's."""
    def zones_of(top):
        return tree_zones(top) if os.path.isdir(top) else file_zones(top)

    others = set()
    for d, _, files in os.walk(m.dir):
        for f in files:
            p = os.path.join(d, f)
            if not (p == path or p.startswith(path.rstrip("/") + "/")):
                others |= file_zones(p)
    own = zones_of(path) - others
    before = zone_report(img)
    full = {z for z in own if before[z]["cond"] == "full"}
    if os.path.isdir(path):
        shutil.rmtree(path)
    else:
        os.unlink(path)
    fsync_path(os.path.dirname(path.rstrip("/")))
    what = (f"{os.path.relpath(path, m.dir)} deleted and its directory "
            "fsynced")
    wait_zones_reset(img, full, before, what)
    left = wait_zones_reset(img, own - full, before, what, limit=3, fail=False)
    if left:
        probe = m.path(".zone-probe")
        with open(probe, "wb") as f:
            f.write(b"p" * 4096)
            f.flush()
            os.fsync(f.fileno())
        head = file_zones(probe)
        os.unlink(probe)
        fsync_path(m.dir)
        wait_zones_reset(img, set(left) - head, before, what)
    return own


def zone_report(img):
    return {z["index"]: z for z in zones(img)}


def check_all_data_zones_empty(img, what):
    """Nothing left on the device but its metadata: every zone is empty
    except the super zones and the journal's (device unmounted)."""
    s = stat(img)
    data = s["zones_total"] - s["zones_empty"] - s["meta_zones"] - s["zones_bad"]
    if data:
        held = [f"{z['index']}:{z['cond']}:{z['wp'] - z['start']}"
                for z in zones(img) if z["cond"] != "empty"]
        raise AssertionError(
            f"{what}: {data} zones still hold data after every file was "
            f"deleted (zones_empty {s['zones_empty']} of {s['zones_total']}, "
            f"metadata {s['meta_zones']}, used {s['used_bytes']} B, "
            f"reclaimable {s['reclaimable_bytes']} B); the zones not empty "
            f"(index:cond:bytes written, metadata zones included): "
            + " ".join(held))


def state_dict(total, seed, odd=True):
    """A state dict of about total bytes: many tensors of odd shapes and
    several dtypes, a tied (shared storage) pair, a 0-d and an empty tensor,
    and plain Python values, as model and optimizer state dicts hold."""
    g = torch.Generator().manual_seed(seed)
    sd = {}
    n = 0
    i = 0
    dtypes = [torch.float32, torch.float16, torch.bfloat16, torch.int64,
              torch.float32, torch.uint8]
    while n < total:
        dt = dtypes[i % len(dtypes)]
        rows = 1 + (7919 * (i + 1) + seed) % 2039 if odd else 1024
        cols = 1 + (104729 * (i + 3)) % 613 if odd else 256
        if dt.is_floating_point:
            t = torch.randn((rows, cols), generator=g).to(dt)
        else:
            t = torch.randint(0, 250, (rows, cols), generator=g, dtype=dt)
        sd[f"layers.{i}.{'weight' if i % 2 == 0 else 'bias'}"] = t
        n += t.numel() * t.element_size()
        i += 1
    sd["embed.weight"] = torch.randn((1031, 97), generator=g)
    sd["lm_head.weight"] = sd["embed.weight"]          # tied weights
    sd["step"] = torch.tensor(seed)
    sd["empty"] = torch.empty(0, 3)
    sd["meta"] = {"lr": 3e-4, "betas": (0.9, 0.95), "name": f"seed{seed}"}
    return sd


def sd_bytes(sd):
    return sum(v.numel() * v.element_size() for v in sd.values()
               if isinstance(v, torch.Tensor))


def assert_sd_equal(got, want, what, tied=True):
    assert set(got) == set(want), \
        f"{what}: keys differ: {sorted(set(got) ^ set(want))[:5]}"
    for k, w in want.items():
        g = got[k]
        if isinstance(w, torch.Tensor):
            assert isinstance(g, torch.Tensor) and g.dtype == w.dtype and \
                g.shape == w.shape and torch.equal(g, w), \
                f"{what}: tensor {k} differs"
        else:
            assert g == w, f"{what}: {k} is {g!r}, expected {w!r}"
    if tied and "lm_head.weight" in want:
        assert got["lm_head.weight"].data_ptr() == got["embed.weight"].data_ptr(), \
            f"{what}: the tied weights no longer share storage"


def run(tests):
    e.run_tests(tests)
