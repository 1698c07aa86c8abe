#!/usr/bin/env bash
# expect_lines.sh N COMMAND...: runs COMMAND (an mpiexec of a job in which
# a rank dies on purpose, whose exit status says nothing), prints its
# output, and passes when exactly N lines say "CHECK rank R: ok" and none
# says FAIL.
set -uo pipefail
want=$1
shift
out=$("$@" 2>&1)
echo "$out"
ok=$(grep -c '^CHECK rank [0-9]*: ok$' <<<"$out")
bad=$(grep -c '^CHECK rank [0-9]*: FAIL' <<<"$out")
echo "expect_lines: $ok ranks ok (want $want), $bad failed"
[[ $ok -eq $want && $bad -eq 0 ]]
