#!/usr/bin/env bash
# Checks the layer labels of the tests in a configured build dir (configures
# nothing): every test carries exactly one of the labels heap, numa, region,
# common, its name starts with "<that label>.", and the four label
# selections add up to the whole test list. Exit status 1 names what is
# wrong, 2: no such build dir or not built.
# Usage: scripts/check_test_labels.sh BUILD_DIR
set -euo pipefail
dir=${1:?usage: $0 BUILD_DIR}
[[ -f "$dir/CTestTestfile.cmake" ]] || { echo "check_test_labels: no CTestTestfile.cmake in $dir" >&2; exit 2; }

# Test names of `ctest -N` with the given selection, one per line.
names() { ctest --test-dir "$dir" -N "$@" | sed -n 's/^ *Test *#[0-9]*: //p'; }

all=$(names | sort)
# gtest_discover_tests adds <target>_NOT_BUILT until the target is built.
if grep -q '_NOT_BUILT$' <<<"$all"; then
  echo "check_test_labels: $dir is not built (GoogleTest cases are discovered at build time):" >&2
  grep '_NOT_BUILT$' <<<"$all" | sed 's/^/  /' >&2
  exit 2
fi
total=$(grep -c . <<<"$all" || true)
status=0
sum=0
labelled=""
for layer in heap numa region common; do
  mine=$(names -L "^${layer}\$" | sort)
  n=$(grep -c . <<<"$mine" || true)
  sum=$((sum + n))
  labelled+="$mine"$'\n'
  bad=$(grep -v "^${layer}\\." <<<"$mine" || true)
  if [[ -n "$bad" ]]; then
    echo "check_test_labels: labelled $layer but not named $layer.*:" >&2
    sed 's/^/  /' <<<"$bad" >&2
    status=1
  fi
  printf '%-7s %5d tests\n' "$layer" "$n"
done
printf '%-7s %5d tests\n' total "$total"
twice=$(grep . <<<"$labelled" | sort | uniq -d || true)
if [[ -n "$twice" ]]; then
  echo "check_test_labels: tests with more than one layer label:" >&2
  sed 's/^/  /' <<<"$twice" >&2
  status=1
fi
none=$(comm -23 <(echo "$all") <(grep . <<<"$labelled" | sort -u) | grep . || true)
if [[ -n "$none" ]]; then
  echo "check_test_labels: tests without a layer label:" >&2
  sed 's/^/  /' <<<"$none" >&2
  status=1
fi
if ((sum != total)); then
  echo "check_test_labels: the layer labels select $sum tests, the build has $total" >&2
  status=1
fi
exit $status
