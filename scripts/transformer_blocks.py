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



# LLaMA's pieces (Hugging Face's LlamaForCausalLM, transformers/models/llama/modeling_llama.py),
# written op by op as PyTorch's ONNX exporter writes them. Scalars and tables that are constants
# of the compiled graph (RMSNorm's epsilon, the rotary cos/sin tables, the causal triangle) are,
# as the causal mask above, neither parameters nor per-sample data: an op lists only its
# activation input.


def rms_norm(b, prefix, x, shape):
    """LlamaRMSNorm: y = x / sqrt(mean(x^2, last axis) + eps) * weight, weight [h], no bias.
    x^2 as Mul(x, x) (the exporter's Pow(x, 2); the Mul is what poplibs' elementwise family
    prices), ReduceMean over the last axis (keepdims), Add eps, then torch.rsqrt as the
    exporter writes it, Sqrt and a reciprocal (its Div(1, .), here Reciprocal), Mul by x and Mul
    by the weight. The float32 Casts around it are left out, as the Softmax's are."""
    w = b.weight(prefix + "/weight", [shape[-1]])
    reduced = list(shape[:-1]) + [1]
    s = b.op(prefix + "/square", "Mul", [x, x], [(prefix + "/squared", shape)])
    s = b.op(prefix + "/mean", "ReduceMean", [s], [(prefix + "/variance", reduced)])
    s = b.op(prefix + "/add_eps", "Add", [s], [(prefix + "/variance_eps", reduced)])
    s = b.op(prefix + "/sqrt", "Sqrt", [s], [(prefix + "/rms", reduced)])
    s = b.op(prefix + "/rsqrt", "Reciprocal", [s], [(prefix + "/inv_rms", reduced)])
    y = b.op(prefix + "/normalize", "Mul", [x, s], [(prefix + "/normalized", shape)])
    return b.op(prefix, "Mul", [y, w], [(prefix + "_out", shape)])


def rotary_embedding(b, prefix, x, shape):
    """apply_rotary_pos_emb on x [heads, seq, dh]: x * cos + rotate_half(x) * sin, where
    rotate_half(x) = Concat(-x[..., dh/2:], x[..., :dh/2]). cos and sin [seq, dh] are fixed by
    the positions 0..seq-1 and compile-time constants (not listed)."""
    half = list(shape[:-1]) + [shape[-1] // 2]
    c = b.op(prefix + "/mul_cos", "Mul", [x], [(prefix + "/x_cos", shape)])
    x1 = b.op(prefix + "/slice_1", "Slice", [x], [(prefix + "/x1", half)])
    x2 = b.op(prefix + "/slice_2", "Slice", [x], [(prefix + "/x2", half)])
    x2 = b.op(prefix + "/neg", "Neg", [x2], [(prefix + "/neg_x2", half)])
    r = b.op(prefix + "/rotate_half", "Concat", [x2, x1], [(prefix + "/rotated", shape)])
    r = b.op(prefix + "/mul_sin", "Mul", [r], [(prefix + "/rotated_sin", shape)])
    return b.op(prefix + "/add", "Add", [c, r], [(prefix + "_out", shape)])


def repeat_kv(b, prefix, x, kv_heads, repeats, seq, dh):
    """repeat_kv for grouped-query attention: [kv, seq, dh] -> Unsqueeze [kv, 1, seq, dh] ->
    Expand [kv, repeats, seq, dh] -> Reshape [kv * repeats, seq, dh], as Hugging Face writes it
    (x[:, :, None].expand(...).reshape(...)). Expand is an op type ipusim derives (1 FLOP per
    output element, sim/cost/op_work.cpp; poplibs prices it from those FLOPs). Nothing when
    repeats is 1 (multi-head attention)."""
    if repeats == 1:
        return x
    x = b.op(prefix + "/unsqueeze", "Unsqueeze", [x], [(prefix + "/unsqueezed", [kv_heads, 1, seq, dh])])
    x = b.op(prefix + "/expand", "Expand", [x], [(prefix + "/expanded", [kv_heads, repeats, seq, dh])])
    return b.op(prefix + "/reshape", "Reshape", [x], [(prefix + "_out", [kv_heads * repeats, seq, dh])])


def llama_attention(b, p, x, seq, h, heads, kv_heads):
    """LlamaAttention: q_proj [h, heads dh], k_proj and v_proj [h, kv_heads dh], no biases;
    heads split (Reshape, Transpose to [heads, seq, dh]); rotary embedding on q and k; K and V
    repeated to all heads (grouped-query attention); Q K^T (K transposed to [heads, dh, seq],
    since ipusim's MatMul contracts over the first input's last dimension), Scale, the causal
    Where, Softmax, P V, heads merged, o_proj [heads dh, h] without bias (no residual)."""
    dh = h // heads
    a = p + "/self_attn"
    parts = {}
    for part, n in (("q", heads), ("k", kv_heads), ("v", kv_heads)):
        t = b.dense(a + "/%s_proj" % part, x, seq, h, n * dh, bias=False)
        t = b.op(a + "/%s_reshape" % part, "Reshape", [t], [(a + "/%s_split" % part, [seq, n, dh])])
        parts[part] = b.op(a + "/%s_heads" % part, "Transpose", [t], [(a + "/" + part, [n, seq, dh])])
    q = rotary_embedding(b, a + "/q_rotary", parts["q"], [heads, seq, dh])
    k = rotary_embedding(b, a + "/k_rotary", parts["k"], [kv_heads, seq, dh])
    k = repeat_kv(b, a + "/k_repeat", k, kv_heads, heads // kv_heads, seq, dh)
    v = repeat_kv(b, a + "/v_repeat", parts["v"], kv_heads, heads // kv_heads, seq, dh)
    k = b.op(a + "/k_transpose", "Transpose", [k], [(a + "/k_t", [heads, dh, seq])])
    s = b.op(a + "/scores", "MatMul", [q, k], [(a + "/scores_out", [heads, seq, seq])])
    s = b.op(a + "/scale", "Scale", [s], [(a + "/scaled", [heads, seq, seq])])
    s = b.op(a + "/causal_mask", "Where", [s], [(a + "/masked", [heads, seq, seq])])
    s = b.op(a + "/softmax", "Softmax", [s], [(a + "/probs", [heads, seq, seq])])
    c = b.op(a + "/context", "MatMul", [s, v], [(a + "/context_out", [heads, seq, dh])])
    c = b.op(a + "/merge_heads", "Transpose", [c], [(a + "/context_t", [seq, heads, dh])])
    c = b.op(a + "/merge_reshape", "Reshape", [c], [(a + "/context_flat", [seq, heads * dh])])
    return b.dense(a + "/o_proj", c, seq, heads * dh, h, bias=False)


def swiglu_mlp(b, p, x, seq, h, ffn):
    """LlamaMLP: down_proj(silu(gate_proj(x)) * up_proj(x)), no biases; SiLU as the exporter
    writes it, x * Sigmoid(x)."""
    m = p + "/mlp"
    g = b.dense(m + "/gate_proj", x, seq, h, ffn, bias=False)
    s = b.op(m + "/sigmoid", "Sigmoid", [g], [(m + "/sigmoid_out", [seq, ffn])])
    g = b.op(m + "/silu", "Mul", [g, s], [(m + "/silu_out", [seq, ffn])])
    u = b.dense(m + "/up_proj", x, seq, h, ffn, bias=False)
    g = b.op(m + "/gate_up", "Mul", [g, u], [(m + "/gated", [seq, ffn])])
    return b.dense(m + "/down_proj", g, seq, ffn, h, bias=False)


def llama_layer(b, p, x, seq, h, heads, kv_heads, ffn, before_mlp=None):
    """LlamaDecoderLayer: RMSNorm, attention, residual; RMSNorm, SwiGLU MLP, residual.
    `before_mlp`, when given, is called between the two halves (to place them apart)."""
    n = rms_norm(b, p + "/input_layernorm", x, [seq, h])
    x = residual(b, p + "/self_attn/residual", x, llama_attention(b, p, n, seq, h, heads, kv_heads), seq, h)
    if before_mlp:
        before_mlp()
    n = rms_norm(b, p + "/post_attention_layernorm", x, [seq, h])
    return residual(b, p + "/mlp/residual", x, swiglu_mlp(b, p, n, seq, h, ffn), seq, h)


# GPT-J's pieces (Hugging Face's GPTJForCausalLM, transformers/models/gptj/modeling_gptj.py):
# one LayerNorm feeding attention and MLP side by side (the parallel residual), the rotary
# embedding on the first rotary_dim dimensions of each head only, biases on the MLP but not on
# the attention projections.


def partial_rotary(b, prefix, x, shape, rotary_dim):
    """GPTJAttention's rotary: x[..., :rotary_dim] rotated, x[..., rotary_dim:] passed through,
    the two Concat-ed back. GPT-J rotates every two dimensions (rotate_every_two: strided Slices,
    Neg, a stack) where LLaMA rotates halves; the ops and their sizes are the same, so
    rotary_embedding writes both. The whole head when rotary_dim is the head size."""
    if rotary_dim == shape[-1]:
        return rotary_embedding(b, prefix, x, shape)
    rot = list(shape[:-1]) + [rotary_dim]
    rest = list(shape[:-1]) + [shape[-1] - rotary_dim]
    r = b.op(prefix + "/slice_rot", "Slice", [x], [(prefix + "/x_rot", rot)])
    p = b.op(prefix + "/slice_pass", "Slice", [x], [(prefix + "/x_pass", rest)])
    r = rotary_embedding(b, prefix + "/rot", r, rot)
    return b.op(prefix + "/concat", "Concat", [r, p], [(prefix + "_out", shape)])


def gptj_attention(b, p, x, seq, h, heads, rotary_dim):
    """GPTJAttention: q_proj, k_proj, v_proj and out_proj [h, h] without biases; heads split,
    the partial rotary on Q and K, Q K^T, Scale, the causal Where, Softmax, P V, heads merged,
    out_proj (no residual)."""
    dh = h // heads
    a = p + "/attn"
    parts = {}
    for part in ("q", "k", "v"):
        t = b.dense(a + "/%s_proj" % part, x, seq, h, h, bias=False)
        t = b.op(a + "/%s_reshape" % part, "Reshape", [t], [(a + "/%s_split" % part, [seq, heads, dh])])
        parts[part] = b.op(a + "/%s_heads" % part, "Transpose", [t], [(a + "/" + part, [heads, seq, dh])])
    q = partial_rotary(b, a + "/q_rotary", parts["q"], [heads, seq, dh], rotary_dim)
    k = partial_rotary(b, a + "/k_rotary", parts["k"], [heads, seq, dh], rotary_dim)
    k = b.op(a + "/k_transpose", "Transpose", [k], [(a + "/k_t", [heads, dh, seq])])
    s = b.op(a + "/scores", "MatMul", [q, k], [(a + "/scores_out", [heads, seq, seq])])
    s = b.op(a + "/scale", "Scale", [s], [(a + "/scaled", [heads, seq, seq])])
    s = b.op(a + "/causal_mask", "Where", [s], [(a + "/masked", [heads, seq, seq])])
    s = b.op(a + "/softmax", "Softmax", [s], [(a + "/probs", [heads, seq, seq])])
    c = b.op(a + "/context", "MatMul", [s, parts["v"]], [(a + "/context_out", [heads, seq, dh])])
    c = b.op(a + "/merge_heads", "Transpose", [c], [(a + "/context_t", [seq, heads, dh])])
    c = b.op(a + "/merge_reshape", "Reshape", [c], [(a + "/context_flat", [seq, h])])
    return b.dense(a + "/out_proj", c, seq, h, h, bias=False)


def gptj_layer(b, p, x, seq, h, heads, ffn, rotary_dim, before_mlp=None):
    """GPTJBlock: n = ln_1(x); x + attn(n) + mlp(n), the MLP fc_in (bias), GELU, fc_out (bias).
    `before_mlp`, when given, is called between the attention and the MLP (to place them apart)."""
    n = b.layer_norm(p + "/ln_1", x, [seq, h])
    a = gptj_attention(b, p, n, seq, h, heads, rotary_dim)
    if before_mlp:
        before_mlp()
    f = b.dense(p + "/mlp/fc_in", n, seq, h, ffn)
    f = b.op(p + "/mlp/gelu", "Gelu", [f], [(p + "/mlp/gelu_out", [seq, ffn])])
    f = b.dense(p + "/mlp/fc_out", f, seq, ffn, h)
    x = residual(b, p + "/attn/residual", x, a, seq, h)
    return residual(b, p + "/mlp/residual", x, f, seq, h)


# T5 v1.1 / Flan-T5's pieces (Hugging Face's T5ForConditionalGeneration,
# transformers/models/t5/modeling_t5.py). T5's LayerNorm (T5LayerNorm: no bias, no mean
# subtraction) is LlamaRMSNorm's computation, so rms_norm above writes it. The relative-position
# buckets depend only on the positions 0..seq-1: like the causal triangle they are constants of
# the compiled graph, and the bias table's Gather lists only the table.

T5_RELATIVE_BUCKETS = 32


def t5_relative_bias(b, prefix, q_seq, k_seq, heads, causal):
    """T5Attention.compute_bias, in the first layer of a stack: relative_attention_bias, an
    nn.Embedding [32 buckets, heads], looked up at the [q_seq, k_seq] bucket of every pair of
    positions (a Gather, [q_seq, k_seq, heads]) and permuted to [heads, q_seq, k_seq] (a
    Transpose). For the decoder (causal) the causal mask is added to the bias once, as Hugging
    Face adds it to position_bias in the first layer (here the Where against the constant
    triangle). Returns the bias activation every layer of the stack adds to its scores."""
    table = b.weight(prefix + "/relative_attention_bias/weight", [T5_RELATIVE_BUCKETS, heads])
    v = b.op(prefix + "/relative_attention_bias", "Gather", [table],
             [(prefix + "/relative_attention_bias_out", [q_seq, k_seq, heads])])
    v = b.op(prefix + "/position_bias_permute", "Transpose", [v], [(prefix + "/position_bias", [heads, q_seq, k_seq])])
    if causal:
        v = b.op(prefix + "/position_bias_causal_mask", "Where", [v],
                 [(prefix + "/position_bias_masked", [heads, q_seq, k_seq])])
    return v


def t5_attention(b, a, x, q_seq, d, heads, d_kv, source=None, kv_seq=None, bias=None):
    """T5Attention: q, k, v [d, heads d_kv] and o [heads d_kv, d], no biases (heads d_kv need not
    equal d: flan-t5-small has 6 x 64 = 384 for d 512). Self-attention when source is None;
    cross-attention (EncDecAttention) reads K and V from source [kv_seq, d], the encoder's
    output. Since ipusim's MatMul contracts over the last dimension of its first input, K is
    transposed to [heads, d_kv, kv_seq]: the scores [heads, q_seq, d_kv] x [heads, d_kv, kv_seq]
    are [heads, q_seq, kv_seq] and the context [heads, q_seq, kv_seq] x [heads, kv_seq, d_kv]
    contracts over kv_seq. bias, when given, is the [heads, q_seq, kv_seq] position bias added to
    the scores. T5 does not scale the scores by 1/sqrt(d_kv) (Raffel et al. fold it into the
    initialisation of q), so there is no Scale op. Returns o's output (no residual)."""
    inner = heads * d_kv
    if source is None:
        source, kv_seq = x, q_seq
    parts = {}
    for part, src, seq, shape, out in (("q", x, q_seq, [heads, q_seq, d_kv], "q_heads"),
                                       ("k", source, kv_seq, [heads, d_kv, kv_seq], "k_t"),
                                       ("v", source, kv_seq, [heads, kv_seq, d_kv], "v_heads")):
        t = b.dense(a + "/" + part, src, seq, d, inner, bias=False)
        t = b.op(a + "/%s_reshape" % part, "Reshape", [t], [(a + "/%s_split" % part, [seq, heads, d_kv])])
        parts[part] = b.op(a + "/%s_transpose" % part, "Transpose", [t], [(a + "/" + out, shape)])
    s = b.op(a + "/scores", "MatMul", [parts["q"], parts["k"]], [(a + "/scores_out", [heads, q_seq, kv_seq])])
    # No Scale: T5 leaves the scores unscaled (the 1/sqrt(d_kv) is folded into the init).
    if bias is not None:
        s = b.op(a + "/position_bias_add", "Add", [s, bias], [(a + "/biased", [heads, q_seq, kv_seq])])
    s = b.op(a + "/softmax", "Softmax", [s], [(a + "/probs", [heads, q_seq, kv_seq])])
    c = b.op(a + "/context", "MatMul", [s, parts["v"]], [(a + "/context_out", [heads, q_seq, d_kv])])
    c = b.op(a + "/merge_heads", "Transpose", [c], [(a + "/context_t", [q_seq, heads, d_kv])])
    c = b.op(a + "/merge_reshape", "Reshape", [c], [(a + "/context_flat", [q_seq, inner])])
    return b.dense(a + "/o", c, q_seq, inner, d, bias=False)


def t5_gated_gelu(b, m, x, seq, d, ff):
    """T5DenseGatedActDense (v1.1's feed-forward): wo(Gelu(wi_0 x) * wi_1 x), wi_0 and wi_1
    [d, ff], wo [ff, d], no biases (Flan-T5's gelu_new, the tanh approximation: a Gelu op)."""
    g = b.dense(m + "/wi_0", x, seq, d, ff, bias=False)
    g = b.op(m + "/gelu", "Gelu", [g], [(m + "/gelu_out", [seq, ff])])
    u = b.dense(m + "/wi_1", x, seq, d, ff, bias=False)
    g = b.op(m + "/gate", "Mul", [g, u], [(m + "/gated", [seq, ff])])
    return b.dense(m + "/wo", g, seq, ff, d, bias=False)


def t5_encoder_block(b, p, x, seq, d, heads, d_kv, ff, bias):
    """T5Block of the encoder: layer.0 (T5 LayerNorm, self-attention with the stack's position
    bias, residual), layer.1 (T5 LayerNorm, gated-GELU feed-forward, residual)."""
    n = rms_norm(b, p + "/layer.0/layer_norm", x, [seq, d])
    a = t5_attention(b, p + "/layer.0/SelfAttention", n, seq, d, heads, d_kv, bias=bias)
    x = residual(b, p + "/layer.0/residual", x, a, seq, d)
    n = rms_norm(b, p + "/layer.1/layer_norm", x, [seq, d])
    return residual(b, p + "/layer.1/residual", x, t5_gated_gelu(b, p + "/layer.1/DenseReluDense", n, seq, d, ff),
                    seq, d)


def t5_decoder_block(b, p, x, encoded, seq, enc_seq, d, heads, d_kv, ff, bias):
    """T5Block of the decoder: layer.0 (norm, causal self-attention with the stack's masked
    position bias, residual), layer.1 (norm, cross-attention: q from the decoder, k and v from
    the encoder's output, no position bias, residual), layer.2 (norm, gated-GELU feed-forward,
    residual)."""
    n = rms_norm(b, p + "/layer.0/layer_norm", x, [seq, d])
    a = t5_attention(b, p + "/layer.0/SelfAttention", n, seq, d, heads, d_kv, bias=bias)
    x = residual(b, p + "/layer.0/residual", x, a, seq, d)
    n = rms_norm(b, p + "/layer.1/layer_norm", x, [seq, d])
    a = t5_attention(b, p + "/layer.1/EncDecAttention", n, seq, d, heads, d_kv, source=encoded, kv_seq=enc_seq)
    x = residual(b, p + "/layer.1/residual", x, a, seq, d)
    n = rms_norm(b, p + "/layer.2/layer_norm", x, [seq, d])
    return residual(b, p + "/layer.2/residual", x, t5_gated_gelu(b, p + "/layer.2/DenseReluDense", n, seq, d, ff),
                    seq, d)
