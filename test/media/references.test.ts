import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { InvalidMediaError } from "../../src/media/errors.ts";
import { decodeImage, encodeImage } from "../../src/media/images.ts";
import { materializeReferences, type ReferenceInput, type ReferencePolicy } from "../../src/media/references.ts";

const W = 6;
const H = 4;
const RGBA = new Uint8Array(W * H * 4).map((_, i) => (i % 4 === 3 ? 255 : (i * 29) % 256));
const SECRET = "TOP-SECRET-CONTENTS";
// The smallest shapes the sniffers accept: an ftyp box, a RIFF/WAVE header.
const MP4 = new Uint8Array([0, 0, 0, 16, ...Buffer.from("ftypisom"), 0, 0, 2, 0, 0, 0, 0, 8, ...Buffer.from("mdat")]);
const WAV = new Uint8Array([...Buffer.from("RIFF"), 36, 0, 0, 0, ...Buffer.from("WAVEfmt "), 16, 0, 0, 0]);

let scratch: string;
let root: string;
let outside: string;
let png: Uint8Array<ArrayBuffer>;
let jpeg: Uint8Array;

beforeAll(async () => {
  scratch = mkdtempSync(path.join(tmpdir(), "kino-refs-"));
  root = path.join(scratch, "root");
  outside = path.join(scratch, "outside");
  mkdirSync(path.join(root, "sub"), { recursive: true });
  mkdirSync(outside);
  png = await encodeImage(RGBA, W, H, "png");
  jpeg = await encodeImage(RGBA, W, H, "jpeg");
  writeFileSync(path.join(root, "frame.png"), png);
  writeFileSync(path.join(root, "clip.mp4"), MP4);
  writeFileSync(path.join(outside, "secret.png"), SECRET);
  symlinkSync(path.join(outside, "secret.png"), path.join(root, "link.png"));
});
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

let ids = 0;
const newId = () => `req_${++ids}`;

function policy(overrides: Partial<ReferencePolicy> = {}): ReferencePolicy {
  return {
    outputDir: path.join(scratch, "out"),
    allowedLocalRoots: [root],
    remote: { enabled: false, allowHosts: [], maxBytes: 1_000_000, timeoutMs: 2_000 },
    maxBytes: 1_000_000,
    maxPixels: 1_000_000,
    ...overrides,
  };
}

const image = (value: string, param = "image_reference[0].image_url"): ReferenceInput => ({
  media: "image",
  source: { kind: "string", value },
  param,
});
const base64Png = () => `data:image/png;base64,${Buffer.from(png).toString("base64")}`;
const framePath = () => path.join(root, "frame.png");

async function rejection(id: string, inputs: ReferenceInput[], p: ReferencePolicy): Promise<InvalidMediaError> {
  const error = await materializeReferences(id, inputs, p).then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(InvalidMediaError);
  // Whatever failed, the request's folder is gone.
  expect(existsSync(path.join(p.outputDir, "references", id))).toBe(false);
  return error as InvalidMediaError;
}

async function expectRejected(inputs: ReferenceInput[], p: ReferencePolicy, message: RegExp, param = inputs.at(-1)!.param) {
  const error = await rejection(newId(), inputs, p);
  expect(error.param).toBe(param);
  expect(error.message).toMatch(message);
  expect(error.message).not.toContain(SECRET);
}

/** The materialized image is a PNG beside the request id, holding the reference's pixels. */
async function expectImage(id: string, ref: { kind: string; path: string; width?: number; height?: number }, p = policy()) {
  expect(ref).toMatchObject({ kind: "image", width: W, height: H });
  expect(path.dirname(ref.path)).toBe(path.resolve(p.outputDir, "references", id));
  expect(ref.path.endsWith(".png")).toBe(true);
  const written = new Uint8Array(await Bun.file(ref.path).arrayBuffer());
  expect([...written.subarray(1, 4)]).toEqual([...Buffer.from("PNG")]);
  return decodeImage(written, { maxPixels: 1e6, param: "x" });
}

describe("data URLs", () => {
  test("base64", async () => {
    const id = newId();
    const [ref] = await materializeReferences(id, [image(base64Png())], policy());
    expect([...(await expectImage(id, ref!)).data]).toEqual([...RGBA]);
  });

  test("percent-encoded (not base64), and a jpeg is stored as png", async () => {
    const escape = (b: number) => {
      const char = String.fromCharCode(b);
      return /[A-Za-z0-9]/.test(char) ? char : `%${b.toString(16).padStart(2, "0")}`;
    };
    const encoded = [...jpeg].map(escape).join("");
    const id = newId();
    const [ref] = await materializeReferences(id, [image(`data:image/jpeg,${encoded}`)], policy());
    await expectImage(id, ref!);
  });

  test("the size cap applies to the decoded size", async () => {
    const dataUrl = base64Png();
    const tooLarge = new RegExp(`holds ${png.length} bytes, over the limit of ${png.length - 1}`);
    await expectRejected([image(dataUrl)], policy({ maxBytes: png.length - 1 }), tooLarge);
    await materializeReferences(newId(), [image(dataUrl)], policy({ maxBytes: png.length }));
  });

  test("bad base64, no comma, and bytes that are not an image", async () => {
    await expectRejected([image("data:image/png;base64,@@@@")], policy(), /not valid base64/);
    await expectRejected([image("data:image/png;base64")], policy(), /malformed data: URL/);
    await expectRejected([image("data:text/plain,hello")], policy(), /not a PNG, JPEG or WebP image/);
  });
});

describe("local paths", () => {
  test("a file under an allowed root, as a path and as a file: URL", async () => {
    const id = newId();
    const refs = await materializeReferences(id, [image(framePath()), image(pathToFileURL(framePath()).href)], policy());
    expect(refs).toHaveLength(2);
    for (const ref of refs) expect([...(await expectImage(id, ref)).data]).toEqual([...RGBA]);
    expect(new Set(refs.map((r) => r.path)).size).toBe(2);
  });

  test("a relative root and a path with a harmless '..' inside the root", async () => {
    const relativeRoot = path.relative(process.cwd(), root);
    const id = newId();
    const inside = image(path.join(root, "sub", "..", "frame.png"));
    const [ref] = await materializeReferences(id, [inside], policy({ allowedLocalRoots: [relativeRoot] }));
    await expectImage(id, ref!);
  });

  test("outside every root", async () => {
    await expectRejected([image(path.join(outside, "secret.png"))], policy(), /outside the allowed directories/);
    const fileUrl = pathToFileURL(path.join(outside, "secret.png")).href;
    await expectRejected([image(fileUrl)], policy(), /outside the allowed directories/);
  });

  test("'..' traversal out of the root", async () => {
    await expectRejected([image(`${root}/../outside/secret.png`)], policy(), /outside the allowed directories/);
    await expectRejected([image(`${root}/sub/../../outside/secret.png`)], policy(), /outside the allowed directories/);
  });

  test("a symlink inside the root that points outside", async () => {
    await expectRejected([image(path.join(root, "link.png"))], policy(), /through a symlink\) outside the allowed directories/);
  });

  test("no roots configured rejects every local path", async () => {
    await expectRejected([image(framePath())], policy({ allowedLocalRoots: [] }), /local file paths are not allowed/);
  });

  test("missing files, directories, oversized files", async () => {
    await expectRejected([image(path.join(root, "nope.png"))], policy(), /does not exist/);
    await expectRejected([image(path.join(root, "sub"))], policy(), /not a regular file/);
    await expectRejected([image(framePath())], policy({ maxBytes: 10 }), /over the limit of 10/);
  });
});

describe("remote URLs", () => {
  let server: ReturnType<typeof Bun.serve>;
  let base: string;
  let hits = 0;
  beforeAll(() => {
    server = Bun.serve({
      hostname: "127.0.0.1", // loopback only
      port: 0,
      fetch: async (req) => {
        hits++;
        const { pathname } = new URL(req.url);
        if (pathname === "/frame.png") return new Response(png, { headers: { "content-type": "image/png" } });
        if (pathname === "/redirect") return Response.redirect("/frame.png", 302);
        if (pathname === "/redirect-away") return Response.redirect(`http://localhost:${server.port}/frame.png`, 302);
        if (pathname === "/declared-large") return new Response(new Uint8Array(50_000));
        if (pathname === "/endless") {
          // No Content-Length and no end: only the client's cap can stop it.
          return new Response(new ReadableStream({ pull: (c) => c.enqueue(new Uint8Array(16_384)) }));
        }
        if (pathname === "/slow") {
          await Bun.sleep(3_000);
          return new Response(png);
        }
        return new Response("not here", { status: 404 });
      },
    });
    base = `http://127.0.0.1:${server.port}`;
  });
  afterAll(() => server.stop(true));
  const remote = (r: Partial<ReferencePolicy["remote"]> = {}) =>
    policy({ remote: { enabled: true, allowHosts: ["127.0.0.1"], maxBytes: 20_000, timeoutMs: 2_000, ...r } });

  test("disabled by default, without any request made", async () => {
    const before = hits;
    await expectRejected([image(`${base}/frame.png`)], policy(), /remote URLs are not allowed/);
    expect(hits).toBe(before);
  });

  test("fetched when enabled and the host is allowed (or any host is)", async () => {
    for (const allowHosts of [["127.0.0.1"], [`127.0.0.1:${server.port}`], []]) {
      const id = newId();
      const [ref] = await materializeReferences(id, [image(`${base}/frame.png`)], remote({ allowHosts }));
      expect([...(await expectImage(id, ref!)).data]).toEqual([...RGBA]);
    }
  });

  test("a host not on the allowlist is never contacted", async () => {
    const before = hits;
    const notAllowed = /host '127.0.0.1:\d+' is not in the allowed remote hosts/;
    await expectRejected([image(`${base}/frame.png`)], remote({ allowHosts: ["images.example.com"] }), notAllowed);
    expect(hits).toBe(before);
  });

  test("redirects are followed only to allowed hosts", async () => {
    const id = newId();
    const [ref] = await materializeReferences(id, [image(`${base}/redirect`)], remote());
    await expectImage(id, ref!);
    await expectRejected([image(`${base}/redirect-away`)], remote(), /host 'localhost:\d+' is not in the allowed remote hosts/);
  });

  test("a body over the cap is abandoned", async () => {
    await expectRejected([image(`${base}/declared-large`)], remote(), /50000 bytes, over the limit of 20000/);
    const started = performance.now();
    await expectRejected([image(`${base}/endless`)], remote(), /over the limit of 20000 bytes/);
    expect(performance.now() - started).toBeLessThan(1_500);
  });

  test("timeout", async () => {
    await expectRejected([image(`${base}/slow`)], remote({ timeoutMs: 200 }), /timed out after 200 ms/);
  });

  test("non-2xx status", async () => {
    await expectRejected([image(`${base}/missing.png`)], remote(), /returned HTTP 404/);
  });
});

describe("schemes, media kinds, uploads and cleanup", () => {
  test("unsupported schemes", async () => {
    await expectRejected([image("ftp://example.com/frame.png")], policy(), /unsupported URL scheme 'ftp:'/);
    await expectRejected([image("javascript:alert(1)")], policy(), /unsupported URL scheme 'javascript:'/);
  });

  test("video must be MP4 and is stored as sent; audio by magic", async () => {
    const id = newId();
    const refs = await materializeReferences(
      id,
      [
        { media: "video", source: { kind: "string", value: path.join(root, "clip.mp4") }, param: "video_reference.video_url" },
        { media: "audio", source: { kind: "upload", bytes: WAV, filename: "a.wav" }, param: "audio_reference.audio_url" },
      ],
      policy(),
    );
    expect(refs.map((r) => [r.kind, path.extname(r.path)])).toEqual([["video", ".mp4"], ["audio", ".wav"]]);
    expect([...new Uint8Array(await Bun.file(refs[0]!.path).arrayBuffer())]).toEqual([...MP4]);
    expect([...new Uint8Array(await Bun.file(refs[1]!.path).arrayBuffer())]).toEqual([...WAV]);

    const notMp4: ReferenceInput = { media: "video", source: { kind: "upload", bytes: png }, param: "input_reference" };
    await expectRejected([notMp4], policy(), /video references must be MP4/);
    const audio = (bytes: Uint8Array): ReferenceInput => ({
      media: "audio",
      source: { kind: "upload", bytes },
      param: "audio_reference.audio_url",
    });
    await expectRejected([audio(png)], policy(), /WAV, MP3, OGG or FLAC/);
    await expectRejected([audio(new Uint8Array([0xff, 0xf1, 0x50, 0x80]))], policy(), /WAV, MP3, OGG or FLAC/); // ADTS AAC

    const mpegFrame = [0xff, 0xfb, 0x90, 0x64];
    const magic = [mpegFrame, [...Buffer.from("ID3"), 4, 0], [...Buffer.from("OggS"), 0], [...Buffer.from("fLaC"), 0]];
    const stored = await materializeReferences(newId(), magic.map((m) => audio(new Uint8Array(m))), policy());
    expect(stored.map((r) => path.extname(r.path))).toEqual([".mp3", ".mp3", ".ogg", ".flac"]);
  });

  test("uploads obey the size cap", async () => {
    const upload: ReferenceInput = { media: "image", source: { kind: "upload", bytes: png }, param: "input_reference" };
    await expectRejected([upload], policy({ maxBytes: 8 }), /upload is \d+ bytes, over the limit of 8/);
    const id = newId();
    await expectImage(id, (await materializeReferences(id, [upload], policy()))[0]!);
  });

  test("the pixel cap applies to references", async () => {
    await expectRejected([image(framePath())], policy({ maxPixels: W * H - 1 }), /over the limit of 23 pixels/);
  });

  test("a later failure removes what earlier references wrote", async () => {
    const id = newId();
    const p = policy();
    const inputs: ReferenceInput[] = [
      image(framePath(), "image_reference[0].image_url"),
      { media: "video", source: { kind: "upload", bytes: MP4 }, param: "video_reference.video_url" },
      image("data:image/png;base64,AAAA", "image_reference[1].image_url"),
    ];
    const error = await rejection(id, inputs, p);
    expect(error.param).toBe("image_reference[1].image_url");
    expect(readdirSync(path.join(p.outputDir, "references"))).not.toContain(id);
  });

  test("a server-side request id that is not a safe folder name is a bug, not bad media", async () => {
    const error = await materializeReferences("../escape", [image(framePath())], policy()).catch((e) => e);
    expect(error).toBeInstanceOf(Error);
    expect(error).not.toBeInstanceOf(InvalidMediaError);
  });
});
