"""Render training clips and encode them with the trained VAE into latent shards (resumable).

  python3 tools/train/encode_data.py --shards 24      # build/train/data/shard_XXX.pt, 1000 clips each
  python3 tools/train/encode_data.py --first 100 --shards 4 --switch-prob 0.75   # switch-heavy shard_100..103
  python3 tools/train/encode_data.py --resplice      # splice the switch clips of shards written before
Each shard: {"latents": fp16 [N, z, F, h, w] (normalised with the VAE's latents_mean/std),
             "scenes": [scene dicts], "spliced": True (prompt switches: common.spliced_mu)}.
Clip i of shard s is a pure function of (seed, s, i).
"""
import argparse
import glob
import os
import time

import numpy as np
import torch

import common
from common import CFG

import render  # noqa: E402


def load_vae():
    ck = common.load_ckpt(f"{common.BUILD}/vae/ckpt.pt")
    assert ck is not None and "latents_mean" in ck, "train the VAE first"
    vae = common.vae_model()
    vae.load_state_dict(ck["model"])
    vae.latents_mean.copy_(ck["latents_mean"])
    vae.latents_std.copy_(ck["latents_std"])
    return vae.eval()


def clips(scenes):
    """The scenes rendered: [B, 3, T, H, W] in [-1, 1]."""
    return common.video_tensor([render.render(c) for c in scenes])


def encode_scenes(vae, scenes):
    """Normalised fp16 latents; prompt switches spliced (common.spliced_mu)."""
    sw = [c["switch"]["latent"] if "switch" in c else None for c in scenes]
    after = [render.switched(c) for c in scenes if "switch" in c]
    after = clips(after) if after else None
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        mu = common.spliced_mu(vae, clips(scenes), after, sw)
    return vae.normalize(mu.float()).half()


def resplice(path, vae):
    """Re-encode the switch clips of a shard written before splicing (their latents after the
    switch only: the causal encoder's latents before it are the same either way)."""
    sh = common.load_ckpt(path)
    if sh.get("spliced"):
        return False
    idx = [i for i, c in enumerate(sh["scenes"]) if "switch" in c]
    for k in range(0, len(idx), 16):
        part = idx[k:k + 16]
        after = [render.switched(sh["scenes"][i]) for i in part]
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            mu, _ = vae.encode_raw(clips(after))
        z = vae.normalize(mu.float()).half()
        for j, i in enumerate(part):
            L = sh["scenes"][i]["switch"]["latent"]
            sh["latents"][i, :, L:] = z[j, :, L:]
    sh["spliced"] = True
    common.save_ckpt(path, sh)
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shards", type=int, default=24)
    ap.add_argument("--first", type=int, default=0, help="number of the first shard")
    ap.add_argument("--per-shard", type=int, default=1000)
    ap.add_argument("--switch-prob", type=float, default=0.25, help="share of the clips with a prompt switch")
    ap.add_argument("--out", default=f"{common.BUILD}/data")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--resplice", action="store_true", help="splice the switch clips of existing shards, then exit")
    args = ap.parse_args()
    common.setup_torch(args.threads)
    os.makedirs(args.out, exist_ok=True)
    vae = load_vae()
    seed = CFG["seed"]
    nf = CFG["train_latent_frames"]
    frames = 1 + vae.t_stride * (nf - 1)
    excluded = render.heldout_set()
    if args.resplice:
        for path in sorted(glob.glob(f"{args.out}/shard_*.pt")):
            t0 = time.time()
            if resplice(path, vae):
                print(f"{path}: switch clips spliced in {time.time() - t0:.0f} s", flush=True)
        return
    for s in range(args.first, args.first + args.shards):
        path = f"{args.out}/shard_{s:03d}.pt"
        if os.path.exists(path):
            continue
        t0 = time.time()
        rng = np.random.default_rng([seed, 10, s])
        scenes, lats = [], []
        bs = 16
        for i in range(0, args.per_shard, bs):
            sc = [render.sample_scene(rng, excluded, frames=frames, switch_prob=args.switch_prob, latents=nf)
                  for _ in range(min(bs, args.per_shard - i))]
            lats.append(encode_scenes(vae, sc))
            scenes.extend(sc)
        common.save_ckpt(path, {"latents": torch.cat(lats), "scenes": scenes, "spliced": True})
        print(f"shard {s}: {len(scenes)} clips in {time.time() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main()
