# The kernel checks of tools/gpu-check.sh against PyTorch on the GPU, in parts that the script runs as
# separate steps (each under its own time cap, the unverified kernels first):
#   wgmma   the Hopper attention kernel (attention path 2, sm_90a; not yet chosen by auto): its
#           correctness at awkward shapes and its precision promise, then its TFLOP/s beside SDPA;
#           the same at D 128 with FlashAttention-3's 176-key tiles (KINO_CUDA_ATTENTION_BKV=176, rows
#           [wgmma-bkv176]; its failures are VERDICT-DATA's `bkv176`, not the 128-key kernel's); and
#           the 128-key kernel with its items walked whole (KINO_CUDA_ATTENTION_SPLIT=0, [wgmma whole])
#           beside stream-K, which the checks run wherever it cuts items (attention_split.cuh);
#   persistent, pingpong, persistent-tma  the Hopper GEMMs auto does not choose yet: the persistent
#           grid (gemm path 4, gemm_wgmma_persistent.cu), the ping-pong kernel (path 5,
#           gemm_wgmma_pingpong.cu) or the persistent grid with the TMA-store epilogue (path 6,
#           gemm_epilogue_tma.cuh): correctness at awkward and Wan shapes with every epilogue and a
#           bf16 output, then its TFLOP/s at 4096³ and the Wan shapes (with their GELU and
#           gated-residual epilogues) beside the one-block-per-tile wgmma kernel and cuBLAS (the
#           TMA-store part also beside the register epilogue, and at the bf16 outputs of Wan's QKV
#           split and FFN up);
#   verify  every GEMM path (wgmma, mma.sync — also with each of its block tiles forced,
#           KINO_CUDA_GEMM_MMA_TILE —, SIMT; bf16 and f32 activations; the GELU and gated-residual
#           epilogues, in place; split outputs with even and odd parts) and the
#           attention kernels (D 16…128, Lq ≠ Lk, kvLen < Lk, block-causal, T5 bias, SIMT head
#           sizes; the mma.sync attention also with 128- and 64-row query blocks forced and with its keys
#           in 3 parts), each
#           tensor-core attention result also against its promise (attention.cu: |err| ≤ 2^-7 · max|v|);
#   bench   bf16 GEMM (4096³ and the Wan-1.3B shapes at M = 4680: the kernel auto picks, mma.sync with
#           the tile its model picks [mma.sync], printed as "mma.sync picks …", and with each tile forced
#           [mma.sync 128x256], [mma.sync 128x192], [mma.sync 128x128]: whether the pick is the fastest
#           — gemm_mma.cu's header has the model's waves; an H200, 132 SMs, checks its 132-SM predictions
#           only, the A100's 108 and the L40S's 142 need those GPUs) and attention (12 heads × 128,
#           Lq 4680, Lk 4680/18720/32760, one block-causal case; for the mma.sync tilings also Lq = Lk
#           3120 and 1020) in TFLOP/s beside cuBLAS and SDPA: the mma.sync attention with the query rows
#           per block its model picks [mma.sync], printed as "mma.sync attention picks …", and with
#           each tiling forced (KINO_CUDA_ATTENTION_BQ, [mma.sync bq128], [mma.sync bq64]), and with its
#           keys in one part (KINO_CUDA_ATTENTION_PARTS=1, [mma.sync whole]) beside the parts it picks — attention.cu's
#           header has the model's waves.
# Each part prints its own table, then one VERDICT-DATA line (its parts, failed checks, parts skipped
# off sm_90, the table's rows; with `hung` when a watchdog fired) for tools/gpu-verdicts.ts; exit 1 when
# a correctness check failed.
#
#   python3 tools/gpu-check-kernels.py wgmma|persistent|pingpong|persistent-tma|verify|bench ...
import ctypes as C, math, os, sys, threading
import torch

from gpu_check_common import (bench, bf, call, create_context, f32, failures, i32, lib, p, rel, report, rnd, rows,
                              torch_bench, verdict_data, vp)

lib.kc_gemm.argtypes = [vp, vp, vp, i32, vp, i32, vp, i32, i32, i32, i32, vp, vp, i32, i32, i32, i32]  # last: out dtype
lib.kc_attention.argtypes = [vp, vp, vp, vp, vp, i32, vp, i32, i32, i32, i32, i32, i32, f32, i32, i32, i32]  # last: out dtype
lib.kc_last_kernel.restype = C.c_char_p
lib.kc_last_kernel.argtypes = [vp, i32]
lib.kc_gemm_mma_tile.argtypes = [vp, i32, i32]  # the mma.sync GEMM's block tile width for M, N (gemm_mma.cu)
# the mma.sync attention's query rows per block for B, Lq, H, D, kv_len, block size, q offset (attention.cu)
lib.kc_attention_mma_rows.argtypes = [vp, i32, i32, i32, i32, i32, i32, i32]
lib.kc_attention_mma_parts.argtypes = [vp, i32, i32, i32, i32, i32, i32, i32]  # ... and the parts its keys are split into
F32, BF16 = 0, 1
skipped = []  # parts that found no sm_90 GPU to run on
# How long an unverified kernel's part may take before its watchdog reports a hang: each part's real work
# (correctness at small and Wan shapes, fp64 references, ~20 timed calls per shape) takes seconds on an
# H200, and a hang must leave the step's other parts their time under its cap.
WATCHDOG_S = 60

data = {}  # a part's own VERDICT-DATA fields (the wgmma part's 176-key tiles)

def summary_line(**extra):
    verdict_data("gpu-check-kernels", parts=sys.argv[1:], failures=failures, skipped=skipped, rows=rows, **data, **extra)

def context(gemm_path, attention_path=None, attention_bkv=None, attention_bq=None, mma_tile=None, attention_split=None,
            attention_parts=None):
    settings = (("KINO_CUDA_GEMM", gemm_path), ("KINO_CUDA_ATTENTION", attention_path), ("KINO_CUDA_ATTENTION_BKV", attention_bkv),
                ("KINO_CUDA_ATTENTION_BQ", attention_bq), ("KINO_CUDA_GEMM_MMA_TILE", mma_tile),
                ("KINO_CUDA_ATTENTION_SPLIT", attention_split), ("KINO_CUDA_ATTENTION_PARTS", attention_parts))
    for var, value in settings:
        if value: os.environ[var] = value
        else: os.environ.pop(var, None)
    ctx = create_context()
    for var, _ in settings[1:]: os.environ.pop(var, None)
    return ctx

def report_promise(name, got, want, v, kv):
    # attention.cu's promise for the tensor-core paths against the reference on bf16-rounded inputs:
    # |out − ref| ≤ 2u · max|v| with u = 2^-8 (reported as a fraction of 2^-7 · max|v|, so ≤ 1 passes).
    vmax = v[:, :kv].double().abs().max().clamp_min(1e-30)
    report("  promise " + name, ((got.double() - want.double()).abs().max() / (2 ** -7 * vmax)).item(), 1)

def kino_gemm(ctx, a, w, bias, gelu=0, residual=None, gate=None, L=1, G=1, parts=0, out_dtype=torch.float32):
    M, K = a.shape; N = w.shape[0]
    out = residual if residual is not None else torch.empty(M, N, device="cuda", dtype=out_dtype)  # in place
    torch.cuda.synchronize()
    call(ctx, lib.kc_gemm(ctx, p(out), p(a), F32 if a.dtype == torch.float32 else BF16, p(w),
                          F32 if w.dtype == torch.float32 else BF16, p(bias), M, N, K, gelu, p(residual), p(gate), L, G,
                          N // parts if parts else 0, F32 if out_dtype == torch.float32 else BF16),
         f"gemm {M}x{N}x{K}")
    # a split output is [parts, M, N / parts]: back to [M, N] to compare
    return out.view(parts, M, N // parts).permute(1, 0, 2).reshape(M, N) if parts else out

def attention_rc(ctx, out, q, k, v, kv_len, scale, bias=None, block=0, qoff=0):
    B, Lq, H, D = q.shape; Lk = k.shape[1]
    return lib.kc_attention(ctx, p(out), p(q), p(k), p(v), F32 if q.dtype == torch.float32 else BF16, p(bias),
                            B, Lq, Lk, kv_len, H, D, scale, block, qoff, F32)

def kino_attention(ctx, q, k, v, kv_len, scale, bias=None, block=0, qoff=0):
    out = torch.empty(*q.shape, device="cuda", dtype=torch.float32)
    torch.cuda.synchronize()
    call(ctx, attention_rc(ctx, out, q, k, v, kv_len, scale, bias, block, qoff), f"attention {tuple(q.shape)}")
    return out

def ref_attention(q, k, v, kv_len, scale, bias=None, block=0, qoff=0):
    q, k, v = (t.double().transpose(1, 2) for t in (q, k[:, :kv_len], v[:, :kv_len]))  # [B, H, L, D]
    s = q @ k.transpose(-1, -2) * scale
    if bias is not None: s = s + bias.double()
    Lq = q.shape[2]
    if block:
        i = torch.arange(Lq, device="cuda")[:, None]; j = torch.arange(kv_len, device="cuda")[None, :]
        s = s.masked_fill(j // block > (qoff + i) // block, float("-inf"))
    w = torch.softmax(s, -1).nan_to_num(0.0)
    return (w @ v).transpose(1, 2)

# the mma.sync GEMM's block tiles, forced (gemm_mma.cu; without, its model picks one per call)
MMA_TILES = ["128x256", "128x192", "128x128"]
ctxs = {"mma.sync": context("mma"), "simt": context("simt"), "auto (wgmma on sm_90)": context(None),
        **{f"mma.sync {t}": context("mma", mma_tile=t) for t in MMA_TILES}}

def mma_attention_context(bq=None, parts=None):
    """A context whose attention runs the mma.sync kernel (path 3) with `bq` query rows per block and its keys in
    `parts` parts, or the model's picks."""
    ctx = context(None, attention_bq=bq, attention_parts=parts)
    lib.kc_set_paths(ctx, 0, 3, 0)  # refused only below sm_80, where no tensor-core path runs
    return ctx

# the mma.sync attention's query tilings, forced (attention.cu; without, its model picks one per call)
ATTENTION_TILINGS = ["bq128", "bq64"]
attention_mma = {"mma.sync": mma_attention_context(), **{f"mma.sync {t}": mma_attention_context(t[2:]) for t in ATTENTION_TILINGS},
                 # its keys in one part (KINO_CUDA_ATTENTION_PARTS=1), timed beside the parts the model picks
                 "mma.sync whole": mma_attention_context(parts="1")}
# its keys forced into 3 parts, for the correctness checks: their small shapes never pay for parts
mma_attention_parts = mma_attention_context(parts="3")
os.environ.pop("KINO_CUDA_GEMM", None)
# (label, Lq, Lk, block size, q offset): Wan 1.3B self-attention (12 heads × 128) at 4680 tokens a
# chunk, against 1, 4 and 7 chunks of keys; and a 4-chunk block-causal pass (later chunks see more).
attention_shapes = [(f"Lq=4680 Lk={Lk}", 4680, Lk, 0, 0) for Lk in (4680, 18720, 32760)]
attention_shapes.append(("Lq=Lk=18720 block-causal 4680", 18720, 18720, 4680, 0))
# The mma.sync tilings' model also at two shapes where its picks differ by GPU (attention.cu's header):
# 3120 tokens (2 latent frames at 832x480), 64 rows on 108 SMs, 128 on 132; 1020 (2 at 480x272), 64
# rows on 132 SMs, where 128-row blocks would sit one to a multiprocessor.
tiling_shapes = attention_shapes + [("Lq=Lk=3120", 3120, 3120, 0, 0), ("Lq=Lk=1020", 1020, 1020, 0, 0)]
sdpa = {}

def attention_bench(ctx, label, Lq, Lk, block, qoff):
    B, H, D = 1, 12, 128
    g = torch.Generator(device="cuda").manual_seed(1)
    q, k, v = ((torch.rand(B, L, H, D, device="cuda", generator=g) * 2 - 1).to(torch.bfloat16) for L in (Lq, Lk, Lk))
    out = torch.empty(B, Lq, H, D, device="cuda")
    visible = sum(min(Lk, ((qoff + i) // block + 1) * block) for i in range(0, Lq, 1)) if block else Lq * Lk
    flops = 4 * B * H * visible * D
    kt = bench(ctx, lambda: attention_rc(ctx, out, q, k, v, Lk, D ** -0.5, None, block, qoff), flops, 10)
    if label not in sdpa:
        qt, kt_, vt = (t.transpose(1, 2) for t in (q, k, v))
        mask = None
        if block:
            i = torch.arange(Lq, device="cuda")[:, None]; j = torch.arange(Lk, device="cuda")[None, :]
            mask = j // block <= (qoff + i) // block
        sdpa[label] = torch_bench(lambda: torch.nn.functional.scaled_dot_product_attention(qt, kt_, vt, attn_mask=mask), flops, 10)
    return kt, sdpa[label]

def print_table():
    print(f"\n| {'op':60s} | kino TFLOP/s | torch TFLOP/s | kino/torch |")
    print(f"|{'-' * 62}|--------------|---------------|------------|")
    for name, k_, t_ in rows:
        print(f"| {name:60s} | {k_:12.1f} | {t_:13.1f} | {k_ / t_:10.2f} |")
    print(f"\ntargets: GEMM ≥ 600, attention ≥ 450 TFLOP/s", flush=True)

def verify():
    print("GEMM correctness (out = a·wᵀ + bias):")
    shapes = [(1, 8, 8), (133, 264, 200), (77, 40, 24), (4680, 1536, 1536), (4680, 4608, 1536), (300, 1536, 8960), (257, 520, 4104)]
    for path in ["mma.sync", *(f"mma.sync {t}" for t in MMA_TILES), "auto (wgmma on sm_90)", "simt"]:
        ctx = ctxs[path]
        for M, N, K in shapes:
            if path == "simt" and M * N * K > 2e9: continue
            a, w, bias = rnd(M, K), rnd(N, K, dtype=torch.bfloat16), rnd(N)
            # Tensor-core paths round f32 activations to bf16 first; SIMT multiplies them exactly.
            want = (a.double() if path == "simt" else bf(a).double()) @ w.double().T + bias.double()
            report(f"{path}: a f32 {M}x{N}x{K}", rel(kino_gemm(ctx, a, w, bias), want), 2e-3)
            report(f"{path}: a bf16 {M}x{N}x{K}", rel(kino_gemm(ctx, a.to(torch.bfloat16), w, None), bf(a) @ w.float().T), 2e-3)
        # epilogues (gemm_epilogue.cuh): GELU; out = residual + gate·y in place, 2 items × 150 tokens, 3 gate rows each
        M, N, K = 300, 264, 200
        a, w, bias = rnd(M, K), rnd(N, K, dtype=torch.bfloat16), rnd(N)
        y = (a.double() if path == "simt" else bf(a).double()) @ w.double().T + bias.double()
        gelu_ref = 0.5 * y * (1 + torch.tanh(math.sqrt(2 / math.pi) * (y + 0.044715 * y ** 3)))
        report(f"{path}: +GELU {M}x{N}x{K}", rel(kino_gemm(ctx, a, w, bias, gelu=1), gelu_ref), 2e-3)
        res, gate = rnd(M, N), rnd(2, 3, N)
        want = res.double() + gate.double().repeat_interleave(50, dim=1).reshape(M, N) * y
        report(f"{path}: gated residual in place {M}x{N}x{K}", rel(kino_gemm(ctx, a, w, bias, residual=res.clone(), gate=gate, L=150, G=3), want), 2e-3)
        # split outputs (the fused q|k|v projection): 3 parts of 88 columns, and 8 odd parts of 33
        report(f"{path}: split into 3 parts {M}x{N}x{K}", rel(kino_gemm(ctx, a, w, bias, parts=3), y), 2e-3)
        report(f"{path}: split into 8 parts (odd width) {M}x{N}x{K}", rel(kino_gemm(ctx, a, w, bias, parts=8), y), 2e-3)
    ctx = ctxs["auto (wgmma on sm_90)"]
    for M, N, K in [(133, 264, 200), (64, 96, 13)]:  # f32 weights (SIMT), K off 8
        a, w = rnd(M, K), rnd(N, K)
        report(f"f32 weights {M}x{N}x{K}", rel(kino_gemm(ctx, a, w, None), a.double() @ w.double().T), 1e-5)

    print("attention correctness:")
    for D in (16, 32, 64, 128, 80):
        for (B, Lq, Lk, kv, H, block, qoff, with_bias) in [(2, 100, 230, 200, 3, 0, 0, False), (1, 130, 260, 260, 2, 50, 100, False),
                                                          (1, 64, 512, 300, 2, 0, 0, True), (1, 1, 7, 7, 1, 0, 0, False)]:
            q, k, v = rnd(B, Lq, H, D), rnd(B, Lk, H, D), rnd(B, Lk, H, D)
            bias = rnd(H, Lq, kv) * 3 if with_bias else None
            scale = 1 / math.sqrt(D)
            tc = D in (16, 32, 64, 128)
            want = ref_attention(bf(q), bf(k), bf(v), kv, scale, bias, block, qoff) if tc else ref_attention(q, k, v, kv, scale, bias, block, qoff)
            name = f"D={D} B={B} Lq={Lq} Lk={Lk} kv={kv} H={H} block={block}/{qoff}{' bias' if with_bias else ''}"
            for tag, c in [("", ctx)] + ([(f" ({r} rows)", attention_mma[f"mma.sync bq{r}"]) for r in (128, 64)] + [(" (3 parts)", mma_attention_parts)] if tc else []):
                got = kino_attention(c, q, k, v, kv, scale, bias, block, qoff)
                report(("bf16 mma " if tc else "f32 simt ") + name + tag, rel(got, want), 2e-2 if tc else 1e-5)
                if tc: report_promise("bf16 mma " + name + tag, got, want, v, kv)
    exact = context("simt")
    lib.kc_set_paths(exact, 2, 1, 1)  # what openCudaBackend({ exact: true }) does
    q, k, v = rnd(1, 100, 2, 128), rnd(1, 230, 2, 128), rnd(1, 230, 2, 128)
    report("f32 simt (exact mode) D=128 Lq=100 Lk=230 block=50/100",
           rel(kino_attention(exact, q, k, v, 230, 128 ** -0.5, None, 50, 100), ref_attention(q, k, v, 230, 128 ** -0.5, None, 50, 100)), 1e-5)


def benchmarks():
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print("\nbenchmarks (bf16 inputs, f32 accumulation and output):", flush=True)
    for label, (M, N, K) in [("4096³", (4096, 4096, 4096)), ("Wan QKV", (4680, 4608, 1536)), ("Wan O / cross-Q", (4680, 1536, 1536)),
                             ("Wan FFN up", (4680, 8960, 1536)), ("Wan FFN down", (4680, 1536, 8960))]:
        a, w = rnd(M, K, dtype=torch.bfloat16), rnd(N, K, dtype=torch.bfloat16)
        out = torch.empty(M, N, device="cuda")
        flops = 2 * M * N * K
        tt = torch_bench(lambda: torch.matmul(a, w.T), flops)
        # the kernel auto picks ([auto]), mma.sync with the tile its model picks ([mma.sync]) and with each tile forced
        print(f"  mma.sync picks 128x{lib.kc_gemm_mma_tile(ctxs['mma.sync'], M, N)} for {label} ({sms} SMs)", flush=True)
        for path, tag in [("auto (wgmma on sm_90)", "auto"), ("mma.sync", "mma.sync"), *((f"mma.sync {t}", f"mma.sync {t}") for t in MMA_TILES)]:
            c = ctxs[path]
            kt = bench(c, lambda: lib.kc_gemm(c, p(out), p(a), BF16, p(w), BF16, None, M, N, K, 0, None, None, 1, 1, 0, F32), flops)
            rows.append((f"gemm {label} {M}x{N}x{K} [{tag}]", kt, tt))
    for label, Lq, Lk, block, qoff in tiling_shapes:
        # mma.sync with the query rows its model picks ([mma.sync]) and with each tiling forced
        picked = lib.kc_attention_mma_rows(attention_mma["mma.sync"], 1, Lq, 12, 128, Lk, block, qoff)
        parts = lib.kc_attention_mma_parts(attention_mma["mma.sync"], 1, Lq, 12, 128, Lk, block, qoff)
        print(f"  mma.sync attention picks bq{picked} for {label} ({sms} SMs)", flush=True)
        print(f"  mma.sync attention splits its keys in {parts} part{'s' if parts > 1 else ''} for {label} ({sms} SMs)", flush=True)
        for tag, c in attention_mma.items():
            kt, tt = attention_bench(c, label, Lq, Lk, block, qoff)
            rows.append((f"attention 12x128 {label} [{tag}]", kt, tt))


# The Hopper attention kernel (attention path 2) had not run on a GPU before this check: a watchdog
# reports a hang with the table so far (the step's cap would cut it without one), and a wrong result
# says where it is wrong.
def diagnose(got, want):
    # Where a wrong result is wrong, in the kernel's terms: query rows by 16-row warp slice of the
    # 128-row tile (consumer 0: slices 0-3, consumer 1: 4-7) and features by 8-column fragment.
    err = (got.double() - want.double()).abs().nan_to_num(float("inf"))  # [B, Lq, H, D]
    Lq, D = err.shape[1], err.shape[3]
    rows = torch.zeros(8, dtype=torch.float64, device="cuda")
    for r in range(8):
        idx = [i for i in range(Lq) if (i % 128) // 16 == r]
        if idx: rows[r] = err[:, idx].max()
    cols = err.amax(dim=(0, 1, 2)).view(D // 8, 8).amax(dim=1)
    print(f"    nan/inf: {(~got.isfinite()).sum().item()}, max err by row slice: {[f'{x:.1e}' for x in rows.tolist()]}")
    print(f"    max err by 8-feature group: {[f'{x:.1e}' for x in cols.tolist()]}", flush=True)

def wgmma():
    def hung():
        print(f"\nFAIL wgmma attention did not finish within {WATCHDOG_S} s (deadlock?); results so far:", flush=True)
        print_table()
        summary_line(hung="wgmma", watchdog_s=WATCHDOG_S)
        os._exit(1)
    watchdog = threading.Timer(WATCHDOG_S, hung)
    watchdog.start()
    print("\nwgmma attention (path 2, sm_90a) correctness:", flush=True)
    try:
        wg = context(None, "wgmma")
        if torch.cuda.get_device_capability()[0] != 9:
            print("  skipped: not an sm_90 GPU")
            skipped.append("wgmma")
        else:
            out = torch.empty(1, 8, 1, 80, device="cuda")
            q80 = rnd(1, 8, 1, 80)
            rc = attention_rc(wg, out, q80, q80, q80, 8, 0.1)
            msg = lib.kc_last_error(wg).decode()
            report(f"forced wgmma, D=80 refused ({msg[:40]}…)", 0.0 if rc != 0 and "path 2" in msg else 1.0, 0.5)
            cases = [(1, 128, 128, 128, 1, 0, 0, False),       # one item, one key tile: the simplest thing first
                     (2, 100, 230, 200, 3, 0, 0, False), (1, 130, 260, 260, 2, 50, 100, False), (1, 64, 512, 300, 2, 0, 0, True),
                     (1, 1, 7, 7, 1, 0, 0, False), (1, 135, 130, 130, 2, 0, 0, False), (1, 33, 200, 200, 2, 0, 0, True),
                     (1, 135, 130, 130, 2, 64, 0, True),
                     (2, 1000, 1100, 1030, 12, 0, 0, False),     # 192 work items: several per persistent block
                     (1, 1560, 1560, 1560, 12, 520, 0, True)]   # block-causal with bias, items of unequal length
            # FlashAttention-3's 128×176 tiles at D 128 (KINO_CUDA_ATTENTION_BKV=176), checked and timed beside
            # the 128-key ones; its failures are its own (data["bkv176"]), not WGMMA_ATTENTION_VERIFIED's
            wg176 = context(None, "wgmma", "176")
            # the same kernel with its items walked whole (KINO_CUDA_ATTENTION_SPLIT=0), timed beside stream-K,
            # and split wherever a block range cuts an item (=always): these cases' few key tiles would not pay
            # for stream-K by default, so its parts and combine are checked this way
            wg_whole = context(None, "wgmma", attention_split="0")
            wg_split = context(None, "wgmma", attention_split="always")
            data["bkv176"] = b176 = {"cases": 0, "failures": []}
            for D, ctx, tile in ((64, wg, ""), (128, wg, ""), (64, wg_split, ""), (128, wg_split, ""), (128, wg176, "bkv176 ")):
                for (B, Lq, Lk, kv, H, block, qoff, with_bias) in cases:
                    q, k, v = rnd(B, Lq, H, D), rnd(B, Lk, H, D), rnd(B, Lk, H, D)
                    bias = rnd(H, Lq, kv) * 3 if with_bias else None
                    scale = 1 / math.sqrt(D)
                    want = ref_attention(bf(q), bf(k), bf(v), kv, scale, bias, block, qoff)
                    name = f"D={D} B={B} Lq={Lq} Lk={Lk} kv={kv} H={H} block={block}/{qoff}{' bias' if with_bias else ''}{' split' if ctx is wg_split else ''}"
                    before = len(failures)
                    for dt in (torch.float32, torch.bfloat16):  # bf16 inputs keep Lk as the batch stride of k and v
                        got = kino_attention(ctx, q.to(dt), k.to(dt), v.to(dt), kv, scale, bias, block, qoff)
                        tag = f"wgmma {tile}{'f32' if dt == torch.float32 else 'bf16'} in "
                        report(tag + name, rel(got, want), 2e-2)
                        report_promise(tag + name, got, want, v, kv)
                        if rel(got, want) > 2e-2: diagnose(got, want)
                        ran = lib.kc_last_kernel(ctx, 1).decode()
                        if ran != ("wgmma-" + tile.strip() if tile else "wgmma"): report(f"{tag}{name} ran {ran}", 1.0, 0.5)
                    if tile:
                        b176["cases"] += 1
                        b176["failures"] += failures[before:]
                        del failures[before:]
            ok128, ok176 = not any("wgmma" in f for f in failures), not b176["failures"]
            if ok128 or ok176:
                # beside the kernel auto picks now (mma.sync until WGMMA_ATTENTION_VERIFIED), so this part's
                # verdict does not wait for the benchmarks step; the 176-key tiles beside both
                auto = ctxs["auto (wgmma on sm_90)"]
                for label, Lq, Lk, block, qoff in attention_shapes:
                    if ok128:
                        kt, tt = attention_bench(wg, label, Lq, Lk, block, qoff)
                        rows.append((f"attention 12x128 {label} [wgmma]", kt, tt))
                        kt, tt = attention_bench(wg_whole, label, Lq, Lk, block, qoff)
                        rows.append((f"attention 12x128 {label} [wgmma whole]", kt, tt))
                    if ok176:
                        kt, tt = attention_bench(wg176, label, Lq, Lk, block, qoff)
                        rows.append((f"attention 12x128 {label} [wgmma-bkv176]", kt, tt))
                    kt, tt = attention_bench(auto, label, Lq, Lk, block, qoff)
                    rows.append((f"attention 12x128 {label} [{lib.kc_last_kernel(auto, 1).decode()}]", kt, tt))
            if not ok128: print("  wgmma benchmarks skipped: its correctness checks failed")
            if not ok176: print(f"  wgmma 176-key tile benchmarks skipped: {len(b176['failures'])} of its correctness checks failed")
    except Exception as e:  # a fault in the kernel leaves the context unusable: report it and move on
        print(f"  FAIL wgmma attention: {e}")
        failures.append(f"wgmma attention: {e}")
    watchdog.cancel()


# The Hopper GEMM kernels auto does not pick yet (gemm.cu: GEMM_PERSISTENT_VERIFIED,
# GEMM_PINGPONG_VERIFIED, GEMM_PERSISTENT_TMA_VERIFIED), by their part name: the KINO_CUDA_GEMM value
# that forces each, which is also what kc_last_kernel names it (the TMA-store path names the register
# one, wgmma-persistent, where TMA cannot store the output). Neither had run on a GPU before this check, so each is its own
# part (tools/gpu-check.sh runs them as separate processes: a fault in one leaves the CUDA context
# unusable for the rest of its process), a watchdog reports a hang with the table so far, and the
# benchmarks run only once every correctness check passed.
UNVERIFIED_GEMMS = {"persistent": "wgmma-persistent", "pingpong": "wgmma-pingpong", "persistent-tma": "wgmma-persistent-tma"}

def unverified_gemm(name):
    path = UNVERIFIED_GEMMS[name]
    def hung():
        print(f"\nFAIL {path} GEMM did not finish within {WATCHDOG_S} s (deadlock?); results so far:", flush=True)
        print_table()
        summary_line(hung=name, watchdog_s=WATCHDOG_S)
        os._exit(1)
    watchdog = threading.Timer(WATCHDOG_S, hung)
    watchdog.start()
    print(f"\n{path} GEMM (sm_90a) correctness:", flush=True)
    try:
        if torch.cuda.get_device_capability()[0] != 9:
            print("  skipped: not an sm_90 GPU")
            skipped.append(name)
            watchdog.cancel()
            return
        pc, wc = context(path), context("wgmma")
        os.environ.pop("KINO_CUDA_GEMM", None)
        def ran(ctx): return lib.kc_last_kernel(ctx, 0).decode()
        # one tile; tails in M, N and K; several tiles per block (132 blocks); the Wan shapes
        for M, N, K in [(1, 8, 8), (133, 264, 200), (257, 520, 4104), (4680, 1536, 1536), (4680, 4608, 1536),
                        (4680, 8960, 1536), (4680, 1536, 8960), (20000, 1024, 264)]:
            a, w, bias = rnd(M, K), rnd(N, K, dtype=torch.bfloat16), rnd(N)
            want = bf(a).double() @ w.double().T + bias.double()
            got = kino_gemm(pc, a, w, bias)
            report(f"{name}: a f32 {M}x{N}x{K} [{ran(pc)}]", rel(got, want), 2e-3)
            got = kino_gemm(pc, a.to(torch.bfloat16), w, bias, out_dtype=torch.bfloat16)
            report(f"{name}: a bf16 → bf16 {M}x{N}x{K}", rel(got, want), 8e-3)
        for M, N, K in [(300, 264, 200), (4680, 1536, 8960), (4680, 8960, 1536)]:
            a, w, bias = rnd(M, K), rnd(N, K, dtype=torch.bfloat16), rnd(N)
            y = bf(a).double() @ w.double().T + bias.double()
            gelu_ref = 0.5 * y * (1 + torch.tanh(math.sqrt(2 / math.pi) * (y + 0.044715 * y ** 3)))
            report(f"{name}: +GELU {M}x{N}x{K}", rel(kino_gemm(pc, a, w, bias, gelu=1), gelu_ref), 2e-3)
            Lg = M // 2 if M % 6 == 0 else M
            B_, G_ = M // Lg, 3
            res, gate = rnd(M, N), rnd(B_, G_, N)
            want = res.double() + gate.double().repeat_interleave(Lg // G_, dim=1).reshape(M, N) * y
            report(f"{name}: gated residual in place {M}x{N}x{K}",
                   rel(kino_gemm(pc, a, w, bias, residual=res.clone(), gate=gate, L=Lg, G=G_), want), 2e-3)
            report(f"{name}: split into 2 parts {M}x{N}x{K}", rel(kino_gemm(pc, a, w, bias, parts=2), y), 2e-3)
        if ran(pc) != path: report(f"{name} path ran {ran(pc)}", 1.0, 0.5)
        if name == "persistent-tma":
            # Wan's QKV: three bf16 parts (chunks of the 224-wide tiles span parts); a row of 1032 bytes,
            # which TMA cannot store: the register epilogue must take it
            a, w, bias = rnd(4680, 1536, dtype=torch.bfloat16), rnd(4608, 1536, dtype=torch.bfloat16), rnd(4608)
            y = a.double() @ w.double().T + bias.double()
            got = kino_gemm(pc, a, w, bias, parts=3, out_dtype=torch.bfloat16)
            report(f"{name}: split into 3 bf16 parts 4680x4608x1536 [{ran(pc)}]", rel(got, y), 8e-3)
            if ran(pc) != path: report(f"{name} path ran {ran(pc)} for the bf16 split", 1.0, 0.5)
            a, w, bias = rnd(300, 200), rnd(258, 200, dtype=torch.bfloat16), rnd(258)
            got = kino_gemm(pc, a, w, bias)
            report(f"{name}: 300x258x200, rows TMA cannot store [{ran(pc)}]", rel(got, bf(a).double() @ w.double().T + bias.double()), 2e-3)
            if ran(pc) != "wgmma-persistent": report(f"{name} ran {ran(pc)} where TMA cannot store", 1.0, 0.5)
        if any(f.startswith(f"{name}:") or f.startswith(f"{name} ") for f in failures):
            print(f"  {name} GEMM benchmarks skipped: its correctness checks failed")
        else:
            print(f"\n{name} GEMM benchmarks (bf16 in, f32 out; the torch column is cuBLAS without the epilogue):", flush=True)
            # the TMA-store epilogue beside the register one too, and at Wan's bf16 outputs (QKV split, FFN up)
            kernels = (("wgmma", wc), ("persistent", context("wgmma-persistent")), (name, pc)) if name == "persistent-tma" else (("wgmma", wc), (name, pc))
            os.environ.pop("KINO_CUDA_GEMM", None)
            for label, (M, N, K), epi in [("4096³", (4096, 4096, 4096), ""), ("Wan QKV", (4680, 4608, 1536), ""),
                                          ("Wan O / cross-Q", (4680, 1536, 1536), ""), ("Wan FFN up", (4680, 8960, 1536), "gelu"),
                                          ("Wan FFN down", (4680, 1536, 8960), "gated residual")]:
                a, w = rnd(M, K, dtype=torch.bfloat16), rnd(N, K, dtype=torch.bfloat16)
                bias, gate = rnd(N), rnd(1, 3, N)
                out, out16 = torch.empty(M, N, device="cuda"), torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
                flops = 2 * M * N * K
                tt = torch_bench(lambda: torch.matmul(a, w.T), flops)
                for kernel, c in kernels:
                    if name == "persistent-tma" and label in ("Wan QKV", "Wan FFN up"):
                        split, gelu = (N // 3, 0) if label == "Wan QKV" else (0, 1)
                        bf16 = lambda: lib.kc_gemm(c, p(out16), p(a), BF16, p(w), BF16, p(bias), M, N, K, gelu, None, None, 1, 1, split, BF16)
                        rows.append((f"gemm {label} {'split 3' if split else '+gelu'} → bf16 [{kernel}]", bench(c, bf16, flops), tt))
                    plain = lambda: lib.kc_gemm(c, p(out), p(a), BF16, p(w), BF16, None, M, N, K, 0, None, None, 1, 1, 0, F32)
                    rows.append((f"gemm {label} {M}x{N}x{K} [{kernel}]", bench(c, plain, flops), tt))
                    if epi:
                        fused = lambda: lib.kc_gemm(c, p(out), p(a), BF16, p(w), BF16, p(bias), M, N, K, int(epi == "gelu"),
                                                    p(out) if epi != "gelu" else None, p(gate) if epi != "gelu" else None, M, 3, 0, F32)
                        rows.append((f"gemm {label} +{epi} [{kernel}]", bench(c, fused, flops), tt))
    except Exception as e:  # a fault in the kernel leaves the context unusable: report it and move on
        print(f"  FAIL {path} GEMM: {e}")
        failures.append(f"{name} wgmma GEMM: {e}")
    watchdog.cancel()


parts = {"wgmma": wgmma, "persistent": lambda: unverified_gemm("persistent"), "pingpong": lambda: unverified_gemm("pingpong"),
         "persistent-tma": lambda: unverified_gemm("persistent-tma"), "verify": verify, "bench": benchmarks}
unknown = [a for a in sys.argv[1:] if a not in parts]
if unknown or len(sys.argv) < 2: sys.exit(f"usage: gpu-check-kernels.py {'|'.join(parts)} ... (got {sys.argv[1:]})")
for part in sys.argv[1:]: parts[part]()

if rows: print_table()
summary_line()
if failures or data.get("bkv176", {}).get("failures"):
    if failures: print(f"\n{len(failures)} correctness check(s) FAILED: {failures}")
    if data.get("bkv176", {}).get("failures"): print(f"\n176-key tiles: {len(data['bkv176']['failures'])} correctness check(s) FAILED: {data['bkv176']['failures']}")
    sys.exit(1)
print("\nall correctness checks passed")
