#!/usr/bin/env bash
# On the GPU machine, from the repository root: builds free_variants.cu
# against header trees in .probe/trees/NAME (default configuration, and
# NAME+r with RelaxedFreesConfig where that tree has it) and gallatin_probe.cu
# against Gallatin's headers, then runs them alternately twice.
#   docs/results/heap/peers/free_variants_probe/run_variants.sh NAME...
# Prepare here first (ignored paths, carried with `carry: [".probe"]`):
#   .probe/trees/NAME   `git archive SHA heap/include common/include` unpacked,
#                       or a copy of the working tree's two include folders;
#   .probe/gen          manyalloc/common/build_config.hpp from a build folder;
#   .probe/gallatin     ../shared/peers/gallatin-*.tar.xz unpacked (include/).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd .probe
build() {  # binary tree extra-flags...
  nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr -Itrees/$2/heap/include -Itrees/$2/common/include \
    -Igen "${@:3}" -o /tmp/fv_$1 "$here/free_variants.cu" > /tmp/fv_build_$1.log 2>&1
}
runs=()
for t in "$@"; do
  build "$t" "$t" & runs+=("$t")
  if grep -q RelaxedFreesConfig "trees/$t/heap/include/manyalloc/heap/creation/size_class_slabs_config.hpp"; then
    build "${t}r" "$t" -DPROBE_CONFIG=manyalloc::heap::CreationPolicies::RelaxedFreesConfig & runs+=("${t}r")
  fi
done
nvcc -std=c++17 -O3 -arch=sm_90 --expt-relaxed-constexpr -Igallatin/include -o /tmp/fv_gallatin \
  "$here/gallatin_probe.cu" > /tmp/fv_build_gallatin.log 2>&1 &
runs+=(gallatin)
wait
source "$here/../probe_runs.sh"
run_alternately fv_ fv_build_ 2 "${runs[@]}"
