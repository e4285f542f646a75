"""The DiT's training objectives beyond plain flow matching: per-frame caption mixes, circle twins,
the stream's own past, the continuation path, the sink's far positions, outline weights and the
first-chunk (text-to-image) loss. train_dit.py's docstring says how a batch uses them."""
import copy

import numpy as np
import torch

import common
from common import CFG
from distill import teacher_x0
from networks import encode_prompts
from schedule import continuation_start, sampler_sigmas, shift_sigma

import captions  # noqa: E402  (tools/data)
import render  # noqa: E402  (tools/data)


def frame_contexts(switches, frames):
    """Per clip of a batch (its prompt switch or None): the caption mixes its latent frames are
    conditioned on, as weights of the caption after the switch [B, M], and which of them each
    latent frame uses [B, F] (for the DiT's frame_ctx)."""
    progress = [[0.0 if sw is None else render.switch_progress(sw, f) for f in range(frames)] for sw in switches]
    levels = [sorted(set(p)) for p in progress]
    M = max(len(v) for v in levels)
    mix = torch.tensor([v + [v[-1]] * (M - len(v)) for v in levels])
    fctx = torch.tensor([[v.index(x) for x in p] for v, p in zip(levels, progress)], dtype=torch.long)
    return mix, fctx


def continuation_path(x0, eps, sigma_start, gen):
    """Noised inputs for every latent frame after the first of clips x0 [B, C, F, H, W], as a
    continuing chunk's sampling meets them: it starts from the previous frame noised to sigma_start
    and moves on Euler steps towards its estimate; were the estimate the true frame all along, the
    input at sigma (<= sigma_start) is  sigma eps + a prev + (1 - sigma - a) x0,
    a = sigma (1 - sigma_start) / sigma_start. -> (inputs [B, C, F-1, H, W], sigma [B, F-1]), sigma
    uniform over the steps' range [0.25, sigma_start]."""
    B, _, F_ = x0.shape[:3]
    sigma = 0.25 + (sigma_start - 0.25) * torch.rand(B, F_ - 1, generator=gen)
    s5 = sigma[:, None, :, None, None]
    a = s5 * (1 - sigma_start) / sigma_start
    return s5 * eps[:, :, 1:] + a * x0[:, :, :-1] + (1 - s5 - a) * x0[:, :, 1:], sigma


def flow_error(pred, x0, eps, s5):
    """Elementwise loss. x0 prediction is scored on the velocity it implies, (x0_pred - x0) / sigma,
    sigma floored at 0.25 so that rare tiny sigmas do not dominate the gradient; v prediction
    against v = eps - x0."""
    if CFG["prediction"] == "sample":
        return ((pred - x0) / s5.clamp(min=0.25)).pow(2)
    return (pred - (eps - x0)).pow(2)


@torch.no_grad()
def circle_twins(vae, scenes, frames=1):
    """Latents of the first `frames` video frames of each scene with every object drawn as a circle
    (same place, size, color, motion). Sampling reaches its last steps holding a round blob that the
    caption's shape word (or, in a stream, the shape of the past frames) must turn into a star or a
    ring; a noised true frame always already shows the outline, so neither is ever needed in
    training (trained without them, the DiT draws circles for every shape word)."""
    clips = []
    for sc in scenes:
        twin = copy.deepcopy({k: v for k, v in sc.items() if k != "switch"})
        twin["frames"] = frames
        for o in twin["objects"]:
            o["shape"] = "circle"
        clips.append(render.render(twin))
    with torch.autocast("cpu", dtype=torch.bfloat16):  # as encode_data.py encodes the training clips
        return vae.encode(common.video_tensor(clips)).float()


@torch.no_grad()
def own_past(dit, text, tok, x0, prompts, gen, text_len, mask, frame_pos, **dit_kw):
    """Every latent frame f >= 1 of clean clips x0 [B, C, F, H, W] made as the stream makes a
    continuing chunk (from frame f-1 noised to the continuation's sigma, the last steps of the
    sampler's schedule with its guidance) with the true frames before it as the past; frame 0 stays
    true. A stream's past is its own output, and the shapes the DiT keeps over 8 chunks after a true
    past it loses after its own (probes.py --past-probe): these frames are the past the stream has,
    one chunk's errors deep. dit_kw: more of the DiT's inputs (an image branch's `image`), both
    guidance streams alike."""
    F_ = x0.shape[2]
    sig = sampler_sigmas(CFG["sample_steps"], CFG["shift"])
    start = continuation_start(CFG["sample_steps"], CFG["continuation_strength"])
    g = CFG["guidance_scale"]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ctx = encode_prompts(text, tok, prompts + [""], text_len)
    cond, uncond = ctx[:-1], ctx[-1:].expand(len(prompts), -1, -1)
    prev = torch.cat([x0[:, :, :1], x0[:, :, :-1]], dim=2)
    x = (1 - sig[start]) * prev + sig[start] * torch.randn(x0.shape, generator=gen)
    for i in range(start, len(sig) - 1):
        t = torch.cat([torch.zeros(len(x0), F_), torch.full((len(x0), F_), sig[i] * 1000.0)], dim=1)
        both = torch.cat([x0, x], dim=2)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            pc = dit(both, t, cond, frame_pos=frame_pos, frame_mask=mask, **dit_kw)[:, :, F_:].float()
            pu = dit(both, t, uncond, frame_pos=frame_pos, frame_mask=mask, **dit_kw)[:, :, F_:].float()
        pred = pu + g * (pc - pu)  # x0 estimate (CFG "prediction" is "sample")
        x = x + (sig[i + 1] - sig[i]) * (x - pred) / sig[i]
    x[:, :, 0] = x0[:, :, 0]
    return x


def sink_far_positions(near_pos, frames, sink_frames, rng, farthest=256):
    """Temporal RoPE positions for the [clean, noisy] layout with the frames after the sink moved
    d in [1, farthest] later: a long stream's chunks see the never-evicted sink frame hundreds of
    positions back (keys keep their absolute rotation), a training clip only 1-7."""
    d = int(rng.integers(1, farthest + 1))
    later = (torch.arange(2 * frames) % frames) >= sink_frames
    return near_pos + d * later


def outline_weights(scenes, frames, weight, band=2.0):
    """Per-latent-cell loss weights [B, 1, F, h, w]: 1 + weight where an object's outline (within
    `band` pixels of its edge, in any video frame of the latent frame; both scenes of a prompt switch)
    crosses the cell. A shape is its outline — a star and a circle of the same place and color differ
    in a few cells of a frame — so the plain loss spends little on it."""
    T, cell = render.T_STRIDE, common.spatial_factor()
    W, H = render.scene_size(scenes[0])  # (a batch is of one size)
    h, w = H // cell, W // cell
    xx, yy = np.meshgrid(np.arange(W) + 0.5, np.arange(H) + 0.5)
    out = np.zeros((len(scenes), 1, frames, h, w), np.float32)
    for b, sc in enumerate(scenes):
        versions = [sc] + ([render.switched(sc)] if "switch" in sc else [])
        for f in range(frames):
            near = np.zeros((H, W), bool)
            for k in ([0] if f == 0 else range(T * (f - 1) + 1, T * f + 1)):
                for v in versions:
                    for o in v["objects"]:
                        cx, cy, r, ang = render.object_state(o, v.get("t0", 0) + k, (W, H))
                        near |= np.abs(render.shape_sdf(o["shape"], xx, yy, cx, cy, r, ang)) < band
            out[b, 0, f] = near.reshape(h, cell, w, cell).any(axis=(1, 3))
    return torch.from_numpy(1.0 + weight * out)


def image_loss(dit, text, tok, lat, scenes, rng, gen, args, text_len, teacher=None):
    """The first-chunk objective: latent frame 0 of other clips, generated from noise with no past;
    against the teacher's prediction on the same input when one is given (distill.py)."""
    idx = rng.integers(0, lat.shape[0], args.image_bs)
    n_star = int(round(args.image_star_share * args.image_bs))
    if n_star:  # a stream's stars are lost first in its frame 0
        idx[:n_star] = rng.choice(args.star_scenes, n_star)
    x0 = lat[torch.from_numpy(idx), :, :1].float()
    prompts = ["" if rng.random() < args.drop else captions.caption_pair(scenes[i], rng)[0] for i in idx]
    u = torch.rand(args.image_bs, generator=gen)
    sigma = shift_sigma(u, CFG["shift"])
    n_twin = int(round(args.twin_share * args.image_bs))
    src = x0  # what gets noised
    if n_twin:  # the circle twin of the frame, at the noise levels where outlines are drawn
        sigma[:n_twin] = 0.2 + 0.4 * sigma[:n_twin]
        src = x0.clone()
        src[:n_twin] = circle_twins(args.twin_vae, [scenes[i] for i in idx[:n_twin]])
    s5 = sigma[:, None, None, None, None]
    eps = torch.randn(x0.shape, generator=gen)
    xt = (1 - s5) * src + s5 * eps
    with torch.autocast("cpu", dtype=torch.bfloat16):
        pred = dit(xt, sigma * 1000.0, encode_prompts(text, tok, prompts, text_len)).float()
    if teacher is not None:
        x0 = teacher_x0(teacher, tok, prompts, text_len, xt, sigma * 1000.0)
    err = flow_error(pred, x0, eps, s5)
    if args.image_outline_weight:  # frame 0 shows the scene before any switch
        firsts = [{k: v for k, v in scenes[i].items() if k != "switch"} for i in idx]
        err = err * outline_weights(firsts, 1, args.image_outline_weight)
    return err.mean()
