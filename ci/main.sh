#!/usr/bin/env bash
# The main job of the README: installs what is missing, then checks and times the quick set
# (one case of every op kind, the main networks among them) on every available backend and in
# PyTorch, and writes the report to ${1:-out}/report.md with bench.csv beside it. Further
# arguments go to `vitbench run`: `ci/main.sh out -full` checks and times every built-in case.
set -euo pipefail
source "$(dirname "$0")/env.sh"
ci/install-deps.sh
out=${1:-out}
shift $(( $# > 0 ? 1 : 0 ))
go build -o "$out/vitbench" ./cmd/vitbench
"$out/vitbench" info
"$out/vitbench" run -o "$out" -torch on "$@"
echo "report: $out/report.md"
