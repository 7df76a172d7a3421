#!/usr/bin/python3
"""tests/layers.py: the core's modules call down, never up.

Reads the symbols of the core library (nm), maps each object to its module
(its file name's prefix: alloc_mount.o is alloc's) and checks the calls
between modules against the layering of docs/design.md:

    zfs -> data -> space -> gc -> alloc -> rec -> jrnl -> meta -> zdev

with the tools (fsck, mkfs, crash, fsfind) beside the core: a module may call a
module below it, never one above. The device layer and its backends
(zdev, zemu; zdev_zbd is zdev's) call each other: one ops table and the
helpers its backends share. A call against the layering, or a module the
layering does not know, fails the test with the symbols that make it.

Usage: layers.py LIBZONEFUSE.a (meson passes the one it built).
"""
import re
import subprocess
import sys

# Lowest first; a module may call any module of a lower rank.
RANKS = {
    "util": 0, "crc32c": 0, "zjson": 0,
    "zdev": 1, "zemu": 1,
    "meta": 2, "fsprobe": 2,
    "jrnl": 3,
    "rec": 4,
    "alloc": 5,
    "gc": 6,
    "space": 7,
    "data": 8,
    "zfs": 9,
    "fsck": 10, "mkfs": 10, "crash": 10, "fsfind": 10,
}
# Pairs that call each other by design (the device layer and a backend).
MUTUAL = {("zdev", "zemu"), ("zemu", "zdev")}


def module(obj):
    name = re.sub(r"\.c\.o$|\.o$", "", obj.split("/")[-1])
    if name.startswith("zdev"):
        return "zdev"
    if name == "zlock":
        return "util"
    return name.split("_")[0]


def symbols(lib):
    out = subprocess.run(["nm", lib], capture_output=True, text=True,
                         check=True).stdout
    defined, used, obj = {}, [], None
    for line in out.splitlines():
        if line.endswith(":"):
            obj = line[:-1]
            continue
        f = line.split()
        if len(f) == 3 and f[1] in "TDBR":
            defined[f[2]] = module(obj)
        elif len(f) == 2 and f[0] == "U":
            used.append((module(obj), f[1]))
    return defined, used


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: layers.py LIBZONEFUSE.a")
    defined, used = symbols(sys.argv[1])
    bad = {}
    unknown = sorted({m for m in set(defined.values()) if m not in RANKS})
    for m, sym in used:
        d = defined.get(sym)
        if d is None or d == m or (m, d) in MUTUAL:
            continue
        if m not in RANKS or d not in RANKS:
            continue
        if RANKS[d] >= RANKS[m]:
            bad.setdefault((m, d), set()).add(sym)
    print("layers: the core's calls go down: "
          + " -> ".join(sorted(RANKS, key=RANKS.get, reverse=True)))
    for (m, d), syms in sorted(bad.items()):
        print(f"layers: FAIL: {m} calls {d} (same rank or above): "
              f"{', '.join(sorted(syms))}")
    if unknown:
        print(f"layers: FAIL: modules the layering does not know: {unknown}; "
              "place them in RANKS (tests/layers.py) and docs/design.md")
    sys.exit(1 if bad or unknown else 0)


if __name__ == "__main__":
    main()
