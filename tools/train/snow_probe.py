"""Does the DiT draw snow's flakes? Snow prompts (the 4 held-out ones and 4 seen in training)
sampled as the training sampler does, at each guidance scale asked for; per clip the share of
flake pixels (metrics.speckle_fraction; snow's renders have 2-4 %), what the background classifier
reads, and its distances to the snow and gray prototypes. A snow clip without flakes has snow's
colors but sits nearer gray: the flake feature alone puts it ~0.38 from snow (stop 37).

  KINO_DIT_SINK=1 python3 tools/train/snow_probe.py --ckpt build/train/dit-sink/ckpt.pt \
      --vae build/train/vae-ramp/ckpt.pt --guidance 2,4 --threads 2
"""
import argparse
import os
import sys

sys.path[:0] = [os.path.join(os.path.dirname(__file__), p) for p in (".", "../eval", "../data")]
import common  # noqa: E402
import metrics  # noqa: E402
import render  # noqa: E402
import sample  # noqa: E402

SEEN = ["a red circle moving right in the snow", "a green square still in the snow",
        "a yellow triangle moving left with falling snow", "a white ring bouncing on a snowy background"]


def prompts():
    held = [render.canonical_caption(*c) for c in render.load_heldout()["combinations"] if c[3] == "snow"]
    return held + SEEN


def prototype_distances(frames):
    """The background classifier's distances of a clip to the snow and the gray prototypes."""
    d = metrics.background_distances(frames)[1]
    return d[render.BACKGROUNDS.index("snow")], d[render.BACKGROUNDS.index("gray")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckpt", default=None)
    ap.add_argument("--vae", default=None)
    ap.add_argument("--guidance", default="2", help="comma-separated guidance scales")
    ap.add_argument("--chunks", type=int, default=4)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    common.setup_torch(args.threads)
    dit, text, vae, tok, step = sample.load_models(args.ckpt, ema=True, export_precision=True, vae_ckpt=args.vae)
    ps = prompts()
    for g in (float(v) for v in args.guidance.split(",")):
        clips = sample.generate(dit, text, vae, tok, ps, chunks=args.chunks, guidance=g, seed=1000)
        print(f"step {step}, guidance {g}:")
        for p, f in zip(ps, clips):
            d_snow, d_gray = prototype_distances(f)
            print(f"  {100 * metrics.speckle_fraction(f):5.2f} % flakes, read {metrics.classify(f)['background']:6s}"
                  f" (to snow {d_snow:.2f}, to gray {d_gray:.2f})  {p}", flush=True)


if __name__ == "__main__":
    main()
