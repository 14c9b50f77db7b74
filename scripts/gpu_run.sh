#!/usr/bin/env bash
# One call on the lent GPU machine: build (scripts/device_build.sh), then the
# GPU tests and benchmarks, logs under $OUT (default ./gpu-out). Needs
# .carry (scripts/device_fetch_debs.sh: packages and configs) carried with the call.
# Usage: bash scripts/gpu_run.sh [tests] [bench] [cycle] [engine] [peer] [timeline] [tp] [attention] [profile] [rope] [agreement] [overlap] [scorecard]
#   (default: tests bench attention)
# (A call returns at most 8 files: run profile apart from attention.)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-out}
mkdir -p "$out"
what=${*:-tests bench attention}
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv,noheader | tee "$out/gpu.txt"
source scripts/device_build.sh backend_ops_test batch_invariance_test engine_gpu_tests engine_tensor_parallel_gpu_tests rope_scaling_test bench_step bench_cycle bench_backend_ops bench_attention kernel_timeline flashdraft \
  || exit 1
export PYTHONUNBUFFERED=1
# One batch-1 eager decode step at context $1 under ncu (kernels one at a
# time, caches as the step leaves them): its CSV to $2.csv, ncu's stderr to
# $2.err, the sum of its kernel times (bench/ncu_kernel_sum.py) to stdout.
ncu_decode_sum() {
  ncu --profile-from-start off --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv \
    build-gpu/bench/bench_step --target .carry/configs/qwen3-8b --drafter .carry/configs/qwen3-8b-dflash-b16 \
    --contexts "$1" --profile-decode >"$2.csv" 2>"$2.err"
  python3 bench/ncu_kernel_sum.py "$2.csv" "decode step, batch 1, ctx $1"
}
if [[ $what == *tests* ]]; then
  build-gpu/tests/backend_ops/backend_ops_test --gtest_brief=1 2>&1 | tail -40 | tee "$out/backend_ops.log"
  build-gpu/tests/backend_ops/batch_invariance_test 2>&1 | grep -vE "^\[ (RUN|      OK) " | head -40 | tee "$out/batch_invariance.log"
  (cd build-gpu/tests/engine && ./engine_gpu_tests 2>&1) | grep -E "^\[(gpu|  FAILED|  PASSED|==========)|Failure|differs" \
    | tee "$out/engine_gpu.log"
  # Tensor parallelism over NCCL: skipped with fewer than 2 GPUs.
  (cd build-gpu/tests/engine && NCCL_NVLS_ENABLE=0 ./engine_tensor_parallel_gpu_tests 2>&1) \
    | grep -E "^\[(gpu|  FAILED|  PASSED|  SKIPPED|==========)|Failure|differs" | tee "$out/engine_tp_gpu.log"
fi
if [[ $what == *bench* ]]; then
  build-gpu/bench/bench_step --target .carry/configs/qwen3-8b --drafter .carry/configs/qwen3-8b-dflash-b16 --contexts 1024,16384 --batches 1 --reps 20 2>&1 | tee "$out/bench_step.log"
fi
if [[ $what == *cycle* ]]; then
  build-gpu/bench/bench_cycle --target .carry/configs/qwen3-8b --drafter .carry/configs/qwen3-8b-dflash-b16 --contexts 1024,8192 --batches 1,8,32 --reps 30 --draft-quantization none,fp8 2>&1 | tee "$out/bench_cycle.log"
fi
if [[ $what == *engine* ]]; then
  # The engine's own step as a user runs it (flashdraft generate: graphs,
  # overlapped scheduling, context buckets) at Qwen3-8B shapes, dummy weights,
  # one request, 15 drafts every step (random weights: tau 1, so decode tok/s
  # is one over the step time), against plain decoding; the shipped
  # tokenizer stands in for Qwen's (the prompt is token ids).
  mkdir -p /tmp/q8/t /tmp/q8/d
  cp .carry/configs/qwen3-8b/config.json models/target/tokenizer.json models/target/tokenizer_config.json /tmp/q8/t/
  cp .carry/configs/qwen3-8b-dflash-b16/config.json /tmp/q8/d/
  for ctx in 1024 8192; do
    ids=$(python3 -c "import random; random.seed($ctx); print('[' + ','.join(str(random.randrange(8000)) for _ in range($ctx)) + ']')")
    for m in plain bf16 fp8; do
      spec=(); [[ $m != plain ]] && spec=(--draft-model /tmp/q8/d --no-adaptive-speculation)
      [[ $m == fp8 ]] && spec+=(--speculative-draft-model-quantization fp8)
      echo -n "prompt $ctx tokens + 400 new, $m: "
      build-gpu/flashdraft generate --model /tmp/q8/t --load-format dummy "${spec[@]}" --prompt-ids "$ids" \
        --max-tokens 400 --temperature 0 --ignore-eos --max-model-len 16384 2>&1 >/dev/null | grep "prompt tokens" \
        | grep -oE "decode [0-9.]+ tok/s|dflash tau [0-9.]+" | tr '\n' ' '
      echo
    done
  done 2>&1 | tee "$out/engine_step.log"
fi
if [[ $what == *peer* ]]; then
  # The peer at the same shapes: transformers plain decode and z-lab's DFlash loop (batch 1).
  python3 tools/peer_transformers_cycle.py --target .carry/configs/qwen3-8b --drafter .carry/configs/qwen3-8b-dflash-b16 \
    --contexts 1024,8192 --reps 20 2>&1 | grep -v Warning | tee "$out/peer_cycle.log"
fi
if [[ $what == *tp* ]]; then
  # Tensor parallelism at Qwen3-32B shapes with a 5-layer drafter of its width (needs 2 GPUs and NCCL).
  for tp in 1 2; do
    NCCL_NVLS_ENABLE=0 build-gpu/bench/bench_cycle --target .carry/configs/qwen3-32b --drafter bench/configs/qwen3-32b-dflash-5l \
      --contexts 1024 --batches 1,32 --reps 20 --tensor-parallel-size $tp 2>&1
  done | tee "$out/bench_cycle_tp.log"
fi
if [[ $what == *timeline* ]]; then
  # GPU idle time between the kernels of a replayed step (CUPTI timeline, bench/kernel_gaps.py):
  # the plain step's graph and the cycle's draft+verify graph (the context write runs eagerly).
  for point in "1024 1" "1024 8" "8192 1"; do
    set -- $point
    CUDA_INJECTION64_PATH=$PWD/build-gpu/bench/libkernel_timeline.so FD_TIMELINE=/tmp/timeline_$1_$2.csv \
      build-gpu/bench/bench_cycle --target .carry/configs/qwen3-8b --drafter .carry/configs/qwen3-8b-dflash-b16 \
      --contexts $1 --batches $2 --reps 20 >/dev/null 2>/tmp/timeline_$1_$2.err || tail -3 /tmp/timeline_$1_$2.err
    python3 bench/kernel_gaps.py /tmp/timeline_$1_$2.csv --top 2 --label "ctx $1 batch $2" $([[ $1$2 == 10241 ]] && echo --by-kernel --phase-end argmax_kernel) \
    | { [[ $1$2 == 10241 ]] && cat || tail -n +3; }
  done 2>&1 | tee "$out/kernel_gaps.txt"
fi
if [[ $what == *overlap* ]]; then
  # Overlapped scheduling on the shipped pair: tokens/s with it on and off
  # (runs interleaved, twice), then how busy the GPU is between a run's first
  # and last kernel (CUPTI timeline, 40 prompts, concurrency 1).
  gen() { build-gpu/flashdraft generate --model models/target --temperature 0 --max-tokens 128 "$@" 2>&1; }
  for c in 1 8 32; do
    for m in plain dflash; do
      spec=(); [[ $m == dflash ]] && spec=(--draft-model models/drafter-full)
      for rep in 1 2; do
        for ov in on off; do
          flag=(); [[ $ov == off ]] && flag=(--disable-overlap-schedule)
          gen "${spec[@]}" "${flag[@]}" --prompts-file tests/fixtures/engine/humaneval.jsonl --concurrency $c \
            | grep "^total" | sed -E "s/^total: 164 requests, [0-9]+ prompt tokens, //; s/^/overlap $ov, $m, c=$c: /" | cut -c1-120
        done
      done
    done
  done 2>&1 | tee "$out/overlap_e2e.log"
  head -40 tests/fixtures/engine/humaneval.jsonl >/tmp/prompts40.jsonl
  for m in plain dflash; do
    spec=(); [[ $m == dflash ]] && spec=(--draft-model models/drafter-full)
    for ov in on off; do
      flag=(); [[ $ov == off ]] && flag=(--disable-overlap-schedule)
      CUDA_INJECTION64_PATH=$PWD/build-gpu/bench/libkernel_timeline.so FD_TIMELINE=/tmp/gen_${m}_${ov}.csv \
        gen "${spec[@]}" "${flag[@]}" --prompts-file /tmp/prompts40.jsonl --concurrency 1 >/dev/null
      python3 bench/kernel_gaps.py /tmp/gen_${m}_${ov}.csv --overall --label "$m, overlap $ov"
    done
  done 2>&1 | tee "$out/overlap_timeline.log"
fi
if [[ $what == *agreement* ]]; then
  # The peer for the CPU-vs-GPU agreement figure: transformers' fp32 vs bf16 greedy output (~8 minutes).
  python3 tools/peer_bf16_agreement.py --model models/target --prompts tests/fixtures/engine/humaneval.jsonl 2>&1 \
    | grep -v Warning | tail -3 | tee "$out/peer_agreement.log"
fi
if [[ $what == *rope* ]]; then
  # transformers' own RoPE tables (tests/fixtures/rope, one tarball back), then the test against them.
  python3 tools/gen_rope_golden.py --out /tmp/rope 2>&1 | tail -12 | tee "$out/rope_gen.log"
  tar czf "$out/rope.tgz" -C /tmp/rope . && cp /tmp/rope/*.json tests/fixtures/rope/
  build-gpu/tests/model/rope_scaling_test 2>&1 | grep -E "^\[  (PASSED|FAILED|SKIPPED)|Failure|^\[ *OK|rope|inv_freq|position" | head -60 \
    | tee "$out/rope_test.log"
fi
if [[ $what == *profile* ]]; then
  # One batch-1 decode step at ctx 1024 under ncu: the sum of its kernel times.
  ncu_decode_sum 1024 "$out/ncu_decode" | tee "$out/ncu_decode_sum.txt"
fi
if [[ $what == *attention* ]]; then
  build-gpu/bench/bench_attention --check 2>&1 | tail -8 | tee "$out/attention_check.log"
  build-gpu/bench/bench_attention --bench --csv "$out/attention_ours.csv" 2>&1 | tail -30 | tee "$out/bench_attention.log"
  python3 bench/attention_sdpa.py --ours "$out/attention_ours.csv" 2>&1 | tail -30 | tee "$out/attention_sdpa.log"
fi
if [[ $what == *scorecard* ]]; then
  # Issue 7's figures in one table (bench/issue7_table.py), every ratio from
  # this one call: eager and replayed decode steps, the sum of a decode step's
  # kernel times under ncu, verify / decode, attention against torch SDPA,
  # prefill, and the CPU/GPU agreement test. Raw logs: scorecard_logs.tgz.
  sc=/tmp/scorecard && rm -rf $sc && mkdir -p $sc && cp "$out/gpu.txt" $sc/
  models=(--target .carry/configs/qwen3-8b --drafter .carry/configs/qwen3-8b-dflash-b16)
  build-gpu/bench/bench_step "${models[@]}" --contexts 1024,16384 --batches 1 --reps 20 >$sc/bench_step.log 2>&1
  build-gpu/bench/bench_cycle "${models[@]}" --contexts 1024,16384 --batches 1 --reps 30 >$sc/bench_cycle.log 2>&1
  for ctx in 1024 16384; do ncu_decode_sum $ctx $sc/ncu_$ctx >$sc/ncu_sum_$ctx.txt; done
  build-gpu/bench/bench_attention --bench --csv $sc/attention_ours.csv >$sc/attention_ours.log 2>&1
  python3 bench/attention_sdpa.py --csv $sc/attention_sdpa.csv >$sc/attention_sdpa.log 2>&1
  (cd build-gpu/tests/engine && ./engine_gpu_tests --gtest_filter=Gpu.GreedyOutputsAgreeWithCpu) >$sc/agreement.log 2>&1
  # The commit that names the table: FD_COMMIT, else .carry/COMMIT (written
  # here before the call: the device copy's own .git can lag the tree it
  # was given: on 2026-12-04 it named the session's first commit, not the
  # sources it ran).
  commit=${FD_COMMIT:-$(cat .carry/COMMIT 2>/dev/null || true)}
  commit=${commit:-"$(git rev-parse --short HEAD 2>/dev/null || echo '?') (the device copy's git; check it)"}
  python3 bench/issue7_table.py $sc --commit "$commit" \
    --date "$(date -u +%F)" | tee "$out/issue7_table.md"
  tar czf "$out/scorecard_logs.tgz" -C $sc .
fi
