// `kino worker`: the child process that owns the backend and the loaded pipeline. It receives one
// task at a time from the engine, runs the pipeline, encodes, and writes the output files itself or,
// for a realtime stream, sends each chunk's fMP4 fragment back (frames never cross the process boundary).
// A task that loses the device's context reports its failure and ends the process (task-failure.ts).
import { EXIT_DEVICE_LOST, type FromWorker, type TaskResult, type ToWorker } from "./ipc.ts";
import { Runner } from "./runner.ts";
import { StreamTask } from "./stream-task.ts";
import { streamOverlap } from "./stream-overlap.ts";
import { sendThenExit, taskFailure } from "./task-failure.ts";
import { prewarmStreamEncoder } from "../media/stream/threaded-fragmenter.ts";

export function runWorker(): void {
  let runner: Runner | null = null;
  const running = new Map<string, AbortController>();
  let stream: StreamTask | null = null;
  /** Set once a task lost the device's context: the process is on its way out and runs nothing more. */
  let lost: string | null = null;
  const send = (message: FromWorker) => process.send!(message);
  // The worker has no reason to outlive the server: if the IPC channel closes, exit.
  process.on("disconnect", () => process.exit(0));
  // A terminal's Ctrl-C and systemd's stop signal the whole process group: the server then drains,
  // which needs its workers to finish the running jobs, so only the server decides when they end.
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => {});

  process.on("message", async (message: ToWorker) => {
    switch (message.type) {
      case "init":
        try {
          runner = await Runner.load(message);
          // the first session's first chunk should not wait for the encoder thread to start
          if (runner.pipeline.card.supports_streaming && streamOverlap(runner.device)) void prewarmStreamEncoder().catch(() => {});
          const device = { backend: runner.backend, cuda_visible_devices: process.env.CUDA_VISIBLE_DEVICES ?? null, pci_bus_id: runner.pciBusId };
          send({ type: "ready", card: runner.pipeline.card, device });
        } catch (err) {
          send({ type: "init_failed", message: (err as Error).message });
        }
        return;
      case "abort":
        running.get(message.taskId)?.abort();
        return;
      case "interaction":
        stream?.interact(message);
        return;
      case "run": {
        const { taskId, request, output } = message;
        if (lost) return send({ type: "failed", taskId, message: lost, aborted: false, deviceLost: true });
        const controller = new AbortController();
        running.set(taskId, controller);
        const progress = (fraction: number, stage: string) => send({ type: "progress", taskId, fraction, stage });
        try {
          if (!runner) throw new Error("The worker has no model loaded");
          let result: TaskResult;
          if (output.kind === "stream") {
            stream = new StreamTask(runner.pipeline, taskId, request, output.pacing, send, streamOverlap(runner.device));
            result = await stream.run(controller.signal, (fraction) => progress(fraction, "denoise"));
          } else {
            result = await runner.runToFiles(request, output, controller.signal, progress);
          }
          send({ type: "done", taskId, result });
        } catch (err) {
          const failure = taskFailure(taskId, err, controller.signal.aborted);
          if (!failure.lost) send(failure.message);
          else {
            lost = failure.lost.message;
            sendThenExit(failure.message, EXIT_DEVICE_LOST);
          }
        } finally {
          running.delete(taskId);
          stream = null;
        }
      }
    }
  });
}
