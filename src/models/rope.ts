// Wan's 3D rotary position tables. The head dim splits into (frame, height, width) sub-dimensions
// d − 4⌊d/6⌋, 2⌊d/6⌋, 2⌊d/6⌋ (44/42/42 for d = 128), each with its own frequencies
// θ^(−2j/d_axis), θ = 10000; the angles are computed in float64 (as Wan does) and stored as f32 cos/sin
// columns [P, d/2] that Backend.rope3d reads per pair. The frame table grows on demand: attention
// only sees position differences, so a streaming model can run past Wan's 1024 rows.
//
// A causal DiT run as a recorded graph gives its frame offset as a device tensor the kernels read when
// they run (FrameOffsetAt, RopeOptions.frameOffsetAt), so that one recording serves every chunk; the
// tables must then already cover the offset the tensor will hold when the graph is launched, which is
// why `options` takes that value too: a growth moves the tables, and the graph's key names them.
import type { Backend, RopeOptions } from "../runtime/backend.ts";
import type { Tensor } from "../runtime/tensor.ts";

const THETA = 10000;

/** Complex pairs per axis (frame, height, width) for a head dim. */
export function ropeAxisPairs(headDim: number): [number, number, number] {
  const hw = 2 * Math.floor(headDim / 6);
  return [(headDim - 2 * hw) / 2, hw / 2, hw / 2];
}

/** cos/sin tables [positions, headDim/2], columns as ropeAxisPairs splits them. */
export function ropeTables(positions: number, headDim: number): { cos: Float32Array; sin: Float32Array } {
  const pairs = headDim / 2;
  const axes = ropeAxisPairs(headDim);
  const freqs: number[] = [];
  for (const n of axes) for (let j = 0; j < n; j++) freqs.push(1 / THETA ** ((2 * j) / (2 * n)));
  const cos = new Float32Array(positions * pairs), sin = new Float32Array(positions * pairs);
  for (let p = 0; p < positions; p++) {
    for (let c = 0; c < pairs; c++) {
      const angle = p * freqs[c]!;
      cos[p * pairs + c] = Math.cos(angle);
      sin[p * pairs + c] = Math.sin(angle);
    }
  }
  return { cos, sin };
}

/** A frame offset read by the kernels when they run: an f32 tensor [1], and the whole number it holds
 *  when the ops that read it run (it sizes the tables). */
export interface FrameOffsetAt {
  tensor: Tensor;
  value: number;
}

/** The tables on the device, regrown (doubling) when a frame position would fall past the end. */
export class DeviceRope {
  #cos: Tensor | null = null;
  #sin: Tensor | null = null;
  #rows = 0;
  readonly axisPairs: [number, number, number];

  constructor(private readonly backend: Backend, private readonly headDim: number, initialRows: number) {
    this.axisPairs = ropeAxisPairs(headDim);
    this.#grow(initialRows);
  }

  #grow(rows: number): void {
    if (this.#cos) this.backend.free(this.#cos, this.#sin!);
    const { cos, sin } = ropeTables(rows, this.headDim);
    this.#cos = this.backend.upload(cos, [rows, this.headDim / 2]);
    this.#sin = this.backend.upload(sin, [rows, this.headDim / 2]);
    this.#rows = rows;
  }

  /** rope3d options for a token grid (token frames, height, width) starting at token frame
   *  `frameOffset`: a number, or a tensor the kernels read when they run (FrameOffsetAt). */
  options(grid: readonly [number, number, number], frameOffset: number | FrameOffsetAt = 0): RopeOptions {
    const first = typeof frameOffset === "number" ? frameOffset : frameOffset.value;
    const need = Math.max(first + grid[0], grid[1], grid[2]);
    if (need > this.#rows) this.#grow(Math.max(need, 2 * this.#rows));
    const base = { cos: this.#cos!, sin: this.#sin!, axisPairs: this.axisPairs, grid };
    return typeof frameOffset === "number" ? { ...base, frameOffset } : { ...base, frameOffset: 0, frameOffsetAt: frameOffset.tensor };
  }

  free(): void {
    if (this.#cos) this.backend.free(this.#cos, this.#sin!);
    this.#cos = this.#sin = null;
  }
}
