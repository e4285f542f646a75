// Which size a request is rendered at: its own when native (or when the model declares none), else the
// native size nearest in aspect ratio.
import { expect, test } from "bun:test";
import { renderSize } from "../../src/pipelines/native-size.ts";

const card = (native_sizes: string[] | null) => ({ native_sizes });

test("a native size, or a model without native sizes, renders as asked", () => {
  expect(renderSize(card(["64x64", "112x64"]), 112, 64)).toEqual({ width: 112, height: 64 });
  expect(renderSize(card(null), 480, 272)).toEqual({ width: 480, height: 272 });
});

test("another size renders at the native size nearest in aspect ratio", () => {
  const natives = card(["64x64", "112x64", "64x112"]);
  expect(renderSize(natives, 480, 272)).toEqual({ width: 112, height: 64 });
  expect(renderSize(natives, 272, 480)).toEqual({ width: 64, height: 112 });
  expect(renderSize(natives, 256, 240)).toEqual({ width: 64, height: 64 });
  expect(renderSize(card(["64x64"]), 480, 272)).toEqual({ width: 64, height: 64 });
});

test("a tie in aspect goes to the larger native size", () => {
  expect(renderSize(card(["64x64", "128x128"]), 96, 96)).toEqual({ width: 128, height: 128 });
  expect(renderSize(card(["128x64", "64x128"]), 96, 96)).toEqual({ width: 128, height: 64 });
});
