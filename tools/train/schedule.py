"""The flow-matching noise schedule that training and the streaming sampler share.

sigma = shift(u) = shift * u / (1 + (shift - 1) * u); the sampler walks shift(linspace(1, 0, steps + 1)),
and a chunk that continues its predecessor enters that walk part-way (img2img's strength).
"""
import numpy as np

from common import CFG


def shift_sigma(u, shift):
    """u in [0, 1] (a float or a tensor) -> sigma, pushed towards 1 by `shift`."""
    return shift * u / (1 + (shift - 1) * u)


def sampler_sigmas(steps, shift):
    """The sampler's steps + 1 noise levels, from 1 down to 0."""
    return shift_sigma(np.linspace(1.0, 0.0, steps + 1), shift).tolist()


def continuation_start(steps, strength):
    """The step a continuing chunk enters the schedule at (img2img's strength: it runs the last
    max(1, floor(strength * steps)) steps; strength 1 starts every chunk from noise)."""
    return steps - max(1, int(strength * steps))


def continuation_sigma():
    """The noise level a continuing chunk starts at, with the model's sampler settings."""
    start = continuation_start(CFG["sample_steps"], CFG["continuation_strength"])
    return sampler_sigmas(CFG["sample_steps"], CFG["shift"])[start]
