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
import json
import sys

from model_builder import (DTYPES, Builder, Placement, SubLayerPlacement, add_stage_ipus_argument, dump, int_list,
                           phase_place, positive_int, write)
from transformer_blocks import dropout, feed_forward, residual, self_attention


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


def checkpoint(b, name, x, shape, dtype=None):
    """PopART's builder.checkpointOutput: an Identity whose output is stashed instead of
    recomputed (RecomputeType Checkpoint, builder_impl.cpp). dtype "float8": Graphcore's
    MLPerf BERT casts the tensor to FP8 around the checkpoint (CastToFp8 / CastFromFp8,
    activation_checkpoint_dtype), so the stash holds one byte per element."""
    attributes = {"__recompute_output_in_backward_pass": 1}
    if dtype != "float8":
        return b.op(name, "Identity", [x], [(name + "_out", shape)], attributes)
    f = b.op(name + "/to_fp8", "Cast", [x], [(name + "/fp8", shape, "float8")])
    f = b.op(name, "Identity", [f], [(name + "_out", shape, "float8")], attributes)
    return b.op(name + "/from_fp8", "Cast", [f], [(name + "/restored", shape)])


def mlperf_checkpoints(places, last_stage):
    """Which sub-layer outputs Graphcore's MLPerf BERT checkpoints (bert_model.py
    should_checkpoint_att / should_checkpoint_ffn, v1.1 and v2.0): every attention output in the
    last pipeline stage; every feed-forward output but the last one on an IPU that is copied to
    the next stage (unless an attention half follows on the same IPU), and the model's last.
    places: per layer ((attention IPU, stage), (feed-forward IPU, stage)), from
    --att-ffn-placement or whole layers from --layers-per-ipu; last_stage: the heads' stage."""
    layers = len(places)
    att = [places[i][0][1] == last_stage for i in range(layers)]
    ffn = []
    for i in range(layers):
        if i == layers - 1:
            ffn.append(True)
            continue
        not_last_on_ipu = places[i][1][0] == places[i + 1][1][0]
        followed_by_att = places[i][1][0] == places[i + 1][0][0]
        ffn.append(not_last_on_ipu or followed_by_att)
    return att, ffn


def phased_places(args):
    """--phased: the embedding in phase 0, each layer (or each half, --phase-per half) in the next
    phase, the heads last; phase p on virtual graph p % STAGES."""
    if args.num_layers is None:
        raise SystemExit("error: --phased needs --num-layers")
    if args.stage_ipus or args.encoder_start_ipu is not None:
        raise SystemExit("error: --phased places the layers by phase; leave out --stage-ipus and --encoder-start-ipu")
    if args.implementation == "mlperf":
        raise SystemExit("error: Graphcore's MLPerf BERT is pipelined; --phased builds its examples' graph")
    per = 2 if args.phase_per == "half" else 1
    places = [(phase_place(1 + i * per, args.phased), phase_place(i * per + per, args.phased))
              for i in range(args.num_layers)]
    head_phase = 1 + args.num_layers * per
    text = "phased: %d phases, stages %d, a phase per %s; embedding in phase 0, heads in %d" % (
        head_phase + 1, args.phased, args.phase_per, head_phase)
    return places, phase_place(head_phase, args.phased), text, None


def sub_layer_places(args):
    """(attention place, feed-forward place) per layer, the heads' place, a summary and the
    placement object: from --att-ffn-placement, or whole layers from --layers-per-ipu."""
    if args.phased is not None:
        return phased_places(args)
    if args.att_ffn_placement is not None and args.stage_ipus:
        raise SystemExit("error: --att-ffn-placement names each stage's IPU already; leave out --stage-ipus")
    if args.att_ffn_placement is not None:
        place = SubLayerPlacement(args.att_ffn_placement, args.encoder_start_pipeline_stage, args.num_layers)
        return list(zip(place.att, place.ffn)), place.head, "sub-layers per stage (" + place.summary() + \
            "); embedding on IPU0 in stage 0", place
    if args.stage_ipus and args.encoder_start_ipu is not None:
        raise SystemExit("error: --stage-ipus places every stage; leave out --encoder-start-ipu")
    per_ipu = args.layers_per_ipu if args.stage_ipus else layers_on_ipus(args.layers_per_ipu, args.encoder_start_ipu)
    if sum(per_ipu) == 0:
        raise SystemExit("error: --layers-per-ipu places no encoder layer")
    if args.num_layers is not None and args.num_layers != sum(per_ipu):
        raise SystemExit("error: --num-layers %d but --layers-per-ipu places %d" % (args.num_layers, sum(per_ipu)))
    # IPU0 holds the embedding; an IPU with no layer is unused.
    placement = Placement(per_ipu, args.heads_on, args.stage_ipus)
    places = [((ipu, stage), (ipu, stage)) for _, ipu, stage in placement.layers()]
    if args.stage_ipus:
        return places, placement.head, "layers per stage (" + placement.summary() + "); embedding on IPU0 in " \
            "stage 0", placement
    return places, placement.head, "layers per IPU (" + placement.summary() + "); embedding on IPU0 in stage 0; " \
        "encoder stage = its IPU's", placement


def build(args):
    h, heads, ffn, seq = args.hidden, args.heads, args.ffn, args.seq
    if h % heads:
        raise SystemExit("error: --hidden %d is not a multiple of --heads %d" % (h, heads))
    if args.masked > seq:
        raise SystemExit("error: --masked %d exceeds --seq %d" % (args.masked, seq))
    if args.seq > args.max_positions:
        raise SystemExit("error: --seq %d exceeds --max-positions %d" % (seq, args.max_positions))
    places, head, placement_text, placement = sub_layer_places(args)
    num_layers = len(places)
    mlperf = args.implementation == "mlperf"
    if args.projection_bias and not mlperf:
        raise SystemExit("error: --projection-bias is the MLM projection bias of Graphcore's MLPerf BERT "
                         "(projection_bias); give it with --implementation mlperf")
    packed = args.sequences_per_pack
    # MLPerf's max_lm_predictions (bert_model.py): mask_tokens + max_sequences_per_pack - 1 rows.
    predictions = args.masked + packed - 1 if mlperf else args.masked
    if predictions > seq:
        raise SystemExit("error: %d MLM predictions exceed --seq %d" % (predictions, seq))
    # The MLM decoder shares the word embedding only where both sit on IPU0: ipusim does
    # not copy a weight between IPUs, so heads elsewhere get their own decoder weight.
    tied = head[0] == 0
    # Graphcore pads the vocabulary to a multiple of the serialisation steps (padded_vocab_length).
    steps = args.embedding_serialization_vocab_steps
    vocab = -(-args.vocab // steps) * steps
    checkpoint_dtype = args.activation_checkpoint_dtype

    b = Builder(args.dtype)

    # Host inputs (per sample). The masked tokens sit at the front of the sequence
    # (Graphcore's data pipeline arranges them so), so the MLM head slices them.
    b.tensor("input_ids", [seq], "input", "int32")
    b.tensor("position_ids", [seq], "input", "int32")
    b.tensor("segment_ids", [seq], "input", "int32")
    b.tensor("input_mask", [seq], "input", "int32")
    b.tensor("masked_lm_ids", [predictions], "input", "int32")
    nsp = not args.reduce_nsp_overhead
    if nsp:
        b.tensor("next_sentence_label", [packed], "input", "int32")

    # Stage 0 on IPU0: embedding (phase 0 when phased).
    b.place((0, 0, 0) if args.phased is not None else (0, 0))
    word = b.weight("embedding/word_embeddings", [vocab, h])
    pos = b.weight("embedding/position_embeddings", [args.max_positions, h])
    seg = b.weight("embedding/segment_embeddings", [2, h])
    b.op("embedding/word_gather", "Gather", [word, "input_ids"], [("embedding/word", [seq, h])])
    b.op("embedding/position_gather", "Gather", [pos, "position_ids"], [("embedding/position", [seq, h])])
    if mlperf:
        # MLPerf's bert_model.py embedding(): the segment embedding as a one-hot [seq, 2] times
        # the [2, hidden] table, and the sum masked by the padding (input_mask > 0).
        b.op("embedding/segment_onehot", "Equal", ["segment_ids"], [("embedding/segment_onehot_out", [seq, 2])])
        b.op("embedding/segment_matmul", "MatMul", ["embedding/segment_onehot_out", seg],
             [("embedding/segment", [seq, h])])
    else:
        b.op("embedding/segment_gather", "Gather", [seg, "segment_ids"], [("embedding/segment", [seq, h])])
    b.op("embedding/add_position", "Add", ["embedding/word", "embedding/position"],
         [("embedding/word_position", [seq, h])])
    b.op("embedding/add_segment", "Add", ["embedding/word_position", "embedding/segment"],
         [("embedding/sum", [seq, h])])
    summed = "embedding/sum"
    if mlperf:
        # The packed sequence index of each token, once on IPU0 (a host stream feeds one IPU; the
        # layers read this activation, copied along the pipeline).
        b.op("mask/index_cast", "Cast", ["input_mask"], [("mask/index", [seq])])
        b.op("embedding/padding_mask", "Greater", ["mask/index"], [("embedding/padding", [seq], "bool")])
        b.op("embedding/padding_cast", "Cast", ["embedding/padding"], [("embedding/padding_f", [seq])])
        summed = b.op("embedding/mask_padding", "Mul", ["embedding/sum", "embedding/padding_f"],
                      [("embedding/masked_sum", [seq, h])])
    gamma = b.weight("embedding/layernorm/gamma", [h])
    beta = b.weight("embedding/layernorm/beta", [h])
    if args.hidden_dropout > 0:
        x = b.op("embedding/layernorm", "LayerNorm", [summed, gamma, beta], [("embedding/normalised", [seq, h])])
        x = b.op("embedding/dropout", "Dropout", [x], [("embedding/output", [seq, h])])
    else:
        x = b.op("embedding/layernorm", "LayerNorm", [summed, gamma, beta], [("embedding/output", [seq, h])])
    if not mlperf:
        # The mask, once, on IPU0: 1/0 per token -> 0/-1000 added to the attention scores.
        b.op("mask/cast", "Cast", ["input_mask"], [("mask/float", [seq])])
        bias = b.op("mask/scale", "Scale", ["mask/float"], [("attention_bias", [seq])])

    if mlperf:
        att_checkpoint, ffn_checkpoint = mlperf_checkpoints(places, head[1])
    else:
        # Optimum-Graphcore's recompute_checkpoint_every_layer: every layer's output but the last.
        every = args.recompute_checkpoint_every_layer
        att_checkpoint = [False] * num_layers
        ffn_checkpoint = [every and i < num_layers - 1 for i in range(num_layers)]
    last_stage = head[1]

    # Encoder layers: the attention half and the feed-forward half, each in its place.
    for layer, (att_place, ffn_place) in enumerate(places):
        p = "layer%d" % layer
        b.place(att_place)
        if mlperf:
            # MLPerf's AttentionMask custom op (custom_ops/attention_mask.cpp), in every layer: from
            # the packed sequence index of each token, |i - j| squashed by tanh and scaled by -10000,
            # a [seq, seq] mask that keeps attention inside each sequence of the pack.
            m = b.op(p + "/attention/mask_diff", "Sub", ["mask/index", "mask/index"],
                     [(p + "/attention/mask_diff_out", [seq, seq])])
            m = b.op(p + "/attention/mask_abs", "Abs", [m], [(p + "/attention/mask_abs_out", [seq, seq])])
            m = b.op(p + "/attention/mask_tanh", "Tanh", [m], [(p + "/attention/mask_tanh_out", [seq, seq])])
            mask = ("add", b.op(p + "/attention/mask_scale", "Scale", [m], [(p + "/attention/mask", [seq, seq])]))
        else:
            mask = ("add", bias)
        o = self_attention(b, p, x, seq, h, heads, mask, args.split_qkv, args.attention_dropout)
        o = residual(b, p + "/attention/residual", x, dropout(b, p + "/attention/dropout", o, [seq, h],
                                                              args.hidden_dropout), seq, h)
        x = b.layer_norm(p + "/attention/layernorm", o, [seq, h], p + "/attention/output")
        if att_checkpoint[layer]:
            x = checkpoint(b, p + "/attention/checkpoint", x, [seq, h],
                           None if att_place[1] == last_stage else checkpoint_dtype)
        b.place(ffn_place)
        f = dropout(b, p + "/ffn/dropout", feed_forward(b, p, x, seq, h, ffn), [seq, h], args.hidden_dropout)
        f = residual(b, p + "/ffn/residual", x, f, seq, h)
        x = b.layer_norm(p + "/ffn/layernorm", f, [seq, h], p + "/output")
        if ffn_checkpoint[layer]:
            x = checkpoint(b, p + "/checkpoint", x, [seq, h], None if ffn_place[1] == last_stage else checkpoint_dtype)

    # The heads: back on IPU0 in a new stage, or on the last IPU in its stage.
    b.place(head)
    if mlperf:
        # lm_prediction_head runs on every token; the projection then slices the masked ones.
        w = b.weight("mlm/dense/weight", [h, h])
        m = b.op("mlm/dense", "MatMul", [x, w], [("mlm/dense_out", [seq, h])])
        w = b.weight("mlm/dense/bias", [h])
        m = b.op("mlm/dense_bias", "Add", [m, w], [("mlm/dense_biased", [seq, h])])
        m = b.op("mlm/gelu", "Gelu", [m], [("mlm/gelu_out", [seq, h])])
        g_ = b.weight("mlm/layernorm/gamma", [h])
        b_ = b.weight("mlm/layernorm/beta", [h])
        m = b.op("mlm/layernorm", "LayerNorm", [m, g_, b_], [("mlm/transformed_all", [seq, h])])
        m = b.op("mlm/slice", "Slice", [m], [("mlm/transformed", [predictions, h])])
        m = checkpoint(b, "mlm/checkpoint", m, [predictions, h])
    else:
        # MLM: the masked positions, dense + Gelu + LayerNorm, decoder tied to the word embedding.
        m = b.op("mlm/slice", "Slice", [x], [("mlm/masked", [predictions, h])])
        w = b.weight("mlm/dense/weight", [h, h])
        m = b.op("mlm/dense", "MatMul", [m, w], [("mlm/dense_out", [predictions, h])])
        w = b.weight("mlm/dense/bias", [h])
        m = b.op("mlm/dense_bias", "Add", [m, w], [("mlm/dense_biased", [predictions, h])])
        m = b.op("mlm/gelu", "Gelu", [m], [("mlm/gelu_out", [predictions, h])])
        g_ = b.weight("mlm/layernorm/gamma", [h])
        b_ = b.weight("mlm/layernorm/beta", [h])
        m = b.op("mlm/layernorm", "LayerNorm", [m, g_, b_], [("mlm/transformed", [predictions, h])])
    decoder = word if tied else b.weight("mlm/decoder/weight", [vocab, h])
    serialized = {"__serialize_matmul_mode": "output_channels", "__serialize_matmul_factor": steps} \
        if steps > 1 else None
    mlm_logits = b.op("mlm/decoder", "MatMul", [m, decoder], [("mlm/logits", [predictions, vocab])], serialized)
    if mlperf:
        mlm_logits = checkpoint(b, "mlm/logits_checkpoint", mlm_logits, [predictions, vocab])
        if args.projection_bias:
            pb = b.weight("mlm/projection/bias", [vocab])
            mlm_logits = b.op("mlm/projection_bias", "Add", [mlm_logits, pb], [("mlm/logits_biased", [predictions, vocab])])
        mlm_logits = checkpoint(b, "mlm/biased_checkpoint", mlm_logits, [predictions, vocab])
    nsp_logits = None
    if nsp:
        # NSP: pooler on the [CLS] token of each sequence of the (packed) sample, Tanh, classifier.
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
    n = None
    if args.loss == "softmax-nll":
        p = b.op("loss/mlm_softmax", "Softmax", [mlm_logits], [("loss/mlm_probs", [predictions, vocab])])
        t = b.op("loss/mlm_nll", "NllLoss", [p, "masked_lm_ids"], [("loss/mlm_token_losses", [predictions])])
        if nsp:
            p = b.op("loss/nsp_softmax", "Softmax", [nsp_logits], [("loss/nsp_probs", [packed, 2])])
            n = b.op("loss/nsp_nll", "NllLoss", [p, "next_sentence_label"], [nsp_out])
    else:
        t = b.op("loss/mlm", "SoftmaxCrossEntropy", [mlm_logits, "masked_lm_ids"],
                 [("loss/mlm_token_losses", [predictions])])
        if nsp:
            n = b.op("loss/nsp", "SoftmaxCrossEntropy", [nsp_logits, "next_sentence_label"], [nsp_out])
    if nsp and packed > 1:
        b.op("loss/nsp_mean", "ReduceMean", [n], [("nsp_loss", [1])])
    b.op("loss/mlm_mean", "ReduceMean", [t], [("mlm_loss", [1])])
    anchors = ["mlm_loss"]
    if nsp:
        b.op("loss/sum", "Add", ["mlm_loss", "nsp_loss"], [("loss", [1])])
        anchors.append("nsp_loss")
    if mlperf:
        # The accuracy bert.py anchors every micro-batch: the argmax over the vocabulary per masked token.
        b.op("accuracy/mlm_argmax", "ArgMax", [mlm_logits], [("accuracy/mlm_predictions", [predictions], "int32")])
        b.op("accuracy/mlm_hits", "Equal", ["accuracy/mlm_predictions", "masked_lm_ids"],
             [("accuracy/mlm_hit", [predictions], "bool")])
        b.op("accuracy/mlm_cast", "Cast", ["accuracy/mlm_hit"], [("accuracy/mlm_hit_f", [predictions], "float32")])
        b.op("accuracy/mlm_sum", "ReduceSum", ["accuracy/mlm_hit_f"], [("mlm_accuracy", [1], "float32")])
        anchors.append("mlm_accuracy")

    if tied:
        heads_text = "MLM%s heads and losses back on IPU0 in stage %d, the MLM decoder reusing the word embedding" \
            % ("/NSP" if nsp else "", head[1])
    else:
        heads_text = "MLM%s heads and losses on IPU%d in stage %d, the MLM decoder with its own weight" \
            % (("/NSP" if nsp else "",) + head[:2])
    description = (
        "BERT pre-training (MLM%s) as Graphcore's PopART %s, generated by "
        "scripts/make_bert_model.py %s. %d layers, hidden %d, %d heads, ffn %d, seq %d, vocab %d, "
        "%d %s, %s. %s; %s."
        % (" + NSP" if nsp else "", "MLPerf BERT" if mlperf else "example", " ".join(command_line(args)),
           num_layers, h, heads, ffn, seq, vocab, predictions, "MLM predictions" if mlperf else "masked tokens", args.dtype, placement_text[0].upper() +
           placement_text[1:], heads_text))
    return {
        "name": args.name or "bert",
        "description": description,
        "tensors": b.tensors,
        "ops": b.ops,
        "anchors": anchors,
    }


def command_line(args):
    """The generator arguments that matter, in a fixed order (for the description)."""
    if args.att_ffn_placement is not None:
        out = ["--att-ffn-placement", "'%s'" % json.dumps(args.att_ffn_placement)]
        if args.encoder_start_pipeline_stage != 1:
            out += ["--encoder-start-pipeline-stage", str(args.encoder_start_pipeline_stage)]
    elif args.phased is not None:
        out = ["--phased", str(args.phased), "--num-layers", str(args.num_layers)]
        if args.phase_per != "layer":
            out += ["--phase-per", args.phase_per]
    else:
        out = ["--layers-per-ipu", ",".join(str(v) for v in args.layers_per_ipu)]
        if args.stage_ipus:
            out += ["--stage-ipus", ",".join(str(v) for v in args.stage_ipus)]
    if args.implementation != "examples":
        out += ["--implementation", args.implementation]
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
    if args.recompute_checkpoint_every_layer:
        out += ["--recompute-checkpoint-every-layer"]
    if args.activation_checkpoint_dtype != "float16":
        out += ["--activation-checkpoint-dtype", args.activation_checkpoint_dtype]
    if args.embedding_serialization_vocab_steps != 1:
        out += ["--embedding-serialization-vocab-steps", str(args.embedding_serialization_vocab_steps)]
    if args.reduce_nsp_overhead:
        out += ["--reduce-nsp-overhead"]
    if args.projection_bias:
        out += ["--projection-bias"]
    return out


def att_ffn_list(text):
    """Graphcore's att_ffn_placement as written in its configs: [[1, [3, 3]], [2, [4, 3]], ..., [0, [0, 1]]]."""
    try:
        value = json.loads(text)
        ok = isinstance(value, list) and all(
            isinstance(e, list) and len(e) == 2 and isinstance(e[0], int) and e[0] >= 0 and
            isinstance(e[1], list) and len(e[1]) == 2 and all(isinstance(n, int) and n >= 0 for n in e[1])
            for e in value)
    except ValueError:
        ok = False
    if not ok:
        raise argparse.ArgumentTypeError("expected Graphcore's form [[ipu, [attention, feed-forward]], ...], "
                                         "e.g. '[[1, [3, 3]], [2, [4, 3]], [0, [0, 1]]]'")
    return value


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
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--layers-per-ipu", type=int_list,
                       help="encoder layers per IPU, e.g. 3,7,7,7 (entry i = IPU i; 0 allowed)")
    where.add_argument("--att-ffn-placement", type=att_ffn_list,
                       help="Graphcore's att_ffn_placement (MLPerf BERT): per pipeline stage from "
                            "--encoder-start-pipeline-stage, [ipu, [attention halves, feed-forward halves]], "
                            "the halves of the layers taken in order; the heads on IPU 0 in the last stage")
    where.add_argument("--phased", type=int, choices=[1, 2],
                       help="phased execution (PopART's executionPhase): executionPhaseSettings.stages; the "
                            "embedding in phase 0, a phase per layer (or half, --phase-per), the heads last, phase p "
                            "on IPU p %% STAGES; needs --num-layers")
    parser.add_argument("--phase-per", choices=["layer", "half"], default="layer",
                        help="with --phased: one phase per encoder layer, or two (attention, feed-forward)")
    add_stage_ipus_argument(parser)
    parser.add_argument("--encoder-start-pipeline-stage", type=positive_int, default=1,
                        help="pipeline stage of the first --att-ffn-placement entry (Graphcore's "
                             "encoder_start_pipeline_stage; default 1)")
    parser.add_argument("--implementation", choices=("examples", "mlperf"), default="examples",
                        help="whose BERT graph: Graphcore's examples (default) or its MLPerf Training submission "
                             "(one-hot segment embedding, padding-masked embedding, the AttentionMask op in every "
                             "layer, the MLM dense on every token, checkpoints as should_checkpoint_att/ffn, the "
                             "MLM argmax accuracy)")
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
    parser.add_argument("--recompute-checkpoint-every-layer", action="store_true",
                        help="checkpoint every encoder layer's output but the last (PopART checkpointOutput; "
                             "Graphcore's recompute_checkpoint_every_layer): stashed, not recomputed")
    parser.add_argument("--activation-checkpoint-dtype", choices=("float16", "float8"), default="float16",
                        help="dtype of stashed checkpoints (Graphcore's activation_checkpoint_dtype; float8 casts "
                             "around each checkpoint outside the last stage)")
    parser.add_argument("--embedding-serialization-vocab-steps", type=positive_int, default=1,
                        help="the MLM projection serialised over the vocabulary in N steps (PopART "
                             "setSerializeMatMul output_channels); the vocabulary is padded to a multiple of N")
    parser.add_argument("--reduce-nsp-overhead", action="store_true",
                        help="no NSP head and loss (Graphcore's reduce_nsp_overhead)")
    parser.add_argument("--projection-bias", action="store_true",
                        help="a bias on the MLM projection (Graphcore's projection_bias; --implementation mlperf)")
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
