#!/usr/bin/env bash
# check_structure.sh on made-up source trees: every rule reports the file:line and
# the function or include that breaks it, a clean tree passes, bad use is exit 2.
#   test_check_structure.sh CHECK_STRUCTURE_SH
# Exit 0 when every expectation holds, 1 listing the ones that failed, 77 when
# universal-ctags is missing (the function-length half cannot run).
set -uo pipefail
check=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/ds-structure.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect WANT_RC WANT_OUTPUT ARGS...: the checker's exit code and its exact stdout.
expect() {
  local want_rc=$1 want_out=$2 out rc
  shift 2
  out=$(bash "$check" "$@" 2>"$work/err")
  rc=$?
  [[ $rc -eq $want_rc ]] || fail "$*: exit $rc, not $want_rc ($(cat "$work/err"))"
  [[ "$out" == "$want_out" ]] || fail "$*: printed
$out
instead of
$want_out"
}

# n lines of a function body
body() { local i; for ((i = 0; i < $1; ++i)); do echo "  x += $i;"; done; }

# ---- layers ----
mkdir -p "$work/a/src/core" "$work/a/src/aio" "$work/a/src/load" "$work/a/src/cases" "$work/a/src/backends/sim"
cat >"$work/a/src/core/units.h" <<'SRC'
#pragma once
#include <string>
#include "core/error.h"
SRC
cat >"$work/a/src/core/units.cc" <<'SRC'
#include "core/units.h"

#include "aio/io_loop.h"
SRC
printf '#include "core/units.h"\n#include "backends/sim/sim.h"\n' >"$work/a/src/aio/io_loop.h"
printf '#include "aio/io_loop.h"\n#include "cases/catalog.h"\n' >"$work/a/src/load/pipeline.cc"
printf '#include "core/units.h"\n#include "sim_copy_thread.h"\n' >"$work/a/src/backends/sim/sim.h"
printf '#include "load/pipeline.h"\n' >"$work/a/src/main.cc"
# aio above backends, a folder's own and same-folder includes: allowed; core -> aio
# (higher) and load -> cases (kept apart) are not.
expect 1 'src/core/units.cc:3: core includes aio: #include "aio/io_loop.h"
src/load/pipeline.cc:2: load includes cases: #include "cases/catalog.h"' layers "$work/a/src"
mkdir -p "$work/a/src/gadgets"
expect 1 'src/core/units.cc:3: core includes aio: #include "aio/io_loop.h"
src/gadgets: a folder not in the layer list (tests/structure/check_structure.sh LAYERS)
src/load/pipeline.cc:2: load includes cases: #include "cases/catalog.h"' layers "$work/a/src"
rmdir "$work/a/src/gadgets"
sed -i '/aio\/io_loop.h/d' "$work/a/src/core/units.cc"
sed -i '/cases\/catalog.h/d' "$work/a/src/load/pipeline.cc"
expect 0 "" layers "$work/a/src"

# ---- bad use ----
expect 2 "" layers "$work/nowhere"
expect 2 "" sizes "$work/a/src"
expect 2 "" function-length "$work/a/src" 0

# ---- function length ----
if ! ctags --version 2>/dev/null | grep -q "Universal Ctags"; then
  echo "no universal-ctags (Debian: universal-ctags): the function-length checks are skipped"
  [[ $fails -eq 0 ]] || exit 1
  exit 77
fi
mkdir -p "$work/b/src/runner"
{
  echo "namespace ds {"
  echo "int exactly_limit(int x) {"  # line 2: 100 lines with its braces
  body 98
  echo "}"
  echo "int one_over(int x) {"       # line 102: 101 lines
  body 99
  echo "}"
  echo "struct Loop {"
  echo "  void run() {"              # line 204: a member, 102 lines
  body 100
  echo "  }"
  echo "};"
  echo "void with_lambda() {"        # line 307: 103 lines
  echo "  auto f = [](int x) {"      # line 308: a lambda of 101 lines
  body 99
  echo "  };"
  echo "}"
  echo "}  // namespace ds"
} >"$work/b/src/runner/loop.cc"
expect 1 'src/runner/loop.cc:102: ds::one_over is 101 lines (over 100)
src/runner/loop.cc:204: ds::Loop::run is 102 lines (over 100)
src/runner/loop.cc:307: ds::with_lambda is 103 lines (over 100)
src/runner/loop.cc:308: a lambda in ds::with_lambda is 101 lines (over 100)' function-length "$work/b/src"
expect 1 'src/runner/loop.cc:204: ds::Loop::run is 102 lines (over 101)
src/runner/loop.cc:307: ds::with_lambda is 103 lines (over 101)' function-length "$work/b/src" 101
expect 0 "" function-length "$work/b/src" 103

[[ $fails -eq 0 ]] && echo "check_structure.sh: every expectation held"
[[ $fails -eq 0 ]]
