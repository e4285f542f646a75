// Jobs outlive the server: after a crash (kill -9) and a restart on the same output_dir, finished jobs
// are listed, retrievable and downloadable; the job that was running is failed with "server
// restarted"; files that belong to no job are gone.
import { afterAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnServer } from "../helpers/server-process.ts";
import { waitForJob } from "../helpers/server.ts";

const outputDir = mkdtempSync(join(tmpdir(), "kino-restart-"));
afterAll(() => rmSync(outputDir, { recursive: true, force: true }));

const post = (url: string, path: string, body: unknown) =>
  fetch(`${url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

test("a restart keeps finished jobs and images, fails the interrupted one, and removes orphans", async () => {
  const first = await spawnServer(outputDir);
  let done: any, running: any, imageUrl: string;
  let mp4: ArrayBuffer;
  try {
    done = await (await post(first.url, "/v1/videos", { prompt: "a red circle", size: "64x64", num_frames: 5 })).json();
    expect((await waitForJob(first.url, done.id)).status).toBe("completed");
    mp4 = await (await fetch(`${first.url}/v1/videos/${done.id}/content`)).arrayBuffer();
    const images = await (await post(first.url, "/v1/images", { prompt: "a star", size: "64x64", response_format: "url" })).json();
    imageUrl = new URL(images.data[0].url, first.url).pathname;
    running = await (await post(first.url, "/v1/videos", { prompt: "slow", size: "64x64", num_frames: 5, extra_params: { step_delay_ms: 60000 } })).json();
    while ((await (await fetch(`${first.url}/v1/videos/${running.id}`)).json()).status !== "in_progress") await Bun.sleep(20);
  } finally {
    await first.kill();
  }
  mkdirSync(join(outputDir, "videos"), { recursive: true });
  writeFileSync(join(outputDir, "videos", "video_gen_orphan.mp4"), "no job owns this");

  const second = await spawnServer(outputDir);
  try {
    const list = await (await fetch(`${second.url}/v1/videos?order=asc`)).json();
    expect(list.data.map((j: any) => j.id)).toEqual([done.id, running.id]);
    const restored = await (await fetch(`${second.url}/v1/videos/${done.id}`)).json();
    expect(restored.status).toBe("completed");
    expect(await (await fetch(`${second.url}/v1/videos/${done.id}/content`)).arrayBuffer()).toEqual(mp4);
    const interrupted = await (await fetch(`${second.url}/v1/videos/${running.id}`)).json();
    expect(interrupted.status).toBe("failed");
    expect(interrupted.error.message).toContain("server restarted");
    expect((await fetch(`${second.url}${imageUrl}`)).status).toBe(200);
    expect(existsSync(join(outputDir, "videos", "video_gen_orphan.mp4"))).toBe(false);
    // The restored jobs can be deleted, files and all.
    expect((await fetch(`${second.url}/v1/videos/${done.id}`, { method: "DELETE" })).status).toBe(200);
    expect(existsSync(join(outputDir, "videos", `${done.id}.mp4`))).toBe(false);
  } finally {
    await second.kill();
  }
});
