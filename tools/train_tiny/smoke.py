"""End-to-end check of the pipeline's code on tiny random models (GPU, under a minute).

Usage: python3 smoke.py WORK_DIR HUMANEVAL
Checks: the target directory round-trips through transformers; RoPE theta is read from
the Qwen3-style config; hook taps equal hidden_states[t+1]; greedy DFlash equals plain
greedy for both drafter kinds; drafter checkpoints round-trip; data generation, drafter
training and phase 3 (measurement + fixtures) run.
"""
import json
import os
import subprocess
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
import phase2_drafters as p2  # noqa: E402
import target_io  # noqa: E402
from build_tokenizer import train_tokenizer  # noqa: E402
from dflash_drafter import DFlashDrafter, drafter_config  # noqa: E402
from dflash_loop import TapRecorder, check_taps, dflash_generate, load_target, plain_greedy  # noqa: E402


def main():
    work, humaneval = sys.argv[1], sys.argv[2]
    torch.manual_seed(0)
    from transformers import Qwen3Config, Qwen3ForCausalLM

    texts = [json.loads(line)["prompt"] + json.loads(line)["canonical_solution"] for line in open(humaneval)]
    models = os.path.join(work, "models")
    tdir = os.path.join(models, "target")
    tok, ids = train_tokenizer(texts * 3, 400, tdir, 2048)
    eot, mask_id = ids["<|endoftext|>"], ids["<|mask|>"]
    target_io.SHAPE.update(hidden_size=64, intermediate_size=128, num_hidden_layers=6, num_attention_heads=4,
                           num_key_value_heads=2, head_dim=16, vocab_size=400)
    cfg = target_io.target_config(eot)
    model = Qwen3ForCausalLM(Qwen3Config.from_dict(cfg))
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2:
                p.normal_(0, 0.5)  # large weights: peaked logits, so greedy margins are clear
    target_io.SHARD_LIMIT = 60_000
    shards = target_io.save_target(model, cfg, target_io.generation_config(eot, ids["<|im_end|>"]), tdir)
    assert len(shards) >= 2, shards
    target = load_target(tdir, "cuda", torch.float64)
    inv = target.model.rotary_emb.inv_freq.double().cpu()
    expect = 1.0 / (1e6 ** (torch.arange(0, 16, 2).double() / 16))
    assert torch.allclose(inv, expect, rtol=1e-6), f"rope theta not read from config: {inv}"
    # Round the weights as stored, but keep RoPE's inv_freq buffer exact (model.to(bf16) would round it too).
    with torch.no_grad():
        for p in model.parameters():
            p.data = p.data.to(torch.bfloat16).double()
    ref = model.double().cuda().eval()
    x = torch.randint(0, 400, (1, 50), device="cuda")
    with torch.no_grad():
        d = (ref(input_ids=x).logits - target(input_ids=x).logits).abs().max().item()
    assert d < 1e-3, f"target reload differs by {d}"  # eager (fp32 softmax) vs sdpa: ~1e-5
    print("target round trip ok; rope theta read ok", flush=True)

    tap_ids = [0, 2, 4]
    rec = TapRecorder(target, tap_ids)
    worst = check_taps(target, rec, x[0].tolist())
    rec.remove()
    assert worst < 1e-12, f"hook taps differ from hidden_states[t+1] by {worst}"
    print("taps == hidden_states[t+1] ok", flush=True)

    prompts = [tok.encode(t[:200]).ids for t in texts[:4]]
    runs = [plain_greedy(target, p, 40, [eot]) for p in prompts]
    single = [r["tokens"] for r in runs]
    print("plain greedy min margins:", [round(r["min_margin"], 4) for r in runs], flush=True)
    for name, spec in p2.DRAFTERS.items():
        dcfg = drafter_config(cfg, num_layers=2, intermediate_size=96, mask_token_id=mask_id,
                              target_layer_ids=tap_ids, **dict(spec, sliding_window=spec["sliding_window"] and 8))
        dr = DFlashDrafter(dcfg)
        dr.init_weights(std=0.3, generator=torch.Generator().manual_seed(1))
        dr.save(os.path.join(models, name))
        dr = DFlashDrafter.load(os.path.join(models, name), "cuda", torch.float64)
        bad = 0
        for i, p in enumerate(prompts):
            r = dflash_generate(target, dr, p, 40, 0.0, [eot])
            if r["tokens"] != single[i]:
                bad += 1
                j = next((k for k in range(min(len(r["tokens"]), len(single[i])))
                          if r["tokens"][k] != single[i][k]), None)
                print(f"{name}: prompt {i} differs at {j}, "
                      f"accepted {r['accepted']}\n dflash {r['tokens']}\n plain  {single[i]}", flush=True)
            g = torch.Generator(device="cuda").manual_seed(i)
            dflash_generate(target, dr, p, 40, 1.0, [eot], g)
        assert bad == 0, f"{name}: greedy DFlash differs from plain greedy on {bad} prompts"
        print(f"{name}: greedy DFlash == plain greedy on {len(prompts)} prompts", flush=True)

    # Self-drafting sanity: a drafter that always proposes the target's own greedy
    # continuation is impossible to build randomly, so instead check acceptance logic
    # with an oracle: verify_block accepts drafts equal to the argmax rows.
    from dflash_loop import verify_block
    rows = torch.randn(16, 400, dtype=torch.float64)
    drafts = rows[:15].argmax(-1).tolist()
    assert verify_block(rows, drafts, 0, None) == (15, int(rows[15].argmax()))
    drafts[3] = (drafts[3] + 1) % 400
    assert verify_block(rows, drafts, 0, None) == (3, int(rows[3].argmax()))
    print("verify_block ok", flush=True)

    # Phase 2 code on the tiny target (bf16, as in training).
    tb = load_target(tdir, "cuda", torch.bfloat16).requires_grad_(False)
    stream = np.concatenate([np.asarray(tok.encode(t).ids + [eot], dtype=np.uint16) for t in texts])
    rng = np.random.default_rng(0)
    data = p2.generate_data(tb, stream, eot, 0.5, 8, 64, rng)
    drs = {}
    for name, spec in p2.DRAFTERS.items():
        dcfg = drafter_config(cfg, num_layers=2, intermediate_size=96, mask_token_id=mask_id,
                              target_layer_ids=tap_ids, **spec)
        drs[name] = DFlashDrafter(dcfg).cuda().train()
        drs[name].init_weights()
    stream_gpu = torch.from_numpy(stream.astype(np.int32)).cuda()
    res = p2.train_drafters(tb, drs, data, stream_gpu, mask_id, 5, 64, 0, batch=(4, 2), anchors_per_seq=4,
                            max_steps=250)
    print("drafter training ran:", json.dumps(res["history"][-1])[:300], flush=True)
    print("PHASE2 CODE OK", flush=True)

    # Phase 3 on the tiny models, 3 prompts.
    subprocess.run([sys.executable, os.path.join(HERE, "phase3_measure.py"), models, humaneval,
                    os.path.join(work, "p3"), "--limit", "3", "--budget", "120"], check=True)
    ref = json.load(open(os.path.join(work, "p3", "fixtures", "reference.json")))
    assert len(ref["traces"]["prompts"]) == 3
    t = json.load(open(os.path.join(work, "p3", "phase3.json")))
    for name in ("drafter-full-T0", "drafter-swa-T0"):
        assert t[name]["greedy_equals_plain"] == "3/3", t[name]
    print("SMOKE OK", flush=True)


if __name__ == "__main__":
    main()
