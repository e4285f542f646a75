"""kino-tiny's image branch: a given first frame read through cross-attention as well as through the
KV cache (NOTES.md, "Starting from a given first frame").

Held at t = 0 as the stream's first chunk (Wan2.2's first-frame conditioning), the frame reaches the
later chunks only through self-attention, where a chunk must rebuild the object one token over by
regression from what it reads of frame 0, and from a motion-only caption it kept the color in only
half of the held-out streams. A caption's color word works in one cross-attention lookup; the image
branch gives the frame the same path, the way Wan2.1 I2V gives its CLIP features one: the frame's
latent, cut into the DiT's own 1x4x4 patches (`latent_patches`), becomes image tokens through
img_emb, and every block's cross-attention also attends to them with its own key/value projections.

Only the branch trains; every text-to-video weight stays frozen, so a stream without an image is the
text-to-video model bit for bit."""
import torch
import torch.nn as nn

import common
from common import CFG


def image_dim():
    """The width of one image token: a patch of the latent, z_dim x ph x pw values."""
    _, ph, pw = CFG["dit"]["patch_size"]
    return CFG["vae"]["z_dim"] * ph * pw


def latent_patches(z):
    """Latent frames z [B, C, 1, H, W] -> image features [B, (H/ph)(W/pw), C*ph*pw]: tokens in raster
    order (row, then column), each token's values in (channel, row in patch, column in patch) order
    (the order of the patch embedding's weights)."""
    B, C, _, H, W = z.shape
    _, ph, pw = CFG["dit"]["patch_size"]
    u = z[:, :, 0].reshape(B, C, H // ph, ph, W // pw, pw).permute(0, 2, 4, 1, 3, 5)
    return u.reshape(B, (H // ph) * (W // pw), C * ph * pw)


def with_image_branch(base_state):
    """A DiT with an image branch holding `base_state`'s weights. The branch starts silent (v_img
    zero) and keyed like the text (k_img and norm_k_img copied from each block's text keys), so it
    begins as the text-to-video model and its first gradients go to the values."""
    CFG["dit"]["image_dim"] = image_dim()
    dit = common.dit_model()
    missing, unexpected = dit.load_state_dict(base_state, strict=False)
    assert not unexpected and all(branch_param(k) for k in missing), (missing, unexpected)
    with torch.no_grad():
        for blk in dit.blocks:
            ca = blk.cross_attn
            ca.k_img.weight.copy_(ca.k.weight)
            ca.k_img.bias.copy_(ca.k.bias)
            ca.norm_k_img.weight.copy_(ca.norm_k.weight)
            nn.init.zeros_(ca.v_img.weight)
            nn.init.zeros_(ca.v_img.bias)
    return dit


def branch_param(name):
    return name.startswith("img_emb.") or "_img." in name


def freeze_all_but_branch(dit):
    """Only the image branch trains; returns its parameters."""
    params = []
    for n, p in dit.named_parameters():
        p.requires_grad_(branch_param(n))
        if branch_param(n):
            params.append(p)
    return params
