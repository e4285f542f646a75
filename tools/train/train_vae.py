"""Train the kino-tiny Wan-VAE on procedurally rendered clips (resumable).

  python3 tools/train/train_vae.py --steps 2000 [--out DIR]   # resumes DIR/ckpt.pt (default: the build's vae/)
Data: random scenes from tools/data/render.py (the held-out combinations are excluded), clips of the
lengths given by --frames (1 + 4k frames -> 1 + k latent frames; long ones as 32x32 crops) at a random
time offset, rendered on the fly; the stream of batches is a pure function of (seed, step), so a
resumed run sees the same data.
Loss: L1 + MSE on pixels in [-1, 1] of decode(mu), bf16 autocast, with 5x weight on object pixels
(objects cover ~5-10% of the frame; without it they appear very late). A plain autoencoder: the
log_var half of conv1's output is not trained (Wan's encode() discards it too) -- with Adam even a
tiny KL weight drove sigma to ~1 and drowned the latent, and latent noise only blurs.
At the end the per-channel latent mean/std over 256 fresh clips are stored for normalisation.
--decoder-only fine-tunes conv2 + the decoder on the frozen encoder's latents (build/train/vae/decoder/):
the latent space stays the same, so it can run while (and after) the DiT trains on those latents.
--switch-prob adds prompt switches, their latents spliced (common.spliced_mu): the decoder learns to
turn the old object into the new one at the splice, which a causal decoder otherwise smears (a red ->
blue splice decoded green for a chunk); the frames after a switch weigh --splice-weight times more.
--ramp-prob makes that share of the switches cross-fades (the DiT's transition ramps); --fade-weight weighs
their in-between frames and --fade-free leaves their latents out of the anchor.
--init CKPT --anchor W fine-tunes encoder and decoder together from a finished VAE while holding the
latents near the initial encoder's (the latent statistics are kept), so the DiT's data moves little.
"""
import argparse
import math
import signal
import time

import numpy as np
import torch

import common
from common import CFG

import render  # noqa: E402  (tools/data)


def _without_objects(sc):
    """The scene's background alone (a background switch kept, an object switch dropped)."""
    bg = {k: v for k, v in sc.items() if k != "switch" or v["attr"] == "bg"}
    return dict(bg, objects=[])


def closing_gaps(m, k=15):
    """Pixels a morphological closing (k x k, per frame) adds to the object mask m [B, 1, T, H, W]: a
    ring's hole and the notches between a star's points, where the shape's outline is decided."""
    h = k // 2
    pool = lambda t: torch.nn.functional.max_pool3d(t, (1, k, k), 1, (0, h, h))  # noqa: E731
    padded = torch.nn.functional.pad(m, (2 * h,) * 4)  # outside the frame is not object
    closed = -pool(-pool(padded))
    return (closed[..., 2 * h:-2 * h, 2 * h:-2 * h] - m).clamp(min=0)


def with_edges(masks):
    """Boolean masks [B, T, H, W] -> float [B, 1, T, H, W], grown by a pixel (the edges included)."""
    m = torch.from_numpy(np.stack(masks)).float()[:, None]
    return torch.nn.functional.max_pool3d(m, (1, 3, 3), 1, (0, 1, 1))


def batch(step, bs, frames, seed, with_mask=False, crop=None, switch_prob=0.0, ramp_prob=0.0):
    """-> x [B, 3, T, H, W], object mask (with_mask; [B, 1, T, H, W] or None), the prompt switches: per clip the
    first latent frame that shows the switched scene alone (render.splice_latent) or None, the switched scenes
    rendered from their start (for common.spliced_mu), and per clip the first cross-faded latent frame of a
    gradual switch or None. crop: None or a size: a random window of each clip (long clips at low cost)."""
    rng = np.random.default_rng([seed, 1, step])
    clips, masks, after, switch, fade = [], [], [], [], []
    for _ in range(bs):
        sc = render.sample_scene(rng, frames=frames, two_prob=0.25, switch_prob=switch_prob, ramp_prob=ramp_prob,
                                 latents=(frames - 1) // 4 + 1)
        sc["t0"] = int(rng.integers(0, 17))
        fr = render.render(sc)
        clips.append(fr)
        switch.append(render.splice_latent(sc["switch"]) if "switch" in sc else None)
        fade.append(sc["switch"]["latent"] if sc.get("switch", {}).get("chunks", 1) > 1 else None)
        if "switch" in sc:
            after.append(render.render(render.switched(sc)))
        if with_mask:  # object pixels: where the frame differs from the same scene without objects
            bg = render.render(_without_objects(sc))
            masks.append((np.abs(fr.astype(np.int16) - bg).max(-1) > 8))
    x = common.video_tensor(clips)
    x_after = common.video_tensor(after) if after else None
    m = with_edges(masks) if with_mask else None
    if crop:
        oy, ox = (int(v) for v in rng.integers(0, x.shape[-1] - crop + 1, 2))
        win = lambda t: None if t is None else t[..., oy:oy + crop, ox:ox + crop].contiguous()
        x, x_after, m = win(x), win(x_after), win(m)
    return x, m, switch, x_after, fade


def latent_stats(vae, seed, n=256, frames=29):
    rng = np.random.default_rng([seed, 2])
    mus = []
    with torch.no_grad():
        for i in range(0, n, 8):
            clips = [render.render(render.sample_scene(rng, frames=frames)) for _ in range(8)]
            x = common.video_tensor(clips)
            with torch.autocast("cpu", dtype=torch.bfloat16):
                mu, _ = vae.encode_raw(x)
            mus.append(mu.float())
    mu = torch.cat(mus)
    mean = mu.mean(dim=(0, 2, 3, 4))
    std = mu.std(dim=(0, 2, 3, 4))
    return mean, std


def preview(path, out, n=6, frames=45, seed=99):
    """Ground truth (top) vs full-sequence reconstruction (bottom) of n clips; prints L1/PSNR."""
    import png
    vae = common.vae_model()
    ck = common.load_ckpt(path)
    vae.load_state_dict(ck["model"])
    vae.eval()
    x = batch(10 ** 6 + seed, n, frames, CFG["seed"])[0]
    with torch.no_grad():
        mu, _ = vae.encode_raw(x)
        xr = vae.decode_raw(mu).clamp(-1, 1)
    per_latent = [round((xr - x)[:, :, max(0, 4 * j - 3):4 * j + 1].abs().mean().item(), 3)
                  for j in range((frames - 1) // 4 + 1)]
    print("L1 per latent frame:", per_latent)
    l1 = (xr - x).abs().mean().item()
    psnr = 10 * math.log10(4.0 / (xr - x).pow(2).mean().item())
    to8 = lambda v: ((v + 1) * 127.5).round().byte().permute(0, 2, 3, 4, 1).numpy()
    a, b = to8(x), to8(xr)
    rows = []
    for i in range(n):
        rows.append([a[i, k] for k in range(0, frames, 4)])
        rows.append([b[i, k] for k in range(0, frames, 4)])
    png.write_png(out, png.upscale(png.grid(rows), 2))
    print(f"step {ck['step']}: recon L1 {l1:.4f} PSNR {psnr:.2f} dB -> {out}")
    return l1, psnr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=5000)
    ap.add_argument("--bs", type=int, default=4)
    ap.add_argument("--frames", default="13",
                    help="clip length(s) 1+4k, comma-separated, one drawn per step; 'Nc' = N frames as 32x32 crops")
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--obj-weight", type=float, default=4.0, help="extra loss weight on object pixels")
    ap.add_argument("--save-every", type=float, default=300, help="seconds")
    ap.add_argument("--out", default=f"{common.BUILD}/vae")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--decoder-only", action="store_true", help="fine-tune conv2 + decoder, encoder frozen")
    ap.add_argument("--switch-prob", type=float, default=0.0,
                    help="share of clips with a prompt switch, encoded spliced as the DiT's data is")
    ap.add_argument("--ramp-prob", type=float, default=0.0,
                    help="share of the switches that are gradual (cross-faded over 2-4 latent frames, as the DiT's "
                         "ramps are): without them the VAE never saw a cross-fade's in-between colors and "
                         "encodes them ~5x as far off as a plain frame (tools/train/vae_crossfade.py)")
    ap.add_argument("--splice-weight", type=float, default=4.0,
                    help="extra loss weight on the 8 frames from a prompt switch on (where the decoder smears)")
    ap.add_argument("--fade-weight", type=float, default=1.0,
                    help="extra loss weight on a gradual switch's cross-faded frames (the in-between colors the "
                         "DiT's transition chunks are trained on)")
    ap.add_argument("--fade-free", action="store_true",
                    help="leave the cross-faded latent frames out of --anchor: the init encoder's latents of them "
                         "are the ones to correct, the plain frames' latent space stays put")
    ap.add_argument("--hole-weight", type=float, default=0.0,
                    help="extra loss weight on a ring's hole and a star's notches (closing_gaps), which a "
                         "soft reconstruction loses first")
    ap.add_argument("--schedule-from", type=int, default=0,
                    help="step where this stage's warmup and cosine start (a stage resuming a finished one)")
    ap.add_argument("--init", default=None,
                    help="a complete VAE checkpoint to start from when --out has none (joint fine-tuning)")
    ap.add_argument("--anchor", type=float, default=0.0,
                    help="joint fine-tuning: weight of the squared distance of the latents (in units of the "
                         "init's latents_std) from the init encoder's; keeps its latent space and statistics, so "
                         "a DiT trained on it stays close to valid")
    ap.add_argument("--preview", default=None, help="write a reconstruction PNG from the checkpoint and exit")
    ap.add_argument("--preview-frames", type=int, default=45)
    args = ap.parse_args()
    common.setup_torch(args.threads)
    if args.preview:
        preview(f"{args.out}/decoder/ckpt.pt" if args.decoder_only else f"{args.out}/ckpt.pt", args.preview, frames=args.preview_frames)
        return
    seed = CFG["seed"]
    torch.manual_seed(seed)
    vae = common.vae_model()
    base = None
    if args.decoder_only:
        base = common.load_ckpt(f"{args.out}/ckpt.pt")
        assert base is not None and "latents_mean" in base, "train the VAE first"
        vae.load_state_dict(base["model"])
        args.out = f"{args.out}/decoder"
        for p in list(vae.encoder.parameters()) + list(vae.conv1.parameters()):
            p.requires_grad_(False)
    with torch.no_grad():  # log_var half of conv1 (unused): a small posterior variance
        vae.conv1.bias[vae.z_dim:].fill_(-8.0)
        vae.conv1.weight[vae.z_dim:].mul_(0.1)
    anchor, step = None, 0
    if args.init and not args.decoder_only:  # a complete checkpoint: its latent statistics are kept
        base = common.load_ckpt(args.init)
        vae.load_state_dict(base["model"])
        step = base["step"]  # continue the init's stream of batches
    if args.anchor > 0:
        assert base is not None, "--anchor needs --init"
        anchor = common.vae_model()
        anchor.load_state_dict(base["model"])
        anchor.requires_grad_(False)
        anchor_std = base["latents_std"].view(1, -1, 1, 1, 1)
    opt = torch.optim.AdamW([p for p in vae.parameters() if p.requires_grad], lr=args.lr, betas=(0.9, 0.99),
                            weight_decay=0.0)
    ck_path = f"{args.out}/ckpt.pt"
    log = common.Logger(f"{args.out}/log.jsonl")
    ck = common.load_ckpt(ck_path)
    if ck is not None:
        vae.load_state_dict(ck["model"])
        if "opt" in ck:  # a checkpoint rebuilt from the export (import_model.py) carries no optimizer state
            opt.load_state_dict(ck["opt"])
        step = ck["step"]
        print(f"resumed VAE at step {step}")
    if args.decoder_only:  # the frozen half exactly as the base VAE has it
        vae.load_state_dict({k: v for k, v in base["model"].items() if k.startswith(("encoder.", "conv1."))}, strict=False)
    if ck is not None and (step > args.steps or (step == args.steps and "latents_mean" in ck)):
        print("VAE done")
        return

    stop = {"flag": False}

    def on_term(*_):
        stop["flag"] = True
    signal.signal(signal.SIGTERM, on_term)

    def save():
        obj = {"model": vae.state_dict(), "opt": opt.state_dict(), "step": step, "config": vae.config()}
        if base is not None:  # a complete VAE checkpoint in the base VAE's latent space
            obj["latents_mean"], obj["latents_std"] = base["latents_mean"], base["latents_std"]
        common.save_ckpt(ck_path, obj)

    last_save = time.time()
    t_start = time.time()
    warm = 100
    lengths = str(args.frames).split(",")
    while step < args.steps and not stop["flag"]:
        s0 = min(args.schedule_from, args.steps - 1)
        frac = (step - s0) / max(1, args.steps - s0)
        lr = args.lr * min(1.0, (step - s0 + 1) / warm) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))
        frames = lengths[int(np.random.default_rng([seed, 5, step]).integers(len(lengths)))]
        for g in opt.param_groups:
            g["lr"] = lr
        crop = 32 if frames.endswith("c") else None
        x, obj, switch, x_after, fade = batch(
            step, args.bs, int(frames.rstrip("c")), seed, with_mask=True, crop=crop, switch_prob=args.switch_prob,
            ramp_prob=args.ramp_prob)
        w = 1.0 + args.obj_weight * obj + args.hole_weight * closing_gaps(obj)
        for i, L in enumerate(switch):
            if L is not None:
                f = 1 + vae.t_stride * (L - 1)
                w[i, :, f:f + 8] *= args.splice_weight
                if fade[i] is not None:  # the cross-faded frames, up to the splice
                    w[i, :, 1 + vae.t_stride * (fade[i] - 1):f] *= args.fade_weight
        with torch.autocast("cpu", dtype=torch.bfloat16):
            with torch.set_grad_enabled(not args.decoder_only):
                mu = common.spliced_mu(vae, x, x_after, switch)
            mu = mu.float()
            xr = vae.decode_raw(mu).float()
        l1 = (xr - x).abs().mean()
        mse = (xr - x).pow(2).mean()
        loss = (w * ((xr - x).abs() + (xr - x).pow(2))).mean() / w.mean()
        if anchor is not None:
            with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
                mu0 = common.spliced_mu(anchor, x, x_after, switch).float()
            held = torch.ones_like(mu[:, :1])
            if args.fade_free:
                for i, (L, F) in enumerate(zip(switch, fade)):
                    if F is not None:
                        held[i, :, F:L] = 0
            drift = (((mu - mu0) / anchor_std).pow(2) * held).sum() / (held.sum() * mu.shape[1])
            loss = loss + args.anchor * drift
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(vae.parameters(), 1.0)
        opt.step()
        step += 1
        if step % 10 == 0:
            el = time.time() - t_start
            extra = {} if anchor is None else {"drift": drift.item()}
            log.log(step=step, loss=loss.item(), l1=l1.item(), mse=mse.item(), lr=lr,
                    gn=float(gn), mu_abs=mu.abs().mean().item(), mu_std=mu.std().item(), **extra)
            print(f"vae step {step} loss {loss.item():.4f} l1 {l1.item():.4f} mse {mse.item():.5f} "
                  + "".join(f"{k} {v:.4f} " for k, v in extra.items()) + f"lr {lr:.2e} {el / 60:.1f} min", flush=True)
        if time.time() - last_save > args.save_every:
            save()
            last_save = time.time()
    save()
    if step >= args.steps and base is None:
        vae.eval()
        mean, std = latent_stats(vae, seed)
        ck = common.load_ckpt(ck_path)
        ck["latents_mean"], ck["latents_std"] = mean, std
        common.save_ckpt(ck_path, ck)
        print("latent mean", [round(v, 3) for v in mean.tolist()])
        print("latent std ", [round(v, 3) for v in std.tolist()])


if __name__ == "__main__":
    main()
