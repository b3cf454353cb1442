#!/usr/bin/env bash
# The main job on the shipped default: installs and builds as needed, then compares
# sharded with pipelined execution of the seed MLP training on an IPU-M2000.
# Extra arguments go to `ipusim run` (e.g. --json, --mode pipelined).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build ipusim  # only what the demo runs; scripts/test.sh builds the rest
exec build/ipusim run scenarios/mlp-training.json "$@"
