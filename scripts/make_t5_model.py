#!/usr/bin/env python3
"""Generate a PopART-annotated encoder-decoder transformer (T5 v1.1 / Flan-T5 or any size) in
ipusim's model format.

The structure is T5 v1.1's (Raffel et al. 2020, "Exploring the Limits of Transfer Learning
with a Unified Text-to-Text Transformer", with the v1.1 changes: gated-GELU feed-forward, no
dropout, untied LM head), as Hugging Face's T5ForConditionalGeneration writes it
(transformers/models/t5/modeling_t5.py):
  - one shared token embedding `shared` [vocab, d_model], looked up by both the encoder's and
    the decoder's input ids (two Gathers reading one weight);
  - the encoder: per block a T5 LayerNorm (RMSNorm: no bias, no mean subtraction), self-
    attention (q, k, v [d_model, heads d_kv] and o [heads d_kv, d_model], no biases) with the
    relative position bias added to the scores, a residual Add; a T5 LayerNorm, the gated-GELU
    feed-forward wo(Gelu(wi_0 x) * wi_1 x) (wi_0, wi_1 [d_model, d_ff], wo [d_ff, d_model]), a
    residual Add; then the final encoder norm. The position bias [heads, enc_seq, enc_seq] is
    computed once, in the first block, from its learned table relative_attention_bias [32
    buckets, heads] (a Gather at the buckets of every pair of positions, then a Transpose), and
    added to the scores of every block;
  - the decoder: per block a norm, causal self-attention with its own bias table in the first
    decoder block (the causal mask folded into that bias once, as Hugging Face adds it to
    position_bias), a residual; a norm, cross-attention (q from the decoder, k and v from the
    encoder's output, o; no position bias; scores [heads, dec_seq, enc_seq]), a residual; a
    norm, the gated-GELU feed-forward, a residual; then the final decoder norm;
  - the untied LM head lm_head [d_model, vocab] (no d_model^-0.5 rescale: that is only for tied
    heads); Softmax + NllLoss per decoder token against the labels, averaged by a ReduceMean.
T5 does not scale its scores by 1/sqrt(d_kv) (it folds that into the initialisation), so the
attention has no Scale op. The relative-position buckets and the causal triangle depend only on
the positions: they are constants of the compiled graph, and the ops list only the table or the
activation they change. No padding mask (every sample is a full --enc-seq / --dec-seq).
scripts/transformer_blocks.py writes the pieces (rms_norm, t5_relative_bias, t5_attention,
t5_gated_gelu, t5_encoder_block, t5_decoder_block).

Presets give the T5 v1.1 / Flan-T5 sizes (google/flan-t5-* config.json; vocabulary 32128,
d_kv 64, 32 relative-position buckets) and Hugging Face's published parameter counts:
  flan-t5-small   8 +  8 layers, d_model  512, d_ff 1024,  6 heads     76,961,152 parameters
  flan-t5-base   12 + 12 layers, d_model  768, d_ff 2048, 12 heads    247,577,856
  flan-t5-large  24 + 24 layers, d_model 1024, d_ff 2816, 16 heads    783,150,080
  flan-t5-xl     24 + 24 layers, d_model 2048, d_ff 5120, 32 heads  2,849,757,184
Parameters, with inner = heads d_kv: 2 V d (shared embedding, untied head)
  + Le (4 d inner + 3 d d_ff + 2 d) + Ld (8 d inner + 3 d d_ff + 3 d)
  + 2 x 32 heads (the two bias tables) + 2 d (the final encoder and decoder norms).

Placement: --layers-per-ipu lists the encoder blocks then the decoder blocks per IPU (12 + 12 on
4 IPUs: 6,6,6,6 puts the encoder on IPUs 0 and 1, the decoder on IPUs 2 and 3; or --stage-ipus
with layers per stage, as the other generators). The shared embedding and both lookups are on
IPU 0 in stage 0 (--decoder-embedding stem, the default): the weight has two readers and
ipusim, as PopART, does not copy a weight between IPUs, so both must be on one IPU.
--decoder-embedding decoder puts the decoder's lookup with the first decoder block instead,
which is refused unless that block is on IPU 0. The final encoder norm runs with the last
encoder block; the final decoder norm, LM head and loss on the last used IPU (--heads-on last,
the default: the head is untied) or on IPU 0 in a new final stage (--heads-on 0).

A preset fixes the depths and sizes (giving another value is refused). Shapes are per sample;
output is deterministic.
"""

import argparse
import sys

from model_builder import (Builder, Placement, add_output_arguments, add_placement_arguments, changed_flags, dump,
                           positive_int, write)
from transformer_blocks import rms_norm, t5_decoder_block, t5_encoder_block, t5_relative_bias

# name: (encoder layers, decoder layers, d_model, d_ff, heads, d_kv, vocab); all untied, gated-GELU.
PRESETS = {
    "flan-t5-small": (8, 8, 512, 1024, 6, 64, 32128),
    "flan-t5-base": (12, 12, 768, 2048, 12, 64, 32128),
    "flan-t5-large": (24, 24, 1024, 2816, 16, 64, 32128),
    "flan-t5-xl": (24, 24, 2048, 5120, 32, 64, 32128),
}

DEFAULT_VOCAB = 32128
DEFAULT_ENC_SEQ = 512
DEFAULT_DEC_SEQ = 128


def command_line(args):
    return changed_flags(args, [("preset", "--preset", None), ("encoder_layers", "--encoder-layers", None),
                                ("decoder_layers", "--decoder-layers", None), ("d_model", "--d-model", None),
                                ("d_ff", "--d-ff", None), ("heads", "--heads", None), ("d_kv", "--d-kv", None),
                                ("vocab", "--vocab", None), ("layers_per_ipu", "--layers-per-ipu", None),
                                ("stage_ipus", "--stage-ipus", None), ("heads_on", "--heads-on", "last"),
                                ("decoder_embedding", "--decoder-embedding", "stem"),
                                ("enc_seq", "--enc-seq", DEFAULT_ENC_SEQ), ("dec_seq", "--dec-seq", DEFAULT_DEC_SEQ),
                                ("dtype", "--dtype", "float16")])


def sizes(args):
    """(encoder layers, decoder layers, d_model, d_ff, heads, d_kv, vocab) from the preset or the flags."""
    keys = ("encoder_layers", "decoder_layers", "d_model", "d_ff", "heads", "d_kv", "vocab")
    if args.preset:
        fixed = dict(zip(keys, PRESETS[args.preset]))
        for key in keys:
            value = getattr(args, key)
            if value is not None and value != fixed[key]:
                flag = "--" + key.replace("_", "-")
                raise SystemExit("error: %s has %s %d; leave out %s %d or the preset"
                                 % (args.preset, flag, fixed[key], flag, value))
        return PRESETS[args.preset]
    if args.d_model is None or args.heads is None or args.d_ff is None or args.encoder_layers is None:
        raise SystemExit("error: give --preset, or --d-model, --d-ff, --heads and --encoder-layers")
    d_kv = args.d_kv
    if d_kv is None:
        if args.d_model % args.heads:
            raise SystemExit("error: --d-model %d is not a multiple of --heads %d; give --d-kv"
                             % (args.d_model, args.heads))
        d_kv = args.d_model // args.heads
    decoder_layers = args.decoder_layers if args.decoder_layers is not None else args.encoder_layers
    return (args.encoder_layers, decoder_layers, args.d_model, args.d_ff, args.heads, d_kv,
            args.vocab or DEFAULT_VOCAB)


def build(args):
    flags = command_line(args)
    enc_layers, dec_layers, d, ff, heads, d_kv, vocab = sizes(args)
    placement = Placement(args.layers_per_ipu, args.heads_on, args.stage_ipus)
    if placement.total_layers() != enc_layers + dec_layers:
        raise SystemExit("error: %s has %d encoder + %d decoder layers but --layers-per-ipu places %d"
                         % (args.preset or "the model", enc_layers, dec_layers, placement.total_layers()))
    places = list(placement.layers())
    encoder_places, decoder_places = places[:enc_layers], places[enc_layers:]
    enc_seq, dec_seq = args.enc_seq, args.dec_seq

    # The shared embedding is read by both lookups; a weight lives on one IPU (ipusim does not
    # copy a weight between IPUs, nor does PopART), so both lookups must be on IPU 0.
    stem = (0, 0)
    decoder_lookup = stem if args.decoder_embedding == "stem" else decoder_places[0][1:]
    if decoder_lookup[0] != stem[0]:
        raise SystemExit("error: --decoder-embedding decoder puts the decoder's token lookup on IPU %d with decoder "
                         "layer 0, but the shared embedding it reads is on IPU %d with the encoder's lookup (one "
                         "weight, two readers; ipusim does not copy a weight between IPUs); leave out "
                         "--decoder-embedding decoder (both lookups on IPU 0 in stage 0) or place decoder layer 0 "
                         "on IPU 0" % (decoder_lookup[0], stem[0]))

    b = Builder(args.dtype)
    b.tensor("input_ids", [enc_seq], "input", "int32")
    b.tensor("decoder_input_ids", [dec_seq], "input", "int32")
    b.tensor("labels", [dec_seq], "input", "int32")

    b.place(stem)
    shared = b.weight("shared/weight", [vocab, d])
    x = b.op("encoder/embed_tokens", "Gather", [shared, "input_ids"], [("encoder/embed_tokens_out", [enc_seq, d])])
    if args.decoder_embedding == "stem":
        y = b.op("decoder/embed_tokens", "Gather", [shared, "decoder_input_ids"],
                 [("decoder/embed_tokens_out", [dec_seq, d])])

    bias = None
    for index, ipu, stage in encoder_places:
        b.place((ipu, stage))
        p = "encoder.block.%d" % index
        if bias is None:
            bias = t5_relative_bias(b, p + "/layer.0/SelfAttention", enc_seq, enc_seq, heads, causal=False)
        x = t5_encoder_block(b, p, x, enc_seq, d, heads, d_kv, ff, bias)
    encoded = rms_norm(b, "encoder/final_layer_norm", x, [enc_seq, d])
    encoder_end = encoder_places[-1][1:]

    bias = None
    for index, ipu, stage in decoder_places:
        b.place((ipu, stage))
        if args.decoder_embedding == "decoder" and bias is None:
            y = b.op("decoder/embed_tokens", "Gather", [shared, "decoder_input_ids"],
                     [("decoder/embed_tokens_out", [dec_seq, d])])
        p = "decoder.block.%d" % (index - enc_layers)
        if bias is None:
            bias = t5_relative_bias(b, p + "/layer.0/SelfAttention", dec_seq, dec_seq, heads, causal=True)
        y = t5_decoder_block(b, p, y, encoded, dec_seq, enc_seq, d, heads, d_kv, ff, bias)

    b.place(placement.head)
    y = rms_norm(b, "decoder/final_layer_norm", y, [dec_seq, d])
    logits = b.dense("lm_head", y, dec_seq, d, vocab, bias=False)
    probs = b.op("loss/softmax", "Softmax", [logits], [("loss/probs", [dec_seq, vocab])])
    tokens = b.op("loss/nll", "NllLoss", [probs, "labels"], [("loss/token_losses", [dec_seq])])
    b.op("loss/mean", "ReduceMean", [tokens], [("loss", [1])])

    what = args.preset or "T5 v1.1-style encoder-decoder"
    description = (
        "%s (Hugging Face's T5ForConditionalGeneration structure, T5 v1.1: T5 LayerNorm, relative position bias, "
        "gated-GELU feed-forward, untied head), generated by scripts/make_t5_model.py %s. %d encoder + %d decoder "
        "layers, d_model %d, d_ff %d, %d heads, d_kv %d, encoder seq %d, decoder seq %d, vocab %d, %s. Layers per "
        "IPU, encoder first (%s); shared embedding and the encoder's lookup on IPU0 in stage 0, the decoder's lookup "
        "on IPU%d in stage %d; final encoder norm on IPU%d in stage %d; final decoder norm, LM head and loss on IPU%d "
        "in stage %d."
        % (what, " ".join(flags), enc_layers, dec_layers, d, ff, heads, d_kv, enc_seq, dec_seq, vocab, args.dtype,
           placement.summary(), decoder_lookup[0], decoder_lookup[1], encoder_end[0], encoder_end[1],
           placement.head[0], placement.head[1]))
    return b.model(args.name or args.preset or "t5", description, ["loss"])


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Generate a PopART-annotated T5 v1.1 / Flan-T5 encoder-decoder (ipusim JSON model format).",
        epilog="Examples:\n"
               "  Flan-T5 base on 4 IPUs:  --preset flan-t5-base --layers-per-ipu 4,6,6,8\n"
               "  Flan-T5 XL on 16 IPUs:   --preset flan-t5-xl --layers-per-ipu 2,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3\n"
               "  small model:             --d-model 256 --d-ff 512 --heads 4 --d-kv 32 --encoder-layers 2 "
               "--decoder-layers 1 --layers-per-ipu 2,1 --enc-seq 64 --dec-seq 32",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", choices=sorted(PRESETS), default=None,
                        help="T5 v1.1 / Flan-T5 sizes (flan-t5-small, -base, -large, -xl)")
    add_placement_arguments(parser, "encoder then decoder layers", "last")
    parser.add_argument("--decoder-embedding", choices=("stem", "decoder"), default="stem",
                        help="where the decoder's token lookup runs: with the encoder's on IPU 0 in stage 0 (stem, "
                             "the default), or with the first decoder layer (decoder: refused unless that layer is "
                             "on IPU 0, since both lookups read the shared embedding)")
    parser.add_argument("--encoder-layers", type=positive_int, default=None, help="encoder layers (set by --preset)")
    parser.add_argument("--decoder-layers", type=positive_int, default=None,
                        help="decoder layers (set by --preset; default --encoder-layers)")
    parser.add_argument("--d-model", type=positive_int, default=None, help="model width (set by --preset)")
    parser.add_argument("--d-ff", type=positive_int, default=None, help="feed-forward size (set by --preset)")
    parser.add_argument("--heads", type=positive_int, default=None, help="attention heads (set by --preset)")
    parser.add_argument("--d-kv", type=positive_int, default=None,
                        help="size of each head (set by --preset; default d_model / heads)")
    parser.add_argument("--vocab", type=positive_int, default=None,
                        help="vocabulary size (default %d)" % DEFAULT_VOCAB)
    parser.add_argument("--enc-seq", type=positive_int, default=DEFAULT_ENC_SEQ,
                        help="encoder (input) sequence length (default %d)" % DEFAULT_ENC_SEQ)
    parser.add_argument("--dec-seq", type=positive_int, default=DEFAULT_DEC_SEQ,
                        help="decoder (target) sequence length (default %d)" % DEFAULT_DEC_SEQ)
    add_output_arguments(parser, "the preset, else \"t5\"")
    args = parser.parse_args(argv)
    write(dump(build(args)), args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
