# What the GPU-side checks of tools/gpu-check.sh share (gpu-check-kernels.py, gpu-check-conv.py): the
# CUDA library through ctypes with the symbols every check calls, a context, result reporting into one
# failure list and one benchmark table, random inputs on the GPU, and TFLOP/s of kino and of PyTorch
# timed alike (3 warm-up calls, then `iters` back to back), and the one-line summary each check ends with for
# tools/gpu-verdicts.ts. TF32 is off: the references are fp32/fp64.
import ctypes as C, json, math, os, sys
import torch

if not torch.cuda.is_available():  # the step is SKIPPED (exit 77), not failed: nothing was checked here
    print(f"skipped: PyTorch {torch.__version__} sees no CUDA GPU (torch.version.cuda {torch.version.cuda})", flush=True)
    sys.exit(77)
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
lib = C.CDLL(os.path.abspath("build/libkino_cuda.so"))
vp, i32, i64, f32 = C.c_void_p, C.c_int, C.c_int64, C.c_float
lib.kc_create.restype = vp
lib.kc_create.argtypes = [i32, C.POINTER(C.c_int32), C.c_char_p, i32]
lib.kc_last_error.restype = C.c_char_p
lib.kc_last_error.argtypes = [vp]
lib.kc_synchronize.argtypes = [vp]
lib.kc_timer_start.argtypes = [vp]
lib.kc_timer_stop.argtypes = [vp]
lib.kc_timer_stop.restype = C.c_double
lib.kc_set_paths.argtypes = [vp, i32, i32, i32]
failures, rows = [], []


def create_context():
    """A kino CUDA context (the kernel paths it reads from KINO_CUDA_* as it starts); exits naming why not."""
    code, msg = C.c_int32(0), C.create_string_buffer(512)
    ctx = lib.kc_create(0, C.byref(code), msg, 512)
    if not ctx: sys.exit(f"kc_create failed: {msg.value.decode()}")
    return ctx


def call(ctx, rc, what):
    if rc != 0: raise RuntimeError(f"{what}: {lib.kc_last_error(ctx).decode()}")
    rc = lib.kc_synchronize(ctx)
    if rc != 0: raise RuntimeError(f"{what} (sync): {lib.kc_last_error(ctx).decode()}")


def p(t): return C.c_void_p(t.data_ptr()) if t is not None else None


def report(name, err, tol, width=58, what="rel err "):
    ok = err <= tol and math.isfinite(err)
    if not ok: failures.append(name)
    print(f"  {'ok  ' if ok else 'FAIL'} {name:{width}s} {what}{err:.2e} (tol {tol:.0e})", flush=True)


def rel(got, want):
    return ((got.double() - want.double()).abs().max() / want.double().abs().max().clamp_min(1e-30)).item()


gen = torch.Generator(device="cuda").manual_seed(0)
def rnd(*shape, dtype=torch.float32): return (torch.rand(*shape, device="cuda", generator=gen) * 2 - 1).to(dtype)
bf = lambda t: t.to(torch.bfloat16).float()


def bench(ctx, fn, flops, iters=20):
    for _ in range(3): fn()
    torch.cuda.synchronize()
    lib.kc_timer_start(ctx)
    for _ in range(iters): fn()
    return flops / (lib.kc_timer_stop(ctx) / iters * 1e-3) / 1e12


def torch_bench(fn, flops, iters=20):
    for _ in range(3): fn()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(iters): fn()
    e.record(); e.synchronize()
    return flops / (s.elapsed_time(e) / iters * 1e-3) / 1e12


def verdict_data(script, **fields):
    """The check's results as one `VERDICT-DATA {json}` line: what tools/gpu-verdicts.ts reads (not the prose)."""
    print("VERDICT-DATA " + json.dumps({"script": script, **fields}), flush=True)
