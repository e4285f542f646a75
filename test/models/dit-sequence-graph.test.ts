// The bidirectional pipelines' forwards as one recorded graph per clip (src/models/wan-dit-graphed.ts
// over Backend.graphs: CUDA graphs on a GPU, the wasm backend's recording elsewhere): a whole guided
// clip — conditional and unconditional calls at every UniPC step, as sampleGuided makes them with the
// pipelines' own predict functions — gives the eager clip's predictions and final latent bit for bit
// for t2v, i2v (the latent followed by y, text and image cross-attention) and ti2v (per-token
// timesteps, the first frame put back after every step); one recording serves the clip; a clip's
// steady state allocates the same every call and takes no new memory from the system; a new latent
// shape is recorded anew; and a recording that fails leaves the clip running eagerly, unchanged.
import { describe, expect, test } from "bun:test";
import { parseDitConfig } from "../../src/models/configs.ts";
import { SeededRandom } from "../../src/models/random.ts";
import { openTensorTable } from "../../src/models/safetensors.ts";
import { createSampler } from "../../src/models/samplers.ts";
import { unipcSchedule } from "../../src/models/schedules.ts";
import type { CrossAttnKV, WanDiT as WanDiTType } from "../../src/models/wan-dit.ts";
import { WanDiT } from "../../src/models/wan-dit.ts";
import { type DitForwards, GraphedForwards } from "../../src/models/wan-dit-graphed.ts";
import { WeightReader } from "../../src/models/weights.ts";
import type { Backend } from "../../src/runtime/backend.ts";
import type { Tensor } from "../../src/runtime/tensor.ts";
import { type GuidedRun, sampleGuided } from "../../src/pipelines/wan-clips.ts";
import { conditionedPredict } from "../../src/pipelines/wan-i2v.ts";
import { firstFrameRun } from "../../src/pipelines/wan-ti2v.ts";
import { testBackends } from "./helpers/backends.ts";
import { get, goldenJson, goldenPath, loadGolden } from "./helpers/goldens.ts";

type Kind = "t2v" | "i2v" | "ti2v";
const STEPS = 4;

async function loadDit(be: Backend, kind: Kind): Promise<WanDiTType> {
  const name = { t2v: "dit_b", i2v: "dit_i2v", ti2v: "dit_ti2v" }[kind];
  const json = await goldenJson(name, "config.json");
  const table = await openTensorTable(goldenPath(name, "weights.safetensors"));
  const shapes = new Map([...table.tensors].map(([n, info]) => [n, info.shape] as const));
  const cfg = kind === "t2v" ? parseDitConfig(json, "dit_b/config.json", json.text_len) : parseDitConfig(json.wan_original_config, `${name}/wan config`, undefined, shapes);
  return WanDiT.load(new WeightReader(be, table, { component: "transformer" }), cfg);
}

/** The conditional and unconditional K/V of each kind's golden contexts (i2v: with CLIP features). */
async function conditionings(dit: WanDiTType, kind: Kind): Promise<[CrossAttnKV, CrossAttnKV]> {
  if (kind === "t2v") {
    const io = await loadGolden("dit_b", "io.safetensors");
    return [await dit.crossAttnKV(get(io, "sq.context").data), await dit.crossAttnKV(get(io, "nsq.context").data)];
  }
  const io = await loadGolden(kind === "i2v" ? "i2v_cond" : "ti2v_cond", "io.safetensors");
  const image = kind === "i2v" ? get(io, "clip_fea").data : undefined;
  return [await dit.crossAttnKV(get(io, "context").data, undefined, image), await dit.crossAttnKV(get(io, "context_null").data, undefined, image)];
}

interface Call {
  out: Float32Array;
  /** Tensors the call allocated, and blocks it took from the system (device allocations on CUDA, heap growths on wasm). */
  allocations: number;
  systemAllocations: number;
}

/** One guided clip of STEPS UniPC steps over a seeded latent [C, frames, 6, 10], run by `forwards`. */
async function clip(be: Backend, dit: WanDiTType, kind: Kind, crosses: [CrossAttnKV, CrossAttnKV], forwards: DitForwards, frames = 3) {
  const { outDim, inDim } = dit.config, rng = new SeededRandom(7);
  const [H, W] = [6, 10];
  const x = be.upload(rng.normal(outDim * frames * H * W), [outDim, frames, H, W]);
  const extra: Tensor[] = [];
  const run: GuidedRun = { x, cond: crosses[0], uncond: crosses[1], guidanceScale: 5, predict: (l, t, c) => forwards.forward(l, t, c) };
  if (kind === "i2v") {
    const y = be.upload(rng.normal((inDim - outDim) * frames * H * W), [inDim - outDim, frames, H, W]);
    extra.push(y);
    run.predict = conditionedPredict(dit, y, forwards);
  }
  if (kind === "ti2v") {
    const z = be.upload(rng.normal(outDim * H * W), [outDim, 1, H, W]);
    extra.push(z);
    Object.assign(run, firstFrameRun(dit, x, z, forwards));
  }
  const calls: Call[] = [];
  const predict = run.predict;
  run.predict = async (l, t, c) => {
    const before = be.memory();
    const v = await predict(l, t, c);
    const after = be.memory();
    calls.push({ out: await be.download(v), allocations: after.allocations - before.allocations, systemAllocations: after.systemAllocations - before.systemAllocations });
    return v;
  };
  const sampler = createSampler("unipc", be, unipcSchedule(STEPS, 5), () => {
    throw new Error("UniPC draws no noise");
  });
  await sampleGuided(be, sampler, run);
  const latent = await be.download(x);
  sampler.free();
  be.free(x, ...extra);
  return { calls, latent };
}

for (const tb of await testBackends()) {
  describe.skipIf(!tb.backend)(`bidirectional DiT clips as graphs on ${tb.label}${tb.skip ? ` (skipped: ${tb.skip})` : ""}`, () => {
    for (const kind of ["t2v", "i2v", "ti2v"] as const) {
      test(`${kind}: every call of a guided clip equals the eager forward bit for bit; one recording serves the clip`, async () => {
        const be = tb.backend!;
        const dit = await loadDit(be, kind);
        const crosses = await conditionings(dit, kind);
        const eager = await clip(be, dit, kind, crosses, dit);
        const forwards = new GraphedForwards(dit, { graphs: true });
        const graphed = await clip(be, dit, kind, crosses, forwards);
        expect(graphed.calls.length).toBe(2 * STEPS);
        for (const [i, c] of graphed.calls.entries()) expect(c.out, `call ${i}`).toEqual(eager.calls[i]!.out);
        expect(graphed.latent).toEqual(eager.latent);
        // the conditioning is an input, not the key: the unconditional calls launch the same graph
        expect(forwards.graph!.stats).toEqual({ recorded: 1, updated: 0, replayed: 2 * STEPS - 1, disabled: null });

        // a clip's steady state: every launch allocates the same tensors
        const launches = graphed.calls.slice(1);
        console.log(`${kind} on ${tb.label}: allocations per call eager ${[...new Set(eager.calls.map((c) => c.allocations))]}, graph launch ${[...new Set(launches.map((c) => c.allocations))]}`);
        expect(new Set(launches.map((c) => c.allocations)).size).toBe(1);
        // the forward's intermediates are the graph's, made once: a launch allocates fewer tensors
        expect(launches[0]!.allocations).toBeLessThan(eager.calls[0]!.allocations);

        // the next clip of the same shape (a request's second video) launches the same recording and
        // takes nothing new from the system (no device allocation on CUDA, no heap growth on wasm).
        // Within the first clip CUDA still allocates: each launch's output is a new tensor, and the sampler
        // keeps more of them over its first steps (its multistep history)
        const again = await clip(be, dit, kind, crosses, forwards);
        expect(again.latent).toEqual(eager.latent);
        expect(again.calls.map((c) => c.systemAllocations)).toEqual(again.calls.map(() => 0));
        expect(forwards.graph!.stats.recorded).toBe(1);
        expect(forwards.graph!.stats.replayed).toBe(4 * STEPS - 1);
        forwards.free();
        for (const c of crosses) dit.freeCross(c);
        dit.free();
      });
    }

    test("a latent of another shape is recorded anew; a failed recording leaves the clip eager and unchanged", async () => {
      const be = tb.backend!;
      const dit = await loadDit(be, "t2v");
      const crosses = await conditionings(dit, "t2v");
      const forwards = new GraphedForwards(dit, { graphs: true });
      await clip(be, dit, "t2v", crosses, forwards, 3);
      const longer = await clip(be, dit, "t2v", crosses, forwards, 5);
      expect(longer.latent).toEqual((await clip(be, dit, "t2v", crosses, dit, 5)).latent);
      expect(forwards.graph!.stats).toMatchObject({ recorded: 2, replayed: 2 * (2 * STEPS - 1) });
      forwards.free();

      // the backend refuses the recording (as a capture that fails would): the forward runs eagerly
      const graphs = be.graphs!, record = graphs.record;
      graphs.record = () => {
        throw new Error("capture refused by the driver");
      };
      const failing = new GraphedForwards(dit, { graphs: true });
      try {
        const eager = await clip(be, dit, "t2v", crosses, dit);
        const fallback = await clip(be, dit, "t2v", crosses, failing);
        expect(fallback.latent).toEqual(eager.latent);
        expect(failing.graph!.stats.disabled).toMatch(/recording the forward failed: capture refused by the driver/);
        expect(failing.graph!.stats.recorded).toBe(0);
      } finally {
        graphs.record = record;
        failing.free();
      }
      for (const c of crosses) dit.freeCross(c);
      dit.free();
    });
  });
}
