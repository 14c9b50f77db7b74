"""The training layout (many blocks per pass) must give exactly what inference computes
for each block alone: a drafter trained one way and run the other would silently lose
acceptance. Also checks the sliding window really limits what a query sees.
Run: python3 tools/reference/test_drafter_layout.py   (CPU, a few seconds)
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
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


if __name__ == "__main__":
    print("full", check(["full_attention", "full_attention"], None))
    print("mixed", check(["sliding_attention", "full_attention"], 8))
    print("sliding only", check(["sliding_attention"], 8))
    print("ok")
