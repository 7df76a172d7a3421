#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Measurements of bench/run.sh that are easier in Python than in shell.

Each subcommand prints one JSON object on stdout (or a bare number where
said) and exits non-zero with a one-line reason on stderr if it cannot
measure. Times are from time.perf_counter(); speeds are in MB/s (10^6
bytes per second).

  torch DIR MB [--cold-load]   torch.save of a state dict of about MB MiB
                               to DIR/model.pt (once untimed and deleted,
                               then timed alone, then with an fsync), then torch.load of it, after
                               dropping the caches if --cold-load, and
                               again (cached)
  torch-null MB                torch.save of the same state dict to
                               /dev/null: the serializer alone
  delete FILE [MOUNTROOT ZONE_BYTES] [--fsync-dir]
                               unlink FILE (what rm does) and time it; with
                               a zonefuse MOUNTROOT, also the time until
                               the zones the file filled are reset
  fio METRIC JSONFILE          one figure from fio's JSON output:
                               write_mbs, read_mbs, read_iops (bare number)
  rss PID                      VmRSS of PID in bytes (bare number)
  pid-of ARG...                the pid of the process whose command line
                               is exactly ARG... (bare number)
  fsync PATH...                fsync each path (files or directories)
"""

import json
import os
import sys
import time

MIB = 1 << 20


def die(msg):
    print("helpers.py: " + msg, file=sys.stderr)
    sys.exit(1)


def drop_caches():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def fsync_path(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def state_dict(mb):
    """About mb MiB in float32 tensors shaped like a transformer's: 64 MiB
    weight matrices, each with a small bias. Filled (not torch.empty): an
    untouched tensor would be zero pages, which cost nothing to read."""
    import torch

    sd = {}
    n = max(1, mb // 64)
    for i in range(n):
        sd["layers.%d.weight" % i] = torch.full((4096, 4096), i + 0.5)
        sd["layers.%d.bias" % i] = torch.full((4096,), i + 0.25)
    return sd


def cmd_torch(args):
    import torch

    cold = "--cold-load" in args
    args = [a for a in args if a != "--cold-load"]
    if len(args) != 2:
        die("usage: torch DIR MB [--cold-load]")
    path = os.path.join(args[0], "model.pt")
    sd = state_dict(int(args[1]))
    # One untimed save first, deleted: a training job saves every few
    # minutes, and the first write of fresh memory (tmpfs pages, the page
    # cache, on a VM the host's pages too) measured 2-5 times slower here
    # than the saves after it, on every system alike.
    torch.save(sd, path)
    os.unlink(path)
    t0 = time.perf_counter()
    torch.save(sd, path)
    t1 = time.perf_counter()
    fsync_path(path)
    t2 = time.perf_counter()
    size = os.stat(path).st_size
    del sd
    if cold:
        drop_caches()
    t3 = time.perf_counter()
    sd = torch.load(path)
    t4 = time.perf_counter()
    del sd
    t5 = time.perf_counter()
    sd = torch.load(path)
    t6 = time.perf_counter()
    del sd
    os.unlink(path)
    print(json.dumps({
        "bytes": size,
        "save_mbs": size / (t1 - t0) / 1e6,
        "save_fsync_mbs": size / (t2 - t0) / 1e6,
        "load_first_mbs": size / (t4 - t3) / 1e6,
        "load_cached_mbs": size / (t6 - t5) / 1e6,
    }))


def cmd_torch_null(args):
    import torch

    if len(args) != 1:
        die("usage: torch-null MB")
    sd = state_dict(int(args[0]))
    size = sum(t.numel() * t.element_size() for t in sd.values())
    torch.save(sd, "/dev/null")  # as cmd_torch: the steady state
    t0 = time.perf_counter()
    torch.save(sd, "/dev/null")
    t1 = time.perf_counter()
    print(json.dumps({"bytes": size, "save_mbs": size / (t1 - t0) / 1e6}))


def zstats(root):
    return json.loads(os.getxattr(root, "user.zonefuse.stats"))


def full_zones(path, zone_bytes):
    """Zones the file fills on its own: what deleting it must reset."""
    text = os.getxattr(path, "user.zonefuse.extents").decode()
    per_zone = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 6 and f[0] == "zone":
            per_zone[f[1]] = per_zone.get(f[1], 0) + int(f[5])
    return sum(1 for n in per_zone.values() if n >= zone_bytes)


def cmd_delete(args):
    fsync_dir = "--fsync-dir" in args
    args = [a for a in args if a != "--fsync-dir"]
    if len(args) not in (1, 3):
        die("usage: delete FILE [MOUNTROOT ZONE_BYTES] [--fsync-dir]")
    path = args[0]
    out = {"bytes": os.stat(path).st_size}
    if len(args) == 3:
        root, zone_bytes = args[1], int(args[2])
        zones = full_zones(path, zone_bytes)
        resets0 = zstats(root)["resets_total"]
        out["zones"] = zones
    t0 = time.perf_counter()
    os.unlink(path)
    t1 = time.perf_counter()
    out["rm_ms"] = (t1 - t0) * 1e3
    if fsync_dir:
        fsync_path(os.path.dirname(os.path.abspath(path)))
        out["fsync_dir_ms"] = (time.perf_counter() - t1) * 1e3
    if len(args) == 3:
        # Poll as a user would; 1 ms is well under what is measured.
        deadline = t0 + 120
        while zstats(root)["resets_total"] - resets0 < zones:
            if time.perf_counter() > deadline:
                die("%s: %d zones not reset after 120 s" % (path, zones))
            time.sleep(0.001)
        out["reset_ms"] = (time.perf_counter() - t0) * 1e3
    print(json.dumps(out))


def cmd_fio(args):
    if len(args) != 2:
        die("usage: fio METRIC JSONFILE")
    metric, name = args
    with open(name) as f:
        text = f.read()
    # fio may print warnings before the JSON.
    j = json.loads(text[text.index("{"):])
    job = j["jobs"][0]
    if job.get("error"):
        die("%s: fio job failed with error %d" % (name, job["error"]))
    if metric == "write_mbs":
        v = job["write"]["bw_bytes"] / 1e6
    elif metric == "read_mbs":
        v = job["read"]["bw_bytes"] / 1e6
    elif metric == "read_iops":
        v = job["read"]["iops"]
    else:
        die("unknown metric " + metric)
    if v <= 0:
        die("%s: no %s in fio's output" % (name, metric))
    print("%.3f" % v)


def cmd_rss(args):
    with open("/proc/%d/status" % int(args[0])) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                print(int(line.split()[1]) * 1024)
                return
    die("no VmRSS for pid " + args[0])


def cmd_pid_of(args):
    want = "\0".join(args) + "\0"
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % p) as f:
                if f.read() == want:
                    print(p)
                    return
        except OSError:
            continue
    die("no process runs: " + " ".join(args))


def main():
    cmds = {
        "torch": cmd_torch,
        "torch-null": cmd_torch_null,
        "delete": cmd_delete,
        "fio": cmd_fio,
        "rss": cmd_rss,
        "pid-of": cmd_pid_of,
        "fsync": lambda a: [fsync_path(p) for p in a],
    }
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        print(__doc__, file=sys.stderr)
        sys.exit(16)
    cmds[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    main()
