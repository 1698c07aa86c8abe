#!/usr/bin/env bash
# Builds the release node allocator and numa_bench here and copies into
# .carry/numa/ (git-ignored) everything the 16-core machine needs to run the
# benchmark without apt or internet: our library and benchmark, the compared
# allocators (Debian packages) and the shared libraries they or we need that
# a bare Ubuntu may lack (hwloc, udev, unwind, lzma).
#   numa/bench/prepare_carry.sh          (from anywhere in the repository)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=$repo/build-numa-carry
carry=$repo/.carry/numa
sys=/usr/lib/x86_64-linux-gnu
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMANYALLOC_CUDA=OFF \
  -DMANYALLOC_BUILD_REGION=OFF -DMANYALLOC_BUILD_TESTS=OFF -DMANYALLOC_BUILD_BENCHMARKS=ON >/dev/null
nice cmake --build "$build" -j2 --target manyalloc_numa numa_bench
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
# Our library's SONAME is libmanyalloc-numa.so.0.
ln -sf libmanyalloc-numa.so "$carry/libmanyalloc-numa.so.0"
git -C "$repo" rev-parse --short HEAD >"$carry/COMMIT" 2>/dev/null || echo unknown >"$carry/COMMIT"
# Everything must resolve from the carry directory plus a bare glibc/libstdc++.
missing=0
for f in "$carry"/*.so* "$carry/numa_bench"; do
  if LD_LIBRARY_PATH=$carry ldd "$f" | grep -q "not found"; then echo "unresolved: $f"; missing=1; fi
done
du -sh "$carry"
ls -l "$carry"
exit $missing
