#!/usr/bin/python3
"""tests/train/patterns.py: the checkpoint patterns of the training
ecosystem, each on a device of its own, with the real torch and numpy:

  replace   save to a temporary name, fsync, os.replace over the final name
  replace-crash  the same without fsync, then a crash after the next commit:
            the final name must hold the old or the new checkpoint
  latest    DeepSpeed: a checkpoint directory per step, then a `latest` file
            rewritten in place with open(..., 'w')
  rotate    Hugging Face Trainer save_total_limit: checkpoint-N directories,
            the oldest by mtime removed with shutil.rmtree beyond the limit,
            for more bytes than the device holds; the job ends (unmount)
            right after its last rotation
  dcp       torch.distributed.checkpoint's FileSystemWriter: ranks write
            their files from several threads at once, each fsynced, then
            .metadata.tmp is fsynced and renamed to .metadata
  extend    safetensors >= 0.8: os.truncate to the final size, then
            sequential writes from offset 0
  odirect   DeepSpeed's FastFileWriter: O_DIRECT writes of aligned (mmap)
            buffers from parallel threads, the unaligned tail appended
            through a buffered descriptor, fsync
  numpy     numpy.save, np.load(mmap_mode='r')

After each: the data exact (read back after a remount), fsck clean, and
for every pattern that writes each byte once (all but `latest` and the
crash) write amplification 1.00 +- 0.01 with nothing copied by reclaim;
deleting checkpoints gives their zones back. `latest` reports its write
amplification (small rewrites are padded to a block) and asserts only that
reclaim copied nothing.

Run by meson (ZONEFUSE set); arguments pick patterns by name.
"""
import io
import json
import mmap
import multiprocessing
import os
import pickle
import queue
import re
import shutil
import struct
import sys
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trainlib as t  # noqa: E402

MiB = t.MiB


def load(path):
    return t.torch.load(path, map_location="cpu")


def delete_all(m, img, what):
    """rm -rf everything on the mount; every data zone must come back."""
    for name in os.listdir(m.dir):
        p = m.path(name)
        if os.path.isdir(p):
            shutil.rmtree(p)
        else:
            os.unlink(p)
    t.fsync_path(m.dir)
    m.umount()
    t.check_fsck(img)
    t.check_all_data_zones_empty(img, what)


# ---------------------------------------------------------------- replace

def test_replace():
    """torch.save to ckpt.pt.tmp, fsync, os.replace to ckpt.pt, fsync the
    directory: each step's old checkpoint dies whole."""
    img = t.device("replace.img")
    m = t.mount(img)
    final = m.path("ckpt.pt")
    steps = 6
    for step in range(steps):
        sd = t.state_dict(48 * MiB, seed=100 + step)
        tmp = final + ".tmp"
        with open(tmp, "wb") as f:
            t.torch.save(sd, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, final)
        t.fsync_path(m.dir)
        assert not os.path.exists(tmp), "the temporary name survived os.replace"
        t.assert_sd_equal(load(final), sd, f"ckpt.pt at step {step}")
    live = t.file_zones(final)
    m.umount()
    t.check_fsck(img)
    t.check_wa(img, "replace: 6 x torch.save + os.replace")
    m.mount()
    t.assert_sd_equal(load(final), sd, "ckpt.pt after remount")
    # Only the last checkpoint's zones hold data: the replaced ones were
    # reset.
    s = t.stat(img)
    held = s["zones_total"] - s["zones_empty"] - s["meta_zones"] - s["zones_bad"]
    assert held == len(live), \
        (f"{held} data zones hold data, but the one live checkpoint is in "
         f"{len(live)} zones {sorted(live)}: replaced checkpoints were not "
         "all reset")
    delete_all(m, img, "replace: after rm ckpt.pt")


def test_replace_crash():
    """The same without fsync, as most training code does it (torch.save to
    a temporary name, os.replace), and the machine dies after the next
    journal commit (the 5 s timer, or as here at once an fsync of another
    file). docs/usage.md promises that after a crash the file is under one
    of its names with one of its contents: ckpt.pt must load as the old or
    the new checkpoint."""
    torch = t.torch
    img = t.device("replace-crash.img")
    m = t.mount(img)
    final = m.path("ckpt.pt")
    old = t.state_dict(20 * MiB, seed=900)
    with open(final, "wb") as f:
        torch.save(old, f)
        f.flush()
        os.fsync(f.fileno())
    new = t.state_dict(20 * MiB, seed=901)
    torch.save(new, final + ".tmp")
    os.replace(final + ".tmp", final)
    with open(m.path("progress.json"), "w") as f:
        f.write('{"step": 2}')
        f.flush()
        os.fsync(f.fileno())
    m.kill()
    m.mount()
    size = os.path.getsize(final)
    try:
        got = load(final)
    except Exception as err:
        raise AssertionError(
            f"after a crash ckpt.pt ({size} B) is neither checkpoint: "
            f"torch.load says {err!s:.120}; the old one was fsynced and "
            "the rename that replaced it was committed before the new "
            "file's data") from None
    if got["meta"]["name"] == "seed900":
        t.assert_sd_equal(got, old, "ckpt.pt after the crash (the old one)")
    else:
        t.assert_sd_equal(got, new, "ckpt.pt after the crash (the new one)")
    m.umount()
    t.check_fsck(img)


# ----------------------------------------------------------------- latest

def deepspeed_save(root, tag, step):
    """What DeepSpeed's engine.save_checkpoint(save_dir, tag) writes for one
    rank without ZeRO partitioning: the model states and the optimizer
    states in save_dir/tag, then `latest` (open(..., 'w'), no fsync)."""
    d = os.path.join(root, tag)
    os.makedirs(d, exist_ok=True)
    model = t.state_dict(12 * MiB, seed=200 + step)
    optim = {"state": t.state_dict(20 * MiB, seed=300 + step),
             "param_groups": [{"lr": 1e-4, "step": step}]}
    t.torch.save({"module": model, "global_steps": step},
                 os.path.join(d, "mp_rank_00_model_states.pt"))
    t.torch.save({"optimizer_state_dict": optim},
                 os.path.join(d, "zero_pp_rank_0_mp_rank_00_optim_states.pt"))
    with open(os.path.join(root, "latest"), "w") as fd:
        fd.write(tag)
    return model, optim


def test_latest():
    img = t.device("latest.img")
    m = t.mount(img)
    root = m.dir
    kept = {}
    steps, keep = 10, 2
    for step in range(1, steps + 1):
        tag = f"global_step{step}"
        kept[tag] = deepspeed_save(root, tag, step)
        with open(m.path("latest")) as f:
            assert f.read() == tag, f"latest does not say {tag}"
        if len(kept) > keep:
            old = min(kept, key=lambda k: int(k[len("global_step"):]))
            shutil.rmtree(m.path(old))
            del kept[old]
    # A progress file rewritten many times between checkpoints, some of the
    # rewrites fsynced: data that dies young must not pin zones.
    for i in range(400):
        with open(m.path("latest"), "w") as fd:
            fd.write(f"global_step{steps}")
            if i % 50 == 0:
                fd.flush()
                os.fsync(fd.fileno())
    m.umount()
    t.check_fsck(img)
    s = t.check_wa(img, "latest: 10 DeepSpeed checkpoints + 410 rewrites of latest",
                   expect_one=False)
    m.mount()
    with open(m.path("latest")) as f:
        tag = f.read()
    assert tag == f"global_step{steps}", f"latest says {tag!r} after remount"
    model, optim = kept[tag]
    got = load(m.path(tag, "mp_rank_00_model_states.pt"))
    t.assert_sd_equal(got["module"], model, f"{tag} model states")
    got = load(m.path(tag, "zero_pp_rank_0_mp_rank_00_optim_states.pt"))
    t.assert_sd_equal(got["optimizer_state_dict"]["state"], optim["state"],
                      f"{tag} optimizer states")
    # The rewrites go to the rewrite head and die there: on a device this
    # empty nothing should need copying.
    assert s["gc_bytes_written"] == 0, \
        f"latest: reclaim copied {s['gc_bytes_written']} B"
    delete_all(m, img, "latest: after deleting every checkpoint")


# ----------------------------------------------------------------- rotate

def hf_sorted_checkpoints(out):
    """transformers Trainer._sorted_checkpoints(use_mtime=True)."""
    paths = [os.path.join(out, p) for p in os.listdir(out)
             if re.fullmatch(r"checkpoint-\d+", p)
             and os.path.isdir(os.path.join(out, p))]
    return sorted(paths, key=os.path.getmtime)


def hf_save(out, step, limit):
    """What Trainer._save_checkpoint writes (pytorch_model.bin, optimizer,
    scheduler, rng state, trainer state), then _rotate_checkpoints: no
    fsync anywhere, as in transformers."""
    d = os.path.join(out, f"checkpoint-{step}")
    os.makedirs(d)
    model = t.state_dict(t.mib(40), seed=400 + step)
    optim = t.state_dict(t.mib(56), seed=500 + step)
    t.torch.save(model, os.path.join(d, "pytorch_model.bin"))
    t.torch.save({"state": optim, "param_groups": []},
                 os.path.join(d, "optimizer.pt"))
    t.torch.save({"last_epoch": step, "_step_count": step + 1},
                 os.path.join(d, "scheduler.pt"))
    t.torch.save({"python": step, "cpu": t.torch.get_rng_state()},
                 os.path.join(d, "rng_state.pth"))
    with open(os.path.join(d, "trainer_state.json"), "w") as f:
        json.dump({"global_step": step, "log_history": [{"loss": 1.0 / step}]},
                  f, indent=2)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump({"hidden_size": 1031}, f)
    ckpts = hf_sorted_checkpoints(out)
    for old in ckpts[:max(0, len(ckpts) - limit)]:
        shutil.rmtree(old, ignore_errors=True)
    return model, optim


def test_rotate():
    """Checkpoints of ~96 MiB, keep 3, 14 steps on a 1 GiB device (both
    scaled by TRAIN_SCALE): 1.3 times the device written, so zones are
    reset and written again. The device is unmounted right after the last
    rotation, as when a job ends: the checkpoint it deleted must still get
    its zones back."""
    img = t.device("rotate.img", f"{t.mib(1024) // MiB}M")
    # This loop saves a checkpoint every second or two, not every few
    # minutes as training does. Each file's last partial chunk goes to the
    # device at its close (zfs_release()), so every checkpoint is there
    # before the rotation deletes it, and write amplification counts all
    # of its bytes.
    m = t.mount(img)
    out = m.path("output")
    os.mkdir(out)
    limit, steps = 3, 14
    saved = {}
    for step in range(1, steps + 1):
        if step == steps:
            # The checkpoint the last rotation deletes, just before the job
            # ends and the device is unmounted.
            victim = os.path.join(out, f"checkpoint-{(step - limit) * 10}")
            victim_zones = t.tree_zones(victim)
            before = t.zone_report(img)
        saved[step] = hf_save(out, step * 10, limit)
        names = sorted(os.listdir(out))
        want = [f"checkpoint-{s * 10}" for s in range(max(1, step - limit + 1), step + 1)]
        assert names == sorted(want), f"step {step}: {names}, expected {want}"
    m.umount()
    t.check_fsck(img)
    s = t.check_wa(img, f"rotate: {steps} HF checkpoints, save_total_limit={limit}")
    assert s["resets_total"] > 0, \
        "1.3 times the device went through it without a single zone reset"
    m.mount()
    for step in range(steps - limit + 1, steps + 1):
        d = os.path.join(out, f"checkpoint-{step * 10}")
        model, optim = saved[step]
        t.assert_sd_equal(load(os.path.join(d, "pytorch_model.bin")), model,
                          f"checkpoint-{step * 10} model")
        t.assert_sd_equal(load(os.path.join(d, "optimizer.pt"))["state"], optim,
                          f"checkpoint-{step * 10} optimizer")
        with open(os.path.join(d, "trainer_state.json")) as f:
            assert json.load(f)["global_step"] == step * 10
    # Deleted, then unmounted at once: its zones came back all the same.
    t.wait_zones_reset(img, victim_zones - t.tree_zones(out), before,
                       f"{os.path.basename(victim)} deleted by the last "
                       "rotation, then the device unmounted and mounted "
                       "again", limit=3)
    # The remaining checkpoints deleted, one at a time: each one's own zones
    # come back.
    for d in hf_sorted_checkpoints(out):
        t.delete_checkpoint(m, img, d)
    delete_all(m, img, "rotate: after deleting every checkpoint")


# -------------------------------------------------------------------- dcp
#
# Debian 12's torch 1.13 has the writer as torch.distributed._shard.checkpoint,
# but on Python 3.11 that package does not import (a dataclass with a
# mutable default in sharded_tensor/metadata.py raises ValueError), and its
# 1.13 writer has no threads. So the writer of torch >= 2.0
# (torch/distributed/checkpoint/filesystem.py, _FileSystemWriter with
# single_file_per_rank=True and thread_count=N) is reproduced here call for
# call: each rank splits its items into N buckets by size
# (_split_by_size_and_type), N threads each open one __{rank}_{i}.distcp
# with Path.open("wb"), torch.save() each tensor into it, os.fsync and
# close; then the coordinator writes .metadata.tmp with pickle.dump,
# os.fsync, removes any old .metadata and renames .metadata.tmp to it. The
# reader opens each file, seeks to each item and torch.load()s it.

DCP_THREADS = 4
DCP_RANKS = 2


def dcp_import_problem():
    try:
        import torch.distributed._shard.checkpoint  # noqa: F401
    except Exception as err:  # what the import raises on Python 3.11
        return f"{type(err).__name__}: {err}"
    return None


def dcp_split(bins, items):
    """_split_by_size_and_type: byte items round robin, then tensors,
    largest first, each into the lightest bucket."""
    buckets = [[] for _ in range(bins)]
    sizes = [0] * bins
    objs = [kv for kv in items if not isinstance(kv[1], t.torch.Tensor)]
    tensors = [kv for kv in items if isinstance(kv[1], t.torch.Tensor)]
    for i, kv in enumerate(objs):
        buckets[i % bins].append(kv)
    for key, tensor in sorted(tensors, key=lambda kv: -kv[1].numel() * kv[1].element_size()):
        i = min(range(bins), key=lambda b: sizes[b])
        buckets[i].append((key, tensor))
        sizes[i] += tensor.numel() * tensor.element_size()
    return buckets


def dcp_write_rank(path, rank, state):
    """write_data of one rank: thread_count threads draining a file queue;
    in each file the byte items (pickled objects) first, then each tensor
    torch.save()d, then os.fsync."""
    from pathlib import Path
    fq = queue.Queue()
    for i, bucket in enumerate(dcp_split(DCP_THREADS, list(state.items()))):
        fq.put((os.path.join(path, f"__{rank}_{i}.distcp"), f"__{rank}_{i}.distcp", bucket))
    results = queue.Queue()

    def writer():
        try:
            while True:
                fpath, key, bucket = fq.get_nowait()
                res = {}
                objs = [kv for kv in bucket if not isinstance(kv[1], t.torch.Tensor)]
                tensors = [kv for kv in bucket if isinstance(kv[1], t.torch.Tensor)]
                with Path(fpath).open("wb") as stream:
                    for name, obj in objs:
                        data = io.BytesIO()
                        t.torch.save(obj, data)
                        off = stream.tell()
                        stream.write(data.getbuffer())
                        res[name] = (key, off, stream.tell() - off)
                    for name, tensor in tensors:
                        off = stream.tell()
                        t.torch.save(tensor, stream)
                        res[name] = (key, off, stream.tell() - off)
                    os.fsync(stream.fileno())
                results.put(res)
        except queue.Empty:
            pass

    threads = [threading.Thread(target=writer) for _ in range(1, DCP_THREADS)]
    for th in threads:
        th.start()
    writer()
    for th in threads:
        th.join()
    out = {}
    while not results.empty():
        out.update(results.get())
    return out


def dcp_rank_state(step, rank):
    return t.state_dict(24 * MiB, seed=1000 * step + rank)


def dcp_rank_main(path, step, rank, conn):
    t.torch.set_num_threads(1)
    conn.send(dcp_write_rank(path, rank, dcp_rank_state(step, rank)))
    conn.close()


def dcp_save(path, step):
    """One checkpoint: DCP_RANKS rank processes at once, then the
    coordinator's finish()."""
    os.makedirs(path, exist_ok=True)
    ctx = multiprocessing.get_context("fork")
    procs = []
    for rank in range(DCP_RANKS):
        parent, child = ctx.Pipe(duplex=False)
        p = ctx.Process(target=dcp_rank_main, args=(path, step, rank, child))
        p.start()
        procs.append((p, parent))
    storage = {}
    for rank, (p, conn) in enumerate(procs):
        res = conn.recv()
        p.join()
        assert p.exitcode == 0, f"rank {rank} exited {p.exitcode}"
        storage.update({(rank, k): v for k, v in res.items()})
    tmp = os.path.join(path, ".metadata.tmp")
    with open(tmp, "wb") as f:
        pickle.dump({"storage_data": storage, "step": step}, f)
        os.fsync(f.fileno())
    meta = os.path.join(path, ".metadata")
    if os.path.exists(meta):
        os.unlink(meta)
    os.rename(tmp, meta)


def dcp_load(path):
    """FileSystemReader.read_data: per file, each item torch.load()ed from
    its slice."""
    with open(os.path.join(path, ".metadata"), "rb") as f:
        md = pickle.load(f)
    out = {}
    for (rank, name), (key, off, length) in md["storage_data"].items():
        with open(os.path.join(path, key), "rb") as f:
            f.seek(off)
            buf = io.BytesIO(f.read(length))
        out.setdefault(rank, {})[name] = t.torch.load(buf, map_location="cpu")
    return md["step"], out


def test_dcp():
    why = dcp_import_problem()
    t.log("torch.distributed._shard.checkpoint (torch 1.13's DCP): " +
          (f"does not import here ({why}); " if why else "imports, but ") +
          "running the torch >= 2.0 FileSystemWriter's calls, reproduced")
    img = t.device("dcp.img")
    m = t.mount(img)
    root = m.path("checkpoints")
    os.mkdir(root)
    steps, keep = 4, 2
    for step in range(1, steps + 1):
        d = os.path.join(root, f"step_{step}")
        t0 = time.time()
        dcp_save(d, step)
        t.figure(f"dcp step {step}:", ranks=DCP_RANKS, threads=DCP_THREADS,
                 mib=f"{t.tree_bytes(d) / MiB:.0f}", seconds=f"{time.time() - t0:.2f}")
        files = sorted(os.listdir(d))
        assert files == [".metadata"] + sorted(
            f"__{r}_{i}.distcp" for r in range(DCP_RANKS) for i in range(DCP_THREADS)), files
        if step > keep:
            t.delete_checkpoint(m, img, os.path.join(root, f"step_{step - keep}"))
    m.umount()
    t.check_fsck(img)
    t.check_wa(img, f"dcp: {steps} checkpoints of {DCP_RANKS} ranks x {DCP_THREADS} threads")
    m.mount()
    for step in range(steps - keep + 1, steps + 1):
        got_step, got = dcp_load(os.path.join(root, f"step_{step}"))
        assert got_step == step
        for rank in range(DCP_RANKS):
            t.assert_sd_equal(got[rank], dcp_rank_state(step, rank),
                              f"step_{step} rank {rank}", tied=False)
    delete_all(m, img, "dcp: after deleting every checkpoint")


# ----------------------------------------------------------------- extend

def safetensors_bytes(sd):
    """The safetensors layout: u64 header length, JSON header, the tensors'
    bytes back to back."""
    header, blobs, off = {}, [], 0
    for k, v in sd.items():
        if not isinstance(v, t.torch.Tensor) or v.dtype == t.torch.bfloat16:
            continue
        a = v.contiguous().numpy()
        b = a.tobytes()
        header[k] = {"dtype": a.dtype.str, "shape": list(a.shape),
                     "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h, blobs


def extend_then_fill(path, head, blobs):
    """safetensors >= 0.8 serialize_file: create, set the final length,
    then write from offset 0 to the end."""
    total = len(head) + sum(len(b) for b in blobs)
    with open(path, "wb") as f:
        os.truncate(path, total)
        f.write(head)
        for b in blobs:
            f.write(b)
    return total


def read_safetensors(path):
    """What safetensors.safe_open does: mmap the file, parse the header,
    view each tensor in place."""
    with open(path, "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
    n = struct.unpack("<Q", mm[:8])[0]
    header = json.loads(mm[8:8 + n])
    out = {}
    for k, info in header.items():
        a, b = info["data_offsets"]
        out[k] = t.np.frombuffer(mm, dtype=info["dtype"], count=(b - a) // t.np.dtype(info["dtype"]).itemsize,
                                 offset=8 + n + a).reshape(info["shape"]).copy()
    mm.close()
    return out


def test_extend():
    img = t.device("extend.img")
    m = t.mount(img)
    files = {}
    for i in range(3):
        sd = t.state_dict(60 * MiB, seed=700 + i)
        head, blobs = safetensors_bytes(sd)
        p = m.path(f"model-0000{i + 1}-of-00003.safetensors")
        size = extend_then_fill(p, head, blobs)
        assert os.path.getsize(p) == size
        files[p] = (sd, head + b"".join(blobs))
    m.umount()
    t.check_fsck(img)
    t.check_wa(img, "extend: 3 safetensors files, truncate then fill")
    m.mount()
    for p, (sd, raw) in files.items():
        with open(p, "rb") as f:
            assert f.read() == raw, f"{p}: bytes differ after remount"
        got = read_safetensors(p)
        for k, v in got.items():
            assert t.np.array_equal(v, sd[k].numpy()), f"{p}: {k} differs"
    delete_all(m, img, "extend: after deleting the files")


# ---------------------------------------------------------------- odirect

ALIGN = 4096


class FastFileWriter(io.RawIOBase):
    """DeepSpeed's deepspeed/io/fast_file_writer.py, its system calls: the
    file opened O_DIRECT|O_CREAT|O_WRONLY; torch.save's bytes copied into
    one of two page-aligned (mmap) buffers; a full buffer written at its
    file offset with O_DIRECT pwrites, split over parallel threads as its
    aio handle does, while the other buffer fills; at close the aligned
    part drained the same way, the O_DIRECT descriptor closed, the
    unaligned tail appended through open(path, 'ab'), the file reopened
    O_DIRECT|O_WRONLY|O_APPEND, fsynced and closed."""

    def __init__(self, path, buf_size=8 * MiB, parallel=2):
        super().__init__()
        self.path = path
        self.fd = os.open(path, os.O_DIRECT | os.O_CREAT | os.O_WRONLY, 0o644)
        self.bufs = [mmap.mmap(-1, buf_size), mmap.mmap(-1, buf_size)]
        self.cur = 0
        self.fill = 0
        self.file_off = 0
        self.parallel = parallel
        self.inflight = None
        self.size = buf_size
        self.direct_bytes = 0

    def writable(self):
        return True

    def _drain(self, nbytes):
        """Write nbytes (a multiple of ALIGN) of the current buffer at the
        file offset in `parallel` O_DIRECT pieces, asynchronously."""
        self._wait()
        buf = memoryview(self.bufs[self.cur])
        piece = -(-nbytes // self.parallel // ALIGN) * ALIGN
        jobs = []
        for off in range(0, nbytes, piece):
            n = min(piece, nbytes - off)
            jobs.append(threading.Thread(target=self._pwrite,
                                         args=(buf[off:off + n], self.file_off + off)))
        for j in jobs:
            j.start()
        self.inflight = jobs
        self.file_off += nbytes
        self.direct_bytes += nbytes
        self.cur ^= 1
        self.fill = 0

    def _pwrite(self, view, off):
        done = 0
        while done < len(view):
            done += os.pwrite(self.fd, view[done:], off + done)

    def _wait(self):
        for j in self.inflight or []:
            j.join()
        self.inflight = None

    def write(self, b):
        b = memoryview(b).cast("B")
        done = 0
        while done < len(b):
            n = min(len(b) - done, self.size - self.fill)
            self.bufs[self.cur][self.fill:self.fill + n] = b[done:done + n]
            self.fill += n
            done += n
            if self.fill == self.size:
                self._drain(self.size)
        return len(b)

    def close(self):
        if self.closed:
            return
        aligned = self.fill // ALIGN * ALIGN
        tail = bytes(self.bufs[self.cur][aligned:self.fill])
        if aligned:
            self._drain(aligned)
        self._wait()
        if tail:
            os.close(self.fd)
            with open(self.path, "ab") as fp:
                fp.write(tail)
            self.file_off += len(tail)
            self.fd = os.open(self.path, os.O_DIRECT | os.O_WRONLY | os.O_APPEND)
        os.fsync(self.fd)
        os.close(self.fd)
        for b in self.bufs:
            b.close()
        super().close()


def test_odirect():
    img = t.device("odirect.img")
    m = t.mount(img)
    files = {}
    for i in range(3):
        sd = t.state_dict(64 * MiB, seed=800 + i)
        ref = io.BytesIO()
        t.torch.save(sd, ref)
        raw = ref.getvalue()
        p = m.path(f"layer_{i:02d}-model_states.pt")
        w = FastFileWriter(p)
        t.torch.save(sd, w)
        w.close()
        assert len(raw) % ALIGN, "the test needs an unaligned tail"
        assert w.direct_bytes == len(raw) // ALIGN * ALIGN
        assert os.path.getsize(p) == len(raw), \
            f"{p}: {os.path.getsize(p)} B, torch.save wrote {len(raw)}"
        files[p] = (sd, raw)
    m.umount()
    t.check_fsck(img)
    t.check_wa(img, "odirect: 3 DeepSpeed fast-writer checkpoints")
    m.mount()
    for p, (sd, raw) in files.items():
        with open(p, "rb") as f:
            assert f.read() == raw, f"{p}: bytes differ from what torch.save produced"
        t.assert_sd_equal(load(p), sd, p)
    delete_all(m, img, "odirect: after deleting the files")


# ------------------------------------------------------------------ numpy

def test_numpy():
    np = t.np
    img = t.device("numpy.img")
    m = t.mount(img)
    rng = np.random.default_rng(9)
    arrays = {
        "tokens.npy": rng.integers(0, 50257, size=(24_000_017,), dtype=np.uint16),
        "embeddings.npy": rng.standard_normal((60_013, 257), dtype=np.float32),
        "labels.npy": rng.integers(0, 1000, size=(1_000_003,), dtype=np.int64),
        "mask.npy": rng.random((3001, 1009)) < 0.5,
        "fortran.npy": np.asfortranarray(rng.standard_normal((997, 1013))),
    }
    for name, a in arrays.items():
        np.save(m.path(name), a)
    for name, a in arrays.items():     # through the page cache
        got = np.load(m.path(name), mmap_mode="r")
        assert got.dtype == a.dtype and got.shape == a.shape and np.array_equal(got, a), name
        del got                        # an open mapping keeps the mount busy
    m.umount()
    t.check_fsck(img)
    t.check_wa(img, "numpy: np.save of 5 arrays")
    m.mount()
    for name, a in arrays.items():     # from the device
        got = np.load(m.path(name), mmap_mode="r")
        assert isinstance(got, np.memmap), f"{name}: np.load did not mmap"
        assert got.dtype == a.dtype and got.shape == a.shape, name
        idx = rng.integers(0, a.shape[0], size=200)
        assert np.array_equal(got[idx], a[idx]), f"{name}: random rows differ"
        assert np.array_equal(got, a), f"{name}: the mmap differs"
        del got
    delete_all(m, img, "numpy: after deleting the arrays")


TESTS = [("replace", test_replace), ("replace-crash", test_replace_crash),
         ("latest", test_latest),
         ("rotate", test_rotate), ("dcp", test_dcp), ("extend", test_extend),
         ("odirect", test_odirect), ("numpy", test_numpy)]

if __name__ == "__main__":
    picked = sys.argv[1:] or [n for n, _ in TESTS]
    t.begin("checkpoint patterns (" + ", ".join(picked) + "): data exact "
            "after remount, fsck clean, write amplification, zones freed")
    t.run(TESTS)
