#!/usr/bin/env bash
# One command: install what is missing, build, and run the main job on the embedded default model.
# Extra arguments replace the default prompt, e.g. scripts/setup-and-run.sh --prompt "What does harbor mean?"
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/scripts/install-deps.sh" --gui
"$here/scripts/build.sh"
build=${SPECSCOPE_BUILD_DIR:-$here/build}
args=("$@")
if ((${#args[@]} == 0)); then args=(--chat --prompt "What does the word harbor mean?" --max-tokens 96); fi
"$build/app/specscope-cli" run "${args[@]}"
