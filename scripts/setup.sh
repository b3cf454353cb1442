#!/usr/bin/env bash
# Installs what ipusim needs from Debian's packages (only what is missing) and builds it.
# Usage: scripts/setup.sh [BUILD_DIR [TARGET...]]   (default: build, every target). Every caller
# configures with the same flags (warnings are errors), so the demo's build of the `ipusim` target
# is reused by the tests' build of the rest: each file is compiled once. IPUSIM_SETUP_ONLY=1
# installs the packages and builds nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build}
shift $(( $# > 0 ? 1 : 0 ))
targets=("$@")

# Build and test dependencies. chromium renders reports in the browser test; parallel
# runs the distributed-sweep test; libonnx-dev (with libprotobuf-dev) imports ONNX models,
# python3-onnx writes the ONNX test fixtures; pybind11 builds the Python module (sim/python/), pytest
# tests it, and pandas is what its to_dataframe returns.
packages=(cmake make g++ pkg-config libsimgrid-dev libboost-graph-dev nlohmann-json3-dev catch2 libcli11-dev
          libonnx-dev libprotobuf-dev python3-onnx parallel chromium python3 python3-dev python3-pybind11 pybind11-dev
          python3-pytest python3-pandas)
# PyTorch for the real-exporter test (tests/test_onnx_torch.cpp): about 250 packages, 2.7
# minutes to install here, so CI (CI=true) and whoever asks (IPUSIM_TORCH_TESTS=1) get it;
# elsewhere that test skips and says so.
if [ "${CI:-}" = "true" ] || [ "${IPUSIM_TORCH_TESTS:-0}" = "1" ]; then
  packages+=(python3-torch python3-torchvision)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

[ "${IPUSIM_SETUP_ONLY:-0}" = 1 ] && exit 0
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DIPUSIM_WERROR=ON >&2
if ((${#targets[@]})); then
  cmake --build "$build_dir" -j"$(nproc)" --target "${targets[@]}" >&2
else
  cmake --build "$build_dir" -j"$(nproc)" >&2
fi
