"""kino-tiny's prompt extender: reads a given first frame and names what a prompt left out.

From a prompt that names only the motion ("moving right"), a stream started from an image keeps the
object's color in two streams of three and its shape in one of three (NOTES.md, "Where the color is
lost"); with the whole caption beside the same image, in nearly every stream. Wan's own pipelines
close that gap outside the DiT: their prompt extension has a vision-language model read the input
image and rewrite the prompt before the text encoder sees it. kino-tiny's world is closed (its
renderer's ten colors, five shapes and fourteen backgrounds), so a small classifier is its
vision-language model: it reads the frame and says the object's color and shape, the background, and
whether there are one or two objects; the server (src/models/prompt-extension.ts) words what the prompt
does not already say with the captions' own phrases.

The network is made of ops the runtime already has (conv2d, GELU, a GEMM, one attention): five 3x3
convolutions (stride 2, 2, 2, 1, 1) with exact GELU, then attention pooling — four learned queries
(color, shape, background, count) attend to the 8x8 (or 14x8) feature map — and one linear layer whose
rows for each query's classes are read from that query's output. Any frame size the DiT makes works
(64x64, 112x64, 64x112): the pooling does not care how many positions there are.

  python3 tools/train/prompt_extender.py --steps 4000 --small-share 0 --out build/train/prompt-extender
  python3 tools/train/prompt_extender.py --init build/train/prompt-extender/ckpt.pt --steps 1500 --lr 1e-3 \
      --out build/train/prompt-extender-small     (a third of the objects drawn small: what it misread)
  python3 tools/train/prompt_extender.py --eval build/train/prompt-extender/ckpt.pt
  python3 tools/train/prompt_extender.py --export build/train/prompt-extender-small/ckpt.pt --to models/kino-tiny
      (to models/kino-tiny it also writes test/fixtures/prompt-extender-readings.json, what PyTorch
      reads in three frames, which test/models/image-attributes.test.ts holds the runtime to)
"""
import argparse
import base64
import json
import math
import os
import sys
import time
from collections import Counter

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "data"))
import render  # noqa: E402
import st  # noqa: E402
from captions import BG_PHRASES, SOLID_BG_PHRASES  # noqa: E402

COLORS = list(render.COLORS)
SHAPES = list(render.SHAPES)
BACKGROUNDS = list(render.BACKGROUNDS)
COUNTS = ["one", "two"]
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
SHIPPED = os.path.join(REPO, "models", "kino-tiny")
CHECK_FIXTURE = os.path.join(REPO, "test", "fixtures", "prompt-extender-readings.json")
HEADS = [("color", COLORS), ("shape", SHAPES), ("background", BACKGROUNDS), ("count", COUNTS)]
SIZES = [(64, 64), (112, 64), (64, 112)]  # the DiT's native sizes (CFG "native_sizes")
WIDTHS = [32, 64, 96, 96, 96]
STRIDES = [2, 2, 2, 1, 1]
DIM = 96


class PromptExtender(nn.Module):
    def __init__(self):
        super().__init__()
        chans = [3] + WIDTHS
        self.convs = nn.ModuleList(nn.Conv2d(chans[i], chans[i + 1], 3, stride=STRIDES[i], padding=1)
                                   for i in range(len(WIDTHS)))
        self.kv = nn.Linear(DIM, 2 * DIM)
        self.queries = nn.Parameter(torch.randn(len(HEADS), DIM) * 0.02)
        self.head = nn.Linear(DIM, sum(len(c) for _, c in HEADS))

    def forward(self, x):
        """x [B, 3, H, W] in [-1, 1] -> one logit tensor per head, [B, classes]."""
        for conv in self.convs:
            x = F.gelu(conv(x))
        tokens = x.flatten(2).transpose(1, 2)  # [B, N, DIM], raster order
        k, v = self.kv(tokens).chunk(2, dim=-1)
        att = torch.softmax(self.queries @ k.transpose(1, 2) / math.sqrt(DIM), dim=-1)  # [B, Q, N]
        pooled = att @ v  # [B, Q, DIM]
        logits, start = [], 0
        for q, (_, classes) in enumerate(HEADS):
            rows = slice(start, start + len(classes))
            logits.append(F.linear(pooled[:, q], self.head.weight[rows], self.head.bias[rows]))
            start += len(classes)
        return logits


def to_input(frames):
    """uint8 [B, H, W, 3] -> [B, 3, H, W] in [-1, 1] (the VAE's range, as the server converts)."""
    return torch.from_numpy(frames).permute(0, 3, 1, 2).float() / 127.5 - 1


def labels(scene):
    one = len(scene["objects"]) == 1
    o = scene["objects"][0]
    # a two-object frame teaches only the count and the background: its object heads are ignored (-100)
    return [COLORS.index(o["color"]) if one else -100, SHAPES.index(o["shape"]) if one else -100,
            BACKGROUNDS.index(scene["bg"]), 0 if one else 1]


def batch(rng, n, size, two_prob=0.2, small_share=0.3):
    """n first frames of training scenes (never a held-out combination) at one size, with light pixel
    noise so the classifier does not key on exact renderer values."""
    w, h = size
    scenes = [render.sample_scene(rng, frames=1, width=w, height=h, two_prob=two_prob) for _ in range(n)]
    for s in scenes:
        # a growing object's first frame is as small as 0.4 of its radius, a ninth of the scenes: a third
        # of all objects drawn that small too, so small shapes are not the rare case
        if rng.random() < small_share:
            for o in s["objects"]:
                o["r"] *= float(rng.uniform(0.4, 0.75))
    frames = np.stack([render.render(s)[0] for s in scenes]).astype(np.float32)
    frames += rng.normal(0, rng.uniform(0, 4), size=(n, 1, 1, 1)) * rng.standard_normal(frames.shape)
    x = to_input(np.clip(frames + 0.5, 0, 255).astype(np.uint8))
    return blur(x, rng), torch.tensor([labels(s) for s in scenes])


def blur(x, rng, share=0.3):
    """A share of the frames softened (Gaussian, sigma 0.3-1 px), as frames a model drew or a codec
    passed are: the reader must not key on the renderer's sharp edges."""
    for i in np.nonzero(rng.random(len(x)) < share)[0]:
        sigma = float(rng.uniform(0.3, 1.0))
        g = torch.exp(-torch.arange(-2, 3, dtype=torch.float32) ** 2 / (2 * sigma * sigma))
        k = (g[:, None] * g[None, :] / g.sum() ** 2).expand(3, 1, 5, 5)
        x[i] = F.conv2d(F.pad(x[i:i + 1], (2, 2, 2, 2), mode="replicate"), k, groups=3)[0]
    return x


def loss_of(model, x, y):
    return sum(F.cross_entropy(lg, y[:, i], ignore_index=-100) for i, lg in enumerate(model(x)))


def train(args):
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    model = load(args.init) if args.init else PromptExtender()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    started = time.time()
    for step in range(1, args.steps + 1):
        lr = args.lr * min(1.0, step / 200) * 0.5 * (1 + math.cos(math.pi * step / args.steps))
        for g in opt.param_groups:
            g["lr"] = lr
        size = SIZES[0] if rng.random() < 0.6 else SIZES[1 + int(rng.integers(2))]
        x, y = batch(rng, args.batch, size, small_share=args.small_share)
        loss = loss_of(model, x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 100 == 0 or step == args.steps:
            print(f"step {step} loss {loss.item():.4f} lr {lr:.2e} {time.time() - started:.0f}s", flush=True)
    os.makedirs(args.out, exist_ok=True)
    torch.save({"step": args.steps, "model": model.state_dict()}, os.path.join(args.out, "ckpt.pt"))
    evaluate(model)


@torch.no_grad()
def evaluate(model, seeds=(0, 1, 2)):
    """Accuracy on the held-out combinations' first frames (the frames server-eval --first-frames
    gives the server), at every native size, and the count on training two-object frames."""
    model.eval()
    combos = render.load_heldout()["combinations"]
    for w, h in SIZES:
        hits, misses = np.zeros(3), Counter()
        for seed in seeds:
            scenes = [render.scene_from_combo(*c, seed=seed, frames=1, width=w, height=h) for c in combos]
            x = to_input(np.stack([render.render(s)[0] for s in scenes]))
            logits = model(x)
            for i, s in enumerate(scenes):
                truth = labels(s)
                got = [int(lg[i].argmax()) for lg in logits]
                for k in range(3):
                    hits[k] += got[k] == truth[k]
                    if got[k] != truth[k]:
                        misses[f"{HEADS[k][1][truth[k]]}→{HEADS[k][1][got[k]]}"] += 1
                if got[3] != 0:
                    misses["one→two"] += 1
        n = len(combos) * len(seeds)
        print(f"{w}x{h}: color {hits[0] / n:.1%}, shape {hits[1] / n:.1%}, background {hits[2] / n:.1%}"
              f"; misses {', '.join(f'{m} ×{k}' for m, k in misses.most_common(12)) or 'none'}")
    x, y = batch(np.random.default_rng(99), 200, SIZES[0], two_prob=1.0)
    print(f"two-object frames read as two: {(model(x)[3].argmax(1) == 1).float().mean():.1%}")


def phrases():
    """The captions' canonical phrases, which the server words the attributes with."""
    return {"background_solid": SOLID_BG_PHRASES[0], "background_special": {b: p[0] for b, p in BG_PHRASES.items()}}


def load(path):
    model = PromptExtender()
    model.load_state_dict(torch.load(path, map_location="cpu")["model"])
    return model


def export(args):
    model = load(args.export)
    out = os.path.join(args.to, "prompt_extender")
    os.makedirs(out, exist_ok=True)
    sd = {name: t.detach().float().contiguous() for name, t in model.state_dict().items()}
    st.save(sd, os.path.join(out, "model.safetensors"), dtype="F32", meta={"format": "pt"})
    config = {"_class_name": "KinoPromptExtender", "widths": WIDTHS, "strides": STRIDES, "dim": DIM,
              "heads": {name: classes for name, classes in HEADS}, **phrases()}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    print(f"wrote {out}")
    check = args.check or (CHECK_FIXTURE if os.path.abspath(args.to) == SHIPPED else None)
    if check:
        write_check(model, check)


@torch.no_grad()
def write_check(model, path):
    """What PyTorch reads in three frames (one at each native size, the last with two objects), for
    test/models/image-attributes.test.ts to hold the runtime's network to: each attribute's choice and
    logits."""
    model.eval()
    rng = np.random.default_rng(5)
    frames = [render.render(render.scene_from_combo("orange", "star", "left", "night", seed=3, frames=1))[0],
              render.render(render.scene_from_combo("cyan", "ring", "still", "gray", seed=4, frames=1, width=112, height=64))[0],
              render.render(render.sample_scene(rng, frames=1, width=64, height=112, two_prob=1.0))[0]]
    cases = []
    for frame in frames:
        logits = model(to_input(frame[None]))
        readings = {}
        for (name, classes), lg in zip(HEADS, logits):
            readings[name] = {"label": classes[int(lg[0].argmax())], "logits": [round(float(v), 5) for v in lg[0]]}
        cases.append({"width": frame.shape[1], "height": frame.shape[0],
                      "rgb_base64": base64.b64encode(frame.tobytes()).decode(), "readings": readings})
    with open(path, "w") as f:
        json.dump(cases, f, indent=1)
    print(f"wrote {path}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=4000)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--out", default=os.path.join(REPO, "build", "train", "prompt-extender"))
    p.add_argument("--init", help="a checkpoint to continue from")
    p.add_argument("--small-share", type=float, default=0.3,
                   help="the share of frames whose objects are drawn at 0.4-0.75 of their radius")
    p.add_argument("--eval")
    p.add_argument("--export")
    p.add_argument("--to", default=SHIPPED)
    p.add_argument("--check", help="where the export writes what PyTorch reads in three frames (default: the "
                   "test fixture when exporting to models/kino-tiny, else nowhere)")
    args = p.parse_args()
    torch.set_num_threads(2)
    if args.eval:
        evaluate(load(args.eval))
    elif args.export:
        export(args)
    else:
        train(args)


if __name__ == "__main__":
    main()
