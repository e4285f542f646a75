// Starts a kino server in this process (its workers are real child processes) on a free port.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadServeConfig } from "../../src/config/load.ts";
import { startServer, type RunningServer } from "../../src/http/server.ts";

export const TEST_PIPELINE = `pipeline:${join(import.meta.dir, "../fixtures/test-pipeline.ts")}`;

export interface TestServer extends RunningServer {
  outputDir: string;
  /** Stops the server and removes its output directory. */
  close(): Promise<void>;
}

/** `log` gets the server's log lines (the engine's worker restarts among them). */
export async function startTestServer(overrides: Record<string, string> = {}, log: (line: string) => void = () => {}): Promise<TestServer> {
  const outputDir = mkdtempSync(join(tmpdir(), "kino-test-"));
  const loaded = loadServeConfig({
    overrides: {
      "generator.model_path": TEST_PIPELINE,
      "server.port": "0",
      "server.host": "127.0.0.1",
      "server.output_dir": outputDir,
      ...overrides,
    },
  });
  const server = await startServer(loaded, log);
  return {
    ...server,
    outputDir,
    async close() {
      await server.stop();
      rmSync(outputDir, { recursive: true, force: true });
    },
  };
}

/** POST /v1/videos of a one-frame 64x64 job with `prompt` and `body`'s fields; the parsed answer. */
export async function createVideo(url: string, prompt: string, body: object = {}): Promise<any> {
  const res = await fetch(`${url}/v1/videos`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ prompt, size: "64x64", num_frames: 1, ...body }),
  });
  return res.json();
}

/** Polls a video job until it leaves queued/in_progress. */
export async function waitForJob(url: string, id: string, headers: Record<string, string> = {}, timeoutMs = 30000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const job = await (await fetch(`${url}/v1/videos/${id}`, { headers })).json();
    if (job.status === "completed" || job.status === "failed") return job;
    await Bun.sleep(50);
  }
  throw new Error(`job ${id} did not finish in ${timeoutMs} ms`);
}

/** Asserts an OpenAI error envelope and returns its error object. */
export async function expectEnvelope(res: Response, status: number): Promise<{ message: string; type: string; param: string | null; code: number }> {
  const body = await res.json();
  if (res.status !== status) throw new Error(`expected HTTP ${status}, got ${res.status}: ${JSON.stringify(body)}`);
  const { error } = body;
  if (!error || typeof error.message !== "string" || error.code !== status || !("param" in error) || typeof error.type !== "string") {
    throw new Error(`not an error envelope: ${JSON.stringify(body)}`);
  }
  return error;
}
