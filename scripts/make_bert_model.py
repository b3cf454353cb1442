#!/usr/bin/env python3
"""Generate a PopART-annotated BERT pre-training model in ipusim's model format.

The structure follows Graphcore's PopART BERT example (graphcore/examples,
nlp/bert/popart/bert_model.py and bert.py):

  stage 0, IPU0     embedding: word / position / segment Gathers, Adds, LayerNorm;
                    the attention mask input turned into a float "attention_bias"
                    (a host input may feed one IPU only, so every layer reads this
                    activation instead of the input)
  stage k, IPU i    the encoder layers placed on IPU i (stage k = rank of IPU i
                    among the IPUs in use, i.e. k = i when no IPU is skipped)
  stage P, IPU0     the heads, back on IPU0 in a NEW stage: MLM head (Slice of the
                    masked positions, which the data pipeline moves to the front of
                    the sequence, dense + Gelu + LayerNorm, then a MatMul with the SAME
                    word-embedding weight as stage 0: weight tying), NSP head (pooler
                    on the first token + Tanh + classifier), and the losses.
                    With --heads-on last they run on the last used IPU in its stage
                    instead, and the MLM decoder gets its own [vocab, hidden] weight
                    (ipusim does not copy a weight between IPUs).

Shapes are per sample (no batch dimension). Every op carries "virtualGraph" and
"pipelineStage". No op carries "flops": ipusim derives them from the op type and the
shapes (sim/cost/op_work.cpp; a MatMul contracts over the last dimension of its
FIRST input, so the attention MatMuls are shaped [heads,seq,dh] x [heads,dh,seq] and
[heads,seq,seq] x [heads,seq,dh]).

The MLM decoder MatMul multiplies by the word-embedding weight [vocab, hidden]
transposed (x @ W^T); the file lists the weight as stored, so its second input reads
[vocab, hidden] while the contracted dimension is hidden, the last of the first input.

The losses follow Graphcore's bert.py by default: Softmax over the logits, then
NllLoss against the labels (--loss softmax-nll). --loss softmax-cross-entropy uses one
fused SoftmaxCrossEntropy op per head instead. The MLM loss is computed per masked
token ([masked], PopART's ReductionType NoReduction) and then averaged by a ReduceMean:
the same maths as one Mean-reducing loss op, written so because ipusim's cost model
spreads an op over tiles by its OUTPUT elements, so a single op reducing the
[masked, vocab] probabilities to one value per sample would run (and gather its
megabytes of input) on one tile, far slower than PopART's distributed reduction.

Output is deterministic: the same arguments always give the same bytes.
"""

import argparse
import sys

from model_builder import DTYPES, Builder, Placement, dump, int_list, positive_int, write
from transformer_blocks import post_ln_layer


def layers_on_ipus(layers_per_ipu, encoder_start_ipu):
    """Absolute layer counts per IPU (index = IPU id).

    A list with at least `encoder_start_ipu` leading zeros is already absolute
    ([0,4,4,4] with start 1). Otherwise it is Graphcore's form, relative to the
    start IPU ([4,4,4] with start 1 means IPUs 1, 2, 3)."""
    start = encoder_start_ipu
    if start is None:
        return list(layers_per_ipu)
    if all(v == 0 for v in layers_per_ipu[:start]) and len(layers_per_ipu) > start:
        return list(layers_per_ipu)
    return [0] * start + list(layers_per_ipu)


def build(args):
    h, heads, ffn, seq = args.hidden, args.heads, args.ffn, args.seq
    if h % heads:
        raise SystemExit("error: --hidden %d is not a multiple of --heads %d" % (h, heads))
    if args.masked > seq:
        raise SystemExit("error: --masked %d exceeds --seq %d" % (args.masked, seq))
    if args.seq > args.max_positions:
        raise SystemExit("error: --seq %d exceeds --max-positions %d" % (seq, args.max_positions))
    per_ipu = layers_on_ipus(args.layers_per_ipu, args.encoder_start_ipu)
    num_layers = sum(per_ipu)
    if num_layers == 0:
        raise SystemExit("error: --layers-per-ipu places no encoder layer")
    if args.num_layers is not None and args.num_layers != num_layers:
        raise SystemExit("error: --num-layers %d but --layers-per-ipu places %d" % (args.num_layers, num_layers))
    # IPU0 holds the embedding; an IPU with no layer is unused.
    placement = Placement(per_ipu, args.heads_on)
    # The MLM decoder shares the word embedding only where both sit on IPU0: ipusim does
    # not copy a weight between IPUs, so heads elsewhere get their own decoder weight.
    tied = placement.head[0] == 0

    b = Builder(args.dtype)

    # Host inputs (per sample). The masked tokens sit at the front of the sequence
    # (Graphcore's data pipeline arranges them so), so the MLM head slices them.
    b.tensor("input_ids", [seq], "input", "int32")
    b.tensor("position_ids", [seq], "input", "int32")
    b.tensor("segment_ids", [seq], "input", "int32")
    b.tensor("input_mask", [seq], "input", "int32")
    b.tensor("masked_lm_ids", [args.masked], "input", "int32")
    packed = args.sequences_per_pack
    b.tensor("next_sentence_label", [packed], "input", "int32")

    # Stage 0 on IPU0: embedding.
    b.place((0, 0))
    word = b.weight("embedding/word_embeddings", [args.vocab, h])
    pos = b.weight("embedding/position_embeddings", [args.max_positions, h])
    seg = b.weight("embedding/segment_embeddings", [2, h])
    b.op("embedding/word_gather", "Gather", [word, "input_ids"], [("embedding/word", [seq, h])])
    b.op("embedding/position_gather", "Gather", [pos, "position_ids"], [("embedding/position", [seq, h])])
    b.op("embedding/segment_gather", "Gather", [seg, "segment_ids"], [("embedding/segment", [seq, h])])
    b.op("embedding/add_position", "Add", ["embedding/word", "embedding/position"],
         [("embedding/word_position", [seq, h])])
    b.op("embedding/add_segment", "Add", ["embedding/word_position", "embedding/segment"],
         [("embedding/sum", [seq, h])])
    gamma = b.weight("embedding/layernorm/gamma", [h])
    beta = b.weight("embedding/layernorm/beta", [h])
    if args.hidden_dropout > 0:
        x = b.op("embedding/layernorm", "LayerNorm", ["embedding/sum", gamma, beta],
                 [("embedding/normalised", [seq, h])])
        x = b.op("embedding/dropout", "Dropout", [x], [("embedding/output", [seq, h])])
    else:
        x = b.op("embedding/layernorm", "LayerNorm", ["embedding/sum", gamma, beta], [("embedding/output", [seq, h])])
    # The mask, once, on IPU0: 1/0 per token -> 0/-1000 added to the attention scores.
    b.op("mask/cast", "Cast", ["input_mask"], [("mask/float", [seq])])
    bias = b.op("mask/scale", "Scale", ["mask/float"], [("attention_bias", [seq])])

    # Encoder layers, each on its IPU in that IPU's stage.
    for layer, ipu, stage in placement.layers():
        b.place((ipu, stage))
        x = post_ln_layer(b, "layer%d" % layer, x, seq, h, heads, ffn, ("add", bias), args.split_qkv,
                          args.hidden_dropout, args.attention_dropout)

    # The heads: back on IPU0 in a new stage, or on the last IPU in its stage.
    b.place(placement.head)
    # MLM: the masked positions, dense + Gelu + LayerNorm, decoder tied to the word embedding.
    m = b.op("mlm/slice", "Slice", [x], [("mlm/masked", [args.masked, h])])
    w = b.weight("mlm/dense/weight", [h, h])
    m = b.op("mlm/dense", "MatMul", [m, w], [("mlm/dense_out", [args.masked, h])])
    w = b.weight("mlm/dense/bias", [h])
    m = b.op("mlm/dense_bias", "Add", [m, w], [("mlm/dense_biased", [args.masked, h])])
    m = b.op("mlm/gelu", "Gelu", [m], [("mlm/gelu_out", [args.masked, h])])
    g_ = b.weight("mlm/layernorm/gamma", [h])
    b_ = b.weight("mlm/layernorm/beta", [h])
    m = b.op("mlm/layernorm", "LayerNorm", [m, g_, b_], [("mlm/transformed", [args.masked, h])])
    decoder = word if tied else b.weight("mlm/decoder/weight", [args.vocab, h])
    mlm_logits = b.op("mlm/decoder", "MatMul", [m, decoder], [("mlm/logits", [args.masked, args.vocab])])
    # NSP: pooler on the first ([CLS]) token of each sequence of the (packed) sample, Tanh, classifier.
    n = b.op("nsp/slice_cls", "Slice", [x], [("nsp/cls", [packed, h])])
    w = b.weight("nsp/pooler/weight", [h, h])
    n = b.op("nsp/pooler", "MatMul", [n, w], [("nsp/pooler_out", [packed, h])])
    w = b.weight("nsp/pooler/bias", [h])
    n = b.op("nsp/pooler_bias", "Add", [n, w], [("nsp/pooler_biased", [packed, h])])
    n = b.op("nsp/tanh", "Tanh", [n], [("nsp/pooled", [packed, h])])
    w = b.weight("nsp/classifier/weight", [h, 2])
    n = b.op("nsp/classifier", "MatMul", [n, w], [("nsp/classifier_out", [packed, 2])])
    w = b.weight("nsp/classifier/bias", [2])
    nsp_logits = b.op("nsp/classifier_bias", "Add", [n, w], [("nsp/logits", [packed, 2])])
    # One NSP loss per sequence, averaged when a sample packs several.
    nsp_out = ("nsp_loss", [1]) if packed == 1 else ("loss/nsp_losses", [packed])
    # Losses (one value per sample each), summed into the loss PopART differentiates.
    # The MLM loss is taken per masked token (reduction none) and then averaged: see
    # the module docstring for why it is not one op reducing [masked, vocab] to [1].
    if args.loss == "softmax-nll":
        p = b.op("loss/mlm_softmax", "Softmax", [mlm_logits], [("loss/mlm_probs", [args.masked, args.vocab])])
        t = b.op("loss/mlm_nll", "NllLoss", [p, "masked_lm_ids"], [("loss/mlm_token_losses", [args.masked])])
        p = b.op("loss/nsp_softmax", "Softmax", [nsp_logits], [("loss/nsp_probs", [packed, 2])])
        n = b.op("loss/nsp_nll", "NllLoss", [p, "next_sentence_label"], [nsp_out])
    else:
        t = b.op("loss/mlm", "SoftmaxCrossEntropy", [mlm_logits, "masked_lm_ids"],
                 [("loss/mlm_token_losses", [args.masked])])
        n = b.op("loss/nsp", "SoftmaxCrossEntropy", [nsp_logits, "next_sentence_label"], [nsp_out])
    if packed > 1:
        b.op("loss/nsp_mean", "ReduceMean", [n], [("nsp_loss", [1])])
    b.op("loss/mlm_mean", "ReduceMean", [t], [("mlm_loss", [1])])
    b.op("loss/sum", "Add", ["mlm_loss", "nsp_loss"], [("loss", [1])])

    if tied:
        heads_text = "MLM/NSP heads and losses back on IPU0 in stage %d, the MLM decoder reusing the word embedding" \
            % placement.head[1]
    else:
        heads_text = "MLM/NSP heads and losses on IPU%d in stage %d, the MLM decoder with its own weight" \
            % placement.head
    description = (
        "BERT pre-training (MLM + NSP) as Graphcore's PopART example, generated by "
        "scripts/make_bert_model.py %s. %d layers, hidden %d, %d heads, ffn %d, seq %d, vocab %d, "
        "%d masked tokens, %s. Layers per IPU (%s); embedding on IPU0 in stage 0; encoder stage = its IPU's; %s."
        % (" ".join(command_line(args)), num_layers, h, heads, ffn, seq, args.vocab, args.masked, args.dtype,
           placement.summary(), heads_text))
    return {
        "name": args.name or "bert",
        "description": description,
        "tensors": b.tensors,
        "ops": b.ops,
        "anchors": ["mlm_loss", "nsp_loss"],
    }


def command_line(args):
    """The generator arguments that matter, in a fixed order (for the description)."""
    out = ["--layers-per-ipu", ",".join(str(v) for v in args.layers_per_ipu)]
    if args.encoder_start_ipu is not None:
        out += ["--encoder-start-ipu", str(args.encoder_start_ipu)]
    out += ["--hidden", str(args.hidden), "--heads", str(args.heads), "--ffn", str(args.ffn),
            "--seq", str(args.seq), "--vocab", str(args.vocab), "--masked", str(args.masked)]
    if args.heads_on != "0":
        out += ["--heads-on", args.heads_on]
    if args.max_positions != 512:
        out += ["--max-positions", str(args.max_positions)]
    if args.dtype != "float16":
        out += ["--dtype", args.dtype]
    if args.loss != "softmax-nll":
        out += ["--loss", args.loss]
    if args.split_qkv:
        out += ["--split-qkv"]
    if args.hidden_dropout > 0:
        out += ["--hidden-dropout", repr(args.hidden_dropout)]
    if args.attention_dropout > 0:
        out += ["--attention-dropout", repr(args.attention_dropout)]
    if args.sequences_per_pack != 1:
        out += ["--sequences-per-pack", str(args.sequences_per_pack)]
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Generate a PopART-annotated BERT pre-training model (ipusim JSON model format), "
                    "structured as Graphcore's PopART BERT example: embedding on IPU0 in stage 0, encoder "
                    "layers on their IPUs, MLM/NSP heads and losses back on IPU0 in a new final stage.",
        epilog="Examples:\n"
               "  BERT-Large: --layers-per-ipu 3,7,7,7 --hidden 1024 --heads 16 --ffn 4096\n"
               "  BERT-Base:  --layers-per-ipu 0,4,4,4 --encoder-start-ipu 1 --hidden 768 --heads 12 --ffn 3072\n"
               "              (or Graphcore's relative form: --layers-per-ipu 4,4,4 --encoder-start-ipu 1)",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layers-per-ipu", type=int_list, required=True,
                        help="encoder layers per IPU, e.g. 3,7,7,7 (entry i = IPU i; 0 allowed)")
    parser.add_argument("--encoder-start-ipu", type=int, default=None,
                        help="IPU of the first encoder layer (Graphcore's encoder_start_ipu). If the list has "
                             "fewer leading zeros than this, it is read relative to this IPU, as Graphcore does")
    parser.add_argument("--heads-on", choices=("0", "last"), default="0",
                        help="the MLM/NSP heads back on IPU 0 in a new final stage (Graphcore's placement, the "
                             "default), or on the last used IPU with their own decoder weight")
    parser.add_argument("--num-layers", type=positive_int, default=None,
                        help="optional check: the total number of encoder layers")
    parser.add_argument("--hidden", type=positive_int, default=1024, help="hidden size (default 1024)")
    parser.add_argument("--heads", type=positive_int, default=16, help="attention heads (default 16)")
    parser.add_argument("--ffn", type=positive_int, default=None,
                        help="intermediate (feed-forward) size (default 4 x hidden)")
    parser.add_argument("--seq", type=positive_int, default=128, help="sequence length (default 128)")
    parser.add_argument("--vocab", type=positive_int, default=30528, help="vocabulary size (default 30528)")
    parser.add_argument("--masked", type=positive_int, default=20,
                        help="max masked tokens (MLM predictions) per sample (default 20)")
    parser.add_argument("--max-positions", type=positive_int, default=512,
                        help="rows of the position-embedding table (default 512)")
    parser.add_argument("--dtype", choices=DTYPES, default="float16",
                        help="dtype of weights and activations (default float16)")
    parser.add_argument("--loss", choices=("softmax-nll", "softmax-cross-entropy"), default="softmax-nll",
                        help="Softmax + NllLoss as Graphcore's bert.py (default), or one fused SoftmaxCrossEntropy")
    parser.add_argument("--split-qkv", action="store_true",
                        help="three [hidden, hidden] Q, K, V projections instead of one fused [hidden, 3 hidden] "
                             "(Graphcore's split_qkv)")
    parser.add_argument("--hidden-dropout", type=float, default=0.0,
                        help="dropout after the embedding and after each attention and feed-forward projection "
                             "(BERT's hidden_dropout_prob; default 0: no Dropout ops)")
    parser.add_argument("--attention-dropout", type=float, default=0.0,
                        help="dropout on the attention probabilities (default 0; Graphcore's configs set "
                             "no_attn_dropout)")
    parser.add_argument("--sequences-per-pack", type=positive_int, default=1,
                        help="packed pre-training: sequences per sample at most, each with its own NSP "
                             "prediction (Graphcore's max_sequences_per_pack; default 1: unpacked)")
    parser.add_argument("--name", default=None, help="model name (default \"bert\")")
    parser.add_argument("-o", "--output", default=None, help="write here instead of standard output")
    args = parser.parse_args(argv)
    if args.ffn is None:
        args.ffn = 4 * args.hidden
    if args.encoder_start_ipu is not None and args.encoder_start_ipu < 0:
        parser.error("--encoder-start-ipu must not be negative")
    for name in ("hidden_dropout", "attention_dropout"):
        if not 0 <= getattr(args, name) < 1:
            parser.error("--%s must lie in [0, 1)" % name.replace("_", "-"))
    if args.sequences_per_pack > args.seq:
        parser.error("--sequences-per-pack %d exceeds --seq %d" % (args.sequences_per_pack, args.seq))
    write(dump(build(args)), args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
