#!/usr/bin/env bash
# The sanitizer job: builds ipusim, its tests and the libFuzzer target with clang and
# AddressSanitizer + UndefinedBehaviorSanitizer (any finding is fatal), runs the whole
# test suite on that build, then fuzzes the loaders and the --set parser for a bounded
# time from a seed corpus of the shipped files. A crash, a sanitizer report, a leak, an
# uncaught exception or an unlocated input error fails it; the input that did it is kept
# in BUILD_DIR/fuzz-findings (turn it into a regression test: docs/reliability.md).
# Usage: scripts/sanitize.sh [BUILD_DIR]   (default: build-sanitize)
#   FUZZ_SECONDS=90  how long to fuzz (0: no fuzzing)   SANITIZE_TESTS=0: skip the test suite
#   FUZZ_RUNS=N      fuzz N inputs instead (docs/reliability.md: FUZZ_RUNS=100000)
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

# -O1 and line tables only: sanitizer builds of the whole project compile in about twice
# the release build's time; the benchmark is left out.
cmake -S . -B "$build_dir" -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_BUILD_TYPE=Sanitize \
  -DCMAKE_CXX_FLAGS_SANITIZE="-O1 -gline-tables-only" -DIPUSIM_SANITIZE=ON -DIPUSIM_FUZZ=ON >&2
cmake --build "$build_dir" -j"$(nproc)" --target ipusim ipusim_tests fuzz_loaders >&2

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:strict_string_checks=1:check_initialization_order=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

if [ "${SANITIZE_TESTS:-1}" != 0 ]; then
  (cd "$build_dir" && ctest -j"$(nproc)" --output-on-failure)
fi

if [ "$fuzz_seconds" != 0 ] || [ -n "${FUZZ_RUNS:-}" ]; then
  corpus="$build_dir/fuzz-corpus"
  findings="$build_dir/fuzz-findings"
  rm -rf "$corpus/seed"
  mkdir -p "$corpus/seed" "$corpus/work" "$findings"
  # Seeds: each shipped file behind its target's byte (0 model, 1 config, 2 scenario,
  # 3 sweep, 4 --set lines); scenarios and sweeps as they would sit in their folder.
  seed() { { printf "\\x$(printf %02x "$1")"; cat "$2"; } >"$corpus/seed/$1-$(basename "$2")"; }
  for f in models/*.json; do seed 0 "$f"; done
  for f in configs/*.json configs/ipus/*.json; do seed 1 "$f"; done
  for f in scenarios/*.json; do seed 2 "$f"; done
  for f in sweeps/*.json; do seed 3 "$f"; done
  printf '\x04execution.gradientAccumulation=8\nconfig.ipu.clockHz=1.85e9\nmodel.ops.0.flops=1e9\n' >"$corpus/seed/4-sets"
  printf '\x04execution.schedule=1f1b\nconfig.links.0.latencySeconds=0\n' >"$corpus/seed/4-sets-2"
  limit=(-max_total_time="$fuzz_seconds")
  [ -n "${FUZZ_RUNS:-}" ] && limit=(-runs="$FUZZ_RUNS")
  "$build_dir/fuzz_loaders" "${limit[@]}" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$findings/" "$corpus/work" "$corpus/seed"
fi
