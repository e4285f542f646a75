"""The DiT's training data by clip size, and which clips each share of a batch draws from
(train_dit.py's docstring names the shares)."""
import glob
from types import SimpleNamespace

import numpy as np
import torch

import common  # noqa: F401  (puts tools/data on the path)
import render  # noqa: E402  (tools/data)


def load_data(path, max_shards=None):
    """-> {(width, height): (latents, scenes)}, the shards grouped by their clips' size."""
    files = sorted(glob.glob(f"{path}/shard_*.pt"))
    if max_shards:
        files = files[:max_shards]
    groups = {}
    for f in files:
        d = torch.load(f)
        size = tuple(d.get("size", (render.SIZE, render.SIZE)))
        lats, scenes = groups.setdefault(size, ([], []))
        lats.append(d["latents"])
        scenes.extend(d["scenes"])
    return {size: (torch.cat(lats), scenes) for size, (lats, scenes) in sorted(groups.items())}


def batch_plan(lat, scenes, args):
    """The clips of one size and which of them each share of a batch draws from (train_dit's
    docstring): index arrays and per-batch counts; a share whose clips this size lacks gets none."""
    p = SimpleNamespace(lat=lat, scenes=scenes)
    p.ramps = np.array([i for i, sc in enumerate(scenes) if sc.get("switch", {}).get("chunks", 1) > 1])
    p.n_ramp = int(round(args.ramp_share * args.bs)) if len(p.ramps) else 0
    p.n_ramp_cont = int(round(args.ramp_cont_share * p.n_ramp))  # the first of the ramps
    p.color_ramps = np.array([i for i in p.ramps if scenes[i]["switch"]["attr"] == "color"])
    p.n_ramp_color = int(round(args.ramp_color_share * p.n_ramp)) if len(p.color_ramps) else 0
    p.plain = np.array([i for i, sc in enumerate(scenes) if "switch" not in sc])
    p.hard_switches = np.array([i for i, sc in enumerate(scenes)
                                if "switch" in sc and sc["switch"].get("chunks", 1) == 1])
    p.n_twin = int(round(args.twin_clip_share * args.bs))  # the last n_twin clips of a batch
    p.n_twin_ctx = int(round(args.twin_ctx_share * p.n_twin))  # the last of those show a circle past too
    p.n_twin_star = int(round(args.twin_star_share * p.n_twin))  # the first of those have a star
    p.stars = np.array([i for i in p.plain if any(o["shape"] == "star" for o in scenes[i]["objects"])])
    p.star_scenes = np.array([i for i, sc in enumerate(scenes) if any(o["shape"] == "star" for o in sc["objects"])])
    p.n_own = int(round(args.own_past_share * args.bs))  # the clips after the ramps
    p.n_own_in = int(round(args.own_input_share * p.n_own))  # the first of those
    p.n_given = int(round(args.first_frame_share * args.bs)) if len(p.plain) else 0  # just before the twins
    assert p.n_ramp + p.n_own + p.n_twin + p.n_given <= args.bs, "ramp, own-past, twin and first-frame shares overlap"
    p.own = slice(p.n_ramp, p.n_ramp + p.n_own)
    p.given = slice(args.bs - p.n_twin - p.n_given, args.bs - p.n_twin)
    p.n_cont = int(round(args.cont_share * (args.bs - p.n_ramp - p.n_own - p.n_twin - p.n_given)))
    p.cont = slice(p.n_ramp + p.n_own, p.n_ramp + p.n_own + p.n_cont)  # the first after the own-past clips
    p.n_cont_switch = int(round(args.cont_switch_share * p.n_cont)) if len(p.hard_switches) else 0
    return p


def size_weights(sizes, plans, spec):
    """Each size's chance per step: spec "WxH:w,..." (sizes it omits: 0), else its share of the clips."""
    if not spec:
        w = np.array([len(p.scenes) for p in plans], float)
    else:
        given = {tuple(map(int, k.split("x"))): float(v) for k, v in (x.split(":") for x in spec.split(","))}
        w = np.array([given.get(s, 0.0) for s in sizes])
    return w / w.sum()
