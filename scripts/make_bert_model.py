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
import json
import sys

DTYPES = ("float16", "float32")


def int_list(text):
    """'3,7,7,7' or '[3,7,7,7]' -> [3, 7, 7, 7]."""
    text = text.strip()
    if text.startswith("["):
        text = text[1:]
    if text.endswith("]"):
        text = text[:-1]
    try:
        values = [int(v) for v in text.split(",") if v.strip() != ""]
    except ValueError:
        raise argparse.ArgumentTypeError("expected a list of integers such as 3,7,7,7")
    if not values or any(v < 0 for v in values):
        raise argparse.ArgumentTypeError("expected a non-empty list of non-negative integers")
    return values


def positive_int(text):
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("expected a positive integer")
    if v < 1:
        raise argparse.ArgumentTypeError("expected a positive integer")
    return v


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


class Builder:
    def __init__(self, dtype):
        self.dtype = dtype
        self.tensors = {}
        self.ops = []
        self.ipu = 0
        self.stage = 0

    def tensor(self, name, shape, kind, dtype=None):
        if name in self.tensors:
            raise ValueError("tensor %s declared twice" % name)
        self.tensors[name] = {"shape": list(shape), "dtype": dtype or self.dtype, "kind": kind}
        return name

    def weight(self, name, shape):
        return self.tensor(name, shape, "weight")

    def op(self, name, op_type, inputs, outputs):
        """outputs: list of (name, shape) or (name, shape, dtype); declared as activations."""
        names = []
        for out in outputs:
            self.tensor(out[0], out[1], "activation", out[2] if len(out) > 2 else None)
            names.append(out[0])
        self.ops.append({"name": name, "type": op_type, "inputs": list(inputs), "outputs": names,
                         "virtualGraph": self.ipu, "pipelineStage": self.stage})
        return names[0] if len(names) == 1 else names


def build(args):
    h, heads, ffn, seq = args.hidden, args.heads, args.ffn, args.seq
    if h % heads:
        raise SystemExit("error: --hidden %d is not a multiple of --heads %d" % (h, heads))
    if args.masked > seq:
        raise SystemExit("error: --masked %d exceeds --seq %d" % (args.masked, seq))
    if args.seq > args.max_positions:
        raise SystemExit("error: --seq %d exceeds --max-positions %d" % (seq, args.max_positions))
    dh = h // heads
    per_ipu = layers_on_ipus(args.layers_per_ipu, args.encoder_start_ipu)
    num_layers = sum(per_ipu)
    if num_layers == 0:
        raise SystemExit("error: --layers-per-ipu places no encoder layer")
    if args.num_layers is not None and args.num_layers != num_layers:
        raise SystemExit("error: --num-layers %d but --layers-per-ipu places %d" % (args.num_layers, num_layers))
    # IPU0 always holds the embedding and the heads; an IPU with no layer is unused.
    used = sorted({0} | {i for i, n in enumerate(per_ipu) if n > 0})
    stage_of_ipu = {ipu: rank for rank, ipu in enumerate(used)}
    head_stage = len(used)  # the new final stage, back on IPU0

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
    b.ipu, b.stage = 0, 0
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
    layer = 0
    for ipu, count in enumerate(per_ipu):
        for _ in range(count):
            b.ipu, b.stage = ipu, stage_of_ipu[ipu]
            x = encoder_layer(b, "layer%d" % layer, x, bias, seq, h, heads, dh, ffn, args.split_qkv,
                              args.hidden_dropout, args.attention_dropout)
            layer += 1

    # The heads, back on IPU0 in a new stage.
    b.ipu, b.stage = 0, head_stage
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
    mlm_logits = b.op("mlm/decoder", "MatMul", [m, word], [("mlm/logits", [args.masked, args.vocab])])
    # NSP: pooler on the first ([CLS]) token, Tanh, classifier.
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
    # Losses (one value per sample each), summed into the loss PopART differentiates.
    # The MLM loss is taken per masked token (reduction none) and then averaged: see
    # the module docstring for why it is not one op reducing [masked, vocab] to [1].
    if args.loss == "softmax-nll":
        p = b.op("loss/mlm_softmax", "Softmax", [mlm_logits], [("loss/mlm_probs", [args.masked, args.vocab])])
        t = b.op("loss/mlm_nll", "NllLoss", [p, "masked_lm_ids"], [("loss/mlm_token_losses", [args.masked])])
        p = b.op("loss/nsp_softmax", "Softmax", [nsp_logits], [("loss/nsp_probs", [packed, 2])])
        if packed == 1:
            b.op("loss/nsp_nll", "NllLoss", [p, "next_sentence_label"], [("nsp_loss", [1])])
        else:
            t = b.op("loss/nsp_nll", "NllLoss", [p, "next_sentence_label"], [("loss/nsp_losses", [packed])])
            b.op("loss/nsp_mean", "ReduceMean", [t], [("nsp_loss", [1])])
    else:
        t = b.op("loss/mlm", "SoftmaxCrossEntropy", [mlm_logits, "masked_lm_ids"],
                 [("loss/mlm_token_losses", [args.masked])])
        if packed == 1:
            b.op("loss/nsp", "SoftmaxCrossEntropy", [nsp_logits, "next_sentence_label"], [("nsp_loss", [1])])
        else:
            t = b.op("loss/nsp", "SoftmaxCrossEntropy", [nsp_logits, "next_sentence_label"],
                     [("loss/nsp_losses", [packed])])
            b.op("loss/nsp_mean", "ReduceMean", [t], [("nsp_loss", [1])])
    b.op("loss/mlm_mean", "ReduceMean", [t], [("mlm_loss", [1])])
    b.op("loss/sum", "Add", ["mlm_loss", "nsp_loss"], [("loss", [1])])

    placement = ", ".join("IPU%d: %d" % (i, n) for i, n in enumerate(per_ipu))
    description = (
        "BERT pre-training (MLM + NSP) as Graphcore's PopART example, generated by "
        "scripts/make_bert_model.py %s. %d layers, hidden %d, %d heads, ffn %d, seq %d, vocab %d, "
        "%d masked tokens, %s. Layers per IPU (%s); embedding on IPU0 in stage 0; encoder stage = its IPU's; "
        "MLM/NSP heads and losses back on IPU0 in stage %d, the MLM decoder reusing the word embedding."
        % (" ".join(command_line(args)), num_layers, h, heads, ffn, seq, args.vocab, args.masked, args.dtype,
           placement, head_stage))
    return {
        "name": args.name or "bert",
        "description": description,
        "tensors": b.tensors,
        "ops": b.ops,
        "anchors": ["mlm_loss", "nsp_loss"],
    }


def dropout(b, name, x, shape, rate):
    """Dropout after a projection (BERT's hidden dropout); nothing when the rate is 0."""
    if rate <= 0:
        return x
    return b.op(name, "Dropout", [x], [(name + "_out", shape)])


def encoder_layer(b, p, x, bias, seq, h, heads, dh, ffn, split_qkv=False, hidden_dropout=0.0,
                  attention_dropout=0.0):
    # Self-attention: one fused [h, 3h] projection, or three [h, h] ones (Graphcore's split_qkv).
    if split_qkv:
        heads_of = {}
        for part, shape in (("q", [heads, seq, dh]), ("k", [heads, dh, seq]), ("v", [heads, seq, dh])):
            w = b.weight(p + "/attention/%s/weight" % part, [h, h])
            t = b.op(p + "/attention/%s" % part, "MatMul", [x, w], [(p + "/attention/%s_out" % part, [seq, h])])
            w = b.weight(p + "/attention/%s/bias" % part, [h])
            t = b.op(p + "/attention/%s_bias" % part, "Add", [t, w], [(p + "/attention/%s_biased" % part, [seq, h])])
            t = b.op(p + "/attention/%s_reshape" % part, "Reshape", [t],
                     [(p + "/attention/%s_split" % part, [seq, heads, dh])])
            heads_of[part] = b.op(p + "/attention/%s_heads" % part, "Transpose", [t],
                                  [(p + "/attention/" + ("k_t" if part == "k" else part), shape)])
        q, k, v = heads_of["q"], heads_of["k"], heads_of["v"]
    else:
        w = b.weight(p + "/attention/qkv/weight", [h, 3 * h])
        t = b.op(p + "/attention/qkv", "MatMul", [x, w], [(p + "/attention/qkv_out", [seq, 3 * h])])
        w = b.weight(p + "/attention/qkv/bias", [3 * h])
        t = b.op(p + "/attention/qkv_bias", "Add", [t, w], [(p + "/attention/qkv_biased", [seq, 3 * h])])
        t = b.op(p + "/attention/qkv_reshape", "Reshape", [t], [(p + "/attention/qkv_split", [seq, 3, heads, dh])])
        q, k, v = b.op(p + "/attention/split_heads", "Transpose", [t],
                       [(p + "/attention/q", [heads, seq, dh]),
                        (p + "/attention/k_t", [heads, dh, seq]),
                        (p + "/attention/v", [heads, seq, dh])])
    s = b.op(p + "/attention/scores", "MatMul", [q, k], [(p + "/attention/scores_out", [heads, seq, seq])])
    s = b.op(p + "/attention/scale", "Scale", [s], [(p + "/attention/scaled", [heads, seq, seq])])
    s = b.op(p + "/attention/mask", "Add", [s, bias], [(p + "/attention/masked", [heads, seq, seq])])
    s = b.op(p + "/attention/softmax", "Softmax", [s], [(p + "/attention/probs", [heads, seq, seq])])
    s = dropout(b, p + "/attention/probs_dropout", s, [heads, seq, seq], attention_dropout)
    c = b.op(p + "/attention/context", "MatMul", [s, v], [(p + "/attention/context_out", [heads, seq, dh])])
    c = b.op(p + "/attention/merge_heads", "Transpose", [c], [(p + "/attention/context_t", [seq, heads, dh])])
    c = b.op(p + "/attention/merge_reshape", "Reshape", [c], [(p + "/attention/context_flat", [seq, h])])
    w = b.weight(p + "/attention/out/weight", [h, h])
    o = b.op(p + "/attention/out", "MatMul", [c, w], [(p + "/attention/out_out", [seq, h])])
    w = b.weight(p + "/attention/out/bias", [h])
    o = b.op(p + "/attention/out_bias", "Add", [o, w], [(p + "/attention/out_biased", [seq, h])])
    o = dropout(b, p + "/attention/dropout", o, [seq, h], hidden_dropout)
    o = b.op(p + "/attention/residual", "Add", [x, o], [(p + "/attention/residual_out", [seq, h])])
    g_ = b.weight(p + "/attention/layernorm/gamma", [h])
    b_ = b.weight(p + "/attention/layernorm/beta", [h])
    a = b.op(p + "/attention/layernorm", "LayerNorm", [o, g_, b_], [(p + "/attention/output", [seq, h])])
    # Feed-forward.
    w = b.weight(p + "/ffn/1/weight", [h, ffn])
    f = b.op(p + "/ffn/1", "MatMul", [a, w], [(p + "/ffn/1_out", [seq, ffn])])
    w = b.weight(p + "/ffn/1/bias", [ffn])
    f = b.op(p + "/ffn/1_bias", "Add", [f, w], [(p + "/ffn/1_biased", [seq, ffn])])
    f = b.op(p + "/ffn/gelu", "Gelu", [f], [(p + "/ffn/gelu_out", [seq, ffn])])
    w = b.weight(p + "/ffn/2/weight", [ffn, h])
    f = b.op(p + "/ffn/2", "MatMul", [f, w], [(p + "/ffn/2_out", [seq, h])])
    w = b.weight(p + "/ffn/2/bias", [h])
    f = b.op(p + "/ffn/2_bias", "Add", [f, w], [(p + "/ffn/2_biased", [seq, h])])
    f = dropout(b, p + "/ffn/dropout", f, [seq, h], hidden_dropout)
    f = b.op(p + "/ffn/residual", "Add", [a, f], [(p + "/ffn/residual_out", [seq, h])])
    g_ = b.weight(p + "/ffn/layernorm/gamma", [h])
    b_ = b.weight(p + "/ffn/layernorm/beta", [h])
    return b.op(p + "/ffn/layernorm", "LayerNorm", [f, g_, b_], [(p + "/output", [seq, h])])


def command_line(args):
    """The generator arguments that matter, in a fixed order (for the description)."""
    out = ["--layers-per-ipu", ",".join(str(v) for v in args.layers_per_ipu)]
    if args.encoder_start_ipu is not None:
        out += ["--encoder-start-ipu", str(args.encoder_start_ipu)]
    out += ["--hidden", str(args.hidden), "--heads", str(args.heads), "--ffn", str(args.ffn),
            "--seq", str(args.seq), "--vocab", str(args.vocab), "--masked", str(args.masked)]
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


def dump(model):
    """JSON with one tensor and one op per line, like the hand-written models."""
    lines = ["{"]
    lines.append('  "name": %s,' % json.dumps(model["name"]))
    lines.append('  "description": %s,' % json.dumps(model["description"]))
    lines.append('  "tensors": {')
    items = list(model["tensors"].items())
    for i, (name, t) in enumerate(items):
        lines.append("    %s: %s%s" % (json.dumps(name), json.dumps(t), "," if i + 1 < len(items) else ""))
    lines.append("  },")
    lines.append('  "ops": [')
    for i, op in enumerate(model["ops"]):
        lines.append("    %s%s" % (json.dumps(op), "," if i + 1 < len(model["ops"]) else ""))
    lines.append("  ],")
    lines.append('  "anchors": %s' % json.dumps(model["anchors"]))
    lines.append("}")
    return "\n".join(lines) + "\n"


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
    text = dump(build(args))
    if args.output:
        with open(args.output, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
