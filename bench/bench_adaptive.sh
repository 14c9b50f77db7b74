#!/usr/bin/env bash
# Adaptive speculation on the shipped pair, one command (issue 10):
#   1. bench_adaptive: plain vs DFlash with 15 drafts vs adaptive, output
#      tokens/s at each concurrency over all 164 HumanEval prompts, plus the
#      long-context point, interleaved per point (REPEATS rounds, medians);
#   2. the README's demo command ('def fibonacci(n):', 128 tokens), plain
#      and adaptive, DEMO_RUNS runs each, alternating;
#   3. the plot (bench/plot_adaptive.py, needs python3-matplotlib).
#
#   bash bench/bench_adaptive.sh [--device cpu|cuda] [BUILD_DIR] [OUT_DIR]
#       (defaults: cpu, build, bench/results)
# Files: OUT_DIR/adaptive_DEVICE.{md,csv,png}, OUT_DIR/demo_DEVICE.md.
# Environment: MAX_TOKENS (64), CONCURRENCY (cpu 1,2,4,8,16; cuda
# 1,2,4,8,16,32,64), LONG_CONCURRENCY (cpu 4, cuda 16), REPEATS (1),
# LONG_REPEATS (REPEATS; the long point's rounds: cheap and noisy on a GPU),
# DEMO_RUNS (3; 0: none), POINTS (humaneval,long; "long": that point alone,
# no plot). On cuda the step budget is 1024 rows (64 requests x 16 verify
# rows fit one recorded step) and graphs are on. The long point and one
# HumanEval point, quickly:
#   POINTS=long REPEATS=7 MAX_TOKENS=128 DEMO_RUNS=0 bash bench/bench_adaptive.sh --device cuda BUILD OUT
#   CONCURRENCY=16 REPEATS=3 MAX_TOKENS=128 DEMO_RUNS=0 bash bench/bench_adaptive.sh --device cuda BUILD OUT
set -euo pipefail
cd "$(dirname "$0")/.."
device=cpu
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --device) device=$2; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
build=${args[0]:-build}
out=${args[1]:-bench/results}
mkdir -p "$out"
cmake --build "$build" --target bench_adaptive flashdraft >/dev/null
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
if [ "$device" = cuda ]; then
  concurrency=${CONCURRENCY:-1,2,4,8,16,32,64}
  long_concurrency=${LONG_CONCURRENCY:-16}
  batched=1024
else
  concurrency=${CONCURRENCY:-1,2,4,8,16}
  long_concurrency=${LONG_CONCURRENCY:-4}
  batched=512
fi

"$build/bench/bench_adaptive" --device "$device" --max-tokens "${MAX_TOKENS:-64}" --concurrency "$concurrency" \
  --long-concurrency "$long_concurrency" --max-num-batched-tokens "$batched" --repeats "${REPEATS:-1}" \
  --long-repeats "${LONG_REPEATS:-${REPEATS:-1}}" \
  --points "${POINTS:-humaneval,long}" --csv "$out/adaptive_$device.csv" | tee "$out/adaptive_$device.md"

demo() {
  "$build/flashdraft" generate --device "$device" --model models/target "$@" --prompt 'def fibonacci(n):' \
    --temperature 0 --max-tokens 128 2>&1 >/dev/null | grep -o 'decode [0-9.]* tok/s' | grep -o '[0-9.]*'
}
echo "| demo run | plain decode tok/s | adaptive DFlash decode tok/s |" | tee "$out/demo_$device.md"
echo "|---|---|---|" | tee -a "$out/demo_$device.md"
for i in $(seq 1 "${DEMO_RUNS:-3}"); do
  p=$(demo)
  a=$(demo --draft-model models/drafter-full)
  echo "| $i | $p | $a |" | tee -a "$out/demo_$device.md"
done

if [[ "${POINTS:-humaneval}" != *humaneval* ]]; then
  echo "wrote $out/adaptive_$device.md, $out/demo_$device.md (one point: no plot)"
elif /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  /usr/bin/python3 bench/plot_adaptive.py "$out/adaptive_$device.csv" "$out/adaptive_$device.png" \
    "flashdraft, shipped pair, greedy HumanEval, $device"
  echo "wrote $out/adaptive_$device.md, $out/demo_$device.md, $out/adaptive_$device.png"
else
  echo "wrote $out/adaptive_$device.md, $out/demo_$device.md (no matplotlib: no plot)"
fi
