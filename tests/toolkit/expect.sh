# Sourced by the ucm-toolkit command-line tests: `expect CODE PATTERN ARGS...` runs
# "$tk" ARGS, and records a failure (fail=1) unless it exits CODE with PATTERN on stderr.
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
