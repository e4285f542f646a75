// What a worker does with a task that threw. Most failures belong to that task alone: the worker
// reports it and takes the next one. A lost device context (a kernel fault: src/runtime/device-lost.ts)
// belongs to the process: every later task would fail the same way, so the worker reports the task
// failed as usual and then exits with EXIT_DEVICE_LOST, and the engine starts a fresh worker.
import { type DeviceLostError, deviceLostIn } from "../runtime/device-lost.ts";
import type { FromWorker } from "./ipc.ts";

export type FailedMessage = Extract<FromWorker, { type: "failed" }>;

/** The failed message for `err`, and the lost context behind it, if that is what it is (the worker
 *  then exits with EXIT_DEVICE_LOST once the message is sent). */
export function taskFailure(taskId: string, err: unknown, aborted: boolean): { message: FailedMessage; lost: DeviceLostError | null } {
  const lost = deviceLostIn(err);
  const text = aborted ? "Cancelled" : err instanceof Error ? err.message : String(err);
  return { message: { type: "failed", taskId, message: text, aborted, deviceLost: lost !== null }, lost };
}

/** How long the IPC channel gets to deliver the last message before the worker exits regardless. */
const FLUSH_LIMIT_MS = 2000;

/**
 * Sends `message`, then exits with `code` once the channel has written it: exiting at once would drop
 * a message still queued (a stream's last chunks, the failure itself).
 */
export function sendThenExit(message: FromWorker, code: number): void {
  process.send!(message, undefined, undefined, () => process.exit(code));
  setTimeout(() => process.exit(code), FLUSH_LIMIT_MS);
}
