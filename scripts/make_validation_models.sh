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
# Graphcore's MLPerf Training BERT (mlcommons/training_results_v1.1 and _v2.0,
# Graphcore/benchmarks/bert/implementations/popart/configs): every config has hidden 1024,
# 16 heads, sequence 512, 76 mask tokens, vocab 30912, packs of up to 3 sequences,
# embedding_serialization_vocab_steps 4, projection_bias, no_dropout false. split_qkv is not
# passed: Graphcore's code concatenates the three weights into one matmul, the fused QKV of
# the mlperf graph. att_ffn_placement is each config's list verbatim.
mlperf_bert=(--implementation mlperf --num-layers 24 --hidden 1024 --heads 16 --ffn 4096 --seq 512 --masked 76
             --vocab 30912 --sequences-per-pack 3 --embedding-serialization-vocab-steps 4 --projection-bias
             --hidden-dropout 0.1)
declare -A models=(
  [bert-large-sl128]="scripts/make_bert_model.py ${bert_large[*]} --seq 128 --masked 20 --name bert-large-sl128"
  [bert-large-sl384]="scripts/make_bert_model.py ${bert_large[*]} --seq 384 --masked 56 --name bert-large-sl384"
  [bert-large-sl128-packed]="scripts/make_bert_model.py ${bert_large[*]} --seq 128 --masked 20 --sequences-per-pack 3 --name bert-large-sl128-packed"
  [bert-large-sl512-packed]="scripts/make_bert_model.py ${bert_large[*]} --seq 512 --masked 76 --sequences-per-pack 3 --name bert-large-sl512-packed"
  [bert-base-sl128]="scripts/make_bert_model.py --layers-per-ipu 4,4,4 --encoder-start-ipu 1 --hidden 768 --heads 12 --ffn 3072 --vocab 30400 --split-qkv --hidden-dropout 0.1 --seq 128 --masked 20 --name bert-base-sl128"
  [resnet50-one-ipu]="scripts/make_resnet_model.py --depth 50 --layers-per-ipu 16 --stage-splits 1,3,4,6,8,11 --eight-bit-io --name resnet50-one-ipu"
  # v1.1 configs/mk2/pod16-{closed,open}.json: no_attn_dropout, reduce_nsp_overhead
  [mlperf-v1.1-bert-pod16]="scripts/make_bert_model.py ${mlperf_bert[*]} --att-ffn-placement '[[1, [7, 6]], [2, [6, 7]], [3, [7, 6]], [0, [4, 5]]]' --reduce-nsp-overhead --name mlperf-v1.1-bert-pod16"
  # v1.1 configs/mk2/pod64-* and pod128-{closed,open}.json: no_attn_dropout, reduce_nsp_overhead
  [mlperf-v1.1-bert-pod64]="scripts/make_bert_model.py ${mlperf_bert[*]} --att-ffn-placement '[[1, [2, 2]], [2, [3, 3]], [3, [4, 3]], [4, [3, 4]], [5, [4, 3]], [6, [3, 4]], [7, [4, 3]], [0, [1, 2]]]' --reduce-nsp-overhead --name mlperf-v1.1-bert-pod64"
  # v2.0 configs/pod16-closed.json (and PaddlePaddle's POD16 placement): attention dropout, FLOAT8 checkpoints, NSP kept
  [mlperf-v2.0-bert-pod16]="scripts/make_bert_model.py ${mlperf_bert[*]} --att-ffn-placement '[[1, [3, 3]], [2, [4, 3]], [3, [3, 3]], [4, [3, 4]], [5, [4, 3]], [6, [3, 4]], [7, [4, 3]], [0, [0, 1]]]' --attention-dropout 0.1 --activation-checkpoint-dtype float8 --name mlperf-v2.0-bert-pod16"
  # v2.0 configs/pod64-, pod128-, pod256-closed.json (and PaddlePaddle's POD64 placement): attention dropout, FLOAT16 checkpoints, NSP kept
  [mlperf-v2.0-bert-pod64]="scripts/make_bert_model.py ${mlperf_bert[*]} --att-ffn-placement '[[1, [3, 3]], [2, [3, 3]], [3, [3, 3]], [4, [4, 3]], [5, [3, 4]], [6, [4, 3]], [7, [3, 4]], [0, [1, 1]]]' --attention-dropout 0.1 --name mlperf-v2.0-bert-pod64"
  [vit-b16]="scripts/make_vit_model.py --preset vit-b-16 --layers-per-ipu 3,3,3,3 --hidden-dropout 0.1 --attention-dropout 0.1 --representation-size 768 --name vit-b16"
)
stale=0
for name in $(printf '%s\n' "${!models[@]}" | sort); do
  # eval: a command's quoted arguments (the placement lists) stay one word each.
  text=$(eval "python3 ${models[$name]}")
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
