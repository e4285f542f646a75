// /docs renders the OpenAPI document in the browser, offline.
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Browser } from "playwright-core";
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
