#!/usr/bin/env python3
"""The peer a user can run here, for bench/bench_cycle's table (issue 8): Hugging
Face transformers at the same dummy shapes, batch 1.

  python3 tools/peer_transformers_cycle.py --target DIR --drafter DIR [--contexts 1024,8192] [--reps 20]

  plain step  one cached decode step of transformers' model (sdpa attention,
              DynamicCache), argmax read on the host
  cycle       z-lab's DFlash loop as its transformers code runs it: the drafter
              (tools/reference/dflash_drafter.py, z-lab's layout) over the
              context rows and one block of anchor + 15 masks, the target's lm
              head over the 15 draft rows, argmax to the host; the target
              verifies the 16-token block with the cache and its hidden states
              out; acceptance on the host; the accepted rows' taps projected by
              the drafter's fc; the cache cropped back

Random bf16 weights of the configs' exact shapes: random drafts are rejected,
so this times a cycle, not the acceptance (as bench_cycle does). Each figure
is the median of `reps` host-timed steps that end in a synchronize. Prints one
table row per context, with the cycle / plain ratio.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference"))
from dflash_drafter import DFlashDrafter  # noqa: E402


def build_target(path):
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = AutoConfig.from_pretrained(path)
    cfg._attn_implementation = "sdpa"
    torch.set_default_dtype(torch.bfloat16)
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(cfg)
    torch.set_default_dtype(torch.float32)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.fill_(1.0)
            else:
                p.normal_(0.0, 0.02)
    return model.eval()


def build_drafter(path):
    with open(os.path.join(path, "config.json")) as f:
        cfg = json.load(f)
    with torch.device("cuda"):
        d = DFlashDrafter(cfg)
    d.init_weights()
    return d.to(torch.bfloat16).eval()


def timed(fn, reps, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


@torch.no_grad()
def measure(target, drafter, context, reps):
    from transformers import DynamicCache

    vocab = target.config.vocab_size
    prompt = torch.randint(0, vocab, (1, context), device="cuda")
    cache = DynamicCache(config=target.config)
    out = target(input_ids=prompt, past_key_values=cache, use_cache=True, output_hidden_states=True)
    taps_ids = [t + 1 for t in drafter.target_layer_ids]  # hidden_states[t + 1] = output of layer t
    taps = torch.cat([out.hidden_states[i][0] for i in taps_ids], -1)
    ctx = drafter.project_context(taps)
    tok = int(out.logits[0, -1].argmax())
    embed = target.get_input_embeddings().weight
    lm_head = target.get_output_embeddings().weight
    block = drafter.block_size

    def plain():
        o = target(input_ids=torch.tensor([[tok]], device="cuda"), past_key_values=cache, use_cache=True)
        int(o.logits[0, -1].argmax())
        cache.crop(context)  # back to the same context for the next rep

    plain_ms = timed(plain, reps)

    def cycle():
        nonlocal ctx
        p0 = context
        ids = torch.tensor([tok] + [drafter.mask_token_id] * (block - 1), device="cuda")
        drafts = drafter.draft_logits(ctx[:p0], embed[ids], p0, lm_head).argmax(-1).tolist()
        o = target(input_ids=torch.tensor([[tok] + drafts], device="cuda"), past_key_values=cache,
                   use_cache=True, output_hidden_states=True)
        verdict = o.logits[0].argmax(-1).tolist()
        accepted = 0
        while accepted < len(drafts) and drafts[accepted] == verdict[accepted]:
            accepted += 1
        new_taps = torch.cat([o.hidden_states[i][0, :accepted + 1] for i in taps_ids], -1)
        ctx = torch.cat([ctx[:p0], drafter.project_context(new_taps)], 0)
        cache.crop(p0)  # back to the same context for the next rep

    cycle_ms = timed(cycle, reps)
    return plain_ms, cycle_ms


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", required=True)
    ap.add_argument("--drafter", required=True)
    ap.add_argument("--contexts", default="1024,8192")
    ap.add_argument("--reps", type=int, default=20)
    a = ap.parse_args()
    import transformers

    torch.manual_seed(0)
    target = build_target(a.target)
    drafter = build_drafter(a.drafter)
    print(f"peer: transformers {transformers.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}, "
          f"batch 1, bf16, sdpa, DynamicCache")
    print("| ctx | plain step ms | cycle ms | cycle / plain |")
    print("|---|---|---|---|")
    for c in [int(x) for x in a.contexts.split(",")]:
        p, cy = measure(target, drafter, c, a.reps)
        print(f"| {c} | {p:.2f} | {cy:.2f} | {cy / p:.2f} |", flush=True)


if __name__ == "__main__":
    main()
