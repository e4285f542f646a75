"""Tiny PNG writer (zlib only) and image-grid helpers."""
import struct
import zlib

import numpy as np


def _chunk(tag, data):
    c = struct.pack(">I", len(data)) + tag + data
    return c + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)


def write_png(path, img):
    """img: uint8 array [H, W, 3] (RGB) or [H, W] (gray)."""
    img = np.ascontiguousarray(img, dtype=np.uint8)
    if img.ndim == 2:
        color_type, ch = 0, 1
    else:
        color_type, ch = 2, img.shape[2]
        assert ch == 3
    h, w = img.shape[:2]
    raw = b"".join(b"\x00" + img[y].tobytes() for y in range(h))
    data = b"\x89PNG\r\n\x1a\n"
    data += _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color_type, 0, 0, 0))
    data += _chunk(b"IDAT", zlib.compress(raw, 9))
    data += _chunk(b"IEND", b"")
    with open(path, "wb") as f:
        f.write(data)


def grid(rows, pad=2, bg=255):
    """rows: list of lists of uint8 [h, w, 3] images (all the same size) -> one image."""
    h, w = rows[0][0].shape[:2]
    ncol = max(len(r) for r in rows)
    out = np.full((len(rows) * (h + pad) + pad, ncol * (w + pad) + pad, 3), bg, np.uint8)
    for i, r in enumerate(rows):
        for j, im in enumerate(r):
            y, x = pad + i * (h + pad), pad + j * (w + pad)
            out[y:y + h, x:x + w] = im
    return out


def upscale(img, k):
    return np.repeat(np.repeat(img, k, axis=0), k, axis=1)


# 3x5 bitmap font for labels (digits, lowercase letters, a few symbols)
_FONT = {
    "a": "010101111101101", "b": "110101110101110", "c": "011100100100011", "d": "110101101101110",
    "e": "111100110100111", "f": "111100110100100", "g": "011100101101011", "h": "101101111101101",
    "i": "111010010010111", "j": "001001001101010", "k": "101101110101101", "l": "100100100100111",
    "m": "101111111101101", "n": "110101101101101", "o": "010101101101010", "p": "110101110100100",
    "q": "010101101110011", "r": "110101110101101", "s": "011100010001110", "t": "111010010010010",
    "u": "101101101101111", "v": "101101101101010", "w": "101101111111101", "x": "101101010101101",
    "y": "101101010010010", "z": "111001010100111", "0": "111101101101111", "1": "010110010010111",
    "2": "110001010100111", "3": "110001010001110", "4": "101101111001001", "5": "111100110001110",
    "6": "011100111101111", "7": "111001010010010", "8": "111101111101111", "9": "111101111001110",
    ".": "000000000000010", ",": "000000000010100", "-": "000000111000000", ":": "000010000010000",
    "/": "001001010100100", "%": "101001010100101", "=": "000111000111000", "(": "010100100100010",
    ")": "010001001001010", " ": "000000000000000", "_": "000000000000111", "+": "000010111010000",
}


def text_image(text, width, scale=1, fg=(0, 0, 0), bg=(255, 255, 255), max_lines=2):
    """Render text (lowercase) into a [h, width, 3] strip, wrapping at word boundaries."""
    cw = 4 * scale
    per_line = max(1, width // cw)
    words, lines, cur = text.lower().split(" "), [], ""
    for wd in words:
        if len(cur) + len(wd) + (1 if cur else 0) > per_line:
            lines.append(cur)
            cur = wd
        else:
            cur = (cur + " " + wd) if cur else wd
    lines.append(cur)
    lines = lines[:max_lines]
    h = max_lines * 6 * scale
    out = np.zeros((h, width, 3), np.uint8)
    out[:] = bg
    for li, line in enumerate(lines):
        for ci, ch in enumerate(line[:per_line]):
            bits = _FONT.get(ch, _FONT[" "])
            for k, b in enumerate(bits):
                if b == "1":
                    y, x = li * 6 * scale + (k // 3) * scale, ci * cw + (k % 3) * scale
                    out[y:y + scale, x:x + scale] = fg
    return out
