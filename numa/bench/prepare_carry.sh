#!/usr/bin/env bash
# Builds the release node allocator and numa_bench here and copies into
# .carry/numa/ (git-ignored) everything the 16-core machine needs to run the
# benchmark without apt or internet: our library and benchmark, the compared
# allocators (Debian packages) and the shared libraries they or we need that
# a bare Ubuntu may lack (hwloc, udev, unwind, lzma); and, when the peers
# folder is there (MANYALLOC_PEERS_DIR, default ../shared/peers next to the
# repository), mimalloc-bench built from it (.carry/numa/mimalloc-bench: its
# bench.sh, bench/ inputs and out/bench/ programs) and GNU time, for
# run_device.sh --mibench.
#   numa/bench/prepare_carry.sh          (from anywhere in the repository)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=$repo/build-numa-carry
carry=$repo/.carry/numa
sys=/usr/lib/x86_64-linux-gnu
peers=${MANYALLOC_PEERS_DIR:-$(cd "$repo/.." && pwd)/shared/peers}
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMANYALLOC_CUDA=OFF \
  -DMANYALLOC_BUILD_REGION=OFF -DMANYALLOC_BUILD_TESTS=OFF -DMANYALLOC_BUILD_BENCHMARKS=ON \
  -DMANYALLOC_PEERS_DIR="$peers" >"${TMPDIR:-/tmp}/prepare_carry.cmake.log" 2>&1 ||
  { cat "${TMPDIR:-/tmp}/prepare_carry.cmake.log"; exit 1; }
grep "mimalloc-bench" "${TMPDIR:-/tmp}/prepare_carry.cmake.log" || true
targets=(manyalloc_numa numa_bench)
mib=$(sed -n 's/^MANYALLOC_MIBENCH_ROOT:INTERNAL=//p' "$build/CMakeCache.txt")
[[ -n $mib ]] && targets+=(mimalloc_bench)
nice cmake --build "$build" -j2 --target "${targets[@]}"
rm -rf "$carry"
mkdir -p "$carry"
cp -L "$build/numa/libmanyalloc-numa.so" "$carry/libmanyalloc-numa.so"
cp "$build/numa/bench/numa_bench" "$carry/"
for lib in libjemalloc.so.2 libtcmalloc.so.4 libmimalloc.so.2 libtbbmalloc_proxy.so.2 \
           libtbbmalloc.so.2 libhwloc.so.15 libudev.so.1 libunwind.so.8 liblzma.so.5; do
  src=$sys/$lib
  [[ -e $src ]] || src=/lib/x86_64-linux-gnu/$lib
  cp -L "$src" "$carry/$lib"
done
# mimalloc-bench: bench.sh (its arguments and scoring), the inputs under
# bench/, the programs in out/bench/ (bench.sh's layout), and GNU time.
if [[ -n $mib ]]; then
  mkdir -p "$carry/mimalloc-bench/out/bench"
  cp -r "$mib/bench.sh" "$mib/bench" "$carry/mimalloc-bench/"
  find "$mib/out/bench" -maxdepth 1 -type f -executable -exec cp {} "$carry/mimalloc-bench/out/bench/" \;
  cp -L /usr/bin/time "$carry/time"
else
  echo "mimalloc-bench skipped: no mimalloc-bench tarball in $peers (set MANYALLOC_PEERS_DIR)"
fi
# Our library's SONAME is libmanyalloc-numa.so.0.
ln -sf libmanyalloc-numa.so "$carry/libmanyalloc-numa.so.0"
git -C "$repo" rev-parse --short HEAD >"$carry/COMMIT" 2>/dev/null || echo unknown >"$carry/COMMIT"
# Everything must resolve from the carry directory plus a bare glibc/libstdc++.
missing=0
for f in "$carry"/*.so* "$carry/numa_bench" "$carry"/mimalloc-bench/out/bench/* "$carry"/time; do
  [[ -e $f ]] || continue
  if LD_LIBRARY_PATH=$carry ldd "$f" | grep -q "not found"; then echo "unresolved: $f"; missing=1; fi
done
du -sh "$carry"
ls -l "$carry"
exit $missing
