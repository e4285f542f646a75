// The cluster's node registry: every node keeps one Redis key describing itself — where it is reached,
// its worker processes, its free realtime session slots, whether it is draining — with a TTL that its
// heartbeat renews. A node that dies stops renewing and drops out when the key expires; a node that
// exits cleanly deletes its key. Realtime placement (server_busy naming nodes with room) and
// `kino status` read it.
import type Redis from "ioredis";

export interface NodeEntry {
  node_id: string;
  /** Where the node itself is reached (cluster.node_url, else http://host:port). */
  url: string;
  workers: { index: number; up: boolean }[];
  sessions: { total: number; free: number };
  draining: boolean;
  /** Unix milliseconds of the node's last heartbeat or change. */
  last_seen: number;
}

/** What a node says about itself at each heartbeat; the registry adds who and where it is. */
export type NodeState = Pick<NodeEntry, "workers" | "sessions" | "draining">;

/** What the serving layer asks of the registry. */
export interface NodeDirectory {
  readonly nodeId: string;
  /** Publishes this node's state now (its sessions or its draining changed), besides the heartbeat. */
  publish(): void;
  /** The other nodes that would accept a realtime session now, the most free slots first. */
  nodesWithRoom(): Promise<NodeEntry[]>;
}

/** `kino-nodes:<queue>:`: one registry per cluster queue, as the job records are. */
const keyPrefix = (queue: string) => `kino-nodes:${queue}:`;

/** Every live node of the cluster on `queue`, by node id. */
export async function listNodes(redis: Redis, queue: string): Promise<NodeEntry[]> {
  const keys: string[] = [];
  let cursor = "0";
  do {
    const [next, found] = await redis.scan(cursor, "MATCH", `${keyPrefix(queue)}*`, "COUNT", 200);
    keys.push(...found);
    cursor = next;
  } while (cursor !== "0");
  if (!keys.length) return [];
  // A key may expire between the scan and the read: it is left out.
  const values = await redis.mget(...new Set(keys));
  return values
    .filter((value): value is string => value !== null)
    .map((value) => JSON.parse(value) as NodeEntry)
    .sort((a, b) => a.node_id.localeCompare(b.node_id));
}

export class NodeRegistry implements NodeDirectory {
  private timer: Timer | undefined;
  private stopped = false;

  /**
   * `ttlMs` is how long the entry outlives the node's last heartbeat (cluster.stall_ms: the same silence
   * after which its jobs count as abandoned); the heartbeat comes three times within it.
   */
  constructor(
    private readonly redis: Redis,
    private readonly queue: string,
    readonly nodeId: string,
    private readonly url: string,
    private readonly ttlMs: number,
    private readonly state: () => NodeState,
    private readonly log: (line: string) => void,
  ) {}

  private get key(): string {
    return keyPrefix(this.queue) + this.nodeId;
  }

  start(): void {
    this.publish();
    this.timer = setInterval(() => this.publish(), Math.max(100, Math.floor(this.ttlMs / 3)));
  }

  publish(): void {
    if (this.stopped) return;
    const entry: NodeEntry = { node_id: this.nodeId, url: this.url, ...this.state(), last_seen: Date.now() };
    // Commands on one connection apply in order, so the last call's state is the one that stays.
    this.redis.set(this.key, JSON.stringify(entry), "PX", this.ttlMs).catch((err) => this.log(`cluster registry: ${(err as Error).message}`));
  }

  async nodesWithRoom(): Promise<NodeEntry[]> {
    // Commands wait while Redis reconnects; a refusal must not: without an answer soon, it names no one.
    const nodes = await within(listNodes(this.redis, this.queue), ANSWER_WITHIN_MS).catch(() => [] as NodeEntry[]);
    return nodes
      .filter((node) => node.node_id !== this.nodeId && !node.draining && node.sessions.free > 0)
      .sort((a, b) => b.sessions.free - a.sessions.free);
  }

  /** Leaves the registry at a clean exit, so no one is sent to a node that is gone. */
  async remove(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await within(this.redis.del(this.key), ANSWER_WITHIN_MS).catch(() => 0);
  }
}

/** How long a registry read or the removal at exit waits for Redis. */
const ANSWER_WITHIN_MS = 1000;

function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: Timer;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Redis gave no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
