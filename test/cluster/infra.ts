// A cluster on loopback for the tests: a real redis-server and a real S3-protocol server (s3rver) on
// free ports, and kino nodes as processes (`kino serve` with the tests' pipeline) joined to both.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnServer, type ServerProcess } from "../helpers/server-process.ts";

/** Why the cluster tests cannot run here, or null when redis-server is installed (CI installs it). */
export const missingRedis: string | null = Bun.which("redis-server") ? null : "redis-server is not installed (apt-get install redis-server)";

export const S3_CREDENTIALS = { KINO_S3_ACCESS_KEY_ID: "S3RVER", KINO_S3_SECRET_ACCESS_KEY: "S3RVER" };
export const BUCKET = "kino";
const S3RVER = join(import.meta.dir, "../../node_modules/s3rver/bin/s3rver.js");

export async function freePort(): Promise<number> {
  const probe = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const port = probe.port!;
  probe.stop(true);
  return port;
}

export interface Infra {
  redisUrl: string;
  s3Endpoint: string;
  dir: string;
  /** Overrides that make a node of this cluster (each node gets its own output_dir). */
  nodeArgs(extra?: Record<string, string>): string[];
  /** Starts a node; stopped with the rest by stop(). */
  node(extra?: Record<string, string>): Promise<ServerProcess>;
  stop(): Promise<void>;
}

export async function startInfra(): Promise<Infra> {
  const dir = mkdtempSync(join(tmpdir(), "kino-cluster-"));
  const redisPort = await freePort();
  const redis = Bun.spawn(["redis-server", "--port", String(redisPort), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], { stdout: "ignore", stderr: "ignore" });
  const redisUrl = `redis://127.0.0.1:${redisPort}`;
  await waitFor(async () => {
    (await Bun.connect({ hostname: "127.0.0.1", port: redisPort, socket: { data() {} } })).end();
    return true;
  }, "redis-server");
  // Its own process, as an operator's S3 would be: a fault in it cannot take the test runner down.
  const s3Port = await freePort();
  const s3 = Bun.spawn([process.execPath, S3RVER, "-d", join(dir, "s3"), "-a", "127.0.0.1", "-p", String(s3Port), "--silent", "--configure-bucket", BUCKET], { stdout: "ignore", stderr: "inherit" });
  const s3Endpoint = `http://127.0.0.1:${s3Port}`;
  await waitFor(async () => (await fetch(`${s3Endpoint}/`)).ok, "s3rver");
  const nodes: ServerProcess[] = [];
  let count = 0;
  const nodeArgs = (extra: Record<string, string> = {}) =>
    Object.entries({
      "cluster.redis_url": redisUrl,
      "cluster.storage.kind": "s3",
      "cluster.storage.endpoint": s3Endpoint,
      "cluster.storage.bucket": BUCKET,
      "cluster.stall_ms": "2000",
      ...extra,
    }).flatMap(([key, value]) => [`--${key}`, value]);
  return {
    redisUrl,
    s3Endpoint,
    dir,
    nodeArgs,
    async node(extra = {}) {
      const node = await spawnServer(join(dir, `node-${count++}`), { args: nodeArgs(extra), env: S3_CREDENTIALS });
      nodes.push(node);
      return node;
    },
    async stop() {
      await Promise.all(nodes.map((n) => n.kill()));
      for (const server of [s3, redis]) {
        server.kill(9);
        await server.exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function waitFor(check: () => Promise<unknown>, what: string): Promise<void> {
  const deadline = Date.now() + 10000;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await Bun.sleep(50);
  }
  throw new Error(`${what} did not start`);
}
