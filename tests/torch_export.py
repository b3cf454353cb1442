#!/usr/bin/python3
"""Exports three PyTorch models to ONNX, for tests/test_onnx_torch.cpp.

Usage: torch_export.py OUT_DIR [resnet50|encoder|decoder|decoder17|llama]. Writes resnet50.onnx
(torchvision's ResNet-50) and encoder.onnx (a 6-layer torch.nn.TransformerEncoder with a linear
head) without weight data, and decoder.onnx (a GPT-style decoder with a head tied to its token
embedding) as a user exports it: with its fp32 weights and constant folding (decoder17: the
same at opset 17, decoder-opset17.onnx), and llama-folded.onnx and llama-unfolded.onnx (a
LLaMA-style decoder, tests/torch_llama.py, exported two ways: export_llama). Each is beside a .json
holding PyTorch's own counts:
  parameters  sum of numel() over model.parameters()
  buffers     elements of the float buffers the ONNX graph reads: BatchNormalization's
              running mean and variance, which ipusim holds as weights too (BatchNormalization
              reads them), and a causal mask, which ipusim holds as a constant
  flops       forward FLOPs of one sample by torch.profiler (with_flops=True): 2 per
              multiply-accumulate of each convolution and matrix product (aten::conv2d,
              addmm, mm, bmm, matmul), the element-wise adds it also counts listed apart
              as "add_flops"
Exit 77 when torch, torchvision or onnx is missing (the test then skips and says so).

The models are exported with export_params=False (no weight data), then every graph input
naming a parameter or buffer is turned into an initializer with dims and no data, which is
how ipusim reads a weight-less model. ResNet-50 is exported in training mode so that its
BatchNormalization nodes stay (evaluation mode folds them into the convolutions). Every
parameter is drawn at random first: PyTorch merges parameters with equal values into one.
"""

import json
import os
import sys
import warnings

try:
    import onnx
    import torch
    import torchvision
except ImportError as e:
    sys.stderr.write("skipped: %s (Debian: apt-get install python3-torch python3-torchvision python3-onnx)\n" % e)
    sys.exit(77)


def randomise(model):
    torch.manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_()


def profile_flops(model, sample):
    # With gradients on, as in training: under no_grad an evaluating TransformerEncoder
    # takes PyTorch's fused fast path, whose FLOPs the profiler does not count.
    with torch.profiler.profile(with_flops=True) as prof:
        model(sample)
    flops, adds = 0, 0
    for e in prof.key_averages():
        if not e.flops:
            continue
        if e.key in ("aten::add", "aten::add_", "aten::mul", "aten::mul_"):
            adds += e.flops
        else:
            flops += e.flops
    return flops, adds


def weights_as_initializers(proto, data_inputs):
    """Parameters exported as graph inputs (export_params=False) -> initializers without data."""
    g = proto.graph
    keep = []
    for value in g.input:
        if value.name in data_inputs:
            keep.append(value)
            continue
        t = onnx.TensorProto()
        t.name = value.name
        t.data_type = value.type.tensor_type.elem_type
        t.dims.extend(d.dim_value for d in value.type.tensor_type.shape.dim)
        g.initializer.append(t)
    del g.input[:]
    g.input.extend(keep)


def export(model, sample, name, folder, training):
    path = os.path.join(folder, name + ".onnx")
    mode = torch.onnx.TrainingMode.TRAINING if training else torch.onnx.TrainingMode.EVAL
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, sample, path, export_params=False, training=mode, do_constant_folding=False,
                          input_names=["input"], output_names=["output"],
                          dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}}, opset_version=13)
    proto = onnx.load(path)
    weights_as_initializers(proto, {"input"})
    onnx.save(proto, path)
    model.eval()
    flops, adds = profile_flops(model, sample[:1])
    buffers = sum(b.numel() for n, b in model.named_buffers() if b.is_floating_point())
    counts = {"parameters": sum(p.numel() for p in model.parameters()), "buffers": buffers, "flops": flops,
              "add_flops": adds}
    with open(os.path.join(folder, name + ".json"), "w") as f:
        json.dump(counts, f, indent=1, sort_keys=True)


class Encoder(torch.nn.Module):
    """Six post-LayerNorm encoder layers (d_model 64, 4 heads, feed-forward 128) and a linear head."""

    def __init__(self):
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.0,
                                                 batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, num_layers=6, enable_nested_tensor=False)
        self.head = torch.nn.Linear(64, 10)

    def forward(self, x):
        return self.head(self.encoder(x))


class Decoder(torch.nn.Module):
    """A GPT-style decoder: token and position embeddings, two causal pre-LayerNorm layers
    (d_model 64, 4 heads, feed-forward 256), a final LayerNorm and a language-model head tied
    to the token embedding. Its forward reads the sequence length with x.size() and reshapes
    with view(), so the export holds Shape, Gather, Unsqueeze, Concat and Constant nodes."""

    def __init__(self, vocab=128, positions=16, width=64):
        super().__init__()
        self.tokens = torch.nn.Embedding(vocab, width)
        self.positions = torch.nn.Embedding(positions, width)
        layer = torch.nn.TransformerEncoderLayer(d_model=width, nhead=4, dim_feedforward=256, dropout=0.0,
                                                 batch_first=True, norm_first=True)
        self.layers = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.norm = torch.nn.LayerNorm(width)
        self.head = torch.nn.Linear(width, vocab, bias=False)
        self.head.weight = self.tokens.weight  # tied
        self.register_buffer("mask", torch.triu(torch.full((positions, positions), float("-inf")), diagonal=1))

    def forward(self, ids):
        seq = ids.size(1)
        x = self.tokens(ids) + self.positions.weight[:seq]
        x = self.layers(x, mask=self.mask[:seq, :seq])
        x = self.norm(x)
        width = x.size(-1)
        logits = self.head(x.reshape(-1, width))  # [batch x seq, vocab]
        return logits.view(ids.size(0), seq, -1)


def export_decoder(folder, opset=13):
    """Exported as a user would: with its weights (fp32 data) and constant folding, which
    writes the head's transposed copy of the tied embedding as an initializer of its own.
    At opset 17 (decoder-opset17.onnx) LayerNormalization is one node and the exporter's
    shape arithmetic differs: the export libonnx's data propagation crashed on once its
    graph.input list was removed (issue 39)."""
    model = Decoder()
    randomise(model)
    model.eval()
    ids = torch.zeros(2, 16, dtype=torch.long)
    name = "decoder" if opset == 13 else "decoder-opset%d" % opset
    path = os.path.join(folder, name + ".onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, ids, path, input_names=["ids"], output_names=["logits"],
                          dynamic_axes={"ids": {0: "batch"}, "logits": {0: "batch"}}, opset_version=opset)
    flops, adds = profile_flops(model, ids[:1])
    buffers = sum(b.numel() for n, b in model.named_buffers() if b.is_floating_point())  # the causal mask
    counts = {"parameters": sum(p.numel() for p in model.parameters()), "buffers": buffers, "flops": flops,
              "add_flops": adds}
    with open(os.path.join(folder, name + ".json"), "w") as f:
        json.dump(counts, f, indent=1, sort_keys=True)


def export_llama(folder):
    """The LLaMA-style decoder (tests/torch_llama.py) as users export it, in evaluation mode
    with its weights (PyTorch then merges the RMSNorm weights, all ones, into one): at opset
    14 with constant folding and buffers kept (llama-folded.onnx, batch 1), and at opset 17
    without constant folding, its buffers not kept in the state dict and a static batch of 2
    (llama-unfolded.onnx)."""
    from torch_llama import Llama
    for name, opset, fold, persistent, batch in (("llama-folded", 14, True, True, 1),
                                                  ("llama-unfolded", 17, False, False, 2)):
        torch.manual_seed(0)
        model = Llama(persistent=persistent)
        model.eval()
        ids = torch.zeros(batch, 32, dtype=torch.long)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, ids, os.path.join(folder, name + ".onnx"), input_names=["ids"],
                              output_names=["logits"], opset_version=opset, do_constant_folding=fold)
        flops, adds = profile_flops(model, ids[:1])
        counts = {"parameters": sum(p.numel() for p in model.parameters()), "flops": flops, "add_flops": adds}
        with open(os.path.join(folder, name + ".json"), "w") as f:
            json.dump(counts, f, indent=1, sort_keys=True)


def main():
    if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and
                                       sys.argv[2] not in ("resnet50", "encoder", "decoder", "decoder17", "llama")):
        sys.stderr.write("usage: torch_export.py OUT_DIR [resnet50|encoder|decoder|decoder17|llama]\n")
        return 2
    folder = sys.argv[1]
    which = sys.argv[2:] or ["resnet50", "encoder", "decoder", "decoder17", "llama"]
    os.makedirs(folder, exist_ok=True)
    torch.set_num_threads(1)

    if "resnet50" in which:
        resnet = torchvision.models.resnet50()
        randomise(resnet)
        resnet.train()
        export(resnet, torch.zeros(2, 3, 224, 224), "resnet50", folder, training=True)
    if "encoder" in which:
        encoder = Encoder()
        randomise(encoder)
        encoder.eval()
        export(encoder, torch.zeros(2, 16, 64), "encoder", folder, training=False)
    if "decoder" in which:
        export_decoder(folder)
    if "decoder17" in which:
        export_decoder(folder, opset=17)
    if "llama" in which:
        export_llama(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
