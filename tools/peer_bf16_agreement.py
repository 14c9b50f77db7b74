#!/usr/bin/env python3
"""How often does a bf16 model's greedy output equal the same model's fp32
output? The peer figure for flashdraft's CPU (fp32) vs GPU (bf16) agreement
(engine_gpu_tests' GreedyOutputsAgreeWithCpu, issue 7's goal of 95%):
Hugging Face transformers, the shipped target, the same 164 HumanEval prompts
and 128 new tokens, greedy, one prompt at a time with a KV cache, fp32 vs
bf16 on the same GPU.

  python3 tools/peer_bf16_agreement.py --model models/target \
      --prompts tests/fixtures/engine/humaneval.jsonl [--max-new 128] [--limit N]
"""
import argparse
import os
import sys
import time

import torch
from transformers import AutoModelForCausalLM

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference"))
from measure_humaneval import eos_ids_of, load_prompts  # noqa: E402


def greedy(model, ids, max_new, eos):
    out = model.generate(torch.tensor([ids], device=model.device), max_new_tokens=max_new, do_sample=False,
                         eos_token_id=eos, pad_token_id=eos[0], use_cache=True)
    return out[0, len(ids):].tolist()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--prompts", required=True)
    ap.add_argument("--max-new", type=int, default=128)
    ap.add_argument("--limit", type=int, default=0)
    a = ap.parse_args()
    rows, tok = load_prompts(a.prompts, f"{a.model}/tokenizer.json", a.limit or None)
    prompts = [ids for _, ids in rows]
    eos = eos_ids_of(a.model, tok)
    outs = {}
    for name, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        model = AutoModelForCausalLM.from_pretrained(a.model, dtype=dtype).to("cuda").eval()
        t0 = time.time()
        with torch.no_grad():
            outs[name] = [greedy(model, p, a.max_new, eos) for p in prompts]
        print(f"{name}: {len(prompts)} prompts in {time.time() - t0:.1f} s", flush=True)
    same, first = 0, []
    for x, y in zip(outs["fp32"], outs["bf16"]):
        if x == y:
            same += 1
            continue
        j = 0
        while j < min(len(x), len(y)) and x[j] == y[j]:
            j += 1
        first.append(j)
    n = len(prompts)
    print(f"transformers {__import__('transformers').__version__}, {torch.cuda.get_device_name()}: "
          f"{same} of {n} prompts identical in fp32 and bf16 ({100.0 * same / n:.1f}%), greedy, "
          f"{a.max_new} new tokens; the others first differ after {sum(first) / max(1, len(first)):.1f} tokens "
          f"on average")


if __name__ == "__main__":
    main()
