// What OpenAI's and vLLM-Omni's clients send beyond kino's own fields is understood — accepted where it
// changes nothing kino does, or refused with the capability it needs — never "Unknown field".
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { RealtimeClient } from "../helpers/realtime-client.ts";
import { expectEnvelope, startTestServer, type TestServer } from "../helpers/server.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

const post = (path: string, body: object) =>
  fetch(`${server.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
const VIDEO = { prompt: "a red circle", size: "16x16", num_frames: 1, num_inference_steps: 1 };
const IMAGE = { prompt: "a red circle", size: "16x16", num_inference_steps: 1 };

/** A refusal: 400, the envelope, the field as param, and a message that says why. */
async function refused(path: string, body: object, param: string, reason: string) {
  const error = await expectEnvelope(await post(path, body), 400);
  expect(error.param).toBe(param);
  expect(error.message).toContain(reason);
  expect(error.message).not.toContain("Unknown field");
}

describe("video requests (vLLM-Omni's VideoGenerationRequest)", () => {
  test("fields for capabilities the model lacks are refused with the capability", async () => {
    const cases: [string, unknown, string][] = [
      ["guidance_scale_2", 4, "needs a two-expert (Wan2.2 A14B MoE) model"],
      ["boundary_ratio", 0.875, "needs a two-expert (Wan2.2 A14B MoE) model"],
      ["true_cfg_scale", 4, "this model's guidance_scale already is classifier-free guidance with negative_prompt"],
      ["generate_sound", true, "needs a model that generates audio"],
      ["sound_duration", 2, "needs a model that generates audio"],
      ["enable_frame_interpolation", true, "needs frame interpolation (RIFE)"],
      ["frame_interpolation_exp", 2, "needs frame interpolation (RIFE)"],
      ["frame_interpolation_scale", 0.5, "needs frame interpolation (RIFE)"],
      ["frame_interpolation_model_path", "elfgum/RIFE-4.22.lite", "needs frame interpolation (RIFE)"],
    ];
    for (const [field, value, reason] of cases) await refused("/v1/videos", { ...VIDEO, [field]: value }, field, reason);
  });

  test("flow_shift on a model whose schedule takes no shift names the capability", async () => {
    await refused("/v1/videos", { ...VIDEO, flow_shift: 5 }, "flow_shift", "flow_shift needs a model whose sampler takes a timestep shift");
  });

  test("informational fields and switches left off are accepted", async () => {
    const res = await post("/v1/videos", { ...VIDEO, user: "user-42", generate_sound: false, enable_frame_interpolation: false });
    expect(res.status).toBe(200);
  });

  test("a form answers as JSON does", async () => {
    const form = new FormData();
    for (const [k, v] of Object.entries({ ...VIDEO, num_frames: "1", num_inference_steps: "1", generate_sound: "true" })) form.append(k, String(v));
    const error = await expectEnvelope(await fetch(`${server.url}/v1/videos`, { method: "POST", body: form }), 400);
    expect([error.param, error.message]).toEqual(["generate_sound", expect.stringContaining("needs a model that generates audio")]);
  });
});

describe("image requests (the OpenAI SDK's and vLLM-Omni's image fields)", () => {
  test("values kino cannot honour are refused with the reason", async () => {
    const cases: [string, unknown, string][] = [
      ["style", "vivid", "a DALL·E 3 setting; describe the style in the prompt"],
      ["background", "transparent", "a transparent background needs a model that renders an alpha channel"],
      ["quality", "high", "kino has no quality presets; num_inference_steps sets the effort"],
      ["stream", true, "streamed partial images are not supported"],
      ["partial_images", 2, "partial images need stream"],
      ["output_format", "gif", "kino writes png, jpeg or webp"],
      ["frame_count", 9, "GIF output, which kino does not write"],
      ["svg", { model: "x" }, "SVG output, which kino does not write"],
      ["complexity", "high", "a GPT-image setting"],
      ["true_cfg_scale", 4, "classifier-free guidance with negative_prompt"],
      ["layers", 4, "needs a layered image model"],
      ["use_system_prompt", "dynamic", "needs a model with a language-model stage"],
      ["flow_shift", 3, "flow_shift needs a model whose sampler takes a timestep shift"],
    ];
    for (const [field, value, reason] of cases) await refused("/v1/images", { ...IMAGE, [field]: value }, field, reason);
    await refused("/v1/images/edits", { ...IMAGE, image: "data:image/png;base64,AAAA", input_fidelity: "high" }, "input_fidelity", "a GPT-image setting");
  });

  test("informational fields and the values kino does anyway are accepted", async () => {
    const res = await post("/v1/images", {
      ...IMAGE, user: "u", safety_identifier: "hash", moderation: "low", background: "opaque", quality: "auto", stream: false,
      partial_images: 0, vae_use_slicing: false, vae_use_tiling: false, generator_device: "cuda",
    });
    expect(res.status).toBe(200);
  });

  test("through the OpenAI SDK: understood fields work, the rest come back as a 400 that says why", async () => {
    const client = new OpenAI({ apiKey: "unused", baseURL: `${server.url}/v1`, maxRetries: 0 });
    const ok = await client.images.generate({ ...IMAGE, user: "u", moderation: "low", background: "auto", stream: false } as never);
    expect((ok as { data: unknown[] }).data).toHaveLength(1);
    const err = await client.images.generate({ ...IMAGE, style: "vivid" } as never).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.message).toContain("describe the style in the prompt");
  });
});

describe("realtime session.start (vLLM-Omni's streaming client)", () => {
  const START = { type: "session.start", prompt: "a red circle", size: "16x16", num_frames: 5 };

  /** The error a refused start gets (the connection then closes). */
  async function startError(start: object) {
    const client = await RealtimeClient.connect(server.url);
    client.send(start);
    const error = await client.nextOfType("error");
    await client.closed;
    return error;
  }

  test("flow_shift, top level or in sampling_params, names the capability it needs", async () => {
    for (const start of [{ ...START, flow_shift: 5 }, { ...START, sampling_params: { flow_shift: 5 } }]) {
      const error = await startError(start);
      expect(error).toMatchObject({ code: "invalid_request", param: "flow_shift" });
      expect(error.message).toContain("needs a model whose sampler takes a timestep shift");
    }
  });

  test("vLLM-Omni fields in sampling_params are refused with the reason, not as unknown extra_params", async () => {
    const error = await startError({ ...START, sampling_params: { guidance_scale_2: 3 } });
    expect(error).toMatchObject({ code: "invalid_request", param: "guidance_scale_2" });
    expect(error.message).toContain("needs a two-expert (Wan2.2 A14B MoE) model");
  });

  test("user is informational: the session streams", async () => {
    const client = await RealtimeClient.connect(server.url);
    client.send({ ...START, user: "user-42" });
    expect((await client.nextOfType("video.start")).config.flow_shift).toBeNull();
    await client.untilDone();
  });
});
