"""Train kino-tiny's image branch (image_branch.py) on streams that start from a given first frame.

  python3 tools/train/train_image.py --init DIT_CKPT --data DIR --out DIR --steps N [--caption-teacher]
                                     [--own-past-share S] [--threads 2]

Every clip of a batch is an image-to-video stream as the server runs one: latent frame 0 is the
client's image, clean in the past (committed without denoising) and out of the loss, and read by
the image branch as its patches; the later frames are noised on the path a continuing chunk's
sampling takes from its predecessor (continuation_path), under the teacher-forcing mask of
train_dit.py; --motion-caption-share of the captions say only how things move ("moving right"),
--drop are empty (the guidance's unconditional stream sees the image too, as in Wan2.1 I2V).

The data alone teach the branch little: under teacher forcing the true past already carries the
object, so the branch is needed only where a stream's own past has drifted, which the data never
show. --caption-teacher makes a captioned clip's target what the frozen DiT predicts for the clip's
whole caption (color and shape words) on the same inputs, so the branch must say from the image what
the caption would; --own-past-share gives that many clips their own continuation as the past
(own_past, with the image), where the whole caption pulls a drifted object back.

Only the branch trains (AdamW, EMA); the DiT and the text encoder are frozen, so --init's
text-to-video model is unchanged. Checkpoints have train_dit.py's layout; sample.py and export.py read them.
"""
import argparse
import signal
import time

import numpy as np
import torch

import common
from common import CFG
from dit_batches import load_data
from dit_objectives import continuation_path, flow_error, own_past
from distill import predict
from image_branch import freeze_all_but_branch, latent_patches, with_image_branch
from networks import TextModel
from schedule import continuation_sigma, shift_sigma
import tokenizer as tokmod
import wan_dit

import captions  # noqa: E402  (tools/data)


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--init", required=True, help="the text-to-video DiT checkpoint the branch is added to")
    ap.add_argument("--data", required=True, help="encoded clips (encode_data.py), any sizes")
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--bs", type=int, default=24)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--decay-start", type=int, default=None,
                    help="the step after which the lr decays linearly to 5 %% at --steps (default: 70 %% of --steps)")
    ap.add_argument("--ema", type=float, default=0.995)
    ap.add_argument("--motion-caption-share", type=float, default=0.75)
    ap.add_argument("--drop", type=float, default=0.1, help="empty captions (the guidance's unconditional stream)")
    ap.add_argument("--ctx-noise", type=float, default=0.2, help="largest noise level of a past frame after the image")
    ap.add_argument("--caption-teacher", action="store_true",
                    help="a captioned clip's target is the frozen DiT's prediction for its whole caption (no image) "
                         "on the same inputs instead of the data")
    ap.add_argument("--own-past-share", type=float, default=0.0,
                    help="clips whose past after the image is their own continuation (own_past, with the image)")
    ap.add_argument("--shards", type=int, default=None)
    ap.add_argument("--save-every", type=float, default=300, help="seconds")
    ap.add_argument("--threads", type=int, default=1)
    return ap.parse_args()


def learning_rate(args, step):
    start = int(0.7 * args.steps) if args.decay_start is None else args.decay_start
    decay = (step - start) / max(1, args.steps - start)
    return args.lr * min(1.0, (step + 1) / args.warmup) * (1.0 - 0.95 * min(1.0, max(0.0, decay)))


def load_start(args, tok):
    """The DiT with its branch, the frozen text encoder, the branch's EMA and the step: resumed from
    --out's checkpoint, else from --init's: continued where it has a branch (a run with another
    objective), else the branch added to its EMA weights."""
    ck = common.load_ckpt(f"{args.out}/ckpt.pt")
    if ck is None:
        ck = common.load_ckpt(args.init)
        if ck is None:
            raise SystemExit(f"--init: no checkpoint at {args.init}")
    # --out's checkpoint, or a checkpoint with a branch given as --init, continued (weights, EMA, optimizer, step)
    resumed = bool(ck["cfg"]["dit"].get("image_dim"))
    CFG["sink_chunks"] = ck["cfg"].get("sink_chunks", CFG["sink_chunks"])
    CFG["native_sizes"] = ck["cfg"].get("native_sizes", CFG["native_sizes"])
    # the frozen DiT's weights (a resumed run's branch comes from its own "dit" below)
    base = {k: v for k, v in ck["ema_dit"].items() if not (resumed and "img" in k)}
    dit = with_image_branch(base)
    if resumed:
        dit.load_state_dict(ck["dit"])
    text = TextModel(tok)
    text.load_state_dict(ck["ema_text"])
    text.eval().requires_grad_(False)
    ema = common.EMA(dit, args.ema)
    if resumed:
        ema.model.load_state_dict(ck["ema_dit"])
    return dit, text, ema, ck, resumed


def main():
    args = parse_args()
    common.setup_torch(args.threads)
    wan_dit.TanhGELU.fast = True
    tok = tokmod.default_tokenizer()
    dit, text, ema, ck, resumed = load_start(args, tok)
    params = freeze_all_but_branch(dit)
    print(f"image branch: {sum(p.numel() for p in params) / 1e6:.3f}M trainable of "
          f"{sum(p.numel() for p in dit.parameters()) / 1e6:.2f}M")
    opt = torch.optim.AdamW([{"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.01},
                             {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.99))
    step = ema_start = 0
    base_step = ck.get("base_step", 0) if resumed else ck.get("step", 0)  # the text-to-video DiT's own steps
    if resumed:
        opt.load_state_dict(ck["opt"])
        step, ema_start = ck["step"], ck["ema_start"]
        print(f"resumed the image branch at step {step}")
    CFG["first_frame"] = True
    F_, K, W = CFG["train_latent_frames"], CFG["chunk_latent_frames"], CFG["attn_window_chunks"]
    text_len = CFG["dit"]["text_len"]
    mask = wan_dit.teacher_forcing_mask(F_, K, W, CFG["sink_chunks"])
    frame_pos = torch.cat([torch.arange(F_), torch.arange(F_)])
    frame_w = torch.ones(F_)
    frame_w[0] = 0.0  # the given frame is never denoised
    data = load_data(args.data, args.shards)
    sizes = list(data)
    plains = [np.array([i for i, sc in enumerate(scenes) if "switch" not in sc]) for _, scenes in data.values()]
    chance = np.array([len(p) for p in plains], float) / sum(len(p) for p in plains)  # in proportion to the clips
    for (w_, h_), p in zip(sizes, plains):
        print(f"data {w_}x{h_}: {len(p)} clips without a prompt switch")
    cont_sigma = continuation_sigma()
    stop = {"flag": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.update(flag=True))

    def save():
        common.save_ckpt(f"{args.out}/ckpt.pt", {
            "dit": dit.state_dict(), "text": text.state_dict(), "ema_dit": ema.model.state_dict(),
            "ema_text": text.state_dict(), "opt": opt.state_dict(), "step": step, "ema_start": ema_start,
            "base_step": base_step, "cfg": CFG, "vocab": tok.vocab})

    log = common.Logger(f"{args.out}/log.jsonl")
    last_save, t_run, n_here, losses = time.time(), 0.0, 0, []
    while step < args.steps and not stop["flag"]:
        t0 = time.time()
        lr = learning_rate(args, step)
        for g in opt.param_groups:
            g["lr"] = lr
        rng = np.random.default_rng([CFG["seed"], 11, step])
        gen = torch.Generator().manual_seed(CFG["seed"] * 17 + step)
        k = int(rng.choice(len(sizes), p=chance))
        lat, scenes = data[sizes[k]]
        idx = rng.choice(plains[k], args.bs)
        x0 = lat[torch.from_numpy(idx)].float()
        prompts = []
        for i in idx:
            r = rng.random()
            prompts.append("" if r < args.drop else captions.motion_caption(scenes[i], rng)
                           if r < args.drop + args.motion_caption_share * (1 - args.drop) else captions.caption(scenes[i], rng))
        image = latent_patches(x0[:, :, :1])
        past = x0
        n_own = int(round(args.own_past_share * args.bs))
        if n_own:  # the stream's past: its own chunks, whose color may have drifted from the image's
            past = x0.clone()
            past[:n_own] = own_past(dit, text, tok, x0[:n_own], prompts[:n_own], gen, text_len, mask, frame_pos,
                                    image=image[:n_own])
        eps = torch.randn(x0.shape, generator=gen)
        sigma = shift_sigma(torch.rand(args.bs, F_, generator=gen), CFG["shift"])
        xt = x0.clone()
        xt[:, :, 1:], sigma[:, 1:] = continuation_path(x0, eps, cont_sigma, gen)
        s5 = sigma[:, None, :, None, None]
        s_ctx = torch.rand(args.bs, F_, generator=gen) * args.ctx_noise * (torch.rand(args.bs, F_, generator=gen) < 0.5)
        s_ctx[:, 0] = 0.0  # the image is committed as it was encoded
        c5 = s_ctx[:, None, :, None, None]
        x_ctx = (1 - c5) * past + c5 * torch.randn(x0.shape, generator=gen)
        x_in = torch.cat([x_ctx, xt], dim=2)
        t = torch.cat([s_ctx * 1000.0, sigma * 1000.0], dim=1)
        out = predict(dit, text, tok, prompts, text_len, x_in, t, None, frame_pos=frame_pos, frame_mask=mask,
                      image=image)
        target = x0
        if args.caption_teacher:  # what the whole caption makes of the same inputs: the branch must say it
            with torch.no_grad():
                said = predict(dit, text, tok, [captions.caption(scenes[i], rng) for i in idx], text_len, x_in, t,
                               None, frame_pos=frame_pos, frame_mask=mask)[:, :, F_:].float()
            captioned = torch.tensor([p != "" for p in prompts])[:, None, None, None, None]
            target = torch.where(captioned, said, x0)
        err = flow_error(out[:, :, F_:].float(), target, eps, s5)
        loss = (err.mean(dim=(1, 3, 4)) * frame_w).sum(dim=1).mean() / frame_w.sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        e = step - ema_start
        ema.update(dit, min(args.ema, (1 + e) / (10 + e)))
        step += 1
        n_here += 1
        t_run += time.time() - t0
        losses.append(loss.item())
        if step % 20 == 0:
            common.report(log, "image", step, losses, lr, gn, t_run / n_here)
            losses = []
        if time.time() - last_save > args.save_every:
            save()
            last_save = time.time()
    save()
    print(f"image branch stopped at step {step}")


if __name__ == "__main__":
    main()
