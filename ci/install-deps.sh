#!/usr/bin/env bash
# Installs what vitbench's tests and main job need on a fresh Debian 12
# machine: PyTorch, torchvision and NumPy from Debian (run with
# /usr/bin/python3), OpenBLAS on the OpenMP runtime as the system BLAS
# (see ../shared/anchors/cpu-baselines.md: with the reference BLAS or the
# pthreads OpenBLAS, PyTorch is not a fair baseline), and NVRTC from
# non-free, with which the tests compile every CUDA kernel. Idempotent.
set -euo pipefail

# NVRTC for the CUDA kernels' compile tests (no GPU needed): Debian's
# libnvrtc11.2 (NVRTC 11.8) lives in bookworm's non-free component, which a
# deb822 source file adds, signed by the Debian archive keyring.
nvrtc_src=/etc/apt/sources.list.d/vitbench-nonfree.sources
if ! dpkg-query -W -f='${Status}' libnvrtc11.2 2>/dev/null | grep -q "install ok installed" &&
  [ ! -e "$nvrtc_src" ] && [ "$(id -u)" -eq 0 ]; then
  cat >"$nvrtc_src" <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: contrib non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  echo "install-deps: added $nvrtc_src (bookworm contrib non-free, for libnvrtc11.2)"
fi

pkgs=(python3-torch python3-torchvision python3-numpy libopenblas0-openmp libnvrtc11.2 python3-onnx)
# Node.js and npm for the ONNX Runtime baseline (reference/bench_ort.js), from Debian when
# the machine has none.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  pkgs+=(nodejs npm)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: need root to install ${missing[*]}" >&2
    exit 1
  fi
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Point libblas/liblapack at OpenBLAS-openmp when it is installed but not chosen.
arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
for lib in libblas.so.3 liblapack.so.3; do
  target=/usr/lib/$arch/openblas-openmp/$lib
  if [ -e "$target" ] && [ "$(id -u)" -eq 0 ]; then
    update-alternatives --set "$lib-$arch" "$target" >/dev/null 2>&1 || true
  fi
done

# onnxruntime-node for the ONNX Runtime baseline, pinned, into a cache folder outside the
# repository (where vitbench run -ort and bench_ort.js look). Its install script would
# download GPU providers (and fails offline); the CPU binary ships inside the package.
ort_version=1.30.0
ort_dir=${XDG_CACHE_HOME:-$HOME/.cache}/vitbench/ort
if [ "$(node -p "try { require('$ort_dir/node_modules/onnxruntime-node/package.json').version } catch (e) { '' }" 2>/dev/null)" != "$ort_version" ]; then
  echo "install-deps: installing onnxruntime-node@$ort_version into $ort_dir"
  mkdir -p "$ort_dir"
  ONNXRUNTIME_NODE_INSTALL=skip npm install --prefix "$ort_dir" --no-save --no-audit --no-fund --loglevel=error \
    "onnxruntime-node@$ort_version" >/dev/null
fi
node -e "const o = require('$ort_dir/node_modules/onnxruntime-node'); console.log('install-deps: onnxruntime-node ' + o.env.versions.node)"

/usr/bin/python3 - <<'PY'
import numpy, torch, torchvision
print("install-deps: torch %s, torchvision %s, numpy %s" % (torch.__version__, torchvision.__version__, numpy.__version__))
PY
if ! command -v go >/dev/null 2>&1 && [ ! -x /usr/local/go/bin/go ]; then
  echo "install-deps: Go 1.26 is required (https://go.dev/dl); not found on PATH or in /usr/local/go" >&2
  exit 1
fi
