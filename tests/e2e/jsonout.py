#!/usr/bin/python3
"""tests/e2e/jsonout.py (not json.py: that would hide the json module): machine-readable output that holds for every name.

Files whose names hold quotes, backslashes, a newline, a tab, control
bytes, a space, UTF-8 and bytes that are not UTF-8 (b"\\xff\\xfe") are
made through a real mount, on a file system whose label is not UTF-8
either, and on an image whose own path is not. Then the JSON of every
command (zones, stat, dump, fsck, scrub on the mount and on the device,
the stats xattr) is parsed strictly: the raw bytes must decode as UTF-8
and pass Python's json.loads. Every name must come back byte for byte
through the documented encoding (KEY, or KEY_hex when the bytes are not
UTF-8), and fsck's findings must carry their codes and objects. The text
of `zonefuse dump` must have one line per entry and per extent, with
names escaped as `ls -b` does, and unescaping them gives the bytes back.
"""
import json
import os
import re
import subprocess
import sys

sys.dont_write_bytecode = True     # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib as e  # noqa: E402

NAMES = [b'q"uo\'te', b"back\\slash", b"new\nline", b"tab\tx", b"\xff\xfe",
         b"ctl\x1b\x7f", "café".encode(), b"sp ace", b"{\"json\": 1}"]
DIR = b'd "\xff"'
# A label is UTF-8 text (mkfs refuses other bytes); quotes and a backslash
# still need escaping.
LABEL = 'lab"el\\ café'.encode()
LINK = (b"ln\n", b"\xff\xfe/../x")
IMG = None          # the image, under a name that is not UTF-8 either
MNT = None


def zfb(*args, ok=(0,)):
    """Run zonefuse with byte arguments; returns stdout as bytes."""
    r = subprocess.run([e.ZONEFUSE.encode(), *[a if isinstance(a, bytes) else
                                               a.encode() for a in args]],
                       capture_output=True)
    assert r.returncode in ok, \
        f"zonefuse {args} exited {r.returncode}: {r.stderr.decode(errors='replace')}"
    return r.stdout


def strict(raw, what):
    """Parse raw bytes as a strict reader does."""
    try:
        raw.decode("utf-8")             # strict: no lone surrogates, no bad bytes
        return json.loads(raw)          # no raw control characters in strings
    except ValueError as ex:
        raise AssertionError(f"{what}: not strict JSON ({ex}): {raw[:300]!r}")


def unbytes(o, key):
    """The bytes of field key by the documented encoding."""
    if key + "_hex" in o:
        return bytes.fromhex(o[key + "_hex"])
    return o[key].encode("utf-8")


def unescape(s):
    """Undo `ls -b` escaping (dump's text) on one field."""
    out, i = bytearray(), 0
    simple = {"\\": b"\\", " ": b" ", "n": b"\n", "t": b"\t", "r": b"\r",
              "a": b"\a", "b": b"\b", "f": b"\f", "v": b"\v"}
    while i < len(s):
        c = s[i]
        if c != "\\":
            out += c.encode("utf-8")
            i += 1
        elif s[i + 1] in simple:
            out += simple[s[i + 1]]
            i += 2
        else:
            assert re.fullmatch(r"[0-7]{3}", s[i + 1:i + 4]), f"bad escape in {s!r}"
            out.append(int(s[i + 1:i + 4], 8))
            i += 4
    return bytes(out)


def expected_paths():
    want = {b"/", b"/" + DIR, b"/" + LINK[0]}
    want |= {b"/" + DIR + b"/" + n for n in NAMES}
    return want


def make_files():
    """The names, through the mount; data in each file (one extent)."""
    d = MNT.path().encode() + b"/" + DIR
    os.mkdir(d)
    for i, n in enumerate(NAMES):
        with open(d + b"/" + n, "wb") as f:
            f.write(bytes([i]) * 5000)
            os.fsync(f.fileno())
    os.symlink(LINK[1], MNT.path().encode() + b"/" + LINK[0])
    os.sync()
    assert sorted(os.listdir(d)) == sorted(NAMES)


def mounted_json():
    """The stats xattr and scrub of the mount point: strict, and clean."""
    st = strict(os.getxattr(MNT.dir, "user.zonefuse.stats"), "stats xattr")
    assert unbytes(st, "label") == LABEL, st
    assert st["files"] == len(NAMES) + 1, st        # the symlink counts
    r = strict(zfb("scrub", MNT.dir, "--json"), "scrub MOUNTPOINT --json")
    assert r["mounted"] is True and r["files"] == len(NAMES), r
    assert r["problems"] == [] and r["exit"] == 0, r


def offline_json():
    """zones, stat, dump, fsck on the unmounted image: strict; names back."""
    z = strict(zfb("zones", IMG, "--json"), "zones --json")
    assert unbytes(z, "device") == IMG and len(z["zones"]) == z["nr_zones"], z
    st = strict(zfb("stat", IMG, "--json"), "stat --json")
    assert unbytes(st, "label") == LABEL, st
    assert re.fullmatch(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", st["uuid"]), st
    d = strict(zfb("dump", IMG, "--json"), "dump --json")
    assert unbytes(d, "device") == IMG and d["uuid"] == st["uuid"], d
    assert unbytes(d, "label") == LABEL, d
    got = {unbytes(x, "path"): x for x in d["entries"]}
    assert set(got) == expected_paths(), sorted(got)
    assert unbytes(got[b"/" + LINK[0]], "target") == LINK[1]
    for n in NAMES:
        x = got[b"/" + DIR + b"/" + n]
        assert x["type"] == "file" and x["size"] == 5000 and len(x["extents"]) == 1, x
    f = strict(zfb("fsck", IMG, "--json"), "fsck --json")
    assert unbytes(f, "device") == IMG and f["exit"] == 0 and f["problems"] == [], f
    assert f["inodes"] == len(expected_paths()), f


def dump_text():
    """One line per entry and extent; names escaped; bytes come back."""
    st = strict(zfb("stat", IMG, "--json"), "stat --json")
    lines = zfb("dump", IMG).decode("utf-8").split("\n")
    assert lines[-1] == "", lines
    lines = lines[:-1]
    head = lines[0].split(" ")
    assert head[:3] == ["filesystem", "uuid", st["uuid"]] and head[3] == "label", head
    assert unescape(head[4]) == LABEL, head
    paths, extents = {}, 0
    for line in lines[1:]:
        f = line.split(" ")
        if f[0] == "":
            assert f[2] == "extent" and len(f) == 11, line
            extents += 1
            continue
        assert f[0] in "dflo" and (len(f) == 5 or (f[0] == "l" and len(f) == 7)), line
        paths[unescape(f[4])] = f
        if f[0] == "l":
            assert unescape(f[6]) == LINK[1], line
    assert set(paths) == expected_paths(), sorted(paths)
    assert len(lines) == 1 + len(expected_paths()) + extents and extents == len(NAMES)


def damaged_json():
    """A file named b"\\xff\\xfe" made unreadable: scrub and fsck --data name
    it in their findings, with its code, inode, zone and path."""
    d = strict(zfb("dump", IMG, "--json"), "dump --json")
    z = strict(zfb("zones", IMG, "--json"), "zones --json")["zones"]
    bad = b"/" + DIR + b"/\xff\xfe"
    x = next(x for x in d["entries"] if unbytes(x, "path") == bad)
    ext = x["extents"][0]
    zfb("emu", "media-error", IMG, "--offset",
        str(z[ext["zone"]]["start"] + ext["offset"]), "--length", "4096")
    for cmd in (("scrub", IMG, "--json"), ("fsck", IMG, "--data", "--json")):
        r = strict(zfb(*cmd, ok=(4,)), " ".join(c if isinstance(c, str) else "IMG"
                                                 for c in cmd))
        found = [p for p in r["problems"] if p["code"] == "data-damaged"]
        assert len(found) == 1, r
        p = found[0]
        assert unbytes(p, "path") == bad and "path_hex" in p, p
        assert p["inode"] == x["inode"] and p["zone"] == ext["zone"], p
        assert p["severity"] == "error" and p["fixed"] is False, p
        assert p["file_offset"] == 0 and p["length"] > 0, p
        assert "text_hex" in p and bad in bytes.fromhex(p["text_hex"]), p
        assert r["exit"] == 4 and r["errors"] == 1, r


def main():
    global IMG, MNT
    e.begin("the JSON of zones, stat, dump, fsck, scrub and the stats xattr "
            "parses strictly for names with quotes, backslashes, a newline, "
            "a tab and invalid UTF-8, the names round-trip through the "
            "documented encoding, fsck's findings have codes, and dump's "
            "text has one line per entry")
    plain = os.path.join(e.WORK, "json.img")
    e.zf("emu", "create", plain, "--size", "256M", "--zone-size", "4M")
    zfb("mkfs", plain, "--label", LABEL)
    MNT = e.Mount(plain, "mnt")
    make_files()

    def umount():
        global IMG
        MNT.umount()
        # The offline commands see the image under a name that is not UTF-8.
        IMG = e.WORK.encode() + b'/img "\\ \xfe.img'
        os.rename(plain, IMG)

    e.run_tests([("mounted_json", mounted_json), ("umount", umount),
                 ("offline_json", offline_json), ("dump_text", dump_text),
                 ("damaged_json", damaged_json)], picked=[])


if __name__ == "__main__":
    main()
