// Models draw one coherent scene only at the sizes they were trained at: asked for another aspect,
// a DiT tiles its training size into a grid of copies. So a request is rendered at the model's native
// size nearest in aspect ratio and the frames are resampled to the requested size (Backend.resize).
import type { ModelCard } from "./pipeline.ts";

export interface Size {
  width: number;
  height: number;
}

/** "832x480" → {width: 832, height: 480}. */
export const parseSizeText = (text: string): Size => {
  const [width, height] = text.split("x").map(Number) as [number, number];
  return { width, height };
};

/**
 * The size to generate a `width`×`height` request at: the request's own when the card declares no
 * native sizes or lists this one, else the native size whose aspect ratio is nearest (on a log scale,
 * so 2:1 and 1:2 are equally far from 1:1), the larger one on a tie.
 */
export function renderSize(card: Pick<ModelCard, "native_sizes">, width: number, height: number): Size {
  const natives = (card.native_sizes ?? []).map(parseSizeText);
  if (!natives.length || natives.some((s) => s.width === width && s.height === height)) return { width, height };
  const distance = (s: Size) => Math.abs(Math.log(s.width / s.height) - Math.log(width / height));
  return natives.reduce((best, s) => {
    const d = distance(s) - distance(best);
    return d < -1e-9 || (Math.abs(d) <= 1e-9 && s.width * s.height > best.width * best.height) ? s : best;
  });
}
