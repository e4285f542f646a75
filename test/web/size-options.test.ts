// The sizes the page offers: the model card's native sizes when it names them.
import { expect, test } from "bun:test";
// @ts-expect-error: a browser ES module without typings
import { sizeOptions } from "../../web/request-form.js";

const card = { defaults: { width: 64, height: 64 }, spatial_factor: 16, min_size: 16, max_size: 1920, max_pixels: 1920 * 1088 };

test("a card with native sizes offers exactly those", () => {
  expect(sizeOptions({ ...card, native_sizes: ["64x64", "112x64", "64x112"] })).toEqual(["64x64", "112x64", "64x112"]);
});

test("a card without them offers its default, the portrait twin, a square and the usual Wan sizes that fit", () => {
  expect(sizeOptions({ ...card, native_sizes: null })).toEqual(["64x64", "832x480", "480x832", "1280x720"]);
});
