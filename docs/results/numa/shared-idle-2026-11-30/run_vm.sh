#!/bin/bash
# Variants of MANYALLOC_NUMA_SHARED_IDLE, two runs each, plus glibc
LIB=/tmp/numab/numa/libmanyalloc-numa.so
for rep in 1 2; do
  bash /tmp/runvar.sh "" glibc
  for v in 0 2M 8M 32M; do MANYALLOC_NUMA_PROFILE=uma MANYALLOC_NUMA_SHARED_IDLE=$v bash /tmp/runvar.sh $LIB shared$v; done
done
