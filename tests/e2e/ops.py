#!/usr/bin/python3
"""tests/e2e/ops.py: each file system operation through a real mount, with
its error cases asserted by errno, as ext4 answers them.

Run by meson (ZONEFUSE set); arguments pick tests by name.
"""
import ctypes
import errno
import json
import mmap
import os
import stat
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True     # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib as e  # noqa: E402
from e2elib import expect_errno  # noqa: E402

libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD = -100
RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2
FALLOC_FL_KEEP_SIZE = 1
FALLOC_FL_PUNCH_HOLE = 2
SEEK_DATA = getattr(os, "SEEK_DATA", 3)
SEEK_HOLE = getattr(os, "SEEK_HOLE", 4)
USER = 12345          # a uid and gids no one else uses
GROUP = 12346
OTHER_GROUP = 12347

M = None              # the plain mount most tests use
n = 0


def fresh(name):
    """A new empty directory for one test on the plain mount."""
    global n
    n += 1
    d = M.path(f"{name}.{n}")
    os.mkdir(d)
    return d


def renameat2(old, new, flags):
    if libc.renameat2(AT_FDCWD, old.encode(), AT_FDCWD, new.encode(),
                      ctypes.c_uint(flags)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), old)


UTIME_NOW = (1 << 30) - 1
UTIME_OMIT = (1 << 30) - 2


class Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def utimens(path, atime, mtime):
    """utimensat(2) with UTIME_NOW / UTIME_OMIT or whole seconds."""
    ts = (Timespec * 2)()
    for i, t in enumerate((atime, mtime)):
        if t in (UTIME_NOW, UTIME_OMIT):
            ts[i].tv_sec, ts[i].tv_nsec = 0, t
        else:
            ts[i].tv_sec, ts[i].tv_nsec = t, 0
    if libc.utimensat(AT_FDCWD, path.encode(), ts, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), path)


def fallocate(fd, mode, off, length):
    libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    if libc.fallocate(fd, mode, off, length) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def write_file(path, data, mode=0o644):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def read_file(path):
    with open(path, "rb") as f:
        return f.read()


def fresh_stat(path):
    """stat after the kernel's attribute cache (1 s) cannot answer."""
    return os.stat(path)


# ---- lookup, create, open ---------------------------------------------------

def t_create_open():
    d = fresh("create")
    p = os.path.join(d, "f")
    fd = os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o640)
    os.write(fd, b"hello world")
    os.close(fd)
    st = os.stat(p)
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o640, oct(st.st_mode)
    assert st.st_size == 11 and st.st_nlink == 1 and st.st_uid == 0
    expect_errno(errno.EEXIST, os.open, p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    expect_errno(errno.ENOENT, os.open, os.path.join(d, "missing"), os.O_RDONLY)
    expect_errno(errno.ENOENT, os.open, os.path.join(d, "nodir", "f"), os.O_CREAT | os.O_WRONLY)
    expect_errno(errno.ENOTDIR, os.open, os.path.join(p, "f"), os.O_CREAT | os.O_WRONLY)
    expect_errno(errno.EISDIR, os.open, d, os.O_WRONLY)
    expect_errno(errno.ENOTDIR, os.open, p, os.O_RDONLY | os.O_DIRECTORY)
    # O_TRUNC
    fd = os.open(p, os.O_WRONLY | os.O_TRUNC)
    assert os.fstat(fd).st_size == 0
    os.write(fd, b"abc")
    os.close(fd)
    assert read_file(p) == b"abc"
    # O_APPEND: every write at the end, whatever the offset.
    fd = os.open(p, os.O_WRONLY | os.O_APPEND)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, b"def")
    os.pwrite(fd, b"ghi", 0)     # Linux: O_APPEND wins over the offset
    os.close(fd)
    assert read_file(p) == b"abcdefghi", read_file(p)
    # O_RDWR read back through the same descriptor, and pread/pwrite.
    fd = os.open(p, os.O_RDWR)
    os.pwrite(fd, b"XY", 4)
    assert os.pread(fd, 100, 0) == b"abcdXYghi"
    assert os.pread(fd, 100, 9) == b""
    assert os.pread(fd, 100, 1000) == b""
    os.close(fd)
    # Create on an existing name without O_EXCL opens it.
    fd = os.open(p, os.O_CREAT | os.O_WRONLY, 0o600)
    os.close(fd)
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o640
    # mknod of a fifo; of a device: EPERM is not asked of root here.
    os.mkfifo(os.path.join(d, "fifo"), 0o600)
    assert stat.S_ISFIFO(os.stat(os.path.join(d, "fifo")).st_mode)
    assert sorted(os.listdir(d)) == ["f", "fifo"]


def t_o_direct():
    d = fresh("direct")
    p = os.path.join(d, "f")
    size = 64 * 1024
    buf = mmap.mmap(-1, size)
    pattern = os.urandom(size)
    buf[:] = pattern
    fd = os.open(p, os.O_CREAT | os.O_RDWR | os.O_DIRECT, 0o644)
    try:
        assert os.pwritev(fd, [buf], 0) == size
        assert os.pwritev(fd, [buf], size * 3) == size   # past EOF: a hole
        out = mmap.mmap(-1, size)
        assert os.preadv(fd, [out], 0) == size
        assert out[:] == pattern
        assert os.preadv(fd, [out], size * 3) == size
        assert out[:] == pattern
    finally:
        os.close(fd)
    data = read_file(p)
    assert len(data) == size * 4
    assert data[:size] == pattern and data[3 * size:] == pattern
    assert data[size:3 * size] == bytes(2 * size)


def open_uncached(p, first):
    """Open p write-only, truncated, write first, and open p read-only:
    both uncached (a shared mapping of the reader is refused, ENODEV),
    once the daemon has the earlier readers' opens released. The kernel
    sends RELEASE after close() returns, and a writer opened before it
    lands shares the file with that reader: cached. Seen on a TCG guest
    beside stress-ng, 2026-12-04. Returns (writer, reader)."""
    t0 = time.time()
    while True:
        fd = os.open(p, os.O_WRONLY | os.O_TRUNC)
        r = -1
        uncached = False
        try:
            assert os.write(fd, first) == len(first)
            r = os.open(p, os.O_RDONLY)
            try:
                mmap.mmap(r, 1, mmap.MAP_SHARED, mmap.PROT_READ).close()
            except OSError as x:
                if x.errno != errno.ENODEV:
                    raise
                uncached = True
        finally:
            if not uncached:
                if r >= 0:
                    os.close(r)
                os.close(fd)
        if uncached:
            return fd, r
        if time.time() - t0 > 10:
            raise AssertionError("a write-only open stayed cached for 10 s "
                                 "after the last reader closed")
        time.sleep(0.05)


def open_mapped(p, n):
    """Open p read-only and map its first n bytes shared, once the daemon
    has the uncached writers' opens released: the kernel sends RELEASE
    after close() returns, and a reader opened before it lands is
    uncached too (no shared mapping: ENODEV). Seen on a TCG guest under
    load, 2026-12-02."""
    t0 = time.time()
    while True:
        r = os.open(p, os.O_RDONLY)
        try:
            return r, mmap.mmap(r, n, mmap.MAP_SHARED, mmap.PROT_READ)
        except OSError as x:
            os.close(r)
            if x.errno != errno.ENODEV or time.time() - t0 > 10:
                raise
        time.sleep(0.05)


def t_async_direct_write():
    # Issue 23, item 6: a buffered read after asynchronous O_DIRECT writes
    # (io_uring) returns the new bytes while readers of their own run
    # (tests/e2e/dio_race.c says how). The kernel drops the pages such a
    # write replaces only if the write completes before the syscall
    # returns: zonefuse turns FUSE's asynchronous direct I/O off at INIT
    # (fuse_ll.c). Caught on Debian's 6.1 under TCG (tests/real/run.sh);
    # 6.18 here never showed it.
    exe = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(e.ZONEFUSE))),
                       "tests", "e2e", "dio_race")
    assert os.access(exe, os.X_OK), f"{exe} is not built (meson builds it with the tests)"
    rounds = os.environ.get("E2E_DIO_ROUNDS", "4")
    r = subprocess.run([exe, M.dir + "/dio-race", "32", rounds],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=600)
    assert r.returncode == 0, f"dio_race exited {r.returncode}:\n{r.stdout}"
    e.log(r.stdout.strip().splitlines()[-1])
    os.unlink(M.dir + "/dio-race")


def t_uncached_writer():
    """A write-only open of a file no one has open bypasses the page cache
    (ZFS_OPEN_NOCACHE): every reader sees its writes, whenever it opened."""
    d = fresh("uncached")
    p = os.path.join(d, "f")
    page = 4096
    write_file(p, b"A" * 2 * page)
    assert read_file(p) == b"A" * 2 * page      # now in the page cache

    # Cached pages from an earlier reader are dropped after uncached writes,
    # also when size and mtime do not tell the kernel that the data changed
    # (rsync --inplace --times).
    st = os.stat(p)
    fd = os.open(p, os.O_WRONLY)
    assert os.pwrite(fd, b"B" * page, 0) == page
    os.close(fd)
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert read_file(p) == b"B" * page + b"A" * page

    # A reader opened while the writer is: uncached too, so it sees each
    # write at once, rewrites and appends (a partial last page) alike.
    fd, r = open_uncached(p, b"x" * 100)
    try:
        assert os.pread(r, 1000, 0) == b"x" * 100
        assert os.write(fd, b"y" * 100) == 100
        assert os.pread(r, 1000, 0) == b"x" * 100 + b"y" * 100
        assert os.pwrite(fd, b"z" * 50, 0) == 50
        assert os.pread(r, 1000, 0) == b"z" * 50 + b"x" * 50 + b"y" * 100
        # A shared mapping needs the page cache: refused while uncached.
        expect_errno(errno.ENODEV, mmap.mmap, r, 200, mmap.MAP_SHARED,
                     mmap.PROT_READ)
        m = mmap.mmap(r, 200, mmap.MAP_PRIVATE, mmap.PROT_READ)
        assert m[:] == b"z" * 50 + b"x" * 50 + b"y" * 100
        m.close()
    finally:
        os.close(r)
        os.close(fd)
    assert read_file(p) == b"z" * 50 + b"x" * 50 + b"y" * 100

    # A writer that opens a file someone has open goes through the page
    # cache, which keeps the open reader and its shared mapping current.
    r, m = open_mapped(p, 200)
    try:
        assert m[:50] == b"z" * 50
        fd = os.open(p, os.O_WRONLY)
        assert os.pwrite(fd, b"w" * 50, 0) == 50
        os.close(fd)
        assert m[:50] == b"w" * 50
        assert os.pread(r, 100, 0) == b"w" * 50 + b"x" * 50
        m.close()
    finally:
        os.close(r)
    assert read_file(p) == b"w" * 50 + b"x" * 50 + b"y" * 100


def read_ahead_kb(path):
    """The kernel's readahead of the mount on path: its bdi's read_ahead_kb."""
    dev = os.stat(path).st_dev
    with open(f"/sys/class/bdi/{os.major(dev)}:{os.minor(dev)}/read_ahead_kb") as f:
        return int(f.read())


def t_mount_options():
    """The mount raises its readahead from the kernel's 128 KiB (default
    4096 KiB, -o readahead_kb=N) on a mount point with an escaped name too;
    numeric options that are out of range or not whole numbers are refused
    before anything is mounted."""
    assert read_ahead_kb(M.dir) == 4096
    img = e.image("ra.img", "256M", "4M")
    data = os.urandom(3 << 20)
    for kb in (512, 0):
        m = e.Mount(img, f"ra mnt {kb}", f"readahead_kb={kb}")
        try:
            assert read_ahead_kb(m.dir) == kb
            write_file(m.path("f"), data)
            subprocess.run(["sh", "-c", "echo 3 > /proc/sys/vm/drop_caches"], check=True)
            assert read_file(m.path("f")) == data
        finally:
            m.umount()
    d = os.path.join(e.WORK, "ra-bad")
    os.mkdir(d)
    # mount(8)'s exit status for a usage error: 1 (docs/usage.md).
    for bad, code, why in (("readahead_kb=65537", 1, "at most 65536"),
                           ("readahead_kb=4M", 1, "'4M' is not a number"),
                           ("stage_mb=1G", 1, "'1G' is not a number"),
                           ("threads=", 1, "'' is not a number"),
                           ("commit=-1", 1, "'-1' is not a number")):
        r = e.zf("mount", img, d, "-o", bad, check=False)
        if os.path.ismount(d):
            subprocess.run(["umount", d])
            raise AssertionError(f"-o {bad} mounted")
        assert r.returncode == code, f"-o {bad}: exit {r.returncode}"
        assert why in r.stderr, f"-o {bad} said: {r.stderr!r}"
    e.fsck(img)


# ---- mkdir, rmdir, unlink -------------------------------------------------------

def t_mkdir_rmdir_unlink():
    d = fresh("dirs")
    sub = os.path.join(d, "sub")
    nlink0 = os.stat(d).st_nlink
    os.mkdir(sub, 0o750)
    st = os.stat(sub)
    assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o750
    assert st.st_nlink == 2, st.st_nlink
    assert os.stat(d).st_nlink == nlink0 + 1
    expect_errno(errno.EEXIST, os.mkdir, sub)
    write_file(os.path.join(sub, "f"), b"x")
    expect_errno(errno.ENOTEMPTY, os.rmdir, sub)
    expect_errno(errno.EISDIR, os.unlink, sub)
    expect_errno(errno.ENOTDIR, os.rmdir, os.path.join(sub, "f"))
    expect_errno(errno.ENOTDIR, os.mkdir, os.path.join(sub, "f", "x"))
    expect_errno(errno.ENOENT, os.rmdir, os.path.join(d, "missing"))
    expect_errno(errno.ENOENT, os.unlink, os.path.join(d, "missing"))
    expect_errno(errno.ENOENT, os.mkdir, os.path.join(d, "no", "such"))
    expect_errno(errno.EINVAL, os.rmdir, os.path.join(sub, "."))
    expect_errno(errno.ENOTEMPTY, os.rmdir, os.path.join(sub, ".."))
    os.unlink(os.path.join(sub, "f"))
    expect_errno(errno.ENOENT, os.stat, os.path.join(sub, "f"))
    os.rmdir(sub)
    expect_errno(errno.ENOENT, os.stat, sub)
    assert os.stat(d).st_nlink == nlink0
    assert os.listdir(d) == []


def traced_mount(name):
    """A new image mounted in the foreground with -o debug, whose log
    names each request the daemon answers (logged())."""
    img = e.image(f"{name}.img", "256M", "4M")
    return img, e.Mount(img, f"mnt-{name}", "debug", foreground=True)


def logged(mnt, *texts):
    """How many lines of mnt's debug log contain all of texts."""
    with open(mnt.log.name) as f:
        return sum(1 for line in f if all(t in line for t in texts))


def placed(path):
    """Bytes of path's data in zones (user.zonefuse.extents lists only
    those: staged data has no extent yet)."""
    out = os.getxattr(path, "user.zonefuse.extents").decode()
    return sum(int(line.split()[5]) for line in out.splitlines() if line.strip())


def wait_placed(path, want, limit=10):
    t0 = time.time()
    while placed(path) != want:
        assert time.time() - t0 < limit, \
            f"{path}: {placed(path)} bytes in zones, not {want}, after {limit} s"
        time.sleep(0.02)


def t_close_writes_out():
    """The last close of a file that its open created, or truncated to
    nothing and wrote again, starts writing the data to zones; data that a
    later open appends stays staged to gather (until half a commit interval
    idle: 30 s here), as does that of a file still open."""
    img = e.image("close.img", "256M", "4M")
    mnt = e.Mount(img, "mnt-close", "commit=60")
    try:
        p = mnt.path("new")
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, b"n" * 65536)
        time.sleep(0.5)
        assert placed(p) == 0, placed(p)                    # still open
        os.close(fd)
        wait_placed(p, 65536)

        with open(p, "ab") as f:
            f.write(b"a" * 4096)
        time.sleep(1)
        assert placed(p) == 65536, placed(p)
        assert read_file(p) == b"n" * 65536 + b"a" * 4096

        write_file(p, b"r" * 8192)          # O_TRUNC of a non-empty file
        wait_placed(p, 8192)
        assert read_file(p) == b"r" * 8192

        q = mnt.path("tree", "shard")                 # a new file in a new dir
        os.mkdir(mnt.path("tree"))
        write_file(q, b"s" * 100)
        wait_placed(q, 100)
        assert read_file(q) == b"s" * 100
    finally:
        mnt.umount()
    e.fsck(img)


def t_sent_at_once():
    """A file fsynced after its one write has its next write sent to zones
    at once, without waiting for the fsync expected after it; a second
    write before that fsync stays staged, and so does the write after an
    fsync of two writes (commit=60: nothing idle is written out in the
    test). Counted in the stats' writes_sent_at_once."""
    img = e.image("sent.img", "256M", "4M")
    mnt = e.Mount(img, "mnt-sent", "commit=60")
    try:
        p = mnt.path("log")
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, b"1" * 4096)
            os.fsync(fd)
            assert placed(p) == 4096, placed(p)
            os.write(fd, b"2" * 4096)                   # sent at once
            wait_placed(p, 8192)
            os.write(fd, b"3" * 4096)                   # a second write: staged
            os.write(fd, b"4" * 4096)
            time.sleep(1)
            assert placed(p) == 8192, placed(p)
            os.fsync(fd)
            assert placed(p) == 16384, placed(p)
            os.write(fd, b"5" * 4096)                   # after two writes: staged
            time.sleep(1)
            assert placed(p) == 16384, placed(p)
            os.fsync(fd)
        finally:
            os.close(fd)
        st = json.loads(os.getxattr(mnt.dir, "user.zonefuse.stats"))
        assert st["writes_sent_at_once"] == 1, st["writes_sent_at_once"]
        assert read_file(p) == b"".join(bytes([c]) * 4096 for c in b"12345")
    finally:
        mnt.umount()
    e.fsck(img)


def t_sent_at_once_after_open():
    """While the files opened for writing lately were fsynced after their
    first write (four more of them than of files written again or closed
    unsynced), the first write after an open goes to zones at once: the
    first four new files' writes stay staged until their fsync, the
    fifth's does not wait for it, and files written twice before their
    fsync (their first write sent, the second staged) turn the vote back
    (commit=60)."""
    img = e.image("open.img", "256M", "4M")
    mnt = e.Mount(img, "mnt-open", "commit=60")

    def write_one(name, fsync, second=False):
        p = mnt.path(name)
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, name.encode() * 4096)
            if second:
                os.write(fd, b"+" * 4096)
            fsync(p)
            os.fsync(fd)
        finally:
            os.close(fd)

    def staged(p, want=0):
        wait_placed(p, want)
        time.sleep(1)
        assert placed(p) == want, placed(p)

    try:
        for name in ("v0", "v1", "v2", "v3"):               # votes 0 to 3
            write_one(name, staged)
        write_one("s0", lambda p: wait_placed(p, 8192))     # 4: sent
        write_one("w0", lambda p: staged(p, 8192), True)    # 5, then 4
        write_one("w1", lambda p: staged(p, 8192), True)    # 4, then 3
        write_one("s1", staged)                             # 3: staged
        st = json.loads(os.getxattr(mnt.dir, "user.zonefuse.stats"))
        assert st["writes_sent_at_once"] == 3, st["writes_sent_at_once"]
        for name in ("v0", "s0", "s1"):
            assert read_file(mnt.path(name)) == name.encode() * 4096, name
        assert read_file(mnt.path("w1")) == b"w1" * 4096 + b"+" * 4096
    finally:
        mnt.umount()
    e.fsck(img)


def t_negative_lookup():
    """A name that is not there is cached like one that is: asked for again,
    the kernel answers ENOENT without a lookup; created, made a directory,
    a symlink, a hard link or a rename target, it exists at once; removed,
    it is gone at once. Counted in the daemon's debug log."""
    img, mnt = traced_mount("neg")

    def lookups(name):
        return logged(mnt, "debug: lookup ", f" name={name} -> ")

    try:
        d = mnt.path("d")
        os.mkdir(d)
        p = os.path.join(d, "probe")
        for _ in range(3):
            expect_errno(errno.ENOENT, os.stat, p)
        expect_errno(errno.ENOENT, os.open, p, os.O_RDONLY)
        assert lookups("probe") == 1, lookups("probe")
        write_file(p, b"here")
        assert read_file(p) == b"here"
        assert lookups("probe") == 1, lookups("probe")

        makers = [("dir", os.mkdir),
                  ("sym", lambda q: os.symlink("probe", q)),
                  ("hard", lambda q: os.link(p, q)),
                  ("moved", lambda q: os.rename(p, q))]
        for name, make in makers:
            q = os.path.join(d, name)
            expect_errno(errno.ENOENT, os.lstat, q)
            make(q)
            assert os.path.lexists(q), name
        assert os.path.isdir(os.path.join(d, "dir"))
        assert read_file(os.path.join(d, "hard")) == b"here"
        assert read_file(os.path.join(d, "moved")) == b"here"
        expect_errno(errno.ENOENT, os.stat, p)              # renamed away
        assert os.readlink(os.path.join(d, "sym")) == "probe"

        os.unlink(os.path.join(d, "hard"))
        expect_errno(errno.ENOENT, os.stat, os.path.join(d, "hard"))
        os.rmdir(os.path.join(d, "dir"))
        expect_errno(errno.ENOENT, os.stat, os.path.join(d, "dir"))
        assert sorted(os.listdir(d)) == ["moved", "sym"]

        # Cached absences do not outlive the mount: the new one looks.
        mnt.umount()
        mnt.mount(foreground=True)
        before = lookups("probe")
        expect_errno(errno.ENOENT, os.stat, p)
        assert lookups("probe") == before + 1
        assert read_file(os.path.join(d, "moved")) == b"here"
    finally:
        mnt.umount()
    e.fsck(img)


def t_readdir_cache():
    """The kernel keeps a directory's listing: listed again unchanged, it
    asks the daemon nothing; after any change through the mount (create,
    unlink, mkdir, rmdir, link, symlink, rename in, out and within), the
    next listing is the new one. Counted in the daemon's debug log."""
    img, mnt = traced_mount("rdc")

    def reads():
        return logged(mnt, "debug: readdir")

    try:
        d = mnt.path("d")
        other = mnt.path("other")
        os.mkdir(d)
        os.mkdir(other)
        names = {f"f{i:04d}" for i in range(300)}    # several requests' worth
        for name in names:
            write_file(os.path.join(d, name), b"")
        assert set(os.listdir(d)) == names
        before = reads()
        assert before >= 2, before
        for _ in range(3):
            assert set(os.listdir(d)) == names
            assert {x.name for x in os.scandir(d)} == names
        assert reads() == before, (reads(), before)

        write_file(os.path.join(other, "o"), b"o")
        changes = [
            (lambda: write_file(os.path.join(d, "new"), b"n"), {"new"}, set()),
            (lambda: os.unlink(os.path.join(d, "f0000")), set(), {"f0000"}),
            (lambda: os.mkdir(os.path.join(d, "sub")), {"sub"}, set()),
            (lambda: os.rmdir(os.path.join(d, "sub")), set(), {"sub"}),
            (lambda: os.link(os.path.join(d, "new"), os.path.join(d, "hard")), {"hard"}, set()),
            (lambda: os.symlink("new", os.path.join(d, "sym")), {"sym"}, set()),
            (lambda: os.rename(os.path.join(d, "f0001"), os.path.join(d, "g0001")),
             {"g0001"}, {"f0001"}),
            (lambda: os.rename(os.path.join(other, "o"), os.path.join(d, "o")), {"o"}, set()),
            (lambda: os.rename(os.path.join(d, "f0002"), os.path.join(other, "f0002")),
             set(), {"f0002"}),
        ]
        for change, added, removed in changes:
            change()
            names = (names | added) - removed
            assert set(os.listdir(d)) == names, (added, removed)
        assert set(os.listdir(other)) == {"f0002"}

        mnt.umount()
        mnt.mount(foreground=True)
        assert set(os.listdir(d)) == names
    finally:
        mnt.umount()
    e.fsck(img)


def t_symlink_cache():
    """The kernel keeps a symlink's target (it never changes): resolving a
    `latest` link again asks the daemon nothing, and a link renamed over
    it (the atomic way to move `latest`) is followed at once."""
    img, mnt = traced_mount("sym")

    def readlinks():
        return logged(mnt, "debug: readlink ")

    try:
        for name in ("ckpt1", "ckpt2"):
            write_file(mnt.path(name), name.encode())
        latest = mnt.path("latest")
        os.symlink("ckpt1", latest)
        for _ in range(3):
            assert read_file(latest) == b"ckpt1"
            assert os.readlink(latest) == "ckpt1"
            assert os.stat(latest).st_size == 5
        assert readlinks() == 1, readlinks()

        os.symlink("ckpt2", mnt.path("latest.tmp"))
        os.rename(mnt.path("latest.tmp"), latest)
        assert os.readlink(latest) == "ckpt2"
        assert read_file(latest) == b"ckpt2"
        os.unlink(latest)
        expect_errno(errno.ENOENT, os.readlink, latest)

        os.symlink("ckpt1", latest)
        mnt.umount()
        mnt.mount(foreground=True)
        assert read_file(latest) == b"ckpt1"
    finally:
        mnt.umount()
    e.fsck(img)


# ---- rename ----------------------------------------------------------------------

def t_rename():
    d = fresh("rename")
    a, b = os.path.join(d, "a"), os.path.join(d, "b")
    os.mkdir(a)
    os.mkdir(b)
    f1, f2 = os.path.join(a, "f1"), os.path.join(a, "f2")
    write_file(f1, b"one")
    write_file(f2, b"two")
    ino1 = os.stat(f1).st_ino
    # Replace a file: the target name now has the source's inode and data.
    os.rename(f1, f2)
    expect_errno(errno.ENOENT, os.stat, f1)
    assert os.stat(f2).st_ino == ino1 and read_file(f2) == b"one"
    # Across parents.
    os.rename(f2, os.path.join(b, "g"))
    assert read_file(os.path.join(b, "g")) == b"one" and os.listdir(a) == []
    # Replace an empty directory; not a non-empty one.
    os.mkdir(os.path.join(a, "d1"))
    os.mkdir(os.path.join(a, "d2"))
    write_file(os.path.join(a, "d1", "x"), b"x")
    nl = os.stat(a).st_nlink
    os.rename(os.path.join(a, "d1"), os.path.join(a, "d2"))
    assert os.listdir(os.path.join(a, "d2")) == ["x"]
    assert os.stat(a).st_nlink == nl - 1, (os.stat(a).st_nlink, nl)
    os.mkdir(os.path.join(a, "d3"))
    expect_errno(errno.ENOTEMPTY, os.rename, os.path.join(a, "d3"), os.path.join(a, "d2"))
    # Kinds that do not go over each other.
    write_file(os.path.join(a, "file"), b"f")
    expect_errno(errno.EISDIR, os.rename, os.path.join(a, "file"), os.path.join(a, "d3"))
    expect_errno(errno.ENOTDIR, os.rename, os.path.join(a, "d3"), os.path.join(a, "file"))
    # A directory into its own subtree.
    os.makedirs(os.path.join(a, "d3", "s1", "s2"))
    expect_errno(errno.EINVAL, os.rename, os.path.join(a, "d3"), os.path.join(a, "d3", "s1", "s2", "x"))
    expect_errno(errno.EINVAL, os.rename, os.path.join(a, "d3"), os.path.join(a, "d3", "y"))
    # A directory across parents: the link counts of both parents follow.
    na, nb = os.stat(a).st_nlink, os.stat(b).st_nlink
    os.rename(os.path.join(a, "d3"), os.path.join(b, "d3"))
    assert os.stat(a).st_nlink == na - 1 and os.stat(b).st_nlink == nb + 1
    assert os.path.isdir(os.path.join(b, "d3", "s1", "s2"))
    os.stat(os.path.join(b, "d3", "s1", ".."))
    # Missing source; same name (no-op).
    expect_errno(errno.ENOENT, os.rename, os.path.join(a, "missing"), os.path.join(a, "z"))
    os.rename(os.path.join(a, "file"), os.path.join(a, "file"))
    assert read_file(os.path.join(a, "file")) == b"f"
    # RENAME_NOREPLACE
    write_file(os.path.join(a, "n1"), b"n1")
    write_file(os.path.join(a, "n2"), b"n2")
    expect_errno(errno.EEXIST, renameat2, os.path.join(a, "n1"), os.path.join(a, "n2"), RENAME_NOREPLACE)
    renameat2(os.path.join(a, "n1"), os.path.join(a, "n3"), RENAME_NOREPLACE)
    assert read_file(os.path.join(a, "n3")) == b"n1"
    # RENAME_EXCHANGE: two files; a file and a directory across parents.
    renameat2(os.path.join(a, "n2"), os.path.join(a, "n3"), RENAME_EXCHANGE)
    assert read_file(os.path.join(a, "n2")) == b"n1" and read_file(os.path.join(a, "n3")) == b"n2"
    na, nb = os.stat(a).st_nlink, os.stat(b).st_nlink
    renameat2(os.path.join(a, "n2"), os.path.join(b, "d3"), RENAME_EXCHANGE)
    assert os.path.isdir(os.path.join(a, "n2")) and read_file(os.path.join(b, "d3")) == b"n1"
    assert os.path.isdir(os.path.join(a, "n2", "s1"))
    assert os.stat(a).st_nlink == na + 1 and os.stat(b).st_nlink == nb - 1, \
        (os.stat(a).st_nlink, na, os.stat(b).st_nlink, nb)
    expect_errno(errno.ENOENT, renameat2, os.path.join(a, "n3"), os.path.join(a, "nothing"), RENAME_EXCHANGE)
    expect_errno(errno.EINVAL, renameat2, os.path.join(a, "n3"), os.path.join(a, "n4"),
                 RENAME_EXCHANGE | RENAME_NOREPLACE)
    # Exchange a directory with its own subdirectory.
    expect_errno(errno.EINVAL, renameat2, os.path.join(a, "n2"), os.path.join(a, "n2", "s1"), RENAME_EXCHANGE)


# ---- link, symlink, readlink --------------------------------------------------------

def t_links():
    d = fresh("links")
    f = os.path.join(d, "f")
    write_file(f, b"data")
    os.link(f, os.path.join(d, "h"))
    st = os.stat(f)
    assert st.st_nlink == 2 and os.stat(os.path.join(d, "h")).st_ino == st.st_ino
    expect_errno(errno.EEXIST, os.link, f, os.path.join(d, "h"))
    expect_errno(errno.EPERM, os.link, d, os.path.join(d, "dirlink"))
    expect_errno(errno.ENOENT, os.link, os.path.join(d, "missing"), os.path.join(d, "x"))
    os.unlink(f)
    assert os.stat(os.path.join(d, "h")).st_nlink == 1
    assert read_file(os.path.join(d, "h")) == b"data"
    # Symlinks: relative, absolute, dangling, long, to a directory.
    os.symlink("h", os.path.join(d, "s"))
    assert os.readlink(os.path.join(d, "s")) == "h"
    assert read_file(os.path.join(d, "s")) == b"data"
    lst = os.lstat(os.path.join(d, "s"))
    assert stat.S_ISLNK(lst.st_mode) and lst.st_size == 1
    os.symlink("/nonexistent/target", os.path.join(d, "dangling"))
    expect_errno(errno.ENOENT, os.stat, os.path.join(d, "dangling"))
    assert os.readlink(os.path.join(d, "dangling")) == "/nonexistent/target"
    long_target = "x/" * 2000 + "end"          # 4003 bytes
    os.symlink(long_target, os.path.join(d, "long"))
    assert os.readlink(os.path.join(d, "long")) == long_target
    os.symlink(".", os.path.join(d, "dot"))
    assert os.path.isdir(os.path.join(d, "dot"))
    expect_errno(errno.EEXIST, os.symlink, "y", os.path.join(d, "s"))
    expect_errno(errno.EINVAL, os.readlink, os.path.join(d, "h"))
    expect_errno(errno.ENOENT, os.readlink, os.path.join(d, "missing"))
    # A hard link to a symlink is a link to the symlink itself.
    os.link(os.path.join(d, "s"), os.path.join(d, "s2"), follow_symlinks=False)
    assert os.readlink(os.path.join(d, "s2")) == "h"
    assert os.lstat(os.path.join(d, "s2")).st_nlink == 2
    # Symlink loops.
    os.symlink("loop2", os.path.join(d, "loop1"))
    os.symlink("loop1", os.path.join(d, "loop2"))
    expect_errno(errno.ELOOP, os.stat, os.path.join(d, "loop1"))


def t_names():
    d = fresh("names")
    ok = "n" * 255
    bad = "n" * 256
    write_file(os.path.join(d, ok), b"ok")
    assert os.listdir(d) == [ok]
    assert read_file(os.path.join(d, ok)) == b"ok"
    for fn, args in [
        (os.open, (os.path.join(d, bad), os.O_CREAT | os.O_WRONLY)),
        (os.mkdir, (os.path.join(d, bad),)),
        (os.symlink, ("t", os.path.join(d, bad))),
        (os.link, (os.path.join(d, ok), os.path.join(d, bad))),
        (os.rename, (os.path.join(d, ok), os.path.join(d, bad))),
        (os.stat, (os.path.join(d, bad),)),
        (os.unlink, (os.path.join(d, bad),)),
    ]:
        expect_errno(errno.ENAMETOOLONG, fn, *args)
    # Names are bytes: any byte but '/' and NUL.
    odd = b"\xff\xfe name with spaces\tand\nnewline"
    write_file(os.path.join(d.encode(), odd), b"odd")
    assert odd in os.listdir(d.encode())
    for name in ["missing", "missing/deeper"]:
        expect_errno(errno.ENOENT, os.stat, os.path.join(d, name))
        expect_errno(errno.ENOENT, os.lstat, os.path.join(d, name))
    expect_errno(errno.ENOENT, os.chmod, os.path.join(d, "missing"), 0o600)
    expect_errno(errno.ENOENT, os.truncate, os.path.join(d, "missing"), 0)
    expect_errno(errno.ENOENT, os.listdir, os.path.join(d, "missing"))


# ---- setattr --------------------------------------------------------------------------

def t_setattr():
    d = fresh("setattr")
    p = os.path.join(d, "f")
    write_file(p, b"A" * 10000)
    os.chmod(p, 0o4755)
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o4755
    os.chmod(p, 0o600)
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o600
    os.chown(p, 1234, 5678)
    st = os.stat(p)
    assert (st.st_uid, st.st_gid) == (1234, 5678)
    os.chown(p, -1, 42)
    st = os.stat(p)
    assert (st.st_uid, st.st_gid) == (1234, 42)
    os.chown(p, 0, 0)
    # chown of an executable setuid file drops setuid (and setgid with g+x).
    os.chmod(p, 0o6755)
    os.chown(p, 1, 1)
    assert stat.S_IMODE(os.stat(p).st_mode) & 0o6000 == 0, oct(os.stat(p).st_mode)
    os.chown(p, 0, 0)
    # utime with nanoseconds, then "now".
    os.utime(p, ns=(1_000_000_123, 2_000_000_456))
    st = os.stat(p)
    assert st.st_atime_ns == 1_000_000_123 and st.st_mtime_ns == 2_000_000_456, \
        (st.st_atime_ns, st.st_mtime_ns)
    before = time.time_ns()
    os.utime(p)
    st = os.stat(p)
    assert st.st_mtime_ns >= before - 10**9 and st.st_atime_ns >= before - 10**9
    # Truncate down then up: the bytes in between read as zeros.
    os.truncate(p, 100)
    assert os.stat(p).st_size == 100
    os.truncate(p, 5000)
    data = read_file(p)
    assert data == b"A" * 100 + bytes(4900), "truncate down then up: not zeros"
    # ftruncate through a descriptor, in the middle of a block and of a chunk.
    write_file(p, os.urandom(3 << 20))
    keep = read_file(p)[:1_500_001]
    fd = os.open(p, os.O_RDWR)
    os.ftruncate(fd, 1_500_001)
    os.ftruncate(fd, 4 << 20)
    assert os.pread(fd, 16, 1_500_001) == bytes(16)
    os.close(fd)
    data = read_file(p)
    assert len(data) == 4 << 20 and data[:1_500_001] == keep
    assert data[1_500_001:] == bytes(len(data) - 1_500_001), "ftruncate down then up: not zeros"
    # Truncate up only: a hole that reads as zeros, and no space taken.
    q = os.path.join(d, "sparse")
    write_file(q, b"")
    os.truncate(q, 1 << 30)
    st = os.stat(q)
    assert st.st_size == 1 << 30 and st.st_blocks == 0, (st.st_size, st.st_blocks)
    with open(q, "rb") as f:
        f.seek((1 << 30) - 4096)
        assert f.read() == bytes(4096)
    expect_errno(errno.EINVAL, os.truncate, q, -1)
    expect_errno(errno.EISDIR, os.truncate, d, 0)


def t_times():
    d = fresh("times")
    p = os.path.join(d, "f")
    t0 = time.time_ns()
    write_file(p, b"x")
    st = os.stat(p)
    assert st.st_mtime_ns >= t0 - 10**9 and st.st_ctime_ns >= t0 - 10**9
    dst0 = os.stat(d)
    time.sleep(0.05)
    # write: mtime and ctime move; the directory's do not.
    fd = os.open(p, os.O_WRONLY)
    os.write(fd, b"y")
    os.close(fd)
    st1 = os.stat(p)
    assert st1.st_mtime_ns > st.st_mtime_ns and st1.st_ctime_ns > st.st_ctime_ns, \
        "write did not move mtime and ctime"
    assert os.stat(d).st_mtime_ns == dst0.st_mtime_ns
    time.sleep(0.05)
    # chmod: ctime only.
    os.chmod(p, 0o600)
    st2 = os.stat(p)
    assert st2.st_ctime_ns > st1.st_ctime_ns and st2.st_mtime_ns == st1.st_mtime_ns
    time.sleep(0.05)
    # truncate: mtime and ctime.
    os.truncate(p, 0)
    st3 = os.stat(p)
    assert st3.st_mtime_ns > st2.st_mtime_ns and st3.st_ctime_ns > st2.st_ctime_ns
    time.sleep(0.05)
    # link and rename: ctime of the file; mtime and ctime of the directory.
    os.link(p, os.path.join(d, "g"))
    st4, dst1 = os.stat(p), os.stat(d)
    assert st4.st_ctime_ns > st3.st_ctime_ns and st4.st_mtime_ns == st3.st_mtime_ns
    assert dst1.st_mtime_ns > dst0.st_mtime_ns and dst1.st_ctime_ns > dst0.st_ctime_ns
    time.sleep(0.05)
    os.rename(os.path.join(d, "g"), os.path.join(d, "h"))
    assert os.stat(d).st_mtime_ns > dst1.st_mtime_ns
    time.sleep(0.05)
    # setxattr: ctime.
    os.setxattr(p, "user.t", b"1")
    st5 = os.stat(p)
    assert st5.st_ctime_ns > st4.st_ctime_ns and st5.st_mtime_ns == st4.st_mtime_ns
    # atime, relatime: a read updates an atime older than mtime... The
    # kernel leaves atime to FUSE file systems, and reads served from the
    # page cache (kept across opens: keep_cache) never reach the daemon, so
    # each read here drops the cache first.
    def read_uncached(path):
        with open(path, "rb") as f:
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
            return f.read()

    write_file(p, b"read me")
    st = os.stat(p)
    os.utime(p, ns=(st.st_mtime_ns - 10**10, st.st_mtime_ns))
    read_uncached(p)
    a1 = os.stat(p).st_atime_ns
    assert a1 > st.st_mtime_ns, "relatime: a read did not move an atime older than mtime"
    # ...but not a recent one newer than mtime and ctime...
    time.sleep(0.05)
    read_uncached(p)
    assert os.stat(p).st_atime_ns == a1, "relatime: a second read moved atime"
    # ...and does a day-old one.
    now = time.time_ns()
    os.utime(p, ns=(now - 2 * 86400 * 10**9, now - 3 * 86400 * 10**9))
    read_uncached(p)
    assert os.stat(p).st_atime_ns >= now - 10**9, "relatime: a day-old atime stayed"
    # readdir is an access of the directory.
    os.utime(d, ns=(1, 2))
    os.listdir(d)
    assert os.stat(d).st_atime_ns > 1, "relatime: readdir did not move the directory's atime"


def t_blocks_statfs():
    d = fresh("blocks")
    p = os.path.join(d, "f")
    write_file(p, b"")
    assert os.stat(p).st_blocks == 0
    write_file(p, b"x")
    st = os.stat(p)
    assert 1 <= st.st_blocks <= 8, st.st_blocks
    write_file(p, os.urandom(1 << 20))
    st = os.stat(p)
    assert (1 << 20) <= st.st_blocks * 512 <= (1 << 20) + 8192, st.st_blocks
    # A hole takes no blocks.
    q = os.path.join(d, "holey")
    fd = os.open(q, os.O_CREAT | os.O_WRONLY, 0o644)
    os.pwrite(fd, b"z" * 4096, 64 << 20)
    os.close(fd)
    st = os.stat(q)
    assert st.st_size == (64 << 20) + 4096 and st.st_blocks * 512 <= 8192, st.st_blocks
    assert os.stat(d).st_blocks >= 0 and os.stat(d).st_size > 0
    # statfs
    sv = os.statvfs(M.dir)
    assert sv.f_bsize > 0 and sv.f_frsize > 0
    assert sv.f_blocks > 0 and 0 < sv.f_bavail <= sv.f_bfree <= sv.f_blocks
    assert sv.f_namemax == 255, sv.f_namemax
    # 8 MiB more data, made durable: at least that much less available.
    avail0 = sv.f_bavail * sv.f_frsize
    r = os.path.join(d, "eight")
    fd = os.open(r, os.O_CREAT | os.O_WRONLY, 0o644)
    for _ in range(8):
        os.write(fd, os.urandom(1 << 20))
    os.fsync(fd)
    os.close(fd)
    sv1 = os.statvfs(M.dir)
    avail1 = sv1.f_bavail * sv1.f_frsize
    assert avail0 - avail1 >= (8 << 20) - (1 << 20), (avail0, avail1)
    assert avail0 - avail1 <= (8 << 20) + (16 << 20), (avail0, avail1)
    assert sv1.f_blocks == sv.f_blocks
    os.unlink(r)
    os.unlink(q)


# ---- xattrs ------------------------------------------------------------------------------

def t_xattrs():
    d = fresh("xattr")
    p = os.path.join(d, "f")
    write_file(p, b"x")
    assert os.listxattr(p) == []
    os.setxattr(p, "user.a", b"1")
    os.setxattr(p, "user.b", b"")
    big = os.urandom(4000)
    os.setxattr(p, "user.big", big)
    assert os.getxattr(p, "user.a") == b"1"
    assert os.getxattr(p, "user.b") == b""
    assert os.getxattr(p, "user.big") == big
    assert sorted(os.listxattr(p)) == ["user.a", "user.b", "user.big"]
    expect_errno(errno.EEXIST, os.setxattr, p, "user.a", b"2", os.XATTR_CREATE)
    expect_errno(errno.ENODATA, os.setxattr, p, "user.c", b"2", os.XATTR_REPLACE)
    os.setxattr(p, "user.a", b"22", os.XATTR_REPLACE)
    assert os.getxattr(p, "user.a") == b"22"
    os.setxattr(p, "user.c", b"3", os.XATTR_CREATE)
    expect_errno(errno.ENODATA, os.getxattr, p, "user.missing")
    os.removexattr(p, "user.b")
    expect_errno(errno.ENODATA, os.removexattr, p, "user.b")
    assert sorted(os.listxattr(p)) == ["user.a", "user.big", "user.c"]
    # Other namespaces are not supported (root could set trusted.* on ext4).
    for name in ["trusted.x", "security.x", "foo.x"]:
        expect_errno(errno.EOPNOTSUPP, os.setxattr, p, name, b"1")
        expect_errno(errno.EOPNOTSUPP, os.getxattr, p, name)
    # Directories have user xattrs too; symlinks do not (EPERM, as ext4).
    os.setxattr(d, "user.dir", b"d")
    assert os.getxattr(d, "user.dir") == b"d"
    os.symlink("f", os.path.join(d, "s"))
    expect_errno(errno.EPERM, os.setxattr, os.path.join(d, "s"), "user.x", b"1",
                 follow_symlinks=False)
    # The virtual attributes: readable, never listed, never settable.
    ext = os.getxattr(p, "user.zonefuse.extents")
    assert isinstance(ext, bytes)
    stats = os.getxattr(M.dir, "user.zonefuse.stats")
    assert stats.startswith(b"{") and b"capacity_bytes" in stats
    for path in (p, M.dir, d):
        assert not [x for x in os.listxattr(path) if x.startswith("user.zonefuse.")], \
            os.listxattr(path)
    for name in ("user.zonefuse.extents", "user.zonefuse.stats"):
        expect_errno(errno.EPERM, os.setxattr, p, name, b"1")
        expect_errno(errno.EPERM, os.setxattr, M.dir, name, b"1")
        try:
            os.removexattr(p, name)
            raise AssertionError(f"removexattr {name} succeeded")
        except OSError as ex:
            assert ex.errno in (errno.EPERM, errno.ENODATA), ex
    # Xattrs go with the inode: through a hard link, across a rename.
    os.link(p, os.path.join(d, "h"))
    os.rename(p, os.path.join(d, "g"))
    assert os.getxattr(os.path.join(d, "h"), "user.big") == big


# ---- lseek, fallocate ------------------------------------------------------------------------

def t_seek_data_hole():
    d = fresh("seek")
    p = os.path.join(d, "f")
    fd = os.open(p, os.O_CREAT | os.O_RDWR, 0o644)
    MiB = 1 << 20
    os.pwrite(fd, b"a" * 4096, 0)
    os.pwrite(fd, b"b" * 8192, 2 * MiB)
    os.ftruncate(fd, 5 * MiB)
    try:
        assert os.lseek(fd, 0, SEEK_DATA) == 0
        h = os.lseek(fd, 0, SEEK_HOLE)
        assert 4096 <= h <= 2 * MiB and h % 4096 == 0, h
        assert os.lseek(fd, 100, SEEK_DATA) == 100
        dt = os.lseek(fd, 4096, SEEK_DATA)
        assert h <= dt <= 2 * MiB, dt
        assert os.lseek(fd, 2 * MiB + 1, SEEK_DATA) == 2 * MiB + 1
        h2 = os.lseek(fd, 2 * MiB, SEEK_HOLE)
        assert 2 * MiB + 8192 <= h2 <= 5 * MiB, h2
        expect_errno(errno.ENXIO, os.lseek, fd, 2 * MiB + 8192 + 4096 * 16, SEEK_DATA)
        assert os.lseek(fd, 4 * MiB, SEEK_HOLE) == 4 * MiB
        expect_errno(errno.ENXIO, os.lseek, fd, 5 * MiB, SEEK_DATA)
        expect_errno(errno.ENXIO, os.lseek, fd, 5 * MiB, SEEK_HOLE)
        expect_errno(errno.ENXIO, os.lseek, fd, 6 * MiB, SEEK_HOLE)
        # Data written but not yet on the zones counts as data too.
        os.fsync(fd)
        os.pwrite(fd, b"c" * 4096, 3 * MiB)
        assert os.lseek(fd, 2 * MiB + 8192 + 4096, SEEK_DATA) == 3 * MiB
        # A file with no data at all.
        q = os.path.join(d, "empty")
        fq = os.open(q, os.O_CREAT | os.O_RDWR, 0o644)
        os.ftruncate(fq, MiB)
        expect_errno(errno.ENXIO, os.lseek, fq, 0, SEEK_DATA)
        assert os.lseek(fq, 0, SEEK_HOLE) == 0
        os.close(fq)
    finally:
        os.close(fd)


def t_fallocate():
    d = fresh("falloc")
    p = os.path.join(d, "f")
    fd = os.open(p, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        os.write(fd, b"head")
        os.posix_fallocate(fd, 0, 3 << 20)
        assert os.fstat(fd).st_size == 3 << 20
        assert os.pread(fd, 8, 0) == b"head\0\0\0\0"
        assert os.pread(fd, 4096, (3 << 20) - 4096) == bytes(4096)
        fallocate(fd, 0, 4 << 20, 4096)
        assert os.fstat(fd).st_size == (4 << 20) + 4096
        fallocate(fd, FALLOC_FL_KEEP_SIZE, 8 << 20, 1 << 20)
        assert os.fstat(fd).st_size == (4 << 20) + 4096, "KEEP_SIZE changed the size"
        # Within the size, nothing changes.
        fallocate(fd, 0, 0, 4096)
        assert os.pread(fd, 4, 0) == b"head"
        expect_errno(errno.EOPNOTSUPP, fallocate, fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096)
        expect_errno(errno.EINVAL, fallocate, fd, 0, 0, 0)
        os.pwrite(fd, b"tail", (4 << 20) + 4096)
        assert os.pread(fd, 4, (4 << 20) + 4096) == b"tail"
    finally:
        os.close(fd)


# ---- readdir ------------------------------------------------------------------------------------

def t_readdir_100k():
    d = fresh("readdir")
    N = 100_000
    t0 = time.time()
    for i in range(N):
        os.mknod(os.path.join(d, f"keep{i:06d}"), 0o644 | stat.S_IFREG)
    victims = [f"victim{i:05d}" for i in range(5000)]
    for v in victims:
        os.mknod(os.path.join(d, v), 0o644 | stat.S_IFREG)
    e.log(f"readdir: {N + len(victims)} entries made in {time.time() - t0:.1f} s")
    stop = threading.Event()
    errors = []

    def churn():
        i = 0
        try:
            while not stop.is_set():
                if i < len(victims):
                    os.unlink(os.path.join(d, victims[i]))
                os.mknod(os.path.join(d, f"new{i:06d}"), 0o644 | stat.S_IFREG)
                if i % 3 == 0:
                    os.unlink(os.path.join(d, f"new{i:06d}"))
                i += 1
        except OSError as ex:
            errors.append(ex)

    th = threading.Thread(target=churn)
    th.start()
    try:
        for rnd in range(2):
            t0 = time.time()
            names = [x.name for x in os.scandir(d)]
            seen = {}
            for x in names:
                seen[x] = seen.get(x, 0) + 1
            dup = [x for x, c in seen.items() if c > 1]
            assert not dup, f"readdir listed {len(dup)} names twice, e.g. {dup[:5]}"
            missing = [i for i in range(N) if f"keep{i:06d}" not in seen]
            assert not missing, f"readdir missed {len(missing)} entries present throughout, e.g. keep{missing[0]:06d}"
            e.log(f"readdir round {rnd}: {len(names)} names in {time.time() - t0:.1f} s")
    finally:
        stop.set()
        th.join()
    assert not errors, errors
    # Quiet now: exactly what is there.
    names = os.listdir(d)
    assert len(names) == len(set(names))
    t0 = time.time()
    for x in names:
        os.unlink(os.path.join(d, x))
    e.log(f"readdir: {len(names)} entries removed in {time.time() - t0:.1f} s")
    assert os.listdir(d) == []
    os.rmdir(d)


# ---- unlinked but open -----------------------------------------------------------------------------

def t_unlinked_open():
    d = fresh("orphan")
    p = os.path.join(d, "f")
    data = os.urandom(3 << 20)
    write_file(p, data)
    fd = os.open(p, os.O_RDWR)
    os.unlink(p)
    expect_errno(errno.ENOENT, os.stat, p)
    assert os.listdir(d) == []
    assert os.fstat(fd).st_nlink == 0
    # Readable and writable until closed, through a fresh page cache too.
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    assert os.pread(fd, len(data), 0) == data
    os.pwrite(fd, b"more", len(data))
    os.fsync(fd)
    assert os.pread(fd, 4, len(data)) == b"more"
    # A new file of the same name is another file.
    write_file(p, b"new")
    assert os.pread(fd, 3, 0) == data[:3]
    os.close(fd)
    assert read_file(p) == b"new"


# ---- permissions (a non-root user in a forked child) ------------------------------------------------

def as_user(fn, uid=USER, gid=USER, groups=()):
    """Run fn() as uid/gid in a forked child; returns None or the error."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        msg = b""
        try:
            os.setgroups(list(groups))
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
            os.umask(0o022)
            fn()
        except BaseException as ex:  # hand every failure to the parent
            import traceback
            msg = ("".join(traceback.format_exception(ex))).encode()
        os.write(w, msg)
        os._exit(0)
    os.close(w)
    out = b""
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        out += chunk
    os.close(r)
    os.waitpid(pid, 0)
    if out:
        raise AssertionError(f"as uid {uid}:\n{out.decode()}")


def perm_checks(mnt, kernel_checks):
    os.chmod(e.WORK, 0o711)     # the user must get to the mount point
    d = mnt.path(f"perm.{time.time_ns()}")
    os.mkdir(d, 0o755)
    # Modes set with chmod: the umask would take bits off at creation.
    for name, data, mode in [("rootfile", b"secret", 0o600), ("readable", b"public", 0o644),
                             ("writable", b"w", 0o666), ("groupfile", b"group", 0o640)]:
        write_file(os.path.join(d, name), data)
        os.chmod(os.path.join(d, name), mode)
    os.chown(os.path.join(d, "groupfile"), 0, GROUP)
    os.mkdir(os.path.join(d, "closed"))
    os.chmod(os.path.join(d, "closed"), 0o700)
    write_file(os.path.join(d, "closed", "inner"), b"x", 0o644)
    os.mkdir(os.path.join(d, "sticky"))
    os.chmod(os.path.join(d, "sticky"), 0o1777)
    write_file(os.path.join(d, "sticky", "roots"), b"r")
    os.chmod(os.path.join(d, "sticky", "roots"), 0o666)
    os.mkdir(os.path.join(d, "mine"), 0o755)
    os.chown(os.path.join(d, "mine"), USER, USER)

    def user():
        expect_errno(errno.EACCES, os.open, os.path.join(d, "new"), os.O_CREAT | os.O_WRONLY, 0o644)
        expect_errno(errno.EACCES, os.mkdir, os.path.join(d, "newdir"))
        expect_errno(errno.EACCES, os.unlink, os.path.join(d, "readable"))
        expect_errno(errno.EACCES, os.rename, os.path.join(d, "readable"), os.path.join(d, "r2"))
        expect_errno(errno.EACCES, os.open, os.path.join(d, "rootfile"), os.O_RDONLY)
        assert read_file(os.path.join(d, "readable")) == b"public"
        expect_errno(errno.EACCES, os.open, os.path.join(d, "readable"), os.O_WRONLY)
        expect_errno(errno.EACCES, os.truncate, os.path.join(d, "readable"), 0)
        expect_errno(errno.EACCES, os.setxattr, os.path.join(d, "readable"), "user.x", b"1")
        assert not os.access(os.path.join(d, "readable"), os.W_OK)
        assert os.access(os.path.join(d, "readable"), os.R_OK)
        assert not os.access(os.path.join(d, "rootfile"), os.R_OK)
        expect_errno(errno.EPERM, os.chmod, os.path.join(d, "readable"), 0o666)
        expect_errno(errno.EPERM, os.chown, os.path.join(d, "readable"), USER, USER)
        # utime: "now" needs write permission; explicit times need ownership.
        os.utime(os.path.join(d, "writable"))
        utimens(os.path.join(d, "writable"), UTIME_NOW, UTIME_NOW)
        expect_errno(errno.EPERM, os.utime, os.path.join(d, "writable"), (1, 1))
        expect_errno(errno.EPERM, utimens, os.path.join(d, "writable"), UTIME_NOW, 5)
        expect_errno(errno.EPERM, utimens, os.path.join(d, "writable"), 5, UTIME_NOW)
        expect_errno(errno.EPERM, utimens, os.path.join(d, "writable"), UTIME_OMIT, 5)
        # One time "now" and the other left alone counts as explicit.
        expect_errno(errno.EPERM, utimens, os.path.join(d, "writable"), UTIME_NOW, UTIME_OMIT)
        expect_errno(errno.EACCES, os.utime, os.path.join(d, "readable"))
        expect_errno(errno.EPERM, utimens, os.path.join(d, "readable"), UTIME_NOW, UTIME_OMIT)
        with open(os.path.join(d, "writable"), "ab") as f:
            f.write(b"+")
        # Search permission. Without default_permissions the kernel asks
        # the file system nothing on a path walk (and a cached dentry is
        # not looked up again), so only the listing is checked there.
        if kernel_checks:
            expect_errno(errno.EACCES, os.stat, os.path.join(d, "closed", "inner"))
        expect_errno(errno.EACCES, os.listdir, os.path.join(d, "closed"))
        # Sticky directory: one's own files, not root's.
        write_file(os.path.join(d, "sticky", "users"), b"u")
        expect_errno(errno.EPERM, os.unlink, os.path.join(d, "sticky", "roots"))
        expect_errno(errno.EPERM, os.rename, os.path.join(d, "sticky", "roots"),
                     os.path.join(d, "sticky", "taken"))
        os.rename(os.path.join(d, "sticky", "users"), os.path.join(d, "sticky", "users2"))
        os.unlink(os.path.join(d, "sticky", "users2"))
        # In one's own directory: create, chmod, chown to one's own group.
        mine = os.path.join(d, "mine")
        write_file(os.path.join(mine, "f"), b"mine")
        st = os.stat(os.path.join(mine, "f"))
        assert (st.st_uid, st.st_gid) == (USER, USER), (st.st_uid, st.st_gid)
        assert stat.S_IMODE(st.st_mode) == 0o644, oct(st.st_mode)     # umask 022
        os.chmod(os.path.join(mine, "f"), 0o600)
        expect_errno(errno.EPERM, os.chown, os.path.join(mine, "f"), 0, -1)
        expect_errno(errno.EPERM, os.chown, os.path.join(mine, "f"), -1, OTHER_GROUP)
        os.setxattr(os.path.join(mine, "f"), "user.mine", b"1")
        # The owner, in the file's group, may set setgid.
        os.chmod(os.path.join(mine, "f"), 0o2755)
        assert stat.S_IMODE(os.stat(os.path.join(mine, "f")).st_mode) == 0o2755
    as_user(user)

    def group_member():
        assert read_file(os.path.join(d, "groupfile")) == b"group"
        expect_errno(errno.EACCES, os.open, os.path.join(d, "groupfile"), os.O_WRONLY)

    as_user(group_member, groups=(GROUP,))

    def not_member():
        expect_errno(errno.EACCES, os.open, os.path.join(d, "groupfile"), os.O_RDONLY)

    as_user(not_member, groups=(OTHER_GROUP,))
    # Root was not kept out by the modes.
    assert read_file(os.path.join(d, "rootfile")) == b"secret"
    assert read_file(os.path.join(d, "writable")) == b"w+"


def t_perm_default_permissions():
    mnt = e.Mount(PIMG, "mnt-dp", "allow_other,default_permissions")
    try:
        perm_checks(mnt, True)
    finally:
        mnt.umount()


def t_perm_own_checks():
    # Without default_permissions, zonefuse checks by itself.
    mnt = e.Mount(PIMG, "mnt-ao", "allow_other")
    try:
        perm_checks(mnt, False)
    finally:
        mnt.umount()


def t_setgid_dir():
    mnt = e.Mount(PIMG, "mnt-sg", "allow_other,default_permissions")
    try:
        os.chmod(e.WORK, 0o711)
        d = mnt.path(f"sgid.{time.time_ns()}")
        os.mkdir(d, 0o755)
        os.chown(d, 0, GROUP)
        os.chmod(d, 0o2775)
        assert stat.S_IMODE(os.stat(d).st_mode) == 0o2775
        write_file(os.path.join(d, "f"), b"x")
        os.mkdir(os.path.join(d, "sub"), 0o755)
        os.mknod(os.path.join(d, "node"), 0o644 | stat.S_IFREG)
        os.symlink("f", os.path.join(d, "sym"))
        st = os.stat(os.path.join(d, "f"))
        assert st.st_gid == GROUP, f"file in a setgid dir has gid {st.st_gid}"
        assert not st.st_mode & stat.S_ISGID
        st = os.stat(os.path.join(d, "sub"))
        assert st.st_gid == GROUP and st.st_mode & stat.S_ISGID, \
            f"subdirectory: gid {st.st_gid}, mode {oct(st.st_mode)}"
        assert os.stat(os.path.join(d, "node")).st_gid == GROUP
        assert os.lstat(os.path.join(d, "sym")).st_gid == GROUP
        # A user in the group: same; and its own files elsewhere keep its gid.
        os.chmod(d, 0o2777)

        def member():
            write_file(os.path.join(d, "users"), b"u")
            st = os.stat(os.path.join(d, "users"))
            assert (st.st_uid, st.st_gid) == (USER, GROUP), (st.st_uid, st.st_gid)
            os.mkdir(os.path.join(d, "usersdir"))
            st = os.stat(os.path.join(d, "usersdir"))
            assert st.st_gid == GROUP and st.st_mode & stat.S_ISGID

        as_user(member, groups=(GROUP,))

        def outsider():
            # Not in the group: the new file still takes the directory's gid.
            write_file(os.path.join(d, "outsiders"), b"o")
            assert os.stat(os.path.join(d, "outsiders")).st_gid == GROUP
            # mkdir with S_ISGID as a non-member of the dir's group: kept
            # (inherited), as on ext4.
            os.mkdir(os.path.join(d, "od"))
            assert os.stat(os.path.join(d, "od")).st_mode & stat.S_ISGID

        as_user(outsider, uid=USER + 10, gid=USER + 10)
    finally:
        mnt.umount()


# ---- ENOSPC ----------------------------------------------------------------------------------------

def t_enospc():
    img = e.image("small.img", "64M", "4M")
    mnt = e.Mount(img, "mnt-small")
    try:
        sv = os.statvfs(mnt.dir)
        avail = sv.f_bavail * sv.f_frsize
        chunk = os.urandom(1 << 20)
        p = mnt.path("fill")
        fd = os.open(p, os.O_CREAT | os.O_WRONLY, 0o644)
        written = 0
        err = None
        try:
            while written < 4 * avail + (64 << 20):
                try:
                    written += os.write(fd, chunk)
                except OSError as ex:
                    err = ex
                    break
            if err is None:
                raise AssertionError(f"wrote {written} bytes on a device with {avail} available, no ENOSPC")
            assert err.errno == errno.ENOSPC, f"the full device said {err}"
            # fsync after ENOSPC: what was written is durable (no error).
            os.fsync(fd)
        finally:
            os.close(fd)
        e.log(f"enospc: {written} bytes written of {avail} available, then ENOSPC")
        assert written >= avail * 3 // 4, f"ENOSPC after only {written} of {avail} bytes"
        size = os.stat(p).st_size
        assert size == written, (size, written)
        with open(p, "rb") as f:
            f.seek(size - len(chunk))
            assert f.read() == chunk
        # Small files and metadata still fit? At least the namespace works.
        os.listdir(mnt.dir)
        os.statvfs(mnt.dir)
        # Delete, make that durable, and the space comes back.
        os.unlink(p)
        dfd = os.open(mnt.dir, os.O_RDONLY)
        os.fsync(dfd)
        os.close(dfd)
        q = mnt.path("again")
        deadline = time.time() + 20
        while True:
            try:
                fd = os.open(q, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
                try:
                    for _ in range(max(1, written // (2 << 20))):
                        os.write(fd, chunk)
                    os.fsync(fd)
                finally:
                    os.close(fd)
                break
            except OSError as ex:
                if ex.errno != errno.ENOSPC or time.time() > deadline:
                    raise AssertionError(f"writing half as much again after deleting: {ex}")
                time.sleep(0.5)
        sv = os.statvfs(mnt.dir)
        e.log(f"enospc: after delete and rewrite, {sv.f_bavail * sv.f_frsize} available")
        os.unlink(q)
    finally:
        mnt.umount()
    e.fsck(img)


def main():
    global M, IMG, PIMG
    e.begin("create/open (O_EXCL, O_TRUNC, O_APPEND, O_DIRECT), uncached write-only opens, "
            "asynchronous O_DIRECT writes beside buffered readers, "
            "readahead_kb and strict numeric mount options, mkdir/rmdir/unlink, data written out at "
            "the close of new and rewritten files, and at once for a file fsynced after each "
            "write or while files are fsynced after their first write, cached "
            "negative lookups, listings and symlinks, rename "
            "(replace, NOREPLACE, EXCHANGE, EINVAL, ENOTEMPTY), link/symlink/readlink, "
            "ENAMETOOLONG/ENOENT, chmod/chown/utime/truncate, ext4 times and relatime, "
            "st_blocks, statfs, user xattrs, SEEK_DATA/SEEK_HOLE, fallocate, readdir of "
            "100,000 entries under churn, unlinked-but-open files, permissions as a "
            "non-root user (with and without default_permissions), setgid directories, "
            "ENOSPC and recovery; errors asserted by errno")
    IMG = e.image("ops.img", "1G", "4M")
    M = e.Mount(IMG, "mnt")
    PIMG = e.image("perm.img", "256M", "4M")
    tests = [
        ("create_open", t_create_open),
        ("double_mount", t_double_mount),
        ("o_direct", t_o_direct),
        ("uncached_writer", t_uncached_writer),
        ("async_direct_write", t_async_direct_write),
        ("mount_options", t_mount_options),
        ("mkdir_rmdir_unlink", t_mkdir_rmdir_unlink),
        ("close_writes_out", t_close_writes_out),
        ("sent_at_once", t_sent_at_once),
        ("sent_at_once_after_open", t_sent_at_once_after_open),
        ("negative_lookup", t_negative_lookup),
        ("readdir_cache", t_readdir_cache),
        ("symlink_cache", t_symlink_cache),
        ("rename", t_rename),
        ("links", t_links),
        ("names", t_names),
        ("setattr", t_setattr),
        ("times", t_times),
        ("blocks_statfs", t_blocks_statfs),
        ("xattrs", t_xattrs),
        ("seek_data_hole", t_seek_data_hole),
        ("fallocate", t_fallocate),
        ("unlinked_open", t_unlinked_open),
        ("perm_default_permissions", t_perm_default_permissions),
        ("perm_own_checks", t_perm_own_checks),
        ("setgid_dir", t_setgid_dir),
        ("readdir_100k", t_readdir_100k),
        ("enospc", t_enospc),
        ("umount_fsck", t_umount_fsck),
    ]
    e.run_tests(tests)


SECOND = None


def t_double_mount():
    # The image is in use: a second mount is refused (after zdev_open's
    # 30 s wait for a device that is being let go, so it runs in the
    # background and t_umount_fsck collects it), and the first goes on.
    global SECOND
    other = e.WORK + "/mnt-second"
    os.mkdir(other)
    SECOND = (other, subprocess.Popen([e.ZONEFUSE, "mount", IMG, other],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))


def t_umount_fsck():
    if SECOND:
        other, proc = SECOND
        out, err = proc.communicate(timeout=60)
        assert proc.returncode != 0, "a second mount of a mounted image succeeded"
        assert not os.path.ismount(other)
        assert "in use" in err or "unmount it first" in err, \
            f"the refused mount said: {err!r}"
        os.listdir(M.dir)
    M.umount()
    e.fsck(IMG)
    e.fsck(PIMG)


IMG = None
PIMG = None

if __name__ == "__main__":
    main()
