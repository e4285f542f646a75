"""Scores what tools/eval/server-eval.ts fetched from a running kino server (its manifest.json):

* held-out combinations: each MP4 decoded by ffmpeg, classified by metrics.classify() -> accuracy of
  object color, background, shape and motion direction (thresholds from the kino-tiny issue);
* transitions: the realtime stream of each session decoded, the object's hue measured per generation
  chunk on its last frame (and as the median over its frames) -> a red->blue
  transition over N chunks must move the hue monotonically towards blue over the N affected chunks
  and be classified blue from the N-th on;
* image-to-video clips (server-eval.ts --first-frames: the item names its reference image): the
  attributes read on the frames after the first (the first is the given image), and the first
  frame's PSNR against the reference (target >= 25 dB);
* and, to say why: each attribute's misses (truth -> predicted) and the snow and night clips' share of
  flake and star pixels (metrics.speckle_fraction).

  python3 tools/eval/score.py build/eval/manifest.json      # prints a report, writes results.json

Videos of another size than 64x64 (the manifest's "size") are resampled by ffmpeg (area filter) to a
shorter side of 64, the scale the classifiers are calibrated at, keeping the aspect ratio: 480x272
is scored at 113x64, 272x480 at 64x113.
"""
import json
import os
import subprocess
import sys
from collections import Counter

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import metrics  # noqa: E402

THRESHOLDS = {"color": 0.90, "background": 0.90, "shape": 0.70, "motion": 0.80}


SIZE = (64, 64)  # the manifest's video size (main sets it)


def scored_size(width, height, short=64):
    """(w, h) with the shorter side `short`, the aspect ratio kept."""
    k = short / min(width, height)
    return round(width * k), round(height * k)


def decode(path):
    w, h = scored_size(*SIZE)
    scale = [] if (w, h) == SIZE else ["-vf", f"scale={w}:{h}:flags=area"]
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", path, *scale, "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
                         check=True, capture_output=True).stdout
    return np.frombuffer(raw, np.uint8).reshape(-1, h, w, 3)


FIRST_FRAME_PSNR = 25.0


def psnr(a, b):
    se = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return float(10 * np.log10(255 ** 2 / max(se, 1e-10)))


def reference_rgb(path):
    w, h = scored_size(*SIZE)
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-vf", f"scale={w}:{h}:flags=area", "-f", "rawvideo",
                          "-pix_fmt", "rgb24", "-"], check=True, capture_output=True).stdout
    return np.frombuffer(raw, np.uint8).reshape(h, w, 3)


def heldout(items):
    preds, truths = [], []
    for it in items:
        frames = decode(it["file"])
        if "reference" in it:  # the first frame is the given image: the model's work is the rest
            it["first_frame_psnr"] = psnr(frames[0], reference_rgb(it["reference"]))
            frames = frames[1:]
        p = metrics.classify(frames)
        it["pred"] = p
        if it["truth"]["background"] in metrics.SPECKLED:
            it["speckles"] = metrics.speckle_fraction(frames)
        preds.append(p)
        truths.append(it["truth"])
    return metrics.score(preds, truths)


def misses(items):
    """-> one line per attribute: its misses as 'truth -> predicted xN', the most frequent first."""
    lines = []
    for attr in THRESHOLDS:
        pairs = Counter((it["truth"][attr], it["pred"][attr]) for it in items if it["truth"][attr] != it["pred"][attr])
        if pairs:
            lines.append(f"  {attr} misses: " + ", ".join(f"{t} -> {p} x{n}" for (t, p), n in pairs.most_common()))
    return lines


def speckles(items):
    """-> a line: the mean share of flake/star pixels in the generated clips of each speckled background."""
    means = []
    for bg in metrics.SPECKLED:
        fracs = [it["speckles"] for it in items if "speckles" in it and it["truth"]["background"] == bg]
        if fracs:
            means.append(f"{bg} {100 * np.mean(fracs):.2f} % ({len(fracs)} clips)")
    return [f"  flakes and stars (small bright blobs; renders: snow 2-4 %, night ~0.6 %): {', '.join(means)}"] if means else []


def transition(t):
    frames = decode(t["file"])
    res = metrics.judge_transition(frames, [c["num_frames"] for c in t["chunks"]], t["first_affected_chunk"],
                                   t["transition_chunks"])
    return {"name": t["name"], **res}


def transition_counts(results):
    """-> one line per transition length: how many sessions pass by chunk medians and by each chunk's
    last frame (the measure that counts: a chunk's median can hide an overshoot; docs/MODEL.md)."""
    lines = []
    for n in sorted({t["transition_chunks"] for t in results}):
        ts = [t for t in results if t["transition_chunks"] == n]
        lines.append(f"transitions over {n} chunks: {sum(t['last_frame']['pass'] for t in ts)} of {len(ts)} "
                     f"by last frames, {sum(t['pass'] for t in ts)} of {len(ts)} by chunk medians")
    return lines


def main():
    manifest_path = sys.argv[1]
    m = json.load(open(manifest_path))
    global SIZE
    SIZE = tuple(map(int, m.get("size", "64x64").split("x")))
    res = {"heldout": heldout(m["heldout"]), "transitions": [transition(t) for t in m["transitions"]],
           "determinism": m.get("determinism"), "items": m["heldout"]}
    res["heldout_pass"] = {k: res["heldout"][k] >= v for k, v in THRESHOLDS.items()}
    out = os.path.join(os.path.dirname(manifest_path), "results.json")
    json.dump(res, open(out, "w"), indent=1)
    w, h = scored_size(*SIZE)
    print(f"held-out combinations ({len(m['heldout'])} clips at {SIZE[0]}x{SIZE[1]}"
          f"{f', scored at {w}x{h}' if (w, h) != SIZE else ''}):")
    for k, v in THRESHOLDS.items():
        print(f"  {k:10s} {res['heldout'][k] * 100:5.1f} %  (target >= {v * 100:.0f} %)")
    for line in misses(m["heldout"]) + speckles(m["heldout"]):
        print(line)
    firsts = [it["first_frame_psnr"] for it in m["heldout"] if "first_frame_psnr" in it]
    if firsts:
        res["first_frame_psnr"] = {"mean": float(np.mean(firsts)), "min": float(np.min(firsts))}
        print(f"  first frame against the image: PSNR mean {np.mean(firsts):.1f} dB, min {np.min(firsts):.1f} dB "
              f"(target >= {FIRST_FRAME_PSNR:.0f} dB)")
        json.dump(res, open(out, "w"), indent=1)
    for t in res["transitions"]:
        print(f"transition {t['name']}: {metrics.transition_line(t)}")
    for line in transition_counts(res["transitions"]):
        print(line)
    if res["determinism"]:
        print("determinism:", json.dumps(res["determinism"]))
    print("->", out)


if __name__ == "__main__":
    main()
