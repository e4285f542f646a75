// The worked deployment under deploy/ (docs/DEPLOY.md) holds together: each kino node of the compose
// file loads its config through kino's own strict loader, the services it names exist, the proxy
// points at those nodes with the WebSocket upgrade and a 503 retry, the systemd unit drains on
// SIGTERM for longer than the drain timeout, and DEPLOY.md lists every cluster key with its default.
import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync, chmodSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import YAML from "yaml";
import type { TSchema } from "@sinclair/typebox";
import { loadServeConfig, type LoadedConfig } from "../../src/config/load.ts";
import { ServeConfigDefaults, ServeConfigSchema } from "../../schemas/config.ts";

const DEPLOY = resolve(import.meta.dir, "../../deploy");
const read = (name: string) => readFileSync(join(DEPLOY, name), "utf8");
const compose = YAML.parse(read("compose.yaml"), { merge: true });
const kinoNodes = Object.entries(compose.services as Record<string, any>).filter(([, s]) => s.entrypoint?.[0] === "/usr/local/bin/kino");

/** How long SIGTERM lets running jobs finish. */
const drainTimeout = (loaded: LoadedConfig) => loaded.config.server.drain_timeout_s;

/** A node's command line as kino reads it: `serve --config FILE --a.b value ...` → the file on this side and the overrides. */
function nodeConfig(service: any): { loaded: LoadedConfig; overrides: Record<string, string> } {
  const [verb, ...args] = service.command as string[];
  expect(verb).toBe("serve");
  const overrides: Record<string, string> = {};
  let configFile: string | undefined;
  for (let i = 0; i < args.length; i += 2) {
    expect(args[i]).toStartWith("--");
    if (args[i] === "--config") configFile = args[i + 1];
    else overrides[args[i]!.slice(2)] = args[i + 1]!;
  }
  const mount = (service.volumes as string[]).map((v) => v.split(":")).find(([, inside]) => inside === configFile);
  expect(mount).toBeDefined();
  return { loaded: loadServeConfig({ configFile: join(DEPLOY, mount![0]!), overrides }), overrides };
}

const seconds = (text: string) => {
  const match = /^(\d+)(s|m)?$/.exec(text);
  if (!match) throw new Error(`not a duration: ${text}`);
  return Number(match[1]) * (match[2] === "m" ? 60 : 1);
};

describe("deploy/compose.yaml", () => {
  test("two kino nodes from the mounted single executable, each loading the strict serve config with its own node id", () => {
    expect(kinoNodes.map(([name]) => name)).toEqual(["kino-a", "kino-b"]);
    const ids = kinoNodes.map(([, service]) => {
      expect(service.volumes).toContain("../dist/kino:/usr/local/bin/kino:ro");
      const { loaded } = nodeConfig(service);
      return loaded.config.cluster.node_id;
    });
    expect(ids).toEqual(["kino-a", "kino-b"]);
  });

  test("the nodes reach the Redis and MinIO services, in the bucket the init container creates, with secrets from the env file", () => {
    const init = compose.services["minio-init"];
    const bucket = /mc mb --ignore-existing local\/([\w.-]+)/.exec(init.entrypoint.join(" "))?.[1];
    const secrets = Object.fromEntries(read("kino.env.example").split("\n").filter((l) => /^\w+=/.test(l)).map((l) => l.split("=")));
    expect(Object.keys(secrets).sort()).toEqual(["KINO_REDIS_PASSWORD", "KINO_S3_ACCESS_KEY_ID", "KINO_S3_SECRET_ACCESS_KEY"]);
    expect(compose.services.redis.command.join(" ")).toContain("--requirepass ${KINO_REDIS_PASSWORD");
    expect(compose.services.minio.environment.MINIO_ROOT_USER).toStartWith("${KINO_S3_ACCESS_KEY_ID");
    for (const [name, service] of kinoNodes) {
      const { cluster, server } = nodeConfig(service).loaded.config;
      const redis = new URL(cluster.redis_url!);
      expect(compose.services[redis.hostname]).toBeDefined();
      expect(compose.services[redis.hostname].image).toStartWith("redis:");
      expect(redis.password).toBe(""); // the password comes from KINO_REDIS_PASSWORD, not the file
      expect(cluster.storage.kind).toBe("s3");
      const s3 = new URL(cluster.storage.endpoint!);
      expect(compose.services[s3.hostname].image).toStartWith("minio/minio");
      expect(cluster.storage.bucket).toBe(bucket!);
      expect(service.env_file).toEqual(["kino.env"]);
      expect(service.depends_on).toEqual({ redis: { condition: "service_healthy" }, "minio-init": { condition: "service_completed_successfully" } });
      // output_dir is on the node's own volume; the health check asks the port kino listens on.
      expect((service.volumes as string[]).some((v) => v === `${name}-data:/var/lib/kino`)).toBe(true);
      expect(server.output_dir).toStartWith("/var/lib/kino/");
      expect(service.healthcheck.test.join(" ")).toContain(`/dev/tcp/127.0.0.1/${server.port}`);
    }
  });

  test("stopping a node sends SIGTERM and waits longer than the drain", () => {
    for (const [, service] of kinoNodes) {
      expect(service.stop_signal).toBe("SIGTERM");
      expect(seconds(service.stop_grace_period)).toBeGreaterThan(drainTimeout(nodeConfig(service).loaded));
    }
  });
});

/** nginx's config as nested blocks: `name args... { ... }` and `name args...;`, comments stripped; throws on bad shape. */
type Directive = { name: string; args: string[]; block?: Directive[] };
function parseNginx(text: string): Directive[] {
  const tokens = [...text.replace(/#[^\n]*/g, "").matchAll(/'[^']*'|"[^"]*"|[{};]|[^\s{};]+/g)].map((m) => m[0]);
  let at = 0;
  const block = (top: boolean): Directive[] => {
    const out: Directive[] = [];
    for (;;) {
      if (at >= tokens.length) {
        if (!top) throw new Error("unclosed {");
        return out;
      }
      if (tokens[at] === "}") {
        if (top) throw new Error("unbalanced }");
        at++;
        return out;
      }
      const words: string[] = [];
      while (at < tokens.length && !["{", "}", ";"].includes(tokens[at]!)) words.push(tokens[at++]!);
      const end = tokens[at++];
      if (!words.length || (end !== ";" && end !== "{")) throw new Error(`directive '${words.join(" ")}' does not end with ; or {`);
      out.push(end === "{" ? { name: words[0]!, args: words.slice(1), block: block(false) } : { name: words[0]!, args: words.slice(1) });
    }
  };
  return block(true);
}
const find = (ds: Directive[], name: string, ...args: string[]) => ds.filter((d) => d.name === name && args.every((a, i) => d.args[i] === a));

describe("deploy/nginx.conf", () => {
  const conf = parseNginx(read("nginx.conf"));
  const http = find(conf, "http")[0]!.block!;
  const server = find(http, "server")[0]!.block!;
  const nodes = kinoNodes.map(([name, service]) => `${name}:${nodeConfig(service).loaded.config.server.port}`);

  test("is well formed, and the proxy container mounts it", () => {
    expect(find(conf, "events")).toHaveLength(1);
    expect(compose.services.proxy.volumes).toContain("./nginx.conf:/etc/nginx/nginx.conf:ro");
    expect(find(server, "listen")[0]!.args).toEqual([compose.services.proxy.ports[0].split(":")[1]]);
  });

  test("both upstreams are exactly the compose file's kino nodes", () => {
    for (const name of ["kino", "kino_realtime"]) {
      const upstream = find(http, "upstream", name)[0]!.block!;
      expect(find(upstream, "server").map((d) => d.args[0])).toEqual(nodes);
    }
    // A full node (503) is busy, not broken: the realtime upstream never takes it out of rotation.
    expect(find(find(http, "upstream", "kino_realtime")[0]!.block!, "server").every((d) => d.args.includes("max_fails=0"))).toBe(true);
  });

  test("the realtime route upgrades to WebSocket and offers a 503 to every node once", () => {
    const map = find(http, "map", "$http_upgrade", "$connection_upgrade")[0]!.block!;
    expect(find(map, "default")[0]!.args).toEqual(["upgrade"]);
    const realtime = find(server, "location", "=", "/v1/realtime/video")[0]!.block!;
    expect(find(realtime, "proxy_pass")[0]!.args).toEqual(["http://kino_realtime"]);
    expect(find(realtime, "proxy_http_version")[0]!.args).toEqual(["1.1"]);
    expect(find(realtime, "proxy_set_header", "Upgrade")[0]!.args).toEqual(["Upgrade", "$http_upgrade"]);
    expect(find(realtime, "proxy_set_header", "Connection")[0]!.args).toEqual(["Connection", "$connection_upgrade"]);
    expect(find(realtime, "proxy_next_upstream")[0]!.args).toContain("http_503");
    expect(find(realtime, "proxy_next_upstream_tries")[0]!.args).toEqual([String(nodes.length)]);
  });

  test("/metrics is kept from the public side; REST POSTs are not retried", () => {
    expect(find(find(server, "location", "=", "/metrics")[0]!.block!, "return")[0]!.args).toEqual(["404"]);
    const rest = find(server, "location", "/")[0]!.block!;
    expect(find(rest, "proxy_next_upstream")[0]!.args).not.toContain("non_idempotent");
  });

  test("the shape check refuses a missing semicolon and unbalanced braces", () => {
    expect(() => parseNginx("http { listen 80 }")).toThrow(/does not end with ; or \{/);
    expect(() => parseNginx("http { listen 80;")).toThrow(/unclosed/);
  });
});

describe("deploy/kino.service", () => {
  const text = read("kino.service");
  const sections = new Map<string, Map<string, string>>();
  let section = "";
  for (const line of text.split("\n")) {
    if (/^\s*(#|$)/.test(line)) continue;
    const header = /^\[(\w+)\]$/.exec(line);
    if (header) sections.set((section = header[1]!), new Map());
    else sections.get(section)!.set(line.split("=")[0]!, line.slice(line.indexOf("=") + 1));
  }
  const service = sections.get("Service")!;

  test("runs the executable with the serve config whose secrets come from an environment file", () => {
    const [binary, verb, flag, configFile, ...rest] = service.get("ExecStart")!.split(" ");
    expect([binary, verb, flag, configFile, ...rest]).toEqual(["/usr/local/bin/kino", "serve", "--config", "/etc/kino/serve.yaml"]);
    expect(service.get("EnvironmentFile")).toBe("/etc/kino/kino.env");
    expect(text).toContain("install -m 644 deploy/serve.yaml /etc/kino/serve.yaml");
    expect(sections.get("Install")!.get("WantedBy")).toBe("multi-user.target");
  });

  test("restarts on failure, and stops with SIGTERM to kino alone for longer than the drain", () => {
    const loaded = loadServeConfig({ configFile: join(DEPLOY, "serve.yaml") });
    expect(service.get("Restart")).toBe("on-failure");
    expect(service.get("KillSignal")).toBe("SIGTERM");
    expect(service.get("KillMode")).toBe("mixed");
    expect(seconds(service.get("TimeoutStopSec")!)).toBeGreaterThan(drainTimeout(loaded));
    expect(service.get("ReadWritePaths")).toBe("/var/lib/kino");
  });

  test.skipIf(!Bun.which("systemd-analyze"))("systemd-analyze verify finds nothing to say", () => {
    // verify needs ExecStart's binary to exist: the same unit, pointing at a stand-in executable.
    const dir = mkdtempSync(join(tmpdir(), "kino-unit-"));
    try {
      writeFileSync(join(dir, "kino"), "#!/bin/sh\n");
      chmodSync(join(dir, "kino"), 0o755);
      writeFileSync(join(dir, "kino.service"), text.replace("ExecStart=/usr/local/bin/kino", `ExecStart=${dir}/kino`));
      const run = Bun.spawnSync(["systemd-analyze", "verify", join(dir, "kino.service")], { stderr: "pipe", stdout: "pipe" });
      expect(run.stderr.toString() + run.stdout.toString()).toBe("");
      expect(run.exitCode).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("docs/DEPLOY.md", () => {
  const doc = readFileSync(resolve(import.meta.dir, "../../docs/DEPLOY.md"), "utf8");
  const keys: [string, unknown][] = [];
  const walk = (schema: TSchema, path: string, defaults: any) => {
    if (schema.type !== "object") return void keys.push([path, defaults]);
    for (const [key, sub] of Object.entries(schema.properties as Record<string, TSchema>)) walk(sub, `${path}.${key}`, defaults?.[key]);
  };
  walk(ServeConfigSchema.properties.cluster, "cluster", ServeConfigDefaults.cluster);

  test("lists every cluster key with the schema's default", () => {
    expect(keys.length).toBeGreaterThan(10);
    for (const [key, value] of keys) {
      const row = doc.split("\n").find((line) => line.startsWith(`| \`${key}\` |`));
      expect(row ?? `no row for ${key}`).toStartWith("|");
      const shown = value === undefined ? "unset" : `\`${value === "" ? '""' : String(value)}\``;
      expect(row!.split(" | ")[1]).toBe(shown);
    }
  });

  test("is linked from the README", () => {
    expect(readFileSync(resolve(import.meta.dir, "../../README.md"), "utf8")).toContain("docs/DEPLOY.md");
  });
});
