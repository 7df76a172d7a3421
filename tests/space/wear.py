#!/usr/bin/python3
"""tests/space/wear.py: static wear leveling under checkpoint rotation.

A training job's files that never die (configs and a vocabulary written
once at the start, a `latest` file rewritten each round) sit in zones that
are never reset, while the checkpoint rotation (save a checkpoint
directory of shards and small files, keep the last 3, rmtree the oldest)
cycles the other zones. Here: 40 rounds of 100 MiB checkpoints on 1 GiB of
32 MiB zones (14/14), mounted with commit=1 and a pause of 1.2 s after
every third round (the idle time a job has between checkpoints: wear
leveling works only then). Checked:

- the zones' reset counts (the device's own, `zonefuse zones --json`,
  every sequential zone but the two super zones: the journal's too)
  spread by at most 2 after the last round; without wear leveling they
  spread from 0 to 6;
- write amplification (metadata and wear leveling's moves included) stays
  <= 1.02: the moves are budgeted to 1% of the bytes written;
- the kept checkpoints and the long-lived files read back after a remount;
  fsck is clean.
"""
import os
import shutil
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spacelib as s  # noqa: E402
from spacelib import e, MiB  # noqa: E402

ROUNDS = 40
KEEP = 3
SHARDS = 8
SHARD = 25 * MiB // 2
IDLE = 1.2
SPREAD_MAX = 2
WA_MAX = 1.02


def test_rotation():
    img = e.image("wear.img", "1G", "32M", "--max-open", "14",
                  "--max-active", "14")
    m = e.Mount(img, "wear.mnt", opts="commit=1")
    cold = {}
    os.mkdir(m.path("cfg"))
    for i in range(20):
        p = m.path("cfg", f"c{i}.json")
        cold[p] = (5000 + i, 3000 + i)
    cold[m.path("cfg", "vocab.bin")] = (5100, 15 * MiB)
    for p, (seed, n) in cold.items():
        s.write_file(p, s.data(seed, n))
    kept = []
    t0 = time.time()
    for r in range(ROUNDS):
        d = m.path(f"checkpoint-{r}")
        os.mkdir(d)
        files = {}
        for k in range(SHARDS):
            files[os.path.join(d, f"shard{k}")] = (r * 10 + k, SHARD)
        for k in range(3):
            files[os.path.join(d, f"state{k}.json")] = (r * 10 + 5 + k, 9000)
        for p, (seed, n) in files.items():
            s.write_file(p, s.data(seed, n))
        s.write_file(m.path("latest.tmp"), s.data(r, 100))
        os.rename(m.path("latest.tmp"), m.path("latest"))
        s.fsync_dir(m.dir)
        kept.append((d, files))
        while len(kept) > KEEP:
            shutil.rmtree(kept.pop(0)[0])
        if r % 3 == 2:
            time.sleep(IDLE)
    elapsed = time.time() - t0
    m.umount()
    e.fsck(img)
    st = s.stat_img(img)
    zs = s.zones_img(img)["zones"]
    counts = {z["index"]: z["resets"] for z in zs[2:] if z["type"] == "seq"}
    w = s.spread_report(counts)
    wa = st["device_bytes_written"] / st["host_bytes_written"]
    s.results_line("wear-rotation", {
        "rounds": ROUNDS, "seconds": round(elapsed, 1),
        "host_bytes": st["host_bytes_written"],
        "device_bytes": st["device_bytes_written"],
        "gc_bytes": st["gc_bytes_written"], "wa": round(wa, 4),
        "resets_min": w["min"], "resets_max": w["max"],
        "spread": w["spread"]})
    e.log(f"after {ROUNDS} rounds ({elapsed:.0f} s): WA {wa:.4f}, moved "
          f"{st['gc_bytes_written']} B; resets min {w['min']} mean {w['mean']} "
          f"max {w['max']} (least reset: {w['lowest']})")
    m.mount()
    for p, want in cold.items():
        s.check_file(p, want)
    for _, files in kept:
        for p, want in files.items():
            s.check_file(p, want)
    m.umount()
    assert w["spread"] <= SPREAD_MAX, (
        f"reset spread {w['spread']} (min {w['min']}, max {w['max']}, "
        f"least reset {w['lowest']}); at most {SPREAD_MAX} expected")
    assert wa <= WA_MAX, f"write amplification {wa:.4f} > {WA_MAX}"


if __name__ == "__main__":
    e.begin(f"{ROUNDS} rounds of checkpoint rotation with long-lived files "
            f"and idle time: zone reset spread <= {SPREAD_MAX}, WA <= "
            f"{WA_MAX}, everything kept reads back, fsck clean")
    e.run_tests([("rotation", test_rotation)])
