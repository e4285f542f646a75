// The engine's guard against a worker stuck in a task: a kernel that deadlocks, or any op that never
// returns, blocks the worker's thread for good (compute GPUs on Linux have no watchdog that would end
// the kernel), and the worker could never report the failure itself. Each running task is watched
// from the moment the engine hands it to a worker; the progress a worker reports (each denoising step,
// each stream chunk) restarts its clock. A stream that waits for its viewer (pace_to_media_time) is
// not computing, and says so: its clock stops until it computes again. A clock that runs out calls
// `onStall`, once, and the engine replaces the worker.

export class StallGuard<W> {
  private readonly timers = new Map<W, Timer>();

  /** `timeoutMs` 0: never stalls (generator.engine.stall_timeout_s 0). */
  constructor(
    private readonly timeoutMs: number,
    private readonly onStall: (worker: W) => void,
  ) {}

  /** The worker started a task, or reported progress on it, or computes again after a wait. */
  progressed(worker: W): void {
    if (this.timeoutMs <= 0) return;
    const timer = this.timers.get(worker);
    if (timer) return void timer.refresh();
    this.timers.set(
      worker,
      setTimeout(() => {
        this.timers.delete(worker);
        this.onStall(worker);
      }, this.timeoutMs),
    );
  }

  /** The worker's task waits for something other than the device, or it ended: no clock runs. */
  stop(worker: W): void {
    clearTimeout(this.timers.get(worker));
    this.timers.delete(worker);
  }
}
