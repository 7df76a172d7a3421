#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The report of bench/run.sh: medians, spreads, ratios and targets.

  report.py RESULTS_DIR

reads RESULTS_DIR/samples.jsonl and meta.json (what run.sh wrote), prints
the tables, and writes RESULTS_DIR/results.json (every sample, the
statistics, the ratios and the targets), results.md (the same tables in
Markdown, for docs/performance.md) and results.png (the ratios as bars).

A ratio says how many times as fast zonefuse is as the reference: for a
speed (MB/s, IOPS, files/s) it is zonefuse / reference, for a time (ms)
or a size (bytes) reference / zonefuse. Above 1, zonefuse is ahead.
"""

import json
import os
import statistics
import sys

HI, LO = "hi", "lo"

# id, label, unit, which way is better. The order is the table's.
WORKLOADS = [
    ("write_fio", "seq write 1 MiB + fsync (fio)", "MB/s", HI),
    ("write_dd", "seq write, dd bs=1M conv=fsync", "MB/s", HI),
    ("write_4files", "4 files written at once", "MB/s", HI),
    ("write_8files", "8 files written at once", "MB/s", HI),
    ("torch_save", "torch.save (the call)", "MB/s", HI),
    ("torch_save_fsync", "torch.save + fsync", "MB/s", HI),
    ("read_cold", "seq read, cache dropped", "MB/s", HI),
    ("read_cold_4files", "4 files read at once, cold", "MB/s", HI),
    ("read_cached", "seq read, cached", "MB/s", HI),
    ("torch_load_first", "torch.load, cache dropped", "MB/s", HI),
    ("torch_load_cached", "torch.load, cached", "MB/s", HI),
    ("rand_4k_psync_1t", "rand read 4 KiB, psync, 1 thread", "IOPS", HI),
    ("rand_4k_psync_4t", "rand read 4 KiB, psync, 4 threads", "IOPS", HI),
    ("rand_4k_io_uring_1t", "rand read 4 KiB, io_uring qd16, 1 thr", "IOPS", HI),
    ("rand_4k_io_uring_4t", "rand read 4 KiB, io_uring qd16, 4 thr", "IOPS", HI),
    ("rand_512_psync_1t", "rand read 512 B, psync, 1 thread", "IOPS", HI),
    ("rand_512_psync_4t", "rand read 512 B, psync, 4 threads", "IOPS", HI),
    ("rand_512_io_uring_1t", "rand read 512 B, io_uring qd16, 1 thr", "IOPS", HI),
    ("rand_512_io_uring_4t", "rand read 512 B, io_uring qd16, 4 thr", "IOPS", HI),
    ("meta_create", "create + write 4 KiB + close", "files/s", HI),
    ("meta_stat", "stat", "files/s", HI),
    ("meta_unlink", "unlink", "files/s", HI),
    ("rm_written", "rm of a checkpoint (dd file): returns", "ms", LO),
    ("rm", "rm of the seq file, read: returns", "ms", LO),
    ("rm_reset", "rm: its zones reset (no fsync)", "ms", LO),
    ("rm_fsync_reset", "rm + fsync(dir): zones reset", "ms", LO),
    ("mount_create", "create the mount test's files", "files/s", HI),
    ("mount_ms", "mount with the files", "ms", LO),
    ("umount_ms", "unmount with the files", "ms", LO),
    ("rss_empty", "daemon RSS, empty file system", "B", LO),
    ("rss_per_file_live", "daemon RSS per file, after creating", "B", LO),
    ("rss_per_file", "daemon RSS per file, after remount", "B", LO),
]
WL = {w[0]: w for w in WORKLOADS}
SYSTEMS = ["limit", "emu", "kernel", "peer", "zonefuse", "zonefuse-dev"]
REFS = ["limit", "kernel", "peer"]

# The targets: (store, workload, kind, reference, bound, text).
# kind "ratio": ratio of zonefuse to the reference >= bound;
# kind "max": zonefuse's median <= bound (in the workload's unit).
TARGETS = [
    ("ram", "write_fio", "ratio", "peer", 1.5, ">= 1.5x peer"),
    ("disk", "write_fio", "ratio", "limit", 0.9, ">= 0.9x O_DIRECT"),
    ("ram", "torch_save", "ratio", "kernel", 0.8, ">= 0.8x kernel"),
    ("ram", "read_cold", "ratio", "kernel", 0.5, ">= 0.5x kernel"),
    ("ram", "read_cold", "ratio", "peer", 1.0, ">= 1.0x peer"),
    ("ram", "read_cached", "ratio", "kernel", 0.9, "~1.0x kernel"),
    ("ram", "rand_4k_psync_1t", "ratio", "peer", 1.0, ">= 1.0x peer"),
    ("ram", "rand_4k_psync_4t", "ratio", "peer", 1.0, ">= 1.0x peer"),
    ("ram", "rand_4k_io_uring_1t", "ratio", "peer", 1.0, ">= 1.0x peer"),
    ("ram", "rand_4k_io_uring_4t", "ratio", "peer", 1.0, ">= 1.0x peer"),
    ("ram", "meta_create", "ratio", "peer", 1.5, ">= 1.5x peer"),
    ("ram", "meta_stat", "ratio", "peer", 1.5, ">= 1.5x peer"),
    ("ram", "meta_unlink", "ratio", "peer", 1.5, ">= 1.5x peer"),
    # A checkpoint is deleted as written. Once read, the file's pages are
    # cached, and rm is the kernel dropping them: "rm" reports that.
    ("ram", "rm_written", "max", None, 10.0, "< 10 ms"),
    ("ram", "mount_ms", "max", None, 1000.0, "< 1 s"),
    # Each file of the mount workload has one extent: a struct zm_extent
    # (24 bytes) in an array of its own, a 32-byte malloc chunk.
    ("ram", "rss_per_file", "max", None, 512.0 + 32, "< 512 B + extents"),
]


def load(results):
    samples = []
    with open(os.path.join(results, "samples.jsonl")) as f:
        for line in f:
            if line.strip():
                samples.append(json.loads(line))
    with open(os.path.join(results, "meta.json")) as f:
        meta = json.load(f)
    return samples, meta


def stats(samples):
    """{store: {workload: {system: {median, min, max, n, values, failed}}}}"""
    out = {}
    for s in samples:
        cell = out.setdefault(s["store"], {}).setdefault(
            s["workload"], {}).setdefault(
            s["system"], {"values": [], "failed": []})
        if "failed" in s:
            cell["failed"].append(s["failed"])
        else:
            cell["values"].append(float(s["value"]))
    for st in out.values():
        for wl in st.values():
            for cell in wl.values():
                v = cell["values"]
                cell["n"] = len(v)
                if v:
                    cell["median"] = statistics.median(v)
                    cell["min"] = min(v)
                    cell["max"] = max(v)
    return out


def ratio(wl, zf, ref):
    """How many times as fast zonefuse is as ref, or None."""
    if zf is None or ref is None or zf <= 0 or ref <= 0:
        return None
    return zf / ref if WL[wl][3] == HI else ref / zf


def median_of(st, store, wl, system):
    cell = st.get(store, {}).get(wl, {}).get(system)
    return cell.get("median") if cell else None


def ratios(st):
    out = {}
    for store, wls in st.items():
        for wl in wls:
            if wl not in WL:
                continue
            zf = median_of(st, store, wl, "zonefuse")
            r = {ref: ratio(wl, zf, median_of(st, store, wl, ref))
                 for ref in REFS}
            # What zonefuse's io_uring transport gains over its /dev/fuse.
            r["transport"] = ratio(wl, zf, median_of(st, store, wl,
                                                     "zonefuse-dev"))
            # What FUSE itself costs: the peer against the kernel.
            r["peer_vs_kernel"] = ratio(wl, median_of(st, store, wl, "peer"),
                                        median_of(st, store, wl, "kernel"))
            out.setdefault(store, {})[wl] = r
    return out


def targets(st, rt):
    out = []
    for store, wl, kind, ref, bound, text in TARGETS:
        if kind == "ratio":
            v = rt.get(store, {}).get(wl, {}).get(ref)
            met = None if v is None else v >= bound
        else:
            v = median_of(st, store, wl, "zonefuse")
            met = None if v is None else v < bound
        out.append({"store": store, "workload": wl, "target": text,
                    "kind": kind, "reference": ref, "bound": bound,
                    "value": v, "met": met})
    return out


def fmt(v, unit=""):
    if v is None:
        return "-"
    if unit == "B" and v >= 1 << 20:
        return "%.1f MiB" % (v / (1 << 20))
    a = abs(v)
    if a >= 1e6:
        return "%.2fM" % (v / 1e6)
    if a >= 1e4:
        return "%.1fk" % (v / 1e3)
    if a >= 100:
        return "%.0f" % v
    if a >= 10:
        return "%.1f" % v
    return "%.2f" % v


def fmt_ratio(v):
    return "-" if v is None else "%.2fx" % v


def cell_text(st, store, wl, system):
    cell = st.get(store, {}).get(wl, {}).get(system)
    if not cell:
        return "-"
    if "median" not in cell:
        return "FAILED" if cell["failed"] else "-"
    return fmt(cell["median"], WL[wl][2])


def spread_text(st, store, wl, system):
    cell = st.get(store, {}).get(wl, {}).get(system)
    if not cell or "median" not in cell:
        return "-"
    unit = WL[wl][2]
    if cell["n"] == 1:
        return fmt(cell["median"], unit)
    return "%s..%s" % (fmt(cell["min"], unit), fmt(cell["max"], unit))


def target_text(tg, store, wl):
    parts = []
    for t in tg:
        if t["store"] == store and t["workload"] == wl:
            mark = {True: "yes", False: "NO", None: "?"}[t["met"]]
            parts.append("%s: %s" % (t["target"], mark))
    return "; ".join(parts)


def tables(st, rt, tg, meta, md):
    """The report as lines of text, plain or Markdown."""
    lines = []
    head = ["workload", "unit", "limit", "emu", "kernel", "peer", "zonefuse",
            "zf-dev", "zf/limit", "zf/kernel", "zf/peer", "zf/zf-dev",
            "peer/kernel", "target"]
    for store in ("ram", "disk"):
        if store not in st:
            continue
        rows = []
        for wl, label, unit, _ in WORKLOADS:
            if wl not in st[store]:
                continue
            r = rt.get(store, {}).get(wl, {})
            rows.append([label, unit] +
                        [cell_text(st, store, wl, s) for s in SYSTEMS] +
                        [fmt_ratio(r.get(k)) for k in
                         ("limit", "kernel", "peer", "transport",
                          "peer_vs_kernel")] +
                        [target_text(tg, store, wl)])
        where = meta.get("stores", {}).get(store, "")
        title = "%s-backed store (%s): medians of %d run(s)" % (
            "RAM" if store == "ram" else "Disk", where, meta.get("reps", 0))
        lines += render(title, head, rows, md)
        spread_head = ["workload"] + SYSTEMS
        spread = [[WL[wl][1]] + [spread_text(st, store, wl, s)
                                 for s in SYSTEMS]
                  for wl, *_ in WORKLOADS if wl in st[store]]
        if meta.get("reps", 1) > 1:
            lines += render("%s: min..max over the runs" % title.split(":")[0],
                            spread_head, spread, md)
    fails = [(store, wl, sys_, f) for store, wls in st.items()
             for wl, cells in wls.items() for sys_, c in cells.items()
             for f in c["failed"]]
    if fails:
        lines.append("")
        lines.append("Failures:")
        for store, wl, sys_, f in fails:
            lines.append("  %s / %s / %s: %s" % (store, sys_, wl, f))
    return lines


def render(title, head, rows, md):
    out = ["", ("### " if md else "") + title, ""]
    if md:
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "|".join(" --- " for _ in head) + "|")
        for r in rows:
            out.append("| " + " | ".join(r) + " |")
        return out
    w = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    for r in [head] + rows:
        out.append("  ".join(str(x).ljust(w[i]) if i < 2 or i == len(r) - 1
                             else str(x).rjust(w[i])
                             for i, x in enumerate(r)).rstrip())
    return out


def header(meta):
    m = meta
    lines = [
        "zonefuse %s on %s: %s, %s CPUs, %s MiB RAM, kernel %s" % (
            m.get("zonefuse"), m.get("host"), m.get("cpu"), m.get("cpus"),
            m.get("mem_total_mb"), m.get("kernel")),
        "disk store: %s %s; libfuse %s, %s, torch %s" % (
            m.get("disk"), m.get("disk_model"), m.get("libfuse"),
            m.get("fio"), m.get("torch")),
        "%s; load average %s at the start, %s at the end; %s s in all" % (
            m.get("date"),
            "/".join("%.1f" % x for x in m.get("load_start", [])),
            "/".join("%.1f" % x for x in m.get("load_end", [])),
            m.get("elapsed_s")),
        "sizes: sequential %s MiB, random reads over %s MiB for %s s, "
        "torch %s MiB, metadata %s files, mount %s files; %s run(s)" % (
            m.get("seq_mb"), m.get("rand_mb"), m.get("rand_secs"),
            m.get("torch_mb"), m.get("meta_files"), m.get("mount_files"),
            m.get("reps")),
    ]
    full = (m.get("seq_mb") == 4096 and m.get("torch_mb") == 2048 and
            m.get("rand_mb") == 2048 and m.get("meta_files") == 20000 and
            m.get("mount_files") == 100000)
    if not full:
        lines.append("SIZES REDUCED from the issue's (4 GiB sequential, "
                     "2 GiB torch and random, 20,000 and 100,000 files)")
    if m.get("quick"):
        lines.append("QUICK run: one run of small sizes, for trying the "
                     "suite; the figures are not for comparing")
    # Said by whoever merged or annotated the samples (docs/performance.md).
    lines += m.get("notes", [])
    lines.append("ratios: how many times as fast zonefuse is as the "
                 "reference (>1: zonefuse ahead); emu is the emulator's "
                 "raw path, limit the store's own O_DIRECT speed; "
                 "zonefuse uses its default transport (io_uring where the "
                 "kernel has it on), zf-dev is zonefuse with "
                 "-o transport=dev, zf/zf-dev the transport's gain")
    return lines


def chart(st, rt, tg, meta, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    stores = [s for s in ("ram", "disk") if s in rt]
    if not stores:
        return
    fig, axes = plt.subplots(1, len(stores), squeeze=False,
                             figsize=(7.5 * len(stores), 11))
    colors = {"limit": "#7f7f7f", "kernel": "#1f77b4", "peer": "#ff7f0e"}
    for ax, store in zip(axes[0], stores):
        wls = [w for w, *_ in WORKLOADS if w in rt[store] and
               any(rt[store][w].get(r) for r in REFS)]
        y = range(len(wls))
        h = 0.27
        for i, ref in enumerate(REFS):
            vals = [rt[store][w].get(ref) or 0 for w in wls]
            ax.barh([k + (i - 1) * h for k in y], vals, height=h,
                    color=colors[ref], label="zonefuse / " + ref)
        for t in tg:
            if t["store"] == store and t["workload"] in wls and \
                    t["kind"] == "ratio":
                k = wls.index(t["workload"]) + (REFS.index(t["reference"]) - 1) * h
                ax.plot([t["bound"]] * 2, [k - h / 2, k + h / 2],
                        color="red", linewidth=2)
        ax.axvline(1.0, color="black", linewidth=0.8)
        ax.set_xscale("log")
        ax.set_yticks(list(y))
        ax.set_yticklabels([WL[w][1] for w in wls], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("times as fast as the reference (log; red: target)")
        ax.set_title("%s store" % ("RAM" if store == "ram" else "disk"))
        ax.legend(fontsize=8, loc="lower right")
        ax.grid(axis="x", which="both", alpha=0.3)
    title = "zonefuse %s, %s, %s CPUs" % (meta.get("zonefuse"),
                                         meta.get("date"), meta.get("cpus"))
    if meta.get("quick"):
        title += "\nQUICK run, small sizes, noisy: not for comparing"
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(16)
    results = sys.argv[1]
    samples, meta = load(results)
    st = stats(samples)
    rt = ratios(st)
    tg = targets(st, rt)
    text = header(meta) + tables(st, rt, tg, meta, md=False)
    print("\n".join(text))
    md = ["```"] + header(meta) + ["```"] + tables(st, rt, tg, meta, md=True)
    with open(os.path.join(results, "results.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    with open(os.path.join(results, "results.json"), "w") as f:
        json.dump({"meta": meta,
                   "workloads": [{"id": w, "label": l, "unit": u,
                                  "better": b} for w, l, u, b in WORKLOADS],
                   "stats": st, "ratios": rt, "targets": tg,
                   "samples": samples}, f, indent=1)
    chart(st, rt, tg, meta, os.path.join(results, "results.png"))
    print("\nwritten: %s/results.json, results.md, results.png" % results)


if __name__ == "__main__":
    main()
