// Which GPU each worker process gets. A worker is pinned to its GPU by the CUDA_VISIBLE_DEVICES it is
// spawned with, not by a device index inside it: the process then sees exactly one GPU (as device 0,
// which is what the CUDA backend opens), so nothing in it — a kernel, the allocator, a library — can
// touch another worker's GPU, and `nvidia-smi` shows one process on each.

/** One worker's place: its index and, on GPUs, the one device it may see. */
export interface WorkerSlot {
  index: number;
  /** The GPU slot it is pinned to (worker i → i mod num_gpus), or null on the CPU backend. */
  gpu: number | null;
  /** CUDA_VISIBLE_DEVICES for its process; undefined leaves the server's environment as it is. */
  cudaVisibleDevices: string | undefined;
}

export interface EngineDeviceConfig {
  device: "auto" | "cuda" | "cpu";
  num_gpus: number;
  num_workers: number;
}

/** A device assignment that cannot work on this machine (the server's environment contradicts the config). */
export class DeviceAssignmentError extends Error {}

/**
 * One worker per GPU, more when num_workers asks (an equal number on each GPU: the config loader
 * refuses an uneven split). GPU slot g is the g-th entry of the server's own CUDA_VISIBLE_DEVICES when
 * the operator set one (a container or scheduler that hands kino GPUs 4-7 keeps working), else GPU g.
 * With one GPU and CUDA_VISIBLE_DEVICES set, the worker inherits it unchanged, as a single process would.
 */
export function assignWorkerDevices(engine: EngineDeviceConfig, visible: string | undefined): WorkerSlot[] {
  const workers = Math.max(engine.num_workers, engine.num_gpus);
  if (engine.device === "cpu") {
    return Array.from({ length: workers }, (_, index) => ({ index, gpu: null, cudaVisibleDevices: undefined }));
  }
  const gpus = engine.num_gpus;
  let ids: (string | undefined)[];
  if (visible === undefined) ids = Array.from({ length: gpus }, (_, g) => String(g));
  else if (gpus === 1) ids = [undefined];
  else {
    const listed = visible.split(",").map((id) => id.trim()).filter(Boolean);
    if (listed.length < gpus) {
      throw new DeviceAssignmentError(
        `generator.engine.num_gpus is ${gpus}, but this server's CUDA_VISIBLE_DEVICES=${visible} lets it see ${listed.length} GPU${listed.length === 1 ? "" : "s"}: ` +
          `lower num_gpus or list ${gpus} GPUs there (each worker is pinned to one of them)`,
      );
    }
    ids = listed.slice(0, gpus);
  }
  return Array.from({ length: workers }, (_, index) => ({ index, gpu: index % gpus, cudaVisibleDevices: ids[index % gpus] }));
}

/** "GPU 1, CUDA_VISIBLE_DEVICES=5" — how logs and errors name a worker's place. */
export function describeSlot(slot: WorkerSlot): string {
  if (slot.gpu === null) return "CPU";
  return slot.cudaVisibleDevices === undefined ? `GPU ${slot.gpu}` : `GPU ${slot.gpu}, CUDA_VISIBLE_DEVICES=${slot.cudaVisibleDevices}`;
}
