#!/usr/bin/python3
"""Writes the ONNX fixtures of tests/test_onnx.cpp into a folder, with python3-onnx's helper.

Usage: make_onnx_fixtures.py OUT_DIR. Exit 77 when the onnx module is missing (the tests
then skip and say so). Every model has a symbolic batch dimension "N" on its inputs
unless its name says otherwise; weights are initializers with dims and no data unless the
fixture is about data.
"""

import os
import struct
import sys

try:
    import onnx
    from onnx import TensorProto, helper
except ImportError:
    sys.stderr.write("python3-onnx is not installed (apt-get install python3-onnx)\n")
    sys.exit(77)

F = TensorProto.FLOAT


def shape_only(name, dims, dtype=F):
    """An initializer with dims and no data: a weight-less model."""
    t = TensorProto()
    t.name = name
    t.data_type = dtype
    t.dims.extend(dims)
    return t


def const(name, values, dtype=TensorProto.INT64):
    return helper.make_tensor(name, dtype, [len(values)], values)


def node(op, inputs, outputs, name, ipu=None, stage=None, **attrs):
    n = helper.make_node(op, inputs, outputs, name=name, **attrs)
    if ipu is not None:
        n.attribute.append(helper.make_attribute("__ipu_number", ipu))
    if stage is not None:
        n.attribute.append(helper.make_attribute("__pipeline_stage", stage))
    return n


def model(nodes, inputs, outputs, initializers, opset=13, value_info=()):
    g = helper.make_graph(nodes, "fixture", inputs, outputs, initializers, value_info=list(value_info))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def batched(name, dims, dtype=F):
    return helper.make_tensor_value_info(name, dtype, ["N"] + list(dims))


def out(name):
    return helper.make_tensor_value_info(name, F, None)


def mlp(annotate=True, stages=True, ipu_on=lambda i: True, stage_on=lambda i: True):
    """The seed MLP (models/mlp.json) as PopART would write it: 784-512-10, Gemm+Relu per IPU."""
    def a(i, ipu, stage):
        return dict(ipu=ipu if annotate and ipu_on(i) else None,
                    stage=stage if annotate and stages and stage_on(i) else None)
    nodes = [
        node("Gemm", ["x0", "W0", "b0"], ["x1"], "dense1/Gemm", **a(0, 0, 0)),
        node("Relu", ["x1"], ["x2"], "dense1/Relu", **a(1, 0, 0)),
        node("Gemm", ["x2", "W1", "b1"], ["x3"], "dense2/Gemm", **a(2, 1, 1)),
        node("Relu", ["x3"], ["probs"], "dense2/Relu", **a(3, 1, 1)),
    ]
    return model(nodes, [batched("x0", [784])], [out("probs")],
                 [shape_only("W0", [784, 512]), shape_only("b0", [512]), shape_only("W1", [512, 10]),
                  shape_only("b1", [10])])


def every_op():
    """One node of each op type the importer costs, on small shapes with known FLOPs
    (tests/test_onnx.cpp lists them). Per-sample shapes in the comments."""
    inits = [shape_only("conv_w", [8, 3, 3, 3]), shape_only("conv_b", [8]),
             shape_only("group_w", [8, 2, 3, 3]), shape_only("bn_s", [8]), shape_only("bn_b", [8]),
             shape_only("bn_m", [8]), shape_only("bn_v", [8]), shape_only("fc_w", [4, 32]), shape_only("fc_b", [4]),
             shape_only("mm_w", [32, 16]), shape_only("ln_s", [16]), shape_only("ln_b", [16]),
             shape_only("table", [100, 16]),
             const("rows_shape", [-1, 32]), const("tokens_shape", [0, 4, 32]), const("heads_shape", [0, 4, 2, 8]),
             const("ids", [1, 2, 3]), const("starts", [0]), const("ends", [2]), const("axes", [1]),
             const("split", [2, 2])]
    n = [
        # [3,16,16] -> 3x3 stride-2 conv, pad 1 -> [8,8,8]: 2 x 512 x 27 + 512 (bias).
        node("Conv", ["x", "conv_w", "conv_b"], ["c"], "conv", strides=[2, 2], pads=[1, 1, 1, 1]),
        # grouped: 4 groups of 2 input channels -> [8,8,8]: 2 x 512 x 18.
        node("Conv", ["c", "group_w"], ["g"], "grouped_conv", group=4, pads=[1, 1, 1, 1]),
        node("BatchNormalization", ["g", "bn_s", "bn_b", "bn_m", "bn_v"], ["bn"], "bn"),
        node("Relu", ["bn"], ["r"], "relu"),
        node("MaxPool", ["r"], ["p"], "maxpool", kernel_shape=[2, 2], strides=[2, 2]),  # [8,4,4]
        node("AveragePool", ["p"], ["ap"], "avgpool", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),  # [8,4,4]
        node("GlobalAveragePool", ["ap"], ["gap"], "global_pool"),  # [8,1,1]
        node("Flatten", ["p"], ["flat"], "flatten"),  # [128]
        node("Reshape", ["flat", "rows_shape"], ["rows"], "reshape_rows"),  # [N*4, 32]: [4, 32]
        node("Reshape", ["flat", "tokens_shape"], ["tokens"], "reshape_tokens"),  # [N, 4, 32]: [4, 32]
        node("Gemm", ["rows", "fc_w", "fc_b"], ["fc"], "gemm", transB=1),  # [N*4, 4]: [4, 4]
        node("MatMul", ["tokens", "mm_w"], ["mm"], "matmul"),  # [4, 16]
        node("Reshape", ["mm", "heads_shape"], ["split_heads"], "reshape_heads"),  # [4, 2, 8]
        node("Transpose", ["split_heads"], ["q"], "transpose_q", perm=[0, 2, 1, 3]),  # [2, 4, 8]
        node("Transpose", ["split_heads"], ["k"], "transpose_k", perm=[0, 2, 3, 1]),  # [2, 8, 4]
        node("MatMul", ["q", "k"], ["scores"], "batched_matmul"),  # [2, 4, 4]: 2 x 32 x 8
        node("LayerNormalization", ["mm", "ln_s", "ln_b"], ["ln"], "layernorm", axis=-1),
        node("Softmax", ["ln"], ["sm"], "softmax", axis=-1),
        node("Gather", ["table", "ids"], ["emb"], "gather"),  # [3, 16], no batch: constant indices
        node("Concat", ["mm", "ln"], ["cat"], "concat", axis=2),  # [4, 32]
        node("Slice", ["cat", "starts", "ends", "axes"], ["sl"], "slice"),  # [2, 32]
        node("Split", ["mm", "split"], ["s1", "s2"], "split", axis=1),  # [2, 16] twice
        node("Add", ["s1", "s2"], ["add"], "add"),
        node("Sub", ["add", "s1"], ["sub"], "sub"),
        node("Mul", ["sub", "s2"], ["mul"], "mul"),
        node("Div", ["mul", "s2"], ["div"], "div"),
        node("Sigmoid", ["div"], ["sig"], "sigmoid"),
        node("Tanh", ["sig"], ["tanh"], "tanh"),
        node("Erf", ["tanh"], ["erf"], "erf"),
        node("Sqrt", ["erf"], ["sqrt"], "sqrt"),
        node("Exp", ["sqrt"], ["exp"], "exp"),
        node("Log", ["exp"], ["log"], "log"),
        node("Pow", ["log", "log"], ["pow"], "pow"),
        node("Neg", ["pow"], ["neg"], "neg"),
        node("Reciprocal", ["neg"], ["rec"], "reciprocal"),
        node("LeakyRelu", ["rec"], ["leaky"], "leaky_relu"),
        node("Cast", ["leaky"], ["cast"], "cast", to=F),
        node("Identity", ["cast"], ["ident"], "identity"),
        node("Dropout", ["ident"], ["drop"], "dropout"),
        node("ReduceMean", ["drop"], ["rmean"], "reduce_mean", axes=[-1]),  # [2, 1]
        node("ReduceSum", ["drop", "axes"], ["rsum"], "reduce_sum"),  # [1, 16]
        node("ReduceMax", ["drop"], ["rmax"], "reduce_max", axes=[-1]),
        node("LogSoftmax", ["sm"], ["lsm"], "log_softmax", axis=-1),
        node("Unsqueeze", ["rmean", "axes"], ["unsq"], "unsqueeze"),  # [1, 2, 1]
        node("Squeeze", ["unsq", "axes"], ["sq"], "squeeze"),  # [2, 1]
    ]
    outputs = ["gap", "fc", "emb", "scores", "sl", "rsum", "rmax", "lsm", "sq"]
    return model(n, [batched("x", [3, 16, 16])], [out(o) for o in outputs], inits, opset=17)


def layered():
    """An un-annotated model named the way PyTorch's exporter names nodes and weights: a
    stem, four repeated blocks layers.0 .. layers.3, and a head."""
    inits = [shape_only("stem.weight", [32, 16])]
    nodes = [node("MatMul", ["x", "stem.weight"], ["h0"], "/stem/MatMul")]
    for i in range(4):
        w = "layers.%d.fc.weight" % i
        inits.append(shape_only(w, [16, 16]))
        nodes.append(node("MatMul", ["h%d" % i, w], ["m%d" % i], "/layers.%d/fc/MatMul" % i))
        nodes.append(node("Relu", ["m%d" % i], ["h%d" % (i + 1)], "/layers.%d/act/Relu" % i))
    inits.append(shape_only("head.weight", [16, 10]))
    nodes.append(node("MatMul", ["h4", "head.weight"], ["logits"], "/head/MatMul"))
    nodes.append(node("Softmax", ["logits"], ["probs"], "/Softmax"))
    return model(nodes, [batched("x", [32])], [out("probs")], inits)


def gpt2_export(legacy):
    """A 3-layer GPT-2 named as torch.onnx.export names Hugging Face's GPT2LMHeadModel: since
    PyTorch 1.13 nodes carry their module's scope ("/transformer/h.0/attn/c_attn/MatMul", as
    Optimum's exports list them); before, nodes were named by op type and number ("MatMul_12",
    "Identity_7") and only the weights carry the module path ("transformer.h.0.attn.c_attn.weight").
    Shapes are small (hidden 16, sequence 8, vocabulary 50)."""
    h, seq, vocab = 16, 8, 50
    inits, nodes, count = [], [], [0]

    def weight(name, dims):
        inits.append(shape_only(name, dims))
        return name

    def op(kind, inputs, outputs, scope, **attrs):
        name = "%s_%d" % (kind, count[0]) if legacy else scope + "/" + kind
        count[0] += 1
        nodes.append(node(kind, inputs, outputs, name, **attrs))
        return outputs[0]

    x = op("Gather", [weight("transformer.wte.weight", [vocab, h]), "input_ids"], ["tok"], "/transformer/wte", axis=0)
    x = op("Add", [x, weight("transformer.wpe.weight", [seq, h])], ["emb"], "/transformer")
    for i in range(3):
        p = "transformer.h.%d" % i
        scope = "/" + p.replace("transformer.h.", "transformer/h.")
        n = op("LayerNormalization", [x, weight(p + ".ln_1.weight", [h]), weight(p + ".ln_1.bias", [h])], [p + "/n1"],
               scope + "/ln_1", axis=-1)
        a = op("MatMul", [n, weight(p + ".attn.c_attn.weight", [h, h])], [p + "/qkv"], scope + "/attn/c_attn")
        a = op("Softmax", [a], [p + "/probs"], scope + "/attn", axis=-1)
        a = op("Identity", [a], [p + "/attn_dropout"], scope + "/attn/attn_dropout")
        a = op("MatMul", [a, weight(p + ".attn.c_proj.weight", [h, h])], [p + "/attn_out"], scope + "/attn/c_proj")
        x = op("Add", [x, a], [p + "/res1"], scope)
        f = op("MatMul", [x, weight(p + ".mlp.c_fc.weight", [h, 4 * h])], [p + "/fc"], scope + "/mlp/c_fc")
        f = op("Tanh", [f], [p + "/act"], scope + "/mlp/act")
        f = op("Identity", [f], [p + "/mlp_dropout"], scope + "/mlp/dropout")
        f = op("MatMul", [f, weight(p + ".mlp.c_proj.weight", [4 * h, h])], [p + "/mlp_out"], scope + "/mlp/c_proj")
        x = op("Add", [x, f], [p + "/res2"], scope)
    x = op("LayerNormalization", [x, weight("transformer.ln_f.weight", [h]), weight("transformer.ln_f.bias", [h])],
           ["final"], "/transformer/ln_f", axis=-1)
    x = op("MatMul", [x, weight("lm_head.weight", [h, vocab])], ["logits"], "/lm_head")
    ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["N", seq])
    return model(nodes, [ids], [out(x)], inits, opset=17)


def constant_first():
    """What torch.onnx.export writes for a small decoder block (issue 23): a Constant first,
    annotated like every node, whose value a later Reshape reads. The importer drops the
    Constant, so op indices differ from node indices."""
    nodes = [
        node("Constant", [], ["shape"], "/Constant", ipu=0, value=const("v", [-1, 4, 8])),
        node("MatMul", ["x", "W0"], ["h0"], "/fc0/MatMul", ipu=0),
        node("Relu", ["h0"], ["h1"], "/act0/Relu", ipu=0),
        node("MatMul", ["h1", "W1"], ["h2"], "/fc1/MatMul", ipu=1),
        node("Reshape", ["h2", "shape"], ["h3"], "/Reshape", ipu=1),
        node("Relu", ["h3"], ["y"], "/act1/Relu", ipu=1),
    ]
    return model(nodes, [batched("x", [16])], [out("y")], [shape_only("W0", [16, 64]), shape_only("W1", [64, 32])])


def tied(folded):
    """A head tied to the token embedding (vocab 32, width 8): read through a Transpose node
    (an export without weights), or (folded) through an initializer holding the transposed
    values, as constant folding writes it. Embedding on IPU 0, head on IPU 1."""
    vocab, width = 32, 8
    values = [float(i % 7) + i / 1000.0 for i in range(vocab * width)]
    emb = helper.make_tensor("emb", F, [vocab, width], values)
    nodes = [node("Gather", ["emb", "ids"], ["h"], "/tokens/Gather", ipu=0),
             node("Relu", ["h"], ["h1"], "/act/Relu", ipu=0)]
    inits = [emb]
    if folded:
        transposed = [values[r * width + c] for c in range(width) for r in range(vocab)]
        inits.append(helper.make_tensor("onnx::MatMul_9", F, [width, vocab], transposed))
        nodes.append(node("MatMul", ["h1", "onnx::MatMul_9"], ["logits"], "/head/MatMul", ipu=1))
    else:
        nodes.append(node("Transpose", ["emb"], ["embT"], "/head/Transpose", ipu=1, perm=[1, 0]))
        nodes.append(node("MatMul", ["h1", "embT"], ["logits"], "/head/MatMul", ipu=1))
    return model(nodes, [batched("ids", [4], TensorProto.INT64)], [out("logits")], inits)


def zero_weights():
    """A PyTorch-style 2-layer graph whose two 16 x 16 weights are both zero-initialised:
    equal, and each the other's transpose, yet two parameters (one per IPU)."""
    zeros = [0.0] * 256
    nodes = [node("MatMul", ["x", "fc0.weight"], ["h0"], "/fc0/MatMul", ipu=0, stage=0),
             node("Relu", ["h0"], ["h1"], "/act0/Relu", ipu=0, stage=0),
             node("MatMul", ["h1", "fc1.weight"], ["y"], "/fc1/MatMul", ipu=1, stage=1)]
    return model(nodes, [batched("x", [16])], [out("y")],
                 [helper.make_tensor("fc0.weight", F, [16, 16], zeros), helper.make_tensor("fc1.weight", F, [16, 16], zeros)])


def malformed(folder, save):
    """Graphs libonnx's shape inference would crash on (issue 23), each refused before it runs."""
    bad = constant_first()
    scan = node("Scan", ["h1"], ["s"], "/Scan", ipu=0, num_scan_inputs=1)  # no "body"
    bad.graph.node.insert(3, scan)
    save("bad-scan-without-body.onnx", bad)                               # onnx.bad-node at node 3
    bad = constant_first()
    bad.graph.node[0].attribute[0].t.ClearField("int64_data")
    bad.graph.node[0].attribute[0].t.raw_data = struct.pack("<2q", -1, 4)  # 16 bytes for 3 values
    save("bad-raw-data-length.onnx", bad)                                 # onnx.bad-tensor
    bad = constant_first()
    bad.graph.initializer.append(helper.make_tensor("shape2", TensorProto.INT64, [3], [-1, 4, 8]))
    del bad.graph.initializer[-1].dims[:]
    bad.graph.initializer[-1].dims.append(0)                               # dims [0] with 3 int64_data
    save("bad-empty-dims-with-data.onnx", bad)                            # onnx.bad-tensor
    bad = constant_first()
    bad.graph.initializer[1].dims[:] = [2 ** 40, 2 ** 40]                 # 2^80 elements
    save("bad-dims-overflow.onnx", bad)                                   # onnx.bad-tensor
    bad = constant_first()
    w = bad.graph.initializer[0]
    w.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "constant-first.data"), ("offset", str(2 ** 63 - 8)), ("length", "4096")):
        entry = w.external_data.add()
        entry.key, entry.value = key, value
    with open(os.path.join(folder, "constant-first.data"), "wb") as f:
        f.write(b"\0" * 4096)
    save("bad-external-offset-overflow.onnx", bad)                        # onnx.external-data
    bad = constant_first()
    bad.functions.append(helper.make_function("local", "Block", ["a"], ["b"], [helper.make_node("Relu", ["a"], ["b"])],
                                              [helper.make_opsetid("", 13)]))
    save("bad-local-function.onnx", bad)                                  # onnx.local-function
    # A Shape of what an op ONNX does not know makes, its shape declared nowhere: libonnx's data
    # propagation dereferenced the missing type (SIGSEGV; fuzz_onnx finding).
    save("bad-shape-of-unknown-op.onnx",
         model([node("NoSuchOp", ["x"], ["y"], "/unknown"), node("Shape", ["y"], ["s"], "/Shape"),
                node("Reshape", ["x", "s"], ["z"], "/Reshape")], [batched("x", [16])], [out("z")], []))
    # The same a known op further on: Relu of the unknown op's output gets no type either, and
    # the Shape of that crashed libonnx's data propagation alike (fuzz_onnx finding, CI of cd53d73).
    save("bad-shape-of-untyped-chain.onnx",
         model([node("NoSuchOp", ["x"], ["y"], "/unknown"), node("Relu", ["y"], ["r"], "/Relu"),
                node("Shape", ["r"], ["s"], "/Shape"), node("Reshape", ["x", "s"], ["z"], "/Reshape")],
               [batched("x", [16])], [out("z")], []))

    bad = constant_first()
    sparse = bad.graph.sparse_initializer.add()
    sparse.values.CopyFrom(helper.make_tensor("Ws", F, [1], [1.0]))
    sparse.indices.CopyFrom(helper.make_tensor("Ws_i", TensorProto.INT64, [1], [0]))
    sparse.dims.extend([4, 4])
    save("bad-sparse-initializer.onnx", bad)                              # onnx.sparse-tensor
    # A convolution whose weight input is its rank-1 bias (fuzz_onnx finding: libonnx's
    # convPoolShapeInference read past the kernel shape it took from W and crashed).
    bad = every_op()
    bad.graph.node[0].input[1], bad.graph.node[0].input[2] = "conv_b", "conv_w"
    save("bad-conv-weight-rank.onnx", bad)                                # onnx.bad-node at node 0
    # A weight computed by a node (its rank known only by inference) and no kernel_shape:
    # libonnx would take the kernel from the inferred weight unchecked (a rank-5 weight on a
    # rank-4 input crashed it); such a node must carry kernel_shape.
    bad = every_op()
    bad.graph.node.insert(0, helper.make_node("Identity", ["conv_w"], ["conv_w_copy"], name="weight_copy"))
    bad.graph.node[1].input[1] = "conv_w_copy"
    save("bad-conv-computed-weight.onnx", bad)                            # onnx.bad-node at node 1, input 1
    # The same with kernel_shape, the weight of rank 5 on the rank-4 input: refused after inference.
    bad = every_op()
    bad.graph.initializer.append(shape_only("conv_w5", [8, 3, 3, 3, 3]))
    bad.graph.node.insert(0, helper.make_node("Identity", ["conv_w5"], ["conv_w_copy"], name="weight_copy"))
    bad.graph.node[1].input[1] = "conv_w_copy"
    bad.graph.node[1].attribute.append(helper.make_attribute("kernel_shape", [3, 3]))
    save("bad-conv-inferred-weight-rank.onnx", bad)                       # onnx.bad-node at node 1, input 1
    # A node name that is not UTF-8 (proto2 strings are not checked): same length, so the
    # protobuf's length prefixes stay right. convert threw from the JSON writer (exit 3).
    bad = constant_first()
    bad.graph.node[2].name = "@@NOT-UTF-8@@"
    data = bad.SerializeToString().replace(b"@@NOT-UTF-8@@", b"\xff" * 13)
    with open(os.path.join(folder, "bad-name-utf8.onnx"), "wb") as f:
        f.write(data)                                                     # onnx.bad-name
    # Inputs no graph input, initializer or earlier node defines: libonnx's inference with data
    # propagation reads a null pointer for them (issue 39: a PyTorch export at opset 17 whose
    # graph.input list was removed crashed validate, convert and run).
    bad = gpt2_export(legacy=False)
    del bad.graph.input[:]
    save("bad-no-graph-inputs.onnx", bad)                                 # onnx.undefined-input at node 0, input 1
    bad = model([node("Shape", ["x"], ["s"], "/Shape"), node("Cast", ["s"], ["y"], "/Cast", to=TensorProto.FLOAT)],
                [], [out("y")], [], opset=17)
    save("bad-undefined-shape-input.onnx", bad)                           # onnx.undefined-input at node 0, input 0
    branch = helper.make_graph([node("Relu", ["nowhere"], ["r"], "/branch/Relu")], "branch", [], [out("r")])
    bad = model([node("Constant", [], ["c"], "/Constant", value=helper.make_tensor("v", TensorProto.BOOL, [], [True])),
                 node("If", ["c"], ["y"], "/If", then_branch=branch, else_branch=branch)], [], [out("y")], [], opset=17)
    save("bad-undefined-in-subgraph.onnx", bad)                           # onnx.undefined-input in the branch
    bad = constant_first()
    first = helper.make_node("Identity", [], [])
    first.CopyFrom(bad.graph.node[1])
    bad.graph.node[1].CopyFrom(bad.graph.node[2])                         # Relu(h0) before the MatMul making h0
    bad.graph.node[2].CopyFrom(first)
    save("bad-node-order.onnx", bad)                                      # onnx.node-order at node 1, input 0


def write_all(folder):
    os.makedirs(folder, exist_ok=True)

    def save(name, m):
        onnx.save(m, os.path.join(folder, name))

    save("mlp.onnx", mlp())
    save("mlp-virtual-graph-only.onnx", mlp(stages=False))
    # PopART's third annotation: one execution phase per layer (Gemm+Relu), alternating IPUs.
    m = mlp(stages=False)
    for i, n in enumerate(m.graph.node):
        n.attribute.append(helper.make_attribute("__execution_phase", i // 2))
    save("mlp-phased.onnx", m)
    save("every-op.onnx", every_op())
    save("layered.onnx", layered())
    save("gpt2-export.onnx", gpt2_export(legacy=False))
    save("gpt2-export-legacy.onnx", gpt2_export(legacy=True))


    save("constant-first.onnx", constant_first())
    save("tied-transpose.onnx", tied(folded=False))
    save("tied-folded.onnx", tied(folded=True))
    save("zero-weights.onnx", zero_weights())
    malformed(folder, save)

    # Static batch 4 instead of a symbolic one (imported with batch size 4).
    m = mlp()
    m.graph.input[0].type.tensor_type.shape.dim[0].Clear()
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 4
    save("mlp-static-batch.onnx", m)

    # Weights with data in the file, and with data in an external file.
    m = mlp()
    for t in m.graph.initializer:
        n = 1
        for d in t.dims:
            n *= d
        t.raw_data = struct.pack("<%df" % n, *([0.5] * n))
    save("mlp-with-data.onnx", m)
    for name in ("mlp-external", "mlp-external-missing"):
        copy = onnx.ModelProto()
        copy.CopyFrom(m)  # save_model moves the data out of the model it is given
        onnx.save_model(copy, os.path.join(folder, name + ".onnx"), save_as_external_data=True,
                        all_tensors_to_one_file=True, location=name + ".data", size_threshold=0)
    os.remove(os.path.join(folder, "mlp-external-missing.data"))

    # Bad inputs, each with its own rule.
    save("bad-missing-ipu.onnx", mlp(ipu_on=lambda i: i != 2))           # annotation.mixed-virtual-graph
    save("bad-stage-without-ipu.onnx", mlp(ipu_on=lambda i: False))      # annotation.stage-without-virtual-graph
    bad = mlp()
    bad.graph.node[1].attribute[0].CopyFrom(helper.make_attribute("__ipu_number", 0.5))
    save("bad-float-ipu.onnx", bad)                                       # annotation.not-integer
    bad = mlp()
    bad.graph.node[1].attribute[0].CopyFrom(helper.make_attribute("__ipu_number", -1))
    save("bad-negative-ipu.onnx", bad)                                    # annotation.negative
    bad = mlp()
    bad.graph.node[1].attribute.append(helper.make_attribute("strides", [1, 0]))
    save("bad-stride.onnx", bad)                                          # op.attribute-range
    bad = mlp()
    bad.graph.node[3].op_type = "NoSuchOp"
    bad.graph.node[3].domain = "com.example"
    bad.opset_import.append(helper.make_opsetid("com.example", 1))
    save("bad-unknown-op.onnx", bad)                                      # onnx.shape-unknown
    bad.graph.value_info.append(batched("probs", [10]))
    save("bad-unknown-op-with-shape.onnx", bad)                           # op.flops-underivable
    bad = mlp()
    bad.graph.node[0].op_type = "MatMul"                                  # x0 [N,784] @ W0 [700,512]
    del bad.graph.node[0].input[2]
    bad.graph.initializer[0].dims[0] = 700
    save("bad-shape-mismatch.onnx", bad)                                  # onnx.shape-inference
    bad = mlp()
    bad.graph.input[0].type.tensor_type.shape.dim[1].dim_value = 2 ** 62  # fuzz_onnx: elements() overflowed
    save("bad-huge-input.onnx", bad)                                      # tensor.bad-shape
    bad = mlp()
    bad.graph.node[-1].op_type = "Hardmax"                                # ONNX infers it; ipusim cannot cost it
    save("bad-hardmax.onnx", bad)                                         # op.flops-underivable
    bad = mlp()
    bad.graph.input[0].type.tensor_type.shape.dim[1].dim_param = "features"
    save("bad-symbolic-feature.onnx", bad)                                # onnx.shape-unknown
    bad = mlp()
    bad.graph.input.append(helper.make_tensor_value_info("mask", F, [4, 784]))
    save("bad-batch-disagreement.onnx", bad)                              # onnx.batch-dimension
    save("bad-double.onnx", model([node("Relu", ["x"], ["y"], "relu")],   # onnx.unsupported-dtype
                                  [batched("x", [4], TensorProto.DOUBLE)],
                                  [helper.make_tensor_value_info("y", TensorProto.DOUBLE, None)], []))
    with open(os.path.join(folder, "mlp.onnx"), "rb") as f:
        data = f.read()
    with open(os.path.join(folder, "bad-truncated.onnx"), "wb") as f:
        f.write(data[: len(data) // 2])                                   # onnx.unreadable
    with open(os.path.join(folder, "bad-not-onnx.onnx"), "wb") as f:
        f.write(b"{\"ops\": []}\n")                                       # onnx.unreadable


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.stderr.write("usage: make_onnx_fixtures.py OUT_DIR\n")
        sys.exit(2)
    write_all(sys.argv[1])
