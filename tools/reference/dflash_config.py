"""A DFlash drafter's config.json as published, read the way vLLM reads it (no torch needed).

Layouts seen in published drafters: block_size at the top level or in dflash_config;
rope_theta at the top level or in transformers 5's rope_parameters; layer kinds from
layer_types, dflash_config.use_swa / swa_window_size, is_causal / dflash_config.causal.
The rules are those of src/model/dflash_config.h (vLLM's qwen3_dflash.py).
"""


class ConfigError(ValueError):
    pass


def _dc(cfg):
    return cfg.get("dflash_config") or {}


def _either(cfg, key):
    """A field z-lab keeps in dflash_config and others at the top level; both must agree."""
    top, nested = cfg.get(key), _dc(cfg).get(key)
    if top is not None and nested is not None and top != nested:
        raise ConfigError(f"{key}: top-level {top} disagrees with dflash_config.{key} {nested}")
    return top if top is not None else nested


def block_size(cfg):
    b = _either(cfg, "block_size")
    if b is None or b < 2:
        raise ConfigError(f"block_size: expected >= 2, found {b}")
    return b


def mask_token_id(cfg):
    m = _either(cfg, "mask_token_id")
    if m is None:
        raise ConfigError("dflash_config.mask_token_id is missing")
    return m


def default_target_layer_ids(num_target_layers, num_layers):
    """z-lab's taps when target_layer_ids is absent (Python's round: halves to even)."""
    if num_layers == 1:
        return [num_target_layers // 2]
    return [int(round(1 + i * (num_target_layers - 4) / (num_layers - 1))) for i in range(num_layers)]


def target_layer_ids(cfg):
    ids = _dc(cfg).get("target_layer_ids")
    if ids is not None:
        return list(ids)
    n = cfg.get("num_target_layers")
    if n is None:
        raise ConfigError("no dflash_config.target_layer_ids and no num_target_layers to derive them")
    return default_target_layer_ids(n, cfg["num_hidden_layers"])


def rope_theta(cfg):
    """Plain RoPE's base; scaled RoPE is not modelled by this reference."""
    params = cfg.get("rope_parameters") or {}
    scaling = cfg.get("rope_scaling") or {}
    for kind in (params.get("rope_type"), scaling.get("rope_type"), scaling.get("type")):
        if kind not in (None, "default"):
            raise ConfigError(f"rope type {kind!r}: only default RoPE is modelled here")
    theta = cfg.get("rope_theta", params.get("rope_theta"))
    if theta is None:
        raise ConfigError("rope_theta missing (top level or rope_parameters)")
    return float(theta)


def layer_kinds(cfg):
    """[(sliding, window, causal)] per layer: key j is visible to the query at p iff
    causal: j <= p (and j > p - window when sliding); non-causal: any j, or
    p - window < j < p + window when sliding; always within context + block."""
    n = cfg["num_hidden_layers"]
    # transformers' Qwen3Config drops sliding_window unless use_sliding_window is set.
    hf_window = cfg.get("sliding_window") if cfg.get("use_sliding_window") else None
    types = cfg.get("layer_types")
    if types is None:
        first = cfg.get("max_window_layers", 28)
        types = ["sliding_attention" if hf_window is not None and i >= first else "full_attention"
                 for i in range(n)]
    if len(types) != n:
        raise ConfigError(f"layer_types has {len(types)} entries for {n} layers")
    for i, t in enumerate(types):
        if t not in ("full_attention", "sliding_attention"):
            raise ConfigError(f"layer_types[{i}] is {t!r}")
    dc = _dc(cfg)
    use_swa = dc.get("use_swa")
    if use_swa is None:
        use_swa = cfg.get("use_swa", False)
    every = bool(use_swa) and "sliding_attention" not in types
    swa = _either(cfg, "swa_window_size")
    window = swa if swa is not None else hf_window
    causal = cfg.get("is_causal")
    if causal is None:
        causal = dc.get("causal")
    kinds = []
    for i, t in enumerate(types):
        sliding = every or t == "sliding_attention"
        if sliding and (window is None or window <= 0):
            raise ConfigError(f"layer {i} slides but has no positive window (sliding_window {cfg.get('sliding_window')}, "
                              f"use_sliding_window {cfg.get('use_sliding_window')}, swa_window_size {swa})")
        kinds.append((sliding, window if sliding else 0, sliding if causal is None else bool(causal)))
    return kinds
