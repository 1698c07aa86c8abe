# What the heap probes' scripts under docs/results/heap/peers share (sourced).
#
# build_against_trees SRC BIN_PREFIX LOG_PREFIX NAME...: starts one nvcc
# build of SRC per header tree .carry/ncu/NAME (heap/include, common/include;
# .carry/ncu/gen holds build_config.hpp) into /tmp/<BIN_PREFIX><NAME>, its
# output in /tmp/<LOG_PREFIX><NAME>.log, all in the background: `wait` for them.
build_against_trees() {
  local src=$1 bin=$2 log=$3 t P=.carry/ncu
  shift 3
  for t in "$@"; do
    nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr -I"$P/$t/heap/include" -I"$P/$t/common/include" -I"$P/gen" \
      -o "/tmp/$bin$t" "$src" > "/tmp/$log$t.log" 2>&1 &
  done
}
#
# run_alternately BIN_PREFIX LOG_PREFIX ROUNDS NAME...: names the GPU, then
# runs the built probes /tmp/<BIN_PREFIX><NAME> one after the other, ROUNDS
# times over (variants side by side on one machine), each with the argument
# "<NAME> r<round>"; a probe that did not build shows the tail of
# /tmp/<LOG_PREFIX><NAME>.log instead.
run_alternately() {
  local bin=$1 log=$2 rounds=$3 round t
  shift 3
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  for ((round = 1; round <= rounds; ++round)); do
    for t in "$@"; do
      if [[ -x /tmp/$bin$t ]]; then timeout 100 "/tmp/$bin$t" "$t r$round"; else echo "$t: build failed"; tail -5 "/tmp/$log$t.log"; fi
    done
  done
}
