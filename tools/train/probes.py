"""Probes of what the DiT does, in the training sampler (sample.Stream): diagnostics for a trainer,
not part of the recipe.

  python3 tools/train/probes.py --switch-matrix   # hard color switches between every two colors
  python3 tools/train/probes.py --shape-probe     # does the shape word steer frame 0?
  python3 tools/train/probes.py --past-probe      # do continuing chunks keep shapes after a true past?
  python3 tools/train/probes.py --x0-trace 4      # the first chunk after red -> blue, step by step
(with --ckpt/--vae as sample.py; tools/train/NOTES.md says what each found)
"""
import argparse
import copy

import numpy as np
import torch

import common
from common import CFG
from dit_objectives import own_past
from networks import load_models
from sample import Stream, add_model_args, append_json, encode_text
import wan_dit

import captions  # noqa: E402  (tools/data)
import render  # noqa: E402  (tools/data)


@torch.no_grad()
def switch_x0_trace(dit, text, vae, tok, seed=0, first=3,
                    a="a red circle moving right on a black background",
                    b="a blue circle moving right on a black background"):
    """The first chunk after a hard switch a -> b, step by step: the object's hue in the decoded
    conditional, unconditional and guided x0 estimates at each sigma, and in the chunk drawn (what
    the first denoising step commits the chunk to; tools/train/NOTES.md, "Transitions")."""
    assert CFG["prediction"] == "sample", "the DiT predicts x0"
    import metrics
    ca, cb = [dit.pad_context([c])[0] for c in encode_text(text, tok, [a, b])]
    st = Stream(dit, vae, [ca], encode_text(text, tok, [""]), CFG["sample_steps"], CFG["shift"],
                CFG["guidance_scale"], CFG["attn_window_chunks"], seed)
    past_frames = [st.next_frames(1)[0] for _ in range(first)]
    st.set_context([cb])

    def hue(x0):  # decoded after the stream's past (which stays as it is), judged with it
        cache = {k: copy.deepcopy(c) for k, c in st.vae_cache.items()}  # keyed by the conv modules
        v = vae.decode_stream(x0, cache).clamp(-1, 1)
        chunks = past_frames + [((v + 1) * 127.5).round().byte().permute(0, 2, 3, 4, 1).numpy()[0]]
        verdict = metrics.judge_transition(np.concatenate(chunks), [len(c) for c in chunks], first, 0)
        h = verdict["per_chunk"][-1]["hue"]
        return "-" if h is None else f"{h:.0f}"
    x = torch.randn(1, CFG["vae"]["z_dim"], 1, common.latent_hw(), common.latent_hw(), generator=st.gen)
    past = {s: st._past(s) for s in ("c", "u")}
    row = []
    for i in range(len(st.sig) - 1):
        t = torch.full((1,), st.sig[i] * 1000.0)
        xc, _ = dit.forward_chunk(x, t, st.kv["c"], [st.k], past["c"])
        xu, _ = dit.forward_chunk(x, t, st.kv["u"], [st.k], past["u"])
        xg = xu + st.g * (xc - xu)
        row.append(f"sigma {st.sig[i]:.2f}: cond {hue(xc)} uncond {hue(xu)} guided {hue(xg)}")
        x = x + (st.sig[i + 1] - st.sig[i]) * (x - xg) / st.sig[i]
    return "; ".join(row) + f"; drawn {hue(x)}"


@torch.no_grad()
def switch_matrix(dit, text, vae, tok, seed=0, first=3):
    """Hard object-color switches between every two colors (a circle moving right on a black
    background, all 90 pairs in one batch): the color class of the first affected chunk and of the
    next, as metrics.judge_transition reads them. -> {(a, b): (first, next)}"""
    import metrics
    pairs = [(a, b) for a in render.COLORS for b in render.COLORS if a != b]
    cap = lambda c: f"a {c} circle moving right on a black background"  # noqa: E731
    before = encode_text(text, tok, [cap(a) for a, _ in pairs])
    after = encode_text(text, tok, [cap(b) for _, b in pairs])
    st = Stream(dit, vae, before, encode_text(text, tok, [""] * len(pairs)), CFG["sample_steps"], CFG["shift"],
                CFG["guidance_scale"], CFG["attn_window_chunks"], seed)
    chunks = []
    for k in range(first + 2):
        if k == first:
            st.set_context(after, cut=True)
        chunks.append(st.next_frames(len(pairs)))
    out = {}
    for i, pair in enumerate(pairs):
        per = metrics.judge_transition(np.concatenate([c[i] for c in chunks]), [c.shape[1] for c in chunks],
                                       first, 0)["per_chunk"]
        out[pair] = (per[first]["color"], per[first + 1]["color"])
    return out


@torch.no_grad()
def shape_probe(dit, text, vae, tok, sigmas=(0.5, 0.75, 0.9), words=("true", "circle", "star")):
    """Does the shape word steer what the DiT draws? Frame 0 of each held-out render, encoded and
    noised to sigma (fixed noise), one guided x0 estimate with no past, decoded and classified; the
    caption's shape word is the true one, or replaced by each of `words`' others. Then frame 0 of
    each prompt sampled from noise (the first chunk of a stream). A DiT that binds shape words
    draws the captioned shape; one trained without circle twins draws circles (and some squares)
    for every word, even from a star noised to sigma 0.5. -> {(word, sigma): [(true shape, drawn)]}"""
    import metrics
    unc = dit.cross_kv(encode_text(text, tok, [""]))
    gen = torch.Generator().manual_seed(0)
    rows = {}
    combos = render.load_heldout()["combinations"]
    for i, c in enumerate(combos):
        fr = render.render(render.scene_from_combo(*c, seed=i))[:1]
        z = vae.encode(torch.from_numpy(fr).float().div(127.5).sub(1).permute(3, 0, 1, 2)[None])
        eps = torch.randn(z.shape, generator=gen)
        for word in words:
            kv = dit.cross_kv(encode_text(text, tok, [captions.canonical_caption(c[0], c[1] if word == "true" else word, c[2], c[3])]))
            for s in sigmas:
                xt, t = (1 - s) * z + s * eps, torch.full((1,), s * 1000.0)
                xc, _ = dit.forward_chunk(xt, t, kv, [0], None)
                xu, _ = dit.forward_chunk(xt, t, unc, [0], None)
                v = vae.decode_stream(xu + CFG["guidance_scale"] * (xc - xu), {}).clamp(-1, 1)
                f = ((v[0] + 1) * 127.5).round().byte().permute(1, 2, 3, 0).numpy()
                rows.setdefault((word, s), []).append((c[1], metrics.classify(np.repeat(f, 5, 0))["shape"]))
    # and frame 0 sampled from noise as the first streaming chunk is
    prompts = [captions.canonical_caption(*c) for c in combos]
    st = Stream(dit, vae, encode_text(text, tok, prompts), encode_text(text, tok, [""] * len(prompts)),
                CFG["sample_steps"], CFG["shift"], CFG["guidance_scale"], CFG["attn_window_chunks"], 0)
    for c, f in zip(combos, st.next_frames(len(prompts))):
        rows.setdefault(("true", "sampled"), []).append((c[1], metrics.classify(np.repeat(f, 5, 0))["shape"]))
    return rows


def past_probe(dit, text, vae, tok, seed=0):
    """Does a continuing chunk keep the shape its past shows when that past is true? Each held-out
    render encoded; every latent frame after the first made as the stream makes a continuing chunk,
    with the true frames before it as the past (own_past); decoded and classified chunk by
    chunk as tools/eval/shape_by_chunk.py does a stream. -> {"true past" | "VAE reconstruction":
    (hits, totals) as shape_by_chunk.count_hits fills them}"""
    import collections
    import shape_by_chunk
    combos = render.load_heldout()["combinations"]
    F_ = CFG["train_latent_frames"]
    mask = wan_dit.teacher_forcing_mask(F_, CFG["chunk_latent_frames"], CFG["attn_window_chunks"],
                                                  CFG["sink_chunks"])
    frame_pos = torch.cat([torch.arange(F_), torch.arange(F_)])
    gen = torch.Generator().manual_seed(seed)
    out = {name: (collections.defaultdict(collections.Counter), collections.Counter())
           for name in ("true past", "VAE reconstruction")}

    def decoded(z):
        v = vae.decode_stream(z, {}).clamp(-1, 1)
        return ((v + 1) * 127.5).round().byte().permute(0, 2, 3, 4, 1).numpy()

    for i in range(0, len(combos), 20):
        part = combos[i:i + 20]
        clips = [render.render(render.scene_from_combo(*c, seed=i + j)) for j, c in enumerate(part)]
        with torch.no_grad():
            x0 = vae.encode(common.video_tensor(clips))
            made = own_past(dit, text, tok, x0, [captions.canonical_caption(*c) for c in part],
                                      gen, CFG["dit"]["text_len"], mask, frame_pos)
            for name, z in (("true past", made), ("VAE reconstruction", x0)):
                for c, frames in zip(part, decoded(z)):
                    shape_by_chunk.count_hits(*out[name], frames, c[1])
    return out


def past_probe_report(res):
    from shape_by_chunk import table
    return "\n".join(f"{name}: true shape per chunk (frame 0, then 4-frame chunks)\n{table(*ht)}"
                     for name, ht in res.items())


def shape_probe_scores(rows):
    """-> {(word, sigma): the share of estimates that show the captioned shape}"""
    return {(w, s): float(np.mean([d == (t if w == "true" else w) for t, d in r])) for (w, s), r in rows.items()}


def shape_probe_report(rows):
    lines = []
    scores = shape_probe_scores(rows)
    for (word, s), r in rows.items():
        said = scores[word, s]
        hist = " ".join(f"{k} {sum(d == k for _, d in r)}" for k in render.SHAPES)
        where = "frame 0 sampled from noise" if s == "sampled" else f"sigma {s}"
        lines.append(f"caption's shape {word:6s} {where}: captioned shape drawn {said:.0%} ({hist})")
    return "\n".join(lines)


def switch_matrix_counts(m):
    """-> [switches whose first affected chunk has the new color, those whose next one has it]"""
    return [sum(v[j] == b for (_, b), v in m.items()) for j in (0, 1)]


def switch_matrix_report(m):
    """Rows: the color before, columns: after; '+' where the first affected chunk has the new color,
    else the class it has ('=' where it kept the old one)."""
    names = list(render.COLORS)
    lines = ["from \\ to " + " ".join(f"{b[:6]:>6}" for b in names)]
    for a in names:
        cells = [f"{'':>6}" if a == b else f"{'+' if m[a, b][0] == b else '=' if m[a, b][0] == a else str(m[a, b][0])[:6]:>6}"
                 for b in names]
        lines.append(f"{a:>10} " + " ".join(cells))
    first, nxt = switch_matrix_counts(m)
    lines.append(f"new color in the first affected chunk: {first}/{len(m)}, in the next: {nxt}/{len(m)}")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    add_model_args(ap)
    ap.add_argument("--x0-trace", type=int, default=0,
                    help="switch_x0_trace for this many noise seeds (the first chunk after red -> blue)")
    ap.add_argument("--switch-matrix", action="store_true",
                    help="hard color switches between every two colors: does the first affected chunk land?")
    ap.add_argument("--shape-probe", action="store_true",
                    help="does the shape word steer frame 0? (one x0 estimate of noised held-out renders)")
    ap.add_argument("--past-probe", action="store_true",
                    help="do continuing chunks keep the held-out shapes after a true past? (past_probe)")
    args = ap.parse_args()
    common.setup_torch(args.threads)
    dit, text, vae, tok, step = load_models(args.ckpt, ema=not args.raw, export_precision=True, vae_ckpt=args.vae)
    res = {"step": step}
    if args.switch_matrix:
        m = switch_matrix(dit, text, vae, tok)
        res["switch_matrix"] = switch_matrix_counts(m)
        print(f"step {step}: hard color switches (a circle moving right on black; seed 0)")
        print(switch_matrix_report(m))
    if args.shape_probe:
        rows = shape_probe(dit, text, vae, tok)
        res["shape_probe"] = {f"{w} {s}": v for (w, s), v in shape_probe_scores(rows).items()}
        print(f"step {step}: shape words, one x0 estimate of frame 0 (40 held-out renders)")
        print(shape_probe_report(rows))
    if args.past_probe:
        probe = past_probe(dit, text, vae, tok)
        res["past_probe"] = {name: {"hits": hits, "n": totals} for name, (hits, totals) in probe.items()}
        print(f"step {step}: continuing chunks after a true past (40 held-out renders)")
        print(past_probe_report(probe))
    for seed in range(args.x0_trace):
        print(f"step {step}, seed {seed}: {switch_x0_trace(dit, text, vae, tok, seed)}")
    append_json(args.json, res)


if __name__ == "__main__":
    main()
