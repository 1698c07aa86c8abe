#!/usr/bin/env bash
# Issue 15, one call on the GPU machine, from the repository root with .carry/googletest, .carry/peers and
# .carry/boost carried: the GPU tests of this tree (1eb6d90: the heap's coherent accesses relaxed at GPU
# scope), then one round of the peers benchmark for Scatter, Scatter+RelaxedFrees and upstream mallocMC,
# if it can start before 440 s.
GTEST_FILTER='-*ListBased*:*MultiList*' TESTS_TIMEOUT_S=280 GPU_RUN_PACK=1 PEERS_ROUNDS=1 PEERS_ROUNDS_UNTIL=440 \
  PEERS_ROUNDS_ALLOCATORS=Scatter,Scatter+RelaxedFrees,mallocMC timeout 585 scripts/gpu_run.sh tests peers-rounds
echo "gpu_run exit $?"
