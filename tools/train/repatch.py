"""Convert a DiT checkpoint to a finer spatial patch (e.g. 1x4x4 -> 1x2x2), keeping every block, the
text encoder and the time embedding, so that a finer-token DiT starts from what the coarse one learned.

  KINO_DIT_PATCH=1,2,2 python3 tools/train/repatch.py SRC_CKPT OUT_CKPT

patch embedding: a fine token gets the sum of the coarse kernel's sub-kernels over its sub-positions,
  so a region that is smooth within a coarse token embeds as it did;
head: a fine token's output is the mean of the coarse head's outputs at its sub-position in each
  quadrant (a fine token cannot know which quadrant of a coarse one it would have been);
the optimizer state starts anew and the EMA restarts from the converted weights.
"""
import sys

import torch

import common
import tokenizer as tokmod
import train_dit


def convert(sd, old, new):
    _, oh, ow = old
    _, nh, nw = new
    fh, fw = oh // nh, ow // nw
    out = dict(sd)
    w = sd["patch_embedding.weight"]  # [D, C, pt, oh, ow]
    out["patch_embedding.weight"] = w.view(*w.shape[:3], fh, nh, fw, nw).sum(dim=(3, 5))
    for k in ("head.head.weight", "head.head.bias"):
        v = sd[k]  # rows ordered (pt, ph, pw, c)
        c = v.shape[0] // (old[0] * oh * ow)
        v = v.view(old[0], fh, nh, fw, nw, c, *v.shape[1:])
        out[k] = v.mean(dim=(1, 3)).reshape(old[0] * nh * nw * c, *v.shape[6:])
    return out


def main():
    src, dst = sys.argv[1], sys.argv[2]
    ck = torch.load(src)
    old = tuple(ck["cfg"]["dit"]["patch_size"])
    new = tuple(common.CFG["dit"]["patch_size"])
    assert old[0] == new[0] and old != new, f"{old} -> {new}: set KINO_DIT_PATCH to the finer patch"
    tok = tokmod.default_tokenizer()
    dit, text = train_dit.build(tok)
    dit.load_state_dict(convert(ck["ema_dit"], old, new))
    text.load_state_dict(ck["ema_text"])
    train_dit.save_restart_ckpt(dst, dit.state_dict(), text.state_dict(), ck["step"], tok)
    print(f"{src} (patch {old}, step {ck['step']}) -> {dst} (patch {new})")


if __name__ == "__main__":
    main()
