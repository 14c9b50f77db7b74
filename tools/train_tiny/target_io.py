"""The target's shape and its Hugging Face directory (config.json shaped like Qwen3's own)."""
import json
import os

SHARD_LIMIT = 13_000_000  # bytes per shard; the project caps safetensors files at 15 MB

SHAPE = dict(hidden_size=384, intermediate_size=1024, num_hidden_layers=6,
             num_attention_heads=6, num_key_value_heads=2, head_dim=64, vocab_size=8192)
MAX_POSITIONS = 2048


def target_config(eot_id):
    # Field for field like Qwen3's config.json (top-level rope_theta, rope_scaling null),
    # not transformers 5's rewritten form, so engines see what real checkpoints have.
    return {
        "architectures": ["Qwen3ForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": eot_id,
        "eos_token_id": eot_id,
        "head_dim": SHAPE["head_dim"],
        "hidden_act": "silu",
        "hidden_size": SHAPE["hidden_size"],
        "initializer_range": 0.02,
        "intermediate_size": SHAPE["intermediate_size"],
        "max_position_embeddings": MAX_POSITIONS,
        "max_window_layers": SHAPE["num_hidden_layers"],
        "model_type": "qwen3",
        "num_attention_heads": SHAPE["num_attention_heads"],
        "num_hidden_layers": SHAPE["num_hidden_layers"],
        "num_key_value_heads": SHAPE["num_key_value_heads"],
        "rms_norm_eps": 1e-06,
        "rope_scaling": None,
        "rope_theta": 1000000,
        "sliding_window": None,
        "tie_word_embeddings": True,
        "torch_dtype": "bfloat16",
        "use_cache": True,
        "use_sliding_window": False,
        "vocab_size": SHAPE["vocab_size"],
    }


def generation_config(eot_id, im_end_id):
    # Qwen3's published defaults.
    return {"bos_token_id": eot_id, "eos_token_id": [eot_id, im_end_id], "pad_token_id": eot_id,
            "do_sample": True, "temperature": 0.6, "top_k": 20, "top_p": 0.95}


def save_target(model, cfg, gen_cfg, out_dir):
    """bf16 safetensors shards + index.json; tied lm_head is not stored (like HF)."""
    import torch
    from safetensors.torch import save_file

    os.makedirs(out_dir, exist_ok=True)
    state = {k: v.detach().to(torch.bfloat16).contiguous().cpu() for k, v in model.state_dict().items()
             if k != "lm_head.weight"}
    order = ["model.embed_tokens.weight"]
    for i in range(cfg["num_hidden_layers"]):
        order += sorted(k for k in state if k.startswith(f"model.layers.{i}."))
    order.append("model.norm.weight")
    if sorted(order) != sorted(state):
        raise RuntimeError(f"unexpected tensors: {sorted(set(state) - set(order))}")
    shards, cur, size = [], [], 0
    for name in order:
        n = state[name].numel() * 2
        if cur and size + n > SHARD_LIMIT:
            shards.append(cur)
            cur, size = [], 0
        cur.append(name)
        size += n
    shards.append(cur)
    weight_map, total = {}, 0
    for i, names in enumerate(shards):
        fname = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        save_file({n: state[n] for n in names}, os.path.join(out_dir, fname), metadata={"format": "pt"})
        for n in names:
            weight_map[n] = fname
            total += state[n].numel() * 2
    with open(os.path.join(out_dir, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    with open(os.path.join(out_dir, "generation_config.json"), "w") as f:
        json.dump(gen_cfg, f, indent=2)
    return [f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors" for i in range(len(shards))]
