#!/usr/bin/env bash
# One prepared run on a machine with an NVIDIA GPU and no Go toolchain:
#
#   ci/gpu-check.sh [OUT] [VITBENCH]        (run from the repository root)
#
# OUT (default $OUT, else gpu-out) receives every result, every log and
# report.md; VITBENCH (default ./vitbench) is a binary built elsewhere with
#   CGO_ENABLED=0 go build -o vitbench ./cmd/vitbench
# docs/gpu-check.md explains the run step by step.
#
# The CUDA libraries come from the machine: the driver; NVRTC and cuBLAS
# from a CUDA toolkit, Debian's packages or NVIDIA's Python wheels. Before
# anything runs, the script asks the first python3 on PATH for its
# site-packages and user site folders and prepends every nvidia/*/lib (and
# lib64) folder in them to LD_LIBRARY_PATH and VITBENCH_CUDA_LIBS, so that
# vitbench loads the same NVRTC and cuBLAS as PyTorch; machine.txt records
# what was exported.
#
# A preflight of about 20 s (GPU_CHECK_PREFLIGHT_SECS) comes first: vitbench
# info, then one small fixture (GPU_CHECK_PREFLIGHT_CASE, a -run regex) checked
# on each CUDA backend, each in its own process. When CUDA is unavailable,
# a kernel does not compile or load, or a check fails, the script prints the
# errors in a banner, writes them to OUT/preflight-failed.txt (steps.txt and
# machine.txt are written too) and exits 3 without spending GPU minutes.
#
# Then steps run in order of importance, each under its own limit and all
# under GPU_CHECK_BUDGET seconds (default 480): a step that fails or runs out
# of time is recorded in steps.txt and the next one runs with what is left.
# Timed steps run one at a time, so no two measurements share the GPU. Every
# vitbench process that runs CUDA work runs one backend, so a sticky CUDA
# fault (which ends that process's context) loses that backend's results
# only.
#   1. conformance of every committed fixture on cuda (strict fp32), then
#      cuda-tf32, cuda-bf16 and cuda-fp16 side by side (each held to its
#      precision's tolerance classes, fixtures/FORMAT.md); then agreement
#      of each of the four with the CPU on every built-in case (vitbench
#      agree: the full-size networks too; one process per backend), and of
#      the main networks at batch 64 on cuda and cuda-bf16
#   2. every component on cuda, then in PyTorch fp32 on the same GPU
#      (reference/bench_torch.py --device cuda, when python3 has torch
#      with CUDA: CUDA events after the same L2 flush as vitbench)
#   3. every network at its own batch, likewise
#   4. the main networks at batch 64 on cuda, cuda-tf32 and cuda-bf16,
#      then PyTorch fp32, tf32 and bf16
#   5. every component on cuda-tf32 and cuda-bf16, PyTorch bf16
#   6. report.md from all of it
set -uo pipefail
out=${1:-${OUT:-gpu-out}}
bin=${2:-./vitbench}
budget=${GPU_CHECK_BUDGET:-480}
preflight_secs=${GPU_CHECK_PREFLIGHT_SECS:-20}
preflight_case=${GPU_CHECK_PREFLIGHT_CASE:-'^gemm/odd_m13_n37_k29$'}
# GPU_CHECK_BACKEND=cuda-emu rehearses the whole script on the CUDA
# emulator (docs/cuda-emulator.md) on a machine without a GPU.
cu=${GPU_CHECK_BACKEND:-cuda}
cuda_backends=("$cu" "$cu-tf32" "$cu-bf16" "$cu-fp16")
mkdir -p "$out"
: >"$out/steps.txt"
start=$SECONDS

# step NAME SECONDS CMD...: runs CMD under timeout (SECONDS, or less when
# the budget has less left) with its output in OUT/NAME.log, and records
# the exit status and duration in steps.txt. Returns CMD's exit status
# (also left in step_rc); 125 when the step was skipped.
step_rc=0
step() {
  local name=$1 secs=$2
  shift 2
  local left=$((budget - (SECONDS - start) - 25)) # 25 s kept for the report
  if [ "$name" != report ] && [ "$left" -lt "$secs" ]; then
    secs=$left
  fi
  if [ "$secs" -lt 5 ]; then
    printf '%-28s skipped: the %ds budget is spent\n' "$name" "$budget" | tee -a "$out/steps.txt"
    step_rc=125
    return "$step_rc"
  fi
  local t0=$SECONDS
  echo "=== $name (limit ${secs}s)"
  timeout --signal=TERM --kill-after=10 "$secs" "$@" >"$out/$name.log" 2>&1
  step_rc=$?
  local note=""
  [ "$step_rc" -eq 124 ] && note=" (timed out: finished cases are kept)"
  printf '%-28s exit %3d  %4ds%s\n' "$name" "$step_rc" $((SECONDS - t0)) "$note" | tee -a "$out/steps.txt"
  tail -3 "$out/$name.log"
  return "$step_rc"
}

if [ ! -x "$bin" ]; then
  msg="gpu-check: no vitbench binary at $bin (build one with CGO_ENABLED=0 go build -o vitbench ./cmd/vitbench)"
  echo "$msg" | tee -a "$out/steps.txt" >&2
  exit 2
fi

# The loader path: every nvidia/*/lib and nvidia/*/lib64 folder of the
# first python3 on PATH (its site-packages and its user site), first.
wheel_libs=""
if command -v python3 >/dev/null; then
  wheel_libs=$(timeout 30 python3 - 2>/dev/null <<'PY'
import glob, os, site
roots = []
try:
    roots += site.getsitepackages()
except AttributeError:  # an old virtualenv's site module
    pass
try:
    roots.append(site.getusersitepackages())
except AttributeError:
    pass
dirs = []
for root in roots:
    for sub in ("lib", "lib64"):
        for d in sorted(glob.glob(os.path.join(root, "nvidia", "*", sub))):
            if os.path.isdir(d) and d not in dirs:
                dirs.append(d)
print(":".join(dirs))
PY
  )
fi
if [ -n "$wheel_libs" ]; then
  export LD_LIBRARY_PATH="$wheel_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export VITBENCH_CUDA_LIBS="$wheel_libs${VITBENCH_CUDA_LIBS:+:$VITBENCH_CUDA_LIBS}"
fi

have_torch=false
if command -v python3 >/dev/null && timeout 60 python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  have_torch=true
fi

{
  echo "# date"; date -u
  echo "# nvidia-smi"; nvidia-smi 2>&1 | head -20
  echo "# python3"; command -v python3 && timeout 60 python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())' 2>&1
  echo "# loader path exported by gpu-check.sh (nvidia/*/lib and lib64 of python3's site-packages and user site)"
  echo "wheel library folders: ${wheel_libs:-none found}"
  echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
  echo "VITBENCH_CUDA_LIBS=${VITBENCH_CUDA_LIBS:-}"
  echo "# CUDA libraries on the loader's path"; ldconfig -p 2>/dev/null | grep -E 'libcuda\.|libnvrtc|libcublas' | head -20
  echo "# CUDA libraries in toolkit folders"
  for f in /usr/local/cuda*/lib64/libnvrtc* /usr/local/cuda*/lib64/libcublas*; do
    [ -e "$f" ] && echo "$f"
  done | head -20
} >"$out/machine.txt" 2>&1

# --- preflight: can each CUDA backend start, compile and load a kernel? ---
pf_start=$SECONDS
pf_problems=()
# info opens every registered backend (the CUDA emulator, built with g++ at
# its first use, included), so a slow info is reported but only what it
# says about the four CUDA backends, and the checks below, decide.
step info 30 "$bin" info
info_rc=$step_rc
if [ "$info_rc" -ne 0 ]; then
  echo "preflight: vitbench info exit $info_rc (not fatal: the checks decide)" | tee -a "$out/steps.txt"
fi
while IFS= read -r l; do
  pf_problems+=("vitbench info: ${l#"${l%%[! ]*}"}")
done < <(grep -E "^  ($cu|$cu-tf32|$cu-bf16|$cu-fp16) +unavailable" "$out/info.log"
  [ "$cu" = cuda ] && grep -E '^cuda libs: .*not found' "$out/info.log")
grep -E '^  cuda|^cuda' "$out/info.log"

# preflight_check BACKEND SECONDS: the preflight case on BACKEND alone;
# preflight-BACKEND.{log,json} and .rc (exit status and seconds).
preflight_check() {
  local b=$1 secs=$2 t0=$SECONDS
  timeout --signal=TERM --kill-after=5 "$secs" "$bin" check -backend "$b" -fixtures fixtures \
    -run "$preflight_case" -json "$out/preflight-$b.json" >"$out/preflight-$b.log" 2>&1
  echo "$? $((SECONDS - t0))" >"$out/preflight-$b.rc"
}
# What the preflight has left, but at least 10 s: four processes loading
# cuBLAS and compiling at once must not read as a hang, nor a slow info
# leave the checks no time.
pf_left=$((preflight_secs - (SECONDS - pf_start)))
[ "$pf_left" -lt 10 ] && pf_left=10
echo "=== preflight: $preflight_case on ${cuda_backends[*]} (limit ${pf_left}s, one process each)"
# They measure nothing, so they share the GPU.
pids=()
for b in "${cuda_backends[@]}"; do
  rm -f "$out/preflight-$b.json" "$out/preflight-$b.rc"
  preflight_check "$b" "$pf_left" &
  pids+=($!)
done
wait "${pids[@]}"
for b in "${cuda_backends[@]}"; do
  read -r rc secs 2>/dev/null <"$out/preflight-$b.rc" || rc=255 secs=0
  note=""
  [ "$rc" -eq 124 ] && note=" (timed out)"
  printf '%-28s exit %3d  %4ds%s\n' "preflight-$b" "$rc" "$secs" "$note" | tee -a "$out/steps.txt"
  status=""
  [ -s "$out/preflight-$b.json" ] && status=$(grep -oE '"status": *"[A-Z]+"' "$out/preflight-$b.json" | grep -oE '[A-Z]+' | sort -u | paste -sd,)
  if [ "$rc" -eq 0 ] && [ "$status" = OK ]; then
    continue
  fi
  case $rc in
  124) pf_problems+=("$b: check of $preflight_case timed out after ${pf_left}s (hangs while starting, compiling or loading)") ;;
  0) pf_problems+=("$b: check of $preflight_case: status ${status:-none}") ;;
  *) pf_problems+=("$b: check of $preflight_case: exit $rc, status ${status:-none}") ;;
  esac
  # The reason of each row (NVRTC's or the loader's message), else the log's last lines.
  reasons=$(grep -oE '"reason": *"([^"\\]|\\.)+"' "$out/preflight-$b.json" 2>/dev/null | sed -E 's/^"reason": *"//; s/"$//; s/\\u003c/</g; s/\\u003e/>/g; s/\\u0026/\&/g; s/\\n/ /g; s/\\"/"/g')
  [ -z "$reasons" ] && reasons=$(grep -iE 'nvrtc|compil|load|cuda_error|error|fail|not found|unavailable' "$out/preflight-$b.log" | head -5)
  [ -z "$reasons" ] && reasons=$(tail -3 "$out/preflight-$b.log")
  while IFS= read -r l; do
    [ -n "$l" ] && pf_problems+=("$b:   $l")
  done <<<"$reasons"
done

# For the record (not timed as part of the preflight).
timeout 10 "$bin" info -json >"$out/info.json" 2>/dev/null

if ((${#pf_problems[@]})); then
  {
    echo "gpu-check preflight failed: CUDA cannot start, compile or load here, so nothing was measured."
    echo "Loader path: LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-} VITBENCH_CUDA_LIBS=${VITBENCH_CUDA_LIBS:-}"
    printf '%s\n' "${pf_problems[@]}"
  } >"$out/preflight-failed.txt"
  echo "preflight                    FAILED: ${#pf_problems[@]} problem lines in preflight-failed.txt; no further step runs" >>"$out/steps.txt"
  {
    echo
    echo "################################################################################"
    echo "##  GPU-CHECK PREFLIGHT FAILED: no GPU minutes spent. Errors:"
    echo "##"
    for l in "${pf_problems[@]}"; do echo "##  $l"; done
    echo "##"
    echo "##  Written: $out/preflight-failed.txt, $out/steps.txt, $out/machine.txt, logs"
    echo "################################################################################"
  } >&2
  exit 3
fi
echo "preflight                    ok: ${cuda_backends[*]} start, compile and load ($((SECONDS - pf_start))s)" | tee -a "$out/steps.txt"

# --- conformance ---
step check-cuda 150 "$bin" check -backend "$cu" -fixtures fixtures -v -json "$out/check.json"
# The reduced-precision checks measure nothing: they may share the GPU
# (one process each).
check_reduced() {
  local pids=() p
  for p in tf32 bf16 fp16; do
    "$bin" check -backend "$cu-$p" -fixtures fixtures -json "$out/check-$p.json" >"$out/check-$p.txt" 2>&1 &
    pids+=($!)
  done
  local rc=0
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  tail -n 4 "$out"/check-tf32.txt "$out"/check-bf16.txt "$out"/check-fp16.txt
  return $rc
}
export -f check_reduced
export bin out cu
step check-reduced 90 bash -c check_reduced

# Agreement with the CPU, one process per backend, one after another.
step agree-cuda 75 "$bin" agree -ref cpu -backend "$cu" -json "$out/agree-cuda.json"
for b in "$cu-tf32" "$cu-bf16" "$cu-fp16"; do
  step "agree-$b" 45 "$bin" agree -ref cpu -backend "$b" -json "$out/agree-$b.json"
done

# Case names by kind, from the case list's Markdown table.
cases_of() { "$bin" list | awk -F'|' -v k="$1" '{gsub(/ /, "", $2); gsub(/ /, "", $3)} $3 == k {print $2}'; }
components="^($(cases_of component | paste -sd'|'))\$"
networks="^($(cases_of network | paste -sd'|'))\$"
big="^(vit_s16|vit_b16|deit_s|t2t_vit_14|volo_d1)$"
timing=(-count 10 -warmup 3 -min-sample 5ms -threads 1)
tb=(python3 reference/bench_torch.py --device cuda --threads 1 --count 10 --warmup 3 --min-sample-ms 5)

# bench NAME LIMIT BACKEND REGEX [ARGS...]: vitbench timing into NAME.txt/.json.
bench() {
  local name=$1 secs=$2 backend=$3 re=$4
  shift 4
  step "$name" "$secs" "$bin" bench -backend "$backend" -run "$re" "${timing[@]}" "$@" \
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

for b in "$cu" "$cu-bf16"; do
  step "agree-b64-$b" 40 "$bin" agree -ref cpu -backend "$b" -run "$big" -batch 64 -json "$out/agree-b64-$b.json"
done

# --- timing ---
bench bench-components 90 "$cu" "$components"
torch torch-components 90 fp32 "$components"
bench bench-networks 120 "$cu" "$networks"
torch torch-networks 120 fp32 "$networks"
bench bench-b64-cuda 25 "$cu" "$big" -batch 64
bench bench-b64-cuda-tf32 25 "$cu-tf32" "$big" -batch 64
bench bench-b64-cuda-bf16 25 "$cu-bf16" "$big" -batch 64
torch torch-b64 40 fp32 "$big" --batch 64
torch torch-b64-tf32 40 tf32 "$big" --batch 64
torch torch-b64-bf16 40 bf16 "$big" --batch 64
bench bench-components-cuda-tf32 45 "$cu-tf32" "$components"
bench bench-components-cuda-bf16 45 "$cu-bf16" "$components"
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
