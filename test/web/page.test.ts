// The page at `/`, driven in headless Chromium against a live server: a REST clip from prompt to the
// last frame (with its progress on the way) and out of the library again; a realtime session played
// through MediaSource, steered with a prompt update that the timeline follows from start to completion;
// the API-key prompt when the server has a key; and /docs, the API reference rendered from /openapi.json.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import { artifactPath, hasChromium, launchChromium } from "../helpers/browser.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";

let server: TestServer;
let browser: Browser;
beforeAll(async () => {
  server = await startTestServer();
  if (hasChromium) browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await server.close();
});

describe("the page and its files", () => {
  test("/ and every module it loads are served with their content types", async () => {
    const page = await fetch(`${server.url}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toStartWith("text/html");
    const html = await page.text();
    expect(html).toContain('<script type="module" src="/web/main.js">');
    const css = await fetch(`${server.url}/web/app.css`);
    expect(css.headers.get("content-type")).toStartWith("text/css");
    // Follow the import graph from main.js: every module the page needs must be served as JavaScript.
    const seen = new Set<string>();
    const pending = ["/web/main.js"];
    while (pending.length) {
      const path = pending.pop()!;
      if (seen.has(path)) continue;
      seen.add(path);
      const res = await fetch(`${server.url}${path}`);
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
      expect(res.headers.get("content-type")).toStartWith("text/javascript");
      for (const [, name] of (await res.text()).matchAll(/from "\.\/([\w-]+\.js)"/g)) pending.push(`/web/${name}`);
    }
    expect(seen.size).toBeGreaterThanOrEqual(8);
  });
});

async function openPage(hash = ""): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  const errors: string[] = [];
  page.on("pageerror", (err) => errors.push(String(err)));
  page.on("console", (m) => void (m.type() === "error" && errors.push(m.text())));
  await page.goto(`${server.url}/${hash}`);
  await page.waitForSelector("body[data-ready=true]", { timeout: 10000 });
  return { page, errors };
}

/** Sets a range input the way a drag would (Playwright cannot fill ranges). */
const setRange = (page: Page, selector: string, value: number) =>
  page.$eval(selector, (el, v) => {
    (el as HTMLInputElement).value = String(v);
    el.dispatchEvent(new Event("input", { bubbles: true }));
  }, value);

/** The RGB of a pixel of what a <video> shows now. */
const pixel = (page: Page, selector: string, x: number, y: number) =>
  page.$eval(selector, (el, [px, py]) => {
    const video = el as HTMLVideoElement;
    const canvas = document.createElement("canvas");
    canvas.width = video.videoWidth;
    canvas.height = video.videoHeight;
    const g = canvas.getContext("2d")!;
    g.drawImage(video, 0, 0);
    return Array.from(g.getImageData(px!, py!, 1, 1).data.slice(0, 3));
  }, [x, y]);

describe.skipIf(!hasChromium)("in Chromium", () => {
  test("Generate: progress climbs, the clip plays to its end, the library lists it and deletes it", async () => {
    const { page, errors } = await openPage();
    // Record every progress value the stage shows.
    await page.evaluate(() => {
      const seen: number[] = ((window as any).progressSeen = []);
      const overlay = document.querySelector(".progress-overlay")!;
      new MutationObserver(() => seen.push(Number(overlay.getAttribute("data-progress")))).observe(overlay, { attributeFilter: ["data-progress"] });
    });
    await page.fill("#gen-prompt", "a yellow square moving right on a blue background");
    await page.click("[data-size='272x480']");
    await page.click("details.advanced summary");
    await page.fill("#gen-steps", "8");
    await page.fill("#gen-extra-step_delay_ms", "150"); // the test model's knob, offered from its card
    await page.click("#gen-submit");

    await page.waitForSelector("#gen-video[data-state=ended]", { timeout: 20000 });
    await page.screenshot({ path: artifactPath("web-generate.png") });
    const progress: number[] = await page.evaluate(() => (window as any).progressSeen);
    const intermediate = progress.filter((p) => p > 0 && p < 100);
    expect(intermediate.length).toBeGreaterThanOrEqual(2);
    expect(progress).toEqual([...progress].sort((a, b) => a - b)); // never backwards

    const id = (await page.getAttribute("#generate .stage", "data-job-id"))!;
    const played = await page.$eval("#gen-video", (el) => {
      const v = el as HTMLVideoElement;
      return { w: v.videoWidth, h: v.videoHeight, duration: v.duration, frames: v.getVideoPlaybackQuality().totalVideoFrames, error: v.error?.code ?? null };
    });
    expect(played).toMatchObject({ w: 272, h: 480, error: null });
    expect(played.duration).toBeCloseTo(33 / 16, 1);
    expect(played.frames).toBeGreaterThan(20);
    // The last frame shows the prompt's blue background.
    const [r, , b] = await pixel(page, "#gen-video", 2, 2);
    expect(b).toBeGreaterThan(150);
    expect(r).toBeLessThan(90);

    const card = page.locator(`.job[data-job-id="${id}"]`);
    expect(await card.getAttribute("data-status")).toBe("completed");
    expect(await card.locator(".job-prompt").textContent()).toBe("a yellow square moving right on a blue background");
    await card.hover();
    await card.locator(".delete").click(); // first click asks…
    expect(await card.locator(".delete").textContent()).toBe("Delete?");
    await card.locator(".delete").click(); // …the second deletes
    await card.waitFor({ state: "detached", timeout: 5000 });
    expect((await fetch(`${server.url}/v1/videos/${id}`)).status).toBe(404);
    expect(await page.getAttribute("#generate .stage", "data-has-video")).toBe("false");
    expect(errors).toEqual([]);
    await page.close();
  }, 30000);

  test("the library pages through GET /v1/videos with Load more, newest first", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 11; i++) {
      const res = await fetch(`${server.url}/v1/videos`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ prompt: `clip ${i}: a white ring on a black background`, size: "64x48", num_frames: 1 }),
      });
      ids.push((await res.json()).id);
    }
    const { page, errors } = await openPage();
    const cards = page.locator(".job");
    await page.waitForFunction(() => document.querySelectorAll(".job").length === 9);
    expect(await page.isVisible(".load-more")).toBe(true);
    await page.click(".load-more");
    await page.waitForFunction((n) => document.querySelectorAll(".job").length === n, ids.length);
    expect(await page.isVisible(".load-more")).toBe(false);
    expect(await cards.evaluateAll((els) => els.map((el) => el.getAttribute("data-job-id")))).toEqual(ids.toReversed());
    expect(errors).toEqual([]);
    await page.close();
  });

  test("Live: MediaSource plays the session, a prompt update is acknowledged and the timeline shows it start, run and complete", async () => {
    const { page, errors } = await openPage("#live");
    await page.fill("#live-prompt", "a red circle moving right on a black background");
    await setRange(page, "#live-seconds", 3); // 49 frames: 13 chunks of 4 frames, paced to playback
    await page.click("#live-submit");

    await page.waitForFunction(() => Number(document.querySelector(".timeline")!.getAttribute("data-chunks-received")) >= 2, null, { timeout: 10000 });
    await page.fill("#live-steer-prompt", "a green square bouncing on a white background");
    await setRange(page, "#live-transition", 2);
    await page.click("#live-steer-send");
    await page.waitForSelector(".log-item[data-kind=queued][data-event-id=ui-1]", { timeout: 5000 });
    await page.waitForSelector(".tl-event[data-event-id=ui-1][data-status=completed]", { timeout: 10000 });
    await page.screenshot({ path: artifactPath("web-live.png") });

    await page.waitForSelector("#live[data-session=done]", { timeout: 10000 });
    await page.waitForSelector("#live-video[data-state=ended]", { timeout: 10000 });
    await page.screenshot({ path: artifactPath("web-live-done.png") });

    // The chunk strip: 13 chunks received; ui-1 started in one, completed two chunks later.
    const cells = await page.$$eval(".tl-chunks .tl-cell", (els) =>
      els.map((el) => ({ state: el.getAttribute("data-state"), started: el.getAttribute("data-started"), active: el.getAttribute("data-active"), completed: el.getAttribute("data-completed"), progress: el.getAttribute("data-progress") })),
    );
    expect(cells).toHaveLength(13);
    expect(cells.every((c) => c.state !== "pending")).toBe(true);
    const start = cells.findIndex((c) => c.started === "ui-1");
    expect(start).toBeGreaterThanOrEqual(2);
    expect(cells[start]).toMatchObject({ active: "ui-1", progress: "0.500" });
    expect(cells[start + 1]).toMatchObject({ active: "ui-1", completed: "ui-1", progress: "1.000" });
    // The event's row: the transition bar in exactly those two chunks, ✓ in the second.
    const row = await page.$$eval(".tl-event[data-event-id=ui-1] .tl-cell", (els) => els.map((el) => [...el.classList].filter((c) => c !== "tl-cell").sort().join(" ")));
    expect(row.filter(Boolean)).toEqual(["active started", "active completed"]);
    expect(row.indexOf("active started")).toBe(start);

    const log = await page.$$eval(".log-item", (els) => els.map((el) => el.getAttribute("data-kind")));
    expect(log).toEqual(["session.start", "video.start", "interaction", "queued", "started", "completed", "session.done"]);
    const video = await page.$eval("#live-video", (el) => {
      const v = el as HTMLVideoElement;
      return { duration: v.duration, frames: v.getVideoPlaybackQuality().totalVideoFrames, error: v.error?.code ?? null };
    });
    expect(video.error).toBeNull();
    expect(video.duration).toBeCloseTo(49 / 16, 1);
    expect(video.frames).toBeGreaterThan(40);
    expect(await page.getAttribute("#live .stage", "data-codec")).toMatch(/^avc1\.[0-9A-F]{6}$/);
    // The update reached the screen: the last frame has the white background.
    const [r, g, b] = await pixel(page, "#live-video", 2, 2);
    expect(Math.min(r!, g!, b!)).toBeGreaterThan(200);
    expect(errors).toEqual([]);
    await page.close();
  }, 30000);

  test("Live: Stop ends the session with session.done stopped", async () => {
    const { page } = await openPage("#live");
    await page.fill("#live-prompt", "a cyan ring bouncing on a gray background");
    await page.click("#live-submit");
    await page.waitForFunction(() => Number(document.querySelector(".timeline")!.getAttribute("data-chunks-received")) >= 2, null, { timeout: 10000 });
    await page.click("#live-stop");
    await page.waitForSelector("#live[data-session=done]", { timeout: 10000 });
    expect(await page.getAttribute("#live", "data-stopped")).toBe("true");
    expect(await page.textContent(".log-item[data-kind='session.done']")).toContain("stopped");
    const received = Number(await page.getAttribute(".timeline", "data-chunks-received"));
    expect(received).toBeLessThan(41);
    await page.close();
  }, 20000);
});

describe.skipIf(!hasChromium)("with server.api_key", () => {
  test("the page is public; it asks for the key once and then uses it on REST and the WebSocket", async () => {
    const keyed = await startTestServer({ "server.api_key": "sk-web-test" });
    try {
      expect((await fetch(`${keyed.url}/`)).status).toBe(200);
      expect((await fetch(`${keyed.url}/web/main.js`)).status).toBe(200);
      expect((await fetch(`${keyed.url}/v1/models`)).status).toBe(401);

      const page = await browser.newPage();
      await page.goto(`${keyed.url}/#live`);
      await page.waitForSelector("#key-dialog[open]", { timeout: 10000 });
      await page.fill("#key-input", "sk-web-test");
      await page.click("#key-dialog button[value=save]");
      await page.waitForSelector("body[data-ready=true]", { timeout: 10000 });
      expect(await page.evaluate(() => localStorage.getItem("kino.api_key"))).toBe("sk-web-test");

      await page.fill("#live-prompt", "a white circle still on a black background");
      await setRange(page, "#live-seconds", 1);
      await page.click("#live-submit");
      await page.waitForSelector("#live[data-session=done]", { timeout: 10000 });
      expect(await page.getAttribute("#live", "data-stopped")).toBe("false");

      // A reload does not ask again.
      await page.reload();
      await page.waitForSelector("body[data-ready=true]", { timeout: 10000 });
      expect(await page.$("#key-dialog[open]")).toBeNull();
      await page.close();
    } finally {
      await keyed.close();
    }
  }, 30000);
});

describe("/docs", () => {
  test.skipIf(!hasChromium)("the API reference lists every operation with its request fields", async () => {
    const page = await browser.newPage();
    await page.goto(`${server.url}/docs`);
    await page.waitForSelector("details.op");
    const summaries = await page.$$eval("details.op summary", (nodes) => nodes.map((n) => n.textContent ?? ""));
    expect(summaries.some((s) => s.includes("POST") && s.includes("/v1/videos") && s.includes("Submit"))).toBe(true);
    expect(summaries.some((s) => s.includes("RealtimeChunkMetadata"))).toBe(true);
    await page.click("details.op summary:has-text('Submit an asynchronous video job')");
    expect(await page.textContent("details.op[open] table", { timeout: 5000 })).toContain("prompt");
    await page.screenshot({ path: artifactPath("docs.png"), fullPage: false });
    await page.close();
  });
});
