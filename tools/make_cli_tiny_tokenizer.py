#!/usr/bin/env python3
"""Make a tiny byte-level BPE tokenizer whose vocabulary has exactly as many
ids as the random tiny-qwen3 fixture model, so `flashdraft generate` can run
end to end on it (tests/cli/). Every id the model can emit decodes to bytes.

Layout (like Qwen's): ids 0..255 are the 256 byte symbols in GPT-2 byte-level
order, then merges learned from a small English corpus, then the added special
tokens at the top of the id range. Writes tokenizer.json and
tokenizer_config.json (with a minimal ChatML template of our own) into OUT_DIR.

Usage: python3 tools/make_cli_tiny_tokenizer.py [CONFIG_JSON] [OUT_DIR]
  defaults: tests/fixtures/tiny-qwen3/config.json tests/fixtures/cli/tiny-tokenizer
Pure Python, no packages needed; deterministic.
"""
import collections
import json
import os
import re
import sys

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
NON_SPECIAL_ADDED = ["<think>", "</think>"]

CORPUS = """
The quick brown fox jumps over the lazy dog. A tiny model writes tiny words,
and the tests read them back one token at a time. Speculative decoding drafts
several tokens with a small model and verifies them with the large one in a
single forward pass. When the draft is right, the engine accepts the tokens and
moves on; when it is wrong, it keeps the verified prefix and samples the next
token from the target distribution. This keeps the output exactly the same as
plain decoding while doing more work per step. The cache stores keys and
values for every layer, so the next step only computes the new positions.
Hello world! How are you today? I am fine, thank you, and you? The weather is
nice, the sun is shining and there is a light wind from the west.
"""

# Same ChatML shape as Qwen models, written for this fixture.
CHAT_TEMPLATE = (
    "{%- if messages[0].role == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message.role != 'system' %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}"
    "{{- '<think>\\n\\n</think>\\n\\n' }}"
    "{%- endif %}"
    "{%- endif %}"
)


def byte_symbols():
    """GPT-2's reversible byte -> printable character map, in its id order."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    chars, n = {}, 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
    for b in range(256):
        if b not in printable:
            chars[b] = chr(256 + n)
            n += 1
    return [chars[b] for b in printable] + [chars[b] for b in range(256) if b not in printable], chars


def learn_merges(count, chars):
    # Words with their leading space, as Qwen's pre-tokenizer splits English.
    words = collections.Counter(re.findall(r" ?[A-Za-z]+| ?[^A-Za-z\s]+|\s+", CORPUS))
    seqs = {w: ["".join(chars[b] for b in ch.encode("utf-8")) for ch in w] for w in words}
    merges = []
    while len(merges) < count:
        pairs = collections.Counter()
        for w, seq in seqs.items():
            for a, b in zip(seq, seq[1:]):
                pairs[(a, b)] += words[w]
        if not pairs:
            raise SystemExit(f"corpus too small: only {len(merges)} merges, need {count}")
        best = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))[0]
        merges.append(best)
        for w, seq in seqs.items():
            out, i = [], 0
            while i < len(seq):
                if i + 1 < len(seq) and (seq[i], seq[i + 1]) == best:
                    out.append(seq[i] + seq[i + 1])
                    i += 2
                else:
                    out.append(seq[i])
                    i += 1
            seqs[w] = out
    return merges


def main():
    config_path = sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/tiny-qwen3/config.json"
    out_dir = sys.argv[2] if len(sys.argv) > 2 else "tests/fixtures/cli/tiny-tokenizer"
    vocab_size = json.load(open(config_path))["vocab_size"]
    added = SPECIALS + NON_SPECIAL_ADDED
    ordered, chars = byte_symbols()
    merges = learn_merges(vocab_size - 256 - len(added), chars)

    vocab = {sym: i for i, sym in enumerate(ordered)}
    for a, b in merges:
        assert a + b not in vocab, (a, b)
        vocab[a + b] = len(vocab)
    added_tokens = []
    for content in added:
        added_tokens.append({"id": len(vocab) + len(added_tokens), "content": content, "single_word": False,
                             "lstrip": False, "rstrip": False, "normalized": False,
                             "special": content in SPECIALS})
    assert len(vocab) + len(added_tokens) == vocab_size

    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
    split = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
             r"|\s*[\r\n]+|\s+(?!\S)|\s+")
    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": added_tokens,
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": split}, "behavior": "Isolated", "invert": False},
            byte_level]},
        "post_processor": byte_level, "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": [[a, b] for a, b in merges]},
    }
    config = {
        "add_bos_token": False, "add_prefix_space": False, "bos_token": None,
        "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>", "unk_token": None,
        "added_tokens_decoder": {str(t["id"]): {k: t[k] for k in t if k != "id"} for t in added_tokens},
        "additional_special_tokens": ["<|im_start|>", "<|im_end|>"],
        "clean_up_tokenization_spaces": False, "errors": "replace", "model_max_length": 1024,
        "split_special_tokens": False, "tokenizer_class": "Qwen2Tokenizer",
        "chat_template": CHAT_TEMPLATE,
    }
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "tokenizer.json"), "w", encoding="utf-8") as fh:
        json.dump(tokenizer, fh, ensure_ascii=False, indent=1)
        fh.write("\n")
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w", encoding="utf-8") as fh:
        json.dump(config, fh, ensure_ascii=False, indent=2)
        fh.write("\n")
    print(f"wrote {out_dir}: {len(vocab)} vocab + {len(added_tokens)} added = {vocab_size} ids")


if __name__ == "__main__":
    main()
