#!/usr/bin/python3
"""tests/train/dataloader.py: what a training job's input pipeline does to
the mount, checked byte for byte on a freshly mounted (cold) device:

  records   a map-style torch Dataset reading records of 512 B - 64 KiB at
            random offsets of large shard files with os.pread, through
            DataLoader(num_workers=4), then from 8 threads sharing one
            descriptor, then the first pass again (the kernel's cache)
  mmap      np.load(mmap_mode='r'), np.memmap records through DataLoader
            workers (as Megatron's indexed datasets read), torch.from_file,
            torch.load of a checkpoint

Every byte of shard k at offset o is known: the file is the little-endian
64-bit words (k << 48) | (o // 8), so a misplaced or stale read shows.

Read amplification is reported, not asserted ("figure:" lines): bytes the
readers got, bytes the daemon replied to the kernel (its wchar) and bytes it
read (its rchar: the device reads of the emulator, plus the small FUSE
request headers). The stats xattr has no device read counter yet.

Run by meson (ZONEFUSE set); arguments pick tests by name.
"""
import os
import sys
import threading
import time
import warnings

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trainlib as t  # noqa: E402

MiB = t.MiB
# More workers than this machine's cores, on purpose: more readers at once.
warnings.filterwarnings("ignore", message="This DataLoader will create")
SHARDS = 2
SHARD_BYTES = t.mib(160) + 4100
RECORDS = 3000
WORKERS = 4
THREADS = 8

M = None
IMG = None


def shard_words(k, first, count):
    np = t.np
    return (np.arange(first, first + count, dtype=np.uint64)
            | np.uint64(k << 48)).astype("<u8")


def expected(k, off, n):
    first = off // 8
    words = shard_words(k, first, (off + n + 7) // 8 - first + 1)
    return words.tobytes()[off - first * 8:off - first * 8 + n]


def write_shard(path, k):
    with open(path, "wb") as f:
        step = 4 * MiB // 8
        for first in range(0, SHARD_BYTES // 8 + 1, step):
            n = min(step, (SHARD_BYTES + 7) // 8 - first)
            if n > 0:
                f.write(shard_words(k, first, n).tobytes())
        f.truncate(SHARD_BYTES)


def records(seed, count):
    """(shard, offset, length): lengths log-uniform in 512 B .. 64 KiB."""
    rng = t.np.random.default_rng(seed)
    lens = (2 ** rng.uniform(9, 16, size=count)).astype(int)
    ks = rng.integers(0, SHARDS, size=count)
    offs = [int(rng.integers(0, SHARD_BYTES - n)) for n in lens]
    return [(int(k), o, int(n)) for k, o, n in zip(ks, offs, lens)]


class Records:
    """A map-style Dataset: item i is record i, read with os.pread from the
    shard (each worker process opens its own descriptors)."""

    def __init__(self, paths, recs):
        self.paths = paths
        self.recs = recs
        self.fds = None
        self.pid = None

    def __len__(self):
        return len(self.recs)

    def __getitem__(self, i):
        if self.pid != os.getpid():
            self.fds = [os.open(p, os.O_RDONLY) for p in self.paths]
            self.pid = os.getpid()
        k, off, n = self.recs[i]
        b = os.pread(self.fds[k], n, off)
        return i, t.torch.frombuffer(bytearray(b), dtype=t.torch.uint8)


class MemmapRecords(Records):
    """The same records read from np.memmap views of the shards."""

    def __getitem__(self, i):
        if self.pid != os.getpid():
            self.fds = [t.np.memmap(p, dtype=t.np.uint8, mode="r") for p in self.paths]
            self.pid = os.getpid()
        k, off, n = self.recs[i]
        return i, t.torch.from_numpy(t.np.array(self.fds[k][off:off + n]))


def daemon_io():
    """The daemon's read and write byte counters (/proc/PID/io)."""
    pids = M.pids()
    assert len(pids) == 1, f"expected one daemon for {IMG}, found {pids}"
    io = {}
    with open(f"/proc/{pids[0]}/io") as f:
        for line in f:
            k, v = line.split(":")
            io[k] = int(v)
    return io


def report(what, got_bytes, io0, io1, seconds, nrec):
    rchar = io1["rchar"] - io0["rchar"]
    wchar = io1["wchar"] - io0["wchar"]
    t.figure(what, records=nrec, bytes_returned=got_bytes,
             daemon_replied=wchar, daemon_read=rchar,
             replied_per_returned=f"{wchar / got_bytes:.2f}",
             read_per_returned=f"{rchar / got_bytes:.2f}",
             seconds=f"{seconds:.2f}",
             records_per_s=f"{nrec / seconds:.0f}")


def check_record(rec, data, what):
    k, off, n = rec
    want = expected(k, off, n)
    got = bytes(data)
    if got != want:
        bad = next(i for i in range(min(len(got), len(want))) if got[i] != want[i]) \
            if len(got) == len(want) else None
        raise AssertionError(f"{what}: shard {k} offset {off} length {n}: "
                             f"got {len(got)} B, first difference at {bad}")


def loader_pass(ds, what):
    DataLoader = t.torch.utils.data.DataLoader
    dl = DataLoader(ds, batch_size=32, shuffle=True, num_workers=WORKERS,
                    collate_fn=list, persistent_workers=False)
    io0 = daemon_io()
    t0 = time.time()
    seen, nbytes = set(), 0
    for batch in dl:
        for i, data in batch:
            check_record(ds.recs[i], data.numpy(), what)
            seen.add(i)
            nbytes += len(data)
    dt = time.time() - t0
    report(what, nbytes, io0, daemon_io(), dt, len(seen))
    assert seen == set(range(len(ds))), f"{what}: records missing"


def setup():
    global M, IMG
    IMG = t.device("data.img", "2G", "16M")
    M = t.mount(IMG)
    for k in range(SHARDS):
        write_shard(M.path(f"shard-{k}.bin"), k)
    # Cold: a remount leaves nothing in the page cache.
    M.umount()
    M.mount()


def test_records():
    paths = [M.path(f"shard-{k}.bin") for k in range(SHARDS)]
    recs = records(1, RECORDS)
    ds = Records(paths, recs)
    loader_pass(ds, f"DataLoader({WORKERS} workers), cold:")

    # One thread, then 8 threads sharing one descriptor, other records
    # each time: whether readers of one file wait for each other.
    fds = [os.open(p, os.O_RDONLY) for p in paths]
    for nthreads, seed in ((1, 2), (THREADS, 4)):
        recs2 = records(seed, RECORDS)
        errors, nbytes = [], [0] * nthreads

        def reader(n):
            try:
                for rec in recs2[n::nthreads]:
                    k, off, ln = rec
                    b = os.pread(fds[k], ln, off)
                    check_record(rec, b, f"thread {n}")
                    nbytes[n] += len(b)
            except Exception as err:  # reported by the main thread
                errors.append(err)

        io0 = daemon_io()
        t0 = time.time()
        threads = [threading.Thread(target=reader, args=(n,)) for n in range(nthreads)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        report(f"{nthreads} thread(s) pread, cold:", sum(nbytes), io0, daemon_io(),
               time.time() - t0, len(recs2))
        assert not errors, errors[0]
    for fd in fds:
        os.close(fd)

    # The first pass again: the kernel's page cache should serve it.
    loader_pass(ds, f"DataLoader({WORKERS} workers), the same records again:")


def test_mmap():
    np, torch = t.np, t.torch
    paths = [M.path(f"shard-{k}.bin") for k in range(SHARDS)]
    # np.memmap records through DataLoader workers, other records.
    ds = MemmapRecords(paths, records(3, RECORDS))
    loader_pass(ds, f"np.memmap records, DataLoader({WORKERS} workers):")

    # np.load(mmap_mode='r') of .npy files written here, read cold.
    rng = np.random.default_rng(5)
    arrays = {"feats.npy": rng.standard_normal((40_009, 263), dtype=np.float32),
              "ids.npy": rng.integers(0, 1 << 40, size=3_000_017, dtype=np.int64)}
    for name, a in arrays.items():
        np.save(M.path(name), a)
    sd = t.state_dict(24 * MiB, seed=77)
    torch.save(sd, M.path("ckpt.pt"))
    M.umount()
    M.mount()
    for name, a in arrays.items():
        mm = np.load(M.path(name), mmap_mode="r")
        assert isinstance(mm, np.memmap) and mm.shape == a.shape and mm.dtype == a.dtype
        for _ in range(300):
            i = int(rng.integers(0, a.shape[0]))
            assert np.array_equal(mm[i], a[i]), f"{name}: row {i} differs"
        assert np.array_equal(mm, a), f"{name}: differs"
        del mm

    # torch.from_file maps the file (MAP_PRIVATE, shared=False).
    k = 1
    ft = torch.from_file(paths[k], shared=False, size=SHARD_BYTES, dtype=torch.uint8)
    for _ in range(300):
        off = int(rng.integers(0, SHARD_BYTES - 4096))
        n = int(rng.integers(1, 4096))
        assert bytes(ft[off:off + n].numpy()) == expected(k, off, n), \
            f"torch.from_file: offset {off} length {n} differs"
    del ft

    # torch.load of a checkpoint: from a path and from a file object.
    t.assert_sd_equal(torch.load(M.path("ckpt.pt"), map_location="cpu"), sd,
                      "torch.load(path)")
    with open(M.path("ckpt.pt"), "rb") as f:
        t.assert_sd_equal(torch.load(f, map_location="cpu"), sd, "torch.load(file)")


def test_end():
    M.umount()
    t.check_fsck(IMG)
    t.check_wa(IMG, "dataloader: shards, arrays and a checkpoint written once")


if __name__ == "__main__":
    t.begin("DataLoader random record reads (workers, threads), mmap "
            "reads (np.load, np.memmap, torch.from_file), torch.load: "
            "every byte right; read amplification reported")
    setup()
    t.run([("records", test_records), ("mmap", test_mmap), ("end", test_end)])
