#!/usr/bin/env bash
# mstressN on the 16-core machine: where uma's time goes (issue 19 diagnosis)
# uma-keep: .carry/numa/libmanyalloc-numa-keep.so, the library of 4cff493 built with keep_empty_at_exit.patch
C=$PWD/.carry/numa; B=$C/mimalloc-bench/out/bench; T=$C/time
export LD_LIBRARY_PATH=$C
cd $B
run() { local label=$1; shift; $T -f "$label %e s wall %U user %S sys %M KiB %R minor-faults %c ctx-inv %w ctx-vol" "$@" ./mstress 16 50 25 > /dev/null; }
for i in 1 2 3; do
  run uma env LD_PRELOAD=$C/libmanyalloc-numa.so
  run uma-keep env HACK_KEEP=1 LD_PRELOAD=$C/libmanyalloc-numa-keep.so
  run mimalloc env LD_PRELOAD=$C/libmimalloc.so.2
  run glibc env
done 2>&1 | grep wall
echo "== uma statistics"
MANYALLOC_NUMA_STATS=1 LD_PRELOAD=$C/libmanyalloc-numa.so ./mstress 16 50 25 2>&1 >/dev/null | tail -60
if command -v perf >/dev/null; then
  echo "== perf (uma)"
  perf record -F 2000 -g -o /tmp/perf.data env LD_PRELOAD=$C/libmanyalloc-numa.so ./mstress 16 50 25 >/dev/null 2>/tmp/perf.err
  perf report -i /tmp/perf.data --stdio --no-children --sort dso,symbol 2>/dev/null | grep -v "^$" | grep -E "^ +[0-9]" | head -40
  echo "== perf (mimalloc)"
  perf record -F 2000 -g -o /tmp/perf2.data env LD_PRELOAD=$C/libmimalloc.so.2 ./mstress 16 50 25 >/dev/null 2>>/tmp/perf.err
  perf report -i /tmp/perf2.data --stdio --no-children --sort dso,symbol 2>/dev/null | grep -E "^ +[0-9]" | head -25
  tail -3 /tmp/perf.err
else
  echo "no perf"
fi
