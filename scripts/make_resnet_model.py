#!/usr/bin/env python3
"""Generate a PopART-annotated ResNet (50, 101 or 152) in ipusim's model format.

The layer list is torchvision's (torchvision/models/resnet.py, ResNet v1.5: the stride of
a down-sampling bottleneck sits on its 3x3 convolution): a 7x7/2 stem convolution with
BatchNormalization, Relu and a 3x3/2 MaxPool; four stages of bottleneck blocks (1x1, 3x3,
1x1 convolutions, each followed by BatchNormalization, a Relu after the first two and
after the residual Add; the first block of a stage adds a strided 1x1 convolution with
BatchNormalization on the shortcut); GlobalAveragePool, Flatten, the fully connected
classifier (Gemm) and a SoftmaxCrossEntropy loss against the label. Convolutions have no
bias. Node and weight names are torchvision's module and parameter names.

Convolutions, the pool and the classifier carry their ONNX attributes (kernel_shape,
strides, pads, group; transB) for cost models that read them. Shapes are per sample in
NCHW order without N (ipusim's shapes carry no batch dimension):
the image is [3, 224, 224]. BatchNormalization reads its input, scale and bias; the
running mean and variance are statistics, not parameters, and are left out, so the weight
elements equal torchvision's parameter count (ResNet-50: 25,557,032).

Placement, by bottleneck blocks as Graphcore's CNN examples split ResNet into pipeline
stages: --layers-per-ipu 3,4,6,3 puts the first 3 blocks (with the stem, on IPU 0) on
IPU 0, the next 4 on IPU 1, and so on. The head (pool, classifier, loss) runs on the last
used IPU, or with --heads-on 0 back on IPU 0 in a new final stage.

Output is deterministic: the same arguments always give the same bytes.
"""

import argparse
import sys

from model_builder import (Builder, Placement, add_output_arguments, add_placement_arguments, changed_flags, dump,
                           int_list, positive_int, write)

# Bottleneck blocks per stage (torchvision resnet50/101/152).
BLOCKS = {50: [3, 4, 6, 3], 101: [3, 4, 23, 3], 152: [3, 8, 36, 3]}


def conv_out(size, kernel, stride, pad):
    return (size + 2 * pad - kernel) // stride + 1


class ResNetBuilder(Builder):
    def conv(self, name, x, out_channels, kernel, stride, pad):
        c, h, w = self.shape(x)
        weight = self.weight(name + ".weight", [out_channels, c, kernel, kernel])
        shape = [out_channels, conv_out(h, kernel, stride, pad), conv_out(w, kernel, stride, pad)]
        return self.op(name, "Conv", [x, weight], [(name + "_out", shape)],
                       {"kernel_shape": [kernel, kernel], "strides": [stride, stride], "pads": [pad] * 4,
                        "group": 1})

    def batch_norm(self, name, x):
        c = self.shape(x)[0]
        scale = self.weight(name + ".weight", [c])
        bias = self.weight(name + ".bias", [c])
        return self.op(name, "BatchNormalization", [x, scale, bias], [(name + "_out", self.shape(x))])

    def relu(self, name, x):
        return self.op(name, "Relu", [x], [(name + "_out", self.shape(x))])


def bottleneck(b, name, x, planes, stride, downsample):
    out = b.relu(name + ".relu1", b.batch_norm(name + ".bn1", b.conv(name + ".conv1", x, planes, 1, 1, 0)))
    out = b.relu(name + ".relu2", b.batch_norm(name + ".bn2", b.conv(name + ".conv2", out, planes, 3, stride, 1)))
    out = b.batch_norm(name + ".bn3", b.conv(name + ".conv3", out, planes * 4, 1, 1, 0))
    shortcut = x
    if downsample:
        shortcut = b.batch_norm(name + ".downsample.1", b.conv(name + ".downsample.0", x, planes * 4, 1, stride, 0))
    out = b.op(name + ".add", "Add", [out, shortcut], [(name + ".add_out", b.shape(out))])
    return b.relu(name + ".relu3", out)


def build(args):
    blocks = BLOCKS[args.depth]
    placement = Placement(args.layers_per_ipu, args.heads_on, args.stage_ipus)
    if placement.total_layers() != sum(blocks):
        raise SystemExit("error: --layers-per-ipu places %d bottleneck blocks; ResNet-%d has %d (%s)"
                         % (placement.total_layers(), args.depth, sum(blocks), "+".join(map(str, blocks))))
    b = ResNetBuilder(args.dtype)
    s = args.image_size
    b.place((0, 0))
    if args.eight_bit_io:
        # 8-bit images from the host, cast and normalised on the IPU (Graphcore's eight_bit_io
        # with fused_preprocessing).
        b.tensor("image", [3, s, s], "input", "int8")
        image = b.op("image_cast", "Cast", ["image"], [("image_float", [3, s, s])])
        image = b.op("image_normalise", "Scale", [image], [("image_normalised", [3, s, s])])
    else:
        image = b.tensor("image", [3, s, s], "input")
    b.tensor("label", [1], "input", "int32")
    x = b.relu("relu", b.batch_norm("bn1", b.conv("conv1", image, 64, 7, 2, 3)))
    c, h, w = b.shape(x)
    x = b.op("maxpool", "MaxPool", [x], [("maxpool_out", [c, conv_out(h, 3, 2, 1), conv_out(w, 3, 2, 1)])],
             {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]})

    block_places = list(placement.layers())
    splits = set(args.stage_splits)
    if any(not 0 < v < sum(blocks) for v in splits):
        raise SystemExit("error: --stage-splits takes block indices 1..%d" % (sum(blocks) - 1))
    # A split starts a new pipeline stage on the same IPU; every later stage moves up by one.
    shift = 0
    index = 0
    for stage, count in enumerate(blocks):
        planes = 64 * 2 ** stage
        for i in range(count):
            _, ipu, pipeline_stage = block_places[index]
            if index in splits:
                shift += 1
            b.place((ipu, pipeline_stage + shift))
            x = bottleneck(b, "layer%d.%d" % (stage + 1, i), x, planes, 2 if i == 0 and stage > 0 else 1, i == 0)
            index += 1

    b.place((placement.head[0], placement.head[1] + shift))
    c = b.shape(x)[0]
    x = b.op("avgpool", "GlobalAveragePool", [x], [("avgpool_out", [c, 1, 1])])
    x = b.op("flatten", "Flatten", [x], [("flatten_out", [c])])
    # torchvision's Linear stores its weight [out, in]; the exporter writes Gemm(transB=1).
    weight = b.weight("fc.weight", [args.classes, c])
    bias = b.weight("fc.bias", [args.classes])
    logits = b.op("fc", "Gemm", [x, weight, bias], [("logits", [args.classes])], {"transB": 1})
    b.op("loss", "SoftmaxCrossEntropy", [logits, "label"], [("loss_out", [1])])

    description = (
        "ResNet-%d (torchvision's layer list, v1.5), generated by scripts/make_resnet_model.py %s. "
        "Image [3,%d,%d] per sample, %d classes, %s. Bottleneck blocks per IPU (%s); stem on IPU0 in stage 0; "
        "pool, classifier and loss on IPU%d in stage %d."
        % (args.depth, " ".join(command_line(args)), s, s, args.classes, args.dtype, placement.summary(),
           placement.head[0], placement.head[1] + shift))
    return b.model(args.name or "resnet%d" % args.depth, description, ["loss_out"])


def command_line(args):
    return changed_flags(args, [("depth", "--depth", None), ("layers_per_ipu", "--layers-per-ipu", None),
                                ("stage_ipus", "--stage-ipus", None),
                                ("heads_on", "--heads-on", "last"), ("image_size", "--image-size", 224),
                                ("classes", "--classes", 1000), ("dtype", "--dtype", "float16"),
                                ("stage_splits", "--stage-splits", []), ("eight_bit_io", "--eight-bit-io", False)])


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Generate a PopART-annotated ResNet (torchvision's layer list) in ipusim's JSON model format, "
                    "split over IPUs by bottleneck blocks.",
        epilog="Examples:\n"
               "  ResNet-50 on 4 IPUs: --depth 50 --layers-per-ipu 3,4,6,3\n"
               "  on 2 IPUs:           --depth 50 --layers-per-ipu 7,9\n"
               "  on 1 IPU:            --depth 50 --layers-per-ipu 16",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--depth", type=int, choices=sorted(BLOCKS), default=50, help="ResNet depth (default 50)")
    add_placement_arguments(parser, "bottleneck blocks", "last")
    parser.add_argument("--image-size", type=positive_int, default=224, help="image height and width (default 224)")
    parser.add_argument("--classes", type=positive_int, default=1000, help="classifier outputs (default 1000)")
    parser.add_argument("--stage-splits", type=int_list, default=[],
                        help="bottleneck blocks (0-based, over the whole network) that start a new pipeline stage on "
                             "the same IPU, as TensorFlow's pipeline splits on one IPU: each stage's backward then "
                             "recomputes its forward (Graphcore's MLPerf splits b1/0, b1/2, b2/0, b2/2, b3/0, b3/3 "
                             "are 1,3,4,6,8,11)")
    parser.add_argument("--eight-bit-io", action="store_true",
                        help="8-bit images from the host, cast and normalised on the IPU (Graphcore's eight_bit_io)")
    add_output_arguments(parser, "resnetDEPTH")
    args = parser.parse_args(argv)
    write(dump(build(args)), args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
