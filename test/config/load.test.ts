import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigError, loadServeConfig } from "../../src/config/load.ts";
import { ServeConfigDefaults } from "../../schemas/config.ts";

const dir = mkdtempSync(join(tmpdir(), "kino-config-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let fileCount = 0;
function configFile(yaml: string): string {
  const file = join(dir, `config-${fileCount++}.yaml`);
  writeFileSync(file, yaml);
  return file;
}

/** The ConfigError a load throws (fails the test if it does not throw one). */
function loadError(opts: Parameters<typeof loadServeConfig>[0]): ConfigError {
  try {
    loadServeConfig(opts);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error("expected a ConfigError");
}

const FULL = `
generator:
  model_path: /models/fasth3
  engine: {num_gpus: 2, device: cuda}
server: {host: 127.0.0.1, port: 9000, output_dir: outputs/, served_model_name: fasth3}
default_request:
  negative_prompt: ""
  sampling: {height: 768, width: 1344, num_frames: 124, fps: 24, num_inference_steps: 5, guidance_scale: 1.0, seed: 1000}
`;

describe("defaults", () => {
  test("no file and no overrides: every default, nothing explicit", () => {
    const loaded = loadServeConfig({});
    expect(loaded.config).toEqual(ServeConfigDefaults);
    expect(loaded.config.generator).toEqual({
      model_path: "builtin:kino-tiny",
      engine: { num_gpus: 1, device: "auto", num_workers: 1, stall_timeout_s: 600 },
      pipeline: { components: { lora_strength: 1.0 } },
    });
    expect(loaded.config.server).toEqual({
      host: "0.0.0.0",
      port: 8000,
      output_dir: "outputs",
      max_body_bytes: 67108864,
      max_jobs: 1000,
      references: {
        allowed_local_roots: [],
        max_bytes: 33554432,
        max_pixels: 16777216,
        remote: { enabled: false, allow_hosts: [], max_bytes: 33554432, timeout_ms: 15000 },
      },
      realtime: {
        max_sessions: 4,
        start_timeout_s: 10,
        stall_timeout_s: 60,
        max_start_bytes: 4194304,
        max_control_bytes: 131072,
        pace_lead_chunks: 1,
      },
      drain_timeout_s: 30,
    });
    expect(loaded.config.default_request).toEqual({ sampling: {} });
    expect([...loaded.explicit]).toEqual([]);
    expect(loaded.isExplicit("server.port")).toBe(false);
    expect(loaded.operatorDefaults()).toEqual({});
    expect(loaded.warnings).toEqual([]);
  });

  test("an empty file, and empty sections, are the defaults", () => {
    expect(loadServeConfig({ configFile: configFile("# nothing yet\n") }).config).toEqual(ServeConfigDefaults);
    const loaded = loadServeConfig({ configFile: configFile("server:\ndefault_request: {}\ngenerator: {engine: {}}\n") });
    expect(loaded.config).toEqual(ServeConfigDefaults);
    expect(loaded.explicit.size).toBe(0);
  });
});

describe("explicit paths", () => {
  test("exactly the leaves written; a value equal to its default still counts, an unwritten default never does", () => {
    const loaded = loadServeConfig({
      configFile: configFile("server:\n  port: 8000\n  references: {remote: {allow_hosts: [a.example]}}\n"),
      overrides: { "default_request.sampling.fps": "12" },
    });
    expect([...loaded.explicit].sort()).toEqual([
      "default_request.sampling.fps",
      "server.port",
      "server.references.remote.allow_hosts",
    ]);
    expect(loaded.isExplicit("server.port")).toBe(true);
    expect(loaded.isExplicit("server.host")).toBe(false);
    expect(loaded.isExplicit("server.references.remote")).toBe(false);
    expect(loaded.config.server.references.remote.allow_hosts).toEqual(["a.example"]);
  });

  test("operatorDefaults: only written fields, flat names, never prompt", () => {
    const loaded = loadServeConfig({
      configFile: configFile("default_request:\n  prompt: a cat\n  negative_prompt: ''\n  sampling: {fps: 24, seed: 1000}\n"),
    });
    expect(loaded.operatorDefaults()).toEqual({ negative_prompt: "", fps: 24, seed: 1000 });
    expect(loaded.config.default_request.prompt).toBe("a cat");
    expect(loaded.warnings).toEqual(["default_request.prompt: ignored; every request carries its own prompt"]);
  });

  test("the full reference config loads, and every default_request field is operator intent", () => {
    const loaded = loadServeConfig({ configFile: configFile(FULL) });
    expect(loaded.config.generator.engine).toEqual({ num_gpus: 2, device: "cuda", num_workers: 1, stall_timeout_s: 600 });
    expect(loaded.operatorDefaults()).toEqual({
      negative_prompt: "",
      height: 768,
      width: 1344,
      num_frames: 124,
      fps: 24,
      num_inference_steps: 5,
      guidance_scale: 1.0,
      seed: 1000,
    });
  });
});

describe("overrides", () => {
  test("applied on top of the file; untouched file values stay", () => {
    const loaded = loadServeConfig({
      configFile: configFile(FULL),
      overrides: { "server.port": "8123", "server.output_dir": "out/", "generator.engine.device": "auto" },
    });
    expect(loaded.config.server.port).toBe(8123);
    expect(loaded.config.server.output_dir).toBe("out/");
    expect(loaded.config.server.host).toBe("127.0.0.1");
    expect(loaded.config.generator.engine).toEqual({ num_gpus: 2, device: "auto", num_workers: 1, stall_timeout_s: 600 });
  });

  test("values parse as YAML scalars and flow collections; string fields take the text verbatim", () => {
    const { config } = loadServeConfig({
      overrides: {
        "server.port": "8123",
        "server.references.remote.enabled": "true",
        "server.references.remote.allow_hosts": "[a.example, b.example]",
        "server.references.allowed_local_roots": "[]",
        "default_request.sampling.guidance_scale": "3.5",
        "server.served_model_name": "123",
        "default_request.negative_prompt": "blurry: low quality, [watermark]",
      },
    });
    expect(config.server.port).toBe(8123);
    expect(config.server.references.remote.enabled).toBe(true);
    expect(config.server.references.remote.allow_hosts).toEqual(["a.example", "b.example"]);
    expect(config.server.references.allowed_local_roots).toEqual([]);
    expect(config.default_request.sampling.guidance_scale).toBe(3.5);
    expect(config.server.served_model_name).toBe("123");
    expect(config.default_request.negative_prompt).toBe("blurry: low quality, [watermark]");
  });

  test("an override into a section the file left empty (null) works", () => {
    const loaded = loadServeConfig({ configFile: configFile("server:\n"), overrides: { "server.port": "0" } });
    expect(loaded.config.server.port).toBe(0);
    expect([...loaded.explicit]).toEqual(["server.port"]);
  });

  test("paths outside generator./server./default_request./cluster. are rejected by name", () => {
    for (const bad of ["port", "model.path", "generatorx.model_path", "server", "server..port"]) {
      const err = loadError({ overrides: { [bad]: "1" } });
      expect(err.path).toBe(bad);
      expect(err.message).toStartWith(`${bad}: `);
    }
    expect(loadError({ overrides: { port: "1" } }).message).toContain("generator., server., default_request. or cluster.");
  });

  test("unknown, non-leaf and through-a-scalar override paths fail clearly", () => {
    expect(loadError({ overrides: { "server.prot": "1" } }).message).toBe("server.prot: unknown field");
    expect(loadError({ overrides: { "server.nope.deeper": "1" } }).message).toBe("server.nope: unknown field");
    expect(loadError({ overrides: { "server.references": "{}" } }).message).toBe(
      "server.references: is a section; override one of its fields instead, e.g. server.references.allowed_local_roots",
    );
    expect(loadError({ overrides: { "server.port.number": "1" } }).message).toBe(
      "server.port.number: server.port is a field, not a section",
    );
    const err = loadError({ configFile: configFile("server: {references: 5}\n"), overrides: { "server.references.max_bytes": "1" } });
    expect(err.message).toStartWith("server.references: expected a mapping, got number 5");
  });

  test("a value of the wrong type names the path and what was given", () => {
    expect(loadError({ overrides: { "server.port": "abc" } }).message).toBe('server.port: expected integer, got string "abc"');
    expect(loadError({ overrides: { "server.port": "[1" } }).message).toStartWith('server.port: cannot parse value "[1"');
  });
});

describe("validation errors", () => {
  test("unknown keys at depth 1, 2 and 3 name their dotted path", () => {
    expect(loadError({ configFile: configFile("servr: {}\n") }).message).toBe("servr: unknown field");
    expect(loadError({ configFile: configFile("server: {prot: 1}\n") }).message).toBe("server.prot: unknown field");
    const err = loadError({ configFile: configFile("generator:\n  engine:\n    foo: 1\n") });
    expect(err.path).toBe("generator.engine.foo");
    expect(err.message).toBe("generator.engine.foo: unknown field");
  });

  test("wrong types and out-of-range values name the path and the expectation", () => {
    const cases: [string, string][] = [
      ['server: {port: "8000"}', 'server.port: expected integer, got string "8000"'],
      ["server: {port: 80.5}", "server.port: expected integer, got number 80.5"],
      ["server: {port: 70000}", "server.port: must be ≤ 65535, got 70000"],
      ["server: {max_body_bytes: 10}", "server.max_body_bytes: must be ≥ 1024, got 10"],
      ["server: {output_dir: ''}", "server.output_dir: must not be empty"],
      ["generator: {engine: {num_gpus: 0}}", "generator.engine.num_gpus: must be ≥ 1, got 0"],
      ["generator: {engine: {device: gpu}}", 'generator.engine.device: expected one of "auto", "cuda", "cpu", got string "gpu"'],
      ["server: {references: {remote: {enabled: yes}}}", 'server.references.remote.enabled: expected boolean (true or false), got string "yes"'],
      ["server: {references: {allowed_local_roots: /data}}", 'server.references.allowed_local_roots: expected a list, got string "/data"'],
      ["server: {references: {allowed_local_roots: [/data, 7]}}", "server.references.allowed_local_roots[1]: expected string, got number 7"],
      ["default_request: {sampling: {fps: 0}}", "default_request.sampling.fps: must be > 0, got 0"],
      ["default_request: {sampling: {seed: 1.5}}", "default_request.sampling.seed: expected integer, got number 1.5"],
      ["server: {served_model_name: null}", "server.served_model_name: expected string, got null"],
      ["server: [1, 2]", "server: expected a mapping, got a list"],
      ["server: 5", "server: expected a mapping, got number 5"],
    ];
    for (const [yaml, message] of cases) expect(loadError({ configFile: configFile(yaml) }).message).toBe(message);
  });

  test("num_gpus and num_workers: GPUs need a GPU backend, workers split evenly over them", () => {
    const engine = (yaml: string) => loadServeConfig({ configFile: configFile(`generator: {engine: ${yaml}}`) }).config.generator.engine;
    // num_workers may stay at its default under num_gpus (it is raised to one per GPU), or be a multiple.
    expect(engine("{num_gpus: 4}")).toEqual({ num_gpus: 4, device: "auto", num_workers: 1, stall_timeout_s: 600 });
    expect(engine("{num_gpus: 2, num_workers: 4, device: cuda}")).toEqual({ num_gpus: 2, device: "cuda", num_workers: 4, stall_timeout_s: 600 });
    expect(engine("{num_workers: 3, device: cpu}")).toEqual({ num_gpus: 1, device: "cpu", num_workers: 3, stall_timeout_s: 600 });
    const cpu = loadError({ configFile: configFile("generator: {engine: {num_gpus: 2, device: cpu}}") });
    expect(cpu.path).toBe("generator.engine.num_gpus");
    expect(cpu.message).toBe(
      "generator.engine.num_gpus: is 2, but generator.engine.device is cpu: the CPU backend uses no GPU (for more CPU worker processes set generator.engine.num_workers; for GPUs set device to cuda or auto)",
    );
    const uneven = loadError({ overrides: { "generator.engine.num_gpus": "2", "generator.engine.num_workers": "3" } });
    expect(uneven.path).toBe("generator.engine.num_workers");
    expect(uneven.message).toBe("generator.engine.num_workers: is 3, not a multiple of generator.engine.num_gpus (2): every GPU runs the same number of workers (try 2 or 4)");
  });

  test("several problems: one line per path, the error's path is the first line's", () => {
    const err = loadError({ configFile: configFile("server: {port: x, host: 1, foo: 2}\n") });
    expect(err.message).toStartWith(`${err.path}: `);
    expect(err.message.split("\n").sort()).toEqual([
      "server.foo: unknown field",
      "server.host: expected string, got number 1",
      'server.port: expected integer, got string "x"',
    ]);
  });

  test("bad YAML names the file and the line", () => {
    const file = configFile("server:\n  port: 8000\n  host: [unclosed\n");
    const err = loadError({ configFile: file });
    expect(err.path).toBe(file);
    expect(err.message).toStartWith(`${file}: invalid YAML:`);
    expect(err.message).toMatch(/line \d+/);
  });

  test("a file that is not a mapping, or is missing, fails naming the file", () => {
    const list = configFile("- server\n- port\n");
    expect(loadError({ configFile: list }).message).toStartWith(`${list}: expected a mapping at the top level`);
    const scalar = configFile("just text\n");
    expect(loadError({ configFile: scalar }).message).toStartWith(`${scalar}: expected a mapping at the top level`);
    const missing = join(dir, "missing.yaml");
    expect(loadError({ configFile: missing }).message).toStartWith(`${missing}: cannot read config file`);
  });

  test("lora_nickname or lora_strength without lora_path fails", () => {
    const nick = loadError({ configFile: configFile("generator: {pipeline: {components: {lora_nickname: x}}}\n") });
    expect(nick.message).toStartWith("generator.pipeline.components.lora_nickname: needs generator.pipeline.components.lora_path");
    const strength = loadError({ overrides: { "generator.pipeline.components.lora_strength": "0.5" } });
    expect(strength.path).toBe("generator.pipeline.components.lora_strength");
  });
});

describe("servedModelId", () => {
  test("model_path when nothing else is set", () => {
    expect(loadServeConfig({}).servedModelId()).toBe("builtin:kino-tiny");
    expect(loadServeConfig({ overrides: { "generator.model_path": "/models/wan" } }).servedModelId()).toBe("/models/wan");
  });

  test("served_model_name beats model_path", () => {
    expect(loadServeConfig({ configFile: configFile(FULL) }).servedModelId()).toBe("fasth3");
  });

  test("a startup LoRA beats both: its nickname, else the adapter's base name", () => {
    const withNick = loadServeConfig({
      configFile: configFile(FULL),
      overrides: { "generator.pipeline.components.lora_path": "/a/style.safetensors", "generator.pipeline.components.lora_nickname": "my-adapter" },
    });
    expect(withNick.servedModelId()).toBe("my-adapter");
    const noNick = loadServeConfig({
      configFile: configFile(FULL),
      overrides: { "generator.pipeline.components.lora_path": "/a/style.safetensors" },
    });
    expect(noNick.servedModelId()).toBe("style");
    expect(noNick.config.generator.pipeline.components.lora_strength).toBe(1.0);
  });
});

describe("cluster", () => {
  test("absent: one node, no Redis; the section's defaults are there", () => {
    const { cluster } = loadServeConfig({}).config;
    expect(cluster.redis_url).toBeUndefined();
    expect(cluster.storage.kind).toBe("local");
    expect(cluster.queue).toBe("kino");
  });

  test("a YAML section and dotted overrides load", () => {
    const file = configFile(`
cluster:
  redis_url: redis://10.0.0.5:6379
  storage: {kind: s3, endpoint: "http://minio:9000", bucket: videos, prefix: kino/}
`);
    const { cluster } = loadServeConfig({ configFile: file, overrides: { "cluster.stall_ms": "5000", "cluster.storage.presign": "true" } }).config;
    expect(cluster.redis_url).toBe("redis://10.0.0.5:6379");
    expect(cluster.storage).toMatchObject({ kind: "s3", bucket: "videos", prefix: "kino/", presign: true, region: "us-east-1" });
    expect(cluster.stall_ms).toBe(5000);
    expect(cluster.max_attempts).toBe(3);
  });

  test("unknown keys, bad values and missing pieces fail with their path", () => {
    expect(loadError({ overrides: { "cluster.redis_ur": "redis://x" } }).message).toBe("cluster.redis_ur: unknown field");
    expect(loadError({ configFile: configFile("cluster: {redis_url: redis://x, storage: {buckt: b}}\n") }).message).toBe("cluster.storage.buckt: unknown field");
    expect(loadError({ overrides: { "cluster.redis_url": "http://x" } }).path).toBe("cluster.redis_url");
    expect(loadError({ overrides: { "cluster.redis_url": "redis://x", "cluster.storage.kind": "gcs" } }).message).toStartWith("cluster.storage.kind: expected one of \"local\", \"s3\"");
    expect(loadError({ overrides: { "cluster.redis_url": "redis://x", "cluster.storage.kind": "s3" } }).message).toBe("cluster.storage.bucket: missing (cluster.storage.kind is s3)");
    expect(loadError({ overrides: { "cluster.stall_ms": "1000" } }).message).toBe("cluster.stall_ms: needs cluster.redis_url (without it kino runs as one node)");
  });
});

describe("generator.engine.stall_timeout_s", () => {
  test("seconds from YAML or a dotted override, 0 turning the guard off; negative or not a number fails with its path", () => {
    const stall = (opts: Parameters<typeof loadServeConfig>[0]) => loadServeConfig(opts).config.generator.engine.stall_timeout_s;
    expect(stall({ configFile: configFile("generator: {engine: {stall_timeout_s: 1800}}\n") })).toBe(1800);
    expect(stall({ overrides: { "generator.engine.stall_timeout_s": "2.5" } })).toBe(2.5);
    expect(stall({ overrides: { "generator.engine.stall_timeout_s": "0" } })).toBe(0);
    expect(loadError({ overrides: { "generator.engine.stall_timeout_s": "-1" } }).message).toBe("generator.engine.stall_timeout_s: must be ≥ 0, got -1");
    expect(loadError({ configFile: configFile("generator: {engine: {stall_timeout_s: never}}\n") }).message).toBe(
      'generator.engine.stall_timeout_s: expected number, got string "never"',
    );
  });
});

describe("server.drain_timeout_s", () => {
  test("from YAML and as a dotted override; negative or not a number fails with its path", () => {
    expect(loadServeConfig({ configFile: configFile("server: {drain_timeout_s: 120}\n") }).config.server.drain_timeout_s).toBe(120);
    expect(loadServeConfig({ overrides: { "server.drain_timeout_s": "2.5" } }).config.server.drain_timeout_s).toBe(2.5);
    expect(loadError({ overrides: { "server.drain_timeout_s": "-1" } }).path).toBe("server.drain_timeout_s");
    expect(loadError({ configFile: configFile("server: {drain_timeout_s: soon}\n") }).path).toBe("server.drain_timeout_s");
  });

  test("cluster.node_url must be an http(s) URL", () => {
    const { cluster } = loadServeConfig({ overrides: { "cluster.redis_url": "redis://x", "cluster.node_url": "http://10.0.0.7:8000" } }).config;
    expect(cluster.node_url).toBe("http://10.0.0.7:8000");
    expect(loadError({ overrides: { "cluster.redis_url": "redis://x", "cluster.node_url": "10.0.0.7:8000" } }).path).toBe("cluster.node_url");
  });
});
