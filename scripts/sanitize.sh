#!/usr/bin/env bash
# The sanitizer job: builds ipusim, its tests and the libFuzzer target with clang and
# AddressSanitizer + UndefinedBehaviorSanitizer (any finding is fatal), runs the whole
# test suite on that build, then fuzzes the loaders and the --set parser for a bounded
# time from a seed corpus of the shipped files. A crash, a sanitizer report, a leak, an
# uncaught exception or an unlocated input error fails it; the input that did it is kept
# in BUILD_DIR/fuzz-findings (turn it into a regression test: docs/reliability.md).
# Then fuzzes the ONNX importer structure-aware (tests/fuzz/fuzz_onnx.cpp: mutations of the
# parsed ModelProto) from the ONNX fixtures and, where PyTorch is installed, real exports.
# Usage: scripts/sanitize.sh [BUILD_DIR]   (default: build-sanitize)
#   FUZZ_SECONDS=90  how long to fuzz the loaders (0: no fuzzing)   SANITIZE_TESTS=0: skip the test suite
#   FUZZ_RUNS=N      fuzz N inputs instead (docs/reliability.md: FUZZ_RUNS=100000)
#   FUZZ_ONNX_SECONDS=60 / FUZZ_ONNX_RUNS=N   the same for the structure-aware ONNX target
#   FUZZ_TIMEOUT=10  seconds one input may take (a long campaign beside other work: 30)
#   FUZZ_SEED=1      libFuzzer's seed for both targets: with FUZZ_RUNS and FUZZ_ONNX_RUNS the
#                    same commit is fuzzed with the same inputs every time (CI's gate); a
#                    campaign that explores sets another seed, or 0 for a random one
#   CAMPAIGN_RUNS=20 inputs of the careless-user campaign through plan, through compare and
#                    report, and through run --schedules all (tests/fuzz/run_campaign.py; 0: none; docs/reliability.md: 10000)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build-sanitize}
fuzz_seconds=${FUZZ_SECONDS:-90}

packages=(clang-14 libclang-rt-14-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi
IPUSIM_SETUP_ONLY=1 scripts/setup.sh  # the other dependencies

# Warnings are errors in the release build (g++, scripts/test.sh); clang-14 here only finds bugs.
# -O1 and line tables only: sanitizer builds of the whole project compile in about twice
# the release build's time; the benchmark is left out.
cmake -S . -B "$build_dir" -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_BUILD_TYPE=Sanitize \
  -DCMAKE_CXX_FLAGS_SANITIZE="-O1 -gline-tables-only" -DIPUSIM_SANITIZE=ON -DIPUSIM_FUZZ=ON -DIPUSIM_WERROR=OFF >&2
cmake --build "$build_dir" -j"$(nproc)" --target ipusim ipusim_tests fuzz_loaders fuzz_onnx >&2

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:strict_string_checks=1:check_initialization_order=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

if [ "${SANITIZE_TESTS:-1}" != 0 ]; then
  # The golden transcripts pin the release build's output (g++, -O2): not this one's. Tests
  # labelled costly (tests/CMakeLists.txt) are the release suite's.
  (cd "$build_dir" && ctest -j"$(nproc)" --output-on-failure --label-exclude 'transcript|costly')
fi

if [ "$fuzz_seconds" != 0 ] || [ -n "${FUZZ_RUNS:-}" ]; then
  corpus="$build_dir/fuzz-corpus"
  findings="$build_dir/fuzz-findings"
  rm -rf "$corpus/seed"
  mkdir -p "$corpus/seed" "$corpus/work" "$findings"
  # Seeds: each shipped file behind its target's byte (0 model, 1 config, 2 scenario,
  # 3 sweep, 4 --set lines, 5 ONNX); scenarios and sweeps as they would sit in their folder.
  seed() { { printf "\\x$(printf %02x "$1")"; cat "$2"; } >"$corpus/seed/$1-$(basename "$2")"; }
  for f in models/*.json; do seed 0 "$f"; done
  for f in configs/*.json configs/ipus/*.json; do seed 1 "$f"; done
  for f in scenarios/*.json; do seed 2 "$f"; done
  for f in sweeps/*.json; do seed 3 "$f"; done
  printf '\x04execution.gradientAccumulation=8\nconfig.ipu.clockHz=1.85e9\nmodel.ops.0.flops=1e9\n' >"$corpus/seed/4-sets"
  printf '\x04execution.schedule=1f1b\nconfig.links.0.latencySeconds=0\n' >"$corpus/seed/4-sets-2"
  onnx_dir="$build_dir/fuzz-onnx"  # target 5: the ONNX fixtures of the tests (when python3-onnx is there)
  rm -rf "$onnx_dir" && mkdir -p "$onnx_dir"
  if /usr/bin/python3 tests/make_onnx_fixtures.py "$onnx_dir"; then
    for f in "$onnx_dir"/*.onnx; do seed 5 "$f"; done
  fi
  limit=(-max_total_time="$fuzz_seconds")
  [ -n "${FUZZ_RUNS:-}" ] && limit=(-runs="$FUZZ_RUNS")
  "$build_dir/fuzz_loaders" "${limit[@]}" -seed="${FUZZ_SEED:-1}" -timeout="${FUZZ_TIMEOUT:-10}" -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$findings/" "$corpus/work" "$corpus/seed"
fi

onnx_seconds=${FUZZ_ONNX_SECONDS:-60}
if [ "$onnx_seconds" != 0 ] || [ -n "${FUZZ_ONNX_RUNS:-}" ]; then
  corpus="$build_dir/fuzz-onnx-corpus"
  findings="$build_dir/fuzz-findings"
  rm -rf "$corpus/seed"
  mkdir -p "$corpus/seed" "$corpus/work" "$findings"
  /usr/bin/python3 tests/make_onnx_fixtures.py "$corpus/seed" || true
  # Real exporter output (a decoder with Constant and Shape nodes, tied embeddings), when PyTorch is there.
  /usr/bin/python3 tests/torch_export.py "$corpus/seed" decoder >/dev/null 2>&1 || true
  /usr/bin/python3 tests/torch_export.py "$corpus/seed" decoder17 >/dev/null 2>&1 || true
  /usr/bin/python3 tests/torch_export.py "$corpus/seed" encoder >/dev/null 2>&1 || true
  # Seeds larger than -max_len would arrive cut (no longer a ModelProto): left out.
  find "$corpus/seed" -type f \( ! -name '*.onnx' -o -size +600k \) -delete
  limit=(-max_total_time="$onnx_seconds")
  [ -n "${FUZZ_ONNX_RUNS:-}" ] && limit=(-runs="$FUZZ_ONNX_RUNS")
  "$build_dir/fuzz_onnx" "${limit[@]}" -seed="${FUZZ_SEED:-1}" -timeout="${FUZZ_TIMEOUT:-10}" -rss_limit_mb=2048 -max_len=614400 \
    -print_final_stats=1 -artifact_prefix="$findings/onnx-" "$corpus/work" "$corpus/seed"
fi

# The careless user's campaign (tests/fuzz/run_campaign.py), a short run of each long one:
# mutated scenarios through `plan`, mutated run documents through `compare` and `report`,
# mutated scenarios through every what-if schedule and the out-of-memory advice (`run --schedules all`).
# Peak memory is held to the announced estimate on the release build when there is one.
campaign_runs=${CAMPAIGN_RUNS:-20}
if [ "$campaign_runs" != 0 ]; then
  release=()
  [ -x build/ipusim ] && release=(--release build/ipusim)
  for command in plan documents whatif; do
    /usr/bin/python3 tests/fuzz/run_campaign.py --binary "$build_dir/ipusim" "${release[@]}" --runs "$campaign_runs" \
      --seed 1 --jobs "$(nproc)" --command "$command" --out "$build_dir/campaign-$command" >/dev/null ||
      { echo "campaign through $command: findings in $build_dir/campaign-$command" >&2; exit 1; }
  done
fi
