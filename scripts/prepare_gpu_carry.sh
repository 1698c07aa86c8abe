#!/usr/bin/env bash
# Copies what the bare GPU machine lacks into .carry/ (git-ignored), to be
# carried along with the working tree: GoogleTest's sources from Debian; for
# the `peers` stage of gpu_run.sh the peer allocators' source tarballs and the
# Ouroboros patch (.carry/peers, from MANYALLOC_PEERS_SRC, default
# /work/shared/peers) and the Boost headers mallocMC needs (.carry/boost,
# from Debian's libboost-dev: predef, config, core, version.hpp).
#   scripts/prepare_gpu_carry.sh [--base REV]
# --base REV: also the heap and common headers of commit REV in .carry/base
# (the base side of gpu_run.sh's soak-ab and peers-ab stages; COMMIT there names it).
set -euo pipefail
cd "$(dirname "$0")/.."
base_rev=
if [[ ${1:-} == --base ]]; then
  base_rev=${2:?prepare_gpu_carry: --base needs a revision}
fi
mkdir -p .carry
if [[ -n $base_rev ]]; then
  rm -rf .carry/base
  mkdir -p .carry/base
  git archive "$base_rev" heap/include common/include | tar -x -C .carry/base
  git rev-parse --short "$base_rev" > .carry/base/COMMIT
fi
if [[ ! -d .carry/googletest ]]; then
  cp -r /usr/src/googletest .carry/googletest
fi

peers_src=${MANYALLOC_PEERS_SRC:-/work/shared/peers}
if [[ -d $peers_src ]]; then
  mkdir -p .carry/peers
  for f in "$peers_src"/*.tar.xz "$peers_src"/ouroboros-cuda13.diff; do
    [[ -f $f ]] && install -m 0644 "$f" .carry/peers/
  done
else
  echo "prepare_gpu_carry: no $peers_src: the peers stage will run our heaps only"
fi

boost=/usr/include/boost
if [[ ! -f $boost/predef.h && $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libboost-dev >/dev/null || true
fi
if [[ -f $boost/predef.h && -f $boost/core/demangle.hpp ]]; then
  rm -rf .carry/boost
  mkdir -p .carry/boost/include/boost
  cp -r "$boost"/predef "$boost"/predef.h "$boost"/config "$boost"/config.hpp "$boost"/core \
    "$boost"/version.hpp .carry/boost/include/boost/
else
  echo "prepare_gpu_carry: no Boost headers (libboost-dev): the peers stage will skip mallocMC"
fi
# The coalescing-rewrite stage of gpu_run.sh: the plain-malloc kernels
# rewritten here by manyalloc-coalesce (the GPU machine has no Clang 14),
# with the hash of the source they came from (the GPU build checks it).
# MANYALLOC_COALESCE_TOOL names a built tool; otherwise one is built.
tool=${MANYALLOC_COALESCE_TOOL:-}
for d in build/release build/coalesce-tool; do
  [[ -z $tool && -x $d/heap/tools/coalesce/manyalloc-coalesce ]] && tool=$d/heap/tools/coalesce/manyalloc-coalesce
done
if [[ -z $tool ]]; then
  cmake -S . -B build/coalesce-tool -G Ninja -DCMAKE_BUILD_TYPE=Release -DMANYALLOC_CUDA=OFF \
    -DMANYALLOC_BUILD_TESTS=OFF -DMANYALLOC_BUILD_BENCHMARKS=OFF -DMANYALLOC_BUILD_NUMA=OFF \
    -DMANYALLOC_BUILD_REGION=OFF -DMANYALLOC_BUILD_COALESCE_TOOL=ON >/dev/null \
    && cmake --build build/coalesce-tool --target manyalloc_coalesce >/dev/null \
    && tool=build/coalesce-tool/heap/tools/coalesce/manyalloc-coalesce
fi
plain=heap/bench/coalescing/rewrite/plain_malloc_kernels.cu
if [[ -n $tool ]]; then
  rm -rf .carry/coalesce
  mkdir -p .carry/coalesce
  "$tool" --fail-unless-uniform --report=.carry/coalesce/plain_malloc_kernels.report "$plain" \
    -o .carry/coalesce/plain_malloc_kernels.rewritten.cu
  sha256sum "$plain" | cut -d' ' -f1 > .carry/coalesce/plain_malloc_kernels.cu.sha256
else
  echo "prepare_gpu_carry: manyalloc-coalesce could not be built (Clang 14 missing?): no coalescing-rewrite stage"
fi
du -sh .carry
