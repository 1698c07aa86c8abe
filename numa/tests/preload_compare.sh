#!/usr/bin/env bash
# Runs a command with and without LD_PRELOAD of the node allocator and
# checks that it behaves the same (exit status, and stdout unless
# --status-only), and that the allocator really was in use (it prints its
# statistics at exit with MANYALLOC_NUMA_STATS=1).
#   preload_compare.sh LIB [--status-only] -- command args...
set -uo pipefail
lib=$1; shift
compare=1
if [[ ${1:-} == --status-only ]]; then compare=0; shift; fi
[[ ${1:-} == -- ]] && shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export PYTHONHASHSEED=0
(cd "$tmp" && mkdir a b && cd a && "$@") >"$tmp/plain.out" 2>"$tmp/plain.err"
plain=$?
(cd "$tmp/b" && MANYALLOC_NUMA_STATS=1 LD_PRELOAD="$lib" "$@") >"$tmp/pre.out" 2>"$tmp/pre.err"
pre=$?
status=0
if [[ $plain -ne $pre ]]; then echo "exit status differs: $plain without, $pre with LD_PRELOAD"; status=1; fi
if [[ $compare -eq 1 ]] && ! cmp -s "$tmp/plain.out" "$tmp/pre.out"; then
  echo "stdout differs:"; diff "$tmp/plain.out" "$tmp/pre.out" | head -20; status=1
fi
if ! grep -q "manyalloc-numa statistics" "$tmp/pre.err"; then
  echo "the allocator was not loaded (no statistics at exit)"; status=1
fi
if grep -q "misuses [1-9]" "$tmp/pre.err"; then echo "misuse reported:"; grep misuses "$tmp/pre.err" | head; status=1; fi
echo "exit $pre; $(grep -c 'manyalloc-numa statistics' "$tmp/pre.err") process(es) used the allocator"
tail -n 3 "$tmp/pre.out"
[[ $status -ne 0 ]] && { echo "--- stderr with LD_PRELOAD:"; tail -20 "$tmp/pre.err"; }
exit $status
