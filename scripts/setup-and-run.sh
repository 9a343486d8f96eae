#!/usr/bin/env bash
# One command: install what is missing, build, and run the main job on the embedded default model.
# Extra arguments replace the default run's arguments, e.g. scripts/setup-and-run.sh --prompt "What does harbor mean?"
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/scripts/install-deps.sh" --gui
"$here/scripts/build.sh"
build=${SPECSCOPE_BUILD_DIR:-$here/build}
args=("$@")
# Default: speculative decoding with the shipped draft model, so the summary line shows τ and acceptance.
if ((${#args[@]} == 0)); then
  args=(--chat --prompt "What does the word harbor mean?" --max-tokens 96 --method sps --draft "$here/assets/models/draft")
fi
"$build/app/specscope-cli" run "${args[@]}"
