// The host test backend (helpers/host-backend.ts) is the reference behind the Backend interface: its
// ops must return what src/runtime/reference.ts returns for the same values, options included.
import { expect, test } from "bun:test";
import * as R from "../../src/runtime/reference.ts";
import { host, rng } from "../runtime/op-helpers.ts";
import { HostBackend } from "./helpers/host-backend.ts";

test("attention with a T5 position bias is the reference's, bias added", async () => {
  const r = rng(3), be = new HostBackend();
  const [q, k, v] = [0, 1, 2].map(() => host([1, 4, 2, 8], r(64)));
  const bias = host([2, 4, 4], r(32, -3, 3));
  const out = be.alloc([1, 4, 2, 8]);
  be.attention(out, be.upload(q!.f32, q!.shape), be.upload(k!.f32, k!.shape), be.upload(v!.f32, v!.shape), { scale: 1, bias: be.upload(bias.f32, bias.shape) });
  expect(await be.download(out)).toEqual(R.attention(q!, k!, v!, { scale: 1, bias }).f32);
});
