// Conv3dOptions.normSilu, .residual and .upsample for a backend that does not fuse them (the WebAssembly
// backend, where the conv's arithmetic outweighs the extra passes; the VAE bench's unfused comparison):
// the upsample, or the norm and SiLU, run as their own ops into copies of x (and prev), the plain conv
// reads those, and the residual is added by the axpby op after it.
import type { Backend, Conv3dOptions } from "./backend.ts";
import * as P from "./op-params.ts";
import type { Tensor } from "./tensor.ts";

type Conv3d = (out: Tensor, x: Tensor, w: Tensor, bias: Tensor | null, opts: Conv3dOptions) => void;

export function conv3dWithSeparateOps(be: Backend, conv3d: Conv3d, out: Tensor, x: Tensor, w: Tensor, bias: Tensor | null, opts: Conv3dOptions): void {
  const { normSilu: ns, residual, upsample, ...plain } = opts;
  if (!ns && !residual && !upsample) return conv3d(out, x, w, bias, opts);
  const g = P.conv3dGeometry(out, x, w, bias, opts); // refused before anything is allocated
  const normed = (t: Tensor) => {
    const n = be.alloc(t.shape);
    be.l2NormChannels(n, t, ns!.eps, ns!.scale, ns!.gamma);
    be.silu(n, n);
    return n;
  };
  const upsampled = (t: Tensor) => {
    const up = be.alloc([g.B, g.Cin, g.T, g.H, g.W]);
    be.upsampleNearest(up, t);
    return up;
  };
  // upsample comes without prev or normSilu (op-params)
  const xn = upsample ? upsampled(x) : ns ? normed(x) : x;
  const prev = opts.prev && ns ? normed(opts.prev) : opts.prev;
  try {
    conv3d(out, xn, w, bias, { ...plain, prev });
  } finally {
    if (xn !== x) be.free(xn);
    if (prev !== opts.prev) be.free(prev!);
  }
  if (residual) be.axpby(out, out, residual, 1, 1);
}
