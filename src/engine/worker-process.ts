import type { Subprocess } from "bun";
import { selfCommand } from "./self-command.ts";
import { EXIT_DEVICE_LOST, type FromWorker, type ToWorker, type WorkerDevice, type WorkerInit } from "../worker/ipc.ts";
import type { WorkerSlot } from "./worker-devices.ts";

export interface WorkerEvents {
  onMessage(worker: WorkerProcess, message: FromWorker): void;
  /** The process ended; `expected` is true only after kill() from our side (shutdown), never after terminate(). */
  onExit(worker: WorkerProcess, description: string, expected: boolean): void;
}

/**
 * One `kino worker` child process: owns a backend and a loaded pipeline, runs one task at a time. It is
 * spawned (and respawned after a crash) with its slot's CUDA_VISIBLE_DEVICES, so it stays on its GPU.
 */
export class WorkerProcess {
  private proc: Subprocess | null = null;
  private closing = false;
  alive = false;
  /** Where the worker says it runs (its last ready message); null until it has loaded once. */
  device: WorkerDevice | null = null;

  constructor(
    readonly slot: WorkerSlot,
    private readonly init: WorkerInit,
    private readonly events: WorkerEvents,
  ) {}

  get index(): number {
    return this.slot.index;
  }

  get pid(): number | null {
    return this.alive ? (this.proc?.pid ?? null) : null;
  }

  spawn(): void {
    this.closing = false;
    const proc = Bun.spawn(selfCommand("worker"), {
      ipc: (message) => this.events.onMessage(this, message as FromWorker),
      serialization: "advanced",
      stdio: ["ignore", "inherit", "inherit"],
      env: {
        ...process.env,
        KINO_WORKER_INDEX: String(this.index),
        ...(this.slot.cudaVisibleDevices === undefined ? {} : { CUDA_VISIBLE_DEVICES: this.slot.cudaVisibleDevices }),
      },
    });
    this.proc = proc;
    this.alive = true;
    proc.send(this.init satisfies ToWorker);
    proc.exited.then(() => {
      if (this.proc !== proc) return;
      this.alive = false;
      const how = proc.signalCode
        ? `was killed by ${proc.signalCode}`
        : `exited with code ${proc.exitCode}${proc.exitCode === EXIT_DEVICE_LOST ? " (its device context is lost)" : ""}`;
      this.events.onExit(this, `worker process ${proc.pid} ${how}`, this.closing);
    });
  }

  send(message: ToWorker): void {
    this.proc?.send(message);
  }

  /**
   * Ends this process (SIGKILL), after `graceMs` if it has not exited by then, for a worker that must be
   * replaced: one stuck in a task, or one that lost its device and should be exiting on its own. Unlike
   * kill(), its exit counts as unexpected, so the engine restarts it.
   */
  terminate(graceMs = 0): void {
    const proc = this.proc;
    if (!proc || !this.alive) return;
    const end = () => this.proc === proc && this.alive && proc.kill("SIGKILL");
    if (graceMs <= 0) end();
    else setTimeout(end, graceMs);
  }

  async kill(): Promise<void> {
    this.closing = true;
    if (!this.proc || !this.alive) return;
    // SIGKILL: a worker ignores SIGTERM and SIGINT (they are the server's to act on, see src/worker/main.ts).
    this.proc.kill("SIGKILL");
    await this.proc.exited;
  }
}
