"""A LLaMA-style decoder in PyTorch, written as Hugging Face's LlamaForCausalLM writes its
pieces (for tests/torch_export.py): RMSNorm (weights starting at 1), rotary embeddings from
cos/sin buffers sliced to the sequence, grouped-query attention repeating K and V with
expand() and reshape() (repeat_kv), a causal-mask buffer, a SwiGLU MLP and an untied head.
Sizes match `make_llama_model.py --hidden 64 --heads 4 --kv-heads 2 --ffn 172 --vocab 256
--seq 32`, 2 layers."""

import math

import torch


class RMSNorm(torch.nn.Module):
    def __init__(self, width, eps=1e-6):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(width))
        self.eps = eps

    def forward(self, x):
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


class Rotary(torch.nn.Module):
    def __init__(self, head_dim, positions, persistent, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2).float() / head_dim))
        angles = torch.outer(torch.arange(positions).float(), inv_freq)
        table = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos_cached", table.cos()[None, None], persistent=persistent)
        self.register_buffer("sin_cached", table.sin()[None, None], persistent=persistent)

    def forward(self, seq):
        return self.cos_cached[:, :, :seq], self.sin_cached[:, :, :seq]


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Attention(torch.nn.Module):
    def __init__(self, width, heads, kv_heads, positions, persistent):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, width // heads
        self.q_proj = torch.nn.Linear(width, heads * self.head_dim, bias=False)
        self.k_proj = torch.nn.Linear(width, kv_heads * self.head_dim, bias=False)
        self.v_proj = torch.nn.Linear(width, kv_heads * self.head_dim, bias=False)
        self.o_proj = torch.nn.Linear(heads * self.head_dim, width, bias=False)
        self.rotary = Rotary(self.head_dim, positions, persistent)

    def repeat_kv(self, x, batch, seq):
        rep = self.heads // self.kv_heads
        x = x[:, :, None].expand(batch, self.kv_heads, rep, seq, self.head_dim)
        return x.reshape(batch, self.heads, seq, self.head_dim)

    def forward(self, x, mask):
        batch, seq, _ = x.size()
        q = self.q_proj(x).view(batch, seq, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(batch, seq, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(batch, seq, self.kv_heads, self.head_dim).transpose(1, 2)
        cos, sin = self.rotary(seq)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k, v = self.repeat_kv(k, batch, seq), self.repeat_kv(v, batch, seq)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim) + mask
        context = torch.matmul(torch.softmax(scores, dim=-1), v)
        return self.o_proj(context.transpose(1, 2).reshape(batch, seq, -1))


class MLP(torch.nn.Module):
    def __init__(self, width, ffn):
        super().__init__()
        self.gate_proj = torch.nn.Linear(width, ffn, bias=False)
        self.up_proj = torch.nn.Linear(width, ffn, bias=False)
        self.down_proj = torch.nn.Linear(ffn, width, bias=False)

    def forward(self, x):
        return self.down_proj(torch.nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(torch.nn.Module):
    def __init__(self, width, heads, kv_heads, ffn, positions, persistent):
        super().__init__()
        self.input_layernorm = RMSNorm(width)
        self.self_attn = Attention(width, heads, kv_heads, positions, persistent)
        self.post_attention_layernorm = RMSNorm(width)
        self.mlp = MLP(width, ffn)

    def forward(self, x, mask):
        x = x + self.self_attn(self.input_layernorm(x), mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class Llama(torch.nn.Module):
    def __init__(self, vocab=256, width=64, heads=4, kv_heads=2, ffn=172, layers=2, positions=64, persistent=True):
        super().__init__()
        self.embed_tokens = torch.nn.Embedding(vocab, width)
        self.layers = torch.nn.ModuleList(
            [Layer(width, heads, kv_heads, ffn, positions, persistent) for _ in range(layers)])
        self.norm = RMSNorm(width)
        self.lm_head = torch.nn.Linear(width, vocab, bias=False)
        causal = torch.triu(torch.full((positions, positions), float("-inf")), diagonal=1)
        self.register_buffer("causal", causal, persistent=persistent)

    def forward(self, ids):
        seq = ids.size(1)
        x = self.embed_tokens(ids)
        mask = self.causal[:seq, :seq]
        for layer in self.layers:
            x = layer(x, mask)
        return self.lm_head(self.norm(x))
