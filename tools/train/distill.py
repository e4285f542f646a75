"""A frozen DiT as the teacher (train_dit.py --teacher): a branch that teaches new sizes or new inputs
scores its steps at the teacher's own sizes against the teacher's predictions instead of the data, so
what the teacher already does there (its shapes, its prompt transitions) cannot drift while the shared
weights learn the rest. Data targets alone did drift: steps at 112x64 and 64x112 took 64x64's shape
from 74 to 64 % even with 64x64 in half the steps (NOTES.md, "Other aspect ratios")."""
from types import SimpleNamespace

import torch

import common
from networks import build, encode_prompts


def load_teacher(path, tok):
    """The checkpoint's EMA weights (what export.py ships), frozen, and the sizes it was trained at."""
    ck = common.load_ckpt(path)
    if ck is None:
        raise SystemExit(f"--teacher: no checkpoint at {path}")
    dit, text = build(tok)
    dit.load_state_dict(ck["ema_dit"])
    text.load_state_dict(ck["ema_text"])
    for m in (dit, text):
        m.eval()
        m.requires_grad_(False)
    sizes = {tuple(map(int, s.split("x"))) for s in ck["cfg"].get("native_sizes", ["64x64"])}
    return SimpleNamespace(dit=dit, text=text, sizes=sizes, step=ck["step"])


def predict(dit, text, tok, prompts, text_len, x, t, mix=None, **dit_kw):
    """The DiT's output for prompts (two captions per clip mixed by `mix` [B, F] when given, as a
    prompt switch conditions its frames), under the bf16 autocast training runs in."""
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ctx = encode_prompts(text, tok, prompts, text_len)
        if mix is not None:
            ctx = ctx.view(x.shape[0], 2, ctx.shape[1], ctx.shape[2])
            ctx = (1 - mix[..., None, None]) * ctx[:, :1] + mix[..., None, None] * ctx[:, 1:]
        return dit(x, t, ctx, **dit_kw)


@torch.no_grad()
def teacher_x0(teacher, tok, prompts, text_len, x, t, mix=None, **dit_kw):
    """The teacher's prediction on exactly the student's inputs, as f32: the target in place of x0."""
    return predict(teacher.dit, teacher.text, tok, prompts, text_len, x, t, mix, **dit_kw).float()
