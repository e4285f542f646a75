// Starting kino's server: open the engine (workers load the model), build the shared context, listen.
import { mkdir } from "node:fs/promises";
import { resolve } from "node:path";
import type { LoadedConfig } from "../config/load.ts";
import { admissionContext } from "../api/admission/context.ts";
import { Engine } from "../engine/engine.ts";
import { SqliteJobStore } from "../engine/sqlite-store.ts";
import { LocalArtifactStore } from "../engine/local-artifacts.ts";
import { LocalDispatch } from "../engine/job-dispatch.ts";
import { assignWorkerDevices, DeviceAssignmentError, type WorkerSlot } from "../engine/worker-devices.ts";
import { ClusterUnavailable, openCluster, type ClusterNode } from "../cluster/open.ts";
import { storageError } from "../media/storage.ts";
import { ImageJobs } from "../api/images/jobs.ts";
import { VideoJobs } from "../api/videos/jobs.ts";
import { NodeMetrics } from "../api/metrics/node-metrics.ts";
import { loadOptionsFrom } from "../worker/runner.ts";
import { createApp } from "./app.ts";
import type { ServerContext } from "../api/context.ts";
import { ServingNode } from "../api/node.ts";
import { RealtimeSessions } from "../api/realtime/sessions.ts";
import { drainNode } from "../api/drain.ts";

/** The server cannot start for a reason the operator must fix (a port in use); printed without a stack. */
export class StartupError extends Error {}

export interface RunningServer {
  url: string;
  port: number;
  ctx: ServerContext;
  /**
   * SIGTERM's first half: stop taking work, let running jobs finish for server.drain_timeout_s, end
   * sessions (session.done, reason "draining"); stop() then closes everything.
   */
  drain(): Promise<void>;
  stop(): Promise<void>;
}

export async function startServer(loaded: LoadedConfig, log: (line: string) => void = console.log): Promise<RunningServer> {
  const { generator, server } = loaded.config;
  // Before the model loads (minutes for a large one): is the port free?
  if (server.port !== 0) listenOn(server.host, server.port, () => new Response()).stop(true);
  // One worker per GPU, each pinned to it: a server environment that cannot give them is said at once.
  let slots: WorkerSlot[];
  try {
    slots = assignWorkerDevices(generator.engine, process.env.CUDA_VISIBLE_DEVICES);
  } catch (err) {
    throw err instanceof DeviceAssignmentError ? new StartupError(err.message) : err;
  }
  const outputDir = resolve(server.output_dir);
  // In a cluster the jobs live in Redis and the artifacts in the shared store: both are checked before
  // the model loads, so a node that cannot join says so at once.
  const cluster = await joinCluster(loaded, outputDir, log);
  const store = cluster?.store ?? (await openStore(outputDir, server.max_jobs, log));
  const engine = await Engine.open({ init: { type: "init", ...loadOptionsFrom(loaded) }, slots, stallTimeoutS: generator.engine.stall_timeout_s, log }).catch(async (err) => {
    store.close();
    await cluster?.close();
    // The worker's own words (which worker, why): nothing in the server's stack would help more.
    throw new StartupError((err as Error).message);
  });
  const dispatch = cluster ? cluster.dispatchWith(engine) : new LocalDispatch(engine);
  const metrics = new NodeMetrics({
    jobCounts: () => store.countByStatus(),
    queueDepth: () => dispatch.depth(),
    workers: () => engine.workerStates(),
    engineTasks: () => engine.taskCounts(),
    cluster: cluster !== null,
  });
  const artifacts = cluster?.artifacts ?? new LocalArtifactStore(outputDir);
  const videos = cluster
    ? new VideoJobs(engine, store, artifacts, dispatch, metrics, outputDir, log, cluster.presign)
    : new VideoJobs(engine, store, artifacts, dispatch, metrics, outputDir, log);
  const node = new ServingNode(cluster !== null);
  const ctx: ServerContext = {
    config: loaded,
    node,
    sessions: new RealtimeSessions(server.realtime.max_sessions, () => node.changed()),
    engine,
    videos,
    images: new ImageJobs(engine, store, artifacts, metrics, outputDir, log),
    metrics,
    admission: admissionContext(loaded, engine.card),
    references: {
      outputDir,
      allowedLocalRoots: server.references.allowed_local_roots,
      remote: {
        enabled: server.references.remote.enabled,
        allowHosts: server.references.remote.allow_hosts,
        maxBytes: server.references.remote.max_bytes,
        timeoutMs: server.references.remote.timeout_ms,
      },
      maxBytes: server.references.max_bytes,
      maxPixels: server.references.max_pixels,
    },
    startedAt: Math.floor(Date.now() / 1000),
    log,
  };
  const app = createApp(ctx);
  try {
    // Bun's own body limit answers 413 without our envelope, so it is set out of the way; every body is
    // read through readBodyBytes, which enforces server.max_body_bytes while streaming.
    app.listen({ hostname: server.host, port: server.port, maxRequestBodySize: Number.MAX_SAFE_INTEGER, reusePort: false });
  } catch (err) {
    await cluster?.close();
    await engine.close();
    store.close();
    throw listenError(err, server.host, server.port);
  }
  const port = app.server!.port!;
  const anyAddress = server.host === "0.0.0.0" || server.host === "::";
  const host = anyAddress ? "127.0.0.1" : server.host;
  const where = anyAddress ? `listening on ${server.host}:${port} (http://${host}:${port} from this machine)` : `at http://${host}:${port}`;
  if (cluster) {
    const registry = cluster.join({ host: server.host, port }, () => ({
      workers: engine.workerStates(),
      sessions: { total: ctx.sessions.total, free: ctx.sessions.free },
      draining: node.draining,
    }));
    node.directory = registry;
    metrics.setNode(registry.nodeId);
    log(`kino: node '${registry.nodeId}' takes jobs from cluster queue '${loaded.config.cluster.queue}'`);
  }
  log(`kino: serving '${ctx.admission.servedModelId}' (${engine.card.name} on ${engine.backend}) ${where}`);
  return {
    url: `http://${host}:${port}`,
    port,
    ctx,
    async drain() {
      const timeout = server.drain_timeout_s;
      log(`kino: draining: no new jobs or sessions; running jobs have ${timeout} s to finish`);
      const { sessions, jobs } = await drainNode(ctx, timeout * 1000);
      const cut = jobs.cutShort
        ? `; ${jobs.cutShort} still running at the deadline were ${cluster ? `handed back to the queue (${jobs.handedBack})` : "failed"}`
        : "";
      log(`kino: drained: ${sessions} realtime session(s) ended, ${jobs.running} job(s) were running${cut}`);
    },
    async stop() {
      await app.stop(true);
      await cluster?.close();
      await engine.close();
      store.close();
    },
  };
}

/**
 * Binds host:port alone: Elysia's Bun adapter asks for SO_REUSEPORT, which lets a second server share
 * the port and take half of its requests, so kino turns it off and refuses a port in use.
 */
function listenOn(host: string, port: number, fetch: () => Response) {
  try {
    return Bun.serve({ hostname: host, port, reusePort: false, fetch });
  } catch (err) {
    throw listenError(err, host, port);
  }
}

function listenError(err: unknown, host: string, port: number): Error {
  if ((err as { code?: string }).code === "EADDRINUSE") {
    return new StartupError(`port ${port} is in use on ${host}: another kino or program is listening there (choose another with --server.port)`);
  }
  return new StartupError(`cannot listen on ${host}:${port}: ${(err as Error).message}`);
}

/** Connects to the cluster when cluster.redis_url is set; one that cannot be joined is a start-up error. */
async function joinCluster(loaded: LoadedConfig, outputDir: string, log: (line: string) => void): Promise<ClusterNode | null> {
  const { cluster, server } = loaded.config;
  if (cluster.redis_url === undefined) return null;
  await mkdir(outputDir, { recursive: true });
  try {
    return await openCluster({ ...cluster, redis_url: cluster.redis_url }, { outputDir, maxJobs: server.max_jobs, env: process.env, log });
  } catch (err) {
    if (err instanceof ClusterUnavailable) throw new StartupError(err.message);
    throw err;
  }
}

/** The job store under output_dir; a directory kino cannot use is a start-up error that says why. */
async function openStore(outputDir: string, maxJobs: number, log: (line: string) => void): Promise<SqliteJobStore> {
  try {
    await mkdir(outputDir, { recursive: true });
    return await SqliteJobStore.open(outputDir, maxJobs, log);
  } catch (err) {
    throw new StartupError(`server.output_dir ${outputDir} cannot be used: ${storageError(err, "create it").message}`);
  }
}
