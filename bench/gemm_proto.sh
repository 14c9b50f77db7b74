#!/usr/bin/env bash
# One GPU-machine call for the GEMM prototype (bench/gemm_proto.cu): builds the
# default kernel and tuning variants in parallel, checks and times the default,
# times the variants, profiles the default under ncu. Logs under $OUT
# (default ./gpu-out). Usage: bash bench/gemm_proto.sh [noprofile]
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-out}
mkdir -p "$out"
F="-O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Isrc"
SRC="bench/gemm_proto.cu src/ops/cuda/gemm_tiles.cu src/ops/cuda/matmul.cpp src/ops/cuda/matmul_cublaslt.cpp
     src/ops/cuda/checks.cpp src/ops/cuda/device.cpp src/ops/cuda/add_bias.cu src/ops/backend.cpp -lcublasLt -lcublas"
# name=flags (build-time knobs of src/ops/cuda/gemm_tiles.cu)
variants=(
  "stages3=-DFD_GEMM_STAGES=3"
  "nol2pf=-DFD_GEMM_L2_PREFETCH=\"\""
)
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee "$out/gpu.txt"
# shellcheck disable=SC2086
nvcc $F -Xptxas -v -o /tmp/gp_default $SRC >"$out/build.log" 2>&1 &
for v in "${variants[@]}"; do
  # shellcheck disable=SC2086
  eval nvcc $F "${v#*=}" -o "/tmp/gp_${v%%=*}" $SRC >"/tmp/build_${v%%=*}.log" 2>&1 &
done
wait
[[ -x /tmp/gp_default ]] || { grep -E "error" -A3 "$out/build.log" | head -40; exit 1; }
timeout 240 /tmp/gp_default check invariance sweep bench prefill 2>&1 | tee "$out/default.log" | grep -vE "^(ok  )"
for v in "${variants[@]}"; do
  n=${v%%=*}
  [[ -x /tmp/gp_$n ]] || { echo "variant $n did not build"; cat "/tmp/build_$n.log" | head; continue; }
  echo "=== $n"
  timeout 120 "/tmp/gp_$n" sweep bench 2>&1 >"$out/$n.log"
  grep -E "^\| (o|qkv|down|gate_up|lm_head) .* \| +(1|16|2048) \||of floor|after a small|ns 8|capacity" "$out/$n.log"
done
if [[ ${1:-} != noprofile ]]; then
  timeout 150 ncu --profile-from-start off --clock-control none --section SpeedOfLight --section Occupancy \
    --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis /tmp/gp_default profile \
    >"$out/ncu.txt" 2>&1
  grep -E "profiled|Duration|DRAM Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per|Grid Size" \
    "$out/ncu.txt" | head -60
fi
