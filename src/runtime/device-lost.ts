// A device whose context is gone for good: after a kernel faults (an illegal address, a device-side
// assert, a hardware exception) the CUDA runtime fails every later call of the process with the same
// error, so nothing this process does can use the GPU again. Backends throw this type for it, so that
// whoever owns the process (kino's worker) can tell it from an op that merely failed, and replace the
// process instead of failing every later request the same way.

export class DeviceLostError extends Error {
  override name = "DeviceLostError";

  constructor(
    /** The error that lost the context ("cudaErrorIllegalAddress"). */
    readonly errorName: string,
    /** Its numeric code (700). */
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** The DeviceLostError `err` is or was caused by (its `cause` chain), or null. */
export function deviceLostIn(err: unknown): DeviceLostError | null {
  for (let e = err, depth = 0; e instanceof Error && depth < 16; e = e.cause, depth++) {
    if (e instanceof DeviceLostError) return e;
  }
  return null;
}
