"""What the end-to-end Python tests share: images, real mounts, cleanup.

A test calls begin("what it checks"), makes images with image(), mounts
them with Mount, and runs its checks with run_tests(). Every mount is undone
on exit however the test ends (lazy unmount, then the daemon is killed by
its pid), and a watchdog ends a test that hangs on a stuck mount before
meson's timeout kills the process and its cleanup with it.

Environment: ZONEFUSE (the binary under test, meson passes it), TMPDIR.
"""
import atexit
import errno
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

NAME = os.path.splitext(os.path.basename(sys.argv[0]))[0]
ZONEFUSE = os.environ.get("ZONEFUSE", "")
WORK = None
TIMEOUT = int(os.environ.get("E2E_TIMEOUT", "240"))
_mounts = []
_timed_out = threading.Event()
_done = threading.Event()


def log(msg):
    print(f"{NAME}: {msg}", flush=True)


def skip(why):
    print(f"{NAME}: SKIP: {why}", flush=True)
    sys.exit(77)


def daemon_pids(pattern, exact=False):
    """Pids of live zonefuse processes with pattern in an argument (exact:
    as an argument)."""
    pids = []
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) == os.getpid():
            continue
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
            with open(f"/proc/{p}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state == "Z" or not args or b"zonefuse" not in args[0]:
            continue
        pat = pattern.encode()
        if any((a == pat) if exact else (pat in a) for a in args[1:]):
            pids.append(int(p))
    return pids


def _mounts_under(prefix):
    out = []
    with open("/proc/self/mounts") as f:
        for line in f:
            mp = line.split()[1].replace("\\040", " ")
            if mp.startswith(prefix + "/"):
                out.append(mp)
    return out


def lazy_umount(mp):
    """Detach the mount on mp at once, dead daemon or not: umount -l, which
    also drops the mount's entry in libmount's utab (a daemon killed with
    -9 could not), else fusermount3 -u -z."""
    if subprocess.run(["umount", "-l", mp], stderr=subprocess.DEVNULL).returncode:
        subprocess.run(["fusermount3", "-u", "-z", mp], stderr=subprocess.DEVNULL)


def kill_all():
    """Kill every daemon of this test and lazily unmount its mounts."""
    if not WORK:
        return
    for pid in daemon_pids(WORK + "/"):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for mp in _mounts_under(WORK):
        lazy_umount(mp)


def backtraces():
    """Where this test's daemons are: each thread's zonefuse frames (gdb)."""
    if not shutil.which("gdb") or not WORK:
        return
    frame = re.compile(r"^(#\d+) +(?:0x[0-9a-f]+ in )?((?:zfs|jrnl|alloc|data|meta|gc|fs_ll|fuse_ll|space|zlock|zdev|zemu|zbd|cli)_\w+) \(.*\) at (.*)$")
    for pid in daemon_pids(WORK + "/"):
        print(f"{NAME}: the threads of daemon {pid}, zonefuse frames only:", file=sys.stderr)
        try:
            out = subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "thread apply all bt"],
                                 capture_output=True, text=True, timeout=60).stdout
        except subprocess.TimeoutExpired:
            continue
        lines = []
        for line in out.splitlines():
            m = frame.match(line)
            if line.startswith("Thread "):
                lines.append(line)
            elif m:
                lines.append(f"{m.group(1)} {m.group(2)} at {m.group(3)}")
        print("\n".join(lines[:80]), file=sys.stderr, flush=True)


def _watchdog():
    if _done.wait(TIMEOUT):
        return
    print(f"{NAME}: FAIL: still running after {TIMEOUT} s: a hung mount? "
          "killing its daemons; this is a failure", file=sys.stderr, flush=True)
    _timed_out.set()
    backtraces()
    kill_all()


def _cleanup():
    _done.set()
    kill_all()
    if WORK and os.environ.get("E2E_KEEP"):
        print(f"{NAME}: E2E_KEEP is set: images and daemon logs kept in {WORK}",
              file=sys.stderr)
        return
    if WORK and os.path.isdir(WORK):
        if _mounts_under(WORK):
            print(f"{NAME}: a mount under {WORK} is still there; not deleting it",
                  file=sys.stderr)
        else:
            shutil.rmtree(WORK, ignore_errors=True)


def begin(what):
    """Say what the test checks, check what it needs, make WORK."""
    global WORK
    log(f"checks: {what}")
    if os.geteuid() != 0:
        skip("needs root (FUSE mounts with allow_other, umount, setresuid)")
    if not os.path.exists("/dev/fuse"):
        skip("no /dev/fuse")
    if not shutil.which("fusermount3"):
        skip("fusermount3 missing (Debian package fuse3)")
    if not ZONEFUSE:
        skip("ZONEFUSE (the zonefuse binary) is not set; run through meson test")
    if not os.access(ZONEFUSE, os.X_OK):
        skip(f"ZONEFUSE={ZONEFUSE} is not executable")
    WORK = os.path.realpath(tempfile.mkdtemp(prefix=f"zonefuse-{NAME}.",
                                             dir=os.environ.get("TMPDIR", "/tmp")))
    atexit.register(_cleanup)
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))
    threading.Thread(target=_watchdog, daemon=True).start()


def zf(*args, check=True, **kw):
    """Run a zonefuse command; returns the CompletedProcess."""
    r = subprocess.run([ZONEFUSE, *args], capture_output=True, text=True, **kw)
    if check and r.returncode:
        raise AssertionError(f"zonefuse {' '.join(args)} exited {r.returncode}: "
                             f"{r.stderr.strip()}")
    return r


def image(name, size="256M", zone_size="4M", *extra):
    """A formatted emulated device WORK/name; returns its path."""
    path = os.path.join(WORK, name)
    zf("emu", "create", path, "--size", size, "--zone-size", zone_size, *extra)
    zf("mkfs", path)
    return path


def fsck(img):
    """fsck must say clean: exit 0."""
    r = zf("fsck", img, check=False)
    assert r.returncode == 0, \
        f"fsck {img} exited {r.returncode}, not 0: {r.stdout}{r.stderr}"
    return r.stdout.strip()


class Mount:
    """A real zonefuse mount of img on WORK/name (daemonized)."""

    def __init__(self, img, name, opts=None, foreground=False):
        self.img = img
        self.dir = os.path.join(WORK, name)
        self.opts = opts
        self.proc = None
        self.result = None
        os.makedirs(self.dir, exist_ok=True)
        _mounts.append(self)
        if foreground is not None:
            self.mount(foreground)

    def mount(self, foreground=False):
        args = [ZONEFUSE, "mount", self.img, self.dir]
        opts = self.opts
        if os.environ.get("E2E_DEBUG"):
            # Every daemon in the foreground, logging every operation to
            # WORK (with E2E_KEEP, kept for reading).
            foreground = True
            opts = f"{opts},debug" if opts else "debug"
        if opts:
            args += ["-o", opts]
        if foreground:
            # -f: the daemon is our child; its log goes to WORK.
            self.log = open(os.path.join(WORK, os.path.basename(self.dir) + ".log"), "a")
            args.append("-f")
            self.proc = subprocess.Popen(args, stdout=self.log, stderr=self.log)
            t0 = time.time()
            while not os.path.ismount(self.dir):
                if self.proc.poll() is not None or time.time() - t0 > 30:
                    raise AssertionError(f"zonefuse mount -f {self.img} did not mount")
                time.sleep(0.02)
        else:
            r = subprocess.run(args, capture_output=True, text=True)
            assert r.returncode == 0, f"zonefuse mount {self.img} failed: {r.stderr}"
            assert os.path.ismount(self.dir), f"{self.dir} is not a mount point"
        os.stat(self.dir)

    def path(self, *p):
        return os.path.join(self.dir, *p)

    def pids(self):
        return daemon_pids(self.img, exact=True)

    def wait_gone(self, limit=60):
        t0 = time.time()
        while self.pids():
            if time.time() - t0 > limit:
                backtraces()
                raise AssertionError(f"the daemon of {self.img} did not exit within {limit} s")
            time.sleep(0.05)
        if self.proc:
            self.proc.wait()

    def holders(self):
        """Processes with a file, a directory or a mapping open under the
        mount (from /proc): what keeps a umount busy."""
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            base = f"/proc/{pid}"
            try:
                links = [os.path.join(base, "fd", f)
                         for f in os.listdir(base + "/fd")]
                links += [base + "/cwd", base + "/root"]
                maps = open(base + "/maps").read()
            except OSError:
                continue
            paths = []
            for link in links:
                try:
                    t = os.readlink(link)
                except OSError:
                    continue
                if t == self.dir or t.startswith(self.dir + "/"):
                    paths.append(f"{os.path.basename(link)} -> {t}")
            if self.dir + "/" in maps:
                paths.append("a mapping")
            if paths:
                try:
                    comm = open(base + "/comm").read().strip()
                except OSError:
                    comm = "?"
                found.append(f"{pid} ({comm}): {', '.join(paths)}")
        return found

    def umount(self):
        """Unmount and wait for the daemon to finish writing and exit.

        A umount refused as busy is tried again for up to 5 s, and what
        held the mount is logged (processes from /proc; none means a
        reference of the kernel's own, such as a file whose last close is
        still being released): on a loaded machine the test must not fail
        for a reference that goes by itself, and must say what it was."""
        t0 = time.time()
        while True:
            r = subprocess.run(["umount", self.dir], capture_output=True,
                               text=True)
            if r.returncode == 0 or "busy" not in r.stderr or \
                    time.time() - t0 > 5:
                break
            who = self.holders()
            log(f"umount {self.dir}: busy; held by "
                f"{'; '.join(who) if who else 'no process (a kernel reference)'}"
                "; trying again")
            time.sleep(0.1)
        assert r.returncode == 0, \
            f"umount {self.dir}: {r.stderr.strip()}; held by {self.holders()}"
        if time.time() - t0 > 0.5:
            log(f"umount {self.dir}: unmounted after {time.time() - t0:.1f} s busy")
        self.wait_gone()

    def kill(self):
        """kill -9 the daemon and clean up the dead mount."""
        for pid in self.pids():
            os.kill(pid, signal.SIGKILL)
        self.wait_gone(10)
        lazy_umount(self.dir)

    def stats(self):
        return json.loads(os.getxattr(self.dir, "user.zonefuse.stats"))


def try_mount(img, name, opts=None):
    """Mount img (daemonized) on WORK/name if it mounts. Returns (Mount or
    None, the CompletedProcess of `zonefuse mount`): a refusal is the
    caller's to judge, by its exit status and message."""
    m = Mount(img, name, opts, foreground=None)
    args = [ZONEFUSE, "mount", img, m.dir] + (["-o", opts] if opts else [])
    r = subprocess.run(args, capture_output=True, text=True)
    m.result = r
    if r.returncode or not os.path.ismount(m.dir):
        _mounts.remove(m)
        return None, r
    return m, r


def expect_errno(err, fn, *args, **kw):
    """fn(*args) must fail with errno err."""
    try:
        fn(*args, **kw)
    except OSError as e:
        assert e.errno == err, (f"{fn.__name__}{args}: errno {errno.errorcode.get(e.errno)}, "
                                f"expected {errno.errorcode[err]}")
        return
    raise AssertionError(f"{fn.__name__}{args} succeeded, expected {errno.errorcode[err]}")


def run_tests(tests, picked=None):
    """Run each test (name, fn); a failure is reported and the rest go on.
    picked (default: the command line's arguments) picks tests by name."""
    if picked is None:
        picked = sys.argv[1:]
    failed = []
    for name, fn in tests:
        if picked and name not in picked:
            continue
        if _timed_out.is_set():
            failed.append(name)
            continue
        t0 = time.time()
        try:
            fn()
        except Exception:  # report every failure, then go on
            failed.append(name)
            print(f"{NAME}: FAIL: {name} ({time.time() - t0:.1f} s)", file=sys.stderr)
            traceback.print_exc()
            sys.stderr.flush()
        else:
            log(f"ok: {name} ({time.time() - t0:.1f} s)")
    if _timed_out.is_set():
        print(f"{NAME}: FAIL: the watchdog ended a hung test after {TIMEOUT} s",
              file=sys.stderr)
        failed.append("(timeout)")
    if failed:
        log(f"{len(failed)} failed: {' '.join(failed)}")
        sys.exit(1)
    log("all passed")
    sys.exit(0)
