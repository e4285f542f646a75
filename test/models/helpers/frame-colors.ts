// What a user would read off a decoded 64x64 RGB frame of kino-tiny: the background, the object's
// color and hue, measured much as tools/eval/metrics.py measures them.
import palette from "../../../tools/data/palette.json";

const median = (values: number[]) => values.sort((a, b) => a - b)[values.length >> 1]!;

/** The background color: the per-channel median of the frame's 2-pixel border. */
export function background(frame: Uint8Array, size = 64): number[] {
  const border: number[][] = [];
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      if (x < 2 || y < 2 || x >= size - 2 || y >= size - 2) border.push([...frame.subarray((y * size + x) * 3, (y * size + x) * 3 + 3)]);
    }
  }
  return [0, 1, 2].map((c) => median(border.map((p) => p[c]!)));
}

/** The object colors tools/data/render.py draws and tools/eval/metrics.py names. */
const PALETTE: Record<string, number[]> = palette;

/** The object's RGB, much as tools/eval/metrics.py measures it (which keeps only the largest blob):
 *  the per-channel median of the pixels that differ from the border's background by more than 60
 *  (summed over channels); null when fewer than 10 pixels differ. */
export function objectRgb(frame: Uint8Array, size = 64): number[] | null {
  const bg = background(frame, size);
  const px: number[][] = [];
  for (let i = 0; i < size * size; i++) {
    const rgb = [...frame.subarray(i * 3, i * 3 + 3)];
    if (rgb.reduce((sum, v, c) => sum + Math.abs(v - bg[c]!), 0) > 60) px.push(rgb);
  }
  return px.length < 10 ? null : [0, 1, 2].map((c) => median(px.map((p) => p[c]!)));
}

/** The object's color: its RGB's nearest in the palette. */
export function objectColor(frame: Uint8Array, size = 64): string | null {
  const color = objectRgb(frame, size);
  if (!color) return null;
  const distance = (p: number[]) => p.reduce((sum, v, c) => sum + (v - color[c]!) ** 2, 0);
  return Object.keys(PALETTE).reduce((best, name) => (distance(PALETTE[name]!) < distance(PALETTE[best]!) ? name : best));
}

/** Hue in degrees of an RGB triple. */
export function hue([r, g, b]: number[]): number {
  const max = Math.max(r!, g!, b!);
  const d = max - Math.min(r!, g!, b!);
  if (d === 0) return 0;
  const h = max === r ? ((g! - b!) / d) % 6 : max === g ? (b! - r!) / d + 2 : (r! - g!) / d + 4;
  return (h * 60 + 360) % 360;
}

/** A 64x64 (or width × height) RGB frame as tools/data/render.py draws a scene's first frame, for the
 *  shapes that need no outline math: a filled circle or square of radius `r` in a palette color at
 *  (cx, cy) on a solid palette (or black) background, edge pixels blended by coverage (4×4 samples). */
export function renderFrame(bg: string, color: string, shape: "circle" | "square", cx: number, cy: number, r: number, width = 64, height = width): Uint8Array {
  const back = bg === "black" ? [12, 12, 12] : PALETTE[bg]!, fill = PALETTE[color]!;
  const inside = (x: number, y: number) => (shape === "circle" ? (x - cx) ** 2 + (y - cy) ** 2 <= r * r : Math.abs(x - cx) <= r && Math.abs(y - cy) <= r);
  const frame = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      let covered = 0;
      for (let s = 0; s < 16; s++) covered += inside(x + ((s % 4) + 0.5) / 4, y + (Math.floor(s / 4) + 0.5) / 4) ? 1 : 0;
      for (let c = 0; c < 3; c++) frame[(y * width + x) * 3 + c] = Math.round(back[c]! + (fill[c]! - back[c]!) * (covered / 16));
    }
  }
  return frame;
}
