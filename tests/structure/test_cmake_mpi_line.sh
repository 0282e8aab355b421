#!/usr/bin/env bash
# The configure line that says whether the build runs across nodes reads yes or no:
# DS_WITH_MPI=OFF says "no"; AUTO says what this build found (yes when MPI was found).
#   test_cmake_mpi_line.sh CMAKE SOURCE_DIR FOUND(0|1)
# Exit 0 when both lines are exactly as expected, 1 naming the one that is not.
set -uo pipefail
cmake=$1 src=$2 found=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/ds-cmake-line.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
fails=0
# expect MODE WANT: configure (no tests, nothing built) and find the exact line.
expect() {
  local mode=$1 want=$2 line
  rm -rf "$work/b"
  line=$("$cmake" -S "$src" -B "$work/b" -DDS_BUILD_TESTS=OFF -DDS_WITH_MPI="$mode" 2>&1 | grep 'across nodes (MPI)')
  if [[ "$line" != "$want" ]]; then
    echo "FAIL: DS_WITH_MPI=$mode printed '$line', not '$want'"
    fails=$((fails + 1))
  fi
}
expect OFF "-- dev-sandbox across nodes (MPI): no (DS_WITH_MPI=OFF)"
if [[ $found == 1 ]]; then
  expect AUTO "-- dev-sandbox across nodes (MPI): yes (DS_WITH_MPI=AUTO)"
else
  expect AUTO "-- dev-sandbox across nodes (MPI): no (DS_WITH_MPI=AUTO)"
fi
[[ $fails -eq 0 ]]
