#!/usr/bin/env python3
"""Generate a PopART-annotated Vision Transformer (ViT-B/16, ViT-L/16, ViT-H/14 or any
size) in ipusim's model format.

The structure is torchvision's VisionTransformer (torchvision/models/vision_transformer.py,
after Dosovitskiy et al. 2021): the patch embedding, a Conv with kernel = stride = patch
size and a bias, giving [hidden, H/p, W/p]; Reshape and Transpose to [patches, hidden];
the learned class token Concat'ed in front and the learned position embedding added;
pre-LayerNorm encoder layers (fused QKV projection with bias, scaled scores, Softmax,
output projection, residual; LayerNorm, dense, Gelu, dense, residual); a final LayerNorm;
the class token Slice'd out and classified by a dense layer with bias; a
SoftmaxCrossEntropy loss against the label. Dropout is left out.

Presets (torchvision's, 224 x 224 images, 1000 classes): vit-b-16 12 layers x 768,
12 heads, MLP 3072 (86.6M parameters, 17.56 GFLOPS); vit-l-16 24 x 1024, 16 heads,
MLP 4096 (304.3M, 61.55 GFLOPS); vit-h-14 32 x 1280, 16 heads, MLP 5120 (632.0M). The
GFLOPS count multiply-accumulates.

Placement: the patch embedding on IPU 0 in stage 0, --layers-per-ipu encoder layers per
IPU, the final LayerNorm, classifier and loss on the last used IPU (default) or back on
IPU 0 in a new final stage (--heads-on 0). Shapes are per sample (the image is
[3, 224, 224]); output is deterministic.
"""

import argparse
import sys

from model_builder import (Builder, Placement, add_output_arguments, add_placement_arguments, changed_flags, dump,
                           positive_int, write)
from transformer_blocks import dropout, pre_ln_layer

# name: (layers, hidden, heads, mlp, patch)
PRESETS = {"vit-b-16": (12, 768, 12, 3072, 16), "vit-l-16": (24, 1024, 16, 4096, 16),
           "vit-h-14": (32, 1280, 16, 5120, 14)}


def build(args):
    placement = Placement(args.layers_per_ipu, args.heads_on, args.stage_ipus)
    layers = placement.total_layers()
    if args.preset:
        preset_layers, args.hidden, args.heads, args.ffn, args.patch = PRESETS[args.preset]
        if layers != preset_layers:
            raise SystemExit("error: %s has %d layers but --layers-per-ipu places %d"
                             % (args.preset, preset_layers, layers))
    if args.hidden is None or args.heads is None:
        raise SystemExit("error: give --preset, or --hidden and --heads")
    h, heads = args.hidden, args.heads
    ffn = args.ffn or 4 * h
    if h % heads:
        raise SystemExit("error: --hidden %d is not a multiple of --heads %d" % (h, heads))
    if args.image_size % args.patch:
        raise SystemExit("error: --image-size %d is not a multiple of --patch %d" % (args.image_size, args.patch))
    for flag, rate in (("--hidden-dropout", args.hidden_dropout), ("--attention-dropout", args.attention_dropout)):
        if not 0 <= rate < 1:
            raise SystemExit("error: %s %g is not a dropout rate in [0, 1)" % (flag, rate))
    side = args.image_size // args.patch
    patches = side * side
    seq = patches + 1

    b = Builder(args.dtype)
    b.tensor("image", [3, args.image_size, args.image_size], "input")
    b.tensor("label", [1], "input", "int32")

    b.place((0, 0))
    w = b.weight("conv_proj.weight", [h, 3, args.patch, args.patch])
    bias = b.weight("conv_proj.bias", [h])
    x = b.op("conv_proj", "Conv", ["image", w, bias], [("conv_proj_out", [h, side, side])],
             {"kernel_shape": [args.patch, args.patch], "strides": [args.patch, args.patch], "pads": [0, 0, 0, 0],
              "group": 1})
    x = b.op("patches/reshape", "Reshape", [x], [("patches/flat", [h, patches])])
    x = b.op("patches/transpose", "Transpose", [x], [("patches/tokens", [patches, h])])
    cls = b.weight("class_token", [1, h])
    x = b.op("class_token/concat", "Concat", [cls, x], [("class_token/tokens", [seq, h])])
    pos = b.weight("encoder.pos_embedding", [seq, h])
    x = b.op("encoder/add_position", "Add", [x, pos], [("encoder/input", [seq, h])])
    x = dropout(b, "encoder/dropout", x, [seq, h], args.hidden_dropout)

    for index, ipu, stage in placement.layers():
        b.place((ipu, stage))
        x = pre_ln_layer(b, "encoder_layer_%d" % index, x, seq, h, heads, ffn, None, args.hidden_dropout,
                         args.attention_dropout)

    b.place(placement.head)
    x = b.layer_norm("encoder/ln", x, [seq, h])
    x = b.op("class_token/slice", "Slice", [x], [("class_token/output", [1, h])])
    width = h
    if args.representation_size:
        # The pre-logits layer of pre-training (Dosovitskiy et al.; Graphcore's Representation).
        x = b.dense("heads/pre_logits", x, 1, h, args.representation_size)
        x = b.op("heads/pre_logits_tanh", "Tanh", [x], [("heads/pre_logits_tanh_out", [1, args.representation_size])])
        width = args.representation_size
    logits = b.dense("heads/head", x, 1, width, args.classes)
    b.op("loss", "SoftmaxCrossEntropy", [logits, "label"], [("loss_out", [1])])

    description = (
        "%s (torchvision's VisionTransformer), generated by scripts/make_vit_model.py %s. %d layers, hidden %d, "
        "%d heads, MLP %d, patch %d, image [3,%d,%d] -> %d tokens, %d classes, %s. Layers per IPU (%s); patch "
        "embedding on IPU0 in stage 0; final LayerNorm, classifier and loss on IPU%d in stage %d."
        % (args.preset or "Vision Transformer", " ".join(command_line(args)), layers, h, heads, ffn, args.patch,
           args.image_size, args.image_size, seq, args.classes, args.dtype, placement.summary(),
           placement.head[0], placement.head[1]))
    return b.model(args.name or args.preset or "vit", description, ["loss_out"])


def command_line(args):
    preset = PRESETS.get(args.preset, (None,) * 5)
    return changed_flags(args, [("preset", "--preset", None), ("hidden", "--hidden", preset[1]),
                                ("heads", "--heads", preset[2]), ("ffn", "--ffn", preset[3]),
                                ("patch", "--patch", preset[4]), ("layers_per_ipu", "--layers-per-ipu", None), ("stage_ipus", "--stage-ipus", None),
                                ("heads_on", "--heads-on", "last"), ("image_size", "--image-size", 224),
                                ("classes", "--classes", 1000), ("dtype", "--dtype", "float16"),
                                ("hidden_dropout", "--hidden-dropout", 0.0),
                                ("attention_dropout", "--attention-dropout", 0.0),
                                ("representation_size", "--representation-size", None)])


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Generate a PopART-annotated Vision Transformer (ipusim JSON model format).",
        epilog="Examples:\n"
               "  ViT-B/16 on 4 IPUs: --preset vit-b-16 --layers-per-ipu 3,3,3,3\n"
               "  ViT-L/16 on 8 IPUs: --preset vit-l-16 --layers-per-ipu 3,3,3,3,3,3,3,3",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", choices=sorted(PRESETS), default=None, help="torchvision's ViT sizes")
    add_placement_arguments(parser, "encoder layers", "last")
    parser.add_argument("--hidden", type=positive_int, default=None, help="hidden size (set by --preset)")
    parser.add_argument("--heads", type=positive_int, default=None, help="attention heads (set by --preset)")
    parser.add_argument("--ffn", type=positive_int, default=None, help="MLP size (default 4 x hidden)")
    parser.add_argument("--patch", type=positive_int, default=16, help="patch size (default 16)")
    parser.add_argument("--image-size", type=positive_int, default=224, help="image height and width (default 224)")
    parser.add_argument("--classes", type=positive_int, default=1000, help="classifier outputs (default 1000)")
    parser.add_argument("--hidden-dropout", type=float, default=0.0,
                        help="dropout after the embedding, the attention's output projection, the GELU and the "
                             "MLP's output (hidden_dropout_prob; default 0: no Dropout ops)")
    parser.add_argument("--attention-dropout", type=float, default=0.0,
                        help="dropout on the attention probabilities (attention_probs_dropout_prob; default 0)")
    parser.add_argument("--representation-size", type=positive_int, default=None,
                        help="a pre-logits Linear + tanh of this width before the classifier (pre-training)")
    add_output_arguments(parser, "the preset, else \"vit\"")
    args = parser.parse_args(argv)
    write(dump(build(args)), args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
