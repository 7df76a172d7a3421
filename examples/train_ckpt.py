#!/usr/bin/python3
"""Train a tiny model on random data, checkpointing every step to a
zonefuse mount, keeping the last few checkpoints; kill it at any moment and
run it again: it resumes from the last complete checkpoint.

    examples/train_ckpt.py /mnt/zns/run1                 # a mounted zonefuse
    examples/train_ckpt.py --mount /dev/nvme0n2 /mnt/zns/run1
                                   # mount the device on /mnt/zns first

With --mount DEVICE, DEVICE is mounted on the parent directory of the
checkpoint directory unless something is mounted there already (the
zonefuse binary is $ZONEFUSE, else `zonefuse` on the PATH); it stays
mounted afterwards (umount it when done).

How a checkpoint is made safe, with nothing but POSIX calls:

  1. torch.save to ckpt-NNNNNN.pt.tmp, flush, os.fsync: the data is durable;
  2. os.replace to ckpt-NNNNNN.pt, os.fsync of the directory: the name is
     durable, and a rename on zonefuse is atomic, so after a crash the
     final name holds a whole checkpoint or does not exist;
  3. only then the oldest checkpoints beyond --keep are deleted (their
     zones are reset in the background: nothing is copied).

On start, leftover *.tmp files (a save that was killed) are removed and the
newest ckpt-*.pt that loads is resumed from. Training is deterministic (the
batch of step N comes from a generator seeded with N, and the optimizer
state is in the checkpoint), so an interrupted and resumed run ends with
exactly the weights of an uninterrupted one: the `digest` lines show it.

Needs PyTorch (Debian: apt-get install python3-torch; run /usr/bin/python3).
"""
import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time

import torch

CKPT = re.compile(r"ckpt-(\d{6})\.pt")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir", help="checkpoint directory (created if missing)")
    p.add_argument("--mount", metavar="DEVICE",
                   help="mount this zonefuse device on the parent of DIR first")
    p.add_argument("--steps", type=int, default=20, help="train until this step (20)")
    p.add_argument("--keep", type=int, default=3, help="checkpoints kept (3)")
    p.add_argument("--hidden", type=int, default=1024,
                   help="hidden width: 1024 makes ~13 MiB checkpoints")
    p.add_argument("--step-time", type=float, default=0.0,
                   help="sleep this long per step (to watch it, or kill it)")
    return p.parse_args()


def fsync_dir(path):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def mount(device, where):
    if os.path.ismount(where):
        print(f"{where} is already mounted: using it", flush=True)
        return
    zonefuse = os.environ.get("ZONEFUSE") or shutil.which("zonefuse")
    if not zonefuse:
        sys.exit("zonefuse is not on the PATH: set ZONEFUSE=/path/to/zonefuse")
    os.makedirs(where, exist_ok=True)
    r = subprocess.run([zonefuse, "mount", device, where])
    if r.returncode:
        sys.exit(f"zonefuse mount {device} {where} failed (exit {r.returncode})")
    print(f"mounted {device} on {where} (umount {where} when done)", flush=True)


def make_model(hidden):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(64, hidden), torch.nn.ReLU(),
                               torch.nn.Linear(hidden, hidden), torch.nn.ReLU(),
                               torch.nn.Linear(hidden, 10))


def batch(step):
    g = torch.Generator().manual_seed(1000 + step)
    x = torch.randn(128, 64, generator=g)
    return x, (x[:, :10].sum(dim=1) > 0).long() + (x[:, 10] > 1).long()


def digest(model):
    h = hashlib.sha256()
    for v in model.state_dict().values():
        h.update(v.numpy().tobytes())
    return h.hexdigest()[:16]


def checkpoints(d):
    """(step, path) of the complete checkpoints, oldest first."""
    out = []
    for name in os.listdir(d):
        m = CKPT.fullmatch(name)
        if m:
            out.append((int(m.group(1)), os.path.join(d, name)))
    return sorted(out)


def save(d, step, model, opt, loss):
    final = os.path.join(d, f"ckpt-{step:06d}.pt")
    tmp = final + ".tmp"
    state = {"step": step, "model": model.state_dict(),
             "optimizer": opt.state_dict(), "loss": loss}
    with open(tmp, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, final)
    fsync_dir(d)
    return final


def rotate(d, keep):
    ckpts = checkpoints(d)
    for _, path in ckpts[:max(0, len(ckpts) - keep)]:
        os.unlink(path)
    fsync_dir(d)


def resume(d, model, opt):
    """Load the newest checkpoint that loads; returns its step (0: none)."""
    for name in os.listdir(d):
        if name.endswith(".tmp"):
            print(f"removing {name}: a save that did not finish", flush=True)
            os.unlink(os.path.join(d, name))
    for step, path in reversed(checkpoints(d)):
        try:
            state = torch.load(path, map_location="cpu")
        except Exception as err:  # a damaged file: try the one before
            print(f"cannot load {path}: {err}; trying an older one", flush=True)
            continue
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        print(f"resumed from step {step} ({os.path.basename(path)}) "
              f"digest {digest(model)}", flush=True)
        return step
    return 0


def main():
    args = parse_args()
    d = os.path.abspath(args.dir)
    if args.mount:
        mount(args.mount, os.path.dirname(d))
    os.makedirs(d, exist_ok=True)
    torch.set_num_threads(1)           # the same arithmetic on every run
    model = make_model(args.hidden)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    start = resume(d, model, opt)
    if not start:
        print("no checkpoint: starting from step 0", flush=True)
    for step in range(start + 1, args.steps + 1):
        t0 = time.time()
        x, y = batch(step)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        save(d, step, model, opt, loss.item())
        print(f"checkpoint step {step} loss {loss.item():.4f} digest {digest(model)} "
              f"({time.time() - t0:.2f} s)", flush=True)
        rotate(d, args.keep)
        if args.step_time:
            time.sleep(args.step_time)
    print(f"done at step {args.steps} digest {digest(model)}", flush=True)


if __name__ == "__main__":
    main()
