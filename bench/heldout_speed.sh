#!/usr/bin/env bash
# Speculation on the shipped family (issue 22's protocol): the first N held-out prompts (default 20), greedy, chat,
# 96 new tokens, every method in one `compare` run (each against vanilla in the same run), with this machine's
# defaults (on CPU: trees sized by tree=auto). A fresh XDG_CACHE_HOME, so the step-cost curve and the tree choices
# are measured in this run. Writes the JSON and a markdown table.
# Usage: bash bench/heldout_speed.sh [OUT_PREFIX] [N] [-- extra compare arguments]
#   OUT_PREFIX defaults to bench/results/cpu_heldout_speed (.json, .md)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cli=${CLI:-$here/build/app/specscope-cli}
out=${1:-$here/bench/results/cpu_heldout_speed}
n=${2:-20}
shift $(( $# > 2 ? 2 : $# ))
[[ "${1:-}" == "--" ]] && shift
[[ -x "$cli" ]] || { echo "heldout_speed.sh: $cli: not built (scripts/build.sh)" >&2; exit 2; }
prompts=$(mktemp)
cache=$(mktemp -d)
trap 'rm -rf "$prompts" "$cache"' EXIT
head -"$n" "$here/assets/prompts/heldout.jsonl" > "$prompts"
cmd=("$cli" compare --chat --prompt-file "$prompts" --methods all --max-tokens 96 --no-record --json "$@")
XDG_CACHE_HOME="$cache" "${cmd[@]}" 2> "$out.stderr.txt" > "$out.json"
python3 - "$out" "$(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores" "${cmd[*]} (first $n lines of assets/prompts/heldout.jsonl; XDG_CACHE_HOME fresh)" <<'PY'
import json, os, sys
out, cpu, cmd = sys.argv[1:4]
j = json.load(open(out + ".json"))
lines = [f"command: {cmd}", f"cpu: {cpu}", "",
         "| lane | target | options | tau | acceptance by depth (%) | tok/s | speedup vs vanilla | identical | tree=auto expected tau / speedup |",
         "|---|---|---|---|---|---|---|---|---|"]
for a in j["aggregate"]:
    options = dict(a.get("options", {}))
    if a.get("draft"):  # the drafter tree=auto chose among a family's alternatives, or the one given
        options["draft"] = a["draft"]
    opts = ",".join(f"{k}={os.path.basename(v.rstrip('/'))}" for k, v in sorted(options.items()))
    target = os.path.basename(a["target"]["path"])
    e = a.get("tree_auto")
    expected = f"{e.get('expected_tau', 0):.2f} / {e.get('expected_speedup', 0):.2f}x" if e else "-"
    depth = " ".join(f"{100 * x:.0f}" for x in a.get("acceptance_by_depth") or []) or "-"
    lines.append(f"| {a['lane']} | {target} | {opts} | {a['tau']:.2f} | {depth} | {a['tokens_per_second']:.1f} | {a['speedup_vs_vanilla']:.2f}x | "
                 f"{a['identical_to_vanilla']}/{a['prompts']} | {expected} |")
open(out + ".md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
