"""Train the kino-tiny text encoder (umT5 arch) + causal Wan DiT on VAE latents (resumable).

  python3 tools/train/train_dit.py --data DIR --vae CKPT --steps N [objectives]   # recipe.toml's DiT phases

Objectives (docs/MODEL.md, "Training"; tools/train/NOTES.md says why each is there):
  * flow matching: x_s = (1 - s) x0 + s eps, t = 1000 s; s = shift(u), u ~ U(0,1), shift 3 (the
    sampler's); the DiT predicts x0 (CFG "prediction"), the loss is on the velocity it implies,
    ((x0_pred - x0) / max(s, 0.25))^2;
  * diffusion forcing over chunks: every chunk (1 latent frame) of a clip gets its own noise level;
  * teacher forcing layout (what streaming inference sees): the sequence is [clean frames 0..F-1
    (t = 0), noisy frames 0..F-1 (per-frame t)]; clean frames attend block-causally to clean frames
    (= the context pass that fills the KV cache), a noisy frame attends to the clean frames of the
    previous chunks (window of 4 chunks incl. itself, plus the sink) and to its own chunk (= a
    denoising step); temporal RoPE position of both copies of frame f is f; loss on the noisy frames;
  * the first chunk weighs more: with clean previous frames in view, frames 1.. mostly learn to carry
    the scene on and only frame 0 learns to make an object from noise, so frame 0's loss weighs
    --first-frame-weight times more and each step adds --image-bs single first frames of other clips
    (text-to-image: exactly the first streaming chunk, no past; image_loss);
  * context noise: streaming conditions each chunk on the model's own earlier chunks, never as clean
    as a training clip, so half of the context frames carry noise up to --ctx-noise (their t says
    so); the server's context pass stays at t = 0;
  * captions from randomised templates each step; --drop of them empty (classifier-free guidance);
  * prompt switches: the frames before/after a clip's switch are conditioned on the caption
    before/after (per-frame context in cross-attention), as the server does when the prompt changes
    between chunks; a gradual switch over N latent frames (render.switch_progress) conditions each
    on the two captions' text-encoder outputs mixed at its progress, as the server mixes them over a
    transition of N chunks; those frames weigh --switch-weight times more; --ramp-share of each
    batch are gradual switches, --ramp-color-share of those change the object's color;
  * circle twins: --twin-share of the first frames and --twin-clip-share of the clips get as their
    noised input, at sigma 0.2-0.6, the same scene drawn with circles and as the target the true
    shapes: sampling ends on a round blob that the caption's shape word (frame 0) or the past's
    shape (later chunks) must sharpen, which a noised true frame never asks; --twin-ctx-share of
    those clips show the circle twin as their past too (the sink frames stay true, so the shape must
    come from the sink or the caption), --twin-star-share of them have a star;
  * own past: --own-past-share of the clips see as their past the DiT's own continuation of their
    true frames (own_past), the target staying the true clip; --own-input-share of those also start
    from that continuation. A stream's past is its own output, whose shapes round off chunk by chunk;
  * continuation path: --ramp-cont-share of the ramp clips and --cont-share of the later clips have
    their frames after the first noised on the path a continuing chunk's sampling takes from the
    frame before (continuation_path), as the stream starts such a chunk from its predecessor;
    --cont-switch-share of those are hard prompt switches, whose first chunk the stream also starts
    from its predecessor. Trained only on their own targets noised, continuing chunks read the
    predecessor as the answer (a red predecessor under a 1/3-blue caption stays red, then jumps);
  * outline weight: --outline-weight (--image-outline-weight for the first frames) adds loss weight
    to the latent cells an object's outline crosses (outline_weights), where a star differs from a blob;
    --image-star-share of the first frames have a star (the shape drawn least);
  * image-to-video: --first-frame-share of the clips have their first frame given, as a stream that
    starts from a client's image commits that image's latent as its first chunk (one latent frame)
    without denoising it: frame 0 is clean in the past and out of the loss, the later frames start
    from it on the continuation path, and --motion-caption-share of those captions say only how the
    objects move ("moving right": color and shape must come from the frame);
  * attention sink (--sink-chunks): every frame also sees clean frame 0 past the window, as the
    server's KV cache keeps its sink; --sink-far-share of the steps move the frames after the sink
    far later (sink_far_positions), so the sink's distance is not always 1-7 as in a training clip;
  * FFN/text-MLP GELU: the erf form while training (3x faster on CPU, < 5e-4 from the tanh form);
    evaluation, export and the server use Wan's tanh form;
  * learning rate: linear warmup, constant, then a linear decay to 5 % from --decay-start to
    --decay-end (the phase's last step);
  * sizes: --data may hold shards of several clip sizes (encode_data.py --size); each step draws
    one size (--size-weights; default: in proportion to its clips) and builds its whole batch, first
    frames included, from that size's clips, the shares above applying within it;
  * teacher (--teacher, distill.py): steps at the teacher's own sizes score every clip but the given
    first frames' against the frozen teacher's prediction on the same inputs instead of the data, so a
    branch teaching new sizes or first frames keeps what the teacher does at its sizes;
  * AdamW, bf16 autocast, EMA of weights; checkpoints every few minutes (atomic) and on SIGTERM.
"""
import argparse
import signal
import time

import numpy as np
import torch

import common
from common import CFG
from dit_batches import batch_plan, load_data, size_weights
from dit_objectives import (circle_twins, continuation_path, flow_error, frame_contexts, image_loss, outline_weights,
                            own_past, sink_far_positions)
from distill import load_teacher, predict, teacher_x0
from networks import build, load_vae, make_optimizer
from schedule import continuation_sigma, shift_sigma
import tokenizer as tokmod
import wan_dit

import captions  # noqa: E402
import render  # noqa: E402


def learning_rate(args, step):
    """Warmup, constant, then linear decay to 5 % between --decay-start and --decay-end."""
    decay = (step - args.decay_start) / max(1, args.decay_end - args.decay_start)
    return args.lr * min(1.0, (step + 1) / args.warmup) * (1.0 - 0.95 * min(1.0, max(0.0, decay)))


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40000, help="the step to train to")
    ap.add_argument("--bs", type=int, default=32)
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--warmup", type=int, default=500)
    ap.add_argument("--decay-start", type=int, default=15000, help="step where the lr starts to decay")
    ap.add_argument("--decay-end", type=int, default=19000, help="step where the lr reaches 5 %% of --lr")
    ap.add_argument("--ema", type=float, default=0.999)
    ap.add_argument("--sink-chunks", type=int, default=CFG["sink_chunks"],
                    help="chunks at a stream's start every later frame attends to (the attention sink; 0: none)")
    ap.add_argument("--first-frame-weight", type=float, default=4.0, help="loss weight of latent frame 0")
    ap.add_argument("--switch-weight", type=float, default=4.0,
                    help="loss weight of the latent frames of a prompt switch")
    ap.add_argument("--ramp-share", type=float, default=0.0,
                    help="share of each batch drawn from the gradual-switch clips")
    ap.add_argument("--ramp-cont-share", type=float, default=0.0,
                    help="share of the ramp clips whose later frames are noised on a continuing chunk's path (continuation_path)")
    ap.add_argument("--ramp-color-share", type=float, default=0.0,
                    help="share of the ramp clips drawn from the object-color ramps")
    ap.add_argument("--cont-share", type=float, default=0.0,
                    help="share of the clips after the ramps and own-past ones drawn from the plain clips and noised on that path")
    ap.add_argument("--cont-switch-share", type=float, default=0.0,
                    help="share of those continuation-path clips drawn from the hard (one-chunk) prompt switches")
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
    ap.add_argument("--image-star-share", type=float, default=0.0,
                    help="share of the first-frame objective's frames drawn from the clips with a star")
    ap.add_argument("--sink-far-share", type=float, default=0.25,
                    help="with an attention sink: share of the steps whose sink lies far back (sink_far_positions)")
    ap.add_argument("--shards", type=int, default=None, help="load only the first N data shards")
    ap.add_argument("--size-weights", default=None,
                    help='with shards of several sizes: each size\'s chance per step, "WxH:w,..." '
                         "(default: in proportion to its clips)")
    ap.add_argument("--image-bs", type=int, default=32, help="extra single-first-frame samples per step")
    ap.add_argument("--first-frame-share", type=float, default=0.0,
                    help="clips whose first frame is given (image-to-video): clean in the past, out of the loss, "
                         "the rest continuing from it; --motion-caption-share of them captioned with the motion alone")
    ap.add_argument("--motion-caption-share", type=float, default=0.75)
    ap.add_argument("--ctx-noise", type=float, default=0.2, help="largest noise level of a context frame")
    ap.add_argument("--drop", type=float, default=0.1, help="caption dropout (CFG)")
    ap.add_argument("--save-every", type=float, default=300, help="seconds")
    ap.add_argument("--data", default=f"{common.BUILD}/data")
    ap.add_argument("--vae", default=None, help="the VAE checkpoint --data was encoded with (encode_data.py --vae); "
                    "the circle twins are encoded with it too")
    ap.add_argument("--out", default=f"{common.BUILD}/dit")
    ap.add_argument("--init", default=None,
                    help="a DiT checkpoint to start from when --out has none (a branch off another phase's DiT)")
    ap.add_argument("--teacher", default=None,
                    help="a DiT checkpoint whose predictions are the targets at its own sizes (distill.py)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--bench", type=int, default=0, help="time N steps on random latents and exit")
    return ap.parse_args()


def main():
    args = parse_args()
    CFG["sink_chunks"] = args.sink_chunks  # saved with each checkpoint: sampling and export follow it
    common.setup_torch(args.threads)
    wan_dit.TanhGELU.fast = True
    seed = CFG["seed"]
    tok = tokmod.default_tokenizer()
    dit, text = build(tok)
    if args.twin_share or args.twin_clip_share:
        args.twin_vae = load_vae(args.vae)
    teacher = load_teacher(args.teacher, tok) if args.teacher else None
    if teacher:
        print(f"teacher: {args.teacher} (step {teacher.step}) at " + ", ".join(f"{w_}x{h_}" for w_, h_ in sorted(teacher.sizes)))
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
    if ck is None and args.init and not args.bench:
        ck = common.load_ckpt(args.init)
        print(f"starting from {args.init}")
    if ck is not None:
        dit.load_state_dict(ck["dit"])
        text.load_state_dict(ck["text"])
        ema_dit.model.load_state_dict(ck["ema_dit"])
        ema_text.model.load_state_dict(ck["ema_text"])
        step = ck["step"]
        ema_start = ck.get("ema_start", 0)
        if "opt" in ck:
            opt.load_state_dict(ck["opt"])
        else:  # a blend (blend.py) has no optimizer state of its own: Adam and the EMA start anew
            ema_start = step
        CFG["native_sizes"] = ck["cfg"].get("native_sizes", CFG["native_sizes"])
        CFG["first_frame"] = ck["cfg"].get("first_frame", False)
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
        rng0 = np.random.default_rng(0)
        data = {(render.SIZE, render.SIZE): (
            torch.randn(args.bs * 4, z, F_, hw, hw).half(),
            [render.sample_scene(rng0, switch_prob=0.25, ramp_prob=0.5) for _ in range(args.bs * 4)])}
    else:
        data = load_data(args.data, args.shards)
        for (w_, h_), (lat, _) in data.items():
            print(f"data {w_}x{h_}: {lat.shape[0]} clips, latents {tuple(lat.shape[1:])}")
    sizes = list(data)
    for w_, h_ in sizes:  # saved with each checkpoint (CFG): export.py declares them
        if f"{w_}x{h_}" not in CFG["native_sizes"]:
            CFG["native_sizes"] = CFG["native_sizes"] + [f"{w_}x{h_}"]
    if args.first_frame_share:
        CFG["first_frame"] = True
    plans = [batch_plan(lat, scenes, args) for lat, scenes in data.values()]
    chance = size_weights(sizes, plans, args.size_weights)
    if len(sizes) > 1:
        print("sizes per step: " + ", ".join(f"{w_}x{h_} {c:.2f}" for (w_, h_), c in zip(sizes, chance)))
    cont_sigma = continuation_sigma()

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
        # the step's size (its own generator: a run on one size draws as before sizes)
        k_size = int(np.random.default_rng([seed, 5, step]).choice(len(plans), p=chance)) if len(plans) > 1 else 0
        bp = plans[k_size]
        distill = teacher is not None and sizes[k_size] in teacher.sizes
        lat, scenes = bp.lat, bp.scenes
        n_ramp, n_ramp_cont, n_ramp_color, n_own, n_own_in = bp.n_ramp, bp.n_ramp_cont, bp.n_ramp_color, bp.n_own, bp.n_own_in
        n_twin, n_twin_ctx, n_twin_star, n_cont, n_cont_switch = bp.n_twin, bp.n_twin_ctx, bp.n_twin_star, bp.n_cont, bp.n_cont_switch
        ramps, color_ramps, plain, hard_switches, stars = bp.ramps, bp.color_ramps, bp.plain, bp.hard_switches, bp.stars
        own, cont, given = bp.own, bp.cont, bp.given
        args.star_scenes = bp.star_scenes
        rng = np.random.default_rng([seed, 3, step])
        gen = torch.Generator().manual_seed(seed * 13 + step)
        frame_pos = near_pos
        if CFG["sink_chunks"] and rng.random() < args.sink_far_share:
            frame_pos = sink_far_positions(near_pos, F_, K * CFG["sink_chunks"], rng)
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
        if bp.n_given:
            idx[given] = rng.choice(plain, bp.n_given)
        if n_twin:
            idx[-n_twin:] = rng.choice(plain, n_twin)
            if n_twin_star and len(stars):
                idx[-n_twin:][:n_twin_star] = rng.choice(stars, n_twin_star)
        x0 = lat[torch.from_numpy(idx)].float()
        pairs = [("", "") if rng.random() < args.drop else captions.caption_pair(scenes[i], rng) for i in idx]
        for b in range(given.start, given.stop):  # an image-to-video prompt often says only how things move
            if pairs[b][0] and rng.random() < args.motion_caption_share:
                pairs[b] = (captions.motion_caption(scenes[idx[b]], rng),) * 2
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
        for r in (slice(0, n_ramp_cont), cont, given):  # chunks as the stream starts them: from their predecessor
            if r.stop > r.start:
                xt[r, :, 1:], sigma[r, 1:] = continuation_path(x0[r], eps[r], cont_sigma, gen)
        s5 = sigma[:, None, :, None, None]
        # context noise: half of the context frames carry noise up to --ctx-noise (and say so in t)
        s_ctx = torch.rand(args.bs, F_, generator=gen) * args.ctx_noise * (torch.rand(args.bs, F_, generator=gen) < 0.5)
        s_ctx[given, 0] = 0.0  # the given frame is committed as it was encoded
        c5 = s_ctx[:, None, :, None, None]
        past = x0.clone() if n_twin_ctx or n_own else x0
        if n_twin_ctx:  # (the sink, when there is one, keeps the true shapes: where the stream must find them)
            keep = K * CFG["sink_chunks"]
            past[-n_twin_ctx:, :, keep:] = src[-n_twin_ctx:, :, keep:]
        if n_own:
            past[own] = mine
        x_ctx = (1 - c5) * past + c5 * torch.randn(x0.shape, generator=gen)
        t = torch.cat([s_ctx * 1000.0, sigma * 1000.0], dim=1)
        x_in = torch.cat([x_ctx, xt], dim=2)
        dit_kw = dict(frame_pos=frame_pos, frame_mask=mask, frame_ctx=fctx)
        out = predict(dit, text, tok, prompts, text_len, x_in, t, mix, **dit_kw)
        target = x0
        if distill:  # the teacher's answer wherever it already knows one: all but the given first frames
            target = teacher_x0(teacher, tok, prompts, text_len, x_in, t, mix, **dit_kw)[:, :, F_:]
            target[given] = x0[given]
        err = flow_error(out[:, :, F_:].float(), target, eps, s5)
        if args.outline_weight:
            err = err * outline_weights([scenes[i] for i in idx], F_, args.outline_weight)
        w = frame_w.repeat(args.bs, 1)
        w[given, 0] = 0.0  # the given frame is the stream's first chunk: never denoised
        for b, sw in enumerate(switches):  # the frames of a switch, up to the first showing the new scene alone
            if sw is not None:
                w[b, sw["latent"]:render.splice_latent(sw) + 1] *= args.switch_weight
        loss = (err.mean(dim=(1, 3, 4)) * w).sum(dim=1).mean() / frame_w.sum()
        if args.image_bs:
            loss = (loss + image_loss(dit, text, tok, lat, scenes, rng, gen, args, text_len,
                                      teacher if distill else None)) / 2
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
            common.report(log, "dit", step, losses, lr, gn, t_run / n_steps_here,
                          f", {(time.time() - t_start) / 60:.1f} min")
            losses = []
        if time.time() - last_save > args.save_every:
            save()
            last_save = time.time()
    if not args.bench:
        save()
        if n_steps_here:
            print(f"dit stopped at step {step}: {n_steps_here} steps here, {t_run / n_steps_here:.2f} s/step", flush=True)


if __name__ == "__main__":
    main()
