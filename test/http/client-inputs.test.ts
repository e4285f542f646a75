// What real clients send that is unusual or wrong at the transport level — JSON nested without end,
// numbers JSON cannot hold, bodies that are not UTF-8 or are compressed, text fields sent as file parts, field names in
// another case — and images beyond plain stills (transparency, animation, print and other formats).
// Each gets the envelope naming the field, or works; the server answers /health and serves after each.
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { brotliCompressSync, deflateSync, gzipSync } from "node:zlib";
import { decodeImage, encodeImage } from "../../src/media/images.ts";
import { animatedWebp, solid } from "../media/helpers/webp-animation.ts";
import { expectEnvelope, startTestServer, type TestServer } from "../helpers/server.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ "server.max_body_bytes": String(4 << 20) });
});
afterAll(() => server.close());
afterEach(async () => {
  expect((await fetch(`${server.url}/health`)).status).toBe(200);
});

const postJson = (path: string, body: string) => fetch(`${server.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body });
const postForm = (path: string, fields: [string, string | Blob][]) => {
  const form = new FormData();
  for (const [name, value] of fields) form.append(name, value);
  return fetch(`${server.url}${path}`, { method: "POST", body: form });
};
const jobCount = async () => (await (await fetch(`${server.url}/v1/videos?limit=100`)).json()).data.length;
const deepObject = (levels: number) => `${'{"a":'.repeat(levels)}1${"}".repeat(levels)}`;

describe("JSON nested without end", () => {
  test("a body nested 100 000 levels is a 400 naming the field on every create route, not a stack overflow", async () => {
    const before = await jobCount();
    const cases: [string, string, string][] = [
      ["/v1/videos", `{"prompt":"p","video_params":${deepObject(100_000)}}`, "video_params"],
      ["/v1/videos/sync", `{"prompt":"p","extra_params":${"[".repeat(100_000)}${"]".repeat(100_000)}}`, "extra_params"],
      ["/v1/images", `{"prompt":"p","x":${deepObject(100_000)}}`, "x"],
      ["/v1/images/edits", `{"prompt":"p","image":${deepObject(100_000)}}`, "image"],
    ];
    for (const [path, body, field] of cases) {
      const error = await expectEnvelope(await postJson(path, body), 400);
      expect([error.param, error.message]).toEqual([field, `The JSON body nests deeper than 32 levels in '${field}'`]);
    }
    expect(await jobCount()).toBe(before);
    // Nesting within the limit is validated as usual.
    expect((await expectEnvelope(await postJson("/v1/videos", `{"prompt":"p","video_params":${deepObject(20)}}`), 400)).param).toBe("video_params.a");
  });

  test("a body of too many small members is refused before it is parsed, naming the field", async () => {
    const members = (n: number) => `{${Array.from({ length: n }, (_, i) => `"k${i}":0`).join(",")}}`;
    const error = await expectEnvelope(await postJson("/v1/videos", `{"prompt":"p","extra_params":${members(300_000)}}`), 400);
    expect([error.param, error.message]).toEqual(["extra_params", "The JSON body has more than 10000 members and items in 'extra_params'; no field takes that many"]);
    const flat = await expectEnvelope(await postJson("/v1/videos", `{"prompt":"p",${Array.from({ length: 12_000 }, (_, i) => `"k${i}":0`).join(",")}}`), 400);
    expect([flat.param, flat.message]).toEqual([null, "The JSON body has more than 10000 members and items; no field takes that many"]);
    // Within the limit the body is validated as usual: the unknown keys are what is wrong.
    expect((await expectEnvelope(await postJson("/v1/videos", `{"prompt":"p","video_params":${members(3000)}}`), 400)).param).toStartWith("video_params.k");
  });

  test("forms: bracket names and JSON strings nested past the limit", async () => {
    const brackets = await postForm("/v1/videos", [["prompt", "p"], [`video_params${"[a]".repeat(40)}`, "1"]]);
    expect(await expectEnvelope(brackets, 400)).toMatchObject({ param: "video_params", message: "Form field 'video_params' nests deeper than 32 levels" });
    const json = await postForm("/v1/videos", [["prompt", "p"], ["video_params", deepObject(50_000)]]);
    expect(await expectEnvelope(json, 400)).toMatchObject({ param: "video_params", message: "Field 'video_params' nests deeper than 32 levels" });
  });
});

describe("JSON values and encodings", () => {
  test("a number JSON cannot hold is named as such, not as null", async () => {
    const error = await expectEnvelope(await postJson("/v1/videos", '{"prompt":"p","seed":1e400}'), 400);
    expect([error.param, error.message]).toEqual(["seed", "Invalid 'seed': Expected integer (got Infinity, a number out of range)"]);
  });

  test("a body that is not UTF-8 says so", async () => {
    const latin1 = new Uint8Array([...Buffer.from('{"prompt":"caf'), 0xe9, ...Buffer.from('"}')]);
    const res = await fetch(`${server.url}/v1/videos`, { method: "POST", headers: { "content-type": "application/json" }, body: latin1 });
    expect((await expectEnvelope(res, 400)).message).toBe("Malformed JSON body: it is not valid UTF-8 (JSON bodies must be UTF-8)");
  });

  test("a field in another case points to the field meant", async () => {
    const error = await expectEnvelope(await postJson("/v1/videos", '{"Prompt":"p"}'), 400);
    expect([error.param, error.message]).toEqual(["Prompt", "Unknown field 'Prompt' in video request (did you mean 'prompt'?)"]);
  });
});

describe("compressed bodies", () => {
  const send = (encoding: string, body: Uint8Array) =>
    fetch(`${server.url}/v1/videos`, { method: "POST", headers: { "content-type": "application/json", "content-encoding": encoding }, body });
  const json = Buffer.from(JSON.stringify({ prompt: "p", size: "32x32", num_frames: 1 }));

  test("gzip, deflate and br bodies work (gzip read as not UTF-8 before)", async () => {
    for (const [encoding, body] of [["gzip", gzipSync(json)], ["deflate", deflateSync(json)], ["br", brotliCompressSync(json)]] as const) {
      const res = await send(encoding, body);
      expect([encoding, res.status]).toEqual([encoding, 200]);
    }
  });

  test("a bomb past the body limit is a 413; a body that is not what its encoding says, or another encoding, is refused", async () => {
    await expectEnvelope(await send("gzip", gzipSync(Buffer.alloc(8 << 20, 32))), 413);
    expect((await expectEnvelope(await send("gzip", json), 400)).message).toStartWith("The body is not valid gzip data, as its Content-Encoding says");
    expect((await expectEnvelope(await send("compress", json), 415)).message).toBe(
      "Content-Encoding 'compress' is not supported; send the body uncompressed, or as gzip, deflate or br",
    );
  });
});

describe("forms of a great many fields", () => {
  test("are refused before they are parsed, urlencoded and multipart alike", async () => {
    const post = (body: string, type: string) => fetch(`${server.url}/v1/videos`, { method: "POST", headers: { "content-type": type }, body });
    const urlencoded = `prompt=p&${Array.from({ length: 200_000 }, (_, i) => `k${i}=0`).join("&")}`;
    const refusal = { param: null, message: "The form has more than 1000 fields; no request takes that many" };
    expect(await expectEnvelope(await post(urlencoded, "application/x-www-form-urlencoded"), 400)).toMatchObject(refusal);
    const parts = Array.from({ length: 20_000 }, (_, i) => `--B0\r\nContent-Disposition: form-data; name="k${i}"\r\n\r\n0\r\n`);
    expect(await expectEnvelope(await post(`${parts.join("")}--B0--\r\n`, 'multipart/form-data; boundary="B0"'), 400)).toMatchObject(refusal);
    // a form of a thousand fields is read, and what is wrong with it named
    const many = `prompt=p&${Array.from({ length: 999 }, (_, i) => `k${i}=0`).join("&")}`;
    expect((await expectEnvelope(await post(many, "application/x-www-form-urlencoded"), 400)).message).toStartWith("Unknown field 'k");
  });
});

describe("multipart file parts", () => {
  const png = () => encodeImage(new Uint8Array(4 * 4 * 3), 4, 4, "png");

  test("a text field sent as a file names the field, where it read as missing before", async () => {
    const prompt = new File(["a red circle"], "prompt.txt", { type: "text/plain" });
    const cases: [string, string][] = [
      ["/v1/videos", "Field 'prompt' cannot be a file upload; upload files as 'input_reference'"],
      ["/v1/images/edits", "Field 'prompt' cannot be a file upload; upload files as 'image'"],
      ["/v1/images", "Field 'prompt' cannot be a file upload"],
    ];
    for (const [path, message] of cases) {
      expect(await expectEnvelope(await postForm(path, [["prompt", prompt]]), 400)).toMatchObject({ param: "prompt", message });
    }
  });

  test("an upload under a field name in another case points to the field meant", async () => {
    const res = await postForm("/v1/videos", [["prompt", "p"], ["Input_Reference", new File([await png()], "a.png", { type: "image/png" })]]);
    expect(await expectEnvelope(res, 400)).toMatchObject({
      param: "Input_Reference",
      message: "Field 'Input_Reference' does not accept file uploads (did you mean 'input_reference'?)",
    });
  });
});

describe("images beyond plain stills", () => {
  /** The test pipeline's edit shows the reference outside its ring: the output's corner is the input's. */
  async function editCorner(file: File): Promise<number[]> {
    const res = await postForm("/v1/images/edits", [["prompt", "a white ring"], ["size", "32x32"], ["image", file]]);
    expect(res.status).toBe(200);
    const image = await decodeImage(Buffer.from((await res.json()).data[0].b64_json, "base64"), { maxPixels: 1 << 20, param: "t" });
    return [...image.data.subarray(0, 3)];
  }
  const rgba = (r: number, g: number, b: number, a: number) => {
    const px = new Uint8Array(16 * 16 * 4);
    for (let i = 0; i < px.length; i += 4) px.set([r, g, b, a], i);
    return encodeImage(px, 16, 16, "png");
  };

  test("transparency is composited over black, never the colour hidden under it", async () => {
    expect(await editCorner(new File([await rgba(0, 220, 0, 0)], "clear.png"))).toEqual([0, 0, 0]);
    expect(await editCorner(new File([await rgba(0, 220, 0, 128)], "half.png"))).toEqual([0, 110, 0]);
    expect(await editCorner(new File([await rgba(0, 220, 0, 255)], "opaque.png"))).toEqual([0, 220, 0]);
  });

  test("an animated WebP starts from its first frame (it was refused as 'Decoding error')", async () => {
    const webp = await animatedWebp(16, 16, [solid(16, 16, [230, 0, 0, 255]), solid(16, 16, [0, 0, 230, 255])]);
    const [r, g, b] = await editCorner(new File([webp], "sticker.webp", { type: "image/webp" }));
    expect(r!).toBeGreaterThan(200);
    expect(g! + b!).toBeLessThan(30);
    const res = await postForm("/v1/videos", [["prompt", "p"], ["size", "32x32"], ["num_frames", "1"], ["input_reference", new File([webp], "a.webp")]]);
    expect(res.status).toBe(200);
  });

  test("print and other formats are refused by name", async () => {
    // the headers of an Adobe CMYK JPEG: APP14, a frame header (SOF0) of four components
    const cmyk = "data:image/jpeg;base64,/9j/7gAOQWRvYmUAZAAAAAAA/8AAFAgACAAIBEMRAE0RAFkRAEsRAP/Z";
    const error = await expectEnvelope(await postJson("/v1/videos", JSON.stringify({ prompt: "p", image_reference: { image_url: cmyk } })), 400);
    expect(error.param).toBe("image_reference.image_url");
    expect(error.message).toContain("this is a CMYK JPEG");
    const gif = new File([Buffer.from("GIF89a\x01\x00\x01\x00\x00\x00\x00;")], "a.png", { type: "image/png" });
    const refused = await expectEnvelope(await postForm("/v1/images/edits", [["prompt", "p"], ["image", gif]]), 400);
    expect(refused).toMatchObject({ param: "image", message: "image: this is a GIF image; send a PNG, JPEG or WebP image" });
  });

  test("after all of it a normal request still works", async () => {
    const res = await postJson("/v1/images", JSON.stringify({ prompt: "a red circle", size: "32x32" }));
    expect(res.status).toBe(200);
  });
});
