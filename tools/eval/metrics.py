"""Attribute classifiers for kino-tiny clips (uint8 frames [T, H, W, 3]; calibrated at 64x64, and
at other sizes for frames whose shorter side is 64 — tools/eval/score.py resamples to that):
background (14 classes), object color (10), shape (5), motion (9). Hand-written (no learning);
validated on ground-truth renders (`python3 tools/eval/metrics.py --validate`).

classify(frames) -> {"background", "color", "shape", "motion", "found"}
"""
import argparse
import colorsys
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "data"))
import render  # noqa: E402

S = render.SIZE


# ---- background ------------------------------------------------------------------------------

def _bg_features(frames):
    f = frames.astype(np.float32)
    border = np.concatenate([f[:, :, :3], f[:, :, -3:]], axis=2)  # [T, H, 6, 3] left/right columns
    H = f.shape[1]
    rows = np.median(border.reshape(-1, H, 6, 3).transpose(1, 0, 2, 3).reshape(H, -1, 3), axis=1)  # [H, 3]
    band = lambda a, b: rows[round(a * H / S):round(b * H / S)].mean(0)  # rows a..b of a 64-row frame
    top, mid, bot = band(2, 12), band(27, 37), band(52, 62)
    # speckles: pixels much brighter than their row's background, in small blobs (stars, flakes)
    diff = (f - rows[None, :, None, :]).sum(-1)
    bright = (diff > 90).astype(np.float32)
    # keep only small bright blobs (stars, flakes): <= 9 bright pixels in the 7x7 neighbourhood
    c = np.pad(bright, ((0, 0), (4, 3), (4, 3))).cumsum(1).cumsum(2)
    box = c[:, 7:, 7:] - c[:, :-7, 7:] - c[:, 7:, :-7] + c[:, :-7, :-7]
    frac = ((bright > 0) & (box <= 9)).mean()
    return rows, np.concatenate([top, mid, bot]) / 255.0, frac


SPECKLED = ("snow", "night")  # the backgrounds with flakes or stars, which a VAE or the DiT may smear away


def speckle_fraction(frames):
    """The share of pixels in small bright blobs off the background (snow's flakes, the night sky's
    stars): snow's renders have 2-4 %, and without them snow reads as gray."""
    return float(_bg_features(frames)[2])


def _bg_vector(col, frac):
    """What the background classifier compares: the border rows' colors and 10x the speckle share (capped)."""
    return np.concatenate([col, [min(frac, 0.08) * 10]])


_PROTOS = None


def _prototypes():
    global _PROTOS
    if _PROTOS is None:
        protos = []
        for bg in render.BACKGROUNDS:
            feats = []
            for seed in range(3):
                sc = {"bg": bg, "bg_seed": seed, "objects": [], "frames": 9, "size": S, "fps": render.FPS}
                _, col, frac = _bg_features(render.render(sc))
                feats.append(_bg_vector(col, frac))
            protos.append(np.mean(feats, 0))
        _PROTOS = np.stack(protos)
    return _PROTOS


def background_distances(frames):
    """-> the border rows [H, 3] and the clip's distance to each background's prototype (render.BACKGROUNDS)."""
    rows, col, frac = _bg_features(frames)
    return rows, np.linalg.norm(_prototypes() - _bg_vector(col, frac)[None], axis=1)


def classify_background(frames):
    rows, d = background_distances(frames)
    return render.BACKGROUNDS[int(np.argmin(d))], rows


# ---- object mask ------------------------------------------------------------------------------

def _components(mask):
    """4-connected components -> list of index arrays (pure numpy flood fill on small images)."""
    h, w = mask.shape
    lab = np.zeros((h, w), np.int32)
    comps = []
    cur = 0
    ys, xs = np.nonzero(mask)
    for y0, x0 in zip(ys, xs):
        if lab[y0, x0]:
            continue
        cur += 1
        stack = [(y0, x0)]
        lab[y0, x0] = cur
        pts = []
        while stack:
            y, x = stack.pop()
            pts.append((y, x))
            for dy, dx in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                yy, xx = y + dy, x + dx
                if 0 <= yy < h and 0 <= xx < w and mask[yy, xx] and not lab[yy, xx]:
                    lab[yy, xx] = cur
                    stack.append((yy, xx))
        comps.append(np.array(pts))
    return comps


def object_mask(frame, rows, thr=60):
    diff = np.abs(frame.astype(np.float32) - rows[:, None, :]).sum(-1)
    m = diff > thr
    comps = [c for c in _components(m) if len(c) >= 10]
    if not comps:
        return None
    c = max(comps, key=len)
    out = np.zeros_like(m)
    out[c[:, 0], c[:, 1]] = True
    return out


def shape_mask(frame, rows, mask):
    """The object's outline for shape fitting: where a pixel is at least halfway from the background
    to the object's own color (its 90th-percentile difference), in the component that overlaps
    object_mask's. object_mask's fixed threshold puts the outline of a high-contrast object that is
    slightly blurred outside its true edge: a ring's hole closes up at a Gaussian blur of 1.5 px
    (ground-truth renders: 2 of 14 held-out rings left), though the hole is plain to see."""
    if mask is None:
        return None
    diff = np.abs(frame.astype(np.float32) - rows[:, None, :]).sum(-1)
    thr = 0.5 * np.percentile(diff[mask], 90)
    if thr <= 60:
        return mask
    comps = [c for c in _components(diff > thr) if len(c) >= 10]
    if not comps:
        return mask
    c = max(comps, key=lambda c: mask[c[:, 0], c[:, 1]].sum())
    out = np.zeros_like(mask)
    out[c[:, 0], c[:, 1]] = True
    return out


# ---- color ------------------------------------------------------------------------------------

_CNAMES = list(render.COLORS)
_CVALS = np.array([render.COLORS[c] for c in _CNAMES], np.float32)


def classify_color(frames, masks):
    px = [frames[k][m] for k, m in enumerate(masks) if m is not None]
    if not px:
        return None
    px = np.concatenate(px).astype(np.float32)
    c = np.median(px, axis=0)
    return _CNAMES[int(np.argmin(np.linalg.norm(_CVALS - c[None], axis=1)))]


# ---- shape ------------------------------------------------------------------------------------

_GRIDS = {}


def _template(shape, cx, cy, r, ang, hw=(S, S)):
    if hw not in _GRIDS:
        gy, gx = np.mgrid[0:hw[0], 0:hw[1]].astype(np.float32) + 0.5
        _GRIDS[hw] = (gx, gy)
    gx, gy = _GRIDS[hw]
    return render.shape_sdf(shape, gx, gy, cx, cy, r, ang) < 0


_AREA = {}


def _unit_area(shape):
    if shape not in _AREA:
        _AREA[shape] = _template(shape, 32, 32, 20, 0.0).sum() / 400.0
    return _AREA[shape]


def fit_shape(mask):
    """-> (best shape, iou, angle) by template matching at the mask's centroid and area."""
    ys, xs = np.nonzero(mask)
    cy, cx = ys.mean() + 0.5, xs.mean() + 0.5
    area = mask.sum()
    best = (None, -1.0, 0.0)
    for shape in render.SHAPES:
        r = math.sqrt(area / _unit_area(shape))
        if shape == "triangle":
            cy_t = cy - 0.15 * r * 0  # centroid of the drawn triangle is its center (offset 0.15r down is in the sdf)
        angles = [0.0] if shape in render.ROUND else np.linspace(0, 2 * math.pi / {"square": 4, "triangle": 3, "star": 5}[shape], 12, endpoint=False)
        for a in angles:
            # the drawn triangle is offset by 0.15 r along its own axis; compensate at the centroid
            ox, oy = 0.0, 0.0
            if shape == "triangle":
                ox, oy = 0.15 * r * math.sin(a), -0.15 * r * math.cos(a)
            t = _template(shape, cx + ox, cy + oy, r, a, mask.shape)
            inter = (t & mask).sum()
            iou = inter / max(1, (t | mask).sum())
            if iou > best[1]:
                best = (shape, float(iou), float(a))
    return best


def _inside(mask, margin=1):
    ys, xs = np.nonzero(mask)
    h, w = mask.shape
    return ys.min() >= margin and xs.min() >= margin and ys.max() < h - margin and xs.max() < w - margin


def classify_shape(masks):
    votes = {}
    for m in masks:
        if m is None or m.sum() < 30 or not _inside(m):
            continue
        s, iou, _ = fit_shape(m)
        if s is not None:
            votes[s] = votes.get(s, 0) + iou
    if not votes:
        return None
    return max(votes, key=votes.get)


# ---- motion -----------------------------------------------------------------------------------

def classify_motion(masks, shape=None):
    ks = [k for k, m in enumerate(masks) if m is not None]
    if len(ks) < max(4, len(masks) // 3):
        return None
    cx = np.array([np.nonzero(masks[k])[1].mean() for k in ks])
    cy = np.array([np.nonzero(masks[k])[0].mean() for k in ks])
    area = np.array([masks[k].sum() for k in ks], np.float32)
    # unwrap wrap-around jumps
    dx, dy = np.diff(cx), np.diff(cy)
    dx = np.where(np.abs(dx) > 20, 0, dx)
    dy = np.where(np.abs(dy) > 20, 0, dy)
    net_x, net_y = dx.sum(), dy.sum()
    inside = np.array([_inside(masks[k], 1) for k in ks])
    if inside.sum() >= max(4, len(ks) // 2):
        ai = area[inside]
        n = len(ai)
        a0, a1 = np.median(ai[:max(2, n // 5)]), np.median(ai[-max(2, n // 5):])
        ratio = a1 / max(a0, 1)
        if ratio > 1.6:
            return "growing"
        if ratio < 0.62:
            return "shrinking"
    # bouncing: vertical direction reversals with a large vertical range and little net motion
    sy = np.sign(np.where(np.abs(dy) > 0.3, dy, 0))
    sy = sy[sy != 0]
    rev = int((sy[1:] != sy[:-1]).sum()) if len(sy) > 1 else 0
    yr = cy.max() - cy.min()
    if rev >= 1 and yr > 8 and abs(net_x) < 8:
        return "bouncing"
    if abs(net_x) > 10 and abs(net_x) > 1.5 * abs(net_y):
        return "left" if net_x < 0 else "right"
    if abs(net_y) > 10:
        return "up" if net_y < 0 else "down"
    # spinning: orientation of the fitted template changes
    if shape not in render.ROUND:
        idx = [k for k in ks if masks[k].sum() >= 40 and _inside(masks[k])]
        if len(idx) >= 4:
            sel = [idx[0], idx[len(idx) // 3], idx[2 * len(idx) // 3], idx[-1]]
            fits = [fit_shape(masks[k]) for k in sel]
            if fits[0][0] is not None:
                sym = 2 * math.pi / {"square": 4, "triangle": 3, "star": 5}.get(fits[0][0], 4)
                tot = 0.0
                for (_, _, a), (_, _, b) in zip(fits[:-1], fits[1:]):
                    d = (b - a) % sym
                    d = min(d, sym - d)
                    tot += d
                if tot > 0.35:
                    return "spinning"
    return "still"


def classify(frames):
    bg, rows = classify_background(frames)
    masks = [object_mask(f, rows) for f in frames]
    found = sum(m is not None for m in masks) / len(masks)
    color = classify_color(frames, masks)
    shape = classify_shape([shape_mask(f, rows, m) for f, m in zip(frames, masks)])
    motion = classify_motion(masks, shape)
    return {"background": bg, "color": color, "shape": shape, "motion": motion, "found": found}


def hue_deg(rgb):
    h, _, _ = colorsys.rgb_to_hsv(*(np.asarray(rgb, np.float64) / 255.0))
    return h * 360.0


def _unwrap_hue(h):
    """Red sits at 0/360 degrees, blue at 240: unwrapped, red -> purple -> blue is decreasing."""
    return None if h is None else (h + 360.0 if h < 120.0 else h)


def _transition_verdict(hues, colors, first, n):
    """-> (monotonic, blue_after): the hue falls (5 degrees of slack) from the last red chunk over the
    n affected ones, and every chunk from the transition's last on is blue."""
    path = [_unwrap_hue(hues[i]) for i in range(first - 1, min(first + n, len(hues)))]
    monotonic = all(a is not None and b is not None and b <= a + 5.0 for a, b in zip(path, path[1:]))
    return monotonic, all(c == "blue" for c in colors[first + n - 1:])


def judge_transition(frames, chunk_frames, first, transition_chunks):
    """A red -> blue prompt transition (the kino-tiny issue's test). frames: the whole stream;
    chunk_frames: frames per generation chunk; first: the first affected chunk. Per chunk the
    object's median color, its hue and its color class; passes when the chunks before are red, the
    hue moves monotonically towards blue from the last red chunk over the affected ones, and every
    chunk from the transition's last on is blue. The same verdict on each chunk's last frame alone
    (what test/models/kino-tiny.test.ts reads) is "last_frame": a chunk's median can move
    monotonically while its frames overshoot past blue and swing back."""
    _, rows = classify_background(frames)
    out, start = [], 0
    for k, n in enumerate(chunk_frames):
        fr = frames[start:start + n]
        start += n
        masks = [object_mask(f, rows) for f in fr]
        px = [f[m] for f, m in zip(fr, masks) if m is not None]
        if not px:
            out.append({"chunk": k, "color": None, "hue": None, "last_hue": None, "last_color": None})
            continue
        med = np.median(np.concatenate(px).astype(np.float32), axis=0)
        last = None if masks[-1] is None else np.median(fr[-1][masks[-1]].astype(np.float32), axis=0)
        out.append({"chunk": k, "rgb": [round(float(v)) for v in med], "hue": round(hue_deg(med), 1),
                    "color": classify_color(fr, masks),
                    "last_hue": None if last is None else round(hue_deg(last), 1),
                    "last_color": classify_color(fr[-1:], masks[-1:])})
    n = max(1, transition_chunks)
    red_before = all(o["color"] == "red" for o in out[1:first])  # chunk 0 is a single frame
    monotonic, blue_after = _transition_verdict([o["hue"] for o in out], [o["color"] for o in out], first, n)
    last_mono, last_blue = _transition_verdict([o["last_hue"] for o in out], [o["last_color"] for o in out], first, n)
    last_red = all(o["last_color"] == "red" for o in out[1:first])
    return {"transition_chunks": transition_chunks, "first_affected_chunk": first, "per_chunk": out,
            "red_before": red_before, "monotonic": monotonic, "blue_from_chunk": first + n - 1,
            "blue_after": blue_after, "pass": red_before and monotonic and blue_after,
            "last_frame": {"monotonic": last_mono, "blue_after": last_blue,
                           "pass": last_red and last_mono and last_blue}}


def transition_line(t):
    """One line of report for judge_transition's result."""
    fmt = lambda key: " ".join("-" if o[key] is None else f"{o[key]:.0f}" for o in t["per_chunk"])  # noqa: E731
    lf = t["last_frame"]
    return (f"hue per chunk {fmt('hue')}; red before {t['red_before']}, monotonic {t['monotonic']}, "
            f"blue from chunk {t['blue_from_chunk']} {t['blue_after']} -> {'pass' if t['pass'] else 'FAIL'}; "
            f"last frames {fmt('last_hue')}: monotonic {lf['monotonic']}, blue {lf['blue_after']} "
            f"-> {'pass' if lf['pass'] else 'FAIL'}")


def score(preds, truths):
    """preds/truths: lists of dicts with the 4 attributes -> accuracy per attribute."""
    out = {}
    for k in ("color", "background", "motion", "shape"):
        out[k] = float(np.mean([p[k] == t[k] for p, t in zip(preds, truths)]))
    return out


def gaussian_blur(frames, sigma):
    """frames [T, H, W, 3] uint8 blurred in space (edges repeated): a stand-in for a decoder's softness."""
    r = int(3 * sigma + 1)
    k = np.exp(-0.5 * (np.arange(-r, r + 1) / sigma) ** 2)
    k /= k.sum()
    f = frames.astype(np.float32)
    for ax in (1, 2):
        pad = [(0, 0)] * 4
        pad[ax] = (r, r)
        fp = np.pad(f, pad, mode="edge")
        f = sum(w * np.take(fp, np.arange(j, j + f.shape[ax]), axis=ax) for j, w in enumerate(k))
    return np.clip(f.round(), 0, 255).astype(np.uint8)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--validate", type=int, default=100, help="score N ground-truth renders")
    ap.add_argument("--blur", type=float, default=0.0, help="blur the renders first (Gaussian sigma, pixels)")
    ap.add_argument("--size", default=f"{S}x{S}", help="WxH of the renders (the shorter side 64)")
    args = ap.parse_args()
    width, height = map(int, args.size.split("x"))
    rng = np.random.default_rng(7)
    preds, truths = [], []
    conf = {}
    for i in range(args.validate):
        sc = render.sample_scene(rng, set(), two_prob=0.0, width=width, height=height)
        o = sc["objects"][0]
        fr = render.render(sc)
        p = classify(gaussian_blur(fr, args.blur) if args.blur else fr)
        t = {"background": sc["bg"], "color": o["color"], "shape": o["shape"], "motion": o["motion"]}
        preds.append(p)
        truths.append(t)
        for k in t:
            if p[k] != t[k]:
                conf.setdefault(k, []).append((t[k], p[k]))
    print(f"ground-truth renders at {args.size}{f' blurred by {args.blur} px' if args.blur else ''}:", score(preds, truths))
    for k, v in conf.items():
        print(k, v[:12])


if __name__ == "__main__":
    main()
