#!/usr/bin/env bash
# Prepares .carry/ (carried to the GPU machine, ignored by git): the Debian
# packages its image lacks for a full build (fetched here, where apt works;
# scripts/device_build.sh unpacks them there) and the published configs the
# benchmarks load with dummy weights (../shared does not travel).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .carry/debs
cd .carry/debs
apt-get download libpcre2-dev libpcre2-8-0 libpcre2-16-0 libpcre2-32-0 libpcre2-posix3 libutf8proc-dev libutf8proc2 2>/dev/null
# cpp-httplib (serve, bench serve) and what its pkg-config file and shared library need.
apt-get download libcpp-httplib-dev libcpp-httplib0.11 libssl-dev libssl3 zlib1g-dev libbrotli-dev libbrotli1 2>/dev/null
ls
cd ../..
if [[ -d ../shared/configs ]]; then
  mkdir -p .carry/configs
  cp -r ../shared/configs/qwen3-8b ../shared/configs/qwen3-8b-dflash-b16 ../shared/configs/qwen3-32b .carry/configs/
fi
