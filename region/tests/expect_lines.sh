#!/usr/bin/env bash
# expect_lines.sh N COMMAND...: runs COMMAND (an mpiexec of a job in which
# a rank dies on purpose, whose exit status says nothing) with CHECK_DIR set
# to a fresh directory, where each rank that is left writes its line
# (failure_test.cpp); passes when exactly N lines say "CHECK rank R: ok"
# and none says FAIL.
set -uo pipefail
want=$1
shift
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
CHECK_DIR=$dir "$@" 2>&1
lines=$(cat "$dir"/rank.* 2>/dev/null)
echo "--- lines written by the ranks:"
echo "$lines"
ok=$(grep -c '^CHECK rank [0-9]*: ok$' <<<"$lines")
bad=$(grep -c '^CHECK rank [0-9]*: FAIL' <<<"$lines")
echo "expect_lines: $ok ranks ok (want $want), $bad failed"
[[ $ok -eq $want && $bad -eq 0 ]]
