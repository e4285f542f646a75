// Animated WebP files for tests, assembled as RFC 9649 §5.7 lays them out (VP8X with the animation
// flag, ANIM, one ANMF per frame) around frames that our own WebP encoder made.
import { encodeImage } from "../../../src/media/images.ts";

export interface AnimationFrame {
  /** rgba, width*height*4 */
  rgba: Uint8Array;
  width: number;
  height: number;
  /** even offsets on the canvas */
  x?: number;
  y?: number;
}

const u24 = (v: number) => [v & 255, (v >> 8) & 255, (v >> 16) & 255];
const u32 = (v: number) => [v & 255, (v >> 8) & 255, (v >> 16) & 255, v >>> 24];
const fourcc = (s: string) => [...Buffer.from(s, "latin1")];

function chunk(type: string, payload: number[] | Uint8Array): number[] {
  return [...fourcc(type), ...u32(payload.length), ...payload, ...(payload.length & 1 ? [0] : [])];
}

/** The image chunks of a still WebP (ALPH + VP8, or VP8L), without its RIFF and VP8X headers. */
function imageChunks(webp: Uint8Array): number[] {
  const out: number[] = [];
  for (let pos = 12; pos + 8 <= webp.length; ) {
    const type = Buffer.from(webp.subarray(pos, pos + 4)).toString("latin1");
    const size = webp[pos + 4]! | (webp[pos + 5]! << 8) | (webp[pos + 6]! << 16) | (webp[pos + 7]! << 24);
    const end = pos + 8 + size + (size & 1);
    if (type === "ALPH" || type === "VP8 " || type === "VP8L") out.push(...webp.subarray(pos, end));
    pos = end;
  }
  return out;
}

/** An animated WebP of the given frames on a canvas of canvasWidth × canvasHeight. */
export async function animatedWebp(canvasWidth: number, canvasHeight: number, frames: AnimationFrame[], quality = 100): Promise<Uint8Array> {
  const anmf: number[] = [];
  for (const f of frames) {
    const still = await encodeImage(f.rgba, f.width, f.height, "webp", quality);
    const header = [...u24((f.x ?? 0) / 2), ...u24((f.y ?? 0) / 2), ...u24(f.width - 1), ...u24(f.height - 1), ...u24(100), 0];
    anmf.push(...chunk("ANMF", [...header, ...imageChunks(still)]));
  }
  const vp8x = chunk("VP8X", [0x10 | 0x02, 0, 0, 0, ...u24(canvasWidth - 1), ...u24(canvasHeight - 1)]);
  const anim = chunk("ANIM", [0, 0, 0, 0, 0, 0]);
  const body = [...fourcc("WEBP"), ...vp8x, ...anim, ...anmf];
  return new Uint8Array([...fourcc("RIFF"), ...u32(body.length), ...body]);
}

/** A solid rgba block. */
export function solid(width: number, height: number, [r, g, b, a]: [number, number, number, number]): AnimationFrame {
  const rgba = new Uint8Array(width * height * 4);
  for (let i = 0; i < rgba.length; i += 4) rgba.set([r, g, b, a], i);
  return { rgba, width, height };
}
