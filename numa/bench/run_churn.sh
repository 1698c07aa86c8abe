#!/usr/bin/env bash
# Runs numa_churn (the malloc/memset/free loop of issue 19) for every size
# and allocator, allocators alternating inside each repetition, in one
# script run on one machine; then, when strace is installed, once more per
# size and allocator under `strace -f -c` to count the memory system calls
# (an untimed run: its counts are added to the timed records of that size
# and allocator as madvise_calls, munmap_calls, mmap_calls, mremap_calls,
# brk_calls).
#
#   run_churn.sh OUTDIR
# Environment:
#   NUMA_CHURN         the numa_churn binary (required)
#   NUMA_LIB           libmanyalloc-numa.so (required)
#   NUMA_LIBDIR        where the other allocators' .so live (default /usr/lib/x86_64-linux-gnu)
#   NUMA_REPS          repetitions (default 3)
#   NUMA_CHURN_SIZES   bytes per block (default "16384 32768 300000")
#   NUMA_CHURN_ITERS   iterations per run (default 200000)
#   NUMA_ALLOCATORS    labels (default "glibc manyalloc-uma manyalloc-lowmem manyalloc-numa";
#                      jemalloc tcmalloc mimalloc tbbmalloc also known)
#   NUMA_LIB_BASE      a second build of the library (e.g. of the commit before a
#                      change), measured side by side as manyalloc-base-<profile>
#   NUMA_CHURN_STATS   0: do not read manyalloc's statistics (a library older
#                      than its OS call counters, see numa_churn.cpp)
#   NUMA_STRACE        0: no strace runs
#   NUMA_COMMIT        commit recorded in meta.json (default: git rev-parse)
# Writes OUTDIR/results.jsonl, OUTDIR/strace/*.txt, OUTDIR/run.log, OUTDIR/meta.json;
# churn_report.py OUTDIR prints the table.
set -uo pipefail
out=${1:?usage: run_churn.sh OUTDIR}
mkdir -p "$out/strace"
here=$(cd "$(dirname "$0")" && pwd)
bench=${NUMA_CHURN:?set NUMA_CHURN to the numa_churn binary}
lib=${NUMA_LIB:?set NUMA_LIB to libmanyalloc-numa.so}
libdir=${NUMA_LIBDIR:-/usr/lib/x86_64-linux-gnu}
reps=${NUMA_REPS:-3}
iters=${NUMA_CHURN_ITERS:-200000}
read -r -a sizes <<<"${NUMA_CHURN_SIZES:-16384 32768 300000}"
read -r -a order <<<"${NUMA_ALLOCATORS:-glibc manyalloc-uma manyalloc-lowmem manyalloc-numa}"
use_stats=${NUMA_CHURN_STATS:-1}

declare -A preload env
preload[glibc]=""
preload[jemalloc]="$libdir/libjemalloc.so.2"
preload[tcmalloc]="$libdir/libtcmalloc.so.4"
preload[mimalloc]="$libdir/libmimalloc.so.2"
preload[tbbmalloc]="$libdir/libtbbmalloc_proxy.so.2"
for p in uma lowmem numa; do
  preload[manyalloc-$p]="$lib"; env[manyalloc-$p]="MANYALLOC_NUMA_PROFILE=$p"
  if [[ -n ${NUMA_LIB_BASE:-} ]]; then
    preload[manyalloc-base-$p]="$NUMA_LIB_BASE"; env[manyalloc-base-$p]="MANYALLOC_NUMA_PROFILE=$p"
    [[ -z ${NUMA_ALLOCATORS:-} ]] && order+=("manyalloc-base-$p")
  fi
done
allocs=()
for a in "${order[@]}"; do
  p=${preload[$a]-missing}
  if [[ $p == missing || ( -n $p && ! -e $p ) ]]; then echo "skipping $a (not found: $p)" | tee -a "$out/run.log"; continue; fi
  allocs+=("$a")
done
cmd_of() {  # allocator -> env command prefix
  local a=$1
  cmd=(env)
  [[ -n ${preload[$a]} ]] && cmd+=("LD_PRELOAD=${preload[$a]}")
  [[ -n ${env[$a]:-} ]] && cmd+=(${env[$a]})
  return 0
}

commit=${NUMA_COMMIT:-$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)}
cat >"$out/meta.json" <<META
{"date":"$(date -u +%Y-%m-%dT%H:%M:%SZ)","host":"$(hostname)","cpus":$(nproc),
 "cpu":"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //;s/"/ /g')",
 "kernel":"$(uname -r)","glibc":"$(ldd --version | head -1 | sed 's/"/ /g')","commit":"$commit",
 "sizes":"${sizes[*]}","iters":$iters,"reps":$reps,"allocators":"${allocs[*]}",
 "thp":"$(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)",
 "command":"run_churn.sh $out"}
META
start=$SECONDS
: >"$out/timed.jsonl"
for ((rep = 0; rep < reps; rep++)); do
  for n in "${sizes[@]}"; do
    k=${#allocs[@]}
    for ((i = 0; i < k; i++)); do
      a=${allocs[$(((i + rep) % k))]}
      cmd_of "$a"
      line=$("${cmd[@]}" "$bench" --bytes "$n" --iters "$iters" --allocator "$a" --rep "$rep" \
             --stats "$use_stats" 2>>"$out/run.log")
      rc=$?
      if [[ $line == \{* ]]; then
        echo "$line" >>"$out/timed.jsonl"
      else
        echo "{\"suite\":\"numa\",\"experiment\":\"churn\",\"bytes\":$n,\"allocator\":\"$a\",\"threads\":1,\"rep\":$rep,\"fails\":1,\"verified\":false,\"error\":\"exit $rc\"}" >>"$out/timed.jsonl"
      fi
      printf '%4ds rep %d %7s B %-17s rc=%d %s\n' $((SECONDS - start)) "$rep" "$n" "$a" "$rc" \
        "$(sed -n 's/.*"seconds":\([0-9.]*\).*/\1 s/p' <<<"$line")" >>"$out/run.log"
    done
  done
done

# System call counts: one untimed run per size and allocator under strace.
declare -A counts
if [[ ${NUMA_STRACE:-1} != 0 ]] && command -v strace >/dev/null; then
  for n in "${sizes[@]}"; do
    for a in "${allocs[@]}"; do
      cmd_of "$a"
      f="$out/strace/$a-$n.txt"
      # strace runs the program itself (exec), so LD_PRELOAD applies to it only.
      strace -f -c -o "$f" -e trace=madvise,munmap,mmap,mremap,brk \
        "${cmd[@]}" "$bench" --bytes "$n" --iters "$iters" --allocator "$a" --stats 0 >/dev/null 2>>"$out/run.log"
      fields=""
      for sc in madvise munmap mmap mremap brk; do
        c=$(awk -v s="$sc" '$NF == s { print $4 }' "$f" | head -1)
        fields+=",\"${sc}_calls\":${c:-0}"
      done
      counts[$a-$n]=$fields
      echo "$((SECONDS - start))s strace $n B $a:$fields" >>"$out/run.log"
    done
  done
fi
: >"$out/results.jsonl"
while IFS= read -r line; do
  a=$(sed -n 's/.*"allocator":"\([^"]*\)".*/\1/p' <<<"$line")
  n=$(sed -n 's/.*"bytes":\([0-9]*\).*/\1/p' <<<"$line")
  extra=${counts[$a-$n]:-}
  [[ -n $extra ]] && line="${line%\}}$extra}"
  echo "$line" >>"$out/results.jsonl"
done <"$out/timed.jsonl"
rm -f "$out/timed.jsonl"
echo "done in $((SECONDS - start)) s: $(wc -l <"$out/results.jsonl") records in $out/results.jsonl" | tee -a "$out/run.log"
