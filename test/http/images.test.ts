// /v1/images: generate (b64_json and url), formats, edits with uploads and data URLs, content.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { decodeImage, encodeImage, sniffImageFormat } from "../../src/media/images.ts";
import { expectEnvelope, startTestServer, type TestServer } from "../helpers/server.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

const post = (path: string, body: unknown) =>
  fetch(`${server.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
const decode = (b64: string) => decodeImage(new Uint8Array(Buffer.from(b64, "base64")), { maxPixels: 1 << 24, param: "t" });

describe("generate", () => {
  test("b64_json PNG by default, n images of the requested size", async () => {
    const res = await post("/v1/images", { prompt: "a red square on a blue background", size: "96x64", n: 2 });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.data).toHaveLength(2);
    expect(body).toMatchObject({ output_format: "png", size: "96x64", model: server.ctx.admission.servedModelId });
    expect(typeof body.created).toBe("number");
    const image = await decode(body.data[0].b64_json);
    expect([image.width, image.height]).toEqual([96, 64]);
    expect(body.data[0].revised_prompt).toBe("a red square on a blue background");
    // The prompt is followed: the corner pixel is the blue background.
    const [r, g, b] = image.data.subarray(0, 3);
    expect(b!).toBeGreaterThan(r! + 80);
    expect(b!).toBeGreaterThan(g! + 80);
  });

  test("url responses point at downloadable content in the requested format", async () => {
    for (const format of ["jpeg", "webp", "png"] as const) {
      const body = await (await post("/v1/images/generations", { prompt: "x", size: "64x64", response_format: "url", output_format: format })).json();
      expect(body.data[0].url).toMatch(/^\/v1\/images\/img_[0-9a-f]{32}-0\/content$/);
      const res = await fetch(`${server.url}${body.data[0].url}`);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe(`image/${format}`);
      expect(sniffImageFormat(new Uint8Array(await res.arrayBuffer()))).toBe(format);
    }
  });

  test("a url never comes from the Host header: relative without server.public_url", async () => {
    const res = await fetch(`${server.url}/v1/images`, {
      method: "POST",
      headers: { "content-type": "application/json", host: "evil.example.com" },
      body: JSON.stringify({ prompt: "x", size: "16x16", response_format: "url" }),
    });
    const { url } = (await res.json()).data[0];
    expect(url).toMatch(/^\/v1\/images\/img_[0-9a-f]{32}-0\/content$/);
  });

  test("with server.public_url the url is absolute on that address", async () => {
    const proxied = await startTestServer({ "server.public_url": "https://kino.example.com/api/" });
    try {
      const res = await fetch(`${proxied.url}/v1/images`, {
        method: "POST",
        headers: { "content-type": "application/json", host: "evil.example.com" },
        body: JSON.stringify({ prompt: "x", size: "16x16", response_format: "url" }),
      });
      const { url } = (await res.json()).data[0];
      expect(url).toMatch(/^https:\/\/kino\.example\.com\/api\/v1\/images\/img_[0-9a-f]{32}-0\/content$/);
      expect((await fetch(`${proxied.url}${new URL(url).pathname.slice("/api".length)}`)).status).toBe(200);
    } finally {
      await proxied.close();
    }
  });

  test("bad inputs", async () => {
    expect((await expectEnvelope(await post("/v1/images", { prompt: "x", n: 11 }), 400)).param).toBe("n");
    expect((await expectEnvelope(await post("/v1/images", { prompt: "x", response_format: "gif" }), 400)).param).toBe("response_format");
    expect((await expectEnvelope(await post("/v1/images", { prompt: "x", style: "vivid" }), 400)).param).toBe("style");
    expect((await expectEnvelope(await post("/v1/images", { size: "64x64" }), 400)).param).toBe("prompt");
    await expectEnvelope(await fetch(`${server.url}/v1/images/img_missing/content`), 404);
  });
});

describe("edits", () => {
  const greenPng = async () => {
    const rgb = new Uint8Array(32 * 32 * 3);
    for (let i = 0; i < rgb.length; i += 3) rgb[i + 1] = 220;
    return encodeImage(rgb, 32, 32, "png");
  };

  test("multipart upload as `image` conditions the output", async () => {
    const form = new FormData();
    form.append("prompt", "a white ring");
    form.append("size", "64x64");
    form.append("image", new File([await greenPng()], "in.png", { type: "image/png" }));
    const res = await fetch(`${server.url}/v1/images/edits`, { method: "POST", body: form });
    expect(res.status).toBe(200);
    const image = await decode((await res.json()).data[0].b64_json);
    // Outside the ring the reference shows through.
    expect(image.data[1]!).toBeGreaterThan(150);
    expect(image.data[0]!).toBeLessThan(60);
  });

  test("JSON edits take data URLs", async () => {
    const url = `data:image/png;base64,${Buffer.from(await greenPng()).toString("base64")}`;
    const res = await post("/v1/images/edits", { prompt: "x", size: "64x64", image: url });
    expect(res.status).toBe(200);
  });

  test("no image, a mask, or an undecodable image is a 400", async () => {
    expect((await expectEnvelope(await post("/v1/images/edits", { prompt: "x" }), 400)).param).toBe("image");
    expect((await expectEnvelope(await post("/v1/images/edits", { prompt: "x", image: "data:image/png;base64,AAAA", mask: "data:image/png;base64,AAAA" }), 400)).param).toBe("mask");
    expect((await expectEnvelope(await post("/v1/images/edits", { prompt: "x", image: "data:image/png;base64,AAAA" }), 400)).param).toBe("image");
  });
});
