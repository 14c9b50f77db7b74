"""Reference outputs of the shipped models for the C++ engine's tests (tests/fixtures/dflash/).

Usage: make_fixtures.py MODELS_DIR OUT_DIR --humaneval humaneval.jsonl
           --trace drafter-full=RESULTS.json --trace drafter-swa=RESULTS.json --plain PLAIN.json
Computes in float64 from the stored bf16 weights (widened exactly), stores float32.
Format: see tests/fixtures/dflash/README.md.
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dflash_loop import TapRecorder, load_drafter, load_target, target_forward  # noqa: E402

TRACE_PROMPTS = 10


class Floats:
    """float32 arrays appended to one raw little-endian file; JSON keeps offset (in floats) and shape."""

    def __init__(self):
        self.parts, self.count = [], 0

    def add(self, t):
        a = np.ascontiguousarray(t.detach().cpu().double().numpy().astype("<f4"))
        entry = {"offset": self.count, "shape": list(a.shape)}
        self.parts.append(a.ravel())
        self.count += a.size
        return entry

    def write(self, path):
        np.concatenate(self.parts).astype("<f4").tofile(path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("models")
    ap.add_argument("out")
    ap.add_argument("--humaneval", required=True)
    ap.add_argument("--plain", required=True)
    ap.add_argument("--trace", action="append", default=[])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = ap.parse_args()
    if args.device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
    from tokenizers import Tokenizer

    tdir = os.path.join(args.models, "target")
    tok = Tokenizer.from_file(os.path.join(tdir, "tokenizer.json"))
    target = load_target(tdir, args.device, torch.float64)
    drafters = {n: load_drafter(os.path.join(args.models, n), args.device, torch.float64)
                for n in ("drafter-full", "drafter-swa")}
    tap_ids = drafters["drafter-full"].target_layer_ids
    rec = TapRecorder(target, tap_ids)
    fl = Floats()
    he = [json.loads(line) for line in open(args.humaneval) if line.strip()]
    ref = {"generator": "tools/reference/make_fixtures.py", "torch": torch.__version__,
           "note": "float64 compute from the stored bf16 weights, stored as float32; tap t = output of "
                   "target decoder layer t", "models": ["target", "drafter-full", "drafter-swa"]}

    # 1. Target logits.
    texts = ["def fibonacci(n):\n", he[2]["prompt"],
             "<|im_start|>user\nWrite a Python function that adds two numbers.<|im_end|>\n<|im_start|>assistant\n"]
    prompts = []
    for i, text in enumerate(texts):
        ids = tok.encode(text).ids
        logits, taps = target_forward(target, rec, ids)
        entry = {"text": text, "ids": ids, "logits_last": fl.add(logits[-1])}
        if i == 0:
            entry["logits_all"] = fl.add(logits)
            entry["taps"] = fl.add(taps)
        seq, greedy = list(ids), []
        for _ in range(16):
            lg, _ = target_forward(target, rec, seq)
            greedy.append(int(lg[-1].argmax()))
            seq.append(greedy[-1])
        entry["greedy16"] = greedy
        prompts.append(entry)
    ref["target"] = {"tap_ids": tap_ids, "prompts": prompts}

    # 2. Drafter logits for one context (a HumanEval prompt, longer than the window) and block.
    ctx_ids = tok.encode(he[0]["prompt"]).ids
    logits, taps = target_forward(target, rec, ctx_ids)
    anchor = int(logits[-1].argmax())
    dref = {"context_ids": ctx_ids, "taps": fl.add(taps), "anchor": anchor, "p0": len(ctx_ids)}
    embed = target.get_input_embeddings().weight
    lm_head = target.get_output_embeddings().weight
    for name, d in drafters.items():
        block = [anchor] + [d.mask_token_id] * (d.block_size - 1)
        dl = d.draft_logits(d.project_context(taps), embed[torch.tensor(block, device=embed.device)], len(ctx_ids),
                            lm_head)
        top = dl.topk(2, dim=-1).values
        dref[name] = {"block_ids": block, "logits": fl.add(dl), "drafts": dl.argmax(-1).tolist(),
                      "min_top2_margin": float((top[:, 0] - top[:, 1]).min())}
    ref["drafter"] = dref

    # 3. Greedy traces: plain greedy tokens and per-step accepted counts, first prompts of HumanEval.
    plain = sorted(json.load(open(args.plain))["results"], key=lambda r: int(r["task_id"].split("/")[1]))
    plain = plain[:TRACE_PROMPTS]
    traces = [{"task_id": p["task_id"], "prompt_ids": p["prompt_ids"], "greedy": p["tokens"],
               "greedy_min_margin": p["min_margin"]} for p in plain]
    for spec in args.trace:
        name, path = spec.split("=", 1)
        res = json.load(open(path))
        by_task = {r["task_id"]: r for r in res["results"]}
        for t in traces:
            r = by_task.get(t["task_id"])
            if r is None:
                continue
            t[name] = {"accepted": r["accepted"], "tau": r["tau"], "equals_plain": r["tokens"] == t["greedy"],
                       "min_drafter_margin": r["min_drafter_margin"], "min_target_margin": r["min_target_margin"]}
    ref["traces"] = {"max_new": 256, "block_size": 16, "temperature": 0, "prompts": traces}
    rec.remove()
    os.makedirs(args.out, exist_ok=True)
    fl.write(os.path.join(args.out, "reference.bin"))
    with open(os.path.join(args.out, "reference.json"), "w") as f:
        json.dump(ref, f, indent=1)
    print(f"fixtures: {fl.count * 4 / 1e6:.2f} MB of floats")


if __name__ == "__main__":
    with torch.no_grad():
        main()
