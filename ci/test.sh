#!/usr/bin/env bash
# The test command of the README: installs what is missing, then runs every
# check vitbench has on the CPU. Exit status 0 only when all pass.
set -euo pipefail
source "$(dirname "$0")/env.sh"
# CI set: the CUDA tests fail instead of skipping when NVRTC cannot be
# loaded (install-deps.sh installs it), so the kernel compile checks
# cannot silently vanish.
export CI=${CI:-1}
ci/install-deps.sh

step() { echo; echo "=== $*"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Every run on the CUDA emulator below (Go tests and vitbench) appends the
# kernels it launched here; the emulator step checks that all were.
export VITBENCH_CUDA_EMU_TRACE="$tmp/emu-trace.txt"

step "gofmt and go vet (SIMD and purego builds)"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then echo "gofmt would change: $unformatted"; exit 1; fi
go vet ./...
go vet -tags purego ./...
go vet -tags mutation ./...

step "generated assembly is up to date (avo)"
for pkg in impl/cpu/internal/kern impl/cpu/internal/peak; do
  ( cd "$pkg" && go generate ./... )
done
git diff --exit-code -- impl/cpu/internal || { echo "regenerating the assembly changed it: commit the generator's output"; exit 1; }

step "CUDA without a GPU: every kernel compiled by NVRTC for sm_80 and sm_90, every built-in graph dry-run against the kernels' PTX signatures"
go test -count=1 -run 'TestCompileEveryKernel|TestDryRunEveryBuiltinCase|TestMissingLibraries' -v ./impl/cuda/ |
  grep -E '^(=== RUN|--- |ok|FAIL|PASS)|NVRTC|kernels launched' | grep -v '=== RUN'

step "Go tests, SIMD paths (every ISA this CPU has is exercised)"
go test -count=1 ./...

step "Go tests, pure-Go path forced (-tags purego)"
go test -count=1 -tags purego ./...

step "mutation suite: each named semantic mistake of the CPU backend (build tag mutation) must fail a committed fixture"
t0=$SECONDS
go test -tags mutation -count=1 -run 'TestMutations|TestSwitchAndReach' -v ./impl/cpu/ ./internal/mutation/ |
  grep -E '^(\||mutation suite|error/noise|--- |ok|FAIL|PASS|    mutation_test)' | grep -v '=== RUN'
echo "mutation suite took $((SECONDS - t0))s"

step "CPU worker pool and work splits under the race detector, with more helpers than cores (GOMAXPROCS=8)"
GOMAXPROCS=8 go test -race -count=1 -run 'TestParallelChunks|TestPool|TestGemmParallel|TestAttentionCoreSplits' ./impl/cpu/

step "fuzz targets, 10s each (readers of untrusted files: .npy/.npz, case.json, result files)"
# The committed corpora run as ordinary tests in every "go test" above and
# gate CI. This step explores for 10 s per target; what it finds is printed
# loudly, with the input it wrote under testdata/fuzz, to be committed with
# its fix, but it does not fail the submission: a new random finding says
# nothing about the change under test.
t0=$SECONDS
findings=0
for target in bench/npy:FuzzReadNPY bench/npy:FuzzOpenNPZ bench/fixture:FuzzReadDesc bench/results:FuzzReadBench; do
  if out=$(go test -run '^$' -fuzz "^${target#*:}\$" -fuzztime 10s -fuzzminimizetime 50x "./${target%%:*}/" 2>&1); then
    echo "$out" | tail -2
  elif echo "$out" | grep -q "Failing input written"; then
    findings=$((findings + 1))
    echo "$out" | tail -20
    echo "FUZZ FINDING in ${target#*:}: see the input above; commit it with a fix"
  elif echo "$out" | grep -q "context deadline exceeded"; then
    # The time ran out while minimizing a new corpus entry: no finding.
    echo "(${target#*:}: deadline reached while minimizing a new corpus entry)"
  else
    echo "$out" | tail -20
    exit 1
  fi
done
echo "fuzzing took $((SECONDS - t0))s, $findings new findings"

step "race detector: bench and CLI packages (-short: network fixtures and CLI binary tests are left to the runs above)"
t0=$SECONDS
go test -race -short -count=1 ./bench/... ./cmd/...
echo "race run took $((SECONDS - t0))s"

step "Python reference tests"
( cd reference && /usr/bin/python3 -m unittest discover -s tests )

# The committed fixtures but the large networks (builtin.json "large": tens to hundreds of GMACs,
# minutes on the Go path and the emulator): a -run regex (components, and the networks by name).
# The large ones are checked once, on the fastest path, in the next step.
not_large=$(/usr/bin/python3 -c 'import json; b = json.load(open("bench/cases/builtin.json"))
print("/|^(" + "|".join(c["name"] for c in b if c["kind"] == "network" and c.get("fixture", True) and not c.get("large")) + ")$")')

step "vitbench check: committed fixtures, SIMD path (all, the large networks too) and Go path (but the large networks)"
go build -o "$tmp/vitbench" ./cmd/vitbench
"$tmp/vitbench" info
t0=$SECONDS
"$tmp/vitbench" check -fixtures fixtures
echo "SIMD path check took $((SECONDS - t0))s"
"$tmp/vitbench" check -fixtures fixtures -isa go -run "$not_large" -json "$tmp/check-go.json" >/dev/null

step "vitbench check -backend cpu-bf16: committed fixtures but the large networks, @bf16 tolerances (NS rows without AVX512_BF16)"
t0=$SECONDS
if ! "$tmp/vitbench" check -fixtures fixtures -backend cpu-bf16 -run "$not_large" >"$tmp/check-bf16.log" 2>&1; then
  grep -vE '^\[' "$tmp/check-bf16.log" | grep -vE '\| OK +\|'
  exit 1
fi
tail -1 "$tmp/check-bf16.log"
echo "cpu-bf16 check took $((SECONDS - t0))s"

step "CUDA emulator: C++ tests of its scheduler and cuBLAS, plain and under AddressSanitizer + UndefinedBehaviorSanitizer"
for san in "" "-fsanitize=address,undefined -fno-sanitize-recover=all"; do
  # shellcheck disable=SC2086 # san is a list of flags
  g++ -std=c++17 -O1 -g -pthread $san -DSCHEDULER_EMU_TEST impl/cuda/emu/scheduler_test.cc impl/cuda/emu/scheduler.cc -o "$tmp/scheduler_test"
  ASAN_OPTIONS=detect_leaks=0 "$tmp/scheduler_test"
  # shellcheck disable=SC2086
  g++ -std=c++17 -O1 -g -pthread $san -DCUBLAS_EMU_TEST impl/cuda/emu/cublas_test.cc -ldl -o "$tmp/cublas_test"
  ASAN_OPTIONS=detect_leaks=0 "$tmp/cublas_test"
done

# emu_check LABEL ARGS...: vitbench check on the CUDA emulator, with the
# variables in emu_env; prints the summary, or every row when a case is not
# OK (NS included: an emulator that cannot start must not pass as "nothing
# failed").
emu_env=()
emu_check() {
  local label=$1 log="$tmp/emu-$1.log"
  shift
  local t0=$SECONDS
  if env "${emu_env[@]}" "$tmp/vitbench" check -fixtures fixtures "$@" >"$log" 2>&1 && grep -qE '^[1-9][0-9]* OK, 0 FAIL, 0 NS$' "$log"; then
    echo "$label: $(tail -1 "$log") in $((SECONDS - t0))s"
  else
    grep -vE '^\[' "$log" | grep -vE '\| OK +\|' || true
    echo "$label: not every case is OK (log above)"
    return 1
  fi
}

# The fixtures but the four largest networks (ddetr_transformer, vit_b16,
# volo_d1, volo_d1_b2): every kernel and op kind, on every edge path the
# fixtures have. ci/emu-full.sh runs the rest on every variant.
emu_subset='/|^(ddetr_transformer_.+|deformable_detr_r50_(small|b2|refine|two_stage)|deit_ti_distilled|t2t_vit_(7|14|t_14)|vit_s16|vit_ti16|vit_ti16_b2|vit_tiny_odd|volo_tiny_odd|clip_vit_tiny_odd|clip_text_tiny_short|clip_tiny_b2|clip_rn_tiny_odd|detr_transformer_small_b2|ipt_small_x3|ipt_chop_small_b2|vqgan_small_odd_b2|mingpt_tiny_short_b2)$'

step "CUDA emulator: every committed fixture but the large networks through the unchanged CUDA backend on cuda-emu (random schedule at barriers), then the subset on cuda-emu-tf32, -bf16 and -fp16 at their tolerance classes"
emu_check fp32 -backend cuda-emu -run "$not_large"
emu_check reduced -backend cuda-emu-tf32,cuda-emu-bf16,cuda-emu-fp16 -run "$emu_subset"

step "CUDA emulator with emulator and kernels under AddressSanitizer + UndefinedBehaviorSanitizer, another schedule seed (the subset)"
emu_env=("LD_PRELOAD=$(g++ -print-file-name=libasan.so)" ASAN_OPTIONS=protect_shadow_gap=0:detect_leaks=0
  VITBENCH_CUDA_EMU_SANITIZE=address,undefined VITBENCH_CUDA_EMU_SEED=7)
emu_check sanitizers -backend cuda-emu -run "$emu_subset"
emu_env=()

step "every CUDA kernel was launched on the emulator by the fixtures and tests above"
grep -ohE 'extern "C" __global__ void [A-Za-z_0-9]+' impl/cuda/kernels/*.cu | awk '{print $5}' | sort -u >"$tmp/kernels.txt"
# relu_f32 serves the standalone ReLU node, which no built-in graph builds
# (ReLU is fused into the GEMM epilogue); the dry run covers its dispatch.
unlaunched=$(sort -u "$VITBENCH_CUDA_EMU_TRACE" | comm -23 "$tmp/kernels.txt" - | grep -vx 'relu_f32' || true)
if [ -n "$unlaunched" ]; then
  echo "kernels no emulator run launched: $unlaunched"
  exit 1
fi
echo "$(sort -u "$VITBENCH_CUDA_EMU_TRACE" | wc -l) of $(wc -l <"$tmp/kernels.txt") kernels launched (relu_f32: no built-in graph)"

step "ci/gpu-check.sh rehearsed on the CUDA emulator (GPU_CHECK_BACKEND=cuda-emu, a 60 s budget): preflight, conformance steps, report"
GPU_CHECK_BACKEND=cuda-emu GPU_CHECK_BUDGET=60 ci/gpu-check.sh "$tmp/gpu-rehearsal" "$tmp/vitbench" >"$tmp/gpu-rehearsal.log" 2>&1 ||
  { cat "$tmp/gpu-rehearsal.log"; exit 1; }
grep -q '^preflight  *ok: cuda-emu cuda-emu-tf32 cuda-emu-bf16 cuda-emu-fp16' "$tmp/gpu-rehearsal/steps.txt"
grep -q '^check-cuda ' "$tmp/gpu-rehearsal/steps.txt"
test -s "$tmp/gpu-rehearsal/report.md" && test -s "$tmp/gpu-rehearsal/check.json"
cat "$tmp/gpu-rehearsal/steps.txt"

step "fixtures exported outside the repository are checked with -fixtures"
/usr/bin/python3 reference/export.py --out "$tmp/exported" --only "$not_large" -q
/usr/bin/python3 reference/export.py --out "$tmp/custom" --case-json ci/custom_cases/patch_embed_c7_e50_p5.json -q
/usr/bin/python3 reference/export.py --out "$tmp/custom" --case-json ci/custom_cases/soft_split_c2_k4_s3_p2_d2.json -q
"$tmp/vitbench" check -fixtures "$tmp/exported"
"$tmp/vitbench" check -fixtures "$tmp/custom"

step "a fixture with real weights in one command: export.py --weights (a saved state_dict), then check reads its weights.npz"
/usr/bin/python3 -c 'import sys; sys.path.insert(0, "reference"); import torch; from vitbench_ref import cases as C
c = [c for c in C.select() if c["name"] == "vit_tiny_odd"][0]; m = C.build_module(c["op"], c["params"]); torch.manual_seed(3)
torch.save({k: torch.randn(v.shape) * 0.05 + (1.0 if "norm" in k and k.endswith(".weight") else 0.0) for k, v in m.state_dict().items()}, sys.argv[1])' "$tmp/real.pth"
/usr/bin/python3 reference/export.py --out "$tmp/realw" --only '^vit_tiny_odd$' --weights "$tmp/real.pth" -q
test -s "$tmp/realw/vit_tiny_odd/weights.npz"
"$tmp/vitbench" check -fixtures "$tmp/realw"

step "the main job end to end (short), report with the PyTorch column"
"$tmp/vitbench" run -o "$tmp/run" -count 3 -min-sample 2ms -torch on -run 'vit_s16|t2t_ss2' >/dev/null
grep -q "PyTorch ms" "$tmp/run/report.md"
grep -q "patch_embed/vit_s16" "$tmp/run/report.md"
"$tmp/vitbench" compare "$tmp/run/bench.txt" "$tmp/run/bench.txt" >/dev/null
test -s "$tmp/run/report-throughput.png" && test -s "$tmp/run/report-roofline.png"
grep -q "](report-roofline.png)" "$tmp/run/report.md"
grep -q "## A/B: PyTorch → vitbench" "$tmp/run/report.md"
"$tmp/vitbench" compare -max-slowdown 10% "$tmp/run" "$tmp/run" >/dev/null

step "ONNX Runtime baseline end to end (two small cases): ORT columns; without onnxruntime-node the rows are NS with the reason"
"$tmp/vitbench" run -full -o "$tmp/run-ort" -count 3 -min-sample 2ms -torch off -ort on -run '^(fold/odd_b2_dil|mhsa/odd_b2_hd20)$' >/dev/null
grep -q "vs ORT" "$tmp/run-ort/report.md"
grep -q "^- ran: ONNX Runtime 1.30.0" "$tmp/run-ort/report.md"
grep -q "^BenchmarkFold/odd_b2_dil/backend=ort/" "$tmp/run-ort/ort.txt"
NODE_PATH= "$tmp/vitbench" run -full -o "$tmp/run-no-ort" -count 3 -min-sample 2ms -torch off -ort on -ort-modules "$tmp/no-ort" \
  -run '^fold/odd_b2_dil$' >/dev/null
grep -q "| fold/odd_b2_dil .*| NS .*onnxruntime-node not installed" "$tmp/run-no-ort/report.md"

step "deterministic metrics against ci/baselines/cpu.json (no timings; regenerate: go run ./cmd/vitbench baseline -o ci/baselines/cpu.json)"
"$tmp/vitbench" baseline -check ci/baselines/cpu.json

echo
echo "ci/test.sh: all checks passed"
