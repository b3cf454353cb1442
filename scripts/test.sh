#!/usr/bin/env bash
# Installs and builds as needed (warnings are errors), then runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
IPUSIM_WERROR=ON scripts/setup.sh build
cd build
ctest -j"$(nproc)" --output-on-failure
