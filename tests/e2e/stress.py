#!/usr/bin/python3
"""tests/e2e/stress.py: concurrent writers and namespace changes near full.

Several threads, each in a directory of its own on one mount, run random
operations for a while: files created and written through write-only and
read-write opens (the uncached and the cached paths), overwritten,
appended to through a descriptor held open across operations, extended
over holes and truncated; unlinked, renamed over one another, hard-linked,
replaced checkpoint-style (write, fsync, rename over); fsyncs of files
and directories; subdirectories made, removed and renamed (over empty
ones too) while their files may be in writeback. Each thread keeps a model of its directory, and the
threads together keep the device 90-100% full (df), so that reclaim, the
placement heads and honest ENOSPC all work while the others write.

Checked:
- no operation fails, except with ENOSPC where the device is full; an
  operation refused with ENOSPC changed nothing (the file reads back as
  before it; a refused create left no file, a refused rename or link
  left the names as they were); rmdir and rename over a directory fail
  with ENOTEMPTY exactly where the model has names in it;
- a reader thread walks the directories and reads the files meanwhile:
  no error but those of a name that moved or went meanwhile;
- after each step's write the written range reads back, and now and then
  the whole file (read(), size, link count);
- at the end of each round, with every thread stopped: each directory
  lists exactly its model's names and every file holds its model's bytes;
  then unmount, fsck clean, mount again and the same check, so that what
  reached the device (not the kernel's cache) is compared;
- the daemon's log has no error line (such as data lost in writeback).

`stress.py --device DEV [SEED...]` runs on a zoned block device instead
(it is formatted; seed 1 by default, whose mount options are used), with
its own limits and zone capacity. The threads' files come to about 250
MiB at most, so on a larger device a ballast file, written once before
the first round and never touched again, takes all but BALLAST_LEFT of
it: the threads then work near full there too.

A failure names the seed: `stress.py SEED...` runs those. A seed fixes
each thread's operations, not how the threads interleave: run a failing
seed several times, and with something else loading the CPU (the bugs
this found came out under contention). The time budget is
E2E_STRESS_SECONDS (default 45), shared by the seeds; seed modulo 3 picks
the device and mount (CONFIGS: zone capacity below the zone size, open
and active limits, small staging budgets, one writeback thread,
conventional zones, 512-byte blocks).
"""
import errno
import json
import os
import random
import sys
import threading
import time
import traceback

sys.dont_write_bytecode = True     # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib as e  # noqa: E402

KiB = 1 << 10
MiB = 1 << 20
THREADS = 6
NAMES = 24                  # file names per directory: names are reused
FILL_LOW, FILL_HIGH = 0.90, 1.00
BALLAST_LEFT = 128 * MiB   # what a device's ballast leaves to the threads

# Per seed (modulo): emu create arguments, mount options.
CONFIGS = [
    (["128M", "2M"], "stage_mb=16"),
    (["128M", "2M", "--zone-capacity", "1536K", "--max-open", "4",
      "--max-active", "6"], "stage_mb=8,commit=1"),
    (["192M", "4M", "--conventional", "2", "--max-active", "8",
      "--block-size", "512"], "writeback_threads=1"),
]


class Node:
    """A file's bytes, shared by its hard links."""
    __slots__ = ("data",)

    def __init__(self):
        self.data = bytearray()


def apply_write(buf, off, data):
    if off > len(buf):
        buf.extend(bytes(off - len(buf)))
    buf[off:off + len(data)] = data


def apply_truncate(buf, size):
    if size < len(buf):
        del buf[size:]
    else:
        buf.extend(bytes(size - len(buf)))


def first_diff(a, b):
    n = min(len(a), len(b))
    for i in range(0, n, 4096):
        if a[i:i + 4096] != b[i:i + 4096]:
            return next(j for j in range(i, min(n, i + 4096)) if a[j] != b[j])
    return n


class Worker:
    """One thread's directory on the mount and its model."""

    def __init__(self, mnt, wid, seed, floor):
        self.m = mnt
        self.wid = wid
        self.rng = random.Random(seed * 1009 + wid)
        self.top = f"w{wid}"
        self.dirs = [self.top, f"{self.top}/d0"]     # the top, then subdirs
        self.ndirs = 1             # subdirectory names used so far
        self.names = {}            # relative path -> Node
        self.held = None           # (fd, Node): a file kept open across steps
        self.floor = floor         # free bytes (df) below which it deletes
        self.full = 0              # steps left to free space after ENOSPC
        self.ops = self.enospc = self.link_retries = 0
        for d in self.dirs:
            os.mkdir(mnt.path(d))

    # -- helpers ---------------------------------------------------------

    def p(self, rel):
        return self.m.path(rel)

    def live(self):
        nodes = {id(n): n for n in self.names.values()}
        if self.held:
            nodes[id(self.held[1])] = self.held[1]
        return sum(len(n.data) for n in nodes.values())

    def pick(self):
        return self.rng.choice(sorted(self.names)) if self.names else None

    def any_name(self):
        return f"{self.rng.choice(self.dirs)}/f{self.rng.randrange(NAMES)}"

    def rand_size(self):
        r = self.rng.random()
        if r < 0.35:
            return self.rng.randint(1, 8 * KiB)
        if r < 0.7:
            return self.rng.randint(8 * KiB, 512 * KiB)
        return self.rng.randint(512 * KiB, 4 * MiB)

    def nlinks(self, node):
        return sum(1 for n in self.names.values() if n is node)

    def check(self, rel, what, lo=0, hi=None):
        """rel must read back as its model (bytes lo..hi, or all)."""
        node = self.names[rel]
        with open(self.p(rel), "rb", buffering=0) as f:
            if hi is None:
                got = f.read()
                st = os.fstat(f.fileno())
                assert st.st_size == len(node.data), \
                    f"{rel}: size {st.st_size}, model {len(node.data)} (after {what})"
                assert st.st_nlink == self.nlinks(node), \
                    f"{rel}: {st.st_nlink} links, model {self.nlinks(node)} (after {what})"
                want = bytes(node.data)
            else:
                got = os.pread(f.fileno(), hi - lo, lo)
                want = bytes(node.data[lo:hi])
        if got != want:
            i = first_diff(got, want)
            raise AssertionError(
                f"{rel}: after {what}: {len(got)} bytes read, model {len(want)}; "
                f"first difference at byte {lo + i}")

    def refused(self, x, what):
        """x is an OSError: ENOSPC is counted, anything else fails."""
        if x.errno != errno.ENOSPC:
            raise AssertionError(f"{what}: {os.strerror(x.errno)} ({x!r})")
        self.enospc += 1
        self.full = 6

    # -- operations ------------------------------------------------------

    def op_create(self):
        """Create or replace a file and write it in pieces."""
        rel = self.any_name()
        if rel in self.names and self.rng.random() < 0.5:
            rel = self.any_name()
        rw = self.rng.random() < 0.4
        size = self.rand_size()
        piece = self.rng.choice([4 * KiB, 64 * KiB, 1 * MiB, 1 * MiB + 4097])
        existed = rel in self.names
        flags = (os.O_RDWR if rw else os.O_WRONLY) | os.O_CREAT | os.O_TRUNC
        try:
            fd = os.open(self.p(rel), flags, 0o644)
        except OSError as x:
            self.refused(x, f"create {rel}")
            assert os.path.exists(self.p(rel)) == existed, \
                f"create {rel} refused, yet the name changed"
            return
        node = self.names[rel] if existed else Node()
        node.data.clear()
        self.names[rel] = node
        try:
            off = 0
            data = self.rng.randbytes(size)
            while off < size:
                n = os.pwrite(fd, data[off:off + piece], off)
                apply_write(node.data, off, data[off:off + n])
                off += n
            if self.rng.random() < 0.3:
                os.fsync(fd)
        except OSError as x:
            self.refused(x, f"write {rel}")
        finally:
            os.close(fd)
        self.check(rel, "create")

    def op_write(self):
        """Overwrite, append, or write past the end leaving a hole."""
        rel = self.pick()
        if not rel:
            return self.op_create()
        node = self.names[rel]
        r = self.rng.random()
        cur = len(node.data)
        if r < 0.4:
            off = self.rng.randint(0, cur)
        elif r < 0.7:
            off = cur
        elif r < 0.85:
            off = cur + self.rng.randint(1, 2 * MiB)
        else:
            off = self.rng.randrange(0, cur + 4096, 4096)
        data = self.rng.randbytes(self.rng.choice([self.rng.randint(1, 9000),
                                                   self.rng.randint(1, 1200 * KiB)]))
        fd = os.open(self.p(rel), os.O_RDWR if self.rng.random() < 0.5 else os.O_WRONLY)
        try:
            n = os.pwrite(fd, data, off)
            apply_write(node.data, off, data[:n])
        except OSError as x:
            self.refused(x, f"write {rel} at {off}")
            n = 0
        finally:
            os.close(fd)
        if n:
            self.check(rel, f"write at {off}", off, off + n)
        else:
            self.check(rel, f"refused write at {off}")

    def op_held(self):
        """Append through a descriptor kept open across steps (its file may
        be renamed or unlinked meanwhile), or close it."""
        if self.held and self.rng.random() < 0.15:
            os.close(self.held[0])
            self.held = None
            return
        if not self.held:
            rel = self.pick()
            if not rel:
                return
            self.held = (os.open(self.p(rel), os.O_WRONLY), self.names[rel])
        fd, node = self.held
        data = self.rng.randbytes(self.rng.randint(1, 300 * KiB))
        try:
            n = os.pwrite(fd, data, len(node.data))
            apply_write(node.data, len(node.data), data[:n])
        except OSError as x:
            self.refused(x, "append to the held file")
        names = [k for k, v in self.names.items() if v is node]
        if names:
            self.check(names[0], "append through a held descriptor")

    def op_truncate(self):
        rel = self.pick()
        if not rel:
            return
        node = self.names[rel]
        r = self.rng.random()
        cur = len(node.data)
        size = (self.rng.randint(0, cur) if r < 0.7 else
                cur + self.rng.randint(0, 3 * MiB))
        try:
            os.truncate(self.p(rel), size)
            apply_truncate(node.data, size)
        except OSError as x:
            self.refused(x, f"truncate {rel} to {size}")
        self.check(rel, f"truncate to {size}")

    def op_unlink(self):
        rel = self.pick()
        if not rel:
            return
        try:
            os.unlink(self.p(rel))
        except OSError as x:
            self.refused(x, f"unlink {rel}")
            assert os.path.exists(self.p(rel)), f"unlink {rel} refused, yet it is gone"
            return
        del self.names[rel]

    def op_rename(self):
        src = self.pick()
        if not src:
            return
        dst = self.any_name()
        if dst == src:
            return
        same = self.names.get(dst) is self.names[src]
        try:
            os.rename(self.p(src), self.p(dst))
        except OSError as x:
            self.refused(x, f"rename {src} {dst}")
            assert os.path.exists(self.p(src)), f"rename {src} refused, yet it is gone"
            return
        if not same:       # links of one file: rename does nothing (POSIX)
            self.names[dst] = self.names.pop(src)
        self.check(dst, f"rename from {src}")

    def link(self, src, dst):
        """os.link, once more after a stat of src if it failed with ENOENT.
        The kernel's FUSE inode can hold nlink 0 for a linked file: a
        GETATTR answered after an unlink of another of its names, and
        applied before that unlink's own nlink drop, counts the unlink
        twice (the reader thread's stat meeting this thread's unlink).
        link(2) then fails with ENOENT without asking the daemon; a stat
        refreshes the count (docs/usage.md)."""
        try:
            os.link(src, dst)
        except FileNotFoundError:
            os.stat(src)
            self.link_retries += 1
            os.link(src, dst)

    def op_link(self):
        src = self.pick()
        dst = self.any_name()
        if not src or dst in self.names:
            return
        try:
            self.link(self.p(src), self.p(dst))
        except OSError as x:
            self.refused(x, f"link {src} {dst}")
            assert not os.path.exists(self.p(dst)), f"link {dst} refused, yet it is there"
            return
        self.names[dst] = self.names[src]
        self.check(dst, f"link to {src}")

    def op_checkpoint(self):
        """torch.save's safe pattern: a temporary name, fsync, rename over,
        fsync of the directory."""
        d = self.rng.choice(self.dirs)
        tmp, dst = f"{d}/tmp", f"{d}/f{self.rng.randrange(NAMES)}"
        size = self.rand_size()
        node = self.names.get(tmp) or Node()   # a refused one's leftover
        try:
            with open(self.p(tmp), "wb", buffering=0) as f:
                node.data.clear()
                self.names[tmp] = node
                data = self.rng.randbytes(size)
                off = 0
                while off < size:
                    # Short near full: the kernel cuts a write whose buffer
                    # is not page-aligned in two requests, and the second
                    # may be refused. The next write then says ENOSPC.
                    n = f.write(data[off:off + MiB])
                    apply_write(node.data, off, data[off:off + n])
                    off += n
                os.fsync(f.fileno())
        except OSError as x:
            self.refused(x, f"checkpoint {tmp}")
            if tmp in self.names:
                self.check(tmp, "refused checkpoint write")
            return
        os.rename(self.p(tmp), self.p(dst))
        self.names[dst] = self.names.pop(tmp)
        fd = os.open(self.p(d), os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        self.check(dst, "checkpoint")

    def op_dir(self):
        """mkdir, rmdir (ENOTEMPTY where the model has names in it), or
        rename of a subdirectory, to a new name or over another (empty:
        else ENOTEMPTY) while its files may still be in writeback."""
        subs = self.dirs[1:]
        r = self.rng.random()
        if r < 0.3 and len(subs) < 4:
            d = f"{self.top}/d{self.ndirs}"
            self.ndirs += 1
            os.mkdir(self.p(d))
            self.dirs.append(d)
            return
        if not subs:
            return
        d = self.rng.choice(subs)
        inside = [k for k in self.names if k.startswith(d + "/")]
        if r < 0.55:
            try:
                os.rmdir(self.p(d))
            except OSError as x:
                assert x.errno == errno.ENOTEMPTY and inside, \
                    f"rmdir {d} ({len(inside)} names in it): {x!r}"
                return
            assert not inside, f"rmdir {d} succeeded with {inside} in it"
            self.dirs.remove(d)
            return
        others = [o for o in subs if o != d]
        if others and self.rng.random() < 0.4:
            dst = self.rng.choice(others)
        else:
            dst = f"{self.top}/d{self.ndirs}"
            self.ndirs += 1
        full = any(k.startswith(dst + "/") for k in self.names)
        try:
            os.rename(self.p(d), self.p(dst))
        except OSError as x:
            assert x.errno == errno.ENOTEMPTY and full, \
                f"rename {d} {dst}: {x!r}"
            return
        assert not full, f"rename {d} over {dst}, which is not empty, succeeded"
        for k in inside:
            self.names[dst + k[len(d):]] = self.names.pop(k)
        self.dirs.remove(d)
        if dst not in self.dirs:
            self.dirs.append(dst)
        if inside:
            self.check(dst + inside[0][len(d):], f"rename of its directory {d}")

    def op_verify(self):
        rel = self.pick()
        if rel:
            self.check(rel, "nothing (a whole-file check)")

    def op_fsync(self):
        rel = self.pick()
        if not rel:
            return
        fd = os.open(self.p(rel), os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def step(self):
        self.ops += 1
        sv = os.statvfs(self.m.dir)
        if self.full or sv.f_bavail * sv.f_frsize < self.floor:
            self.full = max(0, self.full - 1)
            return (self.op_unlink if self.rng.random() < 0.7 else self.op_truncate)()
        ops = [(self.op_create, 20), (self.op_write, 18), (self.op_held, 8),
               (self.op_truncate, 6), (self.op_unlink, 8), (self.op_rename, 10),
               (self.op_link, 4), (self.op_checkpoint, 6), (self.op_verify, 12),
               (self.op_fsync, 4), (self.op_dir, 4)]
        fn = self.rng.choices([o for o, _ in ops], [w for _, w in ops])[0]
        return fn()

    def run(self, deadline, stop, errors):
        try:
            while time.time() < deadline and not stop.is_set():
                self.step()
        except Exception:  # report any failure; the others stop
            errors.append(f"thread {self.wid}, step {self.ops}:\n{traceback.format_exc()}")
            stop.set()
        finally:
            if self.held:
                os.close(self.held[0])
                self.held = None

    def check_all(self, when):
        subs = {d.rsplit("/", 1)[1] for d in self.dirs[1:]}
        for d in self.dirs:
            listed = set(os.listdir(self.p(d)))
            model = {k.rsplit("/", 1)[1] for k in self.names if k.rsplit("/", 1)[0] == d}
            if d == self.top:
                model |= subs
            assert listed == model, (f"{when}: {d} lists {sorted(listed - model)} "
                                     f"not in the model, lacks {sorted(model - listed)}")
        for rel in self.names:
            self.check(rel, when)


def reader(m, deadline, stop, errors):
    """Read and list the threads' files while they change them: no error
    but ENOENT (a name just removed) may come back."""
    rng = random.Random(7)
    n = 0
    try:
        while time.time() < deadline and not stop.is_set():
            path = m.path(f"w{rng.randrange(THREADS)}")
            try:
                while os.path.isdir(path):
                    names = os.listdir(path)
                    if not names:
                        break
                    path = os.path.join(path, rng.choice(names))
                else:
                    with open(path, "rb") as f:
                        while f.read(MiB):
                            n += 1
            except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
                pass    # it moved or went meanwhile
    except Exception:  # report any failure; the others stop
        errors.append(f"the reader, read {n}:\n{traceback.format_exc()}")
        stop.set()


def log_errors(m, warnings=False):
    """The daemon's error lines (its -f log); with warnings, its warning
    lines too (a writer that waits long for space says so in one)."""
    kinds = (": error: ", ": warning: ") if warnings else (": error: ",)
    with open(m.log.name, errors="replace") as f:
        return [ln.rstrip() for ln in f if any(k in ln for k in kinds)]


def run_seed(seed, seconds, device=None):
    args, opts = CONFIGS[seed % len(CONFIGS)]
    if device:
        img = device
        e.zf("mkfs", "--force", img)
    else:
        img = e.image(f"stress{seed}.img", *args)
    m = e.Mount(img, f"mnt{seed}", opts=opts, foreground=True)
    try:
        if device:
            ballast(m)
        rounds(seed, m, img, seconds)
    except AssertionError as x:
        bad = log_errors(m, warnings=True)
        if bad:
            raise AssertionError(f"{x}\nthe daemon's log:\n" + "\n".join(bad[:20])) from x
        raise


def ballast(m):
    """Fill all but BALLAST_LEFT of the file system with one file,
    fsynced: on a device larger than the threads' files, they then meet
    reclaim and ENOSPC as they do on the small emulated ones."""
    st = os.statvfs(m.dir)
    size = st.f_bavail * st.f_frsize - BALLAST_LEFT
    if size < 64 * MiB:
        return
    size -= size % MiB
    chunk = bytes(range(256)) * (MiB // 256)
    with open(m.path("ballast"), "wb") as f:
        for _ in range(size // MiB):
            f.write(chunk)
        os.fsync(f.fileno())
    e.log(f"ballast: {size // MiB} MiB, leaving {BALLAST_LEFT // MiB} MiB")


def rounds(seed, m, img, seconds):
    st = os.statvfs(m.dir)
    cap = st.f_blocks * st.f_frsize
    rng = random.Random(seed)
    fill = rng.uniform(FILL_LOW, FILL_HIGH)
    workers = [Worker(m, w, seed, int(cap * (1 - fill))) for w in range(THREADS)]
    n = 3
    t_end = time.time() + seconds
    for r in range(n):
        stop, errors = threading.Event(), []
        deadline = time.time() + max(2.0, (t_end - time.time()) / (n - r) - 2)
        threads = [threading.Thread(target=w.run, args=(deadline, stop, errors))
                   for w in workers]
        threads.append(threading.Thread(target=reader, args=(m, deadline, stop, errors)))
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        # The first failure; those after it are most often its consequences.
        assert not errors, (f"seed {seed}, round {r}: {errors[0]}"
                            f"({len(errors) - 1} more threads failed)")
        for w in workers:
            w.check_all(f"round {r}, before the unmount")
        live = sum(w.live() for w in workers)
        sv = os.statvfs(m.dir)
        e.log(f"seed {seed} round {r}: {sum(w.ops for w in workers)} steps, "
              f"{sum(w.enospc for w in workers)} refused with ENOSPC, "
              f"{sum(w.link_retries for w in workers)} links retried, "
              f"{live / MiB:.1f} MiB live of {cap / MiB:.0f} (df: "
              f"{sv.f_bavail * sv.f_frsize / MiB:.1f} MiB free)")
        m.umount()
        e.fsck(img)
        m.mount(foreground=True)
        for w in workers:
            w.check_all(f"round {r}, after a remount")
    m.umount()
    e.fsck(img)
    st = json.loads(e.zf("stat", img, "--json").stdout)
    e.log(f"seed {seed}: reclaim wrote {st['gc_bytes_written'] / MiB:.1f} MiB, "
          f"{st['resets_total']} zone resets, write amplification "
          f"{st['write_amplification']}")
    bad = log_errors(m)
    assert not bad, f"seed {seed}: the daemon logged errors:\n" + "\n".join(bad[:20])


def main():
    budget = float(os.environ.get("E2E_STRESS_SECONDS", "45"))
    args = sys.argv[1:]
    device = None
    if args[:1] == ["--device"] and len(args) > 1:
        device = args[1]
        args = args[2:]
    seeds = [int(a) for a in args] or ([1] if device else [1, 2, 3])
    e.TIMEOUT = max(e.TIMEOUT, int(budget) + 30 * len(seeds) + 120)
    e.begin("threads writing, overwriting, truncating, renaming, linking and deleting "
            "files at 90-100% full against models: ENOSPC refuses whole operations, "
            "nothing is lost, across remounts, fsck clean")
    t_end = time.time() + budget

    def one(seed):
        def run():
            left = max(6.0, (t_end - time.time()) / (len(seeds) - seeds.index(seed)))
            run_seed(seed, left, device)
        return run

    e.run_tests([(f"seed{s}", one(s)) for s in seeds], picked=[])


if __name__ == "__main__":
    main()
