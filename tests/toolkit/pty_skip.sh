#!/usr/bin/env bash
# The terminal test skips, not fails, where no pseudo-terminal can be opened: run
# it in a mount namespace whose /dev/pts is an empty tmpfs (a minimal container's
# /dev). Needs root and unshare; exit 77 (skipped) otherwise.
set -uo pipefail
tests=$1
if [[ $(id -u) -ne 0 ]] || ! command -v unshare >/dev/null; then
  echo "needs root and unshare to hide /dev/pts: skipped"
  exit 77
fi
out=$(unshare --mount --propagation private bash -c \
  'mount -t tmpfs none /dev/pts && "$0" --gtest_filter=ProgressE2e.ShownOnATerminalThenCleared' "$tests" 2>&1)
rc=$?
echo "$out"
if ! grep -q '^\[==========\]' <<<"$out"; then
  echo "could not hide /dev/pts here (no mount namespace or tmpfs mount): skipped"
  exit 77
fi
if [[ $rc -ne 0 ]]; then
  echo "FAIL: the terminal test failed without a pseudo-terminal (exit $rc)"
  exit 1
fi
grep -q '\[  SKIPPED \] ProgressE2e.ShownOnATerminalThenCleared' <<<"$out" || { echo "FAIL: it did not skip"; exit 1; }
grep -q 'no pseudo-terminal here' <<<"$out" || { echo "FAIL: no reason given"; exit 1; }
echo "skipped with its reason, as it should"
