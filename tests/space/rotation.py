#!/usr/bin/python3
"""tests/space/rotation.py: checkpoint rotation costs nothing but the bytes.

A training job saves a checkpoint every few minutes and deletes the old
ones. Here: many rounds of "save a checkpoint of a few zones, keep the last
K, delete the oldest", enough that every zone is reset several times, then:

- write amplification (device bytes / host bytes, `zonefuse stat`, metadata
  included) <= 1.01, and no byte copied by reclaim (gc_bytes_written 0):
  deleting a checkpoint frees whole zones;
- wear: every zone data cycles through was reset at least 3 times, and the
  most reset of them at most 2 more times than the least (the device's own
  counts, `zonefuse zones --json`). Reported apart, not asserted: the
  journal's zones, and the zone of the shared small-file stream holding
  the checkpoints' small files (it is reset when it is full of dead
  files, not once per checkpoint: a zone worn less, never more);
- the checkpoints kept are intact, live and after a remount; fsck clean.

Variants (the argument picks one; none: all):
  hf    each checkpoint a directory of shards and small files (Hugging
        Face Trainer's checkpoint-N/), the oldest removed with rmtree;
  flat  torch.save rotation in one directory: ckpt_N.pt written to a
        temporary name, fsynced, renamed, the oldest unlinked;
  cap   hf on zones of 4 MiB that hold 3 MiB, the first two conventional
        (the superblocks);
  conv  the same with 4 conventional zones: the journal's first zone and a
        data zone are conventional too.
"""
import collections
import os
import shutil
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spacelib as s  # noqa: E402
from spacelib import e, MiB  # noqa: E402

WA_MAX = 1.01
SPREAD_MAX = 2
MIN_RESETS = 3
# The small files of a Hugging Face checkpoint directory, beside its shards.
HF_SMALL = (("config.json", 1800), ("trainer_state.json", 9000),
            ("rng_state.pth", 14500))
# Files below this go to the shared small-file stream.
SMALL = 1 << 20


def save_hf(m, r, shards):
    d = m.path(f"checkpoint-{r}")
    os.mkdir(d)
    kept = {}
    for i, size in enumerate(shards):
        p = os.path.join(d, f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors")
        s.write_file(p, s.data(r * 16 + i, size))
        kept[p] = (r * 16 + i, size)
    for i, (name, size) in enumerate(HF_SMALL):
        p = os.path.join(d, name)
        s.write_file(p, s.data(r * 16 + 8 + i, size))
        kept[p] = (r * 16 + 8 + i, size)
    s.fsync_dir(d)
    s.fsync_dir(m.dir)
    return d, kept


def drop_hf(m, d):
    shutil.rmtree(d)
    s.fsync_dir(m.dir)


def save_flat(m, r, shards):
    d = m.path("run")
    os.makedirs(d, exist_ok=True)
    size = shards[r % len(shards)]
    tmp = os.path.join(d, f"ckpt_{r}.pt.tmp")
    p = os.path.join(d, f"ckpt_{r}.pt")
    s.write_file(tmp, s.data(r, size))
    os.rename(tmp, p)
    s.fsync_dir(d)
    return p, {p: (r, size)}


def drop_flat(m, p):
    os.unlink(p)
    s.fsync_dir(os.path.dirname(p))


def verify(kept):
    for files in kept.values():
        for p, want in files.items():
            s.check_file(p, want)


def small(files):
    return any(size < SMALL for _, size in files)


def measure(img, label, held=()):
    """The figures of an unmounted image: stat, WA, wear. The zones of
    held (those that held the journal at an earlier measure) are left out
    of the wear figures: they were the journal's for much of the run, not
    data's to cycle through (with two copies of the metadata, the journal
    rolls out of mkfs's two zones only late in a short run)."""
    st = s.stat_img(img)
    host = st["host_bytes_written"]
    wa = st["device_bytes_written"] / host if host else None
    counts, journal, shared, stray = s.wear(img, apart=small)
    for z in held:
        counts.pop(z, None)
    w = s.spread_report(counts)
    w["apart"] = shared
    w["stray"] = stray
    e.log(f"{label}: host {host} B, device {st['device_bytes_written']} B "
          f"(metadata {st['meta_bytes_written']} B), WA "
          f"{wa and round(wa, 4)}, reclaim {st['gc_bytes_written']} B, resets "
          f"(stat) min {st['resets_min']} mean {st['resets_mean']} max "
          f"{st['resets_max']}")
    e.log(f"{label}: wear over {len(counts)} zones (apart: journal zones "
          f"{sorted(journal)}, earlier {sorted(held)}, zones of the small-file "
          f"stream {shared}): "
          f"resets min {w['min']} mean {w['mean']} max {w['max']}, least "
          f"reset: {w['lowest']}")
    return st, wa, w, journal


def check(label, st, wa, w, kept, final):
    nfiles = sum(len(f) for f in kept.values())
    assert st["files"] == nfiles and wa, (
        f"{label}: after a clean unmount the image holds {st['files']} files "
        f"(journal up to record {st['last_seq']}, host bytes "
        f"{st['host_bytes_written']}); {nfiles} expected: what the mount wrote "
        "did not reach the journal the image replays")
    assert not w["stray"], (
        f"{label}: zones {w['stray']} were written and hold no file data "
        f"after a clean unmount, but stat counts only {st['meta_zones'] - 2} "
        "journal zones: dead zones were left without a reset")
    assert wa <= WA_MAX, f"{label}: write amplification {wa:.4f} > {WA_MAX}"
    assert st["gc_bytes_written"] == 0, (
        f"{label}: reclaim copied {st['gc_bytes_written']} bytes in a rotation "
        "that frees whole zones")
    if final:
        assert w["min"] >= MIN_RESETS, (
            f"after the last round a zone data may use was reset only {w['min']} "
            f"times (zones {w['lowest']}; mean {w['mean']}): the allocator does "
            "not take the least-worn zone, or the test ran too few rounds")
    if w["min"] >= 1:
        assert w["spread"] <= SPREAD_MAX, (
            f"{label}: reset spread {w['spread']} (min {w['min']}, max "
            f"{w['max']}) over the zones data cycles through; at most "
            f"{SPREAD_MAX} expected")


def rotation(name, geometry, shards, keep, rounds, save, drop):
    e.log(f"{name}: device {' '.join(geometry)}, {rounds} rounds, keep {keep}, "
          f"checkpoint of {[round(x / MiB, 2) for x in shards]} MiB")
    img = e.image(f"{name}.img", *geometry)
    m = e.Mount(img, f"{name}.mnt")
    kept = collections.OrderedDict()
    t0 = time.time()
    held = set()
    for r in range(rounds):
        key, files = save(m, r, shards)
        kept[key] = files
        while len(kept) > keep:
            old, _ = kept.popitem(last=False)
            drop(m, old)
        if r == rounds // 2:
            live = m.stats()
            e.log(f"round {r}: live WA {live['write_amplification']}, "
                  f"{live['zones_empty']} empty zones, active {live['active_zones']}")
            m.umount()
            e.fsck(img)
            st, wa, w, held = measure(img, f"round {r}")
            check(f"round {r}", st, wa, w, kept, final=False)
            m.mount()
            verify(kept)
    verify(kept)
    m.umount()
    elapsed = time.time() - t0
    st, wa, w, _ = measure(img, "end", held)
    # The figures first: bench/space.sh reads them, also from a failed run.
    s.results_line(f"rotation-{name}", {
        "rounds": rounds, "keep": keep, "seconds": round(elapsed, 1),
        "host_bytes": st["host_bytes_written"],
        "device_bytes": st["device_bytes_written"],
        "meta_bytes": st["meta_bytes_written"],
        "wa": wa and round(wa, 4), "gc_bytes": st["gc_bytes_written"],
        "resets_min": w["min"], "resets_mean": w["mean"], "resets_max": w["max"],
        "small_file_zone_resets": w["apart"],
        "stat_resets_min": st["resets_min"], "stat_resets_max": st["resets_max"],
        "stat_resets_mean": st["resets_mean"]})
    e.fsck(img)
    check("end", st, wa, w, kept, final=True)
    m.mount()
    verify(kept)
    m.umount()


# 64 zones of 2 MiB; a checkpoint of two shards of 2.5 and 3.6 zones.
GEOM = ("128M", "2M")
SHARDS = (5 * MiB + 12345, 7 * MiB + 300 * 1024 + 7)


def test_hf():
    rotation("hf", GEOM, SHARDS, keep=3, rounds=48, save=save_hf, drop=drop_hf)


def test_flat():
    rotation("flat", GEOM, (4 * MiB + 4321, 6 * MiB + 512 * 1024, 7 * MiB + 99),
             keep=4, rounds=96, save=save_flat, drop=drop_flat)


# 48 zones of 4 MiB holding 3 MiB each; a checkpoint of 2.3 and 3 zones.
CAP_GEOM = ("192M", "4M", "--zone-capacity", "3M")
CAP_SHARDS = (7 * MiB + 12345, 9 * MiB + 4097)


def test_cap():
    # The first 2 zones conventional: the superblocks take them.
    rotation("cap", CAP_GEOM + ("--conventional", "2"), CAP_SHARDS,
             keep=3, rounds=40, save=save_hf, drop=drop_hf)


def test_conv():
    # The first 4 zones conventional: after the superblocks, the journal's
    # first zone and a data zone are conventional.
    rotation("conv", CAP_GEOM + ("--conventional", "4"), CAP_SHARDS,
             keep=3, rounds=40, save=save_hf, drop=drop_hf)


if __name__ == "__main__":
    e.begin("checkpoint rotation (save, keep the last K, delete the oldest) "
            f"writes each byte once: WA <= {WA_MAX} with metadata, no reclaim "
            f"copy, every zone reset >= {MIN_RESETS} times with a spread <= "
            f"{SPREAD_MAX}, kept checkpoints intact across a remount")
    e.run_tests([("hf", test_hf), ("flat", test_flat), ("cap", test_cap),
                 ("conv", test_conv)])
