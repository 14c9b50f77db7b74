"""Phase 1: corpus -> tokenizer -> Qwen3-architecture target, trained to a wall-clock budget.

Usage: python3 phase1_target.py OUT_DIR [--train-seconds S]
Writes OUT_DIR/target/ (HF directory) and OUT_DIR/phase1.json (corpus manifest summary,
held-out loss, steps, timings). OUT_DIR/corpus_manifest.json lists every file used.
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from build_tokenizer import SPECIALS, train_tokenizer  # noqa: E402
from corpus import collect, write_manifest  # noqa: E402
from target_io import MAX_POSITIONS, SHAPE, generation_config, save_target, target_config  # noqa: E402

SEED = 1234
SEQ = 1024
BATCH = 128
PEAK_LR, MIN_LR, WARMUP = 3e-3, 3e-4, 150
TOKENIZER_SAMPLE_BYTES = 60_000_000
MAX_TRAIN_BYTES = 500_000_000


def tokenize(tok, docs, eot):
    """Concatenate documents, each followed by <|endoftext|>, into one uint16 stream."""
    chunks = []
    for i in range(0, len(docs), 4096):
        encs = tok.encode_batch_fast([t for _, t in docs[i:i + 4096]]) if hasattr(tok, "encode_batch_fast") \
            else tok.encode_batch([t for _, t in docs[i:i + 4096]])
        for e in encs:
            chunks.append(np.asarray(e.ids + [eot], dtype=np.uint16))
    return np.concatenate(chunks)


def lr_at(step, total):
    if step < WARMUP:
        return PEAK_LR * (step + 1) / WARMUP
    prog = min(1.0, (step - WARMUP) / max(1, total - WARMUP))
    return MIN_LR + 0.5 * (PEAK_LR - MIN_LR) * (1 + math.cos(math.pi * prog))


def batch_from(stream, gen, batch, seq):
    starts = torch.randint(0, stream.numel() - seq - 1, (batch,), generator=gen, device=stream.device)
    idx = starts[:, None] + torch.arange(seq, device=stream.device)
    return stream[idx].long()


@torch.no_grad()
def heldout_loss(model, stream, seq, max_windows=256):
    model.eval()
    n = min(max_windows, (stream.numel() - 1) // seq)
    total, count = 0.0, 0
    for i in range(0, n, 32):
        idx = (torch.arange(i, min(n, i + 32), device=stream.device)[:, None] * seq
               + torch.arange(seq, device=stream.device))
        x = stream[idx].long()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=x, labels=x).loss
        total += loss.item() * x.shape[0]
        count += x.shape[0]
    model.train()
    return total / count


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--train-seconds", type=float, default=300)
    ap.add_argument("--deadline", type=float, help="unix time by which everything must be written")
    args = ap.parse_args()
    t0 = time.time()
    torch.manual_seed(SEED)
    os.makedirs(args.out, exist_ok=True)
    report = {"seed": SEED}

    train_docs, heldout_docs, manifest = collect()
    if manifest["train_bytes"] > MAX_TRAIN_BYTES:
        # Deterministic cap: keep files in order of content hash until the budget is used.
        import hashlib
        keyed = sorted(train_docs, key=lambda d: hashlib.sha256(d[1].encode()).hexdigest())
        kept, size = [], 0
        for d in keyed:
            if size >= MAX_TRAIN_BYTES:
                break
            kept.append(d)
            size += len(d[1])
        train_docs = sorted(kept)
        manifest["train_cap_bytes"] = MAX_TRAIN_BYTES
        manifest["train_files_after_cap"] = len(train_docs)
    write_manifest(manifest, train_docs, heldout_docs, os.path.join(args.out, "corpus_manifest.json"))
    report["corpus"] = {k: v for k, v in manifest.items() if k not in ("rule",)}
    report["t_corpus"] = time.time() - t0

    # Tokenizer trained on an evenly spaced deterministic sample of the training files.
    step = max(1, int(sum(len(t) for _, t in train_docs) / TOKENIZER_SAMPLE_BYTES))
    sample = [t for _, t in train_docs[::step]]
    target_dir = os.path.join(args.out, "target")
    tok, special_ids = train_tokenizer(sample, SHAPE["vocab_size"], target_dir, MAX_POSITIONS)
    eot = special_ids["<|endoftext|>"]
    report["special_ids"] = special_ids
    report["t_tokenizer"] = time.time() - t0
    print(f"tokenizer: {tok.get_vocab_size()} tokens, specials {special_ids}, {report['t_tokenizer']:.0f}s", flush=True)

    train_stream = tokenize(tok, train_docs, eot)
    held_stream = tokenize(tok, heldout_docs, eot)
    report["train_tokens"] = int(train_stream.size)
    report["heldout_tokens"] = int(held_stream.size)
    report["bytes_per_token"] = manifest["train_bytes"] / train_stream.size if "train_cap_bytes" not in manifest \
        else sum(len(t) for _, t in train_docs) / train_stream.size
    report["t_tokenize"] = time.time() - t0
    print(f"tokens: train {train_stream.size / 1e6:.1f}M held-out {held_stream.size / 1e6:.2f}M "
          f"({report['bytes_per_token']:.2f} B/token), {report['t_tokenize']:.0f}s", flush=True)

    from transformers import Qwen3Config, Qwen3ForCausalLM

    if args.deadline:
        args.train_seconds = min(args.train_seconds, args.deadline - time.time() - 60)
    report["train_seconds_budget"] = args.train_seconds
    cfg = target_config(eot)
    model = Qwen3ForCausalLM(Qwen3Config.from_dict(cfg)).cuda()
    model.train()
    n_params = sum(p.numel() for p in model.parameters())
    report["params"] = n_params
    print(f"target: {n_params / 1e6:.2f}M parameters", flush=True)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=PEAK_LR, betas=(0.9, 0.95), fused=True)
    train_gpu = torch.from_numpy(train_stream.astype(np.int32)).cuda()
    held_gpu = torch.from_numpy(held_stream.astype(np.int32)).cuda()
    gen = torch.Generator(device="cuda").manual_seed(SEED)

    t_train = time.time()
    total_steps, step, log = 10 ** 9, 0, []
    while step < total_steps:
        for g in opt.param_groups:
            g["lr"] = lr_at(step, total_steps if total_steps < 10 ** 9 else 10 ** 6)
        x = batch_from(train_gpu, gen, BATCH, SEQ)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=x, labels=x).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        step += 1
        if step == 30:
            torch.cuda.synchronize()
            t30 = time.time()
        if step == 80:
            torch.cuda.synchronize()
            per_step = (time.time() - t30) / 50
            total_steps = int(80 + (args.train_seconds - (time.time() - t_train)) / per_step)
            report["step_seconds"] = per_step
            print(f"{per_step * 1000:.0f} ms/step, {BATCH * SEQ / per_step / 1e6:.2f}M tok/s -> {total_steps} steps",
                  flush=True)
        if step % 200 == 0 or step == total_steps:
            entry = {"step": step, "loss": loss.item(), "lr": opt.param_groups[0]["lr"], "t": time.time() - t_train}
            log.append(entry)
            print(json.dumps(entry), flush=True)
    report["steps"] = step
    report["train_tokens_seen"] = step * BATCH * SEQ
    report["t_train"] = time.time() - t_train
    report["log"] = log
    report["heldout_loss"] = heldout_loss(model, held_gpu, SEQ)
    report["train_loss_eval"] = heldout_loss(model, train_gpu[:held_gpu.numel()], SEQ)
    print(f"held-out loss {report['heldout_loss']:.4f} (train sample {report['train_loss_eval']:.4f})", flush=True)

    shards = save_target(model, cfg, generation_config(eot, special_ids["<|im_end|>"]), target_dir)
    report["shards"] = shards
    # Reload through transformers and check the stored bf16 weights give the same logits
    # (rounding the weights only: model.to(bf16) would also round RoPE's inv_freq buffer).
    reloaded = Qwen3ForCausalLM.from_pretrained(target_dir, dtype=torch.bfloat16).cuda().eval()
    with torch.no_grad():
        for p in model.parameters():
            p.data = p.data.to(torch.bfloat16)
    ref = model.eval()
    x = held_gpu[:256].long()[None]
    with torch.no_grad():
        d = (reloaded(input_ids=x).logits.float() - ref(input_ids=x).logits.float()).abs().max().item()
    report["reload_max_logit_diff"] = d
    print(f"reload check: max |logit diff| {d}", flush=True)
    report["t_total"] = time.time() - t0
    with open(os.path.join(args.out, "phase1.json"), "w") as f:
        json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
