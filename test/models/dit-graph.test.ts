// A causal DiT's denoising forwards run as recorded graphs (src/models/dit-graph.ts over
// Backend.graphs: CUDA graphs on a GPU, the wasm backend's recording elsewhere): every step of a
// stream — through a filling window, evictions past the sink, and a prompt change — gives the eager
// forward's output bit for bit, with one recording per chunk and launches for the other steps; a
// stream's steady state allocates the same every step and takes no new memory from the system; and
// what a graph cannot hold (host copies, waits, freeing memory from before the recording) is refused
// at the recording, which then leaves nothing behind.
import { describe, expect, test } from "bun:test";
import { parseDitConfig } from "../../src/models/configs.ts";
import { SeededRandom } from "../../src/models/random.ts";
import { openTensorTable } from "../../src/models/safetensors.ts";
import { CausalWanDiT } from "../../src/models/wan-dit-causal.ts";
import { type CrossAttnKV, WanDiT } from "../../src/models/wan-dit.ts";
import { WeightReader } from "../../src/models/weights.ts";
import type { Backend } from "../../src/runtime/backend.ts";
import { testBackends } from "./helpers/backends.ts";
import { get, goldenJson, goldenPath, loadGolden } from "./helpers/goldens.ts";

const json = await goldenJson("dit_b", "config.json");
const io = await loadGolden("dit_b", "io.safetensors");

async function loadDit(be: Backend): Promise<WanDiT> {
  const reader = new WeightReader(be, await openTensorTable(goldenPath("dit_b", "weights.safetensors")), { component: "transformer" });
  return WanDiT.load(reader, parseDitConfig(json, "dit_b/config.json", json.text_len));
}

const [C, N, H, W] = [4, 2, 6, 10]; // chunks of 2 latent frames, 3×5 tokens a frame
const STEPS = [1000, 750, 500];

interface Step {
  chunk: number;
  out: Float32Array | null; // null: the context pass
  allocations: number;
  systemAllocations: number;
}

/** A stream of `chunks` chunks (3 denoising steps and a context pass each) on a 6-frame window with
 *  a 2-frame sink; the conditioning changes at chunk `promptAt`. Returns every forward's output and
 *  the allocations it made. */
async function stream(be: Backend, dit: WanDiT, crosses: [CrossAttnKV, CrossAttnKV], graphs: boolean, chunks = 6, promptAt = 4) {
  const causal = new CausalWanDiT(dit, { chunkFrames: N, windowFrames: 6, sinkFrames: 2, height: H, width: W, graphs });
  const rng = new SeededRandom(11);
  const steps: Step[] = [];
  const measure = async (chunk: number, run: () => Promise<Float32Array | null>) => {
    const before = be.memory();
    const out = await run();
    const after = be.memory();
    steps.push({ chunk, out, allocations: after.allocations - before.allocations, systemAllocations: after.systemAllocations });
  };
  for (let c = 0; c < chunks; c++) {
    const cross = crosses[c < promptAt ? 0 : 1];
    const x = be.upload(rng.normal(C * N * H * W), [C, N, H, W]);
    for (const t of STEPS) {
      await measure(c, async () => {
        const v = (await causal.forwardChunk(x, t, cross))!;
        be.axpby(x, x, v, 1, -0.1); // a sampler step: the next forward sees a new latent
        // the download is outside the measured forward's allocations on every backend (CUDA converts nothing for f32)
        const out = await be.download(v);
        be.free(v);
        return out;
      });
    }
    await measure(c, async () => (await causal.forwardChunk(x, 0, cross, true), null));
    be.free(x);
  }
  const stats = causal.graph?.stats ?? null;
  causal.free();
  return { steps, stats };
}

for (const tb of await testBackends()) {
  describe.skipIf(!tb.backend)(`DiT forwards as graphs on ${tb.label}${tb.skip ? ` (skipped: ${tb.skip})` : ""}`, () => {
    test("every step of a stream equals the eager forward bit for bit; one recording a chunk, launches for the rest", async () => {
      const be = tb.backend!;
      const dit = await loadDit(be);
      const crosses: [CrossAttnKV, CrossAttnKV] = [await dit.crossAttnKV(get(io, "nsq.context").data), await dit.crossAttnKV(get(io, "sq.context").data)];
      const eager = await stream(be, dit, crosses, false);
      const graphed = await stream(be, dit, crosses, true);
      expect(graphed.steps.length).toBe(eager.steps.length);
      for (const [i, s] of graphed.steps.entries()) {
        if (s.out) expect(s.out).toEqual(eager.steps[i]!.out!);
      }
      // 6 chunks: the first recorded, the next five re-recorded into the same graph (new RoPE offset,
      // cache length or prompt), two launches without recording in each
      expect(graphed.stats).toEqual({ recorded: 1, updated: 5, replayed: 12, disabled: null });
      dit.freeCross(crosses[0]);
      dit.freeCross(crosses[1]);
      dit.free();
    });

    test("a stream's steady state allocates the same every step, none of it from the system", async () => {
      const be = tb.backend!;
      const dit = await loadDit(be);
      const cross = await dit.crossAttnKV(get(io, "nsq.context").data);
      for (const graphs of [false, true]) {
        const { steps } = await stream(be, dit, [cross, cross], graphs, 8, 8);
        // the window is full from chunk 3 on, and every chunk's first forward evicts the same frames
        // (the first eviction made the cache's move buffer): from chunk 4 on, the steady state
        const later = steps.filter((s) => s.chunk >= 4);
        const denoise = later.filter((s) => s.out), context = later.filter((s) => !s.out);
        const perStep = new Set(denoise.filter((s) => !graphs || s !== denoise[0]).map((s) => s.allocations));
        console.log(`${tb.label}${graphs ? " graphs" : ""}: allocations per denoising step ${[...perStep]}, per context pass ${[...new Set(context.map((s) => s.allocations))]}`);
        if (!graphs) expect(perStep.size).toBe(1);
        expect(new Set(context.map((s) => s.allocations)).size).toBe(1);
        expect(new Set(later.map((s) => s.systemAllocations)).size).toBe(1);
        if (graphs) {
          // a launch allocates only the copy of the output the caller gets (on the CPU, a recorded op's
          // own temporaries too, since it runs again); a recording allocates more
          const launches = denoise.filter((s) => denoise.indexOf(s) % STEPS.length !== 0);
          expect(new Set(launches.map((s) => s.allocations)).size).toBe(1);
          if (tb.label === "cuda") expect(launches[0]!.allocations).toBe(1);
        }
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
