#!/usr/bin/env bash
# Builds and runs the GPU tests and benchmarks (the device machine starts
# bare, so few full calls beat many small ones). Logs and JSON Lines go to
# $OUT (default ./gpu-out); a short summary table is printed last. More than
# eight outputs (or GPU_RUN_PACK=1) are packed into $OUT/gpu_out.tgz.
#
#   scripts/gpu_run.sh [STAGE...]
#     tests       GPU tests of the heap and of the distribution policies at
#                 full occupancy, then compute-sanitizer memcheck, racecheck
#                 and synccheck on a small configuration
#     sanitizers  only the compute-sanitizer part of `tests` (SANITIZER_TOOLS
#                 picks the tools; default "memcheck racecheck synccheck")
#     throughput  heap throughput, 2^20 threads, 16/64/256 B (~1 min)
#     coalescing  distribution-policy benchmark ([Blach2022], section 4)
#     coalescing-scale  unit benchmark at 400 floats with DeviceMalloc at
#                 65536 and 131072 threads (the ratio at higher occupancy)
#     coalescing-occupancy  unit benchmark at 400 floats at full occupancy
#                 (SMs x 2048 threads, [Blach2022]'s setting), split kernels and
#                 --fused ([Blach2022]'s one-kernel Listing 3); fused at 32768 too
#     coalescing-pads  the same at 32768 and 131072 threads with IdealSlices
#                 at paddings 4-512 B (--ideal-pads: how far layout alone goes)
#     coalescing-rewrite  [Blach2022]'s unit and all-to-all kernels written with
#                 plain malloc and rewritten by manyalloc-coalesce, side by side
#                 with the same kernels calling the policy by hand (same heap,
#                 interleaved runs): $OUT/coalescing_rewrite.jsonl, ratios in
#                 bench_coalescing_rewrite.log. The GPU machine has no Clang 14:
#                 run scripts/prepare_gpu_carry.sh first (.carry/coalesce holds
#                 the rewritten file) (~1-2 min)
#     repeat      the distribution GPU tests 20 times (intermittent failures)
#     soak-ab     the soak probe (docs/results/heap/peers/soak_probe: the
#                 soak's churn launch by launch, failed requests counted)
#                 built against this tree's heap headers and, when
#                 .carry/base holds a `git archive` of a commit's heap/include
#                 and common/include (scripts/prepare_gpu_carry.sh --base REV),
#                 against those; run alternately, SOAK_AB_ROUNDS (2) rounds
#                 of SOAK_AB_CONFIGS (default,never_reuse,reuse_all): log
#                 soak_ab.log (~3 min)
#     peers-ab    the peers benchmark's PEERS_AB_EXPERIMENTS (throughput,
#                 churn) built twice, against .carry/base's heap headers (as
#                 for soak-ab) and this tree's, run alternately (the
#                 order turned every round) PEERS_AB_ROUNDS (2) rounds for
#                 PEERS_AB_ALLOCATORS (SizeClassSlabs,Ouroboros), with
#                 PEERS_AB_ARGS (more options of the benchmark; a later
#                 --timeout wins): the JSONL of each in
#                 $OUT/peers_ab_{base,new}.jsonl (the base's records name
#                 .carry/base/COMMIT), then scripts/ab_table.py's table of
#                 their medians (~5 min)
#     peers-rounds  the peers benchmark's PEERS_ROUNDS_EXPERIMENTS
#                 (throughput,churn) PEERS_ROUNDS (3) times for
#                 PEERS_ROUNDS_ALLOCATORS (our SizeClassSlabs configurations,
#                 Ouroboros, Gallatin, mallocMC; mallocMC without 4 and 8 KiB),
#                 each run with --timeout 60, once per launch timing of
#                 PEERS_ROUNDS_TIMINGS ("gated"; "gated idle" alternates both,
#                 the order turned in every second round; no round starts
#                 after PEERS_ROUNDS_UNTIL, 420 s into the script)
#                 into $OUT/peers_rounds_TIMING.jsonl (log
#                 bench_peers_rounds.log); then heap/bench/peers/rounds_table.py's
#                 medians of the rounds, best of ours against the best peer,
#                 and where the rounds hold Scatter and mallocMC
#                 heap/bench/peers/against_upstream.py's table of our Scatter
#                 configurations against upstream's
#                 ($OUT/peers_rounds_against_upstream_TIMING.md, its count
#                 printed) (~6 min with the build for one timing)
#     soak        SizeClassSlabs churn at full occupancy for SOAK_SECONDS (600),
#                 then checks that no memory was lost (test CudaSoak)
#     soak-start  the same soak in a process session of its own (setsid), so
#                 that it outlasts this call: a call lasts at most 600 s, the
#                 build included, so a 600 s soak needs the next call too.
#                 Starts from a copy of the test program; its log and exit
#                 status go to build-gpu/soak-bg (kept while the machine
#                 stays warm: call again within its warm period)
#     soak-wait   waits for the soak of soak-start until SOAK_WAIT_UNTIL
#                 seconds after this script's start (default 560), then
#                 copies its log to $OUT/soak.log and reports its end, how
#                 long it has run so far, or that it died without a status;
#                 stages after it run once it returns (a GPU test beside a
#                 running soak is fine, a timing is not: run timing stages
#                 only after the soak has ended)
#     suite       the whole heap benchmark suite, all experiments (~4-5 min)
#     figures     Figures 3 and 4 of [Steinberger2012] with every allocator of
#                 the paper beside ours (Scatter, XMalloc as Scatter with
#                 XMallocSIMD, SizeClassSlabs, ListBased, MultiList,
#                 DeviceMalloc): the operator experiment up to 16384
#                 workers (the paper's range) and the spread experiment, into
#                 $OUT/figures.jsonl (log bench_figures.log), plots and report
#                 in $OUT/figures (~2-3 min)
#     peers       our heaps side by side with the peer allocators Gallatin,
#                 Ouroboros and mallocMC 2.6 (heap/bench/peers; their tarballs
#                 in .carry/peers and Boost headers in .carry/boost, both from
#                 scripts/prepare_gpu_carry.sh): build, run into
#                 $OUT/peers.jsonl (log bench_peers.log), report in
#                 $OUT/peers_report (the longest stage, near the 10-minute
#                 limit of one call: docs/results/heap/peers/README.md;
#                 PEERS_USABLE=0 leaves the usable-share experiment out,
#                 PEERS_MAIN=0 everything but it)
#     pic         particle-in-cell benchmark ([Eckert2014] 5.2, issue 18):
#                 time per step (two species) and the largest population of
#                 one species for 1-16 species, HeapBuffer / Scatter /
#                 SizeClassSlabs / DeviceMalloc; $OUT/pic_steps.jsonl,
#                 $OUT/pic_growth.jsonl (log bench_pic.log), report with the
#                 plots of Figures 5.3-5.6 in $OUT/pic_report (~3 min)
#     pic-peers   the PIC experiments for Gallatin, Ouroboros and mallocMC
#                 through the peers benchmark (needs .carry/peers like `peers`;
#                 its build takes minutes): $OUT/pic_peers.jsonl, and the pic
#                 report made again with them
#   default: tests throughput coalescing   (one call stays under 10 minutes;
#   run `suite` in a second call: the build directory is reused while warm)
#
# Needs nvcc, cmake and a GPU; GoogleTest installed or its sources in
# .carry/googletest (scripts/prepare_gpu_carry.sh). Pass MANYALLOC_COMMIT:
# the device machine gets no .git.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
LOG=$OUT/gpu_run.log
say() { echo "$@" | tee -a "$LOG"; }
stages=("$@")
((${#stages[@]})) || stages=(tests throughput coalescing)
status=0

{
  echo "date: $(date -u +%FT%TZ)"
  echo "commit: ${MANYALLOC_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  nvcc --version | tail -1
  echo "cpus: $(nproc)"
} > "$OUT/environment.txt"
cat "$OUT/environment.txt" >> "$LOG"

gtest_opt=()
[[ -d .carry/googletest ]] && gtest_opt=(-DMANYALLOC_GTEST_SOURCE_DIR=$PWD/.carry/googletest)
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
targets=(manyalloc_heap_gpu_tests manyalloc_heap_distribution_gpu_tests manyalloc_heap_bench_cuda
         manyalloc_coalescing_bench)
# A run of the pic stage alone builds only its program.
[[ "${stages[*]}" == pic ]] && targets=(manyalloc_heap_pic_cuda)
[[ " ${stages[*]} " == *" pic "* ]] && targets+=(manyalloc_heap_pic_cuda)
[[ "${stages[*]}" == "pic pic-peers" ]] && targets=(manyalloc_heap_pic_cuda)
# A run of one peers stage alone builds only the peers benchmark (in the stage).
[[ "${stages[*]}" == peers || "${stages[*]}" == peers-ab || "${stages[*]}" == peers-rounds ]] && targets=()
rewrite_opt=()
if [[ " ${stages[*]} " == *" coalescing-rewrite "* ]]; then
  [[ "${stages[*]}" == coalescing-rewrite ]] && targets=()  # alone: build only its benchmark
  targets+=(manyalloc_coalescing_rewrite_bench)
  [[ -d .carry/coalesce ]] && rewrite_opt=(-DMANYALLOC_COALESCE_REWRITTEN_DIR="$PWD/.carry/coalesce")
fi
say "== configure + build (sm_90): ${stages[*]}"
cmake -S . -B build-gpu "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DMANYALLOC_CUDA=ON -DMANYALLOC_BUILD_NUMA=OFF -DMANYALLOC_BUILD_REGION=OFF "${gtest_opt[@]}" \
  "${rewrite_opt[@]}" >>"$LOG" 2>&1 \
  && { ((${#targets[@]} == 0)) || cmake --build build-gpu -j"$(nproc)" --target "${targets[@]}" >>"$LOG" 2>&1; }
if [[ $? -ne 0 ]]; then say "BUILD FAILED"; tail -40 "$LOG"; exit 1; fi

heap_tests=build-gpu/heap/tests/manyalloc_heap_gpu_tests
dist_tests=build-gpu/heap/tests/distribution/manyalloc_heap_distribution_gpu_tests

# Configures build-gpu with the peers' sources from .carry and builds the
# peers benchmark (log build_peers.log); sets blog.
build_peers_bench() {
  local opt=(-DMANYALLOC_PEERS_DIR="$PWD/.carry/peers")
  [[ -d .carry/boost/include ]] && opt+=(-DMANYALLOC_BOOST_INCLUDE_DIR="$PWD/.carry/boost/include")
  local t0=$SECONDS
  blog=$OUT/build_peers.log
  cmake -S . -B build-gpu "${opt[@]}" > "$blog" 2>&1 \
    && cmake --build build-gpu -j"$(nproc)" --target manyalloc_heap_peers_bench >> "$blog" 2>&1 || return 1
  say "peers build: $((SECONDS - t0)) s; $(grep -o 'manyalloc_heap_peers_bench: peers.*' "$blog" | head -1)"
}

run_tests() {
  for t in "$heap_tests" "$dist_tests"; do
    name=$(basename "$t")
    say "== $name at full occupancy"
    timeout "${TESTS_TIMEOUT_S:-240}" "$t" --gtest_output=json:"$OUT/$name.json" > "$OUT/$name.log" 2>&1
    rc=$?
    say "$name: exit $rc, $(grep -E '^\[  PASSED  \]|tests ran' "$OUT/$name.log" | tr '\n' ' ')"
    grep -E "^\[  FAILED  \]" "$OUT/$name.log" | tee -a "$LOG"
    [[ $rc -eq 0 ]] || status=1
  done
  run_sanitizers
}

# The list-based baselines (one lock per list) are left out: under the
# sanitizers their full-heap tests alone outlast the time limit.
# Racecheck also leaves out the tests over CUDA's own device malloc
# (*DeviceMalloc*): under racecheck CUDA's device heap faults with no code
# of ours in the kernel, and memcheck (which checks every access and free
# against the device heap's blocks) and synccheck pass the failing workload
# (docs/results/heap/racecheck_devicemalloc, call 10). The distribution
# policies stay under racecheck over Scatter (GpuCoalescing), the same code.
# Memcheck leaves out the tests of a pool that grows during a launch
# (*GrowsWhileAKernelRuns*, *GrowInOneLaunch*): memcheck reports the first
# access to pages mapped while the kernel runs as out of bounds "inside the
# nearest allocation" (the mapping made after the launch) and stops the
# kernel; racecheck and synccheck run them, and without a sanitizer every
# chunk is verified (docs/results/heap/growth_while_running).
run_sanitizers() {
  say "== compute-sanitizer ${SANITIZER_TOOLS:-memcheck racecheck synccheck} (small configuration)"
  small=(env MANYALLOC_TEST_WORKERS=4096 MANYALLOC_TEST_HEAP_MB=16 MANYALLOC_SOAK_SECONDS=1)
  local excluded='*HeapLargerThan4GiB*:*ExactSlots*:*ListBased*:*MultiList*'
  for tool in ${SANITIZER_TOOLS:-memcheck racecheck synccheck}; do
    local filter="--gtest_filter=-$excluded"
    [[ $tool == racecheck ]] && filter+=':*DeviceMalloc*'
    [[ $tool == memcheck ]] && filter+=':*GrowsWhileAKernelRuns*:*GrowInOneLaunch*'
    for t in "$heap_tests" "$dist_tests"; do
      name=$(basename "$t")_$tool
      timeout 90 "${small[@]}" compute-sanitizer --tool $tool --error-exitcode 9 "$t" "$filter" \
        > "$OUT/$name.log" 2>&1
      rc=$?
      say "$name: exit $rc, $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$name.log" | tail -1)"
      [[ $rc -eq 0 ]] || status=1
    done
  done
}

# The coalescing benchmark's bounded unit workloads at 400 floats into
# $OUT/NAME.jsonl (log bench_NAME.log), one run per remaining argument: the
# value of --small-threads and any further options, split into words.
unit400() {
  local name=$1 max_s=$2 args
  shift 2
  rm -f "$OUT/$name.jsonl"
  for args in "$@"; do
    # shellcheck disable=SC2086
    timeout 200 build-gpu/heap/bench/coalescing/manyalloc_coalescing_bench --only bounded --floats 400 \
      --runs 3 --max-run-s "$max_s" --small-threads $args >> "$OUT/$name.jsonl" 2>> "$OUT/bench_$name.log" \
      || status=1
  done
}
pads=4,8,12,16,32,48,64,80,128,256,512

for stage in "${stages[@]}"; do
  case $stage in
    tests) run_tests ;;
    sanitizers) run_sanitizers ;;
    throughput)
      say "== heap throughput at 2^20 threads"
      rm -f "$OUT/heap_throughput.jsonl"
      timeout 300 build-gpu/heap/bench/suite/manyalloc_heap_bench_cuda throughput --sizes 16,64,256 --repeat 5 \
        --out "$OUT/heap_throughput.jsonl" > "$OUT/bench_throughput.log" 2>&1 || status=1 ;;
    coalescing)
      say "== coalescing benchmark"
      rm -f "$OUT/coalescing.jsonl"
      timeout 300 build-gpu/heap/bench/coalescing/manyalloc_coalescing_bench --out "$OUT/coalescing.jsonl" \
        > "$OUT/bench_coalescing.log" 2>&1 || status=1
      tail -25 "$OUT/bench_coalescing.log" >> "$LOG" ;;
    coalescing-rewrite)
      say "== coalescing rewrite: plain malloc rewritten by manyalloc-coalesce vs the policy called by hand"
      rm -f "$OUT/coalescing_rewrite.jsonl"
      timeout 400 build-gpu/heap/bench/coalescing/manyalloc_coalescing_rewrite_bench \
        --out "$OUT/coalescing_rewrite.jsonl" > "$OUT/bench_coalescing_rewrite.log" 2>&1
      rc=$?
      say "coalescing-rewrite: exit $rc"
      grep "rewritten/hand" "$OUT/bench_coalescing_rewrite.log" | tee -a "$LOG"
      [[ $rc -eq 0 ]] || status=1 ;;
    coalescing-scale)
      say "== coalescing unit benchmark at 400 floats, more threads"
      unit400 coalescing_scale 20 65536 131072 ;;
    coalescing-occupancy)
      say "== coalescing unit benchmark at 400 floats, full occupancy, split and fused"
      unit400 coalescing_occupancy 60 "0" "0 --fused" "32768 --fused" ;;  # 0: SMs x 2048 threads
    coalescing-pads)
      say "== coalescing unit benchmark at 400 floats, IdealSlices with gaps"
      unit400 linear_pads 20 "32768 --ideal-pads $pads" "131072 --ideal-pads $pads" ;;
    soak)
      say "== soak: SizeClassSlabs churn at full occupancy for ${SOAK_SECONDS:-600} s"
      MANYALLOC_SOAK_SECONDS=${SOAK_SECONDS:-600} timeout $(( ${SOAK_SECONDS:-600} + 120 )) "$heap_tests" \
        --gtest_filter='CudaSoak.*' > "$OUT/soak.log" 2>&1
      rc=$?
      say "soak: exit $rc, $(grep -E '^soak:' "$OUT/soak.log")"
      [[ $rc -eq 0 ]] || status=1 ;;
    soak-start)
      bg=build-gpu/soak-bg
      if [[ -f $bg/pid && ! -f $bg/rc ]] && kill -0 "$(cat "$bg/pid")" 2>/dev/null; then
        say "soak-start: a soak is already running (pid $(cat "$bg/pid"))"; continue
      fi
      # A finished soak that no soak-wait collected keeps its log.
      [[ -f $bg/rc && ! -f $bg/collected ]] && mv "$bg" "$bg.$(date -u +%H%M%S)"
      rm -rf "$bg" && mkdir -p "$bg"
      if ! cp "$heap_tests" "$bg/"; then say "soak-start: no test program to run"; status=1; continue; fi
      date -u +%FT%TZ > "$bg/started"
      date +%s > "$bg/started_s"
      secs=${SOAK_SECONDS:-600}
      # The exit status is written to rc.tmp and renamed, so a reader never sees an empty rc.
      setsid bash -c "echo \$\$ > $bg/pid; MANYALLOC_SOAK_SECONDS=$secs timeout $((secs + 120)) \
        $bg/$(basename "$heap_tests") --gtest_filter='CudaSoak.*' > $bg/soak.log 2>&1; echo \$? > $bg/rc.tmp; \
        mv $bg/rc.tmp $bg/rc" < /dev/null > /dev/null 2>&1 &
      say "soak-start: ${secs} s of SizeClassSlabs churn started in the background at $(cat "$bg/started")" ;;
    soak-wait)
      bg=build-gpu/soak-bg
      if [[ ! -f $bg/started ]]; then say "soak-wait: no soak was started on this machine"; status=1; continue; fi
      while [[ ! -f $bg/rc ]] && ((SECONDS < ${SOAK_WAIT_UNTIL:-560})); do
        # A soak killed before it wrote its status (out of memory, a signal) ends the wait.
        if [[ -f $bg/pid ]] && ! kill -0 "$(cat "$bg/pid")" 2>/dev/null && [[ ! -f $bg/rc ]]; then
          sleep 1; [[ -f $bg/rc ]] || break
        fi
        sleep 2
      done
      ran=$(( $(date +%s) - $(cat "$bg/started_s") ))
      [[ -f $bg/soak.log ]] && cp "$bg/soak.log" "$OUT/soak.log"
      if [[ -f $bg/rc ]]; then
        rc=$(cat "$bg/rc")
        touch "$bg/collected"
        say "soak (started $(cat "$bg/started")): exit $rc, $(grep -E '^soak:' "$bg/soak.log")"
        [[ $rc -eq 0 ]] || status=1
      elif [[ -f $bg/pid ]] && kill -0 "$(cat "$bg/pid")" 2>/dev/null; then
        say "soak (started $(cat "$bg/started")): still running after $ran s; call soak-wait again"
      else
        say "soak (started $(cat "$bg/started")): ended after at most $ran s without an exit status (killed?)"
        status=1
      fi ;;
    soak-ab)
      say "== soak probe: base (.carry/base) and this tree, alternately"
      probe=docs/results/heap/peers/soak_probe/soak_probe.cu
      variants=(new); [[ -d .carry/base/heap/include ]] && variants=(base new)
      for v in "${variants[@]}"; do
        root=.; [[ $v == base ]] && root=.carry/base
        nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr -I$root/heap/include -I$root/common/include \
          -Iheap/support -Ibuild-gpu/common/generated -o build-gpu/soak_probe_$v "$probe" \
          > "$OUT/soak_probe_build_$v.log" 2>&1 &
      done
      wait
      : > "$OUT/soak_ab.log"
      for ((round = 1; round <= ${SOAK_AB_ROUNDS:-2}; ++round)); do
        for v in "${variants[@]}"; do
          if [[ ! -x build-gpu/soak_probe_$v ]]; then
            say "soak probe $v: BUILD FAILED"; tail -20 "$OUT/soak_probe_build_$v.log" | tee -a "$LOG"; status=1; continue
          fi
          echo "== $v, round $round" >> "$OUT/soak_ab.log"
          timeout 200 build-gpu/soak_probe_$v 1 "${SOAK_AB_CONFIGS:-default,never_reuse,reuse_all}" \
            >> "$OUT/soak_ab.log" 2>&1 || { say "soak probe $v: exit $?"; status=1; }
        done
      done
      grep -E "^== |median" "$OUT/soak_ab.log" | tee -a "$LOG" ;;
    peers-ab)
      say "== peers A/B: ${PEERS_AB_EXPERIMENTS:-throughput,churn} on .carry/base's heap headers and this tree's"
      if [[ ! -d .carry/base/heap/include ]]; then say "peers-ab: no .carry/base"; status=1; continue; fi
      if ! build_peers_bench; then say "peers BUILD FAILED"; tail -30 "$blog" | tee -a "$LOG"; status=1; continue; fi
      pb=build-gpu/heap/bench/peers/manyalloc_heap_peers_bench
      cp "$pb" build-gpu/peers_bench_new
      # Only the headers that differ are swapped in (fewer files rebuilt), then put
      # back with fresh times (so that a later build of this tree rebuilds them),
      # also when the call is ended during the base build (the trap).
      keep=build-gpu/peers_ab_keep; rm -rf "$keep"; swapped=()
      restore_swapped() {
        for f in "${swapped[@]}"; do if [[ -f $keep/$f ]]; then cp "$keep/$f" "$f"; else rm -f "$f"; fi; done
        swapped=()
      }
      trap 'restore_swapped; exit 143' TERM INT
      rm -f build-gpu/peers_bench_base
      while read -r f; do
        if ! cmp -s ".carry/base/$f" "$f"; then
          mkdir -p "$keep/$(dirname "$f")"; [[ -f $f ]] && cp -p "$f" "$keep/$f"; cp ".carry/base/$f" "$f"; swapped+=("$f")
        fi
      done < <(cd .carry/base && find heap/include common/include -type f)
      say "peers-ab: ${#swapped[@]} headers differ: ${swapped[*]}"
      t0=$SECONDS
      cmake --build build-gpu -j"$(nproc)" --target manyalloc_heap_peers_bench >> "$OUT/build_peers_base.log" 2>&1 \
        && cp "$pb" build-gpu/peers_bench_base || { say "peers-ab: base BUILD FAILED"; status=1; }
      restore_swapped
      trap - TERM INT
      say "peers-ab: base build $((SECONDS - t0)) s"
      [[ -x build-gpu/peers_bench_base ]] || continue
      rm -f "$OUT"/peers_ab_*.jsonl
      # The base's records name the base's commit (.carry/base/COMMIT, written
      # by prepare_gpu_carry.sh --base), not this tree's.
      base_commit=$(cat .carry/base/COMMIT 2> /dev/null || echo "base of ${MANYALLOC_COMMIT:-this tree}")
      for ((round = 1; round <= ${PEERS_AB_ROUNDS:-2}; ++round)); do
        # The order turns every round, so that neither build always runs
        # second: run second, a build's churn had come out slower for
        # changes that churn never runs (docs/results/heap/peers/scatter_activation).
        # With an odd PEERS_AB_ROUNDS the base runs first once more than new.
        order=(base new)
        ((round % 2 == 0)) && order=(new base)
        for v in "${order[@]}"; do
          commit_of_v=${MANYALLOC_COMMIT:-}
          [[ $v == base ]] && commit_of_v=$base_commit
          # shellcheck disable=SC2086  # PEERS_AB_ARGS: options of the benchmark, split as words
          MANYALLOC_COMMIT=$commit_of_v timeout 150 build-gpu/peers_bench_$v --experiments "${PEERS_AB_EXPERIMENTS:-throughput,churn}" --timeout 100 --deadline-s 140 \
            --allocators "${PEERS_AB_ALLOCATORS:-SizeClassSlabs,Ouroboros}" ${PEERS_AB_ARGS:-} --out "$OUT/peers_ab_$v.jsonl" \
            >> "$OUT/bench_peers_ab.log" 2>&1 || { say "peers-ab $v round $round: exit $?"; status=1; }
        done
      done
      python3 scripts/ab_table.py "$OUT/peers_ab_base.jsonl" "$OUT/peers_ab_new.jsonl" | tee -a "$LOG" ;;
    peers-rounds)
      say "== peers rounds: ${PEERS_ROUNDS_EXPERIMENTS:-throughput,churn}, ${PEERS_ROUNDS:-3} rounds, timing ${PEERS_ROUNDS_TIMINGS:-gated}"
      if ! build_peers_bench; then say "peers BUILD FAILED"; tail -30 "$blog" | tee -a "$LOG"; status=1; continue; fi
      pb=build-gpu/heap/bench/peers/manyalloc_heap_peers_bench
      rounds_allocs=${PEERS_ROUNDS_ALLOCATORS:-SizeClassSlabs,SizeClassSlabs+RelaxedFrees,SizeClassSlabs+FineClasses,Ouroboros,Gallatin,mallocMC}
      # mallocMC runs apart, without its 4 and 8 KiB rows: its 2^17 x 8 KiB cold
      # launch takes about a minute and its 2^20 x 4 KiB launch does not end, and
      # --timeout would then cost it every row after them (its mixed rows).
      others=$(tr ',' '\n' <<< "$rounds_allocs" | grep -vx mallocMC | paste -sd, -)
      read -ra timings <<< "${PEERS_ROUNDS_TIMINGS:-gated}"
      for timing in "${timings[@]}"; do rm -f "$OUT/peers_rounds_$timing.jsonl"; done
      for ((round = 1; round <= ${PEERS_ROUNDS:-3}; ++round)); do
        # Timings alternate within a round, so that both see the same machine,
        # in the other order in every second round. No round starts past
        # PEERS_ROUNDS_UNTIL seconds of this script (default 420), so that
        # the call's 600 s hold the last one.
        if ((SECONDS > ${PEERS_ROUNDS_UNTIL:-420})); then say "peers-rounds: no time for round $round"; break; fi
        order=("${timings[@]}")
        ((round % 2 == 0 && ${#timings[@]} == 2)) && order=("${timings[1]}" "${timings[0]}")
        for timing in "${order[@]}"; do
          rec=(--experiments "${PEERS_ROUNDS_EXPERIMENTS:-throughput,churn}" --launch-timing "$timing"
               --out "$OUT/peers_rounds_$timing.jsonl")
          [[ -n $others ]] && { timeout 100 "$pb" "${rec[@]}" --allocators "$others" --timeout 60 --deadline-s 90 \
            >> "$OUT/bench_peers_rounds.log" 2>&1 || { say "peers-rounds round $round ($timing): exit $?"; status=1; }; }
          [[ ,$rounds_allocs, == *,mallocMC,* ]] && { timeout 70 "$pb" "${rec[@]}" --allocators mallocMC \
            --sizes 16,64,256,1024,mixed --timeout 60 --deadline-s 65 >> "$OUT/bench_peers_rounds.log" 2>&1 \
            || { say "peers-rounds round $round ($timing, mallocMC): exit $?"; status=1; }; }
        done
      done
      for timing in "${timings[@]}"; do
        python3 heap/bench/peers/rounds_table.py "$OUT/peers_rounds_$timing.jsonl" > "$OUT/peers_rounds_table_$timing.md" \
          || say "rounds_table.py failed on $timing (run it here on the fetched records)"
        say "-- $timing timing: medians of the rounds, best of ours against the best peer"
        grep -E "throughput_(alloc|free) \| warm|churn \| warm" "$OUT/peers_rounds_table_$timing.md" \
          | awk -F'|' '{print $2,$4,$5,"ours",$6,"peer",$8,$9,"default",$10}' | tee -a "$LOG"
        # Issue 15's Scatter criterion, where the rounds hold Scatter and upstream's.
        if [[ ,$rounds_allocs, == *,Scatter,* || ,$rounds_allocs, == *,Scatter+RelaxedFrees,* ]] \
           && [[ ,$rounds_allocs, == *,mallocMC,* ]]; then
          if python3 heap/bench/peers/against_upstream.py "$OUT/peers_rounds_$timing.jsonl" \
               > "$OUT/peers_rounds_against_upstream_$timing.md"; then
            say "-- $timing timing, Scatter against upstream mallocMC: $(tail -1 "$OUT/peers_rounds_against_upstream_$timing.md")"
          else
            say "against_upstream.py failed on $timing (run it here on the fetched records)"
          fi
        fi
      done ;;
    repeat)
      say "== distribution GPU tests, 20 repetitions"
      timeout 150 "$dist_tests" --gtest_repeat=20 --gtest_brief=1 > "$OUT/dist_tests_repeat.log" 2>&1
      rc=$?
      say "dist_tests_repeat: exit $rc, $(grep -c '^\[  FAILED  \]' "$OUT/dist_tests_repeat.log") failure lines"
      grep -E "^\[  FAILED  \]|Which is|Failure" "$OUT/dist_tests_repeat.log" | sort | uniq -c | head -20 | tee -a "$LOG"
      [[ $rc -eq 0 ]] || status=1 ;;
    suite)
      say "== heap benchmark suite (all experiments)"
      rm -f "$OUT/heap_bench.jsonl"
      timeout 560 build-gpu/heap/bench/suite/manyalloc_heap_bench_cuda all --out "$OUT/heap_bench.jsonl" \
        > "$OUT/bench_all.log" 2> "$OUT/bench_all.err" || status=1 ;;
    figures)
      say "== Figures 3 and 4 of [Steinberger2012]: operator and spread experiments, all allocators of the paper"
      rm -f "$OUT/figures.jsonl"
      fig_bench=build-gpu/heap/bench/suite/manyalloc_heap_bench_cuda
      fig_allocs=scatter,xmalloc,slabs,lists,mp-lists,baseline
      fig_cmd="manyalloc_heap_bench_cuda operator --max-workers 16384 --budget 6 --allocators $fig_allocs; "
      fig_cmd+="manyalloc_heap_bench_cuda spread --allocators $fig_allocs"
      timeout 240 "$fig_bench" operator --max-workers 16384 --budget 6 --allocators "$fig_allocs" \
        --out "$OUT/figures.jsonl" > "$OUT/bench_figures.log" 2>&1
      rc=$?
      timeout 150 "$fig_bench" spread --allocators "$fig_allocs" --out "$OUT/figures.jsonl" \
        >> "$OUT/bench_figures.log" 2>&1 || rc=1
      say "figures: exit $rc, $(grep -c '"verified":true' "$OUT/figures.jsonl") verified of $(wc -l < "$OUT/figures.jsonl") records"
      [[ $rc -eq 0 ]] || status=1
      python3 heap/bench/report/report.py "$OUT/figures.jsonl" --figures --out-dir "$OUT/figures" \
        --env "$OUT/environment.txt" --command "$fig_cmd" >> "$LOG" 2>&1 \
        || say "figures report.py failed (run it here on the fetched figures.jsonl)" ;;
    peers)
      say "== peers: our heaps side by side with Gallatin, Ouroboros, mallocMC"
      t0=$SECONDS
      if build_peers_bench; then
        rm -f "$OUT/peers.jsonl"
        pb=build-gpu/heap/bench/peers/manyalloc_heap_peers_bench
        # Usable share without CUDA's malloc (its 2 GiB fill alone outlasts
        # the budget); everything else for every allocator.
        # PEERS_MAIN=0 leaves throughput, churn and large out (the usable
        # share alone, in a call of its own).
        rc=0
        if [[ ${PEERS_MAIN:-1} == 1 ]]; then
          timeout 380 "$pb" --experiments throughput,churn,large --timeout 100 --deadline-s 350 --out "$OUT/peers.jsonl" \
            > "$OUT/bench_peers.log" 2> "$OUT/bench_peers.err"
          rc=$?
        fi
        usable_allocs=$("$pb" --list 2>/dev/null | grep '^allocators:' | sed 's/^allocators://; s/ (peer)//g' \
                        | tr ' ' '\n' | grep -v -e '^$' -e '^DeviceMalloc$' | paste -sd, -)
        # PEERS_USABLE_ALLOCATORS=A,B: the usable share of these only.
        usable_allocs=${PEERS_USABLE_ALLOCATORS:-$usable_allocs}
        # PEERS_USABLE=0 leaves the usable share out (a call whose build is
        # slow then still fits in 10 minutes).
        if [[ ${PEERS_USABLE:-1} == 1 ]]; then
          timeout 150 "$pb" --experiments usable --allocators "$usable_allocs" --deadline-s 120 --out "$OUT/peers.jsonl" \
            >> "$OUT/bench_peers.log" 2>> "$OUT/bench_peers.err" || rc=1
        fi
        say "peers: exit $rc, $((SECONDS - t0)) s with the build"
        [[ $rc -eq 0 ]] || status=1
        python3 heap/bench/peers/report.py "$OUT/peers.jsonl" --out "$OUT/peers_report" --env "$OUT/environment.txt" \
          >> "$LOG" 2>&1 || say "peers report.py failed (run it here on the fetched peers.jsonl)"
      else
        say "peers BUILD FAILED"
        tail -30 "$blog" | tee -a "$LOG"
        status=1
      fi ;;
    pic)
      say "== pic: particle-in-cell benchmark (steps, growth)"
      pic=build-gpu/heap/bench/pic/manyalloc_heap_pic_cuda
      rm -f "$OUT/pic_steps.jsonl" "$OUT/pic_growth.jsonl"
      t0=$SECONDS
      # Two processes: CUDA's malloc heap is sized once per process.
      timeout 150 "$pic" --experiments steps --budget-s 15 --out "$OUT/pic_steps.jsonl" > "$OUT/bench_pic.log" 2>&1
      rc=$?
      # Growth without CUDA's malloc (filling the pool with frames through it
      # alone outlasts the stage) and with 1, 4 and 16 species.
      timeout 240 "$pic" --experiments growth --budget-s 15 --allocators HeapBuffer,Scatter,SizeClassSlabs \
        --growth-species 1,4,16 --out "$OUT/pic_growth.jsonl" >> "$OUT/bench_pic.log" 2>&1 || rc=1
      say "pic: exit $rc, $((SECONDS - t0)) s"
      grep -E "^(steps|growth) .*(median|max population|NOT|skipped)" "$OUT/bench_pic.log" | tee -a "$LOG"
      [[ $rc -eq 0 ]] || status=1
      python3 heap/bench/pic/report.py "$OUT/pic_steps.jsonl" "$OUT/pic_growth.jsonl" --out "$OUT/pic_report" \
        --env "$OUT/environment.txt" > "$OUT/pic_report.log" 2>&1
      say "pic report: exit $? (2: a check failed; run it here on the fetched JSONL where matplotlib is missing)" ;;
    pic-peers)
      say "== pic-peers: the PIC experiments for the peer allocators"
      t0=$SECONDS
      if build_peers_bench; then
        rm -f "$OUT/pic_peers.jsonl"
        pb=build-gpu/heap/bench/peers/manyalloc_heap_peers_bench
        # The peers compiled in (our heaps run in the pic stage, configured for frames).
        pic_peers=$("$pb" --list 2>/dev/null | grep '^allocators:' | grep -o '[^ ]* (peer)' | sed 's/ (peer)//' \
                    | paste -sd, -)
        timeout 300 "$pb" --experiments pic_steps,pic_growth --allocators "$pic_peers" --timeout 90 \
          --deadline-s 280 --out "$OUT/pic_peers.jsonl" > "$OUT/bench_pic_peers.log" 2>&1
        say "pic-peers: exit $?, $((SECONDS - t0)) s with the build"
        pic_in=()
        for f in pic_steps pic_growth pic_peers; do [[ -f "$OUT/$f.jsonl" ]] && pic_in+=("$OUT/$f.jsonl"); done
        python3 heap/bench/pic/report.py "${pic_in[@]}" --out "$OUT/pic_report" --env "$OUT/environment.txt" \
          > "$OUT/pic_report.log" 2>&1
        say "pic report: exit $?"
      else
        say "pic-peers BUILD FAILED"
        tail -30 "$blog" | tee -a "$LOG"
        status=1
      fi ;;
    *) say "unknown stage $stage"; status=1 ;;
  esac
done

echo
echo "================ summary ================"
head -3 "$OUT/environment.txt"
grep -E "exit [0-9]+" "$LOG" | sed 's/^/  /'
[[ -f "$OUT/bench_throughput.log" ]] && grep -A12 "^experiment" "$OUT/bench_throughput.log"
[[ -f "$OUT/bench_all.log" ]] && grep -A8 "^experiment *seconds" "$OUT/bench_all.log"
[[ -f "$OUT/bench_coalescing.log" ]] && tail -12 "$OUT/bench_coalescing.log"
[[ -f "$OUT/bench_coalescing_rewrite.log" ]] && grep "rewritten/hand" "$OUT/bench_coalescing_rewrite.log"
[[ -f "$OUT/bench_peers.log" ]] && sed -n '/^== side by side/,$p' "$OUT/bench_peers.log"
echo "status: $status"
# The device tool brings back only a few files of $OUT: with GPU_RUN_PACK=1
# (or more than 8 files, in folders too) everything is packed into
# $OUT/gpu_out.tgz. The outputs are removed only once the archive is in $OUT.
files=$(find "$OUT" -type f ! -name gpu_out.tgz | wc -l)
if [[ ${GPU_RUN_PACK:-0} == 1 ]] || ((files > 8)); then
  pack=$(mktemp /tmp/gpu_out.XXXXXX.tgz)
  if tar czf "$pack" -C "$OUT" --exclude gpu_out.tgz . && mv "$pack" "$OUT/gpu_out.tgz.part"; then
    find "$OUT" -mindepth 1 -maxdepth 1 ! -name gpu_out.tgz.part -exec rm -rf {} +
    mv "$OUT/gpu_out.tgz.part" "$OUT/gpu_out.tgz"
    echo "outputs packed: gpu_out.tgz ($files files)"
  else
    rm -f "$pack" "$OUT/gpu_out.tgz.part"
    echo "packing the outputs failed: they stay as they are"
    status=1
  fi
fi
exit $status
