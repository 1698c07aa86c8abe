#!/usr/bin/env bash
# On the GPU machine, from the repository root: builds churn_probe.cu against
# the working tree's heap headers, plain and instrumented (add_counters.py on a
# copy), and runs both.
#   docs/results/heap/peers/scatter_churn_probe/run.sh BUILD_CONFIG_DIR [OUT]
# BUILD_CONFIG_DIR holds manyalloc/common/build_config.hpp (a build's common/generated).
set -uo pipefail
here=$(dirname "$0")
gen=$1
out=${2:-/tmp}
tree=$(mktemp -d)
cp -r heap common "$tree"/
python3 "$here/add_counters.py" "$tree"
flags=(-std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr -I"$gen")
nvcc "${flags[@]}" -Iheap/include -Icommon/include -o "$out/churn_plain" "$here/churn_probe.cu" &
nvcc "${flags[@]}" -DCOUNTED -I"$tree/heap/include" -I"$tree/common/include" -o "$out/churn_counted" "$here/churn_probe.cu" &
wait
echo "== plain"; timeout 120 "$out/churn_plain"
echo "== counted (counters: $(paste -sd';' "$tree/probe_counter_names.txt"))"; timeout 300 "$out/churn_counted"
