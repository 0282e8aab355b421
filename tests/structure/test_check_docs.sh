#!/usr/bin/env bash
# check_docs.sh on made-up trees: a broken file link, a broken anchor and a README
# over its limit are each reported as FILE:LINE (exit 1); links in code, links with a
# scheme, good anchors (repeated headings too) and folders pass; bad use is exit 2.
#   test_check_docs.sh CHECK_DOCS_SH
# Exit 0 when every expectation holds, 1 listing the ones that failed.
set -uo pipefail
check=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/ds-docs.XXXXXX") || exit 1
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

# A clean tree: every kind of link that must pass.
mkdir -p "$work/ok/docs" "$work/ok/src"
cat >"$work/ok/README.md" <<'MD'
# Tool

See [copy](docs/copy.md), [its cases](docs/copy.md#cases-and-more--t), [the second
"Notes"](docs/copy.md#notes-1), [below](#two-commands), [the source](src/) and
[the site](https://example.com/x.md#nowhere).

## Two commands

    [not a link](docs/missing.md)

```
[not a link either](docs/missing.md)
```

A `[code span](docs/missing.md)` is not a link.
MD
cat >"$work/ok/docs/copy.md" <<'MD'
# copy

![plot](plot.svg) and [back](../README.md#tool).

## Cases, and more: `-t`

## Notes

## Notes
MD
touch "$work/ok/docs/plot.svg"
expect 0 '' "$work/ok"

# A broken file, a broken anchor (in another file and in the same file), one fault a line.
cp -r "$work/ok" "$work/bad"
printf '\nA [gone](docs/gone.md) link and [a typo](docs/copy.md#case).\n' >>"$work/bad/README.md"
printf '\n[here](#notes-2)\n' >>"$work/bad/docs/copy.md"
expect 1 'README.md:17: broken link docs/gone.md (no file docs/gone.md)
README.md:17: broken link docs/copy.md#case (no heading #case in docs/copy.md)
docs/copy.md:11: broken link #notes-2 (no heading #notes-2 in docs/copy.md)' "$work/bad"

# README over the limit: the count and the limit, the links still checked.
expect 1 "README.md: 15 lines (over 14)" "$work/ok" 14
expect 0 '' "$work/ok" 15

# Bad use.
expect 2 '' "$work/nowhere"
expect 2 '' "$work/ok" lots
expect 2 ''

((fails == 0)) || exit 1
echo "check_docs.sh: every expectation held"
