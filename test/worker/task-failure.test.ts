// What a worker does with a task that threw (src/worker/task-failure.ts): a lost device context —
// the CUDA backend's DeviceLostError, from a stand-in library whose GPU faults on demand — marks the
// failure as the process's, to be followed by the worker's exit; any other failure is the task's alone.
// The exit waits until the IPC channel has written everything before it.
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { EXIT_DEVICE_LOST } from "../../src/worker/ipc.ts";
import { taskFailure } from "../../src/worker/task-failure.ts";
import { faultingCuda, thrownBy } from "../fixtures/faulting-cuda.ts";

const LOST = "The CUDA device context is lost (cudaErrorIllegalAddress, error 700): cuda fill: kc_fill: an illegal memory access was encountered (error 700)";

describe("taskFailure", () => {
  test("a lost device context fails the task with its message and marks it lost; other failures do not", () => {
    const gpu = faultingCuda();
    const t = gpu.backend.alloc([4]);
    gpu.fault();
    const lost = thrownBy(() => gpu.backend.fill(t, 0));
    const failure = taskFailure("task-1", lost, false);
    expect(failure.message).toEqual({ type: "failed", taskId: "task-1", message: LOST, aborted: false, deviceLost: true });
    expect(failure.lost).toBe(lost as never);
    // behind an error that wraps it, and on a cancelled task, the process is lost all the same
    const wrapped = taskFailure("task-2", new Error("decoding failed", { cause: lost }), true);
    expect(wrapped.message).toEqual({ type: "failed", taskId: "task-2", message: "Cancelled", aborted: true, deviceLost: true });
    expect(wrapped.lost).toBe(lost as never);
    expect(taskFailure("task-3", new Error("test pipeline failed at step 1"), false)).toEqual({
      message: { type: "failed", taskId: "task-3", message: "test pipeline failed at step 1", aborted: false, deviceLost: false },
      lost: null,
    });
  });
});

test("sendThenExit: every message sent before it arrives, then the process exits with the status", async () => {
  const received: string[] = [];
  const child = Bun.spawn([process.execPath, join(import.meta.dir, "../fixtures/exiting-worker.ts")], {
    ipc: (m: any) => received.push(m.type === "chunk" ? `chunk ${m.chunk.generation_chunk_index}` : m.type),
    serialization: "advanced",
    stdio: ["ignore", "inherit", "inherit"],
  });
  child.send({ type: "go" });
  expect(await child.exited).toBe(EXIT_DEVICE_LOST);
  expect(received).toEqual(["chunk 0", "chunk 1", "chunk 2", "chunk 3", "failed"]);
});
