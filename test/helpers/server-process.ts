// Starts `kino serve` as its own process (the tests' pipeline, a free port), optionally inside a user
// and mount namespace whose shell `setup` runs first — so a test can put a real read-only or full file
// system under output_dir without privileges on the machine — and can kill it like a crash would.
import { join } from "node:path";
import { TEST_PIPELINE } from "./server.ts";

const MAIN = join(import.meta.dir, "../../src/cli/main.ts");

export interface ServerProcess {
  url: string;
  proc: ReturnType<typeof Bun.spawn>;
  /** Everything the server printed so far. */
  output(): string;
  /** kill -9, then waits for the exit. */
  kill(): Promise<void>;
}

/** Whether this machine lets an unprivileged process mount in a namespace of its own (unshare -rm). */
export function canUseMountNamespaces(): boolean {
  const probe = Bun.spawnSync(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", "mount -t tmpfs tmpfs /mnt"]);
  return probe.exitCode === 0;
}

export interface SpawnOptions {
  setup?: string;
  namespace?: "root" | "user";
  /** More `--key value` overrides (a cluster node's cluster.* settings). */
  args?: string[];
  /** Added to the server's environment (secrets such as KINO_S3_*). */
  env?: Record<string, string>;
  /** Taken out of the server's environment (CUDA_VISIBLE_DEVICES, for a server that must choose its GPUs). */
  unsetEnv?: string[];
}

export async function spawnServer(outputDir: string, opts: SpawnOptions = {}): Promise<ServerProcess> {
  const serve = [process.execPath, MAIN, "serve", "--generator.model_path", TEST_PIPELINE, "--server.port", "0", "--server.host", "127.0.0.1", "--server.output_dir", outputDir, ...(opts.args ?? [])];
  // "root": we are root in the namespace (may mount); "user": an unprivileged user there, so file
  // permissions apply even when the test itself runs as root.
  const command = opts.namespace
    ? ["unshare", "--user", ...(opts.namespace === "root" ? ["--map-root-user", "--mount"] : []), "sh", "-ec", `${opts.setup ?? ""}\nexec "$@"`, "sh", ...serve]
    : serve;
  const env: Record<string, string | undefined> = { ...process.env, ...opts.env };
  for (const name of opts.unsetEnv ?? []) delete env[name];
  const proc = Bun.spawn(command, { stdout: "pipe", stderr: "pipe", env });
  let text = "";
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream) text += new TextDecoder().decode(chunk);
  };
  void collect(proc.stdout);
  void collect(proc.stderr);
  const deadline = Date.now() + 30000;
  while (Date.now() < deadline) {
    const url = /at (http:\/\/127\.0\.0\.1:\d+)/.exec(text)?.[1];
    if (url) return { url, proc, output: () => text, kill: async () => void (proc.kill(9), await proc.exited) };
    if (proc.exitCode !== null) break;
    await Bun.sleep(50);
  }
  proc.kill(9);
  throw new Error(`kino serve did not start:\n${text}`);
}
