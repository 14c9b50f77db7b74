#!/usr/bin/env bash
# The whole pipeline, end to end, on one H100/H200 (about 24 minutes), fixed seeds:
#   corpus + tokenizer + target (phase 1), drafters (phase 2), tau + fixtures (phase 3).
# Usage (repo root, on the GPU machine): tools/train_tiny/run_pipeline.sh OUT_DIR HUMANEVAL_JSONL
# Results: OUT_DIR/models/{target,drafter-full,drafter-swa}, OUT_DIR/p3/phase3.json (tau table),
# OUT_DIR/p3/fixtures/ (tests/fixtures/dflash/). The shipped models were made by the same
# phases run as separate device calls: tools/train_tiny/device_run.sh 1, 2, 3 (see models/README.md).
set -euo pipefail
out=${1:?usage: run_pipeline.sh OUT_DIR HUMANEVAL_JSONL}
he=${2:?usage: run_pipeline.sh OUT_DIR HUMANEVAL_JSONL}
here=$(cd "$(dirname "$0")" && pwd)
export PYTHONUNBUFFERED=1
mkdir -p "$out/models"
python3 "$here/phase1_target.py" "$out/p1" --train-seconds 420
python3 "$here/phase2_drafters.py" "$out/p1/target" "$out/p2" --gen-seconds 60 --train-seconds 300
cp -r "$out/p1/target" "$out/p2/drafter-full" "$out/p2/drafter-swa" "$out/models/"
python3 "$here/phase3_measure.py" "$out/models" "$he" "$out/p3" --budget 560
