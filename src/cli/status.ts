// `kino status --redis URL [--queue NAME] [--json]`: a cluster at a glance, read straight from its
// Redis — the live nodes with their workers, free session slots and draining flag, the queue's depth,
// and the kept jobs by status. No node needs to answer: a node that died has dropped out of the
// registry (its entry expires after cluster.stall_ms).
import { connectRedis, redactedUrl } from "../cluster/open.ts";
import type { NodeEntry } from "../cluster/node-registry.ts";
import { readClusterStatus, type ClusterStatus } from "../cluster/status.ts";
import { UsageError, type ParsedArgs } from "./args.ts";

export async function status(args: ParsedArgs, env: Record<string, string | undefined>): Promise<void> {
  const unknown = [...Object.keys(args.flags).filter((f) => !["redis", "queue", "json"].includes(f)), ...Object.keys(args.overrides)];
  if (unknown.length) throw new UsageError(`Unknown option --${unknown[0]} for 'kino status' (see kino --help)`);
  const { redis: url, queue = "kino", json } = args.flags;
  if (typeof url !== "string") throw new UsageError("kino status needs --redis URL (the cluster's cluster.redis_url)");
  if (!/^rediss?:\/\//.test(url)) throw new UsageError(`--redis must be a redis:// or rediss:// URL, not ${JSON.stringify(url)}`);
  if (typeof queue !== "string" || !/^[A-Za-z0-9_-]+$/.test(queue)) throw new UsageError("--queue needs the cluster's queue name (cluster.queue, letters, digits, _ and -)");
  const redis = await connectRedis(url, env.KINO_REDIS_PASSWORD, "--redis");
  try {
    const found = await readClusterStatus(redis, queue);
    console.log(json === undefined ? formatStatus(found, redactedUrl(url), Date.now()) : JSON.stringify({ redis: redactedUrl(url), ...found }, null, 2));
  } finally {
    redis.disconnect();
  }
}

/** The text report: one line per node, then the queue and the jobs. */
export function formatStatus(found: ClusterStatus, url: string, now: number): string {
  const lines = [`cluster queue '${found.queue.name}' on ${url}`];
  if (!found.nodes.length) {
    lines.push("no nodes: none has sent a heartbeat within cluster.stall_ms");
  } else {
    const rows = found.nodes.map((node) => row(node, now));
    const header = ["NODE", "URL", "WORKERS UP", "SESSIONS FREE", "STATE", "LAST SEEN"];
    const widths = header.map((title, i) => Math.max(title.length, ...rows.map((r) => r[i]!.length)));
    for (const cells of [header, ...rows]) lines.push(cells.map((cell, i) => cell.padEnd(widths[i]!)).join("  ").trimEnd());
  }
  const { waiting, active, delayed } = found.queue;
  const { queued, in_progress, completed, failed } = found.jobs;
  lines.push(`queue: ${waiting} waiting, ${active} active, ${delayed} delayed`);
  lines.push(`jobs kept: ${queued} queued, ${in_progress} in progress, ${completed} completed, ${failed} failed`);
  return lines.join("\n");
}

function row(node: NodeEntry, now: number): string[] {
  const up = node.workers.filter((w) => w.up).length;
  return [
    node.node_id,
    node.url,
    `${up}/${node.workers.length}`,
    `${node.sessions.free}/${node.sessions.total}`,
    node.draining ? "draining" : "serving",
    `${(Math.max(0, now - node.last_seen) / 1000).toFixed(1)} s ago`,
  ];
}
