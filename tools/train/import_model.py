"""Rebuild training checkpoints from an exported model (the inverse of export.py).

  python3 tools/train/import_model.py [--model models/kino-tiny] [--dit build/train/dit/ckpt.pt]
                                      [--vae-out PATH --vae-step N]

The home cache that keeps build/train's checkpoints across sessions (state.sh) can be lost with the
machine; the exported model in the repository is then the newest DiT there is. This writes a DiT
checkpoint train_dit.py resumes from (and sample.py/export.py read): the exported weights as both
the trained and the EMA weights, the optimizer state anew and the EMA restarted, at the exported
training step. The DiT's >= 2-D weights come back bf16-rounded, as export.py stored them; training
goes on from there in fp32. --vae-out also writes the exported VAE as a train_vae.py checkpoint of
step N (its decoder is the finished one; the encoder is what encoded the training data).
Check: exporting the imported checkpoint again reproduces the model's files (same DiT/umT5 outputs).
"""
import argparse
import json
import os

import torch

import common
import st
import tokenizer as tokmod
import train_dit
import umt5
import wan_dit


def import_dit(model_dir, out):
    tok = tokmod.default_tokenizer()
    exported_vocab = json.load(open(os.path.join(model_dir, "tokenizer", "tokenizer.json")))["model"]["vocab"]
    assert exported_vocab == tok.vocab, "the exported tokenizer is not this renderer's vocabulary"
    dit, text = train_dit.build(tok)
    from_diffusers = {wan_dit.wan_to_diffusers_key(k): k for k in dit.state_dict()}
    sd = st.load(os.path.join(model_dir, "transformer", "diffusion_pytorch_model.safetensors"))
    dit.load_state_dict({from_diffusers[k]: v for k, v in sd.items()}, strict=True)
    from_hf = {umt5.hf_key(k): k for k in text.t5.state_dict()}
    tsd = st.load(os.path.join(model_dir, "text_encoder", "model.safetensors"))
    # export.py adds encoder.embed_tokens.weight, a copy of shared.weight that HF loaders expect
    text.t5.load_state_dict({from_hf[k]: v for k, v in tsd.items() if k in from_hf}, strict=True)
    step = json.load(open(os.path.join(model_dir, "model_index.json")))["kino"]["train_step"]
    train_dit.save_restart_ckpt(out, dit.state_dict(), text.state_dict(), step, tok)
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
