#!/usr/bin/env bash
# Regenerates the golden transcripts (tests/transcripts/*.tesh) from the release build: each file's commands
# are run again and their expected output rewritten (comments, commands, masks and README phrases kept).
# Run it after a change that moves a shipped figure on purpose, then read `git diff tests/transcripts` and
# say why in the commit. A README phrase the new output no longer prints fails it: update README.md first.
#
#   scripts/make_transcripts.sh [BUILD_DIR] [FILE.tesh...]   (default: build; every transcript)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build}
shift || true
if [ ! -x "$build_dir/ipusim" ]; then scripts/setup.sh "$build_dir"; fi
files=("$@")
if ((${#files[@]} == 0)); then files=(tests/transcripts/*.tesh); fi
python_path=()
if [ -d "$build_dir/python" ]; then python_path=(--python-path "$build_dir/python"); fi
# The interpreter CMake found (the one the Python module was built for), else Debian's.
python=$(sed -n 's/^Python3_EXECUTABLE:[A-Z]*=//p' "$build_dir/CMakeCache.txt" 2>/dev/null || true)
exec "${python:-/usr/bin/python3}" tests/transcript.py --bin "$build_dir" "${python_path[@]}" --regenerate "${files[@]}"
