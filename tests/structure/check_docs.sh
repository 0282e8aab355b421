#!/usr/bin/env bash
# The documentation's shape, checked (issue 25, "README.md at most 250 lines"):
#   check_docs.sh ROOT [MAX_README_LINES]
#     README.md in ROOT has at most MAX_README_LINES lines (250), and every relative
#     markdown link in ROOT/README.md and ROOT/docs/*.md ([text](path), ![alt](path),
#     [text](path#anchor), [text](#anchor)) points to a file or folder that exists and,
#     for a .md target with an anchor, to a heading of that file (GitHub's anchors:
#     lower case, punctuation dropped, spaces as hyphens, a repeated heading -1, -2...).
#     Links with a scheme (https:, mailto:) are not followed; code (fenced blocks,
#     indented blocks, `spans`) holds no links. One line per fault:
#       "FILE:LINE: broken link TARGET (WHY)" or "README.md: N lines (over MAX)".
# Exit 0 when clean, 1 with the faults listed, 2 on bad use.
set -euo pipefail

die() { echo "check_docs: $*" >&2; exit 2; }
[[ $# -ge 1 && $# -le 2 ]] || die "usage: check_docs.sh ROOT [MAX_README_LINES]"
root=$1
max=${2:-250}
[[ -f "$root/README.md" ]] || die "no README.md in $root"
[[ "$max" =~ ^[0-9]+$ ]] || die "MAX_README_LINES must be a whole number, not '$max'"

faults=0
fault() { echo "$*"; faults=$((faults + 1)); }

lines=$(wc -l <"$root/README.md")
((lines <= max)) || fault "README.md: $lines lines (over $max)"

# FILE -> its headings' anchors, one per line.
anchors() {
  awk '
    /^[ \t]*(```|~~~)/ { fence = !fence; next }
    fence { next }
    /^#+[ \t]/ {
      h = $0
      sub(/^#+[ \t]+/, "", h); sub(/[ \t]+#*[ \t]*$/, "", h)
      h = tolower(h)
      gsub(/[^a-z0-9 _-]/, "", h)
      gsub(/ /, "-", h)
      n = seen[h]++
      print (n ? h "-" n : h)
    }' "$1"
}

# FILE -> "LINE<TAB>TARGET" for every link outside code.
links() {
  awk '
    /^[ \t]*(```|~~~)/ { fence = !fence; next }
    fence { next }
    /^(    |\t)/ { next }
    {
      line = $0
      gsub(/`[^`]*`/, "", line)
      while (match(line, /\]\([^) \t]+\)/)) {
        print NR "\t" substr(line, RSTART + 2, RLENGTH - 3)
        line = substr(line, RSTART + RLENGTH)
      }
    }' "$1"
}

files=("$root/README.md")
shopt -s nullglob
files+=("$root"/docs/*.md)
for file in "${files[@]}"; do
  rel=${file#"$root"/}
  dir=$(dirname "$file")
  while IFS=$'\t' read -r line target; do
    [[ "$target" =~ ^[a-zA-Z][a-zA-Z0-9+.-]*: ]] && continue
    path=${target%%#*}
    anchor=
    [[ "$target" == *"#"* ]] && anchor=${target#*#}
    dest=$file
    if [[ -n "$path" ]]; then
      dest=$dir/$path
      if [[ ! -e "$dest" ]]; then
        fault "$rel:$line: broken link $target (no file $path)"
        continue
      fi
    fi
    if [[ -n "$anchor" && "$dest" == *.md ]]; then
      if ! anchors "$dest" | grep -qxF -- "$anchor"; then
        fault "$rel:$line: broken link $target (no heading #$anchor in ${dest#"$root"/})"
      fi
    fi
  done < <(links "$file")
done

((faults == 0)) || exit 1
exit 0
