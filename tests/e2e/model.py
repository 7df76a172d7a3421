#!/usr/bin/python3
"""tests/e2e/model.py: random writes against a model.

The same random operations (out-of-order and overlapping writes, unaligned
offsets and sizes, writes past EOF that leave holes, truncates down and up,
fsyncs) go to files on the mount and to files in a plain directory; after
each step a random range is compared, and now and then the whole files,
by read() and through mmap; across remounts too. Several seeds, within a
time budget (E2E_MODEL_SECONDS, default 50). A failure names the seed and
step: `model.py SEED` replays one seed.
"""
import mmap
import os
import random
import sys
import time

sys.dont_write_bytecode = True     # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib as e  # noqa: E402

MiB = 1 << 20
MAX_SIZE = 24 * MiB
NFILES = 3


def rand_size(rng):
    r = rng.random()
    if r < 0.45:
        return rng.randint(1, 4096)
    if r < 0.8:
        return rng.randint(4096, 256 * 1024)
    if r < 0.95:
        return rng.randint(256 * 1024, 3 * MiB)
    return rng.choice([4096, 65536, MiB, 2 * MiB, 4 * MiB])


def rand_off(rng, size):
    r = rng.random()
    if r < 0.3:
        return rng.randint(0, max(0, size))                    # inside
    if r < 0.45:
        return size                                            # append
    if r < 0.6:
        return rng.randint(size, size + 8 * MiB)              # a hole before
    if r < 0.75:
        return rng.randrange(0, max(1, size) + 4096, 4096)    # block aligned
    return rng.randint(0, MAX_SIZE // 2)                      # anywhere


def first_diff(a, b):
    for i in range(min(len(a), len(b))):
        if a[i] != b[i]:
            return i
    return min(len(a), len(b))


class Pair:
    """One file on the mount and its model in a plain directory."""

    def __init__(self, mnt_path, ref_path):
        self.mp = mnt_path
        self.rp = ref_path
        self.open()

    def open(self):
        self.mfd = os.open(self.mp, os.O_RDWR | os.O_CREAT, 0o644)
        self.rfd = os.open(self.rp, os.O_RDWR | os.O_CREAT, 0o644)

    def close(self):
        os.close(self.mfd)
        os.close(self.rfd)

    def size(self):
        return os.fstat(self.rfd).st_size

    def write(self, off, data):
        n = os.pwrite(self.mfd, data, off)
        assert n == len(data), f"short write {n} of {len(data)} at {off}"
        os.pwrite(self.rfd, data, off)

    def truncate(self, size):
        os.ftruncate(self.mfd, size)
        os.ftruncate(self.rfd, size)

    def check_range(self, off, length, what):
        got = os.pread(self.mfd, length, off)
        want = os.pread(self.rfd, length, off)
        if got != want:
            i = first_diff(got, want)
            raise AssertionError(f"{what}: {self.mp} differs at {off + i} "
                                 f"(read {off}+{length}: got {len(got)} bytes, want {len(want)})")

    def check_all(self, what, full_mmap=True):
        ms = os.stat(self.mp).st_size
        rs = self.size()
        assert ms == rs, f"{what}: {self.mp} has size {ms}, the model {rs}"
        with open(self.mp, "rb") as f:
            got = f.read()
        with open(self.rp, "rb") as f:
            want = f.read()
        if got != want:
            raise AssertionError(f"{what}: {self.mp} differs at {first_diff(got, want)} (read)")
        if rs:
            with open(self.mp, "rb") as f:
                mm = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
                try:
                    # Pages in a random order, then the whole.
                    rng = random.Random(rs)
                    for _ in range(16):
                        o = rng.randrange(0, rs)
                        ln = min(rs - o, rng.randint(1, 65536))
                        if mm[o:o + ln] != want[o:o + ln]:
                            raise AssertionError(f"{what}: {self.mp} differs through mmap in {o}+{ln}")
                    if full_mmap and mm[:] != want:
                        raise AssertionError(f"{what}: {self.mp} differs at "
                                             f"{first_diff(mm[:], want)} through mmap")
                finally:
                    mm.close()


def run_seed(seed, steps, mnt, refdir, deadline):
    rng = random.Random(seed)
    d = mnt.path(f"seed{seed}")
    rd = os.path.join(refdir, f"seed{seed}")
    os.makedirs(d, exist_ok=True)
    os.makedirs(rd, exist_ok=True)
    pairs = [Pair(os.path.join(d, f"f{i}"), os.path.join(rd, f"f{i}")) for i in range(NFILES)]
    remount_at = {rng.randint(steps // 4, steps // 2), rng.randint(steps // 2, steps - 1)}
    done = 0
    try:
        for step in range(steps):
            if time.time() > deadline:
                break
            where = f"seed {seed} step {step}"
            p = rng.choice(pairs)
            size = p.size()
            r = rng.random()
            if r < 0.75:
                off = rand_off(rng, size)
                ln = rand_size(rng)
                if off + ln > MAX_SIZE:
                    off = max(0, MAX_SIZE - ln - rng.randint(0, 4096))
                data = rng.randbytes(ln) if rng.random() < 0.7 else bytes([rng.randrange(256)]) * ln
                p.write(off, data)
                if rng.random() < 0.5:
                    p.check_range(off, ln, f"{where}: just written")
            elif r < 0.85:
                new = rng.choice([0, rng.randint(0, size), rng.randint(0, size + 4 * MiB),
                                  size - rng.randint(0, 4096) if size else 0,
                                  (size // 4096) * 4096])
                p.truncate(max(0, min(new, MAX_SIZE)))
            elif r < 0.9:
                os.fsync(p.mfd)
            else:
                if size:
                    o = rng.randint(0, size - 1)
                    p.check_range(o, rng.randint(1, 2 * MiB), f"{where}: a random range")
            if rng.random() < 0.04:
                p.check_all(f"{where}: whole file", full_mmap=False)
            if step in remount_at:
                for q in pairs:
                    q.close()
                mnt.umount()
                mnt.mount()
                for q in pairs:
                    q.open()
                    q.check_all(f"{where}: after a remount")
            done = step + 1
        for q in pairs:
            q.check_all(f"seed {seed}: at the end")
        # And once more from the device, after a remount.
        for q in pairs:
            q.close()
        mnt.umount()
        mnt.mount()
        for q in pairs:
            q.open()
            q.check_all(f"seed {seed}: at the end, after a remount")
    finally:
        for q in pairs:
            try:
                q.close()
            except OSError:
                pass
    for q in pairs:
        os.unlink(q.mp)
        os.unlink(q.rp)
    os.rmdir(d)
    return done


def main():
    e.begin("random unaligned, overlapping, out-of-order writes, holes and truncates on "
            "the mount against the same on a plain file: equal by read() and mmap, across "
            "remounts, for several seeds")
    budget = float(os.environ.get("E2E_MODEL_SECONDS", "50"))
    seeds = [int(a) for a in sys.argv[1:]] or list(range(1, 9))
    img = e.image("model.img", "1G", os.environ.get("E2E_MODEL_ZONE_SIZE", "4M"))
    mnt = e.Mount(img, "mnt")
    refdir = os.path.join(e.WORK, "ref")
    os.mkdir(refdir)
    t_end = time.time() + budget

    def one(seed):
        def run():
            t0 = time.time()
            # Every seed gets a share of what is left, and at least a bit.
            left = max(3.0, (t_end - time.time()) / max(1, len(seeds) - seeds.index(seed)) - 1.5)
            done = run_seed(seed, 600, mnt, refdir, time.time() + left)
            e.log(f"seed {seed}: {done} steps in {time.time() - t0:.1f} s")
        return run

    tests = [(f"seed{s}", one(s)) for s in seeds]

    def final():
        mnt.umount()
        e.log(e.fsck(img))

    tests.append(("umount_fsck", final))
    e.run_tests(tests, picked=[])


if __name__ == "__main__":
    main()
