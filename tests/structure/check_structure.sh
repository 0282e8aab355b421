#!/usr/bin/env bash
# The source tree's shape, checked (issue 24, "Layers one way"):
#   check_structure.sh function-length SRC_DIR [MAX_LINES]
#     every function in SRC_DIR (lambdas too) longer than MAX_LINES (100), one per
#     line as "file:line: NAME is N lines (over MAX)"; needs universal-ctags
#     (Debian: universal-ctags; ucm-toolkit installs it).
#   check_structure.sh layers SRC_DIR
#     every #include of a folder above the including file's own (by LAYERS below,
#     or a pair APART names), one per line as
#     "file:line: FOLDER includes OTHER: #include "..."".
# Exit 0 when clean, 1 with the violations listed, 2 on bad use or a missing tool.
set -euo pipefail

# The layers, lowest first: a folder may include its own and the ones before it,
# never one after it. main.cc (SRC_DIR itself) is the top and may include anything.
# One folder per word; a folder of src/ that is not listed is a violation too.
# job (run's job files) sits above every measurement it runs as a child process and
# includes none of them: only core and output.
LAYERS=(core topology backend memory backends copy_methods layout output cluster runner measurement aio staging cases load
        model tune job app)
# Pairs "A:B": A may not include B even though B is lower. cases is copy's
# measurement: load shares with it only through the layers below both.
APART=(load:cases)

die() { echo "check_structure: $*" >&2; exit 2; }

layer_rank() {  # folder -> index in LAYERS, or -1
  local i
  for i in "${!LAYERS[@]}"; do
    [[ "${LAYERS[$i]}" == "$1" ]] && { echo "$i"; return; }
  done
  echo -1
}

kept_apart() {  # folder included: true when APART names the pair
  local pair
  for pair in "${APART[@]}"; do
    [[ "$pair" == "$1:$2" ]] && return 0
  done
  return 1
}

function_length() {  # src max
  local src=$1 max=$2
  command -v ctags >/dev/null 2>&1 || die "ctags not found (Debian: apt-get install universal-ctags)"
  ctags --version 2>/dev/null | grep -q "Universal Ctags" || die "ctags is not universal-ctags (its end lines are needed)"
  local found=0 file line end name scope what
  while IFS=$'\t' read -r file line end name scope; do
    [[ -n "$end" && "$end" =~ ^[0-9]+$ ]] || continue
    local n=$((end - line + 1))
    ((n > max)) || continue
    scope=$(sed -E 's/__anon[0-9a-f]+(::)?//g; s/::$//' <<<"$scope")
    if [[ "$name" == __anon* ]]; then
      what="a lambda in ${scope:-the file scope}"
    else
      what="${scope:+$scope::}$name"
    fi
    echo "$file:$line: $what is $n lines (over $max)"
    found=1
  done < <(cd "$src/.." && ctags -x --_xformat='%{input}	%{line}	%{end}	%{name}	%{scope}' --fields=+ne \
             --kinds-C++=f --languages=C++ -R "$(basename "$src")" | sort -t$'\t' -k1,1 -k2,2n)
  return $found
}

layers() {  # src
  local src=$1 found=0 dir folder rank file hit line text inc inc_rank
  [[ -d "$src" ]] || die "no directory $src"
  for dir in "$src"/*/; do
    folder=$(basename "$dir")
    rank=$(layer_rank "$folder")
    if ((rank < 0)); then
      echo "$(basename "$src")/$folder: a folder not in the layer list (tests/structure/check_structure.sh LAYERS)"
      found=1
      continue
    fi
    while IFS= read -r hit; do
      file=${hit%%:*}
      hit=${hit#*:}
      line=${hit%%:*}
      text=${hit#*:}
      inc=$(sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"([^/"]+)\/.*$/\1/' <<<"$text")
      inc_rank=$(layer_rank "$inc")
      ((inc_rank > rank)) || kept_apart "$folder" "$inc" || continue
      echo "${file#"$src/../"}:$line: $folder includes $inc: $(sed -E 's/^[[:space:]]+//' <<<"$text")"
      found=1
    done < <(grep -rnE --include='*.h' --include='*.cc' --include='*.cu' '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^/"]+/' \
               "$src/../$(basename "$src")/$folder" | sort -t: -k1,1 -k2,2n)
  done
  return $found
}

[[ $# -ge 2 ]] || die "usage: check_structure.sh function-length SRC_DIR [MAX_LINES] | layers SRC_DIR"
src=$(cd "$2" 2>/dev/null && pwd) || die "no directory $2"
case "$1" in
  function-length)
    max=${3:-100}
    [[ "$max" =~ ^[1-9][0-9]*$ ]] || die "MAX_LINES must be a whole number >= 1, got '$max'"
    function_length "$src" "$max" ;;
  layers) layers "$src" ;;
  *) die "unknown check '$1' (function-length or layers)" ;;
esac
