// `kino worker`: the child process that owns the backend and the loaded pipeline. It receives one
// task at a time from the engine, runs the pipeline, encodes, and writes the output files itself or,
// for a realtime stream, sends each chunk's fMP4 fragment back (frames never cross the process boundary).
import { loadPipeline } from "../pipelines/load.ts";
import type { Pipeline } from "../pipelines/pipeline.ts";
import { writeOutputs } from "../media/write-outputs.ts";
import { StreamTask } from "../realtime/stream-task.ts";
import type { FromWorker, TaskResult, ToWorker } from "./ipc.ts";

/** Share of the job's progress bar given to encoding and writing after the pipeline finishes. */
const ENCODE_SHARE = 0.1;

export function runWorker(): void {
  let pipeline: Pipeline | null = null;
  const running = new Map<string, AbortController>();
  let stream: StreamTask | null = null;
  const send = (message: FromWorker) => process.send!(message);
  // The worker has no reason to outlive the server: if the IPC channel closes, exit.
  process.on("disconnect", () => process.exit(0));

  process.on("message", async (message: ToWorker) => {
    switch (message.type) {
      case "init":
        try {
          const loaded = await loadPipeline(message);
          pipeline = loaded.pipeline;
          send({ type: "ready", card: pipeline.card, backend: loaded.backend });
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
        const controller = new AbortController();
        running.set(message.taskId, controller);
        const { taskId, request, output } = message;
        const started = performance.now();
        let peakRss = process.memoryUsage().rss;
        const progress = (fraction: number, stage: string) => {
          peakRss = Math.max(peakRss, process.memoryUsage().rss);
          send({ type: "progress", taskId, fraction, stage });
        };
        try {
          if (!pipeline) throw new Error("The worker has no model loaded");
          let result: TaskResult;
          if (output.kind === "stream") {
            stream = new StreamTask(pipeline, taskId, request, output.pacing, send);
            result = await stream.run(controller.signal, (fraction) => progress(fraction, "denoise"));
          } else {
            const generated = await pipeline.generate(request, {
              signal: controller.signal,
              onProgress: (p) => progress(p.fraction * (1 - ENCODE_SHARE), p.stage),
            });
            controller.signal.throwIfAborted();
            progress(1 - ENCODE_SHARE, "encode");
            const encodeStart = performance.now();
            const files = await writeOutputs(generated, output);
            peakRss = Math.max(peakRss, process.memoryUsage().rss);
            result = {
              files,
              inference_time_s: (performance.now() - started) / 1000,
              stage_durations: { ...generated.stage_durations, encode: (performance.now() - encodeStart) / 1000 },
              peak_memory_mb: generated.peak_memory_mb ?? Math.round(peakRss / 2 ** 20),
            };
          }
          send({ type: "done", taskId, result });
        } catch (err) {
          const aborted = controller.signal.aborted;
          send({ type: "failed", taskId, message: aborted ? "Cancelled" : (err as Error).message, aborted });
        } finally {
          running.delete(taskId);
          stream = null;
        }
      }
    }
  });
}
