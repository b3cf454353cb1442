#!/usr/bin/env python3
"""Generate a PopART-annotated decoder-only transformer (GPT-2 or any size) in ipusim's
model format.

The structure is GPT-2's (OpenAI's model.py, as in Hugging Face's GPT2LMHeadModel):
token and position embeddings (Gather, Gather, Add); per layer a pre-LayerNorm causal
self-attention (fused QKV projection with bias, scaled scores, the causal mask, Softmax,
output projection with bias, residual Add) and a pre-LayerNorm feed-forward (dense, Gelu,
dense, residual Add); a final LayerNorm; the language-model head (a MatMul without bias,
with the token-embedding weight transposed when the embeddings are tied, as GPT-2's are);
Softmax + NllLoss per token against the next-token labels, averaged by a ReduceMean
(written per token for the reason given in scripts/make_bert_model.py). Dropout is left
out (it costs no parameters and little time).

Presets give GPT-2's published sizes (Radford et al. 2019, Table 2; vocabulary 50257,
1024 positions): gpt2-small 12 layers x 768 (124M parameters), gpt2-medium 24 x 1024
(355M), gpt2-large 36 x 1280 (774M), gpt2-xl 48 x 1600 (1.5B); heads = hidden / 64.

--structure gptj (set by --preset gpt-j-6b) writes GPT-J's layer instead (Wang and Komatsuzaki
2021, mesh-transformer-jax; Hugging Face's GPTJForCausalLM): no position table (positions enter
through the rotary embedding on the first --rotary-dim dimensions of each head of Q and K), one
LayerNorm per layer feeding attention (Q, K, V and output projections without biases) and the
MLP (fc_in and fc_out with biases, GELU) side by side, both added to the residual; a final
LayerNorm and an untied LM head with a bias. gpt-j-6b: 28 layers x 4096, 16 heads (head size
256), rotary 64, ffn 16384, vocabulary 50400 (EleutherAI/gpt-j-6b config.json):
6,050,882,784 parameters, as sum(p.numel()) of Hugging Face's model gives (the model card's
6,053,381,344 counts mesh-transformer-jax's checkpoint). Parameters: 2 V h + V + L (4 h^2 +
2 h ffn + ffn + 3 h) + 2 h.

Placement: the embedding on IPU 0 in stage 0, --layers-per-ipu decoder layers per IPU,
the final LayerNorm, LM head and loss on IPU 0 in a new final stage (--heads-on 0, the
default: with tied embeddings the head must sit with the token embedding, since ipusim
does not copy a weight between IPUs) or on the last used IPU (--heads-on last, which
needs --untied embeddings unless everything is on IPU 0).

Phased execution (--phased STAGES, instead of --layers-per-ipu; --layers gives the depth): one
execution phase for the embedding, one per decoder layer (--phase-per layer, as Graphcore's PopXL
GPT-J runs its layers) or two (--phase-per half: attention, then feed-forward), one for the final
LayerNorm, head and loss; each phase on virtual graph phase % STAGES (PopART's placement rule:
STAGES 2 alternates two IPUs, 1 keeps every phase on IPU 0). With STAGES 2 the head's phase must
fall on the embedding's IPU for tied embeddings, so --untied is needed when it does not.

Shapes are per sample; output is deterministic.
"""

import argparse
import sys

from model_builder import (Builder, Placement, add_output_arguments, add_phased_arguments, add_placement_arguments,
                           changed_flags, dump, positive_int, write)
from transformer_blocks import gptj_layer, pre_ln_layer

# name: (layers, hidden); heads = hidden / 64, vocabulary 50257, 1024 positions.
PRESETS = {"gpt2-small": (12, 768), "gpt2-medium": (24, 1024), "gpt2-large": (36, 1280), "gpt2-xl": (48, 1600)}
# name: (layers, hidden, heads, ffn, vocab, rotary_dim), GPT-J's structure.
GPTJ_PRESETS = {"gpt-j-6b": (28, 4096, 16, 16384, 50400, 64)}
GPT2_VOCAB = 50257


class PhasePlacement:
    """--phased: the embedding in phase 0, each layer (or half layer) in the next phase, the head last."""

    def __init__(self, layers, stages, per):
        self.layers, self.stages, self.per = layers, stages, per
        self.head_phase = 1 + layers * (2 if per == "half" else 1)
        self.head = (self.head_phase % stages, 0)

    def total_layers(self):
        return self.layers

    def summary(self):
        return "phased: %d phases, stages %d, a phase per %s" % (self.head_phase + 1, self.stages, self.per)


def build_placement(args):
    if args.phased is None:
        if args.layers_per_ipu is None:
            raise SystemExit("error: give --layers-per-ipu (or --phased with --layers)")
        return Placement(args.layers_per_ipu, args.heads_on, args.stage_ipus)
    if args.layers_per_ipu is not None or args.stage_ipus:
        raise SystemExit("error: --phased places the layers by phase; leave out --layers-per-ipu and --stage-ipus")
    if args.layers is None:
        raise SystemExit("error: --phased needs --layers (the number of decoder layers)")
    return PhasePlacement(args.layers, args.phased, args.phase_per)


def place_layer(b, placement, index):
    """Places layer `index` and returns the hook that places its feed-forward half (or None)."""
    if isinstance(placement, PhasePlacement):
        halves = 2 if placement.per == "half" else 1
        b.place_phase(1 + index * halves, placement.stages)
        if halves == 2:
            return lambda: b.place_phase(2 + index * 2, placement.stages)
        return None
    return None


def apply_preset(args):
    """Fills the sizes a preset fixes; a flag given with another value is refused."""
    if args.preset in GPTJ_PRESETS:
        _, h, heads, ffn, vocab, rotary = GPTJ_PRESETS[args.preset]
        fixed = {"hidden": h, "heads": heads, "ffn": ffn, "vocab": vocab, "rotary_dim": rotary, "structure": "gptj"}
    else:
        h = PRESETS[args.preset][1]
        fixed = {"hidden": h, "heads": h // 64, "vocab": GPT2_VOCAB, "structure": "gpt2"}
    for key, value in sorted(fixed.items()):
        given = getattr(args, key)
        if given is not None and given != value:
            raise SystemExit("error: %s has --%s %s; leave out --%s %s or the preset"
                             % (args.preset, key.replace("_", "-"), value, key.replace("_", "-"), given))
        setattr(args, key, value)


def preset_layers(preset):
    return (GPTJ_PRESETS[preset] if preset in GPTJ_PRESETS else PRESETS[preset])[0]


def default_rotary_dim(args):
    return min(64, args.hidden // args.heads) if args.structure == "gptj" else None


def check_structure(args):
    """GPT-J's structure has no position table and rotates part of each head; GPT-2's neither."""
    gptj = args.structure == "gptj"
    if gptj and args.max_positions is not None:
        raise SystemExit("error: --structure gptj has no position table; leave out --max-positions")
    if not gptj and args.rotary_dim is not None:
        raise SystemExit("error: --rotary-dim needs --structure gptj (GPT-2 learns a position table)")
    if gptj:
        dh = args.hidden // args.heads
        args.rotary_dim = args.rotary_dim if args.rotary_dim is not None else default_rotary_dim(args)
        if args.rotary_dim > dh or args.rotary_dim % 2:
            raise SystemExit("error: --rotary-dim %d must be even and at most the head size %d"
                             % (args.rotary_dim, dh))
    elif args.max_positions is None:
        args.max_positions = 1024
    if args.seq > (args.max_positions or args.seq):
        raise SystemExit("error: --seq %d exceeds --max-positions %d" % (args.seq, args.max_positions))


def build(args):
    if args.preset and args.phased is not None and args.layers is None:
        args.layers = preset_layers(args.preset)
    placement = build_placement(args)
    phased = isinstance(placement, PhasePlacement)
    layers = placement.total_layers()
    if args.preset:
        apply_preset(args)
        if layers != preset_layers(args.preset):
            raise SystemExit("error: %s has %d layers but %s places %d"
                             % (args.preset, preset_layers(args.preset),
                                "--layers" if phased else "--layers-per-ipu", layers))
    args.structure = args.structure or "gpt2"
    args.vocab = args.vocab or GPT2_VOCAB
    if args.hidden is None or args.heads is None:
        raise SystemExit("error: give --preset, or --hidden and --heads")
    if args.layers is not None and args.layers != layers and not phased:
        raise SystemExit("error: --layers %d but --layers-per-ipu places %d" % (args.layers, layers))
    h, heads, seq, vocab = args.hidden, args.heads, args.seq, args.vocab
    ffn = args.ffn or 4 * h
    if h % heads:
        raise SystemExit("error: --hidden %d is not a multiple of --heads %d" % (h, heads))
    check_structure(args)
    gptj = args.structure == "gptj"
    untied = args.untied or gptj
    if not untied and placement.head[0] != 0:
        raise SystemExit("error: %s puts the LM head on IPU %d, away from the tied token embedding "
                         "on IPU 0 (ipusim does not copy a weight between IPUs); add --untied"
                         % ("--phased" if phased else "--heads-on last", placement.head[0]))

    b = Builder(args.dtype)
    b.tensor("input_ids", [seq], "input", "int32")
    if not gptj:
        b.tensor("position_ids", [seq], "input", "int32")
    b.tensor("labels", [seq], "input", "int32")

    if phased:
        b.place_phase(0, placement.stages)
    else:
        b.place((0, 0))
    wte = b.weight("wte", [vocab, h])
    wpe = None if gptj else b.weight("wpe", [args.max_positions, h])
    t = b.op("embedding/token_gather", "Gather", [wte, "input_ids"], [("embedding/token", [seq, h])])
    if gptj:
        x = t
    else:
        p = b.op("embedding/position_gather", "Gather", [wpe, "position_ids"], [("embedding/position", [seq, h])])
        x = b.op("embedding/add", "Add", [t, p], [("embedding/output", [seq, h])])

    layer_places = ([(i, None, None) for i in range(layers)] if phased else placement.layers())
    for index, ipu, stage in layer_places:
        if phased:
            before_ffn = place_layer(b, placement, index)
        else:
            b.place((ipu, stage))
            before_ffn = None
        if gptj:
            x = gptj_layer(b, "h%d" % index, x, seq, h, heads, ffn, args.rotary_dim, before_mlp=before_ffn)
        else:
            x = pre_ln_layer(b, "h%d" % index, x, seq, h, heads, ffn, "causal", before_ffn=before_ffn)

    if phased:
        b.place_phase(placement.head_phase, placement.stages)
    else:
        b.place(placement.head)
    x = b.layer_norm("ln_f", x, [seq, h])
    if untied:
        logits = b.dense("lm_head", x, seq, h, vocab, bias=gptj)
    else:
        # x @ wte^T: the weight is listed as stored, [vocab, hidden]; the contracted
        # dimension is hidden, the last of the first input.
        logits = b.op("lm_head", "MatMul", [x, wte], [("lm_head_out", [seq, vocab])])
    probs = b.op("loss/softmax", "Softmax", [logits], [("loss/probs", [seq, vocab])])
    tokens = b.op("loss/nll", "NllLoss", [probs, "labels"], [("loss/token_losses", [seq])])
    b.op("loss/mean", "ReduceMean", [tokens], [("loss", [1])])

    what = args.preset or "decoder-only transformer"
    if gptj:
        shape = ("GPT-J's structure: parallel attention and MLP, rotary %d of %d dimensions per head, no position "
                 "table" % (args.rotary_dim, h // heads))
        positions = "rotary positions"
    else:
        shape = "GPT-2's structure"
        positions = "%d positions" % args.max_positions
    description = (
        "%s (%s), generated by scripts/make_gpt_model.py %s. %d layers, hidden %d, %d heads, "
        "ffn %d, seq %d, vocab %d, %s, %s embeddings, %s. Layers per IPU (%s); embedding on IPU0 in "
        "stage 0; final LayerNorm, LM head and loss on IPU%d in stage %d."
        % (what, shape, " ".join(command_line(args)), layers, h, heads, ffn, seq, vocab, positions,
           "untied" if untied else "tied", args.dtype, placement.summary(), placement.head[0],
           placement.head[1]))
    if phased:
        description += " Execution phases: the embedding in 0, the head in %d." % placement.head_phase
    return b.model(args.name or args.preset or "gpt", description, ["loss"])


def command_line(args):
    preset = {}
    if args.preset:
        preset = {"hidden": args.hidden, "heads": args.heads, "vocab": args.vocab, "structure": args.structure,
                  "rotary_dim": args.rotary_dim, "ffn": args.ffn if args.preset in GPTJ_PRESETS else None}
    return changed_flags(args, [("preset", "--preset", None),
                                ("structure", "--structure", preset.get("structure", "gpt2")),
                                ("hidden", "--hidden", preset.get("hidden")),
                                ("heads", "--heads", preset.get("heads")),
                                ("rotary_dim", "--rotary-dim", preset.get("rotary_dim", default_rotary_dim(args))),
                                ("layers_per_ipu", "--layers-per-ipu", None), ("stage_ipus", "--stage-ipus", None),
                                ("layers", "--layers", None), ("phased", "--phased", None),
                                ("phase_per", "--phase-per", "layer"),
                                ("heads_on", "--heads-on", "0"),
                                ("ffn", "--ffn", preset.get("ffn")), ("seq", "--seq", None),
                                ("vocab", "--vocab", preset.get("vocab", GPT2_VOCAB)),
                                ("max_positions", "--max-positions", 1024 if args.structure != "gptj" else None),
                                ("untied", "--untied", False),
                                ("dtype", "--dtype", "float16")])


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Generate a PopART-annotated GPT-2 or generic decoder-only transformer (ipusim JSON model "
                    "format).",
        epilog="Examples:\n"
               "  GPT-2 small on 4 IPUs: --preset gpt2-small --layers-per-ipu 0,4,4,4\n"
               "  GPT-2 XL on 16 IPUs:   --preset gpt2-xl --layers-per-ipu 0,4,4,4,4,4,4,4,4,4,4,4,4,0,0,0\n"
               "  6 layers, head last:   --hidden 512 --heads 8 --layers-per-ipu 2,2,2 --heads-on last --untied\n"
               "  GPT-J 6B on a Pod16:   --preset gpt-j-6b --layers-per-ipu 1,2,2,2,2,2,2,2,2,2,2,2,2,1,1,1 "
               "--heads-on last --seq 2048",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", choices=sorted(PRESETS) + sorted(GPTJ_PRESETS), default=None,
                        help="GPT-2's or GPT-J's published sizes")
    parser.add_argument("--structure", choices=["gpt2", "gptj"], default=None,
                        help="the layer: GPT-2's (default) or GPT-J's (set by --preset gpt-j-6b)")
    parser.add_argument("--rotary-dim", type=positive_int, default=None,
                        help="with --structure gptj: dimensions of each head the rotary embedding turns (default "
                             "64, or the head size when smaller)")
    add_placement_arguments(parser, "decoder layers", "0")
    for action in parser._actions:  # --phased places the layers instead
        if action.dest == "layers_per_ipu":
            action.required = False
    parser.add_argument("--layers", type=positive_int, default=None,
                        help="total decoder layers (a check with --layers-per-ipu; the depth with --phased)")
    parser.add_argument("--hidden", type=positive_int, default=None, help="hidden size (set by --preset)")
    parser.add_argument("--heads", type=positive_int, default=None, help="attention heads (set by --preset)")
    parser.add_argument("--ffn", type=positive_int, default=None, help="feed-forward size (default 4 x hidden)")
    parser.add_argument("--seq", type=positive_int, default=1024, help="sequence length (default 1024)")
    parser.add_argument("--vocab", type=positive_int, default=None, help="vocabulary size (default 50257)")
    parser.add_argument("--max-positions", type=positive_int, default=None,
                        help="rows of GPT-2's position-embedding table (default 1024)")
    parser.add_argument("--untied", action="store_true",
                        help="give the LM head its own [hidden, vocab] weight instead of the token embedding's")
    add_phased_arguments(parser, "feed-forward", needs_layers=True)
    add_output_arguments(parser, "the preset, else \"gpt\"")
    args = parser.parse_args(argv)
    write(dump(build(args)), args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
