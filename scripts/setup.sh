#!/usr/bin/env bash
# Installs what manyalloc needs on a fresh Debian 12 machine (idempotent: it
# calls apt-get only when a package is missing). Runs as root, or through sudo.
#   scripts/setup.sh            build + test dependencies
#   scripts/setup.sh --bench    also the allocators compared in the benchmarks
#                               and the plotting tools
set -euo pipefail
pkgs=(cmake g++ make ninja-build libgtest-dev libhwloc-dev hwloc
      openmpi-bin libopenmpi-dev python3 time
      libclang-14-dev libclang-cpp14-dev llvm-14-dev)  # Clang 14: manyalloc-coalesce (heap/tools/coalesce)
if [[ "${1:-}" == "--bench" ]]; then
  pkgs+=(python3-matplotlib python3-numpy libjemalloc2 libgoogle-perftools4
         libmimalloc2.0 libtbbmalloc2)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "setup: dependencies present"
