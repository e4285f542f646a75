"""Scores what tools/eval/server-eval.ts fetched from a running kino server (its manifest.json):

* held-out combinations: each MP4 decoded by ffmpeg, classified by metrics.classify() -> accuracy of
  object color, background, shape and motion direction (thresholds from the kino-tiny issue);
* transitions: the realtime stream of each session decoded, the object's hue measured per generation
  chunk (median RGB of the object mask) -> a red->blue transition over N chunks must move the hue
  monotonically towards blue over the N affected chunks and be classified blue from the N-th on.

  python3 tools/eval/score.py build/eval/manifest.json      # prints a report, writes results.json
"""
import colorsys
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import metrics  # noqa: E402

THRESHOLDS = {"color": 0.90, "background": 0.90, "shape": 0.70, "motion": 0.80}


def decode(path, size=64):
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
                         check=True, capture_output=True).stdout
    return np.frombuffer(raw, np.uint8).reshape(-1, size, size, 3)


def heldout(items):
    preds, truths = [], []
    for it in items:
        p = metrics.classify(decode(it["file"]))
        it["pred"] = p
        preds.append(p)
        truths.append(it["truth"])
    return metrics.score(preds, truths)


def hue_deg(rgb):
    h, _, _ = colorsys.rgb_to_hsv(*(np.asarray(rgb, np.float64) / 255.0))
    return h * 360.0


def transition(t):
    """Per generation chunk: the object's median color, its hue and its color class."""
    frames = decode(t["file"])
    _, rows = metrics.classify_background(frames)
    out, start = [], 0
    for c in t["chunks"]:
        fr = frames[start:start + c["num_frames"]]
        start += c["num_frames"]
        masks = [metrics.object_mask(f, rows) for f in fr]
        px = [f[m] for f, m in zip(fr, masks) if m is not None]
        if not px:
            out.append({"chunk": c["generation_chunk_index"], "color": None, "hue": None})
            continue
        med = np.median(np.concatenate(px).astype(np.float32), axis=0)
        out.append({"chunk": c["generation_chunk_index"], "rgb": [round(float(v)) for v in med],
                    "hue": round(hue_deg(med), 1), "color": metrics.classify_color(fr, masks)})
    first, n = t["first_affected_chunk"], max(1, t["transition_chunks"])
    # red sits at 0/360 degrees, blue at 240: unwrap so that red -> purple -> blue is decreasing
    unwrap = lambda h: None if h is None else (h + 360.0 if h < 120.0 else h)
    path = [unwrap(out[i]["hue"]) for i in range(first - 1, min(first + n, len(out)))]
    monotonic = all(a is not None and b is not None and b <= a + 5.0 for a, b in zip(path, path[1:]))
    blue_from = first + n - 1
    blue_after = all(o["color"] == "blue" for o in out[blue_from:])
    red_before = all(o["color"] == "red" for o in out[1:first])  # chunk 0 is a single frame
    return {"name": t["name"], "transition_chunks": t["transition_chunks"], "first_affected_chunk": first,
            "per_chunk": out, "red_before": red_before, "monotonic": monotonic,
            "blue_from_chunk": blue_from, "blue_after": blue_after,
            "pass": red_before and monotonic and blue_after}


def main():
    manifest_path = sys.argv[1]
    m = json.load(open(manifest_path))
    res = {"heldout": heldout(m["heldout"]), "transitions": [transition(t) for t in m["transitions"]],
           "determinism": m.get("determinism"), "items": m["heldout"]}
    res["heldout_pass"] = {k: res["heldout"][k] >= v for k, v in THRESHOLDS.items()}
    out = os.path.join(os.path.dirname(manifest_path), "results.json")
    json.dump(res, open(out, "w"), indent=1)
    print(f"held-out combinations ({len(m['heldout'])} prompts):")
    for k, v in THRESHOLDS.items():
        print(f"  {k:10s} {res['heldout'][k] * 100:5.1f} %  (target >= {v * 100:.0f} %)")
    for t in res["transitions"]:
        hues = " ".join("-" if o["hue"] is None else f"{o['hue']:.0f}" for o in t["per_chunk"])
        print(f"transition {t['name']}: hue per chunk {hues}; red before {t['red_before']}, monotonic "
              f"{t['monotonic']}, blue from chunk {t['blue_from_chunk']} {t['blue_after']} -> "
              f"{'pass' if t['pass'] else 'FAIL'}")
    if res["determinism"]:
        print("determinism:", json.dumps(res["determinism"]))
    print("->", out)


if __name__ == "__main__":
    main()
