#!/usr/bin/env bash
# Assembles a self-contained bundle in .carry/region/ (git-ignored) for the
# 16-core machine that has no MPI: the release benchmark binaries, Debian's
# OpenMPI runtime unpacked from its .deb files (apt-get download + dpkg -x),
# and every shared library they need that a bare Ubuntu lacks. OpenMPI is
# relocated there with OPAL_PREFIX (see run_device.sh, env.sh).
# Usage: region/bench/prepare_carry.sh          (from anywhere; ~1-3 minutes)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
B=$repo/.carry/region
build=$repo/build-region-rel
jobs=${MANYALLOC_JOBS:-2}

echo "== release build in $build"
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMANYALLOC_CUDA=OFF \
  -DMANYALLOC_BUILD_NUMA=OFF -DMANYALLOC_BUILD_TESTS=ON -DMANYALLOC_BUILD_BENCHMARKS=ON >/dev/null
nice cmake --build "$build" -j "$jobs" --target region_bench_frag region_bench_list region_bench_barnes_hut \
  region_bench_list_shmem region_bench_list_roofline region_bench_delaunay region_bench_delaunay_shmem region_bench_rpc_latency region_mpi_test

rm -rf "$B"
mkdir -p "$B"/{bin,lib,root,debs}
cp "$build"/region/bench/region_bench_* "$build"/region/tests/region_mpi_test "$B/bin/"
strip "$B"/bin/* 2>/dev/null || true

echo "== Debian OpenMPI runtime (.deb files)"
pkgs=(openmpi-bin libopenmpi3 openmpi-common libpmix2 libucx0 libhwloc15
      libevent-core-2.1-7 libevent-pthreads-2.1-7)
(cd "$B/debs" && apt-get download "${pkgs[@]}" >/dev/null)
for d in "$B"/debs/*.deb; do dpkg -x "$d" "$B/root"; done
rm -rf "$B/debs" "$B/root/usr/share/doc" "$B/root/usr/share/man" "$B/root/usr/share/lintian"

L=$B/root/usr/lib/x86_64-linux-gnu
export LD_LIBRARY_PATH=$B/lib:$L:$L/openmpi/lib
# A bare Ubuntu has these; everything else that resolves outside the bundle is copied.
base='^(linux-vdso|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|ld-linux|libstdc\+\+\.so|libgcc_s\.so|libz\.so)'

# Plugins (OpenMPI/PMIx components, UCX transports, hwloc plugins) that need
# an InfiniBand/OFI/PSM/CUDA stack are dropped (a bare machine lacks those;
# they would only print load warnings); for everything else, each library
# that resolves outside the bundle and is not in a bare Ubuntu is copied in.
exclude='^(libibverbs|librdmacm|libfabric|libpsm|libinfinipath|libnl-|libcuda|libcudart|libmlx|libefa|libuct_ib|libuct_rdmacm|libxpmem|libknem)'
plugin_dirs=("$L/openmpi/lib/openmpi3" "$L/pmix2/lib/pmix" "$L/ucx" "$L/hwloc")
rm -f "$L"/ucx/libuct_ib.* "$L"/ucx/libuct_rdmacm.* "$L"/libmca_common_verbs.* "$L"/libmca_common_ofi.*
for pass in 1 2 3; do
  mapfile -t files < <(find "$B/bin" "$L" "$B/lib" -type f \( -name '*.so*' -o -perm -u+x \) 2>/dev/null)
  for f in "${files[@]}"; do
    deps=$(ldd "$f" 2>/dev/null | awk '/=> \// {print $1, $3} /not found/ {print $1, "MISSING"}' || true)
    [[ -n $deps ]] || continue
    is_plugin=0
    for d in "${plugin_dirs[@]}"; do [[ $f == "$d"/* ]] && is_plugin=1; done
    if [[ $is_plugin == 1 ]] && { echo "$deps" | awk '{print $1}' | grep -Eq "$exclude" || echo "$deps" | grep -q MISSING; }; then
      rm -f "$f"
      continue
    fi
    while read -r name path; do
      [[ $name =~ $base ]] && continue
      case $path in "$B"/*) continue ;; MISSING) continue ;; esac
      [[ $name =~ $exclude ]] && continue
      [[ -e $B/lib/$name ]] || cp -L "$path" "$B/lib/$name"
    done <<< "$deps"
  done
done

# Everything the bundle still cannot resolve on its own:
missing=$(for f in "$B"/bin/* "$B"/lib/* "$L"/*.so* "$L"/openmpi/lib/openmpi3/*.so "$L"/ucx/*.so*; do
  [[ -e $f ]] && ldd "$f" 2>/dev/null | awk '/=> \// {print $1, $3}' | grep -Ev "^\S+ $B/" | grep -Ev "$base"; done | sort -u || true)
[[ -z $missing ]] || { echo "still resolved outside the bundle (fine only if the target has them):"; echo "$missing"; }
git -C "$repo" rev-parse --short HEAD > "$B/COMMIT"
du -sh "$B"
echo "bundle ready: $B (run: region/bench/run_device.sh OUTDIR)"
