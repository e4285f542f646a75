"""The kino-tiny networks as training builds them: the DiT and the text encoder initialised from
the seed, their optimizer, and the checkpoints training, sampling and export read and write."""
import torch
import torch.nn as nn

import common
from common import CFG
import tokenizer as tokmod


def init_dit(m):
    """Xavier linears, small text/time embeddings, a zero head: the DiT starts out predicting 0."""
    for mod in m.modules():
        if isinstance(mod, nn.Linear):
            nn.init.xavier_uniform_(mod.weight)
            if mod.bias is not None:
                nn.init.zeros_(mod.bias)
    nn.init.xavier_uniform_(m.patch_embedding.weight.flatten(1))
    nn.init.zeros_(m.patch_embedding.bias)
    for mod in m.text_embedding.modules():
        if isinstance(mod, nn.Linear):
            nn.init.normal_(mod.weight, std=0.02)
    for mod in m.time_embedding.modules():
        if isinstance(mod, nn.Linear):
            nn.init.normal_(mod.weight, std=0.02)
    nn.init.zeros_(m.head.head.weight)


def init_t5(m):
    """The T5 paper's initialisation, scaled by each layer's fan-in."""
    for mod in m.modules():
        if mod.__class__.__name__ == "T5Attention":
            nn.init.normal_(mod.q.weight, std=(mod.dim * mod.dim_attn) ** -0.5)
            nn.init.normal_(mod.k.weight, std=mod.dim ** -0.5)
            nn.init.normal_(mod.v.weight, std=mod.dim ** -0.5)
            nn.init.normal_(mod.o.weight, std=(mod.num_heads * mod.dim_attn) ** -0.5)
        elif mod.__class__.__name__ == "T5FeedForward":
            nn.init.normal_(mod.gate[0].weight, std=mod.dim ** -0.5)
            nn.init.normal_(mod.fc1.weight, std=mod.dim ** -0.5)
            nn.init.normal_(mod.fc2.weight, std=mod.dim_ffn ** -0.5)
        elif mod.__class__.__name__ == "T5RelativeEmbedding":
            nn.init.normal_(mod.embedding.weight, std=(2 * mod.num_buckets * mod.num_heads) ** -0.5)


class TextModel(nn.Module):
    """tokenizer ids -> context rows (T5 output on real tokens, pad rows zero)."""

    def __init__(self, tok):
        super().__init__()
        self.t5 = common.t5_model(len(tok))
        init_t5(self.t5)

    def forward(self, ids, mask):
        return self.t5(ids, mask) * mask[..., None].to(torch.float32)


def encode_prompts(text_model, tok, prompts, text_len):
    """Prompts -> zero-padded context rows [B, L, text_dim] (a batch of training captions)."""
    ids = [tok.encode(p, text_len) for p in prompts]
    L = max(len(i) for i in ids)
    t = torch.zeros(len(ids), L, dtype=torch.long)
    m = torch.zeros(len(ids), L, dtype=torch.long)
    for k, i in enumerate(ids):
        t[k, :len(i)] = torch.tensor(i)
        m[k, :len(i)] = 1
    return text_model(t, m)


def make_optimizer(dit, text, lr):
    """AdamW; no weight decay on biases, norms, modulation tables and embeddings."""
    decay, no_decay = [], []
    for mod in (dit, text):
        for n, p in mod.named_parameters():
            (no_decay if p.dim() < 2 or "modulation" in n or "embedding" in n else decay).append(p)
    return torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                             lr=lr, betas=(0.9, 0.99))


def save_restart_ckpt(path, dit_sd, text_sd, step, tok):
    """A checkpoint that resumes at `step` from the given weights with a fresh optimizer and the EMA
    restarted there (import_model.py). The weights serve as both the
    trained and the EMA copy (torch.save stores a tensor shared by two entries once)."""
    dit, text = build(tok)
    opt = make_optimizer(dit, text, 0.0)
    common.save_ckpt(path, {"dit": dit_sd, "text": text_sd, "ema_dit": dit_sd, "ema_text": text_sd,
                            "opt": opt.state_dict(), "step": step, "ema_start": step, "cfg": CFG,
                            "vocab": tok.vocab})


def build(tok):
    """The DiT and the text encoder as training starts them (seeded)."""
    torch.manual_seed(CFG["seed"])
    dit = common.dit_model()
    init_dit(dit)
    text = TextModel(tok)
    return dit, text


def load_models(dit_ckpt=None, ema=True, export_precision=False, vae_ckpt=None):
    """A DiT checkpoint's DiT and text encoder (eval mode), a VAE (load_vae), the tokenizer and the
    step. The checkpoint's attention sink becomes CFG's: a stream samples with the sink its DiT was
    trained with. export_precision: round the DiT's >= 2-D weights to bf16 as export.py stores them."""
    tok = tokmod.default_tokenizer()
    ck = common.load_ckpt(dit_ckpt or f"{common.BUILD}/dit/ckpt.pt")
    CFG["sink_chunks"] = ck["cfg"].get("sink_chunks", 0)
    CFG["native_sizes"] = ck["cfg"].get("native_sizes", CFG["native_sizes"])
    CFG["first_frame"] = ck["cfg"].get("first_frame", False)
    CFG["dit"]["image_dim"] = ck["cfg"]["dit"].get("image_dim")  # an image branch (image_branch.py)
    dit = common.dit_model()
    text = TextModel(tok)
    sd = ck["ema_dit" if ema else "dit"]
    if export_precision:
        sd = {k: (v.to(torch.bfloat16).float() if v.dim() >= 2 and "modulation" not in k else v) for k, v in sd.items()}
    dit.load_state_dict(sd)
    text.load_state_dict(ck["ema_text" if ema else "text"])
    # an image branch's checkpoint counts its own steps after those of the DiT it was added to
    return dit.eval(), text.eval(), load_vae(vae_ckpt), tok, ck.get("base_step", 0) + ck.get("step", 0)


def load_vae(path=None):
    """The VAE checkpoint at path, else the one with the fine-tuned decoder when there is one
    (train_vae.py --decoder-only)."""
    vck = common.load_ckpt(path) if path else (common.load_ckpt(f"{common.BUILD}/vae/decoder/ckpt.pt")
                                                or common.load_ckpt(f"{common.BUILD}/vae/ckpt.pt"))
    assert vck is not None and "latents_mean" in vck, f"no finished VAE at {path or common.BUILD + '/vae'}"
    vae = common.vae_model()
    vae.load_state_dict(vck["model"])
    vae.latents_mean.copy_(vck["latents_mean"])
    vae.latents_std.copy_(vck["latents_std"])
    return vae.eval()
