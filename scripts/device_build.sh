#!/usr/bin/env bash
# Builds flashdraft on the lent GPU machine (Ubuntu 24.04 + CUDA 13, 16 cores).
# That image lacks the PCRE2 and utf8proc development files, so the Debian
# packages fetched by scripts/device_fetch_debs.sh (into .carry/debs, carried
# with the call) are unpacked into a private sysroot first; nothing is
# installed into /. Usage (on the GPU machine, from the repo root):
#   source scripts/device_build.sh [cmake targets...]
# Leaves the build in build-gpu/ and exports LD_LIBRARY_PATH for the sysroot.
set -eo pipefail
sysroot=/tmp/fd-sysroot
if [[ ! -d $sysroot/usr ]]; then
  mkdir -p $sysroot
  for f in .carry/debs/*.deb; do dpkg -x "$f" $sysroot; done
  libdir=$sysroot/usr/lib/x86_64-linux-gnu
  # The -dev packages' .so links are absolute in the package; make them point inside.
  for l in "$libdir"/*.so; do
    [[ -L $l ]] && ln -sf "$(basename "$(readlink "$l")")" "$l"
  done
  # Point the packages' pkg-config files into the sysroot (a global
  # PKG_CONFIG_SYSROOT_DIR would also redirect the system's own packages).
  sed -i "s#^prefix=/usr#prefix=$sysroot/usr#" "$libdir"/pkgconfig/*.pc
fi
libdir=$sysroot/usr/lib/x86_64-linux-gnu
export PKG_CONFIG_PATH=$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
export LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export CPATH=$sysroot/usr/include LIBRARY_PATH=$libdir
# NCCL (tensor parallelism): the CUDA toolkit's, else the copy PyTorch's wheels carry.
nccl_args=()
if [[ ! -f /usr/local/cuda/include/nccl.h ]]; then
  nccl_lib=$(find /opt /usr/local /usr/lib -name 'libnccl.so*' 2>/dev/null | head -1)
  nccl_inc=${nccl_lib:+$(dirname "$(dirname "$nccl_lib")")/include}
  if [[ -n $nccl_lib && -f $nccl_inc/nccl.h ]]; then
    nccl_args=(-DFLASHDRAFT_NCCL_INCLUDE="$nccl_inc" -DFLASHDRAFT_NCCL_LIBRARY="$nccl_lib")
    export LD_LIBRARY_PATH=$(dirname "$nccl_lib"):$LD_LIBRARY_PATH
  fi
fi
# The tree arrives as a copy whose timestamps need not be newer than the
# objects an earlier call left in build-gpu (copied mtimes, another machine's
# clock): touch every source whose content changed since the last build, so
# that ninja rebuilds it; a build directory without that record is rebuilt
# whole once. (A file changed while only other targets were built counts as
# seen: build everything, no targets, when in doubt.)
mkdir -p build-gpu
find src tests bench tools -type f \( -name '*.cu' -o -name '*.cuh' -o -name '*.cpp' -o -name '*.h' -o -name '*.txt' \) \
  -print0 2>/dev/null | sort -z | xargs -0 sha1sum >build-gpu/.sources.new || true
if [[ -f build-gpu/.sources ]]; then
  { diff build-gpu/.sources build-gpu/.sources.new || true; } | sed -n 's/^> [0-9a-f]*  //p' | xargs -r touch
elif [[ -f build-gpu/build.ninja ]]; then
  sed 's/^[0-9a-f]*  //' build-gpu/.sources.new | xargs -r touch
fi
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DFLASHDRAFT_BENCH=ON "${nccl_args[@]}" >build-gpu.configure.log 2>&1 || { cat build-gpu.configure.log; return 1 2>/dev/null || exit 1; }
if ! cmake --build build-gpu -j"$(nproc)" ${1:+--target "$@"} >build-gpu.log 2>&1; then
  grep -E "error|Error" -A3 build-gpu.log | head -60; echo "device build failed (build-gpu.log)"; return 1 2>/dev/null || exit 1
fi
mv build-gpu/.sources.new build-gpu/.sources
echo "device build ok"
set +eo pipefail
