import type { GenerationRequest, ModelCard } from "../pipelines/pipeline.ts";
import type { FromWorker, InteractionMessage, OutputSpec, StreamEvent, TaskResult, WorkerInit } from "../worker/ipc.ts";
import { WorkerProcess } from "./worker-process.ts";

/** A generation failure (the job fails with code generation_failed); `aborted` when we cancelled it. */
export class GenerationError extends Error {
  constructor(
    message: string,
    readonly aborted = false,
  ) {
    super(message);
  }
}

export interface EngineTask {
  id: string;
  request: GenerationRequest;
  output: OutputSpec;
  /** The task left the queue and a worker started it. */
  onStart?(): void;
  onProgress?(fraction: number, stage: string): void;
  /** Streams: chunks and interaction failures as the worker reports them. */
  onStreamEvent?(event: StreamEvent): void;
}

interface PendingTask {
  task: EngineTask;
  /** Interactions that arrived while the task was queued; sent right after it starts. */
  inbox: InteractionMessage[];
  resolve(result: TaskResult): void;
  reject(err: GenerationError): void;
}

export interface EngineOptions {
  /** Sent to every worker; `gpu` is set per worker (worker i uses GPU i mod `gpus`). */
  init: Omit<WorkerInit, "gpu">;
  workers: number;
  gpus: number;
  log(line: string): void;
}

/** Delay before restarting a worker that died; grows while restarts keep failing, so a broken model cannot spin. */
const RESTART_DELAYS_MS = [0, 500, 2000, 10000];

/**
 * The serialized engine: a FIFO queue in front of worker processes. Each worker runs one task at a
 * time, so one loaded pipeline is never entered twice at once; with several workers (one per GPU)
 * each stays serialized. A worker that dies fails only its running task and is restarted.
 */
export class Engine {
  private readonly queue: PendingTask[] = [];
  private readonly running = new Map<WorkerProcess, PendingTask>();
  private readonly ready = new Set<WorkerProcess>();
  private readonly workers: WorkerProcess[] = [];
  private readonly restartFailures = new Map<WorkerProcess, number>();
  private open = false;
  /** Set while open() waits for the first load of every worker. */
  private startupWaiter: { ready(): void; failed(message: string): void } | null = null;
  card!: ModelCard;
  backend = "";

  private constructor(private readonly options: EngineOptions) {}

  /** Starts every worker and resolves once all have loaded the model (rejects if loading fails). */
  static async open(options: EngineOptions): Promise<Engine> {
    const engine = new Engine(options);
    await engine.start();
    return engine;
  }

  private start(): Promise<void> {
    return new Promise((resolve, reject) => {
      let pending = this.options.workers;
      this.startupWaiter = {
        ready: () => {
          if (--pending > 0) return;
          this.open = true;
          this.startupWaiter = null;
          resolve();
        },
        failed: (message) => {
          this.startupWaiter = null;
          void this.close();
          reject(new Error(message));
        },
      };
      for (let i = 0; i < this.options.workers; i++) {
        const worker = new WorkerProcess(i, { ...this.options.init, gpu: i % this.options.gpus }, {
          onMessage: (w, m) => this.onMessage(w, m),
          onExit: (w, description, expected) => this.onExit(w, description, expected),
        });
        this.workers.push(worker);
        worker.spawn();
      }
    });
  }

  /** 200 on /health only while the engine is open and every worker process is alive and loaded. */
  healthy(): boolean {
    return this.open && this.workers.every((w) => w.alive && this.ready.has(w));
  }

  /** Worker processes: how many tasks this engine runs at once. */
  get workerCount(): number {
    return this.workers.length;
  }

  /** Each worker process: up while it is alive with its model loaded (down while dead or restarting). */
  workerStates(): { index: number; up: boolean }[] {
    return this.workers.map((w) => ({ index: w.index, up: this.open && w.alive && this.ready.has(w) }));
  }

  /** Tasks waiting in the FIFO and tasks a worker is running. */
  taskCounts(): { waiting: number; running: number } {
    return { waiting: this.queue.length, running: this.running.size };
  }

  /** Tasks queued or running. */
  get busy(): number {
    return this.queue.length + this.running.size;
  }

  /** Resolves once nothing is queued or running, or at `deadline` (ms since the epoch), whichever comes first. */
  async idle(deadline: number): Promise<void> {
    while (this.busy > 0 && Date.now() < deadline) await Bun.sleep(Math.min(100, Math.max(1, deadline - Date.now())));
  }

  workerPids(): number[] {
    return this.workers.map((w) => w.pid).filter((pid): pid is number => pid !== null);
  }

  /** Queues a task; resolves with what the worker wrote, rejects with GenerationError. */
  run(task: EngineTask): Promise<TaskResult> {
    if (!this.open) return Promise.reject(new GenerationError("The engine is closed"));
    return new Promise((resolve, reject) => {
      this.queue.push({ task, resolve, reject, inbox: [] });
      this.dispatch();
    });
  }

  /** Forwards a realtime interaction to the worker running the task (or holds it until it starts). */
  interact(message: InteractionMessage): void {
    const queued = this.queue.find((p) => p.task.id === message.taskId);
    if (queued) return void queued.inbox.push(message);
    for (const [worker, pending] of this.running) {
      if (pending.task.id === message.taskId) worker.send(message);
    }
  }

  /**
   * Removes a queued task at once, or asks the worker to stop a running one at its next step (a
   * stream stops gracefully: it finishes with its trailer).
   */
  cancel(taskId: string): void {
    const index = this.queue.findIndex((p) => p.task.id === taskId);
    if (index >= 0) {
      const [pending] = this.queue.splice(index, 1);
      pending!.reject(new GenerationError("Cancelled before it started", true));
      return;
    }
    for (const [worker, pending] of this.running) {
      if (pending.task.id === taskId) worker.send({ type: "abort", taskId });
    }
  }

  async close(): Promise<void> {
    this.open = false;
    for (const pending of this.queue.splice(0)) pending.reject(new GenerationError("The engine is shutting down"));
    await Promise.all(this.workers.map((w) => w.kill()));
  }

  private dispatch(): void {
    for (const worker of this.workers) {
      if (!this.queue.length) return;
      if (!worker.alive || !this.ready.has(worker) || this.running.has(worker)) continue;
      const pending = this.queue.shift()!;
      this.running.set(worker, pending);
      pending.task.onStart?.();
      worker.send({ type: "run", taskId: pending.task.id, request: pending.task.request, output: pending.task.output });
      for (const message of pending.inbox.splice(0)) worker.send(message);
    }
  }

  private onMessage(worker: WorkerProcess, message: FromWorker): void {
    switch (message.type) {
      case "ready":
        this.card = message.card;
        this.backend = message.backend;
        this.ready.add(worker);
        this.restartFailures.delete(worker);
        this.startupWaiter?.ready();
        this.dispatch();
        return;
      case "init_failed":
        this.options.log(`worker ${worker.index}: model failed to load: ${message.message}`);
        if (this.startupWaiter && !this.open) return this.startupWaiter.failed(message.message);
        void worker.kill().then(() => this.scheduleRestart(worker));
        return;
      case "progress":
        this.running.get(worker)?.task.onProgress?.(message.fraction, message.stage);
        return;
      case "chunk":
      case "interaction_failed":
        this.running.get(worker)?.task.onStreamEvent?.(message);
        return;
      case "done":
      case "failed": {
        const pending = this.running.get(worker);
        if (!pending || pending.task.id !== message.taskId) return;
        this.running.delete(worker);
        if (message.type === "done") pending.resolve(message.result);
        else pending.reject(new GenerationError(message.message, message.aborted));
        this.dispatch();
      }
    }
  }

  private onExit(worker: WorkerProcess, description: string, expected: boolean): void {
    this.ready.delete(worker);
    const pending = this.running.get(worker);
    this.running.delete(worker);
    pending?.reject(new GenerationError(`The ${description} while running this job`));
    // A worker that dies while the model first loads (a crash in a kernel, OOM) fails the start.
    if (!expected && this.startupWaiter) return this.startupWaiter.failed(`The ${description} while loading the model`);
    if (expected || !this.open) return;
    this.options.log(`${description}; restarting it`);
    this.scheduleRestart(worker);
  }

  private scheduleRestart(worker: WorkerProcess): void {
    if (!this.open) return;
    const failures = this.restartFailures.get(worker) ?? 0;
    this.restartFailures.set(worker, failures + 1);
    const delay = RESTART_DELAYS_MS[Math.min(failures, RESTART_DELAYS_MS.length - 1)]!;
    setTimeout(() => this.open && !worker.alive && worker.spawn(), delay);
  }
}
