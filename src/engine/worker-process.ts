import type { Subprocess } from "bun";
import { selfCommand } from "./self-command.ts";
import type { FromWorker, ToWorker, WorkerDevice, WorkerInit } from "../worker/ipc.ts";
import type { WorkerSlot } from "./worker-devices.ts";

export interface WorkerEvents {
  onMessage(worker: WorkerProcess, message: FromWorker): void;
  /** The process ended; `expected` is true only after kill() from our side (shutdown). */
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
      const how = proc.signalCode ? `was killed by ${proc.signalCode}` : `exited with code ${proc.exitCode}`;
      this.events.onExit(this, `worker process ${proc.pid} ${how}`, this.closing);
    });
  }

  send(message: ToWorker): void {
    this.proc?.send(message);
  }

  async kill(): Promise<void> {
    this.closing = true;
    if (!this.proc || !this.alive) return;
    // SIGKILL: a worker ignores SIGTERM and SIGINT (they are the server's to act on, see src/worker/main.ts).
    this.proc.kill("SIGKILL");
    await this.proc.exited;
  }
}
