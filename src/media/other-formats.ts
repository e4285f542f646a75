// Naming the files kino does not decode, so a refusal says what was sent ("a GIF image") rather
// than only what was expected. Recognised by their signatures; the declared media type is never
// trusted, since clients label bytes wrongly as often as rightly.
import { ascii } from "./bytes.ts";

const HEIF_BRANDS = new Set(["heic", "heix", "heim", "heis", "hevc", "hevx", "mif1", "msf1"]);

/** What the bytes are, where they are a known kind of file that is not PNG, JPEG or WebP; else null. */
export function describeOtherFormat(b: Uint8Array): string | null {
  const starts = (...bytes: number[]) => bytes.every((v, i) => b[i] === v);
  const head = ascii(b, 0, Math.min(b.length, 12));
  if (head.startsWith("GIF87a") || head.startsWith("GIF89a")) return "a GIF image";
  if (head.startsWith("BM") && b.length >= 26) return "a BMP image";
  if (starts(0x49, 0x49, 0x2a, 0x00) || starts(0x4d, 0x4d, 0x00, 0x2a)) return "a TIFF image";
  if (starts(0xff, 0x0a) || starts(0, 0, 0, 0x0c, 0x4a, 0x58, 0x4c, 0x20)) return "a JPEG XL image";
  if (starts(0, 0, 1, 0) && b.length >= 22) return "an ICO icon";
  if (head.startsWith("%PDF")) return "a PDF document";
  if (b.length >= 12 && head.slice(4, 8) === "ftyp") {
    const brand = head.slice(8, 12);
    if (brand === "avif" || brand === "avis") return "an AVIF image";
    if (HEIF_BRANDS.has(brand)) return "a HEIC/HEIF image";
    return "an MP4/QuickTime file";
  }
  if (head.startsWith("RIFF") && b.length >= 12) return `a RIFF '${head.slice(8, 12).trim()}' file`;
  // Text: SVG (possibly after a BOM, an XML declaration or comments), else HTML or JSON by accident.
  const text = new TextDecoder("utf-8", { fatal: false }).decode(b.subarray(0, 1024)).replace(/^\uFEFF/, "").trimStart().toLowerCase();
  if (/^(<\?xml[^>]*>\s*)?(<!--[\s\S]*?-->\s*)*(<!doctype svg[^>]*>\s*)?<svg[\s>]/.test(text)) return "an SVG image (vector graphics)";
  if (text.startsWith("<!doctype html") || text.startsWith("<html")) return "an HTML page";
  return null;
}
