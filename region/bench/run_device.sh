#!/usr/bin/env bash
# The 16-rank run on a machine without MPI, using the bundle that
# prepare_carry.sh assembled in .carry/region/ (carried with the tree).
# Usage: region/bench/run_device.sh OUTDIR [PROFILE]   (< 5 minutes on 16 cores)
# PROFILE: run_bench.sh's profile, device16 (default: with the 16-rank
# correctness tests first) or workers16 (its 16-worker rows only, no tests,
# no report: for alternating runs of two bundles, REGION_CARRY=...).
# Writes OUTDIR/region.jsonl, OUTDIR/region.log and, when matplotlib is
# importable, the report (else run region/bench/report.py on the JSONL later).
# The list-exchange roofline (no library: region_bench_list_roofline, 16
# ranks, 15K-240K nodes, 5 reps) comes from run_bench.sh's device16 profile;
# a bundle from before it lacks the binary (rerun prepare_carry.sh), and the
# run then logs it as skipped.
set -uo pipefail
out=${1:?usage: run_device.sh OUTDIR [PROFILE]}
profile=${2:-device16}
case $profile in
  device16 | workers16 | small | delaunay) ;;
  *) echo "run_device.sh: unknown profile $profile (device16, workers16, small, delaunay)"; exit 2 ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
B=${REGION_CARRY:-$repo/.carry/region}
[[ -x $B/bin/region_bench_list ]] || { echo "no bundle in $B: run region/bench/prepare_carry.sh first"; exit 2; }
mkdir -p "$out"
L=$B/root/usr/lib/x86_64-linux-gnu
# Relocated Debian OpenMPI (OPAL_PREFIX), its PMIx and UCX plugins.
export OPAL_PREFIX=$B/root/usr
export OPAL_SYSCONFDIR=$B/root/etc/openmpi
export OPAL_LIBDIR=$L/openmpi/lib OPAL_PKGLIBDIR=$L/openmpi/lib/openmpi3 OPAL_PKGDATADIR=$B/root/usr/share/openmpi
P=$L/pmix2
export PMIX_PREFIX=$P PMIX_EXEC_PREFIX=$P PMIX_LIBDIR=$P/lib PMIX_PKGLIBDIR=$P/lib/pmix PMIX_DATADIR=$P/share \
  PMIX_PKGDATADIR=$P/share/pmix
export HWLOC_PLUGINS_PATH=$L/hwloc
export UCX_MODULE_DIR=$L/ucx
export LD_LIBRARY_PATH=$B/lib:$L:$L/openmpi/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$B/root/usr/bin:$PATH
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_osc=ucx OMPI_MCA_mpi_yield_when_idle=1
MPIRUN=$B/root/usr/bin/orterun
OSHRUN=$B/root/usr/bin/oshrun
{
  echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) x$(nproc), $(uname -r)"
  echo "bundle commit: $(cat "$B/COMMIT" 2>/dev/null), date: $(date -Is)"
  # What the list exchange's walk depends on: caches, huge pages for the
  # memfd-backed GAS (tmpfs THP), fault-around (prefault.hpp).
  echo "caches: $(grep -m1 'cache size' /proc/cpuinfo | cut -d: -f2), L3 $(cat /sys/devices/system/cpu/cpu0/cache/index3/size 2>/dev/null)"
  echo "thp: enabled $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null), shmem_enabled $(cat /sys/kernel/mm/transparent_hugepage/shmem_enabled 2>/dev/null)"
} | tee "$out/machine.txt"

# Single-copy (CMA) shared memory when the kernel allows it, else copy-in/out.
# (run_bench.sh defaults the variable to none: set it explicitly either way.)
if OMPI_MCA_btl_vader_single_copy_mechanism=cma MANYALLOC_REGION_GAS_MIB=4096 \
    timeout 60 "$MPIRUN" -n 4 "$B/bin/region_mpi_test" > "$out/probe.log" 2>&1; then
  export OMPI_MCA_btl_vader_single_copy_mechanism=cma
  echo "probe: CMA single copy works" | tee -a "$out/machine.txt"
else
  export OMPI_MCA_btl_vader_single_copy_mechanism=none
  echo "probe: CMA failed, using btl_vader_single_copy_mechanism=none" | tee -a "$out/machine.txt"
fi
# The correctness test at 16 ranks, one and two scheduler levels.
# Both transfer modes (auto: zero copy on this host; copy).
if [[ $profile == device16 ]]; then
  for mode in auto copy; do
    for cfg in "1 1" "2 3"; do
      set -- $cfg
      echo "mpi_test 16 ranks, levels $1, transfer $mode:" | tee -a "$out/machine.txt"
      MANYALLOC_REGION_LEVELS=$1 MANYALLOC_REGION_FANOUT=$2 MANYALLOC_REGION_GAS_MIB=4096 MANYALLOC_REGION_TRANSFER=$mode \
        timeout 120 "$MPIRUN" -n 16 "$B/bin/region_mpi_test" 2>&1 | grep -E "region test:|PASSED|FAILED" | tee -a "$out/machine.txt"
    done
  done
fi

BIN=$B/bin MPIRUN=$MPIRUN OSHRUN=$OSHRUN "$here/run_bench.sh" "$out" "$profile"
bench_rc=$?
echo "run_device.sh: $SECONDS s in all" | tee -a "$out/machine.txt"
[[ $profile == device16 ]] || exit $bench_rc
if python3 -c "import matplotlib" 2>/dev/null; then
  python3 "$here/report.py" "$out/region.jsonl" "$out/report" --title "Region allocator, 16-core run" \
    --command "region/bench/run_device.sh OUTDIR"
else
  echo "matplotlib missing here: run region/bench/report.py $out/region.jsonl docs/results/region/device16 elsewhere"
fi
