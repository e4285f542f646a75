import type { GenerationRequest, ModelCard } from "../pipelines/pipeline.ts";
import type { FromWorker, InteractionMessage, OutputSpec, StreamEvent, TaskResult, WorkerDevice, WorkerInit } from "../worker/ipc.ts";
import { StallGuard } from "./stall-guard.ts";
import { describeSlot, type WorkerSlot } from "./worker-devices.ts";
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
  /** Sent to every worker. */
  init: WorkerInit;
  /** One per worker process: its GPU (src/engine/worker-devices.ts). */
  slots: WorkerSlot[];
  /** generator.engine.stall_timeout_s: a running task with no progress this long has its worker
   *  replaced (stall-guard.ts); 0 never. */
  stallTimeoutS: number;
  log(line: string): void;
}

/** One worker as GET /health shows it. */
export interface WorkerStatus {
  index: number;
  pid: number | null;
  /** loading: starting or restarting; busy: running a job or a realtime session; down: not running. */
  state: "loading" | "ready" | "busy" | "down";
  /** The GPU slot the server pinned it to, null on the CPU backend. */
  gpu: number | null;
  /** What the worker found itself on, once it has loaded the model. */
  device: WorkerDevice | null;
}

/** Delay before restarting a worker that died; grows while restarts keep failing, so a broken model cannot spin. */
const RESTART_DELAYS_MS = [0, 500, 2000, 10000];
/** How long a worker that reported its device lost gets to exit on its own before it is killed. */
const LOST_EXIT_GRACE_MS = 2000;

/**
 * The serialized engine: a FIFO queue in front of worker processes. Each worker runs one task at a
 * time, so one loaded pipeline is never entered twice at once; with several workers (one per GPU)
 * each stays serialized, and the head of the queue goes to an idle worker on the least busy GPU.
 * A worker that dies fails only its running task and is restarted on the same GPU; so is one whose
 * task lost the device's context (it exits itself) or made no progress for stall_timeout_s (killed).
 */
export class Engine {
  private readonly queue: PendingTask[] = [];
  private readonly running = new Map<WorkerProcess, PendingTask>();
  private readonly ready = new Set<WorkerProcess>();
  private readonly workers: WorkerProcess[] = [];
  private readonly restartFailures = new Map<WorkerProcess, number>();
  private readonly stallGuard: StallGuard<WorkerProcess>;
  private open = false;
  /** Set while open() waits for the first load of every worker. */
  private startupWaiter: { ready(): void; failed(message: string): void } | null = null;
  card!: ModelCard;
  backend = "";

  private constructor(private readonly options: EngineOptions) {
    this.stallGuard = new StallGuard(options.stallTimeoutS * 1000, (worker) => this.stalled(worker));
  }

  /** Starts every worker and resolves once all have loaded the model (rejects if loading fails). */
  static async open(options: EngineOptions): Promise<Engine> {
    const engine = new Engine(options);
    await engine.start();
    return engine;
  }

  private start(): Promise<void> {
    return new Promise((resolve, reject) => {
      let pending = this.options.slots.length;
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
      for (const slot of this.options.slots) {
        const worker = new WorkerProcess(slot, this.options.init, {
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

  /** Every worker: where it is pinned, where it says it runs, and whether it is free. */
  workerStatus(): WorkerStatus[] {
    return this.workers.map((w) => ({
      index: w.index,
      pid: w.pid,
      state: !w.alive ? "down" : !this.ready.has(w) ? "loading" : this.running.has(w) ? "busy" : "ready",
      gpu: w.slot.gpu,
      device: w.device,
    }));
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
    for (let worker = this.idleWorker(); worker && this.queue.length; worker = this.idleWorker()) {
      const pending = this.queue.shift()!;
      this.running.set(worker, pending);
      this.stallGuard.progressed(worker);
      pending.task.onStart?.();
      worker.send({ type: "run", taskId: pending.task.id, request: pending.task.request, output: pending.task.output });
      for (const message of pending.inbox.splice(0)) worker.send(message);
    }
  }

  /**
   * A loaded worker with nothing to run, on the GPU running the fewest tasks (with two workers per GPU,
   * the second task goes to the other GPU, not beside the first); the lowest index among equals.
   */
  private idleWorker(): WorkerProcess | undefined {
    const busyOnGpu = (gpu: number | null) => [...this.running.keys()].filter((w) => w.slot.gpu === gpu).length;
    let best: WorkerProcess | undefined;
    let bestBusy = Infinity;
    for (const worker of this.workers) {
      if (!worker.alive || !this.ready.has(worker) || this.running.has(worker)) continue;
      const busy = busyOnGpu(worker.slot.gpu);
      if (busy < bestBusy) [best, bestBusy] = [worker, busy];
    }
    return best;
  }

  private onMessage(worker: WorkerProcess, message: FromWorker): void {
    switch (message.type) {
      case "ready": {
        this.card = message.card;
        this.backend = message.device.backend;
        worker.device = message.device;
        const { cuda_visible_devices: visible, pci_bus_id: bus } = message.device;
        this.options.log(
          `kino: worker ${worker.index} (pid ${worker.pid}${visible === null ? "" : `, CUDA_VISIBLE_DEVICES=${visible}`}) runs on ${message.device.backend}${bus ? ` at PCI ${bus}` : ""}`,
        );
        this.ready.add(worker);
        this.restartFailures.delete(worker);
        this.startupWaiter?.ready();
        this.dispatch();
        return;
      }
      case "init_failed":
        if (this.startupWaiter && !this.open) {
          // With one worker the message says it all; with several, say which worker (and GPU) failed.
          const which = this.workers.length > 1 ? `worker ${worker.index} of ${this.workers.length} (${describeSlot(worker.slot)}) could not load the model: ` : "";
          return this.startupWaiter.failed(which + message.message);
        }
        this.options.log(`worker ${worker.index} (${describeSlot(worker.slot)}): model failed to load: ${message.message}`);
        void worker.kill().then(() => this.scheduleRestart(worker));
        return;
      case "progress": {
        const pending = this.running.get(worker);
        if (pending) this.stallGuard.progressed(worker);
        pending?.task.onProgress?.(message.fraction, message.stage);
        return;
      }
      case "idle":
        if (!this.running.has(worker)) return;
        return message.idle ? this.stallGuard.stop(worker) : this.stallGuard.progressed(worker);
      case "chunk":
      case "interaction_failed": {
        const pending = this.running.get(worker);
        if (pending && message.type === "chunk") this.stallGuard.progressed(worker);
        pending?.task.onStreamEvent?.(message);
        return;
      }
      case "done":
      case "failed": {
        if (message.type === "failed" && message.deviceLost) this.deviceLost(worker, message.message);
        const pending = this.running.get(worker);
        if (!pending || pending.task.id !== message.taskId) return;
        this.running.delete(worker);
        this.stallGuard.stop(worker);
        if (message.type === "done") pending.resolve(message.result);
        else pending.reject(new GenerationError(message.message, message.aborted));
        this.dispatch();
      }
    }
  }

  /**
   * The worker's task lost the device's context: the worker exits on its own (EXIT_DEVICE_LOST) and is
   * restarted like any worker that died. Until then it takes nothing more, so the queue waits for its
   * successor instead of failing on it.
   */
  private deviceLost(worker: WorkerProcess, message: string): void {
    if (!this.ready.delete(worker)) return;
    this.options.log(`worker ${worker.index} (${describeSlot(worker.slot)}, pid ${worker.pid}) lost its device: ${message}; it exits and is restarted`);
    worker.terminate(LOST_EXIT_GRACE_MS);
  }

  /** No progress from the worker's task for stall_timeout_s: fail the task, kill the worker, restart it. */
  private stalled(worker: WorkerProcess): void {
    const pending = this.running.get(worker);
    if (!pending) return;
    this.running.delete(worker);
    this.ready.delete(worker);
    const limit = `${this.options.stallTimeoutS} s (generator.engine.stall_timeout_s)`;
    this.options.log(`worker ${worker.index} (${describeSlot(worker.slot)}, pid ${worker.pid}): task ${pending.task.id} made no progress for ${limit}; killing the worker to restart it`);
    worker.terminate();
    pending.reject(new GenerationError(`No progress on this job for ${limit}: its worker is killed and restarted`));
  }

  private onExit(worker: WorkerProcess, description: string, expected: boolean): void {
    this.ready.delete(worker);
    this.stallGuard.stop(worker);
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
