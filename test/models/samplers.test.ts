// Schedules and update rules against goldens/scheduler: Wan's UniPC and DPM++ step lists, Self-Forcing's
// warped list, one Euler step, one distilled step, CFG, and a full UniPC trajectory replay.
import { describe, expect, test } from "bun:test";
import { applyGuidance, createSampler } from "../../src/models/samplers.ts";
import { dpmSchedule, evenStepList, unipcSchedule, warpedSchedule } from "../../src/models/schedules.ts";
import { HostBackend } from "./helpers/host-backend.ts";
import { get, goldenJson, loadGolden, maxAbsDiff } from "./helpers/goldens.ts";

const S = await goldenJson("scheduler", "schedules.json");

describe("schedules", () => {
  test("UniPC lists (Wan t2v / i2v defaults and 4 steps) match exactly", () => {
    for (const [key, steps, shift] of [["unipc_steps50_shift5", 50, 5], ["unipc_steps50_shift3", 50, 3], ["unipc_steps40_shift3", 40, 3], ["unipc4_shift5", 4, 5]] as const) {
      const s = unipcSchedule(steps, shift);
      expect(s.timesteps).toEqual(S[key].timesteps_int64);
      expect(maxAbsDiff(s.sigmas, S[key].sigmas_float32)).toBe(0);
    }
  });

  test("DPM++ list matches exactly", () => {
    const s = dpmSchedule(50, 5);
    expect(s.timesteps).toEqual(S.dpmpp_steps50_shift5.timesteps_int64);
    expect(maxAbsDiff(s.sigmas, S.dpmpp_steps50_shift5.sigmas_float32)).toBe(0);
  });

  test("Self-Forcing warped list: [1000,750,500,250] with shift 5 → [1000, 937.5, 833.33, 625]", () => {
    const w = S.self_forcing_warped_shift5;
    const s = warpedSchedule(w.denoising_step_list, 5);
    expect(s.timesteps).toEqual(w.warped_timesteps_float32);
    expect(s.sigmas.slice(0, 4)).toEqual(w.warped_sigmas_float32);
    expect(s.sigmas[4]).toBe(0);
    expect(warpedSchedule([1000, 750, 500, 250], 8).timesteps).toEqual(S.self_forcing_warped_shift8_for_reference.warped_timesteps_float32);
    expect(evenStepList(4)).toEqual([1000, 750, 500, 250]);
  });
});

describe("samplers", () => {
  const backend = new HostBackend();
  const up = (v: number[] | number[][]) => backend.upload(Float32Array.from((v as number[]).flat()), [(v as number[]).flat().length]);

  test("Euler step", async () => {
    const e = S.euler_step_example;
    const x = up(e.x), v = up(e.v);
    createSampler("euler", backend, { timesteps: [0, 0], sigmas: [e.sigma, e.sigma_next, 0] }, () => {}).step(0, x, v);
    expect(maxAbsDiff(await backend.download(x), e.x_next.flat())).toBeLessThan(1e-6);
  });

  test("distilled step: x0 prediction, then re-noise to the next sigma", async () => {
    const e = S.self_forcing_step_example;
    const x = up(e.x_t), v = up(e.v);
    const noise = (out: any) => backend.write(out, Float32Array.from(e.eps));
    createSampler("distilled", backend, { timesteps: [1000, 937.5], sigmas: [e.sigma_t, e.sigma_next, 0] }, noise).step(0, x, v);
    expect(maxAbsDiff(await backend.download(x), e.x_next)).toBeLessThan(1e-6);
    // the last step returns the x0 prediction itself
    const y = up(e.x_t);
    createSampler("distilled", backend, { timesteps: [1000], sigmas: [e.sigma_t, 0] }, noise).step(0, y, v);
    expect(maxAbsDiff(await backend.download(y), e.x0)).toBeLessThan(1e-6);
  });

  test("x0-predicting models (prediction_type sample) drive the same steps through v = (x − x0)/σ", async () => {
    const e = S.euler_step_example;
    const x = e.x.flat() as number[], v = e.v.flat() as number[];
    const x0 = x.map((xi, i) => xi - e.sigma * v[i]!); // what a perfect x0 model returns for this v
    const schedule = { timesteps: [0, 0], sigmas: [e.sigma, e.sigma_next, 0] };
    const viaSample = up(x);
    createSampler("euler", backend, schedule, () => {}, "sample").step(0, viaSample, up(x0));
    expect(maxAbsDiff(await backend.download(viaSample), e.x_next.flat())).toBeLessThan(1e-5);
    // the last Euler step (σ → 0) lands exactly on the model's x0
    const last = up(x);
    createSampler("euler", backend, { timesteps: [0], sigmas: [e.sigma, 0] }, () => {}, "sample").step(0, last, up(x0));
    expect(maxAbsDiff(await backend.download(last), x0)).toBeLessThan(1e-5);
  });

  test("CFG: uncond + g·(cond − uncond)", async () => {
    const cond = up([1, 2, 3]), uncond = up([0.5, 0.5, 0.5]);
    applyGuidance(backend, cond, uncond, 5);
    expect([...(await backend.download(cond))]).toEqual([3, 8, 13]);
  });

  for (const name of ["unipc50_shift5", "unipc4_shift5"]) {
    test(`UniPC trajectory replay ${name}`, async () => {
      const g = await loadGolden("scheduler", "unipc_trajectory.safetensors");
      const ts = get(g, `${name}.timesteps`).data, sig = get(g, `${name}.sigmas`).data;
      const n = ts.length, size = 12; // [1, 2, 1, 2, 3] per step
      const steps = n === 50 ? unipcSchedule(50, 5) : unipcSchedule(4, 5);
      expect(steps.timesteps).toEqual([...ts]);
      expect(maxAbsDiff(steps.sigmas, sig)).toBe(0);
      const sampler = createSampler("unipc", backend, steps, () => {});
      const x = backend.upload(get(g, `${name}.sample_in`).data.slice(0, size), [size]);
      let worst = 0;
      for (let i = 0; i < n; i++) {
        expect(maxAbsDiff(await backend.download(x), get(g, `${name}.sample_in`).data.subarray(i * size, (i + 1) * size))).toBeLessThan(1e-4);
        const v = backend.upload(get(g, `${name}.model_output`).data.slice(i * size, (i + 1) * size), [size]);
        sampler.step(i, x, v);
        worst = Math.max(worst, maxAbsDiff(await backend.download(x), get(g, `${name}.prev_sample`).data.subarray(i * size, (i + 1) * size)));
      }
      sampler.free();
      console.log(`${name}: max |prev_sample − golden| = ${worst.toExponential(2)}`);
      expect(worst).toBeLessThan(1e-4);
    });
  }
});
