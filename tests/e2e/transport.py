#!/usr/bin/env python3
"""The FUSE transport (src/xport.c): /dev/fuse and FUSE-over-io_uring.

Checks, on each transport this kernel has: the stats and `zonefuse stat`
name it; on io_uring, each queue's thread runs on its CPU only; data
written on one reads back on the other; kill -9 of the daemon with
requests in flight on it leaves no process hung (the mount says
ENOTCONN) and a clean device. Then: transport=uring is refused with
the fix when the kernel has io_uring off; on a fuseblk mount (-o blkdev),
sync(1) makes what was written durable (SYNCFS) and umount waits for it
(DESTROY); an fsync waiting on a frozen device holds no other request
from its CPU. The other end-to-end suites run on both transports through
meson (e2e-*-uring: tests/e2e/uring.sh).
"""
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib as E  # noqa: E402

PARAM = "/sys/module/fuse/parameters/enable_uring"


def uring_state():
    """(available, why not)."""
    if not os.path.exists(PARAM):
        return False, f"this kernel has no FUSE-over-io_uring ({PARAM} is missing)"
    v = open(PARAM).read().strip()
    if v not in ("Y", "1"):
        return False, f"FUSE-over-io_uring is off ({PARAM} is {v}; scripts/test.sh turns it on)"
    return True, ""


def transports():
    ok, why = uring_state()
    if not ok:
        E.log(f"io_uring transport not tested: {why}")
    return ["dev"] + (["uring"] if ok else [])


def digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def test_stats():
    img = E.image("stats.img")
    for t in transports():
        m = E.Mount(img, "stats", opts=f"transport={t}")
        assert m.stats()["transport"] == t, m.stats()["transport"]
        out = E.zf("stat", img).stdout
        assert f"transport    {t}" in out, out
        m.umount()
    assert "transport    none" in E.zf("stat", img).stdout


def test_queues_pinned():
    """On io_uring, each queue's thread (zf-uring-N) runs only on CPU N,
    where the kernel puts the requests issued on N (src/xport.c,
    xp_pin()); a CPU the daemon may not use leaves its thread unpinned."""
    if "uring" not in transports():
        E.log("queues not checked: no io_uring transport here")
        return
    img = E.image("pin.img")
    m = E.Mount(img, "pin", opts="transport=uring")
    allowed = os.sched_getaffinity(0)
    seen = 0
    for pid in m.pids():
        for tid in os.listdir(f"/proc/{pid}/task"):
            name = open(f"/proc/{pid}/task/{tid}/comm").read().strip()
            if not name.startswith("zf-uring-"):
                continue
            cpu = int(name[len("zf-uring-"):])
            cpus = os.sched_getaffinity(int(tid))
            want = {cpu} if cpu in allowed else cpus
            assert cpus == want, f"{name}: runs on {sorted(cpus)}, not {sorted(want)}"
            seen += 1
    possible = 0
    for part in open("/sys/devices/system/cpu/possible").read().strip().split(","):
        possible = max(possible, int(part.split("-")[-1]) + 1)
    assert seen == possible, f"{seen} queue threads for {possible} possible CPUs"
    E.log(f"{seen} io_uring queue threads, each on its CPU")
    m.umount()


def queue_cpus(m):
    """{thread name: CPUs it may run on} of the mount's zf-uring-N threads."""
    out = {}
    for pid in m.pids():
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                name = open(f"/proc/{pid}/task/{tid}/comm").read().strip()
                cpus = os.sched_getaffinity(int(tid))
            except (FileNotFoundError, ProcessLookupError):
                continue
            if name.startswith("zf-uring-") and name[9:].isdigit():
                out[name] = cpus
    return out


def test_queue_spread():
    """A queue whose replies average 128 KiB or more, a reader streaming
    a file through readahead, may run on any CPU while it does, and is
    pinned to its CPU again once the stream stops; 4 KiB reads leave
    every queue pinned (src/xport.c, xp_idle_run())."""
    if "uring" not in transports():
        E.log("queue spread not checked: no io_uring transport here")
        return
    allowed = os.sched_getaffinity(0)
    if len(allowed) < 2:
        E.log("queue spread not checked: one CPU")
        return
    img = E.image("spread.img", "1G")
    m = E.Mount(img, "spread", opts="transport=uring")
    p = m.path("f")
    with open(p, "wb") as f:
        for _ in range(32):
            f.write(os.urandom(8 << 20))
        os.fsync(f.fileno())

    def pinned(c):
        return all(v == {int(k[9:])} for k, v in c.items() if int(k[9:]) in allowed)

    def wide(c):
        return any(len(v) > 1 for k, v in c.items() if int(k[9:]) in allowed)

    assert pinned(queue_cpus(m)), f"before any read: {queue_cpus(m)}"
    fd = os.open(p, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
    t0 = time.time()
    while time.time() - t0 < 1.5:
        for i in range(64):
            os.pread(fd, 4096, (i * 1_000_003 * 4096) % (255 << 20))
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        c = queue_cpus(m)
        assert pinned(c), f"4 KiB reads unpinned a queue: {c}"
    os.close(fd)
    stop = threading.Event()

    def stream():
        while not stop.is_set():
            with open(p, "rb") as f:
                os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
                while not stop.is_set() and f.read(1 << 20):
                    pass
    t = threading.Thread(target=stream)
    t.start()
    seen = None
    try:
        t0 = time.time()
        while time.time() - t0 < 20 and seen is None:
            c = queue_cpus(m)
            if wide(c):
                seen = c
            time.sleep(0.01)
    finally:
        stop.set()
        t.join()
    assert seen, f"no queue unpinned in 20 s of a streaming reader: {queue_cpus(m)}"
    t0 = time.time()
    while time.time() - t0 < 5 and not pinned(queue_cpus(m)):
        time.sleep(0.05)
    assert pinned(queue_cpus(m)), f"5 s after the stream: {queue_cpus(m)}"
    E.log(f"streaming: {', '.join(f'{k} on {sorted(v)}' for k, v in sorted(seen.items()))}; pinned again after")
    m.umount()


def test_data_across():
    """What one transport wrote, the other reads: large and small files,
    a directory listing, xattrs."""
    img = E.image("across.img", "512M")
    ts = transports()
    sums = {}
    for i, t in enumerate(ts):
        m = E.Mount(img, "across", opts=f"transport={t}")
        d = m.path(t)
        os.mkdir(d)
        with open(os.path.join(d, "big"), "wb") as f:
            f.write(os.urandom(9 << 20))
        for n in range(200):
            with open(os.path.join(d, f"s{n}"), "wb") as f:
                f.write(os.urandom(n * 37))
        os.setxattr(d, "user.t", t.encode())
        sums[t] = {n: digest(os.path.join(d, n)) for n in os.listdir(d)}
        m.umount()
    for t in reversed(ts):
        m = E.Mount(img, "across", opts=f"transport={t}")
        for w, files in sums.items():
            d = m.path(w)
            assert sorted(os.listdir(d)) == sorted(files), w
            for n, s in files.items():
                assert digest(os.path.join(d, n)) == s, f"{w}/{n} read on {t}"
            assert os.getxattr(d, "user.t") == w.encode()
        m.umount()
    E.fsck(img)


WORKLOAD = r"""
import os, sys
d, kind, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
buf = os.urandom(1 << 20)
try:
    if kind == "write":
        with open(os.path.join(d, f"w{n}"), "wb") as f:
            for _ in range(4096):
                f.write(buf)
    elif kind == "read":
        p = os.path.join(d, "r")
        while True:
            fd = os.open(p, os.O_RDONLY)
            while os.read(fd, 1 << 20):
                pass
            os.close(fd)
    else:
        i = 0
        while True:
            p = os.path.join(d, f"m{n}-{i}")
            open(p, "w").close()
            os.stat(p)
            os.unlink(p)
            i += 1
except OSError:
    sys.exit(0)
"""


def test_kill_in_flight():
    """kill -9 while writers, readers and metadata loops keep requests in
    flight: every one of them ends within 20 s, the mount says ENOTCONN,
    and the device checks clean."""
    for t in transports():
        img = E.image(f"kill-{t}.img", "1G", "16M")
        m = E.Mount(img, f"kill-{t}", opts=f"transport={t}")
        with open(m.path("r"), "wb") as f:
            f.write(os.urandom(32 << 20))
        procs = [subprocess.Popen([sys.executable, "-c", WORKLOAD, m.dir, k, str(i)])
                 for i, k in enumerate(["write"] * 3 + ["read"] * 2 + ["meta"] * 2)]
        time.sleep(1.5)
        pids = m.pids()
        assert pids, "no daemon"
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        t0 = time.time()
        for p in procs:
            try:
                p.wait(timeout=max(1, 20 - (time.time() - t0)))
            except subprocess.TimeoutExpired:
                stuck = [(q.pid, open(f"/proc/{q.pid}/wchan").read())
                         for q in procs if q.poll() is None]
                for q in procs:
                    q.kill()
                raise AssertionError(f"{t}: processes still in the mount 20 s after kill -9: {stuck}")
        E.log(f"{t}: all {len(procs)} processes ended {time.time() - t0:.1f} s after kill -9")
        E.expect_errno(107, os.stat, m.path("r"))  # ENOTCONN
        m.kill()
        E.fsck(img)


def test_forced_uring_refused():
    """transport=uring with io_uring off is refused up front, with the fix;
    auto then uses /dev/fuse."""
    if not os.path.exists(PARAM) or not os.access(PARAM, os.W_OK):
        E.log(f"forced_uring_refused: cannot switch {PARAM} here; only the refusal is checked")
        if uring_state()[0]:
            return
    img = E.image("forced.img")
    old = open(PARAM).read().strip() if os.path.exists(PARAM) else None
    try:
        if old is not None and os.access(PARAM, os.W_OK):
            with open(PARAM, "w") as f:
                f.write("0")
        m, r = E.try_mount(img, "forced", "transport=uring")
        assert m is None, "transport=uring mounted with io_uring off"
        assert "enable_uring" in r.stderr, r.stderr
        m = E.Mount(img, "forced", opts="transport=auto")
        assert m.stats()["transport"] == "dev"
        m.umount()
    finally:
        if old is not None and os.access(PARAM, os.W_OK):
            with open(PARAM, "w") as f:
                f.write("1" if old in ("Y", "1") else "0")


def blkdev_possible():
    return os.path.exists("/dev/loop-control")


def queue_policies(m):
    """{thread name: policy} of the mount's zf-uring-N threads (5 is
    SCHED_IDLE, 0 SCHED_OTHER: /proc/TID/stat field 41)."""
    out = {}
    for pid in m.pids():
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                name = open(f"/proc/{pid}/task/{tid}/comm").read().strip()
                stat = open(f"/proc/{pid}/task/{tid}/stat").read()
            except FileNotFoundError:
                continue
            if name.startswith("zf-uring-") and name[9:].isdigit():
                out[name] = int(stat.rsplit(")", 1)[1].split()[38])
    return out


def idle_share(secs=1.0):
    """The share of all CPUs' time that was idle or iowait over secs."""
    def sample():
        v = [int(x) for x in open("/proc/stat").readline().split()[1:9]]
        return v[3] + v[4], sum(v)
    i0, t0 = sample()
    time.sleep(secs)
    i1, t1 = sample()
    return (i1 - i0) / max(1, t1 - t0)


def wait_policy(m, want, limit):
    t0 = time.time()
    while time.time() - t0 < limit:
        p = queue_policies(m)
        if p and all(v == want for v in p.values()):
            return True
        time.sleep(0.05)
    return False


def test_queue_policy():
    """io_uring's queue threads are SCHED_IDLE while the CPUs are idle
    and SCHED_OTHER within a second once every CPU is busy (a spinning
    process per CPU), then SCHED_IDLE again; -o uring_sched=normal keeps
    them SCHED_OTHER (src/xport.c, xp_idle_run())."""
    if "uring" not in transports():
        E.log("queue policy not checked: no io_uring transport here")
        return
    if os.cpu_count() < 2:
        E.log("queue policy not checked: one CPU")
        return
    img = E.image("policy.img")
    m = E.Mount(img, "policy", opts="transport=uring")

    def idle_or_busy(what):
        if wait_policy(m, 5, 10):
            return
        share = idle_share()
        # A machine busy with other work keeps them SCHED_OTHER, rightly.
        assert share < 0.30, \
            f"{what}: queue threads {queue_policies(m)}, not SCHED_IDLE, with {share:.0%} idle"
        E.log(f"{what}: SCHED_IDLE not checked, the machine is busy ({share:.0%} idle)")

    idle_or_busy("quiet")
    spin = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(os.cpu_count())]
    try:
        assert wait_policy(m, 0, 5), \
            f"every CPU busy: queue threads {queue_policies(m)}, not SCHED_OTHER"
        with open(m.path("f"), "wb") as f:     # the mount still serves
            f.write(b"x" * 65536)
    finally:
        for p in spin:
            p.kill()
            p.wait()
    idle_or_busy("after the load")
    m.umount()
    m = E.Mount(img, "policy", opts="transport=uring,uring_sched=normal")
    time.sleep(0.5)
    p = queue_policies(m)
    assert p and all(v == 0 for v in p.values()), f"uring_sched=normal: {p}"
    m.umount()
    r = E.zf("mount", img, m.dir, "-o", "uring_sched=fast", check=False)
    assert r.returncode == 1 and "uring_sched=fast: expected auto or normal" in r.stderr, \
        (r.returncode, r.stderr)


def test_write_no_getxattr():
    """Writes through the page cache ask the daemon for no
    security.capability each: the INIT reply takes
    FUSE_HANDLE_KILLPRIV_V2 (src/xport.c), after which the kernel asks
    once per inode. Counted in the daemon's debug log; without it there
    was a GETXATTR per write."""
    for t in transports():
        img = E.image(f"kp2-{t}.img")
        m = E.Mount(img, f"kp2-{t}", opts=f"transport={t},debug",
                    foreground=True)
        fd = os.open(m.path("f"), os.O_CREAT | os.O_RDWR, 0o644)
        for i in range(64):
            os.pwrite(fd, b"x" * 4096, i * 4096)
        os.close(fd)
        m.umount()
        with open(m.log.name) as f:
            n = sum("getxattr" in line and "security.capability" in line
                    for line in f)
        assert n <= 2, f"{t}: {n} GETXATTRs of security.capability for 64 writes"
        E.log(f"{t}: {n} GETXATTR of security.capability for 64 writes")


def test_syncfs():
    """fuseblk: a file written without fsync, sync(1), kill -9: the
    remount has it (SYNCFS reached the daemon). Without the sync it would
    wait for the commit interval (60 s here)."""
    if not blkdev_possible():
        E.log("syncfs: no /dev/loop-control: no fuseblk mount here, not checked")
        return
    for t in transports():
        img = E.image(f"sync-{t}.img", "512M")
        m = E.Mount(img, f"sync-{t}", opts=f"transport={t},blkdev,commit=60")
        p = m.path("f")
        with open(p, "wb") as f:
            f.write(os.urandom(20 << 20))
        want = digest(p)
        subprocess.run(["sync"], check=True)
        m.kill()
        m = E.Mount(img, f"sync-{t}")
        assert digest(p) == want, f"{t}: the file synced before kill -9 differs"
        m.umount()
        E.fsck(img)


def test_umount_durable():
    """fuseblk: when umount returns, everything is durable (DESTROY waited):
    kill -9 the daemon at once, remount, the data is there."""
    if not blkdev_possible():
        E.log("umount_durable: no /dev/loop-control: no fuseblk mount here, not checked")
        return
    for t in transports():
        img = E.image(f"umount-{t}.img", "512M")
        m = E.Mount(img, f"umount-{t}", opts=f"transport={t},blkdev,commit=60")
        p = m.path("f")
        with open(p, "wb") as f:
            f.write(os.urandom(48 << 20))
        want = digest(p)
        pids = m.pids()
        r = subprocess.run(["umount", m.dir], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        m.wait_gone(10)
        m = E.Mount(img, f"umount-{t}")
        assert digest(p) == want, f"{t}: the file written before umount differs"
        m.umount()


def test_sync_beside():
    """An fsync the device holds does not hold other requests from the
    same CPU: on io_uring, where each CPU's requests go to one queue, it is
    served off the queue's thread (src/xport.c, xp_is_sync()). The device
    is held for real: the emulator's image sits on an ext4 file system on
    a loop device, frozen (fsfreeze) while the fsync writes."""
    for tool in ("mkfs.ext4", "losetup", "fsfreeze"):
        if not shutil.which(tool):
            E.log(f"sync beside not checked: no {tool}")
            return
    if not blkdev_possible():
        E.log("sync beside not checked: no /dev/loop-control")
        return
    cpu = min(os.sched_getaffinity(0))
    for t in transports():
        ext = os.path.join(E.WORK, f"frz-{t}")
        os.makedirs(ext)
        with open(ext + ".ext4", "wb") as f:
            f.truncate(512 << 20)
        subprocess.run(["mkfs.ext4", "-q", "-F", ext + ".ext4"], check=True)
        subprocess.run(["mount", "-o", "loop", ext + ".ext4", ext], check=True)
        img = os.path.join(ext, "z.img")
        E.zf("emu", "create", img, "--size", "256M", "--zone-size", "4M")
        E.zf("mkfs", img)
        m = E.Mount(img, f"frzm-{t}", opts=f"transport={t}")
        want = os.urandom(1 << 20)
        done = {}
        frozen = False
        try:
            fd = os.open(m.path("f"), os.O_WRONLY | os.O_CREAT, 0o644)
            subprocess.run(["fsfreeze", "-f", ext], check=True)
            frozen = True
            os.write(fd, want)  # staged in the daemon: not on the device

            def on_cpu(name, fn):
                def run():
                    os.sched_setaffinity(0, {cpu})
                    try:
                        fn()
                        done[name] = "ok"
                    except OSError as ex:
                        done[name] = ex.strerror
                th = threading.Thread(target=run)
                th.start()
                return th
            ts = on_cpu("fsync", lambda: os.fsync(fd))
            time.sleep(0.5)
            assert "fsync" not in done, \
                f"{t}: the fsync returned ({done}) with the device frozen"
            td = on_cpu("mkdir", lambda: os.mkdir(m.path("d")))
            td.join(30)
            assert done.get("mkdir") == "ok", \
                f"{t}: a mkdir on CPU {cpu} waited 30 s behind an fsync the device held ({done})"
            assert "fsync" not in done, f"{t}: the fsync returned frozen ({done})"
            subprocess.run(["fsfreeze", "-u", ext], check=True)
            frozen = False
            ts.join(60)
            assert done.get("fsync") == "ok", f"{t}: after the thaw: {done}"
            os.close(fd)
        finally:
            if frozen:
                subprocess.run(["fsfreeze", "-u", ext])
        E.log(f"{t}: mkdir answered while an fsync waited on a frozen device")
        m.umount()
        m = E.Mount(img, f"frzm-{t}")
        with open(m.path("f"), "rb") as f:
            assert f.read() == want, f"{t}: the file fsynced under the freeze differs"
        assert os.path.isdir(m.path("d"))
        m.umount()
        E.fsck(img)
        subprocess.run(["umount", ext], check=True)


if __name__ == "__main__":
    E.begin(__doc__.strip().splitlines()[0])
    E.run_tests([
        ("stats", test_stats),
        ("queues_pinned", test_queues_pinned),
        ("queue_spread", test_queue_spread),
        ("data_across", test_data_across),
        ("kill_in_flight", test_kill_in_flight),
        ("forced_uring_refused", test_forced_uring_refused),
        ("write_no_getxattr", test_write_no_getxattr),
        ("queue_policy", test_queue_policy),
        ("syncfs", test_syncfs),
        ("umount_durable", test_umount_durable),
        ("sync_beside", test_sync_beside),
    ])
