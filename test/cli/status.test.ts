// `kino status` without a cluster to read: usage errors name what is missing (exit 2), and an
// unreachable Redis names the URL and the reason (exit 1). With a live cluster: test/cluster/nodes.test.ts.
import { expect, test } from "bun:test";
import { join } from "node:path";

const MAIN = join(import.meta.dir, "../../src/cli/main.ts");
const run = (...args: string[]) => {
  const proc = Bun.spawnSync([process.execPath, MAIN, "status", ...args], { env: { ...process.env, KINO_REDIS_PASSWORD: "" } });
  return { code: proc.exitCode, stdout: proc.stdout.toString(), stderr: proc.stderr.toString() };
};

test("an unreachable Redis: the URL, without its password, and the socket's reason; exit 1", async () => {
  const probe = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const port = probe.port!;
  probe.stop(true);
  const result = run("--redis", `redis://:secret@127.0.0.1:${port}`);
  expect(result.code).toBe(1);
  expect(result.stdout).toBe("");
  expect(result.stderr.trim()).toBe(`kino: cannot reach Redis at redis://:***@127.0.0.1:${port} (--redis): connect ECONNREFUSED 127.0.0.1:${port}`);
});

test("usage errors: no --redis, a URL that is not redis://, an unknown option; exit 2", () => {
  expect(run()).toMatchObject({ code: 2, stderr: "kino: kino status needs --redis URL (the cluster's cluster.redis_url)\n" });
  expect(run("--redis", "http://127.0.0.1:6379")).toMatchObject({ code: 2, stderr: 'kino: --redis must be a redis:// or rediss:// URL, not "http://127.0.0.1:6379"\n' });
  expect(run("--redis", "redis://127.0.0.1:1", "--nodes")).toMatchObject({ code: 2, stderr: "kino: Unknown option --nodes for 'kino status' (see kino --help)\n" });
});

test("kino --help documents kino status", () => {
  const help = Bun.spawnSync([process.execPath, MAIN, "--help"]).stdout.toString();
  expect(help).toContain("kino status --redis URL [--queue NAME] [--json]");
});
