#!/usr/bin/env bash
# One phase of the pipeline as one call on the GPU machine, packing results into $OUT
# (at most 8 files come back, so small files travel as one tarball).
#   phase 1: smoke test, corpus, tokenizer, target     (needs .carry/train/humaneval.jsonl)
#   phase 2: drafters                                    (needs models/target/)
#   phase 3: tau on HumanEval + fixtures                 (needs models/ and humaneval.jsonl)
#   t1:      the temperature-1 runs of phase 3 alone, sharded (when phase 3's budget cut them short)
# Usage (on the GPU machine, repo root): bash tools/train_tiny/device_run.sh N [SECONDS]
set -uo pipefail
phase=$1
budget=${2:-540}
start=$(date +%s)
deadline=$((start + budget))
export PYTHONUNBUFFERED=1
w=/tmp/fd-train
mkdir -p $w "$OUT"
he=.carry/train/humaneval.jsonl
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/device.txt"
case $phase in
1)
  rm -rf $w/smoke
  timeout 150 python3 tools/train_tiny/smoke.py $w/smoke $he > "$OUT/smoke.log" 2>&1
  echo "smoke rc=$? after $(( $(date +%s) - start ))s"; tail -5 "$OUT/smoke.log"
  python3 tools/train_tiny/phase1_target.py $w/p1 --train-seconds 420 --deadline $deadline 2>&1 | tee "$OUT/phase1.log"
  cp $w/p1/target/*.safetensors "$OUT/"
  tar -C $w/p1 -czf "$OUT/phase1-meta.tgz" --exclude='*.safetensors' target phase1.json corpus_manifest.json
  ;;
2)
  rm -rf $w/smoke
  timeout 150 python3 tools/train_tiny/smoke.py $w/smoke $he > "$OUT/smoke.log" 2>&1
  echo "smoke rc=$? after $(( $(date +%s) - start ))s"; tail -4 "$OUT/smoke.log"
  grep -q "PHASE2 CODE OK" "$OUT/smoke.log" || exit 1
  python3 tools/train_tiny/phase2_drafters.py models/target $w/p2 --gen-seconds 60 --deadline $deadline \
    2>&1 | tee "$OUT/phase2.log"
  tar -C $w/p2 -czf "$OUT/phase2.tgz" drafter-full drafter-swa phase2.json
  ;;
3)
  python3 tools/train_tiny/phase3_measure.py models $he $w/p3 --budget $((budget - 90)) 2>&1 | tee "$OUT/phase3.log"
  tar -C $w/p3 -czf "$OUT/phase3.tgz" .
  ;;
t1)
  # Temperature-1 runs alone, 2 shards per drafter (phase 3 runs them next to everything else).
  mkdir -p $w/t1
  for d in drafter-full drafter-swa; do for i in 0 1; do
    OMP_NUM_THREADS=2 timeout $((budget - 40)) python3 tools/reference/measure_humaneval.py dflash \
      --target models/target --drafter models/$d --temperature 1 --prompts $he --shard $i/2 \
      --out $w/t1/$d-T1-$i.json > $w/t1/$d-$i.log 2>&1 &
  done; done
  wait
  for d in drafter-full drafter-swa; do
    python3 tools/reference/measure_humaneval.py merge --parts $w/t1/$d-T1-0.json $w/t1/$d-T1-1.json \
      --out $w/t1/$d-T1.json
  done
  tail -n 3 $w/t1/*.log
  tar -C $w/t1 -czf "$OUT/t1.tgz" drafter-full-T1.json drafter-swa-T1.json
  ;;
esac
echo "phase $phase done after $(( $(date +%s) - start ))s"
