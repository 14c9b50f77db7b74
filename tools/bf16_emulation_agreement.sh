#!/usr/bin/env bash
# How many of the 164 HumanEval prompts keep their fp32 greedy output when
# the CPU backend rounds some of the values to bf16 that the CUDA backend
# keeps in bf16? Measures how much each rounding site alone costs issue 7's
# CPU-vs-GPU agreement figure (engine_gpu_tests' GreedyOutputsAgreeWithCpu),
# on the CPU, with no GPU: tools/bf16_emulation.patch (applied to a scratch
# worktree only, never to the product) rounds, by FD_EMUL_BF16:
#   x  : every GEMM's input (norm, attention and silu-glu outputs)
#   y  : every GEMM's output except the logits (q/k/v, o, gate/up, down)
#   kv : q after RoPE and the K/V the paged pool keeps
#   p  : the attention probabilities P.V multiplies
#   H  : with x, the lm head's input left in f32 (every other GEMM input rounded)
# and, to fp16 instead (the attention's sites in capitals: fp16 has 3 more
# mantissa bits than bf16, the same bytes and tensor-core rate):
#   KV : q, K and V in fp16;  KV Qb : K and V in fp16, q in bf16
#   P  : P in fp16
# Usage: bash tools/bf16_emulation_agreement.sh [max-tokens, default 128] [prompts.jsonl]
#   prompts: default the 164 HumanEval prompts; a file of {"question": ...}
#   rows (../shared/datasets/gsm8k_test.jsonl) is taken as prompts, its first 600.
set -euo pipefail
cd "$(dirname "$0")/.."
max_tokens=${1:-128}
prompts=${2:-tests/fixtures/engine/humaneval.jsonl}
work=$(mktemp -d /tmp/fd-bf16-emul.XXXXXX)
trap 'git worktree remove --force "$work/src" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add --detach "$work/src" HEAD >/dev/null
git -C "$work/src" apply "$PWD/tools/bf16_emulation.patch"
cmake -S "$work/src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFLASHDRAFT_CUDA=OFF >/dev/null
ninja -C "$work/build" flashdraft >/dev/null
python3 - "$prompts" "$work/prompts.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
if "prompt" not in rows[0]:
    rows = [{"prompt": r["question"]} for r in rows[:600]]
with open(sys.argv[2], "w") as f:
    for r in rows:
        f.write(json.dumps({"prompt": r["prompt"]}) + "\n")
PY
n=$(wc -l <"$work/prompts.jsonl")
run() {
  FD_EMUL_BF16="$1" "$work/build/flashdraft" generate --model models/target --device cpu --temperature 0 \
    --max-tokens "$max_tokens" --prompts-file "$work/prompts.jsonl" --concurrency 16 \
    --output "$work/$2.jsonl" >/dev/null 2>&1
}
run "" fp32
echo "| rounded sites | prompts identical to fp32 (of $n) |"
echo "|---|---|"
for sites in "x" "y" "kv" "p" "x y kv p" "y kv p" "x kv p" "x y p" "x y kv" "x y" "KV" "P" "x y KV P" "x y KV Qb P" \
  "x y KV Qb p" "x y kv P" "x y kv p H"; do
  run "$sites" emul
  python3 - "$work/fp32.jsonl" "$work/emul.jsonl" "$sites" <<'PY'
import json, sys
a = [json.loads(l)["completion"] for l in open(sys.argv[1])]
b = [json.loads(l)["completion"] for l in open(sys.argv[2])]
print(f"| {sys.argv[3]} | {sum(x == y for x, y in zip(a, b))} |")
PY
done
