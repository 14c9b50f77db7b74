"""The training layout (many blocks per pass) must give exactly what inference computes
for each block alone: a drafter trained one way and run the other would silently lose
acceptance. Also checks the sliding window really limits what a query sees.
Run: python3 tools/reference/test_drafter_layout.py   (CPU, a few seconds)
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dflash_config  # noqa: E402
from dflash_drafter import DFlashDrafter, drafter_config  # noqa: E402

TARGET = dict(num_hidden_layers=4, hidden_size=32, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
              rms_norm_eps=1e-6, rope_theta=10000.0, max_position_embeddings=256, vocab_size=50)


def make(layer_types, window):
    cfg = drafter_config(TARGET, num_layers=len(layer_types), layer_types=layer_types, sliding_window=window,
                         intermediate_size=48, mask_token_id=49, target_layer_ids=[0, 2], block_size=6)
    d = DFlashDrafter(cfg).double()
    d.init_weights(std=0.3, generator=torch.Generator().manual_seed(1))
    return d


def check(layer_types, window):
    torch.manual_seed(0)
    d = make(layer_types, window)
    T, H, bs = 40, 32, 6
    taps = torch.randn(2, T, 2 * H, dtype=torch.float64)
    ctx = d.project_context(taps)
    anchors = torch.tensor([[3, 17, 30], [1, 9, 33]])
    emb = torch.randn(2, 3, bs, H, dtype=torch.float64)
    batched = d.forward_blocks(ctx, emb, anchors)
    worst = 0.0
    for b in range(2):
        for n in range(3):
            a = int(anchors[b, n])
            single = d.forward_hidden(emb[b, n], torch.arange(a, a + bs), torch.zeros(bs, dtype=torch.long),
                                      ctx[b, :a], torch.arange(a), torch.tensor([a]))
            worst = max(worst, (single - batched[b, n]).abs().max().item())
    assert worst < 1e-12, f"{layer_types}: training layout differs from inference by {worst}"
    # The context must matter, and for sliding layers only inside the window.
    a = 30
    base = d.forward_hidden(emb[0, 2], torch.arange(a, a + bs), torch.zeros(bs, dtype=torch.long),
                            ctx[0, :a], torch.arange(a), torch.tensor([a]))
    far = ctx[0, :a].clone()
    far[:5] += 1.0  # positions 0..4: outside a window of 8 for every query at 30..35
    moved = d.forward_hidden(emb[0, 2], torch.arange(a, a + bs), torch.zeros(bs, dtype=torch.long),
                             far, torch.arange(a), torch.tensor([a]))
    diff = (moved - base).abs().max().item()
    if all(t == "sliding_attention" for t in layer_types):
        assert diff < 1e-12, f"sliding layers saw context outside their window ({diff})"
    else:
        assert diff > 1e-6, "full-attention layer ignored far context"
    # Inside the block: sliding layers are causal, full layers bidirectional.
    later = emb[0, 2].clone()
    later[4:] += 1.0
    moved = d.forward_hidden(later, torch.arange(a, a + bs), torch.zeros(bs, dtype=torch.long),
                             ctx[0, :a], torch.arange(a), torch.tensor([a]))
    early = (moved[:4] - base[:4]).abs().max().item()
    if all(t == "sliding_attention" for t in layer_types):
        assert early < 1e-12, f"sliding layer is not causal inside the block ({early})"
    else:
        assert early > 1e-6, "full-attention layer is not bidirectional inside the block"
    return worst


def check_noncausal_window():
    """use_swa with causal false (one layer): block row i sees rows i-2..i+2 of its block, no further."""
    cfg = drafter_config(TARGET, num_layers=1, layer_types=["full_attention"], sliding_window=None,
                         intermediate_size=48, mask_token_id=49, target_layer_ids=[0, 2], block_size=8)
    cfg["dflash_config"].update({"use_swa": True, "swa_window_size": 3, "causal": False})
    d = DFlashDrafter(cfg).double()
    d.init_weights(std=0.3, generator=torch.Generator().manual_seed(2))
    a, bs = 20, 8
    ctx = d.project_context(torch.randn(a, 2 * 32, dtype=torch.float64))
    emb = torch.randn(bs, 32, dtype=torch.float64)

    def run(e):
        return d.forward_hidden(e, torch.arange(a, a + bs), torch.zeros(bs, dtype=torch.long), ctx, torch.arange(a),
                                torch.tensor([a]))
    base = run(emb)
    for moved_row, sees in ((5, True), (6, False), (1, True), (0, False)):  # seen from row 3 (window 3)
        e = emb.clone()
        e[moved_row] += 1.0
        diff = (run(e)[3] - base[3]).abs().max().item()
        assert (diff > 1e-6) == sees, f"row 3 and row {moved_row}: diff {diff}"


def check_published_layouts():
    """The published drafter configs resolve to the kinds src/model/dflash_config.h gives them."""
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "fixtures", "configs")
    want = {
        "qwen3-8b-dflash-b16": ([(False, 0, False)] * 5, 16, [1, 9, 17, 25, 33]),
        "qwen3.6-27b-dflash": ([(True, 2048, True)] * 4 + [(False, 0, False)], 16, [1, 16, 31, 46, 61]),
    }
    for name, (kinds, block, taps) in want.items():
        with open(os.path.join(root, name, "config.json")) as f:
            cfg = json.load(f)
        assert dflash_config.layer_kinds(cfg) == kinds, name
        assert dflash_config.block_size(cfg) == block and dflash_config.target_layer_ids(cfg) == taps, name
        assert dflash_config.rope_theta(cfg) > 0, name
    moved = dict(cfg)
    moved["dflash_config"] = dict(cfg["dflash_config"], block_size=moved.pop("block_size"))
    moved["rope_parameters"] = {"rope_type": "default", "rope_theta": moved.pop("rope_theta")}
    moved["is_causal"] = False
    assert dflash_config.block_size(moved) == 16 and dflash_config.rope_theta(moved) == 1e7
    assert dflash_config.layer_kinds(moved) == [(True, 2048, False)] * 4 + [(False, 0, False)]


if __name__ == "__main__":
    print("full", check(["full_attention", "full_attention"], None))
    print("mixed", check(["sliding_attention", "full_attention"], 8))
    print("sliding only", check(["sliding_attention"], 8))
    check_noncausal_window()
    print("non-causal window ok")
    check_published_layouts()
    print("published layouts ok")
    print("ok")
