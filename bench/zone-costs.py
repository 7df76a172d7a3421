#!/usr/bin/env python3
"""What a zoned device's own operations cost, from user space, one at a
time: a zone reset (of a full zone, of a zone with 8 MiB written, of an
empty zone) and O_DIRECT writes of 4 KiB and 1 MiB at the write pointer.

These are the floor under every file system's fsync on that device: in
the QEMU guest (bench/zoned-peers.sh) the device's copies run on the
emulated CPUs, so they are far from a drive's, and a memory-backed
null_blk frees each page of a zone under its lock when it resets it.
docs/performance.md ("Where the near-full p99 comes from") uses them.

usage: scripts/zoned-vm.sh -- python3 bench/zone-costs.py [DEVICE] [ZONES] [OUT.json]
DEVICE ("" or none: $ZONEFUSE_NULLB, else $ZONEFUSE_ZNS); ZONES (default 6)
sequential zones from the first one are written and reset (their data
is lost). The figures go to stdout, and as JSON to OUT.json if given.
"""
import fcntl
import json
import mmap
import os
import struct
import sys
import time

BLKREPORTZONE = 0xC0101282  # _IOWR(0x12, 130, struct blk_zone_report)
BLKRESETZONE = 0x40101283   # _IOW(0x12, 131, struct blk_zone_range)
MIB = 1 << 20


def zones_of(fd, nr):
    """(start, length, capacity) in bytes of the first nr sequential
    zones."""
    hdr = struct.Struct("QII")           # sector, nr_zones, flags
    zone = struct.Struct("QQQBBBB4xQ24x")  # struct blk_zone, 64 bytes
    out, sector = [], 0
    while len(out) < nr:
        buf = bytearray(hdr.size + 64 * zone.size)
        hdr.pack_into(buf, 0, sector, 64, 0)
        fcntl.ioctl(fd, BLKREPORTZONE, buf)
        got = hdr.unpack_from(buf, 0)[1]
        if not got:
            break
        for i in range(got):
            start, length, wp, ztype, cond, non_seq, reset, cap = \
                zone.unpack_from(buf, hdr.size + i * zone.size)
            sector = start + length
            if ztype != 1 and len(out) < nr:  # not conventional
                out.append((start * 512, length * 512,
                            (cap or length) * 512))
    return out


def main():
    dev = ((sys.argv[1] if len(sys.argv) > 1 else "") or
           os.environ.get("ZONEFUSE_NULLB") or os.environ.get("ZONEFUSE_ZNS"))
    nr = int(sys.argv[2]) if len(sys.argv) > 2 else 6
    if not dev:
        sys.exit("zone-costs: no device: name one, or run it in scripts/zoned-vm.sh")
    fd = os.open(dev, os.O_RDWR | os.O_DIRECT)
    buf = mmap.mmap(-1, MIB)
    buf.write(os.urandom(MIB))

    def ms(fn):
        t = time.perf_counter()
        fn()
        return (time.perf_counter() - t) * 1e3

    def reset(start, length):
        fcntl.ioctl(fd, BLKRESETZONE, struct.pack("QQ", start // 512,
                                                  length // 512))

    def fill(start, nbytes):
        for off in range(0, nbytes, MIB):
            os.pwrite(fd, buf, start + off)

    rows = []
    for start, length, cap in zones_of(fd, nr):
        reset(start, length)
        fill(start, cap // MIB * MIB)
        full = ms(lambda: reset(start, length))
        fill(start, 8 * MIB)
        part = ms(lambda: reset(start, length))
        empty = ms(lambda: reset(start, length))
        w4k = ms(lambda: os.pwrite(fd, memoryview(buf)[:4096], start))
        w1m = ms(lambda: os.pwrite(fd, buf, start + 4096))
        reset(start, length)
        row = {"zone_start": start, "zone_bytes": length, "zone_cap": cap,
               "reset_full_ms": full, "reset_8mib_ms": part,
               "reset_empty_ms": empty, "write_4k_ms": w4k,
               "write_1m_ms": w1m}
        rows.append(row)
        print("zone at %d MiB: reset full %.2f ms, with 8 MiB %.2f, empty %.2f;"
              " write 4 KiB %.2f ms, 1 MiB %.2f" % (
                  start // MIB, full, part, empty, w4k, w1m))
    os.close(fd)
    if len(sys.argv) > 3:
        with open(sys.argv[3], "w") as f:
            json.dump({"device": dev, "uname": os.uname().release,
                       "zones": rows}, f, indent=1)


if __name__ == "__main__":
    main()
