#!/usr/bin/env bash
# Fails when ptxas serializes the wgmma of a CUDA source (bench/gemm_notes.md,
# "The wgmma tile on the H200"): it says so only as info lines (C7513-C7520),
# the results stay right and only the time shows it (the prefill GEMMs lost
# 10-15% that way unnoticed). Compiles each source under src/ops/cuda that
# may issue wgmma for sm_90a, keeps those whose PTX does, and checks that
# ptxas reports no serialization in them.
# Usage: ptxas_wgmma_test.sh NVCC SOURCE_DIR
set -euo pipefail
nvcc=$1 root=$2
ptxas=$(dirname "$nvcc")/ptxas
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The instruction is written in wgmma.cuh (gemm_invariant.cuh includes it);
# sources that include either or write it themselves may issue it (their
# PTX says).
mapfile -t sources < <(grep -l -E "gemm_invariant\.cuh|wgmma\.cuh|wgmma\.mma_async" "$root"/src/ops/cuda/*.cu)
((${#sources[@]})) || { echo "no CUDA source may issue wgmma"; exit 1; }
failed=0 checked=0
for src in "${sources[@]}"; do
  name=$(basename "$src" .cu)
  "$nvcc" -ptx -O3 -std=c++17 --expt-relaxed-constexpr -gencode=arch=compute_90a,code=compute_90a \
    -I"$root/src" "$src" -o "$tmp/$name.ptx"
  grep -q "wgmma.mma_async" "$tmp/$name.ptx" || continue  # includes the header but issues no wgmma
  checked=$((checked + 1))
  if ! "$ptxas" -arch=sm_90a -v "$tmp/$name.ptx" -o "$tmp/$name.cubin" >"$tmp/$name.log" 2>&1; then
    echo "FAIL $name: ptxas failed"; grep -vE "^ptxas info" "$tmp/$name.log" | head -20; failed=1; continue
  fi
  if grep -E "wgmma.mma_async instructions are serialized" "$tmp/$name.log" >"$tmp/$name.bad"; then
    echo "FAIL $name: ptxas serializes wgmma in $(wc -l <"$tmp/$name.bad") function(s):"
    sed -E 's/ in the function .*//' "$tmp/$name.bad" | sort | uniq -c
    failed=1
  else
    echo "ok   $name: $(grep -c "wgmma.mma_async" "$tmp/$name.ptx") wgmma instructions in its PTX, none serialized"
  fi
done
((checked)) || { echo "no source issues wgmma: nothing checked"; exit 1; }
exit $failed
