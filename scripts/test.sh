#!/usr/bin/env bash
# Installs and builds as needed (warnings are errors; a build the demo left is reused), then runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
cd build
ctest -j"$(nproc)" --output-on-failure
