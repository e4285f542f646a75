// YAML serve config + dotted CLI overrides → validated ServeConfig, remembering which leaves the
// operator actually wrote. Schema defaults fill the config, but only written paths count as operator
// intent: the request adapter layers operatorDefaults() over model card defaults, so a schema default
// must never pose as an operator choice.
import { readFileSync } from "node:fs";
import { basename, extname } from "node:path";
import YAML from "yaml";
import type { TSchema } from "@sinclair/typebox";
import { Value, ValueErrorType, type ValueError } from "@sinclair/typebox/value";
import {
  DEFAULT_REQUEST_FIELDS,
  ServeConfigSchema,
  type DefaultRequestField,
  type ServeConfig,
} from "../../schemas/config.ts";

/** A config problem. `path` is the dotted config path (or the file, for read/parse errors); the message starts with it. */
export class ConfigError extends Error {
  override name = "ConfigError";
  constructor(readonly path: string, message: string) {
    super(`${path}: ${message}`);
  }
}

export type OperatorDefaults = Partial<Record<DefaultRequestField, string | number>>;

export interface LoadedConfig {
  /** Validated, defaults filled in. */
  config: ServeConfig;
  /** Dotted paths of every leaf the operator wrote (file or CLI); a list counts as one leaf. */
  explicit: Set<string>;
  /** Exact leaf path, e.g. "server.port"; a section path is never explicit. */
  isExplicit(path: string): boolean;
  /** Operator-explicit default_request fields by their flat request names; never `prompt`. */
  operatorDefaults(): OperatorDefaults;
  /** LoRA nickname when a startup LoRA is configured, else served_model_name, else model_path. */
  servedModelId(): string;
  /** The adapter merged at startup (nickname defaults to the file's base name), or null. */
  startupLora(): { nickname: string; path: string; strength: number } | null;
  /** Things the operator wrote that are accepted but have no effect; print each once at start. */
  warnings: string[];
}

const OVERRIDE_ROOTS = ["generator", "server", "default_request", "cluster"];
const LORA = "generator.pipeline.components";

export function loadServeConfig(opts: { configFile?: string; overrides?: Record<string, string> } = {}): LoadedConfig {
  const raw = opts.configFile === undefined ? {} : readConfigFile(opts.configFile);
  for (const [path, text] of Object.entries(opts.overrides ?? {})) applyOverride(raw, path, text);

  const explicit = new Set<string>();
  collectLeaves(raw, ServeConfigSchema, "", explicit);
  const config = Value.Default(ServeConfigSchema, raw) as ServeConfig;
  validate(config);

  const lora = config.generator.pipeline.components;
  for (const field of ["lora_nickname", "lora_strength"]) {
    if (lora.lora_path === undefined && explicit.has(`${LORA}.${field}`)) {
      throw new ConfigError(`${LORA}.${field}`, `needs ${LORA}.lora_path (no startup LoRA is configured)`);
    }
  }
  checkCluster(config.cluster, explicit);
  checkEngine(config.generator.engine);
  const warnings = explicit.has("default_request.prompt")
    ? ["default_request.prompt: ignored; every request carries its own prompt"]
    : [];

  return {
    config,
    explicit,
    warnings,
    isExplicit: (path) => explicit.has(path),
    operatorDefaults() {
      const out: OperatorDefaults = {};
      for (const field of DEFAULT_REQUEST_FIELDS) {
        const path = field === "negative_prompt" ? "default_request.negative_prompt" : `default_request.sampling.${field}`;
        if (explicit.has(path)) out[field] = field === "negative_prompt" ? config.default_request.negative_prompt : config.default_request.sampling[field];
      }
      return out;
    },
    startupLora() {
      if (lora.lora_path === undefined) return null;
      const nickname = lora.lora_nickname ?? basename(lora.lora_path, extname(lora.lora_path));
      return { nickname, path: lora.lora_path, strength: lora.lora_strength };
    },
    servedModelId() {
      return this.startupLora()?.nickname ?? config.server.served_model_name ?? config.generator.model_path;
    },
  };
}

/** What the schema cannot say: an s3 store needs a bucket; cluster settings mean nothing without Redis. */
function checkCluster(cluster: ServeConfig["cluster"], explicit: Set<string>): void {
  if (cluster.storage.kind === "s3" && cluster.storage.bucket === undefined) {
    throw new ConfigError("cluster.storage.bucket", "missing (cluster.storage.kind is s3)");
  }
  if (cluster.redis_url !== undefined) return;
  const stray = [...explicit].find((path) => path.startsWith("cluster."));
  if (stray) throw new ConfigError(stray, "needs cluster.redis_url (without it kino runs as one node)");
}

/**
 * What num_gpus and num_workers can mean together. num_gpus N runs one worker per GPU (num_workers
 * may stay 1: it is raised to N); num_workers above N puts the same number of workers on every GPU, so
 * it must be a multiple of N — 3 workers on 2 GPUs would load a GPU twice while the other idles. GPUs
 * mean nothing to the CPU backend: several CPU workers are num_workers alone.
 */
function checkEngine(engine: ServeConfig["generator"]["engine"]): void {
  const { device, num_gpus: gpus, num_workers: workers } = engine;
  if (device === "cpu" && gpus > 1) {
    throw new ConfigError(
      "generator.engine.num_gpus",
      `is ${gpus}, but generator.engine.device is cpu: the CPU backend uses no GPU (for more CPU worker processes set generator.engine.num_workers; for GPUs set device to cuda or auto)`,
    );
  }
  if (workers > gpus && workers % gpus !== 0) {
    throw new ConfigError(
      "generator.engine.num_workers",
      `is ${workers}, not a multiple of generator.engine.num_gpus (${gpus}): every GPU runs the same number of workers (try ${Math.floor(workers / gpus) * gpus} or ${Math.ceil(workers / gpus) * gpus})`,
    );
  }
}

function readConfigFile(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new ConfigError(file, `cannot read config file: ${(err as Error).message}`);
  }
  let doc: unknown;
  try {
    doc = YAML.parse(text); // the yaml error message names line and column
  } catch (err) {
    throw new ConfigError(file, `invalid YAML: ${(err as Error).message.trimEnd()}`);
  }
  // An empty or all-comments file is an empty config, not an error.
  if (doc === null || doc === undefined) return {};
  if (!isMapping(doc)) {
    throw new ConfigError(file, `expected a mapping at the top level (generator:, server:, default_request:, cluster:), got ${describe(doc)}`);
  }
  return doc;
}

/** Sets one dotted override into the raw tree. Strings fields take the text verbatim; others parse it as YAML. */
function applyOverride(raw: Record<string, unknown>, path: string, text: string): void {
  const keys = path.split(".");
  if (!OVERRIDE_ROOTS.includes(keys[0]!) || keys.length < 2 || keys.includes("")) {
    throw new ConfigError(path, "overrides must be dotted field paths under generator., server., default_request. or cluster.");
  }
  const schema = overrideSchema(keys);
  if (schema.type === "object") {
    const example = Object.keys(schema.properties)[0];
    throw new ConfigError(path, `is a section; override one of its fields instead, e.g. ${path}.${example}`);
  }
  let node = raw;
  for (const [i, key] of keys.slice(0, -1).entries()) {
    const next = node[key];
    if (next === undefined || next === null) node[key] = {};
    else if (!isMapping(next)) {
      const at = keys.slice(0, i + 1).join(".");
      throw new ConfigError(at, `expected a mapping, got ${describe(next)} (cannot set ${path} through it)`);
    }
    node = node[key] as Record<string, unknown>;
  }
  // Type-directed: `--server.served_model_name 123` means the name "123", and a negative prompt
  // like "blurry: low quality" must not turn into a YAML mapping.
  node[keys.at(-1)!] = schema.type === "string" ? text : parseOverrideValue(path, text);
}

function overrideSchema(keys: string[]): TSchema {
  let schema: TSchema = ServeConfigSchema;
  for (const [i, key] of keys.entries()) {
    const at = keys.slice(0, i + 1).join(".");
    if (schema.type !== "object") {
      throw new ConfigError(keys.join("."), `${keys.slice(0, i).join(".")} is a field, not a section`);
    }
    if (!Object.hasOwn(schema.properties, key)) throw new ConfigError(at, "unknown field");
    schema = schema.properties[key];
  }
  return schema;
}

function parseOverrideValue(path: string, text: string): unknown {
  try {
    return YAML.parse(text);
  } catch (err) {
    throw new ConfigError(path, `cannot parse value ${JSON.stringify(text)}: ${(err as Error).message.split("\n")[0]}`);
  }
}

/**
 * Records the leaf paths present in the raw tree. Also normalizes sections: `server:` with nothing
 * under it (YAML null) is an empty section, and a section given as a list is rejected here because
 * Value.Default would otherwise merge the list's indices into the section's defaults.
 */
function collectLeaves(node: Record<string, unknown>, schema: TSchema, prefix: string, out: Set<string>): void {
  for (const [key, value] of Object.entries(node)) {
    const path = prefix ? `${prefix}.${key}` : key;
    const sub: TSchema | undefined = schema.type === "object" && Object.hasOwn(schema.properties, key) ? schema.properties[key] : undefined;
    if (sub?.type !== "object") {
      out.add(path); // a leaf, or an unknown key that validation reports
    } else if (value === null) {
      delete node[key];
    } else if (!isMapping(value)) {
      throw new ConfigError(path, `expected a mapping, got ${describe(value)}`);
    } else {
      collectLeaves(value, sub, path, out);
    }
  }
}

/** Throws one ConfigError listing the first problem at each path. */
function validate(config: unknown): void {
  const problems = new Map<string, string>();
  for (const error of Value.Errors(ServeConfigSchema, config)) {
    const path = dottedPath(error.path, config);
    if (!problems.has(path)) problems.set(path, explain(error));
  }
  if (problems.size === 0) return;
  const [[first, firstMessage], ...rest] = problems;
  const more = rest.map(([path, message]) => `\n${path}: ${message}`).join("");
  throw new ConfigError(first!, firstMessage + more);
}

function explain(error: ValueError): string {
  const { schema, value } = error;
  const got = describe(value);
  switch (error.type) {
    case ValueErrorType.ObjectAdditionalProperties: return "unknown field";
    case ValueErrorType.ObjectRequiredProperty: return "missing";
    case ValueErrorType.Integer: return `expected integer, got ${got}`;
    case ValueErrorType.Number: return `expected number, got ${got}`;
    case ValueErrorType.String: return `expected string, got ${got}`;
    case ValueErrorType.Boolean: return `expected boolean (true or false), got ${got}`;
    case ValueErrorType.Array: return `expected a list, got ${got}`;
    case ValueErrorType.Object: return `expected a mapping, got ${got}`;
    case ValueErrorType.StringMinLength: return "must not be empty";
    case ValueErrorType.IntegerMinimum:
    case ValueErrorType.NumberMinimum: return `must be ≥ ${schema.minimum}, got ${value}`;
    case ValueErrorType.IntegerMaximum:
    case ValueErrorType.NumberMaximum: return `must be ≤ ${schema.maximum}, got ${value}`;
    case ValueErrorType.NumberExclusiveMinimum: return `must be > ${schema.exclusiveMinimum}, got ${value}`;
    case ValueErrorType.Union: {
      const options = (schema.anyOf as TSchema[]).map((s) => s.const);
      if (options.some((o) => o === undefined)) return error.message;
      return `expected one of ${options.map((o) => JSON.stringify(o)).join(", ")}, got ${got}`;
    }
    default: return error.message;
  }
}

/** JSON pointer (/server/references/allow_hosts/0) → dotted path (server.references.allow_hosts[0]). */
function dottedPath(pointer: string, root: unknown): string {
  let node = root;
  let path = "";
  for (const part of pointer.split("/").slice(1)) {
    const key = part.replace(/~1/g, "/").replace(/~0/g, "~");
    path += Array.isArray(node) ? `[${key}]` : path ? `.${key}` : key;
    node = isMapping(node) || Array.isArray(node) ? (node as Record<string, unknown>)[key] : undefined;
  }
  return path || "(config)";
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (value === null || value === undefined) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "a mapping";
  if (typeof value === "string") return `string ${JSON.stringify(value)}`;
  return `${typeof value} ${String(value)}`;
}
