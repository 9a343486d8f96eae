#!/usr/bin/env bash
# Moves the folders a device call cannot carry out of the checkout and back (issue 23's GPU runs). A call sends the
# checkout's tracked and untracked-not-ignored files, at most 64 MiB with what `carry` names, and assets/ (95 MB),
# tests/fixtures/ (44 MB), training/data/ and bench/results/ are more than that; gpu-pack.sh's bundle holds what a
# run reads of them. docs/ (1.5 MB of screenshots, read by no run) goes too: the core part (56 MiB) and the source
# tree (7 MiB) leave little of the 64.
#
#   bash scripts/gpu-stage.sh out    # before the device call: the folders go to ../specscope-gpu-staged/
#   bash scripts/gpu-stage.sh back   # after it (and before any commit: with them out, `git commit -a` deletes them)
#   bash scripts/gpu-stage.sh size   # what a call would send now, bundle included
#
# `out` refuses when something is staged already or the index has changes (a commit then would record the moves),
# and prints the size a call would send; `back` refuses to overwrite a folder that is there again.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
staged=${SPECSCOPE_GPU_STAGED:-$here/../specscope-gpu-staged}
folders=(assets tests/fixtures training/data bench/results docs)
die() { echo "gpu-stage.sh: $*" >&2; exit 2; }

sending_bytes() {  # tracked and untracked-not-ignored files present now, plus the bundle a call carries
  local files bundle=0
  files=$(cd "$here" && { git ls-files; git ls-files --others --exclude-standard; } | while read -r f; do
    [ -f "$f" ] && stat -c %s "$f"; done | awk '{s += $1} END {print s + 0}')
  [ -d "$here/gpu-bundle" ] && bundle=$(du -sb "$here/gpu-bundle" | cut -f1)
  echo $((files + bundle))
}

case "${1:-}" in
  out)
    [ -z "$(cd "$here" && git diff --cached --name-only)" ] || die "the index has staged changes: commit them first"
    for f in "${folders[@]}"; do
      [ ! -e "$staged/$f" ] || die "$staged/$f exists: run 'back' first"
      [ -d "$here/$f" ] || die "$here/$f is missing"
    done
    for f in "${folders[@]}"; do
      mkdir -p "$staged/$(dirname "$f")"
      mv "$here/$f" "$staged/$f"
    done
    bytes=$(sending_bytes)
    echo "gpu-stage: ${folders[*]} moved to $staged; a call sends $((bytes >> 20)) MiB of 64 (gpu-bundle/ included)"
    [ "$bytes" -le $((64 << 20)) ] || echo "gpu-stage.sh: over the 64 MiB a call may send" >&2
    ;;
  back)
    for f in "${folders[@]}"; do
      [ -d "$staged/$f" ] || die "$staged/$f is missing: nothing to bring back"
      [ ! -e "$here/$f" ] || die "$here/$f exists again: move it aside first"
    done
    for f in "${folders[@]}"; do mv "$staged/$f" "$here/$f"; done
    rmdir "$staged/tests" "$staged/training" "$staged/bench" "$staged" 2>/dev/null || true
    echo "gpu-stage: ${folders[*]} back in $here"
    ;;
  size)
    bytes=$(sending_bytes)
    echo "a call would send $((bytes >> 20)) MiB of 64 now (gpu-bundle/ included)"
    ;;
  *) die "usage: $0 out|back|size" ;;
esac
