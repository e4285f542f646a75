import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { expectEnvelope, startTestServer, TEST_PIPELINE, type TestServer } from "../helpers/server.ts";

describe("models and health", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  test("GET /v1/models lists the served model (model_path when no name is set)", async () => {
    const body = await (await fetch(`${server.url}/v1/models`)).json();
    expect(body.object).toBe("list");
    expect(body.data).toHaveLength(1);
    expect(body.data[0]).toMatchObject({ id: TEST_PIPELINE, object: "model", owned_by: "kino", root: TEST_PIPELINE });
    expect(typeof body.data[0].created).toBe("number");
  });

  test("GET /v1/models/{model} returns the card, even for ids with slashes; others 404", async () => {
    const res = await fetch(`${server.url}/v1/models/${TEST_PIPELINE}`);
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.card).toMatchObject({ name: "kino-test", tasks: ["t2v", "i2v"] });
    expect((await expectEnvelope(await fetch(`${server.url}/v1/models/sora-2`), 404)).type).toBe("not_found_error");
  });

  test("GET /health is 200 while the worker is alive, and lists it", async () => {
    const res = await fetch(`${server.url}/health`);
    expect(res.status).toBe(200);
    const [pid] = server.ctx.engine.workerPids();
    expect(await res.json()).toEqual({
      status: "ok",
      workers: [{ index: 0, pid, state: "ready", gpu: 0, device: { backend: "custom pipeline module", cuda_visible_devices: expect.any(String), pci_bus_id: null } }],
    });
  });
});

describe("API key and LoRA nickname", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      "server.api_key": "sk-test-123",
      "server.served_model_name": "ignored-when-lora",
      "generator.pipeline.components.lora_path": "/models/adapters/fasth3-dense.safetensors",
      "generator.pipeline.components.lora_strength": "0.8",
    });
  });
  afterAll(() => server.close());
  const auth = { authorization: "Bearer sk-test-123", "content-type": "application/json" };

  test("every /v1 route needs the key; /health does not", async () => {
    expect((await expectEnvelope(await fetch(`${server.url}/v1/models`), 401)).message).toContain("Missing API key");
    await expectEnvelope(await fetch(`${server.url}/v1/videos`, { headers: { authorization: "Bearer wrong" } }), 401);
    await expectEnvelope(await fetch(`${server.url}/v1/videos`, { method: "POST", body: "{}" }), 401);
    expect((await fetch(`${server.url}/v1/models`, { headers: auth })).status).toBe(200);
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
  });

  test("the LoRA nickname is the only served id; selectors must match the startup adapter", async () => {
    const models = await (await fetch(`${server.url}/v1/models`, { headers: auth })).json();
    expect(models.data.map((m: any) => m.id)).toEqual(["fasth3-dense"]);
    const create = (body: object) => fetch(`${server.url}/v1/videos`, { method: "POST", headers: auth, body: JSON.stringify({ prompt: "p", size: "64x64", num_frames: 1, ...body }) });
    expect((await create({ model: "fasth3-dense" })).status).toBe(200);
    expect((await create({ lora: { name: "fasth3-dense", path: "/models/adapters/fasth3-dense.safetensors", scale: 0.8 } })).status).toBe(200);
    expect((await create({ lora: { lora_name: "fasth3-dense", lora_scale: 0.8 + 1e-10 } })).status).toBe(200);
    expect((await expectEnvelope(await create({ model: "ignored-when-lora" }), 400)).param).toBe("model");
    expect((await expectEnvelope(await create({ lora: { name: "other" } }), 400)).param).toBe("lora.name");
    expect((await expectEnvelope(await create({ lora: { adapter: "fasth3-dense", scale: 1.0 } }), 400)).param).toBe("lora.scale");
    expect((await expectEnvelope(await create({ lora: { path: "/elsewhere.safetensors" } }), 400)).param).toBe("lora.path");
    expect((await expectEnvelope(await create({ lora: { name: "fasth3-dense", lora_name: "x" } }), 400)).param).toBe("lora.lora_name");
  });
});

describe("OpenAPI", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ "server.api_key": "sk-doc" });
  });
  afterAll(() => server.close());

  test("/openapi.json documents every route with the TypeBox schemas, without needing the key", async () => {
    const res = await fetch(`${server.url}/openapi.json`);
    expect(res.status).toBe(200);
    const doc = await res.json();
    expect(doc.openapi).toMatch(/^3\./);
    for (const [path, method] of [
      ["/v1/models", "get"], ["/v1/videos", "post"], ["/v1/videos", "get"], ["/v1/videos/sync", "post"],
      ["/v1/videos/generations", "post"], ["/v1/videos/{id}", "get"], ["/v1/videos/{id}", "delete"],
      ["/v1/videos/{id}/content", "get"], ["/v1/images", "post"], ["/v1/images/edits", "post"],
      ["/v1/images/{id}/content", "get"], ["/health", "get"], ["/metrics", "get"],
    ]) {
      expect(doc.paths[path]?.[method]).toBeDefined();
    }
    const create = doc.paths["/v1/videos"].post;
    expect(create.requestBody.content["application/json"].schema.properties.prompt.type).toBe("string");
    expect(create.requestBody.content["multipart/form-data"]).toBeDefined();
    expect(create.responses["400"].content["application/json"].schema.properties.error).toBeDefined();
    expect(doc.components.schemas.RealtimeChunkMetadata.properties.superseded_event_ids).toBeDefined();
  });
});
