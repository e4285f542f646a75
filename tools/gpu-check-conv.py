#!/usr/bin/env python3
# conv3d on the GPU (tools/gpu-check.sh runs this as its own step, in its own process): kc_conv3d's
# tensor-core paths (conv_path 2 mma.sync, conv_mma.cu; 3 wgmma, conv_wgmma.cu, sm_90 only) and SIMT
# path (1) against PyTorch's conv3d in float64 at awkward shapes and at the Wan2.1 VAE decoder's, each
# result held to its stated promise (kernels/cuda/conv.cuh), mma.sync also with each of its block tiles
# forced (KINO_CUDA_CONV_MMA_TILE), which kernel auto picks; then conv3d TFLOP/s of mma.sync and wgmma
# beside cuDNN at the decoder's 832x480 levels, as a table, mma.sync also with each tile its model could
# pick there forced beside the one it picks ("  mma.sync conv picks TILE for LEVEL (S SMs)"). Ends with
# one VERDICT-DATA line (failed checks, the wgmma pass — skipped off sm_90, hung, cases run — and the
# table's rows) for tools/gpu-verdicts.ts (CONV_WGMMA_VERIFIED; the advice on conv_mma_tiles.cuh's
# model). Exits 1 when a check fails.
import ctypes as C, os, re, sys, threading
import torch

from gpu_check_common import bench, bf, call, create_context, failures, i32, lib, p, rel, report as report_line, rnd, rows, torch_bench, verdict_data, vp

lib.kc_conv3d.argtypes = [vp, vp, vp, vp, vp, i32, vp, vp, i32, C.POINTER(C.c_int32), i32, i32, vp, C.c_float, C.c_float]
lib.kc_last_kernel.restype = C.c_char_p
lib.kc_last_kernel.argtypes = [vp, i32]
lib.kc_conv_mma_tile.restype = None  # the mma.sync conv's block tile for M voxels, Cout channels (conv_mma.cu)
lib.kc_conv_mma_tile.argtypes = [vp, C.c_int64, i32, C.POINTER(C.c_int32)]
# the conv checks' lines are wider, and their errors are ratios to a promise, not relative errors
def report(name, err, tol): report_line(name, err, tol, width=70, what="")

def context(conv_path, optional=False, tile=None):
    """A context forcing conv_path (and with tile, the mma.sync kernel's block tile: KINO_CUDA_CONV_MMA_TILE);
    where this device refuses it, None if optional (wgmma off sm_90), else exit."""
    if tile: os.environ["KINO_CUDA_CONV_MMA_TILE"] = tile
    ctx = create_context()
    os.environ.pop("KINO_CUDA_CONV_MMA_TILE", None)
    if lib.kc_set_paths(ctx, 0, 0, conv_path):
        if optional: return None
        sys.exit(f"kc_set_paths: {lib.kc_last_error(ctx).decode()}")
    return ctx

# ---- conv3d (kernels/cuda/conv.cuh): the tensor-core paths (conv_path 2, 3) and SIMT (1) against
# PyTorch's conv3d in float64, each held to its stated promise per element:
#   mma.sync, wgmma |out − ref| ≤ (u_x + u_w + u_x·u_w + K·2^-23)·S, SIMT ≤ K·2^-24·S (+ 2^-24·|ref| for the
#   bias), S = conv(|x̂|, |w|), u_x = 2^-8, u_w = 2^-8 for f32/f16 weights and 0 for bf16 ones;
# and the tensor-core result also against the reference on bf16-rounded operands (rel err).
def conv_geom(x, w, pad, stride, time_pad, up=False):
    """up: the conv reads x nearest-upsampled ×2 in space (kc_conv3d's upsample): H and W are twice x's."""
    B, Cin, T, H, W = x.shape; Cout, _, kt, kh, kw = w.shape
    if up: H, W = 2 * H, 2 * W
    top, bottom, left, right = pad; st, sh, sw = stride
    span = lambda n, k, s: 0 if n < k else (n - k) // s + 1
    To, Ho, Wo = span(time_pad + T, kt, st), span(H + top + bottom, kh, sh), span(W + left + right, kw, sw)
    return (C.c_int32 * 17)(Cin, Cout, T, H, W, kt, kh, kw, st, sh, sw, time_pad, top, left, To, Ho, Wo), (B, Cout, To, Ho, Wo)

W_DT = {torch.float32: 0, torch.bfloat16: 1, torch.float16: 2}

def conv_rc(ctx, out, x, w, bias, prev, pad, stride, time_pad, norm=None, residual=None, up=False):
    """norm: (gamma, eps, scale), the fused norm and SiLU of the conv's input (conv.cuh ConvNormSilu);
    residual: added to the output in the same call (kc_conv_out); up: the fused upsample (conv_geom)."""
    geom, _ = conv_geom(x, w, pad, stride, time_pad, up)
    gamma, eps, scale = norm or (None, 0.0, 0.0)
    return lib.kc_conv3d(ctx, p(out), p(x), p(prev), p(w), W_DT[w.dtype], p(bias), p(residual), x.shape[0], geom, int(up),
                         int(norm is not None), p(gamma), eps, scale)

def kino_conv(ctx, x, w, bias, prev, pad, stride, time_pad, norm=None, residual=None, up=False):
    out = torch.empty(conv_geom(x, w, pad, stride, time_pad, up)[1], device="cuda")
    torch.cuda.synchronize()
    call(ctx, conv_rc(ctx, out, x, w, bias, prev, pad, stride, time_pad, norm, residual, up), f"conv3d x {tuple(x.shape)} w {tuple(w.shape)}")
    return out, lib.kc_last_kernel(ctx, 2).decode()

def norm_silu(t, gamma, eps, scale):
    """What a conv with the fused norm and SiLU reads for t, in float64: silu(t / max(‖t‖₂, eps) · scale · gamma) over channels."""
    n = t.double() / t.double().norm(dim=1, keepdim=True).clamp_min(eps) * scale * gamma.double().view(1, -1, 1, 1, 1)
    return n * torch.sigmoid(n)

def causal_input(x, prev, pad, time_pad):
    # cat(prev or zeros, x) along time, then the spatial zero padding: what every conv3d call sees
    B, Cin, T, H, W = x.shape
    front = [] if not time_pad else [prev.to(x.dtype) if prev is not None else torch.zeros(B, Cin, time_pad, H, W, dtype=x.dtype, device="cuda")]
    top, bottom, left, right = pad
    return torch.nn.functional.pad(torch.cat(front + [x], 2), (left, right, top, bottom))

def ref_conv(x, w, bias, prev, pad, stride, time_pad):
    xx = causal_input(x.double(), None if prev is None else prev.double(), pad, time_pad)
    return torch.nn.functional.conv3d(xx, w.double(), None if bias is None else bias.double(), stride=stride)

# conv_mma_tiles.cuh's tiles, by the names KINO_CUDA_CONV_MMA_TILE takes; the last is the narrow one (Cout ≤ 16)
CONV_MMA_TILES = ["128x192", "256x96", "128x96", "256x16"]
conv_ctx = {"mma.sync": context(2), "simt": context(1), "auto": context(0), **{f"mma.sync {t}": context(2, tile=t) for t in CONV_MMA_TILES}}
# (label, B, Cin, Cout, T, H, W, kernel, pad (top, bottom, left, right), stride, timePad, prev, w dtype)
conv_cases = [
    ("causal 3³, batch 2, Cin 3, Cout 5", 2, 3, 5, 4, 7, 9, (3, 3, 3), (1, 1, 1, 1), (1, 1, 1), 2, True, torch.float32),
    ("Cin 40, Cout 130, cache", 1, 40, 130, 2, 9, 17, (3, 3, 3), (1, 1, 1, 1), (1, 1, 1), 2, True, torch.float32),
    ("Cout 256 (1,3,3), batch 2", 2, 32, 256, 1, 6, 7, (1, 3, 3), (1, 1, 1, 1), (1, 1, 1), 0, False, torch.bfloat16),
    ("downsample: pad (0,1,0,1), stride 2", 1, 20, 3, 1, 9, 9, (1, 3, 3), (0, 1, 0, 1), (1, 2, 2), 0, False, torch.bfloat16),
    ("1×1×1, f16 weights", 1, 64, 24, 1, 5, 7, (1, 1, 1), (0, 0, 0, 0), (1, 1, 1), 0, False, torch.float16),
    ("time stride 2, no cache", 1, 16, 100, 3, 13, 11, (3, 3, 3), (1, 1, 1, 1), (2, 1, 1), 2, False, torch.float32),
    # the wgmma kernel's edges: an odd count of 32-channel K slices with stride 2 everywhere (96-wide
    # tile), and 128-wide tiles with tails in voxels and channels, batch 2, no cache
    ("stride 2, Cin 20, Cout 40", 1, 20, 40, 3, 9, 11, (3, 3, 3), (1, 1, 1, 1), (2, 2, 2), 2, False, torch.float32),
    ("no cache, Cin 36, Cout 200, batch 2", 2, 36, 200, 2, 6, 9, (3, 3, 3), (1, 1, 1, 1), (1, 1, 1), 2, False, torch.float32),
    # the Wan2.1 VAE decoder's convs, real channels (levels 2-3 cropped to 120x208 to keep fp64 fast)
    ("Wan conv1 16→384 3³ 60x104", 1, 16, 384, 1, 60, 104, (3, 3, 3), (1, 1, 1, 1), (1, 1, 1), 2, True, torch.float32),
    ("Wan middle 384→384 3³ 60x104", 1, 384, 384, 1, 60, 104, (3, 3, 3), (1, 1, 1, 1), (1, 1, 1), 2, True, torch.float32),
    ("Wan time_conv 384→768 (3,1,1) 60x104", 1, 384, 768, 1, 60, 104, (3, 1, 1), (0, 0, 0, 0), (1, 1, 1), 2, True, torch.float32),
    ("Wan shortcut 192→384 1³ 120x208", 1, 192, 384, 2, 120, 208, (1, 1, 1), (0, 0, 0, 0), (1, 1, 1), 0, False, torch.float32),
    ("Wan level 1 384→384 3³ 120x208", 1, 384, 384, 2, 120, 208, (3, 3, 3), (1, 1, 1, 1), (1, 1, 1), 2, True, torch.bfloat16),
    ("Wan up conv 384→192 (1,3,3) 240x416", 1, 384, 192, 2, 240, 416, (1, 3, 3), (1, 1, 1, 1), (1, 1, 1), 0, False, torch.float32),
    ("Wan level 3 96→96 3³ (120x208 crop)", 1, 96, 96, 4, 120, 208, (3, 3, 3), (1, 1, 1, 1), (1, 1, 1), 2, True, torch.float32),
    ("Wan head 96→3 3³ (120x208 crop)", 1, 96, 3, 4, 120, 208, (3, 3, 3), (1, 1, 1, 1), (1, 1, 1), 2, True, torch.float32),
]
TENSOR_CORE_RATE = lambda K, u_w: 2 ** -8 + u_w + 2 ** -8 * u_w + K * 2 ** -23

def check(path, label, got, ran, case):
    """Reports one result against its promise (and a tensor-core one against the bf16-rounded reference)."""
    x, w, bias, prev, pad, stride, tp, K, want, S, rounded = case
    u_w = 0 if w.dtype == torch.bfloat16 else 2 ** -8
    rate = TENSOR_CORE_RATE(K, u_w) if path != "simt" else K * 2 ** -24
    bound = rate * S + 2 ** -24 * want.abs() + 1e-30
    name = f"conv {path}: {label}"
    if ran != path.split(" ")[0]: report(f"{name} ran {ran}", 1.0, 0.5); return
    report(name + " promise", ((got.double() - want).abs() / bound).max().item(), 1)
    if path != "simt": report(name + " vs bf16-rounded ref", rel(got, rounded), 1e-4)

print("conv3d correctness (promise: |err| / bound ≤ 1):", flush=True)
kept = []  # each case's inputs and references, for the wgmma pass below
up_label, up_case = "Wan up conv 384→192 (1,3,3) reading x upsampled, from 61x105", None  # the wgmma pass's too
try:
    for (label, B, Cin, Cout, T, H, W, k, pad, stride, tp, with_prev, wdt) in conv_cases:
        x, w, bias = rnd(B, Cin, T, H, W), rnd(Cout, Cin, *k).to(wdt), rnd(Cout)
        prev = rnd(B, Cin, tp, H, W) if with_prev and tp else None
        want = ref_conv(x, w, bias, prev, pad, stride, tp)
        S = ref_conv(x.abs(), w.abs(), None, None if prev is None else prev.abs(), pad, stride, tp)
        rounded = ref_conv(bf(x), bf(w.float()), bias, None if prev is None else bf(prev), pad, stride, tp)
        case = (x, w, bias, prev, pad, stride, tp, Cin * k[0] * k[1] * k[2], want, S, rounded)
        kept.append((label, case))
        for path in ("mma.sync", *(f"mma.sync {t}" for t in CONV_MMA_TILES), "simt"):
            got, ran = kino_conv(conv_ctx[path], x, w, bias, prev, pad, stride, tp)
            check(path, label, got, ran, case)
        _, ran = kino_conv(conv_ctx["auto"], x, w, bias, prev, pad, stride, tp)
        print(f"       auto picks {ran} for {label}", flush=True)
    # the Wan-VAE's residual conv with its "RMS_norm, SiLU" and its residual add in the same call: held
    # to the same promises on x̂ = silu(n(x)) (and n(prev): the cache holds raw frames), plus the
    # block's input x added in f32 after the sum
    label, (B, Cin, Cout, T, H, W) = "Wan level 3 96→96 3³ + norm, SiLU, residual (120x208 crop)", (1, 96, 96, 4, 120, 208)
    x, prev, w, bias, gamma = rnd(B, Cin, T, H, W) * 3, rnd(B, Cin, 2, H, W), rnd(Cout, Cin, 3, 3, 3), rnd(Cout), rnd(Cin) + 1
    norm = (gamma, 1e-12, Cin ** 0.5)
    xin, pin = norm_silu(x, *norm), norm_silu(prev, *norm)
    pad, stride = (1, 1, 1, 1), (1, 1, 1)
    case = (x, w, bias, prev, pad, stride, 2, Cin * 27, ref_conv(xin, w, bias, pin, pad, stride, 2) + x.double(),
            ref_conv(xin.abs(), w.abs(), None, pin.abs(), pad, stride, 2),
            ref_conv(bf(xin.float()), bf(w), bias, bf(pin.float()), pad, stride, 2) + x.double())
    for path in ("mma.sync", "simt"):
        got, ran = kino_conv(conv_ctx[path], x, w, bias, prev, pad, stride, 2, norm, x)
        check(path, label, got, ran, case)
    # the Wan-VAE decoder's resample: its 3×3 conv reading x nearest-upsampled ×2 in space (kc_conv3d's
    # upsample), held to the same promises on x̂ = F.interpolate(x, nearest ×2); odd x sizes, no time padding
    x, w, bias = rnd(1, 384, 2, 61, 105), rnd(192, 384, 1, 3, 3), rnd(192)
    xu = torch.nn.functional.interpolate(x, scale_factor=(1, 2, 2), mode="nearest")
    pad, stride = (1, 1, 1, 1), (1, 1, 1)
    up_case = (x, w, bias, None, pad, stride, 0, 384 * 9, ref_conv(xu, w, bias, None, pad, stride, 0),
               ref_conv(xu.abs(), w.abs(), None, None, pad, stride, 0), ref_conv(bf(xu), bf(w), bias, None, pad, stride, 0))
    del xu
    for path in ("mma.sync", "simt"):
        got, ran = kino_conv(conv_ctx[path], x, w, bias, None, pad, stride, 0, up=True)
        check(path, up_label, got, ran, up_case)
except Exception as e:  # a fault leaves the contexts unusable: report it and go on to the benchmarks
    print(f"  FAIL conv3d: {e}")
    failures.append(f"conv3d: {e}")

# conv3d at the Wan2.1 VAE decoder's 832x480 levels, one decode call each (a chunk's frames at that
# level, the causal cache of 2 frames): kino (f32 activations and weights, as the VAE keeps them; its
# bf16 repack included) against cuDNN's bf16 conv3d on the already padded bf16 input, the better of
# NCDHW and channels-last. Each pass makes its inputs afresh: the timing does not depend on the values.
conv_bench_shapes = [("384→384 3³ 104x60 T1", 384, 384, 1, 60, 104), ("384→384 3³ 208x120 T2", 384, 384, 2, 120, 208),
                     ("192→192 3³ 416x240 T4", 192, 192, 4, 240, 416), ("96→96 3³ 832x480 T4", 96, 96, 4, 480, 832),
                     ("96→3 3³ 832x480 T4 (head)", 96, 3, 4, 480, 832)]
BENCH_ITERS = 10
cudnn = {}  # label → cuDNN TFLOP/s

def bench_levels(c, with_cudnn, shapes, tiles=False):
    """Times c at each level (with cuDNN beside it); with tiles, also mma.sync with each tile its model could
    pick there forced: the wide ones, or where Cout ≤ 16 the narrow one, the only one the model has there."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for label, Cin, Cout, T, H, W in shapes:
        x, prev, w, bias = rnd(1, Cin, T, H, W), rnd(1, Cin, 2, H, W), rnd(Cout, Cin, 3, 3, 3) * 0.05, rnd(Cout)
        out = torch.empty(1, Cout, T, H, W, device="cuda")
        flops = 2 * T * H * W * Cout * Cin * 27
        if tiles:
            bm_bn = (C.c_int32 * 2)()
            lib.kc_conv_mma_tile(c, T * H * W, Cout, bm_bn)
            print(f"  mma.sync conv picks {bm_bn[0]}x{bm_bn[1]} for {label} ({sms} SMs)", flush=True)
        kt = bench(c, lambda: conv_rc(c, out, x, w, bias, prev, (1, 1, 1, 1), (1, 1, 1), 2), flops, BENCH_ITERS)
        ran = lib.kc_last_kernel(c, 2).decode()
        if with_cudnn:
            xx, wb, bb = causal_input(x, prev, (1, 1, 1, 1), 2).to(torch.bfloat16), w.to(torch.bfloat16), bias.to(torch.bfloat16)
            tt = torch_bench(lambda: torch.nn.functional.conv3d(xx, wb, bb), flops, BENCH_ITERS)
            xl, wl = xx.to(memory_format=torch.channels_last_3d), wb.to(memory_format=torch.channels_last_3d)
            cudnn[label] = max(tt, torch_bench(lambda: torch.nn.functional.conv3d(xl, wl, bb), flops, BENCH_ITERS))
            del xx, xl
        rows.append((f"conv3d {label} [{ran}]", kt, cudnn.get(label, float("nan"))))
        for t in (CONV_MMA_TILES[-1:] if Cout <= 16 else CONV_MMA_TILES[:-1]) if tiles else []:
            f = conv_ctx[f"mma.sync {t}"]
            rows.append((f"conv3d {label} [mma.sync {t}]", bench(f, lambda: conv_rc(f, out, x, w, bias, prev, (1, 1, 1, 1), (1, 1, 1), 2), flops, BENCH_ITERS),
                         cudnn.get(label, float("nan"))))
        del x, prev, out

torch.backends.cudnn.benchmark = True  # let cuDNN pick its fastest algorithm in the warm-up
try:
    bench_levels(conv_ctx["mma.sync"], True, conv_bench_shapes, tiles=True)
except Exception as e:
    print(f"  FAIL conv3d benchmark: {e}")
    failures.append(f"conv3d benchmark: {e}")

# The wgmma kernel (conv path 3, conv_wgmma.cu) had not run on a GPU before this check, so it runs
# last, on the references above, with a watchdog that reports a hang with the table so far. It is
# timed beside mma.sync only where it kept its promise at every case; calls with Cout < 32 (the head)
# run mma.sync on the forced path too (conv.cu), which check() accepts.
wgmma = {"skipped": False, "hung": False, "cases": 0, "total": len(conv_cases)}

def print_table():
    print(f"\n| {'op':50s} | kino TFLOP/s | cuDNN TFLOP/s | kino/cuDNN |")
    print(f"|{'-' * 52}|--------------|---------------|------------|")
    for name, k_, t_ in rows:
        print(f"| {name:50s} | {k_:12.1f} | {t_:13.1f} | {k_ / t_:10.2f} |")
    for label in cudnn:
        by = {re.sub(r".* \[(.*)\]$", r"\1", n): k_ for n, k_, _ in rows if n.startswith(f"conv3d {label} [")}
        if "wgmma" in by and "mma.sync" in by: print(f"  {label}: wgmma / mma.sync {by['wgmma'] / by['mma.sync']:.2f}x")

def summary_line():
    verdict_data("gpu-check-conv", failures=failures, wgmma=wgmma, rows=rows)

def hung():
    print("\nFAIL conv3d wgmma did not finish within 45 s (deadlock?); results so far:", flush=True)
    wgmma["hung"] = True
    print_table()
    summary_line()
    os._exit(1)

watchdog = threading.Timer(45, hung)
watchdog.start()
print("\nconv3d wgmma (path 3, sm_90a) correctness:", flush=True)
try:
    wg = context(3, optional=True)
    if wg is None:
        print("  skipped: not an sm_90 GPU with the driver's tensor-map encoder")
        wgmma["skipped"] = True
    else:
        for label, case in kept:
            x, w, bias, prev, pad, stride, tp = case[:7]
            got, ran = kino_conv(wg, x, w, bias, prev, pad, stride, tp)
            check("wgmma" if w.shape[0] >= 32 else "mma.sync", label, got, ran, case)
            wgmma["cases"] += 1
        if up_case is not None:  # the fused upsample (not one of conv_cases: the count above stays theirs)
            got, ran = kino_conv(wg, *up_case[:7], up=True)
            check("wgmma", up_label, got, ran, up_case)
        if not any(f.startswith("conv wgmma") for f in failures) and wgmma["cases"] == len(conv_cases):
            bench_levels(wg, False, [s for s in conv_bench_shapes if s[2] >= 32])
        else:
            print("  wgmma benchmarks skipped: its correctness checks failed or did not all run")
except Exception as e:  # a fault in the kernel leaves the context unusable: report it
    print(f"  FAIL conv3d wgmma: {e}")
    failures.append(f"conv wgmma: {e}")
watchdog.cancel()
del kept, up_case

print_table()
summary_line()
if failures:
    print(f"\n{len(failures)} conv3d check(s) FAILED: {failures}")
    sys.exit(1)
print("\nall conv3d checks passed")
