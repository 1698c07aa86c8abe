"""Peak resident set of a program run under GNU time, sampled from /proc.

Why not only GNU time's figure (ru_maxrss, the kernel's high-water mark):
since Linux 6.2 a process's RSS counters are per-CPU, and the high-water
mark is updated from their approximate value, which is off by up to about
32 pages per CPU and counter (numa/bench/peak_rss.hpp says the same for the
project's own benchmark; what that did to the 16-core machine's figures:
docs/results/numa/mibench-16core-cache4k-2026-12-01). ru_maxrss of the
program also starts from GNU time's own resident set (the high-water mark
survives exec). So the runner also samples VmRSS of the program itself,
after its exec, with RssAnon and RssFile at the peak. A peak shorter than
the interval can be missed, for every allocator alike. /proc/PID/status
sums the per-CPU counters exactly on the kernels the project's machines run
(6.18); some kernels from 6.2 on read the approximate values there too.
"""
import os
import threading


def read_status(pid):
    """{'VmRSS': kib, 'RssAnon': kib, 'RssFile': kib, 'Name': comm} of pid, or
    None once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            text = f.read()
    except OSError:
        return None
    fields = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key == "Name":
            fields[key] = value.strip()
        elif key in ("VmRSS", "RssAnon", "RssFile"):
            fields[key] = int(value.split()[0])
    return fields


def children_of(pid):
    """The pids of pid's children: /proc/PID/task/TID/children, or where the
    kernel has no such file (CONFIG_PROC_CHILDREN), every /proc/N/stat whose
    parent is pid."""
    kids, listed = [], False
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    kids += [int(x) for x in f.read().split()]
                listed = True
            except OSError:
                pass
    except OSError:
        return []
    if listed:
        return kids
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    # pid (comm) state ppid ...: comm may hold spaces, so split after its ')'
                    if int(f.read().rpartition(")")[2].split()[1]) == pid:
                        kids.append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    return kids


class RssSampler(threading.Thread):
    """Samples the child of `parent` (the program GNU time started) whose
    name is `program`'s (the kernel keeps the first 15 characters), every
    `interval_s`, until stop(). Before that child's exec it carries GNU
    time's name and is not sampled."""

    def __init__(self, parent, program, interval_s):
        super().__init__(daemon=True)
        self.parent = parent
        self.comm = os.path.basename(program)[:15]
        self.interval_s = interval_s
        self.peak_kib = 0
        self.anon_kib = 0   # RssAnon when VmRSS peaked
        self.file_kib = 0   # RssFile when VmRSS peaked
        self.samples = 0
        self._done = threading.Event()  # not _stop: threading.Thread has a method of that name

    def run(self):
        pid = None
        while not self._done.is_set():
            if pid is None:
                pid = next((k for k in children_of(self.parent)
                            if (read_status(k) or {}).get("Name") == self.comm), None)
            if pid is not None:
                s = read_status(pid)
                if s is None:
                    return  # it exited
                if "VmRSS" in s:  # absent while the process is a zombie
                    self.samples += 1
                    if s["VmRSS"] > self.peak_kib:
                        self.peak_kib = s["VmRSS"]
                        self.anon_kib = s.get("RssAnon", 0)
                        self.file_kib = s.get("RssFile", 0)
            self._done.wait(self.interval_s)

    def stop(self):
        self._done.set()
        self.join()

    def record(self):
        """The record's fields (bytes); none when nothing was sampled."""
        if self.samples == 0:
            return {}
        return {"rss_sampled_bytes": self.peak_kib * 1024, "rss_anon_bytes": self.anon_kib * 1024,
                "rss_file_bytes": self.file_kib * 1024, "rss_samples": self.samples}
