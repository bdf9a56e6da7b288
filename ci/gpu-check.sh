#!/usr/bin/env bash
# One prepared run on a machine with an NVIDIA GPU and no Go toolchain:
#
#   ci/gpu-check.sh [OUT] [VITBENCH]        (run from the repository root)
#
# OUT (default $OUT, else gpu-out) receives every result and report.md;
# VITBENCH (default ./vitbench) is a binary built elsewhere with
#   CGO_ENABLED=0 go build -o vitbench ./cmd/vitbench
# The CUDA libraries come from the machine (driver; NVRTC and cuBLAS from
# a CUDA toolkit, Debian's packages or NVIDIA's Python wheels, or the
# directories in VITBENCH_CUDA_LIBS). Steps, each under its own timeout so
# the whole run stays within about 8 minutes; a step that fails or times
# out is recorded in steps.txt and the next one runs:
#   1. vitbench info (GPU, driver, CUDA, NVRTC, cuBLAS)
#   2. conformance of every committed fixture on cuda (strict fp32), then
#      on cuda-tf32 (TF32 products: expected to exceed the fp32 gemm class
#      in places; recorded, not gated)
#   3. timing of every component on cuda and cuda-tf32
#   4. timing of every network at its own batch, then the main networks
#      at batch 64
#   5. the same cases in PyTorch on the GPU (reference/bench_torch.py
#      --device cuda) when python3 with a CUDA-enabled torch is present
#   6. report.md from all of it
set -uo pipefail
out=${1:-${OUT:-gpu-out}}
bin=${2:-./vitbench}
mkdir -p "$out"
: >"$out/steps.txt"
start=$SECONDS

# step NAME SECONDS CMD...: runs CMD under timeout with its output in
# OUT/NAME.log, and records the exit status and duration.
step() {
  local name=$1 secs=$2
  shift 2
  local t0=$SECONDS
  echo "=== $name (limit ${secs}s)"
  timeout --signal=TERM --kill-after=10 "$secs" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  local note=""
  [ "$rc" -eq 124 ] && note=" (timed out: finished cases are kept)"
  printf '%-22s exit %3d  %4ds%s\n' "$name" "$rc" $((SECONDS - t0)) "$note" | tee -a "$out/steps.txt"
  tail -3 "$out/$name.log"
}

if [ ! -x "$bin" ]; then
  echo "gpu-check: no vitbench binary at $bin (build one with CGO_ENABLED=0 go build -o vitbench ./cmd/vitbench)" >&2
  exit 2
fi

step info 30 "$bin" info
"$bin" info -json >"$out/info.json" 2>/dev/null
grep -E '^  cuda' "$out/info.log"

step check-cuda 120 "$bin" check -backend cuda -fixtures fixtures -json "$out/check.json"
step check-cuda-tf32 45 "$bin" check -backend cuda-tf32 -fixtures fixtures -json "$out/check-tf32.json"

# Case names by kind, from the case list's Markdown table.
cases_of() { "$bin" list | awk -F'|' -v k="$1" '{gsub(/ /, "", $2); gsub(/ /, "", $3)} $3 == k {print $2}'; }
components=$(cases_of component | paste -sd'|')
networks=$(cases_of network | paste -sd'|')
big="^(vit_s16|vit_b16|deit_s|t2t_vit_14|volo_d1)$"
timing=(-count 10 -warmup 3 -min-sample 5ms -threads 1)

step bench-components 80 "$bin" bench -backend cuda,cuda-tf32 -run "^($components)\$" "${timing[@]}" \
  -o "$out/bench-components.txt" -json "$out/bench-components.json"
step bench-networks 70 "$bin" bench -backend cuda,cuda-tf32 -run "^($networks)\$" "${timing[@]}" \
  -o "$out/bench-networks.txt" -json "$out/bench-networks.json"
step bench-networks-b64 50 "$bin" bench -backend cuda,cuda-tf32 -run "$big" -batch 64 "${timing[@]}" \
  -o "$out/bench-networks-b64.txt" -json "$out/bench-networks-b64.json"

torch_files=()
if command -v python3 >/dev/null && python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  tb=(python3 reference/bench_torch.py --device cuda --threads 1 --count 10 --warmup 3 --min-sample-ms 5)
  step torch-components 40 "${tb[@]}" --run "^($components)\$" -o "$out/torch-components.txt"
  step torch-networks 30 "${tb[@]}" --run "^($networks)\$" -o "$out/torch-networks.txt"
  step torch-networks-b64 20 "${tb[@]}" --run "$big" --batch 64 -o "$out/torch-networks-b64.txt"
  for f in torch-components torch-networks torch-networks-b64; do
    grep -qs '^Benchmark' "$out/$f.txt" && torch_files+=("$out/$f.txt")
  done
else
  echo "no python3 with CUDA-enabled torch: no PyTorch column" | tee -a "$out/steps.txt"
fi

inputs=()
for f in bench-components bench-networks bench-networks-b64; do
  grep -qs '^Benchmark' "$out/$f.txt" && inputs+=("$out/$f.txt")
done
for f in check check-tf32; do
  [ -s "$out/$f.json" ] && inputs+=("$out/$f.json")
done
if ((${#inputs[@]})); then
  step report 20 "$bin" report -title "vitbench CUDA check" \
    -o "$out/report.md" "${inputs[@]}" "${torch_files[@]}"
fi
echo "gpu-check: $((SECONDS - start))s in all; results in $out (steps.txt, report.md)"
