#!/usr/bin/env bash
# Regenerates models/validation/*.json: the models of the published results that
# scenarios/validation/published.json compares ipusim with, each as Graphcore's
# configuration builds it (graphcore/examples; docs/validation.md cites each setting).
# --check: write nothing, exit 1 if a shipped file differs from what would be generated.
set -euo pipefail
cd "$(dirname "$0")/.."
out=models/validation
check=0
[ "${1:-}" = "--check" ] && check=1

bert_large=(--layers-per-ipu 3,7,7,7 --hidden 1024 --heads 16 --ffn 4096 --vocab 30400 --split-qkv --hidden-dropout 0.1)
declare -A models=(
  [bert-large-sl128]="scripts/make_bert_model.py ${bert_large[*]} --seq 128 --masked 20 --name bert-large-sl128"
  [bert-large-sl384]="scripts/make_bert_model.py ${bert_large[*]} --seq 384 --masked 56 --name bert-large-sl384"
  [bert-large-sl128-packed]="scripts/make_bert_model.py ${bert_large[*]} --seq 128 --masked 20 --sequences-per-pack 3 --name bert-large-sl128-packed"
  [bert-large-sl512-packed]="scripts/make_bert_model.py ${bert_large[*]} --seq 512 --masked 76 --sequences-per-pack 3 --name bert-large-sl512-packed"
  [bert-base-sl128]="scripts/make_bert_model.py --layers-per-ipu 4,4,4 --encoder-start-ipu 1 --hidden 768 --heads 12 --ffn 3072 --vocab 30400 --split-qkv --hidden-dropout 0.1 --seq 128 --masked 20 --name bert-base-sl128"
  [resnet50-one-ipu]="scripts/make_resnet_model.py --depth 50 --layers-per-ipu 16 --stage-splits 1,3,4,6,8,11 --eight-bit-io --name resnet50-one-ipu"
  [vit-b16]="scripts/make_vit_model.py --preset vit-b-16 --layers-per-ipu 3,3,3,3 --hidden-dropout 0.1 --attention-dropout 0.1 --representation-size 768 --name vit-b16"
)
stale=0
for name in $(printf '%s\n' "${!models[@]}" | sort); do
  # shellcheck disable=SC2086
  text=$(python3 ${models[$name]})
  if ((check)); then
    if [ "$text" != "$(cat "$out/$name.json" 2>/dev/null)" ]; then
      echo "out of date: $out/$name.json (run scripts/make_validation_models.sh)" >&2
      stale=1
    fi
  else
    printf '%s\n' "$text" > "$out/$name.json"
    echo "$out/$name.json"
  fi
done
exit $stale
