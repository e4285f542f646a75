"""Streaming sampler for kino-tiny, chunk by chunk with a KV cache, exactly as the server runs it:

  for chunk k = 0, 1, 2, ... (1 latent frame each; RoPE temporal position k):
    e ~ N(0, I)                                   [B, 16, 1, 16, 16]
    s = 0, x = e                                  (chunk 0, and a chunk that cuts to a new prompt)
    s = steps - max(1, floor(strength * steps)),  (any other chunk continues the previous one's clean
    x = (1 - sigma_s) * x_prev + sigma_s * e       latent x_prev, as img2img does: strength 0.5 of 8 steps
                                                   enters at step 4, sigma 0.75)
    for i in s..steps-1:   (sigmas = shift(linspace(1, 0, steps+1)), t_i = 1000 * sigma_i)
      v_c = DiT(x, t_i | cond context,  self-attn KV cache of the previous <= 3 chunks (cond stream))
      v_u = DiT(x, t_i | empty context, self-attn KV cache of the uncond stream)   (if guidance != 1)
      v   = v_u + g * (v_c - v_u)
      x   = x + (sigma_{i+1} - sigma_i) * v       (Euler; sigma_steps = 0)
    context pass: DiT(x, t = 0) once per stream (cond and uncond) -> append this chunk's K/V to its
                  cache (keys after norm_k and RoPE); drop chunks older than the window
    video: VAE decode of latent frame k with the streaming feature cache -> 1 frame (k = 0) or 4

  python3 tools/train/sample.py --eval [--transitions] [--sheet docs/kino-tiny-samples.png]   # held-out accuracies
  python3 tools/train/sample.py --vae-ceiling --vae CKPT   # what a VAE's reconstructions of the held-out renders score
  python3 tools/train/sample.py --first-frames motion|full [--seen] [--strength S] [--window W]   # streams from given first frames
"""
import argparse
import json
import time

import numpy as np
import torch

import common
from common import CFG
from image_branch import latent_patches
from networks import load_models, load_vae
from schedule import continuation_start, sampler_sigmas

import png  # noqa: E402  (tools/data)
import captions  # noqa: E402
import render  # noqa: E402


def encode_text(text, tok, prompts):
    """-> list of [L_i, text_dim] (T5 output on the real tokens incl. EOS; the DiT zero-pads)."""
    out = []
    with torch.no_grad():
        for p in prompts:
            ids = torch.tensor([tok.encode(p, CFG["dit"]["text_len"])])
            out.append(text.t5(ids)[0])
    return out


class Stream:
    def __init__(self, dit, vae, ctx_cond, ctx_uncond, steps, shift, guidance, window, seed=0, strength=None):
        self.dit, self.vae = dit, vae
        self.sig = sampler_sigmas(steps, shift)
        self.g = guidance
        self.window = window
        self.k = 0
        self.gen = torch.Generator().manual_seed(seed)
        self.vae_cache = {}
        self.caches = {"c": [], "u": []}  # list (per chunk) of per-layer (K, V)
        self.start = continuation_start(steps, CFG["continuation_strength"] if strength is None else strength)
        self.prev = None  # the last chunk's clean latent, which the next one continues (None: from noise)
        self.img_kv = None  # the image branch's keys/values once a frame is given (image_branch.py)
        self.set_context(ctx_cond, ctx_uncond)

    def set_context(self, ctx_cond, ctx_uncond=None, cut=False):
        """ctx: list of [L_i, text_dim] (or a zero-padded [B, text_len, text_dim] tensor). cut: the next
        chunk switches to this prompt at once (a hard update), so it starts from noise."""
        if cut:
            self.prev = None
        with torch.no_grad():
            if not hasattr(self, "kv"):
                self.kv = {}
            self.kv["c"] = self.dit.cross_kv(ctx_cond)
            if ctx_uncond is not None:
                self.kv["u"] = self.dit.cross_kv(ctx_uncond)

    def _in_view(self, chunks):
        """The cached chunks a chunk sees: the stream's first CFG["sink_chunks"] (never evicted) and
        the last window - 1."""
        sink = CFG["sink_chunks"]
        return chunks[:sink] + (chunks[sink:][-(self.window - 1):] if self.window > 1 else [])

    def _past(self, name):
        win = self._in_view(self.caches[name])
        if not win:
            return None
        L = self.dit.num_layers
        return [(torch.cat([c[i][0] for c in win], 1), torch.cat([c[i][1] for c in win], 1)) for i in range(L)]

    @torch.no_grad()
    def give(self, z):
        """Commits latent z [B, C, 1, h, w] as the next chunk without denoising it (a client's image as
        the stream's first chunk, kino.first_frame_conditioning) and returns its decoded frames."""
        streams = ["c", "u"] if self.g != 1.0 else ["c"]
        past = {s: self._past(s) for s in streams}
        if self.dit.image_dim and self.k == 0:  # both guidance streams see the image
            self.img_kv = self.dit.image_kv(latent_patches(z))
        for s in streams:
            _, kv = self.dit.forward_chunk(z, torch.zeros(z.shape[0]), self.kv[s], [self.k], past[s], self.img_kv)
            self.caches[s] = self._in_view(self.caches[s] + [kv])
        self.k += 1
        self.prev = z
        v = self.vae.decode_stream(z, self.vae_cache).clamp(-1, 1)
        return ((v + 1) * 127.5).round().byte().permute(0, 2, 3, 4, 1).numpy()

    @torch.no_grad()
    def next_latent(self, b):
        z = CFG["vae"]["z_dim"]
        hw = common.latent_hw()
        x = torch.randn(b, z, 1, hw, hw, generator=self.gen)
        start = 0 if self.prev is None else self.start
        if start:
            x = (1 - self.sig[start]) * self.prev + self.sig[start] * x
        streams = ["c", "u"] if self.g != 1.0 else ["c"]
        past = {s: self._past(s) for s in streams}
        for i in range(start, len(self.sig) - 1):
            t = torch.full((b,), self.sig[i] * 1000.0)
            v, _ = self.dit.forward_chunk(x, t, self.kv["c"], [self.k], past["c"], self.img_kv)
            if self.g != 1.0:
                vu, _ = self.dit.forward_chunk(x, t, self.kv["u"], [self.k], past["u"], self.img_kv)
                v = vu + self.g * (v - vu)
            if CFG["prediction"] == "sample":  # the DiT's x0 -> flow velocity (linear: guidance commutes)
                v = (x - v) / self.sig[i]
            x = x + (self.sig[i + 1] - self.sig[i]) * v
        for s in streams:  # context pass at t = 0
            _, kv = self.dit.forward_chunk(x, torch.zeros(b), self.kv[s], [self.k], past[s], self.img_kv)
            self.caches[s] = self._in_view(self.caches[s] + [kv])
        self.k += 1
        self.prev = x
        return x

    @torch.no_grad()
    def next_frames(self, b):
        x = self.next_latent(b)
        v = self.vae.decode_stream(x, self.vae_cache).clamp(-1, 1)
        return ((v + 1) * 127.5).round().byte().permute(0, 2, 3, 4, 1).numpy()  # [B, T, H, W, 3]


def generate(dit, text, vae, tok, prompts, chunks=8, steps=None, shift=None, guidance=None, seed=0, strength=None):
    steps = steps or CFG["sample_steps"]
    shift = shift or CFG["shift"]
    guidance = CFG["guidance_scale"] if guidance is None else guidance
    ctx = encode_text(text, tok, prompts)
    unc = encode_text(text, tok, [""] * len(prompts))
    st = Stream(dit, vae, ctx, unc, steps, shift, guidance, CFG["attn_window_chunks"], seed, strength)
    frames = [st.next_frames(len(prompts)) for _ in range(chunks)]
    return np.concatenate(frames, axis=1)


def seen_combos(n=40, seed=4321):
    """n training-distribution (not held-out) single-object combinations, fixed."""
    rng = np.random.default_rng(seed)
    held = render.heldout_set()
    out = []
    while len(out) < n:
        sc = render.sample_scene(rng, held, two_prob=0.0)
        o = sc["objects"][0]
        c = [o["color"], o["shape"], o["motion"], sc["bg"]]
        if c not in out:
            out.append(c)
    return out


def heldout_eval(dit, text, vae, tok, seeds=(0,), chunks=8, combos=None, **kw):
    import metrics
    combos = combos or render.load_heldout()["combinations"]
    prompts = [captions.canonical_caption(*c) for c in combos]
    preds, truths, clips = [], [], []
    for s in seeds:
        for i in range(0, len(prompts), 20):
            fr = generate(dit, text, vae, tok, prompts[i:i + 20], chunks=chunks, seed=1000 + s, **kw)
            for j, f in enumerate(fr):
                preds.append(metrics.classify(f))
                c = combos[i + j]
                truths.append({"color": c[0], "shape": c[1], "motion": c[2], "background": c[3]})
                clips.append(f)
    return metrics.score(preds, truths), preds, truths, clips, prompts


def first_frame_eval(dit, text, vae, tok, prompt="motion", combos=None, chunks=8, guidance=None, strength=None,
                     window=None):
    """Streams started from each combination's first rendered frame (its latent the first chunk, as
    the server does for an image_reference), captioned with the motion alone or the whole caption;
    scores the frames after the given one, the first generated chunk alone, and the first chunk's
    color for the smaller and the larger half of the objects (by radius)."""
    import metrics
    combos = combos or render.load_heldout()["combinations"]
    g = CFG["guidance_scale"] if guidance is None else guidance
    preds, early, truths, radius = [], [], [], []
    for i, c in enumerate(combos):
        sc = render.scene_from_combo(*c, seed=i)
        with torch.no_grad():
            z = vae.encode(common.video_tensor([render.render(sc)[:1]]))
        caption = captions.motion_caption(sc) if prompt == "motion" else captions.canonical_caption(*c)
        st = Stream(dit, vae, encode_text(text, tok, [caption]), encode_text(text, tok, [""]), CFG["sample_steps"],
                    CFG["shift"], g, window or CFG["attn_window_chunks"], seed=i, strength=strength)
        st.give(z)
        f = np.concatenate([st.next_frames(1) for _ in range(chunks - 1)], axis=1)[0]
        preds.append(metrics.classify(f))
        early.append(metrics.classify(np.concatenate([f[:4]] * (chunks - 1))))  # chunk 1, as long as the rest
        truths.append({"color": c[0], "shape": c[1], "motion": c[2], "background": c[3]})
        radius.append(sc["objects"][0]["r"])
    r = np.array(radius)
    kept = np.array([e["color"] == t["color"] for e, t in zip(early, truths)])
    small = r <= np.median(r)
    return {"clip": metrics.score(preds, truths), "chunk_1": metrics.score(early, truths),
            "chunk_1_color_small_large": [float(kept[small].mean()), float(kept[~small].mean())]}


def vae_ceiling(vae, combos=None, seed=0):
    """Metric accuracies on VAE reconstructions of rendered held-out clips (the ceiling the DiT can
    reach with this VAE and these classifiers) and on the renders themselves."""
    import metrics
    combos = combos or render.load_heldout()["combinations"]
    pr, pg, tr = [], [], []
    specks = {}  # background -> ([render's speckle fractions], [reconstruction's]): do flakes and stars survive?
    for i, c in enumerate(combos):
        sc = render.scene_from_combo(*c, seed=seed + i)
        fr = render.render(sc)
        x = torch.from_numpy(fr).float().div(127.5).sub(1).permute(3, 0, 1, 2)[None]
        with torch.no_grad():
            z = vae.encode(x)
            v = vae.decode_stream(z, {}).clamp(-1, 1)
        rec = ((v[0] + 1) * 127.5).round().byte().permute(1, 2, 3, 0).numpy()
        if c[3] in metrics.SPECKLED:
            fracs = specks.setdefault(c[3], ([], []))
            fracs[0].append(metrics.speckle_fraction(fr))
            fracs[1].append(metrics.speckle_fraction(rec))
        pr.append(metrics.classify(rec))
        pg.append(metrics.classify(fr))
        tr.append({"color": c[0], "shape": c[1], "motion": c[2], "background": c[3]})
    rec = metrics.score(pr, tr)
    for shape in render.SHAPES:  # where the shapes are lost (stars: the decoder rounds their points)
        hits = [p["shape"] == t["shape"] for p, t in zip(pr, tr) if t["shape"] == shape]
        rec[f"shape_{shape}"] = f"{sum(hits)}/{len(hits)}"
    for bg, (of_render, of_rec) in specks.items():  # in % of the pixels
        rec[f"speckles_{bg}"] = f"{100 * np.mean(of_rec):.2f} % of the renders' {100 * np.mean(of_render):.2f} %"
    return rec, metrics.score(pg, tr)


def contact_sheet(path, clips, prompts, preds=None, every=4, scale=2):
    rows = []
    w = 64 * scale
    for k, (c, p) in enumerate(zip(clips, prompts)):
        ims = [png.upscale(c[i], scale) for i in range(0, c.shape[0], every)]
        label = p if preds is None else p + "  ->  " + " ".join(str(preds[k][a]) for a in ("color", "shape", "motion", "background"))
        strip = png.text_image(label, w * 3, scale=1, max_lines=3)
        strip = np.pad(strip, ((0, 64 * scale - strip.shape[0]), (0, 0), (0, 0)), constant_values=255)
        rows.append([strip[:, i * w:(i + 1) * w] for i in range(3)] + ims)
    png.write_png(path, png.grid(rows))


def transition_probe(dit, text, vae, tok, transition_chunks, chunks=8, first=3, seed=0, strength=None,
                     a="a red circle moving right on a black background",
                     b="a blue circle moving right on a black background"):
    """The server evaluation's transition session (tools/eval/server-eval.ts) in the training
    sampler: prompt a, then from chunk `first` on a linear interpolation of the zero-padded
    text-encoder outputs reaching b in the transition_chunks-th affected chunk (progress 1/N, 2/N,
    ..., 1; 0 chunks = b at once). -> (metrics.judge_transition's verdict, frames)."""
    import metrics
    ca, cb = [dit.pad_context([c])[0] for c in encode_text(text, tok, [a, b])]
    unc = encode_text(text, tok, [""])
    st = Stream(dit, vae, [ca], unc, CFG["sample_steps"], CFG["shift"], CFG["guidance_scale"],
                CFG["attn_window_chunks"], seed, strength)
    out = []
    for k in range(chunks):
        progress = 0.0 if k < first else min(1.0, (k - first + 1) / max(1, transition_chunks))
        st.set_context([(1 - progress) * ca + progress * cb], cut=k == first and transition_chunks <= 1)
        out.append(st.next_frames(1)[0])
    frames = np.concatenate(out, 0)
    return metrics.judge_transition(frames, [len(f) for f in out], first, transition_chunks), frames


def add_model_args(ap):
    """The flags that pick the checkpoints and the CPU threads (sample.py, probes.py)."""
    ap.add_argument("--ckpt", default=None, help="a DiT checkpoint instead of the build's dit/ckpt.pt")
    ap.add_argument("--vae", default=None, help="a VAE checkpoint (e.g. a decoder stage's) instead of the build's")
    ap.add_argument("--raw", action="store_true", help="the trained weights instead of their EMA")
    ap.add_argument("--json", default=None, help="append results as JSON lines")
    ap.add_argument("--threads", type=int, default=1)


def append_json(path, res):
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(res) + "\n")


def main():
    ap = argparse.ArgumentParser()
    add_model_args(ap)
    ap.add_argument("--sheet", default=None)
    ap.add_argument("--eval", action="store_true")
    ap.add_argument("--seen", action="store_true", help="also score 40 seen (training) combinations")
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--guidance", type=float, default=None)
    ap.add_argument("--strength", type=float, default=None,
                    help="continuation strength of the chunks after the first (1: each from noise; default CFG's)")
    ap.add_argument("--transitions", action="store_true",
                    help="the server evaluation's red -> blue transitions (over 3 and 0 chunks)")
    ap.add_argument("--interp", default=None, help="--transitions, and a PNG strip of the 3-chunk one")
    ap.add_argument("--vae-ceiling", action="store_true", help="score VAE reconstructions of the held-out renders")
    ap.add_argument("--first-frames", choices=["motion", "full"], default=None,
                    help="streams from each held-out (with --seen: seen) combination's first frame, captioned "
                         "with the motion alone or the whole caption")
    ap.add_argument("--window", type=int, default=None, help="--first-frames: attention window in chunks")
    args = ap.parse_args()
    common.setup_torch(args.threads)
    if args.vae_ceiling:  # needs the VAE only
        rec, gt = vae_ceiling(load_vae(args.vae))
        print(f"held-out renders: {json.dumps(gt)}\nVAE reconstructions of them: {json.dumps(rec)}")
        return
    dit, text, vae, tok, step = load_models(args.ckpt, ema=not args.raw, export_precision=True, vae_ckpt=args.vae)
    res = {"step": step, "steps": args.steps or CFG["sample_steps"],
           "guidance": CFG["guidance_scale"] if args.guidance is None else args.guidance}
    if args.eval or args.sheet:
        t0 = time.time()
        acc, preds, truths, clips, prompts = heldout_eval(dit, text, vae, tok, seeds=range(args.seeds),
                                                          steps=args.steps, guidance=args.guidance,
                                                          strength=args.strength)
        res["heldout"] = acc
        res["n"] = len(preds)
        print(f"step {step}: held-out accuracy {json.dumps(acc)} ({len(preds)} clips, {time.time() - t0:.0f} s)")
        if args.seen:
            acc2, *_ = heldout_eval(dit, text, vae, tok, seeds=range(args.seeds), combos=seen_combos(),
                                    steps=args.steps, guidance=args.guidance, strength=args.strength)
            res["seen"] = acc2
            print(f"step {step}: seen-combination accuracy {json.dumps(acc2)}")
        if args.sheet:
            n = len(prompts)
            contact_sheet(args.sheet, clips[:n][:16], prompts[:16], preds[:16])
            print("wrote", args.sheet)
    if args.first_frames:
        ff = first_frame_eval(dit, text, vae, tok, args.first_frames, combos=seen_combos() if args.seen else None,
                              guidance=args.guidance, strength=args.strength, window=args.window)
        res["first_frames"] = ff
        print(f"step {step}: from the first frames, {args.first_frames} caption: {json.dumps(ff)}")
    if args.transitions or args.interp:
        import metrics
        res["transitions"] = []
        for n, seed in [(n, seed) for n in (3, 0) for seed in range(args.seeds)]:
            verdict, frames = transition_probe(dit, text, vae, tok, n, seed=seed, strength=args.strength)
            res["transitions"].append(verdict)
            print(f"step {step}: red -> blue over {n} chunks, seed {seed}: {metrics.transition_line(verdict)}")
            if args.interp and n == 3 and seed == 0:
                png.write_png(args.interp, png.grid([[png.upscale(f, 2) for f in frames[::2]]]))
    append_json(args.json, res)


if __name__ == "__main__":
    main()
