// How a finished generation's timings are reported (job object, image response, sync headers):
// seconds to the millisecond, as vLLM-Omni's and FastVideo's responses carry them.
import type { TaskResult } from "../worker/ipc.ts";

const round3 = (v: number) => Math.round(v * 1000) / 1000;

export function reportedTimings(result: TaskResult) {
  return {
    inference_time_s: round3(result.inference_time_s),
    stage_durations: Object.fromEntries(Object.entries(result.stage_durations).map(([k, v]) => [k, round3(v)])),
    peak_memory_mb: result.peak_memory_mb,
  };
}
