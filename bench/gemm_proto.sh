#!/usr/bin/env bash
# One GPU-machine call for the GEMM prototype (bench/gemm_proto.cu): builds the
# default kernel and tuning variants (build-time knobs of
# src/ops/cuda/gemm_tiles.cu) in parallel, runs the default, then each
# variant, then (unless noprofile) ncu on the default. Logs under $OUT
# (default ./gpu-out). Usage: bash bench/gemm_proto.sh [noprofile]
# Environment: GEMM_PROTO_RUN (default "check invariance sweep bench prefill";
# "tiles" compares the wgmma tiles against Matmul::choose),
# GEMM_PROTO_VARIANT_RUN (default "sweep bench"), GEMM_PROTO_VARIANTS:
# "name=flags;name=flags" (default: two pipeline depths of the 16-row tile).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-out}
mkdir -p "$out"
F="-O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Isrc"
SRC="bench/gemm_proto.cu src/ops/cuda/gemm_tiles.cu src/ops/cuda/matmul.cpp src/ops/cuda/matmul_tiles.cu src/ops/cuda/matmul_cublaslt.cpp
     src/ops/cuda/checks.cpp src/ops/cuda/device.cpp src/ops/cuda/add_bias.cu src/ops/backend.cpp -lcublasLt -lcublas"
IFS=';' read -r -a variants <<<"${GEMM_PROTO_VARIANTS:-stages3=-DFD_GEMM_STAGES=3;stages6=-DFD_GEMM_STAGES=6}"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee "$out/gpu.txt"
# shellcheck disable=SC2086
nvcc $F -Xptxas -v -o /tmp/gp_default $SRC >"$out/build.log" 2>&1 &
for v in "${variants[@]}"; do
  # shellcheck disable=SC2086
  nvcc $F ${v#*=} -o "/tmp/gp_${v%%=*}" $SRC >"/tmp/build_${v%%=*}.log" 2>&1 &
done
wait
[[ -x /tmp/gp_default ]] || { grep -E "error" -A3 "$out/build.log" | head -40; exit 1; }
# shellcheck disable=SC2086
timeout 240 /tmp/gp_default ${GEMM_PROTO_RUN:-check invariance sweep bench prefill} 2>&1 | tee "$out/default.log" |
  grep -vE "^(ok  )"
for v in "${variants[@]}"; do
  n=${v%%=*}
  [[ -x /tmp/gp_$n ]] || { echo "variant $n did not build"; head "/tmp/build_$n.log"; continue; }
  echo "=== $n"
  # shellcheck disable=SC2086
  timeout 200 "/tmp/gp_$n" ${GEMM_PROTO_VARIANT_RUN:-sweep bench} >"$out/$n.log" 2>&1
  grep -vE "^(ok  )" "$out/$n.log" | grep -vE "^\| .* \| +(2|4|8|32|64|128) \|" | tail -40
done
if [[ ${1:-} != noprofile ]]; then
  timeout 150 ncu --profile-from-start off --clock-control none --section SpeedOfLight --section Occupancy \
    --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
    /tmp/gp_default profile >"$out/ncu.txt" 2>&1
  grep -E "profiled|Duration|DRAM Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per|Grid Size" \
    "$out/ncu.txt" | head -60
fi
