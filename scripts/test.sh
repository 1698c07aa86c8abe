#!/usr/bin/env bash
# Builds and runs every test in three flavours (this is what CI runs):
#   release  optimised, CUDA targets compiled when nvcc is present (GPU tests
#            skip themselves visibly when no GPU is there)
#   checked  MANYALLOC_CHECKED=ON with AddressSanitizer + UndefinedBehaviorSanitizer
#            (-O1 and line tables only, as the sanitizers' documentation
#            advises: docs/results/ci/README.md has what it saves)
#   tsan     ThreadSanitizer, the tests labelled 'tsan', host heaps of 2 MiB
#            (MANYALLOC_TEST_HEAP_MB: races need many threads, not many chunks)
# and, after the release flavour, scripts/check_test_labels.sh.
# Without a GPU (no `nvidia-smi -L` that lists one), the CUDA tests are
# compiled to PTX only (CMAKE_CUDA_ARCHITECTURES=90-virtual) and without
# device-code optimisation (CMAKE_CUDA_FLAGS=-G): every test kernel still
# goes through the front end and PTX generation, so what does not compile
# fails here, but nothing is spent optimising code no GPU will run; the CUDA
# benchmark programs are left out (MANYALLOC_BUILD_CUDA_BENCHMARKS=OFF). The
# GPU machine's build (scripts/gpu_run.sh) compiles all of it as optimised
# sm_90 code. MANYALLOC_TEST_CUDA_ARCHITECTURES, MANYALLOC_TEST_CUDA_FLAGS and
# MANYALLOC_TEST_CUDA_BENCHMARKS (ON/OFF) override the choices.
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

have_gpu=0
nvidia-smi -L 2>/dev/null | grep '^GPU' > /dev/null && have_gpu=1
if [[ -z ${MANYALLOC_TEST_CUDA_ARCHITECTURES:-} ]]; then
  if ((have_gpu)); then MANYALLOC_TEST_CUDA_ARCHITECTURES=90; else MANYALLOC_TEST_CUDA_ARCHITECTURES=90-virtual; fi
fi
if [[ -z ${MANYALLOC_TEST_CUDA_FLAGS+set} ]]; then
  if ((have_gpu)); then MANYALLOC_TEST_CUDA_FLAGS=""; else MANYALLOC_TEST_CUDA_FLAGS="-G"; fi
fi
if [[ -z ${MANYALLOC_TEST_CUDA_BENCHMARKS:-} ]]; then
  if ((have_gpu)); then MANYALLOC_TEST_CUDA_BENCHMARKS=ON; else MANYALLOC_TEST_CUDA_BENCHMARKS=OFF; fi
fi
echo "CUDA in the release flavour: architectures $MANYALLOC_TEST_CUDA_ARCHITECTURES," \
     "flags '${MANYALLOC_TEST_CUDA_FLAGS}', benchmark programs $MANYALLOC_TEST_CUDA_BENCHMARKS"

status=0
for f in "${flavours[@]}"; do
  case "$f" in
    release) cfg=(-DCMAKE_BUILD_TYPE=Release "-DCMAKE_CUDA_ARCHITECTURES=$MANYALLOC_TEST_CUDA_ARCHITECTURES"
                  "-DCMAKE_CUDA_FLAGS=$MANYALLOC_TEST_CUDA_FLAGS"
                  "-DMANYALLOC_BUILD_CUDA_BENCHMARKS=$MANYALLOC_TEST_CUDA_BENCHMARKS")
             sel=(); test_env=() ;;
    checked) cfg=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DMANYALLOC_CHECKED=ON
                  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
                  "-DMANYALLOC_SANITIZE=address;undefined" -DMANYALLOC_CUDA=OFF
                  -DMANYALLOC_BUILD_BENCHMARKS=OFF)
             sel=(-LE no_sanitize); test_env=() ;;
    tsan)    cfg=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DMANYALLOC_SANITIZE=thread
                  -DMANYALLOC_CUDA=OFF -DMANYALLOC_BUILD_BENCHMARKS=OFF
                  -DMANYALLOC_BUILD_REGION=OFF)
             sel=(-L tsan); test_env=(MANYALLOC_TEST_HEAP_MB=2) ;;
    *) echo "unknown flavour $f"; exit 2 ;;
  esac
  echo "=== test flavour: $f"
  cmake -S . -B "build/$f" -G Ninja "${cfg[@]}" >/dev/null
  cmake --build "build/$f" -j "$jobs"
  (cd "build/$f" && env "${test_env[@]}" ctest --output-on-failure -j "$jobs" --timeout 600 "${sel[@]}") || status=1
  # Every test in exactly one layer (ctest -L heap|numa|region|common).
  if [[ $f == release ]]; then
    scripts/check_test_labels.sh "build/$f" || status=1
  fi
done
exit $status
