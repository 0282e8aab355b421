#!/usr/bin/env bash
# aio inside a chroot, as Debian's package builders run test suites: only /proc
# (and /dev) mounted in it, no /sys, and /proc/self/mountinfo without the mount
# that holds the chroot's own directories. The workspace's filesystem and block
# device must still be found (by st_dev): the same filesystem name and the same
# one Device line per phase as outside, for two workspaces on one disk. Needs root
# and unshare (a private mount namespace); exit 77 (skipped) otherwise.
#   chroot_aio.sh DEV_SANDBOX_BINARY
set -uo pipefail
bin=$(readlink -f "$1")
src=$(cd "$(dirname "$0")/../.." && pwd)  # the checkout: sanitizer builds read their suppressions from it
if [[ $(id -u) -ne 0 ]] || ! command -v unshare >/dev/null || ! command -v chroot >/dev/null; then
  echo "needs root, unshare and chroot: skipped"
  exit 77
fi
root=$(mktemp -d /var/tmp/ds-chroot-XXXXXX) || { echo "no /var/tmp: skipped"; exit 77; }
trap 'rm -rf "$root"' EXIT
if [[ $(stat -c %d "$root") -lt 256 ]]; then  # major 0: tmpfs, overlay, ...: no disk below
  echo "/var/tmp has no block device here: skipped"
  exit 77
fi
mkdir -p "$root/ws1" "$root/ws2"
args=(aio --backend sim --io-size 64K --io-number 8 --epoch-number 1)

# Outside: what the machine says about that disk.
outside=$("$bin" "${args[@]}" --workspace "$root/ws1" --workspace "$root/ws2" 2>&1) || {
  echo "FAIL: the run outside the chroot failed"; echo "$outside"; exit 1; }

inside=$(unshare --mount --propagation private bash -c '
  set -e
  r=$1 bin=$2 src=$3; shift 3
  for d in usr lib lib32 lib64 libx32 bin sbin etc; do
    if [ -L "/$d" ]; then ln -s "$(readlink "/$d")" "$r/$d"
    elif [ -d "/$d" ]; then mkdir -p "$r/$d" && mount --bind "/$d" "$r/$d"; fi
  done
  mkdir -p "$r/proc" "$r/dev" "$r/tmp" "$r$src"
  mount -t proc proc "$r/proc"
  mount --rbind /dev "$r/dev"
  mount --bind "$src" "$r$src"
  case "$bin" in
    "$src"/*) ;;
    *) mkdir -p "$r$(dirname "$bin")" && mount --bind "$(dirname "$bin")" "$r$(dirname "$bin")" ;;
  esac
  exec chroot "$r" "$bin" "$@" --workspace /ws1 --workspace /ws2
' _ "$root" "$bin" "$src" "${args[@]}" 2>&1)
rc=$?
echo "$inside"
if [[ $rc -ne 0 ]]; then
  # No private mount namespace here (unshare refused; already inside a chroot, whose
  # root is not a mount point): nothing to test.
  grep -q "^unshare: " <<<"$inside" && { echo "no private mount namespace here: skipped"; exit 77; }
  echo "FAIL: the run inside the chroot failed (exit $rc)"
  exit 1
fi
fs_of() { sed -n 's/.*files in \/[^ ]* (\([^)]*\)).*/\1/p' <<<"$1" | head -1; }
want=$(fs_of "$outside") got=$(fs_of "$inside")
[[ -n "$want" && "$got" == "$want" ]] || { echo "FAIL: the filesystem is '$got' inside, '$want' outside"; exit 1; }
devices=$(grep -c '^  Device' <<<"$inside")
[[ $devices -eq 2 ]] || { echo "FAIL: $devices Device lines inside (one per phase expected: both workspaces on one disk)"; exit 1; }
dev_out=$(grep -m1 '^  Device' <<<"$outside") dev_in=$(grep -m1 '^  Device' <<<"$inside")
[[ "${dev_in%%:*}" == "${dev_out%%:*}" ]] || { echo "FAIL: '$dev_in' inside, '$dev_out' outside"; exit 1; }
grep -q "not found" <<<"$dev_in" && { echo "FAIL: the disk was not found inside: $dev_in"; exit 1; }
# The rows name the disk and its filesystem, as outside: "file::vda:ext4".
disk=$(sed -n 's/^  Device \([^:]*\):.*/\1/p' <<<"$dev_in")
grep -q "file::$disk:$want " <<<"$inside" || { echo "FAIL: no file::$disk:$want column inside"; exit 1; }
echo "inside the chroot: $want, ${dev_in%%:*}, as outside"
