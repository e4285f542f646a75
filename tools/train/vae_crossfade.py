"""How well a VAE keeps a prompt transition's cross-faded colors: single-object color ramps (the
clips the DiT's transition chunks are trained on) encoded as the DiT's data is (spliced,
encode_data.encode_scenes), decoded in one stream, and the object's median RGB in each latent frame's
last video frame compared with the render's (largest channel error, 0-255), separately for the
frames showing one scene and the cross-faded ones. A VAE that never saw a cross-fade encodes the
latter ~5x as far off, and a DiT trained on those latents makes the same colors (tools/train/NOTES.md).

  python3 tools/train/vae_crossfade.py build/train/vae-joint/ckpt.pt[,other/ckpt.pt] [--clips 60]
"""
import argparse
import collections
import os
import sys

import numpy as np
import torch

sys.path[:0] = [os.path.join(os.path.dirname(__file__), p) for p in (".", "../eval", "../data")]
import common  # noqa: E402
import encode_data  # noqa: E402
import metrics  # noqa: E402
from networks import load_vae  # noqa: E402
import render  # noqa: E402


def color_ramps(n, seed=12345):
    """n single-object scenes whose object color cross-fades over 2-4 latent frames."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        sc = render.sample_scene(rng, switch_prob=1.0, ramp_prob=1.0)
        sw = sc.get("switch", {})
        if sw.get("chunks", 1) > 1 and sw["attr"] == "color" and len(sc["objects"]) == 1:
            out.append(sc)
    return out


@torch.no_grad()
def errors(vae, scenes, batch=10):
    """-> {"plain": [...], "cross-fade": [...]} per-frame color errors."""
    out = collections.defaultdict(list)
    for i in range(0, len(scenes), batch):
        part = scenes[i:i + batch]
        v = vae.decode_stream(encode_data.encode_scenes(vae, part).float(), {}).clamp(-1, 1)
        decoded = ((v + 1) * 127.5).round().byte().permute(0, 2, 3, 4, 1).numpy()
        for sc, dec in zip(part, decoded):
            ref = render.render(sc)
            _, rows = metrics.classify_background(ref)
            for k in range(1, (len(ref) - 1) // render.T_STRIDE + 1):
                t = render.T_STRIDE * k
                m = metrics.object_mask(ref[t], rows)
                if m is None or m.sum() < 10:
                    continue
                p = render.switch_progress(sc["switch"], k)
                err = np.abs(np.median(ref[t][m].astype(float), 0) - np.median(dec[t][m].astype(float), 0)).max()
                out["plain" if p in (0.0, 1.0) else "cross-fade"].append(float(err))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ckpts", help="comma-separated VAE checkpoints")
    ap.add_argument("--clips", type=int, default=60)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    scenes = color_ramps(args.clips)
    for path in args.ckpts.split(","):
        vae = load_vae(path)
        row = [f"{k} frames: median {np.median(v):.1f}, over 40 {np.mean(np.array(v) > 40) * 100:.0f} % (of {len(v)})"
               for k, v in sorted(errors(vae, scenes).items())]
        print(f"{path} (step {common.load_ckpt(path)['step']}): " + "; ".join(row), flush=True)


if __name__ == "__main__":
    main()
