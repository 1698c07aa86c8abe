#!/usr/bin/env python3
"""Turns the JSON Lines of manyalloc_heap_bench_{cuda,host} into PNG plots
(one per figure) and a markdown report.

    python3 heap/bench/report/report.py RESULTS.jsonl [MORE.jsonl ...] \
        [--env environment.txt] [--out-dir DIR] [--md REPORT.md] \
        [--command "the exact benchmark command"] [--title TEXT] [--figures]

--env defaults to environment.txt next to the first JSONL (written by
scripts/gpu_run.sh: 'date: ...', 'commit: ...', 'name, driver, memory' CSV,
the nvcc version line, 'cpus: N'). Plots go to --out-dir (default: the
JSONL's folder), the report to --md (default OUT_DIR/REPORT.md). --figures
makes only Figures 3 and 4 of [Steinberger2012] (operator and spread
records) and their report (scripts/gpu_run.sh stage `figures`).
Needs matplotlib (Debian: python3-matplotlib).
"""
import argparse
import collections
import gzip
import json
import math
import os
import sys

try:
    import matplotlib
except ImportError:  # a pyenv python3 without matplotlib: retry with Debian's
    if os.path.exists("/usr/bin/python3") and os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    raise
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


# ---------------------------------------------------------------- input
def load(paths):
    recs = []
    for p in paths:
        with (gzip.open(p, "rt") if str(p).endswith(".gz") else open(p)) as f:
            for n, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    recs.append(json.loads(line))
                except json.JSONDecodeError as e:
                    print(f"{p}:{n}: skipped ({e})", file=sys.stderr)
    return recs


def read_env(path):
    env = {}
    if not path or not os.path.exists(path):
        return env
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            key, sep, value = line.partition(":")
            if sep and key in ("date", "commit", "cpus"):
                env[key] = value.strip()
            elif "," in line and "gpu" not in env:
                parts = [x.strip() for x in line.split(",")]
                env["gpu"], env["driver"] = parts[0], parts[1] if len(parts) > 1 else "?"
                env["memory"] = parts[2] if len(parts) > 2 else "?"
            elif "cuda" in line.lower() or line.startswith("Build"):
                env["cuda"] = line
    return env


def short(alloc):
    """'Scatter ps=4096', 'Scatter ps=4096 reset', 'XMalloc (Scatter ps=4096)', 'DeviceMalloc', ..."""
    first = alloc.split(" ")[0]
    if first.startswith("CreationPolicy="):
        first = first[len("CreationPolicy="):]
    if first.startswith("Scatter["):
        ps = first.split("pagesize=")[1].split(",")[0]
        name = f"Scatter ps={ps}"
        if "resetfreedpages=true" in first:
            name += " reset"
        if "DistributionPolicy=XMallocSIMD" in alloc:
            name = f"XMalloc ({name})"
        return name
    if first.startswith("Reference"):
        return "contiguous array"
    for name in ("SizeClassSlabs", "ListBased", "MultiList"):
        if first.startswith(name + "["):
            return name
    return first


def is_baseline(name):
    return name in ("DeviceMalloc", "HostMalloc")


def fmt_bytes(b):
    b = int(b)
    if b >= 1 << 20 and b % (1 << 20) == 0:
        return f"{b >> 20} MiB"
    if b >= 1024 and b % 1024 == 0:
        return f"{b >> 10} KiB"
    return f"{b} B"


def rate(x):
    if x is None:
        return "-"
    if x >= 1e9:
        return f"{x / 1e9:.2f} G/s"
    if x >= 1e6:
        return f"{x / 1e6:.2f} M/s"
    if x >= 1e3:
        return f"{x / 1e3:.1f} K/s"
    return f"{x:.0f} /s"


def ratio(a, b):
    if not a or not b:
        return "-"
    r = a / b
    return f"{r:.0f}x" if r >= 10 else f"{r:.2f}x"


def pct(x):
    return "-" if x is None else f"{100 * x:.1f}%"


def by(recs, experiment):
    return [r for r in recs if r.get("experiment") == experiment]


def allocators(recs):
    seen = []
    for r in recs:
        s = short(r["allocator"])
        if s not in seen:
            seen.append(s)
    # Scatter variants first, the baseline last
    return sorted(seen, key=lambda s: (is_baseline(s), s == "contiguous array", s))


STYLE = {}


def style(name):
    if name not in STYLE:
        colors = ["tab:blue", "tab:green", "tab:purple", "tab:olive", "tab:cyan"]
        if is_baseline(name):
            STYLE[name] = dict(color="tab:red", marker="s")
        elif name == "contiguous array":
            STYLE[name] = dict(color="tab:gray", marker="^")
        else:
            k = len([n for n in STYLE if not is_baseline(n) and n != "contiguous array"])
            STYLE[name] = dict(color=colors[k % len(colors)], marker="o", linestyle="-" if k == 0 else "--")
    return STYLE[name]


def savefig(fig, out_dir, name, made):
    path = os.path.join(out_dir, name)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    made.append(name)


# ---------------------------------------------------------------- figures
def fig_throughput(recs, out_dir, made, device):
    rows = [r for r in recs if r["experiment"] in ("throughput_alloc", "throughput_free")]
    if not rows:
        return
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, op in zip(axes, ("alloc", "free")):
        for a in allocators(rows):
            pts = sorted((r["bytes"], r["ops_per_s"], r["threads"]) for r in rows
                         if r["experiment"] == f"throughput_{op}" and short(r["allocator"]) == a)
            if not pts:
                continue
            ax.plot([p[0] for p in pts], [p[1] for p in pts], label=a, **style(a))
            for b, y, t in pts:
                if t < max(p[2] for p in pts):
                    ax.annotate(f"{t >> 10}K thr", (b, y), fontsize=6, textcoords="offset points", xytext=(2, 4))
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("request size (bytes)")
        ax.set_ylabel(f"{op}s per second")
        ax.set_title(f"{op}: one request per worker")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"Throughput ({device})", fontsize=10)
    savefig(fig, out_dir, "fig_throughput.png", made)


def fig_operator(recs, out_dir, made, device):
    rows = [r for r in recs if r["experiment"] in ("operator_alloc", "operator_free")]
    if not rows:
        return
    sizes = sorted({r["bytes"] for r in rows})
    clock = next((r.get("clock") for r in rows if r.get("clock")), "cycles")
    for metric, fname, label in (("cycles_per_op", "fig3_operator.png", f"{clock} cycles per call"),
                                 ("cycles_cv", "fig3_operator_cv.png", "coefficient of variation")):
        fig, axes = plt.subplots(2, len(sizes), figsize=(3.2 * len(sizes), 6), squeeze=False)
        for row, op in enumerate(("alloc", "free")):
            for col, b in enumerate(sizes):
                ax = axes[row][col]
                for a in allocators(rows):
                    pts = sorted((r["threads"], r.get(metric)) for r in rows
                                 if r["experiment"] == f"operator_{op}" and r["bytes"] == b
                                 and short(r["allocator"]) == a and r.get(metric) is not None)
                    if pts:
                        ax.plot([p[0] for p in pts], [p[1] for p in pts], label=a, markersize=3, **style(a))
                ax.set_xscale("log", base=2)
                if metric == "cycles_per_op":
                    ax.set_yscale("log")
                ax.set_title(f"{op} {b} B", fontsize=9)
                ax.set_xlabel("N_worker", fontsize=8)
                if col == 0:
                    ax.set_ylabel(label, fontsize=8)
                ax.grid(True, which="both", alpha=0.3)
                ax.tick_params(labelsize=7)
        axes[0][0].legend(fontsize=7)
        fig.suptitle(f"Operator performance, p_alloc = p_free = 0.75 (Fig. 3; {device})", fontsize=10)
        savefig(fig, out_dir, fname, made)


def fig_large(recs, out_dir, made, device):
    rows = by(recs, "large_alloc")
    if not rows:
        return
    names = allocators(rows)
    fig, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names), 4), squeeze=False)
    for ax, a in zip(axes[0], names):
        for t in sorted({r["threads"] for r in rows}):
            pts = sorted((r["bytes"], r["seconds"]) for r in rows if r["threads"] == t and short(r["allocator"]) == a)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] * 1e3 for p in pts], marker="o", markersize=3, label=f"{t} workers")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(a, fontsize=9)
        ax.set_xlabel("request size (bytes)")
        ax.set_ylabel("alloc launch (ms)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"Large requests: time of one launch in which every worker allocates ({device})", fontsize=10)
    savefig(fig, out_dir, "fig_large.png", made)


def fig_fragmentation(recs, out_dir, made, device):
    rows = by(recs, "fragmentation")
    if not rows:
        return
    full = [r for r in rows if r.get("state", "full") == "full"]
    names = allocators(full)
    sizes = sorted({(r["bytes"], r.get("sizes", "")) for r in full}, key=lambda k: (bool(k[1]), k[0]))
    labels = ["mixed" if s[1] else fmt_bytes(s[0]) for s in sizes]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    width = 0.8 / max(1, len(names))
    for k, a in enumerate(names):
        def val(key, state="full"):
            out = []
            for b, mixed in sizes:
                r = next((r for r in rows if r["bytes"] == b and r.get("sizes", "") == mixed
                          and short(r["allocator"]) == a and r.get("state", "full") == state), None)
                out.append(r.get(key) if r and r.get(key) is not None else float("nan"))
            return out
        xs = [i + (k - (len(names) - 1) / 2) * width for i in range(len(sizes))]
        axes[0].bar(xs, [100 * v for v in val("usable_share_full")], width, label=f"{a} until full",
                    color=style(a)["color"], alpha=0.45)
        axes[0].bar(xs, [100 * v for v in val("usable_share_first_fail")], width, label=f"{a} first failure",
                    color=style(a)["color"])
        if any(not math.isnan(v) for v in val("internal_frag")):
            axes[1].plot(range(len(sizes)), val("internal_frag"), label=f"{a} full", **style(a))
            axes[1].plot(range(len(sizes)), val("internal_frag", "half_freed"), label=f"{a} half freed",
                         color=style(a)["color"], marker="x", linestyle=":")
            axes[2].plot(range(len(sizes)), val("external_frag"), label=f"{a} full", **style(a))
            axes[2].plot(range(len(sizes)), val("external_frag", "half_freed"), label=f"{a} half freed",
                         color=style(a)["color"], marker="x", linestyle=":")
    for ax, title in zip(axes, ("usable share of the heap (%)", "internal fragmentation (eq. 1)",
                                "external fragmentation (eq. 2)")):
        ax.set_xticks(range(len(sizes)))
        ax.set_xticklabels(labels, rotation=45, fontsize=8)
        ax.set_title(title, fontsize=9)
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=6)
    fig.suptitle(f"Memory efficiency per request size ({device})", fontsize=10)
    savefig(fig, out_dir, "fig4_fragmentation.png", made)


def fig_temporal(recs, out_dir, made, device):
    rows = by(recs, "temporal")
    if not rows:
        return
    names = allocators(rows)
    fig, axes = plt.subplots(3, 1, figsize=(8, 9), sharex=True)
    clock = next((r.get("clock") for r in rows if r.get("clock")), "cycles")
    for a in names:
        pts = sorted((r["step"], r) for r in rows if short(r["allocator"]) == a)
        steps = [p[0] for p in pts]
        st = style(a)
        axes[0].plot(steps, [p[1].get("cycles_per_op", float("nan")) for p in pts], label=a, color=st["color"])
        axes[1].plot(steps, [p[1].get("cycles_cv", float("nan")) for p in pts], label=a, color=st["color"])
        axes[2].plot(steps, [p[1].get("fill", float("nan")) for p in pts], label=f"{a} fill", color=st["color"])
        if any("external_frag" in p[1] for p in pts):
            axes[2].plot(steps, [p[1].get("external_frag", float("nan")) for p in pts], label=f"{a} external frag",
                         color=st["color"], linestyle="--")
            axes[2].plot(steps, [p[1].get("internal_frag", float("nan")) for p in pts], label=f"{a} internal frag",
                         color=st["color"], linestyle=":")
    axes[0].set_ylabel(f"{clock} cycles per alloc")
    axes[0].set_yscale("log")
    axes[1].set_ylabel("CV of alloc cycles")
    axes[2].set_ylabel("fill level / fragmentation")
    axes[2].set_xlabel("step (kernel launch)")
    for ax in axes:
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    r0 = rows[0]
    fig.suptitle(f"Temporal development (Fig. 2): {r0['threads']} workers, {int(r0.get('min_bytes', 128))}-"
                 f"{r0['bytes']} B, heap {fmt_bytes(r0.get('heap_bytes', 0))} ({device})", fontsize=10)
    savefig(fig, out_dir, "fig2_temporal.png", made)


def fig_access(recs, out_dir, made, device):
    rows = by(recs, "access")
    if not rows:
        return
    names = allocators(rows)
    sizes = sorted({r["bytes"] for r in rows})
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / len(names)
    for k, a in enumerate(names):
        vals = []
        for b in sizes:
            r = next((r for r in rows if r["bytes"] == b and short(r["allocator"]) == a), None)
            vals.append(r["bytes_per_s"] / 1e9 if r and "bytes_per_s" in r else float("nan"))
        ax.bar([i + (k - (len(names) - 1) / 2) * width for i in range(len(sizes))], vals, width, label=a,
               color=style(a)["color"])
    ax.set_xticks(range(len(sizes)))
    ax.set_xticklabels([fmt_bytes(b) for b in sizes])
    ax.set_ylabel("GB/s (read + write)")
    ax.set_title(f"Data access: each worker rewrites its chunk ({device})", fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    savefig(fig, out_dir, "fig_access.png", made)


def fig_spread(recs, out_dir, made, device):
    """[Steinberger2012] Figure 4: fragmentation and access time against the
    spread of request sizes, one column per worker count."""
    rows = by(recs, "spread")
    if not rows:
        return
    counts = sorted({r["threads"] for r in rows})
    clock = next((r.get("clock") for r in rows if r.get("clock")), "cycles")
    metrics = (("internal_frag", "internal fragmentation (eq. 1)"), ("external_frag", "external fragmentation (eq. 2)"),
               ("access_cycles", f"access: {clock} cycles per word"))
    fig, axes = plt.subplots(len(metrics), len(counts), figsize=(max(8.0, 5.2 * len(counts)), 9), squeeze=False)
    for col, n in enumerate(counts):
        for row, (key, label) in enumerate(metrics):
            ax = axes[row][col]
            for a in allocators(rows):
                pts = sorted((r["spread"], r[key]) for r in rows
                             if r["threads"] == n and short(r["allocator"]) == a and r.get(key) is not None)
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], label=a, markersize=4, **style(a))
            ax.set_title(f"{n} workers", fontsize=9)
            ax.set_xlabel("spread of request sizes (bytes, mean 512 B)", fontsize=8)
            ax.set_ylabel(label, fontsize=8)
            ax.grid(True, alpha=0.3)
            ax.tick_params(labelsize=7)
    axes[0][0].legend(fontsize=7)
    r0 = rows[0]
    fig.suptitle(f"Fragmentation and access time, p_alloc = p_free = {r0.get('p_alloc', 0.6)}, heap "
                 f"{fmt_bytes(r0.get('heap_bytes', 0))} (Fig. 4; {device})", fontsize=10)
    savefig(fig, out_dir, "fig4_spread.png", made)


def fig_slots(recs, out_dir, made, device):
    rows = by(recs, "slots_host") + by(recs, "slots_device")
    if not rows:
        return
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, state in zip(axes, ("empty", "filled")):
        for a in allocators(rows):
            for exp, n in sorted({(r["experiment"], r["threads"]) for r in rows}):
                pts = sorted((r["bytes"], r["seconds"]) for r in rows if r["experiment"] == exp and r["threads"] == n
                             and r.get("state") == state and short(r["allocator"]) == a)
                if pts:
                    lab = f"{a}: host" if exp == "slots_host" else f"{a}: device, {n} workers"
                    ax.plot([p[0] for p in pts], [p[1] * 1e3 for p in pts], marker="o", label=lab,
                            linestyle="-" if exp == "slots_host" else "--")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("slot size (bytes)")
        ax.set_ylabel("ms per call")
        ax.set_title(f"{state} heap", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6)
    fig.suptitle(f"getAvailableSlots cost ({device})", fontsize=10)
    savefig(fig, out_dir, "fig_slots.png", made)


# ---------------------------------------------------------------- report
def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def pick(rows, **kw):
    for r in rows:
        if all((short(r["allocator"]) if k == "alloc" else r.get(k)) == v for k, v in kw.items()):
            return r
    return None


def environment_section(args, env, recs, device):
    """The report's machine, commit, date, command and allocator list (markdown parts)."""
    envrows = [("device", env.get("gpu", device)), ("driver", env.get("driver", "-")),
               ("memory", env.get("memory", "-")), ("CUDA", env.get("cuda", "-")),
               ("commit", env.get("commit", "-")), ("date", env.get("date", "-")), ("CPUs", env.get("cpus", "-")),
               ("records", f"{len(recs)} from {', '.join(os.path.basename(p) for p in args.jsonl)}")]
    if args.command:
        envrows.append(("command", f"`{args.command}`"))
    return [table(["", ""], envrows) + "\n",
            "Allocators: " + "; ".join(
                f"**{short(a)}** = `{a}`" for a in sorted({r['allocator'] for r in recs})) + "\n"]


def report(recs, env, args, made):
    md = []
    device = next((r["device"] for r in recs), "?")
    names = allocators([r for r in recs if r["experiment"] != "access"])
    base = next((n for n in names if is_baseline(n)), None)
    scat = [n for n in names if n.startswith("Scatter")]
    main = scat[0] if scat else None
    md.append(f"# {args.title}\n")
    md.append("## Environment\n")
    md.extend(environment_section(args, env, recs, device))
    bad = [r for r in recs if not r.get("verified", False)]
    md.append("## Verification\n")
    if bad:
        md.append(f"**{len(bad)} of {len(recs)} records FAILED verification** (overlapping chunks or "
                  "chunk contents that did not read back):\n")
        md.append(table(["experiment", "allocator", "threads", "bytes", "corrupt", "overlaps"],
                        [(r["experiment"], short(r["allocator"]), r["threads"], r["bytes"], r.get("corrupt", "-"),
                          r.get("overlaps", "-")) for r in bad[:30]]) + "\n")
    else:
        md.append(f"All {len(recs)} records passed verification: every successful allocation was written and "
                  "read back, and no two live chunks overlapped.\n")
    gaps = []

    # Headline: throughput
    tp = [r for r in recs if r["experiment"].startswith("throughput")]
    if tp and main:
        md.append("## Throughput (one request per worker)\n")
        rows = []
        keys = sorted({(r["bytes"], "mixed" in r["experiment"]) for r in tp}, key=lambda k: (k[1], k[0]))
        for b, mixed in keys:
            ea, ef = ("throughput_mixed_alloc", "throughput_mixed_free") if mixed else ("throughput_alloc",
                                                                                        "throughput_free")
            row = ["16 B-4 KiB uniform" if mixed else fmt_bytes(b)]
            for n in scat + ([base] if base else []):
                a, f = pick(tp, experiment=ea, bytes=b, alloc=n), pick(tp, experiment=ef, bytes=b, alloc=n)
                row += [rate(a and a["ops_per_s"]), rate(f and f["ops_per_s"]), a and a["threads"] or "-"]
            if base:
                a0, b0 = pick(tp, experiment=ea, bytes=b, alloc=main), pick(tp, experiment=ea, bytes=b, alloc=base)
                f0, g0 = pick(tp, experiment=ef, bytes=b, alloc=main), pick(tp, experiment=ef, bytes=b, alloc=base)
                row += [ratio(a0 and a0["ops_per_s"], b0 and b0["ops_per_s"]),
                        ratio(f0 and f0["ops_per_s"], g0 and g0["ops_per_s"])]
                if a0 and b0 and a0["ops_per_s"] < b0["ops_per_s"]:
                    gaps.append(f"Throughput: {main} allocates {row[0]} requests slower than {base} "
                                f"({rate(a0['ops_per_s'])} vs {rate(b0['ops_per_s'])}).")
            for n in scat:
                a = pick(tp, experiment=ea, bytes=b, alloc=n)
                if a and a.get("fails"):
                    gaps.append(f"Throughput: {n} failed {a['fails']} of {a['ops']} {row[0]} requests "
                                f"at {a['threads']} workers.")
            rows.append(row)
        header = ["size"]
        for n in scat + ([base] if base else []):
            header += [f"{n} alloc", f"{n} free", "workers"]
        if base:
            header += [f"alloc {main} / {base}", f"free {main} / {base}"]
        md.append(table(header, rows) + "\n")
        bounded = sorted({(short(r["allocator"]), "16 B-4 KiB uniform" if "mixed" in r["experiment"] else fmt_bytes(r["bytes"]),
                           r["threads"]) for r in tp if r.get("note")})
        if bounded:
            md.append("Worker counts below the target were chosen by the `--budget` rule (the count doubles from "
                      "4096 while one alloc + free launch pair is expected to fit the budget), so that a full run "
                      "stays within minutes: " + ", ".join(f"{a} {b}: {t}" for a, b, t in bounded) + ". "
                      "Rates measured at fewer workers are not directly comparable: CUDA's malloc gets slower "
                      "per request as more workers allocate at once.\n")
            for a, b, t in bounded:
                if a.startswith("Scatter"):
                    gaps.append(f"Throughput: {a} at {b} could only be run with {t} workers within the "
                                f"time budget (slow at this size).")
        if main:
            mixed = pick(tp, experiment="throughput_mixed_alloc", alloc=main)
            fixed = [r for r in tp if r["experiment"] == "throughput_alloc" and short(r["allocator"]) == main
                     and r["bytes"] <= 4096]
            if mixed and fixed and mixed["ops_per_s"] < min(r["ops_per_s"] for r in fixed):
                slow = min(fixed, key=lambda r: r["ops_per_s"])
                gaps.append(f"Throughput: with mixed sizes (uniform 16 B-4 KiB) {main} allocates only "
                            f"{rate(mixed['ops_per_s'])}, below its slowest single size up to 4 KiB "
                            f"({fmt_bytes(slow['bytes'])}: {rate(slow['ops_per_s'])}): pages split for one size "
                            "serve a request only up to wastefactor times smaller, so searches get long.")
            big = pick(tp, experiment="throughput_alloc", bytes=8192, alloc=main)
            four = pick(tp, experiment="throughput_alloc", bytes=4096, alloc=main)
            if big and four and big["ops_per_s"] < four["ops_per_s"] / 5:
                gaps.append(f"Throughput: requests larger than a page take the multi-page path: {main} allocates "
                            f"8 KiB at {rate(big['ops_per_s'])} vs 4 KiB at {rate(four['ops_per_s'])}.")
        if "fig_throughput.png" in made:
            md.append("![throughput](fig_throughput.png)\n")

    # [Steinberger2012] Fig. 3
    op = [r for r in recs if r["experiment"].startswith("operator_")]
    if op:
        md.append("## Operator performance (paper Fig. 3, thesis 5.1)\n")
        clock = next((r.get("clock") for r in op if r.get("clock")), "cycles")
        md.append(f"Random kernel sequence, p_alloc = p_free = 0.75, up to 8 live chunks per worker; mean "
                  f"{clock} cycles per call (CV in parentheses) at the smallest and the largest N_worker measured.\n")
        rows = []
        growth = {}
        for b in sorted({r["bytes"] for r in op}):
            for n in allocators(op):
                for e in ("operator_alloc", "operator_free"):
                    pts = sorted((r["threads"], r) for r in op if r["experiment"] == e and r["bytes"] == b
                                 and short(r["allocator"]) == n)
                    if not pts:
                        continue
                    lo, hi = pts[0][1], pts[-1][1]
                    rows.append([fmt_bytes(b), n, e.split("_")[1], f"{lo['threads']}",
                                 f"{lo.get('cycles_per_op', 0):.0f} ({lo.get('cycles_cv', 0):.2f})",
                                 f"{hi['threads']}", f"{hi.get('cycles_per_op', 0):.0f} ({hi.get('cycles_cv', 0):.2f})",
                                 hi.get("fails", 0)])
                    if n == main and lo.get("cycles_per_op") and hi.get("cycles_per_op"):
                        growth.setdefault(e.split("_")[1], []).append(
                            (hi["cycles_per_op"] / lo["cycles_per_op"], fmt_bytes(b), lo["threads"], hi["threads"]))
        for o, g in growth.items():
            if max(x[0] for x in g) > 2.5:
                gaps.append(f"Operator: {main}'s {o} costs {min(x[0] for x in g):.1f}-{max(x[0] for x in g):.1f}x more "
                            f"cycles at {g[0][3]} workers than at {g[0][2]} (sizes {', '.join(x[1] for x in g)}); the "
                            "paper's Fig. 3 was flat, but it stopped at 15,000 threads (full occupancy of a Fermi GPU).")
        md.append(table(["size", "allocator", "op", "N min", "cycles (CV)", "N max", "cycles (CV)", "fails at N max"],
                        rows) + "\n")
        if base and main:
            rows = []
            for b in sorted({r["bytes"] for r in op}):
                for e in ("operator_alloc", "operator_free"):
                    s = [r for r in op if r["experiment"] == e and r["bytes"] == b and short(r["allocator"]) == main]
                    d = [r for r in op if r["experiment"] == e and r["bytes"] == b and short(r["allocator"]) == base]
                    common = sorted({r["threads"] for r in s} & {r["threads"] for r in d})
                    if common:
                        t = common[-1]
                        rs = next(r for r in s if r["threads"] == t)
                        rd = next(r for r in d if r["threads"] == t)
                        rows.append([fmt_bytes(b), e.split("_")[1], t,
                                     ratio(rd.get("cycles_per_op"), rs.get("cycles_per_op"))])
            md.append(f"Cycles of {base} over cycles of {main} at the largest common N_worker:\n")
            md.append(table(["size", "op", "N_worker", f"{base} / {main}"], rows) + "\n")
        for f in ("fig3_operator.png", "fig3_operator_cv.png"):
            if f in made:
                md.append(f"![{f}]({f})\n")

    # Fragmentation
    fr = by(recs, "fragmentation")
    if fr:
        md.append("## Memory efficiency (usable share, fragmentation, overhead)\n")
        md.append("Workers allocate one chunk each per launch until a whole launch fails. *First failure*: "
                  "requested bytes held at the end of the first launch in which any request failed, over the heap "
                  "size given to the allocator; *full*: when nothing more could be allocated. Fragmentation by the "
                  "paper's equations (1) and (2) from Scatter's page table (free regions: free chunks and runs of "
                  "unused pages); overhead = metadata + in-page bit fields over the heap. CUDA's heap exposes no "
                  "page table, so only its usable share is known.\n")
        rows = []
        full = [r for r in fr if r.get("state", "full") == "full"]
        for b, mixed in sorted({(r["bytes"], r.get("sizes", "")) for r in full}, key=lambda k: (bool(k[1]), k[0])):
            label = "16 B-4 KiB uniform" if mixed else fmt_bytes(b)
            for n in allocators(full):
                r = next((r for r in full if r["bytes"] == b and r.get("sizes", "") == mixed and short(r["allocator"]) == n), None)
                h = next((r for r in fr if r["bytes"] == b and r.get("sizes", "") == mixed and short(r["allocator"]) == n
                          and r.get("state") == "half_freed"), None)
                if not r:
                    continue
                slots = ""
                if "slots_before" in r:
                    slots = f"{int(r['slots_before'])} / {int(r.get('slots_after', 0))}"
                    if r.get("slots_after", 0) < r["slots_before"]:
                        slots += " (lost)" if n.endswith("reset") else " (kept split)"
                free = r.get("free_bytes")
                rows.append([label, n, pct(r.get("usable_share_first_fail")), pct(r.get("usable_share_full")),
                             pct(None if free is None else free / r["heap_bytes"]),
                             pct(r.get("internal_frag")), pct(r.get("external_frag")),
                             pct(h and h.get("internal_frag")), pct(h and h.get("external_frag")),
                             pct(r.get("overhead")), slots])
                if n == main and r.get("usable_share_full") is not None and r["usable_share_full"] < 0.6:
                    gaps.append(f"Memory: {n} serves only {pct(r['usable_share_full'])} of its heap with "
                                f"{label} requests before it is full.")
        md.append(table(["size", "allocator", "usable, first failure", "usable, full", "free at full", "F_int full", "F_ext full",
                         "F_int half freed", "F_ext half freed", "overhead", "slots before / after free"], rows) + "\n")
        md.append("At the full state hardly any memory is free, so F_ext there describes a tiny remainder (see "
                  "*free at full*); the half-freed state is the telling one.\n")
        md.append("*slots before / after*: getAvailableSlots(size) on the empty heap and after everything was freed "
                  "again (thesis 5.4). Without resetfreedpages a freed page keeps its chunk size, so fewer slots of "
                  "other sizes are counted afterwards (\"kept split\"); with resetfreedpages the two must match.\n")
        if "fig4_fragmentation.png" in made:
            md.append("![fragmentation](fig4_fragmentation.png)\n")

    # Large
    lg = by(recs, "large_alloc")
    if lg:
        md.append("## Large requests (1 page to 64 MiB)\n")
        md.append("Median time of one launch in which every worker allocates one chunk (free in brackets); "
                  "combinations needing more than 3/4 of the heap were not run.\n")
        workers = sorted({r["threads"] for r in lg})
        rows = []
        for b in sorted({r["bytes"] for r in lg}):
            for n in allocators(lg):
                row = [fmt_bytes(b), n]
                for t in workers:
                    r = pick(lg, bytes=b, threads=t, alloc=n)
                    f = pick(by(recs, "large_free"), bytes=b, threads=t, alloc=n)
                    row.append("-" if not r else f"{r['seconds'] * 1e3:.3g} ms ({f['seconds'] * 1e3:.3g})"
                               + (f" {r['fails']} failed" if r.get("fails") else ""))
                rows.append(row)
            if base and main:
                for t in reversed(workers):
                    s, d = pick(lg, bytes=b, threads=t, alloc=main), pick(lg, bytes=b, threads=t, alloc=base)
                    if s and d:
                        if s["seconds"] > 2 * d["seconds"]:
                            gaps.append(f"Large requests: {main} takes {s['seconds'] / d['seconds']:.0f}x as long as "
                                        f"{base} for {t} workers x {fmt_bytes(b)}.")
                        break
        md.append(table(["size", "allocator"] + [f"{t} workers" for t in workers], rows) + "\n")
        if "fig_large.png" in made:
            md.append("![large](fig_large.png)\n")

    # Temporal
    tm = by(recs, "temporal")
    if tm:
        md.append("## Temporal development (paper Fig. 2)\n")
        rows = []
        for n in allocators(tm):
            pts = sorted((r["step"], r) for r in tm if short(r["allocator"]) == n)
            if not pts:
                continue
            last = pts[-1][1]
            cyc = [p[1].get("cycles_per_op", 0) for p in pts if p[1].get("ops")]
            first_fail = next((p[0] for p in pts if p[1].get("fails")), None)
            fill_at = next((p[1].get("fill") for p in pts if p[1].get("fails")), None)
            if n == main and cyc and first_fail is not None and max(cyc) > 20 * cyc[0]:
                gaps.append(f"Temporal: once {n}'s heap is nearly full (from step {first_fail}, fill {pct(fill_at)}), "
                            f"requests cost up to {max(cyc):.0f} cycles ({max(cyc) / cyc[0]:.0f}x step 0), failing ones "
                            "included: a request that cannot be served searches every region before it fails.")
            rows.append([n, len(pts), pct(last.get("fill")), "-" if first_fail is None else f"{first_fail} ({pct(fill_at)})",
                         f"{cyc[0]:.0f}" if cyc else "-", f"{sorted(cyc)[len(cyc) // 2]:.0f}" if cyc else "-",
                         f"{max(cyc):.0f}" if cyc else "-", f"{max(p[1].get('cycles_cv', 0) for p in pts):.2f}",
                         pct(last.get("internal_frag")), pct(last.get("external_frag"))])
        md.append(table(["allocator", "steps", "final fill", "first failing step (fill)", "cycles step 0",
                         "median cycles", "max cycles", "max CV", "F_int end", "F_ext end"], rows) + "\n")
        if "fig2_temporal.png" in made:
            md.append("![temporal](fig2_temporal.png)\n")

    # Access
    ac = by(recs, "access")
    if ac:
        md.append("## Data access\n")
        md.append("Each worker rewrites every 32-bit word of its own chunk (read + write), twice per launch; "
                  "median GB/s and per-worker cycles per word. The contiguous array is the ideal layout.\n")
        names_ac = allocators(ac)
        rows = []
        for b in sorted({r["bytes"] for r in ac}):
            row = [fmt_bytes(b)]
            for n in names_ac:
                r = pick(ac, bytes=b, alloc=n)
                row.append("-" if not r else f"{r.get('bytes_per_s', 0) / 1e9:.1f} GB/s, "
                                             f"{r.get('cycles_per_op', 0):.0f} cyc ({r['threads']} w)")
            rows.append(row)
        md.append(table(["size"] + names_ac, rows) + "\n")
        if "fig_access.png" in made:
            md.append("![access](fig_access.png)\n")

    # Slots
    sl = by(recs, "slots_host") + by(recs, "slots_device")
    if sl:
        md.append("## getAvailableSlots\n")
        rows = []
        md.append(f"{main}; the other configurations are in the JSONL and the figure.\n")
        for r in sorted((r for r in sl if short(r["allocator"]) == main),
                        key=lambda r: (r.get("state", ""), r["bytes"], r["experiment"], r["threads"])):
            where = "host" if r["experiment"] == "slots_host" else f"device, {r['threads']} workers"
            rows.append([short(r["allocator"]), r.get("state", ""), fmt_bytes(r["bytes"]), where,
                         f"{r['seconds'] * 1e3:.3g} ms", int(r.get("slots", 0)), "yes" if r["verified"] else "NO"])
        md.append(table(["allocator", "heap", "slot", "called from", "time", "slots", "device = host"], rows) + "\n")
        if "fig_slots.png" in made:
            md.append("![slots](fig_slots.png)\n")

    md.append("## Gaps and caveats\n")
    fails = [r for r in recs if r.get("fails") and short(r["allocator"]).startswith("Scatter")
             and r["experiment"] not in ("fragmentation", "temporal")]
    for r in fails[:10]:
        gaps.append(f"{r['experiment']}: {short(r['allocator'])} had {r['fails']} failed requests "
                    f"({fmt_bytes(r['bytes'])}, {r['threads']} workers).")
    gaps += args.notes or []
    gaps.append("Cycles are clock64() SM cycles on the GPU (rdtsc ticks on the host) measured around each call inside "
                "the kernel; they include waiting for the warp's other lanes and for memory, as in the paper.")
    gaps.append("Each figure is one run of the program (medians over its repetitions); run-to-run spread is shown "
                "only through seconds_min/seconds_max and the CV columns of the JSONL.")
    md += [f"- {g}" for g in dict.fromkeys(gaps)]
    md.append("")
    return "\n".join(md)


def report_figures(recs, env, args, made):
    """The report of Figures 3 and 4 of [Steinberger2012] with every allocator of
    the paper beside ours (scripts/gpu_run.sh stage `figures`)."""
    md = []
    device = next((r["device"] for r in recs), "?")
    md.append(f"# {args.title}\n")
    md.append("Figures 3 and 4 of [Steinberger2012] (keys in docs/REFERENCES.md) reproduced on one device: "
              "ScatterAlloc (our `Scatter`), the paper's two list-based allocators of its section 4 "
              "(`ListBased`, the \"size list\", and `MultiList`, the \"mp lists\"), CUDA's `malloc` "
              "(`DeviceMalloc`; `HostMalloc` on host threads), XMalloc ([Huang2010]: our `Scatter` with the "
              "`XMallocSIMD` distribution policy, which combines the small requests of a warp into one chunk, "
              "as XMalloc's SIMD-level coalescing does) and our `SizeClassSlabs`.\n")
    md.extend(environment_section(args, env, recs, device))
    bad = [r for r in recs if not r.get("verified", False)]
    md.append("## Verification\n")
    if bad:
        md.append(f"**{len(bad)} of {len(recs)} records FAILED verification**:\n")
        md.append(table(["experiment", "allocator", "threads", "bytes", "spread", "corrupt", "overlaps", "note"],
                        [(r["experiment"], short(r["allocator"]), r["threads"], r["bytes"], r.get("spread", "-"),
                          r.get("corrupt", "-"), r.get("overlaps", "-"), r.get("note", "")) for r in bad[:30]]) + "\n")
    else:
        md.append(f"All {len(recs)} records passed verification: chunks were marked when allocated and checked "
                  "when freed, no two live chunks overlapped, the words rewritten by the access launch read back, "
                  "and the list heaps' segment lists passed their invariant walk.\n")

    op = [r for r in recs if r["experiment"] in ("operator_alloc", "operator_free")]
    if op:
        clock = next((r.get("clock") for r in op if r.get("clock")), "cycles")
        md.append("## Figure 3: cycles per alloc and per free against the number of workers\n")
        md.append(f"A random sequence of kernels (p_alloc = p_free = {op[0].get('p_alloc', 0.75)}); every worker "
                  f"times each of its calls with the {clock} counter inside the kernel; mean over all timed calls "
                  "after the warm-up. Sizes 16, 32, 64 and 128 B as in the paper.\n")
        if "fig3_operator.png" in made:
            md.append("![Figure 3](fig3_operator.png)\n")
        names = allocators(op)
        top = max(r["threads"] for r in op)
        marks = sorted({t for t in (32, 256, 1024, 4096, top) if any(r["threads"] == t for r in op)})
        for which in ("alloc", "free"):
            rows = []
            for b in sorted({r["bytes"] for r in op}):
                for a in names:
                    row = [fmt_bytes(b), a]
                    for t in marks:
                        r = pick(op, experiment=f"operator_{which}", bytes=b, alloc=a, threads=t)
                        row.append(f"{r['cycles_per_op']:.3g}" if r and r.get("cycles_per_op") else "-")
                    rows.append(row)
            md.append(f"Cycles per {which}:\n")
            md.append(table(["size", "allocator"] + [f"{t} workers" for t in marks], rows) + "\n")
        stopped = sorted({(short(r["allocator"]), r["bytes"], max(x["threads"] for x in op
                          if short(x["allocator"]) == short(r["allocator"]) and x["bytes"] == r["bytes"]))
                          for r in op})
        short_runs = [f"{a} {fmt_bytes(b)} up to {t}" for a, b, t in stopped if t < top]
        if short_runs:
            md.append("Series stopped early by the time budget (--budget): " + "; ".join(short_runs) + ".\n")
    sp = by(recs, "spread")
    if sp:
        md.append("## Figure 4: fragmentation and access time against the spread of request sizes\n")
        r0 = sp[0]
        md.append(f"p_alloc = p_free = {r0.get('p_alloc')}, request sizes uniform in [512 - spread/2, 512 + spread/2], "
                  f"heaps of {fmt_bytes(r0.get('heap_bytes', 0))} as in the paper; fragmentation by equations (1) "
                  "and (2) averaged over the measured steps (CUDA's malloc cannot be inspected: no values); access "
                  "time: cycles per 32-bit word when every worker reads and rewrites its live chunks.\n")
        if "fig4_spread.png" in made:
            md.append("![Figure 4](fig4_spread.png)\n")
        rows = []
        for n in sorted({r["threads"] for r in sp}):
            for a in allocators(sp):
                for spread in sorted({r["spread"] for r in sp}):
                    r = next((r for r in sp if r["threads"] == n and r["spread"] == spread
                              and short(r["allocator"]) == a), None)
                    if not r:
                        continue
                    rows.append([n, a, int(spread), pct(r.get("internal_frag")), pct(r.get("external_frag")),
                                 f"{r.get('access_cycles', 0):.3g}", f"{r.get('cycles_alloc', 0):.3g}",
                                 f"{r.get('cycles_free', 0):.3g}", pct(r.get("fill")), r["fails"]])
        md.append(table(["workers", "allocator", "spread (B)", "internal frag", "external frag", "access cycles/word",
                         "cycles/alloc", "cycles/free", "mean fill", "fails"], rows) + "\n")
    md.append("## Caveats\n")
    notes = list(args.notes or [])
    notes.append("The list-based allocators follow the description of [Steinberger2012] section 4 (our reimplementation; "
                 "the paper's code is not available): one lock per list synchronises its pointers, and a freed "
                 "segment merges with both free neighbours (the paper names the successor), see "
                 "heap/include/manyalloc/heap/detail/lists/invariants.hpp. MultiList has one list per multiprocessor.")
    notes.append("XMalloc is represented by its SIMD-level coalescing on top of our Scatter (the paper measured "
                 "XMalloc's own code, whose buffers and free lists we do not reimplement): it shows what combining "
                 "a warp's requests into one chunk buys and costs against the other allocators.")
    notes.append("Cycles are measured around each call inside the kernel and include waiting for locks, for the "
                 "warp's other lanes and for memory, as in the paper.")
    md += [f"- {g}" for g in dict.fromkeys(notes)]
    md.append("")
    return "\n".join(md)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("jsonl", nargs="+")
    ap.add_argument("--env")
    ap.add_argument("--out-dir")
    ap.add_argument("--md")
    ap.add_argument("--command", default="")
    ap.add_argument("--title", default="manyalloc heap: benchmark report")
    ap.add_argument("--note", dest="notes", action="append", help="extra line for the gaps section")
    ap.add_argument("--figures", action="store_true",
                    help="only Figures 3 and 4 of [Steinberger2012] (operator and spread records) and their report")
    args = ap.parse_args()
    out_dir = args.out_dir or os.path.dirname(os.path.abspath(args.jsonl[0]))
    os.makedirs(out_dir, exist_ok=True)
    env = read_env(args.env or os.path.join(os.path.dirname(os.path.abspath(args.jsonl[0])), "environment.txt"))
    recs = [r for r in load(args.jsonl) if r.get("suite") == "heap"]
    if not recs:
        sys.exit("no heap records found")
    device = env.get("gpu") or recs[0].get("device", "?")
    made = []
    figures = (fig_operator, fig_spread) if args.figures else (
        fig_throughput, fig_operator, fig_large, fig_fragmentation, fig_temporal, fig_access, fig_slots, fig_spread)
    for f in figures:
        try:
            f(recs, out_dir, made, device)
        except Exception as e:  # a figure must not take the report down with it
            print(f"{f.__name__}: {e}", file=sys.stderr)
    if args.figures and args.title == ap.get_default("title"):
        args.title = "manyalloc heap: Figures 3 and 4 of [Steinberger2012]"
    text = (report_figures if args.figures else report)(recs, env, args, made)
    md = args.md or os.path.join(out_dir, "REPORT.md")
    with open(md, "w") as f:
        f.write(text)
    print(f"wrote {md} and {len(made)} figures: {', '.join(made)}")


if __name__ == "__main__":
    main()
