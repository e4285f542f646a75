"""Captions of kino-tiny's procedural scenes (render.py): randomised templates (free word order,
synonyms) for training, the canonical form for evaluation, the motion alone for image-to-video, and
the tokenizer's vocabulary."""
import numpy as np

from render import BG_SOLID, SHAPES, SPECIAL_BGS, switched

MOTION_PHRASES = {
    "left": ["moving left", "moving to the left", "going left"],
    "right": ["moving right", "moving to the right", "going right"],
    "up": ["moving up", "moving upward", "going up"],
    "down": ["moving down", "moving downward", "going down"],
    "bouncing": ["bouncing", "bouncing up and down"],
    "spinning": ["spinning", "rotating"],
    "growing": ["growing", "getting bigger"],
    "shrinking": ["shrinking", "getting smaller"],
    "still": ["standing still", "not moving", ""],
}
BG_PHRASES = {
    "night": ["in a night sky", "at night", "under a night sky", "on a night sky"],
    "snow": ["in the snow", "in snow", "with falling snow", "on a snowy background"],
    "sunset": ["at sunset", "in front of a sunset", "with a sunset background", "on a sunset"],
}
SOLID_BG_PHRASES = ["on {} background", "with {} background", "in front of {} background"]  # {} = "a red"


def article(word):
    return "an" if word[0] in "aeiou" else "a"


def vocabulary():
    words = set()
    for c in BG_SOLID:
        words.add(c)
    words.update(SHAPES)
    for ps in list(MOTION_PHRASES.values()) + list(BG_PHRASES.values()):
        for p in ps:
            words.update(p.split())
    for p in SOLID_BG_PHRASES:
        words.update(p.replace("{}", "").split())
    words.update(["a", "an", "and", "the", "of", "with", "on", "in", "at", ",", ".", "background", "sky", "object",
                  "shape", "video", "two", "one", "small", "big", "large", "left", "right", "up", "down"])
    return sorted(words)


def caption_pair(scene, rng):
    """(caption before, caption after) a switch, with the same template and phrasing."""
    seed = int(rng.integers(1 << 31))
    a = caption(scene if "switch" not in scene else {k: v for k, v in scene.items() if k != "switch"},
                np.random.default_rng(seed))
    if "switch" not in scene:
        return a, a
    return a, caption(switched(scene), np.random.default_rng(seed))


def bg_phrase(bg, rng=None):
    if bg in SPECIAL_BGS:
        ps = BG_PHRASES[bg]
        return ps[0] if rng is None else str(rng.choice(ps))
    p = SOLID_BG_PHRASES[0] if rng is None else str(rng.choice(SOLID_BG_PHRASES))
    return p.format(f"{article(bg)} {bg}")


def obj_phrase(o):
    return f"{article(o['color'])} {o['color']} {o['shape']}"


def motion_phrase(m, rng=None):
    ps = MOTION_PHRASES[m]
    if rng is None:
        return ps[0]
    return str(rng.choice(ps))


def caption(scene, rng):
    objs = scene["objects"]
    parts = []
    for o in objs:
        mp = motion_phrase(o["motion"], rng)
        parts.append((obj_phrase(o), mp))
    bgp = bg_phrase(scene["bg"], rng)
    if len(parts) == 1:
        (ob, mp), = parts
        form = int(rng.integers(3)) if mp else int(rng.choice([0, 1]))
        if form == 0:
            return " ".join(x for x in (ob, mp, bgp) if x)
        if form == 1:
            return f"{bgp}, " + " ".join(x for x in (ob, mp) if x)
        return f"{ob} {bgp}, {mp}"
    objs_txt = " and ".join(" ".join(x for x in p if x) for p in parts)
    if rng.random() < 0.5:
        return f"{objs_txt} {bgp}"
    return f"{bgp}, {objs_txt}"


def motion_caption(scene, rng=None):
    """What an image-to-video request may say beside its first frame: only how the objects move (their
    look comes from the frame), e.g. "moving right"; several objects' phrases joined with "and"."""
    said = [[p for p in MOTION_PHRASES[o["motion"]] if p] for o in scene["objects"]]
    return " and ".join(ps[0] if rng is None else str(rng.choice(ps)) for ps in said)


def canonical_caption(color, shape, motion, bg):
    mp = MOTION_PHRASES[motion][0]
    return f"{article(color)} {color} {shape} {mp} {bg_phrase(bg)}"
