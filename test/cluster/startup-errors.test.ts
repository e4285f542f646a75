// A node that cannot join its cluster refuses to start, naming what it could not use and why.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { TEST_PIPELINE } from "../helpers/server.ts";
import { freePort, missingRedis, S3_CREDENTIALS, startInfra, type Infra } from "./infra.ts";

const MAIN = join(import.meta.dir, "../../src/cli/main.ts");

/** Runs `kino serve` to its exit: its status and what it printed. */
async function serve(args: string[], env: Record<string, string> = {}, outputDir = "/tmp/kino-startup-never") {
  const proc = Bun.spawn(
    [process.execPath, MAIN, "serve", "--generator.model_path", TEST_PIPELINE, "--server.port", "0", "--server.host", "127.0.0.1", "--server.output_dir", outputDir, ...args],
    { stdout: "pipe", stderr: "pipe", env: { ...process.env, ...env } },
  );
  const timer = setTimeout(() => proc.kill(9), 30000);
  const [stderr, code] = [await new Response(proc.stderr).text(), await proc.exited];
  clearTimeout(timer);
  return { code, stderr: stderr.trim() };
}

test("an unknown cluster key fails before anything starts", async () => {
  const { code, stderr } = await serve(["--cluster.redis_url", "redis://127.0.0.1:1", "--cluster.nodeid", "x"]);
  expect(code).toBe(2);
  expect(stderr).toBe("kino: cluster.nodeid: unknown field");
});

describe.skipIf(!!missingRedis)("with redis-server and s3rver", () => {
  let infra: Infra;
  beforeAll(async () => {
    infra = await startInfra();
  });
  afterAll(() => infra?.stop());

  test("unreachable Redis: the URL (without its password) and the reason", async () => {
    const port = await freePort();
    const url = `redis://:secret@127.0.0.1:${port}`;
    const { code, stderr } = await serve(infra.nodeArgs({ "cluster.redis_url": url }), S3_CREDENTIALS, join(infra.dir, "bad-redis"));
    expect(code).toBe(1);
    expect(stderr).toStartWith(`kino: cannot reach Redis at redis://:***@127.0.0.1:${port} (cluster.redis_url): `);
    expect(stderr).not.toContain("secret");
  });

  test("wrong S3 credentials: the bucket, the endpoint and S3's own error", async () => {
    const env = { KINO_S3_ACCESS_KEY_ID: "nobody", KINO_S3_SECRET_ACCESS_KEY: "wrong" };
    const { code, stderr } = await serve(infra.nodeArgs(), env, join(infra.dir, "bad-s3"));
    expect(code).toBe(1);
    expect(stderr).toStartWith(`kino: cannot use the artifact store s3://kino/ (endpoint ${infra.s3Endpoint}) (cluster.storage): InvalidAccessKeyId`);
  });

  test("a missing bucket says so", async () => {
    const { code, stderr } = await serve(infra.nodeArgs({ "cluster.storage.bucket": "nope" }), S3_CREDENTIALS, join(infra.dir, "no-bucket"));
    expect(code).toBe(1);
    expect(stderr).toStartWith(`kino: cannot use the artifact store s3://nope/ (endpoint ${infra.s3Endpoint}) (cluster.storage): NoSuchBucket`);
  });
});
