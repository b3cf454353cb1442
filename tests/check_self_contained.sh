#!/usr/bin/env bash
# The repository is self-contained: code, configs, tests, scripts and docs cite the reference
# notes in docs/reference/ (docs/reference/README.md), never a document outside the repository
# (the old shared reference folder, or design notes that never existed in it).
#
# Usage: tests/check_self_contained.sh [REPO_ROOT]   (default: this script's parent's parent)
# Exit 0 when nothing outside docs/reference/ cites an outside document; exit 1 and print each
# offending line otherwise.
set -euo pipefail

root="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
cd "$root"

# Names of the outside documents. Written so that this file does not match itself
# ("shared[/]reference" matches the path, not this text).
pattern='popart-semantics\.md|pipeline-formulas\.md|pipeline-schedules\.md|ipu-hardware\.md|simgrid-notes\.md|design-notes\.md|large-models-on-ipus\.md|shared[/]reference'
# The in-repository notes keep some of those file names: a citation by their repository path is
# the right one, so it is removed from a line before the line is tested again.
in_repo='docs/reference/[A-Za-z0-9._-]+\.md'

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  candidates=$(git grep -n -I -E "$pattern" -- . ':!docs/reference' || true)
else
  candidates=$(grep -rnI -E "$pattern" --exclude-dir=.git --exclude-dir='build*' . |
    sed 's#^\./##' | grep -v '^docs/reference/' || true)
fi

hits=""
while IFS= read -r line; do
  [ -n "$line" ] || continue
  rest="${line#*:}"      # drop "path:"
  text="${rest#*:}"      # drop "line:"
  stripped=$(printf '%s\n' "$text" | sed -E "s#${in_repo}##g")
  if grep -qE "$pattern" <<< "$stripped"; then
    hits+="${line}"$'\n'
  fi
done <<< "$candidates"

if [ -n "$hits" ]; then
  printf '%s' "$hits" | while IFS= read -r line; do
    printf '%s: cites a document outside the repository; cite docs/reference/ instead\n' "$line"
  done
  exit 1
fi
exit 0
