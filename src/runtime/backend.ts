// The one interface every compute backend implements (WebAssembly CPU in backends/wasm.ts, CUDA in
// backends/cuda.ts), in the spirit of ggml's backend API: a fixed set of ops, each one present on every
// backend, measured against the plain TypeScript reference in reference.ts by test/runtime/ops.test.ts.
//
// Conventions (they hold for every op below unless its comment says otherwise):
//
// - Output first. Every op writes into a caller-provided `out` tensor that already has the right shape
//   and dtype; ops never allocate results. Models reuse activation buffers this way, and the CUDA side
//   can put a caching allocator under `alloc`. `out` must not overlap any input unless the op says
//   "in place allowed" (then `out` may be exactly the same tensor as that input).
// - Ops are enqueued, not awaited: they return void and may run asynchronously (a CUDA stream). Results
//   are visible to later ops in program order. The only awaits are `download*` and `sync`.
// - Tensors are contiguous row-major. Activations and everything computed are f32; "weight" operands
//   (GEMM `w`, conv `w`, embedding `table`) may be f32, bf16 or f16 and are widened to f32 with f32
//   accumulation. Small parameter vectors (norm weights, biases, modulation tables) are f32. u8 exists
//   only for video frames (YUV conversion).
// - Activations: an activation that only feeds a tensor-core op (a GEMM input, attention's q/k/v) may
//   be stored bf16 instead, where the op says so: gemm `a` and `out` (f32 out with a residual), attention
//   q/k/v (one dtype) and out, layerNorm / layerNormModulate out (x stays f32: the residual stream),
//   rmsNorm / rmsNormRope / rope3d x and out (one dtype), axpby (one dtype). The arithmetic stays f32
//   (statistics, softmax, epilogues); a bf16 input is widened exactly and a bf16 output is the f32
//   result rounded once (round-to-nearest-even). `activationDtype` says which a backend prefers: bf16
//   on CUDA, where the tensor cores would round the f32 value to bf16 anyway and the conversion pass is
//   saved; f32 on the CPU (which accepts bf16 too, through f32 copies). Models choose (WanDiT).
// - Layouts follow Wan: activations [B, L, C]; Linear weights as PyTorch stores them, [N_out, K_in];
//   attention q/k/v [B, L, H, D]; video tensors [B, C, T, H, W]; conv weights [Cout, Cin, kt, kh, kw].
// - Shapes are checked (op-params.ts has the checks both backends share); a mismatch throws at the
//   call, naming the op and the shapes.
// - Memory is explicit: `free` returns an allocation, nothing is garbage collected.

import type { DType, DeviceKind, Shape, Tensor } from "./tensor.ts";

export type BackendName = "wasm" | "cuda";

/** The dtypes an activation between ops may have (see "Activations" above). */
export type ActivationDtype = "f32" | "bf16";

/** Host data accepted by `upload`/`write`. Float32Array: values, converted to the tensor's dtype
 *  (round-to-nearest-even for bf16/f16). Uint16Array: raw bf16/f16 bits (dtype must be bf16 or f16).
 *  Uint8Array: u8 values (dtype u8). */
export type HostData = Float32Array | Uint16Array | Uint8Array;

export interface AttentionOptions {
  /** Multiplies q·k before the softmax: 1/sqrt(D) for Wan, 1 for umT5 (T5 does not scale). */
  scale: number;
  /** Attend to keys [0, kvLen) only: reading the filled part of a KV cache laid out [B, Lmax, H, D].
   *  Default: k.shape[1]. */
  kvLen?: number;
  /** Block-causal mask: key j is visible to query i iff floor(j / blockSize) <= floor((qOffset + i) /
   *  blockSize). qOffset is the absolute position of the first query (a chunk of a streaming model
   *  sees all earlier blocks and its own block). Absent: no mask (every query sees every key). */
  blockCausal?: { blockSize: number; qOffset: number };
  /** Additive logits [H, Lq, kvLen] (f32), shared by every batch item: the T5 position bias. Added
   *  after `scale`. */
  bias?: Tensor;
}

export interface RopeOptions {
  /** Angle tables [P, pairs] (f32), P positions; cos and sin of the same angles. Column c rotates pair
   *  c of every head. Wan concatenates three per-axis tables (frame, height, width) column-wise. */
  cos: Tensor;
  sin: Tensor;
  /** How many of the `pairs` columns belong to each axis, in order (frame, height, width); Wan with
   *  D = 128 uses [22, 21, 21]. Pairs past their sum (and past `pairs`) pass through unchanged. */
  axisPairs: readonly [number, number, number];
  /** Token grid (frames, height, width); token l = (f·H + h)·W + w. Tokens past F·H·W pass through. */
  grid: readonly [number, number, number];
  /** Added to the frame position (causal chunks start at an absolute frame). Default 0. */
  frameOffset?: number;
  /** More frame offset, read when the op runs rather than when it is called: an f32 tensor of one
   *  element holding a whole number, added to `frameOffset`. A recorded graph (OpGraphs) keeps its
   *  scalars, but not this value: rewritten before a launch (`fill`), it moves the rotation, so one
   *  recording serves every chunk of a causal DiT's stream (src/models/wan-dit-causal.ts). The call
   *  cannot check it against the tables; a token whose frame row falls outside them is left
   *  unrotated (never read past the tables), and keeping them large enough is the caller's part. */
  frameOffsetAt?: Tensor;
}

/** What `gemm` does with each output element y = (a·w)[m, n] + bias[n]: the elementwise op that
 *  follows a linear layer, applied inside the GEMM (on the accumulators on the GPU, on the output
 *  block while it is in cache on the CPU) instead of as one more pass over memory. */
export type GemmEpilogue =
  /** out = GELU(y), tanh approximation (as `gelu`): an FFN's up-projection. */
  | { kind: "gelu" }
  /** out = residual + gate · y: a residual connection, gated (Wan's adaLN gates) or not (gate absent).
   *  residual has out's shape; out seen as [B, L, N], gate is [B, G, N] with G dividing L, broadcast
   *  over tokens as in `layerNormModulate`. out may be exactly `residual` (in place). */
  | { kind: "residual"; residual: Tensor; gate?: Tensor | null }
  /** The output's N columns cut into `parts` equal blocks (parts divides N), stored one after the
   *  other: out is [parts, ...a's leading dims, N / parts], out[p, m, j] = y[m, p·N/parts + j]. A
   *  fused projection (Wan's q|k|v weights joined along N) gives its parts as contiguous tensors
   *  (out.view of part p), which every op takes as it is; nothing else is applied. */
  | { kind: "split"; parts: number };

export interface Conv3dOptions {
  /** Stride (t, h, w). Default [1, 1, 1]. */
  stride?: readonly [number, number, number];
  /** Spatial zero padding [top, bottom, left, right]. Default [0, 0, 0, 0]. */
  pad?: readonly [number, number, number, number];
  /** Frames that precede the input in time (causal padding). Default kt − 1. They come from `prev`
   *  ([B, Cin, timePad, H, W], a streaming conv's cache of the previous chunk's last frames) or are
   *  zeros when `prev` is absent. Nothing is padded after the input. */
  timePad?: number;
  prev?: Tensor;
  /** The Wan-VAE's "RMS_norm, SiLU" before the conv, in the same op: the conv reads silu(n(X)) in
   *  place of each input voxel X — x's frames and prev's, so a streaming conv caches raw frames —
   *  where n is l2NormChannels over the voxel's Cin channels, X / max(‖X‖₂, eps) · scale · gamma[c].
   *  Padding stays zero. Where the backend fuses it (CUDA: kernels/cuda/conv.cuh), the activations
   *  cross memory two times instead of six. */
  normSilu?: ConvNormSilu;
  /** Added to every output element (out's shape, f32, not out itself): a residual connection in the
   *  same op, out = conv + bias + residual. Where the backend fuses it (CUDA: the kernels' stores), the
   *  separate add's pass over out and residual is saved. */
  residual?: Tensor;
  /** The conv reads x nearest-upsampled ×2 in space, as `upsampleNearest` into [B, Cin, T, 2H, 2W]
   *  would make it: input voxel (t, y, x) is x's (t, ⌊y/2⌋, ⌊x/2⌋), and the output's size follows from
   *  2H × 2W with the usual pad and stride rules (the Wan-VAE decoder's upsample before its 3×3 conv).
   *  Not with `prev` or `normSilu`. Where the backend fuses it (CUDA: the tensor-core repack reads x
   *  itself), the upsampled f32 tensor is neither allocated nor written and read again. */
  upsample?: boolean;
}

export interface ConvNormSilu {
  eps: number;
  scale: number;
  /** [Cin] f32, or absent for 1. */
  gamma?: Tensor | null;
}

export interface Conv2dOptions {
  stride?: readonly [number, number];
  pad?: readonly [number, number, number, number];
}

export interface ResizeOptions {
  /** "antialiased" (the default): Keys' cubic with a = −0.5 (PIL's BICUBIC), widened by the scale
   *  when shrinking, weights normalized to sum 1 — what resizes decoded frames. "torch": PyTorch's
   *  `F.interpolate(mode="bicubic", align_corners=False)` — a = −0.75, always the 4 taps around source
   *  coordinate (o + 0.5)·n/m − 0.5 (not clamped), tap indices clamped to the border, no antialiasing
   *  (a shrink aliases), values may overshoot — how Wan's pipelines resize an input image. */
  filter?: "antialiased" | "torch";
}

export interface T5BiasOptions {
  numBuckets: number;
  maxDistance: number;
  /** T5 encoders are bidirectional (half the buckets for keys before the query, half after). */
  bidirectional: boolean;
}

/** Value range of float frames: [-1, 1] from the Wan VAE, [0, 1] from TAEHV / image decoders. */
export type FrameRange = readonly [lo: number, hi: number];

export interface MemoryStats {
  /** Bytes held by live allocations, and the most held at once since the backend opened. */
  inUse: number;
  peak: number;
  /** Blocks handed out since the backend opened: every alloc and upload, and the backend's own
   *  temporaries (a kernel's scratch, a copy of shape tables). A model in its steady state makes the
   *  same number each step, so a step's count is what a test holds fixed. */
  allocations: number;
  /** Times memory was taken from the system (cudaMalloc; growing the WebAssembly memory; every block
   *  of the TypeScript reference): none once a stream is in its steady state. */
  systemAllocations: number;
}

/** Ops recorded once by `OpGraphs.record`, launched as one unit any number of times. */
export interface OpGraph {
  /** Enqueues the recorded ops again, like any op: on the tensors, shapes and scalars they were
   *  recorded with, so new inputs go into the recorded input tensors first. */
  launch(): void;
  /** Gives the graph and the memory it keeps back; launches already enqueued still complete. */
  free(): void;
}

export interface GraphRecording<T> {
  graph: OpGraph;
  /** What `body` returned (tensors in it hold nothing until the graph is launched). */
  result: T;
  /** "new", or "updated": `previous` took the new recording in place (cheaper than a new graph). */
  made: "new" | "updated";
}

/**
 * Recording a sequence of ops once and launching it as one unit: CUDA graphs, where one launch
 * replaces a DiT forward's ~1500 kernel launches. Optional: a backend without it runs ops as called.
 *
 * `record` calls `body` (synchronously: a body that awaits is refused) with every op it enqueues
 * recorded, not run; nothing is computed until `launch`. Tensors allocated inside `body` come from
 * memory the graph keeps: freed inside, a block is reused only by the graph's own recordings; still
 * live afterwards (an output), it returns to the graph when freed. While recording, `upload`,
 * `write`, `download`, `downloadRaw`, `sync` and freeing a tensor allocated outside are refused
 * (the graph would read host data or memory that may be gone by its launch).
 * `previous`: a graph this recording replaces (the same ops on other tensors or scalars); it is
 * updated in place where the backend can, and its memory is reused either way. If recording fails,
 * `previous` is freed too.
 */
export interface OpGraphs {
  /** True while a `record` body runs. */
  readonly recording: boolean;
  /** Graphs made, recordings that updated one in place, and launches, since the backend opened. */
  readonly counts: { readonly made: number; readonly updated: number; readonly launches: number };
  record<T>(body: () => T, previous?: OpGraph | null): GraphRecording<T>;
}

/** The Backend methods that enqueue work on the device (every other method allocates, copies to or
 *  from the host, waits or describes): what a graph records (backends/wasm-graph.ts) and what
 *  counting-backend.ts counts as launches. */
export const ENQUEUING_OPS = [
  "gemm", "attention", "layerNorm", "rmsNorm", "layerNormModulate", "rmsNormRope", "l2NormChannels", "softmax", "gelu", "geluExact",
  "silu", "mul", "axpby", "fill", "rope3d", "embedding", "t5RelativeBias", "conv3d", "conv2d", "upsampleNearest", "resize", "concat",
  "slice", "writeSlice", "copyWithin", "permute", "cast", "rgbToYuv420", "yuv420ToRgb",
] as const satisfies readonly (keyof Backend)[];

export interface Backend {
  readonly name: BackendName;
  readonly device: DeviceKind;
  /** One human line: "WebAssembly SIMD128, 2 threads" / "CUDA NVIDIA H200 (sm_90, 139 GiB)". */
  readonly description: string;
  /** A GPU's PCI bus id ("0000:19:00.0"), which names the physical device; absent on the CPU. */
  readonly pciBusId?: string;
  /** The dtype this backend wants activations that feed its tensor-core ops in (see "Activations"
   *  above): "bf16" on CUDA (sm_80+, not in exact mode), "f32" on the CPU. */
  readonly activationDtype: ActivationDtype;

  // ---- memory ------------------------------------------------------------------------------------
  /** New tensor, contents undefined. */
  alloc(shape: Shape, dtype?: DType): Tensor;
  /** alloc + write. dtype defaults to f32 for Float32Array, u8 for Uint8Array; required for Uint16Array. */
  upload(data: HostData, shape: Shape, dtype?: DType): Tensor;
  /** Overwrite a tensor (or view) from host data; `data.length` must equal `t.numel`. */
  write(t: Tensor, data: HostData): void;
  /** Values as f32 (f32/bf16/f16/u8 tensors); waits for the ops that write `t`. */
  download(t: Tensor): Promise<Float32Array>;
  /** The raw bytes, any dtype (u8 frames, bf16 bits). */
  downloadRaw(t: Tensor): Promise<Uint8Array>;
  /** downloadRaw that leaves the calling thread free while the bytes travel (CUDA: a copy on a second
   *  stream, its event polled, src/runtime/backends/cuda-transfers.ts): it returns at once, ops
   *  enqueued afterwards run beside the copy, and the promise settles when the bytes have arrived.
   *  `t` must stay allocated and unwritten until then. Absent where a readback cannot overlap (the
   *  CPU, whose ops run as they are called): callers use downloadRaw there. */
  readbackRaw?(t: Tensor): Promise<Uint8Array>;
  /** Give allocations back. Views cannot be freed; a freed tensor (and its views) must not be used. */
  free(...tensors: Tensor[]): void;
  /** Wait until every enqueued op has finished. */
  sync(): Promise<void>;
  memory(): MemoryStats;
  /** CUDA graphs and their like, where the backend has them (OpGraphs). */
  readonly graphs?: OpGraphs;
  /** Release everything the backend holds (threads, device context). The backend is unusable after. */
  dispose(): void;

  // ---- linear algebra ----------------------------------------------------------------------------
  /** out[M, N] = a[M, K] · w[N, K]ᵀ + bias[N]. `a` may have any leading dims ([B, L, K] → M = B·L);
   *  out has a's leading dims and N. w: f32/bf16/f16. a, out: f32 or bf16 (out f32 with a residual
   *  epilogue). bias optional. `epilogue` (optional) transforms
   *  each element before it is stored (GemmEpilogue); with a gate, out must be rank 3; with a split,
   *  out is [parts, ...a's leading dims, N / parts]. */
  gemm(out: Tensor, a: Tensor, w: Tensor, bias?: Tensor | null, epilogue?: GemmEpilogue | null): void;
  /** Softmax(scale · q·kᵀ (+ bias) (masked)) · v per batch item and head. q [B, Lq, H, D], k and v
   *  [B, Lk, H, D] (Lk ≥ kvLen), out [B, Lq, H, D]. Lq ≠ Lk is normal (chunk vs cache, cross-attn).
   *  q, k, v one dtype, f32 or bf16; out f32 or bf16.
   *  D ≤ 512. A query that sees no key gets zeros. */
  attention(out: Tensor, q: Tensor, k: Tensor, v: Tensor, opts: AttentionOptions): void;

  // ---- normalisation -----------------------------------------------------------------------------
  /** Over the last dim: (x − mean) / sqrt(var + eps) · weight + bias (each optional). In place allowed.
   *  x f32, out f32 or bf16. */
  layerNorm(out: Tensor, x: Tensor, eps: number, weight?: Tensor | null, bias?: Tensor | null): void;
  /** Over the last dim: x / sqrt(mean(x²) + eps) · weight (optional). In place allowed. x and out
   *  both f32 or both bf16. */
  rmsNorm(out: Tensor, x: Tensor, eps: number, weight?: Tensor | null): void;
  /** LayerNorm without affine over the last dim, then adaLN modulation, in one pass:
   *  out = (x − mean) / sqrt(var + eps) · (1 + scale) + shift. x [B, L, C]; scale, shift [B, G, C] with
   *  G dividing L: token l uses row floor(l / (L/G)), so G = 1 is per sample, G = frames per frame,
   *  G = L per token. Statistics in f32. In place allowed. x f32, out f32 or bf16. */
  layerNormModulate(out: Tensor, x: Tensor, eps: number, scale: Tensor, shift: Tensor): void;
  /** RMSNorm over each token's whole width H·D (Wan normalizes q and k across all heads), then `rope3d`,
   *  in one pass: x [B, L, H, D], weight [H·D] optional. In place allowed. x and out both f32 or both
   *  bf16. */
  rmsNormRope(out: Tensor, x: Tensor, eps: number, weight: Tensor | null, rope: RopeOptions): void;
  /** Over dim 1 of [B, C, ...]: x / max(‖x‖₂, eps) · scale · gamma[c] (the Wan-VAE "RMS_norm", with
   *  scale = sqrt(C), eps = 1e-12). gamma [C] optional. In place allowed. */
  l2NormChannels(out: Tensor, x: Tensor, eps: number, scale: number, gamma?: Tensor | null): void;
  /** Over the last dim. In place allowed. */
  softmax(out: Tensor, x: Tensor): void;

  // ---- elementwise -------------------------------------------------------------------------------
  /** GELU, tanh approximation. In place allowed. */
  gelu(out: Tensor, x: Tensor): void;
  /** GELU in its exact form x·Φ(x) = x/2·(1 + erf(x/√2)) (PyTorch's `nn.GELU()`: CLIP's MLP, Wan's
   *  image-embedding MLP). In place allowed. */
  geluExact(out: Tensor, x: Tensor): void;
  /** x · sigmoid(x). In place allowed. */
  silu(out: Tensor, x: Tensor): void;
  /** out = a · b, same shapes. In place allowed (out = a or b). */
  mul(out: Tensor, a: Tensor, b: Tensor): void;
  /** out = alpha·a + beta·b, same shapes (residual add, CFG mix, sampler steps). In place allowed.
   *  a, b, out all f32 or all bf16. */
  axpby(out: Tensor, a: Tensor, b: Tensor, alpha: number, beta: number): void;
  /** Every element = value. */
  fill(out: Tensor, value: number): void;
  /** 3D rotary embedding on adjacent pairs (x[2c], x[2c+1]) of x [B, L, H, D]. In place allowed. x and
   *  out both f32 or both bf16. */
  rope3d(out: Tensor, x: Tensor, opts: RopeOptions): void;

  // ---- lookup and position bias ------------------------------------------------------------------
  /** out[i, :] = table[ids[i], :]; table [V, C] (f32/bf16/f16), out [ids.length, C]. */
  embedding(out: Tensor, table: Tensor, ids: Int32Array): void;
  /** T5 relative position bias: out[h, i, j] = table[bucket(j − i), h]; table [numBuckets, H],
   *  out [H, Lq, Lk]. */
  t5RelativeBias(out: Tensor, table: Tensor, opts: T5BiasOptions): void;

  // ---- convolution and resampling ----------------------------------------------------------------
  /** x [B, Cin, T, H, W], w [Cout, Cin, kt, kh, kw] (f32/bf16/f16), bias [Cout] optional,
   *  out [B, Cout, T', H', W'] with T' = (timePad + T − kt) / st + 1 (floored), H' = (H + top + bottom
   *  − kh) / sh + 1, W' likewise. */
  conv3d(out: Tensor, x: Tensor, w: Tensor, bias: Tensor | null, opts?: Conv3dOptions): void;
  /** x [B, Cin, H, W], w [Cout, Cin, kh, kw], out [B, Cout, H', W']. */
  conv2d(out: Tensor, x: Tensor, w: Tensor, bias: Tensor | null, opts?: Conv2dOptions): void;
  /** Nearest-neighbour upsampling by an integer factor per dim: every out dim is a multiple of x's. */
  upsampleNearest(out: Tensor, x: Tensor): void;
  /** out[..., Ho, Wo] = x[..., H, W] resampled with a bicubic filter (ResizeOptions; by default
   *  antialiased when shrinking, ≤ 16×). */
  resize(out: Tensor, x: Tensor, opts?: ResizeOptions): void;

  // ---- data movement (any dtype; out.dtype = input dtype) ----------------------------------------
  /** Inputs joined along `dim`; all other dims equal. */
  concat(out: Tensor, inputs: readonly Tensor[], dim: number): void;
  /** out = x[..., start : start + out.shape[dim], ...]. */
  slice(out: Tensor, x: Tensor, dim: number, start: number): void;
  /** dst[..., start : start + src.shape[dim], ...] = src — appending to a KV cache [B, Lmax, H, D] is
   *  writeSlice(cache, kNew, 1, filled). */
  writeSlice(dst: Tensor, src: Tensor, dim: number, start: number): void;
  /** t[..., to : to + len, ...] = t[..., from : from + len, ...] along `dim`, the source read as it was
   *  before the call: the two ranges may overlap (Array.prototype.copyWithin's contract). A KV cache
   *  moves the frames it keeps down over the evicted ones with it, for every layer at once. */
  copyWithin(t: Tensor, dim: number, to: number, from: number, len: number): void;
  /** out.shape[i] = x.shape[perm[i]]. */
  permute(out: Tensor, x: Tensor, perm: readonly number[]): void;
  /** Same shape, converting dtype (f32 ↔ bf16/f16, round-to-nearest-even). */
  cast(out: Tensor, x: Tensor): void;

  // ---- video frames ------------------------------------------------------------------------------
  /** x [3, T, H, W] f32 RGB in `range` → out u8 [T, H·W·3/2], I420 per frame (Y, then U, then V planes),
   *  H and W even: byte for byte what the H.264 encoder makes of the RGB24 frames videoToRgb24 gives
   *  (src/models/frames.ts) — each sample's 8-bit code ((x − lo)·255/(hi − lo) in double, clamped,
   *  rounded half up), then the encoder's BT.601 limited-range fixed-point matrix (kernels/h264/colour.c),
   *  chroma from the 2×2 sum. */
  rgbToYuv420(out: Tensor, x: Tensor, range: FrameRange): void;
  /** Inverse: u8 I420 [T, H·W·3/2] → f32 RGB [3, T, H, W] in `range` (chroma sample shared by its 2×2
   *  block). */
  yuv420ToRgb(out: Tensor, x: Tensor, range: FrameRange): void;
}
