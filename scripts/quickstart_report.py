#!/usr/bin/env python3
"""Writes build/quickstart/REPORT.md for scripts/quickstart.sh: the machine,
one table and one plot (PNG, matplotlib) per layer from the JSON Lines and
TSV files in OUT/data, and what was skipped or failed (OUT/status.tsv).

Usage: quickstart_report.py OUT [--seconds S] [--heap-mode host|gpu]
Exit status 3 when a record says its run was not verified (a wrong result)."""
import argparse
import collections
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
except ImportError:  # tables only
    plt = None

LAYERS = [("heap", "Many-core heap", "heap/"), ("numa", "Node allocator", "numa/"),
          ("region", "Cluster allocator", "region/")]
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]


# ---- inputs -------------------------------------------------------------------
def read_jsonl(path):
    rows = []
    if not os.path.exists(path):
        return rows
    for line in open(path):
        line = line.strip()
        if line.startswith("{"):
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return rows


def read_status(path):
    status = collections.defaultdict(list)
    if os.path.exists(path):
        for line in open(path):
            parts = line.rstrip("\n").split("\t", 2)
            if len(parts) == 3:
                status[parts[0]].append((parts[1], parts[2]))
    return status


def run(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def machine(seconds, data):
    cpu = "unknown"
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem = "unknown"
    for line in open("/proc/meminfo"):
        if line.startswith("MemTotal"):
            mem = f"{int(line.split()[1]) / 2**20:.1f} GiB"
            break
    gpu = run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"])
    os_name = platform.platform()
    if os.path.exists("/etc/os-release"):
        for line in open("/etc/os-release"):
            if line.startswith("PRETTY_NAME="):
                os_name = line.split("=", 1)[1].strip().strip('"') + ", Linux " + platform.release()
    commit = run(["git", "rev-parse", "--short", "HEAD"]) or "unknown"
    if run(["git", "status", "--porcelain", "--untracked-files=no"]):
        commit += " (with uncommitted changes)"
    mpi = run(["mpirun", "--version"]).splitlines()
    nvcc = run(["nvcc", "--version"]).splitlines()
    rows = [("CPU", cpu), ("cores", str(os.cpu_count())), ("memory", mem),
            ("GPU", gpu.replace("\n", "; ") if gpu else "none (nvidia-smi not found or no device)"),
            ("OS", os_name), ("compiler", (run(["c++", "--version"]).splitlines() or ["unknown"])[0]),
            ("MPI", mpi[0] if mpi else "none"), ("CUDA", nvcc[-1] if gpu and nvcc else "not used"),
            ("commit", commit), ("date", datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))]
    load = load_row(data)
    if load:
        rows.append(load)
    if seconds is not None:
        rows.append(("tour wall time", f"{seconds} s until the report (install and build included)"))
    return rows


def load_row(data):
    """The load average when the tour started: other processes competing for the cores."""
    try:
        one, five, fifteen = open(os.path.join(data, "loadavg_start")).read().split()[:3]
    except (OSError, ValueError):
        return None
    busy = float(one) >= 0.5 * (os.cpu_count() or 1)
    return ("load before the tour", f"{one} / {five} / {fifteen} (1, 5, 15 min)" +
            (": other processes were using the cores, so the timings are noisier than on an idle machine"
             if busy else ""))


# ---- helpers --------------------------------------------------------------------
def median(xs):
    return statistics.median(xs) if xs else float("nan")


def fmt_ratio(x):
    if x != x:
        return "-"
    return f"{x:.2f}x" if x < 10 else f"{x:.0f}x" if x >= 100 else f"{x:.1f}x"


def short_allocator(name):
    s = name.split(" ")[0].replace("CreationPolicy=", "")
    if s.startswith("Scatter["):
        return "Scatter (resetfreedpages)" if "resetfreedpages=true" in s else "Scatter"
    if s.startswith("SizeClassSlabs"):
        return "SizeClassSlabs"
    return {"HostMalloc": "glibc malloc", "DeviceMalloc": "CUDA malloc"}.get(s, s)


def size_label(r):
    if "mixed" in r.get("experiment", "") or r.get("size") == "mixed":
        return "mixed 16 B-4 KiB"
    b = int(r["bytes"])
    return f"{b // 1024} KiB" if b >= 1024 and b % 1024 == 0 else f"{b} B"


def size_key(label):
    if label.startswith("mixed"):
        return float("inf")
    n, unit = label.split()
    return int(n) * (1024 if unit == "KiB" else 1)


def grouped_bars(ax, groups, series, values, ylabel, title, log=False, ref=None):
    """values[(group, series)] -> number; one bar group per group."""
    n = max(len(series), 1)
    width = 0.8 / n
    for i, s in enumerate(series):
        xs, ys = [], []
        for g, group in enumerate(groups):
            v = values.get((group, s))
            if v is not None and v == v and v > 0:
                xs.append(g - 0.4 + width * (i + 0.5))
                ys.append(v)
        ax.bar(xs, ys, width, label=s, color=PALETTE[i % len(PALETTE)])
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, fontsize=8)
    if log:
        ax.set_yscale("log")
    if ref is not None:
        ax.axhline(ref, color="black", linewidth=0.8, linestyle="--")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", alpha=0.3, which="both")


def savefig(fig, path, legend_from=None):
    """legend_from: an axis whose legend goes below the plots, off the bars."""
    if legend_from is not None:
        handles, labels = legend_from.get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 5), fontsize=8, frameon=False)
        fig.tight_layout(rect=(0, 0.07 * ((len(labels) + 4) // 5), 1, 1))
    else:
        fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ---- layer 1: the many-core heap -----------------------------------------------
def heap_section(data, out, mode, md, summary, bad):
    path = os.path.join(data, "heap_gpu.jsonl" if mode == "gpu" else "heap_host.jsonl")
    rows = read_jsonl(path)
    if rows:
        heap_main(rows, out, mode, md, summary, bad)
    if mode == "gpu":
        heap_peers(data, out, md, bad)


def heap_main(rows, out, mode, md, summary, bad):
    baseline = "CUDA malloc" if mode == "gpu" else "glibc malloc"
    rate = {}  # (size, allocator, alloc|free) -> M ops/s
    verified = collections.defaultdict(lambda: True)
    threads = {}
    for r in rows:
        op = "free" if r["experiment"].endswith("_free") else "alloc"
        key = (size_label(r), short_allocator(r["allocator"]))
        rate[key + (op,)] = r["ops_per_s"] / 1e6
        verified[key] = verified[key] and bool(r["verified"])
        threads[key] = r["threads"]
        if not r["verified"]:
            bad.append(f"heap {key[1]} {key[0]} {op}: not verified")
    sizes = sorted({k[0] for k in rate}, key=size_key)
    allocs = [a for a in ("Scatter", "SizeClassSlabs", baseline) if any(k[1] == a for k in rate)]
    allocs += sorted({k[1] for k in rate} - set(allocs))
    device = rows[0].get("device", "")
    if mode == "gpu":
        md.append(f"Throughput experiment of `manyalloc_heap_bench_cuda` on {device}: every thread of one "
                  "launch allocates one chunk, another launch frees it; alloc and free timed apart, median "
                  "of 5 verified repetitions after a warm-up. CUDA's device malloc is bounded to what fits "
                  "a 10 s budget (its thread count is in the table).\n")
    else:
        md.append(f"Throughput experiment of `manyalloc_heap_bench_host` on {device}: "
                  f"{threads.get((sizes[0], allocs[0]), '?')} workers spread over {os.cpu_count()} threads "
                  "each allocate one chunk, then free it; alloc and free timed apart, median of 5 verified "
                  "repetitions after a warm-up.\n")
        md.append("**What this compares:** allocators designed for GPUs (data structures shared by all threads, "
                  "atomics, no per-thread caches) run on CPU threads against glibc's thread-cached malloc: it "
                  "shows that the heap's code runs on a CPU and how it fares there, not how it performs on a "
                  "GPU ([GPU report](../../docs/results/heap/REPORT.md)); on CPUs, use the node allocator "
                  "(section 2).\n")
        fixed = [s for s in sizes if not s.startswith("mixed")]
        lo, hi = (rate.get((fixed[0], baseline, "alloc")), rate.get((fixed[-1], baseline, "alloc"))) \
            if fixed else (None, None)
        if lo and hi and hi < lo / 4:
            md.append(f"Under this pattern (every chunk held until all are allocated, then all freed) glibc "
                      f"allocates {hi:.2f} M/s at {fixed[-1]} against {lo:.1f} M/s at {fixed[0]}: the ratios "
                      "above 1 come from the sizes where glibc slows down.\n")
    md.append(f"| size | allocator | threads | alloc M ops/s | free M ops/s | alloc vs {baseline} | "
              f"free vs {baseline} | verified |")
    md.append("|---|---|---:|---:|---:|---:|---:|---|")
    ratios = collections.defaultdict(list)
    for s in sizes:
        for a in allocs:
            if (s, a, "alloc") not in rate:
                continue
            ra, rf = rate[(s, a, "alloc")], rate.get((s, a, "free"), float("nan"))
            ba, bf = rate.get((s, baseline, "alloc")), rate.get((s, baseline, "free"))
            xa = ra / ba if ba else float("nan")
            xf = rf / bf if bf else float("nan")
            if a != baseline:
                ratios[a].append((xa, xf))
            md.append(f"| {s} | {a} | {threads[(s, a)]} | {ra:.2f} | {rf:.2f} | "
                      f"{'1' if a == baseline else fmt_ratio(xa)} | {'1' if a == baseline else fmt_ratio(xf)} | "
                      f"{'yes' if verified[(s, a)] else '**NO**'} |")
    md.append("")
    if any(t != max(threads.values()) for t in threads.values()):
        md.append("Rows with fewer threads: the benchmark bounded the workers to stay within its time budget "
                  "(`--budget`); rates are per operation, so they still compare.\n")
    for a, rs in ratios.items():
        xa = [x for x, _ in rs if x == x]
        xf = [y for _, y in rs if y == y]
        if xa:
            summary.append(f"heap ({'GPU' if mode == 'gpu' else 'host threads'}): {a} allocates at "
                           f"{fmt_ratio(min(xa))}-{fmt_ratio(max(xa))} and frees at "
                           f"{fmt_ratio(min(xf))}-{fmt_ratio(max(xf))} of {baseline}'s rate")
    if plt:
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        for ax, op in zip(axes, ("alloc", "free")):
            grouped_bars(ax, sizes, allocs, {(s, a): rate.get((s, a, op)) for s in sizes for a in allocs},
                         "M ops/s (log)", f"{op}: one chunk per worker", log=True)
        fig.suptitle(f"Many-core heap on {'the GPU' if mode == 'gpu' else 'host threads'}: {device}", fontsize=10)
        savefig(fig, os.path.join(out, "heap.png"), legend_from=axes[0])
        md.append("![heap throughput](heap.png)\n")


def heap_peers(data, out, md, bad):
    peers = [r for r in read_jsonl(os.path.join(data, "heap_peers.jsonl")) if r.get("experiment") != "meta"]
    if peers:
        status = os.path.join(data, "heap_peers_status.txt")
        md.append("### Our heaps beside the peer GPU allocators (heap/bench/peers)\n")
        if os.path.exists(status) and open(status).read().strip():
            md.append(f"`{open(status).read().strip()}`\n")
        md.append("Throughput at 2^20 threads, warm launches (median of 3 after a cold one), "
                  "every chunk verified; one child process per allocator.\n")
        prate, notes, is_peer = {}, [], {}
        for r in peers:
            if r.get("crash") or r.get("skipped"):
                sz = size_label(r) if r.get("bytes") or r.get("size") else ""
                notes.append(f"{r['allocator']} {sz} {r['experiment']}: ".replace("  ", " ") +
                             f"{'crashed' if r.get('crash') else 'skipped'} {r.get('note', '')}".strip())
            if (r.get("launch") != "warm" or not r["experiment"].startswith("throughput")
                    or r.get("threads") != 1048576 or r.get("skipped") or r.get("crash")):
                continue
            op = "free" if r["experiment"].endswith("_free") else "alloc"
            name = r["allocator"] + (" (peer)" if r.get("peer") else "")
            is_peer[name] = bool(r.get("peer"))
            prate[(size_label(r), name, op)] = r["ops_per_s"] / 1e6
            if not r["verified"]:
                bad.append(f"peers {r['allocator']} {size_label(r)} {op}: not verified")
        psizes = sorted({k[0] for k in prate}, key=size_key)
        pallocs = sorted({k[1] for k in prate}, key=lambda a: (a == "DeviceMalloc", is_peer.get(a, False), a))
        if prate:
            md.append("| size | allocator | alloc M ops/s | free M ops/s |")
            md.append("|---|---|---:|---:|")
        for s in psizes:
            for a in pallocs:
                ra, rf = prate.get((s, a, "alloc")), prate.get((s, a, "free"))
                if ra is None and rf is None:
                    continue
                md.append(f"| {s} | {a} | {'-' if ra is None else f'{ra:.1f}'} | {'-' if rf is None else f'{rf:.1f}'} |")
        md.append("")
        for n in sorted(set(notes))[:12]:
            md.append(f"- {n}")
        if notes:
            md.append("")
        if plt and prate:
            fig, axes = plt.subplots(1, 2, figsize=(11, 4))
            for ax, op in zip(axes, ("alloc", "free")):
                grouped_bars(ax, psizes, pallocs, {(s, a): prate.get((s, a, op)) for s in psizes for a in pallocs},
                             "M ops/s (log)", f"{op}, 2^20 threads, warm", log=True)
            savefig(fig, os.path.join(out, "heap_peers.png"), legend_from=axes[0])
            md.append("\n![peers](heap_peers.png)\n")


# ---- layer 2: the node allocator ------------------------------------------------
def numa_section(data, out, md, summary, bad):
    bench = read_jsonl(os.path.join(data, "numa_bench.jsonl"))
    prog = []
    tsv = os.path.join(data, "numa_program.tsv")
    if os.path.exists(tsv):
        for line in open(tsv):
            p = line.rstrip("\n").split("\t")
            if len(p) >= 6:
                try:
                    prog.append({"experiment": p[0], "allocator": p[1], "seconds": float(p[3]),
                                 "maxrss_bytes": float(p[4]) * 1024, "ok": p[5] == "0"})
                except ValueError:
                    prog.append({"experiment": p[0], "allocator": p[1], "ok": False})
    if not bench and not prog:
        return
    names = {"ttest1": "t-test1, 2 threads", "larson": "larson, 2 threads"}
    runs = collections.defaultdict(list)  # (workload, allocator) -> [(seconds, rss)]
    for r in bench:
        if not r.get("verified", False):
            bad.append(f"numa {r['experiment']} {r['allocator']}: not verified")
            continue
        runs[(names.get(r["experiment"], r["experiment"]), r["allocator"])].append(
            (r["seconds"], r["maxrss_bytes"]))
    failed_prog = 0
    for r in prog:
        if r["ok"]:
            runs[(r["experiment"], r["allocator"])].append((r["seconds"], r["maxrss_bytes"]))
        else:
            failed_prog += 1
    workloads = list(dict.fromkeys(k[0] for k in runs))
    allocs = [a for a in ("glibc", "manyalloc", "manyalloc-lowmem") if any(k[1] == a for k in runs)]
    md.append("The same binaries under each allocator, chosen with `LD_PRELOAD` (glibc: none; manyalloc: "
              "`libmanyalloc-numa.so`, default profile; manyalloc-lowmem: the same library with "
              "`MANYALLOC_NUMA_PROFILE=lowmem`), the order rotated every repetition. "
              "larson and t-test1 come from `numa/bench/numa_bench` (same per-workload scale as "
              "`run_bench.sh`, 5 repetitions): time is the workload's own, peak RSS the kernel's maximum "
              "(ru_maxrss). The program is `python3 -c 'd = {i: str(i) for i in range(2_000_000)}'` "
              "(3 repetitions) under `/usr/bin/time`: wall time of the whole process and its maximum RSS; "
              "by default Python serves objects up to 512 B from its own arenas (mapped with mmap), so "
              "malloc sees only larger blocks such as the dict's table; with `PYTHONMALLOC=malloc` every "
              "object comes from malloc. Medians; min-max in brackets.\n")
    md.append("| workload | allocator | seconds | vs glibc | peak RSS MiB | vs glibc | runs |")
    md.append("|---|---|---:|---:|---:|---:|---:|")
    tvals, rvals = {}, {}
    for w in workloads:
        g = runs.get((w, "glibc"))
        gt = median([s for s, _ in g]) if g else float("nan")
        gr = median([m for _, m in g]) if g else float("nan")
        for a in allocs:
            xs = runs.get((w, a))
            if not xs:
                continue
            t = [s for s, _ in xs]
            m = [x / 2**20 for _, x in xs]
            tvals[(w, a)] = median(t) / gt if gt == gt else None
            rvals[(w, a)] = median(m) * 2**20 / gr if gr == gr else None
            md.append(f"| {w} | {a} | {median(t):.3f} ({min(t):.3f}-{max(t):.3f}) | "
                      f"{'1' if a == 'glibc' else fmt_ratio(median(t) / gt)} | {median(m):.1f} | "
                      f"{'1' if a == 'glibc' else fmt_ratio(median(m) * 2**20 / gr)} | {len(xs)} |")
            if a == "manyalloc" and gt == gt:
                summary.append(f"node: {w}: manyalloc takes {fmt_ratio(median(t) / gt)} of glibc's time, "
                               f"peak RSS {fmt_ratio(median(m) * 2**20 / gr)}")
    md.append("")
    if failed_prog:
        md.append(f"{failed_prog} program run(s) failed (see logs/numa.log); they are not in the table.\n")
    if plt and tvals:
        fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
        labels = [w.replace(", PYTHONMALLOC=malloc", "\nPYTHONMALLOC=malloc") for w in workloads]
        grouped_bars(axes[0], labels, allocs, {(l, a): tvals.get((w, a)) for w, l in zip(workloads, labels)
                                                for a in allocs}, "time / glibc's (lower is better)",
                     "time relative to glibc", ref=1.0)
        grouped_bars(axes[1], labels, allocs, {(l, a): rvals.get((w, a)) for w, l in zip(workloads, labels)
                                                for a in allocs}, "peak RSS / glibc's (lower is better)",
                     "peak RSS relative to glibc", ref=1.0)
        savefig(fig, os.path.join(out, "node.png"), legend_from=axes[0])
        md.append("![node allocator](node.png)\n")


# ---- layer 3: the cluster allocator --------------------------------------------
def region_section(data, out, md, summary, bad):
    rows = []
    for f in ("region_list.jsonl", "region_shmem.jsonl", "region_roofline.jsonl"):
        rows += [r for r in read_jsonl(os.path.join(data, f)) if r.get("experiment", "").startswith("list")]
    if not rows:
        return
    label = {"myrmics-region": "regions (zero-copy send/recv)", "mpi-get": "MPI_Get/MPI_Put per node",
             "openshmem-getmem": "OpenSHMEM getmem/putmem per node",
             "roofline-peer-walk": "roofline: walk the peer's list, no library",
             "roofline-own-walk": "roofline: walk one's own list"}
    times = collections.defaultdict(list)
    for r in rows:
        if not r.get("verified", False):
            bad.append(f"region {r['allocator']} {r.get('nodes')} nodes: not verified")
            continue
        times[(r["allocator"], int(r.get("nodes", 0)))].append(r["seconds"])
    order = [a for a in ("myrmics-region", "mpi-get", "openshmem-getmem", "roofline-peer-walk", "roofline-own-walk")
             if any(k[0] == a for k in times)]
    sizes = sorted({k[1] for k in times})
    workers = rows[0].get("workers", rows[0].get("threads", "?"))
    md.append(f"The linked-list exchange of Myrmics (section 6.5) on {workers} workers: every worker builds a "
              "list of 256-B nodes, in each stage pairs swap whole lists, modify every node and send them "
              "back. Regions send a whole region (`region_bench_list`, one scheduler rank beside the "
              "workers, so `mpirun -n 5`); the baselines fetch and write back node by node with MPI_Get/MPI_Put "
              "(same run) and OpenSHMEM (`oshrun -n 4`); the roofline (`mpirun -n 4`) is the same walk in "
              "plain memory with no allocator and no transfer, the best any library could do here. Exchange "
              "time (all stages, max over workers), median of 7 repetitions.\n")
    head = "| nodes per worker | " + " | ".join(label[a] for a in order) + " | MPI_Get / regions |"
    md.append(head)
    md.append("|---:|" + "---:|" * (len(order) + 1))
    speedups = []
    for n in sizes:
        cells = []
        for a in order:
            xs = times.get((a, n))
            cells.append(f"{median(xs) * 1e3:.2f} ms" if xs else "-")
        reg, get = times.get(("myrmics-region", n)), times.get(("mpi-get", n))
        ratio = median(get) / median(reg) if reg and get else float("nan")
        md.append(f"| {n} | " + " | ".join(cells) + f" | {fmt_ratio(ratio)} |")
        if ratio == ratio:
            speedups.append(ratio)
    md.append("")
    if speedups:
        summary.append(f"cluster: the region exchange is {fmt_ratio(min(speedups))}-{fmt_ratio(max(speedups))} "
                       f"faster than MPI_Get ({sizes[0]}-{sizes[-1]} nodes per worker, {workers} workers)")
    if plt:
        fig, ax = plt.subplots(figsize=(7.5, 4.5))
        for i, a in enumerate(order):
            xs = [n for n in sizes if times.get((a, n))]
            ax.plot(xs, [median(times[(a, n)]) * 1e3 for n in xs], marker="o", label=label[a],
                    color=PALETTE[i % len(PALETTE)], linestyle="--" if a.startswith("roofline") else "-")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(sizes)
        ax.set_xticklabels([str(n) for n in sizes])
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel("nodes per worker (256 B each)")
        ax.set_ylabel("exchange time, ms (log)")
        ax.set_title(f"List exchange, {workers} workers (lower is better)", fontsize=10)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
        savefig(fig, os.path.join(out, "cluster.png"))
        md.append("![cluster allocator](cluster.png)\n")


# ---- the report -------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--seconds", type=int)
    ap.add_argument("--heap-mode", default="host", choices=("host", "gpu"))
    a = ap.parse_args()
    data = os.path.join(a.out, "data")
    status = read_status(os.path.join(a.out, "status.tsv"))
    md, summary, bad = [], [], []
    md.append("# manyalloc quick-start tour\n")
    md.append("Written by `scripts/quickstart.sh`: a few minutes of each layer against the allocator it "
              "replaces. Raw records are in `data/`, every step's output in `logs/`.\n")
    md.append("| machine | |")
    md.append("|---|---|")
    for k, v in machine(a.seconds, data):
        md.append(f"| {k} | {v} |")
    md.append("")
    summary_at = len(md)
    layer_state = {}
    for i, (key, title, folder) in enumerate(LAYERS, 1):
        md.append(f"## {i}. {title} (`{folder}`)\n")
        entries = status.get(key, [])
        states = [s for s, _ in entries]
        state = "failed" if "failed" in states else "ok" if "ok" in states else \
            "skipped" if "skipped" in states else "not run"
        for s, text in entries:
            if s in ("failed", "skipped", "note"):
                md.append(f"- **{s}**: {text}")
        if any(s in ("failed", "skipped", "note") for s in states):
            md.append("")
        before = len(md)
        if key == "heap":
            heap_section(data, a.out, a.heap_mode, md, summary, bad)
        elif key == "numa":
            numa_section(data, a.out, md, summary, bad)
        else:
            region_section(data, a.out, md, summary, bad)
        if len(md) == before and state != "skipped":
            md.append("No results.\n")
        layer_state[key] = state
    if plt is None:
        md.append("\nNo plots: matplotlib is not installed for this Python (apt install python3-matplotlib).\n")
    if bad:
        md.append("## Wrong results\n")
        md += [f"- {b}" for b in bad]
        md.append("")
    md.append("## The full suites and their results\n")
    md.append("- [docs/results/](../../docs/results): the reports of every layer (heap on an H200, node "
              "allocator on 2 and 16 cores against jemalloc, tcmalloc, mimalloc, tbbmalloc, cluster allocator "
              "on 2 and 16 cores, distribution policies).")
    md.append("- `scripts/gpu_run.sh`: every GPU test and heap benchmark on an NVIDIA GPU (stages `tests`, "
              "`throughput`, `coalescing`, `suite`, `peers`).")
    md.append("- `manyalloc_heap_bench_host all` / `manyalloc_heap_bench_cuda all` (`heap/bench/suite`): the "
              "seven heap experiments.")
    md.append("- `numa/bench/run_bench.sh` and `report.py`: every workload, thread count and allocator.")
    md.append("- `region/bench/run_bench.sh` (profiles `small`, `device16`) and `report.py`: list exchange, "
              "fragmentation, Barnes-Hut.")
    md.append("- `scripts/test.sh`: every test in three flavours (release, checked with sanitizers, TSan).\n")
    lines = ["<!-- summary -->", "**Summary**\n"]
    for key, title, _ in LAYERS:
        st = layer_state[key]
        why = "; ".join(t for s, t in status.get(key, []) if s in ("failed", "skipped"))
        lines.append(f"- {title}: {st}" + (f" ({why})" if why and st != "ok" else ""))
    lines += [f"- {s}" for s in summary]
    if bad:
        lines.append(f"- **{len(bad)} result(s) not verified**: see 'Wrong results'")
    lines += ["<!-- /summary -->", ""]
    md[summary_at:summary_at] = lines
    with open(os.path.join(a.out, "REPORT.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    return 3 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
