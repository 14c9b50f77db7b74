"""Byte-level BPE with Qwen3's normalizer, pre-tokenizer, post-processor and decoder.

The BPE merges are trained here with `tokenizers`; every other block of
tokenizer.json is copied verbatim from Qwen3's (qwen3_tokenizer_parts.json), so a
Qwen3 tokenizer implementation reads ours unchanged. Special tokens are appended
after the BPE vocabulary, as in Qwen3.
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|mask|>"]


def qwen3_parts():
    with open(os.path.join(HERE, "qwen3_tokenizer_parts.json")) as f:
        return json.load(f)


def train_tokenizer(texts, vocab_size, out_dir, max_length):
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    parts = qwen3_parts()
    split_regex = parts["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"]
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(split_regex), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - len(SPECIALS),
        min_frequency=2,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=[],
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in SPECIALS])

    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "tokenizer.json")
    tok.save(path)
    # Copy Qwen3's blocks verbatim so the file matches Qwen3's structure field for field.
    with open(path) as f:
        j = json.load(f)
    for key in ("normalizer", "pre_tokenizer", "post_processor", "decoder"):
        j[key] = parts[key]
    for key, value in parts["model_flags"].items():
        j["model"][key] = value
    with open(path, "w", encoding="utf-8") as f:
        json.dump(j, f, ensure_ascii=False, indent=1)

    tok = Tokenizer.from_file(path)
    ids = {s: tok.token_to_id(s) for s in SPECIALS}
    if tok.get_vocab_size() > vocab_size or None in ids.values():
        raise RuntimeError(f"tokenizer: vocab {tok.get_vocab_size()} > {vocab_size} or missing specials {ids}")
    write_tokenizer_config(out_dir, ids, max_length)
    sample = 'def f(x):\n    """Docstring é."""\n    return x  + 1\n'
    if tok.decode(tok.encode(sample).ids) != sample:
        raise RuntimeError("tokenizer does not round-trip a sample")
    return tok, ids


def write_tokenizer_config(out_dir, ids, max_length):
    cfg = dict(qwen3_parts()["tokenizer_config"])
    cfg["added_tokens_decoder"] = {
        str(i): {"content": s, "lstrip": False, "normalized": False, "rstrip": False, "single_word": False, "special": True}
        for s, i in sorted(ids.items(), key=lambda kv: kv[1])
    }
    cfg["additional_special_tokens"] = ["<|im_start|>", "<|im_end|>", "<|mask|>"]
    # A base code model: documents end with <|endoftext|>, as in Qwen3's base models.
    cfg["eos_token"] = "<|endoftext|>"
    cfg["pad_token"] = "<|endoftext|>"
    cfg["model_max_length"] = max_length
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(cfg, f, ensure_ascii=False, indent=2)
