"""The prompts of the server evaluation (tools/eval/server-eval.ts), as JSON on stdout:
the 40 held-out (color, shape, motion, background) combinations with their canonical captions and
ground truth, so the TypeScript driver and the scorer share one definition.

  python3 tools/eval/plan.py
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data"))
import render  # noqa: E402


def main():
    combos = render.load_heldout()["combinations"]
    plan = [{"id": f"heldout-{i:02d}", "prompt": render.canonical_caption(*c),
             "truth": dict(zip(("color", "shape", "motion", "background"), c))} for i, c in enumerate(combos)]
    json.dump(plan, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
