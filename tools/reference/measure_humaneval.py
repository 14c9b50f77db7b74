"""Measure DFlash acceptance with the reference loop on HumanEval prompts.

Usage:
  measure_humaneval.py plain   --target DIR --prompts humaneval.jsonl --out plain.json [--shard I/N]
  measure_humaneval.py dflash  --target DIR --drafter DIR --temperature T --prompts ... --out res.json
  measure_humaneval.py compare --plain plain.json [plain2.json ..] --out res.json  (greedy == plain?)
  measure_humaneval.py merge   --parts shard0.json shard1.json .. --out res.json
Prompts are fed raw (completion style, no chat template), tokenized with the target's
tokenizer.json. Everything runs in float64 by default so that batch shape or padding
cannot flip an argmax. Results are rewritten after every prompt, so a run cut short
still leaves what it measured.
"""
import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dflash_loop import dflash_generate, load_drafter, load_target, plain_greedy  # noqa: E402


def load_prompts(path, tokenizer_path, limit=None):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(tokenizer_path)
    rows = [json.loads(line) for line in open(path) if line.strip()]
    if limit:
        rows = rows[:limit]
    return [(r["task_id"], tok.encode(r["prompt"]).ids) for r in rows], tok


def eos_ids_of(target_dir, tok):
    with open(os.path.join(target_dir, "generation_config.json")) as f:
        eos = json.load(f)["eos_token_id"]
    return eos if isinstance(eos, list) else [eos]


def write(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f)
    os.replace(tmp, path)


def summarize(results, block_size):
    steps = [a for r in results for a in r["accepted"]]
    n = max(1, len(steps))
    return {
        "prompts": len(results),
        "steps": len(steps),
        "tau": sum(a + 1 for a in steps) / n,
        "tau_mean_of_prompts": sum(r["tau"] for r in results) / max(1, len(results)),
        # P(a >= i): the share of steps whose i-th draft was accepted, i = 1..B-1.
        "acceptance_by_position": [sum(a >= i for a in steps) / n for i in range(1, block_size)],
        "histogram": [sum(a == i for a in steps) for i in range(block_size)],
        "generated_tokens": sum(len(r["tokens"]) for r in results),
    }


def merge(paths, out_path):
    """Joins the result files of shards of one run (prompt order restored, summary recomputed)."""
    parts = [json.load(open(p)) for p in paths]
    results = sorted((r for p in parts for r in p["results"]), key=lambda r: int(r["task_id"].split("/")[1]))
    meta = {k: v for k, v in parts[0].items() if k not in ("results", "summary", "seconds")}
    block = len(parts[0]["summary"]["acceptance_by_position"]) + 1
    write(out_path, {**meta, "seconds": max(p["seconds"] for p in parts), "shards": len(parts),
                     "summary": summarize(results, block), "results": results})


def compare(plain_paths, out_path):
    """Adds to a greedy DFlash result file: does each output equal the plain greedy output?"""
    plain = {}
    for path in plain_paths:
        plain.update({r["task_id"]: r for r in json.load(open(path))["results"]})
    res = json.load(open(out_path))
    mismatches, checked = [], 0
    for r in res["results"]:
        p = plain.get(r["task_id"])
        if p is None:
            continue
        checked += 1
        r["equals_plain"] = r["tokens"] == p["tokens"]
        if not r["equals_plain"]:
            n = min(len(p["tokens"]), len(r["tokens"]))
            first = next((j for j in range(n) if p["tokens"][j] != r["tokens"][j]), n)
            mismatches.append({"task_id": r["task_id"], "first_difference": first,
                               "plain_min_margin": p["min_margin"]})
    res["summary"]["greedy_equals_plain"] = f"{checked - len(mismatches)}/{checked}"
    res["mismatches"] = mismatches
    write(out_path, res)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["plain", "dflash", "compare", "merge"])
    ap.add_argument("--target")
    ap.add_argument("--drafter")
    ap.add_argument("--prompts")
    ap.add_argument("--shard", default="0/1", help="I/N: only prompts i with i %% N == I")
    ap.add_argument("--out", required=True)
    ap.add_argument("--plain", nargs="*")
    ap.add_argument("--parts", nargs="*", help="merge: the shard result files")
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--max-new", type=int, default=256)
    ap.add_argument("--limit", type=int)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--dtype", default="float64")
    args = ap.parse_args()
    if args.mode == "compare":
        compare(args.plain, args.out)
        return
    if args.mode == "merge":
        merge(args.parts, args.out)
        return
    dtype = getattr(torch, args.dtype)
    if args.device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    prompts, tok = load_prompts(args.prompts, os.path.join(args.target, "tokenizer.json"), args.limit)
    shard, n_shards = (int(v) for v in args.shard.split("/"))
    eos = eos_ids_of(args.target, tok)
    target = load_target(args.target, args.device, dtype)
    meta = {"mode": args.mode, "target": args.target, "max_new": args.max_new, "dtype": args.dtype,
            "temperature": args.temperature, "seed": args.seed, "eos_ids": eos, "torch": torch.__version__}
    t0 = time.time()
    if args.mode == "plain":
        res = []
        for i, (task, ids) in enumerate(prompts):
            if i % n_shards == shard:
                res.append({"task_id": task, "prompt_ids": ids, **plain_greedy(target, ids, args.max_new, eos)})
                write(args.out, {**meta, "seconds": time.time() - t0, "results": res})
        return
    drafter = load_drafter(args.drafter, args.device, dtype)
    meta["drafter"] = args.drafter
    results = []
    for i, (task, ids) in enumerate(prompts):
        if i % n_shards != shard:
            continue
        # Seeded by prompt index, so a sharded run gives the same draws as a whole one.
        gen = torch.Generator(device=args.device).manual_seed(args.seed * 100003 + i)
        r = dflash_generate(target, drafter, ids, args.max_new, args.temperature, eos, gen)
        r["task_id"] = task
        r["prompt_len"] = len(ids)
        results.append(r)
        summary = summarize(results, drafter.block_size)
        write(args.out, {**meta, "seconds": time.time() - t0, "summary": summary, "results": results})
    print(json.dumps({k: v for k, v in summary.items() if k != "histogram"}))


if __name__ == "__main__":
    main()
