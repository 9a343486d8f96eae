# 2026-11-29, 2-core AMD EPYC VM: the EAGLE-3 head before (assets/models/eagle3 as it was), at stage 2's 40-minute checkpoint
# (training/runs/eagle3-mid) and after stage 2 (training/runs/eagle3-cont, now shipped), beside EAGLE-2; published trees.
cd /work/main
head -80 assets/prompts/heldout.jsonl > /tmp/p80.jsonl
./build/app/specscope-cli compare --chat --prompt-file /tmp/p80.jsonl --methods vanilla \
  --lane "eagle2:tree=published" \
  --lane "eagle3:tree=published,head=assets/models/eagle3" \
  --lane "eagle3:tree=published,head=training/runs/eagle3-mid" \
  --lane "eagle3:tree=published,head=training/runs/eagle3-cont" \
  --max-tokens 96 --no-record --json 2>/dev/null > /tmp/eval_e3.json
python3 - <<'PY'
import json
j=json.load(open('/tmp/eval_e3.json'))
for a in j['aggregate']:
  print(a['lane'], a.get('head','').split('/')[-1], 'tau %.3f'%a['tau'], 'tok/s %.0f'%a['tokens_per_second'], '%.2fx'%a['speedup_vs_vanilla'], 'fwd', a['target_forwards'], 'ident', a['identical_to_vanilla'], 'acc', ' '.join('%.0f'%(100*x) for x in a.get('acceptance_by_depth',[])))
PY
