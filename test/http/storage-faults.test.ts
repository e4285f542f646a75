// Disk faults under output_dir never end the server: each request that hits one fails with a message
// that names what could not be written and why, without server paths, and the server goes on answering.
// Real file systems, not mocks: a read-only or a full tmpfs mounted in a user namespace of the server's
// own, permissions enforced for an unprivileged user, a file in the way, a folder removed mid-job.
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { canUseMountNamespaces, spawnServer, type ServerProcess } from "../helpers/server-process.ts";
import { expectEnvelope, waitForJob } from "../helpers/server.ts";

const FOLDERS = ["videos", "sync", "images"];
const mounts = canUseMountNamespaces();
const root = mkdtempSync(join(tmpdir(), "kino-faults-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const post = (server: ServerProcess, path: string, body: unknown) =>
  fetch(`${server.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

/** Every way of writing output fails with `reason`, and the server is alive afterwards. */
async function expectWritesFail(server: ServerProcess, outputDir: string, reason: RegExp): Promise<void> {
  const job = await (await post(server, "/v1/videos", { prompt: "x", size: "64x64", num_frames: 5 })).json();
  expect(job.status).toBe("queued");
  const failed = await waitForJob(server.url, job.id);
  expect(failed.status).toBe("failed");
  expect(failed.error.message).toMatch(/^Could not write the video file under output_dir: /);
  expect(failed.error.message).toMatch(reason);

  const sync = await expectEnvelope(await post(server, "/v1/videos/sync", { prompt: "x", size: "64x64", num_frames: 5 }), 500);
  expect(sync.message).toMatch(reason);
  const images = await expectEnvelope(await post(server, "/v1/images", { prompt: "x", size: "64x64" }), 500);
  expect(images.message).toMatch(/Could not write image 1 of 1 under output_dir/);
  expect(images.message).toMatch(reason);
  for (const message of [failed.error.message, sync.message, images.message]) expect(message).not.toContain(outputDir);

  expect((await fetch(`${server.url}/health`)).status).toBe(200);
  expect(server.proc.exitCode).toBeNull();
}

/** Starts a server on a fresh output_dir, then breaks it with `fault` (the start-up cleanup would mend some faults). */
async function withServer(name: string, fault: (outputDir: string) => void, opts: Parameters<typeof spawnServer>[1], check: (server: ServerProcess, outputDir: string) => Promise<void>) {
  const outputDir = join(root, name);
  mkdirSync(outputDir);
  const server = await spawnServer(outputDir, opts);
  fault(outputDir);
  try {
    await check(server, outputDir);
  } finally {
    await server.kill();
  }
}

const tmpfsOver = (outputDir: string, options: string) =>
  FOLDERS.map((f) => `mkdir -p '${outputDir}/${f}' && mount -t tmpfs -o ${options} tmpfs '${outputDir}/${f}'`).join("\n");

describe.skipIf(!mounts)(`file-system faults${mounts ? "" : " (skipped: this machine refuses unshare --user --mount)"}`, () => {
  test("EROFS: output folders on a read-only file system", () =>
    withServer("erofs", () => {}, { namespace: "root", setup: `${tmpfsOver(join(root, "erofs"), "size=1m")}\n${FOLDERS.map((f) => `mount -o remount,ro '${join(root, "erofs", f)}'`).join("\n")}` },
      (server, dir) => expectWritesFail(server, dir, /read-only \(EROFS\)|read-only file system|\(EROFS\)/)));

  test("ENOSPC: output folders on a full file system", () => {
    // One small tmpfs, filled beside the output folders (the files in them are the store's to clean).
    const dir = join(root, "enospc");
    const setup = [`mkdir -p '${dir}/.disk' && mount -t tmpfs -o size=64k tmpfs '${dir}/.disk'`, `head -c 1048576 /dev/zero > '${dir}/.disk/fill' 2>/dev/null || true`,
      ...FOLDERS.map((f) => `mkdir -p '${dir}/.disk/${f}' '${dir}/${f}' && mount --bind '${dir}/.disk/${f}' '${dir}/${f}'`)].join("\n");
    return withServer("enospc", () => {}, { namespace: "root", setup }, (server, outputDir) => expectWritesFail(server, outputDir, /no space is left on the device \(ENOSPC\)/));
  });
});

// Without a namespace of its own, root writes anywhere: only an unprivileged user can see EACCES.
const permissionsApply = mounts || process.getuid?.() !== 0;
test.skipIf(!permissionsApply)(`EACCES: output folders the server's user may not write${permissionsApply ? "" : " (skipped: root without user namespaces)"}`, () =>
  withServer("eacces", (dir) => FOLDERS.forEach((f) => (mkdirSync(join(dir, f), { recursive: true }), chmodSync(join(dir, f), 0o555))),
    // An unprivileged user in a namespace of its own: permissions apply even when the test runs as root.
    { namespace: mounts ? "user" : undefined },
    (server, dir) => expectWritesFail(server, dir, /permission denied \(EACCES\)/)));

test("ENOTDIR/EEXIST: a plain file where an output folder belongs", () =>
  withServer("enotdir", (dir) => FOLDERS.forEach((f) => (rmSync(join(dir, f), { recursive: true, force: true }), writeFileSync(join(dir, f), "in the way"))), {},
    (server, dir) => expectWritesFail(server, dir, /a file is in the way of a folder \((ENOTDIR|EEXIST)\)/)));

test("a folder removed while a job runs: the job still completes, the server goes on", () =>
  withServer("removed", () => {}, {}, async (server, dir) => {
    const job = await (await post(server, "/v1/videos", { prompt: "x", size: "64x64", num_frames: 5, extra_params: { step_delay_ms: 300 } })).json();
    while ((await (await fetch(`${server.url}/v1/videos/${job.id}`)).json()).status !== "in_progress") await Bun.sleep(20);
    rmSync(join(dir, "videos"), { recursive: true, force: true });
    const finished = await waitForJob(server.url, job.id);
    expect(finished.status).toBe("completed");
    expect((await fetch(`${server.url}/v1/videos/${job.id}/content`)).status).toBe(200);
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
  }));
