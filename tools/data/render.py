"""Procedural video renderer for kino-tiny.

A scene is a JSON-able dict (background + 1-2 objects with a motion); render(scene) produces
uint8 frames [T, H, W, 3] deterministically from the scene; captions.py words it.
sample_scene(rng) never produces a held-out combination (heldout.json).

  python3 tools/data/render.py --preview out.png     # contact sheet of random scenes
  python3 tools/data/render.py --write-heldout       # (re)creates tools/data/heldout.json
"""
import argparse
import json
import math
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

# The object colors, in sampling order; palette.json is shared with the TypeScript tests
# (test/models/helpers/frame-colors.ts) and read through this module by tools/eval/metrics.py.
with open(os.path.join(HERE, "palette.json")) as f:
    COLORS = {name: tuple(rgb) for name, rgb in json.load(f).items()}
BG_SOLID = dict(COLORS, black=(12, 12, 12))
SPECIAL_BGS = ["night", "snow", "sunset"]
BACKGROUNDS = list(BG_SOLID) + SPECIAL_BGS  # 14 background classes
SHAPES = ["circle", "square", "triangle", "ring", "star"]
MOTIONS = ["left", "right", "up", "down", "bouncing", "spinning", "growing", "shrinking", "still"]
ROUND = {"circle", "ring"}  # spinning is invisible for these: never sampled

# Bumped whenever a seed renders differently (encode_data.py re-renders older shards).
# 2: shapes upright (no random angle).
VERSION = 2
SIZE = 64  # the native (square) size; a scene may ask for another width x height (scene_size)
FPS = 16
T_STRIDE = 4  # video frames per latent frame (the VAE's; frame 0 is a latent frame of its own)



# ---- held-out split ---------------------------------------------------------------------------

def load_heldout(path=None):
    path = path or os.path.join(HERE, "heldout.json")
    with open(path) as f:
        d = json.load(f)
    return d


def heldout_set(d=None):
    d = d or load_heldout()
    return {tuple(c) for c in d["combinations"]}


def make_heldout(n=40, seed=1234):
    rng = np.random.default_rng(seed)
    combos = set()
    while len(combos) < n:
        color = str(rng.choice(list(COLORS)))
        shape = str(rng.choice(SHAPES))
        motion = str(rng.choice(MOTIONS))
        bg = str(rng.choice(BACKGROUNDS))
        if motion == "spinning" and shape in ROUND:
            continue
        if bg == color:
            continue
        combos.add((color, shape, motion, bg))
    combos = sorted(combos)
    return {
        "description": "kino-tiny held-out (color, shape, motion, background) combinations: never rendered "
                       "for any object in training; used for evaluation with captions.canonical_caption().",
        "fields": ["color", "shape", "motion", "background"],
        "seed": seed,
        "combinations": [list(c) for c in combos],
    }


# ---- scenes -------------------------------------------------------------------------------------

def _contrast_ok(color, bg):
    if bg in SPECIAL_BGS:
        return True
    if color == bg:
        return False
    a, b = np.array(COLORS[color], float), np.array(BG_SOLID[bg], float)
    return np.linalg.norm(a - b) > 100


def scene_size(scene):
    """(width, height) of a scene: its "width"/"height" when not square at SIZE, else its "size"."""
    return scene.get("width", scene["size"]), scene.get("height", scene["size"])


def sample_object(rng, bg, r_range, excluded, width=SIZE, height=SIZE):
    """An object for a width x height frame: sizes, speeds and bounces scale with the shorter side
    (64 at the native sizes 64x64, 112x64 and 64x112, where they are the square's), places span the
    frame."""
    for _ in range(1000):
        color = str(rng.choice(list(COLORS)))
        shape = str(rng.choice(SHAPES))
        motion = str(rng.choice(MOTIONS))
        if motion == "spinning" and shape in ROUND:
            continue
        if not _contrast_ok(color, bg) or (color, shape, motion, bg) in excluded:
            continue
        break
    unit = min(width, height) / SIZE
    r = float(rng.uniform(*r_range)) * unit
    # Shapes stand upright (a triangle or a star points up, a square sits on a side); only
    # "spinning" turns them. A random angle made every caption ambiguous in orientation, and a
    # denoiser's estimate under that ambiguity is the average over angles: a round blob for every
    # shape. (The angle is still drawn so that the parameters after it keep their values per seed.)
    rng.uniform(0, 2 * math.pi)
    o = {"color": color, "shape": shape, "motion": motion, "r": r, "angle": 0.0}
    m = 2.0 + r
    o["x"] = float(rng.uniform(m, width - m))
    o["y"] = float(rng.uniform(m, height - m))
    if motion in ("left", "right", "up", "down"):
        o["speed"] = float(rng.uniform(0.8, 1.4)) * unit  # px per frame
    elif motion == "bouncing":
        o["period"] = float(rng.uniform(14, 22))  # frames per bounce
        o["amp"] = float(rng.uniform(12, 20)) * unit
        o["phase"] = float(rng.uniform(0, 1))
        o["y"] = height - r - 1.5  # floor
    elif motion == "spinning":
        o["omega"] = float(rng.choice([-1, 1]) * rng.uniform(0.10, 0.20))  # rad per frame
    elif motion == "growing":
        o["s0"] = float(rng.uniform(0.4, 0.6))
        o["rate"] = float(rng.uniform(0.025, 0.035))  # scale per frame
    elif motion == "shrinking":
        o["s0"] = float(rng.uniform(1.2, 1.4))
        o["rate"] = float(rng.uniform(0.025, 0.035))
    return o


def sample_scene(rng, excluded=None, two_prob=0.2, frames=29, switch_prob=0.0, latents=8, ramp_prob=0.0,
                 width=SIZE, height=SIZE):
    """A random scene of width x height; switch_prob of them with a prompt switch (add_switch),
    ramp_prob of those gradual over 2-4 latent frames instead of at once. (At SIZE x SIZE the scene
    and its frames are those of a renderer without sizes, seed for seed.)"""
    excluded = heldout_set() if excluded is None else excluded
    if rng.random() < 0.3:
        bg = str(rng.choice(SPECIAL_BGS))
    else:
        bg = str(rng.choice(list(BG_SOLID)))
    n = 2 if rng.random() < two_prob else 1
    objs = [sample_object(rng, bg, (11, 15) if n == 1 else (8, 11), excluded, width, height) for _ in range(n)]
    if n == 2:
        # keep the two objects apart horizontally at the start
        a, b = objs
        sx = width / SIZE
        if abs(a["x"] - b["x"]) < 24 * sx and a["motion"] not in ("left", "right") and b["motion"] not in ("left", "right"):
            a["x"], b["x"] = 17.0 * sx, 47.0 * sx
    scene = {"bg": bg, "bg_seed": int(rng.integers(1 << 30)), "objects": objs, "frames": frames,
             "size": SIZE, "fps": FPS}
    if (width, height) != (SIZE, SIZE):
        scene["width"], scene["height"] = width, height
    if switch_prob > 0 and rng.random() < switch_prob:
        scene = add_switch(scene, rng, int(rng.integers(2, latents)), excluded)
        # (drawn only when asked for, so that seeds without ramps render as before)
        if "switch" in scene and ramp_prob > 0 and rng.random() < ramp_prob:
            scene["switch"]["chunks"] = int(rng.integers(2, 5))
    return scene


def add_switch(scene, rng, latent, excluded=None, t_stride=T_STRIDE):
    """Prompt switch inside a clip: from video frame 1 + t_stride*(latent-1) on (= latent frame
    `latent`), one attribute (object color, object shape or background) changes; everything else
    (object trajectory, background seed) continues. Captions: captions.caption_pair(). A switch with
    "chunks": N > 1 is gradual, as a prompt transition over N chunks is served: latent frame
    latent + i shows the old and the new scene cross-faded at progress (i + 1) / N
    (switch_progress), and is conditioned on the two captions' text-encoder outputs mixed alike."""
    excluded = heldout_set() if excluded is None else excluded
    o = scene["objects"][0]
    for _ in range(100):
        attr = str(rng.choice(["color", "color", "shape", "bg"]))
        if attr == "color":
            val = str(rng.choice([c for c in COLORS if c != o["color"]]))
            ok = _contrast_ok(val, scene["bg"]) and (val, o["shape"], o["motion"], scene["bg"]) not in excluded
        elif attr == "shape":
            val = str(rng.choice([s for s in SHAPES if s != o["shape"]]))
            ok = not (o["motion"] == "spinning" and val in ROUND) and (o["color"], val, o["motion"], scene["bg"]) not in excluded
        else:
            val = str(rng.choice([b for b in BACKGROUNDS if b != scene["bg"]]))
            ok = all(_contrast_ok(ob["color"], val) and (ob["color"], ob["shape"], ob["motion"], val) not in excluded
                     for ob in scene["objects"])
        if ok:
            scene["switch"] = {"latent": int(latent), "frame": 1 + t_stride * (int(latent) - 1), "attr": attr,
                               "value": val}
            return scene
    return scene


def switch_progress(sw, latent):
    """How far latent frame `latent` is into switch sw: 0 before it, (i + 1) / N in its i-th
    frame of N ("chunks", 1 = at once), then 1."""
    if latent < sw["latent"]:
        return 0.0
    return min(1.0, (latent - sw["latent"] + 1) / sw.get("chunks", 1))


def splice_latent(sw):
    """The first latent frame of switch sw that shows the new scene alone."""
    return sw["latent"] + sw.get("chunks", 1) - 1


def switched(scene):
    """The scene after its switch (no 'switch' key)."""
    import copy
    b = copy.deepcopy(scene)
    sw = b.pop("switch")
    if sw["attr"] == "bg":
        b["bg"] = sw["value"]
    else:
        b["objects"][0][sw["attr"]] = sw["value"]
    return b


def scene_from_combo(color, shape, motion, bg, seed=0, frames=29, width=SIZE, height=SIZE):
    """A single-object scene with given attributes (evaluation); object parameters from seed."""
    rng = np.random.default_rng(seed)
    for _ in range(1000):
        o = sample_object(rng, bg, (11, 15), set(), width, height)
        if o["motion"] == motion:
            break
    o["color"], o["shape"], o["motion"] = color, shape, motion
    scene = {"bg": bg, "bg_seed": int(rng.integers(1 << 30)), "objects": [o], "frames": frames, "size": SIZE,
             "fps": FPS}
    if (width, height) != (SIZE, SIZE):
        scene["width"], scene["height"] = width, height
    return scene


# ---- rendering ----------------------------------------------------------------------------------

def _poly_sdf(px, py, vx, vy):
    d = np.full(px.shape, np.inf, np.float32)
    s = np.ones(px.shape, np.float32)
    m = len(vx)
    for i in range(m):
        j = i - 1
        ex, ey = vx[j] - vx[i], vy[j] - vy[i]
        wx, wy = px - vx[i], py - vy[i]
        t = np.clip((wx * ex + wy * ey) / (ex * ex + ey * ey), 0.0, 1.0)
        bx, by = wx - ex * t, wy - ey * t
        d = np.minimum(d, bx * bx + by * by)
        c1 = py >= vy[i]
        c2 = py < vy[j]
        c3 = ex * wy > ey * wx
        flip = (c1 & c2 & c3) | (~c1 & ~c2 & ~c3)
        s = np.where(flip, -s, s)
    return s * np.sqrt(d)


def shape_sdf(shape, px, py, cx, cy, r, angle):
    dx, dy = px - cx, py - cy
    if shape == "circle":
        return np.sqrt(dx * dx + dy * dy) - r
    if shape == "ring":
        return np.abs(np.sqrt(dx * dx + dy * dy) - 0.72 * r) - 0.28 * r
    if shape == "square":
        k = 0.82 * r
        base = [(k, k), (-k, k), (-k, -k), (k, -k)]
    elif shape == "triangle":
        k = 1.12 * r
        base = [(k * math.cos(a), k * math.sin(a)) for a in (-math.pi / 2, math.pi / 6, 5 * math.pi / 6)]
        base = [(x, y + 0.15 * r) for x, y in base]
    elif shape == "star":
        k = 1.12 * r
        base = []
        for i in range(10):
            a = -math.pi / 2 + i * math.pi / 5
            rr = k if i % 2 == 0 else 0.45 * k
            base.append((rr * math.cos(a), rr * math.sin(a)))
    else:
        raise ValueError(shape)
    ca, sa = math.cos(angle), math.sin(angle)
    vx = np.array([cx + ca * x - sa * y for x, y in base], np.float32)
    vy = np.array([cy + sa * x + ca * y for x, y in base], np.float32)
    return _poly_sdf(px, py, vx, vy)


def object_state(o, k, size=(SIZE, SIZE)):
    """Center, radius and angle of object o at frame k of a frame of size (width, height)."""
    x, y, r, ang = o["x"], o["y"], o["r"], o["angle"]
    m = o["motion"]
    span_x, span_y = size[0] + 2 * 1.5 * r, size[1] + 2 * 1.5 * r
    if m in ("left", "right", "up", "down"):
        d = o["speed"] * k
        if m == "left":
            x = x - d
        elif m == "right":
            x = x + d
        elif m == "up":
            y = y - d
        else:
            y = y + d
        x = (x + 1.5 * r) % span_x - 1.5 * r
        y = (y + 1.5 * r) % span_y - 1.5 * r
    elif m == "bouncing":
        y = o["y"] - o["amp"] * abs(math.sin(math.pi * (k / o["period"] + o["phase"])))
    elif m == "spinning":
        ang = ang + o["omega"] * k
    elif m == "growing":
        r = r * min(o["s0"] + o["rate"] * k, 1.4)
    elif m == "shrinking":
        r = r * max(o["s0"] - o["rate"] * k, 0.4)
    return x, y, r, ang


_GRIDS = {}


def _grid(width=SIZE, height=SIZE):
    if (width, height) not in _GRIDS:
        yy, xx = np.mgrid[0:height, 0:width].astype(np.float32) + 0.5
        _GRIDS[width, height] = (xx, yy)
    return _GRIDS[width, height]


def _lerp_rows(stops, n):
    """stops: list of (pos in [0,1], rgb) -> [n, 3] float."""
    t = (np.arange(n) + 0.5) / n
    out = np.zeros((n, 3), np.float32)
    for c in range(3):
        out[:, c] = np.interp(t, [s[0] for s in stops], [s[1][c] for s in stops])
    return out


def render_background(scene, k, rng_state):
    bg = scene["bg"]
    W, H = scene_size(scene)
    xx, yy = _grid(W, H)
    if bg in BG_SOLID:
        img = np.empty((H, W, 3), np.float32)
        img[:] = BG_SOLID[bg]
        return img
    if bg == "sunset":
        rows = _lerp_rows([(0, (60, 30, 110)), (0.45, (200, 70, 80)), (0.75, (240, 130, 50)), (1, (250, 195, 80))], H)
        return np.repeat(rows[:, None, :], W, axis=1).copy()
    if bg == "night":
        rows = _lerp_rows([(0, (6, 8, 28)), (1, (22, 26, 62))], H)
        img = np.repeat(rows[:, None, :], W, axis=1).copy()
        sx, sy, sb, sp = rng_state["stars"]
        tw = 0.75 + 0.25 * np.sin(sp + 0.4 * k)
        for x, y, b, t in zip(sx, sy, sb, tw):
            img[y, x] = np.maximum(img[y, x], b * t)
        return img
    if bg == "snow":
        rows = _lerp_rows([(0, (70, 85, 115)), (1, (115, 125, 150))], H)
        img = np.repeat(rows[:, None, :], W, axis=1).copy()
        fx, fy, fr, fv, fp = rng_state["flakes"]
        cy = (fy + fv * k) % (H + 4) - 2
        cx = fx + 1.5 * np.sin(fp + 0.15 * k)
        for x, y, r in zip(cx, cy, fr):
            x0, x1 = int(max(0, x - 3)), int(min(W, x + 4))
            y0, y1 = int(max(0, y - 3)), int(min(H, y + 4))
            if x0 >= x1 or y0 >= y1:
                continue
            d = np.sqrt((xx[y0:y1, x0:x1] - x) ** 2 + (yy[y0:y1, x0:x1] - y) ** 2) - r
            a = np.clip(0.5 - d, 0, 1)[..., None]
            img[y0:y1, x0:x1] = img[y0:y1, x0:x1] * (1 - a) + 240 * a
        return img
    raise ValueError(bg)


def render(scene):
    """-> uint8 [T, H, W, 3] (scene_size; SIZE x SIZE unless the scene says otherwise)"""
    if "switch" in scene:
        a = render({k: v for k, v in scene.items() if k != "switch"})
        b = render(switched(scene))
        sw = scene["switch"]
        out = a.copy()
        for k in range(sw["frame"], len(a)):
            p = switch_progress(sw, 1 + (k - 1) // T_STRIDE)
            out[k] = np.clip((1 - p) * a[k].astype(np.float32) + p * b[k] + 0.5, 0, 255).astype(np.uint8)
        return out
    T = scene["frames"]
    W, H = scene_size(scene)
    # (the star and flake counts are the square's at every size: the draws, and so the 64x64 frames,
    # stay those of the renderer before sizes)
    rng = np.random.default_rng(scene["bg_seed"])
    state = {}
    if scene["bg"] == "night":
        n = int(rng.integers(22, 36))
        state["stars"] = (rng.integers(0, W, n), rng.integers(0, H, n), rng.uniform(140, 255, n),
                          rng.uniform(0, 2 * math.pi, n))
    elif scene["bg"] == "snow":
        n = int(rng.integers(30, 45))
        state["flakes"] = (rng.uniform(0, W, n), rng.uniform(0, H, n), rng.uniform(0.7, 1.5, n),
                           rng.uniform(0.5, 1.2, n), rng.uniform(0, 2 * math.pi, n))
    xx, yy = _grid(W, H)
    frames = np.empty((T, H, W, 3), np.uint8)
    t0 = scene.get("t0", 0)
    for i in range(T):
        k = t0 + i
        img = render_background(scene, k, state)
        for o in scene["objects"]:
            cx, cy, r, ang = object_state(o, k, (W, H))
            x0, x1 = int(max(0, cx - 1.6 * r - 2)), int(min(W, cx + 1.6 * r + 3))
            y0, y1 = int(max(0, cy - 1.6 * r - 2)), int(min(H, cy + 1.6 * r + 3))
            if x0 >= x1 or y0 >= y1:
                continue
            sd = shape_sdf(o["shape"], xx[y0:y1, x0:x1], yy[y0:y1, x0:x1], cx, cy, r, ang)
            a = np.clip(0.5 - sd, 0, 1)[..., None]
            img[y0:y1, x0:x1] = img[y0:y1, x0:x1] * (1 - a) + np.array(COLORS[o["color"]], np.float32) * a
        frames[i] = np.clip(img + 0.5, 0, 255).astype(np.uint8)
    return frames


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--preview", default=None)
    ap.add_argument("--write-heldout", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if args.write_heldout:
        with open(os.path.join(HERE, "heldout.json"), "w") as f:
            json.dump(make_heldout(), f, indent=1)
        print("wrote heldout.json")
    if args.preview:
        import sys
        sys.path.insert(0, HERE)
        import png
        rng = np.random.default_rng(args.seed)
        rows = []
        for i in range(12):
            sc = sample_scene(rng)
            fr = render(sc)
            rows.append([fr[k] for k in range(0, 29, 4)])
        png.write_png(args.preview, png.upscale(png.grid(rows), 2))


if __name__ == "__main__":
    main()
