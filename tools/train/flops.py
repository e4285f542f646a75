"""Count the multiply-adds of one streaming chunk (DiT steps + CFG + context passes, VAE decode)
with forward hooks, and time them in PyTorch (1 thread).  python3 tools/train/flops.py"""
import time

import torch
import torch.nn as nn

import common
from common import CFG
import wan_dit


def count(model, fn):
    macs = [0]

    def hook(mod, inp, out):
        if isinstance(mod, nn.Linear):
            macs[0] += out.numel() * mod.in_features
        elif isinstance(mod, (nn.Conv3d, nn.Conv2d)):
            k = 1
            for s in mod.kernel_size:
                k *= s
            macs[0] += out.numel() * mod.in_channels * k
    orig = wan_dit.attention

    def att(q, k, v, mask=None):
        macs[0] += 2 * q.shape[0] * q.shape[1] * k.shape[1] * q.shape[2] * q.shape[3]
        return orig(q, k, v, mask)
    wan_dit.attention = att
    hs = [m.register_forward_hook(hook) for m in model.modules()]
    with torch.no_grad():
        fn()
    for h in hs:
        h.remove()
    wan_dit.attention = orig
    return macs[0]


def main():
    common.setup_torch(1)
    dit = common.dit_model().eval()
    vae = common.vae_model().eval()
    z = CFG["vae"]["z_dim"]
    W = CFG["attn_window_chunks"]
    hw = common.latent_hw()
    steps = CFG["sample_steps"]
    ctx = [torch.randn(12, CFG["t5"]["dim"])]
    ckv = dit.cross_kv(ctx)
    x = torch.randn(1, z, 1, hw, hw)
    past = None
    for k in range(W - 1):  # fill the cache
        _, kv = dit.forward_chunk(x, torch.zeros(1), ckv, [k], past)
        past = kv if past is None else [(torch.cat([a[0], b[0]], 1), torch.cat([a[1], b[1]], 1)) for a, b in zip(past, kv)]
    one = count(dit, lambda: dit.forward_chunk(x, torch.tensor([500.0]), ckv, [W - 1], past))
    xkv = count(dit, lambda: dit.cross_kv(ctx))
    cache = {}
    vae.decode_stream(torch.randn(1, z, 2, hw, hw), cache)
    dec = count(vae, lambda: vae.decode_stream(torch.randn(1, z, 1, hw, hw), cache))
    t0 = time.time()
    for _ in range(10):
        dit.forward_chunk(x, torch.tensor([500.0]), ckv, [W - 1], past)
    t_dit = (time.time() - t0) / 10
    t0 = time.time()
    with torch.no_grad():
        for _ in range(3):
            vae.decode_stream(torch.randn(1, z, 1, hw, hw), cache)
    t_vae = (time.time() - t0) / 3
    fwd = 2 * (steps + 1)
    chunk = fwd * one + dec
    fps = CFG["video"]["fps"]
    secs = 4 * CFG["chunk_latent_frames"] / fps
    print(f"DiT forward (1 chunk = 16 tokens, full window): {2 * one / 1e6:.1f} MFLOP, torch {t_dit * 1e3:.1f} ms")
    print(f"cross-attn K/V for a new context: {2 * xkv / 1e6:.1f} MFLOP")
    print(f"VAE decode of one latent frame (4 video frames): {2 * dec / 1e9:.3f} GFLOP, torch {t_vae * 1e3:.0f} ms")
    print(f"per chunk with {steps} steps + CFG (x2) + 2 context passes = {fwd} DiT forwards: "
          f"{2 * fwd * one / 1e9:.2f} GFLOP DiT + {2 * dec / 1e9:.2f} GFLOP VAE = {2 * chunk / 1e9:.2f} GFLOP "
          f"per {secs:.2f} s of video -> {2 * chunk / secs / 1e9:.1f} GFLOP/s for real time at {fps} fps")
    print(f"without CFG ({steps + 1} forwards): {2 * ((steps + 1) * one + dec) / secs / 1e9:.1f} GFLOP/s")


if __name__ == "__main__":
    main()
