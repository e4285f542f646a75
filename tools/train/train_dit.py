"""Train the kino-tiny text encoder (umT5 arch) + causal Wan DiT on VAE latents (resumable).

  python3 tools/train/train_dit.py --steps 40000

Recipe (see docs/MODEL.md):
  * flow matching: x_s = (1 - s) x0 + s eps, t = 1000 s; s = shift(u), u ~ U(0,1),
    shift(u) = 3u / (1 + 2u) (the same shift as the sampler); the DiT predicts x0 (CFG "prediction"),
    the loss is on the velocity it implies, ((x0_pred - x0) / max(s, 0.25))^2;
  * diffusion forcing over chunks: every chunk (1 latent frame) of a clip gets its own noise level;
  * teacher forcing layout (what streaming inference sees): the sequence is [clean frames 0..F-1
    (t = 0), noisy frames 0..F-1 (per-frame t)]; clean frames attend block-causally to clean frames
    (= the context pass that fills the KV cache), a noisy frame attends to the clean frames of the
    previous chunks (window of 4 chunks incl. itself) and to its own chunk (= a denoising step);
    temporal RoPE position of both copies of frame f is f; loss on the noisy frames only;
  * the first chunk matters most: with clean previous frames in view, frames 1.. mostly learn to carry
    the scene on, and only frame 0 learns to make an object from noise (after 4300 steps of uniform
    weighting, frame 0 -- and so every sample -- had a background and no object). So frame 0's loss
    weighs --first-frame-weight times more, and each step adds --image-bs single first frames
    (text-to-image: exactly the first streaming chunk, no past) of other clips;
  * context noise: streaming conditions each chunk on the model's own earlier chunks, never as clean
    as the training clips, and a model trained on perfect context alone copied its own errors until
    the objects fell apart into colored patches within 8 chunks. So half of the context frames get
    noise of a level up to --ctx-noise (their t says it); the server's context pass stays at t = 0;
  * captions from randomised templates each step; 10% dropped to the empty prompt ([eos] only) for
    classifier-free guidance;
  * prompt switches: 25% of the clips change one attribute (object color/shape or background) at a
    latent-frame boundary; the frames before/after it are conditioned on the caption before/after
    (per-frame context in cross-attention, the clean and noisy copies alike), which is what the
    server does when the prompt changes between chunks; a gradual switch over N latent frames
    (render.switch_progress) conditions each of them on the two captions' text-encoder outputs
    mixed at its progress, as the server mixes them over a transition of N chunks; those frames weigh
    --switch-weight times more (from step 22000: the first chunk after a red -> blue switch still
    came out green-cyan, the DiT hedging between the context's object and the caption's);
    --ramp-share draws that share of each batch from the gradual switches (from step 27257: the
    middle chunk of a red -> blue transition over 3 chunks still came out cyan or green, even after
    a clean red past; caption mixes after a past are the rarest inputs. It helped a little only);
  * circle twins (experiments from step 36000, docs/MODEL-LOG.md "Shape"): --twin-share of the first
    frames and --twin-clip-share of the clips get as their noised input, at sigma 0.2-0.6, the same
    scene drawn with circles and as the target the true shapes: sampling ends on a round blob that
    the caption's shape word (frame 0) or the past's shape (later chunks) must sharpen, and a noised
    true frame never needs either; --twin-ctx-share of those clips show the circle twin as their past
    too (from stop 22: a stream's past is its own output, whose shapes round off chunk by chunk, so
    only the caption's shape word can hold them; with an attention sink the sink frames stay true, so
    the round past and a sharp frame 0 teach the DiT to take the shape from the sink), and
    --twin-star-share of them are drawn from the clips with a star (the shape the DiT draws least);
  * own past (from stop 23): --own-past-share of the clips see as their past not their true frames
    but the DiT's own continuation of them (own_past: each frame made from the true frames before it,
    as the stream makes a continuing chunk), the target staying the true clip; --own-input-share of
    those also start from that continuation, noised as a continuing chunk starts. Streaming feeds the
    DiT its own output, whose shapes round off a little each chunk, and with a true past it keeps
    them (a probe: 25 of 40 shapes in the 3rd chunk against 13 after its own);
  * star share (from stop 26): --stream-star-share of the clips after the ramps (the own-past ones
    first) are drawn from the plain clips with a star, and --image-star-share of the first-frame
    objective's frames: the held-out stars are lost in frame 0 and in the continuing chunks alike;
  * continuation path (from stop 30): --ramp-cont-share of the ramp clips have their frames after the
    first noised not from themselves but on the path a continuing chunk's sampling takes from the
    frame before (continuation_path): the stream starts such a chunk from its predecessor's latent
    noised to the continuation sigma, and a DiT that only ever saw its target noised read the red
    predecessor as "red" under a 1/3-blue caption and jumped to blue at 2/3 (docs/MODEL-LOG.md, "Stop 30");
    --cont-share of the clips after the ramps and the own-past ones are plain clips noised so too: every
    continuing chunk of a stream starts from its predecessor, a moved object included;
    --cont-switch-share of those (from stop 34) are hard prompt switches instead: the first chunk after
    a transition_chunks 0 update starts from its predecessor too, and such clips were only ever
    noised from themselves (the hard switch's first chunk landed at the edge of cyan);
  * color ramps (from stop 31): --ramp-color-share of the ramp clips are drawn from the object-color
    ramps. A transition's middle chunks missed the cross-fade's color by 25-65 degrees of hue for
    every pair probed, even with a true past. It did not help the 3-chunk transition (it helped the
    hard switch): the ramps' target latents are off themselves, the VAE having never seen a
    cross-fade (train_vae.py --ramp-prob; docs/MODEL-LOG.md, "Stop 31");
  * outline weight (from stop 23): --outline-weight adds that much loss weight to the latent cells
    an object's outline crosses (outline_weights), where a star differs from a blob;
  * attention sink (from stop 28, KINO_DIT_SINK=1): every frame also sees clean frame 0 past the
    window, as the server's KV cache keeps its sink; the shapes a stream draws in frame 0 rounded off
    chunk by chunk once frame 0 left the window, and the export sampled with a sink (no training)
    kept more of them (shape 53 -> 59 %) but pulled the objects back to where frame 0 had them
    (motion 86 -> 37 %). --sink-far-share of the steps move the frames after the sink far later
    (sink_far_positions), so the sink's distance does not have to be 1-7 as in a training clip;
  * FFN/text-MLP GELU: the erf form while training (3x faster on CPU, < 5e-4 from the tanh form);
    evaluation, export and the server use Wan's tanh form.
  * learning rate: linear warmup, constant, then a linear decay to 5 % from --decay-start to
    --decay-end (the planned last step): the accuracy climbs that a constant rate leaves on the table;
  * AdamW, bf16 autocast, EMA of weights; checkpoints every few minutes (atomic) in build/train/dit/.
"""
import argparse
import copy
import glob
import math
import signal
import time

import numpy as np
import torch
import torch.nn as nn

import common
from common import CFG
import tokenizer as tokmod
import wan_dit

import render  # noqa: E402


def learning_rate(args, step):
    """Warmup, constant, then linear decay to 5 % between --decay-start and --decay-end."""
    decay = (step - args.decay_start) / max(1, args.decay_end - args.decay_start)
    return args.lr * min(1.0, (step + 1) / args.warmup) * (1.0 - 0.95 * min(1.0, max(0.0, decay)))


def init_dit(m):
    for mod in m.modules():
        if isinstance(mod, nn.Linear):
            nn.init.xavier_uniform_(mod.weight)
            if mod.bias is not None:
                nn.init.zeros_(mod.bias)
    nn.init.xavier_uniform_(m.patch_embedding.weight.flatten(1))
    nn.init.zeros_(m.patch_embedding.bias)
    for mod in m.text_embedding.modules():
        if isinstance(mod, nn.Linear):
            nn.init.normal_(mod.weight, std=0.02)
    for mod in m.time_embedding.modules():
        if isinstance(mod, nn.Linear):
            nn.init.normal_(mod.weight, std=0.02)
    nn.init.zeros_(m.head.head.weight)


def init_t5(m):
    for mod in m.modules():
        if mod.__class__.__name__ == "T5Attention":
            nn.init.normal_(mod.q.weight, std=(mod.dim * mod.dim_attn) ** -0.5)
            nn.init.normal_(mod.k.weight, std=mod.dim ** -0.5)
            nn.init.normal_(mod.v.weight, std=mod.dim ** -0.5)
            nn.init.normal_(mod.o.weight, std=(mod.num_heads * mod.dim_attn) ** -0.5)
        elif mod.__class__.__name__ == "T5FeedForward":
            nn.init.normal_(mod.gate[0].weight, std=mod.dim ** -0.5)
            nn.init.normal_(mod.fc1.weight, std=mod.dim ** -0.5)
            nn.init.normal_(mod.fc2.weight, std=mod.dim_ffn ** -0.5)
        elif mod.__class__.__name__ == "T5RelativeEmbedding":
            nn.init.normal_(mod.embedding.weight, std=(2 * mod.num_buckets * mod.num_heads) ** -0.5)


class TextModel(nn.Module):
    """tokenizer ids -> context rows (T5 output on real tokens, pad rows zero)."""

    def __init__(self, tok):
        super().__init__()
        self.t5 = common.t5_model(len(tok))
        init_t5(self.t5)

    def forward(self, ids, mask):
        return self.t5(ids, mask) * mask[..., None].to(torch.float32)


def encode_prompts(text_model, tok, prompts, text_len):
    ids = [tok.encode(p, text_len) for p in prompts]
    L = max(len(i) for i in ids)
    t = torch.zeros(len(ids), L, dtype=torch.long)
    m = torch.zeros(len(ids), L, dtype=torch.long)
    for k, i in enumerate(ids):
        t[k, :len(i)] = torch.tensor(i)
        m[k, :len(i)] = 1
    return text_model(t, m)


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


def shift_sigma(u, shift):
    return shift * u / (1 + (shift - 1) * u)


def continuation_sigma():
    """The noise level a continuing chunk starts at (the sampler's schedule at continuation_start)."""
    import sample  # (imports this module)
    start = sample.continuation_start(CFG["sample_steps"], CFG["continuation_strength"])
    return sample.sampler_sigmas(CFG["sample_steps"], CFG["shift"])[start]


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
    sigma floored at 0.25 (the 4-step sampler never evaluates below 0.5) so that rare tiny sigmas do
    not dominate the gradient; v prediction against v = eps - x0."""
    if CFG["prediction"] == "sample":
        return ((pred - x0) / s5.clamp(min=0.25)).pow(2)
    return (pred - (eps - x0)).pow(2)


@torch.no_grad()
def circle_twins(vae, scenes, frames=1):
    """Latents of the first `frames` video frames of each scene with every object drawn as a circle
    (same place, size, color, motion). Sampling reaches its last steps holding a round blob that the
    caption's shape word (or, in a stream, the shape of the past frames) must turn into a star or a
    ring; a noised true frame always already shows the outline, so neither is ever needed in
    training (at step 36000 the DiT drew circles for every shape word)."""
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
def own_past(dit, text, tok, x0, prompts, gen, text_len, mask, frame_pos):
    """Every latent frame f >= 1 of clean clips x0 [B, C, F, H, W] made as the stream makes a
    continuing chunk (from frame f-1 noised to the continuation's sigma, the last steps of the
    sampler's schedule with its guidance) with the true frames before it as the past; frame 0 stays
    true. A stream's past is its own output, and a probe (docs/MODEL-LOG.md, "Stop 23") found that
    shapes the DiT keeps over 8 chunks after a true past are lost after its own: these frames are
    the past the stream has, one chunk's errors deep."""
    import sample  # (imports this module)
    F_ = x0.shape[2]
    sig = sample.sampler_sigmas(CFG["sample_steps"], CFG["shift"])
    start = sample.continuation_start(CFG["sample_steps"], CFG["continuation_strength"])
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
            pc = dit(both, t, cond, frame_pos=frame_pos, frame_mask=mask)[:, :, F_:].float()
            pu = dit(both, t, uncond, frame_pos=frame_pos, frame_mask=mask)[:, :, F_:].float()
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
    in a few cells of a frame — so the plain loss spends little on it (docs/MODEL-LOG.md, "Stop 23")."""
    S, T = render.SIZE, render.T_STRIDE
    hw = common.latent_hw()
    cell = S // hw
    xx, yy = np.meshgrid(np.arange(S) + 0.5, np.arange(S) + 0.5)
    out = np.zeros((len(scenes), 1, frames, hw, hw), np.float32)
    for b, sc in enumerate(scenes):
        versions = [sc] + ([render.switched(sc)] if "switch" in sc else [])
        for f in range(frames):
            near = np.zeros((S, S), bool)
            for k in ([0] if f == 0 else range(T * (f - 1) + 1, T * f + 1)):
                for v in versions:
                    for o in v["objects"]:
                        cx, cy, r, ang = render.object_state(o, v.get("t0", 0) + k)
                        near |= np.abs(render.shape_sdf(o["shape"], xx, yy, cx, cy, r, ang)) < band
            out[b, 0, f] = near.reshape(hw, cell, hw, cell).any(axis=(1, 3))
    return torch.from_numpy(1.0 + weight * out)


def image_loss(dit, text, tok, lat, scenes, rng, gen, args, text_len):
    """The first-chunk objective: latent frame 0 of other clips, generated from noise with no past."""
    idx = rng.integers(0, lat.shape[0], args.image_bs)
    n_star = int(round(args.image_star_share * args.image_bs))
    if n_star:  # a stream's stars are lost first in its frame 0 (docs/MODEL-LOG.md, "Stop 25")
        idx[:n_star] = rng.choice(args.star_scenes, n_star)
    x0 = lat[torch.from_numpy(idx), :, :1].float()
    prompts = ["" if rng.random() < args.drop else render.caption_pair(scenes[i], rng)[0] for i in idx]
    u = torch.rand(args.image_bs, generator=gen)
    if args.image_sigmas:  # a band of noise levels only (experiments on where the caption must decide)
        lo, hi = (float(v) for v in args.image_sigmas.split(","))
        sigma = lo + (hi - lo) * u
    else:
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
    err = flow_error(pred, x0, eps, s5)
    if args.image_outline_weight:  # frame 0 shows the scene before any switch
        firsts = [{k: v for k, v in scenes[i].items() if k != "switch"} for i in idx]
        err = err * outline_weights(firsts, 1, args.image_outline_weight)
    return err.mean()


def load_data(path, max_shards=None):
    files = sorted(glob.glob(f"{path}/shard_*.pt"))
    if max_shards:
        files = files[:max_shards]
    lats, scenes = [], []
    for f in files:
        d = torch.load(f)
        lats.append(d["latents"])
        scenes.extend(d["scenes"])
    return torch.cat(lats), scenes


def make_optimizer(dit, text, lr):
    """AdamW; no weight decay on biases, norms, modulation tables and embeddings."""
    decay, no_decay = [], []
    for mod in (dit, text):
        for n, p in mod.named_parameters():
            (no_decay if p.dim() < 2 or "modulation" in n or "embedding" in n else decay).append(p)
    return torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                             lr=lr, betas=(0.9, 0.99))


def save_restart_ckpt(path, dit_sd, text_sd, step, tok):
    """A checkpoint that resumes at `step` from the given weights with a fresh optimizer and the EMA
    restarted there (repatch.py, import_model.py, keep_state.py). The weights serve as both the
    trained and the EMA copy (torch.save stores a tensor shared by two entries once)."""
    dit, text = build(tok)
    opt = make_optimizer(dit, text, 0.0)
    common.save_ckpt(path, {"dit": dit_sd, "text": text_sd, "ema_dit": dit_sd, "ema_text": text_sd,
                            "opt": opt.state_dict(), "step": step, "ema_start": step, "cfg": CFG,
                            "vocab": tok.vocab})


def build(tok):
    torch.manual_seed(CFG["seed"])
    dit = common.dit_model()
    init_dit(dit)
    text = TextModel(tok)
    return dit, text


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40000)
    ap.add_argument("--bs", type=int, default=32)
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--warmup", type=int, default=500)
    ap.add_argument("--decay-start", type=int, default=15000, help="step where the lr starts to decay")
    ap.add_argument("--decay-end", type=int, default=19000, help="step where the lr reaches 5 %% of --lr")
    ap.add_argument("--ema", type=float, default=0.999)
    ap.add_argument("--first-frame-weight", type=float, default=4.0, help="loss weight of latent frame 0")
    ap.add_argument("--switch-weight", type=float, default=4.0,
                    help="loss weight of the latent frames of a prompt switch (from step 22000)")
    ap.add_argument("--ramp-share", type=float, default=0.0,
                    help="share of each batch drawn from the gradual-switch clips (from step 27257)")
    ap.add_argument("--ramp-cont-share", type=float, default=0.0,
                    help="share of the ramp clips whose later frames are noised on a continuing chunk's path (continuation_path)")
    ap.add_argument("--ramp-color-share", type=float, default=0.0,
                    help="share of the ramp clips drawn from the object-color ramps (from stop 31)")
    ap.add_argument("--cont-share", type=float, default=0.0,
                    help="share of the clips after the ramps and own-past ones drawn from the plain clips and noised on that path")
    ap.add_argument("--cont-switch-share", type=float, default=0.0,
                    help="share of those continuation-path clips drawn from the hard (one-chunk) prompt switches (from stop 34)")
    ap.add_argument("--image-only", action="store_true",
                    help="train text-to-image on first frames alone (experiments on what the DiT can learn per frame)")
    ap.add_argument("--image-sigmas", default=None, help="LO,HI: the first-frame objective's noise levels uniform in a band")
    ap.add_argument("--twin-share", type=float, default=0.0,
                    help="share of the first frames whose noised input is their circle twin (circle_twins)")
    ap.add_argument("--twin-clip-share", type=float, default=0.0,
                    help="share of the clips whose noised latents are their whole circle twin's, at sigma 0.2-0.6")
    ap.add_argument("--twin-ctx-share", type=float, default=0.0,
                    help="share of the twin clips whose context (clean past) frames are the circle twin too")
    ap.add_argument("--twin-star-share", type=float, default=0.0,
                    help="share of the twin clips drawn from the plain clips with a star")
    ap.add_argument("--own-past-share", type=float, default=0.0,
                    help="share of the clips whose past is the DiT's own continuation of their true frames (own_past)")
    ap.add_argument("--own-input-share", type=float, default=0.0,
                    help="share of those whose noised input is that own continuation too, at sigma 0.2-0.75")
    ap.add_argument("--outline-weight", type=float, default=0.0,
                    help="extra loss weight of the latent cells an object's outline crosses (outline_weights)")
    ap.add_argument("--image-outline-weight", type=float, default=0.0,
                    help="--outline-weight for the first-frame objective's frames")
    ap.add_argument("--stream-star-share", type=float, default=0.0,
                    help="share of the clips between the ramps and the twins (own-past ones first) drawn from the clips with a star")
    ap.add_argument("--image-star-share", type=float, default=0.0,
                    help="share of the first-frame objective's frames drawn from the clips with a star")
    ap.add_argument("--sink-far-share", type=float, default=0.25,
                    help="with an attention sink: share of the steps whose sink lies far back (sink_far_positions)")
    ap.add_argument("--shards", type=int, default=None, help="load only the first N data shards")
    ap.add_argument("--image-bs", type=int, default=32, help="extra single-first-frame samples per step")
    ap.add_argument("--ctx-noise", type=float, default=0.2, help="largest noise level of a context frame")
    ap.add_argument("--drop", type=float, default=0.1, help="caption dropout (CFG)")
    ap.add_argument("--save-every", type=float, default=300, help="seconds")
    ap.add_argument("--data", default=f"{common.BUILD}/data")
    ap.add_argument("--vae", default=None, help="the VAE checkpoint --data was encoded with (encode_data.py --vae); "
                    "the circle twins are encoded with it too")
    ap.add_argument("--out", default=f"{common.BUILD}/dit")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--bench", type=int, default=0, help="time N steps on random latents and exit")
    args = ap.parse_args()
    common.setup_torch(args.threads)
    wan_dit.TanhGELU.fast = True
    seed = CFG["seed"]
    tok = tokmod.default_tokenizer()
    dit, text = build(tok)
    if args.twin_share or args.twin_clip_share:
        import sample  # (imports this module)
        args.twin_vae = sample.load_vae(args.vae)
    params = list(dit.parameters()) + list(text.parameters())
    n_dit = sum(p.numel() for p in dit.parameters())
    n_t5 = sum(p.numel() for p in text.parameters())
    print(f"DiT params {n_dit / 1e6:.2f}M, text encoder {n_t5 / 1e6:.3f}M")
    opt = make_optimizer(dit, text, args.lr)
    ema_dit = common.EMA(dit, args.ema)
    ema_text = common.EMA(text, args.ema)
    ck_path = f"{args.out}/ckpt.pt"
    log = common.Logger(f"{args.out}/log.jsonl")
    step = ema_start = 0
    ck = None if args.bench else common.load_ckpt(ck_path)
    if ck is not None:
        dit.load_state_dict(ck["dit"])
        text.load_state_dict(ck["text"])
        ema_dit.model.load_state_dict(ck["ema_dit"])
        ema_text.model.load_state_dict(ck["ema_text"])
        opt.load_state_dict(ck["opt"])
        step = ck["step"]
        ema_start = ck.get("ema_start", 0)
        print(f"resumed DiT at step {step}")
    if step >= args.steps:
        print("DiT done")
        return

    F_ = CFG["train_latent_frames"]
    K = CFG["chunk_latent_frames"]
    W = CFG["attn_window_chunks"]
    text_len = CFG["dit"]["text_len"]
    mask = wan_dit.teacher_forcing_mask(F_, K, W, CFG["sink_chunks"])
    frame_w = torch.ones(F_)
    frame_w[0] = args.first_frame_weight
    near_pos = torch.cat([torch.arange(F_), torch.arange(F_)])
    if args.bench:
        z = CFG["vae"]["z_dim"]
        hw = common.latent_hw()
        lat = torch.randn(args.bs * 4, z, F_, hw, hw).half()
        rng0 = np.random.default_rng(0)
        scenes = [render.sample_scene(rng0, switch_prob=0.25, ramp_prob=0.5) for _ in range(args.bs * 4)]
    else:
        lat, scenes = load_data(args.data, args.shards)
        print(f"data: {lat.shape[0]} clips, latents {tuple(lat.shape[1:])}")
    ramps = np.array([i for i, sc in enumerate(scenes) if sc.get("switch", {}).get("chunks", 1) > 1])
    n_ramp = int(round(args.ramp_share * args.bs)) if len(ramps) else 0
    n_ramp_cont = int(round(args.ramp_cont_share * n_ramp))  # the first of the ramps
    color_ramps = np.array([i for i in ramps if scenes[i]["switch"]["attr"] == "color"])
    n_ramp_color = int(round(args.ramp_color_share * n_ramp)) if len(color_ramps) else 0  # the first of the ramps
    plain = np.array([i for i, sc in enumerate(scenes) if "switch" not in sc])
    hard_switches = np.array([i for i, sc in enumerate(scenes) if "switch" in sc and sc["switch"].get("chunks", 1) == 1])
    n_twin = int(round(args.twin_clip_share * args.bs))  # the last n_twin clips of a batch
    n_twin_ctx = int(round(args.twin_ctx_share * n_twin))  # the last of those show a circle past too
    n_twin_star = int(round(args.twin_star_share * n_twin))  # the first of those have a star
    stars = np.array([i for i in plain if any(o["shape"] == "star" for o in scenes[i]["objects"])])
    args.star_scenes = np.array([i for i, sc in enumerate(scenes) if any(o["shape"] == "star" for o in sc["objects"])])
    n_own = int(round(args.own_past_share * args.bs))  # the clips after the ramps
    n_own_in = int(round(args.own_input_share * n_own))  # the first of those
    assert n_ramp + n_own + n_twin <= args.bs, "ramp, own-past and twin shares overlap"
    own = slice(n_ramp, n_ramp + n_own)
    n_cont = int(round(args.cont_share * (args.bs - n_ramp - n_own - n_twin)))
    cont = slice(n_ramp + n_own, n_ramp + n_own + n_cont)  # the first after the own-past clips
    n_cont_switch = int(round(args.cont_switch_share * n_cont)) if len(hard_switches) else 0  # the first of those
    cont_sigma = continuation_sigma()
    n_stream_star = int(round(args.stream_star_share * (args.bs - n_ramp - n_twin)))  # the first after the ramps

    stop = {"flag": False}

    def on_term(*_):
        stop["flag"] = True
    signal.signal(signal.SIGTERM, on_term)

    def save():
        common.save_ckpt(ck_path, {"dit": dit.state_dict(), "text": text.state_dict(),
                                   "ema_dit": ema_dit.model.state_dict(), "ema_text": ema_text.model.state_dict(),
                                   "opt": opt.state_dict(), "step": step, "ema_start": ema_start, "cfg": CFG,
                                   "vocab": tok.vocab})

    last_save = time.time()
    t_start = time.time()
    t_run = 0.0
    losses = []
    n_steps_here = 0
    while step < args.steps and not stop["flag"]:
        t_step = time.time()
        lr = learning_rate(args, step)
        for g in opt.param_groups:
            g["lr"] = lr
        rng = np.random.default_rng([seed, 3, step])
        gen = torch.Generator().manual_seed(seed * 13 + step)
        frame_pos = near_pos
        if CFG["sink_chunks"] and rng.random() < args.sink_far_share:
            frame_pos = sink_far_positions(near_pos, F_, K * CFG["sink_chunks"], rng)
        if args.image_only:
            loss = image_loss(dit, text, tok, lat, scenes, rng, gen, args, text_len)
        else:
            idx = rng.integers(0, lat.shape[0], args.bs)
            if n_ramp:
                idx[:n_ramp] = rng.choice(ramps, n_ramp)
                if n_ramp_color:
                    idx[:n_ramp_color] = rng.choice(color_ramps, n_ramp_color)
            if n_own:
                idx[own] = rng.choice(plain, n_own)
            if n_cont:
                idx[cont] = rng.choice(plain, n_cont)
                if n_cont_switch:
                    idx[cont][:n_cont_switch] = rng.choice(hard_switches, n_cont_switch)
            if n_stream_star and len(stars):
                idx[n_ramp:n_ramp + n_stream_star] = rng.choice(stars, n_stream_star)
            if n_twin:
                idx[-n_twin:] = rng.choice(plain, n_twin)
                if n_twin_star and len(stars):
                    idx[-n_twin:][:n_twin_star] = rng.choice(stars, n_twin_star)
            x0 = lat[torch.from_numpy(idx)].float()
            pairs = [("", "") if rng.random() < args.drop else render.caption_pair(scenes[i], rng) for i in idx]
            prompts = [p for pair in pairs for p in pair]
            switches = [scenes[i].get("switch") for i in idx]
            mix, fctx = frame_contexts(switches, F_)
            fctx = torch.cat([fctx, fctx], dim=1)
            u = torch.rand(args.bs, F_, generator=gen)
            sigma = shift_sigma(u, CFG["shift"])
            eps = torch.randn(x0.shape, generator=gen)
            src = x0  # what gets noised
            if n_twin:  # the stream's situation: a round blob at low sigma, the past shows the true shape
                sigma[-n_twin:] = 0.2 + 0.4 * torch.rand(n_twin, F_, generator=gen)
                src = x0.clone()
                src[-n_twin:] = circle_twins(args.twin_vae, [scenes[i] for i in idx[-n_twin:]], scenes[idx[-1]]["frames"])
            if n_own:  # the stream's past: its own continuations, whose shapes have rounded off
                mine = own_past(dit, text, tok, x0[own], [p[0] for p in pairs[own]], gen, text_len, mask, frame_pos)
                if n_own_in:  # ... and the chunk it continues, noised as a continuing chunk starts
                    src = src.clone() if src is x0 else src
                    src[n_ramp:n_ramp + n_own_in] = mine[:n_own_in]
                    sigma[n_ramp:n_ramp + n_own_in, 1:] = 0.2 + 0.55 * torch.rand(n_own_in, F_ - 1, generator=gen)
            s5 = sigma[:, None, :, None, None]
            xt = (1 - s5) * src + s5 * eps
            for r in (slice(0, n_ramp_cont), cont):  # chunks as the stream starts them: from their predecessor
                if r.stop > r.start:
                    xt[r, :, 1:], sigma[r, 1:] = continuation_path(x0[r], eps[r], cont_sigma, gen)
            s5 = sigma[:, None, :, None, None]
            # context noise: half of the context frames carry noise up to --ctx-noise (and say so in t)
            s_ctx = torch.rand(args.bs, F_, generator=gen) * args.ctx_noise * (torch.rand(args.bs, F_, generator=gen) < 0.5)
            c5 = s_ctx[:, None, :, None, None]
            past = x0.clone() if n_twin_ctx or n_own else x0
            if n_twin_ctx:  # (the sink, when there is one, keeps the true shapes: where the stream must find them)
                keep = K * CFG["sink_chunks"]
                past[-n_twin_ctx:, :, keep:] = src[-n_twin_ctx:, :, keep:]
            if n_own:
                past[own] = mine
            x_ctx = (1 - c5) * past + c5 * torch.randn(x0.shape, generator=gen)
            t = torch.cat([s_ctx * 1000.0, sigma * 1000.0], dim=1)
            with torch.autocast("cpu", dtype=torch.bfloat16):
                ctx = encode_prompts(text, tok, prompts, text_len)
                ctx = ctx.view(args.bs, 2, ctx.shape[1], ctx.shape[2])
                ctx = (1 - mix[..., None, None]) * ctx[:, :1] + mix[..., None, None] * ctx[:, 1:]
                out = dit(torch.cat([x_ctx, xt], dim=2), t, ctx, frame_pos=frame_pos, frame_mask=mask, frame_ctx=fctx)
            err = flow_error(out[:, :, F_:].float(), x0, eps, s5)
            if args.outline_weight:
                err = err * outline_weights([scenes[i] for i in idx], F_, args.outline_weight)
            w = frame_w.repeat(args.bs, 1)
            for b, sw in enumerate(switches):  # the frames of a switch, up to the first showing the new scene alone
                if sw is not None:
                    w[b, sw["latent"]:render.splice_latent(sw) + 1] *= args.switch_weight
            loss = (err.mean(dim=(1, 3, 4)) * w).sum(dim=1).mean() / frame_w.sum()
            if args.image_bs:
                loss = (loss + image_loss(dit, text, tok, lat, scenes, rng, gen, args, text_len)) / 2
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        e = step - ema_start  # steps since the EMA (re)started
        d = min(args.ema, (1 + e) / (10 + e))
        ema_dit.update(dit, d)
        ema_text.update(text, d)
        step += 1
        n_steps_here += 1
        t_run += time.time() - t_step
        losses.append(loss.item())
        if args.bench and n_steps_here >= args.bench:
            print(f"bench: {t_run / n_steps_here:.3f} s/step (bs {args.bs}), {args.bs * n_steps_here / t_run:.1f} clips/s")
            return
        if step % 20 == 0:
            log.log(step=step, loss=float(np.mean(losses)), lr=lr, gn=float(gn), s_per_step=t_run / n_steps_here)
            print(f"dit step {step} loss {np.mean(losses):.4f} gn {float(gn):.2f} lr {lr:.2e} "
                  f"{t_run / n_steps_here:.2f} s/step, {(time.time() - t_start) / 60:.1f} min", flush=True)
            losses = []
        if time.time() - last_save > args.save_every:
            save()
            last_save = time.time()
    if not args.bench:
        save()


if __name__ == "__main__":
    main()
