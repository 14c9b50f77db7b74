#!/usr/bin/env bash
# Build (installing dependencies if needed) and run the whole test suite with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --all
ctest --test-dir build --output-on-failure -j"$(nproc)" "$@"
