#!/usr/bin/python3
"""tests/e2e/perms.py: permissions and POSIX corners, measured against ext4.

Each case runs the same steps on a zonefuse mount with -o allow_other (so
other users may enter, and the kernel checks permissions too) and on an
ext4 file system made on a loop device for the test (mounted nodev, as
FUSE mounts are), as root and as unprivileged users (setpriv), and
compares what each step returned: the same result and the same errno, or
the test fails naming the step. The reference is measured on this
kernel, not assumed. The cases are the ones issue 23 lists: search
permission under cached names, FIFO modes, chown by a non-owner,
set-group-ID cleared by a write, exec of an unreadable program, readdir
while entries are renamed away and back, device nodes, and fallocate's
reservation.
"""
import errno
import os
import shutil
import stat
import subprocess
import sys

sys.dont_write_bytecode = True     # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib as e  # noqa: E402

NOBODY = 65534
OTHER = 65533

# One step as another user: `python3 -c AS_USER OP ARGS...` prints "ok",
# "ok VALUE" or the errno's name.
AS_USER = r"""
import errno, os, sys
op, a = sys.argv[1], sys.argv[2:]
try:
    if op == "truncate":
        os.truncate(a[0], int(a[1]))
    elif op == "trunc_open":
        os.close(os.open(a[0], os.O_WRONLY | os.O_TRUNC))
    elif op == "chmod":
        os.chmod(a[0], int(a[1], 8))
    elif op == "chown":
        os.chown(a[0], int(a[1]), int(a[2]))
    elif op == "link":
        os.link(a[0], a[1])
    elif op == "open":
        fl = {"r": os.O_RDONLY, "w": os.O_WRONLY, "rw": os.O_RDWR}[a[1]]
        os.close(os.open(a[0], fl | os.O_NONBLOCK))
    elif op == "stat":
        os.stat(a[0])
    elif op == "utime":
        os.utime(a[0])
    elif op == "write":
        fd = os.open(a[0], os.O_RDWR)
        os.write(fd, b"x")
        os.close(fd)
        print("ok", oct(os.stat(a[0]).st_mode & 0o7777))
        sys.exit(0)
    elif op == "exec":
        os.execv(a[0], [a[0]])
    print("ok")
except OSError as ex:
    print(errno.errorcode.get(ex.errno, str(ex.errno)))
"""


def as_user(uid, op, *args):
    r = subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}",
                        "--clear-groups", "/usr/bin/python3", "-c", AS_USER,
                        op, *map(str, args)],
                       capture_output=True, text=True, timeout=60)
    out = (r.stdout.strip() or f"exit {r.returncode}")
    return out if op != "exec" or out != "exit 0" else "ok"


class Ext4Ref:
    """An ext4 file system on a loop device, mounted nodev: the reference."""

    def __init__(self):
        self.img = os.path.join(e.WORK, "ref.ext4")
        self.dir = os.path.join(e.WORK, "ref")
        os.makedirs(self.dir)
        with open(self.img, "wb") as f:
            f.truncate(64 << 20)
        subprocess.run(["mkfs.ext4", "-q", "-F", self.img], check=True)
        subprocess.run(["mount", "-o", "loop,nodev", self.img, self.dir],
                       check=True)

    def umount(self):
        subprocess.run(["umount", self.dir], check=True)


def both(fn):
    """fn(root_dir) on zonefuse and on ext4; their results must agree."""
    def run():
        results = []
        for where in (ZF.dir, REF.dir):
            d = os.path.join(where, fn.__name__)
            os.mkdir(d)
            os.chmod(d, 0o777)
            results.append(fn(d))
        zf, ref = results
        e.log(f"{fn.__name__}: {zf}")
        assert len(zf) == len(ref)
        for (step, got), (_, want) in zip(zf, ref):
            assert got == want, \
                f"{fn.__name__}: {step}: zonefuse {got}, ext4 {want}"
    return fn.__name__, run


@both
def search_cached(d):
    """A name below a directory without search permission stays out of
    reach though it is in the kernel's cache (item 1)."""
    sub = os.path.join(d, "d")
    f = os.path.join(sub, "f")
    os.mkdir(sub)
    open(f, "w").close()
    os.chmod(f, 0o666)
    os.chmod(sub, 0o644)
    os.stat(f)                      # root caches d/f
    out = [(op, as_user(NOBODY, op, *args)) for op, args in (
        ("stat", (f,)), ("truncate", (f, 1234)), ("chmod", (f, "777")),
        ("chown", (f, NOBODY, NOBODY)), ("link", (f, os.path.join(d, "l"))),
        ("open", (f, "r")), ("utime", (f,)))]
    out.append(("size", os.stat(f).st_size))
    out.append(("mode", oct(os.stat(f).st_mode & 0o7777)))
    return out


@both
def fifo_mode(d):
    """Opening a FIFO checks its mode (item 2)."""
    p = os.path.join(d, "p")
    os.mkfifo(p)
    os.chmod(p, 0o477)
    os.chown(p, OTHER, OTHER)
    return [("rw", as_user(NOBODY, "open", p, "rw")),
            ("r", as_user(NOBODY, "open", p, "r")),
            ("owner rw", as_user(OTHER, "open", p, "rw"))]


@both
def chown_same(d):
    """A non-owner may not chown a file even to its current owner (item 3)."""
    f = os.path.join(d, "f")
    open(f, "w").close()
    os.chown(f, NOBODY, NOBODY)
    return [("other", as_user(OTHER, "chown", f, NOBODY, NOBODY)),
            ("owner", as_user(NOBODY, "chown", f, NOBODY, NOBODY)),
            ("give away", as_user(NOBODY, "chown", f, OTHER, NOBODY))]


@both
def setgid_write(d):
    """A non-owner's write clears set-group-ID and succeeds (item 4)."""
    out = []
    for mode in (0o2777, 0o6777, 0o2767):
        f = os.path.join(d, f"f{mode:o}")
        with open(f, "w") as fh:
            fh.write("data")
        os.chmod(f, mode)
        out.append((f"{mode:o}", as_user(NOBODY, "write", f)))
    return out


@both
def setid_cleared(d):
    """Set-ID bits go as ext4 drops them, whichever way the data changes:
    writes through the page cache (also on a file written before it had
    any: the kernel's mark that an inode needs no check, S_NOSEC, must not
    outlive the chmod), a truncate and an open with O_TRUNC by another
    user, and a write by root, which keeps them (item 4; the daemon clears
    them itself: FUSE_HANDLE_KILLPRIV_V2, src/xport.c)."""
    def mode(f):
        return oct(os.stat(f).st_mode & 0o7777)

    out = []
    f = os.path.join(d, "plain")
    with open(f, "w") as fh:
        fh.write("data")
    os.chmod(f, 0o666)
    out.append(("plain", as_user(NOBODY, "write", f)))
    os.chmod(f, 0o6777)
    out.append(("after chmod", as_user(NOBODY, "write", f)))
    out.append(("again", as_user(NOBODY, "write", f)))
    for op, args in (("truncate", (1,)), ("trunc_open", ())):
        for m in (0o6777, 0o2767, 0o4766):
            g = os.path.join(d, f"{op}{m:o}")
            with open(g, "w") as fh:
                fh.write("data")
            os.chmod(g, m)
            out.append((f"{op} {m:o}", (as_user(NOBODY, op, g, *args), mode(g))))
    g = os.path.join(d, "root")
    with open(g, "w") as fh:
        fh.write("data")
    os.chmod(g, 0o6777)
    with open(g, "r+b") as fh:
        fh.write(b"x")
    out.append(("root write", mode(g)))
    return out


@both
def exec_only(d):
    """A program one may execute but not read runs (item 5)."""
    p = os.path.join(d, "prog")
    shutil.copy("/bin/true", p)
    os.chmod(p, 0o711)
    return [("0711", as_user(NOBODY, "exec", p)),
            ("0744 open", as_user(NOBODY, "open", p, "r"))]


@both
def readdir_rename_back(d):
    """Renaming each entry away and back while listing: every name comes
    once, the listing ends (item 7)."""
    n = 2000
    for i in range(n):
        open(os.path.join(d, f"e{i:05d}"), "w").close()
    seen = 0
    names = set()
    with os.scandir(d) as it:
        for ent in it:
            seen += 1
            names.add(ent.name)
            tmp = os.path.join(d, "tmp-" + ent.name)
            os.rename(ent.path, tmp)
            os.rename(tmp, ent.path)
            if seen > 3 * n:
                break
    return [("all names", len(names) >= n), ("each once", seen <= n + 2)]


@both
def device_nodes(d):
    """root makes device nodes; opening one is refused on a nodev mount
    (item 8)."""
    c = os.path.join(d, "null")
    b = os.path.join(d, "blk")
    os.mknod(c, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    os.mknod(b, stat.S_IFBLK | 0o600, os.makedev(7, 200))
    out = [("chr", stat.S_ISCHR(os.stat(c).st_mode), os.major(os.stat(c).st_rdev),
            os.minor(os.stat(c).st_rdev)),
           ("blk", stat.S_ISBLK(os.stat(b).st_mode), os.stat(b).st_rdev == os.makedev(7, 200))]
    try:
        os.close(os.open(c, os.O_RDWR))
        out.append(("open", "ok"))
    except OSError as ex:
        out.append(("open", errno.errorcode[ex.errno]))
    out.append(("user mknod", as_user_mknod(os.path.join(d, "u"))))
    return [(s[0], s[1:]) for s in out]


@both
def fallocate_reserves(d):
    """posix_fallocate reserves: twice the free space is ENOSPC, what fits
    shows in st_blocks and df at once, a write into it works, truncate
    gives it back (item 9)."""
    f = os.path.join(d, "f")
    fd = os.open(f, os.O_CREAT | os.O_RDWR, 0o644)
    out = []
    try:
        sv = os.statvfs(d)
        free = sv.f_bavail * sv.f_frsize
        try:
            os.posix_fallocate(fd, 0, 2 * free)
            out.append(("2x free", "ok"))
        except OSError as ex:
            out.append(("2x free", errno.errorcode[ex.errno]))
        # Not compared: ext4 keeps what it allocated before it ran out
        # (size and blocks); zonefuse reserves all of it or nothing.
        e.log(f"after the refusal: {os.fstat(fd).st_blocks} blocks")
        os.ftruncate(fd, 0)
        sv = os.statvfs(d)
        free = sv.f_bavail * sv.f_frsize
        os.posix_fallocate(fd, 0, 8 << 20)
        st = os.fstat(fd)
        sv2 = os.statvfs(d)
        out.append(("8M", st.st_size, st.st_blocks * 512 >= 8 << 20,
                    st.st_blocks * 512 <= (8 << 20) + (1 << 20)))
        # df moves with other work too (journal commits): a margin.
        out.append(("df", (free - sv2.f_bavail * sv2.f_frsize) >= 4 << 20))
        os.pwrite(fd, b"x" * 65536, 1 << 20)
        os.fsync(fd)
        out.append(("written", os.fstat(fd).st_blocks * 512 >= 8 << 20))
        os.ftruncate(fd, 0)
        out.append(("truncated", os.fstat(fd).st_blocks))
    finally:
        os.close(fd)
    return [(o[0], o[1:]) for o in out]


def as_user_mknod(path):
    r = subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}",
                        "--clear-groups", "/usr/bin/python3", "-c",
                        "import os,sys,errno,stat\n"
                        "try:\n os.mknod(sys.argv[1], stat.S_IFCHR|0o666, os.makedev(1,3)); print('ok')\n"
                        "except OSError as x: print(errno.errorcode[x.errno])", path],
                       capture_output=True, text=True, timeout=60)
    return r.stdout.strip()


ZF = REF = None


def main():
    global ZF, REF
    e.begin("permissions and POSIX corners (issue 23) through a real mount "
            "with allow_other, against ext4 on a loop device")
    for tool in ("setpriv", "mkfs.ext4", "losetup"):
        if not shutil.which(tool):
            e.skip(f"{tool} missing (util-linux / e2fsprogs)")
    img = e.image("perms.img", "512M", "4M")
    ZF = e.Mount(img, "mnt", "allow_other")
    os.chmod(ZF.dir, 0o755)
    try:
        REF = Ext4Ref()
    except (subprocess.CalledProcessError, OSError) as ex:
        e.skip(f"no ext4 reference on a loop device here: {ex}")
    os.chmod(REF.dir, 0o755)
    os.chmod(e.WORK, 0o755)          # others must reach both mounts
    tests = [search_cached, fifo_mode, chown_same, setgid_write, setid_cleared,
             exec_only,
             readdir_rename_back, device_nodes, fallocate_reserves]

    def final():
        ZF.umount()
        REF.umount()
        e.log(e.fsck(img))

    e.run_tests(tests + [("umount_fsck", final)], picked=[])


if __name__ == "__main__":
    main()
