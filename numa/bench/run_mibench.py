#!/usr/bin/env python3
"""Runs mimalloc-bench's programs under every allocator (issue 19 item 1).

    run_mibench.py OUTDIR --mibench ROOT --lib libmanyalloc-numa.so [--threads 2 16]
                   [--reps 3] [--quick] [--tests ...] [--allocators ...]

ROOT is the unpacked mimalloc-bench (bench.sh, bench/, and the programs in
out/bench/), as numa/bench/mibench/CMakeLists.txt leaves it in the build
directory (<build>/numa/bench/mibench/peers-src/mimalloc-bench) and
prepare_carry.sh copies it (.carry/numa/mimalloc-bench).

Arguments and scoring are read from ROOT/bench.sh, not retyped:
- each benchmark's command line: bench.sh's own `run_test` function is
  evaluated by bash with `procs` set to the thread count asked for (bench.sh
  sets every thread argument from procs: larson, xmalloc-test, rptest,
  mstress, glibc-thread, alloc-test, cache-*) and a stub `run_test_cmd` that
  prints the name and the command instead of running it. Its own tests_all*
  lists give the tests. Tests whose program is not one of bench/CMakeLists.txt's
  (redis, lean, lua, gs, z3, rbstress (ruby), sh6bench/sh8bench, spec, ...)
  are skipped with a line saying so.
- the score: wall time, except where bench.sh's run_test_env_cmd takes the
  program's printed rate (larson*, rptest*, xmalloc*, glibc-thread); those
  cases are parsed from bench.sh (the sed expression and the constant it
  divides by) and applied to the program's output. bench.sh rounds with
  `bc scale=3`; here the quotient is not rounded.
- barnes reads its input from stdin ($benchdir/barnes/input), as in
  bench.sh's run_test_env_cmd.

Each run is a child of GNU time (no shell, no /usr/bin/env), as in bench.sh;
wall time by the monotonic clock around it, user and system time, page faults and peak RSS
(ru_maxrss) from GNU time, with the format bench.sh uses (%M, %U, %S, %R, %F), and, unless
--rss-interval-ms 0, the program's own peak VmRSS sampled from /proc with its anonymous and
file-backed parts (rss_sampler.py says why; records: rss_sampled_bytes, rss_anon_bytes,
rss_file_bytes, rss_samples). The order of the allocators rotates every repetition, as in
run_bench.sh.

--quick shrinks the arguments of the long tests (table QUICK below): those
runs are NOT bench.sh's and their records say so ("quick": true, "command").

Writes OUTDIR/results.jsonl (one record per run), OUTDIR/run.log, and
OUTDIR/meta.json (machine, commit, date, command). Make the report with
numa/bench/mibench_report.py OUTDIR docs/results/numa/<name>.
"""
import argparse
import json
import os
import platform
import re
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time

from rss_sampler import RssSampler

# --quick: per test, (bench.sh argument -> quick argument) replacements on the
# command line from bench.sh. Only for the 2-core development machine, where
# the whole suite under 8 allocators must take minutes. NOT bench.sh's
# arguments: the records carry "quick": true. Not shortened: cfrac, espresso,
# barnes (fixed inputs), alloc-test (thread count only), rptestN (its 16 s
# are mostly its own sleeps between rounds; scored by its CPU-time rate),
# glibc-simple, glibc-thread (2 s, time-bounded), malloc-large, mleak10.
QUICK = {
    "larsonN": [("./larson 5 ", "./larson 2 ")],            # 5 s -> 2 s per run (time-bounded)
    "larsonN-sized": [("./larson-sized 5 ", "./larson-sized 2 ")],
    "xmalloc-testN": [("-t 5", "-t 2")],                    # 5 s -> 2 s (time-bounded)
    "mstressN": [(" 50 25", " 50 10")],                     # 25 -> 10 rounds
    "cache-thrash1": [(" 2000000 ", " 500000 ")],
    "cache-thrashN": [(" 2000000 ", " 500000 ")],
    "cache-scratch1": [(" 2000000 ", " 500000 ")],
    "cache-scratchN": [(" 2000000 ", " 500000 ")],
    "mleak100": [("./mleak 50", "./mleak 20")],
}

# Our allocator in every profile (numa/README.md, "Profiles"), then the peers
# (Debian packages, or the carry folder on the 16-core machine).
PEERS = [("glibc", None), ("jemalloc", "libjemalloc.so.2"), ("tcmalloc", "libtcmalloc.so.4"),
         ("mimalloc", "libmimalloc.so.2"), ("tbbmalloc", "libtbbmalloc_proxy.so.2")]
PROFILES = ["uma", "numa", "lowmem"]


def log(out, msg):
    print(msg, flush=True)
    with open(os.path.join(out, "run.log"), "a") as f:
        f.write(msg + "\n")


def bench_commands(root, procs):
    """[(name, command)] of every bench.sh test, as bench.sh would run it with procs threads."""
    bench_sh = os.path.join(root, "bench.sh")
    src = open(bench_sh).read()
    fn = re.search(r"^function run_test \{.*?^\}", src, re.S | re.M)
    lists = re.findall(r"^readonly (tests_all\d=\".*\")$", src, re.M)
    procs_lines = re.findall(r"^(procs\w*=\$\(\(.*\)\))$", src, re.M)
    if not fn or not lists or not procs_lines:
        sys.exit(f"cannot find run_test, tests_all* or procs* in {bench_sh}")
    script = "\n".join([
        "set -u", f"procs={procs}", *procs_lines,
        f"benchdir={shlex.quote(os.path.join(root, 'bench'))}",
        "for v in luadir leandir leanmldir redis_dir rocksdb_dir linux_dir pdfdoc spec_base spec_config "
        "run_spec_bench; do printf -v $v '%s' \"<$v>\"; done",
        *lists,
        "pushd() { :; }; popd() { :; }; warning() { :; }",
        "run_test_cmd() { printf '%s\\t%s\\n' \"$1\" \"${2-}\"; }",
        fn.group(0),
        'for t in $tests_all1 $tests_all2 $tests_all3 $tests_all4; do run_test "$t"; done',
    ])
    res = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True)
    return [tuple(line.split("\t", 1)) for line in res.stdout.splitlines() if "\t" in line]


def bench_scoring(root):
    """{test glob prefix: (python regex, numerator or None)} from run_test_env_cmd's second case."""
    src = open(os.path.join(root, "bench.sh")).read()
    body = re.search(r"^function run_test_env_cmd .*?^\}", src, re.S | re.M).group(0)
    rules = {}
    arm = None  # (case, is_glob, lines) of the case arm being read
    for line in body.splitlines():
        m = re.match(r"^\s+([\w-]+)(\*?)\)\s*$", line)
        if m:
            arm = (m.group(1), bool(m.group(2)), [])
        elif arm is not None:
            arm[2].append(line)
            if ";;" in line:
                text = "\n".join(arm[2])
                sed = re.search(r"(?:rtime|ops)=`cat \"\$1-\$2-out\.txt\" \| sed -n 's/(.*?)/\\1/p'`", text)
                if sed:
                    rx = sed.group(1).replace(r"\(", "(").replace(r"\)", ")")
                    num = re.search(r"scale=3; \((\d+) / \$ops\)", text)
                    rules[arm[0]] = (rx, float(num.group(1)) if num else None, arm[1])
                arm = None
    return rules


def score_of(name, wall, output, rules):
    """(score_s, kind) as bench.sh computes it; (None, why) when the rate is not found."""
    for case, (rx, num, glob) in rules.items():
        if name.startswith(case) if glob else name == case:
            vals = [m.group(1) for line in output.splitlines() for m in [re.search(rx, line)] if m]
            vals = [v for v in vals if v not in ("", ".")]
            if not vals:
                return None, f"no match of /{rx}/ in its output"
            v = float(vals[-1])
            if num is None:
                return v, "printed time"
            return (num / v if v > 0 else None), f"{num:g} / printed rate"
    return wall, "wall time"


def timed_args(cmd, ru_path, time_bin):
    """The argument vector that runs `cmd` under GNU time, which writes the
    run's peak RSS, user and system seconds and faults to ru_path (bench.sh's
    format; run_one reads them back)."""
    return [time_bin, "-f", "%M %U %S %R %F", "-o", ru_path] + shlex.split(cmd)


def run_one(cmd, cwd, env, stdin_path, out_path, timeout, time_bin, rss_interval_s=0.0):
    """(exit status, wall seconds, {maxrss_kib, user_s, sys_s, minflt, majflt}
    and, with rss_interval_s > 0, the sampled peak's fields of
    rss_sampler.RssSampler.record).

    Through GNU time, as bench.sh: a child forked by this Python process would
    start with Python's RSS as its ru_maxrss (the high-water mark survives
    fork and exec); time's own is about 2 MiB, the same for every allocator and
    the same as in bench.sh's figures."""
    ru_path = out_path + ".rusage"
    args = timed_args(cmd, ru_path, time_bin)
    with open(stdin_path or os.devnull) as fin, open(out_path, "w") as fout:
        t0 = time.monotonic()
        p = subprocess.Popen(args, cwd=cwd, env=env, stdin=fin, stdout=fout, stderr=subprocess.STDOUT,
                             start_new_session=True)
        sampler = None
        if rss_interval_s > 0:
            sampler = RssSampler(p.pid, shlex.split(cmd)[0], rss_interval_s)
            sampler.start()
        # A blocking wait (waitpid) and a timer for the timeout, not
        # Popen.wait(timeout=...): with a timeout CPython polls the child and
        # sleeps up to 50 ms between looks, and that sleep ended up in the
        # wall time (numa.bench.runner_wall_time).
        # The timer kills only a run still going (`state` under `lock`), so
        # that a run that ends at its deadline keeps its own status.
        lock = threading.Lock()
        state = {"done": False, "killed": False}

        def kill():
            with lock:
                if state["done"]:
                    return
                state["killed"] = True
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            p.wait()
        finally:
            with lock:
                state["done"] = True
            timer.cancel()
        wall = time.monotonic() - t0
        if sampler is not None:
            sampler.stop()
        # 124 only for a run the timer's kill ended (a kill between the
        # wait's reaping and `done` reaches no process).
        rc = 124 if state["killed"] and p.returncode == -signal.SIGKILL else p.returncode
    ru = {}
    try:
        last = [l for l in open(ru_path).read().splitlines() if l.strip()][-1].split()
        ru = {"maxrss_kib": int(last[0]), "user_s": float(last[1]), "sys_s": float(last[2]),
              "minflt": int(last[3]), "majflt": int(last[4])}
    except (OSError, IndexError, ValueError):
        pass
    if sampler is not None:
        ru.update(sampler.record())
    return rc, wall, ru


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--mibench", required=True, help="unpacked mimalloc-bench with out/bench/ built")
    ap.add_argument("--lib", required=True, help="libmanyalloc-numa.so")
    ap.add_argument("--libdir", default="/usr/lib/x86_64-linux-gnu", help="where the peers' .so live")
    ap.add_argument("--threads", type=int, nargs="+", default=[2])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="shorter arguments for long tests (not bench.sh's)")
    ap.add_argument("--tests", nargs="*", help="subset of mimalloc-bench names (e.g. larsonN cfrac)")
    ap.add_argument("--allocators", nargs="*", help="subset of labels (glibc ... manyalloc-lowmem); --extra builds always run")
    ap.add_argument("--extra", nargs="*", default=[], metavar="LABEL=LIB[:PROFILE]",
                    help="another build of the library under its own label (e.g. the commit before a "
                         "change, run side by side with it); PROFILE defaults to uma")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--commit", default=None)
    ap.add_argument("--time", default="/usr/bin/time", help="GNU time (peak RSS, user/sys time, faults)")
    ap.add_argument("--rss-interval-ms", type=float, default=5.0,
                    help="sample the program's VmRSS this often (rss_sampler.py; each look costs about "
                         "30 us of a core); 0: GNU time's peak only")
    a = ap.parse_args()

    root = os.path.abspath(a.mibench)
    a.out = os.path.abspath(a.out)
    bindir = os.path.join(root, "out", "bench")
    os.makedirs(a.out, exist_ok=True)
    tmp = os.path.join(a.out, "output")
    os.makedirs(tmp, exist_ok=True)
    rules = bench_scoring(root)
    if sorted(rules) != ["glibc-thread", "larson", "rptest", "xmalloc"]:
        log(a.out, f"note: bench.sh scores by printed rate: {sorted(rules)} (expected larson, rptest, xmalloc, glibc-thread)")

    allocs = []  # (label, profile, preload, extra env)
    for label, so in PEERS:
        allocs.append((label, None, os.path.join(a.libdir, so) if so else None, {}))
    for prof in PROFILES:
        allocs.append((f"manyalloc-{prof}", prof, os.path.abspath(a.lib), {"MANYALLOC_NUMA_PROFILE": prof}))
    if a.allocators:
        allocs = [x for x in allocs if x[0] in a.allocators]
    # Extra builds are always run: naming them is asking for them.
    for spec in a.extra:
        label, _, rest = spec.partition("=")
        lib, _, prof = rest.partition(":")
        if not label or not lib:
            sys.exit(f"--extra {spec}: expected LABEL=LIB[:PROFILE]")
        prof = prof or "uma"
        allocs.append((label, prof, os.path.abspath(lib), {"MANYALLOC_NUMA_PROFILE": prof}))
    found = []
    for x in allocs:
        if x[2] and not os.path.exists(x[2]):
            log(a.out, f"skipping {x[0]} (not found: {x[2]})")
        else:
            found.append(x)
    allocs = found

    plan = {}  # threads -> [(name, cmd, quick)]
    for t in a.threads:
        tests, seen = [], set()
        for name, cmd in bench_commands(root, t):
            if name in seen:
                continue
            seen.add(name)
            prog = cmd.split()[0] if cmd else ""
            if a.tests and name not in a.tests:
                continue
            if not prog.startswith("./") or not os.access(os.path.join(bindir, prog[2:]), os.X_OK):
                if t == a.threads[0]:
                    log(a.out, f"skipped {name}: `{cmd or '(no command)'}` is not a program of "
                               "bench/CMakeLists.txt (bench.sh builds it in extern/)")
                continue
            quick = False
            if a.quick and QUICK.get(name):
                for old, new in QUICK[name]:
                    cmd = cmd.replace(old, new)
                quick = True
            tests.append((name, cmd, quick))
        plan[t] = tests

    cpu = platform.processor()
    try:
        cpu = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    device = " ".join(cpu.split()[:2]) if cpu else "?"
    nodes = len([d for d in os.listdir("/sys/devices/system/node") if re.fullmatch(r"node\d+", d)]) \
        if os.path.isdir("/sys/devices/system/node") else 1
    here = os.path.dirname(os.path.abspath(__file__))
    commit = a.commit or subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"],
                                        capture_output=True, text=True).stdout.strip() or "unknown"
    glibc = subprocess.run(["ldd", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    meta = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "host": socket.gethostname(),
        "cpus": os.cpu_count(), "numa_nodes": nodes, "cpu": cpu, "kernel": platform.release(),
        "glibc": glibc, "commit": commit, "threads": a.threads, "reps": a.reps, "quick": a.quick,
        "rss_interval_ms": a.rss_interval_ms,
        "allocators": [x[0] for x in allocs], "mibench": os.path.basename(root),
        "tests": {str(t): [[n, c, q] for n, c, q in plan[t]] for t in plan},
        "scoring": {k + ("*" if v[2] else ""): {"regex": v[0], "numerator": v[1]} for k, v in rules.items()},
        "command": "run_mibench.py " + " ".join(shlex.quote(x) for x in sys.argv[1:]),
    }
    with open(os.path.join(a.out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)

    barnes_in = os.path.join(root, "bench", "barnes", "input")
    start = time.monotonic()
    n = len(allocs)
    with open(os.path.join(a.out, "results.jsonl"), "a") as res:
        for rep in range(a.reps):
            for t in a.threads:
                for name, cmd, quick in plan[t]:
                    for i in range(n):
                        label, prof, preload, extra = allocs[(i + rep) % n]
                        env = dict(os.environ)
                        env.pop("LD_PRELOAD", None)
                        if preload:
                            env["LD_PRELOAD"] = preload
                            if os.path.dirname(preload) not in ("/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu"):
                                env["LD_LIBRARY_PATH"] = os.path.dirname(preload) + (
                                    ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
                        env.update(extra)
                        outp = os.path.join(tmp, f"{name}-{label}-{t}.txt")
                        rc, wall, ru = run_one(cmd, bindir, env, barnes_in if name == "barnes" else None,
                                               outp, a.timeout, a.time, a.rss_interval_ms / 1000)
                        output = open(outp, errors="replace").read()
                        score, kind = score_of(name, wall, output, rules)
                        ok = rc == 0 and score is not None
                        rec = {"suite": "mimalloc-bench", "experiment": name, "allocator": label,
                               "profile": prof, "device": device, "cpus": os.cpu_count(), "threads": t,
                               "rep": rep, "score_s": round(score, 6) if score is not None else None,
                               "score_kind": kind, "seconds": round(wall, 6),
                               "peak_rss_bytes": ru.get("maxrss_kib", 0) * 1024,
                               **{k: v for k, v in ru.items() if k.startswith("rss_")},  # the sampler's
                               "user_s": ru.get("user_s"), "sys_s": ru.get("sys_s"),
                               "page_faults": ru.get("minflt"), "major_faults": ru.get("majflt"),
                               "rc": rc, "fails": 0 if ok else 1, "verified": ok, "quick": quick,
                               "command": cmd}
                        if not ok:
                            rec["error"] = f"exit {rc}" if rc else kind
                            rec["output_tail"] = output[-300:]
                        res.write(json.dumps(rec) + "\n")
                        res.flush()
                        log(a.out, f"{time.monotonic() - start:6.0f}s rep {rep} {name:15} {t:2} thr "
                                   f"{label:17} rc={rc} score {score if score is None else f'{score:.3f}'} s "
                                   f"wall {wall:.2f} s rss {ru.get('maxrss_kib', 0) / 1024:.1f} MiB sampled "
                                   + (f"{ru['rss_sampled_bytes'] / 1048576:.2f} MiB" if "rss_sampled_bytes" in ru
                                      else "-"))
    log(a.out, f"done in {time.monotonic() - start:.0f} s: {a.out}/results.jsonl")


if __name__ == "__main__":
    main()
