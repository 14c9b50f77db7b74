#!/usr/bin/env python3
"""Make the tiny random-weight checkpoints and Hugging Face reference outputs
that tests/model/ checks flashdraft's CPU forward pass against.

Writes, under OUT_DIR (default tests/fixtures):
  tiny-qwen3/  Qwen3ForCausalLM, bf16 weights, tied embeddings, sharded in 3
  tiny-llama/  LlamaForCausalLM, f16 weights, untied lm_head, attention biases
Each holds config.json, generation_config.json, model.safetensors.index.json,
the shards, reference.json (prompts, greedy continuations, where each float
array lives) and reference.bin (raw little-endian float32).

The reference is computed in float32 on the CPU from the *rounded* weights
(bf16 / f16 widened back to f32), which is exactly what flashdraft loads.
Weights are drawn at unit scale (not HF's 0.02 init) so logits have spread and
greedy argmax has clear margins. The tokenizer is not needed: prompts are ids.

Usage: PYTHONUNBUFFERED=1 python3 tools/make_tiny_qwen3.py [OUT_DIR]
Needs torch, transformers (5.x tested) and safetensors.
"""
import json
import os
import sys

import torch
import transformers
from safetensors.torch import save_file

GREEDY_TOKENS = 20


def qwen3_config():
    # Shaped like a real Qwen3 config.json (top-level rope_theta etc.).
    return {
        "architectures": ["Qwen3ForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "head_dim": 16,
        "hidden_act": "silu",
        "hidden_size": 64,
        "initializer_range": 0.02,
        "intermediate_size": 128,
        "max_position_embeddings": 1024,
        "max_window_layers": 3,
        "model_type": "qwen3",
        "num_attention_heads": 4,
        "num_hidden_layers": 3,
        "num_key_value_heads": 2,
        "rms_norm_eps": 1e-06,
        "rope_scaling": None,
        "rope_theta": 1000000.0,
        "sliding_window": None,
        "tie_word_embeddings": True,
        "torch_dtype": "bfloat16",
        "use_cache": True,
        "use_sliding_window": False,
        "vocab_size": 512,
    }


def llama_config():
    return {
        "architectures": ["LlamaForCausalLM"],
        "attention_bias": True,
        "attention_dropout": 0.0,
        "bos_token_id": 1,
        "eos_token_id": [2, 3],
        "head_dim": 16,
        "hidden_act": "silu",
        "hidden_size": 64,
        "initializer_range": 0.02,
        "intermediate_size": 96,
        "max_position_embeddings": 1024,
        "mlp_bias": False,
        "model_type": "llama",
        "num_attention_heads": 4,
        "num_hidden_layers": 2,
        "num_key_value_heads": 1,
        "rms_norm_eps": 1e-05,
        "rope_scaling": None,
        "rope_theta": 10000.0,
        "tie_word_embeddings": False,
        "torch_dtype": "float16",
        "use_cache": True,
        "vocab_size": 520,
    }


def build(cls_name, cfg_dict, store_dtype, seed):
    cfg_cls = getattr(transformers, cls_name.replace("ForCausalLM", "Config"))
    model_cls = getattr(transformers, cls_name)
    hf_cfg = {k: v for k, v in cfg_dict.items() if k != "torch_dtype"}
    config = cfg_cls.from_dict(hf_cfg)
    try:
        config._attn_implementation = "eager"
    except Exception:  # noqa: BLE001 - older/newer setters differ; sdpa on CPU fp32 is fine too
        pass
    torch.manual_seed(seed)
    model = model_cls(config).to(torch.float32).eval()

    # Deterministic re-draw at unit scale, then round to the storage dtype.
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if name.endswith("norm.weight"):
                v = 1.0 + 0.2 * torch.randn(p.shape, generator=gen)
            elif name.endswith(".bias"):
                v = 0.1 * torch.randn(p.shape, generator=gen)
            elif p.dim() == 2 and ("embed_tokens" in name or "lm_head" in name):
                # Tied: a small embedding keeps the residual from being dominated by
                # the input token (else greedy just repeats the last token).
                v = torch.randn(p.shape, generator=gen) * (0.3 if cfg_dict["tie_word_embeddings"] else 1.0)
            elif name.endswith(("o_proj.weight", "down_proj.weight")):
                v = 2.0 * torch.randn(p.shape, generator=gen) / (p.shape[1] ** 0.5)
            else:
                v = torch.randn(p.shape, generator=gen) / (p.shape[1] ** 0.5)
            p.copy_(v.to(store_dtype).to(torch.float32))

    if cfg_dict["tie_word_embeddings"]:
        assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr(), "not tied"

    # The rotary buffer must be HF's float32 formula at our theta (guards against
    # a config key transformers did not read).
    d = cfg_dict["head_dim"]
    want = 1.0 / (cfg_dict["rope_theta"] ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))
    got = model.model.rotary_emb.inv_freq
    assert got.dtype == torch.float32 and torch.allclose(got, want, rtol=1e-6, atol=0), (got, want)
    if not torch.equal(got, want):
        print("note: HF inv_freq differs from the plain formula in the last bits:", (got - want).abs().max())
    return model


def save_checkpoint(model, cfg_dict, store_dtype, out, n_shards):
    os.makedirs(out, exist_ok=True)
    sd = model.state_dict()
    names = sorted(k for k in sd if not (cfg_dict["tie_word_embeddings"] and k == "lm_head.weight"))
    names = [k for k in names if "rotary_emb" not in k]
    files = [f"model-{i + 1:05d}-of-{n_shards:05d}.safetensors" for i in range(n_shards)]
    weight_map, total = {}, 0
    per = (len(names) + n_shards - 1) // n_shards
    for i, f in enumerate(files):
        chunk = names[i * per:(i + 1) * per]
        tensors = {k: sd[k].detach().to(store_dtype).contiguous().clone() for k in chunk}
        save_file(tensors, os.path.join(out, f), metadata={"format": "pt"})
        for k, t in tensors.items():
            weight_map[k] = f
            total += t.numel() * t.element_size()
    with open(os.path.join(out, "model.safetensors.index.json"), "w") as fh:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, fh, indent=2)
        fh.write("\n")
    with open(os.path.join(out, "config.json"), "w") as fh:
        json.dump(cfg_dict, fh, indent=2)
        fh.write("\n")
    gen_cfg = {"bos_token_id": cfg_dict["bos_token_id"], "eos_token_id": cfg_dict["eos_token_id"],
               "do_sample": True, "temperature": 0.6, "top_k": 20, "top_p": 0.95}
    with open(os.path.join(out, "generation_config.json"), "w") as fh:
        json.dump(gen_cfg, fh, indent=2)
        fh.write("\n")


class Blob:
    """Float32 arrays appended to one raw file; JSON records offset (in floats) and shape."""

    def __init__(self):
        self.parts, self.count = [], 0

    def add(self, t):
        t = t.detach().to(torch.float32).contiguous()
        entry = {"offset": self.count, "shape": list(t.shape)}
        self.parts.append(t.reshape(-1))
        self.count += t.numel()
        return entry

    def write(self, path):
        data = torch.cat(self.parts).numpy().astype("<f4")
        data.tofile(path)


def reference(model, cfg_dict, prompt_lens, tap_prompt, seed, out):
    gen = torch.Generator().manual_seed(seed + 1000)
    vocab = cfg_dict["vocab_size"]
    blob, prompts = Blob(), []
    taps = {}
    hooks = [layer.register_forward_hook(
        lambda _m, _i, o, idx=i: taps.__setitem__(idx, (o[0] if isinstance(o, tuple) else o).detach().clone()))
        for i, layer in enumerate(model.model.layers)]
    min_margin = float("inf")
    with torch.no_grad():
        for pi, n in enumerate(prompt_lens):
            ids = torch.randint(0, vocab, (n,), generator=gen)
            taps.clear()
            logits = model(input_ids=ids[None, :], use_cache=False).logits[0]
            assert logits.shape == (n, vocab)
            entry = {"ids": ids.tolist(), "logits": blob.add(logits)}
            if pi == tap_prompt:
                entry["layer_outputs"] = [blob.add(taps[i][0]) for i in range(len(model.model.layers))]
            seq, greedy = ids.tolist(), []
            for _ in range(GREEDY_TOKENS):
                last = model(input_ids=torch.tensor([seq]), use_cache=False).logits[0, -1]
                top2 = torch.topk(last, 2).values
                min_margin = min(min_margin, float(top2[0] - top2[1]))
                nxt = int(torch.argmax(last))
                greedy.append(nxt)
                seq.append(nxt)
            entry["greedy"] = greedy
            prompts.append(entry)
    for h in hooks:
        h.remove()
    inv_freq = blob.add(model.model.rotary_emb.inv_freq)
    blob.write(os.path.join(out, "reference.bin"))
    meta = {
        "inv_freq": inv_freq,
        "generator": "tools/make_tiny_qwen3.py",
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "note": "float32 reference from the stored (rounded) weights; layer_outputs[t] = output of decoder layer t",
        "greedy_min_top2_margin": min_margin,
        "prompts": prompts,
    }
    with open(os.path.join(out, "reference.json"), "w") as fh:
        json.dump(meta, fh)
        fh.write("\n")
    print(f"{out}: prompts {prompt_lens}, greedy min top-2 margin {min_margin:.4f}")
    for p in prompts:
        print("  greedy:", p["greedy"])


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures")
    torch.set_grad_enabled(False)
    print("torch", torch.__version__, "transformers", transformers.__version__)

    cfg = qwen3_config()
    model = build("Qwen3ForCausalLM", cfg, torch.bfloat16, seed=1234)
    out = os.path.join(root, "tiny-qwen3")
    save_checkpoint(model, cfg, torch.bfloat16, out, n_shards=3)
    reference(model, cfg, [1, 6, 40, 210], tap_prompt=2, seed=1234, out=out)

    cfg = llama_config()
    model = build("LlamaForCausalLM", cfg, torch.float16, seed=99)
    out = os.path.join(root, "tiny-llama")
    save_checkpoint(model, cfg, torch.float16, out, n_shards=2)
    reference(model, cfg, [9, 57], tap_prompt=0, seed=99, out=out)


if __name__ == "__main__":
    main()
