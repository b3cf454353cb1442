#!/usr/bin/env python3
"""Generate a PopART-annotated LLaMA-family decoder (Llama 2, TinyLlama or any size) in
ipusim's model format.

The structure is Hugging Face's LlamaForCausalLM (transformers/models/llama/modeling_llama.py):
the token embedding (embed_tokens, a Gather; no position table: positions enter through the
rotary embedding, so any --seq is accepted); per layer an RMSNorm, causal self-attention
(q_proj, k_proj, v_proj and o_proj without biases; the rotary position embedding on Q and K as
elementwise ops, q * cos + rotate_half(q) * sin; grouped-query attention repeating K and V to
all heads with an Expand when --kv-heads < --heads; scaled scores, the causal Where, Softmax),
a residual Add, an RMSNorm, the SwiGLU MLP (down_proj(silu(gate_proj(x)) * up_proj(x)), SiLU
as x * Sigmoid(x), no biases) and a residual Add; a final RMSNorm; the LM head lm_head
[hidden, vocab] without bias (its own weight; --tied reuses the token embedding, as
TinyLlama-like and Llama-3.2-1B checkpoints with tie_word_embeddings do); Softmax + NllLoss
per token against the next-token labels, averaged by a ReduceMean (as make_gpt_model.py).
Positions are 0..seq-1, so the cos/sin tables are compile-time constants: like the causal
triangle (scripts/transformer_blocks.py) they are neither parameters nor inputs and the ops
list only their activation input. Dropout (0 in every Llama config) and the float32 Casts
around RMSNorm and Softmax are left out. scripts/transformer_blocks.py writes the pieces
(rms_norm, rotary_embedding, repeat_kv, llama_attention, swiglu_mlp, llama_layer).

Presets give published sizes: Llama 2 (Touvron et al. 2023, "Llama 2: Open Foundation and
Fine-Tuned Chat Models", Table 1, and Meta's released config.json files: vocabulary 32000,
untied head, ffn from Meta's rule 256 x ceil(8h/3 / 256), 70B with ffn_dim_multiplier 1.3):
  llama-2-7b      32 layers x 4096, 32 heads, 32 KV heads, ffn 11008  6,738,415,616 parameters
  llama-2-13b     40 layers x 5120, 40 heads, 40 KV heads, ffn 13824  13,015,864,320
  llama-2-70b     80 layers x 8192, 64 heads,  8 KV heads, ffn 28672  68,976,648,192
and TinyLlama-1.1B (Zhang et al. 2024; TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T
config.json: tie_word_embeddings false):
  tinyllama-1.1b  22 layers x 2048, 32 heads,  4 KV heads, ffn 5632   1,100,048,384
Parameters: 2 V h (embedding and head; V h with --tied) + L (2 h^2 + 2 h kv dh + 3 h ffn +
2 h) + h, with dh = h / heads.

Placement: the embedding on IPU 0 in stage 0, --layers-per-ipu decoder layers per IPU (or
--stage-ipus: layers per stage, stage s on IPU stage_ipus[s]), the final RMSNorm, LM head and
loss on the last used IPU in its stage (--heads-on last, the default) or back on IPU 0 in a
new final stage (--heads-on 0). The default differs from make_gpt_model.py's because Llama's
head is untied: nothing ties it to IPU 0, and sending the last layer's output back to IPU 0
would add a pipeline stage, an inter-IPU copy of the activations and put the [hidden, vocab]
head next to the [vocab, hidden] embedding on the IPU that already holds it. With --tied the
head must sit with the embedding on IPU 0 (ipusim does not copy a weight between IPUs), so
--tied needs --heads-on 0 unless everything is on IPU 0.

Phased execution (--phased STAGES with --layers, instead of --layers-per-ipu; --phase-per
layer or half) places the phases exactly as make_gpt_model.py does: the embedding in phase 0,
each layer (or its attention and MLP halves) in the next phases, the head last, each on
virtual graph phase % STAGES. With a preset, --layers defaults to the preset's depth.

A preset fixes hidden, heads, KV heads, ffn and vocabulary (giving another value is refused).
Shapes are per sample; output is deterministic.
"""

import argparse
import sys

from make_gpt_model import PhasePlacement, build_placement, place_layer
from model_builder import (Builder, add_output_arguments, add_phased_arguments, add_placement_arguments, changed_flags,
                           dump, positive_int, write)
from transformer_blocks import llama_layer, rms_norm

# name: (layers, hidden, heads, kv_heads, ffn, vocab); all untied.
PRESETS = {
    "llama-2-7b": (32, 4096, 32, 32, 11008, 32000),
    "llama-2-13b": (40, 5120, 40, 40, 13824, 32000),
    "llama-2-70b": (80, 8192, 64, 8, 28672, 32000),
    "tinyllama-1.1b": (22, 2048, 32, 4, 5632, 32000),
}

DEFAULT_VOCAB = 32000
DEFAULT_SEQ = 2048


def default_ffn(h):
    """Meta's llama/model.py FeedForward: 2/3 of 4h, rounded up to a multiple of 256."""
    hidden = (2 * 4 * h) // 3
    return 256 * ((hidden + 255) // 256)


def command_line(args):
    return changed_flags(args, [("preset", "--preset", None), ("hidden", "--hidden", None),
                                ("heads", "--heads", None), ("kv_heads", "--kv-heads", None),
                                ("ffn", "--ffn", None), ("vocab", "--vocab", None),
                                ("layers_per_ipu", "--layers-per-ipu", None), ("stage_ipus", "--stage-ipus", None),
                                ("layers", "--layers", None), ("phased", "--phased", None),
                                ("phase_per", "--phase-per", "layer"), ("heads_on", "--heads-on", "last"),
                                ("seq", "--seq", DEFAULT_SEQ), ("tied", "--tied", False),
                                ("dtype", "--dtype", "float16")])


def sizes(args):
    """(hidden, heads, kv_heads, ffn, vocab) from the preset or the flags."""
    if args.preset:
        given = {"hidden": args.hidden, "heads": args.heads, "kv_heads": args.kv_heads, "ffn": args.ffn,
                 "vocab": args.vocab}
        _, h, heads, kv, ffn, vocab = PRESETS[args.preset]
        fixed = {"hidden": h, "heads": heads, "kv_heads": kv, "ffn": ffn, "vocab": vocab}
        for key, value in sorted(given.items()):
            if value is not None and value != fixed[key]:
                raise SystemExit("error: %s has --%s %d; leave out --%s %d or the preset"
                                 % (args.preset, key.replace("_", "-"), fixed[key], key.replace("_", "-"), value))
        if args.tied:
            raise SystemExit("error: %s's head is untied; leave out --tied or the preset" % args.preset)
        return h, heads, kv, ffn, vocab
    if args.hidden is None or args.heads is None:
        raise SystemExit("error: give --preset, or --hidden and --heads")
    h, heads = args.hidden, args.heads
    kv = args.kv_heads if args.kv_heads is not None else heads
    return h, heads, kv, args.ffn or default_ffn(h), args.vocab or DEFAULT_VOCAB


def build(args):
    flags = command_line(args)
    if args.preset and args.phased is not None and args.layers is None:
        args.layers = PRESETS[args.preset][0]
    placement = build_placement(args)
    phased = isinstance(placement, PhasePlacement)
    layers = placement.total_layers()
    if args.preset and layers != PRESETS[args.preset][0]:
        raise SystemExit("error: %s has %d layers but %s places %d"
                         % (args.preset, PRESETS[args.preset][0], "--layers" if phased else "--layers-per-ipu",
                            layers))
    if args.layers is not None and args.layers != layers and not phased:
        raise SystemExit("error: --layers %d but --layers-per-ipu places %d" % (args.layers, layers))
    h, heads, kv, ffn, vocab = sizes(args)
    seq = args.seq
    if h % heads:
        raise SystemExit("error: --hidden %d is not a multiple of --heads %d" % (h, heads))
    if (h // heads) % 2:
        raise SystemExit("error: the head size %d is odd; the rotary embedding rotates pairs of dimensions"
                         % (h // heads))
    if heads % kv:
        raise SystemExit("error: --kv-heads %d does not divide --heads %d (each key-value head serves a whole "
                         "group of query heads)" % (kv, heads))
    if args.tied and placement.head[0] != 0:
        raise SystemExit("error: %s puts the LM head on IPU %d, away from the tied token embedding on IPU 0 "
                         "(ipusim does not copy a weight between IPUs); add --heads-on 0 or leave out --tied"
                         % ("--phased" if phased else "the placement", placement.head[0]))

    b = Builder(args.dtype)
    b.tensor("input_ids", [seq], "input", "int32")
    b.tensor("labels", [seq], "input", "int32")

    if phased:
        b.place_phase(0, placement.stages)
    else:
        b.place((0, 0))
    embed = b.weight("embed_tokens/weight", [vocab, h])
    x = b.op("embed_tokens", "Gather", [embed, "input_ids"], [("embed_tokens_out", [seq, h])])

    layer_places = ([(i, None, None) for i in range(layers)] if phased else placement.layers())
    for index, ipu, stage in layer_places:
        if phased:
            before_mlp = place_layer(b, placement, index)
        else:
            b.place((ipu, stage))
            before_mlp = None
        x = llama_layer(b, "layers.%d" % index, x, seq, h, heads, kv, ffn, before_mlp=before_mlp)

    if phased:
        b.place_phase(placement.head_phase, placement.stages)
    else:
        b.place(placement.head)
    x = rms_norm(b, "norm", x, [seq, h])
    if args.tied:
        # x @ embed^T: the weight is listed as stored, [vocab, hidden]; the contracted
        # dimension is hidden, the last of the first input.
        logits = b.op("lm_head", "MatMul", [x, embed], [("lm_head_out", [seq, vocab])])
    else:
        logits = b.dense("lm_head", x, seq, h, vocab, bias=False)
    probs = b.op("loss/softmax", "Softmax", [logits], [("loss/probs", [seq, vocab])])
    tokens = b.op("loss/nll", "NllLoss", [probs, "labels"], [("loss/token_losses", [seq])])
    b.op("loss/mean", "ReduceMean", [tokens], [("loss", [1])])

    what = args.preset or "LLaMA-family decoder"
    description = (
        "%s (Hugging Face's LlamaForCausalLM structure: RMSNorm, rotary embedding, %s, SwiGLU MLP), generated by "
        "scripts/make_llama_model.py %s. %d layers, hidden %d, %d heads, %d key-value heads, head size %d, ffn %d, "
        "seq %d, vocab %d, %s head, %s. Layers per IPU (%s); embedding on IPU0 in stage 0; final RMSNorm, LM head "
        "and loss on IPU%d in stage %d."
        % (what, "grouped-query attention" if kv < heads else "multi-head attention", " ".join(flags), layers, h,
           heads, kv, h // heads, ffn, seq, vocab, "tied" if args.tied else "untied", args.dtype,
           placement.summary(), placement.head[0], placement.head[1]))
    if phased:
        description += " Execution phases: the embedding in 0, the head in %d." % placement.head_phase
    return b.model(args.name or args.preset or "llama", description, ["loss"])


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Generate a PopART-annotated LLaMA-family decoder (Llama 2, TinyLlama or any size; ipusim JSON "
                    "model format).",
        epilog="Examples:\n"
               "  Llama 2 7B on a Pod16:  --preset llama-2-7b --layers-per-ipu 2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2\n"
               "  TinyLlama on 4 IPUs:    --preset tinyllama-1.1b --layers-per-ipu 4,6,6,6 --seq 2048\n"
               "  Llama 2 7B, phased:     --preset llama-2-7b --phased 2\n"
               "  small GQA decoder:      --hidden 256 --heads 4 --kv-heads 2 --ffn 688 --layers-per-ipu 1,1 --seq 64",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", choices=sorted(PRESETS), default=None,
                        help="published sizes (Llama 2, TinyLlama)")
    add_placement_arguments(parser, "decoder layers", "last")
    for action in parser._actions:  # --phased places the layers instead
        if action.dest == "layers_per_ipu":
            action.required = False
    parser.add_argument("--layers", type=positive_int, default=None,
                        help="total decoder layers (a check with --layers-per-ipu; the depth with --phased)")
    parser.add_argument("--hidden", type=positive_int, default=None, help="hidden size (set by --preset)")
    parser.add_argument("--heads", type=positive_int, default=None, help="attention (query) heads (set by --preset)")
    parser.add_argument("--kv-heads", type=positive_int, default=None,
                        help="key-value heads, dividing --heads (default --heads; fewer: grouped-query attention)")
    parser.add_argument("--ffn", type=positive_int, default=None,
                        help="MLP size (default Meta's rule: 8 x hidden / 3 rounded up to a multiple of 256)")
    parser.add_argument("--seq", type=positive_int, default=DEFAULT_SEQ,
                        help="sequence length (default %d; any length: no position table)" % DEFAULT_SEQ)
    parser.add_argument("--vocab", type=positive_int, default=None,
                        help="vocabulary size (default %d)" % DEFAULT_VOCAB)
    parser.add_argument("--tied", action="store_true",
                        help="the LM head reuses the token embedding (tie_word_embeddings) instead of its own weight")
    add_phased_arguments(parser, "MLP", needs_layers=False)
    add_output_arguments(parser, "the preset, else \"llama\"")
    args = parser.parse_args(argv)
    write(dump(build(args)), args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
