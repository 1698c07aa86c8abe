#!/usr/bin/env bash
# Builds and runs every test in three flavours (this is what CI runs):
#   release  optimised, CUDA targets compiled when nvcc is present (GPU tests
#            skip themselves visibly when no GPU is there)
#   checked  MANYALLOC_CHECKED=ON with AddressSanitizer + UndefinedBehaviorSanitizer
#   tsan     ThreadSanitizer, the tests labelled 'tsan'
# and, after the release flavour, scripts/check_test_labels.sh.
# Usage: scripts/test.sh [release|checked|tsan]...   (default: all three)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
jobs=${MANYALLOC_JOBS:-$(nproc)}
flavours=("$@")
((${#flavours[@]})) || flavours=(release checked tsan)

# Environment for the MPI tests (Debian's OpenMPI in containers and as root).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none

status=0
for f in "${flavours[@]}"; do
  case "$f" in
    release) cfg=(-DCMAKE_BUILD_TYPE=Release); sel=() ;;
    checked) cfg=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DMANYALLOC_CHECKED=ON
                  "-DMANYALLOC_SANITIZE=address;undefined" -DMANYALLOC_CUDA=OFF
                  -DMANYALLOC_BUILD_BENCHMARKS=OFF)
             sel=(-LE no_sanitize) ;;
    tsan)    cfg=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DMANYALLOC_SANITIZE=thread
                  -DMANYALLOC_CUDA=OFF -DMANYALLOC_BUILD_BENCHMARKS=OFF
                  -DMANYALLOC_BUILD_REGION=OFF)
             sel=(-L tsan) ;;
    *) echo "unknown flavour $f"; exit 2 ;;
  esac
  echo "=== test flavour: $f"
  cmake -S . -B "build/$f" -G Ninja "${cfg[@]}" >/dev/null
  cmake --build "build/$f" -j "$jobs"
  (cd "build/$f" && ctest --output-on-failure -j "$jobs" --timeout 600 "${sel[@]}") || status=1
  # Every test in exactly one layer (ctest -L heap|numa|region|common).
  if [[ $f == release ]]; then
    scripts/check_test_labels.sh "build/$f" || status=1
  fi
done
exit $status
