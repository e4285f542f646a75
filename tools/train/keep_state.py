"""Pack a DiT training checkpoint small enough to commit: tools/train/state/dit-ckpt.pt.

  python3 tools/train/keep_state.py [--ckpt build/train/dit/ckpt.pt] [--out tools/train/state/dit-ckpt.pt]

The home cache (state.sh) goes with the machine, and with it every DiT step trained since the last
export. This keeps the EMA weights alone, in fp16, with the optimizer state dropped
(train_dit.save_restart_ckpt): ~7 MB where the full checkpoint is ~30 MB. train_dit.py resumes from it as from import_model.py's checkpoint (optimizer
anew, EMA restarted at the kept step); fp16 keeps 11 significant bits, far below what one training
step changes. state.sh restore prefers it to rebuilding from the exported model.
"""
import argparse
import os

import torch

import common
import tokenizer as tokmod
import train_dit


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckpt", default=f"{common.BUILD}/dit/ckpt.pt")
    ap.add_argument("--out", default=os.path.join(common.ROOT, "tools", "train", "state", "dit-ckpt.pt"))
    args = ap.parse_args()
    ck = torch.load(args.ckpt, map_location="cpu")
    dit = {k: v.half() if v.is_floating_point() else v for k, v in ck["ema_dit"].items()}
    text = {k: v.half() if v.is_floating_point() else v for k, v in ck["ema_text"].items()}
    train_dit.save_restart_ckpt(args.out, dit, text, ck["step"], tokmod.default_tokenizer())
    print(f"{args.ckpt} (step {ck['step']}) -> {args.out}: {os.path.getsize(args.out) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
