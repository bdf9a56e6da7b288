#!/usr/bin/env bash
# The main job of the README: installs what is missing, then runs
# conformance on every backend, benchmarks on every available backend and
# in PyTorch, and writes the report to ${1:-out}/report.md.
set -euo pipefail
source "$(dirname "$0")/env.sh"
ci/install-deps.sh
out=${1:-out}
go build -o "$out/vitbench" ./cmd/vitbench
"$out/vitbench" info
"$out/vitbench" run -o "$out" -torch on
echo "report: $out/report.md"
