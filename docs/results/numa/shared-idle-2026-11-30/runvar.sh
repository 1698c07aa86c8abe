#!/bin/bash
# runvar.sh LIB LABEL: a few mimalloc-bench programs at 4 threads on the VM: time, peak RSS, faults
B=/work/main/.carry/numa/mimalloc-bench/out/bench; T=/work/main/.carry/numa/time
run() { local name=$1; shift; (cd $B && LD_PRELOAD=$LIB $T -f "$LABEL $name %e s %M KiB %R faults" "$@" 2>&1 >/dev/null | tail -1); }
LIB=$1; LABEL=$2
run xmalloc ./xmalloc-test -w 4 -t 3 -s 64
run xmalloc-s-1 ./xmalloc-test -w 4 -t 3 -s -1
run rptest timeout 8 ./rptest 4 0 1 2 500 1000 100 8 16000
run mstress ./mstress 4 50 25
run larson ./larson 5 8 1000 5000 100 4141 4
run glibc-thread ./glibc-thread 16
