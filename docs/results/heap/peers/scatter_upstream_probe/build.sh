#!/usr/bin/env bash
# Sourced by run.sh and run_cold.sh on the GPU machine, from the repository
# root, with the header tree names in "$@": builds ours.cu against each tree
# .carry/ncu/NAME (heap/include, common/include; .carry/ncu/gen holds
# build_config.hpp) as Scatter (NAME) and, unless NO_RELAXED=1, as
# Scatter+RelaxedFrees (NAMEr), unless NO_UPSTREAM=1 upstream.cu against
# mallocMC 2.6.0 (.carry/peers tarball, .carry/boost) (its 2^20 x 4 KiB
# launch does not end) and, unless NO_ROOF=1, roofline.cu (no
# allocator: the limit, with a relaxed atomic, a release atomic or a read
# only), all at once, into /tmp/su_RUN; sets runs to the RUN names built
# (-lineinfo with LINEINFO=1, for Nsight Compute's source page).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
P=.carry/ncu
flags=(-O3 -arch=sm_90 --expt-relaxed-constexpr)
[[ ${LINEINFO:-0} == 1 ]] && flags+=(-lineinfo)
runs=()
for t in "$@"; do
  inc=(-I$P/$t/heap/include -I$P/$t/common/include -I$P/gen)
  nvcc -std=c++20 "${flags[@]}" "${inc[@]}" -o /tmp/su_$t $here/ours.cu > /tmp/sub_$t.log 2>&1 &
  runs+=("$t")
  if [[ ${NO_RELAXED:-0} != 1 ]]; then
    nvcc -std=c++20 "${flags[@]}" "${inc[@]}" -DPROBE_CONFIG=manyalloc::heap::CreationPolicies::ScatterRelaxedFreesConfig \
      -o /tmp/su_${t}r $here/ours.cu > /tmp/sub_${t}r.log 2>&1 &
    runs+=("${t}r")
  fi
done
if [[ ${NO_UPSTREAM:-0} != 1 ]]; then
  mkdir -p /tmp/mmc && tar -xJf .carry/peers/mallocmc-*.tar.xz -C /tmp/mmc
  m=$(dirname "$(dirname "$(find /tmp/mmc -path '*src/include/mallocMC/mallocMC.hpp' | head -1)")")
  nvcc -std=c++17 "${flags[@]}" --extended-lambda -DALPAKA_ACC_GPU_CUDA_ENABLED -isystem "$m/../../alpaka/include" -isystem "$m" \
    -isystem .carry/boost/include -o /tmp/su_upstream $here/upstream.cu > /tmp/sub_upstream.log 2>&1 &
  runs+=(upstream)
fi
if [[ ${NO_ROOF:-0} != 1 ]]; then
  # The limit with no allocator in the way (roofline.cu): entry read and one atomic, entry read only.
  nvcc -std=c++17 "${flags[@]}" -o /tmp/su_roof $here/roofline.cu > /tmp/sub_roof.log 2>&1 &
  nvcc -std=c++17 "${flags[@]}" -DPROBE_FREE_READ_ONLY -o /tmp/su_roofread $here/roofline.cu > /tmp/sub_roofread.log 2>&1 &
  # and the limit of an ordered free: entry read and one release atomic.
  nvcc -std=c++17 "${flags[@]}" -DPROBE_FREE_RELEASE -o /tmp/su_roofrel $here/roofline.cu > /tmp/sub_roofrel.log 2>&1 &
  runs+=(roof roofread roofrel)
fi
wait
for t in "${runs[@]}"; do [[ -x /tmp/su_$t ]] || { echo "$t: build failed"; tail -20 /tmp/sub_$t.log; }; done
