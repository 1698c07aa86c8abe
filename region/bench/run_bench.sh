#!/usr/bin/env bash
# Runs the region benchmarks and writes JSON Lines into OUTDIR/region.jsonl.
# Usage: region/bench/run_bench.sh OUTDIR [small|device16|delaunay|workers16]
#   BIN     folder with the benchmark binaries (default build-region/region/bench)
#   MPIRUN  mpiexec command (default: mpiexec)   OSHRUN  oshrun command (default: oshrun)
# small:    the 2-core run (2-4 workers, <= 60K nodes)
# device16: the 16-core run (2-16 workers, 15K-240K nodes), < 5 minutes
# delaunay: the Delaunay runs of the small profile (2, 4, 8 workers), 1 worker,
#           and the copy mode at 4 workers
# workers16: device16's 16-worker region rows of one scheduler level (list
#           exchange in both modes, 15K-240K nodes, without MPI_Get, OpenSHMEM
#           or the roofline) and Barnes-Hut on 1 and 2 levels, for side-by-side
#           runs of two bundles in one call (about 30 s)
set -uo pipefail
out=${1:?usage: run_bench.sh OUTDIR [small|device16|delaunay|workers16]}
profile=${2:-small}
here=$(cd "$(dirname "$0")" && pwd)
BIN=${BIN:-$here/../../build-region-rel/region/bench}  # release build (prepare_carry.sh makes it)
MPIRUN=${MPIRUN:-mpiexec}
OSHRUN=${OSHRUN:-oshrun}
mkdir -p "$out"
jl=$out/region.jsonl
: > "$jl"
log=$out/region.log
: > "$log"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
export OMPI_MCA_osc=${OMPI_MCA_osc:-ucx} OMPI_MCA_mpi_yield_when_idle=${OMPI_MCA_mpi_yield_when_idle:-1}
export MANYALLOC_REGION_GAS_MIB=${MANYALLOC_REGION_GAS_MIB:-16384}

run() {  # label, timeout, command...
  local label=$1 to=$2; shift 2
  echo "== $label: $*" | tee -a "$log"
  local t0=$SECONDS
  timeout "$to" "$@" >> "$jl" 2>> "$log"
  local rc=$?
  echo "   rc=$rc, $((SECONDS - t0)) s" | tee -a "$log"
}
# Region + MPI_Get list exchange; layout: levels fanout workers nodes...
# Transfer mode from TRANSFER (auto: zero copy between ranks of one host;
# copy: every send copies), default auto.
list() {
  local levels=$1 fanout=$2 workers=$3; shift 3
  local nsched=1
  [[ $levels == 2 ]] && nsched=$((1 + fanout))
  MANYALLOC_REGION_LEVELS=$levels MANYALLOC_REGION_FANOUT=$fanout MANYALLOC_REGION_TRANSFER=${TRANSFER:-auto} \
    run "list L$levels W$workers ${TRANSFER:-auto}" 240 $MPIRUN -n $((nsched + workers)) "$BIN/region_bench_list" "$@"
}
shmem() {
  local workers=$1; shift
  [[ -x $BIN/region_bench_list_shmem ]] || return 0
  run "shmem W$workers" 240 $OSHRUN -n "$workers" "$BIN/region_bench_list_shmem" "$@"
}
# Roofline of the list exchange (same lists, stages, barriers and walk in
# plain memory, no library; one rank per worker, no schedulers).
roofline() {
  local workers=$1; shift
  [[ -x $BIN/region_bench_list_roofline ]] || { echo "== roofline W$workers: no $BIN/region_bench_list_roofline, skipped" | tee -a "$log"; return 0; }
  run "roofline W$workers" 120 $MPIRUN -n "$workers" "$BIN/region_bench_list_roofline" "$@"
}
bh() {
  local levels=$1 fanout=$2 workers=$3 bodies=$4 steps=$5
  local nsched=1
  [[ $levels == 2 ]] && nsched=$((1 + fanout))
  MANYALLOC_REGION_LEVELS=$levels MANYALLOC_REGION_FANOUT=$fanout \
    run "barnes-hut L$levels W$workers" 240 $MPIRUN -n $((nsched + workers)) "$BIN/region_bench_barnes_hut" "$bodies" "$steps"
}

# Delaunay triangulation with refinement, region version; layout: levels
# fanout workers points (transfer mode from TRANSFER, default auto).
delaunay() {
  local levels=$1 fanout=$2 workers=$3 points=$4
  [[ -x $BIN/region_bench_delaunay ]] || { echo "== delaunay W$workers: no $BIN/region_bench_delaunay, skipped" | tee -a "$log"; return 0; }
  local nsched=1
  [[ $levels == 2 ]] && nsched=$((1 + fanout))
  MANYALLOC_REGION_LEVELS=$levels MANYALLOC_REGION_FANOUT=$fanout MANYALLOC_REGION_TRANSFER=${TRANSFER:-auto} \
    run "delaunay L$levels W$workers ${TRANSFER:-auto}" 240 $MPIRUN -n $((nsched + workers)) "$BIN/region_bench_delaunay" "$points"
}
delaunay_shmem() {
  local workers=$1 points=$2
  [[ -x $BIN/region_bench_delaunay_shmem ]] || return 0
  run "delaunay shmem W$workers" 240 $OSHRUN -n "$workers" "$BIN/region_bench_delaunay_shmem" "$points"
}
# reps points fanout workers...: per worker count and repetition the region
# version (one scheduler), the OpenSHMEM version, and the region version
# with two scheduler levels (fanout leaf schedulers), alternating.
delaunay_set() {
  local reps=$1 points=$2 fanout=$3; shift 3
  local w r
  for w in "$@"; do
    for ((r = 0; r < reps; ++r)); do
      delaunay 1 1 "$w" "$points"
      delaunay_shmem "$w" "$points"
      delaunay 2 "$fanout" "$w" "$points"
    done
  done
}

[[ $profile == delaunay || $profile == workers16 ]] || run "fragmentation" 60 "$BIN/region_bench_frag" 1
case $profile in
  small)
    list 1 1 4 15000 30000 60000 --reps 3
    TRANSFER=copy list 1 1 4 15000 30000 60000 --reps 3 --no-mpi-get
    shmem 4 15000 30000 60000 --reps 3
    roofline 4 15000 30000 60000 --reps 3
    roofline 2 30000 --reps 3
    for w in 2 4; do
      list 1 1 $w 30000 --reps 3
      TRANSFER=copy list 1 1 $w 30000 --reps 3 --no-mpi-get
      list 2 2 $w 30000 --reps 3 --no-mpi-get
      shmem $w 30000 --reps 3
    done
    bh 1 1 4 8192 3
    bh 2 2 4 8192 3
    bh 1 1 4 8192 3
    bh 2 2 4 8192 3
    delaunay_set 3 200000 2 2 4 8
    ;;
  delaunay)
    delaunay_set 3 200000 2 1 2 4 8
    TRANSFER=copy delaunay 1 1 4 200000
    ;;
  device16)
    list 1 1 16 15000 30000 60000 120000 240000 --reps 5
    TRANSFER=copy list 1 1 16 15000 30000 60000 120000 240000 --reps 5 --no-mpi-get
    shmem 16 15000 30000 60000 120000 240000 --reps 5
    roofline 16 15000 30000 60000 120000 240000 --reps 5
    for w in 2 4 8 16; do
      list 1 1 $w 30000 --reps 3
      TRANSFER=copy list 1 1 $w 30000 --reps 3 --no-mpi-get
      list 2 4 $w 30000 --reps 3 --no-mpi-get
      TRANSFER=copy list 2 4 $w 30000 --reps 3 --no-mpi-get
      shmem $w 30000 --reps 3
    done
    for w in 4 8 16; do
      bh 1 1 $w 32768 3
      bh 2 4 $w 32768 3
    done
    delaunay_set 3 800000 4 4 8 16
    ;;
  workers16)
    list 1 1 16 15000 30000 60000 120000 240000 --reps 5 --no-mpi-get
    TRANSFER=copy list 1 1 16 15000 30000 60000 120000 240000 --reps 5 --no-mpi-get
    bh 1 1 16 32768 3
    bh 2 4 16 32768 3
    ;;
  *) echo "unknown profile $profile"; exit 2 ;;
esac
echo "records: $(wc -l < "$jl") in $jl"
