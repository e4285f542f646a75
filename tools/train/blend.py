"""A fine-tuned branch pulled part of the way back to the checkpoint it started from: every floating
weight (DiT and text encoder, trained and EMA) becomes base + alpha * (branch - base).

  python3 tools/train/blend.py --ckpt BRANCH --base BASE --alpha 0.5 --out DIR   (writes DIR/ckpt.pt)

Why: the dit-aspect branch learns 112x64 and 64x112 but its steps there move the square's shapes
(64x64 shape 74 -> 67 %), and neither a teacher at 64x64 nor fewer steps kept them. Fine-tuning moves
the weights along a direction where both end points work, and the middle of it keeps most of what
each end does (weight-space ensembles, Wortsman et al. 2022, "Robust fine-tuning of zero-shot
models"): at alpha 0.5 the new sizes draw one scene and the square keeps its shape (docs/MODEL.md).
The result keeps the branch's configuration (its native sizes) and step; the optimizer state is left
out, so it is a checkpoint to export or to start a branch from, not one to resume."""
import argparse
import os

import common

PARTS = ("dit", "text", "ema_dit", "ema_text")


def blend(branch, base, alpha):
    """-> branch's checkpoint with its weights moved to base + alpha * (branch - base)."""
    out = {k: v for k, v in branch.items() if k != "opt"}
    for part in PARTS:
        mixed = {}
        for name, w in branch[part].items():
            b = base[part].get(name)
            if b is None or b.shape != w.shape:
                raise SystemExit(f"--base has no {part}.{name} of shape {tuple(w.shape)}: not the branch's base")
            mixed[name] = b + alpha * (w - b) if w.is_floating_point() else w
        out[part] = mixed
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ckpt", required=True, help="the fine-tuned branch")
    ap.add_argument("--base", required=True, help="the checkpoint the branch started from (its --init)")
    ap.add_argument("--alpha", type=float, required=True, help="0: the base, 1: the branch")
    ap.add_argument("--out", required=True, help="a directory: DIR/ckpt.pt")
    args = ap.parse_args()
    if not 0.0 <= args.alpha <= 1.0:
        raise SystemExit("--alpha must be within 0..1")
    branch, base = common.load_ckpt(args.ckpt), common.load_ckpt(args.base)
    for name, ck in (("--ckpt", branch), ("--base", base)):
        if ck is None:
            raise SystemExit(f"{name}: no checkpoint there")
    common.save_ckpt(os.path.join(args.out, "ckpt.pt"), blend(branch, base, args.alpha))
    print(f"wrote {args.out}/ckpt.pt: {args.alpha} of the way from {args.base} to {args.ckpt}")


if __name__ == "__main__":
    main()
