#!/usr/bin/env python3
"""Plots and a markdown report from the region benchmarks' JSON Lines.

Usage: report.py RESULTS.jsonl OUTDIR [--title TEXT] [--command TEXT] [--md NAME]
Writes OUTDIR/*.png and OUTDIR/README.md (or OUTDIR/NAME: machine, commit,
date, command, tables of medians with spread, and the ratios the issue asks
about).
"""
import argparse
import collections
import datetime
import gzip
import json
import os
import platform
import statistics
import subprocess

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(path):
    recs = []
    with (gzip.open(path, "rt") if str(path).endswith(".gz") else open(path)) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                try:
                    recs.append(json.loads(line))
                except json.JSONDecodeError:
                    pass
    return recs


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def spread(xs):
    return (min(xs), max(xs)) if xs else (float("nan"), float("nan"))


def commit():
    try:
        return subprocess.check_output(["git", "rev-parse", "--short", "HEAD"], text=True,
                                       cwd=os.path.dirname(os.path.abspath(__file__))).strip()
    except Exception:
        return os.environ.get("REGION_COMMIT", "unknown")


def save_figure(fig, out, name, alt, md):
    """OUTDIR/NAME.png, linked from the report."""
    fig.tight_layout()
    fig.savefig(os.path.join(out, f"{name}.png"), dpi=110)
    plt.close(fig)
    md.append(f"\n![{alt}]({name}.png)\n")


def frag_plots(recs, out, md):
    frag = [r for r in recs if r["experiment"].startswith("frag_")]
    if not frag:
        return
    md.append("## Fragmentation (paper Fig. 4a-c)\n")
    md.append("| experiment | ops | final app size (KiB) | full slabs | partial slabs | used slabs (KiB) | verified |")
    md.append("|---|---|---|---|---|---|---|")
    fig, axes = plt.subplots(1, len(frag), figsize=(5 * len(frag), 3.6))
    if len(frag) == 1:
        axes = [axes]
    for ax, r in zip(axes, frag):
        t = r["series_op"]
        ax2 = ax.twinx()
        ax.plot(t, r["series_app_kb"], color="gray", linestyle=":", label="application size (KiB)")
        ax2.plot(t, r["series_full"], label="full slabs")
        ax2.plot(t, r["series_partial"], label="partial slabs")
        ax2.plot(t, r["series_extents"], label="packed extents", alpha=0.6)
        ax.set_xlabel("operation")
        ax.set_ylabel("application size (KiB)")
        ax2.set_ylabel("slabs / extents")
        ax.set_title(r["experiment"])
        ax2.legend(fontsize=7, loc="upper left")
        md.append(f"| {r['experiment']} | {int(r['ops'])} | {r['bytes'] / 1024:.1f} | {int(r['final_full_slabs'])} | "
                  f"{int(r['final_partial_slabs'])} | {r['final_used_bytes'] / 1024:.0f} | {r['verified']} |")
    save_figure(fig, out, "fragmentation", "fragmentation", md)
    md.append("Packed extents: how many (address, size) pairs a region send of this pool would need.\n")


def variant(r):
    """Table/plot name of a list-exchange record: region records by transfer
    mode (records from before the zero-copy path had none: copy) and levels."""
    if r["allocator"] != "myrmics-region":
        return r["allocator"]
    return f"myrmics-region {r.get('transfer', 'copy')} ({r.get('scheduler_levels', 0)}-level)"


def key(r):
    """(variant, workers, nodes): the key of every list-exchange table."""
    return (variant(r), int(r["workers"]), int(r["nodes"]))


def by_key(lst, field):
    """field's values by key(r), over the records that have it."""
    d = collections.defaultdict(list)
    for r in lst:
        if field in r:
            d[key(r)].append(r[field])
    return d


def ratio(a, b):
    return f"{a / b:.2f}" if a == a and b == b and b > 0 else "-"


def breakdown_table(lst, groups, md):
    """Phases of the region exchange (records from bench_list with walk_seconds):
    each column is the max over workers, median over repetitions; the
    repetitions without first-touch page faults are the steady state."""
    phases = collections.defaultdict(lambda: collections.defaultdict(list))
    for r in lst:
        if "walk_seconds" not in r or r["allocator"] != "myrmics-region":
            continue
        for f in ("walk_seconds", "send_recv_seconds", "pack_request_seconds", "barrier_seconds",
                  "minor_faults", "nodes_in_address_order"):
            phases[key(r)][f].append(r.get(f, float("nan")))
    if not phases:
        return
    md.append("\nPhases of the region exchange (max over workers, median of repetitions): the application's "
              "own traversal of the peer's lists (`walk`), the library calls (`send+recv`, of which `pack` "
              "are the scheduler requests; the rest is the header messages and waiting for the peer), "
              "`mr_barrier` after each stage, minor page faults during the exchange (max; the first "
              "repetition takes the first touch of every peer's pages), and the share of nodes that "
              "bulk allocation put right after their predecessor:\n")
    md.append("| variant | workers | nodes/worker | exchange s | walk s | send+recv s | pack s | barrier s "
              "| page faults (max) | in address order |")
    md.append("|---|---|---|---|---|---|---|---|---|---|")
    for k in sorted(phases):
        p = phases[k]
        md.append(f"| {k[0]} | {k[1]} | {k[2]} | {med(groups[k]):.4f} | {med(p['walk_seconds']):.4f} "
                  f"| {med(p['send_recv_seconds']):.4f} | {med(p['pack_request_seconds']):.4f} "
                  f"| {med(p['barrier_seconds']):.4f} | {max(p['minor_faults']):.0f} "
                  f"| {min(p['nodes_in_address_order']):.3f} |")


def roofline_table(lst, groups, md):
    """Region zero-copy exchange against the roofline (bench_list_roofline:
    the same lists, stages, barriers and walk in plain memory, no library)
    and OpenSHMEM, where the run has roofline records. OpenSHMEM / roofline
    is the best ratio any library could reach on this machine."""
    walks = by_key(lst, "walk_seconds")
    keys = sorted({(k[1], k[2]) for k in groups if k[0].startswith("roofline-")})
    if not keys:
        return
    zc, peer, own, sh = ("myrmics-region zero-copy (1-level)", "roofline-peer-walk", "roofline-own-walk",
                         "openshmem-getmem")
    md.append("\nRoofline (medians; max over workers): the region zero-copy exchange and its walk, the same "
              "stages, barriers and walk without any library (`roofline-peer-walk`: each worker walks its "
              "partner's list in shared memory, last written by another core, as after a zero-copy receive; "
              "`roofline-own-walk`: each walks its own list in private memory), OpenSHMEM, and the ratios; "
              "OpenSHMEM / roofline is the best any library could reach here. ns/node: walk time per node "
              "visit of one worker (walk s / (nodes x (workers-1))):\n")
    md.append("| workers | nodes/worker | region s | region walk s | roofline peer s | roofline own s | OpenSHMEM s "
              "| region walk ns/node | peer walk ns/node | OpenSHMEM / region | OpenSHMEM / roofline peer "
              "| OpenSHMEM / roofline own |")
    md.append("|---|---|---|---|---|---|---|---|---|---|---|---|")

    def f4(x):
        return f"{x:.4f}" if x == x else "-"

    def ns(w, n, nw):
        return f"{w / (n * (nw - 1)) * 1e9:.1f}" if w == w and nw > 1 else "-"
    for nw, n in keys:
        r, rw = med(groups.get((zc, nw, n), [])), med(walks.get((zc, nw, n), []))
        p, o = med(groups.get((peer, nw, n), [])), med(groups.get((own, nw, n), []))
        pw = med(walks.get((peer, nw, n), []))
        s_ = med(groups.get((sh, nw, n), []))
        md.append(f"| {nw} | {n} | {f4(r)} | {f4(rw)} | {f4(p)} | {f4(o)} | {f4(s_)} | {ns(rw, n, nw)} "
                  f"| {ns(pw, n, nw)} | {ratio(s_, r)} | {ratio(s_, p)} | {ratio(s_, o)} |")


def list_plots(recs, out, md):
    lst = [r for r in recs if r["experiment"] == "list_exchange"]
    if not lst:
        return
    groups = by_key(lst, "seconds")
    md.append("## Linked-list exchange (paper Fig. 4g-h)\n")
    md.append("Exchange phase only (all stages, max over workers); median of repetitions, [min, max].\n")
    md.append("| variant | workers | nodes/worker | seconds (median) | spread | verified |")
    md.append("|---|---|---|---|---|---|")
    sendrecv = by_key(lst, "send_recv_seconds")
    ver = collections.defaultdict(lambda: True)
    for r in lst:
        ver[key(r)] &= bool(r["verified"]) and r["fails"] == 0
    for k in sorted(groups):
        lo, hi = spread(groups[k])
        md.append(f"| {k[0]} | {k[1]} | {k[2]} | {med(groups[k]):.4f} | [{lo:.4f}, {hi:.4f}] | {ver[k]} |")
    # Ratios at the largest worker count.
    wmax = max(k[1] for k in groups)
    md.append(f"\nRatios at {wmax} workers (baseline time / region time, > 1 means regions faster; "
              "1-level scheduler; zero-copy = same-host sends move no bytes, copy = "
              "MANYALLOC_REGION_TRANSFER=copy, every send copies the list):\n")
    md.append("| nodes | zero-copy vs MPI_Get | zero-copy vs OpenSHMEM | copy vs MPI_Get | copy vs OpenSHMEM |")
    md.append("|---|---|---|---|---|")
    for n in sorted({k[2] for k in groups if k[1] == wmax}):
        zc = med(groups.get(("myrmics-region zero-copy (1-level)", wmax, n), []))
        cp = med(groups.get(("myrmics-region copy (1-level)", wmax, n), []))
        get = med(groups.get(("mpi-get", wmax, n), []))
        sh = med(groups.get(("openshmem-getmem", wmax, n), []))
        md.append(f"| {n} | {ratio(get, zc)} | {ratio(sh, zc)} | {ratio(get, cp)} | {ratio(sh, cp)} |")
    if sendrecv:
        md.append("\nTime inside mr_send/mr_recv during the exchange (max over workers, median of repetitions; "
                  "includes waiting for the peer to reach its call), as a share of the exchange time:\n")
        md.append("| variant | workers | nodes/worker | send+recv s | share |")
        md.append("|---|---|---|---|---|")
        for k in sorted(sendrecv):
            sr = med(sendrecv[k])
            md.append(f"| {k[0]} | {k[1]} | {k[2]} | {sr:.4f} | {sr / med(groups[k]):.0%} |")
    breakdown_table(lst, groups, md)
    roofline_table(lst, groups, md)
    # Plot (a): time vs nodes at wmax; (b): time vs workers at the most common node count.
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    names = sorted({k[0] for k in groups})
    for name in names:
        xs = sorted({k[2] for k in groups if k[0] == name and k[1] == wmax})
        if len(xs) > 1:
            a1.plot(xs, [med(groups[(name, wmax, x)]) for x in xs], marker="o", label=name)
    a1.set_xscale("log")
    a1.set_yscale("log")
    a1.set_xlabel("nodes per worker")
    a1.set_ylabel("exchange time (s)")
    a1.set_title(f"{wmax} workers")
    a1.legend(fontsize=7)
    ncount = collections.Counter(k[2] for k in groups)
    nfix = 30000 if 30000 in ncount else ncount.most_common(1)[0][0]
    for name in names:
        xs = sorted({k[1] for k in groups if k[0] == name and k[2] == nfix})
        if len(xs) > 1:
            a2.plot(xs, [med(groups[(name, x, nfix)]) for x in xs], marker="o", label=name)
    a2.set_xscale("log", base=2)
    a2.set_yscale("log")
    a2.set_xlabel("workers")
    a2.set_ylabel("exchange time (s)")
    a2.set_title(f"{nfix} nodes per worker")
    a2.legend(fontsize=7)
    save_figure(fig, out, "list_exchange", "list exchange", md)


def grouped(recs, experiment, by):
    """The records of `experiment`, grouped by by(r); empty when it did not run."""
    groups = collections.defaultdict(list)
    for r in recs:
        if r["experiment"] == experiment:
            groups[by(r)].append(r)
    return groups


def bh_plots(recs, out, md):
    groups = grouped(recs, "barnes_hut", lambda r: (int(r["workers"]), r["allocator"]))
    if not groups:
        return
    md.append("## Barnes-Hut step (paper Fig. 4e-f)\n")
    md.append("Per-worker average over the timed steps (step 0 is warm-up and verification); median over runs.\n")
    md.append("| workers | layout | schedulers | bodies | compute s | worker comm s | sched comm s | barrier s | "
              "max force error | verified |")
    md.append("|---|---|---|---|---|---|---|---|---|---|")
    parts = ["compute_s", "worker_comm_s", "sched_comm_s", "barrier_s"]
    labels, stacks = [], {p: [] for p in parts}
    for k in sorted(groups):
        rs = groups[k]
        vals = {p: med([r[p] for r in rs]) for p in parts}
        ok = all(r["verified"] and r["fails"] == 0 for r in rs)
        md.append(f"| {k[0]} | {k[1]} | {int(rs[0]['schedulers'])} | {int(rs[0]['bodies'])} | "
                  + " | ".join(f"{vals[p]:.4f}" for p in parts)
                  + f" | {max(r['max_rel_force_error'] for r in rs):.3g} | {ok} |")
        labels.append(f"{k[0]}w\n{k[1].replace('myrmics-region-', '')}")
        for p in parts:
            stacks[p].append(vals[p])
    for w in sorted({k[0] for k in groups}):
        one = groups.get((w, "myrmics-region-1sched"))
        two = groups.get((w, "myrmics-region-2level"))
        if one and two:
            s1 = med([r["sched_comm_s"] for r in one])
            s2 = med([r["sched_comm_s"] for r in two])
            md.append(f"\n{w} workers: scheduler communication, two-level / single = {s2 / s1:.2f}")
    fig, ax = plt.subplots(figsize=(max(5, 1.3 * len(labels)), 4))
    bottom = [0.0] * len(labels)
    for p in parts:
        ax.bar(labels, stacks[p], bottom=bottom, label=p.replace("_s", "").replace("_", " "))
        bottom = [b + v for b, v in zip(bottom, stacks[p])]
    ax.set_ylabel("seconds per worker")
    ax.legend(fontsize=7)
    save_figure(fig, out, "barnes_hut", "barnes-hut", md)


def dl_variant(r):
    """Table/plot name of a Delaunay record: the region version by scheduler
    levels and transfer mode, the OpenSHMEM version as is."""
    if r["allocator"] != "manyalloc-region":
        return r["allocator"]
    return f"manyalloc-region {r.get('transfer', '?')} ({int(r.get('scheduler_levels', 1))}-level)"


def delaunay_plots(recs, out, md):
    groups = grouped(recs, "delaunay", lambda r: (dl_variant(r), int(r["workers"]), int(r["points_initial"])))
    if not groups:
        return
    parts = ["compute_s", "worker_comm_s", "sched_comm_s", "barrier_s"]
    md.append("## Delaunay triangulation with refinement (paper Fig. 4d)\n")
    md.append("Whole run (local triangulation and refinement, then seam rounds until no worker inserts a point), "
              "max over workers, median of runs [min, max]; the phase columns are per-worker averages (median "
              "of runs), as in the Barnes-Hut table. Points and triangles are the final, global counts.\n")
    md.append("| variant | workers | initial points | final points | triangles | rounds | seconds | spread | "
              "compute s | worker comm s | sched comm s | barrier s | verified |")
    md.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for k in sorted(groups, key=lambda k: (k[1], k[0], k[2])):
        rs = groups[k]
        secs = [r["seconds"] for r in rs]
        lo, hi = spread(secs)
        ok = all(r["verified"] and r["fails"] == 0 for r in rs)
        r0 = rs[0]
        md.append(f"| {k[0]} | {k[1]} | {k[2]} | {int(r0['points_final'])} | {int(r0['triangles_final'])} | "
                  f"{int(r0['rounds'])} | {med(secs):.3f} | [{lo:.3f}, {hi:.3f}] | "
                  + " | ".join(f"{med([r[p] for r in rs]):.3f}" for p in parts) + f" | {ok} ({len(rs)} runs) |")
    one, two = "manyalloc-region zero-copy (1-level)", "manyalloc-region zero-copy (2-level)"
    md.append("\nOpenSHMEM time / region time (> 1: the region version is faster), of the medians and of the "
              "fastest runs (the least disturbed on a shared machine):\n")
    md.append("| workers | initial points | region 1-level s | region 2-level s | OpenSHMEM s | "
              "OpenSHMEM / region 1-level | OpenSHMEM / region 2-level | fastest: OpenSHMEM / region 1-level |")
    md.append("|---|---|---|---|---|---|---|---|")

    def secs(name, w, n):
        return [r["seconds"] for r in groups.get((name, w, n), [])]

    def f3(x):
        return f"{x:.3f}" if x == x else "-"
    for w, n in sorted({(k[1], k[2]) for k in groups}):
        r1, r2, sh = med(secs(one, w, n)), med(secs(two, w, n)), med(secs("openshmem", w, n))
        fast = ratio(spread(secs("openshmem", w, n))[0], spread(secs(one, w, n))[0])
        md.append(f"| {w} | {n} | {f3(r1)} | {f3(r2)} | {f3(sh)} | {ratio(sh, r1)} | {ratio(sh, r2)} | {fast} |")
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.2))
    for name in sorted({k[0] for k in groups}):
        ks = sorted((k for k in groups if k[0] == name), key=lambda k: k[1])
        line, = a1.plot([k[1] for k in ks], [med([r["seconds"] for r in groups[k]]) for k in ks], marker="o",
                        label=f"{name} (median)")
        a1.plot([k[1] for k in ks], [min(r["seconds"] for r in groups[k]) for k in ks], linestyle="--",
                color=line.get_color(), alpha=0.6, label=f"{name} (fastest)")
    a1.set_xscale("log", base=2)
    a1.set_xlabel("workers")
    a1.set_ylabel("seconds (max over workers, median)")
    a1.set_title("Delaunay: time vs workers")
    a1.legend(fontsize=6)
    keys = sorted(groups, key=lambda k: (k[1], k[0]))
    def short(name):
        return (name.replace("manyalloc-region ", "").replace("zero-copy ", "zc ").replace("openshmem", "shmem")
                .replace("(1-level)", "1L").replace("(2-level)", "2L"))
    labels = [f"{k[1]}w\n{short(k[0])}" for k in keys]
    bottom = [0.0] * len(keys)
    for p in parts:
        vals = [med([r[p] for r in groups[k]]) for k in keys]
        a2.bar(range(len(keys)), vals, bottom=bottom, label=p.replace("_s", "").replace("_", " "))
        bottom = [b + v for b, v in zip(bottom, vals)]
    a2.set_xticks(range(len(keys)))
    a2.set_xticklabels(labels, fontsize=6)
    a2.set_ylabel("seconds per worker (average)")
    a2.set_title("time split")
    a2.legend(fontsize=7)
    save_figure(fig, out, "delaunay", "delaunay", md)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("jsonl")
    ap.add_argument("outdir")
    ap.add_argument("--title", default="Region allocator benchmarks")
    ap.add_argument("--command", default="region/bench/run_bench.sh")
    ap.add_argument("--md", default="README.md", help="name of the markdown file in OUTDIR")
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    recs = load(a.jsonl)
    dev = recs[0]["device"] if recs else "unknown"
    md = [f"# {a.title}\n",
          f"- machine: {dev}, {os.cpu_count()} CPUs visible to the report script, {platform.platform()}",
          f"- commit: {commit()}",
          f"- date: {datetime.datetime.now().isoformat(timespec='seconds')}",
          f"- command: `{a.command}`",
          f"- records: {len(recs)}, all verified: {all(r['verified'] for r in recs)}\n"]
    frag_plots(recs, a.outdir, md)
    list_plots(recs, a.outdir, md)
    bh_plots(recs, a.outdir, md)
    delaunay_plots(recs, a.outdir, md)
    with open(os.path.join(a.outdir, a.md), "w") as f:
        f.write("\n".join(md) + "\n")
    print(f"wrote {a.outdir}/{a.md}")


if __name__ == "__main__":
    main()
