// Convolutions on the WebAssembly backend (wasm.ts): conv3d as im2col panels (kernels/cpu/conv.c),
// or, at stride 1, over a zero-padded copy of the input whose taps sit at constant offsets
// (kernels/cpu/conv_direct.c); conv2d as conv3d over one frame.
import type { Conv2dOptions, Conv3dOptions } from "../backend.ts";
import * as P from "../op-params.ts";
import { DTYPE_BYTES, type Tensor } from "../tensor.ts";
import type { WasmHeap } from "./wasm-heap.ts";
import { DT_CODE } from "./wasm-module.ts";

/** Floats past each padded conv input (XP_TAIL in kernels/cpu/conv_direct.c). */
const CONV_XP_TAIL = 8;

/** How an op outside the backend class runs kernels: addresses of live tensors (`dst` for one it
 *  writes, which drops packed copies of it; `opt` 0 for none), the heap, and the pool. */
export interface WasmKernels {
  readonly heap: WasmHeap;
  ptr(t: Tensor): number;
  dst(t: Tensor): number;
  opt(t: Tensor | null | undefined): number;
  run(kernel: string, args: number[], work: number): void;
}

export function wasmConv3d(k: WasmKernels, out: Tensor, x: Tensor, w: Tensor, bias: Tensor | null, opts: Conv3dOptions = {}): void {
  const g = P.conv3dGeometry(out, x, w, bias, opts);
  if (out.numel === 0) return;
  if (g.st === 1 && g.sh === 1 && g.sw === 1) return conv3dDirect(k, out, x, w, bias, opts.prev, g);
  const args = [k.dst(out), k.ptr(x), k.opt(opts.prev), k.ptr(w), DT_CODE[w.dtype], k.opt(bias),
    g.B, g.Cin, g.Cout, g.T, g.H, g.W, g.kt, g.kh, g.kw, g.st, g.sh, g.sw, g.timePad, g.top, g.left, g.To, g.Ho, g.Wo];
  k.run("kino_conv3d", args, (out.numel * g.Cin * g.kt * g.kh * g.kw) / 16);
}

/** Stride 1 (kernels/cpu/conv_direct.c): x and prev copied once into a zero-padded buffer, then
 *  the conv reads its taps from there at constant offsets instead of packing im2col panels. */
function conv3dDirect(k: WasmKernels, out: Tensor, x: Tensor, w: Tensor, bias: Tensor | null, prev: Tensor | undefined, g: P.ConvGeometry): void {
  const Tp = g.timePad + g.T, Hp = g.Ho + g.kh - 1, Wp = g.Wo + g.kw - 1;
  const item = g.Cin * Tp * Hp * Wp + CONV_XP_TAIL, f = DTYPE_BYTES.f32;
  const xp = k.heap.alloc(g.B * item * f);
  try {
    for (let b = 0; b < g.B; b++) {
      const args = [xp + b * item * f, k.ptr(x) + b * g.Cin * g.T * g.H * g.W * f, prev ? k.ptr(prev) + b * g.Cin * g.timePad * g.H * g.W * f : 0,
        g.Cin, g.T, g.H, g.W, g.timePad, Hp, Wp, g.top, g.left];
      k.run("kino_conv3d_pad", args, item);
    }
    const args = [k.dst(out), xp, k.ptr(w), DT_CODE[w.dtype], k.opt(bias), g.B, g.Cin, g.Cout, Tp, Hp, Wp, g.kt, g.kh, g.kw, g.To, g.Ho, g.Wo];
    k.run("kino_conv3d_direct", args, (out.numel * g.Cin * g.kt * g.kh * g.kw) / 16);
  } finally {
    k.heap.free(xp);
  }
}

export function wasmConv2d(k: WasmKernels, out: Tensor, x: Tensor, w: Tensor, bias: Tensor | null, opts: Conv2dOptions = {}): void {
  const as5 = (t: Tensor, op: string) => {
    if (t.rank !== 4) P.fail("conv2d", `${op} must be rank 4, got ${t}`);
    const [a, b, c, d] = t.shape as [number, number, number, number];
    return t.reshape([a, b, 1, c, d]);
  };
  const [sh, sw] = opts.stride ?? [1, 1];
  wasmConv3d(k, as5(out, "out"), as5(x, "x"), as5(w, "w"), bias, { stride: [1, sh, sw], pad: opts.pad, timePad: 0 });
}
