"""Loss-curve PNG (no matplotlib): docs/kino-tiny-loss.png from build/train/{vae,dit}/log.jsonl and
the held-out evaluations in build/train/eval.jsonl.

  python3 tools/train/plots.py [--out docs/kino-tiny-loss.png]
"""
import argparse
import os

import numpy as np

import common
import png  # noqa: E402  (tools/data)


def panel(xs, ys, title, w=420, h=220, logy=True, color=(30, 80, 200)):
    img = np.full((h, w, 3), 255, np.uint8)
    ml, mr, mt, mb = 46, 10, 18, 22
    pw, ph = w - ml - mr, h - mt - mb
    img[mt:mt + ph, ml] = 0
    img[mt + ph, ml:ml + pw] = 0
    if len(xs) < 2:
        return img
    xs, ys = np.asarray(xs, float), np.asarray(ys, float)
    ty = np.log10(np.maximum(ys, 1e-8)) if logy else ys
    lo, hi = np.percentile(ty, 0.5), np.percentile(ty, 99.5)
    if hi - lo < 1e-6:
        hi = lo + 1
    x0, x1 = xs.min(), xs.max()
    px = ml + (xs - x0) / max(1e-9, x1 - x0) * (pw - 1)
    py = mt + ph - 1 - (np.clip(ty, lo, hi) - lo) / (hi - lo) * (ph - 1)
    for i in range(len(px) - 1):
        n = int(max(abs(px[i + 1] - px[i]), abs(py[i + 1] - py[i]))) + 1
        for t in np.linspace(0, 1, n):
            x = int(round(px[i] + t * (px[i + 1] - px[i])))
            y = int(round(py[i] + t * (py[i + 1] - py[i])))
            img[y, x] = color
    # labels
    def put(text, x, y, width=120):
        s = png.text_image(text, width, max_lines=1)
        hh, ww = s.shape[:2]
        img[y:y + hh, x:x + min(ww, w - x)] = s[:, :min(ww, w - x)]
    put(title, ml, 2, w - ml)
    for frac in (0.0, 0.5, 1.0):
        v = lo + frac * (hi - lo)
        lab = f"{10 ** v:.3g}" if logy else f"{v:.3g}"
        put(lab, 0, int(mt + ph - 1 - frac * (ph - 1)) - 3, ml - 2)
    put(f"{int(x0)}", ml, mt + ph + 4, 60)
    put(f"step {int(x1)}", ml + pw - 60, mt + ph + 4, 60)
    return img


def smooth(ys, k):
    ys = np.asarray(ys, float)
    if len(ys) < k or k <= 1:
        return ys
    c = np.cumsum(np.insert(ys, 0, 0))
    out = (c[k:] - c[:-k]) / k
    return np.concatenate([ys[:k - 1], out])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(common.ROOT, "docs", "kino-tiny-loss.png"))
    args = ap.parse_args()
    vae = common.Logger(f"{common.BUILD}/vae/log.jsonl").read()
    dit = common.Logger(f"{common.BUILD}/dit/log.jsonl").read()
    p1 = panel([r["step"] for r in vae], smooth([r["l1"] for r in vae], 20), "vae: pixel l1 (train, smoothed)")
    p2 = panel([r["step"] for r in dit], smooth([r["loss"] for r in dit], 10), "dit: flow-matching mse (train, smoothed)",
               color=(200, 60, 30))
    panels = [p1, p2]
    evals = [r for r in common.Logger(f"{common.BUILD}/eval.jsonl").read() if "heldout" in r]
    if len(evals) >= 2:  # the held-out object-color accuracy after each DiT segment (sample.py --eval)
        panels.append(panel([r["step"] for r in evals], [r["heldout"]["color"] for r in evals],
                            "dit: held-out object color accuracy", logy=False, color=(30, 150, 60)))
    png.write_png(args.out, png.grid([panels], pad=4))
    print("wrote", args.out)


if __name__ == "__main__":
    main()
