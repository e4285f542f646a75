"""Shared helpers: paths, the kino-tiny configuration, checkpoints, logging, EMA."""
import copy
import json
import os
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tools", "data"))
sys.path.insert(0, os.path.join(ROOT, "tools", "eval"))

# Where every stage keeps its checkpoints, data and logs, outside git; KINO_TRAIN_BUILD moves it
# (recipe.py --build sets it for the stages it runs)
BUILD = os.path.join(ROOT, os.environ.get("KINO_TRAIN_BUILD") or os.path.join("build", "train"))

# ---- the kino-tiny configuration (one place) ---------------------------------------------------
# The VAE compresses 4x in space and time: latents of 16x16; a 4x4 DiT patch makes 16 tokens per latent
# frame. (An 8x-spatial VAE of this width could not reconstruct object colors/shapes after 6000 steps,
# so its latents capped what any DiT could learn; a 4x VAE is both easier to train and cheaper to decode.)
CFG = {
    "seed": 20250801,
    "video": {"width": 64, "height": 64, "fps": 16},
    "vae": {"dim": 12, "z_dim": 16, "dim_mult": [1, 2, 4], "num_res_blocks": 1, "attn_scales": [],
            "temperal_downsample": [True, True]},
    "t5": {"dim": 128, "dim_attn": 128, "dim_ffn": 256, "num_heads": 4, "num_layers": 2, "num_buckets": 32},
    "dit": {"patch_size": [1, 4, 4], "text_len": 32, "dim": 192, "ffn_dim": 576, "freq_dim": 256,
            "num_heads": 3, "num_layers": 6},
    # streaming
    "chunk_latent_frames": 1,       # latent frames per chunk (-> 4 video frames, the first chunk 1)
    "attn_window_chunks": 4,        # a chunk attends to itself + the 3 previous chunks (KV cache)
    # + the first sink_chunks chunks of the stream, never evicted: a continuing chunk still sees frame
    # 0's shape, which the stream otherwise rounds off chunk by chunk. A DiT trained without the sink
    # (train_dit.py --sink-chunks 0) must sample without it: networks.load_models takes the value from
    # the checkpoint.
    "sink_chunks": 1,
    "train_latent_frames": 8,       # training clips: 1 + 4*7 = 29 video frames
    # flow matching. The DiT predicts the clean latent x0 ("sample"), not the velocity: a 1x4x4 patch of
    # 16 channels is 256 values per token, wider than the 192-wide transformer, and a velocity
    # eps - x0 must carry the token's full-rank noise through it (v-prediction left visible noise in
    # every sample after 2000 steps); x0 lies on the data's low-dimensional manifold. Samplers turn it
    # into the flow velocity v = (x_sigma - x0) / sigma.
    "prediction": "sample",
    "shift": 3.0,
    # 8 rather than 4: the shapes drawn in frame 0 last longer into the stream (held-out shape 40 -> 50 %,
    # color 90 -> 92.5 % through the server), at 1.36x the streaming time.
    "sample_steps": 8,
    # A chunk after the first continues the previous chunk's clean latent, noised to the sigma of the
    # step it enters the schedule at (img2img's strength: 0.5 runs the last 4 of 8 steps from sigma
    # 0.75); a chunk that cuts to a new prompt at once starts from noise. Against every chunk from noise,
    # the red -> blue transition over 3 chunks moves chunk by chunk instead of overshooting into cyan
    # (22 of 28 seeds pass against 2 of 8), held-out color and shape hold, and a continuing chunk
    # costs 4 steps, not 8. Less noise (0.25) lags a transition by a chunk; more overshoots.
    "continuation_strength": 0.5,
    "guidance_scale": 2.0,  # 3 over-saturates moving objects into colored stripes (held-out color 20 % against 30 %)
    # The sizes ("WxH") the DiT was trained to make, the square first: train_dit.py adds its data's
    # sizes, a checkpoint keeps them (networks.load_models), export.py declares them (kino.native_sizes).
    "native_sizes": ["64x64"],
    # Whether the DiT was trained to start from a given first frame (train_dit.py --first-frame-share):
    # a checkpoint keeps it, export.py declares it (kino.first_frame_conditioning).
    "first_frame": False,
}


def spatial_factor():
    return 2 ** (len(CFG["vae"]["dim_mult"]) - 1)


def latent_hw():
    """Latent height/width at the native size (square)."""
    return CFG["video"]["width"] // spatial_factor()


def vae_model():
    import wan_vae
    c = CFG["vae"]
    return wan_vae.WanVAE_(c["dim"], c["z_dim"], c["dim_mult"], c["num_res_blocks"], c["attn_scales"],
                           c["temperal_downsample"], 0.0)


def t5_model(vocab):
    import umt5
    c = CFG["t5"]
    return umt5.T5Encoder(vocab, c["dim"], c["dim_attn"], c["dim_ffn"], c["num_heads"], c["num_layers"],
                          c["num_buckets"], shared_pos=False, dropout=0.0)


def dit_model():
    import wan_dit
    c = CFG["dit"]
    return wan_dit.WanModel(patch_size=tuple(c["patch_size"]), text_len=c["text_len"], in_dim=CFG["vae"]["z_dim"],
                            dim=c["dim"], ffn_dim=c["ffn_dim"], freq_dim=c["freq_dim"], text_dim=CFG["t5"]["dim"],
                            out_dim=CFG["vae"]["z_dim"], num_heads=c["num_heads"], num_layers=c["num_layers"],
                            image_dim=c.get("image_dim"))


def setup_torch(threads=1):
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)


def save_ckpt(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    torch.save(obj, tmp)
    os.replace(tmp, path)


def load_ckpt(path):
    if not os.path.exists(path):
        return None
    return torch.load(path, map_location="cpu")


def report(log, name, step, losses, lr, gn, s_per_step, extra=""):
    """A training run's report every few steps: the mean loss since the last one, into the run's log
    and on stdout."""
    log.log(step=step, loss=float(np.mean(losses)), lr=lr, gn=float(gn), s_per_step=s_per_step)
    print(f"{name} step {step} loss {np.mean(losses):.4f} gn {float(gn):.2f} lr {lr:.2e} {s_per_step:.2f} s/step{extra}",
          flush=True)


class Logger:
    def __init__(self, path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self.path = path

    def log(self, **kw):
        kw["time"] = time.time()
        with open(self.path, "a") as f:
            f.write(json.dumps(kw) + "\n")

    def read(self):
        if not os.path.exists(self.path):
            return []
        out = []
        with open(self.path) as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError:
                    pass
        return out


class EMA:
    def __init__(self, model, decay):
        self.decay = decay
        self.model = copy.deepcopy(model).eval()
        for p in self.model.parameters():
            p.requires_grad_(False)

    @torch.no_grad()
    def update(self, model, decay=None):
        d = self.decay if decay is None else decay
        for pe, p in zip(self.model.parameters(), model.parameters()):
            pe.mul_(d).add_(p.detach(), alpha=1 - d)


def video_tensor(frames):
    """uint8 clips [B][T, H, W, 3] -> float [B, 3, T, H, W] in [-1, 1] (the VAE's input)."""
    return torch.from_numpy(np.stack(frames)).float().div(127.5).sub(1.0).permute(0, 4, 1, 2, 3).contiguous()


def spliced_mu(vae, x, x_after=None, switch_latent=None):
    """Raw VAE latents of clips with prompt switches, as the DiT should see them: latent frames
    before the switch from the clip itself, from the switch on those of the switched scene rendered
    from its start (same trajectory). Encoding the switch clip in one causal pass instead makes the
    latents after the switch depend on the old object's features in the encoder cache: a red -> blue
    switch then encoded (and the DiT learned, and streamed forever) a latent that decodes green.
    x: [B, 3, T, H, W]; switch_latent: per clip, its first latent frame that shows the switched
    scene alone (render.splice_latent; a gradual switch's cross-faded frames before it keep the clip's
    own latents) or None;
    x_after: [number of switch clips, 3, T, H, W], the switched scenes of those clips in order."""
    mu, _ = vae.encode_raw(x)
    rows = [i for i, L in enumerate(switch_latent or []) if L is not None]
    if rows:
        mu_b, _ = vae.encode_raw(x_after)
        mu = mu.clone()  # a view of chunk()'s output: autograd (a joint VAE stage) forbids writing into it
        for j, i in enumerate(rows):
            mu[i, :, switch_latent[i]:] = mu_b[j, :, switch_latent[i]:]
    return mu
