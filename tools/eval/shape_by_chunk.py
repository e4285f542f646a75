"""Where a stream loses its shapes: the held-out clips of a server evaluation (server-eval.ts's
manifest.json) classified chunk by chunk — frame 0 (the first chunk, made from noise) and then each
4-frame chunk (carried on from the KV cache) — with metrics.classify_shape, per true shape.

  python3 tools/eval/shape_by_chunk.py build/eval/manifest.json

A chunk whose object touches the border is not classified (metrics._inside), so moving objects that
wrap around count as misses in some late chunks: compare two models' rows with each other, not a row
with the clip-level shape score.
"""
import collections
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import metrics  # noqa: E402
import score  # noqa: E402


def chunk_spans(n_frames, chunk=4):
    """Frame 0 alone, then chunks of `chunk` frames (the server's streaming layout)."""
    return [(0, 1)] + [(a, min(a + chunk, n_frames)) for a in range(1, n_frames, chunk)]


def main():
    manifest = json.load(open(sys.argv[1]))
    hits, totals = collections.defaultdict(collections.Counter), collections.Counter()
    spans = None
    for item in manifest["heldout"]:
        frames = score.decode(item["file"])
        spans = spans or chunk_spans(len(frames))
        truth = item["truth"]["shape"]
        totals[truth] += 1
        _, rows = metrics.classify_background(frames)  # masks as metrics.classify makes them, per frame
        outlines = [metrics.shape_mask(f, rows, metrics.object_mask(f, rows)) for f in frames]
        for k, (a, b) in enumerate(spans):
            hits[truth][k] += metrics.classify_shape(outlines[a:b]) == truth
    print("true shape per chunk (frame 0, then 4-frame chunks):")
    for shape, n in sorted(totals.items()):
        print(f"  {shape:9s} {' '.join(f'{hits[shape][k]:2d}' for k in range(len(spans)))}   of {n}")
    all_hits = [sum(hits[s][k] for s in totals) for k in range(len(spans))]
    print(f"  {'all':9s} {' '.join(f'{h:2d}' for h in all_hits)}   of {sum(totals.values())}")


if __name__ == "__main__":
    main()
