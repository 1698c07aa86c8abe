#!/usr/bin/env bash
# Copies what the bare GPU machine lacks into .carry/ (git-ignored), to be
# carried along with the working tree: GoogleTest's sources from Debian; for
# the `peers` stage of gpu_run.sh the peer allocators' source tarballs and the
# Ouroboros patch (.carry/peers, from MANYALLOC_PEERS_SRC, default
# /work/shared/peers) and the Boost headers mallocMC needs (.carry/boost,
# from Debian's libboost-dev: predef, config, core, version.hpp).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .carry
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
du -sh .carry
