#!/usr/bin/env bash
# Install what a fresh Debian 12 machine lacks, then configure and build into build/.
# Usage: bash scripts/setup.sh [--all]   (run as root, or with sudo available)
# Without --all only the `flashdraft` binary is built (what the README's main
# command needs); scripts/test.sh passes --all for the tests and benchmarks.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake ninja-build pkg-config ccache git
  libpcre2-dev libutf8proc-dev nlohmann-json3-dev libcli11-dev libfmt-dev
  libopenblas-dev libgtest-dev libgmock-dev libbenchmark-dev libcpp-httplib-dev libcurl4-openssl-dev nodejs npm)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node may come from outside Debian (e.g. /usr/local); then npm is already there.
if command -v npm >/dev/null; then
  missing=("${missing[@]/nodejs}"); missing=("${missing[@]/npm}")
fi
read -ra missing <<<"${missing[*]}"
if ((${#missing[@]})); then
  sudo=""; [[ $(id -u) -eq 0 ]] || sudo=sudo
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Without a GPU the main job runs on the CPU backend: skip compiling the CUDA
# kernels (minutes on a small machine). --all (scripts/test.sh) builds them
# whenever nvcc is there, so CI still compiles every CUDA source.
cuda=ON
if [[ ${1:-} != --all ]] && ! nvidia-smi -L >/dev/null 2>&1; then
  cuda=OFF
  echo "setup: no GPU visible, building the CPU backend only (scripts/test.sh builds the rest)"
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DFLASHDRAFT_CUDA=$cuda
if [[ ${1:-} == --all ]]; then
  cmake --build build -j"$(nproc)"
else
  cmake --build build -j"$(nproc)" --target flashdraft
fi
echo "setup: done; the binary is build/flashdraft"
