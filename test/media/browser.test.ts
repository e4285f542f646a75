// Chromium plays what kino writes: the fragmented stream through MediaSource (init segment, then one
// IDR-led fragment per chunk, then the mfra trailer) and the complete MP4 in a <video> element.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import { H264Encoder } from "../../src/media/h264/encoder.ts";
import { buildMp4, FragmentedMp4Writer } from "../../src/media/mp4/index.ts";
import { artifactPath, hasChromium, launchChromium } from "../helpers/browser.ts";

const W = 160, H = 96, FPS = 24, FRAMES = 48, CHUNK = 8;

/** A horizontal colour sweep: frame i is a gradient whose hue moves from red (first) to blue (last). */
function frame(i: number): Uint8Array {
  const rgb = new Uint8Array(W * H * 3);
  const t = i / (FRAMES - 1);
  for (let y = 0; y < H; y++)
    for (let x = 0; x < W; x++) {
      const o = (y * W + x) * 3;
      rgb[o] = 230 * (1 - t);
      rgb[o + 1] = 40 + (x / W) * 60;
      rgb[o + 2] = 230 * t;
    }
  return rgb;
}

let browser: Browser;
beforeAll(async () => {
  if (hasChromium) browser = await launchChromium();
});
afterAll(() => browser?.close());

async function encode() {
  const encoder = await H264Encoder.create({ width: W, height: H, fps: FPS, qp: 24 });
  const samples = Array.from({ length: FRAMES }, (_, i) => encoder.encode(frame(i), { forceIdr: i % CHUNK === 0 }));
  const track = { width: W, height: H, fps: FPS, sps: encoder.sps, pps: encoder.pps };
  encoder.close();
  return { samples, track };
}

/** Serves the page and the parts, then returns what the page reported. */
async function play(page: string, parts: Uint8Array[], mime: string, screenshot: string) {
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(req) {
      const path = new URL(req.url).pathname;
      if (path === "/") return new Response(Bun.file(page), { headers: { "content-type": "text/html" } });
      if (path === "/manifest") return Response.json({ mime, parts: parts.map((_, i) => i) });
      const part = Number(path.split("/").pop());
      return new Response(parts[part], { headers: { "content-type": "video/mp4" } });
    },
  });
  try {
    const tab = await browser.newPage();
    await tab.goto(`http://127.0.0.1:${server.port}/`);
    await tab.waitForFunction(() => (window as any).result?.ended || (window as any).result?.errors.length, null, { timeout: 20000 });
    const result = await tab.evaluate(() => (window as any).result);
    await tab.screenshot({ path: artifactPath(screenshot) });
    await tab.close();
    return result;
  } finally {
    server.stop(true);
  }
}

describe.skipIf(!hasChromium)("Chromium", () => {
  // Chromium counts a frame as dropped when its compositor falls behind real time, which a busy machine
  // causes whatever the stream holds, so dropped frames are reported but not asserted: every frame must
  // reach the decoder (totalVideoFrames counts dropped ones too) and the last one must be on screen.
  test("MediaSource plays the fragmented stream: every frame decoded, no error, last frame blue", async () => {
    const { samples, track } = await encode();
    const writer = new FragmentedMp4Writer(track);
    const parts = [writer.initSegment()];
    for (let i = 0; i < FRAMES; i += CHUNK) parts.push(writer.fragment(samples.slice(i, i + CHUNK)));
    parts.push(writer.close());
    const result = await play(`${import.meta.dir}/../fixtures/mse-player.html`, parts, writer.mimeType, "mse-playback.png");
    // One assertion over the whole report, so that a failure prints everything the page saw.
    expect(result).toMatchObject({ supported: true, errors: [], frames: FRAMES, ended: true });
    expect(result.duration).toBeCloseTo(FRAMES / FPS, 2);
    const [r, , b] = result.lastPixel;
    expect(b).toBeGreaterThan(180);
    expect(r).toBeLessThan(60);
  });

  test("the complete MP4 plays to the end in <video>", async () => {
    const { samples, track } = await encode();
    const mp4 = buildMp4(track, samples);
    const server = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: (req) =>
        new URL(req.url).pathname === "/clip.mp4"
          ? new Response(mp4, { headers: { "content-type": "video/mp4" } })
          : new Response(
              `<video id="v" src="/clip.mp4" muted playsinline autoplay></video><script>
                const v = document.getElementById("v"); window.result = { errors: [] };
                v.onerror = () => window.result.errors.push(String(v.error?.code));
                v.onended = () => { window.result.ended = true; window.result.duration = v.duration; window.result.frames = v.getVideoPlaybackQuality().totalVideoFrames; };
              </script>`,
              { headers: { "content-type": "text/html" } },
            ),
    });
    try {
      const tab = await browser.newPage();
      await tab.goto(`http://127.0.0.1:${server.port}/`);
      await tab.waitForFunction(() => (window as any).result?.ended || (window as any).result?.errors.length, null, { timeout: 20000 });
      const result = await tab.evaluate(() => (window as any).result);
      await tab.screenshot({ path: artifactPath("mp4-playback.png") });
      expect(result.errors).toEqual([]);
      expect(result.duration).toBeCloseTo(FRAMES / FPS, 2);
      expect(result.frames).toBe(FRAMES);
    } finally {
      server.stop(true);
    }
  });
});
