#!/usr/bin/env bash
# Runs numa_bench for every workload, thread count and allocator, in one
# script run on one machine, allocators alternating inside each repetition.
# Each allocator is selected by LD_PRELOAD (glibc: none).
#
#   run_bench.sh OUTDIR [THREADS...]
# Environment:
#   NUMA_BENCH       the benchmark binary (default: next to this script's build)
#   NUMA_LIB         libmanyalloc-numa.so
#   NUMA_LIBDIR      where the other allocators' .so live (default: Debian's
#                    /usr/lib/x86_64-linux-gnu); also put on LD_LIBRARY_PATH
#                    when it is not the system directory
#   NUMA_REPS        repetitions (default 3)
#   NUMA_SCALE       workload size factor (default 1)
#   NUMA_WEIGHTS     per-workload factors on top of NUMA_SCALE, "name=x ..."
#                    (default "ttest1=4 larson=2 xmalloc=0.5 cache-thrash=2
#                    cache-scratch=1.5": the first two are the cheapest per
#                    operation and the ones the issue's speed targets are
#                    about, xmalloc is the slowest; the false-sharing pair ran
#                    0.3-0.6 s at 16 threads on the 16-core host, where one
#                    delayed thread moved a run by up to 2x)
#   NUMA_WORKLOADS   space-separated subset (default: all)
#   NUMA_ALLOCATORS  space-separated subset of the labels below (default: all found)
#   NUMA_LIB_BASE    a second build of libmanyalloc-numa.so (e.g. of the commit
#                    before a change), measured side by side as manyalloc-base
#                    and manyalloc-base-lowmem (and manyalloc-base-uma on
#                    multi-node machines)
#   NUMA_TIMEOUT     seconds per run (default 120)
#   NUMA_COMMIT      commit recorded in meta.json (default: git rev-parse)
# Writes OUTDIR/results.jsonl (one record per run), OUTDIR/run.log and
# OUTDIR/meta.json (machine, commit, date, command).
set -uo pipefail
out=${1:?usage: run_bench.sh OUTDIR [THREADS...]}; shift
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
bench=${NUMA_BENCH:?set NUMA_BENCH to the numa_bench binary}
lib=${NUMA_LIB:?set NUMA_LIB to libmanyalloc-numa.so}
libdir=${NUMA_LIBDIR:-/usr/lib/x86_64-linux-gnu}
reps=${NUMA_REPS:-3}
scale=${NUMA_SCALE:-1}
tmo=${NUMA_TIMEOUT:-120}
weights=${NUMA_WEIGHTS-ttest1=4 larson=2 xmalloc=0.5 cache-thrash=2 cache-scratch=1.5}
declare -A weight
for kv in $weights; do weight[${kv%%=*}]=${kv#*=}; done
threads=("$@")
((${#threads[@]})) || threads=(1 2 "$(nproc)")
mapfile -t workloads < <(if [[ -n ${NUMA_WORKLOADS:-} ]]; then tr ' ' '\n' <<<"$NUMA_WORKLOADS"; else "$bench" --list; fi)

# label -> preload (empty for glibc), extra environment
declare -A preload env
preload[glibc]=""; env[glibc]=""
preload[jemalloc]="$libdir/libjemalloc.so.2"
preload[tcmalloc]="$libdir/libtcmalloc.so.4"
preload[mimalloc]="$libdir/libmimalloc.so.2"
preload[tbbmalloc]="$libdir/libtbbmalloc_proxy.so.2"
preload[manyalloc]="$lib"; env[manyalloc]=""
preload[manyalloc-lowmem]="$lib"; env[manyalloc-lowmem]="MANYALLOC_NUMA_PROFILE=lowmem"
order=(glibc jemalloc tcmalloc mimalloc tbbmalloc manyalloc manyalloc-lowmem)
nodes=$(ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null | wc -l)
if ((nodes > 1)); then  # default profile is numa there: also measure uma
  preload[manyalloc-uma]="$lib"; env[manyalloc-uma]="MANYALLOC_NUMA_PROFILE=uma"; order+=(manyalloc-uma)
fi
if [[ -n ${NUMA_LIB_BASE:-} ]]; then
  preload[manyalloc-base]="$NUMA_LIB_BASE"; env[manyalloc-base]=""
  preload[manyalloc-base-lowmem]="$NUMA_LIB_BASE"; env[manyalloc-base-lowmem]="MANYALLOC_NUMA_PROFILE=lowmem"
  order+=(manyalloc-base manyalloc-base-lowmem)
  if ((nodes > 1)); then
    preload[manyalloc-base-uma]="$NUMA_LIB_BASE"; env[manyalloc-base-uma]="MANYALLOC_NUMA_PROFILE=uma"; order+=(manyalloc-base-uma)
  fi
fi
[[ -n ${NUMA_ALLOCATORS:-} ]] && read -r -a order <<<"$NUMA_ALLOCATORS"
allocs=()
for a in "${order[@]}"; do
  p=${preload[$a]-missing}
  if [[ $p == missing || ( -n $p && ! -e $p ) ]]; then echo "skipping $a (not found: $p)" | tee -a "$out/run.log"; continue; fi
  allocs+=("$a")
done
extra_path=""
[[ $libdir != /usr/lib/x86_64-linux-gnu ]] && extra_path=$libdir

commit=${NUMA_COMMIT:-$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)}
cat >"$out/meta.json" <<META
{"date":"$(date -u +%Y-%m-%dT%H:%M:%SZ)","host":"$(hostname)","cpus":$(nproc),"numa_nodes":$nodes,
 "cpu":"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //;s/"/ /g')",
 "kernel":"$(uname -r)","glibc":"$(ldd --version | head -1 | sed 's/"/ /g')","commit":"$commit",
 "threads":"${threads[*]}","reps":$reps,"scale":$scale,"weights":"$weights","allocators":"${allocs[*]}",
 "thp":"$(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)",
 "command":"run_bench.sh $out ${threads[*]}"}
META
start=$SECONDS
for ((rep = 0; rep < reps; rep++)); do
  for w in "${workloads[@]}"; do
    wscale=$(awk -v s="$scale" -v f="${weight[$w]:-1}" 'BEGIN { print s * f }')
    for t in "${threads[@]}"; do
      # Rotate the allocator order every repetition (no allocator always first).
      n=${#allocs[@]}
      for ((i = 0; i < n; i++)); do
        a=${allocs[$(((i + rep) % n))]}
        cmd=(env)
        [[ -n $extra_path ]] && cmd+=("LD_LIBRARY_PATH=$extra_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
        [[ -n ${preload[$a]} ]] && cmd+=("LD_PRELOAD=${preload[$a]}")
        [[ -n ${env[$a]:-} ]] && cmd+=(${env[$a]})
        line=$(timeout "$tmo" "${cmd[@]}" "$bench" --workload "$w" --threads "$t" --allocator "$a" \
               --scale "$wscale" --rep "$rep" 2>>"$out/run.log")
        rc=$?
        if [[ $line == \{* ]]; then
          echo "$line" >>"$out/results.jsonl"
        else
          echo "{\"suite\":\"numa\",\"experiment\":\"$w\",\"allocator\":\"$a\",\"threads\":$t,\"rep\":$rep,\"fails\":1,\"verified\":false,\"error\":\"exit $rc\"}" >>"$out/results.jsonl"
        fi
        printf '%4ds rep %d %-14s %2s threads %-17s rc=%d %s\n' $((SECONDS - start)) "$rep" "$w" "$t" "$a" "$rc" \
          "$(sed -n 's/.*"seconds":\([0-9.]*\).*/\1 s/p' <<<"$line")" >>"$out/run.log"
      done
    done
  done
done
echo "done in $((SECONDS - start)) s: $(wc -l <"$out/results.jsonl") records in $out/results.jsonl" | tee -a "$out/run.log"
