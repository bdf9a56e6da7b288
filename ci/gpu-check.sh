#!/usr/bin/env bash
# One prepared run on a machine with an NVIDIA GPU and no Go toolchain:
#
#   ci/gpu-check.sh [OUT] [VITBENCH]        (run from the repository root)
#
# OUT (default $OUT, else gpu-out) receives every result, every log and
# report.md; VITBENCH (default ./vitbench) is a binary built elsewhere with
#   CGO_ENABLED=0 go build -o vitbench ./cmd/vitbench
# The CUDA libraries come from the machine: the driver; NVRTC and cuBLAS
# from a CUDA toolkit, Debian's packages or NVIDIA's Python wheels (found
# through the first python3 on PATH), or the directories in
# VITBENCH_CUDA_LIBS. When vitbench finds no usable CUDA on its own, the
# script asks python3 where its nvidia/*/lib folders are and tries again.
#
# Steps run in order of importance, each under its own limit and all under
# GPU_CHECK_BUDGET seconds (default 480): a step that fails or runs out of
# time is recorded in steps.txt and the next one runs with what is left.
# Timed steps run one at a time, so no two measurements share the GPU.
#   1. the machine (nvidia-smi, libraries) and vitbench info
#   2. conformance of every committed fixture on cuda (strict fp32), then
#      cuda-tf32, cuda-bf16 and cuda-fp16 side by side (each held to its
#      precision's tolerance classes, fixtures/FORMAT.md); then agreement
#      of the four with the CPU on every built-in case (vitbench agree:
#      the full-size networks too), and of the main networks at batch 64
#   3. every component on cuda, then in PyTorch fp32 on the same GPU
#      (reference/bench_torch.py --device cuda, when python3 has torch
#      with CUDA)
#   4. every network at its own batch, likewise
#   5. the main networks at batch 64 on cuda, cuda-tf32 and cuda-bf16,
#      then PyTorch fp32, tf32 and bf16
#   6. every component on cuda-tf32 and cuda-bf16, PyTorch likewise
#   7. report.md from all of it
set -uo pipefail
out=${1:-${OUT:-gpu-out}}
bin=${2:-./vitbench}
budget=${GPU_CHECK_BUDGET:-480}
mkdir -p "$out"
: >"$out/steps.txt"
start=$SECONDS

# step NAME SECONDS CMD...: runs CMD under timeout (SECONDS, or less when
# the budget has less left) with its output in OUT/NAME.log, and records
# the exit status and duration.
step() {
  local name=$1 secs=$2
  shift 2
  local left=$((budget - (SECONDS - start) - 25)) # 25 s kept for the report
  if [ "$name" != report ] && [ "$left" -lt "$secs" ]; then
    secs=$left
  fi
  if [ "$secs" -lt 5 ]; then
    printf '%-22s skipped: the %ds budget is spent\n' "$name" "$budget" | tee -a "$out/steps.txt"
    return
  fi
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

have_torch=false
if command -v python3 >/dev/null && python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  have_torch=true
fi

{
  echo "# date"; date -u
  echo "# nvidia-smi"; nvidia-smi 2>&1 | head -20
  echo "# python3"; command -v python3 && python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
  echo "# CUDA libraries on the loader's path"; ldconfig -p 2>/dev/null | grep -E 'libcuda\.|libnvrtc|libcublas' | head -20
  echo "# CUDA libraries in toolkit folders"; ls /usr/local/cuda*/lib64/ 2>/dev/null | grep -E 'libnvrtc|libcublas' | head -20
} >"$out/machine.txt" 2>&1

step info 30 "$bin" info
if grep -qE '^  cuda +unavailable' "$out/info.log" && $have_torch; then
  dirs=$(python3 -c '
import glob, os, site
d = []
for sp in site.getsitepackages():
    d += glob.glob(os.path.join(sp, "nvidia", "*", "lib")) + glob.glob(os.path.join(sp, "nvidia", "*", "lib64"))
print(":".join(d))' 2>/dev/null)
  export VITBENCH_CUDA_LIBS="${VITBENCH_CUDA_LIBS:+$VITBENCH_CUDA_LIBS:}$dirs:/usr/local/nvidia/lib64:/usr/local/cuda/lib64"
  echo "cuda unavailable on its own; retrying with VITBENCH_CUDA_LIBS=$VITBENCH_CUDA_LIBS" | tee -a "$out/steps.txt"
  step info-retry 30 "$bin" info
fi
"$bin" info -json >"$out/info.json" 2>/dev/null
grep -E '^  cuda|^cuda' "$out/info.log"

step check-cuda 150 "$bin" check -backend cuda -fixtures fixtures -v -json "$out/check.json"
# The reduced-precision checks measure nothing: they may share the GPU.
check_reduced() {
  local pids=() p
  for p in tf32 bf16 fp16; do
    "$bin" check -backend "cuda-$p" -fixtures fixtures -json "$out/check-$p.json" >"$out/check-$p.txt" 2>&1 &
    pids+=($!)
  done
  local rc=0
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  tail -n 4 "$out"/check-tf32.txt "$out"/check-bf16.txt "$out"/check-fp16.txt
  return $rc
}
export -f check_reduced
export bin out
step check-reduced 90 bash -c check_reduced
step agree 150 "$bin" agree -ref cpu -backend cuda,cuda-tf32,cuda-bf16,cuda-fp16 -json "$out/agree.json"

# Case names by kind, from the case list's Markdown table.
cases_of() { "$bin" list | awk -F'|' -v k="$1" '{gsub(/ /, "", $2); gsub(/ /, "", $3)} $3 == k {print $2}'; }
components="^($(cases_of component | paste -sd'|'))\$"
networks="^($(cases_of network | paste -sd'|'))\$"
big="^(vit_s16|vit_b16|deit_s|t2t_vit_14|volo_d1)$"
timing=(-count 10 -warmup 3 -min-sample 5ms -threads 1)
tb=(python3 reference/bench_torch.py --device cuda --threads 1 --count 10 --warmup 3 --min-sample-ms 5)

# bench NAME LIMIT BACKENDS REGEX [ARGS...]: vitbench timing into NAME.txt/.json.
bench() {
  local name=$1 secs=$2 backends=$3 re=$4
  shift 4
  step "$name" "$secs" "$bin" bench -backend "$backends" -run "$re" "${timing[@]}" "$@" \
    -o "$out/$name.txt" -json "$out/$name.json"
}
# torch NAME LIMIT DTYPE REGEX [ARGS...]: PyTorch timing into NAME.txt.
torch() {
  $have_torch || return 0
  local name=$1 secs=$2 dtype=$3 re=$4
  shift 4
  step "$name" "$secs" "${tb[@]}" --dtype "$dtype" --run "$re" "$@" -o "$out/$name.txt"
}
$have_torch || echo "no python3 with CUDA-enabled torch: no PyTorch column" | tee -a "$out/steps.txt"

step agree-b64 60 "$bin" agree -ref cpu -backend cuda,cuda-bf16 -run "$big" -batch 64 -json "$out/agree-b64.json"

bench bench-components 90 cuda "$components"
torch torch-components 90 fp32 "$components"
bench bench-networks 120 cuda "$networks"
torch torch-networks 120 fp32 "$networks"
bench bench-b64 60 cuda,cuda-tf32,cuda-bf16 "$big" -batch 64
torch torch-b64 40 fp32 "$big" --batch 64
torch torch-b64-tf32 40 tf32 "$big" --batch 64
torch torch-b64-bf16 40 bf16 "$big" --batch 64
bench bench-components-reduced 90 cuda-tf32,cuda-bf16 "$components"
torch torch-components-bf16 60 bf16 "$components"

inputs=()
for f in "$out"/bench-*.txt "$out"/torch-*.txt; do
  grep -qs '^Benchmark' "$f" && inputs+=("$f")
done
for f in "$out"/check.json "$out"/check-*.json; do
  [ -s "$f" ] && inputs+=("$f")
done
if ((${#inputs[@]})); then
  step report 20 "$bin" report -title "vitbench CUDA check" -o "$out/report.md" "${inputs[@]}"
fi
echo "gpu-check: $((SECONDS - start))s in all; results in $out (steps.txt, report.md)"
