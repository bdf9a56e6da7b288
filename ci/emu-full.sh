#!/usr/bin/env bash
# The long CUDA-emulator job: every committed fixture on cuda-emu and on
# its tf32, bf16 and fp16 variants, then every fixture again with the
# emulator and kernels under AddressSanitizer and UndefinedBehaviorSanitizer
# (ci/test.sh runs a subset of them). With the large network fixtures
# (vit_l16, volo_d5_512, ...) this takes hours on 2 cores: run it on a big
# machine, or pass -run through CHECK_RUN to choose cases.
#
#   ci/emu-full.sh [OUT]        (from the repository root; OUT default emu-out)
set -euo pipefail
source "$(dirname "$0")/env.sh"
out=${1:-emu-out}
mkdir -p "$out"
go build -o "$out/vitbench" ./cmd/vitbench
rc=0
for b in cuda-emu cuda-emu-tf32 cuda-emu-bf16 cuda-emu-fp16; do
  echo "=== $b"
  "$out/vitbench" check -backend "$b" -fixtures fixtures ${CHECK_RUN:+-run "$CHECK_RUN"} -json "$out/check-$b.json" >"$out/check-$b.txt" 2>&1 || rc=1
  tail -1 "$out/check-$b.txt"
done
echo "=== cuda-emu under ASan + UBSan"
LD_PRELOAD="$(g++ -print-file-name=libasan.so)" ASAN_OPTIONS=protect_shadow_gap=0:detect_leaks=0 \
  VITBENCH_CUDA_EMU_SANITIZE=address,undefined VITBENCH_CUDA_EMU_SEED=11 \
  "$out/vitbench" check -backend cuda-emu -fixtures fixtures ${CHECK_RUN:+-run "$CHECK_RUN"} -json "$out/check-asan.json" >"$out/check-asan.txt" 2>&1 || rc=1
tail -1 "$out/check-asan.txt"
exit $rc
