// conv3d for the host test backend: the same semantics as reference.conv3d (Backend.conv3d), with the
// loops ordered so the VAE goldens (hundreds of millions of multiply-adds) finish in seconds. Float64
// accumulation, like the reference.
import type { Conv3dOptions } from "../../../src/runtime/backend.ts";
import * as P from "../../../src/runtime/op-params.ts";
import { Host } from "../../../src/runtime/reference.ts";

export function conv3dFast(x: Host, w: Host, bias: Host | null, opts: Conv3dOptions & { prevHost?: Host } = {}): Host {
  const oshape = P.conv3dOutputShape(x.shape, w.shape, opts);
  const g = P.conv3dGeometry({ shape: oshape, dtype: "f32" }, x, w, bias, { ...opts, prev: opts.prevHost });
  // The input with its time padding (prev frames or zeros) in front: [B, Cin, timePad + T, H, W].
  const Tp = g.timePad + g.T, HW = g.H * g.W;
  const padded = new Float64Array(g.B * g.Cin * Tp * HW);
  for (let b = 0; b < g.B; b++) for (let c = 0; c < g.Cin; c++) {
    const dst = (b * g.Cin + c) * Tp * HW;
    if (opts.prevHost) for (let t = 0; t < g.timePad; t++) {
      const src = ((b * g.Cin + c) * g.timePad + t) * HW;
      for (let i = 0; i < HW; i++) padded[dst + t * HW + i] = opts.prevHost.f32[src + i]!;
    }
    const src = (b * g.Cin + c) * g.T * HW;
    for (let i = 0; i < g.T * HW; i++) padded[dst + g.timePad * HW + i] = x.f32[src + i]!;
  }
  const out = new Host(oshape);
  const acc = new Float64Array(g.Ho * g.Wo);
  const W = w.f32;
  for (let b = 0; b < g.B; b++) for (let co = 0; co < g.Cout; co++) for (let to = 0; to < g.To; to++) {
    acc.fill(bias ? bias.f32[co]! : 0);
    for (let ci = 0; ci < g.Cin; ci++) for (let a = 0; a < g.kt; a++) {
      const frame = ((b * g.Cin + ci) * Tp + to * g.st + a) * HW;
      for (let r = 0; r < g.kh; r++) for (let q = 0; q < g.kw; q++) {
        const wv = W[(((co * g.Cin + ci) * g.kt + a) * g.kh + r) * g.kw + q]!;
        if (wv === 0) continue;
        for (let yo = 0; yo < g.Ho; yo++) {
          const y = yo * g.sh + r - g.top;
          if (y < 0 || y >= g.H) continue;
          const row = frame + y * g.W, arow = yo * g.Wo;
          for (let xo = 0; xo < g.Wo; xo++) {
            const xx = xo * g.sw + q - g.left;
            if (xx >= 0 && xx < g.W) acc[arow + xo] += wv * padded[row + xx]!;
          }
        }
      }
    }
    out.f32.set(acc, ((b * g.Cout + co) * g.To + to) * g.Ho * g.Wo);
  }
  return out;
}
