// Who runs a stored job. On one node the engine's own FIFO is the queue, so a job runs here as soon as
// it is dispatched (LocalDispatch); in a cluster the job goes onto the shared queue and whichever node
// takes it runs it (src/cluster/queue-dispatch.ts). Either way the same function runs it: the one the
// serving layer registers with serve(), so the job lifecycle has one code path.
import type { GenerationRequest } from "../pipelines/pipeline.ts";
import type { Engine } from "./engine.ts";

/**
 * Runs one job on this node to its end (completed or failed, recorded in the job store); never throws.
 * "handed_back": the node drained before the job finished and the job is queued again for another node.
 * `queuedAt` is when the job was queued (epoch ms), for its latency.
 */
export type RunJob = (id: string, request: GenerationRequest, queuedAt: number) => Promise<RunEnd>;
export type RunEnd = "ended" | "handed_back";

/** Jobs in the queue by state: waiting, active (being run) and, for a queue that retries later, delayed. */
export type QueueDepth = Record<string, number>;

export interface JobDispatch {
  /** Registers how this node runs a job; called once, before the first dispatch. */
  serve(run: RunJob): void;
  /** Hands a job already in the job store to whoever will run it. */
  dispatch(id: string, request: GenerationRequest): Promise<void>;
  /** Stops a job wherever it is: a queued one never starts, a running one aborts at its next step. */
  cancel(id: string): Promise<void>;
  /**
   * Whether a job this node cannot finish (it drains) can go back to the queue for another node; when
   * not, the job fails.
   */
  readonly handsBack: boolean;
  /** This node takes no more jobs (it drains); jobs already taken go on. */
  stopTaking(): Promise<void>;
  /** How many jobs wait in the queue and how many run, for /metrics. */
  depth(): Promise<QueueDepth>;
}

export class LocalDispatch implements JobDispatch {
  readonly handsBack = false;
  private run: RunJob = async () => {
    throw new Error("LocalDispatch: serve() was not called");
  };

  constructor(private readonly engine: Engine) {}

  serve(run: RunJob): void {
    this.run = run;
  }

  async dispatch(id: string, request: GenerationRequest): Promise<void> {
    void this.run(id, request, Date.now());
  }

  async cancel(id: string): Promise<void> {
    this.engine.cancel(id);
  }

  /** Nothing to stop: on one node a job is dispatched only by a request, and a draining node refuses those. */
  async stopTaking(): Promise<void> {}

  /** The engine's own FIFO is this node's queue (realtime streams and images wait in it too). */
  async depth(): Promise<QueueDepth> {
    const { waiting, running } = this.engine.taskCounts();
    return { waiting, active: running };
  }
}
