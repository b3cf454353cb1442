"""Shared pieces of the model-zoo generators (scripts/make_*_model.py).

Builder collects tensors and ops in ipusim's JSON model format (docs/formats.md):
shapes are per sample (no batch dimension), every op carries "virtualGraph" and
"pipelineStage". Placement turns a --layers-per-ipu list and a head placement into the
IPU and stage of each part of a model, the way Graphcore's examples place layers.
dump() writes one tensor and one op per line, deterministically.

Standard library only, so the generators run with any python3.
"""

import argparse
import json

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


class Placement:
    """Where the parts of a layered model go.

    per_ipu[i] layers sit on IPU i, in order (IPU 0's first, then IPU 1's, ...); an IPU
    with no layer is unused. The stem (embedding) runs on IPU 0 in stage 0. A used IPU's
    stage is its rank among the used IPUs (stage = IPU when none is skipped). The head
    runs either on the last used IPU in that IPU's stage ("last": the plain pipeline), or
    back on IPU 0 in a new final stage ("0": Graphcore's BERT, whose MLM decoder shares
    the word embedding on IPU 0)."""

    def __init__(self, per_ipu, heads_on, stage_ipus=None):
        if sum(per_ipu) == 0:
            raise SystemExit("error: --layers-per-ipu places no layer")
        self.per_ipu = list(per_ipu)
        self.heads_on = heads_on
        self.stage_ipus = list(stage_ipus) if stage_ipus else None
        if self.stage_ipus:
            self._place_by_stage()
            return
        self.used = sorted({0} | {i for i, n in enumerate(per_ipu) if n > 0})
        self.stage_of_ipu = {ipu: rank for rank, ipu in enumerate(self.used)}
        if heads_on == "0":
            self.head = (0, len(self.used))
        else:
            last = self.used[-1]
            self.head = (last, self.stage_of_ipu[last])

    def _place_by_stage(self):
        """--stage-ipus: the list gives layers per pipeline stage and stage s runs on IPU
        stage_ipus[s], so a stage can return to an IPU (a V: 0,1,2,3,3,2,1,0; interleaved:
        0,1,2,3,0,1,2,3). The stem is in stage 0, which must be on IPU 0; "last" puts the
        head in the last stage, on that stage's IPU."""
        stages = self.stage_ipus
        if len(stages) != len(self.per_ipu):
            raise SystemExit("error: --stage-ipus names %d stages but --layers-per-ipu gives layers for %d"
                             % (len(stages), len(self.per_ipu)))
        if stages[0] != 0:
            raise SystemExit("error: --stage-ipus: stage 0 holds the embedding and must be on IPU 0, not %d" % stages[0])
        if any(i < 0 for i in stages):
            raise SystemExit("error: --stage-ipus: IPU ids must not be negative")
        last = len(stages) - 1
        for s, n in enumerate(self.per_ipu):
            if n == 0 and s != 0 and not (s == last and self.heads_on == "last"):
                raise SystemExit("error: --stage-ipus: stage %d has no layer (only stage 0 and, with the head "
                                 "there, the last stage may be empty)" % s)
        self.head = (0, len(stages)) if self.heads_on == "0" else (stages[last], last)

    def layers(self):
        """(layer index, ipu, stage) for every layer, in order."""
        index = 0
        if self.stage_ipus:
            for stage, count in enumerate(self.per_ipu):
                for _ in range(count):
                    yield index, self.stage_ipus[stage], stage
                    index += 1
            return
        for ipu, count in enumerate(self.per_ipu):
            for _ in range(count):
                yield index, ipu, self.stage_of_ipu[ipu]
                index += 1

    def total_layers(self):
        return sum(self.per_ipu)

    def summary(self):
        if self.stage_ipus:
            return ", ".join("stage %d on IPU%d: %d" % (s, i, n)
                             for s, (i, n) in enumerate(zip(self.stage_ipus, self.per_ipu)))
        return ", ".join("IPU%d: %d" % (i, n) for i, n in enumerate(self.per_ipu))


def add_placement_arguments(parser, layer_word, default_heads_on):
    parser.add_argument("--layers-per-ipu", type=int_list, required=True,
                        help="%s per IPU, e.g. 3,7,7,7 (entry i = IPU i; 0 allowed)" % layer_word)
    add_stage_ipus_argument(parser)
    parser.add_argument("--heads-on", choices=("0", "last"), default=default_heads_on,
                        help="the head on IPU 0 in a new final stage, or on the last used IPU "
                             "(default %s)" % default_heads_on)


def add_stage_ipus_argument(parser):
    parser.add_argument("--stage-ipus", type=int_list, default=None,
                        help="the IPU of each pipeline stage, e.g. 0,1,2,3,3,2,1,0 (a V); --layers-per-ipu "
                             "then gives layers per stage")


def add_output_arguments(parser, default_name):
    parser.add_argument("--dtype", choices=DTYPES, default="float16",
                        help="dtype of weights and activations (default float16)")
    parser.add_argument("--name", default=None, help="model name (default %s)" % default_name)
    parser.add_argument("-o", "--output", default=None, help="write here instead of standard output")


def add_phased_arguments(parser, second_half, needs_layers):
    """--phased and --phase-per of the decoder generators: a phase per layer, or two (attention,
    then `second_half`)."""
    parser.add_argument("--phased", type=int, choices=[1, 2], default=None,
                        help="phased execution instead of --layers-per-ipu: executionPhaseSettings.stages (2: phases "
                             "alternate over IPUs 0 and 1; 1: all on IPU 0)" + ("; needs --layers" if needs_layers else ""))
    parser.add_argument("--phase-per", choices=["layer", "half"], default="layer",
                        help="with --phased: one phase per decoder layer, or two (attention, %s)" % second_half)


def phase_place(phase, stages):
    """(virtual graph, pipeline stage, executionPhase) of a phase under ExecutionPhaseSettings.stages."""
    return (phase % stages, 0, phase)


def changed_flags(args, defaults):
    """The generator's arguments that differ from their defaults, for a model's description:
    defaults lists (attribute, flag, default); a flag that is True is written alone."""
    out = []
    for attribute, flag, default in defaults:
        value = getattr(args, attribute)
        if value is None or value == default:
            continue
        if value is True:
            out.append(flag)
        elif isinstance(value, list):
            out += [flag, ",".join(str(v) for v in value)]
        else:
            out += [flag, str(value)]
    return out


class Builder:
    def __init__(self, dtype):
        self.dtype = dtype
        self.tensors = {}
        self.ops = []
        self.ipu = 0
        self.stage = 0

    def place(self, where):
        """where: (ipu, stage), or (ipu, stage, executionPhase) for phased execution."""
        self.ipu, self.stage = where[0], where[1]
        self.phase = where[2] if len(where) > 2 else None

    def place_phase(self, phase, stages):
        """Phased execution: the op's executionPhase, on virtual graph phase % stages (PopART's
        placement rule for ExecutionPhaseSettings.stages), pipeline stage 0."""
        self.place(phase_place(phase, stages))

    def tensor(self, name, shape, kind, dtype=None):
        if name in self.tensors:
            raise ValueError("tensor %s declared twice" % name)
        self.tensors[name] = {"shape": list(shape), "dtype": dtype or self.dtype, "kind": kind}
        return name

    def weight(self, name, shape):
        return self.tensor(name, shape, "weight")

    def shape(self, name):
        return self.tensors[name]["shape"]

    def op(self, name, op_type, inputs, outputs, attributes=None):
        """outputs: list of (name, shape) or (name, shape, dtype); declared as activations.
        attributes: the ONNX attributes a cost model may read (a Conv's strides, ...)."""
        names = []
        for out in outputs:
            self.tensor(out[0], out[1], "activation", out[2] if len(out) > 2 else None)
            names.append(out[0])
        op = {"name": name, "type": op_type, "inputs": list(inputs), "outputs": names}
        if attributes:
            op["attributes"] = attributes
        op["virtualGraph"] = self.ipu
        op["pipelineStage"] = self.stage
        if getattr(self, "phase", None) is not None:
            op["executionPhase"] = self.phase
        self.ops.append(op)
        return names[0] if len(names) == 1 else names

    def dense(self, prefix, x, rows, k, n, bias=True):
        """x [rows, k] @ W [k, n] (+ b): a MatMul and an Add, as PopART's builders write it."""
        w = self.weight(prefix + "/weight", [k, n])
        y = self.op(prefix, "MatMul", [x, w], [(prefix + "_out", [rows, n])])
        if not bias:
            return y
        b = self.weight(prefix + "/bias", [n])
        return self.op(prefix + "_bias", "Add", [y, b], [(prefix + "_biased", [rows, n])])

    def layer_norm(self, prefix, x, shape, output=None):
        g = self.weight(prefix + "/gamma", [shape[-1]])
        b = self.weight(prefix + "/beta", [shape[-1]])
        return self.op(prefix, "LayerNorm", [x, g, b], [(output or prefix + "_out", shape)])

    def model(self, name, description, anchors):
        return {"name": name, "description": description, "tensors": self.tensors, "ops": self.ops,
                "anchors": anchors}


def weight_elements(model):
    total = 0
    for t in model["tensors"].values():
        if t["kind"] == "weight":
            n = 1
            for d in t["shape"]:
                n *= d
            total += n
    return total


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


def write(text, path):
    if path:
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
    else:
        import sys
        sys.stdout.write(text)


class SubLayerPlacement:
    """Graphcore's att_ffn_placement: the attention and the feed-forward half of each encoder
    layer placed apart. spec lists, in pipeline-stage order from start_stage, [ipu, [attention
    halves, feed-forward halves]]; the halves are taken in order (layer 0's attention, layer 0's
    feed-forward, layer 1's attention, ...). As bert_model.py's init_device_placement (MLPerf
    Training v1.1 and v2.0, Graphcore/benchmarks/bert/implementations/popart): the heads go to
    IPU 0 in the last stage when the last entry is on IPU 0, else in a new stage after it."""

    def __init__(self, spec, start_stage, num_layers=None):
        if not spec:
            raise SystemExit("error: --att-ffn-placement lists no pipeline stage")
        if start_stage < 1:
            raise SystemExit("error: --encoder-start-pipeline-stage must be at least 1 (stage 0 is the embedding)")
        self.att, self.ffn = [], []
        for p, (ipu, (att, ffn)) in enumerate(spec):
            self.att += [(ipu, start_stage + p)] * att
            self.ffn += [(ipu, start_stage + p)] * ffn
        if len(self.att) != len(self.ffn) or not self.att:
            raise SystemExit("error: --att-ffn-placement places %d attention and %d feed-forward halves; each layer "
                             "needs one of each" % (len(self.att), len(self.ffn)))
        if num_layers is not None and num_layers != len(self.att):
            raise SystemExit("error: --num-layers %d but --att-ffn-placement places %d layers"
                             % (num_layers, len(self.att)))
        for i in range(len(self.att)):
            if self.ffn[i][1] < self.att[i][1] or (i + 1 < len(self.att) and self.att[i + 1][1] < self.ffn[i][1]):
                raise SystemExit("error: --att-ffn-placement puts layer %d's halves out of pipeline order" % i)
        final = start_stage + len(spec) - 1
        self.last_stage = final if spec[-1][0] == 0 else final + 1
        self.head = (0, self.last_stage)
        self.ipus = sorted({0} | {ipu for ipu, _ in spec})

    def layers(self):
        return len(self.att)

    def summary(self):
        parts = []
        for (ipu, stage) in sorted(set(self.att) | set(self.ffn), key=lambda p: p[1]):
            parts.append("stage %d IPU%d: %d attention, %d feed-forward" %
                         (stage, ipu, self.att.count((ipu, stage)), self.ffn.count((ipu, stage))))
        return "; ".join(parts)
