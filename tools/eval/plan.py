"""The prompts of the server evaluation (tools/eval/server-eval.ts), as JSON on stdout:
the 40 held-out (color, shape, motion, background) combinations with their canonical captions and
ground truth, so the TypeScript driver and the scorer share one definition.

  python3 tools/eval/plan.py
  python3 tools/eval/plan.py --first-frames DIR   # image-to-video: each combination's first frame,
                                                  # rendered into DIR as PNG, and a prompt that says
                                                  # only how the object moves ("moving right")
                               [--frame-size WxH]  # the first frames' size (default 64x64)
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data"))
import png  # noqa: E402
import captions  # noqa: E402
import render  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--first-frames", default=None)
    ap.add_argument("--full-prompts", action="store_true",
                    help="with --first-frames: the canonical caption beside the image, not only the motion")
    ap.add_argument("--frame-size", default="64x64", help="with --first-frames: WxH of the rendered frames")
    args = ap.parse_args()
    combos = render.load_heldout()["combinations"]
    width, height = (int(v) for v in args.frame_size.split("x"))
    plan = []
    for i, c in enumerate(combos):
        item = {"id": f"heldout-{i:02d}", "prompt": captions.canonical_caption(*c),
                "truth": dict(zip(("color", "shape", "motion", "background"), c))}
        if args.first_frames:
            scene = render.scene_from_combo(*c, seed=i, frames=1, width=width, height=height)
            os.makedirs(args.first_frames, exist_ok=True)
            path = os.path.join(os.path.abspath(args.first_frames), f"first-frame-{i:02d}.png")
            png.write_png(path, render.render(scene)[0])
            item.update(id=f"first-frame-{i:02d}", reference=path,
                        prompt=item["prompt"] if args.full_prompts else captions.motion_caption(scene))
        plan.append(item)
    json.dump(plan, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
