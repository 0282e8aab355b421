#!/usr/bin/env bash
# ucm-toolkit's fuzz and test --sanitize command lines: refused up front with exit 2
# and a line naming the problem (nothing is built).
set -u
tk=$1
fail=0
targets=$(sed -n 's/^set(DS_FUZZ_TARGETS \(.*\))$/\1/p' "$(dirname "$0")/targets.cmake")
source "$(dirname "$0")/../toolkit/expect.sh"
expect 2 "one of $targets" fuzz
expect 2 "unknown target 'nope': one of $targets" fuzz nope
expect 2 "--seconds" fuzz units --seconds 0
expect 2 "unknown option" fuzz units --bogus
expect 2 "accepts a comma-separated list" test --sanitize memory
expect 2 "cannot be combined" test --sanitize address,thread
expect 2 "needs a value" test --sanitize
out=$("$tk" --help); rc=$?
[[ $rc -eq 0 && "$out" == *"TARGET: $targets"* && "$out" == *"--sanitize"* ]] || { echo "FAIL: --help lists neither the fuzz targets nor --sanitize"; fail=1; }
exit $fail
