#!/usr/bin/env bash
# Regenerates results/: the seed question, virtualGraph-only sharding against
# pipelineStage pipelining, for the MLP and for BERT (stages sharing IPU0: the heads
# come back to IPU0 in a new stage), across gradient accumulation G and the number of
# IPUs the layers are split over (2 vs 4, as model variants).
#
#   scripts/make_results.sh [BUILD_DIR]     (default: build; built if missing)
#
# Writes results/inputs/*.json (model variants, by scripts/make_bert_model.py),
# results/raw/ (run documents, traces and sweep folders; not committed) and the report:
# results/report.html, results/report.md, results/figures/*.svg. Sweep definitions are
# results/sweeps/*.json. About a minute on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build}
if [ ! -x "$build_dir/ipusim" ]; then scripts/setup.sh "$build_dir"; fi
ipusim="$build_dir/ipusim"
jobs=$(nproc)

# Model variants: the shipped BERT models with their layers on 2 IPUs instead of 4.
mkdir -p results/inputs
python3 scripts/make_bert_model.py --layers-per-ipu 2,2 --hidden 128 --heads 2 --ffn 512 --seq 128 \
  --vocab 8192 --masked 20 --name bert-tiny-2ipu -o results/inputs/bert-tiny-2ipu.json
python3 scripts/make_bert_model.py --layers-per-ipu 0,12 --encoder-start-ipu 1 --hidden 768 --heads 12 \
  --ffn 3072 --seq 128 --vocab 30528 --masked 20 --name bert-base-2ipu -o results/inputs/bert-base-2ipu.json

rm -rf results/raw
mkdir -p results/raw

# Single runs: throughput, utilisation, memory and tables of each scenario.
run() {  # NAME SCENARIO [--set ...]
  local name=$1 scenario=$2
  shift 2
  "$ipusim" run "$scenario" --mode both --json -o "results/raw/$name.json" "$@"
}
run mlp-inference scenarios/mlp-inference.json
run mlp-training scenarios/mlp-training.json --trace results/raw/mlp-training.trace.json
run bert-tiny-training-2ipu scenarios/bert-tiny-training.json \
  --set name=bert-tiny-training-2ipu --set model=../results/inputs/bert-tiny-2ipu.json
run bert-tiny-training scenarios/bert-tiny-training.json --trace results/raw/bert-tiny-training.trace.json
run bert-base-training-2ipu scenarios/bert-base-training.json \
  --set name=bert-base-training-2ipu --set model=../results/inputs/bert-base-2ipu.json
run bert-base-training scenarios/bert-base-training.json

# Sweeps. Exit code 4 means some points failed (the PopART depth rule G >= stages):
# those points are part of the result and show as gaps.
sweeps=(mlp-inference-depth mlp-training-g bert-tiny-training-g-ipus bert-base-training-g-ipus)
for s in "${sweeps[@]}"; do
  status=0
  "$ipusim" sweep "results/sweeps/$s.json" -o "results/raw/$s" -j"$jobs" || status=$?
  if [ "$status" -ne 0 ] && [ "$status" -ne 4 ]; then
    echo "make_results: sweep $s failed with exit code $status" >&2
    exit "$status"
  fi
done

inputs=(results/raw/mlp-inference.json results/raw/mlp-training.json
        results/raw/bert-tiny-training-2ipu.json results/raw/bert-tiny-training.json
        results/raw/bert-base-training-2ipu.json results/raw/bert-base-training.json)
for s in "${sweeps[@]}"; do inputs+=("results/raw/$s"); done
inputs+=(results/raw/mlp-training.trace.json results/raw/bert-tiny-training.trace.json)
"$ipusim" report "${inputs[@]}" -o results --force \
  --title "Sharded (virtualGraph) vs pipelined (pipelineStage) execution on Graphcore IPUs"
