"""Render training clips and encode them with the trained VAE into latent shards (resumable).

  python3 tools/train/encode_data.py --shards 24      # build/train/data/shard_XXX.pt, 1000 clips each
  python3 tools/train/encode_data.py --first 100 --shards 8 --switch-prob 0.75 --ramp-prob 0.5  # switch-heavy
  python3 tools/train/encode_data.py --first 200 --shards 2 --size 112x64     # clips at another native size
Each shard: {"latents": fp16 [N, z, F, h, w] (normalised with the VAE's latents_mean/std),
             "scenes": [scene dicts], "render_version": render.VERSION, "size": [W, H]}; prompt switches are encoded
spliced (common.spliced_mu). Clip i of shard s is a pure function of (seed, s, i); a shard from an
older renderer is rendered and encoded again.
"""
import argparse
import os
import time

import numpy as np
import torch

import common
from common import CFG
from networks import load_vae

import render  # noqa: E402


def clips(scenes):
    """The scenes rendered: [B, 3, T, H, W] in [-1, 1]."""
    return common.video_tensor([render.render(c) for c in scenes])


def encode_scenes(vae, scenes):
    """Normalised fp16 latents; prompt switches spliced (common.spliced_mu)."""
    sw = [render.splice_latent(c["switch"]) if "switch" in c else None for c in scenes]
    after = [render.switched(c) for c in scenes if "switch" in c]
    after = clips(after) if after else None
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        mu = common.spliced_mu(vae, clips(scenes), after, sw)
    return vae.normalize(mu.float()).half()


def current(path):
    """Whether a shard exists and was rendered by the present renderer (render.VERSION)."""
    if not os.path.exists(path):
        return False
    return common.load_ckpt(path).get("render_version") == render.VERSION


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shards", type=int, default=24)
    ap.add_argument("--first", type=int, default=0, help="number of the first shard")
    ap.add_argument("--per-shard", type=int, default=1000)
    ap.add_argument("--switch-prob", type=float, default=0.25, help="share of the clips with a prompt switch")
    ap.add_argument("--ramp-prob", type=float, default=0.0, help="share of the switches that are gradual")
    ap.add_argument("--out", default=f"{common.BUILD}/data")
    ap.add_argument("--vae", default=None, help="another VAE checkpoint (e.g. train_vae.py --init --anchor's); "
                                                "write its shards to their own --out")
    ap.add_argument("--size", default=f"{render.SIZE}x{render.SIZE}",
                    help="WxH of the clips (multiples of the VAE's stride x the DiT's patch); a folder may hold "
                         "shards of several sizes, train_dit.py batches each size apart")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    common.setup_torch(args.threads)
    os.makedirs(args.out, exist_ok=True)
    vae = load_vae(args.vae or f"{common.BUILD}/vae/ckpt.pt")  # the encoder: the base VAE's
    seed = CFG["seed"]
    nf = CFG["train_latent_frames"]
    frames = 1 + vae.t_stride * (nf - 1)
    excluded = render.heldout_set()
    width, height = map(int, args.size.split("x"))
    for s in range(args.first, args.first + args.shards):
        path = f"{args.out}/shard_{s:03d}.pt"
        if current(path):
            continue
        t0 = time.time()
        rng = np.random.default_rng([seed, 10, s])
        scenes, lats = [], []
        bs = 16
        for i in range(0, args.per_shard, bs):
            sc = [render.sample_scene(rng, excluded, frames=frames, switch_prob=args.switch_prob, latents=nf,
                                     ramp_prob=args.ramp_prob, width=width, height=height)
                  for _ in range(min(bs, args.per_shard - i))]
            lats.append(encode_scenes(vae, sc))
            scenes.extend(sc)
        common.save_ckpt(path, {"latents": torch.cat(lats), "scenes": scenes, "render_version": render.VERSION,
                                "size": [width, height]})
        print(f"shard {s}: {len(scenes)} clips in {time.time() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main()
