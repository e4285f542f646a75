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


def chunk_shapes(frames):
    """The shape metrics.classify_shape sees in each chunk of a clip [T, H, W, 3] (None: none)."""
    _, rows = metrics.classify_background(frames)  # masks as metrics.classify makes them, per frame
    outlines = [metrics.shape_mask(f, rows, metrics.object_mask(f, rows)) for f in frames]
    return [metrics.classify_shape(outlines[a:b]) for a, b in chunk_spans(len(frames))]


def count_hits(hits, totals, frames, truth):
    """Adds a clip's per-chunk hits of its true shape to hits[truth] and counts it in totals."""
    totals[truth] += 1
    for k, shape in enumerate(chunk_shapes(frames)):
        hits[truth][k] += shape == truth


def table(hits, totals):
    """-> the per-shape rows and their sum, one column per chunk."""
    n = max((len(h) for h in hits.values()), default=0)
    lines = [f"  {shape:9s} {' '.join(f'{hits[shape][k]:2d}' for k in range(n))}   of {count}"
             for shape, count in sorted(totals.items())]
    all_hits = [sum(hits[s][k] for s in totals) for k in range(n)]
    lines.append(f"  {'all':9s} {' '.join(f'{h:2d}' for h in all_hits)}   of {sum(totals.values())}")
    return "\n".join(lines)


def main():
    manifest = json.load(open(sys.argv[1]))
    hits, totals = collections.defaultdict(collections.Counter), collections.Counter()
    for item in manifest["heldout"]:
        count_hits(hits, totals, score.decode(item["file"]), item["truth"]["shape"])
    print("true shape per chunk (frame 0, then 4-frame chunks):")
    print(table(hits, totals))


if __name__ == "__main__":
    main()
