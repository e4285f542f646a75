// A model stage written as a generator of its tap points (where a test's Tap reads an intermediate
// tensor, named as in the goldens): run with taps it awaits each one; run without, no await happens
// at all, so every op is enqueued before the call returns — what recording a graph needs.
import type { Tensor } from "../runtime/tensor.ts";
import type { Tap } from "./umt5.ts";

/** A point where a tapped forward hands an intermediate tensor to its Tap (the goldens' names). */
export type TapPoint = readonly [name: string, t: Tensor];
/** A forward stage as a generator of its tap points: run with taps (drive) or straight through (drain). */
export type Steps<T> = Generator<TapPoint, T, void>;

/** Runs a stage to its end without taps: every op is enqueued before this returns, which is what
 *  recording a graph needs (nothing may await in between). */
export function drain<T>(steps: Steps<T>): T {
  let r = steps.next();
  while (!r.done) r = steps.next();
  return r.value;
}

/** Runs a stage, awaiting `tap` at each of its tap points; a failing tap ends the stage through its
 *  own error path (what it allocated is freed). */
export async function drive<T>(steps: Steps<T>, tap?: Tap): Promise<T> {
  if (!tap) return drain(steps);
  let r = steps.next();
  while (!r.done) {
    try {
      await tap(r.value[0], r.value[1]);
    } catch (err) {
      steps.throw(err);
      throw err;
    }
    r = steps.next();
  }
  return r.value;
}
