"""DFlash drafter in plain PyTorch, in z-lab's checkpoint format (DFLASH.md sections 1 and 3).

One attention code path serves inference (one block after the whole context) and
training (many blocks of one sequence at once): every query and key carries its
position and the block it belongs to (-1 for context rows), and the mask is built
from those, so what is trained is exactly what the reference loop runs.
"""
import json
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

import dflash_config


def compute_dtype(x):
    # Norms and softmax run in at least fp32, like transformers' Qwen3.
    return torch.float64 if x.dtype == torch.float64 else torch.float32


class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        dt = x.dtype
        h = x.to(compute_dtype(x))
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(dt)


def rope_cos_sin(positions, head_dim, theta, dtype):
    """Neox-style RoPE tables as transformers' Qwen3 computes them (fp32, then cast)."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64, device=positions.device).float() / head_dim))
    freqs = positions.float()[..., None] * inv_freq
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], dim=-1)


def apply_rope(x, cos, sin):
    # x [..., heads, n, d]; cos/sin [..., n, d]
    return x * cos.unsqueeze(-3) + rotate_half(x) * sin.unsqueeze(-3)


def build_mask(q_pos, q_blk, k_pos, k_blk, anchor_of_block, window, causal):
    """Boolean [..., Q, K] mask, True = may attend.

    Context keys (k_blk == -1): visible to a block's queries iff the key's position is
    strictly before that block's anchor. Block keys: visible only within the same block,
    all of it unless the layer is causal (then keys at or before the query). A window W
    (sliding layers) also limits keys to positions in (p - W, p + W): (p - W, p] when causal.
    """
    qp = q_pos[..., :, None]
    kp = k_pos[..., None, :]
    qb = q_blk[..., :, None]
    kb = k_blk[..., None, :]
    anchor = torch.gather(anchor_of_block, -1, q_blk).unsqueeze(-1)  # [..., Q, 1]
    ctx_ok = (kb == -1) & (kp < anchor)
    blk_ok = kb == qb
    if causal:
        blk_ok = blk_ok & (kp <= qp)
    ok = ctx_ok | blk_ok
    if window:
        ok = ok & (kp > qp - window) & (kp < qp + window)
    return ok


def attention(q, k, v, mask):
    """q [..., Hq, Q, d], k/v [..., Hk, K, d], mask [..., Q, K] bool."""
    rep = q.shape[-3] // k.shape[-3]
    k = k.repeat_interleave(rep, dim=-3)
    v = v.repeat_interleave(rep, dim=-3)
    ct = compute_dtype(q)
    scores = torch.matmul(q.to(ct), k.to(ct).transpose(-1, -2)) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(~mask.unsqueeze(-3), float("-inf"))
    probs = torch.softmax(scores, dim=-1).to(v.dtype)
    return torch.matmul(probs, v)


class DrafterLayer(nn.Module):
    def __init__(self, cfg, kind):
        super().__init__()
        h, d = cfg["hidden_size"], cfg["head_dim"]
        self.nq, self.nk, self.d = cfg["num_attention_heads"], cfg["num_key_value_heads"], d
        sliding, window, causal = kind
        self.mask_kind = (window if sliding else 0, causal)  # layers of one kind share a mask
        eps = cfg["rms_norm_eps"]
        self.self_attn = nn.Module()
        self.self_attn.q_proj = nn.Linear(h, self.nq * d, bias=False)
        self.self_attn.k_proj = nn.Linear(h, self.nk * d, bias=False)
        self.self_attn.v_proj = nn.Linear(h, self.nk * d, bias=False)
        self.self_attn.o_proj = nn.Linear(self.nq * d, h, bias=False)
        self.self_attn.q_norm = RMSNorm(d, eps)
        self.self_attn.k_norm = RMSNorm(d, eps)
        self.mlp = nn.Module()
        self.mlp.gate_proj = nn.Linear(h, cfg["intermediate_size"], bias=False)
        self.mlp.up_proj = nn.Linear(h, cfg["intermediate_size"], bias=False)
        self.mlp.down_proj = nn.Linear(cfg["intermediate_size"], h, bias=False)
        self.input_layernorm = RMSNorm(h, eps)
        self.post_attention_layernorm = RMSNorm(h, eps)

    def heads(self, x, n):
        return x.view(*x.shape[:-1], n, self.d).transpose(-2, -3)  # [..., n, T, d]

    def forward(self, x, ctx, rope_q, rope_ctx, mask):
        a = self.self_attn
        y = self.input_layernorm(x)
        q = apply_rope(a.q_norm(self.heads(a.q_proj(y), self.nq)), *rope_q)
        kb = apply_rope(a.k_norm(self.heads(a.k_proj(y), self.nk)), *rope_q)
        vb = self.heads(a.v_proj(y), self.nk)
        kc = apply_rope(a.k_norm(self.heads(a.k_proj(ctx), self.nk)), *rope_ctx)
        vc = self.heads(a.v_proj(ctx), self.nk)
        out = attention(q, torch.cat([kc, kb], -2), torch.cat([vc, vb], -2), mask)
        out = out.transpose(-2, -3).reshape(*x.shape[:-1], self.nq * self.d)
        x = x + a.o_proj(out)
        m = self.mlp
        y = self.post_attention_layernorm(x)
        return x + m.down_proj(F.silu(m.gate_proj(y)) * m.up_proj(y))


class DFlashDrafter(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        h = cfg["hidden_size"]
        self.mask_token_id = dflash_config.mask_token_id(cfg)
        self.target_layer_ids = dflash_config.target_layer_ids(cfg)
        self.block_size = dflash_config.block_size(cfg)
        self.rope_theta = dflash_config.rope_theta(cfg)
        k = len(self.target_layer_ids)
        self.fc = nn.Linear(k * h, h, bias=False)  # drafters are of the target's width
        self.hidden_norm = RMSNorm(h, cfg["rms_norm_eps"])
        self.layers = nn.ModuleList([DrafterLayer(cfg, kind) for kind in dflash_config.layer_kinds(cfg)])
        self.norm = RMSNorm(h, cfg["rms_norm_eps"])

    def init_weights(self, std=0.02, generator=None):
        for name, p in self.named_parameters():
            if name.endswith("norm.weight"):
                nn.init.ones_(p)
            else:
                with torch.no_grad():
                    p.normal_(0.0, std, generator=generator)

    def project_context(self, taps):
        """taps [..., S, K*H_target] -> ctx [..., S, H]; computed once, shared by all layers."""
        return self.hidden_norm(self.fc(taps))

    def forward_hidden(self, block_emb, q_pos, q_blk, ctx, k_ctx_pos, anchors):
        """block_emb [..., Q, H] at q_pos, blocks q_blk; ctx [..., S, H] at k_ctx_pos.

        anchors [..., nblocks]: each block's anchor position. Returns normed hidden [..., Q, H].
        """
        c = self.cfg
        k_pos = torch.cat([k_ctx_pos, q_pos], -1)
        k_blk = torch.cat([torch.full_like(k_ctx_pos, -1), q_blk], -1)
        masks = {}
        for layer in self.layers:
            if layer.mask_kind not in masks:
                masks[layer.mask_kind] = build_mask(q_pos, q_blk, k_pos, k_blk, anchors, *layer.mask_kind)
        theta = self.rope_theta
        rope_q = rope_cos_sin(q_pos, c["head_dim"], theta, block_emb.dtype)
        rope_ctx = rope_cos_sin(k_ctx_pos, c["head_dim"], theta, block_emb.dtype)
        x = block_emb
        for layer in self.layers:
            x = layer(x, ctx, rope_q, rope_ctx, masks[layer.mask_kind])
        return self.norm(x)

    def forward_blocks(self, ctx, block_emb, anchors):
        """Training layout: many blocks of one sequence in one pass.

        ctx [Bt, T, H] for positions 0..T-1, block_emb [Bt, N, bs, H], anchors [Bt, N].
        Block n sees only ctx rows before anchors[n] and its own block. Returns [Bt, N, bs, H].
        """
        bt, n, bs, h = block_emb.shape
        dev = ctx.device
        q_pos = (anchors[..., None] + torch.arange(bs, device=dev)).reshape(bt, n * bs)
        q_blk = torch.arange(n, device=dev).repeat_interleave(bs).expand(bt, -1).contiguous()
        k_ctx_pos = torch.arange(ctx.shape[1], device=dev).expand(bt, -1).contiguous()
        hidden = self.forward_hidden(block_emb.reshape(bt, n * bs, h), q_pos, q_blk, ctx, k_ctx_pos, anchors)
        return hidden.view(bt, n, bs, h)

    def draft_logits(self, ctx, block_emb, p0, lm_head_weight):
        """Inference: one block at positions p0..p0+B-1 after S context rows at 0..S-1.

        ctx [S, H] (project_context output), block_emb [B, H]. Returns logits [B-1, V]
        for positions p0+1..p0+B-1 (rows 1.. of the block).
        """
        dev = ctx.device
        s, b = ctx.shape[0], block_emb.shape[0]
        q_pos = torch.arange(p0, p0 + b, device=dev)
        q_blk = torch.zeros(b, dtype=torch.long, device=dev)
        k_ctx_pos = torch.arange(s, device=dev)
        anchors = torch.tensor([p0], device=dev)
        hidden = self.forward_hidden(block_emb, q_pos, q_blk, ctx, k_ctx_pos, anchors)
        logits = hidden[1:] @ lm_head_weight.t()
        cap = self.cfg.get("final_logit_softcapping")
        if cap:
            logits = torch.tanh(logits / cap) * cap
        return logits

    # ---- checkpoint I/O (DFLASH.md section 1: no embedding, no lm_head, no "model." prefix) ----
    def save(self, out_dir, dtype=torch.bfloat16):
        from safetensors.torch import save_file

        os.makedirs(out_dir, exist_ok=True)
        tensors = {k: v.detach().to(dtype).contiguous().cpu() for k, v in self.state_dict().items()}
        save_file(tensors, os.path.join(out_dir, "model.safetensors"), metadata={"format": "pt"})
        with open(os.path.join(out_dir, "config.json"), "w") as f:
            json.dump(self.cfg, f, indent=2)
            f.write("\n")

    @classmethod
    def load(cls, ckpt_dir, device="cpu", dtype=torch.float32):
        from safetensors.torch import load_file

        with open(os.path.join(ckpt_dir, "config.json")) as f:
            cfg = json.load(f)
        if cfg.get("architectures") != ["DFlashDraftModel"]:
            raise ValueError(f"{ckpt_dir}/config.json: architectures is {cfg.get('architectures')}, expected ['DFlashDraftModel']")
        model = cls(cfg)
        state = load_file(os.path.join(ckpt_dir, "model.safetensors"))
        missing, unexpected = model.load_state_dict(state, strict=False)
        if missing or unexpected:
            raise ValueError(f"{ckpt_dir}: missing tensors {missing}, unexpected tensors {unexpected}")
        return model.to(device=device, dtype=dtype).eval()


def drafter_config(target_cfg, *, num_layers, layer_types, sliding_window, intermediate_size,
                   mask_token_id, target_layer_ids, block_size=16):
    """z-lab's DFlashDraftModel config.json for a drafter of the target's width."""
    t = target_cfg
    return {
        "architectures": ["DFlashDraftModel"],
        "model_type": "qwen3",
        "block_size": block_size,
        "num_target_layers": t["num_hidden_layers"],
        "dflash_config": {"mask_token_id": mask_token_id, "target_layer_ids": list(target_layer_ids)},
        "hidden_size": t["hidden_size"],
        "intermediate_size": intermediate_size,
        "num_hidden_layers": num_layers,
        "num_attention_heads": t["num_attention_heads"],
        "num_key_value_heads": t["num_key_value_heads"],
        "head_dim": t["head_dim"],
        "hidden_act": "silu",
        "rms_norm_eps": t["rms_norm_eps"],
        "rope_theta": t["rope_theta"],
        "rope_scaling": None,
        "attention_bias": False,
        "attention_dropout": 0.0,
        "max_position_embeddings": t["max_position_embeddings"],
        "vocab_size": t["vocab_size"],
        "layer_types": list(layer_types),
        "sliding_window": sliding_window,
        "use_sliding_window": sliding_window is not None,
        "max_window_layers": num_layers,
        "tie_word_embeddings": False,
        "initializer_range": 0.02,
        "bos_token_id": t.get("bos_token_id"),
        "eos_token_id": t.get("eos_token_id"),
        "torch_dtype": "bfloat16",
    }
