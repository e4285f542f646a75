// A DiT forward recorded once as a graph (Backend.graphs: CUDA graphs; the wasm backend keeps the
// same contract) and launched again for every later forward whose ops are the same: a causal
// stream's denoising forwards once its attention window is full (the KV cache's length and write
// position stay put, and the RoPE offset is read from a device tensor: wan-dit-causal.ts), its context
// passes likewise, a bidirectional clip's every forward. One launch then replaces the ~1500 kernel
// launches of a Wan-1.3B forward, and nothing is allocated.
//
// A graph reads and writes the tensors it was recorded with, so the forward runs on input tensors
// kept here: each call copies its inputs (the latent and the time embedding; for a bidirectional
// clip the conditioning's cross-attention K/V too, wan-dit-graphed.ts) into them, launches, and copies
// the graph's output, if it has one, into a tensor the caller owns (the graph overwrites its own at
// the next launch; a context pass has none: it writes the KV cache). What else the recorded ops
// depend on is the caller's key: when it changes (a longer cache while the window fills, a new
// prompt's cross-attention K/V, a regrown RoPE table) the forward is recorded again into the same
// graph, which the backend updates in place when only addresses and scalars moved.
//
// Opt-in (KINO_DIT_GRAPHS=1, read by the pipelines) until tools/gpu-check.sh has shown on an H200 that
// launches match eager forwards bit for bit; GRAPHS_VERIFIED then makes it the default.
import type { Backend, OpGraph } from "../runtime/backend.ts";
import type { Tensor } from "../runtime/tensor.ts";

/** Set once a device run of tools/gpu-check.sh ("DiT forward as a CUDA graph") passed on an H200. */
export const GRAPHS_VERIFIED = false;

/** Whether DiT forwards run as graphs: KINO_DIT_GRAPHS=1 turns them on (=0 off once verified). */
export function ditGraphsWanted(env: Record<string, string | undefined> = process.env): boolean {
  return GRAPHS_VERIFIED ? env.KINO_DIT_GRAPHS !== "0" : env.KINO_DIT_GRAPHS === "1";
}

/** What a forward graph did: recordings (new or updated in place) and launches without recording. */
export interface ForwardGraphStats {
  recorded: number;
  updated: number;
  replayed: number;
  /** Why graphs were given up for this model (the forwards run eagerly from then on), or null. */
  disabled: string | null;
}

export class ForwardGraph {
  #graph: OpGraph | null = null;
  #key: string | null = null;
  /** Inputs the graph reads and the output it writes, all kept between launches. */
  #inputs: Tensor[] | null = null;
  #output: Tensor | null = null;
  readonly stats: ForwardGraphStats = { recorded: 0, updated: 0, replayed: 0, disabled: null };

  constructor(private readonly b: Backend, private readonly onDisabled: (reason: string) => void = (r) => console.warn(`kino: DiT graphs off: ${r}`)) {
    if (!b.graphs) this.stats.disabled = `the ${b.name} backend has no graphs`;
  }

  get enabled(): boolean {
    return this.stats.disabled === null;
  }

  /**
   * The forward's output for `inputs`: `forward` enqueues it (synchronously, on the kept copies of the
   * inputs it is given, in the same order) and returns its output tensor. It is recorded when `key`
   * differs from the last call's (or the inputs' shapes or dtypes do), then launched. Returns a tensor
   * the caller owns, or null when graphs are off or recording failed (the caller then runs the forward
   * itself).
   */
  run(key: string, inputs: readonly Tensor[], forward: (kept: Tensor[]) => Tensor): Tensor | null {
    if (!this.#launch(key, inputs, forward)) return null;
    const out = this.b.alloc(this.#output!.shape);
    copy(this.b, out, this.#output!);
    return out;
  }

  /** `run` for a forward whose effect is what it writes into tensors of the caller's (a context pass
   *  fills the KV cache) and which has no output: true once launched, false when the caller must run
   *  it itself. */
  runForEffect(key: string, inputs: readonly Tensor[], forward: (kept: Tensor[]) => void): boolean {
    return this.#launch(key, inputs, (kept) => (forward(kept), null));
  }

  /** Copies the inputs in, records when the key (or the inputs) changed, launches. */
  #launch(key: string, inputs: readonly Tensor[], forward: (kept: Tensor[]) => Tensor | null): boolean {
    if (!this.enabled) return false;
    const b = this.b;
    const kept = this.#inputsFor(inputs);
    for (const [i, t] of inputs.entries()) copy(b, kept[i]!, t);
    if (key !== this.#key || !this.#graph) {
      let rec;
      try {
        rec = b.graphs!.record(() => forward(kept), this.#graph);
      } catch (e) {
        this.#graph = null; // record() freed it
        this.#disable(`recording the forward failed: ${(e as Error).message}`);
        return false;
      }
      if (this.#output) b.free(this.#output); // the previous recording's output, back to the graph's memory
      this.#graph = rec.graph;
      this.#output = rec.result;
      this.#key = key;
      this.stats[rec.made === "updated" ? "updated" : "recorded"]++;
    } else {
      this.stats.replayed++;
    }
    this.#graph.launch();
    return true;
  }

  /** The kept inputs, new ones (and a new graph) when their number, shapes or dtypes changed. */
  #inputsFor(inputs: readonly Tensor[]): Tensor[] {
    const have = this.#inputs;
    const same = (a: Tensor, x: Tensor) => a.dtype === x.dtype && a.shape.join() === x.shape.join();
    if (have && have.length === inputs.length && inputs.every((t, i) => same(have[i]!, t))) return have;
    this.free();
    this.#inputs = inputs.map((t) => this.b.alloc(t.shape, t.dtype));
    return this.#inputs;
  }

  #disable(reason: string): void {
    this.stats.disabled = reason;
    this.free();
    this.onDisabled(reason);
  }

  /** Frees the graph and the tensors kept for it (the next run records anew). */
  free(): void {
    const b = this.b;
    if (this.#output) b.free(this.#output);
    this.#graph?.free();
    if (this.#inputs) b.free(...this.#inputs);
    this.#output = this.#graph = this.#inputs = null;
    this.#key = null;
  }
}

/** dst ← src, same shape (a whole-tensor slice). */
function copy(b: Backend, dst: Tensor, src: Tensor): void {
  b.slice(dst, src, 0, 0);
}
