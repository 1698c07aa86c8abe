# What the heap probes' scripts under docs/results/heap/peers share (sourced).
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
