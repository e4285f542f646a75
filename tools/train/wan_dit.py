"""Wan2.1 DiT (WanModel, t2v) with Wan's original module/parameter names, plus the causal
extensions kino-tiny needs: per-frame timesteps ([B, F] -> per-frame modulation), arbitrary
temporal RoPE positions per frame, a frame-level self-attention mask (block-causal over chunks),
and a chunk forward with a self-attention KV cache for streaming.

Semantics follow wan/modules/model.py (checked against test/goldens by
check_goldens.py):
  * sinusoidal time embedding: [cos, sin] (cos first), freqs 10000^(-i/half), float64
  * e = time_embedding(emb); e0 = time_projection(e) -> [.., 6, dim]
  * block: mod = modulation + e0 -> (shift_sa, scale_sa, gate_sa, shift_ff, scale_ff, gate_ff)
      x += gate_sa * self_attn(LN(x) * (1 + scale_sa) + shift_sa)
      x += cross_attn(norm3(x), ctx)                 (affine LN, no modulation, no gate)
      x += gate_ff * ffn(LN(x) * (1 + scale_ff) + shift_ff)
  * qk RMSNorm over the full dim before the head split and before RoPE (also in cross-attn)
  * head: (head.modulation + e) -> shift, scale (e, not e0, no SiLU)
  * context zero-padded to text_len, no cross-attention mask
  * RoPE: interleaved pairs, per-axis dims [d - 4(d//6), 2(d//6), 2(d//6)], theta 10000
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def sinusoidal_embedding_1d(dim, position):
    """position: float tensor of any shape -> [..., dim] float32 (computed in float64)."""
    assert dim % 2 == 0
    half = dim // 2
    pos = position.to(torch.float64)
    freqs = torch.pow(10000.0, -torch.arange(half, dtype=torch.float64, device=pos.device).div(half))
    s = pos.unsqueeze(-1) * freqs
    return torch.cat([torch.cos(s), torch.sin(s)], dim=-1).float()


def rope_params(max_seq_len, dim, theta=10000.0):
    """Angles (float64) [max_seq_len, dim//2] (Wan returns the complex polar form)."""
    assert dim % 2 == 0
    inv = 1.0 / torch.pow(theta, torch.arange(0, dim, 2, dtype=torch.float64).div(dim))
    return torch.outer(torch.arange(max_seq_len, dtype=torch.float64), inv)


class WanRMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.dim = dim
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + self.eps)).type_as(x) * self.weight.to(x.dtype)


class WanLayerNorm(nn.LayerNorm):
    def __init__(self, dim, eps=1e-6, elementwise_affine=False):
        super().__init__(dim, elementwise_affine=elementwise_affine, eps=eps)

    def forward(self, x):
        return super().forward(x.float()).type_as(x)


def apply_rope(x, cos, sin):
    """x [B, L, n, d]; cos/sin [L, d/2] (interleaved pairs (x[2i], x[2i+1])).
    Computed in fp32 (bf16 inputs stay bf16: training speed only)."""
    xf = x if x.dtype == torch.bfloat16 else x.float()
    cos, sin = cos.to(xf.dtype), sin.to(xf.dtype)
    a = xf[..., 0::2]
    b = xf[..., 1::2]
    c = cos[None, :, None, :]
    s = sin[None, :, None, :]
    out = torch.stack([a * c - b * s, a * s + b * c], dim=-1).flatten(-2)
    return out.type_as(x)


def attention(q, k, v, mask=None):
    """q [B, Lq, n, d], k/v [B, Lk, n, d]; mask: None, a bool tensor broadcastable to [B, n, Lq, Lk]
    (True = attend), or an additive float bias [Lq, Lk] (0 / -inf)."""
    b, lq, n, d = q.shape
    lk = k.shape[1]
    q = q.transpose(1, 2).reshape(b * n, lq, d)
    k = k.transpose(1, 2).reshape(b * n, lk, d)
    v = v.transpose(1, 2).reshape(b * n, lk, d)
    scale = 1.0 / math.sqrt(d)
    if mask is not None and mask.dtype != torch.bool:
        s = torch.baddbmm(mask.to(q.dtype)[None], q, k.transpose(1, 2), alpha=scale)
    else:
        s = torch.bmm(q, k.transpose(1, 2)) * scale
        if mask is not None:
            s = s.view(b, n, lq, lk).masked_fill(~mask, float("-inf")).view(b * n, lq, lk)
    # fp32 softmax (bf16 scores stay bf16: training speed only)
    p = torch.softmax(s if s.dtype == torch.bfloat16 else s.float(), dim=-1).type_as(v)
    return torch.bmm(p, v).view(b, n, lq, d).transpose(1, 2)


class TanhGELU(nn.Module):
    """GELU with the tanh approximation (Wan). `fast` (training only) uses the erf form, which differs
    by < 1e-3 absolute and is ~3x faster on CPU; inference/export always use tanh."""
    fast = False

    def forward(self, x):
        if TanhGELU.fast and self.training:
            return F.gelu(x)
        return F.gelu(x, approximate="tanh")


class WanSelfAttention(nn.Module):
    def __init__(self, dim, num_heads, window_size=(-1, -1), qk_norm=True, eps=1e-6):
        super().__init__()
        assert dim % num_heads == 0
        self.dim = dim
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.window_size = window_size
        self.qk_norm = qk_norm
        self.eps = eps
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)
        self.o = nn.Linear(dim, dim)
        self.norm_q = WanRMSNorm(dim, eps=eps) if qk_norm else nn.Identity()
        self.norm_k = WanRMSNorm(dim, eps=eps) if qk_norm else nn.Identity()

    def qkv(self, x, cos, sin):
        b, s = x.shape[:2]
        n, d = self.num_heads, self.head_dim
        if self.training and torch.is_autocast_cpu_enabled():
            # one GEMM for q, k, v (same math; avoids three casts of x in bf16 training)
            w = torch.cat([self.q.weight, self.k.weight, self.v.weight])
            bias = torch.cat([self.q.bias, self.k.bias, self.v.bias])
            q, k, v = F.linear(x, w, bias).chunk(3, dim=-1)
            q, k = self.norm_q(q), self.norm_k(k)
        else:
            q, k, v = self.norm_q(self.q(x)), self.norm_k(self.k(x)), self.v(x)
        q, k, v = q.reshape(b, s, n, d), k.reshape(b, s, n, d), v.reshape(b, s, n, d)
        return apply_rope(q, cos, sin), apply_rope(k, cos, sin), v

    def forward(self, x, cos, sin, mask=None, past_kv=None):
        """past_kv: optional (K, V) [B, Lp, n, d] of cached (already RoPE'd) keys/values that every
        query may attend to. Returns (out, (k, v)) with k, v of x itself."""
        q, k, v = self.qkv(x, cos, sin)
        if past_kv is not None:
            kk = torch.cat([past_kv[0].to(k.dtype), k], dim=1)
            vv = torch.cat([past_kv[1].to(v.dtype), v], dim=1)
        else:
            kk, vv = k, v
        y = attention(q, kk, vv, mask)
        return self.o(y.flatten(2)), (k, v)


class WanImageEmbedding(nn.Module):
    """Wan2.1 I2V's MLPProj (img_emb): image features [B, n, in_dim] -> image tokens [B, n, dim] through
    LayerNorm, Linear, exact GELU, Linear, LayerNorm (torch's eps 1e-5, not the DiT's 1e-6)."""

    def __init__(self, in_dim, out_dim):
        super().__init__()
        self.proj = nn.Sequential(nn.LayerNorm(in_dim), nn.Linear(in_dim, in_dim), nn.GELU(), nn.Linear(in_dim, out_dim),
                                  nn.LayerNorm(out_dim))

    def forward(self, x):
        return self.proj(x)


class WanT2VCrossAttention(WanSelfAttention):
    """Cross-attention to the text; with `image` also to image tokens through their own key/value
    projections and key norm, the two attentions' outputs summed before `o` (Wan2.1 I2V's
    WanI2VCrossAttention)."""

    def __init__(self, dim, num_heads, window_size=(-1, -1), qk_norm=True, eps=1e-6, image=False):
        super().__init__(dim, num_heads, window_size, qk_norm, eps)
        if image:
            self.k_img = nn.Linear(dim, dim)
            self.v_img = nn.Linear(dim, dim)
            self.norm_k_img = WanRMSNorm(dim, eps=eps) if qk_norm else nn.Identity()

    def image_kv(self, tokens):
        b = tokens.shape[0]
        n, d = self.num_heads, self.head_dim
        return self.norm_k_img(self.k_img(tokens)).view(b, -1, n, d), self.v_img(tokens).view(b, -1, n, d)

    def context_kv(self, context):
        b = context.shape[0]
        n, d = self.num_heads, self.head_dim
        k = self.norm_k(self.k(context)).view(b, -1, n, d)
        v = self.v(context).view(b, -1, n, d)
        return k, v

    def forward(self, x, context=None, kv=None, frame_ctx=None, nf=1, img_kv=None, img_on=None):
        """frame_ctx (training only): LongTensor [B, nf]; then `context` is a table [B*M, Lt, D] of M
        contexts per sample and the tokens of frame f attend to context frame_ctx[b, f].
        img_kv: the image tokens' (K, V) [B, n_img, heads, d] (image_kv), or None: no image branch;
        img_on (training only): [B] 0/1, which samples of a batch have an image."""
        b = x.shape[0]
        n, d = self.num_heads, self.head_dim
        q = self.norm_q(self.q(x)).view(b, -1, n, d)
        k, v = kv if kv is not None else self.context_kv(context)
        if frame_ctx is None:
            y = attention(q, k, v)
        else:
            M = k.shape[0] // b
            sel = (torch.arange(b)[:, None] * M + frame_ctx).reshape(-1)  # [B*nf]
            S = q.shape[1] // nf
            y = attention(q.reshape(b * nf, S, n, d), k[sel], v[sel]).reshape(b, nf * S, n, d)
        if img_kv is not None:
            y_img = attention(q, img_kv[0].to(q.dtype), img_kv[1].to(q.dtype))
            if img_on is not None:
                y_img = y_img * img_on.to(y_img.dtype)[:, None, None, None]
            y = y + y_img
        return self.o(y.flatten(2))


class WanAttentionBlock(nn.Module):
    def __init__(self, dim, ffn_dim, num_heads, window_size=(-1, -1), qk_norm=True, cross_attn_norm=True, eps=1e-6,
                 image=False):
        super().__init__()
        self.dim = dim
        self.norm1 = WanLayerNorm(dim, eps)
        self.self_attn = WanSelfAttention(dim, num_heads, window_size, qk_norm, eps)
        self.norm3 = WanLayerNorm(dim, eps, elementwise_affine=True) if cross_attn_norm else nn.Identity()
        self.cross_attn = WanT2VCrossAttention(dim, num_heads, (-1, -1), qk_norm, eps, image)
        self.norm2 = WanLayerNorm(dim, eps)
        self.ffn = nn.Sequential(nn.Linear(dim, ffn_dim), TanhGELU(), nn.Linear(ffn_dim, dim))
        self.modulation = nn.Parameter(torch.randn(1, 6, dim) / dim ** 0.5)

    def forward(self, x, e0, nf, cos, sin, context=None, mask=None, cross_kv=None, past_kv=None, probe=None,
                frame_ctx=None, img_kv=None, img_on=None):
        """x [B, nf*S, D]; e0 [B, nf, 6, D] (per frame). Returns (x, (k, v) of this chunk)."""
        b, L, D = x.shape
        S = L // nf
        mod = (self.modulation.unsqueeze(0).float() + e0.float()).chunk(6, dim=2)  # each [B, nf, 1, D]

        lowp = torch.bfloat16 if torch.is_autocast_cpu_enabled() else x.dtype

        def modulate(h, shift, scale):
            return (h.float().view(b, nf, S, D) * (1 + scale) + shift).view(b, L, D).to(lowp)

        def gate(h, g):
            return (h.float().view(b, nf, S, D) * g).view(b, L, D)

        y, kv = self.self_attn(modulate(self.norm1(x), mod[0], mod[1]), cos, sin, mask, past_kv)
        if probe is not None:
            probe["self_attn_out"] = y
        x = x + gate(y, mod[2])
        y = self.cross_attn(self.norm3(x), context, cross_kv, frame_ctx, nf, img_kv, img_on)
        if probe is not None:
            probe["cross_attn_out"] = y
        x = x + y
        y = self.ffn(modulate(self.norm2(x), mod[3], mod[4]))
        if probe is not None:
            probe["ffn_out"] = y
        x = x + gate(y, mod[5])
        return x, kv


class Head(nn.Module):
    def __init__(self, dim, out_dim, patch_size, eps=1e-6):
        super().__init__()
        self.dim = dim
        self.out_dim = out_dim
        self.patch_size = patch_size
        self.eps = eps
        self.norm = WanLayerNorm(dim, eps)
        self.head = nn.Linear(dim, math.prod(patch_size) * out_dim)
        self.modulation = nn.Parameter(torch.randn(1, 2, dim) / dim ** 0.5)

    def forward(self, x, e, nf):
        """x [B, nf*S, D]; e [B, nf, D] (time_embedding output, per frame)."""
        b, L, D = x.shape
        S = L // nf
        m = (self.modulation.unsqueeze(0).float() + e.float().unsqueeze(2)).chunk(2, dim=2)  # [B, nf, 1, D]
        h = (self.norm(x).float().view(b, nf, S, D) * (1 + m[1]) + m[0]).view(b, L, D)
        return self.head(h.type_as(x))


class WanModel(nn.Module):
    def __init__(self, model_type="t2v", patch_size=(1, 2, 2), text_len=512, in_dim=16, dim=2048, ffn_dim=8192,
                 freq_dim=256, text_dim=4096, out_dim=16, num_heads=16, num_layers=32, window_size=(-1, -1),
                 qk_norm=True, cross_attn_norm=True, eps=1e-6, image_dim=None):
        """image_dim: the width of the image features of an image branch (img_emb and every block's
        image keys/values, as Wan2.1 I2V has for CLIP features), or None: text only."""
        super().__init__()
        assert model_type == "t2v"
        self.image_dim = image_dim
        self.model_type = model_type
        self.patch_size = tuple(patch_size)
        self.text_len = text_len
        self.in_dim = in_dim
        self.dim = dim
        self.ffn_dim = ffn_dim
        self.freq_dim = freq_dim
        self.text_dim = text_dim
        self.out_dim = out_dim
        self.num_heads = num_heads
        self.num_layers = num_layers
        self.eps = eps
        self.patch_embedding = nn.Conv3d(in_dim, dim, kernel_size=self.patch_size, stride=self.patch_size)
        self.text_embedding = nn.Sequential(nn.Linear(text_dim, dim), TanhGELU(), nn.Linear(dim, dim))
        self.time_embedding = nn.Sequential(nn.Linear(freq_dim, dim), nn.SiLU(), nn.Linear(dim, dim))
        self.time_projection = nn.Sequential(nn.SiLU(), nn.Linear(dim, dim * 6))
        self.blocks = nn.ModuleList([
            WanAttentionBlock(dim, ffn_dim, num_heads, window_size, qk_norm, cross_attn_norm, eps, image_dim is not None)
            for _ in range(num_layers)])
        if image_dim is not None:
            self.img_emb = WanImageEmbedding(image_dim, dim)
        self.head = Head(dim, out_dim, self.patch_size, eps)
        d = dim // num_heads
        assert d % 2 == 0
        self.rope_dims = [d - 4 * (d // 6), 2 * (d // 6), 2 * (d // 6)]
        # angles, float64, 1024 positions per axis (not part of the state dict, as in Wan)
        self.rope_angles = [rope_params(1024, r) for r in self.rope_dims]

    # ---- helpers -------------------------------------------------------------------------
    def config(self):
        return dict(model_type=self.model_type, patch_size=list(self.patch_size), text_len=self.text_len,
                    in_dim=self.in_dim, dim=self.dim, ffn_dim=self.ffn_dim, freq_dim=self.freq_dim,
                    text_dim=self.text_dim, out_dim=self.out_dim, num_heads=self.num_heads,
                    num_layers=self.num_layers, eps=self.eps, image_dim=self.image_dim)

    def rope_cos_sin(self, frame_pos, h, w, device=None):
        """Per-token cos/sin [L, d/2] for tokens ordered frame-major then h then w.
        frame_pos: list/tensor of temporal positions, one per latent frame."""
        fp = torch.as_tensor(frame_pos, dtype=torch.long)
        at, ah, aw = self.rope_angles
        nf = fp.numel()
        ang = torch.cat([
            at[fp].view(nf, 1, 1, -1).expand(nf, h, w, -1),
            ah[:h].view(1, h, 1, -1).expand(nf, h, w, -1),
            aw[:w].view(1, 1, w, -1).expand(nf, h, w, -1)], dim=-1).reshape(nf * h * w, -1)
        cos, sin = torch.cos(ang).float(), torch.sin(ang).float()
        if device is not None:
            cos, sin = cos.to(device), sin.to(device)
        return cos, sin

    def pad_context(self, context):
        """list of [L_i, text_dim] or a [B, L, text_dim] tensor -> [B, text_len, text_dim] zero-padded."""
        if isinstance(context, (list, tuple)):
            rows = []
            for u in context:
                assert u.shape[0] <= self.text_len
                rows.append(torch.cat([u, u.new_zeros(self.text_len - u.shape[0], u.shape[1])]))
            return torch.stack(rows)
        if context.shape[1] < self.text_len:
            context = torch.cat([context, context.new_zeros(context.shape[0], self.text_len - context.shape[1],
                                                              context.shape[2])], dim=1)
        return context

    def embed_context(self, context):
        return self.text_embedding(self.pad_context(context))

    def cross_kv(self, context):
        """Per-layer cross-attention (K, V) for a context (cacheable for a prompt)."""
        c = self.embed_context(context)
        return [blk.cross_attn.context_kv(c) for blk in self.blocks]

    def image_kv(self, features):
        """Per-layer image (K, V) for image features [B, n, image_dim] (cacheable for an image)."""
        tokens = self.img_emb(features)
        return [blk.cross_attn.image_kv(tokens) for blk in self.blocks]

    def time_embed(self, t, nf, b):
        """t: [B], [B, nf] or scalar -> e [B, nf, D], e0 [B, nf, 6, D] (fp32)."""
        t = torch.as_tensor(t, dtype=torch.float32)
        if t.dim() == 0:
            t = t.expand(b)
        if t.dim() == 1:
            t = t[:, None].expand(b, nf)
        with torch.autocast("cpu", enabled=False):
            e = self.time_embedding(sinusoidal_embedding_1d(self.freq_dim, t).float())
            e0 = self.time_projection(e).unflatten(-1, (6, self.dim))
        return e, e0

    def patchify(self, x):
        x = self.patch_embedding(x)  # [B, D, f, h, w]
        b, d, f, h, w = x.shape
        return x.flatten(2).transpose(1, 2), (f, h, w)

    def unpatchify(self, x, grid):
        f, h, w = grid
        pt, ph, pw = self.patch_size
        b = x.shape[0]
        c = self.out_dim
        u = x.view(b, f, h, w, pt, ph, pw, c)
        u = torch.einsum("bfhwpqrc->bcfphqwr", u)
        return u.reshape(b, c, f * pt, h * ph, w * pw)

    # ---- full forward (training / golden checks) ------------------------------------------
    def forward(self, x, t, context, frame_pos=None, frame_mask=None, probe=None, frame_ctx=None, image=None,
                image_on=None):
        """x [B, C, F, H, W]; t [B] or [B, F] (float, 0..1000); context: list of [L_i, text_dim] or
        [B, L, text_dim]; frame_pos: temporal RoPE position of each latent frame (default 0..F-1);
        frame_mask: optional bool [F, F] (query frame, key frame) -> block mask over frames;
        frame_ctx: optional LongTensor [B, F] selecting, per latent frame, one of M contexts given as
        context [B, M, L, text_dim] (prompt switches inside a training clip); image: image features
        [B, n, image_dim] for the image branch, image_on: optional [B] 0/1 (which samples have one)."""
        b = x.shape[0]
        assert self.patch_size[0] == 1
        tokens, grid = self.patchify(x)
        f, h, w = grid
        if probe is not None:
            probe["tokens_in"] = tokens
        if frame_pos is None:
            frame_pos = torch.arange(f)
        cos, sin = self.rope_cos_sin(frame_pos, h, w, x.device)
        e, e0 = self.time_embed(t, f, b)
        if probe is not None:
            probe["e"], probe["e0"] = e, e0
        if frame_ctx is not None:
            ctx = self.embed_context(context.reshape(-1, context.shape[2], context.shape[3]))  # [B*M, Lt, D]
        else:
            ctx = self.embed_context(context)
        if probe is not None:
            probe["context_emb"] = ctx
        mask = None
        if frame_mask is not None:
            S = h * w
            m = frame_mask.repeat_interleave(S, 0).repeat_interleave(S, 1)
            mask = torch.zeros(m.shape).masked_fill(~m, float("-inf"))  # additive bias [L, L]
        img_kv = self.image_kv(image) if image is not None else [None] * len(self.blocks)
        for i, blk in enumerate(self.blocks):
            p = {} if probe is not None else None
            tokens, _ = blk(tokens, e0, f, cos, sin, context=ctx, mask=mask, probe=p, frame_ctx=frame_ctx,
                            img_kv=img_kv[i], img_on=image_on)
            if probe is not None:
                probe[f"block{i}"] = p
                probe[f"block{i}_out"] = tokens
        out = self.head(tokens, e, f)
        if probe is not None:
            probe["head_out"] = out
        return self.unpatchify(out, grid)

    # ---- streaming ------------------------------------------------------------------------
    @torch.no_grad()
    def forward_chunk(self, x, t, cross_kv, frame_pos, past=None, img_kv=None):
        """One chunk with a self-attention KV cache.
        x [B, C, K, H, W] (K latent frames of the chunk); t [B] or [B, K];
        cross_kv: from self.cross_kv(context); frame_pos: K temporal positions;
        past: None or list (per layer) of (K, V) [B, Lp, n, d] of earlier frames (RoPE'd keys);
        img_kv: None or self.image_kv(features) (the image branch's keys/values).
        Returns (velocity [B, C, K, H, W], new_kv per layer for this chunk's tokens)."""
        b = x.shape[0]
        tokens, grid = self.patchify(x)
        f, h, w = grid
        cos, sin = self.rope_cos_sin(frame_pos, h, w, x.device)
        e, e0 = self.time_embed(t, f, b)
        new_kv = []
        for i, blk in enumerate(self.blocks):
            tokens, kv = blk(tokens, e0, f, cos, sin, cross_kv=cross_kv[i],
                             past_kv=None if past is None else past[i], img_kv=None if img_kv is None else img_kv[i])
            new_kv.append(kv)
        out = self.head(tokens, e, f)
        return self.unpatchify(out, grid), new_kv


def block_causal_mask(num_frames, chunk, window=None):
    """Frame-level bool mask [F, F]: frame i attends to frame j iff chunk(j) <= chunk(i) and
    (window is None or chunk(i) - chunk(j) < window chunks)."""
    c = torch.arange(num_frames) // chunk
    m = c[None, :] <= c[:, None]
    if window is not None:
        m = m & (c[:, None] - c[None, :] < window)
    return m


def teacher_forcing_mask(num_frames, chunk, window=None, sink=0):
    """Mask over 2F frames laid out [clean 0..F-1, noisy 0..F-1]:
      clean frame i  -> clean frames of chunks <= chunk(i) (within window)  (== the context pass)
      noisy frame i  -> clean frames of chunks < chunk(i) (within window) and noisy frames of
                        its own chunk                                         (== a denoising step)
    This is exactly what streaming inference sees: a KV cache of clean (t=0) frames plus the
    chunk being denoised. The first `sink` chunks stay in view past the window (the KV cache's
    attention sink: the server's cache never evicts them)."""
    F_ = num_frames
    c = torch.arange(F_) // chunk
    d = c[:, None] - c[None, :]
    win = torch.ones_like(d, dtype=torch.bool) if window is None else d < window
    win = win | (c[None, :] < sink)
    cc = (d >= 0) & win
    nc = (d > 0) & win
    nn_ = d == 0
    m = torch.zeros(2 * F_, 2 * F_, dtype=torch.bool)
    m[:F_, :F_] = cc
    m[F_:, :F_] = nc
    m[F_:, F_:] = nn_
    return m


# ---- key names: Wan <-> diffusers ---------------------------------------------------------------
# Rename table applied in order with str.replace (as diffusers' convert_wan_to_diffusers.py does).
DIFFUSERS_RENAME = [
    ("time_embedding.0", "condition_embedder.time_embedder.linear_1"),
    ("time_embedding.2", "condition_embedder.time_embedder.linear_2"),
    ("text_embedding.0", "condition_embedder.text_embedder.linear_1"),
    ("text_embedding.2", "condition_embedder.text_embedder.linear_2"),
    ("time_projection.1", "condition_embedder.time_proj"),
    ("head.modulation", "scale_shift_table"),
    ("head.head", "proj_out"),
    ("modulation", "scale_shift_table"),
    ("ffn.0", "ffn.net.0.proj"),
    ("ffn.2", "ffn.net.2"),
    # norm2 <-> norm3 swap via a placeholder
    ("norm2", "norm__placeholder"),
    ("norm3", "norm2"),
    ("norm__placeholder", "norm3"),
    ("self_attn.q", "attn1.to_q"),
    ("self_attn.k", "attn1.to_k"),
    ("self_attn.v", "attn1.to_v"),
    ("self_attn.o", "attn1.to_out.0"),
    ("self_attn.norm_q", "attn1.norm_q"),
    ("self_attn.norm_k", "attn1.norm_k"),
    # the image branch before the text's cross_attn.k / .v (their prefixes)
    ("img_emb.proj.0", "condition_embedder.image_embedder.norm1"),
    ("img_emb.proj.1", "condition_embedder.image_embedder.ff.net.0.proj"),
    ("img_emb.proj.3", "condition_embedder.image_embedder.ff.net.2"),
    ("img_emb.proj.4", "condition_embedder.image_embedder.norm2"),
    ("cross_attn.k_img", "attn2.add_k_proj"),
    ("cross_attn.v_img", "attn2.add_v_proj"),
    ("cross_attn.norm_k_img", "attn2.norm_added_k"),
    ("cross_attn.q", "attn2.to_q"),
    ("cross_attn.k", "attn2.to_k"),
    ("cross_attn.v", "attn2.to_v"),
    ("cross_attn.o", "attn2.to_out.0"),
    ("cross_attn.norm_q", "attn2.norm_q"),
    ("cross_attn.norm_k", "attn2.norm_k"),
]


def wan_to_diffusers_key(k):
    for a, b in DIFFUSERS_RENAME:
        k = k.replace(a, b)
    return k
