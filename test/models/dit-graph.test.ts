// A causal DiT's forwards run as recorded graphs (src/models/dit-graph.ts over Backend.graphs: CUDA
// graphs on a GPU, the wasm backend's recording elsewhere): every step and context pass of a
// 12-chunk stream — through a filling window, evictions past the sink, a prompt change and a cut
// that re-anchors the sink — gives the eager forward's output and KV cache bit for bit, while the
// graphs are recorded only while the window fills and when the conditioning changes (the RoPE frame
// offset is read from a device tensor, so the steady state's chunks replay one recording each of the
// denoising forward and the context pass; the context pass after a cut once more), guided streams in
// lockstep (batch 2) alike; the cache's eviction is part of the context pass's graph: with graphs
// every chunk costs the host the same launches, evicting or not, where the eager stream's evicting
// chunks cost the eviction's copies more; a stream that
// passes the RoPE table's rows records once
// more, for the regrown table; a stream's steady state allocates the same every step and takes no new
// memory from the system; and what a graph cannot hold (host copies, waits, freeing memory from
// before the recording) is refused at the recording, which then leaves nothing behind.
import { describe, expect, test } from "bun:test";
import { parseDitConfig } from "../../src/models/configs.ts";
import { SeededRandom } from "../../src/models/random.ts";
import { openTensorTable } from "../../src/models/safetensors.ts";
import { CausalWanDiT } from "../../src/models/wan-dit-causal.ts";
import { type CrossAttnKV, WanDiT } from "../../src/models/wan-dit.ts";
import { WeightReader } from "../../src/models/weights.ts";
import type { Backend } from "../../src/runtime/backend.ts";
import { type CountingBackend, countingBackend } from "../../src/runtime/counting-backend.ts";
import { testBackends } from "./helpers/backends.ts";
import { get, goldenJson, goldenPath, loadGolden } from "./helpers/goldens.ts";

const json = await goldenJson("dit_b", "config.json");
const io = await loadGolden("dit_b", "io.safetensors");

async function loadDit(be: Backend): Promise<WanDiT> {
  const reader = new WeightReader(be, await openTensorTable(goldenPath("dit_b", "weights.safetensors")), { component: "transformer" });
  return WanDiT.load(reader, parseDitConfig(json, "dit_b/config.json", json.text_len));
}

const [C, N, H, W] = [4, 2, 6, 10]; // chunks of 2 latent frames (2 token frames), 3×5 tokens a frame
const STEPS = [1000, 750, 500];

interface Step {
  chunk: number;
  out: Float32Array | null; // null: the context pass
  allocations: number;
  systemAllocations: number;
}

interface StreamOptions {
  chunks: number;
  /** Attention window and sink in latent frames. */
  window: number;
  sink: number;
  /** Which of the two conditionings chunk c attends to. */
  prompt: (c: number) => 0 | 1;
  /** Chunks whose context pass re-anchors the sink (a prompt cut). */
  cuts?: number[];
  /** The stream's first latent frame (CausalWanDiT.reset). */
  startFrame?: number;
  /** Streams in lockstep (guidance's conditional and unconditional: crosses stacked to match). */
  batch?: number;
  /** The counting backend `dit` was loaded on: the stream reports each chunk's host launches. */
  counting?: CountingBackend;
}

/** A stream of chunks (3 denoising steps and a context pass each). Returns every forward's output and
 *  the allocations it made, the recordings each graph made in each chunk, both graphs' stats, and the
 *  KV cache's contents at the end. */
async function stream(be: Backend, dit: WanDiT, crosses: [CrossAttnKV, CrossAttnKV], graphs: boolean, o: StreamOptions) {
  const causal = new CausalWanDiT(dit, { chunkFrames: N, windowFrames: o.window, sinkFrames: o.sink, height: H, width: W, batch: o.batch, graphs });
  causal.reset(o.startFrame ?? 0);
  const rng = new SeededRandom(11);
  const steps: Step[] = [];
  const recordings: [number, number][] = [];
  const made = () => [causal.graph, causal.contextGraph].map((g) => (g ? g.stats.recorded + g.stats.updated : 0)) as [number, number];
  const launches: number[] = [];
  /** The chunk's forwards, their host launches (ops outside a graph, graph launches) counted. */
  const counted = async <T>(forward: () => Promise<T>) => {
    const before = o.counting?.launches() ?? 0;
    const out = await forward();
    launches[launches.length - 1]! += (o.counting?.launches() ?? 0) - before;
    return out;
  };
  const measure = async (chunk: number, run: () => Promise<Float32Array | null>) => {
    const before = be.memory();
    const out = await run();
    const after = be.memory();
    steps.push({ chunk, out, allocations: after.allocations - before.allocations, systemAllocations: after.systemAllocations });
  };
  for (let c = 0; c < o.chunks; c++) {
    const cross = crosses[o.prompt(c)];
    const x = be.upload(rng.normal(C * N * H * W), [C, N, H, W]);
    const before = made();
    launches.push(0);
    for (const t of STEPS) {
      await measure(c, async () => {
        const v = (await counted(() => causal.forwardChunk(x, t, cross)))!;
        be.axpby(x, x, v.view(x.shape, 0), 1, -0.1); // a sampler step: the next forward sees a new latent
        // the download is outside the measured forward's allocations on every backend (CUDA converts nothing for f32)
        const out = await be.download(v);
        be.free(v);
        return out;
      });
    }
    await measure(c, async () => (await counted(() => causal.forwardChunk(x, 0, cross, true, o.cuts?.includes(c) ?? false)), null));
    const after = made();
    recordings.push([after[0] - before[0], after[1] - before[1]]);
    be.free(x);
  }
  const cache = await Promise.all([...causal.cache.k, ...causal.cache.v].map((t) => be.download(t)));
  const stats = graphs ? { denoise: { ...causal.graph!.stats }, context: { ...causal.contextGraph!.stats } } : null;
  causal.free();
  return { steps, stats, recordings, cache, launches };
}

/** The eager and the graphed stream step by step: the same predictions and the same final cache, bit for bit. */
function expectSameStreams(eager: Awaited<ReturnType<typeof stream>>, graphed: Awaited<ReturnType<typeof stream>>) {
  expect(graphed.steps.length).toBe(eager.steps.length);
  for (const [i, s] of graphed.steps.entries()) {
    if (s.out) expect(s.out, `step ${i} (chunk ${s.chunk})`).toEqual(eager.steps[i]!.out!);
  }
  for (const [i, k] of graphed.cache.entries()) expect(k, `cache tensor ${i}`).toEqual(eager.cache[i]!);
}

for (const tb of await testBackends()) {
  describe.skipIf(!tb.backend)(`DiT forwards as graphs on ${tb.label}${tb.skip ? ` (skipped: ${tb.skip})` : ""}`, () => {
    test("a 12-chunk stream equals eager bit for bit; recordings stop once the window is full, but for a new prompt; evictions run in the graph", async () => {
      const be = tb.backend!;
      const counting = countingBackend(be);
      const dit = await loadDit(counting.backend);
      const crosses: [CrossAttnKV, CrossAttnKV] = [await dit.crossAttnKV(get(io, "nsq.context").data), await dit.crossAttnKV(get(io, "sq.context").data)];
      // a window of 4 chunks with a 1-chunk sink; the second prompt from chunk 6, and a cut back to
      // the first at chunk 9, whose context pass becomes the new sink
      const o: StreamOptions = { chunks: 12, window: 4 * N, sink: N, prompt: (c) => (c >= 6 && c < 9 ? 1 : 0), cuts: [9], counting };
      const eager = await stream(be, dit, crosses, false, o);
      const graphed = await stream(be, dit, crosses, true, o);
      expectSameStreams(eager, graphed);
      // each graph is recorded for the four held lengths of the filling window (0, 2, 4, 6 token
      // frames) and again at each prompt change; the other chunks, at a new RoPE offset each, launch it.
      // The context pass also at chunk 10: the cut's (chunk 9) moved its chunk into the sink and evicted
      // nothing, the one after it evicts again.
      const perChunk = [1, 1, 1, 1, 0, 0, 1, 0, 0, 1, 0, 0];
      expect(graphed.recordings).toEqual(perChunk.map((n, c) => [n, c === 10 ? 1 : n]));
      // A recording updates the graph it replaces in place — on CUDA only where it made the same
      // operations (cudaGraphExecUpdate keeps the topology), so the context pass is made anew where
      // its evictions change: chunk 3 (the first), 9 (the cut's one move) and 10 (two again). The
      // CPU's graphs update from any recording.
      const context = tb.label === "cuda" ? { recorded: 4, updated: 3 } : { recorded: 1, updated: 6 };
      expect(graphed.stats).toEqual({
        denoise: { recorded: 1, updated: 5, replayed: 12 * STEPS.length - 6, disabled: null },
        context: { ...context, replayed: 12 - 7, disabled: null },
      });
      // Eager, the context pass of a chunk that fills the window (chunks 3 on) evicts: the 4 frames
      // after the 2-frame sink move down by one 2-frame chunk, 2 copies over every layer's K and V;
      // the cut's moves its chunk into the sink instead, 1 copy. With graphs, those are inside the
      // context pass's graph: every chunk costs the host its 3 denoising forwards (the latent and the
      // time embedding's e and e0 copied in, the launch, the prediction copied out: 5 each), its
      // context pass (latent and e0 in, the launch) and the RoPE offset's fill — 19 launches. (Chunk 0
      // also makes the time embeddings, the same ops both ways.)
      const moves = [0, 0, 2, 2, 2, 2, 2, 2, 1, 2, 2];
      expect(eager.launches.slice(1).map((n) => n - eager.launches[1]!)).toEqual(moves);
      expect(graphed.launches.slice(1)).toEqual(new Array(11).fill(STEPS.length * 5 + 3 + 1));
      expect(graphed.launches[0]! - graphed.launches[1]!).toBe(eager.launches[0]! - eager.launches[1]!);
      dit.freeCross(crosses[0]);
      dit.freeCross(crosses[1]);
      dit.free();
    });

    test("guided: two streams in lockstep (batch 2) equal eager bit for bit, with the same recordings", async () => {
      const be = tb.backend!;
      const dit = await loadDit(be);
      const [a, c] = [await dit.crossAttnKV(get(io, "nsq.context").data), await dit.crossAttnKV(get(io, "sq.context").data)];
      const crosses: [CrossAttnKV, CrossAttnKV] = [dit.stackCross([a, c]), dit.stackCross([c, a])];
      const o: StreamOptions = { chunks: 7, window: 3 * N, sink: N, prompt: (c) => (c >= 5 ? 1 : 0), cuts: [5], batch: 2 };
      const eager = await stream(be, dit, crosses, false, o);
      const graphed = await stream(be, dit, crosses, true, o);
      expectSameStreams(eager, graphed);
      // the context pass after the cut (chunk 5) is recorded again: it evicts, the cut's did not
      expect(graphed.recordings).toEqual([1, 1, 1, 0, 0, 1, 0].map((n, c) => [n, c === 6 ? 1 : n]));
      for (const x of [a, c, ...crosses]) dit.freeCross(x);
      dit.free();
    });

    test("a stream that passes the RoPE table's 1024 rows records once more, for the regrown table", async () => {
      const be = tb.backend!;
      const dit = await loadDit(be);
      const cross = await dit.crossAttnKV(get(io, "nsq.context").data);
      // chunks at frames 1014, 1016, …: the one at 1024 needs rows the table has not got. The graphed
      // stream runs first, so that it is the one that grows the model's table.
      const o: StreamOptions = { chunks: 7, window: 4 * N, sink: N, prompt: () => 0, startFrame: 1014 };
      const graphed = await stream(be, dit, [cross, cross], true, o);
      const eager = await stream(be, dit, [cross, cross], false, o);
      expectSameStreams(eager, graphed);
      expect(graphed.recordings).toEqual([1, 1, 1, 1, 0, 1, 0].map((n) => [n, n]));
      dit.freeCross(cross);
      dit.free();
    });

    test("a stream's steady state allocates the same every step, none of it from the system", async () => {
      const be = tb.backend!;
      const dit = await loadDit(be);
      const cross = await dit.crossAttnKV(get(io, "nsq.context").data);
      for (const graphs of [false, true]) {
        const { steps } = await stream(be, dit, [cross, cross], graphs, { chunks: 8, window: 6, sink: 2, prompt: () => 0 });
        // the window is full from chunk 2's commit on, and every later commit evicts the same frames:
        // from chunk 4 on, the steady state
        const later = steps.filter((s) => s.chunk >= 4);
        const denoise = later.filter((s) => s.out), context = later.filter((s) => !s.out);
        const perStep = new Set(denoise.map((s) => s.allocations)), perContext = new Set(context.map((s) => s.allocations));
        console.log(`${tb.label}${graphs ? " graphs" : ""}: allocations per denoising step ${[...perStep]}, per context pass ${[...perContext]}`);
        expect(perStep.size).toBe(1);
        expect(perContext.size).toBe(1);
        expect(new Set(later.map((s) => s.systemAllocations)).size).toBe(1);
        // with graphs every steady forward is a launch: it allocates only the copy of the output the
        // caller gets (on the CPU, a recorded op's own temporaries too, since it runs again)
        if (graphs && tb.label === "cuda") expect([...perStep, ...perContext]).toEqual([1, 0]);
      }
      dit.freeCross(cross);
      dit.free();
    });

    test("what a graph cannot hold is refused at the recording, and the graph it would replace is freed", () => {
      const be = tb.backend!;
      const graphs = be.graphs!;
      const before = be.alloc([4, 8]);
      const first = graphs.record(() => {
        const t = be.alloc([4, 8]);
        be.fill(t, 2);
        return t;
      });
      expect(first.made).toBe("new");
      const refusals: [string, () => unknown, RegExp][] = [
        ["upload", () => be.upload(new Float32Array(4), [4]), /upload cannot be recorded/],
        ["sync", () => void be.sync(), /sync cannot be recorded/],
        ["download", () => void be.download(before), /download cannot be recorded/],
        ["an outside free", () => be.free(before), /cannot free .* allocated before/],
        ["an async body", async () => {}, /synchronously, not return a promise/],
      ];
      let previous = first.graph;
      for (const [what, body, message] of refusals) {
        expect(() => graphs.record(body, previous), what).toThrow(message);
        expect(() => previous.launch(), what).toThrow(/after free/);
        expect(graphs.recording).toBe(false);
        previous = graphs.record(() => be.fill(before, 1)).graph;
      }
      previous.free();
      be.free(first.result);
      // nothing refused leaked into later work: ops run eagerly again
      be.fill(before, 3);
      be.free(before);
    });
  });
}
