#!/usr/bin/env bash
# Adaptive speculation on the shipped pair, one command (issue 10):
#   1. bench_adaptive: plain vs DFlash with 15 drafts vs adaptive, output
#      tokens/s at concurrency 1, 2, 4, 8, 16 over all 164 HumanEval prompts,
#      plus the long-context point, interleaved per point;
#   2. the README's demo command ('def fibonacci(n):', 128 tokens), plain
#      and adaptive, three runs each, alternating;
#   3. the plot (bench/plot_adaptive.py, needs python3-matplotlib).
#
#   bash bench/bench_adaptive.sh [BUILD_DIR] [OUT_DIR]     (defaults: build, bench/results)
# Environment: MAX_TOKENS (64), CONCURRENCY (1,2,4,8,16).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-bench/results}
mkdir -p "$out"
cmake --build "$build" --target bench_adaptive flashdraft >/dev/null
export OPENBLAS_NUM_THREADS=1

"$build/bench/bench_adaptive" --max-tokens "${MAX_TOKENS:-64}" --concurrency "${CONCURRENCY:-1,2,4,8,16}" \
  --csv "$out/adaptive.csv" | tee "$out/adaptive.md"

demo() {
  "$build/flashdraft" generate --model models/target "$@" --prompt 'def fibonacci(n):' --temperature 0 \
    --max-tokens 128 2>&1 >/dev/null | grep -o 'decode [0-9.]* tok/s' | grep -o '[0-9.]*'
}
echo "| demo run | plain decode tok/s | adaptive DFlash decode tok/s |" | tee "$out/demo.md"
echo "|---|---|---|" | tee -a "$out/demo.md"
for i in 1 2 3; do
  p=$(demo)
  a=$(demo --draft-model models/drafter-full)
  echo "| $i | $p | $a |" | tee -a "$out/demo.md"
done

/usr/bin/python3 bench/plot_adaptive.py "$out/adaptive.csv" "$out/adaptive.png"
echo "wrote $out/adaptive.md, $out/demo.md, $out/adaptive.png"
