#!/usr/bin/python3
"""tests/train/save.py: torch.save of a state dict of several hundred MiB
to the mount, three ways (zip format, the legacy format, a file object),
torch.load after unmount and remount: every tensor equal, fsck clean, write
amplification 1.00 and no reclaim, and deleting the checkpoints gives
their zones back.

Run by meson (ZONEFUSE set); arguments pick tests by name.
"""
import os
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trainlib as t  # noqa: E402

SIZE = t.mib(320)


def save_zip(sd, path):
    t.torch.save(sd, path)


def save_legacy(sd, path):
    t.torch.save(sd, path, _use_new_zipfile_serialization=False)


def save_fileobj(sd, path):
    with open(path, "wb") as f:
        t.torch.save(sd, f)
        f.flush()
        os.fsync(f.fileno())


VARIANTS = [("zip", save_zip), ("legacy", save_legacy),
            ("fileobj", save_fileobj)]


def test_save_load():
    torch = t.torch
    sd = t.state_dict(SIZE, seed=1)
    nbytes = t.sd_bytes(sd)
    t.log(f"state dict: {len(sd)} entries, {nbytes / t.MiB:.0f} MiB of tensors")
    img = t.device("save.img", "2G", "16M")
    m = t.mount(img)
    empty0 = m.stats()["zones_empty"]
    paths = {}
    for name, fn in VARIANTS:
        p = m.path(f"{name}.pt")
        s0 = m.stats()
        t0 = time.time()
        fn(sd, p)
        t1 = time.time()
        t.fsync_path(p)
        t2 = time.time()
        s1 = m.stats()
        host = s1["host_bytes_written"] - s0["host_bytes_written"]
        dev = s1["device_bytes_written"] - s0["device_bytes_written"]
        size = os.path.getsize(p)
        t.figure(f"torch.save {name}:", file_mib=f"{size / t.MiB:.1f}",
                 save_s=f"{t1 - t0:.2f}", fsync_s=f"{t2 - t1:.2f}",
                 mib_per_s=f"{size / t.MiB / (t2 - t0):.0f}",
                 wa_delta=f"{dev / host:.4f}")
        paths[name] = p
    zs = {name: t.file_zones(p) for name, p in paths.items()}
    m.umount()
    t.check_fsck(img)
    t.check_wa(img, "three torch.save of the state dict")

    m.mount()
    for name, p in paths.items():
        t0 = time.time()
        got = torch.load(p, map_location="cpu")
        t.figure(f"torch.load {name}:", load_s=f"{time.time() - t0:.2f}")
        t.assert_sd_equal(got, sd, f"{name}.pt after remount")
        del got

    # One checkpoint deleted: the zones only it used are reset.
    own = t.delete_checkpoint(m, img, paths["zip"])
    assert len(own) >= nbytes // (16 * t.MiB) - 2, \
        f"zip.pt had only {len(own)} zones of its own: {sorted(zs['zip'])}"
    # The rest deleted: every data zone is empty again.
    for name in ("legacy", "fileobj"):
        os.unlink(paths[name])
    t.fsync_path(m.dir)
    # Live, every zone is back.
    deadline = time.time() + 15
    while m.stats()["zones_empty"] < empty0 and time.time() < deadline:
        time.sleep(0.2)
    live = m.stats()
    assert live["zones_empty"] >= empty0, \
        (f"after deleting every checkpoint, zones_empty is "
         f"{live['zones_empty']}, it was {empty0} after mkfs")
    m.umount()
    t.check_fsck(img)
    t.check_all_data_zones_empty(img, "after deleting every checkpoint")


if __name__ == "__main__":
    t.begin("torch.save (zip, legacy, file object) of a "
            f"{SIZE // t.MiB} MiB state dict, torch.load after remount; "
            "fsck, write amplification, zones freed on delete")
    t.run([("save_load", test_save_load)])
