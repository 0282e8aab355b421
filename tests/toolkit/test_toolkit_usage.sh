#!/usr/bin/env bash
# ucm-toolkit refuses bad command lines with exit 2 and a line naming the problem.
set -u
tk=$1
fail=0
source "$(dirname "$0")/expect.sh"
expect 2 "unknown command" frobnicate
expect 2 "dev-sandbox" build something-else
expect 2 "dev-sandbox" run
expect 2 "unknown option" build dev-sandbox --colour
expect 2 "--jobs" build dev-sandbox --jobs 0
expect 2 "usage" 
expect 2 "only --build-dir" clean dev-sandbox --bogus
expect 2 "only --build-dir" doctor dev-sandbox --bogus
expect 2 "only --build-dir" test --bogus
expect 2 "needs a value" clean dev-sandbox --build-dir
# stress: its refusals, before anything is built or loaded.
expect 2 "--seconds" stress --seconds 0
expect 2 "--seconds" stress --seconds soon
expect 2 "unknown option" stress --bogus
expect 2 "accepts a comma-separated list" stress --sanitize memory
expect 2 "needs a value" stress --sanitize
# The remembered build directory belongs to one checkout, and clean forgets it.
state=$(mktemp -d)
export XDG_STATE_HOME=$state
root=$(cd "$(dirname "$tk")" && pwd)
mkdir -p "$state/ucm-toolkit"
printf '%s\t%s\n' "/some/other/checkout" "/tmp/elsewhere" > "$state/ucm-toolkit/dev-sandbox.build-dirs"
out=$("$tk" doctor dev-sandbox 2>/dev/null | head -1)
[[ "$out" == "build dir: $root/build" ]] || { echo "FAIL: another checkout's build dir leaked: $out"; fail=1; }
printf '%s\t%s\n' "$root" "$state/bd" >> "$state/ucm-toolkit/dev-sandbox.build-dirs"
out=$("$tk" doctor dev-sandbox 2>/dev/null | head -1)
if [[ "$out" == "build dir: $state/bd" ]]; then
  "$tk" clean dev-sandbox 2>/dev/null  # removes $state/bd only: checked just above
else
  echo "FAIL: remembered build dir not used: $out"; fail=1
fi
out=$("$tk" doctor dev-sandbox 2>/dev/null | head -1)
[[ "$out" == "build dir: $root/build" ]] || { echo "FAIL: clean did not forget the build dir: $out"; fail=1; }
grep -q "/some/other/checkout" "$state/ucm-toolkit/dev-sandbox.build-dirs" || { echo "FAIL: clean forgot another checkout"; fail=1; }
rm -rf "$state"
out=$("$tk" --help); rc=$?
[[ "$out" == *"--with-mpi"* ]] || { echo "FAIL: --help does not name build --with-mpi"; fail=1; }
[[ "$out" == *"stress [--seconds N] [--sanitize"* ]] || { echo "FAIL: --help does not name stress"; fail=1; }
[[ $rc -eq 0 && "$out" == *"ucm-toolkit test"* ]] || { echo "FAIL: --help"; fail=1; }
exit $fail
