# Sourced by the ci/ scripts: puts Go on PATH and moves to the repository root.
export PATH="$PATH:/usr/local/go/bin"
cd "$(dirname "${BASH_SOURCE[0]}")/.."
