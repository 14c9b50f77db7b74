#!/usr/bin/env bash
# Plain vs DFlash through `flashdraft serve` on the shipped pair, measured by
# `flashdraft bench serve` (HumanEval prompts, 128 tokens each, greedy) at
# concurrency 1 and 8: the README's serving table.
# Usage: bash bench/bench_serve_shipped.sh [BUILD_DIR (build)] [--device cpu|cuda] [--num-prompts N]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
device=cpu prompts=64
while (($#)); do
  case $1 in
    --device) device=$2; shift 2 ;;
    --num-prompts) prompts=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
bin=$build/flashdraft
port=8123
for mode in plain dflash; do
  spec=()
  [[ $mode == dflash ]] && spec=(--speculative-config '{"method":"dflash","model":"models/drafter-full"}')
  OPENBLAS_NUM_THREADS=1 $bin serve --model models/target --served-model-name tiny --device "$device" \
    --port $port --max-num-seqs 8 "${spec[@]}" >"$build/serve_$mode.log" 2>&1 &
  pid=$!
  for _ in $(seq 120); do curl -sf localhost:$port/health >/dev/null && break; sleep 0.5; done
  for c in 1 8; do
    echo "== $mode, concurrency $c"
    $bin bench serve --base-url http://127.0.0.1:$port --dataset humaneval --num-prompts "$prompts" \
      --max-concurrency $c --max-tokens 128 --ignore-eos --output-json "$build/bench_serve_${mode}_$c.json" 2>/dev/null
  done
  kill -TERM $pid
  wait $pid
done
