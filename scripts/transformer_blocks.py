"""The transformer pieces the zoo's BERT, GPT and ViT generators share.

Shapes are per sample. ipusim's MatMul contracts over the last dimension of its FIRST
input (sim/cost/op_work.cpp), so the attention MatMuls are shaped
[heads, seq, dh] x [heads, dh, seq] and [heads, seq, seq] x [heads, seq, dh]: Q K^T and
P V cost heads x seq x seq x dh multiply-accumulates each.

mask selects what happens to the scaled scores before the Softmax:
  None            nothing (ViT)
  ("add", bias)   BERT's padding mask: the per-sample [seq] bias activation is added
  "causal"        GPT's causal mask: a Where against a compile-time constant triangle.
                  The triangle and the fill value are constants of the compiled graph,
                  neither parameters nor per-sample data, so the op lists only the scores.
"""


def dropout(b, name, x, shape, rate):
    """Dropout (BERT's hidden or attention dropout); nothing when the rate is 0."""
    if rate <= 0:
        return x
    return b.op(name, "Dropout", [x], [(name + "_out", shape)])


def self_attention(b, p, x, seq, h, heads, mask, split_qkv=False, attention_dropout=0.0):
    """QKV projection (one fused [h, 3h] or, split_qkv, three [h, h] as Graphcore's BERT),
    scaled dot-product attention, output projection (no residual)."""
    dh = h // heads
    if split_qkv:
        parts = {}
        for part, shape, out in (("q", [heads, seq, dh], "q"), ("k", [heads, dh, seq], "k_t"),
                                 ("v", [heads, seq, dh], "v")):
            t = b.dense(p + "/attention/" + part, x, seq, h, h)
            t = b.op(p + "/attention/%s_reshape" % part, "Reshape", [t],
                     [(p + "/attention/%s_split" % part, [seq, heads, dh])])
            parts[part] = b.op(p + "/attention/%s_heads" % part, "Transpose", [t], [(p + "/attention/" + out, shape)])
        q, k, v = parts["q"], parts["k"], parts["v"]
    else:
        t = b.dense(p + "/attention/qkv", x, seq, h, 3 * h)
        t = b.op(p + "/attention/qkv_reshape", "Reshape", [t], [(p + "/attention/qkv_split", [seq, 3, heads, dh])])
        q, k, v = b.op(p + "/attention/split_heads", "Transpose", [t],
                       [(p + "/attention/q", [heads, seq, dh]),
                        (p + "/attention/k_t", [heads, dh, seq]),
                        (p + "/attention/v", [heads, seq, dh])])
    s = b.op(p + "/attention/scores", "MatMul", [q, k], [(p + "/attention/scores_out", [heads, seq, seq])])
    s = b.op(p + "/attention/scale", "Scale", [s], [(p + "/attention/scaled", [heads, seq, seq])])
    if mask == "causal":
        s = b.op(p + "/attention/causal_mask", "Where", [s], [(p + "/attention/masked", [heads, seq, seq])])
    elif mask is not None:
        s = b.op(p + "/attention/mask", "Add", [s, mask[1]], [(p + "/attention/masked", [heads, seq, seq])])
    s = b.op(p + "/attention/softmax", "Softmax", [s], [(p + "/attention/probs", [heads, seq, seq])])
    s = dropout(b, p + "/attention/probs_dropout", s, [heads, seq, seq], attention_dropout)
    c = b.op(p + "/attention/context", "MatMul", [s, v], [(p + "/attention/context_out", [heads, seq, dh])])
    c = b.op(p + "/attention/merge_heads", "Transpose", [c], [(p + "/attention/context_t", [seq, heads, dh])])
    c = b.op(p + "/attention/merge_reshape", "Reshape", [c], [(p + "/attention/context_flat", [seq, h])])
    return b.dense(p + "/attention/out", c, seq, h, h)


def feed_forward(b, p, x, seq, h, ffn, inner_dropout=0.0):
    """inner_dropout: ViT's MLP block drops the activations between its two projections too."""
    f = b.dense(p + "/ffn/1", x, seq, h, ffn)
    f = b.op(p + "/ffn/gelu", "Gelu", [f], [(p + "/ffn/gelu_out", [seq, ffn])])
    f = dropout(b, p + "/ffn/gelu_dropout", f, [seq, ffn], inner_dropout)
    return b.dense(p + "/ffn/2", f, seq, ffn, h)


def residual(b, name, x, y, seq, h):
    return b.op(name, "Add", [x, y], [(name + "_out", [seq, h])])


def pre_ln_layer(b, p, x, seq, h, heads, ffn, mask, hidden_dropout=0.0, attention_dropout=0.0, before_ffn=None):
    """GPT-2's and ViT's layer: LayerNorm before attention and before the feed-forward. Hidden
    dropout as ViT's blocks (torchvision's and Graphcore's): after the attention's output
    projection, after the GELU and after the second projection. `before_ffn`, when given, is
    called between the attention half and the feed-forward half (to place them apart)."""
    n = b.layer_norm(p + "/ln_1", x, [seq, h])
    a = dropout(b, p + "/attention/dropout", self_attention(b, p, n, seq, h, heads, mask, False, attention_dropout),
                [seq, h], hidden_dropout)
    x = residual(b, p + "/attention/residual", x, a, seq, h)
    if before_ffn:
        before_ffn()
    n = b.layer_norm(p + "/ln_2", x, [seq, h])
    f = dropout(b, p + "/ffn/dropout", feed_forward(b, p, n, seq, h, ffn, hidden_dropout), [seq, h], hidden_dropout)
    return residual(b, p + "/ffn/residual", x, f, seq, h)

