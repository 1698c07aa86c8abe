#!/usr/bin/env bash
# The main job: a tour of the three layers in a few minutes.
#   1. installs what is missing (scripts/setup.sh, then python3-matplotlib and
#      time through apt);
#   2. builds only the programs the tour runs (no tests), in build/quickstart/build;
#   3. the many-core heap: on a machine with an NVIDIA GPU and nvcc, Scatter and
#      SizeClassSlabs against CUDA's device malloc (manyalloc_heap_bench_cuda
#      throughput), and the peer GPU allocators when ../shared/peers holds their
#      sources; otherwise the same throughput experiment on host threads against
#      the C library's malloc;
#   4. the node allocator: larson and t-test1 at 2 threads and python3 building a
#      dict of 2 million entries, each under glibc and under libmanyalloc-numa.so
#      (LD_PRELOAD): wall time and peak RSS;
#   5. the cluster allocator: the list exchange on 4 MPI workers, regions
#      against MPI_Get, OpenSHMEM (when oshrun exists) and the library-free
#      roofline;
#   6. writes build/quickstart/REPORT.md (machine, one table and one plot per
#      layer, what was skipped and why) and prints where the full suites are.
# One line per step with the seconds since the start; each step's output goes
# to build/quickstart/logs. A layer that fails does not stop the others; the
# exit status is non-zero when something that should have worked failed.
# Environment: MANYALLOC_JOBS (build jobs, default nproc).
set -uo pipefail
cd "$(dirname "$0")/.."
out=build/quickstart
bdir=$out/build
data=$out/data
logs=$out/logs
mkdir -p "$data" "$logs"
rm -f "$data"/* "$logs"/* "$out"/*.png "$out/REPORT.md" "$out/status.tsv"
jobs=${MANYALLOC_JOBS:-$(nproc)}
start=$SECONDS
failed=0

# ---- progress and status ---------------------------------------------------
# status.tsv: layer <TAB> ok|skipped|failed|note <TAB> text (read by the report)
record() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$out/status.tsv"; }
fail() { record "$1" failed "$2"; failed=1; }
exec 3>&1  # progress lines go to the terminal whatever a step's output is redirected to
step_begin() { step_t0=$SECONDS; printf '[%4ds] %-64s' $((SECONDS - start)) "$1" >&3; }
step_end() { printf ' %s (%d s)\n' "$1" $((SECONDS - step_t0)) >&3; }
# step LABEL LOG COMMAND...: runs COMMAND with its output in LOG; returns its status.
# With STEP_STDOUT=FILE, the command's standard output goes to FILE instead.
step() {
  local label=$1 log=$2; shift 2
  step_begin "$label"
  "$@" >>"${STEP_STDOUT:-$log}" 2>>"$log"
  local rc=$?
  if ((rc == 0)); then step_end ok; else step_end "FAILED (exit $rc, see $log)"; fi
  return $rc
}
have() { command -v "$1" >/dev/null 2>&1; }
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

cut -d' ' -f1-3 /proc/loadavg >"$data/loadavg_start" 2>/dev/null  # what else ran (for the report)
echo "quickstart: a tour of manyalloc's three layers; logs in $logs, report in $out/REPORT.md"

# ---- 1. install ------------------------------------------------------------
install_extra() {  # what the tour needs beyond scripts/setup.sh: plots (GNU time too, for setups before it installed it)
  have dpkg-query || { echo "no dpkg: install matplotlib for /usr/bin/python3 and GNU time yourself"; return 0; }
  local missing=()
  for p in python3-matplotlib time; do installed "$p" || missing+=("$p"); done
  ((${#missing[@]})) || return 0
  local sudo=""
  [[ $(id -u) -ne 0 ]] && sudo=sudo
  echo "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}
step "install: build dependencies (scripts/setup.sh)" "$logs/install.log" scripts/setup.sh ||
  record install note "scripts/setup.sh failed (see logs/install.log); layers whose tools are missing are skipped"
step "install: python3-matplotlib, time (apt)" "$logs/install.log" install_extra ||
  record install note "python3-matplotlib/time could not be installed (see logs/install.log)"

# ---- 2. what this machine has, configure, build ----------------------------
gpu=""
if have nvidia-smi && nvidia-smi -L >/dev/null 2>&1; then
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
fi
nvcc=""
if have nvcc; then nvcc=$(command -v nvcc); elif [[ -x /usr/local/cuda/bin/nvcc ]]; then nvcc=/usr/local/cuda/bin/nvcc; fi
cuda=OFF
heap_mode=host
if [[ -n $gpu && -n $nvcc ]]; then
  cuda=ON; heap_mode=gpu
elif [[ -n $gpu ]]; then
  record heap note "a GPU ($gpu) is present but nvcc was not found: the heap ran on host threads instead"
else
  record heap note "no NVIDIA GPU (nvidia-smi lists none): the comparison with CUDA's device malloc and the peer GPU allocators (heap/bench/peers) were skipped, the heap ran on host threads"
fi
numa=ON
if ! have pkg-config || ! pkg-config --exists hwloc; then
  numa=OFF; record numa skipped "hwloc's development files (pkg-config hwloc) are missing: install libhwloc-dev"
fi
region=ON
if ! have mpicxx && ! have mpicc; then
  region=OFF; record region skipped "no MPI compiler wrapper (mpicc): install openmpi-bin libopenmpi-dev"
elif ! have mpirun && ! have mpiexec; then
  region=OFF; record region skipped "no mpirun/mpiexec: install openmpi-bin"
fi
peers_dir=""
[[ $heap_mode == gpu && -d ../shared/peers ]] && peers_dir=$(cd ../shared/peers && pwd)
[[ $heap_mode == gpu && -z $peers_dir ]] &&
  record heap note "peers benchmark skipped: ../shared/peers (the peer allocators' source tarballs) is not beside the checkout"

gen=()
have ninja && gen=(-G Ninja)
if [[ -f $bdir/CMakeCache.txt ]]; then  # a build tree of another generator cannot be reused
  want=$([[ ${#gen[@]} -gt 0 ]] && echo Ninja || echo "Unix Makefiles")
  grep -q "^CMAKE_GENERATOR:INTERNAL=$want$" "$bdir/CMakeCache.txt" || rm -rf "$bdir"
fi
cfg=("${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DMANYALLOC_BUILD_TESTS=OFF -DMANYALLOC_BUILD_BENCHMARKS=ON
     -DMANYALLOC_BUILD_EXAMPLES=OFF -DMANYALLOC_CUDA=$cuda)
if [[ $cuda == ON ]]; then
  cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
  [[ $cap =~ ^[0-9]+$ ]] && cfg+=(-DCMAKE_CUDA_ARCHITECTURES="$cap")
  cfg+=(-DMANYALLOC_PEERS_DIR="$peers_dir")
  [[ -n $peers_dir && -d .carry/boost/include ]] && cfg+=(-DMANYALLOC_BOOST_INCLUDE_DIR="$PWD/.carry/boost/include")
fi
configured=0
if have cmake; then
  if step "configure (CUDA $cuda, node $numa, cluster $region)" "$logs/configure.log" \
       cmake -S . -B "$bdir" "${cfg[@]}" -DMANYALLOC_BUILD_NUMA=$numa -DMANYALLOC_BUILD_REGION=$region; then
    configured=1
  elif [[ $numa == ON || $region == ON ]]; then
    # Keep the heap: configure it alone, the other layers are reported as failed.
    [[ $numa == ON ]] && fail numa "configure failed (see logs/configure.log)"
    [[ $region == ON ]] && fail region "configure failed (see logs/configure.log)"
    numa=OFF; region=OFF
    step "configure the heap alone" "$logs/configure.log" \
      cmake -S . -B "$bdir" "${cfg[@]}" -DMANYALLOC_BUILD_NUMA=OFF -DMANYALLOC_BUILD_REGION=OFF && configured=1
  fi
  ((configured)) || { fail heap "configure failed (see logs/configure.log)"; numa=OFF; region=OFF; }
else
  fail heap "cmake is missing (scripts/setup.sh could not install it)"; numa=OFF; region=OFF
fi
build() { cmake --build "$bdir" -j "$jobs" --target "$@"; }

# ---- 3. the many-core heap -------------------------------------------------
heap_bin=$bdir/heap/bench/suite
if ((configured)) && [[ $heap_mode == gpu ]]; then
  if step "heap: build manyalloc_heap_bench_cuda (nvcc, sm_${cap:-90})" "$logs/heap.log" build manyalloc_heap_bench_cuda; then
    if step "heap: GPU, Scatter+SizeClassSlabs vs CUDA malloc, 2^20 threads" "$logs/heap.log" \
         timeout 600 "$heap_bin/manyalloc_heap_bench_cuda" throughput --sizes 16,256,4096 --repeat 5 \
         --allocators scatter,slabs,baseline --out "$data/heap_gpu.jsonl"; then
      record heap ok "GPU ($gpu): throughput, 2^20 threads, 16 B / 256 B / 4 KiB"
    else
      fail heap "manyalloc_heap_bench_cuda throughput failed (see logs/heap.log)"
    fi
  else
    fail heap "build of manyalloc_heap_bench_cuda failed (see logs/heap.log)"
  fi
  if [[ -n $peers_dir ]]; then
    if step "heap: build manyalloc_heap_peers_bench (peers from ../shared/peers)" "$logs/heap_peers.log" \
         build manyalloc_heap_peers_bench; then
      grep -o 'manyalloc_heap_peers_bench: peers.*' "$logs/configure.log" | tail -1 >"$data/heap_peers_status.txt"
      if step "heap: peers (Gallatin, Ouroboros, mallocMC) vs ours, 2^20 threads" "$logs/heap_peers.log" \
           timeout 420 "$bdir/heap/bench/peers/manyalloc_heap_peers_bench" --experiments throughput \
           --threads 1048576 --sizes 16,256,4096 --repeat 3 --deadline-s 360 --out "$data/heap_peers.jsonl"; then
        record heap ok "peers: throughput at 2^20 threads, 16 B / 256 B / 4 KiB (warm launches)"
      else
        fail heap "manyalloc_heap_peers_bench failed (see logs/heap_peers.log)"
      fi
    else
      fail heap "build of manyalloc_heap_peers_bench failed (see logs/heap_peers.log)"
    fi
  fi
elif ((configured)); then
  if step "heap: build manyalloc_heap_bench_host" "$logs/heap.log" build manyalloc_heap_bench_host; then
    if step "heap: host threads, Scatter+SizeClassSlabs vs glibc malloc" "$logs/heap.log" \
         timeout 300 "$heap_bin/manyalloc_heap_bench_host" throughput --sizes 16,64,256,1024,4096,mixed \
         --repeat 5 --budget 10 --allocators scatter,slabs,baseline --out "$data/heap_host.jsonl"; then
      record heap ok "host threads ($(nproc)): throughput, 16 B - 4 KiB and mixed"
    else
      fail heap "manyalloc_heap_bench_host throughput failed (see logs/heap.log)"
    fi
  else
    fail heap "build of manyalloc_heap_bench_host failed (see logs/heap.log)"
  fi
fi

# ---- 4. the node allocator -------------------------------------------------
# measure LOG_TSV LABEL ALLOC REP COMMAND...: one run under /usr/bin/time,
# "label alloc rep wall_s maxrss_kib exit" appended to LOG_TSV.
measure() {
  local tsv=$1 label=$2 alloc=$3 rep=$4; shift 4
  local tf=$data/.time
  if [[ -x /usr/bin/time ]]; then
    /usr/bin/time -f "%e %M" -o "$tf" "$@" >/dev/null
  else  # no GNU time: the same two numbers through wait4
    /usr/bin/python3 - "$tf" "$@" <<'PY' >/dev/null
import os, sys, time
t0 = time.monotonic()
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
_, st, ru = os.wait4(pid, 0)
open(sys.argv[1], "w").write(f"{time.monotonic() - t0:.2f} {ru.ru_maxrss}\n")
sys.exit(os.waitstatus_to_exitcode(st))
PY
  fi
  local rc=$?
  printf '%s\t%s\t%s\t%s\t%s\n' "$label" "$alloc" "$rep" "$(tail -1 "$tf" | tr ' ' '\t')" "$rc" >>"$tsv"
  return $rc
}
numa_tour() {
  local lib=$PWD/$bdir/numa/libmanyalloc-numa.so bench=$bdir/numa/bench/numa_bench rc=0
  local -A pre=([glibc]="" [manyalloc]="LD_PRELOAD=$lib" [manyalloc-lowmem]="LD_PRELOAD=$lib MANYALLOC_NUMA_PROFILE=lowmem")
  local allocs=(glibc manyalloc manyalloc-lowmem)
  # Workloads as in numa/bench/run_bench.sh (same per-workload scale), 5 repetitions,
  # the allocator order rotated every repetition.
  step_begin "node: larson, t-test1 at 2 threads (glibc vs manyalloc, 5 reps)"
  local w scale rep i a
  for rep in 0 1 2 3 4; do
    for w in larson ttest1; do
      scale=$([[ $w == ttest1 ]] && echo 4 || echo 2)
      for i in 0 1 2; do
        a=${allocs[$(((i + rep) % 3))]}
        timeout 120 env ${pre[$a]} "$bench" --workload "$w" --threads 2 --allocator "$a" --scale "$scale" \
          --rep "$rep" >>"$data/numa_bench.jsonl" 2>>"$logs/numa.log" || { rc=1; echo "$w $a rep $rep failed" >>"$logs/numa.log"; }
      done
    done
  done
  step_end "$([[ $rc == 0 ]] && echo ok || echo "FAILED (see $logs/numa.log)")"
  # One real program: python3 building a dict of 2 million entries, with its own
  # small-object allocator (default) and with every object from malloc.
  local prog='d = {i: str(i) for i in range(2_000_000)}' prc=0
  step_begin "node: python3 dict of 2M entries under LD_PRELOAD (3 reps)"
  for rep in 0 1 2; do
    for i in 0 1 2; do
      a=${allocs[$(((i + rep) % 3))]}
      measure "$data/numa_program.tsv" "python3 dict" "$a" "$rep" env ${pre[$a]} /usr/bin/python3 -c "$prog" \
        2>>"$logs/numa.log" || prc=1
      measure "$data/numa_program.tsv" "python3 dict, PYTHONMALLOC=malloc" "$a" "$rep" \
        env PYTHONMALLOC=malloc ${pre[$a]} /usr/bin/python3 -c "$prog" 2>>"$logs/numa.log" || prc=1
    done
  done
  step_end "$([[ $prc == 0 ]] && echo ok || echo "FAILED (see $logs/numa.log)")"
  ((rc == 0 && prc == 0))
}
if [[ $numa == ON ]]; then
  if step "node: build libmanyalloc-numa.so, numa_bench" "$logs/numa.log" build manyalloc_numa numa_bench; then
    if numa_tour; then
      record numa ok "larson and t-test1 at 2 threads, python3 dict; glibc vs LD_PRELOAD=libmanyalloc-numa.so"
    else
      fail numa "a run failed (see logs/numa.log); the table holds the runs that worked"
    fi
  else
    fail numa "build of libmanyalloc-numa.so / numa_bench failed (see logs/numa.log)"
  fi
fi

# ---- 5. the cluster allocator ----------------------------------------------
region_tour() {
  local bin=$bdir/region/bench rc=0
  # Environment of scripts/test.sh and region/bench/run_bench.sh (Debian's
  # OpenMPI in containers and as root, more ranks than cores).
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
  export OMPI_MCA_osc=${OMPI_MCA_osc:-ucx} OMPI_MCA_mpi_yield_when_idle=${OMPI_MCA_mpi_yield_when_idle:-1}
  export MANYALLOC_REGION_GAS_MIB=${MANYALLOC_REGION_GAS_MIB:-16384}
  local mpirun
  mpirun=$(command -v mpirun || command -v mpiexec)
  # Through the real folder: OpenMPI takes its prefix from the path it was
  # started by, and /bin/mpirun (merged /usr) gives it "/".
  mpirun="$(cd "$(dirname "$mpirun")" && pwd -P)/$(basename "$mpirun")"
  local flags=()
  "$mpirun" --version 2>/dev/null | grep -qi "open mpi" && flags=(--oversubscribe --allow-run-as-root)
  local sizes=(15000 30000 60000)
  # 4 workers + 1 scheduler (one level): regions and MPI_Get alternate in one run.
  MANYALLOC_REGION_LEVELS=1 MANYALLOC_REGION_FANOUT=1 MANYALLOC_REGION_TRANSFER=auto \
    STEP_STDOUT=$data/region_list.jsonl step "cluster: list exchange, 4 workers, regions vs MPI_Get" \
    "$logs/region.log" timeout 180 "$mpirun" "${flags[@]}" -n 5 "$bin/region_bench_list" "${sizes[@]}" --reps 7 ||
    rc=1
  STEP_STDOUT=$data/region_roofline.jsonl step "cluster: roofline (same walk, no library), 4 ranks" \
    "$logs/region.log" timeout 120 "$mpirun" "${flags[@]}" -n 4 "$bin/region_bench_list_roofline" "${sizes[@]}" \
    --reps 7 || rc=1
  if ! have oshrun; then
    record region note "OpenSHMEM skipped: no oshrun"
  elif [[ ! -x $bin/region_bench_list_shmem ]]; then
    record region note "OpenSHMEM skipped: oshrun exists but liboshmem/shmem.h were not found at configure time"
  else
    STEP_STDOUT=$data/region_shmem.jsonl step "cluster: list exchange, 4 PEs, OpenSHMEM getmem/putmem" \
      "$logs/region.log" timeout 120 oshrun "${flags[@]}" -n 4 "$bin/region_bench_list_shmem" "${sizes[@]}" \
      --reps 7 || rc=1
  fi
  return $rc
}
if [[ $region == ON ]]; then
  targets=(region_bench_list region_bench_list_roofline)
  have oshrun && grep -q "^REGION_OSHMEM_LIBRARY:FILEPATH=/" "$bdir/CMakeCache.txt" &&
    grep -q "^REGION_SHMEM_INCLUDE:PATH=/" "$bdir/CMakeCache.txt" && targets+=(region_bench_list_shmem)
  if step "cluster: build libmanyalloc-region.so, ${#targets[@]} benchmarks" "$logs/region.log" build "${targets[@]}"; then
    if (region_tour); then
      record region ok "list exchange on 4 workers: regions vs MPI_Get (and OpenSHMEM), roofline"
    else
      fail region "a run failed (see logs/region.log); the table holds the runs that worked"
    fi
  else
    fail region "build of the region benchmarks failed (see logs/region.log)"
  fi
fi

# ---- 6. report -------------------------------------------------------------
py=/usr/bin/python3
[[ -x $py ]] || py=python3
if step "report: $out/REPORT.md and plots" "$logs/report.log" \
     "$py" scripts/quickstart_report.py "$out" --seconds $((SECONDS - start)) --heap-mode "$heap_mode"; then
  :
else
  failed=1
fi
echo
sed -n '/^<!-- summary -->/,/^<!-- \/summary -->/p' "$out/REPORT.md" 2>/dev/null | grep -v '^<!--'
cat <<EOF

report: $out/REPORT.md (tables, plots $out/*.png, raw data $data, logs $logs)
full benchmark suites and results:
  docs/results/            reports of every layer (heap/REPORT.md, numa/, region/, coalescing/)
  scripts/gpu_run.sh       GPU tests and every heap benchmark on an NVIDIA GPU
  heap/bench/suite         manyalloc_heap_bench_{host,cuda} all: the seven heap experiments
  numa/bench/run_bench.sh  every workload x thread count x allocator (jemalloc, tcmalloc, ...)
  region/bench/run_bench.sh  list exchange, fragmentation, Barnes-Hut (small | device16)
then: scripts/test.sh (every test, three flavours)
EOF
printf 'quickstart: %s in %d s\n' "$([[ $failed == 0 ]] && echo done || echo "done, WITH FAILURES (see the report)")" \
  $((SECONDS - start))
exit $failed
