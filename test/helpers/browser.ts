// Headless Debian Chromium through playwright-core, with the flags this offline machine needs.
import { chromium, type Browser } from "playwright-core";
import { mkdirSync } from "node:fs";
import { join } from "node:path";

export const CHROMIUM = "/usr/bin/chromium";
export const hasChromium = await Bun.file(CHROMIUM).exists();

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
      "--autoplay-policy=no-user-gesture-required",
    ],
  });
}

/** Screenshots and other files a person may want to look at after a test run. */
export function artifactPath(name: string): string {
  const dir = join(import.meta.dir, "../../test-artifacts");
  mkdirSync(dir, { recursive: true });
  return join(dir, name);
}
