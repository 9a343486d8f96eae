#!/usr/bin/env bash
# Speculation on a shared CPU (issue 22's protocol): five held-out prompts, greedy, chat, 64 new tokens,
# `compare --methods vanilla,sps,eagle2,pld` (METHODS=... for others; plus any extra arguments), once quiet and once beside one busy
# process, with the same binary; writes the two tables and how much of each method's quiet speedup it kept.
# Usage: bash bench/contention.sh [CLI] [OUT] [-- extra compare arguments]
# CLI defaults to build/app/specscope-cli; OUT to bench/results/cpu_contention.txt.
# Both runs share a fresh XDG_CACHE_HOME (the step-cost curve and tree=auto's choices are measured in the quiet run and
# reused beside the busy process, as a user's cache would be), never the user's own: a cache from another build or
# another hour would decide the trees otherwise.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cli=${1:-$here/build/app/specscope-cli}
out=${2:-$here/bench/results/cpu_contention.txt}
shift $(( $# > 2 ? 2 : $# ))
[[ "${1:-}" == "--" ]] && shift
prompts=$(mktemp)
head -5 "$here/assets/prompts/heldout.jsonl" > "$prompts"
cmd=("$cli" compare --chat --prompt-file "$prompts" --methods "${METHODS:-vanilla,sps,eagle2,pld}" --max-tokens 64 --no-record --json "$@")
cache=$(mktemp -d)
run() { XDG_CACHE_HOME="$cache" "${cmd[@]}" 2>/dev/null; }
quiet=$(mktemp)
loaded=$(mktemp)
trap 'kill ${busy:-} 2>/dev/null || true; rm -rf "$prompts" "$quiet" "$loaded" "$cache"' EXIT
run > "$quiet"
yes > /dev/null &
busy=$!
sleep 0.3
run > "$loaded"
kill $busy
python3 - "$out" "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')" "${cmd[*]}" "$quiet" "$loaded" <<'PY'
import json, sys
out, cpu, cmd, qf, lf = sys.argv[1:6]
q = json.load(open(qf))
l = json.load(open(lf))
def rows(j): return {a["lane"]: a for a in j["aggregate"]}
qr, lr = rows(q), rows(l)
lines = [f"command: {cmd}", f"cpu: {cpu}", "",
         "| method | quiet tok/s | quiet speedup | beside one busy process tok/s | speedup | kept of quiet speedup |",
         "|---|---|---|---|---|---|"]
for name in qr:
    a, b = qr[name], lr[name]
    kept = b["speedup_vs_vanilla"] / a["speedup_vs_vanilla"] if a["speedup_vs_vanilla"] else 0
    lines.append(f"| {name} | {a['tokens_per_second']:.1f} | {a['speedup_vs_vanilla']:.2f}x | "
                 f"{b['tokens_per_second']:.1f} | {b['speedup_vs_vanilla']:.2f}x | {kept:.2f} |")
open(out, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
