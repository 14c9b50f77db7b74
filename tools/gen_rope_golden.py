#!/usr/bin/env python3
"""Writes golden RoPE tables from transformers' own rotary initialisation, for
tests/model/rope_scaling_test.cpp.

  python3 tools/gen_rope_golden.py --out DIR     # one DIR/<case>.json per case

Needs torch and transformers (any 4.45+ or 5.x). Run from the repository root:
the base configs are read from tests/fixtures/configs/. Commit the files as
tests/fixtures/rope/<case>.json.

Each case is a complete config.json (a real checkpoint's, with rope fields
changed for the scaled types) in transformers 4.x spelling (top-level
rope_theta, rope_scaling). The tables come from the model's RotaryEmbedding
module, built on the CPU from that config, and are checked against
ROPE_INIT_FUNCTIONS[rope_type] where the registry has the type (transformers 5
dropped "default" from it). Every float is a float32 value written exactly.

<case>.json:
  name, rope_type, transformers_version, torch_version
  config            the config.json the C++ side parses
  head_dim
  inv_freq          [head_dim / 2]   the module's inv_freq buffer
  attention_factor  the module's attention_scaling, as float32
  positions         [P]
  cos, sin          [P][head_dim / 2]  the module's forward at those positions
                    (first half of each row; HF repeats it for the second)

Yarn cases keep max_position_embeddings == factor * original_max_position_
embeddings: transformers 4.x then replaced `factor` by that ratio, 5.x keeps the
configured factor (as vLLM does); with the two equal, both give one answer.
"""
import argparse
import inspect
import json
import os
import struct
import sys

CASES = [
    # (name, base config, fields to replace, positions)
    ("default_qwen3_8b", "qwen3-8b", {}, [0, 1, 7, 1000, 8191, 32767, 40959]),
    ("linear_qwen3_8b_factor3", "qwen3-8b",
     {"rope_scaling": {"rope_type": "linear", "factor": 3.0}, "max_position_embeddings": 122880},
     [0, 1, 7, 1000, 8191, 32767, 122879]),
    # Llama-3.1-8B-Instruct's config.json as published.
    ("llama3_llama31_8b", "llama-3.1-8b-instruct", {}, [0, 1, 7, 1000, 8191, 8192, 32767, 131071]),
    # Qwen3's documented long-context setting (model card: yarn, factor 4,
    # original 32768), with the context it enables.
    ("yarn_qwen3_8b_factor4", "qwen3-8b",
     {"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768},
      "max_position_embeddings": 131072},
     [0, 1, 7, 1000, 32767, 32768, 131071]),
    # Every optional yarn field given: its own attention factor, betas.
    ("yarn_explicit_fields", "llama-3.1-8b-instruct",
     {"rope_scaling": {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 8192,
                       "attention_factor": 1.25, "beta_fast": 16.0, "beta_slow": 2.0},
      "rope_theta": 10000.0, "max_position_embeddings": 65536},
     [0, 1, 7, 1000, 8191, 65535]),
    # DeepSeek's mscale / mscale_all_dim form of the attention factor.
    ("yarn_mscale", "qwen3-8b",
     {"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768,
                       "mscale": 0.707, "mscale_all_dim": 1.0},
      "max_position_embeddings": 131072},
     [0, 1, 7, 1000, 131071]),
    # The legacy spelling "type" instead of "rope_type" (transformers maps it).
    ("linear_legacy_type_key", "llama-3.1-8b-instruct",
     {"rope_scaling": {"type": "linear", "factor": 2.0}, "max_position_embeddings": 262144},
     [0, 1, 7, 1000, 262143]),
]

# transformers >= 4.56 reads yarn's `truncate`; older versions ignore it, so
# the case is written only where it means something.
TRUNCATE_CASE = ("yarn_no_truncate", "qwen3-8b",
                 {"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768,
                                   "truncate": False},
                  "max_position_embeddings": 131072},
                 [0, 1, 7, 1000, 131071])


def f32(x):
    """x rounded to float32, as a Python float (exact)."""
    return struct.unpack("<f", struct.pack("<f", float(x)))[0]


def rotary_class(model_type):
    if model_type == "llama":
        from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding
        return LlamaRotaryEmbedding
    if model_type == "qwen3":
        from transformers.models.qwen3.modeling_qwen3 import Qwen3RotaryEmbedding
        return Qwen3RotaryEmbedding
    raise SystemExit(f"no rotary module for model_type {model_type!r}")


def make_config(cfg, spelling):
    """A transformers config from cfg, given to it as a 4.x (rope_scaling) or
    5.x (rope_parameters) file would be."""
    from transformers import AutoConfig
    fields = dict(cfg)
    if spelling == 5:
        params = dict(fields.pop("rope_scaling", None) or {})
        params.pop("type", None)
        params["rope_type"] = rope_type_of(cfg)
        params["rope_theta"] = fields.pop("rope_theta")
        fields["rope_parameters"] = params
    return AutoConfig.for_model(fields.pop("model_type"), **fields)


def make_rope(cfg):
    """The model's rotary module; the first spelling this transformers maps to
    the intended rope type wins."""
    import torch
    want = rope_type_of(cfg)
    for spelling in (4, 5):
        config = make_config(cfg, spelling)
        rope = rotary_class(cfg["model_type"])(config=config, device=torch.device("cpu"))
        if rope.rope_type == want:
            return config, rope
    raise SystemExit(f"transformers builds rope_type {rope.rope_type!r} from this config, expected {want!r}")


def rope_type_of(cfg):
    scaling = cfg.get("rope_scaling") or {}
    return scaling.get("rope_type", scaling.get("type", "default"))


def golden(name, cfg, positions):
    import torch
    import transformers
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    config, rope = make_rope(cfg)
    inv_freq = rope.inv_freq.detach().to(torch.float32).cpu()
    attention = float(rope.attention_scaling)
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    half = head_dim // 2
    assert inv_freq.shape == (half,), inv_freq.shape

    rope_type = rope_type_of(cfg)
    if rope_type in ROPE_INIT_FUNCTIONS:  # the registry itself agrees with the module
        ref, ref_attention = ROPE_INIT_FUNCTIONS[rope_type](config, torch.device("cpu"))
        assert torch.equal(ref.to(torch.float32), inv_freq), f"{name}: registry and module disagree"
        assert float(ref_attention) == attention, f"{name}: attention factors disagree"

    x = torch.zeros(1, len(positions), head_dim, dtype=torch.float32)
    pos = torch.tensor([positions], dtype=torch.int64)
    with torch.no_grad():
        cos, sin = rope(x, pos)
    cos, sin = cos[0].to(torch.float32), sin[0].to(torch.float32)
    assert torch.equal(cos[:, :half], cos[:, half:]), f"{name}: cos halves differ"

    return {
        "name": name,
        "rope_type": rope_type,
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "config": cfg,
        "head_dim": head_dim,
        "inv_freq": [f32(v) for v in inv_freq.tolist()],
        "attention_factor": f32(attention),
        "positions": positions,
        "cos": [[f32(v) for v in row[:half]] for row in cos.tolist()],
        "sin": [[f32(v) for v in row[:half]] for row in sin.tolist()],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="directory for the <case>.json files")
    ap.add_argument("--configs", default="tests/fixtures/configs", help="base config.json directories")
    args = ap.parse_args()

    from transformers.modeling_rope_utils import _compute_yarn_parameters
    cases = list(CASES)
    if "truncate" in inspect.getsource(_compute_yarn_parameters):
        cases.append(TRUNCATE_CASE)
    else:
        print("transformers ignores yarn's truncate here: no yarn_no_truncate case", file=sys.stderr)

    os.makedirs(args.out, exist_ok=True)
    for name, base, changes, positions in cases:
        with open(os.path.join(args.configs, base, "config.json")) as f:
            cfg = json.load(f)
        cfg.update(changes)
        g = golden(name, cfg, positions)
        path = os.path.join(args.out, name + ".json")
        with open(path, "w") as f:
            json.dump(g, f, indent=1)
            f.write("\n")
        print(f"{path}: {g['rope_type']}, attention_factor {g['attention_factor']}, "
              f"inv_freq[0] {g['inv_freq'][0]} [-1] {g['inv_freq'][-1]}")


if __name__ == "__main__":
    main()
