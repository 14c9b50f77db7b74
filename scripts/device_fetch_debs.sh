#!/usr/bin/env bash
# Fetches (here, where apt works) the Debian packages the GPU machine's image
# lacks for a full build; scripts/device_build.sh unpacks them there.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .carry/debs
cd .carry/debs
apt-get download libpcre2-dev libpcre2-8-0 libpcre2-16-0 libpcre2-32-0 libpcre2-posix3 libutf8proc-dev libutf8proc2 2>/dev/null
ls
