"""Export kino-tiny (EMA weights) to models/kino-tiny/ in the diffusers-style layout.

  python3 tools/train/export.py [--out models/kino-tiny] [--ckpt build/train/dit/ckpt.pt]

  transformer/  config.json (diffusers WanTransformer3DModel keys + "kino")  diffusion_pytorch_model.safetensors
                (diffusers key names; BF16 for >= 2-D weights, F32 for biases/norms/modulation)
  text_encoder/ config.json (HF UMT5 keys)  model.safetensors (HF UMT5EncoderModel names, F32)
  tokenizer/    tokenizer.json (HF tokenizers WordLevel)
  vae/          config.json ("key_layout": "wan", latents_mean/std)  diffusion_pytorch_model.safetensors (Wan names, F32)
  scheduler/    scheduler_config.json
After writing, the files are read back and the DiT/umT5/VAE outputs compared with the checkpoint.
"""
import argparse
import json
import os

import torch

import common
from common import CFG
from image_branch import latent_patches
from networks import load_models
from sample import encode_text
from schedule import sampler_sigmas
import st
import umt5
import wan_dit


def sizes(path):
    tot = 0
    for dp, _, fs in os.walk(path):
        for f in fs:
            tot += os.path.getsize(os.path.join(dp, f))
    return tot


def dit_state_diffusers(dit):
    sd = dit.state_dict()
    out, dtypes = {}, {}
    for k, v in sd.items():
        dk = wan_dit.wan_to_diffusers_key(k)
        out[dk] = v.float()
        dtypes[dk] = "BF16" if v.dim() >= 2 and "modulation" not in k else "F32"
    return out, dtypes


def bf16_round(t):
    return t.to(torch.bfloat16).float()


def kino_block(steps, shift, guidance):
    sig = sampler_sigmas(steps, shift)
    c = CFG
    return {
        "text_len": c["dit"]["text_len"],
        "context": "umT5 output rows of the real tokens (incl. EOS), zero-padded to text_len; no cross-attn mask",
        "chunk_latent_frames": c["chunk_latent_frames"],
        # the server's window holds the sink too: it keeps the first sink_frames and the latest others
        "attn_window_chunks": c["attn_window_chunks"] + c["sink_chunks"],
        "sink_frames": c["sink_chunks"] * c["chunk_latent_frames"],
        # a hard prompt cut re-anchors the sink on the new scene: with the first frame kept as the sink,
        # the blue after a red -> blue cut drifts towards cyan
        "sink_reanchor_on_cut": c["sink_chunks"] > 0,
        "rope_temporal_position": "absolute latent-frame index (chunk k -> position k); RoPE is relative, "
                                  "so positions may be re-based; table has 1024 positions",
        "per_frame_timesteps": True,
        "context_pass_timestep": 0.0,
        "prediction_type": CFG["prediction"],
        "sampler": {"type": "flow_euler", "steps": steps, "shift": shift, "sigmas": sig,
                    "timesteps": [s * 1000.0 for s in sig[:-1]],
                    "update": "x <- x + (sigma[i+1] - sigma[i]) * v, v = (x - model(x, t=1000*sigma[i])) / sigma[i] "
                              "(prediction_type sample: the model gives x0); sigma[-1] = 0"},
        "continuation_strength": c["continuation_strength"],
        "continuation": "a chunk after the first enters the schedule at step s = steps - max(1, floor(strength * steps)) "
                        "from x = (1 - sigma[s]) * x_prev + sigma[s] * noise, x_prev the previous chunk's clean latent; "
                        "a chunk that switches to a new prompt at once (transition_chunks 0 or 1) starts from noise",
        "guidance_scale": guidance,
        "negative_prompt": "",
        "cfg": "v = v_uncond + g * (v_cond - v_uncond); the uncond stream has its own self-attn KV cache, "
               "filled by its own context pass (empty prompt) over the same guided clean latent",
        "native_width": c["video"]["width"], "native_height": c["video"]["height"],
        # the sizes the DiT was trained to make (the server renders other sizes at the nearest in aspect)
        **({"native_sizes": c["native_sizes"]} if len(c["native_sizes"]) > 1 else {}),
        # self-attention reaches as far as the square training grid spans (src/models/attention-reach.ts):
        # on the 16:9 and 9:16 grids a wider reach copies an object near one edge onto the far edge
        "self_attention_reach": [common.latent_hw() // c["dit"]["patch_size"][1] - 1, common.latent_hw() // c["dit"]["patch_size"][2] - 1],
        # trained to start from a client's image: its latent is the first chunk, committed without denoising
        **({"first_frame_conditioning": True} if c.get("first_frame") else {}),
        # ... and read in every cross-attention through the image branch (image_branch.py)
        **({"image_features": "latent_patches",
            "image_branch": "Wan2.1 I2V's img_emb and image keys/values, fed with the given first frame's latent cut "
                            "into the DiT's patches: rows [(H/ph)(W/pw), C*ph*pw], tokens in raster order, values "
                            "in (channel, row, column) order; both guidance streams see it; without an image the "
                            "branch is skipped"} if c["dit"].get("image_dim") else {}),
        "fps": c["video"]["fps"],
        "frames_per_chunk": 4 * c["chunk_latent_frames"],
        "first_chunk_frames": 1 + 4 * (c["chunk_latent_frames"] - 1),
        "default_transition_chunks": 4,
        "transition": "linear interpolation of the zero-padded [text_len, text_dim] text-encoder outputs, "
                      "one step per chunk; recompute the cross-attn K/V; keep the self-attn KV cache",
        "latent_channels": c["vae"]["z_dim"],
        "weights_dtype": "BF16 for >=2-D weight tensors, F32 for biases, norm weights and modulation tables",
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(common.ROOT, "models", "kino-tiny"))
    ap.add_argument("--ckpt", default=None)
    ap.add_argument("--vae", default=None, help="a VAE checkpoint instead of build/train's (networks.load_vae)")
    args = ap.parse_args()
    common.setup_torch(1)
    dit, text, vae, tok, step = load_models(args.ckpt, vae_ckpt=args.vae)
    out = args.out
    for sub in ("transformer", "text_encoder", "tokenizer", "vae", "scheduler"):
        os.makedirs(os.path.join(out, sub), exist_ok=True)
    c = CFG
    steps, shift, guidance = c["sample_steps"], c["shift"], c["guidance_scale"]
    meta = {"format": "pt", "source": f"kino-tiny, tools/train (step {step})"}

    # ---- transformer
    sd, dt = dit_state_diffusers(dit)
    st.save(sd, os.path.join(out, "transformer", "diffusion_pytorch_model.safetensors"), dtype=dt, meta=meta)
    d = c["dit"]
    tcfg = {
        "_class_name": "WanTransformer3DModel", "_diffusers_version": "0.33.1",
        "patch_size": d["patch_size"], "num_attention_heads": d["num_heads"],
        "attention_head_dim": d["dim"] // d["num_heads"], "in_channels": c["vae"]["z_dim"],
        "out_channels": c["vae"]["z_dim"], "text_dim": c["t5"]["dim"], "freq_dim": d["freq_dim"],
        "ffn_dim": d["ffn_dim"], "num_layers": d["num_layers"], "cross_attn_norm": True,
        "qk_norm": "rms_norm_across_heads", "eps": 1e-6, "image_dim": d.get("image_dim"),
        "added_kv_proj_dim": d["dim"] if d.get("image_dim") else None,
        "rope_max_seq_len": 1024, "pos_embed_seq_len": None,
        "kino": kino_block(steps, shift, guidance),
    }
    json.dump(tcfg, open(os.path.join(out, "transformer", "config.json"), "w"), indent=1)

    # ---- text encoder
    tsd = {umt5.hf_key(k): v.float() for k, v in text.t5.state_dict().items()}
    tsd["encoder.embed_tokens.weight"] = tsd["shared.weight"].clone()
    st.save(tsd, os.path.join(out, "text_encoder", "model.safetensors"), dtype="F32", meta=meta)
    t = c["t5"]
    ecfg = {
        "architectures": ["UMT5EncoderModel"], "model_type": "umt5", "vocab_size": len(tok),
        "d_model": t["dim"], "d_kv": t["dim_attn"] // t["num_heads"], "d_ff": t["dim_ffn"],
        "num_layers": t["num_layers"], "num_decoder_layers": t["num_layers"], "num_heads": t["num_heads"],
        "relative_attention_num_buckets": t["num_buckets"], "relative_attention_max_distance": 128,
        "feed_forward_proj": "gated-gelu", "dense_act_fn": "gelu_new", "is_gated_act": True,
        "layer_norm_epsilon": 1e-6, "dropout_rate": 0.0, "initializer_factor": 1.0, "pad_token_id": 0,
        "eos_token_id": 1, "decoder_start_token_id": 0, "tie_word_embeddings": False, "scalable_attention": True,
        "is_encoder_decoder": True, "use_cache": True, "torch_dtype": "float32",
        "kino": {"text_len": c["dit"]["text_len"],
                 "usage": "run on the real tokens only (ids + EOS, <= text_len); no attention scaling; "
                          "per-layer relative position bias (umT5)"},
    }
    json.dump(ecfg, open(os.path.join(out, "text_encoder", "config.json"), "w"), indent=1)

    # ---- tokenizer
    tok.save(os.path.join(out, "tokenizer", "tokenizer.json"))
    json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": c["dit"]["text_len"],
               "pad_token": "[pad]", "eos_token": "[eos]", "unk_token": "[unk]", "do_lower_case": True,
               "kino": "ids = WordLevel(lowercase, \\w+|[^\\w\\s]+) truncated to text_len-1, then [eos]=1"},
              open(os.path.join(out, "tokenizer", "tokenizer_config.json"), "w"), indent=1)

    # ---- vae
    st.save({k: v.float() for k, v in vae.state_dict().items()},
            os.path.join(out, "vae", "diffusion_pytorch_model.safetensors"), dtype="F32", meta=meta)
    v = c["vae"]
    vcfg = {
        "_class_name": "AutoencoderKLWan", "_diffusers_version": "0.33.1", "key_layout": "wan",
        "base_dim": v["dim"], "z_dim": v["z_dim"], "dim_mult": v["dim_mult"], "num_res_blocks": v["num_res_blocks"],
        "attn_scales": v["attn_scales"], "temperal_downsample": v["temperal_downsample"], "dropout": 0.0,
        "latents_mean": [round(x, 6) for x in vae.latents_mean.tolist()],
        "latents_std": [round(x, 6) for x in vae.latents_std.tolist()],
        "scale_factor_temporal": 4, "scale_factor_spatial": common.spatial_factor(),
        "kino": {"decode": "z_raw = z * latents_std + latents_mean; conv2; decoder called once per latent frame "
                           "with Wan's causal feature caches (1 frame for the first latent, then 4); clamp to [-1, 1]",
                 "encoder": "included for completeness (not needed for text-to-video)"},
    }
    json.dump(vcfg, open(os.path.join(out, "vae", "config.json"), "w"), indent=1)

    # ---- scheduler
    sig = sampler_sigmas(steps, shift)
    json.dump({"_class_name": "FlowMatchEulerDiscreteScheduler", "_diffusers_version": "0.33.1",
               "num_train_timesteps": 1000, "shift": shift, "use_dynamic_shifting": False,
               "kino": {"steps": steps, "sigmas": sig, "timesteps": [s * 1000.0 for s in sig[:-1]]}},
              open(os.path.join(out, "scheduler", "scheduler_config.json"), "w"), indent=1)
    json.dump({"_class_name": "WanPipeline", "_diffusers_version": "0.33.1",
               "scheduler": ["diffusers", "FlowMatchEulerDiscreteScheduler"],
               "text_encoder": ["transformers", "UMT5EncoderModel"],
               "tokenizer": ["transformers", "PreTrainedTokenizerFast"],
               "transformer": ["diffusers", "WanTransformer3DModel"],
               "vae": ["diffusers", "AutoencoderKLWan"],
               "kino": {"name": "kino-tiny", "train_step": step}},
              open(os.path.join(out, "model_index.json"), "w"), indent=1)

    # ---- read back and compare
    inv = {wan_dit.wan_to_diffusers_key(k): k for k in dit.state_dict()}
    back = st.load(os.path.join(out, "transformer", "diffusion_pytorch_model.safetensors"))
    dit2 = common.dit_model().eval()
    dit2.load_state_dict({inv[k]: v for k, v in back.items()}, strict=True)
    ref = common.dit_model().eval()
    ref.load_state_dict({k: (bf16_round(v) if dt[wan_dit.wan_to_diffusers_key(k)] == "BF16" else v)
                         for k, v in dit.state_dict().items()})
    torch.manual_seed(0)
    x = torch.randn(1, c["vae"]["z_dim"], 2, common.latent_hw(), common.latent_hw())
    ctx = encode_text(text, tok, ["a red circle moving left on a black background"])
    kw = {"image": latent_patches(x[:, :, :1])} if d.get("image_dim") else {}
    with torch.no_grad():
        a, b, full = (m(x, torch.tensor([500.0]), ctx, **kw) for m in (dit2, ref, dit))
    print(f"transformer read-back vs bf16-rounded checkpoint: {(a - b).abs().max().item():.2e}; "
          f"vs fp32 checkpoint: {(a - full).abs().max().item():.2e} (output std {full.std().item():.2f})")
    tb = st.load(os.path.join(out, "text_encoder", "model.safetensors"))
    hf_inv = {umt5.hf_key(k): k for k in text.t5.state_dict()}
    t2 = common.t5_model(len(tok)).eval()
    t2.load_state_dict({hf_inv[k]: v for k, v in tb.items() if k in hf_inv})
    ids = torch.tensor([tok.encode("a red circle moving left on a black background")])
    with torch.no_grad():
        print(f"text encoder read-back max diff {(t2(ids) - text.t5(ids)).abs().max().item():.2e}")
    print(f"wrote {out}: {sizes(out) / 1e6:.2f} MB total")


if __name__ == "__main__":
    main()
