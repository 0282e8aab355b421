#!/usr/bin/env bash
# ucm-toolkit refuses bad command lines with exit 2 and a line naming the problem.
set -u
tk=$1
fail=0
expect() {  # code pattern args...
  local code=$1 pattern=$2; shift 2
  local err rc
  err=$("$tk" "$@" 2>&1 >/dev/null); rc=$?
  if [[ $rc -ne $code ]] || ! grep -q -- "$pattern" <<<"$err"; then
    echo "FAIL: ucm-toolkit $* -> exit $rc, stderr: $err (wanted exit $code and '$pattern')"
    fail=1
  else
    echo "ok: ucm-toolkit $* -> exit $rc"
  fi
}
expect 2 "unknown command" frobnicate
expect 2 "dev-sandbox" build something-else
expect 2 "dev-sandbox" run
expect 2 "unknown option" build dev-sandbox --colour
expect 2 "--jobs" build dev-sandbox --jobs 0
expect 2 "usage" 
out=$("$tk" --help); rc=$?
[[ $rc -eq 0 && "$out" == *"ucm-toolkit test"* ]] || { echo "FAIL: --help"; fail=1; }
exit $fail
