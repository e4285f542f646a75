// Joining a cluster at start: connect to Redis and the artifact store, and refuse to start, naming the
// URL and what failed, when either cannot be used, so a misconfigured node never serves half a cluster.
import { Redis } from "ioredis";
import { hostname } from "node:os";
import type { ServeConfig } from "../../schemas/config.ts";
import type { ArtifactStore } from "../engine/artifact-store.ts";
import type { Engine } from "../engine/engine.ts";
import { LocalArtifactStore } from "../engine/local-artifacts.ts";
import { NodeRegistry, type NodeState } from "./node-registry.ts";
import { QueueDispatch } from "./queue-dispatch.ts";
import { jobsNamespace, RedisJobStore } from "./redis-store.ts";
import { describeS3, S3ArtifactStore, s3Reason } from "./s3-artifacts.ts";

/** The cluster cannot be joined (Redis or the artifact store unreachable or refusing); the message says which and why. */
export class ClusterUnavailable extends Error {}

export interface ClusterNode {
  store: RedisJobStore;
  artifacts: ArtifactStore;
  /** The queue, consumed through this node's engine (made once the model has loaded). */
  dispatchWith(engine: Engine): QueueDispatch;
  presign: boolean;
  /**
   * Once this node listens: starts taking jobs from the queue and publishes the node in the registry
   * (`state` is read at every heartbeat); returns the registry entry's owner.
   */
  join(listening: { host: string; port: number }, state: () => NodeState): NodeRegistry;
  /** Leaves the registry and the queue (a job still running here is left to another node). */
  close(): Promise<void>;
}

/** How long start-up waits for Redis to answer before it calls it unreachable. */
const CONNECT_TIMEOUT_MS = 5000;

export async function openCluster(
  cluster: ServeConfig["cluster"] & { redis_url: string },
  opts: { outputDir: string; maxJobs: number; env: Record<string, string | undefined>; log(line: string): void },
): Promise<ClusterNode> {
  const redis = await connectRedis(cluster.redis_url, opts.env.KINO_REDIS_PASSWORD);
  try {
    const artifacts = await openArtifacts(cluster.storage, opts.outputDir, opts.env);
    const store = new RedisJobStore(redis, jobsNamespace(cluster.queue), opts.outputDir, opts.maxJobs);
    let dispatch: QueueDispatch | null = null;
    let registry: NodeRegistry | null = null;
    return {
      store,
      artifacts,
      presign: cluster.storage.presign,
      dispatchWith(engine) {
        const settings = { queue: cluster.queue, stallMs: cluster.stall_ms, maxAttempts: cluster.max_attempts, concurrency: engine.workerCount };
        return (dispatch = new QueueDispatch(redis, settings, engine, store, artifacts, opts.outputDir, opts.log));
      },
      join({ host, port }, state) {
        const nodeId = cluster.node_id ?? `${hostname()}:${port}`;
        dispatch!.consume(nodeId);
        const anyAddress = host === "0.0.0.0" || host === "::";
        const url = cluster.node_url ?? `http://${anyAddress ? hostname() : host.includes(":") ? `[${host}]` : host}:${port}`;
        registry = new NodeRegistry(redis, cluster.queue, nodeId, url, cluster.stall_ms, state, opts.log);
        registry.start();
        return registry;
      },
      async close() {
        await registry?.remove();
        await dispatch?.close();
        redis.disconnect();
      },
    };
  } catch (err) {
    redis.disconnect();
    throw err;
  }
}

/** The URL without its password, for messages. */
export function redactedUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return url;
  }
}

/** A connection to Redis that answered a PING; `setting` names where the URL came from, for the error. */
export async function connectRedis(url: string, password: string | undefined, setting = "cluster.redis_url"): Promise<Redis> {
  // BullMQ's workers block on Redis, so a command must wait for a reconnect rather than fail after N tries.
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: null, connectTimeout: CONNECT_TIMEOUT_MS, ...(password ? { password } : {}) });
  // Reported below at start (the socket's own error says more than ioredis' "Connection is closed");
  // later blips are retried by ioredis.
  let socketError: Error | undefined;
  redis.on("error", (err: Error) => (socketError ??= err));
  try {
    await withTimeout(redis.connect().then(() => redis.ping()), CONNECT_TIMEOUT_MS);
    return redis;
  } catch (err) {
    redis.disconnect();
    throw new ClusterUnavailable(`cannot reach Redis at ${redactedUrl(url)} (${setting}): ${(socketError ?? (err as Error)).message}`);
  }
}

async function openArtifacts(
  storage: ServeConfig["cluster"]["storage"],
  outputDir: string,
  env: Record<string, string | undefined>,
): Promise<ArtifactStore> {
  if (storage.kind === "local") return new LocalArtifactStore(storage.path ?? outputDir);
  const settings = {
    endpoint: storage.endpoint,
    bucket: storage.bucket!,
    prefix: storage.prefix,
    region: storage.region,
    accessKeyId: env.KINO_S3_ACCESS_KEY_ID,
    secretAccessKey: env.KINO_S3_SECRET_ACCESS_KEY,
  };
  const store = new S3ArtifactStore(settings);
  try {
    await withTimeout(store.check(), CONNECT_TIMEOUT_MS);
  } catch (err) {
    throw new ClusterUnavailable(`cannot use the artifact store ${describeS3(settings)} (cluster.storage): ${s3Reason(err)}`);
  }
  return store;
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: Timer;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
