"""Loads test/goldens weights into the kino-tiny PyTorch modules (wan_dit.WanModel,
umt5.T5Encoder, wan_vae.WanVAE_) and compares against the goldens' io tensors.
Every comparison prints its max abs diff; exits non-zero if any exceeds 1e-4.

Also checks (self-consistency, no goldens): the streaming paths used at inference
(DiT chunk forward with a KV cache, VAE per-latent-frame decode with feature caches) equal the
training paths (teacher-forcing mask, full-sequence causal VAE), and training's attention over frame
pairs equals dense masked attention.

usage: python3 tools/train/check_goldens.py [--goldens test/goldens]
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st  # noqa: E402
import umt5  # noqa: E402
import wan_dit  # noqa: E402
import wan_vae  # noqa: E402

TOL = 1e-4
failures = []


def cmp(name, a, b, tol=TOL):
    a = a.detach().float().reshape(-1)
    b = b.detach().float().reshape(-1)
    if b.numel() == 1:
        b = b.expand_as(a)
    if a.numel() != b.numel():
        print(f"  {name:48s} SHAPE MISMATCH {a.numel()} vs {b.numel()}")
        failures.append(name)
        return
    d = (a - b).abs().max().item()
    ok = d <= tol
    print(f"  {name:48s} max|diff| = {d:.3e}  {'ok' if ok else 'FAIL'}")
    if not ok:
        failures.append(name)


def check_dit(g, sub):
    cfg = json.load(open(os.path.join(g, sub, "config.json")))
    oc = cfg["wan_original_config"]
    w = st.load(os.path.join(g, sub, "weights.safetensors"))
    io = st.load(os.path.join(g, sub, "io.safetensors"))
    m = wan_dit.WanModel(patch_size=tuple(oc["patch_size"]), text_len=oc["text_len"], in_dim=oc["in_dim"],
                         dim=oc["dim"], ffn_dim=oc["ffn_dim"], freq_dim=oc["freq_dim"], text_dim=oc["text_dim"],
                         out_dim=oc["out_dim"], num_heads=oc["num_heads"], num_layers=oc["num_layers"],
                         qk_norm=oc["qk_norm"], cross_attn_norm=oc["cross_attn_norm"], eps=oc["eps"]).eval()
    sd = m.state_dict()
    assert list(sd.keys()) == list(w.keys()), "state_dict keys/order differ from goldens"
    m.load_state_dict(w, strict=True)
    print(f"DiT {sub}: state_dict keys identical to goldens ({len(sd)} tensors)")
    km = cfg["key_map_wan_to_diffusers"]
    bad = [k for k in km if wan_dit.wan_to_diffusers_key(k) != km[k]]
    print(f"  wan->diffusers key map: {len(km) - len(bad)}/{len(km)} identical {'ok' if not bad else 'FAIL ' + str(bad[:3])}")
    if bad:
        failures.append(f"{sub}.keymap")
    for case in ("sq", "nsq"):
        x, t, ctx = io[f"{case}.x"], io[f"{case}.t"], io[f"{case}.context"]
        with torch.no_grad():
            cmp(f"{sub}.{case}.sin_emb", wan_dit.sinusoidal_embedding_1d(oc["freq_dim"], t), io[f"{case}.sin_emb"])
            probe = {}
            out = m(x[None], t, [ctx], probe=probe)[0]
            cmp(f"{sub}.{case}.context_padded", m.pad_context([ctx]), io[f"{case}.context_padded"])
            # per-frame embeddings [1, F, ...]: every frame carries the clip's (single) timestep
            cmp(f"{sub}.{case}.e (each frame)", probe["e"] - io[f"{case}.e"][:, None], torch.zeros(1))
            cmp(f"{sub}.{case}.e0 (each frame)", probe["e0"] - io[f"{case}.e0"][:, None], torch.zeros(1))
            cmp(f"{sub}.{case}.context_emb", probe["context_emb"], io[f"{case}.context_emb"])
            cmp(f"{sub}.{case}.patch_conv_out", m.patch_embedding(x[None]), io[f"{case}.patch_conv_out"])
            cmp(f"{sub}.{case}.tokens_in", probe["tokens_in"], io[f"{case}.tokens_in"])
            for k in ("self_attn_out", "cross_attn_out", "ffn_out"):
                cmp(f"{sub}.{case}.block0_{k}", probe["block0"][k], io[f"{case}.block0_{k}"])
            cmp(f"{sub}.{case}.block0_out", probe["block0_out"], io[f"{case}.block0_out"])
            cmp(f"{sub}.{case}.block1_out", probe["block1_out"], io[f"{case}.block1_out"])
            cmp(f"{sub}.{case}.head_out", probe["head_out"], io[f"{case}.head_out"])
            cmp(f"{sub}.{case}.out", out, io[f"{case}.out"])
            # per-frame timesteps equal to the scalar timestep -> identical output
            nf = x.shape[1]
            out_pf = m(x[None], t[:, None].expand(1, nf), [ctx])[0]
            cmp(f"{sub}.{case}.out (per-frame t [1,F])", out_pf, io[f"{case}.out"])
    return m


def check_rope(g):
    io = st.load(os.path.join(g, "rope", "rope.safetensors"))
    for name, hd, grid, heads in (("hd32", 32, (3, 4, 5), 2), ("hd12", 12, (2, 3, 2), 1)):
        m = wan_dit.WanModel(dim=hd * heads, num_heads=heads, num_layers=0, ffn_dim=8, freq_dim=8, text_dim=8,
                             in_dim=4, out_dim=4, text_len=4)
        f, h, w = grid
        cos, sin = m.rope_cos_sin(torch.arange(f), h, w)
        L = f * h * w
        cmp(f"rope.{name}.token_cos", cos, io[f"{name}.token_cos"])
        cmp(f"rope.{name}.token_sin", sin, io[f"{name}.token_sin"])
        q = io[f"{name}.q"]
        qr = wan_dit.apply_rope(q[:, :L], cos, sin)
        cmp(f"rope.{name}.q_rope", torch.cat([qr, q[:, L:]], 1), io[f"{name}.q_rope"])


def check_t5(g):
    cfg = json.load(open(os.path.join(g, "t5", "config.json")))
    a = cfg["wan_T5Encoder_args"]
    w = st.load(os.path.join(g, "t5", "weights.safetensors"))
    io = st.load(os.path.join(g, "t5", "io.safetensors"))
    m = umt5.T5Encoder(a["vocab"], a["dim"], a["dim_attn"], a["dim_ffn"], a["num_heads"], a["num_layers"],
                       a["num_buckets"], a["shared_pos"], dropout=0.0).eval()
    assert sorted(m.state_dict().keys()) == sorted(w.keys())
    m.load_state_dict(w, strict=True)
    print(f"umT5: state_dict keys identical to goldens ({len(w)} tensors)")
    km = cfg["key_map_wan_to_hf_umt5"]
    bad = [k for k in km if umt5.hf_key(k) != km[k]]
    print(f"  wan->HF UMT5 key map: {len(km) - len(bad)}/{len(km)} identical {'ok' if not bad else 'FAIL'}")
    if bad:
        failures.append("t5.keymap")
    with torch.no_grad():
        ids = io["real.ids"].long()
        probe = {}
        out = m(ids, io["real.mask"].long(), probe=probe)
        cmp("t5.real.embed", probe["embed"], io["real.embed"])
        for i in range(a["num_layers"]):
            cmp(f"t5.real.block{i}_pos_bias", probe[f"block{i}_pos_bias"], io[f"real.block{i}_pos_bias"])
            cmp(f"t5.real.block{i}_out", probe[f"block{i}_out"], io[f"real.block{i}_out"])
        cmp("t5.real.out", out, io["real.out"])
        cmp("t5.real.out (mask=None)", m(ids), io["real.out"])
        for p in ("pad16", "pad512"):
            cmp(f"t5.{p}.out", m(io[f"{p}.ids"].long(), io[f"{p}.mask"].long()), io[f"{p}.out"])
        rel = io["bucket_table.rel_pos"].long()
        cmp("t5.bucket_table", m.blocks[0].pos_embedding.bucket(rel).float(), io["bucket_table.bucket"], tol=0)


def check_vae(g):
    cfg = json.load(open(os.path.join(g, "vae", "config.json")))
    a = cfg["wan_WanVAE__args"]
    norm = json.load(open(os.path.join(g, "vae", "vae_latent_norm.json")))
    w = st.load(os.path.join(g, "vae", "weights.safetensors"))
    io = st.load(os.path.join(g, "vae", "io.safetensors"))
    m = wan_vae.WanVAE_(a["dim"], a["z_dim"], a["dim_mult"], a["num_res_blocks"], a["attn_scales"],
                        a["temperal_downsample"], a["dropout"]).eval()
    assert sorted(m.state_dict().keys()) == sorted(w.keys())
    m.load_state_dict(w, strict=True)
    m.latents_mean.copy_(torch.tensor(norm["mean"]))
    m.latents_std.copy_(torch.tensor(norm["std"]))
    print(f"VAE: state_dict keys identical to goldens ({len(w)} tensors, "
          f"{sum(v.numel() for v in w.values())} params)")
    with torch.no_grad():
        z = io["dec.z"][None]
        cmp("vae.dec.z_denorm", m.denormalize(z), io["dec.z_denorm"])
        cmp("vae.dec.conv2_out", m.conv2(m.denormalize(z)), io["dec.conv2_out"])
        full = m.decode(z)
        cmp("vae.dec.video_raw (full-sequence causal)", full, io["dec.video_raw"])
        cmp("vae.dec.video_clamped", full.clamp(-1, 1), io["dec.video_clamped"])
        cache = {}
        parts = [m.decode_stream(z[:, :, i:i + 1], cache) for i in range(z.shape[2])]
        print(f"  streaming decode frames per latent: {[p.shape[2] for p in parts]}")
        cmp("vae.dec.video_raw (streamed, 1 latent/call)", torch.cat(parts, 2), io["dec.video_raw"])
        v = io["enc.video"][None]
        mu, logv = m.encode_raw(v)
        cmp("vae.enc.conv1_out (full-sequence)", torch.cat([mu, logv], 1), io["enc.conv1_out"])
        cmp("vae.enc.mu_raw", mu, io["enc.mu_raw"])
        cmp("vae.enc.mu_normalized (full-sequence)", m.encode(v), io["enc.mu_normalized"])
        cmp("vae.enc.mu_normalized (chunked 1,4,4)", m.encode_chunked(v), io["enc.mu_normalized"])


def check_streaming_equivalence():
    """The KV-cache chunk forward equals the teacher-forcing masked forward (random model), with and
    without an attention sink (frame 0 kept in view past the window)."""
    torch.manual_seed(0)
    m = wan_dit.WanModel(patch_size=(1, 2, 2), text_len=8, in_dim=4, dim=64, ffn_dim=96, freq_dim=32, text_dim=16,
                         out_dim=4, num_heads=2, num_layers=2).eval()
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.05 * torch.randn_like(p))
    F_, K, W = 5, 1, 3
    clean = torch.randn(1, 4, F_, 4, 4)
    noisy = torch.randn(1, 4, F_, 4, 4)
    tn = torch.rand(1, F_) * 1000
    ctx = [torch.randn(5, 16)]
    for sink in (0, 1):
        mask = wan_dit.teacher_forcing_mask(F_, K, W, sink)
        with torch.no_grad():
            full = m(torch.cat([clean, noisy], 2), torch.cat([torch.zeros(1, F_), tn], 1), ctx,
                     frame_pos=torch.cat([torch.arange(F_), torch.arange(F_)]), frame_mask=mask)[:, :, F_:]
            ckv = m.cross_kv(ctx)
            cache = []  # list of per-frame per-layer (k, v)
            outs = []
            for f in range(F_):
                past = None
                win = cache[:sink] + (cache[sink:][-(W - 1):] if W > 1 else [])
                if win:
                    past = [(torch.cat([c[i][0] for c in win], 1), torch.cat([c[i][1] for c in win], 1))
                            for i in range(m.num_layers)]
                v, _ = m.forward_chunk(noisy[:, :, f:f + 1], tn[:, f], ckv, [f + 100], past)  # RoPE is relative
                outs.append(v)
                _, kv = m.forward_chunk(clean[:, :, f:f + 1], torch.zeros(1), ckv, [f + 100], past)
                cache.append(kv)
        cmp(f"dit streaming (KV cache, window 3, sink {sink}) == teacher-forcing mask", torch.cat(outs, 2), full, tol=1e-4)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--goldens", default="test/goldens")
    args = ap.parse_args()
    torch.set_num_threads(1)
    g = args.goldens
    check_dit(g, "dit_a")
    check_dit(g, "dit_b")
    check_rope(g)
    check_t5(g)
    check_vae(g)
    check_streaming_equivalence()
    if failures:
        print(f"FAILED: {len(failures)} comparisons: {failures}")
        sys.exit(1)
    print(f"all comparisons within {TOL}")


if __name__ == "__main__":
    main()
