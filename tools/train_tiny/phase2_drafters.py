"""Phase 2: the target's greedy continuations of corpus prefixes, then two DFlash drafters.

Usage: python3 phase2_drafters.py TARGET_DIR OUT_DIR [--gen-seconds S] [--train-seconds S]
Writes OUT_DIR/drafter-full/, OUT_DIR/drafter-swa/ (z-lab's DFlashDraftModel format)
and OUT_DIR/phase2.json.

Objective (as SpecForge trains DFlash): per sequence, random anchor positions; each
block is [token at anchor, MASK x (B-1)] at the anchor's positions; the block sees the
target's taps strictly before the anchor (and itself); cross-entropy on block offsets
k >= 1 against the sequence's tokens, weighted by exp(-(k-1)/GAMMA). On generated
sequences anchors lie in the generated part, whose tokens are the target's own greedy
choices, i.e. exactly what verification accepts.
"""
import argparse
import hashlib
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
from dflash_drafter import DFlashDrafter, drafter_config  # noqa: E402
from dflash_loop import TapRecorder  # noqa: E402

SEED = 4321
SEQ = 512
BLOCK = 16
GAMMA = 7.0
TAP_IDS = [0, 2, 4]
DRAFTER_INTERMEDIATE = 768
SLIDING_WINDOW = 64
DRAFTERS = {
    "drafter-full": dict(layer_types=["full_attention", "full_attention"], sliding_window=None),
    "drafter-swa": dict(layer_types=["sliding_attention", "full_attention"], sliding_window=SLIDING_WINDOW),
}
PREFIX_LENS = [16, 32, 64, 128, 192, 256]
GEN_BATCH = 1024
BATCH_GEN, BATCH_CORPUS, ANCHORS = 48, 16, 32
PEAK_LR, MIN_LR, WARMUP = 1.5e-3, 1.5e-4, 200
CORPUS_BYTES = 40_000_000


def encode_stream(tok, texts, eot):
    out = []
    for i in range(0, len(texts), 4096):
        for e in tok.encode_batch(texts[i:i + 4096]):
            out.append(np.asarray(e.ids + [eot], dtype=np.uint16))
    return np.concatenate(out)


def corpus_streams(tok, eot):
    """A deterministic slice of the training files (content-hash order) and the held-out files, tokenized."""
    from corpus import collect

    train, heldout, _ = collect()
    keyed = sorted(train, key=lambda d: hashlib.sha256(d[1].encode()).hexdigest())
    texts, size = [], 0
    for _, text in keyed:
        if size >= CORPUS_BYTES:
            break
        texts.append(text)
        size += len(text)
    return encode_stream(tok, texts, eot), encode_stream(tok, [t for _, t in heldout], eot)


@torch.no_grad()
def greedy_continue(target, prefix, n_new):
    """prefix [G, L] -> [G, L + n_new], greedy, bf16 with a KV cache (training data only)."""
    with torch.autocast("cuda", dtype=torch.bfloat16):
        out = target(input_ids=prefix, use_cache=True, logits_to_keep=1)
        past, nxt = out.past_key_values, out.logits[:, -1].argmax(-1)
        toks = [nxt]
        for _ in range(n_new - 1):
            out = target(input_ids=nxt[:, None], past_key_values=past, use_cache=True)
            past, nxt = out.past_key_values, out.logits[:, -1].argmax(-1)
            toks.append(nxt)
    return torch.cat([prefix, torch.stack(toks, 1)], 1)


def generate_data(target, stream, eot, seconds, gen_batch, seq, rng, log=print):
    """Greedy continuations of corpus prefixes; half the prefixes start at a file start."""
    dev = next(target.parameters()).device
    doc_starts = np.flatnonzero(stream[:-seq] == eot) + 1
    seqs, starts_of_gen = [], []
    t0, b = time.time(), 0
    while time.time() - t0 < seconds:
        L = PREFIX_LENS[b % len(PREFIX_LENS)] if seq > 256 else seq // 4
        half = gen_batch // 2
        st = np.concatenate([rng.choice(doc_starts, half), rng.integers(0, len(stream) - seq, gen_batch - half)])
        prefix = torch.from_numpy(np.stack([stream[s:s + L] for s in st]).astype(np.int64)).to(dev)
        seqs.append(greedy_continue(target, prefix, seq - L).to(torch.int32))
        starts_of_gen += [L] * gen_batch
        b += 1
    data = torch.cat(seqs), torch.tensor(starts_of_gen, device=dev)
    log(f"generated {data[0].shape[0]} sequences of {seq} tokens in {time.time() - t0:.0f}s")
    return data


def make_batch(gen_data, stream_gpu, gen, n_gen, n_corpus, seq):
    seqs, first = gen_data
    dev = seqs.device
    pick = torch.randint(0, seqs.shape[0], (n_gen,), generator=gen, device=dev)
    starts = torch.randint(0, stream_gpu.numel() - seq, (n_corpus,), generator=gen, device=dev)
    corpus = stream_gpu[starts[:, None] + torch.arange(seq, device=dev)]
    x = torch.cat([seqs[pick], corpus]).long()
    # The first allowed anchor: the last prefix token for generated rows, position 1 for corpus rows.
    lo = torch.cat([first[pick] - 1, torch.ones(n_corpus, dtype=torch.long, device=dev)])
    return x, lo


def sample_anchors(lo, seq, n, gen):
    pos = torch.arange(seq, device=lo.device)
    scores = torch.rand(lo.shape[0], seq, generator=gen, device=lo.device)
    scores = scores.masked_fill((pos[None] < lo[:, None]) | (pos[None] > seq - 2), -1.0)
    return scores.topk(n, dim=1).indices.sort(dim=1).values


def block_loss(drafter, taps, x, anchors, embed, mask_id):
    """Weighted CE over block offsets 1..B-1 and per-offset top-1 hits."""
    bt, n = anchors.shape
    seq = x.shape[1]
    offs = torch.arange(1, BLOCK, device=x.device)
    pos = anchors[..., None] + offs  # [bt, n, B-1]
    valid = pos < seq
    labels = torch.gather(x, 1, pos.clamp(max=seq - 1).view(bt, -1)).view(bt, n, BLOCK - 1)
    block = torch.full((bt, n, BLOCK), mask_id, dtype=torch.long, device=x.device)
    block[..., 0] = torch.gather(x, 1, anchors)
    ctx = drafter.project_context(taps)
    hidden = drafter.forward_blocks(ctx, embed[block], anchors)[:, :, 1:]
    logits = hidden @ embed.t()
    ce = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), labels.reshape(-1), reduction="none")
    ce = ce.view(bt, n, BLOCK - 1)
    w = torch.exp(-(offs - 1).float() / GAMMA) * valid
    loss = (ce * w).sum() / w.sum()
    hits = (logits.argmax(-1) == labels) & valid
    return loss, hits, valid


def accept_len(hits, valid):
    """Mean of 1 + leading hits over blocks whose labels are all in range: a tau estimate."""
    full = valid.all(-1)
    lead = torch.cumprod(hits.long(), -1).sum(-1)
    return (lead[full].float() + 1).mean().item()


def lr_at(step, total):
    if step < WARMUP:
        return PEAK_LR * (step + 1) / WARMUP
    prog = min(1.0, (step - WARMUP) / max(1, total - WARMUP))
    return MIN_LR + 0.5 * (PEAK_LR - MIN_LR) * (1 + math.cos(math.pi * prog))


def train_drafters(target, drafters, gen_data, stream_gpu, mask_id, seconds, seq, seed, log=print,
                   batch=(BATCH_GEN, BATCH_CORPUS), anchors_per_seq=ANCHORS, max_steps=None):
    gen = torch.Generator(device=stream_gpu.device).manual_seed(seed)
    embed = target.get_input_embeddings().weight.detach()
    recorder = TapRecorder(target, next(iter(drafters.values())).target_layer_ids)
    opts = {k: torch.optim.AdamW(d.parameters(), lr=PEAK_LR, betas=(0.9, 0.95), weight_decay=0.01)
            for k, d in drafters.items()}
    t0 = time.time()
    total, step, history = max_steps or 10 ** 9, 0, []
    try:
        while step < total:
            x, lo = make_batch(gen_data, stream_gpu, gen, batch[0], batch[1], seq)
            anchors = sample_anchors(lo, seq, anchors_per_seq, gen)
            with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
                target.model(input_ids=x)
                taps = recorder.taps()
            entry = {"step": step + 1}
            for name, d in drafters.items():
                for g in opts[name].param_groups:
                    g["lr"] = lr_at(step, total if total < 10 ** 9 else 10 ** 6)
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    loss, hits, valid = block_loss(d, taps, x, anchors, embed, mask_id)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(d.parameters(), 1.0)
                opts[name].step()
                opts[name].zero_grad(set_to_none=True)
                if (step + 1) % 250 == 0 or step + 1 == total:
                    g_rows = slice(0, batch[0])
                    entry[name] = {"loss": round(loss.item(), 4),
                                   "accept_len_gen": round(accept_len(hits[g_rows], valid[g_rows]), 3),
                                   "acc_by_offset": [round(v, 3) for v in
                                                     ((hits[g_rows].sum((0, 1)) / valid[g_rows].sum((0, 1)).clamp(min=1))
                                                      .tolist())]}
            step += 1
            if step == 20:
                torch.cuda.synchronize()
                t20 = time.time()
            if step == 60 and max_steps is None:
                torch.cuda.synchronize()
                per = (time.time() - t20) / 40
                total = int(60 + (seconds - (time.time() - t0)) / per)
                log(f"{per * 1000:.0f} ms/step -> {total} steps")
            if len(entry) > 1:
                entry["t"] = round(time.time() - t0, 1)
                history.append(entry)
                log(json.dumps(entry))
    finally:
        recorder.remove()
    return {"steps": step, "seconds": time.time() - t0, "history": history}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("target")
    ap.add_argument("out")
    ap.add_argument("--gen-seconds", type=float, default=60)
    ap.add_argument("--train-seconds", type=float, default=300)
    ap.add_argument("--deadline", type=float, help="unix time by which everything must be written")
    args = ap.parse_args()
    t0 = time.time()
    torch.manual_seed(SEED)
    rng = np.random.default_rng(SEED)
    from tokenizers import Tokenizer
    from transformers import AutoModelForCausalLM

    tok = Tokenizer.from_file(os.path.join(args.target, "tokenizer.json"))
    eot, mask_id = tok.token_to_id("<|endoftext|>"), tok.token_to_id("<|mask|>")
    target = AutoModelForCausalLM.from_pretrained(args.target, dtype=torch.bfloat16, attn_implementation="sdpa")
    target = target.cuda().eval().requires_grad_(False)
    with open(os.path.join(args.target, "config.json")) as f:
        tcfg = json.load(f)
    stream, held = corpus_streams(tok, eot)
    print(f"corpus slice: {stream.size / 1e6:.1f}M tokens, {time.time() - t0:.0f}s", flush=True)
    from phase1_target import SEQ as TARGET_SEQ, heldout_loss

    shipped_loss = heldout_loss(target, torch.from_numpy(held.astype(np.int32)).cuda(), TARGET_SEQ)
    print(f"held-out loss of the shipped bf16 target: {shipped_loss:.4f}", flush=True)
    gen_data = generate_data(target, stream, eot, args.gen_seconds, GEN_BATCH, SEQ, rng)
    stream_gpu = torch.from_numpy(stream.astype(np.int32)).cuda()
    if args.deadline:
        args.train_seconds = min(args.train_seconds, args.deadline - time.time() - 30)

    drafters = {}
    for i, (name, spec) in enumerate(DRAFTERS.items()):
        cfg = drafter_config(tcfg, num_layers=len(spec["layer_types"]), intermediate_size=DRAFTER_INTERMEDIATE,
                             mask_token_id=mask_id, target_layer_ids=TAP_IDS, block_size=BLOCK, **spec)
        d = DFlashDrafter(cfg)
        d.init_weights(generator=torch.Generator().manual_seed(SEED + i))
        drafters[name] = d.cuda().train()
    result = train_drafters(target, drafters, gen_data, stream_gpu, mask_id, args.train_seconds, SEQ, SEED)
    report = {"seed": SEED, "train_seconds_budget": args.train_seconds, "generated_sequences": int(gen_data[0].shape[0]), "seq": SEQ, "gamma": GAMMA,
              "anchors_per_seq": ANCHORS, "batch": [BATCH_GEN, BATCH_CORPUS], "tap_ids": TAP_IDS,
              "corpus_slice_tokens": int(stream.size),
              "heldout_loss_shipped_bf16_target": shipped_loss, **result}
    for name, d in drafters.items():
        d.save(os.path.join(args.out, name))
        report[name + "_params"] = sum(p.numel() for p in d.parameters())
    report["t_total"] = time.time() - t0
    with open(os.path.join(args.out, "phase2.json"), "w") as f:
        json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
