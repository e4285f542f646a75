"""Minimal safetensors reader/writer (no dependencies beyond torch/numpy).

Format: 8-byte little-endian header length N, N bytes of JSON header
({name: {dtype, shape, data_offsets:[begin,end]}, "__metadata__": {...}}), then raw
little-endian tensor bytes. The header is padded with spaces to a multiple of 8.
"""
import json
import struct

import numpy as np
import torch

_NP = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32, "U8": np.uint8}


def load(path):
    """Returns an ordered dict name -> float32/int torch tensor (BF16 is widened to F32)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n].decode("utf-8"))
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        raw = data[base + b:base + e]
        shape = info["shape"]
        if info["dtype"] == "BF16":
            u16 = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            arr = u16.view(np.float32)
        else:
            arr = np.frombuffer(raw, dtype=np.dtype(_NP[info["dtype"]]).newbyteorder("<"))
        out[name] = torch.from_numpy(arr.reshape(shape).copy())
    return out


def metadata(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n).decode("utf-8"))
    return header.get("__metadata__", {})


def _to_bytes(t, dtype):
    t = t.detach().to("cpu").contiguous()
    if dtype == "BF16":
        # round-to-nearest-even from f32
        u = t.float().numpy().view(np.uint32).astype(np.uint64)
        u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
        return u.astype("<u2").tobytes()
    if dtype == "F32":
        return t.float().numpy().astype("<f4").tobytes()
    if dtype == "F16":
        return t.half().numpy().astype("<f2").tobytes()
    if dtype == "I64":
        return t.long().numpy().astype("<i8").tobytes()
    raise ValueError(dtype)


def save(tensors, path, dtype="F32", meta=None):
    """tensors: ordered dict name -> tensor. dtype: F32 | BF16 | F16 (or a dict name->dtype)."""
    header = {}
    blobs = []
    off = 0
    for name, t in tensors.items():
        dt = dtype[name] if isinstance(dtype, dict) else dtype
        b = _to_bytes(t, dt)
        header[name] = {"dtype": dt, "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    if meta:
        header["__metadata__"] = {k: str(v) for k, v in meta.items()}
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
