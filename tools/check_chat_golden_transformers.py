#!/usr/bin/env python3
"""Checks the chat golden files against real transformers (runs where transformers is installed).

gen_chat_golden.py emulates transformers' Jinja2 environment with plain jinja2;
this script confirms the emulation: every Qwen3 conversation is re-rendered with
tokenizer.apply_chat_template() on the real Qwen3 tokenizer, and every construct
template with transformers' own compiled-template helper.

Usage: tools/check_chat_golden_transformers.py TOKENIZER_DIR [FIXTURES_DIR]
Exit status 0 when everything matches.
"""
import json
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import transformers  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402


def compile_template(text):
    from transformers.utils import chat_template_utils as ctu
    return ctu._compile_jinja_template(text)


def main():
    tok_dir = sys.argv[1]
    fixtures = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(__file__), "..", "tests/fixtures/chat")
    print("transformers", transformers.__version__)
    tok = AutoTokenizer.from_pretrained(tok_dir)
    bad = 0
    cases = json.load(open(os.path.join(fixtures, "qwen3_cases.json"), encoding="utf-8"))
    for c in cases:
        kwargs = {"tools": c["tools"], "add_generation_prompt": c["add_generation_prompt"], "tokenize": False}
        if "enable_thinking" in c:
            kwargs["enable_thinking"] = c["enable_thinking"]
        try:
            got, err = tok.apply_chat_template(c["messages"], **kwargs), None
        except Exception as e:  # noqa: BLE001
            got, err = None, f"{type(e).__name__}: {e}"
        ok = (err is None and got == c.get("expected")) or (err is not None and "expected_error" in c)
        if not ok:
            bad += 1
            print("QWEN3 MISMATCH", c["name"], repr(got)[:300], err, "| golden:", repr(c.get("expected", c.get("expected_error")))[:300])
    constructs = json.load(open(os.path.join(fixtures, "construct_cases.json"), encoding="utf-8"))
    for c in constructs:
        try:
            got, err = compile_template(c["template"]).render(**c["context"]), None
        except Exception as e:  # noqa: BLE001
            got, err = None, f"{type(e).__name__}: {e}"
        ok = (err is None and got == c.get("expected")) or (err is not None and "expected_error" in c)
        if not ok:
            bad += 1
            print("CONSTRUCT MISMATCH", c["name"], repr(got)[:300], err, "| golden:", repr(c.get("expected", c.get("expected_error")))[:300])
    print(f"{len(cases)} conversations, {len(constructs)} constructs, {bad} mismatches")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
