"""Wan-VAE (WanVAE_ in wan/modules/vae.py) with Wan's original module names, configurable
dim / z_dim / dim_mult / num_res_blocks / temperal_downsample.

Two execution modes with identical results (checked by check_goldens.py):
  * full-sequence causal (cache=None): used for training. Rules: every 3x3x3 CausalConv3d pads
    2 zero frames in front (1 spatially), 1x1x1 convs do not pad; upsample3d: frame 0 bypasses
    time_conv and is not duplicated, frames 1.. go through time_conv (2-zero-frame causal padding),
    output channels split [2, C] and interleave in time; downsample3d: keep frame 0, then a stride-2
    unpadded time conv over the whole sequence (windows (0,1,2), (2,3,4), ...).
  * streaming (cache=dict()): exactly Wan's chunked feat_cache procedure. Encoder chunks are
    1, 4, 4, ... frames; the decoder is called once per latent frame (-> 1, 4, 4, ... frames).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

CACHE_T = 2


class CausalConv3d(nn.Conv3d):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._padding = (self.padding[2], self.padding[2], self.padding[1], self.padding[1], 2 * self.padding[0], 0)
        self.padding = (0, 0, 0)

    def forward(self, x, cache_x=None):
        padding = list(self._padding)
        if cache_x is not None and self._padding[4] > 0:
            x = torch.cat([cache_x.to(x.dtype), x], dim=2)
            padding[4] -= cache_x.shape[2]
        x = F.pad(x, padding)
        return super().forward(x)

    def cached(self, x, cache):
        """Streaming call: keeps the last CACHE_T input frames in cache[self] (Wan's feat_cache)."""
        if cache is None:
            return self(x)
        old = cache.get(self)
        cache_x = x[:, :, -CACHE_T:].clone()
        if cache_x.shape[2] < 2 and old is not None:
            cache_x = torch.cat([old[:, :, -1:], cache_x], dim=2)
        y = self(x, old)
        cache[self] = cache_x
        return y


class RMS_norm(nn.Module):
    def __init__(self, dim, channel_first=True, images=True, bias=False):
        super().__init__()
        broadcastable = (1, 1, 1) if not images else (1, 1)
        shape = (dim, *broadcastable) if channel_first else (dim,)
        self.channel_first = channel_first
        self.scale = dim ** 0.5
        self.gamma = nn.Parameter(torch.ones(shape))
        self.bias = nn.Parameter(torch.zeros(shape)) if bias else 0.0

    def forward(self, x):
        # == F.normalize(x, dim=channel) (x / max(||x||_2, 1e-12)), written as x * rsqrt(max(sum x^2, 1e-24))
        # because aten::norm over the channel dim is ~3x slower on CPU
        d = 1 if self.channel_first else -1
        inv = torch.rsqrt((x * x).sum(d, keepdim=True).clamp_min(1e-24))
        return x * inv * self.scale * self.gamma + self.bias


class Upsample(nn.Upsample):
    def forward(self, x):
        return super().forward(x.float()).type_as(x)


class Resample(nn.Module):
    def __init__(self, dim, mode):
        assert mode in ("none", "upsample2d", "upsample3d", "downsample2d", "downsample3d")
        super().__init__()
        self.dim = dim
        self.mode = mode
        if mode == "upsample2d":
            self.resample = nn.Sequential(Upsample(scale_factor=(2.0, 2.0), mode="nearest-exact"),
                                          nn.Conv2d(dim, dim // 2, 3, padding=1))
        elif mode == "upsample3d":
            self.resample = nn.Sequential(Upsample(scale_factor=(2.0, 2.0), mode="nearest-exact"),
                                          nn.Conv2d(dim, dim // 2, 3, padding=1))
            self.time_conv = CausalConv3d(dim, dim * 2, (3, 1, 1), padding=(1, 0, 0))
        elif mode == "downsample2d":
            self.resample = nn.Sequential(nn.ZeroPad2d((0, 1, 0, 1)), nn.Conv2d(dim, dim, 3, stride=(2, 2)))
        elif mode == "downsample3d":
            self.resample = nn.Sequential(nn.ZeroPad2d((0, 1, 0, 1)), nn.Conv2d(dim, dim, 3, stride=(2, 2)))
            self.time_conv = CausalConv3d(dim, dim, (3, 1, 1), stride=(2, 1, 1), padding=(0, 0, 0))
        else:
            self.resample = nn.Identity()

    def _interleave(self, y):
        b, c2, t, h, w = y.shape
        c = c2 // 2
        y = y.reshape(b, 2, c, t, h, w)
        y = torch.stack((y[:, 0], y[:, 1]), 3)  # [b, c, t, 2, h, w]
        return y.reshape(b, c, t * 2, h, w)

    def _spatial(self, x):
        b, c, t, h, w = x.shape
        y = self.resample(x.transpose(1, 2).reshape(b * t, c, h, w))
        return y.reshape(b, t, y.shape[1], y.shape[2], y.shape[3]).transpose(1, 2)

    def forward(self, x, cache=None):
        if self.mode == "upsample3d":
            if cache is None:  # full-sequence causal
                if x.shape[2] > 1:
                    y = self._interleave(self.time_conv(x[:, :, 1:]))
                    x = torch.cat([x[:, :, :1], y], dim=2)
            else:  # Wan's streaming procedure ('Rep' marks the first chunk)
                old = cache.get(self.time_conv)
                if old is None:
                    cache[self.time_conv] = "Rep"
                else:
                    cache_x = x[:, :, -CACHE_T:].clone()
                    if cache_x.shape[2] < 2 and not isinstance(old, str):
                        cache_x = torch.cat([old[:, :, -1:], cache_x], dim=2)
                    if cache_x.shape[2] < 2 and isinstance(old, str):
                        cache_x = torch.cat([torch.zeros_like(cache_x), cache_x], dim=2)
                    y = self.time_conv(x) if isinstance(old, str) else self.time_conv(x, old)
                    cache[self.time_conv] = cache_x
                    x = self._interleave(y)
        x = self._spatial(x)
        if self.mode == "downsample3d":
            if cache is None:
                if x.shape[2] > 1:
                    x = torch.cat([x[:, :, :1], self.time_conv(x)], dim=2)
            else:
                old = cache.get(self.time_conv)
                if old is None:
                    cache[self.time_conv] = x.clone()
                else:
                    cache_x = x[:, :, -1:].clone()
                    x = self.time_conv(torch.cat([old[:, :, -1:], x], dim=2))
                    cache[self.time_conv] = cache_x
        return x


class ResidualBlock(nn.Module):
    def __init__(self, in_dim, out_dim, dropout=0.0):
        super().__init__()
        self.in_dim = in_dim
        self.out_dim = out_dim
        self.residual = nn.Sequential(
            RMS_norm(in_dim, images=False), nn.SiLU(), CausalConv3d(in_dim, out_dim, 3, padding=1),
            RMS_norm(out_dim, images=False), nn.SiLU(), nn.Dropout(dropout), CausalConv3d(out_dim, out_dim, 3, padding=1))
        self.shortcut = CausalConv3d(in_dim, out_dim, 1) if in_dim != out_dim else nn.Identity()

    def forward(self, x, cache=None):
        h = self.shortcut(x)
        for layer in self.residual:
            x = layer.cached(x, cache) if isinstance(layer, CausalConv3d) else layer(x)
        return x + h


class AttentionBlock(nn.Module):
    """Single-head, per-frame spatial self-attention."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim
        self.norm = RMS_norm(dim)
        self.to_qkv = nn.Conv2d(dim, dim * 3, 1)
        self.proj = nn.Conv2d(dim, dim, 1)
        nn.init.zeros_(self.proj.weight)

    def forward(self, x, cache=None):
        identity = x
        b, c, t, h, w = x.shape
        x = x.transpose(1, 2).reshape(b * t, c, h, w)
        x = self.norm(x)
        q, k, v = self.to_qkv(x).reshape(b * t, 1, c * 3, -1).permute(0, 1, 3, 2).contiguous().chunk(3, dim=-1)
        s = torch.matmul(q, k.transpose(-1, -2)) * (c ** -0.5)
        x = torch.matmul(torch.softmax(s.float(), dim=-1).type_as(v), v)
        x = x.squeeze(1).permute(0, 2, 1).reshape(b * t, c, h, w)
        x = self.proj(x)
        x = x.reshape(b, t, c, h, w).transpose(1, 2)
        return x + identity


def _run(layers, x, cache):
    for layer in layers:
        if isinstance(layer, (ResidualBlock, AttentionBlock, Resample)):
            x = layer(x, cache)
        elif isinstance(layer, CausalConv3d):
            x = layer.cached(x, cache)
        else:
            x = layer(x)
    return x


class Encoder3d(nn.Module):
    def __init__(self, dim=128, z_dim=4, dim_mult=(1, 2, 4, 4), num_res_blocks=2, attn_scales=(),
                 temperal_downsample=(True, True, False), dropout=0.0):
        super().__init__()
        assert len(attn_scales) == 0
        dims = [dim * u for u in [1] + list(dim_mult)]
        self.conv1 = CausalConv3d(3, dims[0], 3, padding=1)
        downsamples = []
        for i, (in_dim, out_dim) in enumerate(zip(dims[:-1], dims[1:])):
            for _ in range(num_res_blocks):
                downsamples.append(ResidualBlock(in_dim, out_dim, dropout))
                in_dim = out_dim
            if i != len(dim_mult) - 1:
                mode = "downsample3d" if temperal_downsample[i] else "downsample2d"
                downsamples.append(Resample(out_dim, mode=mode))
        self.downsamples = nn.Sequential(*downsamples)
        self.middle = nn.Sequential(ResidualBlock(out_dim, out_dim, dropout), AttentionBlock(out_dim),
                                    ResidualBlock(out_dim, out_dim, dropout))
        self.head = nn.Sequential(RMS_norm(out_dim, images=False), nn.SiLU(), CausalConv3d(out_dim, z_dim, 3, padding=1))

    def forward(self, x, cache=None):
        x = self.conv1.cached(x, cache)
        x = _run(self.downsamples, x, cache)
        x = _run(self.middle, x, cache)
        return _run(self.head, x, cache)


class Decoder3d(nn.Module):
    def __init__(self, dim=128, z_dim=4, dim_mult=(1, 2, 4, 4), num_res_blocks=2, attn_scales=(),
                 temperal_upsample=(False, True, True), dropout=0.0):
        super().__init__()
        assert len(attn_scales) == 0
        dim_mult = list(dim_mult)
        dims = [dim * u for u in [dim_mult[-1]] + dim_mult[::-1]]
        self.conv1 = CausalConv3d(z_dim, dims[0], 3, padding=1)
        self.middle = nn.Sequential(ResidualBlock(dims[0], dims[0], dropout), AttentionBlock(dims[0]),
                                    ResidualBlock(dims[0], dims[0], dropout))
        upsamples = []
        for i, (in_dim, out_dim) in enumerate(zip(dims[:-1], dims[1:])):
            if i > 0:  # Wan: `if i == 1 or i == 2 or i == 3` (identical for up to 4 stages)
                in_dim = in_dim // 2
            for _ in range(num_res_blocks + 1):
                upsamples.append(ResidualBlock(in_dim, out_dim, dropout))
                in_dim = out_dim
            if i != len(dim_mult) - 1:
                mode = "upsample3d" if temperal_upsample[i] else "upsample2d"
                upsamples.append(Resample(out_dim, mode=mode))
        self.upsamples = nn.Sequential(*upsamples)
        self.head = nn.Sequential(RMS_norm(out_dim, images=False), nn.SiLU(), CausalConv3d(out_dim, 3, 3, padding=1))

    def forward(self, x, cache=None):
        x = self.conv1.cached(x, cache)
        x = _run(self.middle, x, cache)
        x = _run(self.upsamples, x, cache)
        return _run(self.head, x, cache)


class WanVAE_(nn.Module):
    def __init__(self, dim=128, z_dim=4, dim_mult=(1, 2, 4, 4), num_res_blocks=2, attn_scales=(),
                 temperal_downsample=(True, True, False), dropout=0.0):
        super().__init__()
        self.dim = dim
        self.z_dim = z_dim
        self.dim_mult = list(dim_mult)
        self.num_res_blocks = num_res_blocks
        self.attn_scales = list(attn_scales)
        self.temperal_downsample = list(temperal_downsample)
        self.temperal_upsample = self.temperal_downsample[::-1]
        self.encoder = Encoder3d(dim, z_dim * 2, dim_mult, num_res_blocks, attn_scales, self.temperal_downsample, dropout)
        self.conv1 = CausalConv3d(z_dim * 2, z_dim * 2, 1)
        self.conv2 = CausalConv3d(z_dim, z_dim, 1)
        self.decoder = Decoder3d(dim, z_dim, dim_mult, num_res_blocks, attn_scales, self.temperal_upsample, dropout)
        self.register_buffer("latents_mean", torch.zeros(z_dim), persistent=False)
        self.register_buffer("latents_std", torch.ones(z_dim), persistent=False)

    def config(self):
        return dict(dim=self.dim, z_dim=self.z_dim, dim_mult=self.dim_mult, num_res_blocks=self.num_res_blocks,
                    attn_scales=self.attn_scales, temperal_downsample=self.temperal_downsample)

    @property
    def t_stride(self):
        return 2 ** sum(bool(v) for v in self.temperal_downsample)

    # ---- raw (unnormalised) ----------------------------------------------------------------
    def encode_raw(self, x):
        """Full-sequence causal encode. x [B,3,1+4k,H,W] in [-1,1] -> (mu, log_var) raw."""
        mu, log_var = self.conv1(self.encoder(x)).chunk(2, dim=1)
        return mu, log_var

    def decode_raw(self, z):
        """Full-sequence causal decode of raw (de-normalised) z -> video (unclamped)."""
        return self.decoder(self.conv2(z))

    # ---- Wan wrapper semantics (normalised latents) -----------------------------------------
    def _ms(self, z):
        return self.latents_mean.view(1, -1, 1, 1, 1).to(z), self.latents_std.view(1, -1, 1, 1, 1).to(z)

    def normalize(self, mu):
        m, s = self._ms(mu)
        return (mu - m) * (1.0 / s)

    def denormalize(self, z):
        m, s = self._ms(z)
        return z / (1.0 / s) + m

    def encode(self, x):
        return self.normalize(self.encode_raw(x)[0])

    def decode(self, z):
        return self.decode_raw(self.denormalize(z))

    # ---- Wan's chunked procedure (streaming) -------------------------------------------------
    def encode_chunked(self, x):
        cache = {}
        t = x.shape[2]
        n = 1 + (t - 1) // self.t_stride
        outs = []
        for i in range(n):
            if i == 0:
                xi = x[:, :, :1]
            else:
                xi = x[:, :, 1 + self.t_stride * (i - 1):1 + self.t_stride * i]
            outs.append(self.encoder(xi, cache))
        mu, _ = self.conv1(torch.cat(outs, 2)).chunk(2, dim=1)
        return self.normalize(mu)

    def decode_stream(self, z, cache):
        """Decode normalised latent frames z [B, z_dim, n, h, w] one latent frame at a time,
        continuing the stream held in `cache` (a dict; start with {})."""
        x = self.conv2(self.denormalize(z))
        outs = [self.decoder(x[:, :, i:i + 1], cache) for i in range(x.shape[2])]
        return torch.cat(outs, 2)
