"""Rebuild training checkpoints from an exported model (the inverse of export.py).

  python3 tools/train/import_model.py [--model models/kino-tiny] [--dit OUT] [--vae-out OUT --vae-step N]

Training checkpoints live outside git (the build directory, recipe.py); the exported model in the
repository is what a fresh machine has. This writes a DiT checkpoint train_dit.py resumes from (and
sample.py/export.py read): the exported weights as both the trained and the EMA weights, the
optimizer state anew and the EMA restarted, at the exported training step, with the export's
attention sink. The DiT's >= 2-D weights come back bf16-rounded, as export.py stored them; training
goes on from there in fp32. --vae-out also writes the exported VAE as a train_vae.py checkpoint of
step N (F32 as trained; the optimizer anew). recipe.py --from-export calls this for the DiT and the
VAE the recipe's last phases use.
Check: exporting the imported checkpoints again reproduces the model's weight files.
"""
import argparse
import json
import os

import torch

import common
from common import CFG
import st
from networks import build, save_restart_ckpt
import tokenizer as tokmod
import umt5
import wan_dit


def import_dit(model_dir, out):
    tok = tokmod.default_tokenizer()
    exported_vocab = json.load(open(os.path.join(model_dir, "tokenizer", "tokenizer.json")))["model"]["vocab"]
    assert exported_vocab == tok.vocab, "the exported tokenizer is not this renderer's vocabulary"
    tcfg = json.load(open(os.path.join(model_dir, "transformer", "config.json")))
    kino = tcfg["kino"]
    CFG["dit"]["image_dim"] = tcfg.get("image_dim")  # an image branch (image_branch.py)
    CFG["sink_chunks"] = kino["sink_frames"] // kino["chunk_latent_frames"]  # saved with the checkpoint
    CFG["native_sizes"] = kino.get("native_sizes", [f"{kino['native_width']}x{kino['native_height']}"])
    CFG["first_frame"] = kino.get("first_frame_conditioning", False)
    dit, text = build(tok)
    from_diffusers = {wan_dit.wan_to_diffusers_key(k): k for k in dit.state_dict()}
    sd = st.load(os.path.join(model_dir, "transformer", "diffusion_pytorch_model.safetensors"))
    dit.load_state_dict({from_diffusers[k]: v for k, v in sd.items()}, strict=True)
    from_hf = {umt5.hf_key(k): k for k in text.t5.state_dict()}
    tsd = st.load(os.path.join(model_dir, "text_encoder", "model.safetensors"))
    # export.py adds encoder.embed_tokens.weight, a copy of shared.weight that HF loaders expect
    text.t5.load_state_dict({from_hf[k]: v for k, v in tsd.items() if k in from_hf}, strict=True)
    step = json.load(open(os.path.join(model_dir, "model_index.json")))["kino"]["train_step"]
    save_restart_ckpt(out, dit.state_dict(), text.state_dict(), step, tok)
    print(f"{model_dir} (DiT step {step}) -> {out}")


def import_vae(model_dir, out, step):
    cfg = json.load(open(os.path.join(model_dir, "vae", "config.json")))
    vae = common.vae_model()
    vae.load_state_dict(st.load(os.path.join(model_dir, "vae", "diffusion_pytorch_model.safetensors")), strict=True)
    vae.latents_mean.copy_(torch.tensor(cfg["latents_mean"]))
    vae.latents_std.copy_(torch.tensor(cfg["latents_std"]))
    common.save_ckpt(out, {"model": vae.state_dict(), "step": step, "config": vae.config(),
                           "latents_mean": vae.latents_mean.clone(), "latents_std": vae.latents_std.clone()})
    print(f"{model_dir} (VAE) -> {out} (step {step})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.join(common.ROOT, "models", "kino-tiny"))
    ap.add_argument("--dit", default=f"{common.BUILD}/dit/ckpt.pt")
    ap.add_argument("--vae-out", default=None)
    ap.add_argument("--vae-step", type=int, default=None)
    args = ap.parse_args()
    import_dit(args.model, args.dit)
    if args.vae_out:
        assert args.vae_step is not None, "--vae-out needs --vae-step (the train_vae.py step the VAE reached)"
        import_vae(args.model, args.vae_out, args.vae_step)


if __name__ == "__main__":
    main()
