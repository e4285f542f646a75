"""umT5 encoder with the semantics and parameter names of Wan's T5Encoder (wan/modules/t5.py),
at a configurable (small) size.

  * T5LayerNorm = RMSNorm without mean/bias, eps 1e-6; pre-norm blocks; final norm
  * attention: no 1/sqrt(d) scaling; per-layer relative position bias (umT5, shared_pos=False),
    32 buckets, bidirectional, max_distance 128; key mask filled with finfo(float32).min
  * FFN: fc2(fc1(x) * gelu_tanh(gate(x))), no biases anywhere
HF UMT5EncoderModel names are produced by hf_key() for the export.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class GELU(nn.Module):
    def forward(self, x):
        return gelu_tanh(x)


class T5LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.dim = dim
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        x = x * torch.rsqrt(x.float().pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return self.weight * x.type_as(self.weight) if self.weight.dtype != torch.float32 else self.weight * x


class T5Attention(nn.Module):
    def __init__(self, dim, dim_attn, num_heads, dropout=0.0):
        super().__init__()
        assert dim_attn % num_heads == 0
        self.dim = dim
        self.dim_attn = dim_attn
        self.num_heads = num_heads
        self.head_dim = dim_attn // num_heads
        self.q = nn.Linear(dim, dim_attn, bias=False)
        self.k = nn.Linear(dim, dim_attn, bias=False)
        self.v = nn.Linear(dim, dim_attn, bias=False)
        self.o = nn.Linear(dim_attn, dim, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, mask=None, pos_bias=None):
        b, n, c = x.size(0), self.num_heads, self.head_dim
        q = self.q(x).view(b, -1, n, c)
        k = self.k(x).view(b, -1, n, c)
        v = self.v(x).view(b, -1, n, c)
        attn_bias = x.new_zeros(b, n, q.size(1), k.size(1), dtype=torch.float32)
        if pos_bias is not None:
            attn_bias = attn_bias + pos_bias
        if mask is not None:
            m = mask.view(b, 1, 1, -1) if mask.ndim == 2 else mask.unsqueeze(1)
            attn_bias = attn_bias.masked_fill(m == 0, torch.finfo(torch.float32).min)
        attn = torch.einsum("binc,bjnc->bnij", q, k).float() + attn_bias
        attn = F.softmax(attn, dim=-1).type_as(v)
        y = torch.einsum("bnij,bjnc->binc", attn, v).reshape(b, -1, n * c)
        return self.dropout(self.o(y))


class T5FeedForward(nn.Module):
    def __init__(self, dim, dim_ffn, dropout=0.0):
        super().__init__()
        self.dim = dim
        self.dim_ffn = dim_ffn
        self.gate = nn.Sequential(nn.Linear(dim, dim_ffn, bias=False), GELU())
        self.fc1 = nn.Linear(dim, dim_ffn, bias=False)
        self.fc2 = nn.Linear(dim_ffn, dim, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        x = self.fc1(x) * self.gate(x)
        return self.fc2(self.dropout(x))


class T5RelativeEmbedding(nn.Module):
    def __init__(self, num_buckets, num_heads, bidirectional=True, max_dist=128):
        super().__init__()
        self.num_buckets = num_buckets
        self.num_heads = num_heads
        self.bidirectional = bidirectional
        self.max_dist = max_dist
        self.embedding = nn.Embedding(num_buckets, num_heads)

    def forward(self, lq, lk):
        dev = self.embedding.weight.device
        rel_pos = torch.arange(lk, device=dev).unsqueeze(0) - torch.arange(lq, device=dev).unsqueeze(1)
        rel = self.bucket(rel_pos)
        return self.embedding(rel).permute(2, 0, 1).unsqueeze(0).float()  # [1, n, lq, lk]

    def bucket(self, rel_pos):
        if self.bidirectional:
            num_buckets = self.num_buckets // 2
            rel_buckets = (rel_pos > 0).long() * num_buckets
            rel_pos = torch.abs(rel_pos)
        else:
            num_buckets = self.num_buckets
            rel_buckets = 0
            rel_pos = -torch.min(rel_pos, torch.zeros_like(rel_pos))
        max_exact = num_buckets // 2
        large = max_exact + (torch.log(rel_pos.float() / max_exact) / math.log(self.max_dist / max_exact) *
                             (num_buckets - max_exact)).long()
        large = torch.min(large, torch.full_like(large, num_buckets - 1))
        return rel_buckets + torch.where(rel_pos < max_exact, rel_pos, large)


class T5SelfAttention(nn.Module):
    def __init__(self, dim, dim_attn, dim_ffn, num_heads, num_buckets, shared_pos=False, dropout=0.0):
        super().__init__()
        self.shared_pos = shared_pos
        self.norm1 = T5LayerNorm(dim)
        self.attn = T5Attention(dim, dim_attn, num_heads, dropout)
        self.norm2 = T5LayerNorm(dim)
        self.ffn = T5FeedForward(dim, dim_ffn, dropout)
        self.pos_embedding = None if shared_pos else T5RelativeEmbedding(num_buckets, num_heads, bidirectional=True)

    def forward(self, x, mask=None, pos_bias=None):
        e = pos_bias if self.shared_pos else self.pos_embedding(x.size(1), x.size(1))
        x = x + self.attn(self.norm1(x), mask=mask, pos_bias=e)
        x = x + self.ffn(self.norm2(x))
        return x


class T5Encoder(nn.Module):
    def __init__(self, vocab, dim, dim_attn, dim_ffn, num_heads, num_layers, num_buckets, shared_pos=False,
                 dropout=0.0):
        super().__init__()
        assert not shared_pos, "umT5: per-layer relative position bias"
        self.vocab = vocab
        self.dim = dim
        self.dim_attn = dim_attn
        self.dim_ffn = dim_ffn
        self.num_heads = num_heads
        self.num_layers = num_layers
        self.num_buckets = num_buckets
        self.token_embedding = nn.Embedding(vocab, dim)
        self.dropout = nn.Dropout(dropout)
        self.blocks = nn.ModuleList([T5SelfAttention(dim, dim_attn, dim_ffn, num_heads, num_buckets, False, dropout)
                                     for _ in range(num_layers)])
        self.norm = T5LayerNorm(dim)

    def config(self):
        return dict(vocab=self.vocab, dim=self.dim, dim_attn=self.dim_attn, dim_ffn=self.dim_ffn,
                    num_heads=self.num_heads, num_layers=self.num_layers, num_buckets=self.num_buckets)

    def forward(self, ids, mask=None, probe=None):
        x = self.dropout(self.token_embedding(ids))
        if probe is not None:
            probe["embed"] = x
        for i, blk in enumerate(self.blocks):
            if probe is not None:
                probe[f"block{i}_pos_bias"] = blk.pos_embedding(x.size(1), x.size(1))
            x = blk(x, mask)
            if probe is not None:
                probe[f"block{i}_out"] = x
        return self.dropout(self.norm(x))


def hf_key(k):
    """Wan T5Encoder key -> HF UMT5EncoderModel key."""
    if k == "token_embedding.weight":
        return "shared.weight"
    if k == "norm.weight":
        return "encoder.final_layer_norm.weight"
    parts = k.split(".")
    assert parts[0] == "blocks"
    i = parts[1]
    rest = ".".join(parts[2:])
    table = {
        "norm1.weight": "layer.0.layer_norm.weight",
        "attn.q.weight": "layer.0.SelfAttention.q.weight",
        "attn.k.weight": "layer.0.SelfAttention.k.weight",
        "attn.v.weight": "layer.0.SelfAttention.v.weight",
        "attn.o.weight": "layer.0.SelfAttention.o.weight",
        "norm2.weight": "layer.1.layer_norm.weight",
        "ffn.gate.0.weight": "layer.1.DenseReluDense.wi_0.weight",
        "ffn.fc1.weight": "layer.1.DenseReluDense.wi_1.weight",
        "ffn.fc2.weight": "layer.1.DenseReluDense.wo.weight",
        "pos_embedding.embedding.weight": "layer.0.SelfAttention.relative_attention_bias.weight",
    }
    return f"encoder.block.{i}.{table[rest]}"
